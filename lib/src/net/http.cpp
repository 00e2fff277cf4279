#include "net/http.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <utility>

#include "net/xml.hpp"
#include "slip/error.hpp"
#include "slip/runtime.hpp"
#include "util/cancel.hpp"

namespace slip::net {

namespace {

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error(Errc::io, "libcurl: global initialisation failed");
  });
}

struct Context {
  const Transfer* transfer = nullptr;
  CURL* curl = nullptr;
  TransferResult* result = nullptr;
  bool headers_done = false;
  bool body_to_sink = false;
  std::exception_ptr error;
  // Stall detection: the time the byte count last moved (curl's own low-speed check averages
  // over a window and reacts several times later than asked).
  curl_off_t last_bytes = -1;
  std::chrono::steady_clock::time_point last_progress = std::chrono::steady_clock::now();
  bool stalled = false;
  // Minimum average speed over a sliding window: (time, bytes) samples, oldest first.
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::deque<std::pair<std::chrono::steady_clock::time_point, curl_off_t>> window;
  bool too_slow = false;
};

std::string to_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* ctx = static_cast<Context*>(user);
  const std::string_view line(data, size * count);
  if (line.starts_with("HTTP/")) ctx->result->headers.clear();  // a new response (redirect, 100 Continue)
  const auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
    ctx->result->headers[to_lower(std::string(line.substr(0, colon)))] = std::string(value);
  }
  return size * count;
}

size_t on_write(char* data, size_t size, size_t count, void* user) {
  auto* ctx = static_cast<Context*>(user);
  const size_t n = size * count;
  try {
    if (!ctx->headers_done) {
      ctx->headers_done = true;
      curl_easy_getinfo(ctx->curl, CURLINFO_RESPONSE_CODE, &ctx->result->status);
      ctx->body_to_sink = ctx->result->status >= 200 && ctx->result->status < 300;
      if (ctx->body_to_sink && ctx->transfer->on_headers) ctx->transfer->on_headers(ctx->result->status, ctx->result->headers);
    }
    if (ctx->body_to_sink) {
      if (ctx->transfer->on_body) ctx->transfer->on_body({data, n});
    } else if (ctx->result->error_body.size() < 65536) {
      ctx->result->error_body.append(data, std::min(n, 65536 - ctx->result->error_body.size()));
    }
  } catch (...) {
    ctx->error = std::current_exception();
    return 0;  // aborts the transfer with CURLE_WRITE_ERROR
  }
  return n;
}

int on_progress(void* user, curl_off_t, curl_off_t downloaded, curl_off_t, curl_off_t uploaded) {
  // A signal, or the call's token (a reader that stopped waiting for this download).
  const std::atomic<bool>* cancel = detail::current_cancel_flag();
  if (interrupted() || (cancel && cancel->load(std::memory_order_relaxed))) return 1;
  auto* ctx = static_cast<Context*>(user);
  const auto now = std::chrono::steady_clock::now();
  if (downloaded + uploaded != ctx->last_bytes) {
    ctx->last_bytes = downloaded + uploaded;
    ctx->last_progress = now;
  } else if (now - ctx->last_progress > std::chrono::seconds(ctx->transfer->limits.stall_timeout_s)) {
    ctx->stalled = true;
    return 1;
  }
  const TransferLimits& l = ctx->transfer->limits;
  if (l.min_speed > 0) {
    const auto span = std::chrono::seconds(l.min_speed_time_s);
    ctx->window.emplace_back(now, downloaded + uploaded);
    while (ctx->window.size() > 1 && now - ctx->window[1].first >= span) ctx->window.pop_front();
    // Judged once a whole window has passed since the start, on the bytes of the last window.
    if (now - ctx->started >= span && now - ctx->window.front().first >= span) {
      const double seconds = std::chrono::duration<double>(now - ctx->window.front().first).count();
      const double rate = static_cast<double>(downloaded + uploaded - ctx->window.front().second) / seconds;
      if (rate < static_cast<double>(l.min_speed)) {
        ctx->too_slow = true;
        return 1;
      }
    }
  }
  return 0;
}

