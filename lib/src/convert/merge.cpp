// merge_parts(): concatenation of part caches into the single-process cache.
#include "slip/merge.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "convert/manifest_build.hpp"
#include "format/layout.hpp"
#include "format/manifest_io.hpp"
#include "format/staging.hpp"
#include "slip/cache.hpp"
#include "slip/error.hpp"
#include "util/untrusted.hpp"
#include "slip/hash.hpp"
#include "slip/npy.hpp"
#include "slip/runtime.hpp"
#include "util/file_io.hpp"
#include "util/log.hpp"
#include "util/cancel.hpp"
#include "util/atomic_file.hpp"
#include "slip/remote.hpp"
#include "sources/scan_snapshot.hpp"

namespace slip {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

// SLURM's largest job array: more parts is a forged number.
constexpr uint64_t kMaxParts = kMaxShardCount;
constexpr const char* kSourcesRecord = "sources.json";  // record_part_sources()

struct Part {
  fs::path dir;
  ojson manifest;
  detail::PartInfo info;
};

Part load_part(const fs::path& dir) {
  Part p;
  p.dir = dir;
  auto bad = [&](const std::string& why) { return Error(Errc::bad_input, why).with_path(dir.string()); };
  std::error_code ec;
  if (!fs::exists(dir / detail::kManifestName, ec)) throw bad("not a complete part (no manifest.json)");
  p.manifest = detail::read_manifest(dir);
  try {
    const auto& part = p.manifest.at("slip").at("part");
    p.info.index = part.at("index");
    p.info.count = part.at("count");
    p.info.start = part.at("start");
    p.info.end = part.at("end");
    p.info.total = part.at("total");
    p.info.whole_content_id = part.at("whole_content_id");
    p.info.whole_name = part.at("whole_name");
    p.info.unit = part.value("unit", std::string("samples"));
    p.info.listing = part.value("listing", std::string());  // parts of earlier builds: none
    p.info.listing_seen = part.value("listing_seen", std::string());
    p.info.content_id = p.manifest.at("slip").at("content_id");
  } catch (const nlohmann::json::exception&) {
    throw bad("not a part cache (its manifest has no slip.part section; convert with --shard I/N)");
  }
  if (!detail::is_complete_cache(dir, p.info.content_id)) throw bad("part is damaged: manifest checksum or file sizes do not match");
  if (p.info.start > p.info.end || p.info.end > p.info.total || p.info.index >= p.info.count) throw bad("part has an impossible slice");
  // The part's own metadata against what is on disk, before anything is sized by it.
  if (p.info.count > kMaxParts)
    throw bad("part claims " + std::to_string(p.info.count) + " parts; a job array has at most " + std::to_string(kMaxParts));
  const uint64_t stored = p.manifest.value("num_samples", uint64_t{0});
  if (p.info.unit != "files" && p.info.end - p.info.start != stored)
    throw bad("part claims samples " + std::to_string(p.info.start) + ".." + std::to_string(p.info.end) + " but holds " +
              std::to_string(stored));
  return p;
}

std::vector<fs::path> expand_inputs(const std::vector<fs::path>& inputs) {
  std::error_code ec;
  if (inputs.size() == 1 && !fs::exists(inputs[0] / detail::kManifestName, ec)) {
    if (!fs::is_directory(inputs[0], ec)) throw Error(Errc::io, "no such directory").with_path(inputs[0].string());
    std::vector<fs::path> parts;
    for (const auto& e : fs::directory_iterator(inputs[0], ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("part-", 0) == 0 && e.is_directory(ec)) parts.push_back(e.path());
    }
    std::sort(parts.begin(), parts.end());
    if (parts.empty()) throw Error(Errc::bad_input, "no part caches in the work directory").with_path(inputs[0].string());
    return parts;
  }
  return inputs;
}

// Copies a part's file into the merged one while hashing the input, and checks that hash
// against the part's recorded checksum (a corrupted part is refused, not merged).
void check_part_file(const Part& part, const std::string& name, std::span<const std::byte> bytes) {
  const auto& files = part.manifest["slip"]["checksums"]["files"];
  if (!files.contains(name)) throw Error(Errc::bad_input, "part lists no checksum for " + name).with_path(part.dir.string());
  if (hex64(xxh3_64(bytes)) != files[name].get<std::string>())
    throw Error(Errc::bad_input, "part file checksum mismatch (corrupted part)").with_path((part.dir / name).string());
}

// A part's payload field, whole: its records and payload checksums against the part's
// manifest, then its .bin: hashed whole when the part lists it (parts of earlier builds),
// otherwise payload by payload against those checksums, the records tiling the file (what
// verify checks; docs/FORMAT.md#checksums). A corrupted part is refused either way.
void check_part_payload_field(const Part& part, const Cache& c, size_t field) {
  const CacheField& f = c.fields()[field];
  const std::string &bin = f.files[0], &records = f.files[1];
  const std::string sums = detail::checksum_file(f.name);
  check_part_file(part, records, c.file_bytes(records));
  check_part_file(part, sums, c.file_bytes(sums));
  const auto bytes = c.file_bytes(bin);
  if (part.manifest["slip"]["checksums"]["files"].contains(bin)) return check_part_file(part, bin, bytes);
  uint64_t expect = 0;
  for (uint64_t i = 0; i < c.size(); ++i) {
    throw_if_interrupted();
    const MetaRecord r = c.record(field, i);
    const auto sum = c.payload_checksum(field, i);
    if (r.data_ptr != expect || r.data_size > bytes.size() - expect || !sum || xxh3_64(bytes.subspan(r.data_ptr, r.data_size)) != *sum)
      throw Error(Errc::bad_input, "part payload (bytes " + std::to_string(r.data_ptr) + ".." + std::to_string(r.data_ptr + r.data_size) +
                                       ") does not match its checksum or is out of place (corrupted part)")
          .with_path((part.dir / bin).string())
          .with_sample(i);
    expect += r.data_size;
  }
  if (expect != bytes.size())
    throw Error(Errc::bad_input, "part file has " + std::to_string(bytes.size()) + " bytes but its payloads cover " +
                                     std::to_string(expect) + " (corrupted part)")
        .with_path((part.dir / bin).string());
}

}  // namespace

