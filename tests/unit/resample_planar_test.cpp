// The planar resampler (decode/resample_planar.cpp) against two independent references: the
// filter evaluated in double precision straight from its definition (no fixed point, no
// intermediate rounding), and the Pillow-exact RGB resampler on a gray image. And the colour
// conversion after it: against libjpeg's tables (jdcolor.c) on every YCbCr triple, and against
// TurboJPEG's own decode of a 4:4:4 JPEG.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <turbojpeg.h>

#include "decode/resample.hpp"
#include "decode/resample_planar.hpp"
#include "image/yuv420_kernels.hpp"

namespace slip::detail {
namespace {

// A photo-like plane: smooth gradients, a sharp edge and noise.
std::vector<uint8_t> make_plane(int w, int h, size_t stride, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> p(stride * static_cast<size_t>(h), 0xEE);  // padding bytes must never be read into the result
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      double v = 128 + 90 * std::sin(x * 0.07 + seed) * std::cos(y * 0.05) + (x > w / 2 ? 40 : -40) + static_cast<int>(rng() % 21) - 10;
      p[static_cast<size_t>(y) * stride + x] = static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
    }
  return p;
}

// Pillow's antialiased separable filter in double precision (the definition, not the code).
double filter_value(ResampleFilter f, double x) {
  x = std::fabs(x);
  if (f == ResampleFilter::bilinear) return x < 1 ? 1 - x : 0;
  constexpr double a = -0.5;
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0;
}
std::vector<std::vector<double>> weights(ResampleFilter f, int in_size, double in0, double in1, int out_size, std::vector<int>& first) {
  const double scale = (in1 - in0) / out_size, fs = std::max(scale, 1.0);
  const double support = (f == ResampleFilter::bicubic ? 2.0 : 1.0) * fs;
  std::vector<std::vector<double>> w(out_size);
  first.assign(out_size, 0);
  for (int o = 0; o < out_size; ++o) {
    const double center = in0 + (o + 0.5) * scale;
    const int lo = std::max(0, static_cast<int>(center - support + 0.5));
    const int hi = std::min(in_size, static_cast<int>(center + support + 0.5));
    double sum = 0;
    for (int i = lo; i < hi; ++i) {
      w[o].push_back(filter_value(f, (i - center + 0.5) / fs));
      sum += w[o].back();
    }
    for (double& v : w[o]) v /= sum;
    first[o] = lo;
  }
  return w;
}
std::vector<double> reference(const std::vector<uint8_t>& in, int w, int h, size_t stride, double x0, double y0, double x1, double y1,
                              int ow, int oh, ResampleFilter f) {
  std::vector<int> fx, fy;
  const auto wx = weights(f, w, x0, x1, ow, fx), wy = weights(f, h, y0, y1, oh, fy);
  std::vector<double> out(static_cast<size_t>(ow) * oh);
  for (int oy = 0; oy < oh; ++oy)
    for (int ox = 0; ox < ow; ++ox) {
      double s = 0;
      for (size_t j = 0; j < wy[oy].size(); ++j)
        for (size_t i = 0; i < wx[ox].size(); ++i)
          s += wy[oy][j] * wx[ox][i] * in[static_cast<size_t>(fy[oy] + static_cast<int>(j)) * stride + fx[ox] + static_cast<int>(i)];
      out[static_cast<size_t>(oy) * ow + ox] = std::clamp(s, 0.0, 255.0);
    }
  return out;
}

struct Case {
  int w, h;
  double x0, y0, x1, y1;
  int ow, oh;
};

// Shrinks (up to 6x), enlargements, fractional boxes, tiny planes, odd and even sizes, widths
// not multiple of the 16-column kernel step.
const Case kCases[] = {
    {500, 375, 0, 0, 500, 375, 224, 224},
    {333, 250, 17.5, 3.25, 301.0, 240.5, 96, 96},
    {97, 130, 0, 0, 97, 130, 224, 224},
    {640, 480, 100, 50, 612, 470, 97, 61},
    {1, 1, 0, 0, 1, 1, 7, 5},
    {3, 7, 0, 0, 3, 7, 2, 9},
    {250, 188, 10, 10, 60, 70, 112, 112},
    {1200, 900, 0, 0, 1200, 900, 200, 150},
    {48, 33, 0, 0, 48, 33, 48, 33},
    {20, 30, 0, 0, 20, 30, 24, 17},    // 16-31 columns in both passes: the 16-column AVX2 step
    {2400, 40, 0, 0, 2400, 40, 4, 3},  // 600x horizontally: taps rows longer than the AVX2 weight kernel takes
};

TEST(PlanarResample, WithinOneAndAHalfLevelsOfTheFilterInDoublePrecision) {
  PlaneResampleScratch scratch;
  double worst_mean = 0, worst_error = 0;
  uint32_t seed = 1;
  for (const Case& c : kCases)
    for (ResampleFilter f : {ResampleFilter::bilinear, ResampleFilter::bicubic}) {
      const size_t stride = static_cast<size_t>(c.w) + 13;
      const auto in = make_plane(c.w, c.h, stride, seed++);
      std::vector<uint8_t> out(static_cast<size_t>(c.ow) * c.oh);
      resample_plane({in.data(), c.w, c.h, stride}, c.x0, c.y0, c.x1, c.y1, c.ow, c.oh, f, scratch, out.data(), c.ow, false);
      const auto ref = reference(in, c.w, c.h, stride, c.x0, c.y0, c.x1, c.y1, c.ow, c.oh, f);
      double mean = 0, max = 0;
      for (size_t i = 0; i < out.size(); ++i) {
        const double e = std::fabs(out[i] - ref[i]);
        mean += e;
        max = std::max(max, e);
      }
      mean /= static_cast<double>(out.size());
      // Rounding between the passes and at the end, 14-bit taps: |error| <= 1.5 (measured 1.22),
      // and on average about half a level.
      EXPECT_LE(max, 1.5) << c.w << "x" << c.h << " -> " << c.ow << "x" << c.oh << " filter " << static_cast<int>(f);
      EXPECT_LE(mean, 0.6) << c.w << "x" << c.h << " -> " << c.ow << "x" << c.oh;
      worst_mean = std::max(worst_mean, mean);
      worst_error = std::max(worst_error, max);
    }
  std::printf("planar vs double-precision filter: worst mean %.3f, worst error %.3f\n", worst_mean, worst_error);
}

TEST(PlanarResample, CloseToPillowExactResamplerOnGrayImages) {
  PlaneResampleScratch scratch;
  ResampleScratch rgb_scratch;
  uint32_t seed = 100;
  for (const Case& c : kCases) {
    const size_t stride = static_cast<size_t>(c.w);
    const auto in = make_plane(c.w, c.h, stride, seed++);
    std::vector<uint8_t> rgb(in.size() * 3);
    for (size_t i = 0; i < in.size(); ++i) rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = in[i];
    std::vector<uint8_t> ours(static_cast<size_t>(c.ow) * c.oh), exact(ours.size() * 3);
    resample_plane({in.data(), c.w, c.h, stride}, c.x0, c.y0, c.x1, c.y1, c.ow, c.oh, ResampleFilter::bilinear, scratch, ours.data(), c.ow,
                   false);
    resample_rgb({rgb.data(), c.w, c.h, stride * 3}, c.x0, c.y0, c.x1, c.y1, c.ow, c.oh, ResampleFilter::bilinear, rgb_scratch,
                 exact.data());
    double mean = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
      const int e = std::abs(int(ours[i]) - int(exact[3 * i]));
      ASSERT_LE(e, 2) << c.w << "x" << c.h << " -> " << c.ow << "x" << c.oh << " at " << i;
      mean += e;
    }
    EXPECT_LE(mean / static_cast<double>(ours.size()), 0.6);
  }
}