// An S3-style error body's <Error><Code/><Message/></Error>, each cut to 300 bytes; empty
// strings when the body is not such a document (an HTML page, a truncated body).
std::pair<std::string, std::string> error_code_and_message(const std::string& body) {
  if (body.empty()) return {};
  try {
    const XmlElement doc = parse_xml(body, "error body");
    const XmlElement *code = doc.child("Code"), *message = doc.child("Message");
    return {code ? code->text.substr(0, 300) : std::string(), message ? message->text.substr(0, 300) : std::string()};
  } catch (const Error&) {
    return {};
  }
}

}  // namespace

namespace {

// Headers that carry credentials or are derived from them (SigV4's x-amz-*).
bool is_credential_header(std::string_view header) {
  std::string name(header.substr(0, header.find(':')));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name == "authorization" || name == "proxy-authorization" || name == "cookie" || name.starts_with("x-amz-");
}

TransferResult perform_once(const Transfer& transfer, const std::string& url, bool follow_redirects);

}  // namespace

TransferResult perform(const Transfer& transfer) {
  const bool has_credentials = std::any_of(transfer.request_headers.begin(), transfer.request_headers.end(),
                                           [](const std::string& h) { return is_credential_header(h); }) ||
                               (parse_url(transfer.url) && parse_url(transfer.url)->has_credentials);
  if (!has_credentials) return perform_once(transfer, transfer.url, true);
  // With credentials, redirects are followed here, and only within the origin they belong to.
  std::string url = transfer.url;
  for (int hop = 0;; ++hop) {
    TransferResult r = perform_once(transfer, url, false);
    if (r.curl != CURLE_OK || r.status < 300 || r.status >= 400 || r.redirect_url.empty()) return r;
    const auto from = parse_url(url), to = parse_url(r.redirect_url);
    if (!from || !to || from->origin() != to->origin()) {
      r.curl = CURLE_TOO_MANY_REDIRECTS;  // not transient: never retried
      r.curl_error = "HTTP " + std::to_string(r.status) + " redirects to another origin (" + redact(r.redirect_url) +
                     "); credentials are only sent to " + (from ? from->origin() : redact(url)) +
                     ": address that endpoint directly (--endpoint-url)";
      return r;
    }
    if (hop == 5) {
      r.curl = CURLE_TOO_MANY_REDIRECTS;
      r.curl_error = "more than 5 redirects";
      return r;
    }
    url = r.redirect_url;
  }
}

namespace {

TransferResult perform_once(const Transfer& transfer, const std::string& url, bool follow_redirects) {
  init_curl_once();
  TransferResult result;
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) throw Error(Errc::io, "libcurl: cannot create a transfer handle");
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(nullptr, &curl_slist_free_all);
  for (const std::string& h : transfer.request_headers) {
    curl_slist* grown = curl_slist_append(headers.get(), h.c_str());
    if (!grown) throw Error(Errc::io, "libcurl: out of memory");
    (void)headers.release();
    headers.reset(grown);
  }
  Context ctx;
  ctx.transfer = &transfer;
  ctx.curl = curl.get();
  ctx.result = &result;
  char error_text[CURL_ERROR_SIZE] = {0};
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, follow_redirects ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, transfer.limits.connect_timeout_s);
  if (transfer.limits.total_timeout_s > 0) curl_easy_setopt(h, CURLOPT_TIMEOUT, transfer.limits.total_timeout_s);
  curl_easy_setopt(h, CURLOPT_FILETIME, 1L);
  if (transfer.head_only) curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, ("slip/" + version()).c_str());
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &ctx);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &on_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &ctx);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &ctx);
  // Only the protocols slip speaks, also after redirects.
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  if (!transfer.ca_bundle.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, transfer.ca_bundle.c_str());
  result.curl = curl_easy_perform(h);
  if (ctx.error) std::rethrow_exception(ctx.error);
  throw_if_interrupted();
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &result.status);
  curl_off_t filetime = -1;
  if (curl_easy_getinfo(h, CURLINFO_FILETIME_T, &filetime) == CURLE_OK) result.filetime = filetime;
  if (!follow_redirects) {
    char* location = nullptr;
    if (curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &location) == CURLE_OK && location) result.redirect_url = location;
  }
  if (ctx.stalled) {
    result.curl = CURLE_OPERATION_TIMEDOUT;
    result.curl_error = "no data for " + std::to_string(transfer.limits.stall_timeout_s) + " s (stalled transfer)";
  } else if (ctx.too_slow) {
    result.curl = CURLE_OPERATION_TIMEDOUT;
    result.curl_error = "slower than " + std::to_string(transfer.limits.min_speed) + " bytes/s over " +
                        std::to_string(transfer.limits.min_speed_time_s) + " s (--min-speed, --min-speed-time)";
  } else if (result.curl != CURLE_OK) {
    result.curl_error = error_text[0] ? error_text : curl_easy_strerror(result.curl);
  }
  // A response without a body (304, HEAD-like, empty object) never reached on_write.
  if (result.curl == CURLE_OK && !ctx.headers_done && result.status >= 200 && result.status < 300 && transfer.on_headers)
    transfer.on_headers(result.status, result.headers);
  return result;
}

}  // namespace

