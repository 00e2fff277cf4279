#include "net/download.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <charconv>
#include <system_error>

#include <nlohmann/json.hpp>

#include "net/retry.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/runtime.hpp"
#include "util/atomic_file.hpp"
#include "util/file_io.hpp"
#include "util/file_lock.hpp"
#include "util/untrusted.hpp"
#include "util/log.hpp"

namespace slip::net {

namespace fs = std::filesystem;

namespace {

// What we know about a file in the download directory: the validators of the response that
// produced it, so a later run can ask "changed?" (If-None-Match / If-Modified-Since) or
// resume it (If-Range).
struct Validators {
  std::string etag;
  std::string last_modified;
  std::optional<uint64_t> size;
};

std::optional<Validators> read_validators(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  const std::string text = detail::read_text_file(path);  // unreadable (permission, I/O): an I/O error, not "damaged"
  try {
    const auto j = detail::parse_json_bounded(text);
    Validators v{j.value("etag", ""), j.value("last_modified", ""), std::nullopt};
    if (j.contains("size") && j["size"].is_number_unsigned()) v.size = j["size"].get<uint64_t>();
    return v;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a damaged record only costs a fresh download
  } catch (const Error& e) {
    if (e.code() != Errc::bad_input) throw;
    return std::nullopt;
  }
}

void write_validators(const fs::path& path, const Validators& v, const std::string& uri) {
  nlohmann::ordered_json j{{"uri", uri}, {"etag", v.etag}, {"last_modified", v.last_modified}};
  if (v.size) j["size"] = *v.size;
  // No sweep: a download directory holds thousands of records; a killed run leaves at most a
  // few bytes under a dot name.
  // (A server's ETag need not be UTF-8: its bytes that are not are replaced, which at worst
  // costs one fresh download; a JSON dump would otherwise throw.)
  detail::replace_file(path, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", detail::AtomicFile::Sweep::none);
}

std::string header(const Headers& h, const char* name) {
  auto it = h.find(name);
  return it == h.end() ? std::string() : it->second;
}

std::optional<uint64_t> parse_u64(const std::string& s) { return detail::parse_decimal<uint64_t>(s); }

std::string unquote(std::string s) {
  if (s.starts_with("W/")) return s;  // weak validators stay as they are
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

bool is_md5_hex(const std::string& s) { return s.size() == 32 && s.find_first_not_of("0123456789abcdef") == std::string::npos; }

std::string md5_hex_of_file(const fs::path& path) { return detail::InputFile(path).md5_hex(); }

uint64_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove(p, ec);
}

// Why an attempt failed, and whether another may succeed.
struct AttemptFailure {
  bool transient = true;
  std::string reason;
  const Headers* headers = nullptr;
};

// The .part file being written by one attempt.
class PartWriter {
 public:
  PartWriter(const fs::path& path, bool append) : path_(path) {
    // Never through a link planted in a shared download directory (open_for_writing).
    fd_ = detail::open_for_writing(path, append ? detail::Create::append : detail::Create::replace).release();
  }
  ~PartWriter() {
    if (fd_ >= 0) ::close(fd_);
  }
  PartWriter(const PartWriter&) = delete;
  PartWriter& operator=(const PartWriter&) = delete;
  void write(std::span<const char> data) {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        throw_errno("cannot write the download", path_.string(), errno);
      }
      data = data.subspan(static_cast<size_t>(n));
    }
  }
  void finish() {
    if (::fdatasync(fd_) != 0) throw_errno("cannot sync the download", path_.string(), errno);
    if (::close(fd_) != 0) {
      fd_ = -1;
      throw_errno("cannot close the download", path_.string(), errno);
    }
    fd_ = -1;
  }

 private:
  fs::path path_;
  int fd_ = -1;
};

}  // namespace

fs::path local_path_for(const fs::path& download_dir, const std::string& scheme, const std::string& host, std::string_view path) {
  auto check = [&](std::string_view segment) {
    if (segment.empty() || segment == "." || segment == ".." || segment.find('\0') != std::string_view::npos)
      throw Error(Errc::bad_input, "remote name \"" + std::string(path) + "\" has a segment that could leave the download directory");
  };
  std::string safe_host = host;
  for (char& c : safe_host)
    if (c == ':' || c == '/') c = '_';
  check(safe_host);
  fs::path out = download_dir / scheme / safe_host;
  size_t start = 0;
  while (start <= path.size()) {
    auto slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    const std::string_view segment = path.substr(start, slash - start);
    if (!(segment.empty() && (start == 0 || slash == path.size()))) {  // leading/trailing '/' are fine
      check(segment);
      out /= std::string(segment);
    }
    start = slash + 1;
  }
  if (out == download_dir / scheme / safe_host) throw Error(Errc::bad_input, "remote URI names no file");
  return out;
}

