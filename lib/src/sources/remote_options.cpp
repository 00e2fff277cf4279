// RemoteOptions and URI helpers of slip/remote.hpp (sources layer: they read SourceOptions; the
// network layer below takes TransportOptions). Which files a remote dataset needs
// (fetch_remote) is the sources' business: sources/remote_fetch.cpp; net/ only gets URLs.
#include <cstdlib>
#include <string>

#include "net/download.hpp"
#include "slip/runtime.hpp"
#include "slip/error.hpp"
#include "slip/remote.hpp"
#include "util/untrusted.hpp"

namespace slip {

namespace fs = std::filesystem;

namespace {

double parse_double(const std::string& flag, const std::string& text, double lo, double hi) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(v >= lo && v <= hi))
    throw Error(Errc::usage, flag + " wants a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got \"" + text + "\"");
  return v;
}

}  // namespace

bool is_remote_uri(std::string_view uri) { return uri.starts_with("s3://") || uri.starts_with("http://") || uri.starts_with("https://"); }

std::string redact_uri(std::string_view uri) { return net::redact(uri); }

fs::path RemoteOptions::resolved_download_dir() const {
  if (!download_dir.empty()) return fs::absolute(download_dir);
  if (!env_value(environment, "SLIPSTREAM_CACHE_DIR") && !env_value(environment, "HOME"))
    throw Error(Errc::usage, "no download directory: set SLIPSTREAM_CACHE_DIR or HOME, or pass --download-dir");
  return default_cache_root(environment) / "downloads";
}

RemoteOptions RemoteOptions::from_settings(const SourceOptions& options) {
  RemoteOptions r;
  r.environment = options.environment;
  if (auto v = options.get("download-dir")) r.download_dir = *v;
  if (auto v = options.get("jobs")) r.jobs = static_cast<unsigned>(parse_double("--jobs", *v, 1, 256));
  if (auto v = options.get("endpoint-url")) r.endpoint_url = *v;
  if (auto v = options.get("no-sign-request")) r.no_sign_request = *v != "0" && *v != "false";
  if (auto v = options.get("retries")) r.retry.attempts = 1 + static_cast<unsigned>(parse_double("--retries", *v, 0, 100));
  if (auto v = options.get("retry-delay")) r.retry.initial_delay_s = parse_double("--retry-delay", *v, 0, 3600);
  if (auto v = options.get("connect-timeout")) r.connect_timeout_s = static_cast<long>(parse_double("--connect-timeout", *v, 1, 3600));
  if (auto v = options.get("stall-timeout")) r.stall_timeout_s = static_cast<long>(parse_double("--stall-timeout", *v, 1, 3600));
  if (auto v = options.get("min-speed")) r.min_speed = static_cast<uint64_t>(parse_double("--min-speed", *v, 0, 1e12));
  if (auto v = options.get("min-speed-time")) r.min_speed_time_s = static_cast<long>(parse_double("--min-speed-time", *v, 1, 3600));
  if (auto v = options.get("timeout")) r.total_timeout_s = static_cast<long>(parse_double("--timeout", *v, 1, 864000));
  if (auto v = options.get("max-list-keys")) r.max_list_keys = static_cast<uint64_t>(parse_double("--max-list-keys", *v, 1, 1e12));
  if (auto v = options.get("max-download-bytes")) {
    const auto bytes = detail::parse_decimal<uint64_t>(*v);
    if (!bytes || *bytes == 0) throw Error(Errc::usage, "--max-download-bytes wants a positive byte count, got \"" + *v + "\"");
    r.max_download_bytes = *bytes;
  }
  return r;
}

}  // namespace slip
