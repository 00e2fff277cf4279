#include "util/file_io.hpp"

#include <cstdio>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <utility>

#include "slip/error.hpp"
#include "slip/hash.hpp"

namespace slip::detail {

namespace {

const char* file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "of an unknown kind";
}

// Opens `path` for reading: never blocks on a FIFO (O_NONBLOCK), refuses anything but a
// regular file and, for Open::cache_file, symbolic links (O_NOFOLLOW). Returns the fd and
// fills `st`; throws Error naming the path.
int open_regular_file(const std::string& path, Open mode, struct stat& st) {
  const bool strict = mode == Open::cache_file;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (strict ? O_NOFOLLOW : 0));
  if (fd < 0) {
    const int err = errno;
    if (strict && err == ELOOP) throw Error(Errc::bad_input, "is a symbolic link (refused inside a cache)").with_path(path);
    throw_errno("cannot open", path, err);
  }
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw_errno("cannot stat", path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    // A FIFO, device or directory where a file is expected (a LitData chunk, a cache file) is
    // bad input, whoever named it.
    throw Error(Errc::bad_input, std::string("is not a regular file (") + file_kind(st.st_mode) + ")").with_path(path);
  }
  return fd;
}

// The system's own links, which nobody else can plant: /dev/stdout, /dev/stderr, /dev/fd/N (a
// shell's process substitution), /proc/self/fd/N. (Not all of /dev: /dev/shm is world-writable.)
bool is_system_link(const std::string& path) {
  return path == "/dev/stdout" || path == "/dev/stderr" || path.starts_with("/dev/fd/") || path.starts_with("/proc/self/fd/");
}

void clear_nonblocking(int fd, const std::string& path) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) throw_errno("cannot open", path, errno);
}

}  // namespace

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

UniqueFd open_for_writing(const std::filesystem::path& path, Create how, mode_t mode) {
  const std::string name = path.string();
  const bool user_output = how == Create::user_output;
  int flags = O_CLOEXEC;
  switch (how) {
    case Create::fresh:
      flags |= O_WRONLY | O_CREAT | O_EXCL;
      break;
    case Create::replace:
      flags |= O_WRONLY | O_CREAT;  // truncated below, once it is known to be a regular file
      break;
    case Create::append:
      flags |= O_WRONLY | O_CREAT | O_APPEND;
      break;
    case Create::keep:
      flags |= O_RDWR | O_CREAT;
      break;
    case Create::fresh_rw:
      flags |= O_RDWR | O_CREAT | O_EXCL;
      break;
    case Create::user_output:
      flags |= O_WRONLY | O_CREAT;
      break;
  }
  if (!(user_output && is_system_link(name))) flags |= O_NOFOLLOW;
  // Never blocks on a FIFO: refused below, or (an output the user named) opened again blocking.
  UniqueFd fd(::open(name.c_str(), flags | O_NONBLOCK, mode));
  if (!fd) {
    const int err = errno;
    if (err == ELOOP) throw Error(Errc::io, "is a symbolic link (slip never writes through a link it did not make)").with_path(name);
    if (err == EEXIST && (how == Create::fresh || how == Create::fresh_rw))
      throw Error(Errc::io, "exists already (slip writes only a new file here)").with_path(name);
    if (!(user_output && err == ENXIO)) throw_errno("cannot create", name, err);  // ENXIO: a FIFO without a reader yet
  }
  struct stat st {};
  if (fd && ::fstat(fd.get(), &st) != 0) throw_errno("cannot stat", name, errno);
  if (!fd || !S_ISREG(st.st_mode)) {
    if (!user_output || (fd && S_ISDIR(st.st_mode)))
      throw Error(Errc::io, std::string("is not a regular file (") + (fd ? file_kind(st.st_mode) : "a FIFO") + "); refused as an output")
          .with_path(name);
    // A FIFO or a device the user named: written as a shell's redirection would.
    fd = UniqueFd(::open(name.c_str(), (flags & ~O_CREAT) | (S_ISCHR(st.st_mode) ? O_TRUNC : 0)));
    if (!fd) throw_errno("cannot open", name, errno);
    return fd;
  }
  // A second name for the file (a hard link planted where slip writes) would make the write
  // land in someone else's file too.
  if (!user_output && how != Create::fresh && how != Create::fresh_rw && st.st_nlink > 1)
    throw Error(Errc::io, "has other hard links (refused: the write would change another file)").with_path(name);
  if ((how == Create::replace || user_output) && ::ftruncate(fd.get(), 0) != 0) throw_errno("cannot truncate", name, errno);
  clear_nonblocking(fd.get(), name);
  return fd;
}