ObjectInfo probe(const DownloadItem& item, const TransportOptions& options) {
  for (unsigned attempt = 1;; ++attempt) {
    throw_if_interrupted();
    Transfer t = item.make_get({});
    t.head_only = true;
    t.ca_bundle = env_value(options.environment, "CURL_CA_BUNDLE").value_or("");
    const TransferResult r = perform(t);
    if (r.ok()) {
      ObjectInfo info;
      if (r.filetime >= 0) info.modified = r.filetime;
      if (auto it = r.headers.find("content-length"); it != r.headers.end()) {
        // Digits only, no overflow: a size that does not parse is no size (download first).
        const std::string& text = it->second;
        uint64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (!text.empty() && error == std::errc() && end == text.data() + text.size()) info.size = value;
      }
      return info;
    }
    if (!is_transient(r) || attempt >= options.retry.attempts) return {};
    wait_before_retry(options.retry, attempt, &r.headers);
  }
}

namespace {

// The directory download() writes into. Below the download directory, which others may share:
// never through a planted link or another user's directory (docs/HOSTILE_INPUTS.md, "shared
// download directories").
void make_download_parent(const DownloadItem& item) {
  if (!item.download_dir.empty()) {
    detail::make_owned_directories(item.download_dir, item.dest.parent_path().lexically_relative(item.download_dir));
  } else {
    std::error_code ec;
    fs::create_directories(item.dest.parent_path(), ec);
    if (ec) throw_errno("cannot create the download directory", item.dest.parent_path().string(), ec.value());
  }
}

// One GET of download(): what it asks for, and what its response has delivered so far. The
// response callbacks write the .part file; a complete response is checked and moved into place.
struct DownloadAttempt {
  const DownloadItem& item;
  const fs::path& part;
  uint64_t max_bytes;
  std::vector<std::string> extra;  // request headers
  uint64_t offset = 0;             // where a Range asks to resume
  bool conditional = false;        // "changed since?" for a complete earlier download
  std::unique_ptr<PartWriter> writer;
  uint64_t received = 0, start_offset = 0;
  std::optional<uint64_t> total;
  long status = 0;
  Validators started;
  // Set by the callbacks for what no retry can change (a size over the bound, a size the
  // listing contradicts): the download fails at once.
  bool refused = false;

  DownloadAttempt(const DownloadItem& item_, const fs::path& part_, uint64_t max_bytes_)
      : item(item_), part(part_), max_bytes(max_bytes_) {}

  void remove_part() const {
    remove_quietly(part);
    remove_quietly(part.string() + ".slipdl");
  }

  Error refuse(Errc code, const std::string& why) {
    refused = true;
    remove_part();  // never kept, never resumed
    return Error(code, why).with_path(item.uri);
  }

  // What to ask for: "changed since?" for a complete file, the rest for a partial one.
  void plan(const std::optional<Validators>& known, bool have_complete) {
    std::error_code ec;
    conditional = have_complete && !(item.expected_size && !item.expected_etag.empty());
    if (conditional) {
      if (!known->etag.empty()) extra.push_back("If-None-Match: " + known->etag);
      if (!known->last_modified.empty()) extra.push_back("If-Modified-Since: " + known->last_modified);
    } else if (const auto part_record = read_validators(part.string() + ".slipdl"); part_record && fs::is_regular_file(part, ec)) {
      const std::string validator =
          !part_record->etag.empty() && !part_record->etag.starts_with("W/") ? part_record->etag : part_record->last_modified;
      const bool same_object = item.expected_etag.empty() || unquote(part_record->etag) == item.expected_etag;
      offset = file_size_or_zero(part);
      if (!validator.empty() && same_object && offset > 0 && (!part_record->size || offset < *part_record->size)) {
        extra.push_back("Range: bytes=" + std::to_string(offset) + "-");
        extra.push_back("If-Range: " + validator);
      } else {
        offset = 0;
      }
    }
  }

