#include "convert/manifest_build.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <cerrno>
#include <unistd.h>
#include <cstdlib>

#include "format/layout.hpp"
#include "format/staging.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/runtime.hpp"
#include "util/atomic_file.hpp"
#include "util/file_io.hpp"
#include "util/untrusted.hpp"

namespace slip {

namespace {
__extension__ using Uint128 = unsigned __int128;  // GCC/Clang; __extension__ keeps -Wpedantic quiet
}  // namespace

ShardSpec parse_shard(const std::string& text, const Environment& env) {
  ShardSpec s;
  if (text == "auto") {
    const auto id_value = env_value(env, "SLURM_ARRAY_TASK_ID");
    const auto count_value = env_value(env, "SLURM_ARRAY_TASK_COUNT");
    const auto min_value = env_value(env, "SLURM_ARRAY_TASK_MIN");
    const char* id = id_value ? id_value->c_str() : nullptr;
    const char* count = count_value ? count_value->c_str() : nullptr;
    const char* min = min_value ? min_value->c_str() : nullptr;
    if (!id || !count)
      throw Error(Errc::usage, "--shard auto needs SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT (run inside a job array)");
    // Each variable must be a plain decimal number: "abc" must not silently become task 0.
    auto number = [](const char* name, const char* value) {
      const std::string v = value;
      if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos)
        throw Error(Errc::usage, std::string(name) + "=\"" + detail::escape_for_terminal(v) + "\" is not a task number");
      return std::atoll(value);
    };
    const long long i = number("SLURM_ARRAY_TASK_ID", id) - (min ? number("SLURM_ARRAY_TASK_MIN", min) : 0),
                    n = number("SLURM_ARRAY_TASK_COUNT", count);
    // A resubmitted subset of an array (--array=1,7) has its own count and minimum: the task
    // id is checked against the split the array recorded (resolve_auto_shard), not these.
    if (n <= 0 || i < 0 || static_cast<uint64_t>(n) > kMaxShardCount)
      throw Error(Errc::usage, "SLURM array task " + std::string(id) + " does not fit an array of " + count + " tasks starting at " +
                                   (min ? min : "0") + " (use --array=0-" + std::to_string(n - 1) + ")");
    s.index = static_cast<uint64_t>(i);
    s.count = static_cast<uint64_t>(n);
    s.automatic = true;
    s.task_id = static_cast<uint64_t>(number("SLURM_ARRAY_TASK_ID", id));
    s.task_min = min ? static_cast<uint64_t>(number("SLURM_ARRAY_TASK_MIN", min)) : 0;
    return s;
  }
  // Digits only, within 64 bits: %llu would read "1/-2" as 1 of 18446744073709551614.
  const auto slash = text.find('/');
  const auto index = slash == std::string::npos ? std::nullopt : detail::parse_decimal<uint64_t>(std::string_view(text).substr(0, slash));
  const auto count = slash == std::string::npos ? std::nullopt : detail::parse_decimal<uint64_t>(std::string_view(text).substr(slash + 1));
  const uint64_t i = index.value_or(0), n = count.value_or(0);
  if (!index || !count || n == 0 || i >= n) throw Error(Errc::usage, "--shard wants I/N with 0 <= I < N (or auto), got \"" + text + "\"");
  if (n > kMaxShardCount)
    throw Error(Errc::usage, "--shard " + text + ": at most " + std::to_string(kMaxShardCount) + " parts (SLURM's largest job array)");
  s.index = i;
  s.count = n;
  return s;
}

namespace detail {

using ojson = nlohmann::ordered_json;

void resolve_auto_shard(const std::filesystem::path& workdir, ShardSpec& shard) {
  if (!shard.automatic) return;
  namespace fs = std::filesystem;
  const fs::path plan = workdir / "array.json";
  std::error_code ec;
  if (!fs::exists(plan, ec)) {
    // First task to get here records the split; concurrent tasks race on link(), which only
    // one wins: the others read the winner's record (all of one array agree anyway).
    fs::create_directories(workdir, ec);
    // A locked fresh name (not ".array.json.tmp-<pid>": PIDs repeat across a cluster's nodes).
    const TempLock tmp(workdir, "array.json");
    write_text_file(tmp.path(), "{\"count\": " + std::to_string(shard.count) + ", \"task_min\": " + std::to_string(shard.task_min) + "}\n");
    if (::link(tmp.path().c_str(), plan.c_str()) != 0 && errno != EEXIST)
      throw_errno("cannot record the job-array split", plan.string(), errno);
  }
  uint64_t count = 0, task_min = 0;
  // Reading it is outside the try: a permission or disk error is I/O (exit 4), out of memory
  // stays itself; only what the record says can be bad input.
  const std::string text = read_text_file(plan, Open::cache_file);
  try {
    const auto j = parse_json_bounded(text);
    count = j.at("count").get<uint64_t>();
    task_min = j.at("task_min").get<uint64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(Errc::bad_input, std::string("damaged job-array split record: ") + e.what()).with_path(plan.string());
  } catch (Error& e) {  // nested too deep: bad input already
    throw e.with_path(plan.string());
  }
  if (count == 0 || shard.task_id < task_min || shard.task_id - task_min >= count)
    throw Error(Errc::usage, "SLURM array task " + std::to_string(shard.task_id) + " is outside the recorded split of " +
                                 std::to_string(count) + " parts (tasks " + std::to_string(task_min) + ".." +
                                 std::to_string(task_min + count - 1) + "); resubmit missing parts with those task ids")
        .with_path(plan.string());
  shard.index = shard.task_id - task_min;
  shard.count = count;
}

std::string PartInfo::dir_name() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "part-%05llu-of-%05llu", static_cast<unsigned long long>(index), static_cast<unsigned long long>(count));
  return buf + std::string(kCacheSuffix);
}

