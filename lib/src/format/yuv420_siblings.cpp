// The sibling YUV420 files of a JPEG image field (docs/FORMAT.md#yuv420-siblings): reading and building them.
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "format/layout.hpp"
#include "format/manifest_io.hpp"
#include "util/atomic_file.hpp"
#include "slip/runtime.hpp"  // kMaxConvertThreads
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/npy.hpp"
#include "slip/runtime.hpp"
#include "slip/yuv420.hpp"
#include "util/file_io.hpp"
#include "util/untrusted.hpp"
#include "util/log.hpp"
#include "util/cancel.hpp"

namespace slip {

namespace fs = std::filesystem;

std::string yuv420_sibling_stem(std::string_view field) { return std::string(field) + "_yuv420"; }

std::vector<std::string> yuv420_sibling_files(std::string_view field) {
  return {detail::field_file(field, detail::FileKind::yuv420_bin), detail::field_file(field, detail::FileKind::yuv420_meta)};
}

struct Yuv420Siblings::Impl {
  detail::MappedFile bin, meta;
  uint64_t count = 0;
  uint64_t table_offset = 0;
  fs::path bin_path;
};

Yuv420Siblings::Yuv420Siblings() : impl_(std::make_unique<Impl>()) {}
Yuv420Siblings::~Yuv420Siblings() = default;
Yuv420Siblings::Yuv420Siblings(Yuv420Siblings&&) noexcept = default;
Yuv420Siblings& Yuv420Siblings::operator=(Yuv420Siblings&&) noexcept = default;

std::optional<Yuv420Siblings> Yuv420Siblings::open(const Cache& cache, std::string_view field) {
  const auto names = yuv420_sibling_files(field);
  const fs::path bin_path = cache.path() / names[0], meta_path = cache.path() / names[1];
  std::error_code ec;
  if (!fs::is_regular_file(bin_path, ec) || !fs::is_regular_file(meta_path, ec)) return std::nullopt;
  Yuv420Siblings s;
  Impl& m = *s.impl_;
  m.bin_path = bin_path;
  m.bin = detail::MappedFile(bin_path, detail::Open::cache_file);
  m.meta = detail::MappedFile(meta_path, detail::Open::cache_file);
  const NpyHeader header = parse_npy_header(m.meta.bytes(), meta_path.string());
  if (header.descr != kMetaRecordDescr || header.fortran_order || header.shape.size() != 1)
    throw Error(Errc::bad_input, "not a table of (data_ptr, data_size, height, width) records").with_path(meta_path.string());
  m.count = header.shape[0];
  m.table_offset = header.data_offset;
  if (m.count != cache.size())
    throw Error(Errc::bad_input,
                "has " + std::to_string(m.count) + " records but the cache has " + std::to_string(cache.size()) + " samples")
        .with_path(meta_path.string());
  if (m.meta.size() < m.table_offset || (m.meta.size() - m.table_offset) / sizeof(MetaRecord) < m.count ||
      m.meta.size() - m.table_offset != m.count * sizeof(MetaRecord))
    throw Error(Errc::bad_input, "file size " + std::to_string(m.meta.size()) + " does not hold " + std::to_string(m.count) + " records")
        .with_path(meta_path.string());
  const uint64_t bin_size = m.bin.size();
  for (uint64_t i = 0; i < m.count; ++i) {
    const MetaRecord r = s.record(i);
    const uint64_t at = m.table_offset + i * sizeof(MetaRecord);
    if (r.data_ptr > bin_size || r.data_size > bin_size - r.data_ptr)
      throw Error(Errc::bad_input, "payload [" + std::to_string(r.data_ptr) + ", +" + std::to_string(r.data_size) + ") lies outside " +
                                       names[0] + " (" + std::to_string(bin_size) + " bytes)")
          .with_path(meta_path.string())
          .with_sample(i)
          .with_offset(at);
    if (r.width == 0 || r.height == 0 || r.width % 2 || r.height % 2 || r.data_size != uint64_t{r.width} * r.height * 3 / 2)
      throw Error(Errc::bad_input, "YUV420 payload of " + std::to_string(r.data_size) + " bytes does not match " + std::to_string(r.width) +
                                       "x" + std::to_string(r.height))
          .with_path(meta_path.string())
          .with_sample(i)
          .with_offset(at);
  }
  return s;
}

uint64_t Yuv420Siblings::size() const noexcept { return impl_->count; }
uint64_t Yuv420Siblings::payload_bytes() const noexcept { return impl_->bin.size(); }
const fs::path& Yuv420Siblings::bin_path() const noexcept { return impl_->bin_path; }

MetaRecord Yuv420Siblings::record(uint64_t sample) const {
  if (sample >= impl_->count) throw Error(Errc::usage, "sample id " + std::to_string(sample) + " is out of range");
  MetaRecord r;
  std::memcpy(&r, impl_->meta.bytes().data() + impl_->table_offset + sample * sizeof(MetaRecord), sizeof r);
  return r;
}

std::span<const std::byte> Yuv420Siblings::payload(uint64_t sample) const {
  const MetaRecord r = record(sample);  // bounds were checked for every record at open
  return impl_->bin.bytes().subspan(r.data_ptr, r.data_size);
}

namespace {

const nlohmann::ordered_json* find_path(const nlohmann::ordered_json& j, std::initializer_list<const char*> keys) {
  const nlohmann::ordered_json* at = &j;
  for (const char* k : keys) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(k);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

// Valid siblings already there: N well-formed records and, where the manifest records their
// checksums, files that still match them.
bool siblings_are_current(const Cache& cache, const std::string& field, const nlohmann::ordered_json& manifest) {
  try {
    const auto s = Yuv420Siblings::open(cache, field);
    if (!s) return false;
    const auto* sums = find_path(manifest, {"slip", "checksums", "files"});
    for (const std::string& name : yuv420_sibling_files(field)) {
      if (!sums || !sums->contains(name)) continue;
      const detail::MappedFile f(cache.path() / name, detail::Open::cache_file);
      if (!(*sums)[name].is_string() || (*sums)[name].get<std::string>() != hex64(xxh3_64(f.bytes()))) return false;
    }
    return true;
  } catch (const Error& e) {
    if (e.code() != Errc::bad_input) throw;  // unreadable siblings are an I/O error, not stale ones
    return false;
  }
}

// A cache's record of field's siblings: their checksums and the slip.yuv420_siblings entry.
void put_yuv420_sibling_records(nlohmann::ordered_json& slip, const std::string& field, uint64_t bin_sum, uint64_t meta_sum, uint64_t n,
                                uint64_t bytes) {
  const auto names = yuv420_sibling_files(field);
  if (!slip.contains("checksums") || !slip["checksums"].is_object())
    slip["checksums"] = {{"algorithm", "xxh3-64"}, {"files", nlohmann::ordered_json::object()}};
  if (!slip["checksums"].contains("files") || !slip["checksums"]["files"].is_object())
    slip["checksums"]["files"] = nlohmann::ordered_json::object();
  slip["checksums"]["files"][names[0]] = hex64(bin_sum);
  slip["checksums"]["files"][names[1]] = hex64(meta_sum);
  if (!slip.contains("yuv420_siblings") || !slip["yuv420_siblings"].is_object()) slip["yuv420_siblings"] = nlohmann::ordered_json::object();
  slip["yuv420_siblings"][field] = {{"num_samples", n}, {"bytes", bytes}, {"decoder", "turbojpeg"}};
}

bool yuv420_siblings_recorded(const nlohmann::ordered_json& manifest, const std::string& field) {
  const auto* files = find_path(manifest, {"slip", "checksums", "files"});
  const auto* entries = find_path(manifest, {"slip", "yuv420_siblings"});
  for (const std::string& name : yuv420_sibling_files(field))
    if (!files || !files->contains(name)) return false;
  return entries && entries->is_object() && entries->contains(field);
}

// Current siblings that a cache slip wrote does not record (files the Python loader built, or
// whose record an older slip lost to a concurrent command): recorded now, from the files as
// they are, under the cache's lock. Nothing is locked or written when they are recorded.
void record_current_yuv420_siblings(const fs::path& dir, const std::string& field, const nlohmann::ordered_json& manifest, uint64_t n,
                                    uint64_t bytes) {
  if (!manifest.contains("slip") || !manifest["slip"].is_object() || yuv420_siblings_recorded(manifest, field)) return;
  detail::ManifestUpdate update(dir);
  auto& fresh = update.manifest();
  if (!fresh.contains("slip") || !fresh["slip"].is_object() || yuv420_siblings_recorded(fresh, field)) return;
  const auto names = yuv420_sibling_files(field);
  const uint64_t bin_sum = detail::xxh3_64_of_file(dir / names[0], detail::Open::cache_file).second;
  const uint64_t meta_sum = detail::xxh3_64_of_file(dir / names[1], detail::Open::cache_file).second;
  put_yuv420_sibling_records(fresh["slip"], field, bin_sum, meta_sum, n, bytes);
  update.commit();
}

}  // namespace

std::vector<SiblingResult> add_yuv420_siblings(const fs::path& dir, const SiblingOptions& options) {
  const detail::CancelScope cancel_scope(options.cancel);
  const Cache cache = Cache::open(dir);
  std::vector<size_t> fields;
  for (size_t i = 0; i < cache.fields().size(); ++i) {
    const CacheField& f = cache.fields()[i];
    const bool jpeg_image = f.type == FieldType::image && (f.image_format.empty() || f.image_format == "jpeg");
    if (!options.field.empty() && f.name == options.field) {
      if (!jpeg_image)
        throw Error(Errc::usage, "'" + f.name + "' is not a JPEG image field (YUV420 siblings belong to JPEG fields)")
            .with_path(dir.string());
      fields.push_back(i);
    } else if (options.field.empty() && jpeg_image) {
      fields.push_back(i);
    }
  }
  if (fields.empty())
    throw Error(Errc::usage, options.field.empty() ? "the cache has no JPEG image field" : "no field named '" + options.field + "'")
        .with_path(dir.string());

  // What a killed earlier run left (its lock is free), then what this run derives from.
  for (const auto& t : detail::remove_stale_temporaries(dir))
    detail::warn("removed {} ({} bytes), left by an interrupted run", detail::escape_for_terminal(t.path.string()), t.bytes);
  for (size_t fi : fields) cache.check_checksums(fi);
  const nlohmann::ordered_json manifest = detail::read_manifest(dir);  // what is current; records are written under the lock
  if (options.threads > kMaxConvertThreads)                            // batches below are sized by it
    throw Error(Errc::usage, "--threads must be in 0.." + std::to_string(kMaxConvertThreads) + ", got " + std::to_string(options.threads));
  const unsigned threads = options.threads ? options.threads : available_cpus();
  const uint64_t n = cache.size();
  std::vector<SiblingResult> results;
  for (size_t fi : fields) {
    const auto t0 = std::chrono::steady_clock::now();
    const CacheField& f = cache.fields()[fi];
    const auto names = yuv420_sibling_files(f.name);  // .bin, .meta.npy
    SiblingResult result;
    result.field = f.name;
    result.samples = n;
    result.jpeg_bytes = cache.file_bytes(f.files[0]).size();
    if (!options.force && siblings_are_current(cache, f.name, manifest)) {
      result.reused = true;
      result.bytes = Yuv420Siblings::open(cache, f.name)->payload_bytes();
      record_current_yuv420_siblings(dir, f.name, manifest, n, result.bytes);
      results.push_back(result);
      continue;
    }
    detail::AtomicFile bin_file(dir / names[0]), meta_file(dir / names[1]);
    detail::FileWriter bin(bin_file.temp_path());
    std::vector<MetaRecord> table(n);
    const size_t batch = std::max<size_t>(64, size_t{threads} * 16);
    std::vector<Yuv420Image> converted(batch);
    std::vector<std::optional<Error>> errors(batch);
    uint64_t offset = 0;
    for (uint64_t start = 0; start < n; start += batch) {
      throw_if_interrupted();
      const size_t count = static_cast<size_t>(std::min<uint64_t>(batch, n - start));
      parallel_for(count, threads, [&](size_t k) {
        errors[k].reset();
        try {
          cache.check_payload(fi, start + k);
          converted[k] = rgb_to_yuv420(decode_to_rgb(cache.payload(fi, start + k)));
        } catch (const Error& e) {
          errors[k] = e;
        }
      });
      for (size_t k = 0; k < count; ++k) {
        const uint64_t id = start + k;
        if (errors[k]) {
          Error e(Errc::bad_input, "cannot convert to YUV420: " + errors[k]->message());
          e.with_path((dir / f.files[0]).string()).with_sample(id);
          try {
            e.with_offset(cache.record(fi, id).data_ptr);
          } catch (const Error&) {
          }
          throw e;
        }
        const Yuv420Image& img = converted[k];
        table[id] = {offset, img.planes.size(), img.height, img.width};
        bin.write(img.planes);
        offset += img.planes.size();
      }
      if (options.progress) options.progress(start + count, n);
    }
    bin.close();
    detail::FileWriter meta(meta_file.temp_path());
    meta.write(npy_header(kMetaRecordDescr, std::vector<uint64_t>{n}));
    meta.write(std::as_bytes(std::span(table)));
    meta.close();
    {
      // Files and records change together, under the cache's lock, in a manifest read after
      // taking it: a concurrent `slip index` or `slip yuv420` keeps its records. One field at a
      // time, so a later field's failure leaves no committed file unrecorded.
      detail::ManifestUpdate update(dir);
      // Never let a reader pair an old table with new payloads: the old table goes first (a
      // loader then sees the siblings as absent), the new table arrives last.
      std::error_code ec;
      fs::remove(dir / names[1], ec);
      bin_file.commit();
      meta_file.commit();
      auto& fresh = update.manifest();
      if (fresh.contains("slip") && fresh["slip"].is_object()) {  // a cache slip wrote (or indexed): record them
        put_yuv420_sibling_records(fresh["slip"], f.name, bin.checksum(), meta.checksum(), n, offset);
        update.commit();
      }
    }
    result.bytes = offset;
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    results.push_back(result);
  }
  return results;
}

}  // namespace slip
