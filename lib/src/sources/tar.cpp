// WebDataset tar shards through libarchive: members grouped into samples by key (the member
// path up to the first '.' of its basename), fields named by the rest of the basename,
// lowercased. Nothing is ever extracted: member names are only names.
#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <unordered_set>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/runtime.hpp"
#include "slip/source.hpp"
#include "sources/image_extensions.hpp"
#include "sources/shard_arrivals.hpp"
#include "sources/shard_list.hpp"
#include "sources/source_registry.hpp"
#include "util/file_time.hpp"
#include "util/cancel.hpp"
#include "util/file_io.hpp"
#include "util/log.hpp"
#include "util/untrusted.hpp"

namespace slip {

namespace fs = std::filesystem;

namespace {

// WebDataset: a member is an image by its exact key extension (not ImageFolder's list,
// sources/image_extensions.hpp, which is case-insensitive and has no gif).
constexpr const char* kImageExts[] = {"jpg", "jpeg", "png", "webp", "ppm", "pgm", "bmp", "tif", "tiff", "gif"};
constexpr const char* kLabelExts[] = {"cls", "label", "cls2", "index", "id"};

bool is_image_ext(const std::string& e) { return std::find(std::begin(kImageExts), std::end(kImageExts), e) != std::end(kImageExts); }
bool is_int_ext(const std::string& e) { return std::find(std::begin(kLabelExts), std::end(kLabelExts), e) != std::end(kLabelExts); }

struct Member {
  std::string name, key, field;
  uint64_t offset = 0;
  Bytes data;
  std::string problem;  // not read (too large, sparse): the sample is bad (--on-error)
};

using ArchivePtr = std::unique_ptr<archive, decltype(&archive_read_free)>;

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

// What a shard may hold, from the source options: a member is never read past
// --max-sample-bytes (the size in its header is checked before reading, the bytes while
// reading), and a shard must end with tar's end-of-archive blocks unless --allow-truncated.
struct TarLimits {
  uint64_t max_member_bytes = detail::kDefaultMaxSampleBytes;
  bool allow_truncated = false;
  // Members that are no part of any sample (no extension, links, special files): a few are
  // named, the rest counted (shared by every reader of the source).
  std::shared_ptr<detail::RepeatedWarning> skipped_members =
      std::make_shared<detail::RepeatedWarning>("members skipped (no extension, or a link or special file)");
};

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
  std::string spool() {
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
};

// One shard read sequentially: its members grouped into samples (a group = consecutive members
// with one key). Errors name the shard and the byte offset. Used on the caller's thread, or on
// a ShardPipeline worker (several shards at once).
class ShardReader {
 public:
  ShardReader(std::string path, TarLimits limits) : path_(std::move(path)), limits_(std::move(limits)) {
    ArchivePtr a(archive_read_new(), &archive_read_free);
    archive_read_support_filter_all(a.get());  // gzip, zstd, xz, bzip2... detected by content
    archive_read_support_format_tar(a.get());
    archive_read_support_format_gnutar(a.get());
    if (open_shard_file(a.get(), path_, 1 << 20) != ARCHIVE_OK)
      throw fail("", 0, std::string("not a readable tar: ") + archive_error_string(a.get()));
    archive_ = std::move(a);
  }

  // The next sample's members, in shard order; false at the shard's end.
  bool read_group(std::vector<Member>& group) {
    if (!have_pending_) {
      if (!read_member(pending_)) return false;
      have_pending_ = true;
    }
    group.clear();
    group.push_back(std::move(pending_));
    have_pending_ = false;
    const std::string key = group.front().key;
    if (!seen_keys_.insert(key).second)
      throw fail(group.front().name, group.front().offset, "key \"" + key + "\" appears again after other samples (unordered shard)");
    std::set<std::string> fields{group.front().field};
    Member m;
    while (read_member(m)) {
      if (m.key != key) {
        pending_ = std::move(m);
        have_pending_ = true;
        return true;
      }
      if (!fields.insert(m.field).second) throw fail(m.name, m.offset, "duplicate field \"" + m.field + "\" in sample \"" + key + "\"");
      group.push_back(std::move(m));
    }
    return true;
  }

