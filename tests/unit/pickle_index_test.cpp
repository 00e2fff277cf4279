// *_index.npy pickles read without running them (format/pickle_index.hpp): slip's writer,
// the Python slipstream's fixture, and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "format/pickle_index.hpp"
#include "slip/error.hpp"
#include "slip/index.hpp"
#include "slip/npy.hpp"
#include "test_support.hpp"
#include "util/file_io.hpp"

namespace slip::detail {
namespace {

std::span<const std::byte> bytes_of(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

std::string header() { return npy_header("'|O'", std::span<const uint64_t>{}); }

void expect_refused(const std::string& pickle, const std::string& why) {
  try {
    (void)read_pickled_index(bytes_of(header() + pickle), "x_index.npy");
    ADD_FAILURE() << "accepted: " << why;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::bad_input);
    EXPECT_NE(e.message().find(why), std::string::npos) << e.message();
  }
}

TEST(PickledIndex, ReadsWhatSlipWritesForIntFloatAndStrKeys) {
  FieldIndex idx;
  idx.key_type = FieldType::int64;
  idx.int_keys = {-5, 0, 300, 70000, int64_t{1} << 40, INT64_MIN};
  idx.offsets = {0, 1, 3, 3, 4, 5, 6};
  idx.ids = {7, 1, 2, 9, 4, 5};
  PickledIndex got = read_pickled_index(bytes_of(pickled_index_npy(idx)), "i");
  ASSERT_EQ(got.keys.size(), 6u);
  for (size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(std::get<int64_t>(got.keys[k]), idx.int_keys[k]);
    const auto want = idx.ids_of(k);
    EXPECT_EQ(got.ids[k], std::vector<int64_t>(want.begin(), want.end()));
  }
  idx.key_type = FieldType::float64;
  idx.float_keys = {-1.5, 0.0, 2.25, 1e300, -0.0, std::nan("")};
  got = read_pickled_index(bytes_of(pickled_index_npy(idx)), "f");
  EXPECT_EQ(std::get<double>(got.keys[2]), 2.25);
  EXPECT_TRUE(std::isnan(std::get<double>(got.keys[5])));
  idx.key_type = FieldType::str;
  idx.str_keys = {"a", "äpfel", std::string(300, 'z'), "", "n01440764", "x"};
  got = read_pickled_index(bytes_of(pickled_index_npy(idx)), "s");
  EXPECT_EQ(std::get<std::string>(got.keys[1]), "äpfel");
  EXPECT_EQ(std::get<std::string>(got.keys[2]), std::string(300, 'z'));
}

TEST(PickledIndex, ReadsThePythonSlipstreamFixture) {
  SLIP_REQUIRE_SHARED();
  const auto path = test::shared_dir() / "fixtures/pyslipstream/slipcache-3131b662/label_index.npy";
  const MappedFile f(path);
  const PickledIndex got = read_pickled_index(f.bytes(), path.string());
  ASSERT_EQ(got.keys.size(), 3u);
  for (int64_t k = 0; k < 3; ++k) {
    EXPECT_EQ(std::get<int64_t>(got.keys[static_cast<size_t>(k)]), k);
    std::vector<int64_t> want;
    for (int64_t i = 8 * k; i < 8 * k + 8; ++i) want.push_back(i);
    EXPECT_EQ(got.ids[static_cast<size_t>(k)], want);
  }
}

TEST(PickledIndex, RefusesCallsOpcodesAndShapesNumpyNeverWrites) {
  expect_refused(
      "\x80\x03"
      "cposix\nsystem\nX\x02\x00\x00\x00id\x85R.",
      "calls posix.system");
  expect_refused(
      "\x80\x04\x8c\x08"
      "builtins\x8c\x04"
      "eval\x93.",
      "calls builtins.eval");
  expect_refused("\x80\x02(i__builtin__\nobject\n.", "opcode 0x69");
  expect_refused("\x80\x05.", "protocol 5");
  expect_refused("cposix\nsystem\n.", "PROTO");
  expect_refused("\x80\x03K\x01", "ends without STOP");
  expect_refused("\x80\x03K\x01.junk", "after STOP");
  expect_refused("\x80\x03K\x01.", "not a 0-d object array");
  expect_refused("\x80\x03h\x05.", "never stored");
  expect_refused(
      "\x80\x03\x8a\x09"
      "123456789.",
      "wider than 64 bits");
  expect_refused(
      "\x80\x03"
      "a.",
      "empty stack");
  expect_refused(
      "\x80\x03"
      "t.",
      "no MARK");
  expect_refused(
      "\x80\x03X\xff\xff\xff\x7f"
      "abc",
      "truncated");
  expect_refused(std::string("\x80\x03"
                             "cnumpy\ndtype\nX\x02\x00\x00\x00"
                             "f8\x89\x88\x87R.",
                             28),
                 "dtype other than");
  // A pickle of a non-array object named as an index: a plain .npy is refused by its header.
  try {
    (void)read_pickled_index(bytes_of(npy_header("'<i8'", std::vector<uint64_t>{0})), "x");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("not a pickled 0-d object array"), std::string::npos);
  }
}

TEST(PickledIndex, RefusesEveryTruncationOfAValidFileWithoutCrashing) {
  FieldIndex idx;
  idx.key_type = FieldType::str;
  idx.str_keys = {"a", "b"};
  idx.offsets = {0, 1, 2};
  idx.ids = {0, 1};
  const std::string full = pickled_index_npy(idx);
  for (size_t n = 0; n < full.size(); ++n) {
    EXPECT_THROW((void)read_pickled_index(bytes_of(full.substr(0, n)), "t"), Error) << n;
  }
  EXPECT_NO_THROW((void)read_pickled_index(bytes_of(full), "t"));
}

}  // namespace
}  // namespace slip::detail
