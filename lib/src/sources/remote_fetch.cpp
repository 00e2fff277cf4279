// Remote datasets, the source side (slip/remote.hpp): which files make a dataset behind a URI
// (one object, tar shards, one FFCV file, a LitData directory and the chunks its index.json
// names). The transport layer (net/) only lists, signs and downloads the URLs chosen here.
#include <fnmatch.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <thread>
#include <chrono>
#include <mutex>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "net/download.hpp"
#include "net/s3.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/remote.hpp"
#include "slip/runtime.hpp"
#include "slip/sigv4.hpp"
#include "sources/litdata_names.hpp"
#include "sources/remote_reading.hpp"
#include "sources/shard_arrivals.hpp"
#include "sources/shard_list.hpp"
#include "util/cancel.hpp"
#include "util/file_io.hpp"
#include "util/log.hpp"
#include "util/untrusted.hpp"

namespace slip {

namespace fs = std::filesystem;
using net::DownloadItem;

namespace {

bool has_extension(std::string_view name) {
  const auto slash = name.rfind('/');
  const std::string_view last = slash == std::string_view::npos ? name : name.substr(slash + 1);
  return last.find('.') != std::string_view::npos && !last.ends_with(".");
}

bool is_tar_name(std::string_view name) {
  for (const char* ext : {".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar.zst", ".tar.lz4"})
    if (name.ends_with(ext)) return true;
  return false;
}

bool is_ffcv_name(std::string_view name) { return name.ends_with(".beton") || name.ends_with(".ffcv"); }

struct HttpUrl {
  std::string scheme, authority, path;  // path without query, starts with '/'
};

HttpUrl parse_http(const std::string& uri) {
  // libcurl's parser, as the transfer will read the URL: user-info never reaches a path or a
  // message ("http://alice:pa?ss@host/x" does not parse: the '?' must be percent-encoded).
  const auto parts = net::parse_url(uri);
  if (!parts)
    throw Error(Errc::usage, "malformed URL (percent-encode '?', '#', '@' and '/' in a user name or password): " + redact_uri(uri));
  return HttpUrl{parts->scheme, parts->authority(), parts->path};
}

// The chunk files a LitData index names, each a plain file name (the index is untrusted).
std::vector<std::string> litdata_chunk_names(const fs::path& index_path, const std::string& index_uri) {
  nlohmann::json j;
  try {
    j = detail::parse_json_bounded(detail::read_text_file(index_path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(Errc::bad_input, std::string("index.json is not valid JSON: ") + e.what()).with_path(index_uri);
  }
  if (!j.is_object() || !j.contains("chunks") || !j["chunks"].is_array())
    throw Error(Errc::bad_input, "index.json has no \"chunks\" list").with_path(index_uri);
  std::vector<std::string> names;
  for (const auto& c : j["chunks"]) {
    if (!c.is_object() || !c.contains("filename") || !c["filename"].is_string())
      throw Error(Errc::bad_input, "index.json: a chunk without a filename").with_path(index_uri);
    const std::string name = c["filename"].get<std::string>();
    if (!detail::is_safe_chunk_name(name))
      throw Error(Errc::bad_input, "index.json: chunk filename \"" + name + "\" could leave the dataset directory").with_path(index_uri);
    names.push_back(name);
  }
  return names;
}

class Fetcher {
 public:
  explicit Fetcher(const RemoteOptions& options) : options_(options), dir_(options.resolved_download_dir()) {}

  // What to download, in source order (a LitData index is downloaded here: it names the rest).
  struct Plan {
    FetchedDataset out;  // remote_uris; local_paths for LitData
    std::vector<DownloadItem> files;
    bool litdata = false;
  };

  FetchedDataset finish(const Plan& p, std::chrono::steady_clock::time_point start) {
    FetchedDataset out = p.out;
    if (!p.litdata)
      for (const auto& f : p.files) out.local_paths.push_back(f.dest.string());
    {
      std::lock_guard lock(mutex_);
      out.stats = stats_;
    }
    out.stats.files = p.files.size() + (p.litdata ? 1 : 0);
    out.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  }

  Plan plan(const std::vector<std::string>& uris) {
    std::vector<std::string> expanded;
    for (const std::string& uri : uris) {
      if (!is_remote_uri(uri)) throw Error(Errc::usage, "local and remote sources cannot be mixed in one conversion").with_path(uri);
      for (auto& u : detail::expand_braces(uri)) expanded.push_back(std::move(u));
    }
    FetchedDataset out;
    std::vector<DownloadItem> files;  // the dataset's files, in source order
    for (const std::string& uri : expanded) {
      if (out.remote_uris.size() % 4096 == 0) throw_if_interrupted();
      out.remote_uris.push_back(redact_uri(uri));
      if (uri.starts_with("s3://"))
        plan_s3(uri, expanded.size() == 1, out, files);
      else
        plan_http(uri, expanded.size() == 1, out, files);
    }
    if (litdata_dir_ && expanded.size() != 1)
      throw Error(Errc::usage, "a LitData dataset must be the only source of a conversion").with_path(out.remote_uris.front());
    // Linear in the files (a pairwise check took minutes on 100,000 shards), and interruptible.
    std::unordered_set<std::string> destinations;
    destinations.reserve(files.size());
    for (size_t i = 0; i < files.size(); ++i) {
      if (i % 4096 == 0) throw_if_interrupted();
      if (!destinations.insert(files[i].dest.string()).second)
        throw Error(Errc::usage, "the same remote file is named twice").with_path(files[i].uri);
    }
    return Plan{std::move(out), std::move(files), litdata_dir_.has_value()};
  }

  void download_one(const DownloadItem& item) {
    uint64_t bytes = 0;
    const auto outcome = net::download(item, options_, &bytes);
    record(outcome, bytes);
  }

  void download_all(const std::vector<DownloadItem>& files) {
    parallel_for(files.size(), std::max(1u, options_.jobs), [&](size_t i) { download_one(files[i]); });
  }

  const RemoteOptions& options() const noexcept { return options_; }

 private:
  // s3://bucket/key: one object, or a "directory" (LitData, tar shards, one FFCV file).
  void plan_s3(const std::string& uri, bool only_source, FetchedDataset& out, std::vector<DownloadItem>& files) {
    const net::S3Location loc = net::parse_s3_uri(uri);
    const net::S3Client& client = s3();
    const auto glob_at = loc.key.find_first_of("*?[");
    const std::string list_prefix = glob_at == std::string::npos ? loc.key : loc.key.substr(0, loc.key.rfind('/', glob_at) + 1);
    const std::vector<net::S3Object> objects = client.list(loc.bucket, list_prefix);
    auto item_for = [&](const net::S3Object& o) {
      DownloadItem item;
      item.uri = net::S3Client::uri(loc.bucket, o.key);
      item.dest = net::local_path_for(dir_, "s3", loc.bucket, o.key);
      item.expected_size = o.size;
      item.expected_etag = o.etag;
      item.etag_is_content_md5 = true;
      item.listed_mtime = o.last_modified;
      const std::string bucket = loc.bucket, key = o.key;
      item.make_get = [&client, bucket, key](std::vector<std::string> extra) { return client.get_object(bucket, key, std::move(extra)); };
      return item;
    };
    if (glob_at != std::string::npos) {  // s3://b/shards/train-*.tar: the matching objects, sorted
      std::vector<net::S3Object> matched;
      for (const auto& o : objects)
        if (::fnmatch(loc.key.c_str(), o.key.c_str(), FNM_PATHNAME) == 0) matched.push_back(o);
      if (matched.empty()) throw Error(Errc::io, "no object matches the pattern").with_path(uri);
      std::sort(matched.begin(), matched.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
      for (const auto& o : matched) files.push_back(item_for(o));
      return;
    }
    for (const auto& o : objects)
      if (o.key == loc.key && !loc.key.empty() && !loc.key.ends_with('/')) {  // exactly one object
        files.push_back(item_for(o));
        return;
      }
    // A directory: the objects directly under key/.
    const std::string dir = loc.key.empty() || loc.key.ends_with('/') ? loc.key : loc.key + "/";
    std::vector<net::S3Object> children;
    for (const auto& o : objects)
      if (o.key.starts_with(dir) && o.key.size() > dir.size() && o.key.find('/', dir.size()) == std::string::npos) children.push_back(o);
    std::sort(children.begin(), children.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
    if (children.empty()) throw Error(Errc::io, "no such object or prefix").with_path(uri);
    std::unordered_map<std::string_view, const net::S3Object*> by_name;  // a LitData index may list 100,000 chunks
    by_name.reserve(children.size());
    for (const auto& o : children) by_name.emplace(std::string_view(o.key).substr(dir.size()), &o);
    auto named = [&](const std::string& name) -> const net::S3Object* {
      const auto it = by_name.find(name);
      return it == by_name.end() ? nullptr : it->second;
    };
    if (const net::S3Object* index = named("index.json")) {
      if (!only_source) throw Error(Errc::usage, "a LitData dataset must be the only source of a conversion").with_path(uri);
      DownloadItem index_item = item_for(*index);
      download_one(index_item);
      litdata_dir_ = index_item.dest.parent_path();
      out.local_paths = {litdata_dir_->string()};
      for (const std::string& name : litdata_chunk_names(index_item.dest, index_item.uri)) {
        const net::S3Object* chunk = named(name);
        if (!chunk)
          throw Error(Errc::bad_input, "chunk listed in index.json is missing").with_path(net::S3Client::uri(loc.bucket, dir + name));
        files.push_back(item_for(*chunk));
      }
      return;
    }
    for (const auto& o : children)
      if (o.key.ends_with(".index.json"))
        throw Error(Errc::bad_input, "incomplete LitData dataset: per-worker " + o.key.substr(dir.size()) + " but no merged index.json")
            .with_path(uri);
    std::vector<net::S3Object> tars, ffcv_files;
    for (const auto& o : children) {
      if (is_tar_name(o.key)) tars.push_back(o);
      if (is_ffcv_name(o.key)) ffcv_files.push_back(o);
    }
    if (!tars.empty()) {
      for (const auto& o : tars) files.push_back(item_for(o));
    } else if (ffcv_files.size() == 1) {
      files.push_back(item_for(ffcv_files.front()));
    } else {
      throw Error(Errc::bad_input, "holds no LitData index.json, tar shards or single FFCV file").with_path(uri);
    }
  }

  // http(s)://host/path: a file when the last segment has an extension, else a LitData directory.
  void plan_http(const std::string& uri, bool only_source, FetchedDataset& out, std::vector<DownloadItem>& files) {
    const HttpUrl u = parse_http(uri);
    auto item_for = [&](const std::string& url, const std::string& path) {
      DownloadItem item;
      item.uri = redact_uri(url);
      item.dest = net::local_path_for(dir_, u.scheme, u.authority, path);
      item.make_get = [this, url](std::vector<std::string> extra) {
        net::Transfer t;
        t.url = url;
        t.request_headers = std::move(extra);
        t.ca_bundle = env_value(options_.environment, "CURL_CA_BUNDLE").value_or("");
        t.limits = {options_.connect_timeout_s, options_.stall_timeout_s, options_.min_speed, options_.min_speed_time_s,
                    options_.total_timeout_s};
        return t;
      };
      return item;
    };
    if (!u.path.ends_with('/') && has_extension(u.path)) {
      files.push_back(item_for(uri, u.path));
      return;
    }
    if (!only_source) throw Error(Errc::usage, "a LitData dataset must be the only source of a conversion").with_path(redact_uri(uri));
    std::string base = uri;
    if (const auto q = base.find_first_of("?#"); q != std::string::npos) base.resize(q);
    if (!base.ends_with('/')) base += '/';
    const std::string dir_path = u.path.ends_with('/') ? u.path : u.path + "/";
    DownloadItem index_item = item_for(base + "index.json", dir_path + "index.json");
    try {
      download_one(index_item);
    } catch (Error& e) {
      if (e.code() == Errc::io && e.message().find("HTTP 404") != std::string::npos)
        throw Error(Errc::io, "no index.json here: a LitData directory needs one (a file URL must end in its extension: .tar, .beton, ...)")
            .with_path(redact_uri(uri));
      throw;
    }
    litdata_dir_ = index_item.dest.parent_path();
    out.local_paths = {litdata_dir_->string()};
    for (const std::string& name : litdata_chunk_names(index_item.dest, index_item.uri))
      files.push_back(item_for(base + aws_uri_encode(name, false), dir_path + name));
  }

  void record(net::DownloadOutcome outcome, uint64_t bytes) {
    std::lock_guard lock(mutex_);
    stats_.bytes += bytes;
    (outcome == net::DownloadOutcome::reused    ? stats_.reused
     : outcome == net::DownloadOutcome::resumed ? stats_.resumed
                                                : stats_.downloaded)++;
  }

  const net::S3Client& s3() {
    if (!s3_) s3_.emplace(options_);
    return *s3_;
  }

  RemoteOptions options_;
  fs::path dir_;
  std::optional<net::S3Client> s3_;
  std::optional<fs::path> litdata_dir_;
  std::mutex mutex_;
  FetchStats stats_;
};

void log_fetched(const FetchStats& stats, std::string_view how) {
  slip::detail::info("fetched {} file(s) in {:.1f} s{}: {} downloaded, {} resumed, {} reused ({:.1f} MB transferred)", stats.files,
                     stats.seconds, how, stats.downloaded, stats.resumed, stats.reused, static_cast<double>(stats.bytes) / 1e6);
}

// Tar shards downloaded in source order by options.jobs threads while the conversion reads
// them. Before the first wait() nothing is fetched; wait(0) (the schema comes from the first
// shard) fetches shard 0 only, so a conversion that finds its cache already made stops after
// one shard; any later wait() releases the rest. A failed download stops further claims; its
// error reaches the reader at that shard, after every sample before it.
class ArrivingDownloads final : public detail::ShardArrivals {
 public:
  ArrivingDownloads(std::unique_ptr<Fetcher> fetcher, Fetcher::Plan plan)
      : fetcher_(std::move(fetcher)),
        plan_(std::move(plan)),
        state_(plan_.files.size(), State::pending),
        range_end_(plan_.files.size()),
        start_(std::chrono::steady_clock::now()) {
    errors_.resize(state_.size());  // (in the initialiser list, clang-tidy takes it for an unthrown exception)
  }

  ~ArrivingDownloads() override {
    abort();
    for (std::thread& t : threads_) t.join();
  }
  ArrivingDownloads(const ArrivingDownloads&) = delete;
  ArrivingDownloads& operator=(const ArrivingDownloads&) = delete;

  void wait(size_t index) override {
    std::unique_lock lock(mutex_);
    if (index >= state_.size() || index < range_begin_ || index >= range_end_)
      throw Error(Errc::usage, "shard " + std::to_string(index) + " is not among those being fetched");
    release(index == 0 ? 1 : state_.size());
    // The waiting reader carries the conversion's cancel token (the downloads only see signals
    // and abort()): polled, so a cancelled conversion does not wait out a long download.
    while (!changed_.wait_for(lock, std::chrono::milliseconds(100),
                              [&] { return state_[index] == State::done || state_[index] == State::failed || stopped(index); }))
      throw_if_interrupted();
    if (state_[index] == State::done) return;
    if (state_[index] == State::failed) std::rethrow_exception(errors_[index]);
    if (aborted_) throw Error(Errc::interrupted, "cancelled");
    std::rethrow_exception(first_error_);  // an earlier download failed: this one never starts
  }

  void restrict_to(size_t begin, size_t end) override {
    std::lock_guard lock(mutex_);
    range_begin_ = std::min(begin, state_.size());
    range_end_ = std::clamp(end, range_begin_, state_.size());
    cursor_ = range_begin_;
    done_in_range_ = static_cast<size_t>(std::count(state_.begin() + static_cast<ptrdiff_t>(range_begin_),
                                                    state_.begin() + static_cast<ptrdiff_t>(range_end_), State::done));
    changed_.notify_all();
  }

  void abort() noexcept override {
    {
      std::lock_guard lock(mutex_);
      aborted_ = true;
      abort_flag_.store(true);
    }
    changed_.notify_all();
  }

 private:
  enum class State { pending, running, done, failed };

  bool stopped(size_t index) const { return aborted_ || (first_error_ && state_[index] == State::pending); }

  // Lets the workers claim indices below `limit`, starting them on the first call.
  void release(size_t limit) {
    if (limit > limit_) {
      limit_ = limit;
      changed_.notify_all();
    }
    if (!threads_.empty()) return;
    const size_t count = std::clamp<size_t>(fetcher_->options().jobs, 1, state_.size());
    for (size_t t = 0; t < count; ++t) threads_.emplace_back([this] { work(); });
  }

  // The next pending index the workers may take, or nullopt; `finished` when none ever will.
  std::optional<size_t> claimable(bool& finished) {
    while (cursor_ < range_end_ && state_[cursor_] != State::pending) ++cursor_;
    finished = aborted_ || first_error_ || cursor_ >= range_end_;
    if (finished || cursor_ >= limit_) return std::nullopt;
    return cursor_;
  }

  void work() {
    const detail::CancelScope scope(&abort_flag_);
    for (;;) {
      size_t index = 0;
      {
        std::unique_lock lock(mutex_);
        bool finished = false;
        std::optional<size_t> next;
        changed_.wait(lock, [&] { return (next = claimable(finished)) || finished; });
        if (!next) return;
        index = *next;
        state_[index] = State::running;
      }
      std::exception_ptr error;
      try {
        fetcher_->download_one(plan_.files[index]);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard lock(mutex_);
      state_[index] = error ? State::failed : State::done;
      errors_[index] = error;
      if (error && !first_error_ && !aborted_) first_error_ = error;
      if (!error && index >= range_begin_ && index < range_end_ && ++done_in_range_ == range_end_ - range_begin_) {
        FetchStats stats = fetcher_->finish(plan_, start_).stats;
        stats.files = range_end_ - range_begin_;
        log_fetched(stats, ", while converting");
      }
      changed_.notify_all();
    }
  }

  std::unique_ptr<Fetcher> fetcher_;
  Fetcher::Plan plan_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<State> state_;
  std::vector<std::exception_ptr> errors_;
  std::exception_ptr first_error_;
  size_t range_begin_ = 0, range_end_, cursor_ = 0, limit_ = 0, done_in_range_ = 0;
  bool aborted_ = false;
  std::atomic<bool> abort_flag_{false};
  const std::chrono::steady_clock::time_point start_;
  std::vector<std::thread> threads_;
};

// The stat fingerprint a tar source computes from the finished downloads, from the listing:
// each file's name, size and modification time (a download gets its object's Last-Modified).
// Times in Unix nanoseconds, as tar sources stat them (util/file_time.hpp); a time that does not
// fit (a server claiming the year 2300) gives none: the shards are then downloaded first.
std::optional<std::string> listed_stat_fingerprint(const std::vector<DownloadItem>& files) {
  constexpr int64_t latest = std::numeric_limits<int64_t>::max() / 1000000000;
  Sha256 fp;
  for (const DownloadItem& f : files) {
    if (!f.expected_size || !f.listed_mtime || *f.listed_mtime < 0 || *f.listed_mtime >= latest) return std::nullopt;
    const int64_t ns = *f.listed_mtime * 1000000000;
    fp.update(f.dest.filename().string() + "\t" + std::to_string(*f.expected_size) + "\t" + std::to_string(ns) + "\n");
  }
  return "stat-shards:" + fp.hex_digest();
}

bool is_tar_path(const fs::path& p) { return is_tar_name(p.filename().string()); }

}  // namespace

FetchedDataset fetch_remote(const std::vector<std::string>& uris, const RemoteOptions& options) {
  return detail::start_remote_reading(uris, options, false).fetched;
}

namespace detail {

RemoteReading start_remote_reading(const std::vector<std::string>& uris, const RemoteOptions& options, bool may_stream_shards) {
  const detail::CancelScope cancel_scope(options.cancel);
  if (uris.empty()) throw Error(Errc::usage, "no source given");
  const auto start = std::chrono::steady_clock::now();
  auto fetcher = std::make_unique<Fetcher>(options);
  Fetcher::Plan plan = fetcher->plan(uris);
  RemoteReading reading;
  const bool shards = !plan.litdata && plan.files.size() >= 2 &&
                      std::all_of(plan.files.begin(), plan.files.end(), [](const DownloadItem& f) { return is_tar_path(f.dest); });
  if (may_stream_shards && shards) {
    // Files without a listing (HTTP URLs): a HEAD each, `--jobs` at a time, for their sizes
    // and times. Any server that does not give both means downloading first.
    std::vector<size_t> unlisted;
    for (size_t i = 0; i < plan.files.size(); ++i)
      if (!plan.files[i].expected_size || !plan.files[i].listed_mtime) unlisted.push_back(i);
    // One file without both means downloading first: the HEADs left would be wasted (100,000
    // of them on a server that answers none).
    std::atomic<bool> incomplete{false};
    parallel_for(unlisted.size(), std::max(1u, options.jobs), [&](size_t k) {
      if (incomplete.load(std::memory_order_relaxed)) return;
      DownloadItem& item = plan.files[unlisted[k]];
      const net::ObjectInfo info = net::probe(item, options);
      if (info.size && info.modified) {
        item.expected_size = info.size;
        item.listed_mtime = info.modified;
      } else {
        incomplete.store(true, std::memory_order_relaxed);
      }
    });
  }
  if (may_stream_shards && shards)
    if (auto fingerprint = listed_stat_fingerprint(plan.files)) {
      reading.fetched.remote_uris = plan.out.remote_uris;
      for (const auto& f : plan.files) reading.fetched.local_paths.push_back(f.dest.string());
      reading.fingerprint = std::move(*fingerprint);
      reading.arrivals = std::make_shared<ArrivingDownloads>(std::move(fetcher), std::move(plan));
      return reading;
    }
  fetcher->download_all(plan.files);
  reading.fetched = fetcher->finish(plan, start);
  log_fetched(reading.fetched.stats, "");
  return reading;
}

}  // namespace detail

}  // namespace slip