  void on_headers(long answered, const Headers& h) {
    status = answered;
    started = {header(h, "etag"), header(h, "last-modified"), std::nullopt};
    if (status == 206) {
      // "bytes a-b/total": the server must continue exactly where the part ends.
      const std::string range = header(h, "content-range");
      const auto dash = range.find('-'), slash_pos = range.find('/');
      const auto first = range.starts_with("bytes ") && dash != std::string::npos ? parse_u64(range.substr(6, dash - 6)) : std::nullopt;
      if (!first || *first != offset || slash_pos == std::string::npos) {
        remove_part();
        throw Error(Errc::retryable, "the server answered a resume with the range \"" + range + "\"; starting over");
      }
      total = parse_u64(range.substr(slash_pos + 1));
      start_offset = offset;
    } else {
      if (const auto len = parse_u64(header(h, "content-length"))) total = *len;
      start_offset = 0;
    }
    if (total && *total > max_bytes)
      throw refuse(Errc::bad_input, "the server announces " + std::to_string(*total) + " bytes, more than --max-download-bytes " +
                                        std::to_string(max_bytes) + "; nothing written");
    if (total && item.expected_size && *total != *item.expected_size)
      throw refuse(Errc::retryable, "the server announces " + std::to_string(*total) + " bytes, the listing (or HEAD) said " +
                                        std::to_string(*item.expected_size) + " (changed since it was listed?)");
    if (total && *total > start_offset) {  // refused now rather than when the disk is full
      struct statvfs vfs {};
      const uint64_t needed = *total - start_offset;
      if (::statvfs(part.parent_path().c_str(), &vfs) == 0 && uint64_t{vfs.f_bavail} * vfs.f_frsize < needed)
        throw refuse(Errc::io, "needs " + std::to_string(needed) + " bytes, " + std::to_string(uint64_t{vfs.f_bavail} * vfs.f_frsize) +
                                   " free in " + part.parent_path().string());
    }
    started.size = total;
    write_validators(part.string() + ".slipdl", started, item.uri);
    writer = std::make_unique<PartWriter>(part, status == 206);
  }

  void on_body(std::span<const char> data) {
    // Bounded by what was announced: Content-Length, else the listing's size, and always
    // by --max-download-bytes (a chunked or until-close body announces nothing).
    const uint64_t end = start_offset + received + data.size();
    if (total && end > *total)
      throw Error(Errc::retryable, "the server sent more bytes than it announced (" + std::to_string(*total) + ")");
    if (!total && item.expected_size && end > *item.expected_size)
      throw refuse(Errc::retryable, "the object is longer than the listing's " + std::to_string(*item.expected_size) +
                                        " bytes (changed since it was listed?)");
    if (end > max_bytes)
      throw refuse(Errc::bad_input, "the body (no length announced) passed --max-download-bytes " + std::to_string(max_bytes) +
                                        " bytes; cut off and removed");
    try {
      writer->write(data);
    } catch (const Error&) {
      // A disk full (ENOSPC) or a file-size limit (EFBIG) mid-body: the part is junk, never
      // kept for a resume that would fail the same way.
      refused = true;
      remove_part();
      throw;
    }
    received += data.size();
  }

  // A complete response (2xx): the part checked against what was announced and listed, then
  // moved into place with its validators in `record`. Returns nothing, with `failure` set,
  // when another try may fetch it whole.
  std::optional<DownloadOutcome> commit(const TransferResult& r, const fs::path& record, bool resumed, AttemptFailure& failure) {
    if (!writer) writer = std::make_unique<PartWriter>(part, false);  // an empty body
    try {
      writer->finish();
    } catch (const Error&) {  // ENOSPC at fdatasync: the same junk part as above
      writer.reset();
      remove_part();
      throw;
    }
    writer.reset();
    const uint64_t have = file_size_or_zero(part);
    const std::string etag = unquote(started.etag.empty() ? item.expected_etag : started.etag);
    if (total && have != *total) {
      failure = {true, "downloaded " + std::to_string(have) + " bytes, the server announced " + std::to_string(*total), nullptr};
    } else if (item.expected_size && have != *item.expected_size) {
      // A whole body that contradicts the listing: another try would fetch the same.
      remove_part();
      throw Error(Errc::retryable, "downloaded " + std::to_string(have) + " bytes, the listing (or HEAD) said " +
                                       std::to_string(*item.expected_size) + " (changed since it was listed?)")
          .with_path(item.uri);
    } else if (item.etag_is_content_md5 && is_md5_hex(etag) && md5_hex_of_file(part) != etag) {
      failure = {true, "the MD5 of the download does not match the ETag " + etag, nullptr};
    }
    if (!failure.reason.empty()) {
      remove_part();  // never keep (or later resume) bytes that failed a check
      return std::nullopt;
    }
    if (r.filetime >= 0) {  // keep the remote modification time: stat fingerprints stay stable
      const struct timespec times[2] = {{r.filetime, 0}, {r.filetime, 0}};
      ::utimensat(AT_FDCWD, part.c_str(), times, 0);
    }
    Validators done = started;
    done.size = have;
    if (done.etag.empty() && !item.expected_etag.empty()) done.etag = "\"" + item.expected_etag + "\"";
    std::error_code ec;
    fs::rename(part, item.dest, ec);
    if (ec) throw_errno("cannot move the download into place", item.dest.string(), ec.value());
    write_validators(record, done, item.uri);
    remove_quietly(part.string() + ".slipdl");
    return resumed || start_offset > 0 ? DownloadOutcome::resumed : DownloadOutcome::downloaded;
  }
};

// Progress is bytes beyond the most this run has held, on a response that continued where
// the part ended (or was asked from byte 0): a server that answers Range with the whole
// object and closes early would otherwise "progress" on every try, fetching it from byte 0
// 20 x --retries times.
struct DownloadRetries {
  unsigned failures_without_progress = 0, total_attempts = 0;
  uint64_t most_held = 0;
  bool range_ignored = false;

