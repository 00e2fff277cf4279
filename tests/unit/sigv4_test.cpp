// SigV4 against the examples AWS publishes with their signatures, and the S3 listing parser.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "net/download.hpp"
#include "net/http.hpp"
#include "net/s3.hpp"
#include "slip/error.hpp"
#include "slip/sigv4.hpp"

namespace {

constexpr const char* kEmpty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const slip::AwsCredentials kS3DocCredentials{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};

slip::SigV4Request s3_doc_request(std::string method, std::string uri) {
  slip::SigV4Request r;
  r.method = std::move(method);
  r.canonical_uri = std::move(uri);
  r.amz_date = "20130524T000000Z";
  r.region = "us-east-1";
  r.service = "s3";
  r.payload_sha256 = kEmpty;
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"}, {"x-amz-date", r.amz_date}, {"x-amz-content-sha256", kEmpty}};
  return r;
}

// docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html, "Example: GET Object".
TEST(SigV4, S3DocGetObjectWithRange) {
  auto r = s3_doc_request("GET", "/test.txt");
  r.headers.emplace_back("Range", "bytes=0-9");
  const auto s = slip::sign_v4(r, kS3DocCredentials);
  EXPECT_EQ(s.canonical_request,
            "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\nx-amz-content-sha256:" + std::string(kEmpty) +
                "\nx-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n" + kEmpty);
  EXPECT_EQ(s.string_to_sign,
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  EXPECT_EQ(s.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(s.authorization,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

// Same page, "Example: PUT Object": a key with '$', a Date header and a storage class.
TEST(SigV4, S3DocPutObject) {
  const std::string payload = "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072";  // "Welcome to Amazon S3."
  auto r = s3_doc_request("PUT", "/" + slip::aws_uri_encode("test$file.text", true));
  r.payload_sha256 = payload;
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
               {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
               {"x-amz-date", "20130524T000000Z"},
               {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
               {"x-amz-content-sha256", payload}};
  EXPECT_EQ(r.canonical_uri, "/test%24file.text");
  EXPECT_EQ(slip::sign_v4(r, kS3DocCredentials).signature, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

// "Example: GET Bucket Lifecycle" (a query parameter without a value).
TEST(SigV4, S3DocGetBucketLifecycle) {
  auto r = s3_doc_request("GET", "/");
  r.query = {{"lifecycle", ""}};
  EXPECT_EQ(slip::sign_v4(r, kS3DocCredentials).signature, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

// "Example: Get Bucket (List Objects)": parameters given out of order are sorted.
TEST(SigV4, S3DocListObjectsSortsQuery) {
  auto r = s3_doc_request("GET", "/");
  r.query = {{"prefix", "J"}, {"max-keys", "2"}};
  const auto s = slip::sign_v4(r, kS3DocCredentials);
  EXPECT_NE(s.canonical_request.find("\nmax-keys=2&prefix=J\n"), std::string::npos);
  EXPECT_EQ(s.signature, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

// aws-sig-v4-test-suite "get-vanilla" and "get-vanilla-query-order-key-case" (service "service").
TEST(SigV4, TestSuiteGetVanilla) {
  const slip::AwsCredentials creds{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
  slip::SigV4Request r;
  r.method = "GET";
  r.canonical_uri = "/";
  r.amz_date = "20150830T123600Z";
  r.region = "us-east-1";
  r.service = "service";
  r.payload_sha256 = kEmpty;
  r.headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}};
  EXPECT_EQ(slip::sign_v4(r, creds).signature, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  r.query = {{"Param2", "value2"}, {"Param1", "value1"}};
  EXPECT_EQ(slip::sign_v4(r, creds).signature, "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

// "Examples of how to derive a signing key" (IAM docs).
TEST(SigV4, DerivedSigningKey) {
  EXPECT_EQ(slip::sigv4_signing_key_hex("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20120215", "us-east-1", "iam"),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d");
}

TEST(SigV4, HeaderValuesTrimmedAndNamesLowered) {
  auto a = s3_doc_request("GET", "/k");
  auto b = a;
  b.headers = {{"  HOST ", "  examplebucket.s3.amazonaws.com  "}, {"X-Amz-Date", "20130524T000000Z"}, {"X-AMZ-Content-SHA256", kEmpty}};
  EXPECT_EQ(slip::sign_v4(a, kS3DocCredentials).signature, slip::sign_v4(b, kS3DocCredentials).signature);
  a.headers.emplace_back("x-custom", "a   b\tc");
  EXPECT_NE(slip::sign_v4(a, kS3DocCredentials).canonical_request.find("x-custom:a b c\n"), std::string::npos);
}

TEST(SigV4, UriEncoding) {
  EXPECT_EQ(slip::aws_uri_encode("photos/été 2013/a+b (1)~x_y-z.jpg", true), "photos/%C3%A9t%C3%A9%202013/a%2Bb%20%281%29~x_y-z.jpg");
  EXPECT_EQ(slip::aws_uri_encode("a/b=c&d", false), "a%2Fb%3Dc%26d");
  EXPECT_EQ(slip::canonical_query_string({{"prefix", "a b/"}, {"list-type", "2"}, {"continuation-token", "x+y="}}),
            "continuation-token=x%2By%3D&list-type=2&prefix=a%20b%2F");
}

TEST(SigV4, RejectsMalformedDate) {
  auto r = s3_doc_request("GET", "/");
  r.amz_date = "2013-05-24";
  EXPECT_THROW(slip::sign_v4(r, kS3DocCredentials), slip::Error);
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(AwsCredentials, EnvironmentThenProfileFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("slip-creds-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "credentials";
  std::ofstream(file) << "# comment\n[default]\naws_access_key_id = AKDEFAULT\naws_secret_access_key = s-default\n\n"
                         "[team]\naws_access_key_id=AKTEAM\naws_secret_access_key=s-team\naws_session_token = tok\n[broken]\n"
                         "aws_access_key_id = only\n";
  ScopedEnv f("AWS_SHARED_CREDENTIALS_FILE", file.c_str());
  {
    ScopedEnv a("AWS_ACCESS_KEY_ID", "AKENV"), s("AWS_SECRET_ACCESS_KEY", "s-env"), p("AWS_PROFILE", nullptr);
    const auto c = slip::find_aws_credentials(slip::process_environment());
    ASSERT_TRUE(c);
    EXPECT_EQ(c->access_key_id, "AKENV");
    EXPECT_EQ(c->secret_access_key, "s-env");
  }
  {
    ScopedEnv a("AWS_ACCESS_KEY_ID", nullptr), s("AWS_SECRET_ACCESS_KEY", nullptr), p("AWS_PROFILE", nullptr);
    EXPECT_EQ(slip::find_aws_credentials(slip::process_environment())->access_key_id, "AKDEFAULT");
  }
  {
    ScopedEnv a("AWS_ACCESS_KEY_ID", "AKENV"), s("AWS_SECRET_ACCESS_KEY", "s-env"), p("AWS_PROFILE", "team");
    EXPECT_EQ(slip::find_aws_credentials(slip::process_environment())->access_key_id, "AKENV");  // as botocore: the environment wins
  }
  {
    ScopedEnv a("AWS_ACCESS_KEY_ID", nullptr), s("AWS_SECRET_ACCESS_KEY", nullptr), p("AWS_PROFILE", "team");
    const auto c = slip::find_aws_credentials(slip::process_environment());
    EXPECT_EQ(c->access_key_id, "AKTEAM");
    EXPECT_EQ(c->session_token, "tok");
  }
  {
    ScopedEnv p("AWS_PROFILE", "nosuch");
    EXPECT_THROW(slip::find_aws_credentials(slip::process_environment()), slip::Error);
  }
  {
    ScopedEnv p("AWS_PROFILE", "broken");
    EXPECT_THROW(slip::find_aws_credentials(slip::process_environment()), slip::Error);
  }
  std::filesystem::remove_all(dir);
}

TEST(S3Listing, ParsesPagesEntitiesAndTokens) {
  const auto page = slip::net::parse_list_objects_v2(
      R"(<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">)"
      R"(<Name>b</Name><Prefix>d/</Prefix><KeyCount>2</KeyCount><IsTruncated>true</IsTruncated>)"
      R"(<Contents><Key>d/a&amp;b &#233;.tar</Key><LastModified>2024-01-01T00:00:00.000Z</LastModified>)"
      R"(<ETag>&quot;0123456789abcdef0123456789abcdef&quot;</ETag><Size>1234</Size></Contents>)"
      R"(<Contents><Key>d/c.tar</Key><ETag>"x-2"</ETag><Size>0</Size></Contents>)"
      R"(<NextContinuationToken>1/abc+=</NextContinuationToken></ListBucketResult>)");
  ASSERT_EQ(page.objects.size(), 2u);
  EXPECT_EQ(page.objects[0].key, "d/a&b \xC3\xA9.tar");
  EXPECT_EQ(page.objects[0].size, 1234u);
  EXPECT_EQ(page.objects[0].etag, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(page.objects[1].etag, "x-2");
  EXPECT_EQ(page.objects[0].last_modified, 1704067200);  // date -u -d 2024-01-01 +%s
  EXPECT_EQ(page.objects[1].last_modified, std::nullopt);
  EXPECT_EQ(page.next_token, "1/abc+=");
}

TEST(S3Listing, LastModifiedIsWholeSecondsOrNothing) {
  auto modified = [](const std::string& text) {
    return slip::net::parse_list_objects_v2("<ListBucketResult><Contents><Key>k</Key><Size>1</Size><LastModified>" + text +
                                            "</LastModified></Contents></ListBucketResult>")
        .objects.at(0)
        .last_modified;
  };
  EXPECT_EQ(modified("2026-11-25T17:40:12.999Z"), 1795628412);  // the fraction is dropped, as in an HTTP date
  EXPECT_EQ(modified("2026-11-25T17:40:12Z"), 1795628412);
  for (const char* bad : {"", "2026-11-25", "2026-11-25T17:40:12", "2026-11-25T17:40:12+01:00", "2026-13-25T17:40:12Z",
                          "2026-11-25T17:40:12.Z", "2026-11-25T17:40:12.5Zjunk", "1969-12-31T23:59:59Z"})
    EXPECT_EQ(modified(bad), std::nullopt) << bad;
}

TEST(S3Listing, RejectsMalformedResponses) {
  using slip::net::parse_list_objects_v2;
  EXPECT_THROW(parse_list_objects_v2("<Error><Code>AccessDenied</Code></Error>"), slip::Error);
  EXPECT_THROW(parse_list_objects_v2("<ListBucketResult><Contents><Key>k</Key></Contents></ListBucketResult>"), slip::Error);
  EXPECT_THROW(parse_list_objects_v2("<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>"), slip::Error);
  EXPECT_THROW(parse_list_objects_v2("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>"), slip::Error);
  EXPECT_THROW(parse_list_objects_v2("<ListBucketResult><Contents><Key>&bogus;</Key><Size>1</Size></Contents></ListBucketResult>"),
               slip::Error);
}

TEST(S3Listing, RefusesDtdsEntityExpansionAndDeepNesting) {
  using slip::net::parse_list_objects_v2;
  const auto message = [](const std::string& xml) {
    try {
      parse_list_objects_v2(xml);
    } catch (const slip::Error& e) {
      EXPECT_EQ(e.code(), slip::Errc::bad_input);
      return std::string(e.what());
    }
    return std::string("parsed");
  };
  // Billion laughs: refused at the DOCTYPE, before any entity is defined.
  std::string laughs = "<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY l0 \"lol\">";
  for (int i = 1; i < 10; ++i) {
    laughs += "<!ENTITY l" + std::to_string(i) + " \"";
    for (int k = 0; k < 10; ++k) laughs += "&l" + std::to_string(i - 1) + ";";
    laughs += "\">";
  }
  laughs += "]><ListBucketResult><Contents><Key>&l9;</Key><Size>1</Size></Contents></ListBucketResult>";
  EXPECT_NE(message(laughs).find("DTD"), std::string::npos) << message(laughs);
  // An external entity (XXE) never reads a file.
  EXPECT_NE(message("<!DOCTYPE r [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><ListBucketResult><Contents><Key>&x;</Key>"
                    "<Size>1</Size></Contents></ListBucketResult>")
                .find("DTD"),
            std::string::npos);
  std::string deep = "<ListBucketResult>";
  for (int i = 0; i < 100; ++i) deep += "<a>";
  EXPECT_NE(message(deep).find("nested deeper"), std::string::npos) << message(deep);
  EXPECT_NE(message("<ListBucketResult><Contents>").find("not well-formed"), std::string::npos);
  EXPECT_NE(message("").find("not well-formed"), std::string::npos);
  EXPECT_NE(message("<ListBucketResult><Contents><Key>&#0;</Key><Size>1</Size></Contents></ListBucketResult>").find("not well-formed"),
            std::string::npos);
}

TEST(S3Listing, ErrorBodiesNameTheirCode) {
  slip::net::TransferResult r;
  r.status = 403;
  r.error_body = R"(<?xml version="1.0" encoding="UTF-8"?>)"
                 "\n<Error><Code>AccessDenied</Code><Message>Access &amp; Denied</Message><RequestId>1</RequestId></Error>";
  EXPECT_NE(slip::net::describe_failure(r).find("(AccessDenied: Access & Denied)"), std::string::npos) << slip::net::describe_failure(r);
  r.error_body = "<html><body>not XML<br></body></html>";
  EXPECT_EQ(slip::net::describe_failure(r).find('('), std::string::npos) << slip::net::describe_failure(r);
}

TEST(RemoteUris, RedactionAndLocalPaths) {
  EXPECT_EQ(slip::net::redact("https://user:secret@host:8443/a/b.tar?X-Amz-Signature=abc"), "https://host:8443/a/b.tar");
  EXPECT_EQ(slip::net::redact("s3://bucket/key"), "s3://bucket/key");
  const std::filesystem::path d = "/dl";
  EXPECT_EQ(slip::net::local_path_for(d, "s3", "bucket", "a/b/c.tar"), "/dl/s3/bucket/a/b/c.tar");
  EXPECT_EQ(slip::net::local_path_for(d, "http", "h:8080", "/x/y.beton"), "/dl/http/h_8080/x/y.beton");
  for (const char* bad : {"../etc/passwd", "a/../../b", "a//b", "./a", ""})
    EXPECT_THROW(slip::net::local_path_for(d, "s3", "bucket", bad), slip::Error) << bad;
}

}  // namespace