// A random axis for trial `trial`: a plane of 1 to max_in pixels, a box of at least half a
// pixel in it, 1 to 300 outputs; bilinear on even trials, bicubic on odd ones.
PlaneAxisKey random_axis_key(std::mt19937& rng, int max_in, int trial) {
  const int in_size = 1 + static_cast<int>(rng() % static_cast<unsigned>(max_in)), out_size = 1 + static_cast<int>(rng() % 300);
  std::uniform_real_distribution<double> u(0.0, in_size);
  double in0 = u(rng), in1 = u(rng);
  if (in1 < in0) std::swap(in0, in1);
  if (in1 - in0 < 0.5) in1 = std::min<double>(in_size, in0 + 0.5);
  return {in_size, in0, in1, out_size, trial % 2 ? ResampleFilter::bicubic : ResampleFilter::bilinear};
}

// "in [in0, in1) -> out filter", for failure messages.
std::string describe(const PlaneAxisKey& k) {
  std::ostringstream s;
  s << k.in_size << " [" << k.in0 << ", " << k.in1 << ") -> " << k.out_size
    << (k.filter == ResampleFilter::bicubic ? " bicubic" : " bilinear");
  return s.str();
}

// The taps' bounds are Pillow's exactly (computed eight outputs at a time in AVX2 doubles, the
// rest one by one), and each Q14 weight is the normalised filter rounded, within one step.
TEST(PlanarResample, AxisPlanMatchesPillowsBoundsAndTheFilter) {
  std::mt19937 rng(5);
  int outputs = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const PlaneAxisKey key = random_axis_key(rng, 1500, trial);
    PlaneAxis axis;
    plan_axis(axis, key);
    std::vector<int> first;
    const auto w = weights(key.filter, key.in_size, key.in0, key.in1, key.out_size, first);
    for (int o = 0; o < key.out_size; ++o, ++outputs) {
      ASSERT_EQ(axis.bounds[2 * static_cast<size_t>(o)], first[o]) << describe(key) << " at " << o;
      ASSERT_EQ(axis.bounds[2 * static_cast<size_t>(o) + 1], static_cast<int>(w[o].size())) << describe(key) << " at " << o;
      for (size_t j = 0; j < w[o].size(); ++j)
        ASSERT_NEAR(axis.coeffs[static_cast<size_t>(o) * axis.ksize + j], std::lround(w[o][j] * 16384), 1)
            << "output " << o << " tap " << j;
    }
  }
  EXPECT_GT(outputs, 20000);
}

