// Internal: atomic publication of a cache directory (its temporaries: util/atomic_file.hpp).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "util/atomic_file.hpp"

namespace slip::detail {

class StagingDir {
 public:
  // Creates root (if needed) and the temporary directory for root/final_name, after removing
  // abandoned temporaries of the same name (remove_stale_temporaries).
  StagingDir(const std::filesystem::path& root, const std::string& final_name);
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;

  const std::filesystem::path& path() const noexcept { return lock_.path(); }
  const std::filesystem::path& final_path() const noexcept { return final_; }
  void publish();
  // Publishes under another name in the same root (convert's --on-error skip that skipped
  // nothing: the cache is the one a run without it writes, so it takes that one's name).
  void publish_as(const std::string& final_name) {
    final_ = root_ / final_name;
    publish();
  }

 private:
  void publish_by_moving_aside();  // where renameat2 is missing

  std::filesystem::path root_, final_;
  TempLock lock_;
  bool published_ = false;
};

// A complete cache with this content id: manifest and its checksum agree, the content id
// matches, every file in file_sizes has its recorded size. Never throws.
bool is_complete_cache(const std::filesystem::path& dir, const std::string& content_id);

// What convert() checks before it reuses the cache at `dir` instead of writing it again: all
// is_complete_cache checks, and the XXH3-64 of the tables slip.checksums lists (every .npy but
// an ndarray field's data: a few bytes per sample, read in well under a second at ImageNet's
// size; the .bin files of payloads, strings and YUV420 siblings are what `slip verify` reads).
// Empty when it passes, else what does not match ("image.bin is 1000 bytes; the manifest says
// 1010"). Never throws.
std::string reuse_problem(const std::filesystem::path& dir, const std::string& content_id);
inline constexpr std::string_view kReuseChecks = "manifest checksum, file sizes and the tables' checksums checked";

// manifest.json.xxh3 exists and matches manifest.json (whose text is given).
bool manifest_sum_matches(const std::filesystem::path& dir, std::string_view manifest_text);

// manifest.json's text, and whether manifest.json.xxh3 matches it (nullopt: there is none), as one
// pair: a writer replaces the two one after the other under the cache's lock (manifest_io.hpp
// ManifestUpdate), so a mismatch is read again holding that lock shared (when the lock file can be
// opened: readers never need it) before it counts. Throws as read_text_file.
std::pair<std::string, std::optional<bool>> read_manifest_with_sum(const std::filesystem::path& dir);

// "2026-11-22T14:00:00Z", or SOURCE_DATE_EPOCH when set (reproducible builds).
std::string utc_timestamp(std::optional<int64_t> seconds_since_epoch = std::nullopt);

}  // namespace slip::detail
