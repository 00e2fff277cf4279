// Internal: atomic publication of a cache directory, and slip's temporaries.
//
// Every temporary (a staging directory ".<name>.tmp-<pid>-<random>" beside a cache, a file
// ".<file>.tmp-<pid>-<random>" inside one) has a lock file beside it, "<temporary>.lock",
// created before the temporary and flock()ed for the life of the run. The kernel drops the
// lock when the process dies however it dies (SIGKILL too), so a temporary whose lock can be
// taken is abandoned. PIDs are only shown to people: they say nothing across PID namespaces.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace slip::detail {

// A locked temporary name beside `final_name` in `dir` (the temporary itself is not created):
// the lock is held until destruction, which removes whatever is left at path() and then the
// lock file, unless release() was called after the temporary was renamed into place.
class TempLock {
 public:
  TempLock(const std::filesystem::path& dir, const std::string& final_name);
  ~TempLock();
  TempLock(const TempLock&) = delete;
  TempLock& operator=(const TempLock&) = delete;

  const std::filesystem::path& path() const noexcept { return tmp_; }
  // The temporary was renamed away: drop the lock file (nothing is removed).
  void release() noexcept;

 private:
  std::filesystem::path tmp_, lock_;
  int fd_ = -1;
};

// A temporary found in a directory: "in progress" (its lock is held) or abandoned.
struct TempEntry {
  std::filesystem::path path;
  std::string final_name;  // what it would have become
  bool in_progress = false;
  bool is_directory = false;
  uint64_t bytes = 0;
};

// slip's temporaries in `dir` (".<x>.tmp-*", including pre-lock ones ".<x>.tmp-<pid>" and
// their ".lock" files, which are not listed separately). When `final_name` is given, only
// those of that name. Never throws.
std::vector<TempEntry> find_temporaries(const std::filesystem::path& dir, std::string_view final_name = {});

// Removes the abandoned temporaries of find_temporaries (and their lock files); returns them.
std::vector<TempEntry> remove_stale_temporaries(const std::filesystem::path& dir, std::string_view final_name = {});

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
