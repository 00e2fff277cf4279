// Image headers without decoding: format sniffing, the JPEG SOF walk of docs/FORMAT.md#jpeg-dimensions, PNG IHDR.
//
// Everything here runs on untrusted bytes (and is fuzzed): every read is preceded by a bounds
// check against data.size(), and offsets are size_t so they cannot wrap on any real input.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>

#include <turbojpeg.h>

#include "image/turbojpeg_handle.hpp"
#include "slip/image.hpp"

namespace slip {
namespace {

uint8_t at(std::span<const std::byte> d, size_t i) noexcept { return std::to_integer<uint8_t>(d[i]); }
uint32_t be16(std::span<const std::byte> d, size_t i) noexcept { return uint32_t{at(d, i)} << 8 | at(d, i + 1); }
uint32_t be32(std::span<const std::byte> d, size_t i) noexcept { return be16(d, i) << 16 | be16(d, i + 2); }

bool starts_with(std::span<const std::byte> d, std::string_view magic) noexcept {
  return d.size() >= magic.size() && std::memcmp(d.data(), magic.data(), magic.size()) == 0;
}

constexpr std::string_view kPngSignature{"\x89PNG\r\n\x1a\n", 8};

// SOFn: C0..CF except DHT (C4), JPG (C8) and DAC (CC), which share the range.
bool is_sof(uint8_t m) noexcept { return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC; }
// Markers without a length field (TEM, RSTn, SOI, EOI) and FF00 byte stuffing.
bool is_standalone(uint8_t m) noexcept { return m == 0x00 || m == 0x01 || (m >= 0xD0 && m <= 0xD9); }

}  // namespace

const char* image_format_name(ImageFormat format) noexcept {
  switch (format) {
    case ImageFormat::jpeg:
      return "jpeg";
    case ImageFormat::png:
      return "png";
    case ImageFormat::gif:
      return "gif";
    case ImageFormat::bmp:
      return "bmp";
    case ImageFormat::webp:
      return "webp";
    case ImageFormat::tiff:
      return "tiff";
    case ImageFormat::ppm:
      return "ppm";
    case ImageFormat::unknown:
      break;
  }
  return "unknown";
}

ImageFormat sniff_image_format(std::span<const std::byte> data) noexcept {
  // JPEG is FF D8 alone, exactly the Python writer's test (docs/FORMAT.md#jpeg-payloads), so an SOI-only or
  // otherwise broken JPEG is still judged a JPEG and rejected later with a precise reason.
  if (starts_with(data, "\xFF\xD8")) return ImageFormat::jpeg;
  if (starts_with(data, kPngSignature)) return ImageFormat::png;
  if (starts_with(data, "GIF87a") || starts_with(data, "GIF89a")) return ImageFormat::gif;
  if (data.size() >= 12 && starts_with(data, "RIFF") && std::memcmp(data.data() + 8, "WEBP", 4) == 0) return ImageFormat::webp;
  if (starts_with(data, std::string_view("II*\0", 4)) || starts_with(data, std::string_view("MM\0*", 4))) return ImageFormat::tiff;
  if (starts_with(data, "BM")) return ImageFormat::bmp;
  // Netpbm P1..P6: the digit must be followed by whitespace, so text like "P5x" is not one.
  if (data.size() >= 3 && at(data, 0) == 'P' && at(data, 1) >= '1' && at(data, 1) <= '6') {
    const uint8_t c = at(data, 2);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') return ImageFormat::ppm;
  }
  return ImageFormat::unknown;
}

// A transcription of upstream's read_jpeg_dimensions (slipstream/cache.py), bounds included:
// the SOF is accepted only when marker+9 (the component count) is inside the data, a
// length field is read only when both its bytes exist, and a segment whose length carries
// the walk past the end ends it without a SOF. Lengths 0 and 1 are taken at face value as
// upstream does; the walk still advances by at least 2, so it always terminates.
bool parse_jpeg_header(std::span<const std::byte> data, JpegHeader& out) noexcept {
  out = JpegHeader{};
  const size_t n = data.size();
  if (n < 2 || at(data, 0) != 0xFF || at(data, 1) != 0xD8) return false;
  bool adobe = false;
  size_t i = 2;
  while (i + 1 < n) {
    if (at(data, i) != 0xFF) {  // stray byte (or entropy-coded data): resynchronise
      ++i;
      continue;
    }
    const uint8_t marker = at(data, i + 1);
    if (marker == 0xFF) {  // fill byte before a marker
      ++i;
      continue;
    }
    if (is_standalone(marker)) {
      i += 2;
      continue;
    }
    if (is_sof(marker)) {
      if (i + 9 >= n) return false;
      out.height = be16(data, i + 5);
      out.width = be16(data, i + 7);
      out.components = at(data, i + 9);
      out.sof_marker = marker;
      out.progressive = marker == 0xC2 || marker == 0xC6 || marker == 0xCA || marker == 0xCE;
      out.sof_offset = i;
      out.adobe_transform_seen = adobe;
      return true;
    }
    if (i + 3 >= n) return false;
    const size_t length = be16(data, i + 2);
    // APP14 "Adobe" with its transform byte (length >= 12: "Adobe", version, flags0/1, transform).
    if (marker == 0xEE && length >= 12 && i + 2 + length <= n && std::memcmp(data.data() + i + 4, "Adobe", 5) == 0) adobe = true;
    i += 2 + length;
  }
  return false;
}

ImageSize probe_image_size(std::span<const std::byte> data) noexcept {
  if (JpegHeader h; parse_jpeg_header(data, h)) return {h.width, h.height};
  // IHDR must be the first chunk, so its width/height sit at fixed offsets 16 and 20.
  if (data.size() >= 24 && starts_with(data, kPngSignature)) return {be32(data, 16), be32(data, 20)};
  return {};
}

ImageSize declared_image_size(std::span<const std::byte> data) noexcept {
  auto le16 = [&](size_t i) { return uint32_t{at(data, i)} | uint32_t{at(data, i + 1)} << 8; };
  switch (sniff_image_format(data)) {
    case ImageFormat::jpeg:
    case ImageFormat::png:
      return probe_image_size(data);
    case ImageFormat::gif:  // "GIF89a", then the logical screen's width and height (what stb decodes to)
      return data.size() >= 10 ? ImageSize{le16(6), le16(8)} : ImageSize{};
    case ImageFormat::bmp: {  // BITMAPFILEHEADER (14 bytes), then the info header: its size, then the sizes
      if (data.size() < 26) return {};
      const uint32_t info_size = le16(14) | le16(16) << 16;
      if (info_size == 12) return {le16(18), le16(20)};  // BITMAPCOREHEADER: 16-bit sizes
      auto abs32 = [&](size_t i) {
        const auto v = static_cast<int32_t>(le16(i) | le16(i + 2) << 16);
        return v < 0 ? uint32_t{0} - static_cast<uint32_t>(v) : static_cast<uint32_t>(v);  // top-down: negative height
      };
      return {abs32(18), abs32(22)};
    }
    case ImageFormat::ppm: {  // "P6", then width and height in decimal, '#' comments between
      size_t i = 2;
      uint32_t size[2] = {0, 0};
      for (uint32_t& value : size) {
        while (i < data.size() && (std::isspace(at(data, i)) || at(data, i) == '#')) {
          if (at(data, i) == '#')
            while (i < data.size() && at(data, i) != '\n') ++i;
          else
            ++i;
        }
        if (i >= data.size() || !std::isdigit(at(data, i))) return {};
        uint64_t v = 0;
        for (; i < data.size() && std::isdigit(at(data, i)); ++i) v = std::min<uint64_t>(v * 10 + (at(data, i) - '0'), UINT32_MAX);
        value = static_cast<uint32_t>(v);
      }
      return {size[0], size[1]};
    }
    default:
      return {};
  }
}

bool jpeg_decodes_to_rgb(std::span<const std::byte> data) noexcept {
  if (sniff_image_format(data) != ImageFormat::jpeg) return false;
  // TurboJPEG's own header reader decides: it rejects what it cannot decode (zero sizes,
  // unknown colour spaces) that our SOF walk would accept.
  thread_local detail::TjHandle handle;
  if (!handle) handle.reset(tjInitDecompress());
  if (!handle) return false;
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), reinterpret_cast<const unsigned char*>(data.data()), static_cast<unsigned long>(data.size()),
                          &width, &height, &subsamp, &colorspace) != 0) {
    handle.reset();  // TurboJPEG 2.1 leaves the handle mid-header after an error (see codec.cpp)
    return false;
  }
  return width > 0 && height > 0 && colorspace != TJCS_CMYK && colorspace != TJCS_YCCK;
}

bool jpeg_has_eoi_after(std::span<const std::byte> data, uint64_t from) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  // Nearly every file ends with its EOI: no need to walk the entropy data for it (that walk
  // was 8% of a page-cache conversion).
  if (data.size() >= 2 && data.size() - 2 >= from && p[data.size() - 2] == 0xFF && p[data.size() - 1] == 0xD9) return true;
  uint64_t i = from;
  while (i + 1 < data.size()) {
    const void* hit = std::memchr(p + i, 0xFF, data.size() - 1 - i);
    if (!hit) return false;
    i = static_cast<uint64_t>(static_cast<const unsigned char*>(hit) - p);
    if (p[i + 1] == 0xD9) return true;
    ++i;
  }
  return false;
}

}  // namespace slip
