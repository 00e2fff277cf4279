// slip/image.hpp — reading image headers without decoding, and re-encoding non-JPEG images.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace slip {

enum class ImageFormat { unknown, jpeg, png, gif, bmp, webp, tiff, ppm };
const char* image_format_name(ImageFormat format) noexcept;

// What the bytes are, judged by magic bytes only (never by file name).
ImageFormat sniff_image_format(std::span<const std::byte> data) noexcept;

struct JpegHeader {
  uint32_t width = 0;
  uint32_t height = 0;
  int components = 0;     // 1 gray, 3 YCbCr/RGB, 4 CMYK/YCCK
  int sof_marker = 0;     // 0xC0.. 0xCF
  bool progressive = false;
  uint64_t sof_offset = 0;  // byte offset of the SOF marker's FF
  bool adobe_transform_seen = false;
};

// Walks the marker segments after SOI as the Python slipstream writer does (spec §1.5): stray
// non-FF bytes and FF fill bytes skipped, standalone markers stepped over, APPn/other segments
// skipped whole by their length (so an EXIF thumbnail's SOF/EOI is never seen), stopping at
// the first SOF (C0..CF except C4, C8, CC). Returns false when there is no SOI, no SOF before
// the data ends, or a segment runs past the end. Never reads out of bounds.
bool parse_jpeg_header(std::span<const std::byte> data, JpegHeader& out) noexcept;

// Dimensions for the meta table: JPEG SOF, else PNG IHDR, else 0x0. Never throws.
struct ImageSize {
  uint32_t width = 0;
  uint32_t height = 0;
};
ImageSize probe_image_size(std::span<const std::byte> data) noexcept;

// True when TurboJPEG can decode these bytes straight to RGB (a JPEG that is not CMYK/YCCK).
bool jpeg_decodes_to_rgb(std::span<const std::byte> data) noexcept;

struct RgbImage {
  uint32_t width = 0;
  uint32_t height = 0;
  std::vector<uint8_t> pixels;  // height * width * 3, row-major RGB
};

// Decodes any supported image (JPEG incl. CMYK/YCCK, PNG of every colour type and bit depth,
// and what stb_image reads) to 8-bit RGB, converting like Pillow's convert("RGB"): alpha
// dropped (not composited), gray replicated, CMYK inverted as Adobe writes it.
// Throws slip::Error(bad_input) with a reason when the bytes do not decode.
RgbImage decode_to_rgb(std::span<const std::byte> data);

// Encodes RGB pixels as a baseline JPEG with TurboJPEG (4:4:4 chroma at quality 100, so
// re-encoding loses as little as a JPEG can). Throws slip::Error on failure.
std::vector<std::byte> encode_rgb_jpeg(const RgbImage& image, int quality = 100);

// Fully decodes a JPEG with TurboJPEG to RGB (accurate DCT); throws Error(bad_input) with
// TurboJPEG's message on any error, including warnings such as a premature end of data.
RgbImage decode_jpeg_rgb(std::span<const std::byte> data);

}  // namespace slip
