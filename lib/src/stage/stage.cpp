// Node-local staging (slip/stage.hpp): one copy per node, made under a directory-wide flock,
// checked as `slip verify` checks a cache before it is renamed into place, held by readers
// with a shared flock so that eviction under a budget never removes a copy in use.
#include "slip/stage.hpp"

#include <fcntl.h>
#include <linux/fs.h>  // FICLONE
#include <stdio.h>     // renameat2
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "format/layout.hpp"
#include "slip/cache.hpp"
#include "slip/dataset.hpp"
#include "slip/error.hpp"
#include "slip/runtime.hpp"
#include "slip/verify.hpp"
#include "util/atomic_file.hpp"
#include "util/file_io.hpp"
#include "util/file_lock.hpp"

namespace slip {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStageDirLockName = ".slip-stage.lock";
constexpr size_t kStageChunkBytes = size_t{4} << 20;

// The readers' lock of a staged cache: beside it, so the staged directory holds exactly the
// cache's files; its modification time is when the cache was last staged or taken (LRU).
fs::path stage_reader_lock_path(const fs::path& dir, const std::string& name) { return dir / ("." + name + ".stage-lock"); }

struct StageSourceFile {
  std::string name;
  uint64_t size = 0;
};

// The files a copy holds: every regular file of the cache directory but slip's temporaries
// and lock files (hidden names, "*.lock"). A link or other special entry is not copied; a
// file of the cache that is one is then missing from the copy, which its check refuses.
std::vector<StageSourceFile> stage_source_files(const fs::path& src) {
  std::vector<StageSourceFile> files;
  std::error_code ec;
  for (fs::directory_iterator it(src, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.front() == '.' || name.ends_with(".lock")) continue;
    std::error_code sec;
    if (!it->is_regular_file(sec) || it->is_symlink(sec)) continue;
    const uint64_t size = it->file_size(sec);
    if (sec) throw_errno("cannot read the size of", it->path().string(), sec.value());
    files.push_back({name, size});
  }
  if (ec) throw_errno("cannot list", src.string(), ec.value());
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return files;
}

// The name a staged copy has: the cache's directory name when it carries the first 8 hex digits
// of the cache's content id (slip's "<name>-<id8>.slipstream"), else that name with "-<id8>"
// added. A name alone would let two caches collide: every job array's parts are called
// "part-00000-of-00002.slipstream", so staging two job arrays' parts (one Loader over both,
// or two jobs on one node) failed ("a reader is using" an "older copy") or replaced each other.
std::string staged_name_of(const std::string& dir_name, const Cache& cache) {
  if (dir_name.empty()) return dir_name;
  std::string id = Dataset::content_id_of(cache);
  if (id.starts_with("xxh3:")) id.erase(0, 5);  // a cache without slip's content id: its manifest's sum
  const std::string id8 = "-" + id.substr(0, 8);
  if (dir_name.find(id8) != std::string::npos) return dir_name;
  const std::string_view suffix = detail::kCacheSuffix;
  if (dir_name.size() > suffix.size() && dir_name.ends_with(suffix))
    return dir_name.substr(0, dir_name.size() - suffix.size()) + id8 + std::string(suffix);
  return dir_name + id8;
}

// What the check of the copy would refuse and can be seen from the listing alone: a file the
// cache does not account for, or one whose size differs from the manifest's record. Refused
// before a byte is copied or a staged cache evicted to make room for them (a sparse 3 GB stray
// file was copied whole, 32 s, before the check of the copy named it).
void stage_check_source_files(const fs::path& src, const std::vector<StageSourceFile>& files, const std::set<std::string>& unknown,
                              const std::map<std::string, uint64_t>& recorded_sizes) {
  for (const StageSourceFile& f : files) {
    const auto refuse = [&](const std::string& why) {
      return Error(Errc::bad_input, "refused to stage: " + why + " (nothing was copied)").with_path((src / f.name).string());
    };
    if (unknown.count(f.name)) throw refuse("unknown file: no part of the cache format, and no manifest record accounts for it");
    const auto it = recorded_sizes.find(f.name);
    if (it != recorded_sizes.end() && it->second != f.size)
      throw refuse("size " + std::to_string(f.size) + " differs from file_sizes " + std::to_string(it->second));
  }
}

// Bytes of the regular files directly in `dir` (a staged cache is flat).
uint64_t staged_dir_bytes(const fs::path& dir) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code sec;
    if (it->is_regular_file(sec) && !it->is_symlink(sec)) bytes += it->file_size(sec);
  }
  return bytes;
}