// One test per kernel level above scalar, compared with the scalar level: a level this CPU
// lacks is reported as skipped, never as a pass that compared nothing.
class PlanarAboveScalar : public ::testing::TestWithParam<SimdLevel> {
 protected:
  void SetUp() override {
    if (GetParam() > cpu_simd_level())
      GTEST_SKIP() << "this CPU has no " << simd_level_name(GetParam()) << " (it has up to " << simd_level_name(cpu_simd_level()) << ")";
  }
};
INSTANTIATE_TEST_SUITE_P(Levels, PlanarAboveScalar, ::testing::Values(SimdLevel::sse4, SimdLevel::avx2, SimdLevel::avx512),
                         [](const auto& info) { return std::string(simd_level_name(info.param)); });

// The planners (scalar one output at a time, AVX2 eight, AVX-512 sixteen) give the same bounds
// and weights bit for bit, both filters, 8- and 16-tap rows, and outputs not a multiple of 16 or 8.
TEST_P(PlanarAboveScalar, AxisPlanIsTheScalarPlan) {
  std::mt19937 rng(6);
  int compared = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const PlaneAxisKey key = random_axis_key(rng, 1200, trial);
    PlaneAxis scalar, vector;
    plan_axis(scalar, key, SimdLevel::scalar);
    plan_axis(vector, key, GetParam());
    ASSERT_EQ(scalar.ksize, vector.ksize);
    ASSERT_EQ(scalar.bounds, vector.bounds) << describe(key);
    ASSERT_TRUE(std::equal(scalar.coeffs.begin(), scalar.coeffs.begin() + static_cast<ptrdiff_t>(key.out_size) * scalar.ksize,
                           vector.coeffs.begin()))
        << describe(key);
    compared += key.out_size >= 16 && scalar.ksize <= 16;
  }
  EXPECT_GT(compared, 500);
}

