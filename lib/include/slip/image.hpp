// slip/image.hpp — reading image headers without decoding, and re-encoding non-JPEG images.
#pragma once

#include "slip/export.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

SLIP_API_BEGIN
namespace slip {

// Pixel limits (decompression bombs: a few hundred bytes can claim 65535x65535 pixels, 12 GiB
// of RGB). Both follow Pillow so that slip refuses what a Pillow loader would:
//  - kDefaultMaxImagePixels is Pillow's Image.MAX_IMAGE_PIXELS (its DecompressionBombWarning
//    threshold): the default of ConvertOptions::max_image_pixels (slip convert
//    --max-image-pixels), a policy the caller may raise or lower;
//  - kDecodePixelLimit, twice that, is Pillow's DecompressionBombError threshold: no slip
//    decoder (decode_to_rgb, the decode engine) allocates for an image with more pixels,
//    whatever the options say.
inline constexpr uint64_t kDefaultMaxImagePixels = 89'478'485;
inline constexpr uint64_t kDecodePixelLimit = 2 * kDefaultMaxImagePixels;
// Progressive JPEGs with more scans are refused by every slip decoder: each scan is another pass
// over all of the image's blocks, so a small file of scans that each refine one coefficient bit
// multiplies the decode time (libjpeg-turbo's "two issues with the JPEG standard" report).
// TurboJPEG's TJFLAG_LIMITSCANS limit; real encoders write about ten scans.
inline constexpr int kMaxJpegScans = 500;

enum class ImageFormat { unknown, jpeg, png, gif, bmp, webp, tiff, ppm };
const char* image_format_name(ImageFormat format) noexcept;

// What the bytes are, judged by magic bytes only (never by file name). JPEG is FF D8 alone, the
// Python writer's own test (docs/FORMAT.md#jpeg-payloads); ppm is P1..P6 followed by whitespace.
ImageFormat sniff_image_format(std::span<const std::byte> data) noexcept;

struct JpegHeader {
  uint32_t width = 0;
  uint32_t height = 0;
  int components = 0;  // 1 gray, 3 YCbCr/RGB, 4 CMYK/YCCK
  int sof_marker = 0;  // 0xC0.. 0xCF
  bool progressive = false;
  uint64_t sof_offset = 0;            // byte offset of the SOF marker's FF
  bool adobe_transform_seen = false;  // a complete Adobe APP14 segment precedes the SOF
};

// Walks the marker segments after SOI as the Python slipstream writer does
// (docs/FORMAT.md#jpeg-dimensions): stray
// non-FF bytes and FF fill bytes skipped, standalone markers stepped over, APPn/other segments
// skipped whole by their length (so an EXIF thumbnail's SOF/EOI is never seen), stopping at
// the first SOF (C0..CF except C4, C8, CC). Returns false when there is no SOI, no SOF before
// the data ends, or a segment runs past the end; like upstream, the SOF counts only when the
// byte at marker+9 (the component count) exists. A zero width or height is returned as read
// (callers reject it). On false, `out` is reset. Never reads out of bounds.
bool parse_jpeg_header(std::span<const std::byte> data, JpegHeader& out) noexcept;

// True when an EOI marker (FF D9) occurs at or after byte `from` (pass JpegHeader::sof_offset:
// entropy-coded data never holds FF D9, so one after the frame header is the image's end).
bool jpeg_has_eoi_after(std::span<const std::byte> data, uint64_t from) noexcept;

// Dimensions for the meta table: JPEG SOF, else PNG IHDR (signature + width/height at bytes
// 16/20), else 0x0. Never throws.
struct ImageSize {
  uint32_t width = 0;
  uint32_t height = 0;
};
ImageSize probe_image_size(std::span<const std::byte> data) noexcept;
// The size every format slip decodes declares in its header, before anything is decoded: as
// probe_image_size, and the GIF logical screen, the BMP info header (|height|) and the Netpbm
// header (P1..P6 width and height). 0x0 when the header is cut short or not understood. For
// pixel limits (--max-image-pixels); the meta table records probe_image_size. Never throws.
ImageSize declared_image_size(std::span<const std::byte> data) noexcept;

// True when TurboJPEG can decode these bytes straight to RGB (a JPEG that is not CMYK/YCCK):
// TurboJPEG's own header read must succeed, so zero sizes or unusual sampling give false.
bool jpeg_decodes_to_rgb(std::span<const std::byte> data) noexcept;

struct RgbImage {
  uint32_t width = 0;
  uint32_t height = 0;
  std::vector<uint8_t> pixels;  // height * width * 3, row-major RGB
};

// Decodes any supported image (JPEG incl. CMYK/YCCK, PNG of every colour type and bit depth,
// and GIF/BMP/binary PNM through stb_image) to 8-bit RGB, converting like Pillow 9.4's
// convert("RGB"): alpha dropped (not composited), gray replicated, 16-bit gray clipped to 255
// (Pillow's mode "I"), other 16-bit PNGs reduced to their high byte, CMYK inverted as Adobe
// writes it. WebP, TIFF and PNM with maxval != 255 are refused. JPEG warnings (truncation)
// are errors, as in Pillow. Images over kDecodePixelLimit pixels are refused before any pixel is
// allocated.
// Throws slip::Error(bad_input) with a reason when the bytes do not decode.
RgbImage decode_to_rgb(std::span<const std::byte> data);

// Encodes RGB pixels as a baseline JPEG with TurboJPEG (4:4:4 chroma, accurate DCT; at the
// default quality 100 re-encoding loses as little as a JPEG can). Throws slip::Error on
// failure: bad_input for empty/oversized images or a buffer of the wrong size, usage for a
// quality outside 1..100.
std::vector<std::byte> encode_rgb_jpeg(const RgbImage& image, int quality = 100);

// Fully decodes a JPEG with TurboJPEG to RGB (accurate DCT); throws Error(bad_input) with
// TurboJPEG's message on any error, including warnings such as a premature end of data.
RgbImage decode_jpeg_rgb(std::span<const std::byte> data);

}  // namespace slip
SLIP_API_END
