// Internal: writing manifest.json (Python json.dump(indent=2) style) and its checksum file.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

namespace slip::detail {

// The manifest text as upstream's json.dump(obj, indent=2) would write it: ASCII, no newline.
std::string manifest_text(const nlohmann::ordered_json& manifest);

// Writes manifest.json and manifest.json.xxh3 into `dir`, each replaced atomically
// (util/atomic_file.hpp), so a reader sees the old or the new manifest, never a torn one.
void write_manifest(const std::filesystem::path& dir, const nlohmann::ordered_json& manifest);

// Reads and parses manifest.json preserving key order. Throws Error(bad_input) naming it.
nlohmann::ordered_json read_manifest(const std::filesystem::path& dir);

}  // namespace slip::detail
