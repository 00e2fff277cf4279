// Internal: the little of the S3 API slip needs — signed GETs of objects and ListObjectsV2.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "net/http.hpp"
#include "slip/transport.hpp"
#include "slip/sigv4.hpp"

namespace slip::net {

struct S3Location {
  std::string bucket;
  std::string key;  // may be empty or end with '/'
};
// "s3://bucket/key/parts" -> {bucket, key}. Throws Error(usage).
S3Location parse_s3_uri(std::string_view uri);

struct S3Object {
  std::string key;
  uint64_t size = 0;
  std::string etag;  // without quotes
  // LastModified in whole seconds since the epoch (what a GET's Last-Modified header says, and
  // so the mtime a download gets); nullopt when absent or not an ISO 8601 UTC time.
  std::optional<int64_t> last_modified;
};

// The ListObjectsV2 response body: its objects, and the token of the next page if truncated.
struct S3ListPage {
  std::vector<S3Object> objects;
  std::optional<std::string> next_token;
};
// Throws Error(bad_input) for a body that is not a well-formed ListBucketResult (net/xml.hpp:
// no DTD, bounded depth).
S3ListPage parse_list_objects_v2(std::string_view xml);

class S3Client {
 public:
  explicit S3Client(const TransportOptions& options);

  // A GET of bucket/key, signed now (unless anonymous); extra headers ("Range: ...") unsigned.
  Transfer get_object(const std::string& bucket, const std::string& key, std::vector<std::string> extra_headers = {}) const;
  // Every object under `prefix` (all pages), retried like downloads.
  std::vector<S3Object> list(const std::string& bucket, const std::string& prefix) const;
  // "s3://bucket/key" for messages.
  static std::string uri(const std::string& bucket, const std::string& key) { return "s3://" + bucket + "/" + key; }

 private:
  Transfer signed_get(const std::string& bucket, const std::string& key, const std::vector<std::pair<std::string, std::string>>& query,
                      std::vector<std::string> extra_headers) const;
  TransportOptions options_;
  std::string scheme_;     // "http" or "https"
  std::string authority_;  // host[:port] as sent in Host
  std::string base_path_;  // endpoint path prefix, no trailing '/'
  bool path_style_ = true;
  std::string region_;
  std::optional<AwsCredentials> credentials_;
};

}  // namespace slip::net
