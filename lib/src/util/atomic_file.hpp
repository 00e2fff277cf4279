// Internal: slip's temporaries, and the one way a file is replaced.
//
// Every temporary (a staging directory ".<name>.tmp-<pid>-<random>" beside a cache, a file
// ".<file>.tmp-<pid>-<random>" beside the file it replaces) has a lock file beside it,
// "<temporary>.lock", created before the temporary and flock()ed for the life of the run. The
// kernel drops the lock when the process dies however it dies (SIGKILL too), so a temporary
// whose lock can be taken is abandoned. PIDs are only shown to people: they say nothing across
// PID namespaces. A fixed name ("<file>.tmp") is never used: it could be a link planted by
// whoever else writes to the directory, and two runs would share it.
#pragma once

#include <cstdint>
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

// The temporary at `path` when its name is one of slip's (".<x>.tmp-..."), with whether its
// run is still in progress; nullopt for any other name. Never throws.
std::optional<TempEntry> temporary_at(const std::filesystem::path& path);

// Removes the abandoned temporaries of find_temporaries (and their lock files); returns them.
std::vector<TempEntry> remove_stale_temporaries(const std::filesystem::path& dir, std::string_view final_name = {});

// A file replaced atomically: it is written under a locked temporary name in the same
// directory (same file system, so the rename is atomic), fsynced, renamed over the final name,
// and the directory is fsynced. A reader sees the old file or the new one, never a torn one;
// if anything fails before commit(), the old file is untouched and the temporary is removed.
class AtomicFile {
 public:
  // What else the constructor does: remove abandoned temporaries of the same name (a
  // directory scan), or not, where files are replaced often in a large directory (download
  // records: thousands of files, two replacements each).
  enum class Sweep { stale_temporaries, none };
  // Locks a fresh temporary name beside `path`.
  explicit AtomicFile(const std::filesystem::path& path, Sweep sweep = Sweep::stale_temporaries);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Where to write; the caller fsyncs what it wrote (FileWriter::close does).
  const std::filesystem::path& temp_path() const noexcept { return lock_.path(); }
  const std::filesystem::path& path() const noexcept { return final_; }
  // Renames the temporary over path() and fsyncs the directory; throws Error(io).
  void commit();

 private:
  std::filesystem::path final_;
  TempLock lock_;
};

// Replaces `path` with `bytes` through an AtomicFile; throws Error(io).
void replace_file(const std::filesystem::path& path, std::string_view bytes,
                  AtomicFile::Sweep sweep = AtomicFile::Sweep::stale_temporaries);

}  // namespace slip::detail
