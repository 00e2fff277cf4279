// slip/yuv420_image.hpp — the YUV420 payload of docs/FORMAT.md#yuv420: the exact RGB -> I420
// conversion and its inverse (the image layer; the sibling files in a cache are slip/yuv420.hpp).
#pragma once

#include "slip/export.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "slip/image.hpp"

SLIP_API_BEGIN
namespace slip {

// A YUV420 payload: planar Y (h*w) then U then V (h/2 * w/2 each), with even padded sizes.
struct Yuv420Image {
  uint32_t width = 0;   // padded: the source width rounded up to even
  uint32_t height = 0;  // padded: the source height rounded up to even
  std::vector<std::byte> planes;
};

// Bytes of the payload of a width x height image after padding to even sizes.
uint64_t yuv420_payload_size(uint32_t width, uint32_t height) noexcept;

// docs/FORMAT.md#yuv420-conversion, bit-exact with the Python builder: odd sizes padded by replicating the
// last row/column, full-range BT.601 in float32 (no fused multiply-add) clipped and truncated,
// chroma the floor of each 2x2 block's mean. Throws Error(bad_input) for an empty image or a
// pixel buffer of the wrong size.
Yuv420Image rgb_to_yuv420(const RgbImage& rgb);

// The inverse transform (1/64 fixed point, within one level of the exact BT.601 inverse;
// nearest-neighbour chroma: each chroma sample covers
// its 2x2 block, as the Python loader's reference yuv420_to_rgb). Throws Error(bad_input) when
// the payload size does not match the (even) dimensions.
RgbImage yuv420_to_rgb(std::span<const std::byte> payload, uint32_t width, uint32_t height);

}  // namespace slip
SLIP_API_END
