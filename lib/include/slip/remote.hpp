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

#include "slip/source.hpp"

#include "slip/runtime.hpp"

SLIP_API_BEGIN
namespace slip {

struct RetryPolicy {
  unsigned attempts = 6;         // tries per request, the first included
  double initial_delay_s = 0.5;  // wait before the second try; doubles each time (+-50% jitter)
  double max_delay_s = 30;       // cap on one wait (also on a server's Retry-After)
};

struct RemoteOptions {
  // Empty: default_cache_root(environment)/downloads.
  std::filesystem::path download_dir;
  // Where AWS_* (credentials, region, endpoint), CURL_CA_BUNDLE, SLIPSTREAM_CACHE_DIR and HOME
  // are looked up (slip/runtime.hpp); empty: nowhere (anonymous unless credentials come from
  // the variables given).
  Environment environment;
  unsigned jobs = 4;  // transfers in parallel
  // S3 endpoint; empty: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, S3_ENDPOINT_URL (in `environment`), else AWS itself.
  // Custom endpoints are addressed path-style (http://host:port/bucket/key).
  std::string endpoint_url;
  bool no_sign_request = false;  // anonymous requests (public buckets)
  RetryPolicy retry;
  long connect_timeout_s = 20;
  long stall_timeout_s = 60;  // a transfer with no progress for this long is retried
  // A transfer slower than min_speed bytes/s on average over min_speed_time_s seconds (a
  // sliding window) is aborted and retried, as curl's --speed-limit/--speed-time; a server
  // trickling one byte a second never trips the stall timeout alone. 0 disables.
  uint64_t min_speed = 1024;
  long min_speed_time_s = 30;
  long total_timeout_s = 0;  // a whole transfer may take at most this long; 0: no limit
  // An S3 listing is refused beyond this many keys (pages of up to 1,000 keys are bounded too):
  // a server whose listing never ends cannot exhaust memory.
  uint64_t max_list_keys = 10'000'000;
  // No download may exceed this many bytes, whatever the server announces or omits: a
  // Content-Length (or listing size) above it is refused before anything is written, a body
  // without a length (chunked, or until the connection closes) is cut off at it. 64 GiB:
  // above any single shard, chunk or FFCV file seen in practice, below a scratch disk.
  uint64_t max_download_bytes = 64ull << 30;
  CancelToken cancel;  // cancel() from any thread stops the transfers (slip/runtime.hpp)

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
