// The fast resampler for single 8-bit planes (the Y, Cb and Cr planes of a JPEG): the same
// antialiased filters and geometry as the Pillow-exact RGB resampler (resample.hpp), with
// 14-bit coefficients instead of 22-bit ones, both passes run as one contiguous "vertical"
// kernel (the horizontal pass runs on a transposed copy; with AVX-512 VBMI it gathers each
// output's input bytes from the row instead, where 16 outputs' taps span at most 64 bytes), and
// the vertical pass first, so the horizontal one sees only the output's rows. Every kernel gives
// the same bytes. Each output value is within 1.5 levels of the
// filter in exact arithmetic (see resample_planar_test.cpp); the RGB result,
// with the colour transform done after resizing, stays within the bounds documented in
// docs/PERFORMANCE.md (Decoding and `slip bench`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "decode/resample.hpp"
#include "util/cpu.hpp"

namespace slip::detail {

// Coefficient precision: |k| < 2^15 for every filter weight (bicubic peaks at 1.0).
inline constexpr int kPlaneCoeffBits = 14;

// A view of one 8-bit plane.
struct PlaneView {
  const uint8_t* data = nullptr;
  int width = 0, height = 0;
  size_t stride = 0;
};

// What an axis's coefficients are computed from: a call with the same key reuses them (the Cb
// and Cr planes of a crop share their geometry).
struct PlaneAxisKey {
  int in_size = -1;
  double in0 = 0, in1 = 0;
  int out_size = 0;
  ResampleFilter filter = ResampleFilter::bilinear;
  bool operator==(const PlaneAxisKey&) const = default;
};

// One axis's taps: Pillow's bounds (first input index, tap count per output) and, per output,
// a row of ksize Q14 weights (ksize: the filter's tap count rounded up to a multiple of 8, the
// padding zero). Computed branch-free and vectorised in float: Pillow's own coefficient code,
// kept exact for the RGB path, cost 10% of a multi-crop epoch here.
struct PlaneAxis {
  PlaneAxisKey key;
  int ksize = 0;
  std::vector<int32_t> bounds;
  std::vector<int16_t> coeffs;
};

// Fills `axis` for `key` (unless it already holds it). The plan is the same at every kernel
// level from AVX2 up (`kernels`: at most this level, the CPU's best by default).
void plan_axis(PlaneAxis& axis, const PlaneAxisKey& key, SimdLevel kernels = SimdLevel::avx512);  // resample_weights.cpp

// The horizontal pass as row gathers (AVX-512 VBMI): for each group of 16 outputs of a row, the
// first input column its taps read (relative to the axis's first column), and per tap pair a
// byte selector (vpermb) and the outputs' coefficient pairs. Built from a PlaneAxis.
struct RowGatherPlan {
  PlaneAxisKey key;
  bool mirror = false;
  bool usable = false;  // every group's taps within 64 bytes of its first column
  int pairs = 0;        // tap pairs per group
  int groups = 0;       // 4 per whole block of 64 outputs, then as few as cover the rest
  std::vector<int32_t> window;
  std::vector<uint8_t> selectors;    // [group][pair][64]
  std::vector<int32_t> coeff_pairs;  // [group][pair][16]
};

struct PlaneResampleScratch {
  // At most this level (tests and benchmarks compare the levels, which give the same bytes); the
  // CPU's best by default.
  SimdLevel kernels = SimdLevel::avx512;

  PlaneAxis horizontal, vertical;
  RowGatherPlan row_gathers;
  std::vector<uint8_t> pass1, pass1_t, pass2;
};

// Resizes the box [x0, x1) x [y0, y1) of `in` (fractional bounds, Pillow's pixel-centre
// mapping; taps clamped to the plane) to out_w x out_h at `out` (row stride out_stride).
// mirror: left-right flipped output.
void resample_plane(const PlaneView& in, double x0, double y0, double x1, double y1, int out_w, int out_h, ResampleFilter filter,
                    PlaneResampleScratch& scratch, uint8_t* out, size_t out_stride, bool mirror);

// Byte transpose: out[x][y] = in[y][x] for a width x height block.
void transpose_plane(const uint8_t* in, size_t in_stride, int width, int height, uint8_t* out, size_t out_stride,
                     SimdLevel kernels = SimdLevel::avx512);

}  // namespace slip::detail