UniqueFd open_input_file(const std::filesystem::path& path, struct stat* st_out) {
  const std::string name = path.string();
  UniqueFd fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) throw_errno("cannot open", name, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno("cannot stat", name, errno);
  if (!S_ISREG(st.st_mode))
    throw Error(Errc::bad_input, std::string("is not a regular file (") + file_kind(st.st_mode) + "); refused as an input").with_path(name);
  clear_nonblocking(fd.get(), name);
  if (st_out) *st_out = st;
  return fd;
}

void check_input_file(const std::filesystem::path& path) { open_input_file(path); }

UniqueFd make_owned_directories(const std::filesystem::path& base, const std::filesystem::path& below) {
  std::error_code ec;
  std::filesystem::create_directories(base, ec);  // the directory the user named: links allowed
  if (ec) throw_errno("cannot create directory", base.string(), ec.value());
  UniqueFd dir(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) throw_errno("cannot open directory", base.string(), errno);
  std::filesystem::path at = base;
  for (const auto& part : below) {
    const std::string component = part.string();
    if (component.empty() || component == "." || component == "/") continue;
    at /= part;
    if (component == "..") throw Error(Errc::io, "a directory named \"..\" (refused)").with_path(at.string());
    if (::mkdirat(dir.get(), component.c_str(), 0755) != 0 && errno != EEXIST) throw_errno("cannot create directory", at.string(), errno);
    UniqueFd next(::openat(dir.get(), component.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) {
      const int err = errno;
      if (err == ELOOP || err == ENOTDIR) {
        struct stat st {};
        const bool link = ::fstatat(dir.get(), component.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
        throw Error(Errc::io, link ? "is a symbolic link (slip never writes through a link it did not make)" : "is not a directory")
            .with_path(at.string());
      }
      throw_errno("cannot open directory", at.string(), err);
    }
    struct stat st {};
    if (::fstat(next.get(), &st) != 0) throw_errno("cannot stat", at.string(), errno);
    if (st.st_uid != ::geteuid() && st.st_uid != 0)
      throw Error(Errc::io, "is owned by another user (uid " + std::to_string(st.st_uid) +
                                "); give each user a download directory of their own (docs/HOSTILE_INPUTS.md)")
          .with_path(at.string());
    dir = std::move(next);
  }
  return dir;
}

InputFile::InputFile(const std::filesystem::path& path) : path_(path.string()) {
  struct stat st {};
  fd_ = open_input_file(path, &st);
  size_ = static_cast<uint64_t>(st.st_size);
}

void InputFile::read_at(uint64_t offset, std::span<std::byte> out) const {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd_.get(), out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      throw Error(Errc::io, std::string("cannot read: ") + std::strerror(err)).with_path(path_).with_offset(offset + done);
    }
    if (n == 0)
      throw Error(Errc::bad_input, "ends at byte " + std::to_string(offset + done) + ", " + std::to_string(size_) +
                                       " bytes when opened: it was truncated while being read (by another process?)")
          .with_path(path_)
          .with_offset(offset + done);
    done += static_cast<size_t>(n);
  }
}

void InputFile::for_each_block(const std::function<void(std::span<const std::byte>)>& consume) const {
  std::vector<std::byte> block(1 << 20);
  for (uint64_t at = 0; at < size_; at += block.size()) {
    const auto chunk = std::span(block).first(static_cast<size_t>(std::min<uint64_t>(block.size(), size_ - at)));
    read_at(at, chunk);
    consume(chunk);
  }
}

std::string InputFile::sha256_hex() const {
  Sha256 hash;
  for_each_block([&](std::span<const std::byte> chunk) { hash.update(chunk); });
  return hash.hex_digest();
}

std::string InputFile::md5_hex() const {
  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md5(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!md5 || EVP_DigestInit_ex(md5.get(), EVP_md5(), nullptr) != 1) throw Error(Errc::io, "OpenSSL: MD5 failed");
  for_each_block([&](std::span<const std::byte> chunk) {
    if (EVP_DigestUpdate(md5.get(), chunk.data(), chunk.size()) != 1) throw Error(Errc::io, "OpenSSL: MD5 failed");
  });
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(md5.get(), digest, &length) != 1) throw Error(Errc::io, "OpenSSL: MD5 failed");
  return to_hex(std::as_bytes(std::span(digest, length)));
}

