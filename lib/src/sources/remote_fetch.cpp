// Remote datasets, the source side (slip/remote.hpp): which files make a dataset behind a URI
// (one object, tar shards, one FFCV file, a LitData directory and the chunks its index.json
// names). The transport layer (net/) only lists, signs and downloads the URLs chosen here.
#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "net/download.hpp"
#include "net/s3.hpp"
#include "slip/error.hpp"
#include "slip/remote.hpp"
#include "slip/runtime.hpp"
#include "slip/sigv4.hpp"
#include "sources/litdata_names.hpp"
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

  FetchedDataset run(const std::vector<std::string>& uris) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::string> expanded;
    for (const std::string& uri : uris) {
      if (!is_remote_uri(uri)) throw Error(Errc::usage, "local and remote sources cannot be mixed in one conversion").with_path(uri);
      for (auto& u : detail::expand_braces(uri)) expanded.push_back(std::move(u));
    }
    FetchedDataset out;
    std::vector<DownloadItem> files;  // the dataset's files, in source order
    for (const std::string& uri : expanded) {
      out.remote_uris.push_back(redact_uri(uri));
      if (uri.starts_with("s3://"))
        plan_s3(uri, expanded.size() == 1, out, files);
      else
        plan_http(uri, expanded.size() == 1, out, files);
    }
    if (litdata_dir_ && expanded.size() != 1)
      throw Error(Errc::usage, "a LitData dataset must be the only source of a conversion").with_path(out.remote_uris.front());
    download_all(files);
    if (!litdata_dir_)
      for (const auto& f : files) out.local_paths.push_back(f.dest.string());
    out.stats = stats_;
    out.stats.files = files.size() + (litdata_dir_ ? 1 : 0);
    out.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  }

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
    auto named = [&](const std::string& name) -> const net::S3Object* {
      for (const auto& o : children)
        if (o.key == dir + name) return &o;
      return nullptr;
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

  void download_one(const DownloadItem& item) {
    uint64_t bytes = 0;
    const auto outcome = net::download(item, options_, &bytes);
    record(outcome, bytes);
  }

  void record(net::DownloadOutcome outcome, uint64_t bytes) {
    std::lock_guard lock(mutex_);
    stats_.bytes += bytes;
    (outcome == net::DownloadOutcome::reused    ? stats_.reused
     : outcome == net::DownloadOutcome::resumed ? stats_.resumed
                                                : stats_.downloaded)++;
  }

  void download_all(const std::vector<DownloadItem>& files) {
    for (size_t i = 0; i < files.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (files[i].dest == files[j].dest) throw Error(Errc::usage, "the same remote file is named twice").with_path(files[i].uri);
    parallel_for(files.size(), std::max(1u, options_.jobs), [&](size_t i) { download_one(files[i]); });
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

}  // namespace

FetchedDataset fetch_remote(const std::vector<std::string>& uris, const RemoteOptions& options) {
  const detail::CancelScope cancel_scope(options.cancel);
  if (uris.empty()) throw Error(Errc::usage, "no source given");
  Fetcher fetcher(options);
  FetchedDataset out = fetcher.run(uris);
  slip::detail::info("fetched {} file(s) in {:.1f} s: {} downloaded, {} resumed, {} reused ({:.1f} MB transferred)", out.stats.files,
                     out.stats.seconds, out.stats.downloaded, out.stats.resumed, out.stats.reused,
                     static_cast<double>(out.stats.bytes) / 1e6);
  return out;
}

}  // namespace slip
