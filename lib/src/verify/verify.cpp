// verify_cache(): every check slip can make without decoding pixels.
#include "slip/verify.hpp"

#include <algorithm>
#include <new>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <set>
#include <nlohmann/json.hpp>

#include "format/layout.hpp"
#include "format/pickle_index.hpp"
#include "format/staging.hpp"
#include "image/libjpeg_errors.hpp"
#include "util/file_lock.hpp"
#include "slip/cache.hpp"
#include "slip/decode.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/image.hpp"
#include "slip/index.hpp"
#include "slip/npy.hpp"
#include "slip/runtime.hpp"
#include "slip/yuv420.hpp"
#include "util/file_io.hpp"
#include "util/untrusted.hpp"
#include "util/cancel.hpp"

namespace slip {

namespace fs = std::filesystem;

namespace {

// Only bad input is a finding about the cache (exit 1). Anything else (an I/O error such as a
// permission denied, a usage error, an interruption) keeps its class and exit code: a cache
// this user cannot read has not failed verification (docs/HOSTILE_INPUTS.md, error classes).
bool is_finding(const Error& e) noexcept { return e.code() == Errc::bad_input; }

class IssueSink {
 public:
  IssueSink(VerifyReport& report, size_t max) : report_(report), max_(max) {}
  void add(std::string file, std::optional<uint64_t> sample, std::string field, std::string message) {
    std::lock_guard lock(mutex_);
    ++report_.issue_count;
    if (report_.issues.size() < max_) report_.issues.push_back({std::move(file), sample, std::move(field), std::move(message)});
  }