namespace {

// --clean: the parts of a published merge, then their work directory if only the split
// record and lock files are left.
void remove_parts(const std::vector<Part>& parts) {
  std::error_code ec;
  for (const Part& p : parts) fs::remove_all(p.dir, ec);
  const fs::path workdir = parts.front().dir.parent_path();
  bool only_bookkeeping = true;
  for (const auto& e : fs::directory_iterator(workdir, ec)) {
    const std::string name = e.path().filename().string();
    if (name != "array.json" && name != kSourcesRecord && !name.ends_with(".lock")) only_bookkeeping = false;
  }
  if (only_bookkeeping && workdir.filename().string().ends_with(".parts")) fs::remove_all(workdir, ec);
}

// The job array is over: the ImageFolder scan its tasks shared (beside the work directory) is
// removed, so a later conversion of a changed tree scans afresh.
void forget_shared_scan(const Part& part) {
  const auto& src = part.manifest["slip"]["source"];
  if (src.value("kind", "") == "imagefolder" && src.contains("uri") && src["uri"].is_string())
    detail::remove_scan_snapshots(part.dir.parent_path().parent_path(), src["uri"].get<std::string>());
}

}  // namespace

namespace {

// Same source, same split, same schema as the first part; and one source snapshot: every
// part's task saw the whole source (every file's size and mtime, not only its slice) as the
// conversion listed it. A file rewritten in place after an earlier task stored it would
// otherwise be merged as its old bytes, which verify passes, while a single conversion now
// gives another cache.
void merge_check_same_conversion(const std::vector<Part>& parts) {
  const Part& first = parts.front();
  for (const Part& p : parts) {
    auto foreign = [&](const std::string& what) {
      return Error(Errc::bad_input, "part belongs to another conversion (" + what + " differs from " + first.dir.string() + ")")
          .with_path(p.dir.string());
    };
    if (p.info.whole_content_id != first.info.whole_content_id) throw foreign("content id");
    if (p.info.count != first.info.count || p.info.total != first.info.total) throw foreign("split");
    if (p.manifest["fields"].size() != first.manifest["fields"].size()) throw foreign("fields");
    for (auto& [name, spec] : first.manifest["fields"].items())
      if (!p.manifest["fields"].contains(name) || p.manifest["fields"][name]["type"] != spec["type"]) throw foreign("field " + name);
  }
  for (const Part& p : parts) {
    if (p.info.listing.empty()) continue;
    const std::string idx = std::to_string(p.info.index);
    if (!first.info.listing.empty() && p.info.listing != first.info.listing)
      throw Error(Errc::bad_input, "part " + idx + " was converted from another listing of the source than " + first.dir.string() +
                                       " (its files changed between the tasks); convert every task again")
          .with_path(p.dir.string());
    if (p.info.listing_seen != p.info.listing)
      throw Error(Errc::bad_input, "the source changed during the conversion: when part " + idx +
                                       "'s task ended, the sizes or mtimes of the source's files differed from the listing every part "
                                       "was converted from, so earlier parts may hold stale bytes; remove the saved scan (.<root>-*.scan "
                                       "beside the work directory) and convert every task again")
          .with_path(p.dir.string());
  }
}

// Exactly once (parts sorted by index): indices 0..N-1, slices back to back from 0 to the total.
void merge_check_exactly_once(const std::vector<Part>& parts) {
  const Part& first = parts.front();
  std::set<uint64_t> have;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!have.insert(parts[i].info.index).second)
      throw Error(Errc::bad_input, "part " + std::to_string(parts[i].info.index) + " given twice (overlap)")
          .with_path(parts[i].dir.string());
  }
  // The first missing indices (bounded work: at most have.size() + 10 steps).
  std::string missing;
  size_t listed = 0;
  for (uint64_t i = 0; i < first.info.count && listed < 10; ++i)
    if (!have.count(i)) {
      missing += (missing.empty() ? "" : ",") + std::to_string(i);
      ++listed;
    }
  if (parts.size() != first.info.count && listed == 10) missing += ",...";
  if (!missing.empty())
    throw Error(Errc::bad_input, "missing parts " + missing + " of " + std::to_string(first.info.count))
        .with_path(first.dir.parent_path().string());
  uint64_t expect = 0;
  for (const Part& p : parts) {
    if (p.info.start != expect)
      throw Error(Errc::bad_input, "part covers samples from " + std::to_string(p.info.start) + ", expected " + std::to_string(expect))
          .with_path(p.dir.string());
    expect = p.info.end;
  }
  if (expect != first.info.total)
    throw Error(Errc::bad_input, "parts cover " + std::to_string(expect) + " of " + std::to_string(first.info.total) + " samples");
}