// Each kernel level gives the scalar level's bytes, on planes wide enough for every step width
// (16, 32, 64 columns) and for their overlapping last steps.
TEST_P(PlanarAboveScalar, ResamplesToTheScalarBytes) {
  const SimdLevel level = GetParam();
  std::vector<Case> cases(std::begin(kCases), std::end(kCases));
  cases.push_back({700, 500, 3.5, 1.25, 690.0, 480.5, 224, 224});
  cases.push_back({130, 90, 0, 0, 130, 90, 65, 127});
  cases.push_back({64, 64, 0, 0, 64, 64, 64, 64});
  cases.push_back({200, 150, 10, 20, 190, 140, 96, 96});
  // Sources far narrower than the row gathers' 64-byte windows (a 1- or 3-pixel-wide plane to
  // 224 or 65 outputs: every window reads past the row), and a shrink just past what 64 bytes hold.
  cases.push_back({1, 1, 0, 0, 1, 1, 224, 224});
  cases.push_back({3, 500, 0.5, 0, 2.5, 500, 65, 96});
  cases.push_back({1000, 64, 0, 0, 1000, 64, 250, 64});
  int compared = 0, gathered = 0, transposed = 0;
  for (const Case& c : cases)
    for (ResampleFilter f : {ResampleFilter::bilinear, ResampleFilter::bicubic})
      for (bool mirror : {false, true}) {
        const size_t stride = static_cast<size_t>(c.w) + 3;
        const auto in = make_plane(c.w, c.h, stride, 11);
        std::vector<uint8_t> reference(static_cast<size_t>(c.ow) * c.oh);
        PlaneResampleScratch scalar;
        scalar.kernels = SimdLevel::scalar;
        resample_plane({in.data(), c.w, c.h, stride}, c.x0, c.y0, c.x1, c.y1, c.ow, c.oh, f, scalar, reference.data(), c.ow, mirror);
        PlaneResampleScratch scratch;
        scratch.kernels = level;
        std::vector<uint8_t> out(reference.size());
        resample_plane({in.data(), c.w, c.h, stride}, c.x0, c.y0, c.x1, c.y1, c.ow, c.oh, f, scratch, out.data(), c.ow, mirror);
        ASSERT_EQ(out, reference) << "level " << simd_level_name(level) << ", " << c.w << "x" << c.h << " -> " << c.ow << "x" << c.oh;
        ++compared;
        if (level == SimdLevel::avx512 && c.ow >= 64) ++(scratch.row_gathers.usable ? gathered : transposed);
      }
  EXPECT_EQ(compared, static_cast<int>(cases.size()) * 4);
  // AVX-512's horizontal pass: row gathers where each 16 outputs' taps fit 64 bytes, the
  // transposed kernels for longer shrinks (1200 -> 200, 512 -> 97): both ran.
  if (level == SimdLevel::avx512) {
    std::printf("row gathers: %d, transposed kernels: %d\n", gathered, transposed);
    EXPECT_GE(gathered, 40);
    EXPECT_GE(transposed, 12);
  }
}

TEST(PlanarResample, MirrorIsTheExactMirror) {
  PlaneResampleScratch scratch;
  for (const Case& c : kCases) {
    const auto in = make_plane(c.w, c.h, c.w, 7);
    std::vector<uint8_t> a(static_cast<size_t>(c.ow) * c.oh), b(a.size());
    resample_plane({in.data(), c.w, c.h, static_cast<size_t>(c.w)}, c.x0, c.y0, c.x1, c.y1, c.ow, c.oh, ResampleFilter::bicubic, scratch,
                   a.data(), c.ow, false);
    resample_plane({in.data(), c.w, c.h, static_cast<size_t>(c.w)}, c.x0, c.y0, c.x1, c.y1, c.ow, c.oh, ResampleFilter::bicubic, scratch,
                   b.data(), c.ow, true);
    for (int y = 0; y < c.oh; ++y)
      for (int x = 0; x < c.ow; ++x)
        ASSERT_EQ(a[static_cast<size_t>(y) * c.ow + x], b[static_cast<size_t>(y) * c.ow + c.ow - 1 - x]) << c.ow << "x" << c.oh;
  }
}

TEST(PlanarResample, TransposeMatchesTheDefinition) {
  std::mt19937 rng(3);
  for (auto [w, h] : {std::pair{1, 1},
                      {8, 8},
                      {16, 9},
                      {23, 41},
                      {224, 336},
                      {7, 64},
                      {32, 16},
                      {33, 17},
                      {95, 50},
                      {301, 224},
                      {64, 47},
                      {250, 96},
                      {31, 200},
                      {64, 16},
                      {65, 30},
                      {130, 224},
                      {224, 96}}) {
    std::vector<uint8_t> in(static_cast<size_t>(w + 5) * h);
    for (auto& v : in) v = static_cast<uint8_t>(rng());
    for (SimdLevel level : {SimdLevel::scalar, SimdLevel::sse4, SimdLevel::avx2, SimdLevel::avx512}) {  // at most the CPU's
      std::vector<uint8_t> out(static_cast<size_t>(h + 3) * w, 0);
      transpose_plane(in.data(), w + 5, w, h, out.data(), h + 3, level);
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          ASSERT_EQ(out[static_cast<size_t>(x) * (h + 3) + y], in[static_cast<size_t>(y) * (w + 5) + x])
              << w << "x" << h << " level " << static_cast<int>(level);
      // Nothing past each output row's h bytes (the overlapping edge blocks stay inside).
      for (int x = 0; x < w; ++x)
        for (int y = h; y < h + 3; ++y) ASSERT_EQ(out[static_cast<size_t>(x) * (h + 3) + y], 0) << w << "x" << h;
    }
  }
}