 private:
  VerifyReport& report_;
  size_t max_;
  std::mutex mutex_;
};

void check_payload_field(const Cache& cache, size_t fi, IssueSink& sink, VerifyReport& report, unsigned threads,
                         const std::function<void(std::string_view, uint64_t, uint64_t)>& progress) {
  const CacheField& f = cache.fields()[fi];
  const uint64_t n = cache.size();
  const uint64_t bin_size = cache.file_bytes(f.files[0]).size();
  const bool is_image = f.type == FieldType::image;
  const bool yuv = f.image_format == "yuv420";
  // Sequential pass: bounds, contiguity, max_size (cheap, order-dependent).
  uint64_t expect_ptr = 0, largest = 0;
  bool contiguous = true;
  for (uint64_t i = 0; i < n; ++i) {
    const MetaRecord r = cache.record(fi, i);
    if (r.data_ptr > bin_size || r.data_size > bin_size - r.data_ptr) {
      sink.add(f.files[1], i, f.name,
               "payload [" + std::to_string(r.data_ptr) + ", +" + std::to_string(r.data_size) + ") lies outside " + f.files[0] + " (" +
                   std::to_string(bin_size) + " bytes)");
      contiguous = false;
      continue;
    }
    if (contiguous && r.data_ptr != expect_ptr) {
      sink.add(f.files[1], i, f.name,
               "payload starts at " + std::to_string(r.data_ptr) + ", expected " + std::to_string(expect_ptr) +
                   " (payloads must be contiguous)");
      contiguous = false;
    }
    expect_ptr = r.data_ptr + r.data_size;
    largest = std::max(largest, r.data_size);
  }
  if (contiguous && expect_ptr != bin_size)
    sink.add(f.files[0], std::nullopt, f.name,
             "file has " + std::to_string(bin_size) + " bytes but the records cover " + std::to_string(expect_ptr));
  if (largest > f.max_size)
    sink.add("manifest.json", std::nullopt, f.name,
             "max_size " + std::to_string(f.max_size) + " is below the largest payload (" + std::to_string(largest) + ")");

  // Parallel pass: markers, dimensions, checksums.
  std::atomic<uint64_t> checked{0}, hashed{0}, bytes{0};
  const uint64_t chunk = 256;
  // Chunks of 64 x 256 payloads between progress reports (called from this thread only).
  for (uint64_t outer = 0; outer < n; outer += chunk * 64) {
    const uint64_t outer_end = std::min(n, outer + chunk * 64);
    throw_if_interrupted();
    parallel_for((outer_end - outer + chunk - 1) / chunk, threads, [&](size_t c0) {
      const uint64_t c = outer / chunk + c0;
      // Bounded RSS on caches of any size: the mapped pages are released whenever the
      // process's resident file pages exceed the window, checked at every chunk and every
      // 8 MiB of payloads (large images).
      cache.keep_resident_below();
      uint64_t since_check = 0;
      for (uint64_t i = c * chunk; i < std::min(outer_end, (c + 1) * chunk); ++i) {
        const MetaRecord r = cache.record(fi, i);
        if ((since_check += r.data_size) >= (8u << 20)) {
          cache.keep_resident_below();
          since_check = 0;
        }
        if (r.data_ptr > bin_size || r.data_size > bin_size - r.data_ptr) continue;
        const auto data = cache.file_bytes(f.files[0]).subspan(r.data_ptr, r.data_size);
        if (auto want = cache.payload_checksum(fi, i)) {
          if (xxh3_64(data) != *want)
            sink.add(
                f.files[0], i, f.name,
                "payload checksum mismatch (bytes " + std::to_string(r.data_ptr) + ".." + std::to_string(r.data_ptr + r.data_size) + ")");
          hashed.fetch_add(1, std::memory_order_relaxed);
          bytes.fetch_add(r.data_size, std::memory_order_relaxed);
        }
        checked.fetch_add(1, std::memory_order_relaxed);
        if (!is_image) continue;
        if (yuv) {
          if (r.height % 2 || r.width % 2 || r.data_size != uint64_t{r.height} * r.width * 3 / 2)
            sink.add(f.files[1], i, f.name,
                     "YUV420 payload of " + std::to_string(r.data_size) + " bytes does not match " + std::to_string(r.width) + "x" +
                         std::to_string(r.height));
          continue;
        }
        const ImageFormat format = sniff_image_format(data);
        if (format == ImageFormat::jpeg) {
          JpegHeader h;
          if (!parse_jpeg_header(data, h)) {
            sink.add(f.files[0], i, f.name, "JPEG has no readable frame header (SOF)");
          } else {
            if (!jpeg_has_eoi_after(data, h.sof_offset)) sink.add(f.files[0], i, f.name, "JPEG has no end-of-image marker (FFD9)");
            if (h.width != r.width || h.height != r.height)
              sink.add(f.files[1], i, f.name,
                       "recorded size " + std::to_string(r.width) + "x" + std::to_string(r.height) + " differs from the JPEG's " +
                           std::to_string(h.width) + "x" + std::to_string(h.height));
          }
        } else if (format == ImageFormat::unknown) {
          sink.add(f.files[0], i, f.name, "payload is not an image (no JPEG SOI marker)");
        }
      }
    });
    if (progress) progress("payloads", outer_end, n);
  }
  report.payloads_checked += checked;
  report.checksums_checked += hashed;
  report.bytes_hashed += bytes;
}

// The sibling YUV420 files of a JPEG image field (docs/FORMAT.md#yuv420-siblings), when present: well-formed
// (Yuv420Siblings::open checks every record), each image the even-padded size of its JPEG
// and, with --decode, equal to a fresh conversion of a TurboJPEG decode of that JPEG.
void check_yuv420_siblings(const Cache& cache, size_t fi, IssueSink& sink, VerifyReport& report, const VerifyOptions& options,
                           unsigned threads) {
  const CacheField& f = cache.fields()[fi];
  const std::vector<std::string> sibling = yuv420_sibling_files(f.name);  // .bin, .meta.npy
  std::optional<Yuv420Siblings> siblings;
  try {
    siblings = Yuv420Siblings::open(cache, f.name);
  } catch (const Error& e) {
    if (!is_finding(e)) throw;
    sink.add(fs::path(e.path()).filename().string(), e.sample(), f.name,
             e.message() + (e.offset() ? " (byte " + std::to_string(*e.offset()) + ")" : ""));
    return;
  }
  if (!siblings) return;
  report.notes.push_back("YUV420 sibling files of field \"" + f.name + "\" checked" +
                         (options.decode ? " and compared with their JPEGs" : ""));
  std::mutex m;
  parallel_for(cache.size(), threads, [&](size_t i) {
    if (i % 64 == 0) throw_if_interrupted();
    MetaRecord jpeg_record, yuv_record;
    try {
      jpeg_record = cache.record(fi, i);
      yuv_record = siblings->record(i);
    } catch (const Error&) {
      return;  // reported by the field's own checks
    }
    if (jpeg_record.width && jpeg_record.height &&
        (yuv_record.width != jpeg_record.width + jpeg_record.width % 2 ||
         yuv_record.height != jpeg_record.height + jpeg_record.height % 2)) {
      sink.add(sibling[1], i, f.name,
               "YUV420 copy is " + std::to_string(yuv_record.width) + "x" + std::to_string(yuv_record.height) + " but its JPEG is " +
                   std::to_string(jpeg_record.width) + "x" + std::to_string(jpeg_record.height));
      return;
    }
    if (!options.decode) return;
    try {
      const Yuv420Image fresh = rgb_to_yuv420(decode_to_rgb(cache.payload(fi, i)));
      const auto stored = siblings->payload(i);
      if (fresh.planes.size() != stored.size()) {
        sink.add(sibling[0], i, f.name,
                 "YUV420 copy has " + std::to_string(stored.size()) + " bytes, a fresh conversion " + std::to_string(fresh.planes.size()));
        return;
      }
      int max_diff = 0;
      uint64_t total = 0;
      for (size_t k = 0; k < stored.size(); ++k) {
        const int d = std::abs(int(stored[k]) - int(fresh.planes[k]));
        max_diff = std::max(max_diff, d);
        total += static_cast<uint64_t>(d);
      }
      const double mean = stored.empty() ? 0.0 : static_cast<double>(total) / static_cast<double>(stored.size());
      std::lock_guard lock(m);
      ++report.images_decoded;
      report.decode_max_diff = std::max(report.decode_max_diff, max_diff);
      report.decode_mean_diff = std::max(report.decode_mean_diff, mean);
      if (max_diff > options.max_diff || mean > options.mean_diff)
        sink.add(
            sibling[0], i, f.name,
            "YUV420 copy differs from a fresh conversion of its JPEG: max " + std::to_string(max_diff) + ", mean " + std::to_string(mean));
    } catch (const Error& e) {
      if (!is_finding(e)) throw;
      sink.add(f.files[0], i, f.name, "image does not decode: " + e.message());
    }
  });
}

void check_string_field(const Cache& cache, size_t fi, IssueSink& sink) {
  const CacheField& f = cache.fields()[fi];
  const auto table = cache.file_bytes(f.files[1]);
  const uint64_t base = cache.npy_data_offset(f.files[1]);
  const auto bin = cache.file_bytes(f.files[0]);
  const uint64_t bin_size = bin.size();
  uint64_t expect = 0;
  for (uint64_t i = 0; i < cache.size(); ++i) {
    uint64_t row[2];
    std::memcpy(row, table.data() + base + i * 16, 16);
    if (row[0] > bin_size || row[1] > bin_size - row[0]) {
      sink.add(f.files[1], i, f.name, "string lies outside " + f.files[0]);
      return;
    }
    if (row[0] != expect) {
      sink.add(f.files[1], i, f.name, "string starts at " + std::to_string(row[0]) + ", expected " + std::to_string(expect));
      return;
    }
    expect = row[0] + row[1];
    // UTF-8, as slip writes and the Python loader decodes it (UnicodeDecodeError otherwise).
    if (i % 65536 == 0) cache.keep_resident_below();
    const std::string_view text(reinterpret_cast<const char*>(bin.data()) + row[0], row[1]);
    if (const auto bad = detail::invalid_utf8_at(text))
      sink.add(f.files[0], i, f.name, "string is not valid UTF-8 (byte " + std::to_string(row[0] + *bad) + ")");
  }
  if (expect != bin_size)
    sink.add(f.files[0], std::nullopt, f.name,
             "file has " + std::to_string(bin_size) + " bytes but the strings cover " + std::to_string(expect));
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// What accounts for each file a cache directory may hold: the cache's own files (manifest, its
// checksum, the writer lock), each field's storage files, and what the manifest records
// (file_sizes, slip.checksums, slip.payload_checksums, slip.indexes, slip.yuv420_siblings). In a
// cache slip did not write (no slip.content_id: the Python slipstream's, also once `slip index`
// added a section to it), whose writers record nothing, also the files the format lets later
// commands add beside a field (indexes, YUV420 siblings, checksums). slip records every file it
// adds to a cache it wrote, so there such a file left unrecorded is found: an index or siblings
// whose record was lost, or a file another tool put there.
std::set<std::string> verify_known_cache_files(const Cache& cache, const nlohmann::json& manifest) {
  std::set<std::string> known;
  for (std::string_view own : detail::kCacheOwnFiles) known.emplace(own);
  const auto slip = manifest.is_object() ? manifest.find("slip") : manifest.end();
  const bool slip_section = slip != manifest.end() && slip->is_object();
  const bool slip_wrote = slip_section && slip->contains("content_id");
  for (const CacheField& f : cache.fields()) {
    known.insert(f.files.begin(), f.files.end());
    if (!slip_wrote)
      for (detail::FieldFile& file : detail::field_files(f.name, field_type_from_name(f.type_name))) known.insert(std::move(file.name));
  }
  // Untrusted JSON: walked with find(), names taken only where they are strings.
  const auto names_in = [&](const nlohmann::json& j, bool keys) {
    if (!j.is_object()) return;
    for (auto& [key, value] : j.items()) {
      if (keys)
        known.insert(key);
      else if (value.is_string())
        known.insert(value.get<std::string>());
    }
  };
  if (const auto sizes = manifest.is_object() ? manifest.find("file_sizes") : manifest.end(); sizes != manifest.end())
    names_in(*sizes, true);
  if (!slip_section) return known;
  if (const auto c = slip->find("checksums"); c != slip->end() && c->is_object())
    if (const auto files = c->find("files"); files != c->end()) names_in(*files, true);
  if (const auto p = slip->find("payload_checksums"); p != slip->end()) names_in(*p, false);
  if (const auto indexes = slip->find("indexes"); indexes != slip->end() && indexes->is_object())
    for (auto& [field, spec] : indexes->items()) names_in(spec, false);
  if (const auto siblings = slip->find("yuv420_siblings"); siblings != slip->end() && siblings->is_object())
    for (auto& [field, spec] : siblings->items())
      for (std::string& name : yuv420_sibling_files(field)) known.insert(std::move(name));
  return known;
}

// Which field's optional file `name` is (its index, siblings or checksums), for the message.
std::optional<std::pair<std::string, detail::FileKind>> verify_field_file_of(const Cache& cache, const std::string& name) {
  for (const CacheField& f : cache.fields())
    for (const detail::FieldFile& file : detail::field_files(f.name, field_type_from_name(f.type_name)))
      if (file.name == name) return std::pair{f.name, file.kind};
  return std::nullopt;
}

// Every entry of the cache directory: *_index.npy files read as pickles without running them
// (the Python loader unpickles every one it globs, so one that is not exactly the dict of
// int64 arrays numpy and slip write could run code there), slip's temporaries, and files nothing
// accounts for (verify_known_cache_files), which fail verification.
void check_directory_entries(const Cache& cache, IssueSink& sink, VerifyReport& report) {
  const fs::path& dir = cache.path();
  // The listing and the manifest at one moment: writers commit files and their records together
  // under the cache's lock (format/manifest_io.hpp ManifestUpdate), so a shared hold keeps a
  // concurrent `slip index` from showing its files without their records. Best effort: a reader
  // never needs the lock (a read-only cache may have no lock file).
  std::string manifest_text;
  std::vector<std::string> names;
  std::error_code ec;
  {
    const detail::SharedFileLock consistent(dir / detail::kCacheLockName);
    try {
      manifest_text = detail::read_text_file(dir / detail::kManifestName, detail::Open::cache_file);
    } catch (const Error&) {
      manifest_text = cache.manifest_text();  // what the other checks read
    }
    for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  nlohmann::json manifest;
  try {
    manifest = detail::parse_json_bounded(manifest_text);
  } catch (const nlohmann::json::exception&) {  // reported by the manifest checks
  } catch (const Error& e) {
    if (!is_finding(e)) throw;
  }
  const std::set<std::string> known = verify_known_cache_files(cache, manifest);
  std::set<std::string> temporaries;
  for (const detail::TempEntry& t : detail::find_temporaries(dir)) {
    const std::string name = t.path.filename().string();
    temporaries.insert(name);
    temporaries.insert(name + ".lock");
    report.temporaries.push_back(name + (t.in_progress ? " (in progress)" : " (abandoned)"));
    report.notes.push_back(
        "temporary " + detail::escape_for_terminal(name) + " (" + std::to_string(t.bytes) + " bytes) " +
        (t.in_progress ? "of a run in progress" : "left by an interrupted run; the next run of the same command removes it"));
  }
  for (const std::string& name : names) {
    const fs::path p = dir / name;
    if (ends_with(name, "_index.npy")) {
      const std::string field = name.substr(0, name.size() - 10);
      try {
        const detail::MappedFile file(p, detail::Open::cache_file);
        // Bounded by the cache (every id one of its samples, at most N of them, ~32 bytes a
        // key), the file's pages released behind the reader.
        (void)detail::read_pickled_index(file, cache.size());
      } catch (const Error& e) {
        if (!is_finding(e)) throw;
        sink.add(name, std::nullopt, "", e.message() + (e.offset() ? " (byte " + std::to_string(*e.offset()) + ")" : ""));
      }
    }
    if (known.count(name) || temporaries.count(name)) continue;
    const auto type = fs::symlink_status(p, ec).type();
    const std::string what = type == fs::file_type::symlink     ? " (a symbolic link)"
                             : type == fs::file_type::directory ? " (a directory)"
                             : type != fs::file_type::regular   ? " (not a regular file)"
                                                                : "";
    report.unknown_files.push_back(name);
    const auto owner = verify_field_file_of(cache, name);
    if (!owner) {
      const std::string index_of = ends_with(name, "_index.npy") ? " (an index of a field the cache does not have)" : "";
      sink.add(name, std::nullopt, "",
               "unknown file" + what + index_of + ": no part of the cache format, and no manifest record accounts for it");
      continue;
    }
    const auto& [field, kind] = *owner;
    const bool siblings = kind == detail::FileKind::yuv420_bin || kind == detail::FileKind::yuv420_meta;
    const bool index = kind == detail::FileKind::pickled_index || kind == detail::FileKind::index_keys ||
                       kind == detail::FileKind::index_offsets || kind == detail::FileKind::index_ids;
    const std::string redo = siblings ? "`slip yuv420 CACHE --field " + detail::escape_for_terminal(field) + "` records them"
                             : index  ? "`slip index CACHE -F " + detail::escape_for_terminal(field) + "` rewrites and records it"
                                      : "remove it";
    sink.add(name, std::nullopt, field,
             "unrecorded file" + what + ": " + std::string(detail::file_kind_description(kind)) +
                 " of the field that no manifest record accounts for (its record was lost, or a tool that records nothing wrote it; " +
                 redo + ")");
  }
}

// The manifest's own checksum (slip-written caches). Returns whether its checksum file is there.
bool verify_manifest_sum(const fs::path& dir, IssueSink& sink, VerifyReport& report) {
  std::error_code ec;
  const fs::path sum_path = dir / detail::kManifestSumName;
  const bool have_sum = fs::symlink_status(sum_path, ec).type() != fs::file_type::not_found;
  if (have_sum && fs::exists(dir / detail::kManifestName, ec)) {
    try {
      if (!detail::read_manifest_with_sum(dir).second.value_or(false))
        sink.add(std::string(detail::kManifestSumName), std::nullopt, "",
                 "manifest.json checksum mismatch (manifest or its checksum file was modified)");
      ++report.checksums_checked;
    } catch (const Error& e) {
      if (!is_finding(e)) throw;
      sink.add(std::string(detail::kManifestName), std::nullopt, "", e.describe());
    }
  }
  return have_sum;
}

// Manifest content beyond what opening needs.
void verify_manifest_content(const Cache& cache, IssueSink& sink, VerifyReport& report) {
  try {
    const auto manifest = detail::parse_json_bounded(cache.manifest_text());
    if (!manifest.contains("version"))
      report.notes.push_back("manifest has no \"version\" (the Python loader does not need it)");
    else if (manifest["version"] != 1)
      sink.add("manifest.json", std::nullopt, "", "unknown format version " + manifest["version"].dump());
    for (const CacheField& f : cache.fields()) {
      const auto& spec = manifest["fields"][f.name];
      if (spec.contains("num_samples") && spec["num_samples"] != cache.size())
        sink.add("manifest.json", std::nullopt, f.name,
                 "field num_samples " + spec["num_samples"].dump() + " differs from " + std::to_string(cache.size()));
      if (is_payload_type(f.type) && f.image_format != "jpeg" && f.image_format != "yuv420")
        sink.add("manifest.json", std::nullopt, f.name, "unknown image_format \"" + f.image_format + "\"");
    }
  } catch (const nlohmann::json::exception& e) {
    sink.add("manifest.json", std::nullopt, "", e.what());
  }
}

// file_sizes: every storage file listed with its actual size.
void verify_file_sizes(const Cache& cache, IssueSink& sink, VerifyReport& report) {
  const auto& sizes = cache.file_sizes();
  if (sizes.empty()) report.notes.push_back("manifest has no file_sizes");
  for (const CacheField& f : cache.fields()) {
    for (const std::string& name : f.files) {
      const uint64_t actual = cache.file_bytes(name).size();
      auto it = sizes.find(name);
      if (it == sizes.end()) {
        if (!sizes.empty()) sink.add("manifest.json", std::nullopt, f.name, "file_sizes lacks " + name);
      } else if (it->second != actual) {
        sink.add(name, std::nullopt, f.name, "size " + std::to_string(actual) + " differs from file_sizes " + std::to_string(it->second));
      }
      // Exact .npy length: header + data, nothing more or less.
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) {
        uint64_t per = 0;
        if (f.type == FieldType::image || f.type == FieldType::bytes)
          per = 24;
        else if (f.type == FieldType::str)
          per = 16;
        else if (name == f.files[0]) {  // numeric: rows of dtype x the trailing dimensions
          per = npy_dtype_size(f.dtype);
          for (size_t d = 1; d < f.shape.size() && per; ++d) per = f.shape[d] > UINT64_MAX / per ? 0 : per * f.shape[d];
        }
        if (per && (per > UINT64_MAX / std::max<uint64_t>(1, cache.size()) || cache.npy_data_offset(name) + per * cache.size() != actual))
          sink.add(
              name, std::nullopt, f.name,
              "has " + std::to_string(actual) + " bytes, expected " + std::to_string(cache.npy_data_offset(name) + per * cache.size()));
      }
    }
  }
}

// Field indexes: the ones slip recorded, and any other field's whose files are there (a
// checksum-less copy, another writer): well-formed and typed as their field, every id
// carries its key's value, every sample once.
void verify_field_indexes(const Cache& cache, const fs::path& dir, IssueSink& sink) {
  std::error_code ec;
  std::vector<std::pair<std::string, std::string>> indexed;  // field, keys file
  std::set<std::string> listed;
  try {
    const auto manifest = detail::parse_json_bounded(cache.manifest_text());
    if (manifest.contains("slip") && manifest["slip"].contains("indexes"))
      for (auto& [field, spec] : manifest["slip"]["indexes"].items()) {
        indexed.emplace_back(field, spec.value("keys", field + ".index.keys.npy"));
        listed.insert(field);
      }
  } catch (const nlohmann::json::exception& e) {
    sink.add("manifest.json", std::nullopt, "", std::string("slip indexes: ") + e.what());
  }
  for (const CacheField& f : cache.fields()) {
    const std::vector<std::string> names = csr_index_names(f.name);
    if (!listed.count(f.name) && fs::symlink_status(dir / names[0], ec).type() != fs::file_type::not_found)
      indexed.emplace_back(f.name, names[0]);
  }
  for (const auto& [field, keys_file] : indexed) {
    try {
      const auto idx = read_field_index(cache, field);
      if (!idx) {
        sink.add(keys_file, std::nullopt, field,
                 listed.count(field) ? "index listed in the manifest is missing" : "index incomplete (keys without offsets or ids)");
        continue;
      }
      const auto fi = *cache.field_index(field);
      std::vector<bool> seen(cache.size(), false);
      for (size_t k = 0; k < idx->num_keys(); ++k)
        for (int64_t id : idx->ids_of(k)) {
          const auto i = static_cast<uint64_t>(id);
          bool match;
          if (idx->key_type == FieldType::str)
            match = cache.string(fi, i) == idx->str_keys[k];
          else if (idx->key_type == FieldType::float64)
            match = cache.float_value(fi, i) == idx->float_keys[k];
          else
            match = cache.int_value(fi, i) == idx->int_keys[k];
          if (!match || seen[i]) {
            sink.add(keys_file, i, field,
                     match ? "sample listed twice in the index" : "index lists the sample under a value it does not have");
          }
          seen[i] = true;
        }
    } catch (const Error& e) {
      if (!is_finding(e)) throw;
      sink.add(fs::path(e.path()).filename().string(), e.sample(), field, e.message());
    }
  }
}

// Whole-file checksums recorded by slip.
void verify_file_checksums(const Cache& cache, const fs::path& dir, IssueSink& sink, VerifyReport& report, const VerifyOptions& options) {
  std::error_code ec;
  try {
    const auto manifest = detail::parse_json_bounded(cache.manifest_text());
    // Untrusted JSON: walk with find(), never const operator[] on a key that may be absent.
    const nlohmann::json* files = &manifest;
    for (const char* key : {"slip", "checksums", "files"}) {
      if (!files->is_object() || !files->contains(key)) {
        files = nullptr;
        break;
      }
      files = &(*files->find(key));
    }
    if (files && files->is_object() && !files->empty()) {
      report.checksums_present = true;
      uint64_t hashed_files = 0;
      if (options.progress) options.progress("checksums", 0, files->size());
      for (auto& [name, want] : files->items()) {
        throw_if_interrupted();
        if (options.progress && hashed_files) options.progress("checksums", hashed_files, files->size());
        ++hashed_files;
        if (!detail::file_stem_problem(name).empty()) {
          sink.add("manifest.json", std::nullopt, "",
                   "checksums list \"" + detail::escape_for_terminal(name) + "\", which is not a file name");
          continue;
        }
        const fs::path p = dir / name;
        if (fs::symlink_status(p, ec).type() == fs::file_type::not_found) {
          sink.add(name, std::nullopt, "", "file listed in the checksums is missing");
          continue;
        }
        uint64_t size = 0, sum = 0;
        try {
          std::tie(size, sum) = detail::xxh3_64_of_file(p, detail::Open::cache_file);  // streamed: RSS bounded
        } catch (const Error& e) {
          if (!is_finding(e)) throw;
          sink.add(name, std::nullopt, "", e.message());
          continue;
        }
        ++report.checksums_checked;
        report.bytes_hashed += size;
        if (!want.is_string() || hex64(sum) != want.get<std::string>()) sink.add(name, std::nullopt, "", "file checksum mismatch");
      }
      if (options.progress) options.progress("checksums", hashed_files, files->size());
    } else {
      report.notes.push_back("checksums absent (not written by slip): structure, sizes, bounds and JPEG markers checked");
    }
  } catch (const nlohmann::json::exception& e) {
    sink.add("manifest.json", std::nullopt, "", std::string("slip checksums: ") + e.what());
  }
}

// One image of --decode: the engine's full decode against TurboJPEG's (`m` guards the report).
void verify_decode_one(const Cache& cache, size_t fi, size_t i, IssueSink& sink, VerifyReport& report, const VerifyOptions& options,
                       std::mutex& m) {
  const CacheField& f = cache.fields()[fi];
  std::span<const std::byte> payload;
  try {
    payload = cache.payload(fi, i);
  } catch (const Error&) {
    return;  // already reported by the structural checks
  }
  if (sniff_image_format(payload) != ImageFormat::jpeg || !jpeg_decodes_to_rgb(payload)) return;
  try {
    const RgbImage ours = engine_decode_full(payload);
    const RgbImage ref = decode_jpeg_rgb(payload);
    int max_diff = 0;
    uint64_t total = 0;
    if (ours.pixels.size() != ref.pixels.size()) {
      sink.add(f.files[0], i, f.name, "engine decode has a different size than TurboJPEG's");
      return;
    }
    for (size_t k = 0; k < ours.pixels.size(); ++k) {
      const int d = std::abs(int(ours.pixels[k]) - int(ref.pixels[k]));
      max_diff = std::max(max_diff, d);
      total += static_cast<uint64_t>(d);
    }
    const double mean = ours.pixels.empty() ? 0.0 : static_cast<double>(total) / static_cast<double>(ours.pixels.size());
    std::lock_guard lock(m);
    ++report.images_decoded;
    report.decode_max_diff = std::max(report.decode_max_diff, max_diff);
    report.decode_mean_diff = std::max(report.decode_mean_diff, mean);
    if (max_diff > options.max_diff || mean > options.mean_diff)
      sink.add(f.files[0], i, f.name,
               "decoded pixels differ from TurboJPEG's: max " + std::to_string(max_diff) + ", mean " + std::to_string(mean));
  } catch (const Error& e) {
    if (!is_finding(e)) throw;  // this libjpeg cannot decode it (exit 4), not a corrupt image
    sink.add(f.files[0], i, f.name, "image does not decode: " + e.message());
  }
}

// --decode: the engine's full decode against an accurate TurboJPEG decode, image by image. Both are
// libjpeg-turbo with the ISLOW IDCT and fancy upsampling, so they should agree exactly;
// the default thresholds (max 1, mean 0.01) leave room for a SIMD variant, nothing more.
void verify_decoded_pixels(const Cache& cache, IssueSink& sink, VerifyReport& report, const VerifyOptions& options, unsigned threads) {
  report.decode_checked = true;
  std::mutex m;
  for (size_t fi = 0; fi < cache.fields().size(); ++fi) {
    const CacheField& f = cache.fields()[fi];
    if (f.type == FieldType::image && f.image_format == "yuv420")
      report.notes.push_back("field \"" + f.name + "\" is stored as YUV420: no JPEG in the cache to compare its pixels with");
    if (f.type != FieldType::image || f.image_format == "yuv420") continue;
    // In steps of 1,024 images so the caller's thread reports progress between them.
    const uint64_t n = cache.size(), step = 1024;
    cache.release_resident_pages();  // what the structural pass left mapped
    for (uint64_t first = 0; first < n; first += step) {
      if (options.progress) options.progress("decode", first, n);
      cache.keep_resident_below();  // bounded RSS, as in the structural pass
      parallel_for(std::min(step, n - first), threads, [&, first](size_t k) {
        if (k % 64 == 0) throw_if_interrupted();
        verify_decode_one(cache, fi, first + k, sink, report, options, m);
      });
    }
    if (options.progress) options.progress("decode", n, n);
  }
}

}  // namespace

std::vector<std::string> unknown_cache_files(const Cache& cache) {
  nlohmann::json manifest;
  try {
    manifest = detail::parse_json_bounded(cache.manifest_text());
  } catch (const nlohmann::json::exception&) {  // opened, so parsed once: known from the fields alone
  }
  const std::set<std::string> known = verify_known_cache_files(cache, manifest);
  std::set<std::string> temporaries;
  for (const detail::TempEntry& t : detail::find_temporaries(cache.path())) {
    temporaries.insert(t.path.filename().string());
    temporaries.insert(t.path.filename().string() + ".lock");
  }
  std::vector<std::string> unknown;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache.path(), ec)) {
    std::string name = e.path().filename().string();
    if (!known.count(name) && !temporaries.count(name)) unknown.push_back(std::move(name));
  }
  if (ec) throw_errno("cannot list", cache.path().string(), ec.value());
  std::sort(unknown.begin(), unknown.end());
  return unknown;
}

