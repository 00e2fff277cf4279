// Pixel decoding and RGB JPEG encoding: TurboJPEG for JPEG, libpng for PNG, stb_image for
// GIF/BMP/PNM. The RGB conversions reproduce Pillow 9.4's Image.convert("RGB"), because the
// Python writer re-encodes non-JPEG images from exactly those pixels (docs/FORMAT.md#non-jpeg).
#include <algorithm>
#include <cctype>
#include <climits>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <png.h>
#include <turbojpeg.h>

// stb_image is compiled here, privately: static linkage keeps its symbols out of the shared
// library (and away from any other copy), and only the formats we route to it are built.
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_NO_STDIO
#define STBI_ONLY_GIF
#define STBI_ONLY_BMP
#define STBI_ONLY_PNM
#include <stb_image.h>  // a SYSTEM include directory (CMakeLists.txt): its warnings are not ours

#include "image/turbojpeg_handle.hpp"
#include "slip/error.hpp"
#include "slip/image.hpp"

namespace slip {
namespace {

// Decompression-bomb guard (slip/image.hpp): what Pillow refuses to open, slip refuses to
// decode (a 19 KB GIF of 8296x24916 took 10 s and 2.3 GB).
constexpr uint64_t kMaxPixels = kDecodePixelLimit;

void check_pixel_count(uint64_t width, uint64_t height, const char* what) {
  // Both factors are < 2^32, so the product cannot overflow 64 bits.
  if (width * height > kMaxPixels)
    throw Error(Errc::bad_input, std::string(what) + " of " + std::to_string(width) + "x" + std::to_string(height) +
                                     " pixels exceeds the limit of " + std::to_string(kMaxPixels) + " pixels");
}

const unsigned char* bytes_of(std::span<const std::byte> data) { return reinterpret_cast<const unsigned char*>(data.data()); }

// ---- TurboJPEG ---------------------------------------------------------------------------

struct TjFree {
  void operator()(unsigned char* p) const noexcept { tjFree(p); }
};
using detail::TjHandle;

// One handle per thread and direction: handles are not thread-safe and costly to create.
TjHandle& tj_slot(bool compress) {
  thread_local TjHandle decompressor, compressor;
  return compress ? compressor : decompressor;
}

tjhandle tj_handle(bool compress) {
  TjHandle& h = tj_slot(compress);
  if (!h) h.reset(compress ? tjInitCompress() : tjInitDecompress());
  if (!h) throw Error(Errc::io, std::string("cannot initialise TurboJPEG: ") + tjGetErrorStr2(nullptr));
  return h.get();
}

// TurboJPEG 2.1's tjDecompressHeader3 returns from a libjpeg error without aborting the
// decompressor, and the handle then misreads the next image ("Bogus DQT index"). So a handle
// that reported an error is dropped; its thread makes a fresh one on the next call.
[[noreturn]] void throw_tj(bool compress, const char* context = "") {
  TjHandle& h = tj_slot(compress);
  std::string message = std::string(context) + tjGetErrorStr2(h.get());
  h.reset();
  throw Error(Errc::bad_input, std::move(message));
}

struct JpegInfo {
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
};

JpegInfo jpeg_info(tjhandle h, std::span<const std::byte> data) {
  JpegInfo info;
  if (tjDecompressHeader3(h, bytes_of(data), static_cast<unsigned long>(data.size()), &info.width, &info.height, &info.subsamp,
                          &info.colorspace) != 0)
    throw_tj(false);
  // tjDecompressHeader3 accepts a bare SOI with a 0x0 "image" (corpus/bad/soi_only.JPEG).
  if (info.width <= 0 || info.height <= 0) {
    tj_slot(false).reset();  // not worth trusting the handle's state after this either
    throw Error(Errc::bad_input, "JPEG datastream contains no image");
  }
  check_pixel_count(static_cast<uint64_t>(info.width), static_cast<uint64_t>(info.height), "JPEG image");
  return info;
}

// Any nonzero return fails, warnings included: a "Premature end of JPEG file" image is
// partly grey, and Pillow (whose pixels we must match) refuses it too.
std::vector<uint8_t> tj_decode(tjhandle h, std::span<const std::byte> data, const JpegInfo& info, int pixel_format) {
  std::vector<uint8_t> out(static_cast<size_t>(info.width) * static_cast<size_t>(info.height) *
                           static_cast<size_t>(tjPixelSize[pixel_format]));
  if (tjDecompress2(h, bytes_of(data), static_cast<unsigned long>(data.size()), out.data(), info.width, 0, info.height, pixel_format,
                    TJFLAG_ACCURATEDCT | TJFLAG_LIMITSCANS) != 0)
    throw_tj(false);
  return out;
}

// Pillow opens every CMYK JPEG as Adobe-inverted ("CMYK;I") and converts with
//   nk = 255 - K;  R = nk - MULDIV255(C, nk)  (same for G/M, B/Y)
// In terms of the stored (inverted) samples c, k that libjpeg returns, C = 255 - c and nk = k.
uint8_t muldiv255(unsigned a, unsigned b) {
  const unsigned t = a * b + 128;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);
}

std::vector<uint8_t> inverted_cmyk_to_rgb(std::span<const uint8_t> cmyk) {
  std::vector<uint8_t> rgb(cmyk.size() / 4 * 3);
  for (size_t p = 0, q = 0; p + 3 < cmyk.size(); p += 4, q += 3) {
    const unsigned k = cmyk[p + 3];
    for (size_t c = 0; c < 3; ++c) rgb[q + c] = static_cast<uint8_t>(k - muldiv255(255u - cmyk[p + c], k));
  }
  return rgb;
}

RgbImage decode_jpeg_any(std::span<const std::byte> data) {
  tjhandle h = tj_handle(false);
  const JpegInfo info = jpeg_info(h, data);
  RgbImage img{static_cast<uint32_t>(info.width), static_cast<uint32_t>(info.height), {}};
  if (info.colorspace == TJCS_CMYK || info.colorspace == TJCS_YCCK)  // libjpeg turns YCCK into CMYK
    img.pixels = inverted_cmyk_to_rgb(tj_decode(h, data, info, TJPF_CMYK));
  else
    img.pixels = tj_decode(h, data, info, TJPF_RGB);  // gray is replicated, as Pillow's L -> RGB
  return img;
}

// ---- libpng ------------------------------------------------------------------------------
//
// libpng reports errors by longjmp. The setjmp frames below hold only trivially destructible
// locals and everything with a destructor lives in the caller, so no destructor is skipped.

struct PngInput {
  std::span<const std::byte> data;
  size_t pos = 0;
  char error[256] = "";
};

void png_read_cb(png_structp png, png_bytep out, size_t n) {
  auto* in = static_cast<PngInput*>(png_get_io_ptr(png));
  if (n > in->data.size() - in->pos) png_error(png, "PNG data ends early (truncated file)");
  std::memcpy(out, in->data.data() + in->pos, n);
  in->pos += n;
}

[[noreturn]] void png_error_cb(png_structp png, png_const_charp message) {
  auto* in = static_cast<PngInput*>(png_get_error_ptr(png));
  std::snprintf(in->error, sizeof in->error, "%s", message);
  png_longjmp(png, 1);
}

void png_warning_cb(png_structp, png_const_charp) {}  // benign issues do not stop Pillow either

struct PngHandles {
  png_structp png = nullptr;
  png_infop info = nullptr;
  PngHandles() = default;
  PngHandles(const PngHandles&) = delete;
  PngHandles& operator=(const PngHandles&) = delete;
  ~PngHandles() {
    if (png) png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
  }
};

struct PngLayout {
  uint32_t width = 0, height = 0;
  int channels = 0, bit_depth = 0;
  size_t rowbytes = 0;
};

// Reads the header and sets up the transformations (see convert_png_row for the rest).
bool read_png_header(png_structp png, png_infop info, PngLayout* out) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  const int color = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  out->width = png_get_image_width(png, info);
  out->height = png_get_image_height(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);                    // may add alpha from tRNS
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);  // x255, x85, x17
  // Pillow keeps 16-bit gray as mode "I" and clips it (done in convert_png_row); every other
  // 16-bit mode (RGB;16B, RGBA;16B, LA;16B) keeps the high byte, which is what strip_16 does.
  if (depth == 16 && color != PNG_COLOR_TYPE_GRAY) png_set_strip_16(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  out->channels = png_get_channels(png, info);
  out->bit_depth = png_get_bit_depth(png, info);
  out->rowbytes = png_get_rowbytes(png, info);
  return true;
}

