// Pillow 9.4's separable resampling (libImaging/Resample.c) for 8-bit RGB, reproduced so that
// crop + resize gives Pillow's bytes when fed Pillow's pixels: coefficients from the filter
// with its support scaled by the shrink factor (antialiasing), normalised, converted to 22-bit
// fixed point; the horizontal pass runs first over the rows the vertical pass needs, then the
// vertical pass; each pass rounds and clips to 8 bits.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "slip/decode.hpp"

namespace slip::detail {

struct ResampleAxis {
  int ksize = 0;
  std::vector<int32_t> bounds;  // per output pixel: first input index, tap count
  std::vector<int32_t> coeffs;  // per output pixel: ksize fixed-point weights
  std::vector<double> weights;  // scratch for one pixel's weights
  // The coefficients of each pair of taps split as k = hi * 2^11 + lo (lo in [0, 2^11), hi
  // signed), both halves fitting int16, packed two taps per int32: the horizontal kernel's
  // 16-bit multiply-adds then give exactly Pillow's 32-bit sums. Per output: ksize/2 rounded up.
  std::vector<int32_t> pairs_lo, pairs_hi;
};

// Coefficients mapping input range [in0, in1) of an axis of in_size pixels onto out_size pixels.
void precompute_axis(ResampleAxis& axis, int in_size, double in0, double in1, int out_size, ResampleFilter filter);

// A view of 8-bit RGB rows.
struct RgbView {
  const uint8_t* data = nullptr;
  int width = 0, height = 0;
  size_t stride = 0;  // bytes per row
};

// Scratch reused across calls (no allocation once warm).
struct ResampleScratch {
  ResampleAxis horizontal, vertical;
  std::vector<uint8_t> temp;
  std::vector<int32_t> accumulator;
};

// Resizes the box [x0, x1) x [y0, y1) of `in` (fractional bounds allowed) to out_w x out_h RGB,
// written to `out` with row stride out_w * 3. Pillow semantics: taps are clamped to `in`.
// mirror: the output flipped left-right, for free (the horizontal pass's outputs in reverse order).
void resample_rgb(const RgbView& in, double x0, double y0, double x1, double y1, int out_w, int out_h, ResampleFilter filter,
                  ResampleScratch& scratch, uint8_t* out, bool mirror = false);

}  // namespace slip::detail
