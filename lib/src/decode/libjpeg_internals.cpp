#include "decode/libjpeg_internals.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <csetjmp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "decode/huffman_decoder.hpp"
#include "decode/jpeg_region.hpp"
#include "image/libjpeg_errors.hpp"
#include "slip/decode.hpp"
#include "slip/error.hpp"
#include "slip/runtime.hpp"
#include "slip_version_config.hpp"
#include "util/log.hpp"

#if SLIP_JPEG_INTERNALS_COMPILED
#include "decode/jpegint_once.hpp"
#endif

namespace slip {

namespace {
std::atomic<bool> internals_allowed{true};
std::atomic<int> g_libjpeg_self_test_runs{0};
}  // namespace

void set_libjpeg_internals(bool allowed) { internals_allowed.store(allowed, std::memory_order_relaxed); }

bool apply_libjpeg_environment(const Environment& env) {
  const std::optional<std::string> value = env_value(env, "SLIP_JPEG_INTERNALS");
  if (!value) return false;
  // As SLIP_SIMD: the exact lower-case words, anything else a usage error (not silently "on").
  if (*value != "on" && *value != "off" && *value != "auto")
    throw Error(Errc::usage, "SLIP_JPEG_INTERNALS: unknown value '" + *value + "' (on, off or auto)");
  const bool off = *value == "off";
  set_libjpeg_internals(!off);
  return off;
}

JpegEngineInfo jpeg_engine_info() {
  JpegEngineInfo info;
  info.libjpeg_compiled = detail::libjpeg_compiled();
  info.libjpeg_loaded = detail::libjpeg_loaded();
  // Turned off, or a library that must not be used: the self-test never runs (it would write
  // libjpeg's fields and hand it buffers).
  if (const std::string& unusable = detail::libjpeg_unusable(); !unusable.empty())
    info.reason = "this libjpeg cannot be used: " + unusable;
  else if (!internals_allowed.load(std::memory_order_relaxed))
    info.reason = "turned off by the program (SLIP_JPEG_INTERNALS=off)";
  else if (const detail::LibjpegStatus& status = detail::libjpeg_status(); status.internals)
    info.entropy_hook = true;
  else
    info.reason = status.reason;
  return info;
}

}  // namespace slip

namespace slip::detail {

namespace {

#define SLIP_STRINGIFY2(x) #x
#define SLIP_STRINGIFY(x) SLIP_STRINGIFY2(x)
#if defined(LIBJPEG_TURBO_VERSION)
constexpr const char* kCompiled = "libjpeg-turbo " SLIP_STRINGIFY(LIBJPEG_TURBO_VERSION);
#else
constexpr const char* kCompiled = "a libjpeg without LIBJPEG_TURBO_VERSION";
#endif
// Where CMake found jpeglib.h and jpegint.h, and why it compiled the public API only when it
// did (cmake/LibjpegHeaders.cmake).
constexpr std::string_view kHeaderOrigin = SLIP_JPEG_HEADER_ORIGIN;
constexpr std::string_view kPublicOnlyWhy = SLIP_JPEG_PUBLIC_ONLY_WHY;

// The ABI generation of jpegint.h: libjpeg-turbo 3.0 inserted members in the structures the
// engine touches, and added the 12- and 16-bit entry points (jpeg12_*, jpeg16_*) the same day.
constexpr bool kCompiledGeneration3 =
#if defined(LIBJPEG_TURBO_VERSION_NUMBER) && LIBJPEG_TURBO_VERSION_NUMBER >= 3000000
    true;
#else
    false;
#endif

// The library file holding jpeg_read_header and its ABI generation. The library itself, not the
// global scope, is asked for jpeg12_read_scanlines: Python loads modules RTLD_LOCAL.
bool loaded_generation3() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&jpeg_read_header), &info) == 0 || info.dli_fname == nullptr) return false;
  bool generation3 = false;
  if (void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD)) {
    generation3 = dlsym(handle, "jpeg12_read_scanlines") != nullptr;
    dlclose(handle);
  }
  return generation3;
}

