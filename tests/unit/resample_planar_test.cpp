// The planar resampler (decode/resample_planar.cpp) against two independent references: the
// filter evaluated in double precision straight from its definition (no fixed point, no
// intermediate rounding), and the Pillow-exact RGB resampler on a gray image.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "decode/resample.hpp"
#include "decode/resample_planar.hpp"

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
};

TEST(PlanarResample, WithinOneLevelOfTheFilterInDoublePrecision) {
  PlaneResampleScratch scratch;
  double worst_mean = 0;
  int worst_max = 0;
  uint32_t seed = 1;
  for (const Case& c : kCases)
    for (ResampleFilter f : {ResampleFilter::bilinear, ResampleFilter::bicubic}) {
      const size_t stride = static_cast<size_t>(c.w) + 13;
      const auto in = make_plane(c.w, c.h, stride, seed++);
      std::vector<uint8_t> out(static_cast<size_t>(c.ow) * c.oh);
      resample_plane({in.data(), c.w, c.h, stride}, c.x0, c.y0, c.x1, c.y1, c.ow, c.oh, f, scratch, out.data(), c.ow, false);
      const auto ref = reference(in, c.w, c.h, stride, c.x0, c.y0, c.x1, c.y1, c.ow, c.oh, f);
      double mean = 0;
      int max = 0;
      for (size_t i = 0; i < out.size(); ++i) {
        const double e = std::fabs(out[i] - ref[i]);
        mean += e;
        max = std::max(max, static_cast<int>(std::lround(e + 0.4999)));
      }
      mean /= static_cast<double>(out.size());
      // One level of rounding between the passes, one at the end, 14-bit taps: |error| < 2,
      // and on average about half a level.
      EXPECT_LE(max, 2) << c.w << "x" << c.h << " -> " << c.ow << "x" << c.oh << " filter " << static_cast<int>(f);
      EXPECT_LE(mean, 0.6) << c.w << "x" << c.h << " -> " << c.ow << "x" << c.oh;
      worst_mean = std::max(worst_mean, mean);
      worst_max = std::max(worst_max, max);
    }
  std::printf("planar vs double-precision filter: worst mean %.3f, worst max %d\n", worst_mean, worst_max);
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
  for (auto [w, h] : {std::pair{1, 1}, {8, 8}, {16, 9}, {23, 41}, {224, 336}, {7, 64}}) {
    std::vector<uint8_t> in(static_cast<size_t>(w + 5) * h);
    for (auto& v : in) v = static_cast<uint8_t>(rng());
    std::vector<uint8_t> out(static_cast<size_t>(h + 3) * w, 0);
    transpose_plane(in.data(), w + 5, w, h, out.data(), h + 3);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        ASSERT_EQ(out[static_cast<size_t>(x) * (h + 3) + y], in[static_cast<size_t>(y) * (w + 5) + x]) << w << "x" << h;
  }
}

}  // namespace
}  // namespace slip::detail