MappedFile::MappedFile(const std::filesystem::path& path, Open mode) : path_(path.string()) {
  struct stat st {};
  const int fd = open_regular_file(path_, mode, st);
  size_ = static_cast<uint64_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw_errno("cannot map", path_, err);
    }
    data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);
}

void MappedFile::release_resident_pages() const noexcept {
  if (data_) ::madvise(const_cast<std::byte*>(data_), size_, MADV_DONTNEED);
}

void MappedFile::release_resident_pages(uint64_t begin, uint64_t end) const noexcept {
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  end = std::min(end, size_);
  const uint64_t first = (begin + page - 1) / page * page, last = end / page * page;  // whole pages inside
  if (data_ && first < last) ::madvise(const_cast<std::byte*>(data_) + first, last - first, MADV_DONTNEED);
}

void MappedFile::advise_sequential() const noexcept {
  if (data_) ::madvise(const_cast<std::byte*>(data_), size_, MADV_SEQUENTIAL);
}

void prefetch_file(const std::filesystem::path& path) noexcept {
  // O_NONBLOCK: a FIFO among the files (a LitData chunk after the first) must not block here;
  // whoever reads it next refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) ::posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
  ::close(fd);
}

uint64_t resident_file_bytes() noexcept {
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[128];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  unsigned long long size = 0, resident = 0, shared = 0;
  if (std::sscanf(buf, "%llu %llu %llu", &size, &resident, &shared) != 3) return 0;
  return shared * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)), path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

void MappedFile::drop_page_cache() const noexcept {
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) return;
  if (data_) ::madvise(const_cast<std::byte*>(data_), size_, MADV_DONTNEED);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

FileWriter::FileWriter(const std::filesystem::path& path, size_t buffer_size, Checksum checksum, Create how)
    : FileWriter(open_for_writing(path, how), path, buffer_size) {
  hashing_ = checksum == Checksum::xxh3;
}

FileWriter::FileWriter(UniqueFd fd, const std::filesystem::path& path, size_t buffer_size)
    : fd_(fd.release()), path_(path.string()), buffer_(buffer_size) {}

FileWriter::~FileWriter() {
  syncer_.reset();  // before the descriptor it flushes is closed
  if (fd_ >= 0) ::close(fd_);
}

void FileWriter::write(std::span<const std::byte> data) {
  if (data.empty()) return;                                        // (an empty span may carry a null pointer: memcpy must not see it)
  if (data.size() >= buffer_.size()) return write_borrowed(data);  // written before write() returns
  if (used_ + data.size() > buffer_.size()) flush();
  if (hashing_) hash_.update(data);
  written_ += data.size();
  std::byte* at = buffer_.data() + used_;
  std::memcpy(at, data.data(), data.size());
  used_ += data.size();
  // Adjacent copies make one piece.
  if (!pending_.empty() && static_cast<std::byte*>(pending_.back().iov_base) + pending_.back().iov_len == at) {
    pending_.back().iov_len += data.size();
    pending_bytes_ += data.size();
  } else {
    queue(at, data.size());
  }
}

void FileWriter::write_borrowed(std::span<const std::byte> data) {
  if (data.empty()) return;
  if (hashing_) hash_.update(data);
  written_ += data.size();
  queue(data.data(), data.size());
  if (data.size() >= buffer_.size()) flush();  // a large piece: no reason to hold it
}

void FileWriter::queue(const std::byte* data, size_t size) {
  constexpr size_t kMaxPieces = 1024;  // IOV_MAX on Linux
  pending_.push_back({const_cast<std::byte*>(data), size});
  pending_bytes_ += size;
  if (pending_bytes_ >= buffer_.size() || pending_.size() >= kMaxPieces) flush();
}

void FileWriter::flush() {
  size_t first = 0;  // pieces before it are written
  while (first < pending_.size()) {
    const int count = static_cast<int>(pending_.size() - first);
    const ssize_t n = ::writev(fd_, pending_.data() + first, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot write", path_, errno);
    }
    if (n == 0) throw_errno("cannot write", path_, EIO);  // no progress: never loop on it
    // A short write: skip the pieces written whole, trim the one written in part.
    auto left = static_cast<size_t>(n);
    while (first < pending_.size() && left >= pending_[first].iov_len) left -= pending_[first++].iov_len;
    if (left > 0) {
      pending_[first].iov_base = static_cast<std::byte*>(pending_[first].iov_base) + left;
      pending_[first].iov_len -= left;
    }
  }
  pending_.clear();
  pending_bytes_ = 0;
  used_ = 0;
  write_behind();
}

