// Internal file helpers: read-only memory maps and a checked, buffered writer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <condition_variable>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "slip/hash.hpp"
#include "slip/schema.hpp"  // Bytes

namespace slip::detail {

// How strictly to open a file. A cache's own files are untrusted input inside a directory
// someone else may have written: a symbolic link there could point anywhere (/etc/shadow) and
// a FIFO or device would block or never end, so they are refused with Error(bad_input)
// ("is a symbolic link", "is not a regular file"). Files the user names (sources) may be links.
enum class Open { follow_links, cache_file };

// An open file descriptor, closed when it goes.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }
  explicit operator bool() const noexcept { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// How a file slip writes is opened: every file slip creates or truncates goes through
// open_for_writing. None follows a symbolic link in the last component (O_NOFOLLOW): where
// others can write (a shared download directory, /tmp, an output directory) a planted link
// would redirect the write to its target. Such a path is refused with Error(io) "is a symbolic
// link (slip never writes through a link it did not make)"; so is an existing FIFO, device or
// directory (checked without blocking) except for Create::user_output.
enum class Create {
  fresh,        // a name slip chose (a temporary, a file of a staging directory): O_EXCL
  replace,      // created or truncated (a download restarted from byte 0)
  append,       // created or appended to (a download resumed)
  keep,         // created or opened as it is (a lock file): O_RDWR, never truncated
  fresh_rw,     // as fresh, opened O_RDWR: a file written through a shared mapping (PlacedWriter)
  user_output,  // an output the user named (-o FILE): replaced; a FIFO or a device such as
                // /dev/null is written as a shell would, and the system's own links under
                // /dev/ and /proc/self/fd/ (/dev/stdout, process substitution) are followed
};
UniqueFd open_for_writing(const std::filesystem::path& path, Create how, mode_t mode = 0644);

// Opens an input file for reading, refusing anything but a regular file (a FIFO, a device, a
// directory) before any open that could block: O_NONBLOCK, fstat, then O_NONBLOCK cleared.
// Throws Error(bad_input) "is not a regular file (a FIFO)" naming `path`, Error(io) when it
// cannot be opened. `st` receives its status.
UniqueFd open_input_file(const std::filesystem::path& path, struct stat* st = nullptr);
// The same check for readers that open the file themselves (libarchive, stdio): throws as
// open_input_file does; nothing stays open.
void check_input_file(const std::filesystem::path& path);

// Creates the directories of `below` under `base` (which must exist or is created as usual),
// one component at a time with openat/mkdirat, never through a symbolic link, refusing a
// component owned by another user (in a directory others can write, such as a shared
// download directory, another user could have made it). Returns the innermost directory, open.
// Throws Error(io) naming the component.
UniqueFd make_owned_directories(const std::filesystem::path& base, const std::filesystem::path& below);

// A source file read with pread, never mapped: a file another process truncates while slip
// reads it gives an error naming it and the offset (a mapping would kill the process with
// SIGBUS). Opened as open_input_file opens (a FIFO or device refused without blocking).
class InputFile {
 public:
  InputFile() = default;
  explicit InputFile(const std::filesystem::path& path);
  uint64_t size() const noexcept { return size_; }  // when opened
  const std::string& path() const noexcept { return path_; }
  int fd() const noexcept { return fd_.get(); }
  // Fills `out` from `offset`. Throws Error(bad_input) naming the file and the offset when it
  // ends first (it shrank since it was opened), Error(io) on a read error.
  void read_at(uint64_t offset, std::span<std::byte> out) const;
  // SHA-256 / MD5 of the whole file, read in 1 MiB blocks (hex): a file cut short meanwhile is
  // read_at's error, never the SIGBUS a mapping would take.
  std::string sha256_hex() const;
  std::string md5_hex() const;

 private:
  void for_each_block(const std::function<void(std::span<const std::byte>)>& consume) const;

  UniqueFd fd_;
  uint64_t size_ = 0;
  std::string path_;
};

// A read-only mapping of a whole file (empty files map to an empty span). Never blocks on a
// FIFO (opened non-blocking, then refused as not a regular file).
class MappedFile {
 public:
  MappedFile() = default;
  explicit MappedFile(const std::filesystem::path& path, Open mode = Open::follow_links);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }
  uint64_t size() const noexcept { return size_; }
  const std::string& path() const noexcept { return path_; }
  // Drops the file's pages from the page cache (posix_fadvise DONTNEED) for cold benchmarks.
  void drop_page_cache() const noexcept;
  // Unmaps the resident pages from this process (MADV_DONTNEED) without touching the page
  // cache: the next access faults them back in cheaply. Bounds the RSS of a reader that
  // touches a whole cache (verify, bench), which batch schedulers count against a job.
  void release_resident_pages() const noexcept;
  // The same for the whole pages inside [begin, end) only: a reader that walks a file once
  // releases what lies behind it.
  void release_resident_pages(uint64_t begin, uint64_t end) const noexcept;
  // For readers that walk the file front to back once (source chunks, not caches read in
  // shuffled order): aggressive read-ahead (MADV_SEQUENTIAL).
  void advise_sequential() const noexcept;

 private:
  const std::byte* data_ = nullptr;
  uint64_t size_ = 0;
  std::string path_;
};

// Flushes a file being written to stable storage from its own thread, so the writer's final
// fsync only waits for the tail. A flush costs about as much as the bytes written since the
// last one (a VM's host cache, an NFS COMMIT, a disk's volatile cache), however early their
// writeback started: on this project's machines the fsync of a 740 MB cache took 0.33 s after
// sync_file_range had written every page back, and 0.03 s with this. Between flushes, the
// writeback of each few MiB is started at once (sync_file_range WRITE, no wait, no journal
// commit), so a flush finds its pages written or on their way instead of writing 64 MiB in one
// burst while the writer waits on the same pages' locks: a 740 MB conversion from the page
// cache went from 0.47 to 0.43 s (median of 8, A/B). The first error is kept for the writer to
// report; a file system without sync_file_range only loses the head start.
class BackgroundSync {
 public:
  explicit BackgroundSync(int fd);
  ~BackgroundSync();  // waits for a flush in progress
  BackgroundSync(const BackgroundSync&) = delete;
  BackgroundSync& operator=(const BackgroundSync&) = delete;
  // The file's first `bytes` are written: start their writeback; with `durable`, flush them
  // (fdatasync). Never blocks the caller.
  void request(uint64_t bytes, bool durable) noexcept;
  int finish() noexcept;  // waits for the thread to end; the first errno, or 0

