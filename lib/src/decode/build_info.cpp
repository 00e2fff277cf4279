// build_info(): the versions of libslipstream and of the libraries it was built with and loaded,
// and what the JPEG engine and SIMD kernels do on this machine. It lives in the decode layer
// because it reports the decoder's state (util/ must not include decode/).
#ifndef SLIP_READER_ONLY
#include <archive.h>
#include <curl/curl.h>
#endif
#include <openssl/crypto.h>
#include <png.h>
#include <xxhash.h>
#include <zstd.h>

#include <string>

#include "decode/huffman_decoder.hpp"
#include "slip/decode.hpp"
#include "slip/runtime.hpp"
#include "slip/simd.hpp"

namespace slip {

std::string build_info() {
  std::string out = "libslipstream " + version();
  const JpegEngineInfo jpeg = jpeg_engine_info();
  out += "\n  libjpeg-turbo: compiled against " + jpeg.libjpeg_compiled;
  out += "\n  libjpeg loaded: " + jpeg.libjpeg_loaded;
  const char* hook_on = detail::HuffmanDecoder::runs_here()
                            ? "on (slip's Huffman decoder, partial decompression)"
                            : "on (partial decompression; slip's Huffman decoder needs BMI2 and the avx2 level: libjpeg's decodes here)";
  out += "\n  JPEG entropy hook: " + (jpeg.entropy_hook ? std::string(hook_on) : "off: " + jpeg.reason);
  out +=
      "\n  SIMD kernels: " + std::string(simd_level_name()) + " (this CPU's best: " + std::string(simd_level_name(cpu_simd_level())) + ")";
#ifdef SLIP_READER_ONLY
  out += "\n  reader-only build: no sources, convert or remote I/O (no libarchive, libcurl)";
#else
  out += "\n  " + std::string(archive_version_string());
  out += "\n  libcurl " + std::string(curl_version_info(CURLVERSION_NOW)->version);
#endif
  // The libraries loaded, not the headers compiled against (a distribution update or
  // LD_LIBRARY_PATH changes them under the same SONAME).
  out += "\n  " + std::string(OpenSSL_version(OPENSSL_VERSION));
  const png_uint_32 png = png_access_version_number();  // e.g. 10639 for 1.6.39
  out += "\n  libpng " + std::to_string(png / 10000) + "." + std::to_string(png / 100 % 100) + "." + std::to_string(png % 100);
  out += "\n  zstd " + std::string(ZSTD_versionString());
  out += "\n  xxhash " + std::to_string(XXH_versionNumber());
  return out;
}

}  // namespace slip
