#include "decode/jpeg_region.hpp"

#include <algorithm>
#include <cstring>
#include <span>

#include "slip/error.hpp"
#include "slip/image.hpp"
#include "util/scratch.hpp"

// jpeg_decomp_master's partial-decompression fields (libjpeg-turbo internals, installed with its
// headers; used only where libjpeg_internals.hpp allows): without them the planar path
// transforms every block it reads.
#include "decode/libjpeg_internals.hpp"
#if SLIP_JPEG_INTERNALS_COMPILED
#include "decode/jpegint_once.hpp"
#define SLIP_JPEG_PARTIAL_RAW 1
#else
#define SLIP_JPEG_PARTIAL_RAW 0
#endif

namespace slip::detail {

JpegRegionDecoder::JpegRegionDecoder(LibjpegInternals internals) : internals_mode_(internals) {
  require_usable_libjpeg();
  errors_.attach(reinterpret_cast<j_common_ptr>(&cinfo_));
  if (!errors_.create(&cinfo_)) throw Error(Errc::io, "libjpeg: " + errors_.message);
  errors_.limit_scans(&cinfo_);
}

JpegRegionDecoder::~JpegRegionDecoder() { jpeg_destroy_decompress(&cinfo_); }

bool JpegRegionDecoder::read_header(std::span<const std::byte> data, JpegImageInfo& info) {
  // A fresh decompressor per image: libjpeg-turbo 2.1 keeps state from jpeg_crop_scanline /
  // jpeg_skip_scanlines across jpeg_abort_decompress, which changed later images' pixels.
  jpeg_destroy_decompress(&cinfo_);
  cinfo_ = {};
  errors_.attach(reinterpret_cast<j_common_ptr>(&cinfo_));
  errors_.clear();
  if (!errors_.create(&cinfo_)) return false;  // (out of memory, say: a capability failure)
  errors_.limit_scans(&cinfo_);
  if (setjmp(errors_.jump())) {
    jpeg_abort_decompress(&cinfo_);
    return false;
  }
  jpeg_mem_src(&cinfo_, reinterpret_cast<const unsigned char*>(data.data()), static_cast<unsigned long>(data.size()));
  jpeg_read_header(&cinfo_, TRUE);
  info.width = static_cast<int>(cinfo_.image_width);
  info.height = static_cast<int>(cinfo_.image_height);
  info.components = cinfo_.num_components;
  data_ = data;
  entropy_offset_ = data.size() - cinfo_.src->bytes_in_buffer;
  info.rgb_capable = cinfo_.jpeg_color_space == JCS_YCbCr || cinfo_.jpeg_color_space == JCS_GRAYSCALE || cinfo_.jpeg_color_space == JCS_RGB;
  if (errors_.warned) {
    jpeg_abort_decompress(&cinfo_);
    return false;
  }
  return true;
}

void JpegRegionDecoder::scaled_size(int denom, int& width, int& height) {
  // jdiv_round_up(image_size * 1, denom), as jpeg_calc_output_dimensions computes it.
  width = static_cast<int>((cinfo_.image_width + denom - 1) / denom);
  height = static_cast<int>((cinfo_.image_height + denom - 1) / denom);
}

namespace {

bool internals_for(LibjpegInternals mode) {
#if SLIP_JPEG_INTERNALS_COMPILED
  return mode == LibjpegInternals::probe || (mode == LibjpegInternals::automatic && libjpeg_internals_usable());
#else
  (void)mode;
  return false;
#endif
}

}  // namespace

std::string JpegRegionDecoder::failure() const {
  if (errors_.capability) return "this libjpeg cannot decode this JPEG (" + errors_.message + ")";
  if (errors_.refused) return "JPEG not decodable with this libjpeg (it refused the request, not the data: " + errors_.message + ")";
  return "corrupt JPEG: " + errors_.message;
}

bool JpegRegionDecoder::retry_without_internals() {
  if (!use_internals_ || !errors_.refused || internals_mode_ == LibjpegInternals::probe) return false;
  use_internals_ = false;
  JpegImageInfo info;
  return read_header(data_, info);
}

bool JpegRegionDecoder::decode_region(int denom, int x0, int y0, int x1, int y1, std::vector<uint8_t>& scratch, DecodedRegion& out) {
  return decode_region(denom, x0, y0, x1, y1, {}, scratch, out);
}

bool JpegRegionDecoder::decode_region(int denom, int x0, int y0, int x1, int y1, std::span<uint8_t> target, std::vector<uint8_t>& scratch,
                                      DecodedRegion& out) {
  use_internals_ = internals_for(internals_mode_);
  bool ok =
      decode_region_impl(denom, x0, y0, x1, y1, target, scratch, out, entropy_decoding_ != EntropyDecoding::libjpeg) && !errors_.warned;
  jpeg_abort_decompress(&cinfo_);
  used_slip_huffman_ = ok && huffman_attached_;
  if (!ok && retry_with_libjpeg()) {
    ok = decode_region_impl(denom, x0, y0, x1, y1, target, scratch, out, false) && !errors_.warned;
    jpeg_abort_decompress(&cinfo_);
  }
  if (!ok && retry_without_internals()) {
    ok = decode_region_impl(denom, x0, y0, x1, y1, target, scratch, out, false) && !errors_.warned;
    jpeg_abort_decompress(&cinfo_);
  }
  return ok;
}

bool JpegRegionDecoder::retry_with_libjpeg() {
  if (!huffman_attached_ || !huffman_.failed() || entropy_decoding_ != EntropyDecoding::slip_then_libjpeg) return false;
  // slip's decoder refused the stream: libjpeg's decides, on a fresh decompressor.
  JpegImageInfo info;
  return read_header(data_, info);
}

bool JpegRegionDecoder::decode_region_impl(int denom, int x0, int y0, int x1, int y1, std::span<uint8_t> target,
                                           std::vector<uint8_t>& scratch, DecodedRegion& out, bool slip_huffman) {
  huffman_attached_ = false;
  if (setjmp(errors_.jump())) return false;
  cinfo_.scale_num = 1;
  cinfo_.scale_denom = static_cast<unsigned>(denom);
  cinfo_.out_color_space = JCS_RGB;
  cinfo_.dct_method = JDCT_ISLOW;
  cinfo_.do_fancy_upsampling = TRUE;
  jpeg_start_decompress(&cinfo_);
  out.scaled_width = static_cast<int>(cinfo_.output_width);
  out.scaled_height = static_cast<int>(cinfo_.output_height);
  const int right = std::min(x1, out.scaled_width), bottom = std::min(y1, out.scaled_height);
  JDIMENSION xoffset = static_cast<JDIMENSION>(x0), width = static_cast<JDIMENSION>(right - x0);
  if (width < cinfo_.output_width) jpeg_crop_scanline(&cinfo_, &xoffset, &width);
  if (slip_huffman && use_internals_ && !errors_.warned) huffman_attached_ = huffman_.attach(cinfo_);
  out.x_offset = x0 - static_cast<int>(xoffset);
  out.stride = static_cast<size_t>(cinfo_.output_width) * 3;
  const int rows = bottom - y0;
  const size_t bytes = out.stride * static_cast<size_t>(rows);
  // A pointer member, not a local: this frame's locals are not longjmp-safe.
  region_rows_ = target.size() >= bytes ? target.data() : scratch_of(scratch, bytes);
  if (y0 > 0) jpeg_skip_scanlines(&cinfo_, static_cast<JDIMENSION>(y0));
  for (int y = 0; y < rows;) {
    JSAMPROW row = region_rows_ + static_cast<size_t>(y) * out.stride;
    const JDIMENSION got = jpeg_read_scanlines(&cinfo_, &row, 1);
    if (got == 0) {
      errors_.message = "no scanline returned";
      return false;
    }
    y += static_cast<int>(got);
  }
  out.data = region_rows_;
  return true;
}

bool JpegRegionDecoder::planar_capable() const {
  if (cinfo_.jpeg_color_space == JCS_GRAYSCALE && cinfo_.num_components == 1) return true;
  if (cinfo_.jpeg_color_space != JCS_YCbCr || cinfo_.num_components != 3) return false;
  const jpeg_component_info* c = cinfo_.comp_info;
  if (c[0].h_samp_factor != cinfo_.max_h_samp_factor || c[0].v_samp_factor != cinfo_.max_v_samp_factor) return false;
  for (int i = 1; i < 3; ++i) {
    const int rx = cinfo_.max_h_samp_factor / c[i].h_samp_factor, ry = cinfo_.max_v_samp_factor / c[i].v_samp_factor;
    if ((rx != 1 && rx != 2) || (ry != 1 && ry != 2) || rx * c[i].h_samp_factor != cinfo_.max_h_samp_factor ||
        ry * c[i].v_samp_factor != cinfo_.max_v_samp_factor || c[i].h_samp_factor != c[1].h_samp_factor ||
        c[i].v_samp_factor != c[1].v_samp_factor)
      return false;
  }
  return true;
}

bool JpegRegionDecoder::restart_geometry(RestartGeometry& geometry) const {
  if (cinfo_.restart_interval == 0 || cinfo_.progressive_mode || cinfo_.comps_in_scan != cinfo_.num_components) return false;
  geometry.width = cinfo_.image_width;
  geometry.height = cinfo_.image_height;
  // A one-component scan's MCU is one block; an interleaved scan's, the largest sampling factors.
  const bool single = cinfo_.num_components == 1;
  geometry.mcu_width = single ? DCTSIZE : static_cast<uint32_t>(cinfo_.max_h_samp_factor) * DCTSIZE;
  geometry.mcu_height = single ? DCTSIZE : static_cast<uint32_t>(cinfo_.max_v_samp_factor) * DCTSIZE;
  geometry.interval = cinfo_.restart_interval;
  geometry.entropy_offset = entropy_offset_;
  // The SOF by the project's own header walk (slip/image.hpp); libjpeg read the same header
  // without a warning, so they agree. The cut is checked against the size it wrote anyway.
  JpegHeader header;
  if (!parse_jpeg_header(data_, header) || header.sof_offset + 10 > entropy_offset_) return false;
  geometry.sof_offset = header.sof_offset;
  return true;
}

bool JpegRegionDecoder::decode_planes(int denom, int x0, int y0, int x1, int y1, std::vector<uint8_t>& scratch, DecodedPlanes& out,
                                      std::span<const PixelRect> parts) {
  const bool slip_huffman = entropy_decoding_ != EntropyDecoding::libjpeg;
  use_internals_ = internals_for(internals_mode_);
  bool ok = decode_planes_impl(denom, x0, y0, x1, y1, scratch, out, parts, slip_huffman) && !errors_.warned;
  jpeg_abort_decompress(&cinfo_);
  used_slip_huffman_ = ok && huffman_attached_;
  if (!ok && retry_with_libjpeg()) {
    ok = decode_planes_impl(denom, x0, y0, x1, y1, scratch, out, parts, false) && !errors_.warned;
    jpeg_abort_decompress(&cinfo_);
  }
  if (!ok && retry_without_internals()) {
    ok = decode_planes_impl(denom, x0, y0, x1, y1, scratch, out, parts, false) && !errors_.warned;
    jpeg_abort_decompress(&cinfo_);
  }
  return ok;
}

namespace {

// Which iMCU columns the IDCT transforms, in both of libjpeg-turbo's coefficient controllers:
// the single-scan one reads first/last_iMCU_col (in MCUs), the multi-scan one first/last_MCU_col
// (in blocks of each component). These are the fields jpeg_crop_scanline sets; it refuses raw
// data output, whose controllers honour them all the same. first > last transforms nothing.
void set_transformed_columns(jpeg_decompress_struct& cinfo, JDIMENSION first, JDIMENSION last) {
#if SLIP_JPEG_PARTIAL_RAW
  cinfo.master->first_iMCU_col = first;
  cinfo.master->last_iMCU_col = last;
  for (int c = 0; c < cinfo.num_components; ++c) {
    const jpeg_component_info& comp = cinfo.comp_info[c];
    const JDIMENSION hsf = cinfo.num_components == 1 ? 1 : static_cast<JDIMENSION>(comp.h_samp_factor);
    cinfo.master->first_MCU_col[c] = first > last ? 1 : first * hsf;
    cinfo.master->last_MCU_col[c] = first > last ? 0 : std::min((last + 1) * hsf, comp.width_in_blocks) - 1;
  }
#else
  (void)cinfo, (void)first, (void)last;
#endif
}

}  // namespace

bool JpegRegionDecoder::decode_planes_impl(int denom, int x0, int y0, int x1, int y1, std::vector<uint8_t>& scratch, DecodedPlanes& out,
                                           std::span<const PixelRect> parts, bool slip_huffman) {
  huffman_attached_ = false;
  if (setjmp(errors_.jump())) return false;
  cinfo_.scale_num = 1;
  cinfo_.scale_denom = static_cast<unsigned>(denom);
  cinfo_.raw_data_out = TRUE;
  cinfo_.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&cinfo_);
  if (slip_huffman && use_internals_ && !errors_.warned) huffman_attached_ = huffman_.attach(cinfo_);
  const int planes = cinfo_.num_components;
  // The iMCU grid in scaled luma pixels (a lone component's MCU is one block, as in
  // jpeg_crop_scanline).
  const int imcu_width = cinfo_.min_DCT_scaled_size * (planes == 1 ? 1 : cinfo_.max_h_samp_factor);
  const int imcu_height = cinfo_.max_v_samp_factor * cinfo_.min_DCT_scaled_size;
  const int imcu_columns = (static_cast<int>(cinfo_.output_width) + imcu_width - 1) / imcu_width;
  // (Clamped copies: the arguments must not change after setjmp.)
  const int left = std::clamp(x0, 0, static_cast<int>(cinfo_.output_width) - 1);
  const int right = std::clamp(x1, left + 1, static_cast<int>(cinfo_.output_width));
  const int bottom = std::clamp(y1, 1, static_cast<int>(cinfo_.output_height));
  const int top = std::clamp(y0, 0, bottom - 1);
  // Without the internals, every column and row is transformed (jpeg_read_raw_data has no crop).
  const bool partial = SLIP_JPEG_PARTIAL_RAW && use_internals_;
  const int first_column = partial ? left / imcu_width : 0, last_column = partial ? (right - 1) / imcu_width : imcu_columns - 1;
  const int first_row = partial ? top / imcu_height : 0;
  const int end_row = std::min((bottom + imcu_height - 1) / imcu_height, static_cast<int>(cinfo_.total_iMCU_rows));
  const int band_rows = end_row - first_row;
  // Each plane: whole blocks of the transformed columns, whole iMCU rows of the region, as
  // jpeg_read_raw_data writes them.
  size_t offsets[4] = {0, 0, 0, 0};
  int rows_per_imcu[3] = {};
  for (int c = 0; c < planes; ++c) {
    const jpeg_component_info& comp = cinfo_.comp_info[c];
    rows_per_imcu[c] = comp.v_samp_factor * comp.DCT_scaled_size;
    if (rows_per_imcu[c] > 32) {
      errors_.message = "unsupported JPEG sampling for planar decoding";
      return false;
    }
    const int blocks_per_imcu = planes == 1 ? 1 : comp.h_samp_factor;
    out.stride[c] = static_cast<size_t>(last_column - first_column + 1) * static_cast<size_t>(blocks_per_imcu) *
                    static_cast<size_t>(comp.DCT_scaled_size);
    offsets[c + 1] = offsets[c] + out.stride[c] * static_cast<size_t>(band_rows) * static_cast<size_t>(rows_per_imcu[c]);
  }
  scratch_of(scratch, offsets[planes]);
  // Band `band`'s rows, from iMCU column `column` on (jpeg_read_raw_data writes the first
  // transformed column at the start of each row).
  auto point_rows = [&](int band, int column, JSAMPARRAY arrays[3]) {
    for (int c = 0; c < planes; ++c) {
      const int blocks_per_imcu = planes == 1 ? 1 : cinfo_.comp_info[c].h_samp_factor;
      uint8_t* first = scratch.data() + offsets[c] + static_cast<size_t>(band) * rows_per_imcu[c] * out.stride[c] +
                       static_cast<size_t>(column - first_column) * blocks_per_imcu * cinfo_.comp_info[c].DCT_scaled_size;
      for (int r = 0; r < rows_per_imcu[c]; ++r) raw_rows_[c][r] = first + static_cast<size_t>(r) * out.stride[c];
      arrays[c] = raw_rows_[c];
    }
  };
  // Rows above the region: entropy-decoded (the bit stream has no other way past them), not
  // transformed, nothing written.
  JSAMPARRAY arrays[3];
  if (first_row > 0) {
    set_transformed_columns(cinfo_, static_cast<JDIMENSION>(imcu_columns), 0);
    point_rows(0, first_column, arrays);
    for (int row = 0; row < first_row; ++row)
      if (jpeg_read_raw_data(&cinfo_, arrays, static_cast<JDIMENSION>(imcu_height)) == 0) {
        errors_.message = "no raw data returned";
        return false;
      }
  }
  if (partial) set_transformed_columns(cinfo_, static_cast<JDIMENSION>(first_column), static_cast<JDIMENSION>(last_column));
  for (int band = 0; band < band_rows; ++band) {
    int band_first = first_column, band_last = last_column;
    if (partial && !parts.empty()) {
      // The iMCU columns of the parts that reach into this band's rows (none: no transform).
      const int top_px = (first_row + band) * imcu_height, bottom_px = top_px + imcu_height;
      band_first = imcu_columns;
      band_last = -1;
      for (const PixelRect& r : parts)
        if (r.y0 < bottom_px && r.y1 > top_px && r.x1 > r.x0) {
          band_first = std::min(band_first, std::max(first_column, r.x0 / imcu_width));
          band_last = std::max(band_last, std::min(last_column, (r.x1 - 1) / imcu_width));
        }
      if (band_last < band_first)
        set_transformed_columns(cinfo_, static_cast<JDIMENSION>(imcu_columns), 0);
      else
        set_transformed_columns(cinfo_, static_cast<JDIMENSION>(band_first), static_cast<JDIMENSION>(band_last));
      band_first = std::min(band_first, last_column);
    }
    point_rows(band, band_first, arrays);
    if (jpeg_read_raw_data(&cinfo_, arrays, static_cast<JDIMENSION>(imcu_height)) == 0) {
      errors_.message = "no raw data returned";
      return false;
    }
  }
  out.planes = planes;
  out.x_origin = first_column * imcu_width;
  out.y_origin = first_row * imcu_height;
  const double luma_h = cinfo_.comp_info[0].h_samp_factor * cinfo_.comp_info[0].DCT_scaled_size;
  const double luma_v = cinfo_.comp_info[0].v_samp_factor * cinfo_.comp_info[0].DCT_scaled_size;
  for (int c = 0; c < planes; ++c) {
    const jpeg_component_info& comp = cinfo_.comp_info[c];
    const int blocks_per_imcu = planes == 1 ? 1 : comp.h_samp_factor;
    const int column0 = first_column * blocks_per_imcu * comp.DCT_scaled_size;
    out.data[c] = scratch.data() + offsets[c];
    out.width[c] = std::min(static_cast<int>(comp.downsampled_width) - column0, static_cast<int>(out.stride[c]));
    out.height[c] = std::min(static_cast<int>(comp.downsampled_height) - first_row * rows_per_imcu[c], band_rows * rows_per_imcu[c]);
  }
  if (planes == 3) {
    out.chroma_scale_x = cinfo_.comp_info[1].h_samp_factor * cinfo_.comp_info[1].DCT_scaled_size / luma_h;
    out.chroma_scale_y = cinfo_.comp_info[1].v_samp_factor * cinfo_.comp_info[1].DCT_scaled_size / luma_v;
  }
  return true;
}

}  // namespace slip::detail
