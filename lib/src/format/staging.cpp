#include "format/staging.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <nlohmann/json.hpp>

#include "format/layout.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "util/file_io.hpp"
#include "util/untrusted.hpp"

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

std::vector<TempEntry> find_temporaries(const fs::path& dir, std::string_view final_name) {
  std::vector<TempEntry> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const auto mark = name.find(kTmpMark);
    if (name.size() < 2 || name[0] != '.' || mark == std::string::npos || mark < 2) continue;
    const bool is_lock = ends_with(name, kLockSuffix);
    if (is_lock) {
      // A lock file whose temporary is gone: listed only when abandoned (a live run creates
      // its lock first), so that cleaning removes it.
      const fs::path tmp = e.path().string().substr(0, e.path().string().size() - kLockSuffix.size());
      std::error_code sec;
      if (fs::symlink_status(tmp, sec).type() != fs::file_type::not_found) continue;
    }
    TempEntry t;
    t.path = e.path();
    t.final_name = name.substr(1, mark - 1);
    if (!final_name.empty() && t.final_name != final_name) continue;
    std::error_code sec;
    t.is_directory = fs::is_directory(fs::symlink_status(e.path(), sec));
    t.bytes = entry_bytes(e.path());
    if (is_lock) {
      const int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
      t.in_progress = fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0;
      if (fd >= 0) ::close(fd);
    } else {
      const int fd = try_take_lock(e.path());
      t.in_progress = fd == -1;
      if (fd >= 0) ::close(fd);
    }
    out.push_back(std::move(t));
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
const fs::path& created(const fs::path& root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw Error(Errc::io, "cannot create output directory: " + ec.message()).with_path(root.string());
  return root;
}
}  // namespace

StagingDir::StagingDir(const fs::path& root, const std::string& final_name)
    : root_(root), final_(root / final_name), lock_(created(root), final_name) {
  remove_stale_temporaries(root, final_name);
  std::error_code ec;
  if (!fs::create_directory(lock_.path(), ec) || ec)
    throw Error(Errc::io, "cannot create directory: " + (ec ? ec.message() : std::string("exists"))).with_path(lock_.path().string());
}

StagingDir::~StagingDir() = default;  // the lock removes an unpublished directory

void StagingDir::publish() {
  fsync_directory(lock_.path());
  std::error_code ec;
  // An existing (forced or stale) cache is moved aside first, then removed.
  if (fs::exists(final_, ec)) {
    const fs::path old = lock_.path().string() + ".old";  // unique to this run, under its lock
    fs::remove_all(old, ec);
    fs::rename(final_, old, ec);
    if (ec) throw Error(Errc::io, "cannot replace existing cache: " + ec.message()).with_path(final_.string());
    fs::remove_all(old, ec);
  }
  fs::rename(lock_.path(), final_, ec);
  if (ec) throw Error(Errc::io, "cannot publish cache: " + ec.message()).with_path(final_.string());
  published_ = true;
  lock_.release();
  fsync_directory(root_);
}

bool manifest_sum_matches(const fs::path& dir, std::string_view text) {
  try {
    return read_text_file(dir / kManifestSumName, Open::cache_file) ==
           hex64(xxh3_64(std::as_bytes(std::span(text.data(), text.size())))) + "\n";
  } catch (const Error&) {
    return false;
  }
}

bool is_complete_cache(const fs::path& dir, const std::string& id) {
  try {
    const std::string text = read_text_file(dir / kManifestName, Open::cache_file);
    if (!manifest_sum_matches(dir, text)) return false;
    const auto manifest = detail::parse_json_bounded(text);
    if (manifest.at("slip").at("content_id").get<std::string>() != id) return false;
    for (auto& [name, size] : manifest.at("file_sizes").items())
      if (!file_stem_problem(name).empty() || !fs::is_regular_file(fs::symlink_status(dir / name)) ||
          fs::file_size(dir / name) != size.get<uint64_t>())
        return false;
    return true;
  } catch (...) {
    return false;
  }
}

std::string utc_timestamp(std::optional<int64_t> seconds_since_epoch) {
  const std::time_t now = seconds_since_epoch ? static_cast<std::time_t>(*seconds_since_epoch) : std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace slip::detail