  // After a failed attempt: throws once the tries are spent, else waits before the next.
  void after_failure(const DownloadAttempt& at, const AttemptFailure& failure, const RetryPolicy& retry) {
    // A Range answered with the whole object (200 with the validator we resumed from) starts
    // over at byte 0: no progress, however many bytes came.
    const bool asked_range = at.offset > 0 && !at.conditional;
    const bool whole_again = asked_range && at.status == 200;
    if (whole_again) range_ignored = true;
    const bool progress = !whole_again && at.start_offset + at.received > most_held;
    if (progress) most_held = at.start_offset + at.received;
    failures_without_progress = progress ? 1 : failures_without_progress + 1;
    if (failures_without_progress >= retry.attempts || total_attempts >= 20 * retry.attempts) {
      const uint64_t kept = file_size_or_zero(at.part);
      throw Error(Errc::retryable, "GET failed after " + std::to_string(total_attempts) + " attempts: " + failure.reason +
                                       (range_ignored ? " (the server ignored Range: every retry started again from byte 0)" : "") +
                                       (kept > 0 ? " (" + std::to_string(kept) + " bytes kept; the next run resumes)" : ""))
          .with_path(at.item.uri);
    }
    slip::detail::warn("{}: {}; retrying", at.item.uri, failure.reason);
    wait_before_retry(retry, failures_without_progress, failure.headers);
  }
};

}  // namespace

DownloadOutcome download(const DownloadItem& item, const TransportOptions& options, uint64_t* bytes) {
  const uint64_t max_bytes = options.max_download_bytes;
  if (item.expected_size && *item.expected_size > max_bytes)
    throw Error(Errc::bad_input, "the listing gives " + std::to_string(*item.expected_size) + " bytes, more than --max-download-bytes " +
                                     std::to_string(max_bytes))
        .with_path(item.uri);
  std::error_code ec;
  make_download_parent(item);
  const fs::path part = item.dest.string() + ".part";
  const fs::path record = item.dest.string() + ".slipdl";  // validators of dest or of part
  detail::FileLock lock(item.dest.string() + ".lock", "the download lock");

  // A complete earlier download: reusable without asking when a listing vouches for it.
  std::optional<Validators> known = read_validators(record);
  const bool have_complete = known && fs::is_regular_file(item.dest, ec) && (!known->size || file_size_or_zero(item.dest) == *known->size);
  if (have_complete && item.expected_size && !item.expected_etag.empty()) {
    if (known->size == item.expected_size && unquote(known->etag) == item.expected_etag) return DownloadOutcome::reused;
  }

  DownloadRetries retries;
  bool resumed = false;
  for (;;) {
    throw_if_interrupted();
    ++retries.total_attempts;
    DownloadAttempt at(item, part, max_bytes);
    at.plan(known, have_complete);
    Transfer t = item.make_get(at.extra);
    t.ca_bundle = env_value(options.environment, "CURL_CA_BUNDLE").value_or("");
    t.on_headers = [&at](long answered, const Headers& h) { at.on_headers(answered, h); };
    t.on_body = [&at](std::span<const char> data) { at.on_body(data); };

    AttemptFailure failure;
    TransferResult r;
    try {
      r = perform(t);
    } catch (const Error& e) {
      if (at.refused || e.code() != Errc::retryable) throw;
      failure = {true, e.message(), nullptr};
      r.curl = CURLE_WRITE_ERROR;
    }
    if (bytes) *bytes += at.received;
    if (r.curl == CURLE_OK && r.status == 304 && at.conditional) return DownloadOutcome::reused;

    if (failure.reason.empty()) {
      if (r.ok()) {
        if (const auto outcome = at.commit(r, record, resumed, failure)) return *outcome;
      } else if (r.curl == CURLE_OK && r.status == 416) {
        at.remove_part();  // the part is not a prefix of what the server has now
        failure = {true, "HTTP 416: the partial download no longer matches; starting over", &r.headers};
      } else {
        failure = {is_transient(r), describe_failure(r), &r.headers};
      }
    }
    if (at.start_offset > 0 && at.received > 0) resumed = true;
    if (!failure.transient) throw Error(Errc::io, "GET failed: " + failure.reason).with_path(item.uri);
    retries.after_failure(at, failure, options.retry);
  }
}

}  // namespace slip::net