// A merged cache already there is reused after convert's checks (manifest checksum, file
// sizes, the tables' checksums); one failing them is merged again, with a warning saying why.
// True when reused: `result` then reports what the existing cache holds, not what this run did.
bool merge_reuse_existing(const std::vector<Part>& parts, const MergeOptions& options, MergeResult& result) {
  bool reuse = false;
  if (std::error_code ec; !options.force && fs::exists(result.cache_path / detail::kManifestName, ec)) {
    const std::string problem = detail::reuse_problem(result.cache_path, result.content_id);
    reuse = problem.empty();
    if (!reuse)
      detail::warn("{}: the cache there is damaged ({}); merging it again", detail::escape_for_terminal(result.cache_path.string()),
                   problem);
  }
  if (!reuse) return false;
  result.reused = true;
  result.reuse_checked = std::string(detail::kReuseChecks);
  result.parts = parts.size();
  const Cache existing = Cache::open(result.cache_path);
  result.samples = existing.size();
  for (const auto& [file, size] : existing.file_sizes()) result.bytes += size;
  if (options.clean) remove_parts(parts);
  forget_shared_scan(parts.front());
  return true;
}

// The merge's state: the parts' caches, where they are written, and what is written.
struct MergeWriter {
  const std::vector<Part>& parts;
  const MergeOptions& options;
  fs::path out;
  std::vector<Cache> caches;
  Schema schema;
  detail::WrittenFiles files;
  uint64_t n = 0, total_bytes = 0, copied = 0;

