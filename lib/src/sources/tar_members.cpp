// Reading tar shards' members through libarchive (sources/tar_members.hpp).
#include "sources/tar_members.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "slip/error.hpp"
#include "slip/runtime.hpp"
#include "util/file_io.hpp"

namespace slip::detail {

namespace fs = std::filesystem;

namespace {

// A shard opened for libarchive through open_input_file: a FIFO, device or directory named as
// a shard is refused before any open that could block (archive_read_open_filename waits on a
// FIFO for a writer, and no signal ends that wait). The descriptor is the archive's: closed
// with it, read with read(2).
struct ShardFile {
  detail::UniqueFd fd;
  std::unique_ptr<std::byte[]> buffer;
  size_t size = 0;
};

la_ssize_t shard_file_read(archive* a, void* data, const void** out) {
  auto* f = static_cast<ShardFile*>(data);
  while (true) {
    const ssize_t n = ::read(f->fd.get(), f->buffer.get(), f->size);
    if (n >= 0) {
      *out = f->buffer.get();
      return n;
    }
    if (errno != EINTR) {
      archive_set_error(a, errno, "cannot read: %s", std::strerror(errno));
      return -1;
    }
    if (interrupted()) {
      archive_set_error(a, EINTR, "interrupted");
      return -1;
    }
  }
}

int shard_file_close(archive*, void* data) {
  delete static_cast<ShardFile*>(data);  // owned by the archive from archive_read_open on
  return ARCHIVE_OK;
}

}  // namespace

// Opens `path` into `a` (filters and formats already chosen); ARCHIVE_OK or libarchive's error.
// Throws Error(bad_input) for what is not a regular file, Error(io) for what cannot be opened.
int open_shard_file(archive* a, const std::string& path, size_t block_size) {
  auto file = std::make_unique<ShardFile>();
  file->fd = detail::open_input_file(path);
  file->buffer = std::make_unique_for_overwrite<std::byte[]>(block_size);
  file->size = block_size;
  // archive_read_open calls the close callback on failure too: it owns `file` from here on.
  return archive_read_open(a, file.release(), nullptr, shard_file_read, shard_file_close);
}

TarLimits tar_limits(const SourceOptions& options) {
  TarLimits l;
  l.max_member_bytes = detail::max_sample_bytes(options);
  l.allow_truncated = options.get("allow-truncated").has_value();
  return l;
}

// Why the member whose header was just read must not be read, or "" when it may.
std::string member_header_problem(archive_entry* e, uint64_t max_bytes) {
  if (archive_entry_sparse_count(e) > 0)
    return "sparse member (its header claims " + std::to_string(archive_entry_size(e)) + " bytes): refused";
  if (archive_entry_size_is_set(e) && archive_entry_size(e) >= 0 && static_cast<uint64_t>(archive_entry_size(e)) > max_bytes)
    return "member of " + std::to_string(archive_entry_size(e)) + " bytes exceeds --max-sample-bytes " + std::to_string(max_bytes);
  return {};
}

// Reads the current member's data (in blocks: the header's size is not trusted for the
// allocation) up to `max_bytes`; returns a problem ("" when read whole). On a problem the rest
// of the member is skipped and `out` is empty. Throws on a read error.
// What the header says a member holds (0 when unset): only a first allocation, never trusted.
uint64_t member_size_hint(archive_entry* e) {
  return archive_entry_size_is_set(e) ? static_cast<uint64_t>(std::max<la_int64_t>(archive_entry_size(e), 0)) : 0;
}

std::string read_member_data(archive* a, uint64_t max_bytes, Bytes& out, uint64_t size_hint) {
  // Read straight into `out` (no bounce buffer): it grows by what was really read, starting
  // from the header's size capped at 1 MiB, so a lying header costs at most that.
  constexpr uint64_t kBlock = 1 << 16;
  out.clear();
  out.reserve(static_cast<size_t>(std::min<uint64_t>({size_hint, max_bytes, uint64_t{1} << 20})) + 1);
  while (true) {
    // Grow when full, or when little room is left short of the header's size (at that size,
    // the spare byte of the first allocation is enough to see the end without a copy).
    const size_t spare = out.capacity() - out.size();
    if (spare == 0 || (spare < kBlock / 4 && out.size() < size_hint)) {
      // Doubling, but never past what the header announced while the data agrees with it: an
      // honest 16 MiB member ends in a 16 MiB buffer, not 32; a lying one costs at most 2x
      // what it really holds.
      uint64_t target = std::max<uint64_t>(out.capacity() * 2, kBlock);
      if (out.size() < size_hint) target = std::min<uint64_t>(target, size_hint + 1);
      out.reserve(static_cast<size_t>(std::min<uint64_t>(target, max_bytes + kBlock)));
    }
    const size_t used = out.size();
    const size_t room = std::max<size_t>(out.capacity() - used, 1);
    out.resize(used + room);
    const la_ssize_t n = archive_read_data(a, out.data() + used, room);
    out.resize(used + static_cast<size_t>(std::max<la_ssize_t>(n, 0)));
    if (n < 0) throw Error(Errc::bad_input, std::string("cannot read member data: ") + archive_error_string(a));
    if (n == 0) return {};
    if (out.size() > max_bytes) {
      out.clear();
      out.shrink_to_fit();
      archive_read_data_skip(a);
      return "member exceeds --max-sample-bytes " + std::to_string(max_bytes);
    }
  }
}

// Reads the next header like archive_read_next_header, and on ARCHIVE_EOF tells whether the
// archive really ended with end-of-archive blocks: when the reader consumed no byte past the
// last member, the shard was cut at a member boundary (a partial download or copy) and samples
// are missing. `headers` counts the headers read so far.
int next_header_checked(archive* a, archive_entry** e, uint64_t headers, bool& missing_end_marker) {
  if (headers > 0) archive_read_data_skip(a);  // the previous member's data counts as consumed
  const la_int64_t before = archive_filter_bytes(a, 0);
  const int rc = archive_read_next_header(a, e);
  missing_end_marker = rc == ARCHIVE_EOF && headers > 0 && archive_filter_bytes(a, 0) == before;
  return rc;
}

std::string StdinSpools::spool() {
  std::string path = (fs::temp_directory_path() / "slip-stdin-XXXXXX").string();
  const int fd = ::mkstemp(path.data());
  if (fd < 0) throw_errno("cannot create a temporary file for stdin", path, errno);
  insert(path);                                      // removed on every way out from here on (disk full, signals)
  detail::FileWriter w(detail::UniqueFd(fd), path);  // mkstemp's descriptor: the name is never reopened
  std::vector<std::byte> buf(1 << 20);
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), stdin)) > 0;) w.write(std::span(buf.data(), n));
  throw_if_interrupted();  // a signal ends the blocking read early: not the end of the input
  if (std::ferror(stdin)) throw_errno("cannot read", "standard input", errno);
  w.close();
  return path;
}

}  // namespace slip::detail
