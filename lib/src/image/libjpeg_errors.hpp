// libjpeg's error reporting as slip uses it, for every object made with the libjpeg API (the
// decode engine's region decoder, the restart-marker re-encoder): an error longjmps to jump()
// with its message kept; a warning (corrupt data libjpeg works around) is recorded with the
// first one's message, since slip treats warnings as errors; and a progressive JPEG of more
// than kMaxJpegScans scans is an error (slip/image.hpp). The functions that hold the setjmp
// frame keep only trivially destructible locals. create() holds its own frame: libjpeg checks
// its version and struct sizes (and allocates) inside jpeg_create_*, and reports by longjmp.
#pragma once

#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE
#include <string>

#include <jpeglib.h>
#include <jerror.h>

#include "slip/image.hpp"

namespace slip::detail {

class LibjpegErrors {
 public:
  std::string message;      // the error's, or the first warning's
  bool warned = false;      // a warning was reported
  bool refused = false;     // the error was libjpeg refusing the request (a call it does not
                            // support in this state or build), not the data being corrupt
  bool capability = false;  // the library cannot do what the data needs (arithmetic coding or
                            // 12-bit samples not compiled in) or is not the library this build
                            // expects (version, struct size): "cannot decode", not "corrupt"

  LibjpegErrors() = default;
  LibjpegErrors(const LibjpegErrors&) = delete;  // libjpeg holds pointers into it
  LibjpegErrors& operator=(const LibjpegErrors&) = delete;

  // Makes `cinfo` report here: before jpeg_create_compress / jpeg_create_decompress.
  void attach(j_common_ptr cinfo) {
    cinfo->err = jpeg_std_error(&manager_.base);
    manager_.base.error_exit = on_error;
    manager_.base.emit_message = on_message;
    manager_.owner = this;
  }
  // Refuses more than kMaxJpegScans scans: after jpeg_create_decompress (which clears the field).
  void limit_scans(j_decompress_ptr cinfo) {
    progress_.progress_monitor = on_progress;
    cinfo->progress = &progress_;
  }
  void clear() {
    message.clear();
    warned = false;
    refused = false;
    capability = false;
  }
  // jpeg_create_decompress / jpeg_create_compress under a setjmp frame (after attach()): false
  // with `message` set and `capability` true when libjpeg refused (another library version or
  // struct size, out of memory). `cinfo` may be destroyed either way. `struct_size` is for tests.
  bool create(j_decompress_ptr cinfo, size_t struct_size = sizeof(jpeg_decompress_struct)) {
    if (setjmp(jump())) return created_failed();
    jpeg_CreateDecompress(cinfo, JPEG_LIB_VERSION, struct_size);
    return true;
  }
  bool create(j_compress_ptr cinfo, size_t struct_size = sizeof(jpeg_compress_struct)) {
    if (setjmp(jump())) return created_failed();
    jpeg_CreateCompress(cinfo, JPEG_LIB_VERSION, struct_size);
    return true;
  }
  std::jmp_buf& jump() { return manager_.jump; }

 private:
  struct Manager {
    jpeg_error_mgr base;  // first: libjpeg hands back &base
    std::jmp_buf jump;
    LibjpegErrors* owner;
  };
  bool created_failed() {
    capability = true;  // nothing of the data was read yet: the library's failure
    return false;
  }
  static LibjpegErrors& owner_of(j_common_ptr info) { return *reinterpret_cast<Manager*>(info->err)->owner; }
  static std::string formatted(j_common_ptr info) {
    char text[JMSG_LENGTH_MAX];
    (*info->err->format_message)(info, text);
    return text;
  }
  static void on_error(j_common_ptr info) {
    const int code = info->err->msg_code;
    owner_of(info).refused = code == JERR_NOTIMPL || code == JERR_NOT_COMPILED || code == JERR_BAD_STATE || code == JERR_BAD_CROP_SPEC ||
                             code == JERR_BAD_BUFFER_MODE || code == JERR_BAD_LIB_VERSION || code == JERR_BAD_STRUCT_SIZE;
    owner_of(info).capability = code == JERR_ARITH_NOTIMPL || code == JERR_BAD_PRECISION || code == JERR_NOT_COMPILED ||
                                code == JERR_NOTIMPL || code == JERR_SOF_UNSUPPORTED || code == JERR_BAD_LIB_VERSION ||
                                code == JERR_BAD_STRUCT_SIZE;
    owner_of(info).message = formatted(info);
    std::longjmp(reinterpret_cast<Manager*>(info->err)->jump, 1);
  }
  static void on_message(j_common_ptr info, int level) {
    LibjpegErrors& self = owner_of(info);
    if (level >= 0 || self.warned) return;  // trace messages; later warnings
    self.message = formatted(info);
    self.warned = true;
  }
  static void on_progress(j_common_ptr info) {
    if (!info->is_decompressor || reinterpret_cast<j_decompress_ptr>(info)->input_scan_number <= kMaxJpegScans) return;
    owner_of(info).message = "progressive JPEG with more than " + std::to_string(kMaxJpegScans) + " scans";
    std::longjmp(reinterpret_cast<Manager*>(info->err)->jump, 1);
  }

  Manager manager_{};
  jpeg_progress_mgr progress_{};
};

// Why the libjpeg loaded in this process must not be handed a buffer at all ("" when it may):
// one that refuses this build's structures at create time, or one built for other than 8-bit
// samples (libjpeg-turbo 2.x with -DWITH_12BIT=1 keeps the SONAME libjpeg.so.62 and its symbols,
// but reads and writes 16-bit samples where this build passes 8-bit ones: heap corruption).
// Decided once per process by a compressor that is created, given defaults and destroyed, no
// buffer in sight; every libjpeg object slip makes checks it first (require_usable_libjpeg()).
const std::string& libjpeg_unusable();
// Throws Error(io) with libjpeg_unusable() when it is not "": "this libjpeg cannot decode it".
void require_usable_libjpeg();
// The real path of the library file that holds jpeg_read_header ("" when dladdr cannot tell).
const std::string& libjpeg_file();

}  // namespace slip::detail
