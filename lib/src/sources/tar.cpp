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
#include "sources/tar_members.hpp"
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

using detail::ArchivePtr;
using detail::member_header_problem;
using detail::member_size_hint;
using detail::next_header_checked;
using detail::open_shard_file;
using detail::read_member_data;
using detail::StdinSpools;
using detail::tar_limits;
using detail::TarLimits;

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
  if (layout == "imagefolder") return detail::open_tar_imagefolder(detail::expand_shards(args), options);
  if (layout != "webdataset") throw Error(Errc::usage, "--layout wants webdataset or imagefolder");
  return std::make_unique<TarSource>(detail::expand_shards(args), options);
}

std::unique_ptr<Source> detail::open_arriving_tar_shards(const std::vector<std::string>& local_paths, const SourceOptions& options,
                                                         std::shared_ptr<ShardArrivals> arrivals, std::string fingerprint) {
  return std::make_unique<TarSource>(local_paths, options, std::move(arrivals), std::move(fingerprint));
}

}  // namespace slip