// The copy at `staged` is this source's and whole: the same manifest text (which records the
// content id and every checksum) and every file of the source there with its size. Copies are
// checked before they are published, so this is what can change after: a removed or cut file.
bool staged_copy_is_whole(const fs::path& staged, const std::string& manifest_text, const std::vector<StageSourceFile>& files) {
  try {
    if (detail::read_text_file(staged / detail::kManifestName, detail::Open::cache_file) != manifest_text) return false;
    for (const StageSourceFile& f : files) {
      struct stat st {};
      if (::lstat((staged / f.name).c_str(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != f.size) return false;
    }
    return true;
  } catch (const Error&) {
    return false;
  }
}

// An exclusive flock on a staged cache's readers' lock, taken without waiting: an empty fd
// when a reader holds it (or the file cannot be opened).
detail::UniqueFd stage_try_exclusive(const fs::path& lock) {
  detail::UniqueFd fd(::open(lock.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return {};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
    if (errno != EINTR) return {};
  return fd;
}

// Removes a staged cache whose readers' lock `held` this caller holds exclusively: renamed to
// a locked temporary first (a crash midway leaves a temporary the next caller removes, never a
// half-removed cache under its name), then the lock file, which no reader can be opening
// (readers take it under the directory lock, which the caller holds).
void remove_staged_cache(const fs::path& dir, const std::string& name, detail::UniqueFd held) {
  detail::TempLock aside(dir, name);
  if (::rename((dir / name).c_str(), aside.path().c_str()) != 0) throw_errno("cannot remove staged cache", (dir / name).string(), errno);
  ::unlink(stage_reader_lock_path(dir, name).c_str());
  held = {};
}  // ~TempLock removes the directory

// With a budget: removes least-recently-used staged caches that nobody holds until `need`
// more bytes fit. Only caches this module placed (those with a readers' lock) are candidates.
void make_room_in_stage(const fs::path& dir, const std::string& name, uint64_t need, uint64_t budget, std::vector<fs::path>& evicted) {
  if (need > budget)
    throw Error(Errc::io, "the cache is " + std::to_string(need) + " bytes, more than the budget of " + std::to_string(budget) + " bytes")
        .with_path((dir / name).string());
  struct Candidate {
    std::string name;
    uint64_t bytes = 0;
    struct timespec used {};
  };
  std::vector<Candidate> staged;
  uint64_t used = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    std::error_code sec;
    if (n.empty() || n.front() == '.' || n == name || it->is_symlink(sec) || !it->is_directory(sec)) continue;
    struct stat st {};
    if (::lstat(stage_reader_lock_path(dir, n).c_str(), &st) != 0) continue;  // not staged here
    staged.push_back({n, staged_dir_bytes(it->path()), st.st_mtim});
    used += staged.back().bytes;
  }
  if (ec) throw_errno("cannot list", dir.string(), ec.value());
  std::sort(staged.begin(), staged.end(), [](const Candidate& a, const Candidate& b) {
    return std::pair(a.used.tv_sec, a.used.tv_nsec) < std::pair(b.used.tv_sec, b.used.tv_nsec);
  });
  for (const Candidate& c : staged) {
    if (used + need <= budget) break;
    detail::UniqueFd held = stage_try_exclusive(stage_reader_lock_path(dir, c.name));
    if (!held) continue;  // in use
    remove_staged_cache(dir, c.name, std::move(held));
    used -= c.bytes;
    evicted.push_back(dir / c.name);
  }
  if (used + need > budget)
    throw Error(Errc::io, "the cache (" + std::to_string(need) + " bytes) does not fit the budget of " + std::to_string(budget) +
                              " bytes: the staged caches in use hold " + std::to_string(used) + " bytes")
        .with_path((dir / name).string());
}

// Places one file: a reflink (FICLONE) or a hard link where allowed and possible, else a copy
// read in pieces (a source cut short meanwhile is InputFile's error naming it and the offset).
void place_staged_file(const fs::path& from, const fs::path& to, uint64_t size, const StageOptions& options, StagedCache& h, uint64_t& done,
                       uint64_t total) {
  const detail::InputFile in(from);
  detail::UniqueFd out = detail::open_for_writing(to, detail::Create::fresh);
  if (options.links) {
    if (::ioctl(out.get(), FICLONE, in.fd()) == 0) {
      if (::fsync(out.get()) != 0) throw_errno("cannot write", to.string(), errno);
      h.bytes_linked += size;
      done += size;
      if (options.progress) options.progress(done, total);
      return;
    }
    out = {};
    if (::unlink(to.c_str()) != 0) throw_errno("cannot remove", to.string(), errno);
    if (::link(from.c_str(), to.c_str()) == 0) {
      h.bytes_linked += size;
      done += size;
      if (options.progress) options.progress(done, total);
      return;
    }
    out = detail::open_for_writing(to, detail::Create::fresh);
  }
  detail::FileWriter writer(std::move(out), to);
  std::vector<std::byte> buffer(static_cast<size_t>(std::min<uint64_t>(size, kStageChunkBytes)));
  for (uint64_t offset = 0; offset < in.size();) {
    throw_if_interrupted();
    const std::span<std::byte> piece(buffer.data(), static_cast<size_t>(std::min<uint64_t>(buffer.size(), in.size() - offset)));
    in.read_at(offset, piece);
    writer.write(piece);
    offset += piece.size();
    h.bytes_copied += piece.size();
    done += piece.size();
    if (options.progress) options.progress(done, total);
  }
  writer.close();
  if (in.size() != size) throw Error(Errc::bad_input, "the file changed size while it was staged").with_path(from.string());
}

// The copy in `inner` checked as `slip verify` checks a cache; throws the first issue as
// Error(bad_input) naming the source's file (and sample).
void check_staged_copy(const fs::path& inner, const fs::path& src, const StageOptions& options, StagedCache& h) {
  VerifyOptions v;
  v.threads = options.threads;
  v.max_issues = 1;
  const VerifyReport r = verify_cache(inner, v);
  h.bytes_verified = r.bytes_hashed;
  if (r.ok()) return;
  const VerifyIssue& issue = r.issues.front();
  Error e(Errc::bad_input, "refused to stage: " + issue.message + " (nothing was published)");
  e.with_path((src / issue.file).string());
  if (issue.sample) e.with_sample(*issue.sample);
  throw e;
}

void publish_staged_copy(const fs::path& inner, const fs::path& staged) {
  // Nothing is at `staged` (the caller removed what was, holding the directory lock).
  if (::renameat2(AT_FDCWD, inner.c_str(), AT_FDCWD, staged.c_str(), RENAME_NOREPLACE) == 0) return;
  if ((errno == EINVAL || errno == ENOSYS) && ::rename(inner.c_str(), staged.c_str()) == 0) return;
  throw_errno("cannot publish the staged cache", staged.string(), errno);
}

}  // namespace

StagedCache::~StagedCache() { release(); }

StagedCache::StagedCache(StagedCache&& other) noexcept
    : copied(other.copied),
      bytes(other.bytes),
      bytes_copied(other.bytes_copied),
      bytes_linked(other.bytes_linked),
      bytes_verified(other.bytes_verified),
      evicted(std::move(other.evicted)),
      path_(std::move(other.path_)),
      source_(std::move(other.source_)),
      fd_(std::exchange(other.fd_, -1)) {}

StagedCache& StagedCache::operator=(StagedCache&& other) noexcept {
  if (this != &other) {
    release();
    copied = other.copied;
    bytes = other.bytes;
    bytes_copied = other.bytes_copied;
    bytes_linked = other.bytes_linked;
    bytes_verified = other.bytes_verified;
    evicted = std::move(other.evicted);
    path_ = std::move(other.path_);
    source_ = std::move(other.source_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void StagedCache::release() noexcept {
  if (fd_ >= 0) ::close(fd_);  // closing drops the shared flock
  fd_ = -1;
}

StagedCache stage(const fs::path& source, const StageOptions& options) {
  if (options.dir.empty()) throw Error(Errc::usage, "no stage directory given");
  // A stage directory in a cache (the source's own, `--to CACHE/stage`) would put lock files and
  // copies into that cache, which `verify` then fails. Checked first: a refused call touches
  // nothing, not even the source's lock file below.
  check_output_outside_caches(options.dir, "the stage directory");
  fs::path src = source.lexically_normal();
  if (!src.has_filename()) src = src.parent_path();  // "cache/"
  // The source's writers (`slip index`, `slip yuv420`: an exclusive lock on it while they add files
  // and replace the manifest) wait until the copy is checked and published, so the copy is one
  // state of the cache. Before, a copy taken while `index` ran held the new index files under the
  // old manifest: refused as damaged (exit 3, which a job array takes for bad data, not a race).
  // Created where the source allows it (a cache never indexed has none yet); best effort.
  const detail::SharedFileLock source_writers(src / detail::kCacheLockName, true);
  std::string manifest_text;
  std::set<std::string> unknown;  // files no part of the cache accounts for
  std::map<std::string, uint64_t> recorded_sizes;
  fs::path absolute = fs::absolute(src).lexically_normal();  // "." and "a/.." name a directory too
  if (!absolute.has_filename()) absolute = absolute.parent_path();
  std::string name;
  {
    const Cache cache = Cache::open(src);  // refuses what is not a cache, naming why
    manifest_text = cache.manifest_text();
    for (std::string& file : unknown_cache_files(cache)) unknown.insert(std::move(file));
    recorded_sizes = cache.file_sizes();
    name = staged_name_of(absolute.filename().string(), cache);
  }
  if (name.empty()) throw Error(Errc::usage, "cannot stage the root directory").with_path(src.string());
  const fs::path& dir = options.dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw_errno("cannot create the stage directory", dir.string(), ec.value());
  if (fs::equivalent(absolute.parent_path(), dir, ec))
    throw Error(Errc::usage, "the cache is already in the stage directory").with_path(src.string());

  // One stager per directory at a time; the others wait here. The kernel drops the lock when
  // its holder dies (SIGKILL too), so the next caller takes over and sweeps what it left.
  const detail::FileLock directory_lock(dir / kStageDirLockName, "the stage directory's lock");
  detail::remove_stale_temporaries(dir);

  StagedCache h;
  h.source_ = absolute;
  h.path_ = dir / name;
  const std::vector<StageSourceFile> files = stage_source_files(src);
  stage_check_source_files(src, files, unknown, recorded_sizes);
  for (const StageSourceFile& f : files) h.bytes += f.size;
  const fs::path reader_lock = stage_reader_lock_path(dir, name);

  struct stat st {};
  const bool present = ::lstat(h.path_.c_str(), &st) == 0;
  if (!present || !S_ISDIR(st.st_mode) || !staged_copy_is_whole(h.path_, manifest_text, files)) {
    if (present) {  // another version of the cache, or a copy cut since
      if (::lstat(reader_lock.c_str(), &st) != 0)
        throw Error(Errc::io, "is in the way: a file or directory slip stage did not place (remove it or stage elsewhere)")
            .with_path(h.path_.string());
      detail::UniqueFd held = stage_try_exclusive(reader_lock);
      if (!held)
        throw Error(Errc::io, "holds an older or damaged copy of this cache that a reader is using; stage again once it is released")
            .with_path(h.path_.string());
      remove_staged_cache(dir, name, std::move(held));
    }
    if (options.budget) make_room_in_stage(dir, name, h.bytes, *options.budget, h.evicted);
    // The copy is written as <tmp>/<name> (so it can be opened and verified as the cache it
    // is) and <tmp>/<name> is renamed to <dir>/<name> only once checked.
    const detail::TempLock tmp(dir, name);
    const fs::path inner = tmp.path() / name;
    if (!fs::create_directory(tmp.path(), ec) || !fs::create_directory(inner, ec))
      throw Error(Errc::io, "cannot create directory: " + (ec ? ec.message() : std::string("exists"))).with_path(inner.string());
    uint64_t done = 0;
    if (options.progress) options.progress(0, h.bytes);
    for (const StageSourceFile& f : files) place_staged_file(src / f.name, inner / f.name, f.size, options, h, done, h.bytes);
    detail::fsync_directory(inner);
    check_staged_copy(inner, src, options, h);
    publish_staged_copy(inner, h.path_);
    detail::fsync_directory(dir);
    h.copied = true;
  }  // ~TempLock removes the empty temporary

  // Held before the directory lock goes: an evictor (who holds that lock) never sees it free.
  detail::UniqueFd reader = detail::open_for_writing(reader_lock, detail::Create::keep);
  while (::flock(reader.get(), LOCK_SH) != 0)
    if (errno != EINTR) throw_errno("cannot lock", reader_lock.string(), errno);
  ::futimens(reader.get(), nullptr);  // last used: now (LRU order for eviction)
  h.fd_ = reader.release();
  return h;
}

std::optional<fs::path> stage_dir_from(const std::optional<fs::path>& given, const Environment& env) {
  if (given && !given->empty()) return given;
  if (const auto dir = env_value(env, "SLIP_STAGE_DIR"); dir && !dir->empty()) return fs::path(*dir);
  return std::nullopt;
}

}  // namespace slip
