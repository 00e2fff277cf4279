// slip/remote.hpp — datasets behind http://, https:// and s3:// URIs.
//
// open_source()/open_sources() accept these URIs directly: the files a source needs are
// fetched with libcurl into a download directory (several transfers at once; complete files
// reused by later runs, partial ones resumed with Range requests), checked against the
// length and checksum the server announced, then read like local files. The functions here
// are the same machinery for callers that want the files themselves.
#pragma once

#include "slip/export.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "slip/runtime.hpp"
#include "slip/source.hpp"
#include "slip/transport.hpp"

SLIP_API_BEGIN
namespace slip {

// The transfer settings (retries, timeouts, bounds, credentials' environment) are
// TransportOptions (slip/transport.hpp), which the network layer takes; RemoteOptions adds
// where the files go and how many transfers run at once.
struct RemoteOptions : TransportOptions {
  // Empty: default_cache_root(environment)/downloads.
  std::filesystem::path download_dir;
  unsigned jobs = 4;  // transfers in parallel

  // From --download-dir, --jobs, --endpoint-url, --no-sign-request, --retries, --retry-delay,
  // --connect-timeout, --stall-timeout, --min-speed, --min-speed-time, --timeout,
  // --max-list-keys, --max-download-bytes (SourceOptions keys of the same names). Throws Error(usage) on bad values.
  static RemoteOptions from_settings(const SourceOptions& options);
  std::filesystem::path resolved_download_dir() const;
};

// True for http://, https:// and s3:// URIs.
bool is_remote_uri(std::string_view uri);
// The URI as messages and manifests show it: no user:password@, no query string.
std::string redact_uri(std::string_view uri);

struct FetchStats {
  uint64_t files = 0;       // files the source needs
  uint64_t downloaded = 0;  // fetched in full this run
  uint64_t resumed = 0;     // continued from a partial download
  uint64_t reused = 0;      // complete and unchanged from an earlier run
  uint64_t bytes = 0;       // bytes transferred this run
  double seconds = 0;
};

struct FetchedDataset {
  // What to open locally: one directory (a LitData dataset) or the files (FFCV, tar shards).
  std::vector<std::string> local_paths;
  std::vector<std::string> remote_uris;  // what they came from, redacted
  FetchStats stats;
};

// Fetches what the URIs name:
//   a LitData directory  (s3://b/ds, s3://b/ds/, http://h/ds/): index.json, then its chunks;
//   a file               (.beton/.ffcv, .tar/.tar.gz/.tgz/...): the file;
//   an S3 prefix of shards (s3://b/shards/ or s3://b/shards/*.tar): every tar under it;
// brace ranges (shard-{000..009}.tar) are expanded first. Throws Error: usage (bad URI or
// options), io (403/404/other 4xx, local disk), bad_input (an index naming unsafe files),
// retryable (network failures or 5xx that persisted through every retry).
FetchedDataset fetch_remote(const std::vector<std::string>& uris, const RemoteOptions& options);

}  // namespace slip
SLIP_API_END
