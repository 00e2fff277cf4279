#include "util/atomic_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <random>

#include "slip/error.hpp"
#include "util/file_io.hpp"

namespace slip::detail {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kTmpMark = ".tmp-";
constexpr std::string_view kLockSuffix = ".lock";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

uint64_t random_u64() {
  uint64_t v = 0;
  std::random_device rd;
  v = (uint64_t{rd()} << 32) ^ rd();
  return v ^ static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

uint64_t entry_bytes(const fs::path& p) {
  std::error_code ec;
  const auto st = fs::symlink_status(p, ec);
  if (ec) return 0;
  if (fs::is_regular_file(st)) return fs::file_size(p, ec);
  uint64_t total = 0;
  if (fs::is_directory(st))
    for (const auto& e : fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec))
      if (e.is_regular_file(ec) && !e.is_symlink(ec)) total += e.file_size(ec);
  return total;
}

// Takes the lock of temporary `tmp` if nobody holds it: returns the open, locked descriptor
// (the caller removes the temporary, then the lock file, then closes), -1 when a live run
// holds it, -2 when there is no lock file (a temporary of a slip that predates the locks, or
// one whose process died before locking: abandoned either way).
int try_take_lock(const fs::path& tmp) {
  const fs::path lock = tmp.string() + std::string(kLockSuffix);
  const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return errno == ENOENT ? -2 : -1;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

TempLock::TempLock(const fs::path& dir, const std::string& final_name) {
  // The lock file is created (O_EXCL: a name no other run uses) and locked before the
  // temporary exists, so a cleaner never sees a temporary of a live run without a held lock.
  for (int attempt = 0;; ++attempt) {
    char suffix[24];
    std::snprintf(suffix, sizeof suffix, "%08llx", static_cast<unsigned long long>(random_u64() & 0xffffffffull));
    const fs::path tmp = dir / ("." + final_name + std::string(kTmpMark) + std::to_string(::getpid()) + "-" + suffix);
    const fs::path lock = tmp.string() + std::string(kLockSuffix);
    const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
      if (errno == EEXIST && attempt < 16) continue;
      throw_errno("cannot create lock file", lock.string(), errno);
    }
    // A cleaner may have taken (and unlinked) the fresh file in between: keep it only when we
    // hold the lock of the file that is still at that name.
    struct stat held {
    }, named{};
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0 || ::fstat(fd, &held) != 0 || ::stat(lock.c_str(), &named) != 0 ||
        held.st_ino != named.st_ino || held.st_dev != named.st_dev) {
      ::close(fd);
      if (attempt < 16) continue;
      throw Error(Errc::io, "cannot lock a temporary name").with_path(lock.string());
    }
    tmp_ = tmp;
    lock_ = lock;
    fd_ = fd;
    return;
  }
}

TempLock::~TempLock() {
  if (fd_ < 0) return;
  std::error_code ec;
  fs::remove_all(tmp_, ec);
  release();
}

void TempLock::release() noexcept {
  if (fd_ < 0) return;
  ::unlink(lock_.c_str());  // while still holding the lock
  ::close(fd_);
  fd_ = -1;
}

namespace {

// The position of ".tmp-" in a temporary's name, npos for any other name.
size_t temporary_mark(std::string_view name) {
  const auto mark = name.find(kTmpMark);
  if (name.size() < 2 || name[0] != '.' || mark == std::string_view::npos || mark < 2) return std::string_view::npos;
  return mark;
}

TempEntry describe_temporary(const fs::path& path, size_t mark, bool is_lock) {
  TempEntry t;
  t.path = path;
  t.final_name = path.filename().string().substr(1, mark - 1);
  std::error_code ec;
  t.is_directory = fs::is_directory(fs::symlink_status(path, ec));
  t.bytes = entry_bytes(path);
  if (is_lock) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    t.in_progress = fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0;
    if (fd >= 0) ::close(fd);
  } else {
    const int fd = try_take_lock(path);
    t.in_progress = fd == -1;
    if (fd >= 0) ::close(fd);
  }
  return t;
}

}  // namespace

std::optional<TempEntry> temporary_at(const fs::path& path) {
  const fs::path p = path.has_filename() ? path : path.parent_path();  // "dir/" names dir
  const std::string name = p.filename().string();
  const size_t mark = temporary_mark(name);
  if (mark == std::string::npos) return std::nullopt;
  return describe_temporary(p, mark, ends_with(name, kLockSuffix));
}

std::vector<TempEntry> find_temporaries(const fs::path& dir, std::string_view final_name) {
  std::vector<TempEntry> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const size_t mark = temporary_mark(name);
    if (mark == std::string::npos) continue;
    const bool is_lock = ends_with(name, kLockSuffix);
    if (is_lock) {
      // A lock file whose temporary is gone: listed only when abandoned (a live run creates
      // its lock first), so that cleaning removes it.
      const fs::path tmp = e.path().string().substr(0, e.path().string().size() - kLockSuffix.size());
      std::error_code sec;
      if (fs::symlink_status(tmp, sec).type() != fs::file_type::not_found) continue;
    }
    if (!final_name.empty() && name.substr(1, mark - 1) != final_name) continue;
    out.push_back(describe_temporary(e.path(), mark, is_lock));
  }
  std::sort(out.begin(), out.end(), [](const TempEntry& a, const TempEntry& b) { return a.path < b.path; });
  return out;
}

std::vector<TempEntry> remove_stale_temporaries(const fs::path& dir, std::string_view final_name) {
  std::vector<TempEntry> removed;
  for (TempEntry& t : find_temporaries(dir, final_name)) {
    if (t.in_progress) continue;
    const bool is_lock = ends_with(t.path.filename().string(), kLockSuffix);
    // Take the lock again for the removal itself: the listing above is a snapshot.
    const int fd = is_lock ? ::open(t.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) : try_take_lock(t.path);
    if (fd == -1) continue;
    if (is_lock && fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      continue;
    }
    std::error_code ec;
    if (!is_lock) fs::remove_all(t.path, ec);
    if (!ec) {
      if (is_lock)
        ::unlink(t.path.c_str());
      else
        ::unlink((t.path.string() + std::string(kLockSuffix)).c_str());
      removed.push_back(std::move(t));
    }
    if (fd >= 0) ::close(fd);
  }
  return removed;
}

namespace {
fs::path directory_of(const fs::path& path) { return path.has_parent_path() ? path.parent_path() : fs::path("."); }
}  // namespace

AtomicFile::AtomicFile(const fs::path& path, Sweep sweep) : final_(path), lock_(directory_of(path), path.filename().string()) {
  // After taking our own lock, which marks our temporary as in progress.
  if (sweep == Sweep::stale_temporaries) remove_stale_temporaries(directory_of(path), path.filename().string());
}

void AtomicFile::commit() {
  std::error_code ec;
  fs::rename(lock_.path(), final_, ec);
  if (ec) throw Error(Errc::io, "cannot rename into place: " + ec.message()).with_path(final_.string());
  lock_.release();
  fsync_directory(directory_of(final_));
}

void replace_file(const fs::path& path, std::string_view bytes, AtomicFile::Sweep sweep) {
  AtomicFile file(path, sweep);
  write_text_file(file.temp_path(), bytes);
  file.commit();
}

}  // namespace slip::detail