// libjpeg-turbo writes "libjpeg-turbo version X (build Y)" into its library (jcmaster.c keeps it
// in the string table so a binary can be identified); the file is read, nothing is called.
std::string version_in_file(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(file, ec);
  if (ec) return "";
  std::string bytes;
  bytes.resize(static_cast<size_t>(std::min<uintmax_t>(size, 16u << 20)));  // (libjpeg is under 1 MiB)
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
  constexpr std::string_view kMark = "libjpeg-turbo version ";
  const size_t at = bytes.find(kMark);
  if (at == std::string::npos) return "";
  size_t end = at;
  while (end < bytes.size() && end - at < 80 && bytes[end] >= 0x20 && bytes[end] < 0x7F) ++end;
  return "libjpeg-turbo " + bytes.substr(at + kMark.size(), end - at - kMark.size());
}

std::string describe_loaded() {
  const std::string& file = libjpeg_file();
  if (file.empty()) return "unknown";
  std::string version = version_in_file(file);
  if (version.empty()) version = "a libjpeg without a libjpeg-turbo version string";
  return version + " from " + file + (loaded_generation3() ? " (libjpeg-turbo 3.x ABI)" : " (libjpeg-turbo 2.x ABI)");
}

#if SLIP_JPEG_INTERNALS_COMPILED
template <typename F>
bool in_libjpeg_fn(F* function) {
  return libjpeg_holds(reinterpret_cast<const void*>(function));
}
#endif

// ---- The self-test's JPEGs, made with libjpeg's encoder ----

struct TestImage {
  int width, height, components;
  int luma_h, luma_v;  // the luma sampling factors (chroma at 1x1): 2x2 is 4:2:0, 1x1 is 4:4:4
  unsigned restart_interval;
};

// Encodes `pixels` (width x height x components); false on a libjpeg error. Only trivially
// destructible locals while the setjmp frame is live.
bool encode(const TestImage& image, const std::vector<uint8_t>& pixels, std::vector<uint8_t>& out) {
  jpeg_compress_struct cinfo{};
  LibjpegErrors errors;
  errors.attach(reinterpret_cast<j_common_ptr>(&cinfo));
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  if (!errors.create(&cinfo)) return false;
  if (setjmp(errors.jump())) {
    jpeg_destroy_compress(&cinfo);
    std::free(buffer);
    return false;
  }
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(image.width);
  cinfo.image_height = static_cast<JDIMENSION>(image.height);
  cinfo.input_components = image.components;
  cinfo.in_color_space = image.components == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 92, TRUE);
  cinfo.comp_info[0].h_samp_factor = image.luma_h;
  cinfo.comp_info[0].v_samp_factor = image.luma_v;
  cinfo.restart_interval = image.restart_interval;
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(pixels.data() + static_cast<size_t>(cinfo.next_scanline) * image.width * image.components);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  out.assign(buffer, buffer + size);
  jpeg_destroy_compress(&cinfo);
  std::free(buffer);
  return true;
}

// Edges, gradients and noise: many non-zero coefficients, long and short Huffman codes.
std::vector<uint8_t> test_pixels(const TestImage& image) {
  std::vector<uint8_t> pixels(static_cast<size_t>(image.width) * image.height * image.components);
  uint32_t state = 0x9E3779B9u;
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x)
      for (int c = 0; c < image.components; ++c) {
        state = state * 1664525u + 1013904223u;
        const int edge = ((x / 5 + y / 7 + c) % 3) * 60;
        pixels[(static_cast<size_t>(y) * image.width + x) * image.components + c] =
            static_cast<uint8_t>((x * (3 + c) + y * (2 + 2 * c) + edge + static_cast<int>(state >> 27)) & 0xFF);
      }
  return pixels;
}

// ---- Check 1: libjpeg's own master fields read back through this build's layout ----

