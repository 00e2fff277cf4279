// libFuzzer target: restart-marker JPEGs on any bytes. The first byte picks a window; with its
// top bit set, the rest is first re-encoded with restart markers (libjpeg through slip's output
// manager). Then the engine's restart path: geometry (with the frame header), interval index, the cut,
// and a planar decode of the cut, whose size must be the one the cut promised.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "decode/jpeg_region.hpp"
#include "decode/restart_cut.hpp"
#include "image/jpeg_restarts.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t control = data[0];
  std::span<const std::byte> bytes = std::as_bytes(std::span(data + 1, size - 1));
  static slip::detail::JpegRegionDecoder jpeg;
  static std::vector<uint8_t> scratch;
  static std::vector<size_t> ends;
  static std::vector<std::byte> cut_jpeg;
  slip::detail::JpegImageInfo info;
  if (!jpeg.read_header(bytes, info)) return 0;
  if (static_cast<uint64_t>(info.width) * static_cast<uint64_t>(info.height) > (1u << 22)) return 0;  // fast iterations
  std::optional<std::vector<std::byte>> reencoded;
  if (control & 0x80) {
    reencoded = slip::detail::reencode_with_restarts(bytes);
    if (!reencoded) return 0;
    bytes = *reencoded;
    if (!jpeg.read_header(bytes, info)) __builtin_trap();  // what libjpeg wrote, libjpeg reads
  }
  slip::detail::RestartGeometry geometry;
  if (!jpeg.restart_geometry(geometry) || !slip::detail::index_restart_intervals(bytes, geometry, ends)) return 0;
  const auto w = static_cast<uint32_t>(info.width), h = static_cast<uint32_t>(info.height);
  const uint32_t x0 = w * (control & 7) / 8, y0 = h * ((control >> 3) & 7) / 8;
  const uint32_t x1 = x0 + 1 + (w - x0) * (control & 3) / 4, y1 = y0 + 1 + (h - y0) * ((control >> 2) & 3) / 4;
  slip::detail::RestartCut cut;
  if (!slip::detail::cut_restart_window(bytes, geometry, ends, x0, y0, x1, y1, cut_jpeg, cut)) return 0;
  if (cut.x > x0 || cut.y > y0 || cut.x + cut.width > w || cut.y + cut.height > h || cut_jpeg.size() > bytes.size() + 16) __builtin_trap();
  if (!jpeg.read_header(cut_jpeg, info)) return 0;
  if (static_cast<uint32_t>(info.width) != cut.width || static_cast<uint32_t>(info.height) != cut.height) return 0;
  if (!jpeg.planar_capable()) return 0;
  slip::detail::DecodedPlanes planes;
  (void)jpeg.decode_planes(1, 0, 0, info.width, info.height, scratch, planes);
  return 0;
}