bool read_png_pixels(png_structp png, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);  // no png_read_end: Pillow does not read past the image data either
  return true;
}

// Alpha is dropped, never composited; gray is replicated; 16-bit gray is clipped to 255.
void convert_png_row(const uint8_t* in, uint8_t* out, const PngLayout& l) {
  const int bytes = l.bit_depth / 8;
  auto sample = [&](size_t i) -> uint8_t {
    if (bytes == 1) return in[i];
    const unsigned v = unsigned{in[2 * i]} << 8 | in[2 * i + 1];
    return static_cast<uint8_t>(v > 255 ? 255 : v);
  };
  const size_t ch = static_cast<size_t>(l.channels);
  for (size_t x = 0; x < l.width; ++x, out += 3) {
    if (ch <= 2) {
      out[0] = out[1] = out[2] = sample(x * ch);
    } else {
      for (size_t c = 0; c < 3; ++c) out[c] = sample(x * ch + c);
    }
  }
}

RgbImage decode_png(std::span<const std::byte> data) {
  PngInput input{data};
  PngHandles h;
  h.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &input, png_error_cb, png_warning_cb);
  if (h.png) h.info = png_create_info_struct(h.png);
  if (!h.png || !h.info) throw Error(Errc::io, "cannot initialise libpng");
  png_set_read_fn(h.png, &input, png_read_cb);

  auto fail = [&] { return Error(Errc::bad_input, std::string("PNG: ") + input.error); };
  PngLayout layout;
  if (!read_png_header(h.png, h.info, &layout)) throw fail();
  check_pixel_count(layout.width, layout.height, "PNG image");
  if ((layout.bit_depth != 8 && layout.bit_depth != 16) || layout.channels < 1 || layout.channels > 4 ||
      layout.rowbytes != size_t{layout.width} * static_cast<size_t>(layout.channels) * (layout.bit_depth / 8))
    throw Error(Errc::bad_input, "PNG: unexpected row layout after conversion");

  std::vector<uint8_t> raw(layout.rowbytes * layout.height);
  std::vector<png_bytep> rows(layout.height);
  for (size_t y = 0; y < layout.height; ++y) rows[y] = raw.data() + y * layout.rowbytes;
  if (!read_png_pixels(h.png, rows.data())) throw fail();

  RgbImage img{layout.width, layout.height, std::vector<uint8_t>(size_t{layout.width} * layout.height * 3)};
  for (size_t y = 0; y < layout.height; ++y) convert_png_row(rows[y], img.pixels.data() + y * size_t{layout.width} * 3, layout);
  return img;
}

