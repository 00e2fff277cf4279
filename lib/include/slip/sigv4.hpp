// slip/sigv4.hpp — AWS Signature Version 4 (header-based), as S3 and S3-compatible stores
// (MinIO, Wasabi, Ceph RGW, ...) check it. HMAC-SHA256 and SHA-256 come from OpenSSL.
//
// The signer is pure (no clock, no network): callers give the request time, so the published
// AWS examples are unit tests (tests/unit/sigv4_test.cpp).
#pragma once

// Unstable API (slip/export.hpp): the S3 signer is exported for the library's tests and tools
// and may change in any release. Not part of slip/slip.hpp.
#ifndef SLIP_UNSTABLE_API
#error "slip/sigv4.hpp is unstable API that may change in any release: define SLIP_UNSTABLE_API to use it"
#endif

#include "slip/export.hpp"
#include "slip/runtime.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

SLIP_API_BEGIN
namespace slip {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // temporary credentials (STS); sent as x-amz-security-token
};

// Credentials found the way the AWS CLI finds them: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY
// (+ AWS_SESSION_TOKEN), else the [AWS_PROFILE or "default"] section of the shared credentials
// file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials). nullopt when there are none.
// Throws Error(usage) when AWS_PROFILE names a profile the file does not have.
// The variables are looked up in `env` (process_environment() for the process's own).
std::optional<AwsCredentials> find_aws_credentials(const Environment& env);

struct SigV4Request {
  std::string method = "GET";
  std::string canonical_uri = "/";                           // the request path exactly as sent (already URI-encoded)
  std::vector<std::pair<std::string, std::string>> query;    // decoded names and values, any order
  std::vector<std::pair<std::string, std::string>> headers;  // the headers to sign (host included)
  std::string payload_sha256;                                // hex SHA-256 of the body (empty body: e3b0c442...)
  std::string amz_date;                                      // request time, "YYYYMMDDTHHMMSSZ" (UTC)
  std::string region = "us-east-1";
  std::string service = "s3";
};

struct SigV4Signature {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signed_headers;  // "host;range;x-amz-content-sha256;x-amz-date"
  std::string signature;       // 64 hex digits
  std::string authorization;   // the Authorization header value
};

SigV4Signature sign_v4(const SigV4Request& request, const AwsCredentials& credentials);

// HMAC chain "AWS4"+secret -> date -> region -> service -> "aws4_request", as hex (for tests).
std::string sigv4_signing_key_hex(std::string_view secret, std::string_view yyyymmdd, std::string_view region, std::string_view service);

// AWS's URI encoding: every byte but A-Z a-z 0-9 - . _ ~ as %XX (upper case); '/' kept when
// keep_slash (object key paths), encoded otherwise (query names and values).
std::string aws_uri_encode(std::string_view text, bool keep_slash);

// The query string as SigV4 canonicalises it (sorted by encoded name, then value), which is
// also the query string to send so that what is signed is what is sent.
std::string canonical_query_string(const std::vector<std::pair<std::string, std::string>>& query);

}  // namespace slip
SLIP_API_END
