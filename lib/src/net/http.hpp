// Internal: one HTTP(S) GET through libcurl, with the body streamed to a callback. Retrying,
// resuming and signing live in the callers (download.cpp, s3.cpp); this file only transfers.
#pragma once

#include <curl/curl.h>

#include <cstdint>

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace slip::net {

using Headers = std::map<std::string, std::string>;  // lower-case names; the last value wins

struct TransferLimits {
  long connect_timeout_s = 20;
  long stall_timeout_s = 60;  // abort when no byte arrives for this long
  uint64_t min_speed = 0;     // abort when the average over the last min_speed_time_s is lower (0: off)
  long min_speed_time_s = 30;
  long total_timeout_s = 0;  // abort a transfer that takes longer (0: no limit)
};

struct Transfer {
  std::string url;
  // "Name: value". Headers that carry or derive from credentials (Authorization, Cookie,
  // x-amz-*) are sent to the URL's origin only: a redirect to another origin is refused
  // (perform() follows redirects itself then), never followed with them.
  std::vector<std::string> request_headers;
  bool head_only = false;  // a HEAD: headers, no body
  TransferLimits limits;
  std::string ca_bundle;  // CA certificates file (CURL_CA_BUNDLE, from the caller's environment); empty: curl's default
  // Called once per response with a 2xx status, before its first body byte.
  std::function<void(long status, const Headers&)> on_headers;
  // Body bytes of a 2xx response. Exceptions thrown here abort the transfer and are rethrown.
  std::function<void(std::span<const char>)> on_body;
};

struct TransferResult {
  CURLcode curl = CURLE_OK;
  std::string curl_error;  // curl's own message, when curl != CURLE_OK
  long status = 0;         // HTTP status (0: no response)
  Headers headers;
  std::string error_body;    // the body of a non-2xx response, first 64 KiB (S3 XML errors)
  long long filetime = -1;   // Last-Modified as seconds since the epoch, -1 unknown
  std::string redirect_url;  // a 3xx's Location, resolved (only when perform() follows redirects itself)
  bool ok() const { return curl == CURLE_OK && status >= 200 && status < 300; }
};

TransferResult perform(const Transfer& transfer);

// Worth another try: no connection, timeouts, resets, a body cut short, 5xx, 429.
bool is_transient(const TransferResult& r);
// "HTTP 404 Not Found (NoSuchKey: The specified key does not exist.)" or curl's text.
std::string describe_failure(const TransferResult& r);

// The URI for messages and manifests: no user:password@, no query string (signatures), no
// fragment. Parsed with libcurl's URL parser (CURLU), as the transfer itself parses it; a URL
// it cannot parse shows as "<scheme>://(malformed URL)", never partly.
std::string redact(std::string_view uri);

// A URL as libcurl reads it. nullopt when it does not parse (e.g. a '?' or '#' inside a
// password that is not percent-encoded ends the authority there).
struct UrlParts {
  std::string scheme, host, port, path;  // port: explicit or the scheme's default; path percent-encoded
  bool has_credentials = false;          // user:password@ present
  std::string authority() const;         // host[:port], the port only when not the default
  std::string origin() const;            // scheme://host:port (redirects compare these)
};
std::optional<UrlParts> parse_url(std::string_view url);

}  // namespace slip::net
