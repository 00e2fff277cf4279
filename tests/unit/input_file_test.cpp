// InputFile: sources read with pread, so a file truncated by another process while it is read
// is an error naming the file and the offset (a mapping would raise SIGBUS).
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "test_support.hpp"
#include "util/file_io.hpp"

namespace slip::detail {
namespace {

TEST(InputFile, ReadsAtOffsetsAndHashesLikeTheBytes) {
  test::TempDir dir;
  const auto path = dir.path() / "f.bin";
  std::string data(3 << 20, '\0');  // over the 1 MiB hashing block, not a multiple of it
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + i / 4096);
  data.resize(data.size() - 12345);
  std::ofstream(path, std::ios::binary) << data;
  const InputFile f(path);
  ASSERT_EQ(f.size(), data.size());
  std::vector<std::byte> got(100);
  f.read_at(2'000'000, got);
  EXPECT_EQ(0, std::memcmp(got.data(), data.data() + 2'000'000, got.size()));
  EXPECT_EQ(f.sha256_hex(), sha256_hex(std::as_bytes(std::span(data.data(), data.size()))));
  EXPECT_EQ(f.md5_hex(), md5_hex(std::as_bytes(std::span(data.data(), data.size()))));
  const auto abc = dir.path() / "abc";
  std::ofstream(abc, std::ios::binary) << "abc";
  EXPECT_EQ(InputFile(abc).md5_hex(), "900150983cd24fb0d6963f7d28e17f72");  // RFC 1321's test suite
}

TEST(InputFile, TruncatedWhileOpenIsBadInputNamingFileAndOffset) {
  test::TempDir dir;
  const auto path = dir.path() / "cut.beton";
  std::ofstream(path, std::ios::binary) << std::string(10000, 'x');
  const InputFile f(path);
  ASSERT_EQ(0, ::truncate(path.c_str(), 4000));  // another process cuts it after the open
  std::vector<std::byte> got(2000);
  try {
    f.read_at(3000, got);
    FAIL() << "a short read was not an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::bad_input);
    EXPECT_EQ(e.offset(), std::optional<uint64_t>(4000));
    EXPECT_NE(e.describe().find("cut.beton"), std::string::npos) << e.describe();
    EXPECT_NE(e.describe().find("truncated while being read"), std::string::npos) << e.describe();
  }
  EXPECT_THROW((void)f.md5_hex(), Error);  // (the S3 download check: an error, not SIGBUS)
}

}  // namespace
}  // namespace slip::detail