bool is_transient(const TransferResult& r) {
  switch (r.curl) {
    case CURLE_OK:
      return r.status >= 500 || r.status == 429 || r.status == 408;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

std::string describe_failure(const TransferResult& r) {
  if (r.curl != CURLE_OK) return r.curl_error;
  std::string text = "HTTP " + std::to_string(r.status);
  const auto [code, message] = error_code_and_message(r.error_body);
  if (!code.empty()) text += " (" + code + (message.empty() ? "" : ": " + message) + ")";
  return text;
}

namespace {

struct CurlUrl {
  CURLU* h = curl_url();
  ~CurlUrl() { curl_url_cleanup(h); }
  CurlUrl() = default;
  CurlUrl(const CurlUrl&) = delete;
  CurlUrl& operator=(const CurlUrl&) = delete;
  std::optional<std::string> get(CURLUPart part, unsigned flags = 0) const {
    char* text = nullptr;
    if (curl_url_get(h, part, &text, flags) != CURLUE_OK || !text) return std::nullopt;
    std::string out(text);
    curl_free(text);
    return out;
  }
};

bool parse_into(CurlUrl& u, std::string_view url) {
  if (!u.h) return false;
  const std::string text(url);
  return curl_url_set(u.h, CURLUPART_URL, text.c_str(), CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK;
}

}  // namespace

std::optional<UrlParts> parse_url(std::string_view url) {
  CurlUrl u;
  if (!parse_into(u, url)) return std::nullopt;
  UrlParts p;
  p.scheme = u.get(CURLUPART_SCHEME).value_or("");
  p.host = u.get(CURLUPART_HOST).value_or("");
  p.port = u.get(CURLUPART_PORT, CURLU_DEFAULT_PORT).value_or("");
  p.path = u.get(CURLUPART_PATH).value_or("/");
  p.has_credentials = u.get(CURLUPART_USER).has_value() || u.get(CURLUPART_PASSWORD).has_value();
  if (p.host.empty()) return std::nullopt;
  return p;
}

std::string UrlParts::authority() const {
  const bool default_port = port.empty() || (scheme == "http" && port == "80") || (scheme == "https" && port == "443");
  return default_port ? host : host + ":" + port;
}

std::string UrlParts::origin() const { return scheme + "://" + host + ":" + port; }

std::string redact(std::string_view uri) {
  const auto sep = uri.find("://");
  if (sep == std::string_view::npos) return std::string(uri);  // a local path
  CurlUrl u;
  if (!parse_into(u, uri)) return std::string(uri.substr(0, sep)) + "://(malformed URL)";
  // Nothing to hide: the URI as given (it names the source in manifests and content ids).
  if (!u.get(CURLUPART_USER) && !u.get(CURLUPART_PASSWORD) && !u.get(CURLUPART_OPTIONS) && !u.get(CURLUPART_QUERY) &&
      !u.get(CURLUPART_FRAGMENT))
    return std::string(uri);
  curl_url_set(u.h, CURLUPART_USER, nullptr, 0);
  curl_url_set(u.h, CURLUPART_PASSWORD, nullptr, 0);
  curl_url_set(u.h, CURLUPART_OPTIONS, nullptr, 0);
  curl_url_set(u.h, CURLUPART_QUERY, nullptr, 0);
  curl_url_set(u.h, CURLUPART_FRAGMENT, nullptr, 0);
  return u.get(CURLUPART_URL).value_or(std::string(uri.substr(0, sep)) + "://(malformed URL)");
}

}  // namespace slip::net