  MergeWriter(const std::vector<Part>& parts_, const MergeOptions& options_, fs::path out_)
      : parts(parts_), options(options_), out(std::move(out_)) {
    // Schema from the first part's cache.
    for (const Part& p : parts) caches.push_back(Cache::open(p.dir));
    for (const CacheField& f : caches.front().fields()) {
      FieldSpec spec{f.name, f.type, f.dtype, {}, f.image_format.empty() ? "jpeg" : f.image_format};
      if (f.type == FieldType::ndarray) spec.shape.assign(f.shape.begin() + 1, f.shape.end());
      schema.fields.push_back(std::move(spec));
    }
    for (const Cache& c : caches) n += c.size();
    for (const Cache& c : caches)
      for (const CacheField& f : c.fields()) total_bytes += c.file_bytes(f.files[0]).size();
  }

  void write_fields() {
    const bool hard_link = options.link && parts.size() == 1;
    for (size_t fi = 0; fi < schema.fields.size(); ++fi) {
      throw_if_interrupted();
      for (const Cache& c : caches) c.release_resident_pages();  // the previous field's pages
      if (hard_link)
        link_field(fi);
      else if (schema.fields[fi].type == FieldType::image || schema.fields[fi].type == FieldType::bytes ||
               schema.fields[fi].type == FieldType::str)
        concat_table_field(fi);
      else
        concat_numeric_field(fi);
    }
  }

  // --link with a single part: its files hard-linked (or copied), checked as they would be read.
  void link_field(size_t fi) {
    const FieldSpec& spec = schema.fields[fi];
    const CacheField& f0 = caches[0].fields()[fi];
    const bool payload_field = is_payload_type(spec.type);
    if (payload_field) check_part_payload_field(parts[0], caches[0], fi);
    for (const std::string& name : f0.files) {
      std::error_code ec;
      // A payload .bin is covered by its payload checksums (docs/FORMAT.md#checksums).
      const bool payload_bin = payload_field && name == f0.files[0];
      if (!payload_field || (name != f0.files[0] && name != f0.files[1])) check_part_file(parts[0], name, caches[0].file_bytes(name));
      fs::create_hard_link(parts[0].dir / name, out / name, ec);
      if (ec) fs::copy_file(parts[0].dir / name, out / name, ec);
      if (ec) throw Error(Errc::io, "cannot link or copy: " + ec.message()).with_path((out / name).string());
      files.storage_sizes.emplace_back(name, caches[0].file_bytes(name).size());
      if (!payload_bin) files.checksums[name] = xxh3_64(caches[0].file_bytes(name));
    }
    if (payload_field) {
      const std::string cs = detail::checksum_file(spec.name);
      std::error_code ec;
      fs::create_hard_link(parts[0].dir / cs, out / cs, ec);
      if (ec) fs::copy_file(parts[0].dir / cs, out / cs, ec);
      files.checksums[cs] = xxh3_64(caches[0].file_bytes(cs));
      uint64_t largest = 0;
      for (uint64_t i = 0; i < caches[0].size(); ++i) largest = std::max(largest, caches[0].record(fi, i).data_size);
      files.max_payload[spec.name] = largest;
    }
  }

