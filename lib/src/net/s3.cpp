#include "net/s3.hpp"

#include <set>

#include <cstdlib>
#include <ctime>

#include "net/retry.hpp"
#include "net/xml.hpp"
#include "slip/error.hpp"
#include "slip/runtime.hpp"
#include "slip/hash.hpp"
#include "util/untrusted.hpp"

namespace slip::net {

namespace {

constexpr const char* kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string amz_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[20];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

// Bucket names that can be a DNS label under the AWS endpoint (no dots: TLS wildcard certs).
bool virtual_host_ok(const std::string& bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  for (char c : bucket)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-')) return false;
  return bucket.front() != '-' && bucket.back() != '-';
}

}  // namespace

S3Location parse_s3_uri(std::string_view uri) {
  if (!uri.starts_with("s3://")) throw Error(Errc::usage, "not an s3:// URI: " + std::string(uri));
  std::string_view rest = uri.substr(5);
  const auto slash = rest.find('/');
  S3Location loc{std::string(rest.substr(0, slash)), slash == std::string_view::npos ? "" : std::string(rest.substr(slash + 1))};
  if (loc.bucket.empty()) throw Error(Errc::usage, "s3:// URI without a bucket: " + std::string(uri));
  return loc;
}

namespace {

// "2026-11-25T17:40:12.345Z" (fraction optional) as seconds since the epoch, the fraction
// dropped as HTTP dates drop it.
std::optional<int64_t> parse_iso8601_utc(const std::string& text) {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute, &second, &consumed) != 6)
    return std::nullopt;
  std::string_view rest = std::string_view(text).substr(static_cast<size_t>(consumed));
  if (rest.starts_with('.')) {
    rest.remove_prefix(1);
    const size_t digits = rest.find_first_not_of("0123456789");
    if (digits == 0 || digits == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(digits);
  }
  if (rest != "Z" || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60 || year < 1970)
    return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<int64_t>(::timegm(&tm));
}

}  // namespace

S3ListPage parse_list_objects_v2(std::string_view xml) {
  constexpr std::string_view kWhat = "S3 listing";
  const XmlElement doc = parse_xml(xml, kWhat);
  if (doc.name != "ListBucketResult") throw Error(Errc::bad_input, "S3 listing: the response is not a ListBucketResult");
  S3ListPage page;
  for (const XmlElement& contents : doc.children) {
    if (contents.name != "Contents") continue;
    const XmlElement *key = contents.child("Key"), *size = contents.child("Size"), *etag = contents.child("ETag");
    if (!key || !size) throw Error(Errc::bad_input, "S3 listing: an object without Key or Size");
    S3Object o;
    o.key = key->text;
    const std::string& size_text = size->text;
    // Digits within 64 bits (strtoull saturated 10^30 to 2^64-1 without a word).
    const auto parsed_size = detail::parse_decimal<uint64_t>(size_text);
    if (!parsed_size) throw Error(Errc::bad_input, "S3 listing: bad Size \"" + detail::escape_for_terminal(size_text) + "\"");
    o.size = *parsed_size;
    if (const XmlElement* modified = contents.child("LastModified")) o.last_modified = parse_iso8601_utc(modified->text);
    if (etag) {
      o.etag = etag->text;
      if (o.etag.size() >= 2 && o.etag.front() == '"' && o.etag.back() == '"') o.etag = o.etag.substr(1, o.etag.size() - 2);
    }
    page.objects.push_back(std::move(o));
  }
  const XmlElement* truncated = doc.child("IsTruncated");
  if (truncated && truncated->text == "true") {
    const XmlElement* token = doc.child("NextContinuationToken");
    if (!token || token->text.empty()) throw Error(Errc::bad_input, "S3 listing: truncated without a NextContinuationToken");
    page.next_token = token->text;
  }
  return page;
}

S3Client::S3Client(const TransportOptions& options) : options_(options) {
  const auto env = [&](const char* name) { return env_value(options.environment, name).value_or(""); };
  region_ = env("AWS_REGION");
  if (region_.empty()) region_ = env("AWS_DEFAULT_REGION");
  if (region_.empty()) region_ = "us-east-1";
  std::string endpoint = options.endpoint_url;
  for (const char* name : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "S3_ENDPOINT_URL"})
    if (endpoint.empty()) endpoint = env(name);
  if (endpoint.empty()) {
    scheme_ = "https";
    authority_ = "s3." + region_ + ".amazonaws.com";
    path_style_ = false;
  } else {
    const auto sep = endpoint.find("://");
    if (sep == std::string::npos) throw Error(Errc::usage, "S3 endpoint must be http://host[:port] or https://...: " + endpoint);
    scheme_ = endpoint.substr(0, sep);
    if (scheme_ != "http" && scheme_ != "https") throw Error(Errc::usage, "S3 endpoint must use http or https: " + endpoint);
    const std::string rest = endpoint.substr(sep + 3);
    const auto slash = rest.find('/');
    authority_ = rest.substr(0, slash);
    if (slash != std::string::npos) base_path_ = rest.substr(slash);
    while (!base_path_.empty() && base_path_.back() == '/') base_path_.pop_back();
    if (authority_.empty()) throw Error(Errc::usage, "S3 endpoint without a host: " + endpoint);
    // Drop default ports: curl's Host header omits them, and the signature covers Host.
    if ((scheme_ == "http" && authority_.ends_with(":80")) || (scheme_ == "https" && authority_.ends_with(":443")))
      authority_ = authority_.substr(0, authority_.rfind(':'));
    path_style_ = true;
  }
  if (!options.no_sign_request) credentials_ = find_aws_credentials(options.environment);
  if (!options.no_sign_request && !credentials_)
    throw Error(Errc::usage,
                "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (~/.aws/credentials), "
                "or pass --no-sign-request for a public bucket");
}