 private:
  void run();
  int fd_;
  std::mutex mutex_;
  std::condition_variable wake_;
  uint64_t written_ = 0;         // bytes the writer has handed to the kernel (request)
  uint64_t writeback_from_ = 0;  // writeback started below this offset
  bool flush_requested_ = false, stopping_ = false;
  int error_ = 0;
  std::thread thread_;
};

// Writes a file through a buffer; every write error (ENOSPC, EIO, ...) throws Error(io) naming
// the file. Hashes everything written (XXH3-64). The buffer is small enough to stay in the CPU's
// L2 cache (256 KiB, as cat's is 128 KiB): write() then copies from cache into the page cache,
// and a 740 MB conversion ran 10-20% faster than through 4 MiB (A/B, 5 rounds). Larger
// pieces are written directly. Pieces the caller keeps alive (write_borrowed) are not copied at
// all: they go to the kernel in place, gathered with the buffered ones (writev), in order.
class FileWriter {
 public:
  // Checksum::none: a file whose bytes are checked piece by piece elsewhere (a payload `.bin`,
  // covered by its `<f>.xxh3.npy`); hashing it whole again cost a fifth of a conversion's
  // writer thread.
  enum class Checksum { xxh3, none };
  // Creates `path` (Create::fresh: it must not exist; see open_for_writing).
  explicit FileWriter(const std::filesystem::path& path, size_t buffer_size = 256u << 10, Checksum checksum = Checksum::xxh3,
                      Create how = Create::fresh);
  // Writes to a file already open for writing (mkstemp's), named `path` in messages.
  FileWriter(UniqueFd fd, const std::filesystem::path& path, size_t buffer_size = 256u << 10);
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  void write(std::span<const std::byte> data);
  void write(std::string_view text) { write(std::as_bytes(std::span(text.data(), text.size()))); }
  // Writes `data` without copying it: the caller keeps it alive and unchanged until the next
  // flush() or close(). Saves the copy into the buffer (a conversion's sample bytes).
  void write_borrowed(std::span<const std::byte> data);
  // Hands everything queued to the kernel; borrowed pieces may be released after it.
  void flush();
  uint64_t bytes_written() const noexcept { return written_; }
  uint64_t checksum() const noexcept { return hash_.digest(); }  // (Checksum::xxh3 only)
  // Flushes, fsyncs and closes; errors throw. The destructor closes silently, writing nothing
  // more (borrowed pieces may be gone by then).
  void close();