 private:
  static std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }
  Error fail(const std::string& member, uint64_t offset, const std::string& why) const {
    return Error(Errc::bad_input, (member.empty() ? "" : "member " + member + ": ") + why).with_path(path_).with_offset(offset);
  }
  // The next regular member of the current shard, or false at its end.
  bool read_member(Member& m) {
    if (at_end_) return false;  // libarchive must not be asked again after its EOF
    while (true) {
      archive_entry* e = nullptr;
      bool missing_end_marker = false;
      const int rc = next_header_checked(archive_.get(), &e, headers_read_, missing_end_marker);
      if (rc == ARCHIVE_EOF) {
        if (missing_end_marker) {
          const auto at = static_cast<uint64_t>(archive_filter_bytes(archive_.get(), 0));
          if (!limits_.allow_truncated)
            throw fail("", at,
                       "the shard ends without tar's end-of-archive blocks: it was cut short (--allow-truncated converts what is there)");
          detail::warn("{}: byte {}: the shard ends without tar's end-of-archive blocks (cut short?); converted what is there", path_, at);
        }
        at_end_ = true;
        return false;
      }
      ++headers_read_;
      const uint64_t offset = static_cast<uint64_t>(std::max<la_int64_t>(0, archive_read_header_position(archive_.get())));
      if (rc < ARCHIVE_WARN) throw fail("", offset, std::string("corrupt tar: ") + archive_error_string(archive_.get()));
      const char* p = archive_entry_pathname(e);
      m.name = p ? p : "";
      const auto type = archive_entry_filetype(e);
      if (type == AE_IFDIR) continue;
      if (m.name.empty() || m.name[0] == '/' || m.name == ".." || m.name.rfind("../", 0) == 0 || m.name.find("/../") != std::string::npos ||
          (m.name.size() >= 3 && m.name.compare(m.name.size() - 3, 3, "/..") == 0))
        throw fail(m.name, offset, "unsafe member name (absolute or with '..'); refusing the shard");
      if (type != AE_IFREG || archive_entry_hardlink(e)) {
        const char* kind = archive_entry_symlink(e) ? "symlink" : archive_entry_hardlink(e) ? "hard link" : "special file";
        limits_.skipped_members->warn("{}: member {} (byte {}): {} skipped, never followed", path_, m.name, offset, kind);
        continue;
      }
      m.offset = offset;
      const std::string base = fs::path(m.name).filename().string();
      const auto dot = base.find('.');
      if (dot == std::string::npos || dot == 0) {
        limits_.skipped_members->warn("{}: member {} (byte {}): no extension, not part of any sample; skipped", path_, m.name, offset);
        continue;
      }
      const std::string dir = m.name.substr(0, m.name.size() - base.size());
      m.key = dir + base.substr(0, dot);
      m.field = lower(base.substr(dot + 1));
      m.problem = member_header_problem(e, limits_.max_member_bytes);
      if (!m.problem.empty()) {
        m.data.clear();
        return true;  // the sample is bad; the data is skipped with the next header
      }
      try {
        m.problem = read_member_data(archive_.get(), limits_.max_member_bytes, m.data, member_size_hint(e));
      } catch (const Error& err) {
        throw fail(m.name, offset, err.message());
      }
      if (!m.problem.empty()) return true;
      if (archive_entry_size_is_set(e) && static_cast<uint64_t>(archive_entry_size(e)) != m.data.size())
        throw fail(m.name, offset,
                   "member holds " + std::to_string(m.data.size()) + " bytes, its header says " + std::to_string(archive_entry_size(e)) +
                       " (truncated shard)");
      return true;
    }
  }

  std::string path_;
  TarLimits limits_;
  ArchivePtr archive_{nullptr, &archive_read_free};
  uint64_t headers_read_ = 0;
  Member pending_;
  bool have_pending_ = false, at_end_ = false;
  std::unordered_set<std::string> seen_keys_;
};

// Several shards read at once (each sequentially, on its own thread, decompression included),
// their samples handed over in shard order: shard i+1 .. i+window-1 are read while shard i is
// consumed. Each shard holds at most kShardBufferBytes of read-ahead samples, so memory is
// bounded by window x that. An error is delivered where it happened in the stream: the samples
// before it first.
class ShardPipeline {
 public:
  static constexpr uint64_t kShardBufferBytes = uint64_t{16} << 20;

  // `before_open(i)` runs on the reading thread before shard i is opened (waiting for it to
  // arrive); what it throws is delivered as that shard's error.
  ShardPipeline(const std::vector<std::string>& shards, TarLimits limits, unsigned window, std::function<void(size_t)> before_open)
      : shards_(shards),
        limits_(std::move(limits)),
        window_(std::max(1u, window)),
        before_open_(std::move(before_open)),
        queues_(shards.size()),
        cancel_(detail::current_cancel_flag()) {
    const unsigned threads = static_cast<unsigned>(std::min<size_t>(window_, shards_.size()));
    for (unsigned t = 0; t < threads; ++t) workers_.emplace_back([this] { work(); });
  }
  ~ShardPipeline() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    for (auto& w : workers_) w.join();
  }
  ShardPipeline(const ShardPipeline&) = delete;
  ShardPipeline& operator=(const ShardPipeline&) = delete;