  uint64_t write_npy(const std::string& name, std::string_view descr, std::vector<uint64_t> shape, std::span<const std::byte> data) {
    detail::FileWriter w(out / name);
    w.write(npy_header(descr, shape));
    w.write(data);
    w.close();
    files.checksums[name] = w.checksum();
    return w.bytes_written();
  }

  // An image, bytes or string field: the parts' .bin files concatenated, their records (or
  // string offsets) rebased onto the merged file, and the payload checksums concatenated.
  void concat_table_field(size_t fi) {
    const FieldSpec& spec = schema.fields[fi];
    const CacheField& f0 = caches[0].fields()[fi];
    const bool payload = spec.type != FieldType::str;
    const std::string bin = f0.files[0], table = f0.files[1];
    detail::FileWriter bin_out(out / bin, size_t{256} << 10,
                               payload ? detail::FileWriter::Checksum::none : detail::FileWriter::Checksum::xxh3);
    std::vector<std::byte> table_data;  // rebased records / offsets
    std::vector<uint64_t> sums;
    uint64_t largest = 0;
    for (size_t p = 0; p < caches.size(); ++p) {
      const Cache& c = caches[p];
      const auto bytes = c.file_bytes(bin);
      if (payload) {
        check_part_payload_field(parts[p], c, fi);
      } else {
        check_part_file(parts[p], bin, bytes);
        check_part_file(parts[p], table, c.file_bytes(table));
      }
      const uint64_t base = bin_out.bytes_written();
      bin_out.write(bytes);
      copied += bytes.size();
      if (options.progress) options.progress(copied, total_bytes);
      const auto raw = c.file_bytes(table).subspan(c.npy_data_offset(table));
      const size_t row = payload ? sizeof(MetaRecord) : 16;
      for (uint64_t i = 0; i < c.size(); ++i) {
        uint64_t ptr;
        std::memcpy(&ptr, raw.data() + i * row, 8);
        ptr += base;
        const size_t at = table_data.size();
        table_data.insert(table_data.end(), raw.begin() + static_cast<ptrdiff_t>(i * row),
                          raw.begin() + static_cast<ptrdiff_t>((i + 1) * row));
        std::memcpy(table_data.data() + at, &ptr, 8);
        if (payload) largest = std::max(largest, c.record(fi, i).data_size);
      }
      if (payload) {
        for (uint64_t i = 0; i < c.size(); ++i) sums.push_back(*c.payload_checksum(fi, i));
      }
      // A part's pages are not needed again: RSS stays at about one part's files, not the
      // whole dataset (SLURM counts resident file pages against the merge job).
      c.release_resident_pages();
    }
    bin_out.close();
    files.storage_sizes.emplace_back(bin, bin_out.bytes_written());
    if (!payload) files.checksums[bin] = bin_out.checksum();
    files.storage_sizes.emplace_back(table, write_npy(table, payload ? kMetaRecordDescr : "'<u8'",
                                                      payload ? std::vector<uint64_t>{n} : std::vector<uint64_t>{n, 2}, table_data));
    if (payload) {
      write_npy(detail::checksum_file(spec.name), "'<u8'", {n}, std::as_bytes(std::span(sums)));
      files.max_payload[spec.name] = largest;
    }
  }

  // A numeric or array field: one .npy whose rows are the parts' rows in order.
  void concat_numeric_field(size_t fi) {
    const CacheField& f0 = caches[0].fields()[fi];
    const std::string name = f0.files[0];
    detail::FileWriter w(out / name);
    std::vector<uint64_t> shape = f0.shape;
    shape[0] = n;
    w.write(npy_header("'" + f0.dtype + "'", shape));
    for (size_t p = 0; p < caches.size(); ++p) {
      check_part_file(parts[p], name, caches[p].file_bytes(name));
      w.write(caches[p].file_bytes(name).subspan(caches[p].npy_data_offset(name)));
    }
    w.close();
    files.storage_sizes.emplace_back(name, w.bytes_written());
    files.checksums[name] = w.checksum();
  }
};

