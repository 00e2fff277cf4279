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

 private:
  void publish_by_moving_aside();  // where renameat2 is missing

  std::filesystem::path root_, final_;
  TempLock lock_;
  bool published_ = false;
};

// A complete cache with this content id: manifest and its checksum agree, the content id
// matches, every file in file_sizes has its recorded size. Never throws.
bool is_complete_cache(const std::filesystem::path& dir, const std::string& content_id);

// manifest.json.xxh3 exists and matches manifest.json (whose text is given).
bool manifest_sum_matches(const std::filesystem::path& dir, std::string_view manifest_text);

// "2026-11-22T14:00:00Z", or SOURCE_DATE_EPOCH when set (reproducible builds).
std::string utc_timestamp(std::optional<int64_t> seconds_since_epoch = std::nullopt);

}  // namespace slip::detail
