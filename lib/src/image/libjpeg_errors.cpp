#include "image/libjpeg_errors.hpp"

#include <dlfcn.h>

#include <climits>
#include <cstdlib>

#include "slip/error.hpp"

namespace slip::detail {

namespace {

std::string find_libjpeg_file() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&jpeg_read_header), &info) == 0 || info.dli_fname == nullptr) return "";
  char real[PATH_MAX];
  return realpath(info.dli_fname, real) != nullptr ? std::string(real) : std::string(info.dli_fname);
}

// The frame below holds only trivially destructible locals; the message is built after it.
int probe_precision(LibjpegErrors& errors) {
  jpeg_compress_struct cinfo{};
  errors.attach(reinterpret_cast<j_common_ptr>(&cinfo));
  if (!errors.create(&cinfo)) {
    jpeg_destroy_compress(&cinfo);
    return -1;
  }
  if (setjmp(errors.jump())) {
    jpeg_destroy_compress(&cinfo);
    return -1;
  }
  cinfo.in_color_space = JCS_RGB;
  cinfo.input_components = 3;
  jpeg_set_defaults(&cinfo);  // data_precision: the library's BITS_IN_JSAMPLE
  const int precision = cinfo.data_precision;
  jpeg_destroy_compress(&cinfo);
  return precision;
}

std::string probe_libjpeg() {
  const std::string where = libjpeg_file().empty() ? std::string("the loaded libjpeg") : "the loaded libjpeg (" + libjpeg_file() + ")";
  LibjpegErrors errors;
  jpeg_decompress_struct decompress{};
  errors.attach(reinterpret_cast<j_common_ptr>(&decompress));
  const bool created = errors.create(&decompress);
  jpeg_destroy_decompress(&decompress);
  if (!created) return where + " refused this build's decompressor: " + errors.message;
  const int precision = probe_precision(errors);
  if (precision < 0) return where + " refused this build's compressor: " + errors.message;
  if (precision != 8)
    return where + " is built for " + std::to_string(precision) +
           "-bit samples; slip needs an 8-bit libjpeg (a default libjpeg-turbo build)";
  return "";
}

}  // namespace

const std::string& libjpeg_file() {
  static const std::string file = find_libjpeg_file();
  return file;
}

const std::string& libjpeg_unusable() {
  static const std::string why = probe_libjpeg();
  return why;
}

void require_usable_libjpeg() {
  if (const std::string& why = libjpeg_unusable(); !why.empty()) throw Error(Errc::io, "this libjpeg cannot decode JPEGs for slip: " + why);
}

}  // namespace slip::detail