Transfer S3Client::signed_get(const std::string& bucket, const std::string& key,
                              const std::vector<std::pair<std::string, std::string>>& query, std::vector<std::string> extra_headers) const {
  const bool vhost = !path_style_ && virtual_host_ok(bucket);
  const std::string host = vhost ? bucket + "." + authority_ : authority_;
  const std::string path = base_path_ + (vhost ? "" : "/" + aws_uri_encode(bucket, false)) + "/" + aws_uri_encode(key, true);
  const std::string qs = canonical_query_string(query);
  Transfer t;
  t.url = scheme_ + "://" + host + path + (qs.empty() ? "" : "?" + qs);
  t.limits = {options_.connect_timeout_s, options_.stall_timeout_s, options_.min_speed, options_.min_speed_time_s,
              options_.total_timeout_s};
  t.request_headers = std::move(extra_headers);
  t.ca_bundle = env_value(options_.environment, "CURL_CA_BUNDLE").value_or("");
  if (credentials_) {
    SigV4Request r;
    r.method = "GET";
    r.canonical_uri = path;
    r.query = query;
    r.amz_date = amz_now();
    r.payload_sha256 = kEmptySha256;
    r.region = region_;
    r.headers = {{"host", host}, {"x-amz-content-sha256", kEmptySha256}, {"x-amz-date", r.amz_date}};
    if (!credentials_->session_token.empty()) r.headers.emplace_back("x-amz-security-token", credentials_->session_token);
    const SigV4Signature s = sign_v4(r, *credentials_);
    for (const auto& [name, value] : r.headers)
      if (name != "host") t.request_headers.push_back(name + std::string(": ") += value);
    t.request_headers.push_back("Authorization: " + s.authorization);
  }
  return t;
}

Transfer S3Client::get_object(const std::string& bucket, const std::string& key, std::vector<std::string> extra_headers) const {
  return signed_get(bucket, key, {}, std::move(extra_headers));
}

std::vector<S3Object> S3Client::list(const std::string& bucket, const std::string& prefix) const {
  std::vector<S3Object> all;
  std::optional<std::string> token;
  std::set<std::string> tokens_seen;  // a server whose tokens cycle (A, B, A, ...) is refused
  const std::string where = uri(bucket, prefix);
  for (uint64_t page = 0;; ++page) {
    throw_if_interrupted();
    throw_if_interrupted();
    // Pages hold up to 1,000 keys; a server sending near-empty pages forever is stopped too.
    const uint64_t max_pages = std::max<uint64_t>(1000, options_.max_list_keys / 100);
    if (page >= max_pages)
      throw Error(Errc::bad_input, "S3 listing: more than " + std::to_string(max_pages) + " pages (--max-list-keys bounds a listing)")
          .with_path(where);
    std::vector<std::pair<std::string, std::string>> query = {{"list-type", "2"}, {"prefix", prefix}};
    if (token) query.emplace_back("continuation-token", *token);
    std::string body;
    TransferResult r;
    for (unsigned attempt = 0;; ++attempt) {
      Transfer t = signed_get(bucket, "", query, {});
      body.clear();
      t.on_body = [&body](std::span<const char> bytes) {
        if (body.size() + bytes.size() > (64u << 20)) throw Error(Errc::bad_input, "S3 listing: a page larger than 64 MiB");
        body.append(bytes.data(), bytes.size());
      };
      r = perform(t);
      if (r.ok()) break;
      if (!is_transient(r)) throw Error(Errc::io, "listing failed: " + describe_failure(r)).with_path(where);
      if (attempt + 1 >= options_.retry.attempts)
        throw Error(Errc::retryable,
                    "listing failed after " + std::to_string(options_.retry.attempts) + " attempts: " + describe_failure(r))
            .with_path(where);
      wait_before_retry(options_.retry, attempt + 1, &r.headers);
    }
    S3ListPage p = [&] {
      try {
        return parse_list_objects_v2(body);
      } catch (Error& e) {
        throw e.with_path(where);
      }
    }();
    if (p.next_token && (p.next_token->empty() || !tokens_seen.insert(*p.next_token).second))
      throw Error(Errc::bad_input,
                  "S3 listing: the server repeated a continuation token (page " + std::to_string(page + 1) + "): it would list forever")
          .with_path(where);
    // ListObjectsV2 lists keys in ascending (UTF-8 byte) order across all pages: a key that is
    // not after the one before it is a page repeated (under a new token) or a hostile listing,
    // refused at once rather than after --max-list-keys of repeats.
    for (auto& o : p.objects) {
      if (!all.empty() && o.key <= all.back().key)
        throw Error(Errc::bad_input, "S3 listing: key \"" + detail::escape_for_terminal(o.key) + "\" on page " + std::to_string(page + 1) +
                                         " is not after \"" + detail::escape_for_terminal(all.back().key) +
                                         "\" (keys come in order): the server repeats or reorders its listing")
            .with_path(where);
      all.push_back(std::move(o));
    }
    if (all.size() > options_.max_list_keys)
      throw Error(Errc::bad_input, "S3 listing: more than " + std::to_string(options_.max_list_keys) + " keys (raise --max-list-keys)")
          .with_path(where);
    if (!p.next_token) break;
    token = std::move(p.next_token);
  }
  return all;
}

}  // namespace slip::net
