#include "image/jpeg_restarts.hpp"

#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE
#include <cstring>

#include <jpeglib.h>

#include "image/libjpeg_errors.hpp"
#include "slip/error.hpp"

namespace slip::detail {

uint32_t restart_interval_for(uint32_t mcus_per_row, uint32_t mcu_width) {
  const uint32_t widest = mcu_width ? kRestartIntervalPixels / mcu_width : 1;
  for (uint32_t k = widest; k > 1; --k)
    if (mcus_per_row % k == 0) return k;
  return 1;
}

namespace {

// One re-encoding: libjpeg reports errors by longjmp, so run() holds the setjmp frame and keeps
// only trivially destructible locals; everything that needs freeing is a member.
class Reencoder {
 public:
  Reencoder() {
    require_usable_libjpeg();
    errors_.attach(reinterpret_cast<j_common_ptr>(&decompress_));
    errors_.attach(reinterpret_cast<j_common_ptr>(&compress_));
    if (!errors_.create(&decompress_) || !errors_.create(&compress_)) {
      jpeg_destroy_compress(&compress_);  // (safe on an object whose create failed or never ran)
      jpeg_destroy_decompress(&decompress_);
      throw Error(Errc::io, "libjpeg: " + errors_.message);
    }
    errors_.limit_scans(&decompress_);
  }
  ~Reencoder() {
    jpeg_destroy_compress(&compress_);
    jpeg_destroy_decompress(&decompress_);
  }
  Reencoder(const Reencoder&) = delete;
  Reencoder& operator=(const Reencoder&) = delete;

  std::optional<std::vector<std::byte>> run(std::span<const std::byte> jpeg) {
    if (!transcode(jpeg) || errors_.warned) return std::nullopt;
    return std::move(output_);
  }

 private:
  // The compressor writes into output_ (a vector: nothing to free on the longjmp paths).
  struct Destination {
    jpeg_destination_mgr base;
    Reencoder* owner;
  };
  static constexpr size_t kChunk = 64 * 1024;
  static Reencoder& owner_of(j_compress_ptr cinfo) { return *reinterpret_cast<Destination*>(cinfo->dest)->owner; }
  static void next_chunk(Reencoder& r, size_t used) {
    r.output_.resize(used + kChunk);
    r.destination_.base.next_output_byte = reinterpret_cast<JOCTET*>(r.output_.data() + used);
    r.destination_.base.free_in_buffer = kChunk;
  }
  static void init_destination(j_compress_ptr cinfo) { next_chunk(owner_of(cinfo), 0); }
  static boolean empty_output_buffer(j_compress_ptr cinfo) {
    Reencoder& r = owner_of(cinfo);
    next_chunk(r, r.output_.size());  // the whole buffer was written
    return TRUE;
  }
  static void term_destination(j_compress_ptr cinfo) {
    Reencoder& r = owner_of(cinfo);
    r.output_.resize(r.output_.size() - r.destination_.base.free_in_buffer);
  }

  // Whether a saved segment is one the compressor writes itself (JFIF APP0, Adobe APP14).
  bool written_by_compressor(const jpeg_saved_marker_ptr m) const {
    const bool jfif = m->marker == JPEG_APP0 && m->data_length >= 5 && std::memcmp(m->data, "JFIF\0", 5) == 0;
    const bool adobe = m->marker == JPEG_APP0 + 14 && m->data_length >= 5 && std::memcmp(m->data, "Adobe", 5) == 0;
    return (jfif && compress_.write_JFIF_header) || (adobe && compress_.write_Adobe_marker);
  }

  bool transcode(std::span<const std::byte> jpeg) {
    if (setjmp(errors_.jump())) return false;
    jpeg_mem_src(&decompress_, reinterpret_cast<const unsigned char*>(jpeg.data()), static_cast<unsigned long>(jpeg.size()));
    jpeg_save_markers(&decompress_, JPEG_COM, 0xFFFF);
    for (int n = 0; n < 16; ++n) jpeg_save_markers(&decompress_, JPEG_APP0 + n, 0xFFFF);
    jpeg_read_header(&decompress_, TRUE);
    if (errors_.warned || (decompress_.num_components != 1 && decompress_.num_components != 3)) return false;
    jvirt_barray_ptr* coefficients = jpeg_read_coefficients(&decompress_);
    if (errors_.warned) return false;
    jpeg_copy_critical_parameters(&decompress_, &compress_);
    compress_.optimize_coding = TRUE;
    const bool single = decompress_.num_components == 1;
    const auto mcu_width = static_cast<uint32_t>(single ? DCTSIZE : decompress_.max_h_samp_factor * DCTSIZE);
    const uint32_t mcus_per_row = (decompress_.image_width + mcu_width - 1) / mcu_width;
    compress_.restart_interval = restart_interval_for(mcus_per_row, mcu_width);
    destination_.base.init_destination = init_destination;
    destination_.base.empty_output_buffer = empty_output_buffer;
    destination_.base.term_destination = term_destination;
    destination_.owner = this;
    compress_.dest = &destination_.base;
    jpeg_write_coefficients(&compress_, coefficients);
    for (jpeg_saved_marker_ptr m = decompress_.marker_list; m; m = m->next)
      if (!written_by_compressor(m)) jpeg_write_marker(&compress_, m->marker, m->data, m->data_length);
    jpeg_finish_compress(&compress_);
    jpeg_finish_decompress(&decompress_);
    return true;
  }

  jpeg_decompress_struct decompress_{};
  jpeg_compress_struct compress_{};
  LibjpegErrors errors_;
  Destination destination_{};
  std::vector<std::byte> output_;
};

}  // namespace

std::optional<std::vector<std::byte>> reencode_with_restarts(std::span<const std::byte> jpeg) {
  Reencoder reencoder;
  return reencoder.run(jpeg);
}

}  // namespace slip::detail