  // The next sample's members and its shard's index; false after the last shard.
  bool next(std::vector<Member>& group, size_t& shard) {
    std::unique_lock lock(mutex_);
    while (current_ < shards_.size()) {
      Queue& q = queues_[current_];
      changed_.wait(lock, [&] { return !q.items.empty() || q.closed; });
      if (!q.items.empty()) {
        Item item = std::move(q.items.front());
        q.items.pop_front();
        q.bytes -= item.bytes;
        changed_.notify_all();
        if (item.error) std::rethrow_exception(item.error);
        group = std::move(item.group);
        shard = current_;
        return true;
      }
      ++current_;  // this shard is done: the window moves on
      changed_.notify_all();
    }
    return false;
  }

 private:
  struct Item {
    std::vector<Member> group;
    uint64_t bytes = 0;
    std::exception_ptr error;
  };
  struct Queue {
    std::deque<Item> items;
    uint64_t bytes = 0;
    bool closed = false;
  };

  void work() {
    const detail::CancelScope scope(cancel_);
    for (;;) {
      size_t shard = 0;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stop_ || next_claim_ >= shards_.size() || next_claim_ < current_ + window_; });
        if (stop_ || next_claim_ >= shards_.size()) return;
        shard = next_claim_++;
      }
      try {
        if (before_open_) before_open_(shard);
        ShardReader reader(shards_[shard], limits_);
        std::vector<Member> group;
        while (reader.read_group(group)) {
          Item item;
          for (const Member& m : group) item.bytes += m.data.size() + m.name.size();
          item.group = std::move(group);
          if (!push(shard, std::move(item))) return;
        }
      } catch (...) {
        Item item;
        item.error = std::current_exception();
        if (!push(shard, std::move(item))) return;
      }
      std::lock_guard lock(mutex_);
      queues_[shard].closed = true;
      changed_.notify_all();
    }
  }

  // Waits while the shard's buffer is full (one sample always fits); false when stopping.
  bool push(size_t shard, Item item) {
    std::unique_lock lock(mutex_);
    Queue& q = queues_[shard];
    changed_.wait(lock, [&] { return stop_ || q.items.empty() || q.bytes + item.bytes <= kShardBufferBytes; });
    if (stop_) return false;
    q.bytes += item.bytes;
    q.items.push_back(std::move(item));
    changed_.notify_all();
    return true;
  }

  std::vector<std::string> shards_;
  TarLimits limits_;
  size_t window_;
  std::function<void(size_t)> before_open_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Queue> queues_;
  size_t current_ = 0, next_claim_ = 0;
  bool stop_ = false;
  const std::atomic<bool>* cancel_;
  std::vector<std::thread> workers_;
};

class TarSource final : public Source {
 public:
  // With `arrivals`, shards are read as they arrive and `fingerprint` is the identity's.
  TarSource(std::vector<std::string> shards, const SourceOptions& options, std::shared_ptr<detail::ShardArrivals> arrivals = {},
            std::string fingerprint = {})
      : shards_(std::move(shards)), arrivals_(std::move(arrivals)) {
    if (shards_.empty()) throw Error(Errc::usage, "no tar shards given");
    missing_ = options.get("missing").value_or("error");
    if (missing_ != "error" && missing_ != "skip" && missing_ != "empty") throw Error(Errc::usage, "--missing wants error, skip or empty");
    limits_ = tar_limits(options);
    if (auto depth = options.get("io-depth"))
      parallel_shards_ = static_cast<unsigned>(std::min<uint64_t>(detail::parse_io_depth(*depth), 64));
    for (const auto& f : options.get_all("field")) {
      const auto eq = f.find('=');
      if (eq == std::string::npos) throw Error(Errc::usage, "--field wants NAME=TYPE, got \"" + f + "\"");
      overrides_[lower(f.substr(0, eq))] = f.substr(eq + 1);
    }
    image_field_ = options.get("image-field").value_or("");
    label_field_ = options.get("label-field").value_or("");
    const bool content = options.get("fingerprint") == std::optional<std::string>("content");
    Sha256 fp;
    std::string uri;
    std::vector<std::string> uris;
    for (std::string& s : shards_) {
      if (s == "-") s = spooled_.spool();
      std::error_code ec;
      const fs::path abs = fs::absolute(s, ec).lexically_normal();
      if (arrivals_) {  // not here yet: nothing to stat
        uri += (uri.empty() ? "" : "\n") + abs.string();
        uris.push_back(abs.string());
        continue;
      }
      if (!fs::exists(abs, ec)) throw Error(Errc::io, "no such tar shard").with_path(s);
      if (!fs::is_regular_file(abs, ec)) detail::check_input_file(abs);  // a FIFO, device, directory: refused, named
      // stdin is named "-" (not its random spool file): the same stream finds the same cache.
      const bool from_stdin = spooled_.count(s) > 0;
      uri += (uri.empty() ? "" : "\n") + (from_stdin ? std::string("-") : abs.string());
      uris.push_back(from_stdin ? std::string("-") : abs.string());
      if (content || from_stdin) {
        fp.update((from_stdin ? std::string("-") : abs.filename().string()) + "\t" + detail::InputFile(abs).sha256_hex() + "\n");
      } else {
        fp.update(abs.filename().string() + "\t" + std::to_string(fs::file_size(abs, ec)) + "\t" +
                  std::to_string(detail::unix_mtime_ns(abs)) + "\n");
      }
    }
    identity_ = {"tar",
                 uri,
                 arrivals_ ? std::move(fingerprint) : (content || !spooled_.empty() ? "sha256-shards:" : "stat-shards:") + fp.hex_digest(),
                 spooled_.count(shards_.front()) ? std::string("stdin") : pattern_name(shards_),
                 {}};
    identity_.uris = std::move(uris);
    infer_schema();
  }

