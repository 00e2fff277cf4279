// Crop-aware JPEG decoding through the libjpeg API of libjpeg-turbo: one decompressor per
// thread, reused; a region of the (optionally DCT-scaled) image decoded into caller scratch,
// with rows above it skipped (jpeg_skip_scanlines), columns outside it not decoded
// (jpeg_crop_scanline) and rows below it never read. Sequential scans are entropy-decoded by
// slip's HuffmanDecoder (libjpeg's again for anything it refuses). libjpeg reports errors by
// longjmp: the functions that hold the setjmp frame keep only trivially destructible locals.
#pragma once

#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <cstdio>  // jpeglib.h needs FILE
#include <jpeglib.h>

#include "decode/huffman_decoder.hpp"
#include "decode/restart_cut.hpp"
#include "image/libjpeg_errors.hpp"
#include "slip/error.hpp"

namespace slip::detail {

struct JpegImageInfo {
  int width = 0, height = 0;
  int components = 0;
  bool rgb_capable = false;  // false for CMYK/YCCK (the engine then takes the slow path)
};

// The decoded rows: region pixel (x, y) is data[(y * stride) + (x + x_offset) * 3].
struct DecodedRegion {
  const uint8_t* data = nullptr;
  size_t stride = 0;
  int x_offset = 0;                         // columns left of the requested region (iMCU alignment)
  int scaled_width = 0, scaled_height = 0;  // the whole image at the chosen scale
};

// A part of a JPEG's own planes (raw_data_out: no chroma upsampling, no colour conversion).
// Plane 0 is luma at the (DCT-scaled) image size; planes 1 and 2 (absent for grayscale) are Cb
// and Cr at chroma_scale_x/y chroma samples per luma sample (0.5 for 4:2:0). The part covers
// the asked region grown to whole iMCUs: its first sample is luma pixel (x_origin, y_origin)
// of the scaled image (chroma sample (x_origin, y_origin) x chroma_scale), and width/height
// count the samples decoded from there.
struct DecodedPlanes {
  int planes = 0;  // 1 (grayscale) or 3 (YCbCr)
  const uint8_t* data[3] = {};
  size_t stride[3] = {};
  int width[3] = {}, height[3] = {};
  int x_origin = 0, y_origin = 0;
  double chroma_scale_x = 1, chroma_scale_y = 1;
};

// A rectangle [x0, x1) x [y0, y1) of pixels.
struct PixelRect {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

// Who entropy-decodes decode_planes' sequential JPEGs: slip's HuffmanDecoder, and libjpeg again
// for any stream it refuses (the default); libjpeg only; or slip's alone, a refusal failing
// the decode (tests compare it with libjpeg's).
enum class EntropyDecoding { slip_then_libjpeg, libjpeg, slip_only };

// Whether a decoder reaches into libjpeg's internals (slip's Huffman decoder in its entropy
// module, the partial-decompression fields): as decided for the process (libjpeg_internals.hpp),
// always (the self-test's probe of them), or never (the public API only).
enum class LibjpegInternals { automatic, probe, never };

class JpegRegionDecoder {
 public:
  // Throws Error(io) when the loaded libjpeg must not be used at all (libjpeg_unusable()).
  explicit JpegRegionDecoder(LibjpegInternals internals = LibjpegInternals::automatic);
  ~JpegRegionDecoder();
  JpegRegionDecoder(const JpegRegionDecoder&) = delete;
  JpegRegionDecoder& operator=(const JpegRegionDecoder&) = delete;

