// slip convert SRC [-o DIR] [--name N] [--threads N] [--force] [--image-format ...] [--jpeg-restarts] [--non-jpeg ...] [--on-error ...]
// [--json]
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>

#include "cli_errors.hpp"
#include "command.hpp"
#include "output.hpp"
#include "source_flags.hpp"
#include "slip/cache.hpp"
#include "slip/convert.hpp"
#include "slip/merge.hpp"
#include "slip/remote.hpp"
#include "slip/source.hpp"

namespace slip::cli {

namespace {
struct ConvertArgs {
  std::vector<std::string> sources;
  std::string output;
  std::string name;
  unsigned threads = 0;
  bool force = false;
  std::string non_jpeg = "transcode";
  std::string image_format = "jpeg";
  bool jpeg_restarts = false;
  std::string on_error = "fail";
  bool allow_empty = false;
  bool dry_run = false;
  std::string shard;
  std::string max_image_pixels = std::to_string(kDefaultMaxImagePixels);
  std::string max_in_flight = "256MiB";
  bool parallel_writes = false;
  bool json = false;
  SourceOptions source_options;
};
}  // namespace

namespace {

// The flags of `slip convert`, bound to `a`.
void declare_convert_flags(CLI::App& sub, ConvertArgs& a) {
  sub.add_option("source", a.sources,
                 "Dataset to convert: an ImageFolder directory, an FFCV .beton, tar shards (several, "
                 "shard-{000..009}.tar, globs, @list.txt, - for stdin), a LitData directory; local, or at an "
                 "http://, https:// or s3:// URI")
      ->type_name("SOURCE")
      ->required();
  sub.add_option("-o,--output", a.output, "Directory to write the cache into")
      ->type_name("DIR")
      ->envname("SLIPSTREAM_CACHE_DIR")
      ->default_str("$SLIPSTREAM_CACHE_DIR or ~/.slipstream");
  sub.add_option("--name", a.name, "Name part of <name>-<id8>.slipstream (default: the source's name)")->type_name("NAME");
  sub.add_option("-j,--threads", a.threads, "Worker threads, up to 1024 (default: CPUs available to the process)")
      ->check(in_range(0, kMaxConvertThreads));
  sub.add_flag("-f,--force", a.force, "Rebuild even if a complete cache of this source exists");
  sub.add_option("--non-jpeg", a.non_jpeg,
                 "Images that are not RGB-decodable JPEG (PNG, CMYK JPEG, ...): transcode to RGB JPEG q100, "
                 "keep verbatim, or fail")
      ->check(CLI::IsMember({"transcode", "keep", "fail"}))
      ->capture_default_str();
  sub.add_option("--image-format", a.image_format,
                 "Store images as encoded JPEG, or as decoded planar YUV 4:2:0 (about 1.7x the bytes of ImageNet JPEGs, "
                 "no entropy decoding when training)")
      ->check(CLI::IsMember({"jpeg", "yuv420"}))
      ->capture_default_str();
  sub.add_flag("--jpeg-restarts", a.jpeg_restarts,
               "Re-encode each JPEG losslessly (same pixels) with restart markers every few blocks, so that crops "
               "decode only the part of the image under them; convert takes longer (docs/FORMAT.md, restart markers)");
  sub.add_option("--on-error", a.on_error, "A bad sample: fail the conversion, or skip it (recorded in the ledger)")
      ->check(CLI::IsMember({"fail", "skip"}))
      ->capture_default_str();
  sub.add_flag("--allow-empty", a.allow_empty,
               "Write a cache even when no sample is left (an empty source, or every sample skipped); otherwise exit 3");
  sub.add_flag("-n,--dry-run", a.dry_run, "Say what would be written and where; write nothing");
  sub.add_flag("--json", a.json, "Print one JSON summary object instead of the path");
  sub.add_option("--max-in-flight", a.max_in_flight,
                 "Sample bytes held between reading and writing (read ahead, preparing, writing); K, M, G, KiB, MiB, GiB")
      ->type_name("SIZE")
      ->capture_default_str();
  sub.add_option("--max-image-pixels", a.max_image_pixels,
                 "Refuse images whose header claims more pixels (decompression bombs); accepts K/M/G suffixes")
      ->type_name("N")
      ->capture_default_str();
  sub.add_option("--shard", a.shard,
                 "Convert only slice I of N (I/N, or 'auto' inside a SLURM job array) into a part cache; join with slip merge")
      ->type_name("I/N");
  sub.add_flag("--parallel-writes", a.parallel_writes,
               "From -j 8 up, the workers write the payloads through a shared mapping instead of one writer thread "
               "(byte-identical cache; default: SLIP_PARALLEL_WRITES=1, else off)");
  add_source_flags(sub, a.source_options);
}

// A dry run of a remote source fetches nothing: the content id needs the data (or its
// index), so it says what would be fetched and where instead.
void print_remote_dry_run(const ConvertArgs& a) {
  SourceOptions remote_settings = a.source_options;
  remote_settings.environment = process_environment();
  const auto downloads = RemoteOptions::from_settings(remote_settings).resolved_download_dir();
  const auto output = output_root(a.output);
  nlohmann::ordered_json uris = nlohmann::ordered_json::array();
  for (const auto& u : a.sources) uris.push_back(redact_uri(u));
  if (a.json) {
    print_json({{"command", "convert"},
                {"dry_run", true},
                {"remote", true},
                {"sources", uris},
                {"download_dir", downloads.string()},
                {"output_dir", output.string()}});
  } else {
    std::cerr << "slip: dry run: would fetch " << uris.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << " into "
              << downloads.string() << " (complete downloads reused), then write a cache under " << output.string() << "\n";
    std::cout << output.string() << "\n";
  }
}

// The library's options from the flags and the environment conventions (SOURCE_DATE_EPOCH,
// SLIP_PARALLEL_WRITES).
ConvertOptions convert_options_from(const ConvertArgs& a, const std::optional<ShardSpec>& shard) {
  ConvertOptions options;
  options.output_dir = output_root(a.output);
  options.name = a.name;
  options.threads = resolve_threads(a.threads);
  options.created = source_date_epoch();
  options.force = a.force;
  options.non_jpeg = a.non_jpeg == "keep" ? NonJpegPolicy::keep : a.non_jpeg == "fail" ? NonJpegPolicy::fail : NonJpegPolicy::transcode;
  options.on_error = a.on_error == "skip" ? OnError::skip : OnError::fail;
  options.allow_empty = a.allow_empty;
  options.image_format = a.image_format == "yuv420" ? StoredFormat::yuv420 : StoredFormat::jpeg;
  if (a.jpeg_restarts && options.image_format != StoredFormat::jpeg)
    throw Error(Errc::usage, "--jpeg-restarts applies to JPEG storage, not --image-format yuv420");
  options.jpeg_restarts = a.jpeg_restarts;
  options.shard = shard;
  options.max_image_pixels = parse_count(a.max_image_pixels);
  options.max_bytes_in_flight = parse_count(a.max_in_flight);
  if (options.max_bytes_in_flight < (1u << 20)) throw Error(Errc::usage, "--max-in-flight must be >= 1MiB");
  options.source_options = a.source_options;
  options.parallel_writes = a.parallel_writes || parallel_writes_environment();
  return options;
}

// What --dry-run prints: the cache path that would be written or reused.
void print_dry_run(Source& source, const ConvertOptions& options, const ConvertArgs& a) {
  const SourceIdentity id = source.identity();
  const std::string cid = content_id(id, options);
  const auto path = planned_cache_path(source, options);
  const bool exists = std::filesystem::exists(path / "manifest.json");
  if (a.json) {
    nlohmann::ordered_json fields = nlohmann::ordered_json::array();
    for (const auto& f : source.schema().fields) fields.push_back({{"name", f.name}, {"type", std::string(field_type_name(f.type))}});
    nlohmann::ordered_json j{{"command", "convert"}, {"dry_run", true},  {"path", path.string()},
                             {"content_id", cid},    {"exists", exists}, {"source", {{"kind", id.kind}, {"uri", id.uri}}},
                             {"fields", fields}};
    j["samples"] = source.size() ? nlohmann::ordered_json(*source.size()) : nlohmann::ordered_json(nullptr);
    print_json(j);
  } else {
    std::cerr << "slip: dry run: would " << (exists && !a.force ? "reuse" : "write") << " " << path.string() << " ("
              << (source.size() ? std::to_string(*source.size()) : std::string("?")) << " samples from " << id.kind << " " << id.uri
              << ")\n";
    std::cout << path.string() << "\n";
  }
}

// The cache path on stdout, or with --json the summary object.
void print_convert_result(const ConvertResult& r, const ConvertArgs& a) {
  if (a.json) {
    nlohmann::ordered_json j;
    j["command"] = "convert";
    j["path"] = r.cache_path.string();
    j["content_id"] = r.content_id;
    j["reused"] = r.reused;
    if (r.reused) j["reuse_checked"] = r.reuse_checked;
    // What the manifest records (the reused cache's own when reused), as info and ls show it.
    j["options"] = options_json(Cache::open(r.cache_path).provenance().options);
    j["source_samples"] = r.source_samples;
    j["written"] = r.written;
    j["skipped"] = r.skipped;
    j["transcoded"] = r.transcoded;
    j["bytes"] = r.bytes_written;
    j["seconds"] = r.seconds;
    j["stage_seconds"] = {{"read", r.stage_seconds.read}, {"prepare", r.stage_seconds.prepare}, {"write", r.stage_seconds.write}};
    nlohmann::ordered_json ledger = nlohmann::ordered_json::array();
    for (const LedgerEntry& e : r.ledger)
      ledger.push_back(
          {{"source_index", e.source_index}, {"origin", e.origin}, {"field", e.field}, {"action", e.action}, {"reason", e.reason}});
    j["ledger"] = std::move(ledger);
    print_json(j);
  } else {
    std::cout << r.cache_path.string() << "\n";
  }
}

}  // namespace

Action setup_convert(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<ConvertArgs>();
  declare_convert_flags(sub, *a);

  return [a, &global]() -> int {
    // --json failures name the source (one; several: the file the error names).
    if (a->sources.size() == 1) set_error_subject(is_remote_uri(a->sources[0]) ? redact_uri(a->sources[0]) : a->sources[0]);
    reject_stdout(a->output, "-o");
    if (a->dry_run && std::any_of(a->sources.begin(), a->sources.end(), [](const std::string& u) { return is_remote_uri(u); })) {
      print_remote_dry_run(*a);
      return 0;
    }
    check_output_outside_sources(a->sources, output_root(a->output));  // before a scan
    // --shard is checked before the source is opened: a scan (saved for the other tasks) would
    // otherwise be written for a split that is refused.
    std::optional<ShardSpec> shard;
    if (!a->shard.empty()) shard = parse_shard(a->shard, process_environment());
    SourceOptions source_options = a->source_options;
    // The tasks of a job array share one ImageFolder scan, saved beside the caches.
    source_options.environment = process_environment();  // AWS_*, CURL_CA_BUNDLE, the download directory
    if (!a->shard.empty()) source_options.scan_snapshot_dir = output_root(a->output);
    Progress scan_progress("scan", global.show_progress());
    source_options.progress = [&](const ProgressUpdate& p) {
      scan_progress.phase(std::string(p.phase));
      scan_progress.update(p.done, p.total);
    };
    auto source = open_sources(a->sources, source_options);
    scan_progress.finish();
    ConvertOptions options = convert_options_from(*a, shard);
    if (a->dry_run) {
      print_dry_run(*source, options, *a);
      return 0;
    }
    Progress progress("convert", global.show_progress());
    options.progress = [&](const ProgressUpdate& p) { progress.update(p.done, p.total); };
    const ConvertResult r = convert(*source, options);
    progress.finish();
    if (r.parallel_writes) spdlog::debug("the workers wrote the payloads (parallel writes)");
    // The merge step finds the work directory from these arguments (slip merge --source).
    if (options.shard) record_part_sources(r.cache_path.parent_path(), a->sources);
    // A reused cache's ledger is what an earlier run did, not this one: `slip info` lists it.
    if (!r.reused)
      for (const LedgerEntry& e : r.ledger) spdlog::debug("{} sample {} ({}): {}", e.action, e.source_index, e.origin, e.reason);
    if (r.reused)
      spdlog::info(
          "a cache of this source is already there ({}; its payloads were not read: slip verify checks them); "
          "nothing to do (--force rebuilds)",
          r.reuse_checked);
    else if (!global.quiet)
      spdlog::info("{} samples written, {} skipped, {} transcoded, {} in {:.2f} s", r.written, r.skipped, r.transcoded,
                   human_bytes(r.bytes_written), r.seconds);
    print_convert_result(r, *a);
    return 0;
  };
}

}  // namespace slip::cli