// libjpeg's YCbCr -> RGB as jdcolor.c builds it: FIX(x) = x * 2^16 rounded, the tables, the
// arithmetic right shift and the range limit.
void libjpeg_ycc_to_rgb(int y, int cb, int cr, uint8_t* rgb) {
  auto fix = [](double x) { return static_cast<int64_t>(x * 65536 + 0.5); };
  const int64_t x_cb = cb - 128, x_cr = cr - 128, half = 1 << 15;
  const int64_t r = y + ((fix(1.40200) * x_cr + half) >> 16);
  const int64_t g = y + ((-fix(0.34414) * x_cb + half + -fix(0.71414) * x_cr) >> 16);
  const int64_t b = y + ((fix(1.77200) * x_cb + half) >> 16);
  rgb[0] = static_cast<uint8_t>(std::clamp<int64_t>(r, 0, 255));
  rgb[1] = static_cast<uint8_t>(std::clamp<int64_t>(g, 0, 255));
  rgb[2] = static_cast<uint8_t>(std::clamp<int64_t>(b, 0, 255));
}

// One test per kernel level, scalar included (a level this CPU lacks: skipped).
class PlanarColourLevel : public ::testing::TestWithParam<SimdLevel> {
 protected:
  void SetUp() override {
    if (GetParam() > cpu_simd_level()) GTEST_SKIP() << "this CPU has no " << simd_level_name(GetParam());
  }
};
INSTANTIATE_TEST_SUITE_P(Levels, PlanarColourLevel,
                         ::testing::Values(SimdLevel::scalar, SimdLevel::sse4, SimdLevel::avx2, SimdLevel::avx512),
                         [](const auto& info) { return std::string(simd_level_name(info.param)); });

// All 2^24 triples at each kernel level: rows of 259 pixels (Y = column mod 256, so the vector
// steps and the scalar tail all see every luma value), one row per Cb, one image per Cr; output
// rows 64-byte aligned, 16-byte aligned (streaming stores) and not.
TEST_P(PlanarColourLevel, EveryYCbCrTripleEqualsLibjpegTables) {
  const SimdLevel level = GetParam();
  constexpr int kWidth = 259;
  std::vector<uint8_t> y(kWidth * 256), cb(y.size()), cr(y.size());
  for (int row = 0; row < 256; ++row)
    for (int x = 0; x < kWidth; ++x) {
      y[static_cast<size_t>(row) * kWidth + x] = static_cast<uint8_t>(x % 256);
      cb[static_cast<size_t>(row) * kWidth + x] = static_cast<uint8_t>(row);
    }
  for (size_t pad : {size_t{0}, size_t{5}}) {
    const size_t out_stride = kWidth * 3 + (pad ? 1 : 27);  // 804 (not a multiple of 16) or 784
    std::vector<uint8_t> storage(out_stride * 256 + 64);
    uint8_t* out = storage.data() + ((16 - reinterpret_cast<uintptr_t>(storage.data()) % 16) % 16) + pad;
    // Every Cr for one alignment, a third of them (in turn) for the others.
    for (int v = 0; v < 256; v += pad ? 3 : 1) {
      std::fill(cr.begin(), cr.end(), static_cast<uint8_t>(v));
      std::fill(storage.begin(), storage.end(), uint8_t{0});
      ycbcr_planes_to_rgb(y.data(), cb.data(), cr.data(), kWidth, kWidth, 256, out, out_stride, level);
      for (int row = 0; row < 256; ++row)
        for (int x = 0; x < kWidth; ++x) {
          uint8_t want[3];
          libjpeg_ycc_to_rgb(x % 256, row, v, want);
          const uint8_t* got = out + static_cast<size_t>(row) * out_stride + static_cast<size_t>(x) * 3;
          ASSERT_TRUE(got[0] == want[0] && got[1] == want[1] && got[2] == want[2])
              << "Y " << x % 256 << " Cb " << row << " Cr " << v << " column " << x << " pad " << pad << " level "
              << simd_level_name(level);
        }
    }
  }
}

