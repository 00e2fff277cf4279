// slip/transport.hpp — how the network layer transfers files: retries, timeouts, bounds.
//
// The options of one HTTP(S)/S3 transfer, below the sources that decide what to fetch
// (slip/remote.hpp's RemoteOptions extends them with the download directory and parallelism).
#pragma once

#include "slip/export.hpp"

#include <cstdint>
#include <string>

#include "slip/runtime.hpp"

SLIP_API_BEGIN
namespace slip {

struct RetryPolicy {
  unsigned attempts = 6;         // tries per request, the first included
  double initial_delay_s = 0.5;  // wait before the second try; doubles each time (+-50% jitter)
  double max_delay_s = 30;       // cap on one wait (also on a server's Retry-After)
};

struct TransportOptions {
  // Where AWS_* (credentials, region, endpoint), CURL_CA_BUNDLE, SLIPSTREAM_CACHE_DIR and HOME
  // are looked up (slip/runtime.hpp); empty: nowhere (anonymous unless credentials come from
  // the variables given).
  Environment environment;
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
};

}  // namespace slip
SLIP_API_END