BackgroundSync::BackgroundSync(int fd) : fd_(fd), thread_([this] { run(); }) {}

BackgroundSync::~BackgroundSync() { finish(); }

void BackgroundSync::request(uint64_t bytes, bool durable) noexcept {
  {
    std::lock_guard lock(mutex_);
    written_ = std::max(written_, bytes);
    flush_requested_ = flush_requested_ || durable;
  }
  wake_.notify_one();
}

void BackgroundSync::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return written_ > writeback_from_ || flush_requested_ || stopping_; });
    if (stopping_) return;  // the caller's own fsync follows
    const uint64_t from = writeback_from_, to = written_;
    const bool flush = std::exchange(flush_requested_, false);
    writeback_from_ = to;
    lock.unlock();
    int err = 0;
    if (to > from)  // a hint: a file system without it (EINVAL, ESPIPE) loses only the head start
      ::sync_file_range(fd_, static_cast<off64_t>(from), static_cast<off64_t>(to - from), SYNC_FILE_RANGE_WRITE);
    if (flush && ::fdatasync(fd_) != 0) err = errno;
    lock.lock();
    if (err != 0 && error_ == 0) error_ = err;
  }
}

int BackgroundSync::finish() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  return error_;
}

namespace {

// close() must fsync (a published cache is durable). Left to the end, that fsync pays for every
// byte of a file of many GB at once, after the reading is over; starting the writeback of each
// 8 MiB and flushing each 64 MiB as they are written, from another thread, overlaps that cost
// with the conversion. Small files (manifests, metadata) never start the thread.
void write_behind(int fd, uint64_t on_disk, uint64_t& writeback, uint64_t& synced, std::unique_ptr<BackgroundSync>& syncer) noexcept {
  constexpr uint64_t kWritebackStep = uint64_t{8} << 20, kFlushStep = uint64_t{64} << 20;
  if (on_disk - writeback < kWritebackStep) return;
  writeback = on_disk;
  const bool flush = on_disk - synced >= kFlushStep;
  if (flush) synced = on_disk;
  if (!syncer) {
    try {
      syncer = std::make_unique<BackgroundSync>(fd);
    } catch (const std::exception&) {
      return;  // no thread to be had: close() flushes everything, as it would anyway
    }
  }
  syncer->request(on_disk, flush);
}

// Waits for the write-behind thread, if one started; its fsync error is the file's.
void finish_write_behind(std::unique_ptr<BackgroundSync>& syncer, const std::string& path) {
  if (!syncer) return;
  const int err = syncer->finish();
  syncer.reset();
  if (err != 0) throw_errno("cannot fsync", path, err);
}

}  // namespace

void FileWriter::write_behind() noexcept { detail::write_behind(fd_, written_ - pending_bytes_, writeback_, synced_, syncer_); }

void FileWriter::close() {
  if (fd_ < 0) return;
  flush();
  finish_write_behind(syncer_, path_);
  if (::fsync(fd_) != 0 && errno != EINVAL) throw_errno("cannot fsync", path_, errno);  // EINVAL: a FIFO, /dev/null
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) throw_errno("cannot close", path_, errno);
}

PlacedWriter::PlacedWriter(const std::filesystem::path& path)
    : fd_(open_for_writing(path, Create::fresh_rw).release()), path_(path.string()) {}

PlacedWriter::~PlacedWriter() {
  unmap();
  syncer_.reset();  // before the descriptor it flushes is closed
  if (fd_ >= 0) ::close(fd_);
}

void PlacedWriter::unmap() noexcept {
  if (map_) ::munmap(map_, map_size_);
  map_ = nullptr;
  map_size_ = 0;
  populated_.clear();
}