  ~TarSource() override {
    if (arrivals_) arrivals_->abort();  // wakes readers waiting for a shard, so they can be joined
  }
  TarSource(const TarSource&) = delete;
  TarSource& operator=(const TarSource&) = delete;

  const Schema& schema() const override { return schema_; }
  SourceIdentity identity() const override { return identity_; }
  std::optional<uint64_t> size() const override { return std::nullopt; }

  // Job arrays: whole shards per part, so reading stays sequential; the schema (inferred from
  // the first shard of the whole) and the identity are the whole's.
  std::optional<FileSlice> select_files(uint64_t index, uint64_t count) override {
    const uint64_t total = shards_.size();
    FileSlice s{total * index / count, total * (index + 1) / count, total};
    shards_ = std::vector<std::string>(shards_.begin() + static_cast<ptrdiff_t>(s.start), shards_.begin() + static_cast<ptrdiff_t>(s.end));
    first_shard_ += s.start;
    if (arrivals_) arrivals_->restrict_to(first_shard_, first_shard_ + shards_.size());
    pipeline_.reset();
    if (shards_.empty()) done_ = true;
    return s;
  }

  bool next(Sample& out) override {
    std::vector<Member> group;
    if (!read_group(group)) return false;
    out.source_index = index_++;
    out.problem.reset();
    out.skip.reset();
    out.filled.clear();
    out.origin = shards_[shard_] + ":" + group.front().key + "@" + std::to_string(group.front().offset);
    out.values.assign(schema_.fields.size(), Value{});
    std::vector<bool> have(schema_.fields.size(), false);
    for (Member& m : group) {
      if (!m.problem.empty() && !out.problem) out.problem = "member " + m.name + " (byte " + std::to_string(m.offset) + "): " + m.problem;
      auto it = field_of_ext_.find(m.field);
      if (it == field_of_ext_.end()) {
        if (warned_.insert(m.field).second)
          detail::warn("{}: member {}: field \"{}\" is not in the schema of the first sample; ignored", shards_[shard_], m.name, m.field);
        continue;
      }
      const size_t fi = it->second;
      have[fi] = true;
      Value& v = out.values[fi];
      switch (schema_.fields[fi].type) {
        case FieldType::int64:
        case FieldType::float64: {
          std::string text(reinterpret_cast<const char*>(m.data.data()), m.data.size());
          while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
          char* end = nullptr;
          errno = 0;
          if (schema_.fields[fi].type == FieldType::int64)
            v.int_value = std::strtoll(text.c_str(), &end, 10);
          else
            v.float_value = std::strtod(text.c_str(), &end);
          if (text.empty() || *end != '\0' || errno == ERANGE)
            out.problem = "member " + m.name + " (byte " + std::to_string(m.offset) + "): \"" + text.substr(0, 40) + "\" is not a number";
          break;
        }
        default:
          v.bytes = std::move(m.data);
      }
    }
    for (size_t fi = 0; fi < have.size(); ++fi) {
      if (have[fi] || schema_.fields[fi].name == "key") continue;
      const std::string why = "sample " + group.front().key + " has no ." + ext_of_field_[fi] + " member";
      if (missing_ == "skip") {
        out.skip = why;
      } else if (missing_ == "error") {
        out.problem = why;
      } else {
        // --missing empty: a value no real sample has. 0 would be a real class; -1 never is
        // (docs/FORMAT.md "ledger"), and the ledger says which samples got it.
        Value& v = out.values[fi];
        std::string stand_in = "empty";
        if (schema_.fields[fi].type == FieldType::int64) {
          v.int_value = -1;
          stand_in = "-1";
        } else if (schema_.fields[fi].type == FieldType::float64) {
          v.float_value = std::numeric_limits<double>::quiet_NaN();
          stand_in = "NaN";
        }
        out.filled.emplace_back(schema_.fields[fi].name, why + "; stored as " + stand_in + " (--missing empty)");
      }
    }
    const size_t ki = *schema_.find("key");
    out.values[ki].bytes.assign(reinterpret_cast<const std::byte*>(group.front().key.data()),
                                reinterpret_cast<const std::byte*>(group.front().key.data()) + group.front().key.size());
    return true;
  }