  // Reads the header of `data` (which must outlive the following decode_region call).
  // Returns false with message() set when the header is invalid.
  bool read_header(std::span<const std::byte> data, JpegImageInfo& info);
  // Decodes columns [x0, x1) and rows [y0, y1) of the image scaled by 1/denom (denom 1, 2, 4
  // or 8; coordinates in scaled pixels) to RGB into `scratch`. Returns false with message()
  // set on a corrupt image; warnings (truncated data, bad Huffman codes) count as errors.
  bool decode_region(int denom, int x0, int y0, int x1, int y1, std::vector<uint8_t>& scratch, DecodedRegion& out);
  // The same, into `target` instead of the scratch when the decoded rows fit it (out.data then
  // points into it: a whole image at scale 1 lands packed, stride = width * 3, x_offset 0).
  bool decode_region(int denom, int x0, int y0, int x1, int y1, std::span<uint8_t> target, std::vector<uint8_t>& scratch,
                     DecodedRegion& out);
  // True when the image read by read_header has planes decode_planes can hand out: YCbCr with
  // luma at the full sampling rate and chroma at 1/1 or 1/2 of it per axis, or grayscale.
  bool planar_capable() const;
  // Decodes columns [x0, x1) and rows [y0, y1) of the image scaled by 1/denom (scaled luma
  // pixels), grown to whole iMCUs, to its planes in `scratch`. Rows above the region are
  // entropy-decoded only (no IDCT), blocks left and right of it are not transformed, and rows
  // below it are never read. Same error rules as decode_region.
  // `parts` (optional, scaled pixels inside the region): only the iMCUs under one of these
  // rectangles are transformed, row band by row band; the others of the region then hold stale
  // bytes. Multi-crop windows leave much of their hull uncovered.
  bool decode_planes(int denom, int x0, int y0, int x1, int y1, std::vector<uint8_t>& scratch, DecodedPlanes& out,
                     std::span<const PixelRect> parts = {});
  void set_entropy_decoding(EntropyDecoding mode) { entropy_decoding_ = mode; }
  // Whether the last decode_planes ran slip's Huffman decoder to the end (false: libjpeg's,
  // from the start or after slip's refused the stream).
  bool last_decode_used_slip_huffman() const { return used_slip_huffman_; }
  // The Huffman tables slip's decoder has built so far (HuffmanDecoder::tables_built).
  size_t huffman_tables_built() const { return huffman_.tables_built(); }

  // The image read by read_header as restart intervals (restart_cut.hpp): false unless it is a
  // single-scan (sequential, interleaved or one-component) JPEG with a restart interval.
  bool restart_geometry(RestartGeometry& geometry) const;
  // The image size at scale 1/denom, valid after read_header.
  void scaled_size(int denom, int& width, int& height);

  const std::string& message() const { return errors_.message; }
  // The last failure as the engine reports it: "corrupt JPEG: ..." for bad data, or libjpeg's
  // refusal of the request (a feature this libjpeg does not support), which is not the data's fault.
  std::string failure() const;
  // failure()'s class: Errc::io ("this libjpeg cannot decode it": arithmetic coding or a sample
  // precision not compiled in, another library version) or Errc::bad_input (corrupt data).
  Errc failure_code() const { return errors_.capability ? Errc::io : Errc::bad_input; }
  // Whether the last decode went through libjpeg's internals.
  bool last_decode_used_internals() const { return use_internals_; }

 private:
  bool decode_region_impl(int denom, int x0, int y0, int x1, int y1, std::span<uint8_t> target, std::vector<uint8_t>& scratch,
                          DecodedRegion& out, bool slip_huffman);
  // After a failed decode: true when slip's Huffman decoder caused it and libjpeg's should decide
  // (the header is then read again for that).
  bool retry_with_libjpeg();
  bool decode_planes_impl(int denom, int x0, int y0, int x1, int y1, std::vector<uint8_t>& scratch, DecodedPlanes& out,
                          std::span<const PixelRect> parts, bool slip_huffman);

  // A decode that libjpeg refused while the internals were on: again through the public API
  // only (true: it is worth a retry, the header was read again for it).
  bool retry_without_internals();

  jpeg_decompress_struct cinfo_{};
  LibjpegErrors errors_;
  LibjpegInternals internals_mode_;
  bool use_internals_ = false;  // this decode's: set before the setjmp frame (a member: longjmp-safe)
  HuffmanDecoder huffman_;
  EntropyDecoding entropy_decoding_ = EntropyDecoding::slip_then_libjpeg;
  bool used_slip_huffman_ = false;
  bool huffman_attached_ = false;    // set before the setjmp frame's decode (a member: longjmp-safe)
  std::span<const std::byte> data_;  // read_header's data (the caller keeps it alive until the decode)
  size_t entropy_offset_ = 0;        // where read_header's data has its first scan's entropy-coded bytes
  // jpeg_read_raw_data's row pointers: v_samp_factor * DCT_scaled_size (<= 4 * 8) per plane.
  JSAMPROW raw_rows_[3][32] = {};
  uint8_t* region_rows_ = nullptr;  // decode_region's destination: the caller's target or the scratch
};

}  // namespace slip::detail
