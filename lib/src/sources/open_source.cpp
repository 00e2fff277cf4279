// open_source(): the table of source kinds, probed in order (specific formats first, the
// ImageFolder directory last). A new source adds one row here.
#include <filesystem>
#include <map>
#include <vector>

#include <algorithm>

#include "slip/error.hpp"
#include "slip/remote.hpp"
#include "sources/source_registry.hpp"
#include "util/cancel.hpp"
#include "util/untrusted.hpp"

namespace slip {

namespace fs = std::filesystem;

namespace {

bool is_directory(const std::string& uri) {
  std::error_code ec;
  return fs::is_directory(uri, ec);
}

}  // namespace

bool looks_like_ffcv(const std::string& path);
bool looks_like_tar(const std::string& uri);
bool looks_like_litdata(const std::string& uri);
std::unique_ptr<Source> open_litdata(const std::string& dir, const SourceOptions& options);
std::unique_ptr<Source> open_tar_shards(const std::vector<std::string>& args, const SourceOptions& options);
std::unique_ptr<Source> open_ffcv(const std::string& path, const SourceOptions& options);

namespace {

const std::vector<detail::SourceKind>& source_kinds() {
  static const std::vector<detail::SourceKind> kinds = {
      {"ffcv", [](const std::string& uri, const SourceOptions&) { return looks_like_ffcv(uri); },
       [](const std::string& uri, const SourceOptions& o) { return open_ffcv(uri, o); }},
      {"litdata", [](const std::string& uri, const SourceOptions&) { return looks_like_litdata(uri); },
       [](const std::string& uri, const SourceOptions& o) { return open_litdata(uri, o); }},
      {"tar", [](const std::string& uri, const SourceOptions&) { return looks_like_tar(uri); },
       [](const std::string& uri, const SourceOptions& o) { return open_tar_shards({uri}, o); }},
      {"imagefolder", [](const std::string& uri, const SourceOptions&) { return is_directory(uri); },
       [](const std::string& uri, const SourceOptions& options) { return detail::open_imagefolder(uri, options); }},
  };
  return kinds;
}

}  // namespace

std::optional<std::string> SourceOptions::get(std::string_view key) const {
  std::optional<std::string> out;
  for (const auto& [k, v] : settings)
    if (k == key) out = v;
  return out;
}

std::vector<std::string> SourceOptions::get_all(std::string_view key) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : settings)
    if (k == key) out.push_back(v);
  return out;
}

std::unique_ptr<Source> open_remote_sources(const std::vector<std::string>& uris, const SourceOptions& options);

namespace {

// The settings (flag names without "--") each source kind reads; any other setting is a usage
// error rather than silently ignored. Remote settings apply when the source was downloaded.
const std::map<std::string_view, std::vector<std::string_view>>& keys_of_kind() {
  static const std::map<std::string_view, std::vector<std::string_view>> keys = {
      {"ffcv", {"fingerprint", "rename", "raw-field", "max-sample-bytes"}},
      {"litdata", {"fields", "raw-field", "max-sample-bytes"}},
      {"tar",
       {"fingerprint", "field", "image-field", "label-field", "missing", "layout", "max-sample-bytes", "allow-truncated", "io-depth"}},
      {"imagefolder", {"fingerprint", "io-depth", "max-sample-bytes"}},
  };
  return keys;
}
constexpr std::string_view kRemoteKeys[] = {
    "download-dir",  "jobs",      "endpoint-url",   "no-sign-request", "retries",       "retry-delay",       "connect-timeout",
    "stall-timeout", "min-speed", "min-speed-time", "timeout",         "max-list-keys", "max-download-bytes"};

}  // namespace

void detail::check_source_settings(std::string_view kind, const SourceOptions& options, bool remote) {
  const auto& known = keys_of_kind().at(kind);
  for (const auto& [key, value] : options.settings) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const bool remote_key = std::find(std::begin(kRemoteKeys), std::end(kRemoteKeys), key) != std::end(kRemoteKeys);
    if (remote_key && remote) continue;
    throw Error(Errc::usage, "--" + key +
                                 (remote_key ? " applies to remote sources (http://, https://, s3://) only"
                                             : " does not apply to " + std::string(kind) + " sources"));
  }
}

// After any download: the files on this machine.
std::unique_ptr<Source> open_local_sources(const std::vector<std::string>& paths, const SourceOptions& options, bool remote) {
  if (paths.empty()) throw Error(Errc::usage, "no source given");
  if (paths.size() > 1) {  // several inputs: tar shards
    detail::check_source_settings("tar", options, remote);
    return open_tar_shards(paths, options);
  }
  for (const auto& kind : source_kinds())
    if (kind.probe(paths[0], options)) {
      detail::check_source_settings(kind.name, options, remote);
      return kind.open(paths[0], options);
    }
  const std::string& uri = paths[0];
  std::error_code ec;
  if (!fs::exists(uri, ec)) throw Error(Errc::io, "no such file or directory").with_path(uri);
  throw Error(Errc::bad_input,
              "not a source slip can read (an ImageFolder directory, an FFCV .beton, WebDataset tar shards, a LitData directory)")
      .with_path(uri);
}

std::unique_ptr<Source> open_sources(const std::vector<std::string>& uris, const SourceOptions& options) {
  const detail::CancelScope cancel_scope(options.cancel);
  if (std::any_of(uris.begin(), uris.end(), [](const std::string& u) { return is_remote_uri(u); }))
    return open_remote_sources(uris, options);
  return open_local_sources(uris, options, false);
}

std::unique_ptr<Source> open_source(const std::string& uri, const SourceOptions& options) { return open_sources({uri}, options); }

}  // namespace slip

namespace slip::detail {

uint64_t max_sample_bytes(const SourceOptions& options) {
  const auto v = options.get("max-sample-bytes");
  if (!v) return kDefaultMaxSampleBytes;
  const auto bytes = parse_decimal<uint64_t>(*v);
  if (!bytes || *bytes == 0) throw Error(Errc::usage, "--max-sample-bytes wants a positive byte count, got \"" + *v + "\"");
  return *bytes;
}

uint64_t parse_io_depth(const std::string& text) {
  const uint64_t value = text.size() <= 4 ? parse_decimal<uint64_t>(text).value_or(0) : 0;
  if (value < 1 || value > 1024) throw Error(Errc::usage, "--io-depth must be a number from 1 to 1024, got \"" + text + "\"");
  return value;
}

}  // namespace slip::detail