 private:
  static std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }
  // The default cache name of several shards: what their names share ("train" for
  // train-000000.tar .. train-001281.tar), else the first shard's name.
  static std::string pattern_name(const std::vector<std::string>& shards) {
    std::string common = shard_name(shards.front());
    for (const auto& s : shards) {
      const std::string n = shard_name(s);
      size_t k = 0;
      while (k < common.size() && k < n.size() && common[k] == n[k]) ++k;
      common.resize(k);
    }
    while (!common.empty() && (std::isdigit(static_cast<unsigned char>(common.back())) || common.back() == '-' || common.back() == '_' ||
                               common.back() == '.'))
      common.pop_back();
    return common.empty() ? shard_name(shards.front()) : common;
  }

  static std::string shard_name(const std::string& s) {
    std::string n = fs::path(s).filename().string();
    for (const char* ext : {".tar.gz", ".tar.zst", ".tar.xz", ".tgz", ".tar"})
      if (n.size() > std::strlen(ext) && n.compare(n.size() - std::strlen(ext), std::strlen(ext), ext) == 0)
        return n.substr(0, n.size() - std::strlen(ext));
    return n.empty() || n[0] == '.' ? "tar" : n;
  }

  Error fail(const std::string& member, uint64_t offset, const std::string& why) const {
    return Error(Errc::bad_input, (member.empty() ? "" : "member " + member + ": ") + why).with_path(shards_[shard_]).with_offset(offset);
  }

  bool read_group(std::vector<Member>& group) {
    if (done_) return false;
    if (!pipeline_)
      pipeline_ = std::make_unique<ShardPipeline>(shards_, limits_, parallel_shards_, [this](size_t shard) { wait_for(shard); });
    return pipeline_->next(group, shard_);
  }

  void wait_for(size_t shard) const {
    if (arrivals_) arrivals_->wait(first_shard_ + shard);
  }

  void infer_schema() {
    // Read the first sample, then start over.
    std::vector<Member> first;
    bool found = false;
    for (size_t k = 0; k < shards_.size(); ++k) {  // the first sample of the first shard that has one
      wait_for(k);
      // Its own count of skipped members: this first pass reads members the conversion reads
      // again (the log prints each identical warning once).
      TarLimits first_pass = limits_;
      first_pass.skipped_members = std::make_shared<detail::RepeatedWarning>("members skipped (no extension, or a link or special file)");
      ShardReader reader(shards_[k], first_pass);
      if ((found = reader.read_group(first))) break;
    }
    if (!found) throw Error(Errc::bad_input, "the tar holds no samples").with_path(shards_.front());
    std::string image = image_field_, label = label_field_;
    if (image.empty())
      for (const auto& m : first)
        if (is_image_ext(m.field) && overrides_.find(m.field) == overrides_.end()) {
          image = m.field;
          break;
        }
    if (label.empty())
      for (const char* ext : kLabelExts)
        for (const auto& m : first)
          if (label.empty() && m.field == ext) label = ext;
    auto add = [&](const std::string& name, FieldType type, const std::string& ext) {
      field_of_ext_[ext] = schema_.fields.size();
      ext_of_field_.push_back(ext);
      schema_.fields.push_back({name, type, {}, {}});
    };
    auto type_of = [&](const std::string& ext) {
      if (auto it = overrides_.find(ext); it != overrides_.end()) {
        const std::string& t = it->second;
        if (t == "image") return FieldType::image;
        if (t == "int") return FieldType::int64;
        if (t == "float") return FieldType::float64;
        if (t == "str") return FieldType::str;
        if (t == "bytes") return FieldType::bytes;
        throw Error(Errc::usage, "--field " + ext + "=" + t + ": type must be image, int, float, str or bytes");
      }
      if (is_image_ext(ext)) return FieldType::image;
      if (is_int_ext(ext)) return FieldType::int64;
      if (ext == "txt" || ext == "json") return FieldType::str;
      return FieldType::bytes;
    };
    bool found_image = false;
    for (const auto& m : first)
      if (m.field == image) {
        add("image", type_of(image), image);
        found_image = true;
      }
    if (!image_field_.empty() && !found_image)
      throw Error(Errc::usage, "--image-field " + image_field_ + ": no such member in the first sample");
    for (const auto& m : first)
      if (m.field == label && !label.empty()) add("label", type_of(label), label);
    if (!label_field_.empty() && !schema_.find("label"))
      throw Error(Errc::usage, "--label-field " + label_field_ + ": no such member in the first sample");
    // `class/file.jpg` members with nothing else: an ImageFolder packed in a tar, whose labels
    // are its directories. Read as WebDataset it silently gets no label at all.
    if (!schema_.find("label") && found_image && first.front().key.find('/') != std::string::npos)
      detail::warn(
          "{}: the members (such as {}) look like an ImageFolder (<class>/<file>) but no label member was found: "
          "the cache gets no label field; for labels from the directories add --layout imagefolder",
          shards_.front(), first.front().name);
    for (const auto& m : first)
      if (m.field != image && m.field != label) {
        if (m.field == "key" || m.field == "image" || m.field == "label")
          throw Error(Errc::bad_input, "member extension \"" + m.field + "\" collides with a field slip names itself")
              .with_path(shards_.front());
        add(m.field, type_of(m.field), m.field);
      }
    schema_.fields.push_back({"key", FieldType::str, {}, {}});
    ext_of_field_.push_back("");
  }

  std::vector<std::string> shards_;
  StdinSpools spooled_;
  std::string missing_, image_field_, label_field_;
  TarLimits limits_;
  unsigned parallel_shards_ = 4;
  std::map<std::string, std::string> overrides_;
  Schema schema_;
  SourceIdentity identity_;
  std::map<std::string, size_t> field_of_ext_;
  std::vector<std::string> ext_of_field_;
  std::set<std::string> warned_;
  std::shared_ptr<detail::ShardArrivals> arrivals_;
  size_t first_shard_ = 0;  // of shards_ in the whole list (a job array's slice)
  std::unique_ptr<ShardPipeline> pipeline_;
  size_t shard_ = 0;   // of the last group returned
  bool done_ = false;  // an empty slice of a job array
  uint64_t index_ = 0;
};

