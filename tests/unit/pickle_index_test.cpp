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

void expect_refused_npy(const std::string& file, uint64_t samples, const std::string& why) {
  try {
    (void)read_pickled_index(bytes_of(file), "x_index.npy", samples);
    ADD_FAILURE() << "accepted: " << why;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::bad_input);
    EXPECT_NE(e.message().find(why), std::string::npos) << e.message();
  }
}

void expect_refused_for(const std::string& pickle, uint64_t samples, const std::string& why) {
  expect_refused_npy(header() + pickle, samples, why);
}

void expect_refused(const std::string& pickle, const std::string& why) { expect_refused_for(pickle, 100, why); }

TEST(PickledIndex, ReadsWhatSlipWritesForIntFloatAndStrKeys) {
  FieldIndex idx;
  idx.key_type = FieldType::int64;
  idx.int_keys = {-5, 0, 300, 70000, int64_t{1} << 40, INT64_MIN};
  idx.offsets = {0, 1, 3, 3, 4, 5, 6};
  idx.ids = {7, 1, 2, 9, 4, 5};
  const std::string ints = pickled_index_npy(idx);
  PickledIndex got = read_pickled_index(bytes_of(ints), "i", 10);
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got.total_ids(), 6u);
  for (size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(std::get<int64_t>(got.key(k)), idx.int_keys[k]);
    const auto want = idx.ids_of(k);
    EXPECT_EQ(got.ids(k), std::vector<int64_t>(want.begin(), want.end()));
  }
  idx.key_type = FieldType::float64;
  idx.float_keys = {-1.5, 0.0, 2.25, 1e300, -0.0, std::nan("")};
  const std::string floats = pickled_index_npy(idx);
  got = read_pickled_index(bytes_of(floats), "f", 10);
  EXPECT_EQ(std::get<double>(got.key(2)), 2.25);
  EXPECT_TRUE(std::isnan(std::get<double>(got.key(5))));
  idx.key_type = FieldType::str;
  idx.str_keys = {"a", "äpfel", std::string(300, 'z'), "", "n01440764", "x"};
  const std::string strs = pickled_index_npy(idx);
  got = read_pickled_index(bytes_of(strs), "s", 10);
  EXPECT_EQ(std::get<std::string_view>(got.key(1)), "äpfel");
  EXPECT_EQ(std::get<std::string_view>(got.key(2)), std::string(300, 'z'));
  // The ids are bounded by the cache: each one of its samples, and no more of them than it has.
  expect_refused_npy(strs, 5, "lists sample id 7, beyond the cache's 5 samples");
  FieldIndex twice;
  twice.key_type = FieldType::str;
  twice.str_keys = {"a", "b", "c"};
  twice.offsets = {0, 1, 2, 3};
  twice.ids = {0, 0, 1};
  expect_refused_npy(pickled_index_npy(twice), 2, "lists more sample ids than the cache's 2 samples");
}

TEST(PickledIndex, ReadsThePythonSlipstreamFixture) {
  SLIP_REQUIRE_SHARED();
  const auto path = test::shared_dir() / "fixtures/pyslipstream/slipcache-3131b662/label_index.npy";
  const MappedFile f(path);
  const PickledIndex got = read_pickled_index(f.bytes(), path.string(), 24);
  ASSERT_EQ(got.size(), 3u);
  for (int64_t k = 0; k < 3; ++k) {
    EXPECT_EQ(std::get<int64_t>(got.key(static_cast<size_t>(k))), k);
    std::vector<int64_t> want;
    for (int64_t i = 8 * k; i < 8 * k + 8; ++i) want.push_back(i);
    EXPECT_EQ(got.ids(static_cast<size_t>(k)), want);
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
                             27),
                 "dtype other than");
  // A pickle of a non-array object named as an index: a plain .npy is refused by its header.
  try {
    const std::string file = npy_header("'<i8'", std::vector<uint64_t>{0});
    (void)read_pickled_index(bytes_of(file), "x", 1);
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
    const std::string cut = full.substr(0, n);
    EXPECT_THROW((void)read_pickled_index(bytes_of(cut), "t", 2), Error) << n;
  }
  EXPECT_NO_THROW((void)read_pickled_index(bytes_of(full), "t", 2));
}

// Bounded by the cache, not the file: bombs are refused after a budget of 2 values a sample
// plus 65,536; slip's own index of as many keys as samples (25 objects a key, freed as it goes)
// reads within it.
TEST(PickledIndex, BombsAreRefusedWithinTheCachesBudgetAndLargeIndexesRead) {
  expect_refused_for(std::string("\x80\x03") + std::string(8 << 20, '\x88') + ".", 40,
                     "holds more than 65618 objects at once (an index of a cache of 40 samples needs fewer)");
  expect_refused_for(std::string("\x80\x03") + std::string(8 << 20, '(') + ".", 40, "holds more than");
  expect_refused_for("\x80\x03K\x01q\x05.", 1, "memoizes at index 5");
  FieldIndex idx;
  idx.key_type = FieldType::int64;
  const size_t keys = 200000;
  for (size_t k = 0; k < keys; ++k) {
    idx.int_keys.push_back(static_cast<int64_t>(k) * 7);
    idx.offsets.push_back(k);
    idx.ids.push_back(static_cast<int64_t>(keys - 1 - k));
  }
  idx.offsets.push_back(keys);
  const std::string file = pickled_index_npy(idx);
  const PickledIndex got = read_pickled_index(bytes_of(file), "big", keys);
  ASSERT_EQ(got.size(), keys);
  EXPECT_EQ(std::get<int64_t>(got.key(keys - 1)), static_cast<int64_t>(keys - 1) * 7);
  EXPECT_EQ(got.id(keys - 1, 0), 0);
  EXPECT_EQ(got.total_ids(), keys);
}

}  // namespace
}  // namespace slip::detail
