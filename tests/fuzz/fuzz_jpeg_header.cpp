// libFuzzer target: magic-byte sniffing, the JPEG marker walk and the PNG IHDR probe.
#include <cstddef>
#include <cstdint>
#include <span>

#include "slip/image.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  (void)slip::sniff_image_format(bytes);
  slip::JpegHeader h;
  if (slip::parse_jpeg_header(bytes, h) && h.sof_offset >= size) __builtin_trap();
  (void)slip::probe_image_size(bytes);
  return 0;
}
