// libFuzzer target: slip's Huffman decoder (decode/huffman_decoder.cpp) against libjpeg's on
// any bytes. The first byte: its top bit re-encodes the rest with restart markers first, bits
// 0-1 pick the DCT scale, bit 2 the RGB region path (rows above skipped, columns cropped)
// instead of the planes. What slip's decoder accepts, libjpeg must decode without a warning to
// the same samples, and the default mode must end as libjpeg does.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "decode/jpeg_region.hpp"
#include "image/jpeg_restarts.hpp"

namespace {

using slip::detail::EntropyDecoding;

struct Outcome {
  bool ok = false;
  std::vector<uint8_t> samples;
};

Outcome decode(slip::detail::JpegRegionDecoder& d, EntropyDecoding mode, std::span<const std::byte> jpeg, uint8_t control) {
  Outcome r;
  slip::detail::JpegImageInfo info;
  d.set_entropy_decoding(mode);
  if (!d.read_header(jpeg, info)) return r;
  static std::vector<uint8_t> scratch;
  if (control & 4) {
    if (!info.rgb_capable) return r;
    const int x0 = info.width / 4, y0 = info.height / 3, x1 = info.width, y1 = info.height;
    slip::detail::DecodedRegion region;
    r.ok = d.decode_region(1, x0, y0, x1, y1, scratch, region);
    if (r.ok)
      for (int y = 0; y < y1 - y0; ++y) {
        const uint8_t* row = region.data + static_cast<size_t>(y) * region.stride + static_cast<size_t>(region.x_offset) * 3;
        r.samples.insert(r.samples.end(), row, row + static_cast<size_t>(x1 - x0) * 3);
      }
    return r;
  }
  if (!d.planar_capable()) return r;
  slip::detail::DecodedPlanes planes;
  const int denom = 1 << (control & 3);
  r.ok = d.decode_planes(denom, 0, 0, info.width, info.height, scratch, planes);
  if (r.ok)
    for (int c = 0; c < planes.planes; ++c)
      for (int y = 0; y < planes.height[c]; ++y)
        r.samples.insert(r.samples.end(), planes.data[c] + static_cast<size_t>(y) * planes.stride[c],
                         planes.data[c] + static_cast<size_t>(y) * planes.stride[c] + planes.width[c]);
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t control = data[0];
  std::span<const std::byte> bytes = std::as_bytes(std::span(data + 1, size - 1));
  static slip::detail::JpegRegionDecoder jpeg;
  slip::detail::JpegImageInfo info;
  if (!jpeg.read_header(bytes, info)) return 0;
  if (static_cast<uint64_t>(info.width) * static_cast<uint64_t>(info.height) > (1u << 20)) return 0;  // fast iterations
  std::optional<std::vector<std::byte>> reencoded;
  if (control & 0x80) {
    reencoded = slip::detail::reencode_with_restarts(bytes);
    if (!reencoded) return 0;
    bytes = *reencoded;
  }
  const Outcome libjpeg = decode(jpeg, EntropyDecoding::libjpeg, bytes, control);
  const Outcome ours = decode(jpeg, EntropyDecoding::slip_only, bytes, control);
  const Outcome standard = decode(jpeg, EntropyDecoding::slip_then_libjpeg, bytes, control);
  if (ours.ok && (!libjpeg.ok || ours.samples != libjpeg.samples)) __builtin_trap();
  if (standard.ok != libjpeg.ok || standard.samples != libjpeg.samples) __builtin_trap();
  return 0;
}
