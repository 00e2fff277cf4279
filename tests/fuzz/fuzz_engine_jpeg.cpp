// libFuzzer target: the decode engine's own libjpeg paths on any bytes: crop-aware region
// decoding (skipped rows, cropped columns, DCT scaling) and planar decoding (raw Y/Cb/Cr planes
// of every sampling the engine accepts) followed by the planar resampler over each plane. The
// first byte picks the path, the scale and the window.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "decode/jpeg_region.hpp"
#include "decode/resample_planar.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t control = data[0];
  const auto bytes = std::as_bytes(std::span(data + 1, size - 1));
  static slip::detail::JpegRegionDecoder jpeg;
  static std::vector<uint8_t> scratch;
  static slip::detail::PlaneResampleScratch resample;
  static std::vector<uint8_t> out(64 * 64);
  slip::detail::JpegImageInfo info;
  if (!jpeg.read_header(bytes, info) || !info.rgb_capable) return 0;
  if (static_cast<uint64_t>(info.width) * static_cast<uint64_t>(info.height) > (1u << 22)) return 0;  // fast iterations
  const int denom = 1 << (control & 3);
  int width = 0, height = 0;
  jpeg.scaled_size(denom, width, height);
  if (control & 4) {
    if (!jpeg.planar_capable()) return 0;
    slip::detail::DecodedPlanes planes;
    const int rows = (control & 8) ? height / 2 + 1 : height;
    const int left = (control & 64) ? width / 3 : 0, top = std::min((control & 128) ? height / 4 : 0, rows - 1);
    const int right = std::max(left + 1, width - left / 2);
    // Parts (multi-crop windows) inside the region, some reaching past its edges, one empty.
    const slip::detail::PixelRect parts[] = {{left, top, left + 1, top + 1},
                                             {(left + right) / 2, top, right + 7, (top + rows) / 2 + 1},
                                             {left - 3, rows - 1, right, rows + 5},
                                             {right, rows, right, rows}};
    const std::span<const slip::detail::PixelRect> used = (control & 32) ? std::span(parts) : std::span<const slip::detail::PixelRect>();
    if (!jpeg.decode_planes(denom, left, top, right, rows, scratch, planes, used)) return 0;
    if (planes.planes != 1 && planes.planes != 3) __builtin_trap();
    for (int p = 0; p < planes.planes; ++p) {
      if (planes.width[p] <= 0 || planes.height[p] <= 0) continue;
      if (planes.stride[p] < static_cast<size_t>(planes.width[p])) __builtin_trap();
      const slip::detail::PlaneView view{planes.data[p], planes.width[p], planes.height[p], planes.stride[p]};
      const int out_w = 1 + (control >> 4), out_h = 1 + ((control * 7) & 63);
      slip::detail::resample_plane(view, 0, 0, planes.width[p], planes.height[p], out_w, out_h,
                                   (control & 16) ? slip::ResampleFilter::bicubic : slip::ResampleFilter::bilinear, resample, out.data(),
                                   static_cast<size_t>(out_w), (control & 32) != 0);
    }
  } else {
    const int x0 = (control & 8) ? width / 3 : 0, y0 = (control & 16) ? height / 3 : 0;
    const int x1 = std::max(x0 + 1, (control & 32) ? width - width / 4 : width);
    const int y1 = std::max(y0 + 1, (control & 64) ? height - height / 4 : height);
    slip::detail::DecodedRegion region;
    (void)jpeg.decode_region(denom, x0, y0, x1, y1, scratch, region);
  }
  return 0;
}
