// Internal: one HTTP(S) GET through libcurl, with the body streamed to a callback. Retrying,
// resuming and signing live in the callers (download.cpp, s3.cpp); this file only transfers.
#pragma once

#include <curl/curl.h>

#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace slip::net {

using Headers = std::map<std::string, std::string>;  // lower-case names; the last value wins

struct TransferLimits {
  long connect_timeout_s = 20;
  long stall_timeout_s = 60;  // abort when no byte arrives for this long
};

struct Transfer {
  std::string url;
  std::vector<std::string> request_headers;  // "Name: value"
  TransferLimits limits;
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
  std::string error_body;   // the body of a non-2xx response, first 64 KiB (S3 XML errors)
  long long filetime = -1;  // Last-Modified as seconds since the epoch, -1 unknown
  bool ok() const { return curl == CURLE_OK && status >= 200 && status < 300; }
};

TransferResult perform(const Transfer& transfer);

// Worth another try: no connection, timeouts, resets, a body cut short, 5xx, 429.
bool is_transient(const TransferResult& r);
// "HTTP 404 Not Found (NoSuchKey: The specified key does not exist.)" or curl's text.
std::string describe_failure(const TransferResult& r);

// The URI for messages and manifests: no user:password@, no query string (signatures).
std::string redact(std::string_view uri);

}  // namespace slip::net