// ---- stb_image (GIF, BMP, PNM) -----------------------------------------------------------
//
// Pixels equal Pillow's for BMP, P5/P6 with maxval 255 and GIFs without transparency (tested).
// Known difference: stb gives a GIF's transparent pixels as black where Pillow's convert("RGB")
// shows the palette colour of the transparent index.

struct StbiFree {
  void operator()(stbi_uc* p) const noexcept { stbi_image_free(p); }
};

// The maxval of a binary P5/P6 header ("P6 <w> <h> <maxval>", '#' comments allowed), or -1.
long pnm_maxval(std::span<const std::byte> data) {
  size_t i = 2;
  auto byte = [&](size_t k) { return std::to_integer<char>(data[k]); };
  long value = -1;
  for (int field = 0; field < 3; ++field) {
    while (i < data.size() && (std::isspace(static_cast<unsigned char>(byte(i))) || byte(i) == '#')) {
      if (byte(i) == '#')
        while (i < data.size() && byte(i) != '\n') ++i;
      else
        ++i;
    }
    value = -1;
    for (; i < data.size() && byte(i) >= '0' && byte(i) <= '9'; ++i)
      value = std::min<long>((value < 0 ? 0 : value) * 10 + (byte(i) - '0'), 1L << 20);
    if (value < 0) return -1;
  }
  return value;
}

