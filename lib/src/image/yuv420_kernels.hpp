// Internal: the YUV420 pixel kernels shared by the converter, the decode engine and verify.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/cpu.hpp"

namespace slip::detail {

// One pair of padded output rows of docs/FORMAT.md#yuv420-conversion: `row0`/`row1` are RGB source rows (the same
// pointer when the image's last row is replicated), `width` source pixels each; writes
// padded_width luma bytes to y0/y1 and padded_width/2 chroma bytes to u/v.
void rgb_row_pair_to_yuv420(const uint8_t* row0, const uint8_t* row1, uint32_t width, uint32_t padded_width, uint8_t* y0, uint8_t* y1,
                            uint8_t* u, uint8_t* v);

// Rows [y0, y1) x columns [x0, x1) of a YUV420 payload of width x height (even) to packed RGB
// at `out` (row stride `stride` bytes): inverse full-range BT.601 in 1/64 fixed point, chroma
// by nearest neighbour. The caller has checked the payload size.
void yuv420_region_to_rgb(const uint8_t* payload, int width, int height, int x0, int y0, int x1, int y1, uint8_t* out, size_t stride);

// Three full-resolution planes (same stride) to packed RGB with libjpeg's own YCbCr -> RGB
// fixed point (jdcolor.c): what the engine's planar path converts its resized crops with. The
// same bytes at every kernel level: at most `kernels` and the level in use (slip/simd.hpp).
void ycbcr_planes_to_rgb(const uint8_t* y, const uint8_t* cb, const uint8_t* cr, size_t stride, int width, int height, uint8_t* out,
                         size_t out_stride, SimdLevel kernels = SimdLevel::avx512);

// The same region at 1/d resolution (d = 2, 4 or 8), as a JPEG decoder's DCT scaling gives it:
// reduced pixel (rx, ry) is the rounded mean of luma block [rx*d, rx*d+d) x [ry*d, ry*d+d) and
// of the d/2 x d/2 chroma block under it (blocks past the edge replicate the last row/column),
// then converted to RGB. [rx0, rx1) x [ry0, ry1) are in reduced coordinates, inside
// ceil(width/d) x ceil(height/d). Converts d^2 times fewer pixels than the full region and
// hands the resampler d^2 times fewer: what makes large-image crops cheap.
void yuv420_region_to_rgb_reduced(const uint8_t* payload, int width, int height, int d, int rx0, int ry0, int rx1, int ry1, uint8_t* out,
                                  size_t stride, std::vector<uint16_t>& scratch);

}  // namespace slip::detail
