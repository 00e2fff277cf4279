// .npy headers must be byte-identical to numpy.save (Debian's python3-numpy, run here).
#include <gtest/gtest.h>

#include "slip/error.hpp"
#include "slip/npy.hpp"
#include "test_support.hpp"

namespace slip {
namespace {

using test::TempDir;

struct Case {
  std::string name;
  std::string numpy_expr;  // builds the array in Python
  std::string descr;
  std::vector<uint64_t> shape;
};

std::vector<Case> cases() {
  const std::string rec = "np.dtype([('data_ptr','<u8'),('data_size','<u8'),('height','<u4'),('width','<u4')])";
  std::vector<Case> out;
  for (uint64_t n : {0ull, 1ull, 9ull, 10ull, 24ull, 800ull, 1281167ull, 123456789012ull}) {
    const std::string ns = std::to_string(n);
    if (n < 2000000) {
      out.push_back({"i8_" + ns, "np.zeros(" + ns + ", dtype='<i8')", "'<i8'", {n}});
      out.push_back({"f8_" + ns, "np.zeros(" + ns + ", dtype='<f8')", "'<f8'", {n}});
      out.push_back({"u8x2_" + ns, "np.zeros((" + ns + ", 2), dtype='<u8')", "'<u8'", {n, 2}});
      out.push_back({"meta_" + ns, "np.zeros(" + ns + ", dtype=" + rec + ")", std::string(kMetaRecordDescr), {n}});
    }
  }
  out.push_back({"f4_3d", "np.zeros((5, 3, 4), dtype='<f4')", "'<f4'", {5, 3, 4}});
  out.push_back({"be_i2", "np.zeros((7, 2), dtype='>i2')", "'>i2'", {7, 2}});
  out.push_back({"u1_0d", "np.zeros((), dtype='|u1')", "'|u1'", {}});
  return out;
}

TEST(Npy, HeaderMatchesNumpySave) {
  SLIP_REQUIRE_PYTHON();
  TempDir tmp;
  std::string script = "import numpy as np, sys\nout = sys.argv[1]\n";
  for (const auto& c : cases()) script += "np.save(out + '/" + c.name + ".npy', " + c.numpy_expr + ")\n";
  std::ofstream(tmp.path() / "make.py") << script;
  auto r = test::run(test::python() + " " + (tmp.path() / "make.py").string() + " " + tmp.path().string());
  ASSERT_EQ(r.status, 0) << "numpy reference generation failed";
  for (const auto& c : cases()) {
    const std::string ref = test::read_file(tmp.path() / (c.name + ".npy"));
    const std::string mine = npy_header(c.descr, c.shape);
    ASSERT_LE(mine.size(), ref.size()) << c.name;
    EXPECT_EQ(mine, ref.substr(0, mine.size())) << c.name;
    EXPECT_EQ(mine.size() % 64, 0u) << c.name;
    // And our parser reads numpy's header back.
    const NpyHeader h = parse_npy_header(std::as_bytes(std::span(ref.data(), ref.size())), c.name);
    EXPECT_EQ(h.shape, c.shape) << c.name;
    EXPECT_EQ(h.descr, c.descr) << c.name;
    EXPECT_EQ(h.data_offset, mine.size()) << c.name;
  }
}

TEST(Npy, LargeCountsKeepHeaderLength) {
  // numpy's padding compensates for the digits of shape[0]: 128 bytes for any N < 10^21.
  for (uint64_t n : {0ull, 7ull, 123456789012ull, 99999999999999999ull})
    EXPECT_EQ(npy_header("'<i8'", std::vector<uint64_t>{n}).size(), 128u) << n;
  EXPECT_EQ(npy_header(kMetaRecordDescr, std::vector<uint64_t>{1281167}).size(), 192u);
}

TEST(Npy, ParserRejectsMalformedHeaders) {
  auto parse = [](std::string s) { return parse_npy_header(std::as_bytes(std::span(s.data(), s.size())), "x.npy"); };
  EXPECT_THROW(parse(""), Error);
  EXPECT_THROW(parse("\x93NUMPZ\x01\x00\x00\x00"), Error);
  std::string good = npy_header("'<i8'", std::vector<uint64_t>{3});
  EXPECT_NO_THROW(parse(good));
  for (size_t cut = 0; cut < good.size(); ++cut) EXPECT_THROW(parse(good.substr(0, cut)), Error) << cut;
  std::string bad_len = good;
  bad_len[8] = '\xff';
  bad_len[9] = '\xff';
  EXPECT_THROW(parse(bad_len), Error);
  std::string overflow = good;
  overflow.replace(overflow.find("(3,)"), 4, "(99999999999999999999999,)");
  try {
    parse(overflow);
    FAIL() << "accepted an overflowing shape";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::bad_input);
    EXPECT_TRUE(e.offset().has_value());
  }
}

TEST(Npy, DtypeSizes) {
  EXPECT_EQ(npy_dtype_size("<i8"), 8u);
  EXPECT_EQ(npy_dtype_size(">f4"), 4u);
  EXPECT_EQ(npy_dtype_size("|u1"), 1u);
  EXPECT_EQ(npy_dtype_size("|b1"), 1u);
  EXPECT_EQ(npy_dtype_size("<c16"), 16u);
  EXPECT_EQ(npy_dtype_size("|O"), 0u);
  EXPECT_EQ(npy_dtype_size("<U5"), 0u);
}

}  // namespace
}  // namespace slip
