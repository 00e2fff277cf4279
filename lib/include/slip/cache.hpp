// slip/cache.hpp — opening and reading a slipstream cache (Python-written or slip-written).
#pragma once

#include "slip/export.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "slip/schema.hpp"

SLIP_API_BEGIN
namespace slip {

// One sample the writer did not store verbatim.
struct LedgerEntry {
  uint64_t source_index = 0;
  std::optional<uint64_t> sample;  // id in the cache; none when skipped
  std::string origin;              // path / member the sample came from
  std::string field;
  std::string action;  // "transcoded", "skipped", "filled" (a missing value stored as a stand-in)
  std::string reason;
};

// One row of <f>.meta.npy (docs/FORMAT.md#meta-records), packed little-endian.
struct MetaRecord {
  uint64_t data_ptr;
  uint64_t data_size;
  uint32_t height;
  uint32_t width;
};
static_assert(sizeof(MetaRecord) == 24);

struct CacheField {
  std::string name;
  std::string type_name;  // the manifest "type" string, verbatim
  FieldType type = FieldType::int64;
  uint64_t max_size = 0;        // image/bytes
  std::string image_format;     // image/bytes: "jpeg" (default) or "yuv420"
  std::string dtype;            // numeric/ndarray: the .npy dtype ("<i8", ...)
  std::vector<uint64_t> shape;  // numeric/ndarray: the .npy shape
  // The storage files of this field, main file first (docs/FORMAT.md#layout).
  std::vector<std::string> files;
  bool has_checksums = false;  // slip's <f>.xxh3.npy present
};

// What slip records about itself in the manifest's "slip" section (absent in Python caches).
struct CacheProvenance {
  bool present = false;
  int format_version = 0;
  std::string tool_version;
  std::string source_kind, source_uri, source_fingerprint;
  std::string content_id;
  std::string created;
  uint64_t source_samples = 0, skipped = 0, transcoded = 0;
  // The options that made these bytes (slip.options: "jpeg-restarts" -> "1", "on-error" ->
  // "skip", "max-image-pixels", "image-format", ...), in the manifest's order; empty for the
  // defaults. "image-format" is also taken from the fields for caches written before it was
  // recorded there.
  std::vector<std::pair<std::string, std::string>> options;
};

// A read-only, memory-mapped view of a cache directory. Opening checks the structure that
// reading depends on (manifest, files present, .npy headers and shapes, table sizes); payload
// accessors check each record against its file and throw Error(bad_input) naming the sample.
class Cache {
 public:
  // Throws Error(bad_input) for a slip staging directory (".<name>.tmp-<pid>-<id>"), even a
  // complete one: it is not a cache until its run renames it.
  static Cache open(const std::filesystem::path& dir);
  ~Cache();
  Cache(Cache&&) noexcept;
  Cache& operator=(Cache&&) noexcept;

  const std::filesystem::path& path() const noexcept;
  uint64_t size() const noexcept;  // num_samples
  const std::vector<CacheField>& fields() const noexcept;
  const CacheField& field(std::string_view name) const;  // throws Error(usage) when absent
  std::optional<size_t> field_index(std::string_view name) const noexcept;
  const CacheProvenance& provenance() const noexcept;
  const std::string& manifest_text() const noexcept;
  // file_sizes from the manifest (may be empty for old caches).
  const std::map<std::string, uint64_t>& file_sizes() const noexcept;

  // image/bytes fields
  MetaRecord record(size_t field, uint64_t sample) const;
  std::span<const std::byte> payload(size_t field, uint64_t sample) const;
  // str fields
  std::string_view string(size_t field, uint64_t sample) const;
  // numeric fields (int64 / float64 storage; other dtypes throw)
  int64_t int_value(size_t field, uint64_t sample) const;
  double float_value(size_t field, uint64_t sample) const;
  // ndarray fields: the sample's element bytes
  std::span<const std::byte> array_bytes(size_t field, uint64_t sample) const;
  // slip's stored XXH3-64 of a payload (image/bytes with checksums only)
  std::optional<uint64_t> payload_checksum(size_t field, uint64_t sample) const;

  // Integrity checks for commands that copy or derive data, against the XXH3-64 sums slip
  // records (what a cache records no sum for, e.g. a Python-written one, passes). Each throws
  // Error(bad_input) "checksum mismatch" naming the file.
  // check_checksums(): manifest.json against manifest.json.xxh3, then every storage file of
  // `field` (default: of every field) except payload .bin files whose payloads carry their own
  // sums (check_payload covers those, one payload at a time).
  void check_checksums(std::optional<size_t> field = std::nullopt) const;
  // Other files of the cache (e.g. index files) that the manifest lists a sum for.
  void check_file_checksums(const std::vector<std::string>& names) const;
  // The payload against its stored sum (image/bytes fields with per-payload sums).
  void check_payload(size_t field, uint64_t sample) const;

  // The mapped bytes of a storage file of this cache (for verify and raw I/O).
  std::span<const std::byte> file_bytes(const std::string& name) const;
  // Byte offset of the array data inside a mapped .npy file.
  uint64_t npy_data_offset(const std::string& name) const;
  // Drops every mapped file from the page cache.
  void drop_page_cache() const;
  // Releases this process's resident pages of every mapped file (the page cache keeps them):
  // readers of a whole cache call it every kResidentWindowBytes so their RSS stays bounded.
  // Safe while other threads read: released pages fault back in on access.
  void release_resident_pages() const noexcept;
  // Releases them when this process's resident file pages (/proc/self/statm) exceed `limit`.
  // What a payload read maps in depends on the kernel (fault-around, large folios: a random
  // 1 KB read can map megabytes), so readers check the real figure every few hundred payloads
  // instead of counting bytes. Cheap (one small read); safe from any thread.
  void keep_resident_below(uint64_t limit = kResidentWindowBytes) const noexcept;
  static constexpr uint64_t kResidentWindowBytes = 256ull << 20;

 private:
  Cache();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The cache directory `path` is or lies in (links resolved: the nearest directory from `path` up
// holding a manifest.json), or nullopt. Writing there damages that cache: a file or directory it
// does not account for makes `slip verify` fail, a cache inside it is read as one of its files.
std::optional<std::filesystem::path> enclosing_cache(const std::filesystem::path& path);
// Throws Error(usage) naming `what` (e.g. "the output directory"), `path` and the cache when
// enclosing_cache(path) finds one: every command checks what it writes with it before writing.
void check_output_outside_caches(const std::filesystem::path& path, std::string_view what);

}  // namespace slip
SLIP_API_END