size_t PlacedWriter::open_window() {
  if (reserved_ == window_start_ || !mappable_ || !populate_works_.load(std::memory_order_relaxed)) return 0;
  // The file is extended (sparse) to the window's end, so every page of it can be mapped; the
  // pages are allocated as populate() faults them in.
  static const uint64_t page = [] {
    const long p = ::sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<uint64_t>(p) : uint64_t{4096};
  }();
  map_offset_ = window_start_ / page * page;
  map_size_ = static_cast<size_t>(reserved_ - map_offset_);
  void* p = MAP_FAILED;
  if (::ftruncate(fd_, static_cast<off_t>(reserved_)) == 0)
    p = ::mmap(nullptr, map_size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(map_offset_));
  if (p == MAP_FAILED) {  // a file system that cannot: pwrite, whose errors say what is wrong
    mappable_ = false;
    map_size_ = 0;
    return 0;
  }
  map_ = static_cast<std::byte*>(p);
  populated_.assign((map_size_ + kPopulateStep - 1) / kPopulateStep, 0);
  return populated_.size();
}

void PlacedWriter::populate(size_t step) const noexcept {
  if (!map_ || step >= populated_.size() || !populate_works_.load(std::memory_order_relaxed)) return;
  const uint64_t from = step * kPopulateStep, size = std::min<uint64_t>(kPopulateStep, map_size_ - from);
  if (::madvise(map_ + from, size, MADV_POPULATE_WRITE) == 0) {
    populated_[step] = 1;
  } else if (errno == EINVAL) {
    populate_works_.store(false, std::memory_order_relaxed);  // a kernel before 5.14
  }
  // Otherwise a fault would have raised SIGBUS (ENOSPC, EIO): write_at uses pwrite, which says why.
}

void PlacedWriter::write_at(uint64_t offset, std::span<const std::byte> data) const {
  if (data.empty()) return;
  if (map_) {
    const uint64_t from = offset - map_offset_;
    bool mapped = true;
    for (uint64_t step = from / kPopulateStep; mapped && step <= (from + data.size() - 1) / kPopulateStep; ++step)
      mapped = populated_[step] != 0;
    if (mapped) {
      std::memcpy(map_ + from, data.data(), data.size());
      return;
    }
  }
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("cannot write", path_, errno);
    }
    if (n == 0) throw_errno("cannot write", path_, EIO);  // no progress: never loop on it
    done += static_cast<size_t>(n);
  }
}

void PlacedWriter::close_window() {
  unmap();  // the pages stay dirty in the page cache
  window_start_ = reserved_;
  detail::write_behind(fd_, reserved_, writeback_, synced_, syncer_);
}

void PlacedWriter::close() {
  if (fd_ < 0) return;
  close_window();
  finish_write_behind(syncer_, path_);
  if (::fsync(fd_) != 0) throw_errno("cannot fsync", path_, errno);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) throw_errno("cannot close", path_, errno);
}

std::string read_text_file(const std::filesystem::path& path, Open mode, uint64_t max_bytes) {
  MappedFile f(path, mode);
  if (f.size() > max_bytes)
    throw Error(Errc::bad_input, "file of " + std::to_string(f.size()) + " bytes is over the " + std::to_string(max_bytes) +
                                     " bytes such a file may hold (refused unread)")
        .with_path(path.string());
  auto b = f.bytes();
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

void write_text_file(const std::filesystem::path& path, std::string_view text, Create how) {
  FileWriter w(path, 1 << 16, FileWriter::Checksum::xxh3, how);
  w.write(text);
  w.close();
}

void fsync_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw_errno("cannot open directory", dir.string(), errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) throw_errno("cannot fsync directory", dir.string(), err);
}

std::pair<uint64_t, uint64_t> xxh3_64_of_file(const std::filesystem::path& path, Open mode) {
  struct stat st {};
  const int fd = open_regular_file(path.string(), mode, st);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  Xxh3 hash;
  // Sized by the file (a small metadata file needs no 4 MiB buffer; its zero-filling was most
  // of a verify of a small cache), never zero-filled; the file may grow: reads stop at EOF.
  const size_t buffer_size = static_cast<size_t>(std::clamp<off_t>(st.st_size + 1, 4096, off_t{4} << 20));
  const auto buffer = std::make_unique_for_overwrite<std::byte[]>(buffer_size);
  uint64_t total = 0;
  while (true) {
    const ssize_t got = ::read(fd, buffer.get(), buffer_size);
    if (got < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw_errno("cannot read", path.string(), err);
    }
    if (got == 0) break;
    hash.update(std::span(buffer.get(), static_cast<size_t>(got)));
    total += static_cast<uint64_t>(got);
  }
  ::close(fd);
  return {total, hash.digest()};
}

}  // namespace slip::detail
