// convert(): source -> cache. The content id, name and place of the cache, the reuse of a
// complete one, then the pipeline (convert_pipeline.cpp) into a staging directory, published
// with its manifest.
#include "slip/convert.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <nlohmann/json.hpp>

#include "format/cache_writer.hpp"
#include "format/layout.hpp"
#include "format/manifest_io.hpp"
#include "format/staging.hpp"
#include "convert/convert_pipeline.hpp"
#include "convert/manifest_build.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/runtime.hpp"
#include "slip/remote.hpp"
#include "sources/listing_check.hpp"
#include "util/untrusted.hpp"
#include "util/file_io.hpp"
#include "util/cancel.hpp"
#include "util/log.hpp"

namespace slip {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {
fs::path output_root(const ConvertOptions& options) {
  if (options.output_dir.empty()) throw Error(Errc::usage, "no output directory (ConvertOptions::output_dir is empty)");
  check_output_outside_caches(options.output_dir, "the output directory");  // (subset -o CACHE once wrote a cache into it)
  return options.output_dir;
}
}  // namespace

std::string content_id(const SourceIdentity& id, StoredFormat format) {
  Sha256 h;
  h.update(id.kind);
  h.update("\n");
  h.update(id.uri);
  h.update("\n");
  h.update(id.fingerprint);
  h.update("\n");
  h.update(detail::kContentIdSalt);
  if (format == StoredFormat::yuv420) h.update("\nimage_format=yuv420");
  return h.hex_digest();
}

std::string canonical_options(const ConvertOptions& options) {
  std::vector<std::string> lines;
  if (options.non_jpeg != NonJpegPolicy::transcode)
    lines.push_back(std::string("non-jpeg=") + (options.non_jpeg == NonJpegPolicy::keep ? "keep" : "fail"));
  if (options.on_error != OnError::fail) lines.push_back("on-error=skip");
  if (options.jpeg_restarts && options.image_format == StoredFormat::jpeg) lines.push_back("jpeg-restarts=1");
  if (options.max_image_pixels != ConvertOptions{}.max_image_pixels)
    lines.push_back("max-image-pixels=" + std::to_string(options.max_image_pixels));
  // Source settings that change which samples or bytes are stored, in the order given where
  // order matters (repeatable flags keep theirs; different keys are sorted below).
  static const char* const kByteAffecting[] = {"rename",      "fields",      "field",   "raw-field",        "layout",
                                               "image-field", "label-field", "missing", "max-sample-bytes", "allow-truncated"};
  for (const char* key : kByteAffecting) {
    const auto values = options.source_options.get_all(key);
    if (values.empty()) continue;
    std::string joined;
    for (const auto& v : values) joined += (joined.empty() ? "" : ",") + v;
    lines.push_back(std::string(key) + "=" + joined);
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::string content_id(const SourceIdentity& id, const ConvertOptions& options) {
  const std::string canonical = canonical_options(options);
  if (canonical.empty()) return content_id(id, options.image_format);
  Sha256 h;
  h.update(content_id(id, options.image_format));
  h.update("\noptions\n");
  h.update(canonical);
  return h.hex_digest();
}

std::string cache_dir_name(const std::string& name, const std::string& id) {
  return name + "-" + id.substr(0, 8) + std::string(detail::kCacheSuffix);
}

namespace {

// The default name comes from the source (a directory or file name: untrusted bytes). It is
// made a safe, single-line file name: control characters, invalid UTF-8 and separators
// become '_', leading dots go, and it is cut to 100 bytes at a character boundary, so the
// path printed as the last stdout line is always one line and always inside the output root.
std::string safe_default_name(std::string_view source_name) {
  // Non-ASCII is kept only when the whole name is printable UTF-8 (no C1 controls).
  const bool keep_utf8 = detail::is_valid_utf8(source_name) && detail::escape_for_terminal(source_name).size() == source_name.size();
  std::string out;
  for (const char ch : source_name) {
    const auto c = static_cast<unsigned char>(ch);
    const bool bad = c < 0x20 || c == 0x7F || c == '/' || c == '\\' || (c >= 0x80 && !keep_utf8);
    out += bad ? '_' : ch;
  }
  while (!out.empty() && out.front() == '.') out.erase(0, 1);
  if (out.size() > 100) {
    size_t cut = 100;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
  }
  return out.empty() ? std::string("dataset") : out;
}

std::string default_cache_name(const SourceIdentity& identity, const ConvertOptions& options) {
  const std::string base = safe_default_name(identity.default_name);
  return options.image_format == StoredFormat::yuv420 ? base + "-yuv420" : base;
}

}  // namespace

// The cache's name: --name (checked by the file-stem rule) or the source's safe default.
std::string checked_cache_name(const SourceIdentity& identity, const ConvertOptions& options) {
  std::string name = options.name.empty() ? default_cache_name(identity, options) : options.name;
  if (const std::string problem = detail::file_stem_problem(name); !problem.empty())
    throw Error(Errc::usage, "invalid cache name \"" + detail::escape_for_terminal(name) + "\": " + problem);
  return name;
}

fs::path planned_cache_path(const Source& source, const ConvertOptions& options) {
  const SourceIdentity identity = source.identity();
  detail::check_schema_names(source.schema(), identity.kind);  // the same refusal as convert()
  const std::string id = content_id(identity, options);
  const std::string name = checked_cache_name(identity, options);
  const fs::path root = output_root(options);
  const std::string whole = cache_dir_name(name, id);
  if (!options.shard) return root / whole;
  const fs::path workdir = root / (whole.substr(0, whole.size() - detail::kCacheSuffix.size()) + ".parts");
  ShardSpec shard = *options.shard;
  detail::resolve_auto_shard(workdir, shard);
  const detail::PartInfo part = detail::plan_part(source, shard, id);
  return workdir / part.dir_name();
}

namespace {

// Reuses the cache at `dir` when it is complete (detail::reuse_problem: manifest checksum, file
// sizes, the tables' checksums; not the payloads), filling `result` with what it holds. A cache
// there that does not pass is converted again (the new one replaces it), with a warning saying
// why: a user who runs convert wants a cache that loads, not the damaged one returned.
bool reuse_existing(const fs::path& dir, const std::string& id, ConvertResult& result) {
  std::error_code ec;
  if (!fs::exists(dir / detail::kManifestName, ec)) return false;
  if (const std::string problem = detail::reuse_problem(dir, id); !problem.empty()) {
    detail::warn("{}: the cache there is damaged ({}); converting it again", detail::escape_for_terminal(dir.string()), problem);
    return false;
  }
  // Report what the cache holds, not what this run did (it did nothing).
  result.reused = true;
  result.cache_path = dir;
  result.content_id = id;
  result.reuse_checked = std::string(detail::kReuseChecks);
  const std::string manifest_text = detail::read_text_file(dir / detail::kManifestName, detail::Open::cache_file);  // I/O stays I/O
  try {
    const auto manifest = detail::parse_json_bounded(manifest_text);
    const auto& slip = manifest.at("slip");
    const auto& counts = slip.at("counts");
    result.source_samples = counts.value("source_samples", uint64_t{0});
    result.written = counts.value("written", uint64_t{0});
    result.skipped = counts.value("skipped", uint64_t{0});
    result.transcoded = counts.value("transcoded", uint64_t{0});
    const nlohmann::json ledger = slip.value("ledger", nlohmann::json::array());
    for (const auto& e : ledger) {
      LedgerEntry l;
      l.source_index = e.value("source_index", uint64_t{0});
      if (e.contains("sample") && e["sample"].is_number_unsigned()) l.sample = e["sample"].get<uint64_t>();
      l.origin = e.value("origin", std::string());
      l.field = e.value("field", std::string());
      l.action = e.value("action", std::string());
      l.reason = e.value("reason", std::string());
      result.ledger.push_back(std::move(l));
    }
    const nlohmann::json sizes = manifest.value("file_sizes", nlohmann::json::object());
    for (const auto& [file, size] : sizes.items())
      if (size.is_number_unsigned()) result.bytes_written += size.get<uint64_t>();
  } catch (const nlohmann::json::exception&) {
    // A cache that passed the checks but whose counts cannot be read: report none.
  }
  return true;
}

}  // namespace

void check_output_outside_sources(const std::vector<std::string>& sources, const fs::path& output_dir) {
  std::error_code ec;
  const fs::path out = fs::weakly_canonical(fs::absolute(output_dir, ec), ec);
  if (ec) return;  // unresolvable: creating it will say why
  for (const std::string& s : sources) {
    if (is_remote_uri(s) || s.empty() || s[0] == '@' || s == "-" || !fs::is_directory(s, ec)) continue;
    const fs::path src = fs::weakly_canonical(fs::absolute(s, ec), ec);
    if (ec) continue;
    // Component-wise prefix: /data/src-out is not inside /data/src.
    const auto [src_end, out_at] = std::mismatch(src.begin(), src.end(), out.begin(), out.end());
    if (src_end == src.end())
      throw Error(Errc::usage, "the output directory " + detail::escape_for_terminal(output_dir.string()) +
                                   (out_at == out.end() ? " is" : " is inside") + " the source " + detail::escape_for_terminal(s) +
                                   ": its caches would be read as part of the source next time; write them elsewhere (-o)");
  }
}

ConvertResult convert(Source& source, const ConvertOptions& options) {
  const detail::CancelScope cancel_scope(options.cancel);
  const auto t0 = std::chrono::steady_clock::now();
  const SourceIdentity identity = source.identity();
  Schema schema = source.schema();
  if (options.image_format == StoredFormat::yuv420)
    for (FieldSpec& spec : schema.fields)
      if (spec.type == FieldType::image) spec.image_format = "yuv420";
  // Names from the source become file names: one rule, before anything is written.
  detail::check_schema_names(schema, identity.kind);
  ConvertResult result;
  result.content_id = content_id(identity, options);
  const std::string name = checked_cache_name(identity, options);
  fs::path root = output_root(options);
  if (identity.kind == "imagefolder") check_output_outside_sources({identity.uri}, root);
  std::string final_name = cache_dir_name(name, result.content_id);
  // A shard of a job-array conversion: samples [start, end) of the source, written as a part
  // cache under <root>/<name>-<id8>.parts/, named by the whole's content id and the slice.
  std::optional<detail::PartInfo> part;
  if (options.shard) {
    const fs::path workdir = root / (final_name.substr(0, final_name.size() - detail::kCacheSuffix.size()) + ".parts");
    ShardSpec shard = *options.shard;
    detail::resolve_auto_shard(workdir, shard);
    part = detail::plan_part(source, shard, result.content_id);
    part->whole_name = final_name;
    root = workdir;
    final_name = part->dir_name();
    result.content_id = part->content_id;
  }
  const fs::path final_dir = root / final_name;
  result.cache_path = final_dir;

  result.options = canonical_options(options);
  // --on-error skip changes the bytes only when it skips something: the cache of this source
  // made without it is then the same cache, found under (and published under) its id.
  std::optional<std::string> plain_id;
  ConvertOptions plain = options;
  plain.on_error = OnError::fail;
  if (options.on_error == OnError::skip && !part) plain_id = content_id(identity, plain);
  if (!options.force && (reuse_existing(final_dir, result.content_id, result) ||
                         (plain_id && reuse_existing(root / cache_dir_name(name, *plain_id), *plain_id, result)))) {
    if (result.cache_path != final_dir) result.options = canonical_options(plain);
    return result;
  }
  result.cache_path = final_dir;
  detail::StagingDir staging(root, final_name);
  const fs::path tmp = staging.path();
  uint64_t remaining = std::numeric_limits<uint64_t>::max();
  if (part && part->unit == "files") {
    const auto slice = source.select_files(part->index, part->count);
    if (!slice)
      throw Error(Errc::usage, "--shard needs a source that knows its sample count or can be split by file").with_path(identity.uri);
    part->start = slice->start;
    part->end = slice->end;
    part->total = slice->total;
  } else if (part) {
    if (source.skip(part->start) != part->start)
      throw Error(Errc::bad_input, "the source ended before sample " + std::to_string(part->start)).with_path(identity.uri);
    remaining = part->end - part->start;
  }

  if (options.threads > kMaxConvertThreads)
    throw Error(Errc::usage, "--threads must be in 0.." + std::to_string(kMaxConvertThreads) + ", got " + std::to_string(options.threads));
  const unsigned threads = options.threads ? options.threads : available_cpus();
  // With options.parallel_writes and from kParallelWriteThreads up, the workers write the
  // payloads through a shared mapping (PlacedWriter); otherwise the writer thread writes them,
  // in order. Opt-in until measured where it should pay (16+ cores): on 2 cores the mapping's
  // page faults cost more CPU time than write() (docs/PERFORMANCE.md, "Parallel writes").
  const bool parallel = options.parallel_writes && threads >= kParallelWriteThreads;
  result.parallel_writes = parallel;
  detail::CacheWriter writer(tmp, schema, parallel);
  detail::run_convert_pipeline(source, schema, options, threads, parallel, remaining, writer, result);
  throw_if_interrupted();
  result.written = writer.count();
  if (result.written == 0 && !options.allow_empty && !part)
    throw Error(Errc::bad_input, result.source_samples == 0 ? "the source has no samples (--allow-empty writes an empty cache)"
                                                            : "no sample left: all " + std::to_string(result.source_samples) +
                                                                  " were skipped (see --on-error; --allow-empty writes an empty cache)")
        .with_path(identity.uri);
  const detail::WrittenFiles files = writer.finish();
  // A task's view of the whole source when it is done, for merge to compare (docs/SLURM.md):
  // an image an earlier task stored, rewritten in place since, is in no task's slice any more.
  // Sources whose tasks fingerprint their own inputs afresh need none: their content id differs.
  if (part)
    if (const auto* checkable = dynamic_cast<const detail::ListingCheckable*>(&source)) {
      const detail::ListingCheck check = checkable->recheck_listing();
      part->listing = check.listed;
      part->listing_seen = check.now;
      if (check.listed != check.now)
        detail::warn(
            "{}: the source's files changed during the conversion (sizes or mtimes differ from the listing it uses); "
            "`slip merge` will refuse this part: remove the saved scan and convert every task again",
            detail::escape_for_terminal(identity.uri));
    }

  // Every skip counts (also a source's own, e.g. tar --missing skip): merge, which cannot tell
  // them apart in the parts' ledgers, decides the same way, so merged equals single-process.
  const bool as_plain = plain_id && result.skipped == 0;
  if (as_plain) {
    result.content_id = *plain_id;
    result.options = canonical_options(plain);
    result.cache_path = root / cache_dir_name(name, *plain_id);
  }
  const ojson manifest = detail::build_manifest(schema, identity, result, files, part, options.created);
  detail::write_manifest(tmp, manifest);
  throw_if_interrupted();

  if (as_plain)
    staging.publish_as(result.cache_path.filename().string());
  else
    staging.publish();
  for (const auto& [file, size] : files.storage_sizes) result.bytes_written += size;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace slip
