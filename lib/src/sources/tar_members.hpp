// Reading tar shards through libarchive, shared by the WebDataset source (tar.cpp) and the
// ImageFolder-in-tar source (tar_imagefolder.cpp): opening a shard, the limits on its members,
// reading a member's header and data, and stdin spooled to a file.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "slip/source.hpp"
#include "sources/source_registry.hpp"
#include "util/log.hpp"

namespace slip::detail {

using ArchivePtr = std::unique_ptr<archive, decltype(&archive_read_free)>;

// Opens `path` into `a` (filters and formats already chosen); ARCHIVE_OK or libarchive's error.
// Throws Error(bad_input) for what is not a regular file, Error(io) for what cannot be opened.
int open_shard_file(archive* a, const std::string& path, size_t block_size);

// What a shard may hold, from the source options: a member is never read past
// --max-sample-bytes (the size in its header is checked before reading, the bytes while
// reading), and a shard must end with tar's end-of-archive blocks unless --allow-truncated.
struct TarLimits {
  uint64_t max_member_bytes = kDefaultMaxSampleBytes;
  bool allow_truncated = false;
  // Members that are no part of any sample (no extension, links, special files): a few are
  // named, the rest counted (shared by every reader of the source).
  std::shared_ptr<RepeatedWarning> skipped_members =
      std::make_shared<RepeatedWarning>("members skipped (no extension, or a link or special file)");
};

TarLimits tar_limits(const SourceOptions& options);

// Why the member whose header was just read must not be read, or "" when it may.
std::string member_header_problem(archive_entry* e, uint64_t max_bytes);

// What the header says a member holds (0 when unset): only a first allocation, never trusted.
uint64_t member_size_hint(archive_entry* e);

// Reads the current member's data (in blocks: the header's size is not trusted for the
// allocation) up to `max_bytes`; returns a problem ("" when read whole). On a problem the rest
// of the member is skipped and `out` is empty. Throws on a read error.
std::string read_member_data(archive* a, uint64_t max_bytes, Bytes& out, uint64_t size_hint);

// Reads the next header like archive_read_next_header, and on ARCHIVE_EOF tells whether the
// archive really ended with end-of-archive blocks: when the reader consumed no byte past the
// last member, the shard was cut at a member boundary (a partial download or copy) and samples
// are missing. `headers` counts the headers read so far.
int next_header_checked(archive* a, archive_entry** e, uint64_t headers, bool& missing_end_marker);

// stdin, spooled to temporary files (a tar is read twice: schema, then samples; the bytes are
// hashed for the content id), unlinked when the source goes away, also when its constructor
// throws (members are destroyed then; a destructor body would not run), or on a signal.
struct StdinSpools : std::set<std::string> {
  StdinSpools() = default;
  StdinSpools(const StdinSpools&) = delete;
  StdinSpools& operator=(const StdinSpools&) = delete;
  ~StdinSpools() {
    for (const auto& s : *this) ::unlink(s.c_str());
  }
  std::string spool();
};

// An ImageFolder packed in tar shards (`--layout imagefolder`; tar_imagefolder.cpp).
std::unique_ptr<Source> open_tar_imagefolder(std::vector<std::string> shards, const SourceOptions& options);

}  // namespace slip::detail
