// libjpeg's error reporting as slip uses it, for every object made with the libjpeg API (the
// decode engine's region decoder, the restart-marker re-encoder): an error longjmps to jump()
// with its message kept; a warning (corrupt data libjpeg works around) is recorded with the
// first one's message, since slip treats warnings as errors; and a progressive JPEG of more
// than kMaxJpegScans scans is an error (slip/image.hpp). The functions that hold the setjmp
// frame keep only trivially destructible locals.
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
  std::string message;   // the error's, or the first warning's
  bool warned = false;   // a warning was reported
  bool refused = false;  // the error was libjpeg refusing the request (a call it does not
                         // support in this state or build), not the data being corrupt

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
  }
  std::jmp_buf& jump() { return manager_.jump; }

 private:
  struct Manager {
    jpeg_error_mgr base;  // first: libjpeg hands back &base
    std::jmp_buf jump;
    LibjpegErrors* owner;
  };
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

}  // namespace slip::detail
