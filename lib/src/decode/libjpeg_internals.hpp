// Whether the engine may reach into libjpeg-turbo's internals: its entropy module (slip's
// HuffmanDecoder replaces libjpeg's decode_mcu) and the partial-decompression fields of
// jpeg_decomp_master (the planar path transforms only the iMCU columns under a crop). Both are
// jpegint.h structures, whose layout libjpeg-turbo changes between major versions without
// changing the SONAME (3.0 added `lossless` before first_iMCU_col and two entropy members
// before insufficient_data). So the internals are used only when, once per process,
//   1. this build was compiled against a tested libjpeg-turbo (kTestedRange),
//   2. the library loaded at run time is of the same ABI generation as those headers, and
//   3. a self-test on small JPEGs made at run time finds libjpeg's method pointers in the library,
//      reads libjpeg's own master fields back as expected, and decodes them (every sampling and
//      DCT scale) through the internals to exactly libjpeg's own pixels;
// otherwise every decode goes through libjpeg's public API (its own Huffman decoder,
// jpeg_crop_scanline / jpeg_skip_scanlines, whole planes), which gives the same bytes.
#pragma once

#include <cstdio>  // jpeglib.h needs FILE
#include <string>

#include <jpeglib.h>

// Compiled with jpegint.h of a libjpeg-turbo in the tested range (2.1.x; 3.0 and 3.1, whose
// jpegint.h this code was checked against): the internals may be tried. Outside it, or with
// -DSLIP_JPEG_INTERNALS=OFF (SLIP_NO_JPEG_INTERNALS), only the public API is compiled in.
#if !defined(SLIP_NO_JPEG_INTERNALS) && __has_include(<jpegint.h>) && defined(LIBJPEG_TURBO_VERSION_NUMBER) && \
    LIBJPEG_TURBO_VERSION_NUMBER >= 2001000 && LIBJPEG_TURBO_VERSION_NUMBER < 3002000
#define SLIP_JPEG_INTERNALS_COMPILED 1
#else
#define SLIP_JPEG_INTERNALS_COMPILED 0
#endif

namespace slip::detail {

struct LibjpegStatus {
  bool internals = false;  // the self-test passed: the entropy hook and master fields are on
  std::string compiled;    // "libjpeg-turbo 2.1.5 (internals compiled)" or why not compiled
  std::string loaded;      // the library file this process runs with and its ABI generation
  std::string reason;      // why the internals are off ("" when on)
};

// Decided on first call (a few milliseconds) for the SIMD level in use, again on the first call
// after a change of level that switches slip's Huffman decoder on or off; thread-safe. A library
// that libjpeg_unusable() refuses is never probed.
const LibjpegStatus& libjpeg_status();
// The libjpeg-turbo this build's headers came from, and where CMake found them.
std::string libjpeg_compiled();
// The library this process runs with: its version string, file and ABI generation.
const std::string& libjpeg_loaded();
// libjpeg_status().internals, unless the embedding program forbade them
// (slip::set_libjpeg_internals(false)). Cheap: called per decode.
bool libjpeg_internals_usable();

// Runs the self-test now, whatever was decided for the process: "" when it passes, else what
// failed (tests call it to show the self-test itself works).
std::string libjpeg_self_test();
// How many times this process decided by running the self-test (libjpeg_status()); tests check
// that SLIP_JPEG_INTERNALS=off and a refused library never get there.
int libjpeg_decisions_probed();
// Whether `function` lies in the loaded libjpeg (the library holding jpeg_read_header): the
// self-test's check of the method pointers it reads through this build's layout.
bool libjpeg_holds(const void* function);

}  // namespace slip::detail
