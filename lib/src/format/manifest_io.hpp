// Internal: writing manifest.json (Python json.dump(indent=2) style) and its checksum file.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

namespace slip::detail {

// The manifest text as upstream's json.dump(obj, indent=2) would write it: ASCII, no newline.
std::string manifest_text(const nlohmann::ordered_json& manifest);

// Writes manifest.json and manifest.json.xxh3 into `dir`, each through a temporary file, fsync
// and rename, so a reader sees the old or the new manifest, never a torn one.
void write_manifest(const std::filesystem::path& dir, const nlohmann::ordered_json& manifest);

// Replaces `path` with `text` atomically: a locked temporary beside it, fsync, rename.
void replace_file(const std::filesystem::path& path, std::string_view text);

// Reads and parses manifest.json preserving key order. Throws Error(bad_input) naming it.
nlohmann::ordered_json read_manifest(const std::filesystem::path& dir);

}  // namespace slip::detail