// The byte-affecting options the parts were converted with (the same in every part: they
// are in the whole's content id), so the merged manifest equals a single-process build's.
std::string merge_part_options(const Part& first) {
  std::string options;
  if (const auto it = first.manifest.find("slip"); it != first.manifest.end() && it->contains("options") && (*it)["options"].is_object())
    for (const auto& [key, value] : (*it)["options"].items())
      if (value.is_string()) options += key + "=" + value.get<std::string>() + "\n";
  return options;
}

// Counts and the ledger, with cache sample ids rebased (and source positions too when the
// parts were sliced by file, whose positions restart at 0 in each part).
void merge_counts_and_ledger(const std::vector<Part>& parts, ConvertResult& totals) {
  uint64_t sample_base = 0, source_base = 0;
  for (const Part& p : parts) {
    const auto& slip = p.manifest["slip"];
    totals.source_samples += slip["counts"]["source_samples"].get<uint64_t>();
    totals.skipped += slip["counts"]["skipped"].get<uint64_t>();
    totals.transcoded += slip["counts"]["transcoded"].get<uint64_t>();
    for (const auto& e : slip["ledger"]) {
      LedgerEntry entry;
      entry.source_index = e["source_index"].get<uint64_t>() + (p.info.unit == "files" ? source_base : 0);
      if (!e["sample"].is_null()) entry.sample = e["sample"].get<uint64_t>() + sample_base;
      entry.origin = e["origin"];
      entry.field = e["field"];
      entry.action = e["action"];
      entry.reason = e["reason"];
      totals.ledger.push_back(std::move(entry));
    }
    sample_base += p.manifest["num_samples"].get<uint64_t>();
    source_base += slip["counts"]["source_samples"].get<uint64_t>();
  }
}

SourceIdentity merge_source_identity(const Part& first) {
  SourceIdentity identity;
  const auto& src = first.manifest["slip"]["source"];
  identity.kind = src["kind"];
  identity.uri = src["uri"];
  identity.fingerprint = src["fingerprint"];
  if (src.contains("uris") && src["uris"].is_array())
    for (const auto& u : src["uris"])
      if (u.is_string()) identity.uris.push_back(u.get<std::string>());
  return identity;
}

// As convert(): --on-error skip that skipped nothing wrote the bytes a run without it writes,
// so the cache takes that run's content id and name (and merged equals single-process).
// True when it does (totals and result then carry that run's id, options and path).
bool merge_as_plain_run(const Part& first, const SourceIdentity& identity, const Schema& schema, const fs::path& root,
                        ConvertResult& totals, MergeResult& result) {
  if (totals.skipped != 0 || totals.options.find("on-error=skip\n") == std::string::npos) return false;
  std::string plain_options;
  std::string canonical;  // the lines canonical_options() gives without --on-error
  for (size_t a = 0, b; a < totals.options.size(); a = b + 1) {
    b = totals.options.find('\n', a);
    const std::string line = totals.options.substr(a, b - a);
    if (line != "on-error=skip") plain_options += line + "\n";
    if (line != "on-error=skip" && line.rfind("image-format=", 0) != 0) canonical += line + "\n";
  }
  SourceIdentity hashed = identity;
  if (!identity.uris.empty()) {
    hashed.uri.clear();
    for (const std::string& u : identity.uris) hashed.uri += (hashed.uri.empty() ? "" : "\n") + u;
  }
  const bool yuv = std::any_of(schema.fields.begin(), schema.fields.end(), [](const FieldSpec& f) { return f.image_format == "yuv420"; });
  const std::string base = content_id(hashed, yuv ? StoredFormat::yuv420 : StoredFormat::jpeg);
  const std::string id = canonical.empty() ? base : sha256_hex(base + "\noptions\n" + canonical);
  const std::string& whole = first.info.whole_name;
  const size_t tail = 9 + detail::kCacheSuffix.size();  // "-<id8>.slipstream"
  if (whole.size() <= tail) return false;
  totals.content_id = result.content_id = id;
  totals.options = plain_options;
  result.cache_path = root / cache_dir_name(whole.substr(0, whole.size() - tail), id);
  return true;
}

}  // namespace

