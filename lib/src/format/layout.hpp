// Internal: file names and constants of the cache layout (docs/FORMAT.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "slip/schema.hpp"

namespace slip::detail {

inline constexpr std::string_view kManifestName = "manifest.json";
// XXH3-64 of manifest.json, as 16 hex digits + "\n" (the manifest cannot hold its own sum).
inline constexpr std::string_view kManifestSumName = "manifest.json.xxh3";
inline constexpr int kSlipFormatVersion = 1;
inline constexpr std::string_view kContentIdSalt = "slipstream-v1";
inline constexpr std::string_view kCacheSuffix = ".slipstream";

// Storage files of a field, main file first, as the Python loader expects them (docs/FORMAT.md#layout).
std::vector<std::string> storage_files(std::string_view field, FieldType type);
// slip's per-payload checksum file of an image/bytes field.
std::string checksum_file(std::string_view field);

}  // namespace slip::detail