VerifyReport verify_cache(const fs::path& dir, const VerifyOptions& options) {
  const detail::CancelScope cancel_scope(options.cancel);
  const auto t0 = std::chrono::steady_clock::now();
  VerifyReport report;
  report.path = dir;
  IssueSink sink(report, options.max_issues);
  const unsigned threads = options.threads ? options.threads : available_cpus();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(Errc::io, "not a directory").with_path(dir.string());
  // --decode with a libjpeg that must not be handed a buffer (a 12-bit build): one error first,
  // not every image called corrupt after the structural pass.
  if (options.decode) detail::require_usable_libjpeg();

  auto finish = [&] {
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return report;
  };

  const bool have_sum = verify_manifest_sum(dir, sink, report);

  std::optional<Cache> cache;
  try {
    cache.emplace(Cache::open(dir));
  } catch (const Error& e) {
    if (!is_finding(e)) throw;
    std::string file = e.path().empty() ? std::string(detail::kManifestName) : fs::path(e.path()).filename().string();
    sink.add(file, e.sample(), "", e.message() + (e.offset() ? " (byte " + std::to_string(*e.offset()) + ")" : ""));
    return finish();
  }
  report.samples = cache->size();
  report.slip_written = cache->provenance().present;
  if (report.slip_written && !have_sum)
    sink.add(std::string(detail::kManifestSumName), std::nullopt, "", "missing (slip-written caches carry the manifest's checksum)");

  verify_manifest_content(*cache, sink, report);
  verify_file_sizes(*cache, sink, report);

  for (size_t fi = 0; fi < cache->fields().size(); ++fi) {
    throw_if_interrupted();
    const CacheField& f = cache->fields()[fi];
    if (is_payload_type(f.type)) check_payload_field(*cache, fi, sink, report, threads, options.progress);
    if (f.type == FieldType::image && f.image_format == "jpeg")
      check_yuv420_siblings(*cache, fi, sink, report, options, threads);
    else if (f.type == FieldType::str)
      check_string_field(*cache, fi, sink);
  }

  verify_field_indexes(*cache, dir, sink);
  check_directory_entries(*cache, sink, report);
  verify_file_checksums(*cache, dir, sink, report, options);
  if (options.decode) verify_decoded_pixels(*cache, sink, report, options, threads);
  return finish();
}

}  // namespace slip
