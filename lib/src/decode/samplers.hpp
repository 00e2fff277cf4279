// Crop-window samplers. rrc_window is torchvision 0.14's RandomResizedCrop.get_params step for
// step, generic over the 32-bit generator so a test can feed
// it torch's own MT19937 stream and compare row by row.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "decode/rng.hpp"
#include "slip/decode.hpp"

namespace slip::detail {

// torch's float32 uniform_(a, b): 24 random bits, then one fused multiply-add in float32.
template <class Gen>
float torch_uniform(Gen& gen, float a, float b) {
  const float x = static_cast<float>(gen() & 0xFFFFFFu) * 0x1p-24f;
  return std::fma(x, b - a, a);
}

// Python's round(): halves to even (the default floating-point rounding mode).
inline int64_t round_half_even(double v) { return static_cast<int64_t>(std::nearbyint(v)); }

template <class Gen>
CropWindow rrc_window(Gen& gen, int64_t width, int64_t height, double scale_lo, double scale_hi, double ratio_lo, double ratio_hi) {
  const double area = static_cast<double>(width) * static_cast<double>(height);
  const float log_lo = static_cast<float>(std::log(static_cast<double>(static_cast<float>(ratio_lo))));
  const float log_hi = static_cast<float>(std::log(static_cast<double>(static_cast<float>(ratio_hi))));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * torch_uniform(gen, static_cast<float>(scale_lo), static_cast<float>(scale_hi));
    const float r = torch_uniform(gen, log_lo, log_hi);
    const double aspect = static_cast<float>(std::exp(static_cast<double>(r)));
    const int64_t w = round_half_even(std::sqrt(target_area * aspect));
    const int64_t h = round_half_even(std::sqrt(target_area / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const auto top = static_cast<int64_t>(gen() % static_cast<uint32_t>(height - h + 1));
      const auto left = static_cast<int64_t>(gen() % static_cast<uint32_t>(width - w + 1));
      return {static_cast<int32_t>(left), static_cast<int32_t>(top), static_cast<int32_t>(w), static_cast<int32_t>(h), false};
    }
  }
  // Fallback: the whole image, its aspect ratio clamped into the ratio range, centred.
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  int64_t w = width, h = height;
  if (in_ratio < ratio_lo) {
    h = round_half_even(static_cast<double>(w) / ratio_lo);
  } else if (in_ratio > ratio_hi) {
    w = round_half_even(static_cast<double>(h) * ratio_hi);
  }
  // (torchvision can return a window taller or wider than the image here for extreme
  // ratios; clamping keeps the window inside the image.)
  w = std::clamp<int64_t>(w, 1, width);
  h = std::clamp<int64_t>(h, 1, height);
  return {static_cast<int32_t>((width - w) / 2), static_cast<int32_t>((height - h) / 2), static_cast<int32_t>(w), static_cast<int32_t>(h),
          false};
}

// The analytic variant: draw log-ratio uniformly over the part of [ratio_lo, ratio_hi] where
// the smallest scale fits, then the scale uniformly over what fits at that ratio. One draw
// each, no rejection loop; falls back like rrc when nothing fits.
CropWindow direct_rrc_window(CounterRng& gen, int64_t width, int64_t height, double scale_lo, double scale_hi, double ratio_lo,
                             double ratio_hi);

CropWindow center_window(int64_t width, int64_t height, double center_ratio);

}  // namespace slip::detail