RgbImage decode_stb(std::span<const std::byte> data, ImageFormat format) {
  const std::string name = image_format_name(format);
  if (data.size() > static_cast<size_t>(INT_MAX)) throw Error(Errc::bad_input, name + " image larger than 2 GiB");
  const int len = static_cast<int>(data.size());
  // stb reads PNM samples raw, whereas Pillow rescales maxval != 255 (and this stb takes the
  // low byte of 16-bit samples): only the common maxval 255 gives Pillow's pixels.
  if (format == ImageFormat::ppm && (data.size() < 2 || (std::to_integer<char>(data[1]) != '5' && std::to_integer<char>(data[1]) != '6')))
    throw Error(Errc::bad_input, "ppm: only binary P5/P6 files are supported");
  if (format == ImageFormat::ppm && pnm_maxval(data) != 255)
    throw Error(Errc::bad_input, "ppm: only maxval 255 is supported (got " + std::to_string(pnm_maxval(data)) + ")");
  int w = 0, h = 0, comp = 0;
  if (!stbi_info_from_memory(bytes_of(data), len, &w, &h, &comp)) throw Error(Errc::bad_input, name + ": " + stbi_failure_reason());
  check_pixel_count(static_cast<uint64_t>(w), static_cast<uint64_t>(h), (name + " image").c_str());
  // No allocation beyond what the file can hold: the most pixels each format's coding can
  // produce per input byte (GIF: a >= 3-bit LZW code emits <= 4096 pixels; BMP: an RLE pair
  // emits <= 255; binary PNM: >= 1 byte per pixel). A 13-byte GIF claiming 26679x9921 is refused
  // here instead of allocating a gigabyte.
  const uint64_t per_byte = format == ImageFormat::gif ? 8 * 4096 / 3 : format == ImageFormat::bmp ? 256 : 1;
  if (static_cast<uint64_t>(w) * static_cast<uint64_t>(h) > static_cast<uint64_t>(data.size()) * per_byte)
    throw Error(Errc::bad_input, name + " image claims " + std::to_string(w) + "x" + std::to_string(h) + " pixels, more than its " +
                                     std::to_string(data.size()) + " bytes can hold");
  // Native channels (req_comp 0), converted below: stb's own channel conversion overruns its
  // buffer on 16-bit PNM (this stb, 2022-09, converts 16-bit data with its 8-bit routine).
  std::unique_ptr<stbi_uc, StbiFree> px(stbi_load_from_memory(bytes_of(data), len, &w, &h, &comp, 0));
  if (!px || w <= 0 || h <= 0 || comp < 1 || comp > 4) throw Error(Errc::bad_input, name + ": " + stbi_failure_reason());
  check_pixel_count(static_cast<uint64_t>(w), static_cast<uint64_t>(h), (name + " image").c_str());
  const size_t pixels = static_cast<size_t>(w) * static_cast<size_t>(h), ch = static_cast<size_t>(comp);
  RgbImage img{static_cast<uint32_t>(w), static_cast<uint32_t>(h), std::vector<uint8_t>(pixels * 3)};
  const stbi_uc* in = px.get();
  for (size_t i = 0; i < pixels; ++i, in += ch) {  // gray replicated, alpha dropped
    uint8_t* out = img.pixels.data() + 3 * i;
    if (ch <= 2) {
      out[0] = out[1] = out[2] = in[0];
    } else {
      out[0] = in[0], out[1] = in[1], out[2] = in[2];
    }
  }
  return img;
}

}  // namespace

RgbImage decode_to_rgb(std::span<const std::byte> data) {
  const ImageFormat format = sniff_image_format(data);
  switch (format) {
    case ImageFormat::jpeg:
      return decode_jpeg_any(data);
    case ImageFormat::png:
      return decode_png(data);
    case ImageFormat::gif:
    case ImageFormat::bmp:
    case ImageFormat::ppm:
      return decode_stb(data, format);
    case ImageFormat::webp:
    case ImageFormat::tiff:
      throw Error(Errc::bad_input, std::string("no decoder for ") + image_format_name(format) + " images");
    case ImageFormat::unknown:
      break;
  }
  throw Error(Errc::bad_input, "not a recognised image format");
}

std::vector<std::byte> encode_rgb_jpeg(const RgbImage& image, int quality) {
  // JPEG frame sizes are 16-bit; TurboJPEG's int arguments are then safe as well.
  if (image.width == 0 || image.height == 0 || image.width > 65535 || image.height > 65535)
    throw Error(Errc::bad_input, "cannot encode a " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                                     " image as JPEG (sides must be 1..65535)");
  if (image.pixels.size() != size_t{image.width} * image.height * 3)
    throw Error(Errc::bad_input, "RGB buffer of " + std::to_string(image.pixels.size()) + " bytes does not match " +
                                     std::to_string(image.width) + "x" + std::to_string(image.height));
  if (quality < 1 || quality > 100) throw Error(Errc::usage, "JPEG quality " + std::to_string(quality) + " is not in 1..100");
  tjhandle h = tj_handle(true);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(h, image.pixels.data(), static_cast<int>(image.width), 0, static_cast<int>(image.height), TJPF_RGB, &out,
                             &size, TJSAMP_444, quality, TJFLAG_ACCURATEDCT);
  const std::unique_ptr<unsigned char, TjFree> owned(out);
  if (rc != 0) throw_tj(true, "JPEG encode: ");
  const auto* begin = reinterpret_cast<const std::byte*>(out);
  return {begin, begin + size};
}

RgbImage decode_jpeg_rgb(std::span<const std::byte> data) {
  tjhandle h = tj_handle(false);
  const JpegInfo info = jpeg_info(h, data);
  return {static_cast<uint32_t>(info.width), static_cast<uint32_t>(info.height), tj_decode(h, data, info, TJPF_RGB)};
}

}  // namespace slip