// An ImageFolder packed in tar shards (`--layout imagefolder`): members <class>/.../<file> with
// torchvision's image extensions; classes and order exactly as the ImageFolder source gives
// them. Members arriving out of that order are held in memory (bounded); a shard far from
// sorted order is refused with a hint to repack it.
class TarImageFolderSource final : public Source {
 public:
  TarImageFolderSource(std::vector<std::string> shards, const SourceOptions& options)
      : shards_(std::move(shards)), limits_(tar_limits(options)) {
    const bool content = options.get("fingerprint") == std::optional<std::string>("content");
    Sha256 fp;
    std::string uri;
    std::vector<std::pair<std::pair<std::string, std::string>, std::string>> entries;  // ((dir, name), full)
    for (std::string& s : shards_)
      if (s == "-") s = spooled_.spool();  // an ImageFolder tar streamed on stdin
    for (const std::string& shard : shards_) {
      std::error_code ec;
      const fs::path abs = fs::absolute(shard, ec).lexically_normal();
      if (!fs::exists(abs, ec)) throw Error(Errc::io, "no such tar shard").with_path(shard);
      if (!fs::is_regular_file(abs, ec)) detail::check_input_file(abs);  // a FIFO, device, directory: refused, named
      const bool from_stdin = spooled_.count(shard) > 0;
      uri += (uri.empty() ? "" : "\n") + (from_stdin ? std::string("-") : abs.string());
      uris_.push_back(from_stdin ? std::string("-") : abs.string());
      if (content || from_stdin) {
        fp.update((from_stdin ? std::string("-") : abs.filename().string()) + "\t" + detail::InputFile(abs).sha256_hex() + "\n");
      } else {
        fp.update(abs.filename().string() + "\t" + std::to_string(fs::file_size(abs, ec)) + "\t" +
                  std::to_string(detail::unix_mtime_ns(abs)) + "\n");
      }
      ArchivePtr a = open_archive(shard);
      archive_entry* e = nullptr;
      int rc;
      uint64_t headers = 0;
      bool missing_end_marker = false;
      while ((rc = next_header_checked(a.get(), &e, headers, missing_end_marker)) == ARCHIVE_OK || rc == ARCHIVE_WARN) {
        ++headers;
        throw_if_interrupted();
        if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e)) continue;
        const std::string name = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
        if (const std::string problem = member_header_problem(e, limits_.max_member_bytes); !problem.empty())
          throw Error(Errc::bad_input, "member " + name + ": " + problem)
              .with_path(shard)
              .with_offset(static_cast<uint64_t>(std::max<la_int64_t>(0, archive_read_header_position(a.get()))));
        std::string clean = name.rfind("./", 0) == 0 ? name.substr(2) : name;
        if (!detail::has_image_folder_extension(clean)) continue;
        const auto slash = clean.rfind('/');
        if (slash == std::string::npos) continue;  // files at the root belong to no class
        if (clean[0] == '/' || clean.find("..") != std::string::npos)
          throw Error(Errc::bad_input, "member " + name + ": unsafe member name").with_path(shard);
        entries.push_back({{clean.substr(0, slash), clean.substr(slash + 1)}, clean});
      }
      if (rc != ARCHIVE_EOF) throw Error(Errc::bad_input, std::string("corrupt tar: ") + archive_error_string(a.get())).with_path(shard);
      if (missing_end_marker && !limits_.allow_truncated)
        throw Error(Errc::bad_input,
                    "the shard ends without tar's end-of-archive blocks: it was cut short (--allow-truncated converts what is there)")
            .with_path(shard)
            .with_offset(static_cast<uint64_t>(archive_filter_bytes(a.get(), 0)));
      if (missing_end_marker)
        detail::warn("{}: the shard ends without tar's end-of-archive blocks (cut short?); converted what is there", shard);
    }
    // torchvision: sorted class names; inside a class, sorted(os.walk): directories in path
    // order, file names sorted.
    std::sort(entries.begin(), entries.end());
    std::map<std::string, uint32_t> class_label;
    for (const auto& en : entries) class_label.emplace(en.second.substr(0, en.second.find('/')), 0);
    uint32_t label = 0;
    for (auto& [c, l] : class_label) l = label++;
    std::stable_sort(entries.begin(), entries.end(), [](const auto& x, const auto& y) {
      return x.second.substr(0, x.second.find('/')) < y.second.substr(0, y.second.find('/'));
    });
    for (const auto& en : entries) {
      order_.emplace(en.second, order_.size());
      names_.push_back(en.second);
      labels_.push_back(class_label[en.second.substr(0, en.second.find('/'))]);
    }
    if (names_.empty()) throw Error(Errc::bad_input, "no <class>/<image> members (--layout imagefolder)").with_path(shards_.front());
    root_name_ = spooled_.count(shards_.front()) ? "stdin" : shard_stem(shards_.front());
    identity_ = {
        "tar-imagefolder", uri, (content || !spooled_.empty() ? "sha256-shards:" : "stat-shards:") + fp.hex_digest(), root_name_, {}};
    identity_.uris = uris_;
    schema_.fields = {{"image", FieldType::image, {}, {}},
                      {"label", FieldType::int64, {}, {}},
                      {"index", FieldType::int64, {}, {}},
                      {"path", FieldType::str, {}, {}}};
  }

  const Schema& schema() const override { return schema_; }
  SourceIdentity identity() const override { return identity_; }
  std::optional<uint64_t> size() const override { return names_.size(); }

  bool next(Sample& out) override {
    if (next_ >= names_.size()) return false;
    while (!buffered_.count(next_)) read_more();
    Bytes bytes = std::move(buffered_[next_]);
    buffered_.erase(next_);
    held_ -= bytes.size();
    out.source_index = next_;
    out.origin = names_[next_];
    out.problem.reset();
    out.skip.reset();
    out.values.assign(4, Value{});
    out.values[0].bytes = std::move(bytes);
    out.values[1].int_value = labels_[next_];
    out.values[2].int_value = static_cast<int64_t>(next_);
    const std::string path = root_name_ + "/" + names_[next_];
    out.values[3].bytes.assign(reinterpret_cast<const std::byte*>(path.data()),
                               reinterpret_cast<const std::byte*>(path.data()) + path.size());
    ++next_;
    return true;
  }

 private:
  static std::string shard_stem(const std::string& s) {
    std::string n = fs::path(s).filename().string();
    const auto dot = n.find('.');
    return dot == std::string::npos || dot == 0 ? n : n.substr(0, dot);
  }
  static ArchivePtr open_archive(const std::string& path) {
    ArchivePtr a(archive_read_new(), &archive_read_free);
    archive_read_support_filter_all(a.get());
    archive_read_support_format_tar(a.get());
    archive_read_support_format_gnutar(a.get());
    if (open_shard_file(a.get(), path, 1 << 20) != ARCHIVE_OK)
      throw Error(Errc::bad_input, std::string("not a readable tar: ") + archive_error_string(a.get())).with_path(path);
    return a;
  }

  // Reads members in archive order until the next one in ImageFolder order is buffered.
  void read_more() {
    while (true) {
      if (!archive_) {
        if (shard_ >= shards_.size())
          throw Error(Errc::bad_input, "member " + names_[next_] + " vanished between passes").with_path(shards_.back());
        archive_ = open_archive(shards_[shard_]);
      }
      archive_entry* e = nullptr;
      const int rc = archive_read_next_header(archive_.get(), &e);
      if (rc == ARCHIVE_EOF) {
        archive_.reset();
        ++shard_;
        continue;
      }
      if (rc < ARCHIVE_WARN)
        throw Error(Errc::bad_input, std::string("corrupt tar: ") + archive_error_string(archive_.get())).with_path(shards_[shard_]);
      if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e)) continue;
      std::string name = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
      if (name.rfind("./", 0) == 0) name = name.substr(2);
      auto it = order_.find(name);
      if (it == order_.end()) continue;
      Bytes data;
      std::string problem;
      try {
        problem = read_member_data(archive_.get(), limits_.max_member_bytes, data, member_size_hint(e));
      } catch (const Error& err) {
        throw Error(Errc::bad_input, "member " + name + ": " + err.message()).with_path(shards_[shard_]);
      }
      if (!problem.empty()) throw Error(Errc::bad_input, "member " + name + ": " + problem).with_path(shards_[shard_]);
      held_ += data.size();
      if (held_ > (uint64_t{1} << 30))
        throw Error(Errc::bad_input, "members are far from ImageFolder order (over 1 GiB held); repack with `tar --sort=name`")
            .with_path(shards_[shard_]);
      buffered_[it->second] = std::move(data);
      if (it->second == next_) return;
    }
  }

  std::vector<std::string> uris_;
  StdinSpools spooled_;
  std::vector<std::string> shards_;
  TarLimits limits_;
  std::vector<std::string> names_;
  std::vector<uint32_t> labels_;
  std::map<std::string, uint64_t> order_;
  std::map<uint64_t, Bytes> buffered_;
  uint64_t held_ = 0, next_ = 0;
  size_t shard_ = 0;
  ArchivePtr archive_{nullptr, &archive_read_free};
  std::string root_name_;
  Schema schema_;
  SourceIdentity identity_;
};

}  // namespace

