// libFuzzer target: full decode of any image bytes (TurboJPEG, libpng, stb_image) to RGB, as
// the transcoder does for non-JPEG samples.
#include <cstddef>
#include <cstdint>
#include <span>

#include "slip/error.hpp"
#include "slip/image.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  try {
    const slip::RgbImage img = slip::decode_to_rgb(bytes);
    if (img.pixels.size() != static_cast<size_t>(img.width) * img.height * 3) __builtin_trap();
  } catch (const slip::Error&) {
  }
  return 0;
}
