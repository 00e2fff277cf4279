// Internal: the YUV420 pixel kernels shared by the converter, the decode engine and verify.
#pragma once

#include <cstddef>
#include <cstdint>

namespace slip::detail {

// One pair of padded output rows of spec §1.6.1: `row0`/`row1` are RGB source rows (the same
// pointer when the image's last row is replicated), `width` source pixels each; writes
// padded_width luma bytes to y0/y1 and padded_width/2 chroma bytes to u/v.
void rgb_row_pair_to_yuv420(const uint8_t* row0, const uint8_t* row1, uint32_t width, uint32_t padded_width, uint8_t* y0,
                            uint8_t* y1, uint8_t* u, uint8_t* v);

// Rows [y0, y1) x columns [x0, x1) of a YUV420 payload of width x height (even) to packed RGB
// at `out` (row stride `stride` bytes): inverse full-range BT.601 in 16.16 fixed point, chroma
// by nearest neighbour. The caller has checked the payload size.
void yuv420_region_to_rgb(const uint8_t* payload, int width, int height, int x0, int y0, int x1, int y1, uint8_t* out,
                          size_t stride);

}  // namespace slip::detail