bool looks_like_tar(const std::string& uri) {
  std::error_code ec;
  if (fs::is_directory(uri, ec)) return false;
  if (detail::looks_like_shard_pattern(uri)) return true;
  if (!fs::is_regular_file(uri, ec)) return false;
  ArchivePtr a(archive_read_new(), &archive_read_free);
  archive_read_support_filter_all(a.get());
  archive_read_support_format_tar(a.get());
  archive_read_support_format_gnutar(a.get());
  if (archive_read_open_filename(a.get(), uri.c_str(), 1 << 16) != ARCHIVE_OK) return false;
  archive_entry* e = nullptr;
  return archive_read_next_header(a.get(), &e) >= ARCHIVE_WARN;
}

std::unique_ptr<Source> open_tar_shards(const std::vector<std::string>& args, const SourceOptions& options) {
  const std::string layout = options.get("layout").value_or("webdataset");
  if (layout == "imagefolder") return std::make_unique<TarImageFolderSource>(detail::expand_shards(args), options);
  if (layout != "webdataset") throw Error(Errc::usage, "--layout wants webdataset or imagefolder");
  return std::make_unique<TarSource>(detail::expand_shards(args), options);
}

std::unique_ptr<Source> detail::open_arriving_tar_shards(const std::vector<std::string>& local_paths, const SourceOptions& options,
                                                         std::shared_ptr<ShardArrivals> arrivals, std::string fingerprint) {
  return std::make_unique<TarSource>(local_paths, options, std::move(arrivals), std::move(fingerprint));
}

}  // namespace slip