MergeResult merge_parts(const std::vector<fs::path>& inputs, const MergeOptions& options) {
  const detail::CancelScope cancel_scope(options.cancel);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Part> parts;
  for (const fs::path& dir : expand_inputs(inputs)) parts.push_back(load_part(dir));
  merge_check_same_conversion(parts);
  std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.info.index < b.info.index; });
  merge_check_exactly_once(parts);
  const Part& first = parts.front();

  MergeResult result;
  result.parts = parts.size();
  const fs::path root = options.output_dir.empty() ? first.dir.parent_path().parent_path() : options.output_dir;
  check_output_outside_caches(root, "the output directory");
  result.content_id = first.info.whole_content_id;
  result.cache_path = root / first.info.whole_name;
  if (merge_reuse_existing(parts, options, result)) return result;
  detail::StagingDir staging(root, first.info.whole_name);

  MergeWriter writer(parts, options, staging.path());
  ConvertResult totals;
  totals.content_id = result.content_id;
  totals.options = merge_part_options(first);
  writer.write_fields();
  merge_counts_and_ledger(parts, totals);
  totals.written = writer.n;
  const SourceIdentity identity = merge_source_identity(first);
  const bool as_plain = merge_as_plain_run(first, identity, writer.schema, root, totals, result);
  detail::write_manifest(writer.out, detail::build_manifest(writer.schema, identity, totals, writer.files, std::nullopt, options.created));
  throw_if_interrupted();
  if (as_plain)
    staging.publish_as(result.cache_path.filename().string());
  else
    staging.publish();
  if (options.clean) remove_parts(parts);
  forget_shared_scan(first);
  result.samples = writer.n;
  for (const auto& [name, size] : writer.files.storage_sizes) result.bytes += size;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

namespace {
// The parts a work directory holds (by index) and the count their names claim (at most
// kMaxParts): missing parts are not materialised, so a count costs nothing until listed.
struct PartScan {
  uint64_t count = 0;
  std::map<uint64_t, PartState> states;
};

PartScan scan_parts(const fs::path& workdir) {
  std::error_code ec;
  if (!fs::is_directory(workdir, ec)) throw Error(Errc::io, "no such directory").with_path(workdir.string());
  PartScan scan;
  std::map<uint64_t, PartState>& states = scan.states;
  uint64_t& count = scan.count;
  std::optional<std::vector<detail::TempEntry>> temporaries;  // listed once, when a temporary is met
  for (const auto& e : fs::directory_iterator(workdir, ec)) {
    std::string name = e.path().filename().string();
    const bool temp = name[0] == '.';
    if (temp) name = name.substr(1);
    unsigned long long index = 0, n = 0;
    if (std::sscanf(name.c_str(), "part-%llu-of-%llu", &index, &n) != 2) continue;
    throw_if_interrupted();
    if (n > kMaxParts || index >= n)
      throw Error(Errc::bad_input, "\"" + detail::escape_for_terminal(name) + "\" names an impossible part (at most " +
                                       std::to_string(kMaxParts) + " parts)")
          .with_path(workdir.string());
    count = std::max<uint64_t>(count, n);
    PartState s{index, "", e.path()};
    if (temp) {
      const auto pos = name.find(".tmp-");
      if (pos == std::string::npos || name.ends_with(".lock")) continue;
      const long pid = std::atol(name.c_str() + pos + 5);
      bool live = false;  // its lock is held (a PID says nothing across PID namespaces)
      if (!temporaries) temporaries = detail::find_temporaries(workdir);
      for (const auto& t : *temporaries)
        if (t.path == e.path()) live = t.in_progress;
      s.state = live ? "incomplete (in progress, pid " + std::to_string(pid) + ")" : "incomplete (abandoned)";
      if (states.count(index)) continue;  // a finished part wins over a stale temporary
    } else {
      try {
        load_part(e.path());
        s.state = "done";
      } catch (const Error& err) {
        s.state = "damaged: " + err.message();
      }
    }
    states[index] = s;
  }
  return scan;
}
}  // namespace

