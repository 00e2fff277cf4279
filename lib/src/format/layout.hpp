// Internal: file names and constants of the cache layout (docs/FORMAT.md).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "slip/schema.hpp"

namespace slip::detail {

inline constexpr std::string_view kManifestName = "manifest.json";
// XXH3-64 of manifest.json, as 16 hex digits + "\n" (the manifest cannot hold its own sum).
inline constexpr std::string_view kManifestSumName = "manifest.json.xxh3";
// The cache's writer lock: every command that rewrites an existing cache's manifest holds an
// exclusive flock() on it (format/manifest_io.hpp ManifestUpdate). Empty, kept once made (removing
// a lock file lets a waiter lock a name nobody else uses). A field's files end in .bin or .npy.
inline constexpr std::string_view kCacheLockName = "manifest.json.lock";
// The cache's own files, no field's: the manifest, its checksum and the writer lock.
inline constexpr std::string_view kCacheOwnFiles[] = {kManifestName, kManifestSumName, kCacheLockName};
inline constexpr int kSlipFormatVersion = 1;
inline constexpr std::string_view kContentIdSalt = "slipstream-v1";
inline constexpr std::string_view kCacheSuffix = ".slipstream";

// Every file a field has in a cache, or may get from a later command (docs/FORMAT.md#layout).
enum class FileKind : uint8_t {
  bin,            // <f>.bin: payloads (image, bytes) or UTF-8 text (str)
  meta,           // <f>.meta.npy: payload records
  offsets,        // <f>.offsets.npy: string (offset, length) rows
  npy,            // <f>.npy: numbers and arrays
  payload_sums,   // <f>.xxh3.npy: slip's per-payload checksums
  pickled_index,  // <f>_index.npy: slip index / Python write_index
  index_keys,     // <f>.index.keys.npy: slip index
  index_offsets,  // <f>.index.offsets.npy
  index_ids,      // <f>.index.ids.npy
  yuv420_bin,     // <f>_yuv420.bin: slip yuv420 / the Python loader
  yuv420_meta,    // <f>_yuv420.meta.npy
};

// THE naming function: every file name of a field is built here, so the collision check
// below sees exactly the names the writers use.
std::string field_file(std::string_view field, FileKind kind);
// What a file of that kind is, for messages ("YUV420 sibling records").
std::string_view file_kind_description(FileKind kind);

struct FieldFile {
  std::string name;
  FileKind kind;
};
// Every file a field of `type` has now or may get later: its storage files, slip's checksums
// (payload fields), the index files (`slip index`, Python write_index: any field but an image
// field) and the YUV420 siblings (image fields).
std::vector<FieldFile> field_files(std::string_view field, FieldType type);

// Storage files of a field, main file first, as the Python loader expects them (docs/FORMAT.md#layout).
std::vector<std::string> storage_files(std::string_view field, FieldType type);
// slip's per-payload checksum file of an image/bytes field.
std::string checksum_file(std::string_view field);

// Throws Error(bad_input) "<origin>: fields "A" and "B" would share FILE (A's ..., B's ...)"
// when a file of one field (field_files, now or after `slip index` / `slip yuv420`) is a file
// of another, or one of the cache's own files (kCacheOwnFiles). `hint` ends the message.
void check_field_files_disjoint(std::span<const std::pair<std::string_view, FieldType>> fields, std::string_view origin,
                                std::string_view hint);

// Checks every field name of a schema about to be written (util/untrusted.hpp check_field_name), and that no two
// fields share a name or a file, now or after `slip index` / `slip yuv420` ("a.offsets" as an
// int field would write the string field "a"'s offsets file, "image_yuv420.meta" the YUV420
// records of "image"; check_field_files_disjoint). `origin` names the source
// in the message. Throws Error(bad_input).
void check_schema_names(const Schema& schema, std::string_view origin);

}  // namespace slip::detail