// Every row width from 1 to 200 (whole vector steps, partial ones, the scalar tail), output
// rows starting 64-, 16- and not 16-byte aligned: each level writes the scalar level's bytes,
// and nothing past a row's last pixel (a sentinel there survives).
TEST_P(PlanarAboveScalar, EveryColourWidthAndAlignmentGivesTheScalarBytesAndWritesNothingElse) {
  std::mt19937 rng(27);
  constexpr int kRows = 3;
  std::vector<uint8_t> y(200 * kRows), cb(y.size()), cr(y.size());
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = static_cast<uint8_t>(rng()), cb[i] = static_cast<uint8_t>(rng()), cr[i] = static_cast<uint8_t>(rng());
  int compared = 0;
  for (int width = 1; width <= 200; ++width)
    for (size_t offset : {size_t{0}, size_t{16}, size_t{48}, size_t{5}}) {
      const size_t out_stride = ((static_cast<size_t>(width) * 3 + 16 + 63) / 64) * 64 + (offset % 16 ? 1 : 0);
      auto run = [&](SimdLevel level) {
        std::vector<uint8_t> storage(out_stride * kRows + 128, 0xA5);
        uint8_t* out = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64 + offset;
        ycbcr_planes_to_rgb(y.data(), cb.data(), cr.data(), 200, width, kRows, out, out_stride, level);
        return std::vector<uint8_t>(out - offset, out + out_stride * kRows);
      };
      const auto scalar = run(SimdLevel::scalar);
      for (int row = 0; row < kRows; ++row)
        for (size_t b = static_cast<size_t>(width) * 3; b < out_stride; ++b)
          ASSERT_EQ(scalar[offset + row * out_stride + b], 0xA5)
              << "width " << width << " row " << row << " byte " << b << ": the scalar level wrote past the row";
      ASSERT_EQ(run(GetParam()), scalar) << "width " << width << " offset " << offset << " level " << simd_level_name(GetParam());
      ++compared;
    }
  EXPECT_EQ(compared, 200 * 4);
}

// TurboJPEG decodes a 4:4:4 JPEG to planes and to RGB: converting its planes gives its RGB.
TEST(PlanarColour, TurboJpegPlanesConvertToTurboJpegRgb) {
  constexpr int kW = 203, kH = 61;
  std::vector<uint8_t> rgb(static_cast<size_t>(kW) * kH * 3);
  std::mt19937 rng(11);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>((i % 3 == 0 ? i / 7 : i % 3 == 1 ? i / 13 : 200) + rng() % 60);
  tjhandle enc = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  ASSERT_EQ(tjCompress2(enc, rgb.data(), kW, 0, kH, TJPF_RGB, &jpeg, &size, TJSAMP_444, 90, 0), 0);
  tjDestroy(enc);
  tjhandle dec = tjInitDecompress();
  std::vector<uint8_t> planes[3], want(rgb.size()), got(rgb.size());
  for (auto& p : planes) p.resize(static_cast<size_t>(kW) * kH);
  unsigned char* dst[3] = {planes[0].data(), planes[1].data(), planes[2].data()};
  int strides[3] = {kW, kW, kW};
  ASSERT_EQ(tjDecompressToYUVPlanes(dec, jpeg, size, dst, kW, strides, kH, 0), 0);
  ASSERT_EQ(tjDecompress2(dec, jpeg, size, want.data(), kW, 0, kH, TJPF_RGB, 0), 0);
  tjDestroy(dec);
  tjFree(jpeg);
  ycbcr_planes_to_rgb(planes[0].data(), planes[1].data(), planes[2].data(), kW, kW, kH, got.data(), static_cast<size_t>(kW) * 3);
  size_t differing = 0;
  for (size_t i = 0; i < got.size(); ++i) differing += got[i] != want[i];
  EXPECT_EQ(differing, 0u);
}

}  // namespace
}  // namespace slip::detail