std::vector<PartState> part_status(const fs::path& workdir) {
  PartScan scan = scan_parts(workdir);
  std::vector<PartState> out;
  out.reserve(static_cast<size_t>(scan.count));
  for (uint64_t i = 0; i < scan.count; ++i) {
    auto it = scan.states.find(i);
    out.push_back(it != scan.states.end() ? std::move(it->second) : PartState{i, "missing", workdir});
  }
  return out;
}

PartCounts count_parts(const fs::path& workdir) {
  const PartScan scan = scan_parts(workdir);
  PartCounts c{scan.count, 0};
  for (const auto& [index, s] : scan.states) c.done += s.state == "done" ? 1 : 0;
  return c;
}

namespace {
// The sources as recorded: local paths absolute and normalised (also after @ for a list file),
// URIs with their credentials redacted, "-" (a list on stdin) as given.
ojson normalized_sources(const std::vector<std::string>& sources) {
  ojson out = ojson::array();
  for (const std::string& s : sources) {
    if (s == "-" || is_remote_uri(s))
      out.push_back(s == "-" ? s : redact_uri(s));
    else if (s.size() > 1 && s[0] == '@')
      out.push_back("@" + fs::absolute(s.substr(1)).lexically_normal().string());
    else
      out.push_back(fs::absolute(s).lexically_normal().string());
  }
  return out;
}
}  // namespace

void record_part_sources(const fs::path& workdir, const std::vector<std::string>& sources) {
  const fs::path record = workdir / kSourcesRecord;
  std::error_code ec;
  if (fs::exists(record, ec)) return;
  const detail::TempLock tmp(workdir, kSourcesRecord);
  detail::write_text_file(
      tmp.path(), ojson{{"sources", normalized_sources(sources)}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  // link(), not rename(): tasks starting together race, and the first record stays.
  if (::link(tmp.path().c_str(), record.c_str()) != 0 && errno != EEXIST)
    throw_errno("cannot record the sources of the job array", record.string(), errno);
}

fs::path find_workdir(const fs::path& root, const std::vector<std::string>& sources) {
  const ojson wanted = normalized_sources(sources);
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.ends_with(".parts") || !e.is_directory(ec) || !fs::exists(e.path() / kSourcesRecord, ec)) continue;
    // A record this user cannot read is an I/O error (exit 4), not "no work directory here".
    const std::string text = detail::read_text_file(e.path() / kSourcesRecord, detail::Open::cache_file);
    try {
      const auto j = detail::parse_json_bounded(text);
      // (Paths that are not UTF-8 are recorded with their bad bytes replaced: compared alike.)
      if (j.at("sources").dump() == wanted.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) found.push_back(e.path());
    } catch (const nlohmann::json::exception&) {
      // Not a record of ours (or damaged): not a match.
    } catch (const Error& e) {
      if (e.code() != Errc::bad_input) throw;  // (too deeply nested: bad input, not a match)
    }
  }
  std::sort(found.begin(), found.end());
  if (found.size() == 1) return found.front();
  if (found.empty())
    throw Error(Errc::usage, "no work directory of a `convert --shard` of these sources here (or its parts were merged with --clean)")
        .with_path(root.string());
  std::string names;
  for (const auto& f : found) names += (names.empty() ? "" : ", ") + detail::escape_for_terminal(f.filename().string());
  throw Error(Errc::usage, "several work directories hold parts of these sources (" + names + "); choose one with --from")
      .with_path(root.string());
}

}  // namespace slip