 private:
  void queue(const std::byte* data, size_t size);
  void write_behind() noexcept;
  int fd_ = -1;
  std::string path_;
  Bytes buffer_;  // never zero-filled: most FileWriters write far less than its size
  size_t used_ = 0;
  std::vector<iovec> pending_;  // queued pieces, in file order: in buffer_ or borrowed
  size_t pending_bytes_ = 0;
  uint64_t written_ = 0;
  uint64_t synced_ = 0;                     // bytes already asked to be flushed (write_behind)
  uint64_t writeback_ = 0;                  // bytes whose writeback was asked to start
  std::unique_ptr<BackgroundSync> syncer_;  // started once the file is large enough to need it
  Xxh3 hash_;
  bool hashing_ = true;
};

// A file written by many threads at once: one thread places each piece (reserve, in file order),
// and any thread writes it (write_at) while its window is open. Buffered writes to one file are
// serialized by the kernel (ext4, XFS and tmpfs hold the inode's lock for each write), so one
// writer thread bounds a conversion at about one `cat`'s rate; the pieces of a window are copied
// through a shared mapping of the file instead. Its pages are first faulted in, 1 MiB per call
// (populate(), on any threads: one call per piece cost twice the CPU time of write(); per MiB,
// less than write()), with MADV_POPULATE_WRITE, which returns an error where a fault would raise
// SIGBUS (a disk full, an I/O error): the pieces on such pages are written with pwrite, which
// reports the errno. Without the mapping (a kernel before 5.14, a file system that cannot map
// files) every piece is written with pwrite. The writeback of each window starts as it closes,
// and the file is flushed behind the writers every 64 MiB, as FileWriter does. The bytes land in
// place, whatever the order of the writes.
class PlacedWriter {
 public:
  static constexpr uint64_t kPopulateStep = uint64_t{1} << 20;
  explicit PlacedWriter(const std::filesystem::path& path);  // Create::fresh_rw
  ~PlacedWriter();
  PlacedWriter(const PlacedWriter&) = delete;
  PlacedWriter& operator=(const PlacedWriter&) = delete;

  // Placing thread: the offset of the next `size` bytes.
  uint64_t reserve(uint64_t size) noexcept { return std::exchange(reserved_, reserved_ + size); }
  // Placing thread: the pieces reserved since the last window may now be written, once
  // populate(0 .. returned count - 1) has run (any threads, any order, each once).
  size_t open_window();
  void populate(size_t step) const noexcept;
  // Any thread, while the window holding [offset, offset + size) is open and populated.
  // Throws Error(io).
  void write_at(uint64_t offset, std::span<const std::byte> data) const;
  // Placing thread, once every piece of the window is written.
  void close_window();
  uint64_t bytes_written() const noexcept { return reserved_; }
  // Closes the window, fsyncs and closes; errors throw.
  void close();

 private:
  void unmap() noexcept;
  int fd_ = -1;
  std::string path_;
  uint64_t reserved_ = 0;
  uint64_t window_start_ = 0;  // the open window is [window_start_, reserved_ at open_window)
  std::byte* map_ = nullptr;   // that window's pages, mapped from map_offset_ (page-aligned)
  uint64_t map_offset_ = 0;
  size_t map_size_ = 0;
  mutable std::vector<char> populated_;  // per kPopulateStep of the mapping: faulted in writable
  bool mappable_ = true;
  mutable std::atomic<bool> populate_works_{true};
  uint64_t synced_ = 0, writeback_ = 0;
  std::unique_ptr<BackgroundSync> syncer_;
};

// Size and XXH3-64 of a whole file, read in 4 MiB pieces (memory bounded for any size);
// throws Error(io) naming it (Error(bad_input) for what Open::cache_file refuses).
std::pair<uint64_t, uint64_t> xxh3_64_of_file(const std::filesystem::path& path, Open mode = Open::follow_links);

// The most a metadata file read whole may hold (manifests, index.json, records, plans): the
// largest slip writes (a manifest whose ledger lists millions of samples) is far below, and a
// sparse 300 GB file must fail with its name, not std::bad_alloc.
inline constexpr uint64_t kMaxTextFileBytes = uint64_t{1} << 30;
// Reads a whole (small) file; throws Error(io) naming it (Error(bad_input) for what
// Open::cache_file refuses, and for a file over max_bytes, checked before reading).
std::string read_text_file(const std::filesystem::path& path, Open mode = Open::follow_links, uint64_t max_bytes = kMaxTextFileBytes);
// Writes a whole new file (Create::fresh unless told), fsynced; throws Error(io).
void write_text_file(const std::filesystem::path& path, std::string_view text, Create how = Create::fresh);
// fsync a directory (after creating/renaming entries in it).
void fsync_directory(const std::filesystem::path& dir);
// Asks the kernel to start reading `path` into the page cache in the background
// (POSIX_FADV_WILLNEED), so the next file of a sequence is read while this one is processed.
// Best effort: errors are ignored.
void prefetch_file(const std::filesystem::path& path) noexcept;
// Resident file-backed bytes of this process (the "shared" column of /proc/self/statm: mapped
// files and libraries); 0 when unknown.
uint64_t resident_file_bytes() noexcept;

}  // namespace slip::detail
