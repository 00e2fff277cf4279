// Internal: writing manifest.json (Python json.dump(indent=2) style) and its checksum file.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "util/file_lock.hpp"

namespace slip::detail {

// The manifest text as upstream's json.dump(obj, indent=2) would write it: ASCII, no newline.
std::string manifest_text(const nlohmann::ordered_json& manifest);

// Writes manifest.json and manifest.json.xxh3 into `dir`, each replaced atomically
// (util/atomic_file.hpp), so a reader sees the old or the new manifest, never a torn one.
void write_manifest(const std::filesystem::path& dir, const nlohmann::ordered_json& manifest);

// Reads and parses manifest.json preserving key order. Throws Error(bad_input) naming it.
nlohmann::ordered_json read_manifest(const std::filesystem::path& dir);

// One rewrite of an existing cache's manifest, by one writer at a time. The constructor takes an
// exclusive flock() on the cache's lock file (layout.hpp kCacheLockName, created when missing)
// and only then reads manifest.json, so what another command recorded meanwhile is kept, not
// overwritten with an older copy. Commit the files the new records describe while holding it,
// so files and records change together. Readers never need it (a cache may be read-only to
// them); verify takes it shared, to list the directory and read the manifest at one moment.
class ManifestUpdate {
 public:
  // Throws Error(io) naming the lock file when it cannot be created or locked, or as read_manifest.
  explicit ManifestUpdate(const std::filesystem::path& dir);
  nlohmann::ordered_json& manifest() noexcept { return manifest_; }
  // Writes the manifest (write_manifest); the lock is released at destruction.
  void commit() const { write_manifest(dir_, manifest_); }

 private:
  std::filesystem::path dir_;
  FileLock lock_;
  nlohmann::ordered_json manifest_;
};

}  // namespace slip::detail