PartInfo plan_part(const Source& source, const ShardSpec& shard, const std::string& whole_content_id) {
  PartInfo p;
  p.index = shard.index;
  p.count = shard.count;
  // Contiguous slices by sample index; 128-bit products so huge sources cannot overflow.
  // Sources of unknown size are sliced by file in convert() (select_files).
  if (const auto total = source.size()) {
    p.total = *total;
    p.start = static_cast<uint64_t>(static_cast<Uint128>(*total) * shard.index / shard.count);
    p.end = static_cast<uint64_t>(static_cast<Uint128>(*total) * (shard.index + 1) / shard.count);
  } else {
    p.unit = "files";
  }
  p.whole_content_id = whole_content_id;
  p.content_id = sha256_hex(whole_content_id + ":part:" + std::to_string(shard.index) + "/" + std::to_string(shard.count));
  return p;
}

ojson build_manifest(const Schema& schema, const SourceIdentity& identity, const ConvertResult& result, const WrittenFiles& files,
                     const std::optional<PartInfo>& part, std::optional<int64_t> created) {
  ojson manifest;
  manifest["version"] = 1;
  manifest["num_samples"] = result.written;
  ojson fields = ojson::object();
  for (const FieldSpec& spec : schema.fields) {
    ojson f;
    f["type"] = std::string(field_type_name(spec.type));
    f["num_samples"] = result.written;
    if (is_payload_type(spec.type)) {
      // Upstream: int(1.2 * largest payload), truncating.
      f["max_size"] = static_cast<uint64_t>(static_cast<double>(files.max_payload.at(spec.name)) * 1.2);
      f["image_format"] = spec.type == FieldType::image ? spec.image_format : std::string("jpeg");
    }
    if (spec.type == FieldType::ndarray) {
      f["dtype"] = spec.dtype;
      f["shape"] = spec.shape;
    }
    fields[spec.name] = std::move(f);
  }
  manifest["fields"] = std::move(fields);
  ojson sizes = ojson::object();
  for (const auto& [file, size] : files.storage_sizes) sizes[file] = size;
  manifest["file_sizes"] = std::move(sizes);
  ojson slip;
  slip["format_version"] = kSlipFormatVersion;
  slip["tool_version"] = version();
  slip["content_id"] = result.content_id;
  slip["created"] = utc_timestamp(created);
  if (identity.uris.size() > 1) {
    // Many inputs: a one-line summary to show, and the list (never one giant multi-line string).
    slip["source"] = {{"kind", identity.kind},
                      {"uri", source_summary(identity.uris, identity.kind == "ffcv" ? "files" : "tar shards")},
                      {"uris", identity.uris},
                      {"fingerprint", identity.fingerprint}};
  } else {
    slip["source"] = {{"kind", identity.kind}, {"uri", identity.uri}, {"fingerprint", identity.fingerprint}};
  }
  // The byte-affecting options (canonical "key=value" lines), part of the content id, and the
  // stored image format (in the content id too, not as an option line): recorded here so that
  // `info`, `ls` and Cache.info() show every choice that made these bytes in one place. Sorted
  // by key (merge reads a part's back and writes the same).
  std::vector<std::pair<std::string, std::string>> lines;
  for (size_t start = 0; start < result.options.size();) {
    const size_t end = result.options.find('\n', start);
    const std::string line = result.options.substr(start, end - start);
    const size_t eq = line.find('=');
    if (eq != std::string::npos && line.compare(0, eq, "image-format") != 0) lines.emplace_back(line.substr(0, eq), line.substr(eq + 1));
    start = end == std::string::npos ? result.options.size() : end + 1;
  }
  for (const FieldSpec& spec : schema.fields)
    if (spec.type == FieldType::image && !spec.image_format.empty() && spec.image_format != "jpeg") {
      lines.emplace_back("image-format", spec.image_format);
      break;
    }
  std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  ojson opts = ojson::object();
  for (const auto& [key, value] : lines) opts[key] = value;
  slip["options"] = std::move(opts);
  slip["counts"] = {{"source_samples", result.source_samples},
                    {"written", result.written},
                    {"skipped", result.skipped},
                    {"transcoded", result.transcoded}};
  if (part)
    slip["part"] = {{"index", part->index},
                    {"count", part->count},
                    {"start", part->start},
                    {"end", part->end},
                    {"total", part->total},
                    {"unit", part->unit},
                    {"whole_content_id", part->whole_content_id},
                    {"whole_name", part->whole_name}};
  if (part && !part->listing.empty()) {
    slip["part"]["listing"] = part->listing;
    slip["part"]["listing_seen"] = part->listing_seen;
  }
  ojson sums = ojson::object();
  for (const auto& [file, sum] : files.checksums) sums[file] = hex64(sum);
  slip["checksums"] = {{"algorithm", "xxh3-64"}, {"files", std::move(sums)}};
  ojson per_sample = ojson::object();
  for (const FieldSpec& spec : schema.fields)
    if (is_payload_type(spec.type)) per_sample[spec.name] = checksum_file(spec.name);
  slip["payload_checksums"] = std::move(per_sample);
  ojson ledger = ojson::array();
  for (const LedgerEntry& e : result.ledger) {
    ojson j;
    j["source_index"] = e.source_index;
    j["sample"] = e.sample ? ojson(*e.sample) : ojson(nullptr);
    j["origin"] = e.origin;
    j["field"] = e.field;
    j["action"] = e.action;
    j["reason"] = e.reason;
    ledger.push_back(std::move(j));
  }
  slip["ledger"] = std::move(ledger);
  manifest["slip"] = std::move(slip);
  return manifest;
}

}  // namespace detail
}  // namespace slip
