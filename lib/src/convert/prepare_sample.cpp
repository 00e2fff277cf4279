// One sample prepared for the cache: format sniffing, SOF checks, non-JPEG and raw pixels
// transcoded (with their ledger entries), JPEG restart markers, UTF-8 checks, checksums.
#include "convert/prepare_sample.hpp"

#include "image/jpeg_restarts.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/image.hpp"
#include "slip/yuv420.hpp"
#include "util/untrusted.hpp"

namespace slip {

namespace {

using detail::PreparedSample;

// Non-JPEG pixels kept loadable: re-encoded as an RGB JPEG, quality 100.
void store_as_jpeg(Value& v, const RgbImage& rgb) {
  const std::vector<std::byte> jpeg = encode_rgb_jpeg(rgb, 100);
  v.bytes.assign(jpeg.begin(), jpeg.end());
  v.width = rgb.width;
  v.height = rgb.height;
  v.raw_channels = 0;
  v.raw_description.clear();
}

// YUV420 storage: decode (or take the raw pixels), convert exactly as docs/FORMAT.md#yuv420-conversion.
void store_as_yuv420(Value& v, const RgbImage& rgb) {
  const Yuv420Image yuv = rgb_to_yuv420(rgb);
  v.bytes.assign(yuv.planes.begin(), yuv.planes.end());
  v.width = yuv.width;
  v.height = yuv.height;
  v.raw_channels = 0;
  v.raw_description.clear();
}

// --jpeg-restarts: the stored JPEG re-encoded with restart markers, when libjpeg takes it cleanly.
void add_restarts(Value& v) {
  if (std::optional<std::vector<std::byte>> reencoded = detail::reencode_with_restarts(v.bytes))
    v.bytes.assign(reencoded->begin(), reencoded->end());
}

// THE way pixels that were not a JPEG (PNG, CMYK, raw pixels) are stored: as the cache's image
// format asks, and always with a `transcoded` ledger entry saying what the source was and what
// became of it (docs/FORMAT.md#ledger: every sample not stored as it came). No path may store
// them without the entry: a YUV420 conversion once returned before adding it.
// `raw`: the source gave pixels (FFCV raw, LitData pil), not an encoded file.
void store_pixels(Value& v, const RgbImage& rgb, bool to_yuv420, bool restarts, bool raw, const std::string& what, PreparedSample& out,
                  const std::string& field) {
  if (to_yuv420) {
    store_as_yuv420(v, rgb);
    out.transcoded.emplace_back(field, what + (raw ? " converted to YUV420" : " decoded to RGB and stored as YUV420"));
    return;
  }
  store_as_jpeg(v, rgb);
  if (restarts) add_restarts(v);
  out.transcoded.emplace_back(field, what + (raw ? " encoded as RGB JPEG q100" : " re-encoded as RGB JPEG q100"));
}

void prepare_image(Value& v, NonJpegPolicy policy, bool to_yuv420, bool restarts, uint64_t max_pixels, PreparedSample& out,
                   const std::string& field) {
  auto problem = [&](std::string why) {
    out.problem = std::move(why);
    out.problem_field = field;
  };
  if (v.raw_channels != 0) {
    // Raw pixels from the source (FFCV raw mode, LitData pil): there is nothing to keep
    // verbatim that a JPEG loader could read, so keep and transcode both encode.
    if (policy == NonJpegPolicy::fail) return problem("raw-pixel image and --non-jpeg fail");
    const uint64_t c = v.raw_channels;
    if ((c != 1 && c != 3 && c != 4) || v.width == 0 || v.height == 0 || v.bytes.size() != uint64_t{v.width} * v.height * c)
      return problem("raw-pixel image of " + std::to_string(v.bytes.size()) + " bytes does not match " + std::to_string(v.width) + "x" +
                     std::to_string(v.height) + "x" + std::to_string(c));
    RgbImage rgb;
    rgb.width = v.width;
    rgb.height = v.height;
    rgb.pixels.resize(uint64_t{v.width} * v.height * 3);
    const auto* src = reinterpret_cast<const uint8_t*>(v.bytes.data());
    for (uint64_t i = 0, n = uint64_t{v.width} * v.height; i < n; ++i)
      for (uint64_t k = 0; k < 3; ++k) rgb.pixels[i * 3 + k] = src[i * c + (c == 1 ? 0 : k)];
    // The source's own description (a pil mode, FFCV raw) says what the pixels were before it
    // made them 1, 3 or 4 channels; `c` alone would hide a CMYK or RGBX source.
    const std::string what = !v.raw_description.empty() ? v.raw_description
                             : c == 1                   ? "raw 1-channel (grey) pixels"
                             : c == 3                   ? "raw 3-channel (RGB) pixels"
                                                        : "raw 4-channel (RGBA, alpha dropped) pixels";
    return store_pixels(v, rgb, to_yuv420, restarts, true, what, out, field);
  }
  if (v.bytes.empty()) return problem("empty image (0 bytes)");
  const ImageFormat format = sniff_image_format(v.bytes);
  std::string why_not_jpeg;
  if (format == ImageFormat::jpeg) {
    JpegHeader h;
    if (!parse_jpeg_header(v.bytes, h)) return problem("not a valid JPEG: no frame header (SOF) found");
    if (h.width == 0 || h.height == 0) return problem("JPEG frame header gives a zero dimension");
    if (uint64_t{h.width} * h.height > max_pixels)
      return problem("image of " + std::to_string(h.width) + "x" + std::to_string(h.height) + " pixels exceeds --max-image-pixels " +
                     std::to_string(max_pixels) + " (decompression bomb?)");
    if (!jpeg_has_eoi_after(v.bytes, h.sof_offset)) return problem("truncated JPEG: no end-of-image marker after the frame");
    if (v.height != 0 && (v.height != h.height || v.width != h.width))
      return problem("source says " + std::to_string(v.width) + "x" + std::to_string(v.height) + " but the JPEG is " +
                     std::to_string(h.width) + "x" + std::to_string(h.height));
    // A CMYK JPEG is converted below like any non-JPEG source (with its ledger entry), also
    // into YUV420. Other JPEGs becoming YUV420 is the cache's declared format (image_format,
    // slip.options): recorded once, not per sample.
    if (to_yuv420 && h.components != 4) {
      try {
        return store_as_yuv420(v, decode_to_rgb(v.bytes));
      } catch (const Error& e) {
        if (e.code() != Errc::bad_input) throw;  // an I/O error or an interruption is not the sample's fault
        return problem("JPEG that does not decode: " + e.message());
      }
    }
    if (h.components != 4) {
      v.width = h.width;
      v.height = h.height;
      if (restarts) add_restarts(v);
      return;
    }
    why_not_jpeg = "CMYK JPEG (TurboJPEG cannot decode it to RGB)";
  } else if (format == ImageFormat::unknown) {
    return problem("not an image (unrecognised leading bytes)");
  } else {
    why_not_jpeg = std::string(image_format_name(format)) + " image";
  }
  if (to_yuv420) policy = NonJpegPolicy::transcode;  // pixels are stored whatever the source format
  switch (policy) {
    case NonJpegPolicy::fail:
      return problem(why_not_jpeg + " and --non-jpeg fail");
    case NonJpegPolicy::keep: {
      const ImageSize size = probe_image_size(v.bytes);
      v.width = size.width;
      v.height = size.height;
      return;
    }
    case NonJpegPolicy::transcode: {
      // Every format's header (GIF, BMP and PNM too), before a decoder allocates for it.
      if (const ImageSize size = declared_image_size(v.bytes); uint64_t{size.width} * size.height > max_pixels)
        return problem("image of " + std::to_string(size.width) + "x" + std::to_string(size.height) +
                       " pixels exceeds --max-image-pixels " + std::to_string(max_pixels) + " (decompression bomb?)");
      try {
        store_pixels(v, decode_to_rgb(v.bytes), to_yuv420, restarts, false, why_not_jpeg, out, field);
      } catch (const Error& e) {
        if (e.code() != Errc::bad_input) throw;
        return problem(why_not_jpeg + " that does not decode: " + e.message());
      }
      return;
    }
  }
}

}  // namespace

void detail::prepare_sample(Sample& s, const Schema& schema, NonJpegPolicy policy, bool restarts, uint64_t max_pixels,
                            PreparedSample& out) {
  // An image field's stored format travels in its FieldSpec (set by convert()).
  out = PreparedSample{};
  out.sums.assign(schema.fields.size(), 0);
  if (s.skip) return;
  if (s.problem) {
    out.problem = s.problem;
    return;
  }
  for (size_t f = 0; f < schema.fields.size(); ++f) {
    Value& v = s.values[f];
    const FieldSpec& spec = schema.fields[f];
    if (v.missing) {
      out.problem = "no value for field \"" + spec.name + "\"";
      out.problem_field = spec.name;
      return;
    }
    if (spec.type == FieldType::image) {
      prepare_image(v, policy, spec.image_format == "yuv420", restarts, max_pixels, out, spec.name);
      if (out.problem) return;
    }
    // A str field must read back as text in numpy and the Python loader (UTF-8 decode).
    if (spec.type == FieldType::str &&
        !detail::is_valid_utf8(std::string_view(reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size()))) {
      out.problem = "field \"" + spec.name + "\" is not valid UTF-8 text (keep such values as bytes: --field EXT=bytes)";
      out.problem_field = spec.name;
      return;
    }
    if (is_payload_type(spec.type)) out.sums[f] = xxh3_64(v.bytes);
  }
}

}  // namespace slip
