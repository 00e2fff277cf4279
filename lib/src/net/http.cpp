#include "net/http.hpp"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>

#include "slip/error.hpp"
#include "slip/runtime.hpp"

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
  if (interrupted()) return 1;
  auto* ctx = static_cast<Context*>(user);
  const auto now = std::chrono::steady_clock::now();
  if (downloaded + uploaded != ctx->last_bytes) {
    ctx->last_bytes = downloaded + uploaded;
    ctx->last_progress = now;
  } else if (now - ctx->last_progress > std::chrono::seconds(ctx->transfer->limits.stall_timeout_s)) {
    ctx->stalled = true;
    return 1;
  }
  return 0;
}

std::string xml_tag(const std::string& xml, const std::string& tag) {
  const auto a = xml.find("<" + tag + ">");
  if (a == std::string::npos) return {};
  const auto start = a + tag.size() + 2;
  const auto b = xml.find("</" + tag + ">", start);
  return b == std::string::npos ? std::string() : xml.substr(start, std::min<size_t>(b - start, 300));
}

}  // namespace

TransferResult perform(const Transfer& transfer) {
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
  curl_easy_setopt(h, CURLOPT_URL, transfer.url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, transfer.limits.connect_timeout_s);
  curl_easy_setopt(h, CURLOPT_FILETIME, 1L);
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
  if (const char* ca = std::getenv("CURL_CA_BUNDLE"); ca && *ca) curl_easy_setopt(h, CURLOPT_CAINFO, ca);
  result.curl = curl_easy_perform(h);
  if (ctx.error) std::rethrow_exception(ctx.error);
  throw_if_interrupted();
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &result.status);
  curl_off_t filetime = -1;
  if (curl_easy_getinfo(h, CURLINFO_FILETIME_T, &filetime) == CURLE_OK) result.filetime = filetime;
  if (ctx.stalled) {
    result.curl = CURLE_OPERATION_TIMEDOUT;
    result.curl_error = "no data for " + std::to_string(transfer.limits.stall_timeout_s) + " s (stalled transfer)";
  } else if (result.curl != CURLE_OK) {
    result.curl_error = error_text[0] ? error_text : curl_easy_strerror(result.curl);
  }
  // A response without a body (304, HEAD-like, empty object) never reached on_write.
  if (result.curl == CURLE_OK && !ctx.headers_done && result.status >= 200 && result.status < 300 && transfer.on_headers)
    transfer.on_headers(result.status, result.headers);
  return result;
}

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
  const std::string code = xml_tag(r.error_body, "Code"), message = xml_tag(r.error_body, "Message");
  if (!code.empty()) text += " (" + code + (message.empty() ? "" : ": " + message) + ")";
  return text;
}

std::string redact(std::string_view uri) {
  std::string out(uri);
  if (const auto q = out.find('?'); q != std::string::npos) out.resize(q);
  if (const auto scheme = out.find("://"); scheme != std::string::npos) {
    const auto host_start = scheme + 3;
    const auto slash = out.find('/', host_start);
    const auto at = out.rfind('@', slash == std::string::npos ? out.size() : slash);
    if (at != std::string::npos && at >= host_start) out.erase(host_start, at + 1 - host_start);
  }
  return out;
}

}  // namespace slip::net
