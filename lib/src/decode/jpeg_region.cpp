#include "decode/jpeg_region.hpp"

#include <algorithm>
#include <cstring>

namespace slip::detail {

void JpegRegionDecoder::on_error(j_common_ptr info) {
  auto* err = reinterpret_cast<ErrorManager*>(info->err);
  char text[JMSG_LENGTH_MAX];
  (*info->err->format_message)(info, text);
  err->owner->message_ = text;
  std::longjmp(err->jump, 1);
}

void JpegRegionDecoder::on_message(j_common_ptr info, int level) {
  if (level >= 0) return;  // trace messages
  auto* err = reinterpret_cast<ErrorManager*>(info->err);
  if (err->owner->warned_) return;
  char text[JMSG_LENGTH_MAX];
  (*info->err->format_message)(info, text);
  err->owner->message_ = text;
  err->owner->warned_ = true;
}

JpegRegionDecoder::JpegRegionDecoder() {
  cinfo_.err = jpeg_std_error(&error_.base);
  error_.base.error_exit = on_error;
  error_.base.emit_message = on_message;
  error_.owner = this;
  jpeg_create_decompress(&cinfo_);
}

JpegRegionDecoder::~JpegRegionDecoder() { jpeg_destroy_decompress(&cinfo_); }

bool JpegRegionDecoder::read_header(std::span<const std::byte> data, JpegImageInfo& info) {
  // A fresh decompressor per image: libjpeg-turbo 2.1 keeps state from jpeg_crop_scanline /
  // jpeg_skip_scanlines across jpeg_abort_decompress, which changed later images' pixels.
  jpeg_destroy_decompress(&cinfo_);
  cinfo_ = {};
  cinfo_.err = &error_.base;
  jpeg_create_decompress(&cinfo_);
  warned_ = false;
  message_.clear();
  if (setjmp(error_.jump)) {
    jpeg_abort_decompress(&cinfo_);
    return false;
  }
  jpeg_mem_src(&cinfo_, reinterpret_cast<const unsigned char*>(data.data()), static_cast<unsigned long>(data.size()));
  jpeg_read_header(&cinfo_, TRUE);
  info.width = static_cast<int>(cinfo_.image_width);
  info.height = static_cast<int>(cinfo_.image_height);
  info.components = cinfo_.num_components;
  info.rgb_capable = cinfo_.jpeg_color_space == JCS_YCbCr || cinfo_.jpeg_color_space == JCS_GRAYSCALE || cinfo_.jpeg_color_space == JCS_RGB;
  if (warned_) {
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

bool JpegRegionDecoder::decode_region(int denom, int x0, int y0, int x1, int y1, std::vector<uint8_t>& scratch, DecodedRegion& out) {
  const bool ok = decode_region_impl(denom, x0, y0, x1, y1, scratch, out);
  jpeg_abort_decompress(&cinfo_);
  return ok && !warned_;
}

bool JpegRegionDecoder::decode_region_impl(int denom, int x0, int y0, int x1, int y1, std::vector<uint8_t>& scratch, DecodedRegion& out) {
  if (setjmp(error_.jump)) return false;
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
  out.x_offset = x0 - static_cast<int>(xoffset);
  out.stride = static_cast<size_t>(cinfo_.output_width) * 3;
  const int rows = bottom - y0;
  if (scratch.size() < out.stride * static_cast<size_t>(rows)) scratch.resize(out.stride * static_cast<size_t>(rows));
  if (y0 > 0) jpeg_skip_scanlines(&cinfo_, static_cast<JDIMENSION>(y0));
  for (int y = 0; y < rows;) {
    JSAMPROW row = scratch.data() + static_cast<size_t>(y) * out.stride;
    const JDIMENSION got = jpeg_read_scanlines(&cinfo_, &row, 1);
    if (got == 0) {
      message_ = "no scanline returned";
      return false;
    }
    y += static_cast<int>(got);
  }
  out.data = scratch.data();
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

bool JpegRegionDecoder::decode_planes(int denom, int rows, std::vector<uint8_t>& scratch, DecodedPlanes& out) {
  const bool ok = decode_planes_impl(denom, rows, scratch, out);
  jpeg_abort_decompress(&cinfo_);
  return ok && !warned_;
}

bool JpegRegionDecoder::decode_planes_impl(int denom, int rows, std::vector<uint8_t>& scratch, DecodedPlanes& out) {
  if (setjmp(error_.jump)) return false;
  cinfo_.scale_num = 1;
  cinfo_.scale_denom = static_cast<unsigned>(denom);
  cinfo_.raw_data_out = TRUE;
  cinfo_.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&cinfo_);
  const int planes = cinfo_.num_components;
  // Each plane padded to whole blocks and whole iMCU rows, as jpeg_read_raw_data writes them.
  size_t offsets[4] = {0, 0, 0, 0};
  int rows_per_imcu[3] = {};
  for (int c = 0; c < planes; ++c) {
    const jpeg_component_info& comp = cinfo_.comp_info[c];
    rows_per_imcu[c] = comp.v_samp_factor * comp.DCT_scaled_size;
    if (rows_per_imcu[c] > 32) {
      message_ = "unsupported JPEG sampling for planar decoding";
      return false;
    }
    out.stride[c] = static_cast<size_t>(comp.width_in_blocks) * static_cast<size_t>(comp.DCT_scaled_size);
    offsets[c + 1] = offsets[c] + out.stride[c] * static_cast<size_t>(cinfo_.total_iMCU_rows) * static_cast<size_t>(rows_per_imcu[c]);
  }
  if (scratch.size() < offsets[planes]) scratch.resize(offsets[planes]);
  const int wanted = std::min(rows, static_cast<int>(cinfo_.output_height));
  const int luma_rows_per_imcu = cinfo_.max_v_samp_factor * cinfo_.min_DCT_scaled_size;
  JDIMENSION imcu = 0;
  while (static_cast<int>(imcu) * luma_rows_per_imcu < wanted && imcu < cinfo_.total_iMCU_rows) {
    JSAMPARRAY arrays[3];
    for (int c = 0; c < planes; ++c) {
      uint8_t* first = scratch.data() + offsets[c] + static_cast<size_t>(imcu) * rows_per_imcu[c] * out.stride[c];
      for (int r = 0; r < rows_per_imcu[c]; ++r) raw_rows_[c][r] = first + static_cast<size_t>(r) * out.stride[c];
      arrays[c] = raw_rows_[c];
    }
    if (jpeg_read_raw_data(&cinfo_, arrays, static_cast<JDIMENSION>(luma_rows_per_imcu)) == 0) {
      message_ = "no raw data returned";
      return false;
    }
    ++imcu;
  }
  out.planes = planes;
  const double luma_h = cinfo_.comp_info[0].h_samp_factor * cinfo_.comp_info[0].DCT_scaled_size;
  const double luma_v = cinfo_.comp_info[0].v_samp_factor * cinfo_.comp_info[0].DCT_scaled_size;
  for (int c = 0; c < planes; ++c) {
    const jpeg_component_info& comp = cinfo_.comp_info[c];
    out.data[c] = scratch.data() + offsets[c];
    out.width[c] = static_cast<int>(comp.downsampled_width);
    out.height[c] = std::min(static_cast<int>(comp.downsampled_height), static_cast<int>(imcu) * rows_per_imcu[c]);
  }
  if (planes == 3) {
    out.chroma_scale_x = cinfo_.comp_info[1].h_samp_factor * cinfo_.comp_info[1].DCT_scaled_size / luma_h;
    out.chroma_scale_y = cinfo_.comp_info[1].v_samp_factor * cinfo_.comp_info[1].DCT_scaled_size / luma_v;
  }
  return true;
}

}  // namespace slip::detail