#if SLIP_JPEG_INTERNALS_COMPILED
// jpeg_start_decompress leaves the whole width to transform; jpeg_crop_scanline then sets the
// columns of its crop (jdapistd.c). Reading them back at this build's offsets is in bounds at
// any layout (libjpeg's master object is larger than its public part) and only reads.
std::string check_master_fields(std::span<const uint8_t> jpeg) {
  jpeg_decompress_struct cinfo{};
  LibjpegErrors errors;
  errors.attach(reinterpret_cast<j_common_ptr>(&cinfo));
  // (A fixed-size message: no std::string may be live across the longjmp.)
  static thread_local char failure[160];
  failure[0] = '\0';
  if (!errors.create(&cinfo)) return "libjpeg refused this build's decompressor: " + errors.message;
  if (setjmp(errors.jump())) {
    jpeg_destroy_decompress(&cinfo);
    return "libjpeg error while reading its master fields: " + errors.message;
  }
  jpeg_mem_src(&cinfo, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  // The methods of libjpeg's own objects the engine reads past or replaces (the entropy
  // decoder's, the input controller's, the master's), at this build's offsets: each must point
  // into the library. (Reads only, within objects libjpeg made larger than their first members.)
  if (!in_libjpeg_fn(cinfo.entropy->start_pass) || !in_libjpeg_fn(cinfo.entropy->decode_mcu) ||
      !in_libjpeg_fn(cinfo.inputctl->consume_input) || !in_libjpeg_fn(cinfo.inputctl->start_input_pass) ||
      !in_libjpeg_fn(cinfo.master->prepare_for_output_pass) || !in_libjpeg_fn(cinfo.master->finish_output_pass)) {
    std::snprintf(failure, sizeof failure, "libjpeg's method pointers are not where this build expects them (entropy, input, master)");
    jpeg_abort_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return failure;
  }
  const jpeg_decomp_master& master = *cinfo.master;
  bool ok = master.first_iMCU_col == 0 && master.last_iMCU_col == cinfo.MCUs_per_row - 1;
  for (int c = 0; c < cinfo.num_components; ++c)
    ok = ok && master.first_MCU_col[c] == 0 && master.last_MCU_col[c] == cinfo.comp_info[c].width_in_blocks - 1;
  if (!ok) std::snprintf(failure, sizeof failure, "master fields after jpeg_start_decompress are not where this build expects them");
  if (ok) {
    JDIMENSION xoffset = 21, width = 30;
    jpeg_crop_scanline(&cinfo, &xoffset, &width);
    const bool single = cinfo.comps_in_scan == 1 && cinfo.num_components == 1;
    const JDIMENSION align = static_cast<JDIMENSION>(cinfo.min_DCT_scaled_size * (single ? 1 : cinfo.max_h_samp_factor));
    ok = master.first_iMCU_col == xoffset / align && master.last_iMCU_col == (xoffset + cinfo.output_width + align - 1) / align - 1;
    for (int c = 0; c < cinfo.num_components; ++c) {
      const JDIMENSION hsf = single ? 1 : static_cast<JDIMENSION>(cinfo.comp_info[c].h_samp_factor);
      ok = ok && master.first_MCU_col[c] == xoffset * hsf / align &&
           master.last_MCU_col[c] == ((xoffset + cinfo.output_width) * hsf + align - 1) / align - 1;
    }
    if (!ok) std::snprintf(failure, sizeof failure, "master fields after jpeg_crop_scanline differ from libjpeg's crop");
  }
  jpeg_abort_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return failure;
}
#endif

// ---- Check 2: the same pixels and planes through the internals as through the public API ----

std::string compare_region(JpegRegionDecoder& probe, JpegRegionDecoder& reference, std::span<const std::byte> jpeg, int denom,
                           const PixelRect& r, const char* what) {
  JpegImageInfo info;
  std::vector<uint8_t> probe_scratch, reference_scratch;
  DecodedRegion a, b;
  if (!reference.read_header(jpeg, info) || !reference.decode_region(denom, r.x0, r.y0, r.x1, r.y1, reference_scratch, b))
    return std::string("libjpeg's public API failed on the ") + what + ": " + reference.message();
  if (!probe.read_header(jpeg, info) || !probe.decode_region(denom, r.x0, r.y0, r.x1, r.y1, probe_scratch, a))
    return std::string("the internals failed on the ") + what + ": " + probe.message();
  for (int y = 0; y < r.y1 - r.y0; ++y) {
    const uint8_t* pa = a.data + y * a.stride + static_cast<size_t>(a.x_offset) * 3;
    const uint8_t* pb = b.data + y * b.stride + static_cast<size_t>(b.x_offset) * 3;
    if (std::memcmp(pa, pb, static_cast<size_t>(r.x1 - r.x0) * 3) != 0)
      return std::string("the internals gave other pixels than libjpeg's on the ") + what;
  }
  return "";
}

std::string compare_planes(JpegRegionDecoder& probe, JpegRegionDecoder& reference, std::span<const std::byte> jpeg, int denom,
                           const PixelRect& r, const char* what) {
  JpegImageInfo info;
  std::vector<uint8_t> probe_scratch, reference_scratch;
  DecodedPlanes a, b;
  if (!reference.read_header(jpeg, info)) return std::string("libjpeg's public API failed on the ") + what + ": " + reference.message();
  if (!reference.planar_capable()) return "";  // (4:1:1 and the like: no planar path to test)
  if (!reference.decode_planes(denom, 0, 0, info.width, info.height, reference_scratch, b))
    return std::string("libjpeg's public API failed on the planes of the ") + what + ": " + reference.message();
  if (!probe.read_header(jpeg, info) || !probe.decode_planes(denom, r.x0, r.y0, r.x1, r.y1, probe_scratch, a))
    return std::string("the internals failed on the planes of the ") + what + ": " + probe.message();
  if (a.planes != b.planes) return std::string("the internals gave another plane count on the ") + what;
  for (int c = 0; c < a.planes; ++c) {
    const double sx = c == 0 ? 1 : a.chroma_scale_x, sy = c == 0 ? 1 : a.chroma_scale_y;
    const int px0 = static_cast<int>(r.x0 * sx), py0 = static_cast<int>(r.y0 * sy);
    const int px1 = static_cast<int>((r.x1 - 1) * sx) + 1, py1 = static_cast<int>((r.y1 - 1) * sy) + 1;
    const int ox = static_cast<int>(a.x_origin * sx), oy = static_cast<int>(a.y_origin * sy);
    if (px0 < ox || py0 < oy || px1 - ox > a.width[c] || py1 - oy > a.height[c])
      return std::string("the internals' planes do not cover the region of the ") + what;
    for (int y = py0; y < py1; ++y)
      if (std::memcmp(a.data[c] + static_cast<size_t>(y - oy) * a.stride[c] + (px0 - ox),
                      b.data[c] + static_cast<size_t>(y) * b.stride[c] + px0, static_cast<size_t>(px1 - px0)) != 0)
        return std::string("the internals gave other plane samples than libjpeg's on the ") + what;
  }
  return "";
}

std::string run_self_test() {
#if SLIP_JPEG_INTERNALS_COMPILED
  // Every chroma sampling the hook takes (it takes any baseline single-scan JPEG): 4:2:0, 4:2:2,
  // 4:4:0, 4:4:4, 4:1:1 and grayscale, with and without restart markers, at every DCT scale the
  // engine decodes at (1/1, 1/2, 1/4, 1/8). Sizes that are not multiples of the iMCU, several
  // iMCU columns and rows.
  const TestImage images[] = {{77, 53, 3, 2, 2, 0}, {61, 45, 3, 1, 1, 2}, {83, 49, 3, 2, 2, 3}, {70, 38, 1, 1, 1, 4},
                              {75, 41, 3, 2, 1, 2}, {66, 58, 3, 1, 2, 0}, {99, 43, 3, 4, 1, 1}};
  const char* names[] = {"4:2:0 baseline JPEG",
                         "4:4:4 JPEG with restart markers",
                         "4:2:0 JPEG with restart markers",
                         "grayscale JPEG with restart markers",
                         "4:2:2 JPEG with restart markers",
                         "4:4:0 baseline JPEG",
                         "4:1:1 JPEG with restart markers"};
  JpegRegionDecoder probe(LibjpegInternals::probe), reference(LibjpegInternals::never);
  probe.set_entropy_decoding(EntropyDecoding::slip_only);
  reference.set_entropy_decoding(EntropyDecoding::libjpeg);
  for (size_t i = 0; i < std::size(images); ++i) {
    std::vector<uint8_t> jpeg;
    if (!encode(images[i], test_pixels(images[i]), jpeg)) return std::string("libjpeg could not encode the ") + names[i];
    if (std::string failure = check_master_fields(jpeg); !failure.empty()) return failure + " (" + names[i] + ")";
    const std::span<const std::byte> bytes = std::as_bytes(std::span(jpeg));
    for (const int denom : {1, 2, 4, 8}) {
      // In scaled pixels: the whole image, and a crop with columns cut on both sides, rows above.
      const int width = (images[i].width + denom - 1) / denom, height = (images[i].height + denom - 1) / denom;
      const PixelRect whole{0, 0, width, height};
      const PixelRect crop{21 / denom, 17 / denom, std::min(width, (51 + denom - 1) / denom), std::min(height, (37 + denom - 1) / denom)};
      for (const auto& [rect, what] : {std::pair{whole, "whole "}, std::pair{crop, "crop of the "}}) {
        const std::string label = std::string(what) + names[i] + " at 1/" + std::to_string(denom);
        if (std::string failure = compare_region(probe, reference, bytes, denom, rect, label.c_str()); !failure.empty()) return failure;
        if (std::string failure = compare_planes(probe, reference, bytes, denom, rect, label.c_str()); !failure.empty()) return failure;
      }
    }
  }
  return "";
#else
  return "not compiled in";
#endif
}

// The decision for one setting of slip's Huffman decoder (on at avx2 with BMI2, else libjpeg's
// decoder under the hook's partial decompression): the self-test exercises what runs.
LibjpegStatus decide(bool slip_huffman) {
  LibjpegStatus status;
  status.compiled = libjpeg_compiled();
  status.loaded = libjpeg_loaded();
#if SLIP_JPEG_INTERNALS_COMPILED
  if (const std::string& unusable = libjpeg_unusable(); !unusable.empty()) {
    status.reason = "this libjpeg cannot be used: " + unusable;
  } else if (!libjpeg_file().empty() && loaded_generation3() != kCompiledGeneration3) {
    status.reason = std::string("the loaded libjpeg's internal layout is not the one compiled against (") + kCompiled + ")";
  } else {
    g_libjpeg_self_test_runs.fetch_add(1, std::memory_order_relaxed);
    const std::string failure = run_self_test();
    status.internals = failure.empty();
    if (!status.internals)
      status.reason =
          "self-test failed (" + std::string(slip_huffman ? "slip's Huffman decoder" : "libjpeg's Huffman decoder") + "): " + failure;
  }
#else
  (void)slip_huffman;
  status.reason = "this build uses libjpeg's public API only";
#endif
  if (!status.internals) info("JPEG engine: libjpeg's public API only ({}); same pixels, slower crops", status.reason);
  return status;
}

}  // namespace

std::string libjpeg_compiled() {
  std::string out = kCompiled;
  if (!kHeaderOrigin.empty()) out += " (" + std::string(kHeaderOrigin) + ")";
#if !SLIP_JPEG_INTERNALS_COMPILED
  out += "; public API only in this build" + (kPublicOnlyWhy.empty() ? std::string() : ": " + std::string(kPublicOnlyWhy));
#endif
  return out;
}

const std::string& libjpeg_loaded() {
  static const std::string loaded = describe_loaded();
  return loaded;
}

// One decision per setting of slip's Huffman decoder, each made when first needed: a process
// that starts below avx2 and moves up (SLIP_SIMD, set_simd_level) runs the self-test again
// with slip's decoder in it before that decoder touches an image.
const LibjpegStatus& libjpeg_status() {
  static std::once_flag once[2];
  static LibjpegStatus status[2];
  const bool slip_huffman = HuffmanDecoder::runs_here();
  std::call_once(once[slip_huffman], [&] { status[slip_huffman] = decide(slip_huffman); });
  return status[slip_huffman];
}

bool libjpeg_internals_usable() { return internals_allowed.load(std::memory_order_relaxed) && libjpeg_status().internals; }

std::string libjpeg_self_test() { return run_self_test(); }

// A method pointer read from one of libjpeg's own objects through this build's layout: a layout
// that moved the member shows as a pointer elsewhere (or none), checked before any hook replaces it.
bool libjpeg_holds(const void* function) {
  Dl_info lib{}, fn{};
  return function != nullptr && dladdr(reinterpret_cast<void*>(&jpeg_read_header), &lib) != 0 && dladdr(function, &fn) != 0 &&
         fn.dli_fbase == lib.dli_fbase;
}

int libjpeg_decisions_probed() { return g_libjpeg_self_test_runs.load(std::memory_order_relaxed); }

}  // namespace slip::detail
