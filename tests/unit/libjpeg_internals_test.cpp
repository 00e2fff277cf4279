// The guard around libjpeg's internals (decode/libjpeg_internals.hpp): the self-test passes with
// the library this build was compiled against, the process's decision names both libraries and
// says why when it is off, a program can turn the internals off, and the public-API path gives
// the internals' pixels and planes exactly (crops, restart markers, every sampling).
#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <cstdlib>
#include <array>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "decode/huffman_decoder.hpp"
#include "decode/jpeg_region.hpp"
#include "decode/libjpeg_internals.hpp"
#include "image/jpeg_restarts.hpp"
#include "image/libjpeg_errors.hpp"
#include "slip/decode.hpp"
#include "slip/error.hpp"
#include "slip/simd.hpp"
#include "test_support.hpp"

namespace slip::detail {
namespace {

// As the slip command does: SLIP_JPEG_INTERNALS=off sends the whole unit suite (this
// executable) through the public-API path; CI runs it so once per build.
const bool kInternalsForcedOff = apply_libjpeg_environment(process_environment());

// Death-test children must start with no libjpeg decision made. When this process has probed
// nothing yet (ctest runs one test per process) a fork is such a child ("fast"), and it works
// under qemu-user too, where re-executing an aarch64 binary fails with "Exec format error" unless
// binfmt_misc is set up; otherwise (the whole suite in one process) the child re-executes this
// binary ("threadsafe").
void death_test_children_start_undecided() { GTEST_FLAG_SET(death_test_style, libjpeg_decisions_probed() == 0 ? "fast" : "threadsafe"); }

// A JPEG with sharp detail (many non-zero coefficients) at the given TurboJPEG sampling.
std::vector<std::byte> detailed_jpeg(int width, int height, int sampling, bool restarts) {
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * height * 3);
  uint32_t state = 12345;
  for (size_t i = 0; i < rgb.size(); ++i) {
    state = state * 1103515245u + 12345u;
    rgb[i] = static_cast<uint8_t>((i % 97) * 2 + (state >> 28) + ((i / 3 / 9) % 2) * 80);
  }
  tjhandle handle = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(handle, rgb.data(), width, 0, height, TJPF_RGB, &out, &size, sampling, 90, 0);
  std::vector<std::byte> jpeg;
  if (rc == 0) jpeg.assign(reinterpret_cast<std::byte*>(out), reinterpret_cast<std::byte*>(out) + size);
  tjFree(out);
  tjDestroy(handle);
  if (restarts && !jpeg.empty())
    if (auto r = reencode_with_restarts(jpeg)) jpeg = std::move(*r);
  return jpeg;
}

// The bytes of a region decode and of a planar region decode (only the promised samples).
struct Decoded {
  bool ok = false;
  std::vector<uint8_t> rgb, planes;
};
Decoded decode(JpegRegionDecoder& d, const std::vector<std::byte>& jpeg, int x0, int y0, int x1, int y1) {
  Decoded out;
  JpegImageInfo info;
  std::vector<uint8_t> scratch;
  DecodedRegion region;
  if (!d.read_header(jpeg, info) || !d.decode_region(1, x0, y0, x1, y1, scratch, region)) return out;
  for (int y = 0; y < y1 - y0; ++y) {
    const uint8_t* row = region.data + y * region.stride + static_cast<size_t>(region.x_offset) * 3;
    out.rgb.insert(out.rgb.end(), row, row + static_cast<size_t>(x1 - x0) * 3);
  }
  DecodedPlanes planes;
  if (!d.read_header(jpeg, info) || !d.planar_capable() || !d.decode_planes(1, x0, y0, x1, y1, scratch, planes)) return out;
  for (int p = 0; p < planes.planes; ++p) {
    const double sx = p == 0 ? 1 : planes.chroma_scale_x, sy = p == 0 ? 1 : planes.chroma_scale_y;
    const int ox = static_cast<int>(planes.x_origin * sx), oy = static_cast<int>(planes.y_origin * sy);
    const int px0 = static_cast<int>(x0 * sx), py0 = static_cast<int>(y0 * sy);
    const int px1 = static_cast<int>((x1 - 1) * sx) + 1, py1 = static_cast<int>((y1 - 1) * sy) + 1;
    for (int y = py0; y < py1; ++y) {
      const uint8_t* row = planes.data[p] + static_cast<size_t>(y - oy) * planes.stride[p] + (px0 - ox);
      out.planes.insert(out.planes.end(), row, row + (px1 - px0));
    }
  }
  out.ok = true;
  return out;
}

TEST(LibjpegInternals, TheDecisionNamesBothLibrariesAndWhyWhenOff) {
  const LibjpegStatus& status = libjpeg_status();
  EXPECT_NE(status.compiled.find("libjpeg-turbo"), std::string::npos) << status.compiled;
  EXPECT_NE(status.loaded.find("libjpeg"), std::string::npos) << status.loaded;
  EXPECT_EQ(status.internals, status.reason.empty()) << status.reason;
  const JpegEngineInfo info = jpeg_engine_info();
  EXPECT_EQ(info.entropy_hook, status.internals && !kInternalsForcedOff);
  if (!info.entropy_hook) {
    EXPECT_FALSE(info.reason.empty());
  }
}

TEST(LibjpegInternals, SelfTestPassesWithTheLibraryThisBuildWasCompiledAgainst) {
#if !SLIP_JPEG_INTERNALS_COMPILED
  GTEST_SKIP() << "this build uses libjpeg's public API only";
#else
  const LibjpegStatus& status = libjpeg_status();
  const bool loaded_generation3 = status.loaded.find("3.x ABI") != std::string::npos;
  if (loaded_generation3 != (LIBJPEG_TURBO_VERSION_NUMBER >= 3000000)) {
    // Run against another ABI generation (LD_LIBRARY_PATH): off without running the probe.
    EXPECT_FALSE(status.internals);
    EXPECT_NE(status.reason.find("layout"), std::string::npos) << status.reason;
    // The self-test alone sees it too (it reads libjpeg's master fields before it writes any).
    EXPECT_NE(libjpeg_self_test().find("master fields"), std::string::npos);
    GTEST_SKIP() << "loaded " << status.loaded << ", compiled against " << status.compiled;
  }
  EXPECT_EQ(libjpeg_self_test(), "");
  EXPECT_TRUE(status.internals) << status.reason;
#endif
}

TEST(LibjpegInternals, TurnedOffByTheProgramDecodesGoThroughThePublicApi) {
  const auto jpeg = detailed_jpeg(200, 120, TJSAMP_420, true);
  ASSERT_FALSE(jpeg.empty());
  set_libjpeg_internals(false);
  JpegRegionDecoder d;
  const Decoded off = decode(d, jpeg, 37, 45, 170, 101);
  EXPECT_FALSE(d.last_decode_used_internals());
  EXPECT_FALSE(d.last_decode_used_slip_huffman());
  EXPECT_FALSE(jpeg_engine_info().entropy_hook);
  set_libjpeg_internals(!kInternalsForcedOff);
  const Decoded on = decode(d, jpeg, 37, 45, 170, 101);
  EXPECT_EQ(d.last_decode_used_internals(), libjpeg_internals_usable());
  ASSERT_TRUE(off.ok && on.ok);
  EXPECT_EQ(off.rgb, on.rgb);
  EXPECT_EQ(off.planes, on.planes);
}

// The two paths side by side on every sampling, with and without restart markers, whole and
// cropped (rows skipped above, columns cut on both sides): the same bytes.
TEST(LibjpegInternals, PublicApiPathGivesTheInternalsBytes) {
  if (!libjpeg_status().internals) GTEST_SKIP() << "internals off in this process: " << libjpeg_status().reason;
  JpegRegionDecoder internals(LibjpegInternals::probe), public_api(LibjpegInternals::never);
  int compared = 0;
  for (int sampling : {TJSAMP_420, TJSAMP_422, TJSAMP_444, TJSAMP_440, TJSAMP_GRAY})
    for (bool restarts : {false, true})
      for (const auto& [x0, y0, x1, y1] : {std::array{0, 0, 203, 151}, std::array{41, 33, 180, 140}, std::array{100, 90, 117, 99}}) {
        const auto jpeg = detailed_jpeg(203, 151, sampling, restarts);
        ASSERT_FALSE(jpeg.empty());
        const Decoded a = decode(internals, jpeg, x0, y0, x1, y1);
        const bool hooked = internals.last_decode_used_internals();
        const Decoded b = decode(public_api, jpeg, x0, y0, x1, y1);
        EXPECT_TRUE(hooked);
        EXPECT_FALSE(public_api.last_decode_used_internals());
        ASSERT_TRUE(a.ok && b.ok) << "sampling " << sampling;
        EXPECT_EQ(a.rgb, b.rgb) << "sampling " << sampling << (restarts ? " restarts" : "") << " at " << x0 << "," << y0;
        EXPECT_EQ(a.planes, b.planes) << "sampling " << sampling << (restarts ? " restarts" : "") << " at " << x0 << "," << y0;
        compared += !a.rgb.empty() && !a.planes.empty();
      }
  EXPECT_EQ(compared, 5 * 2 * 3);
}

// SLIP_JPEG_INTERNALS as SLIP_SIMD is read: the exact words on, off and auto; anything else a
// usage error naming the variable and the value (OFF, false, no were ignored: internals on).
TEST(LibjpegInternals, EnvironmentTakesOnOffAutoAndRefusesAnythingElse) {
  auto env = [](std::string value) -> Environment {
    return [value](std::string_view name) -> std::optional<std::string> {
      if (name == "SLIP_JPEG_INTERNALS") return value;
      return std::nullopt;
    };
  };
  for (const char* bad : {"OFF", "false", "no", "0", "On", " off"}) {
    try {
      apply_libjpeg_environment(env(bad));
      ADD_FAILURE() << "accepted SLIP_JPEG_INTERNALS=" << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::usage);
      EXPECT_NE(e.message().find("SLIP_JPEG_INTERNALS"), std::string::npos) << e.message();
      EXPECT_NE(e.message().find(std::string("'") + bad + "'"), std::string::npos) << e.message();
    }
  }
  EXPECT_TRUE(apply_libjpeg_environment(env("off")));
  EXPECT_FALSE(jpeg_engine_info().entropy_hook);
  EXPECT_NE(jpeg_engine_info().reason.find("(SLIP_JPEG_INTERNALS=off)"), std::string::npos) << jpeg_engine_info().reason;
  EXPECT_FALSE(apply_libjpeg_environment(env("auto")));
  EXPECT_FALSE(apply_libjpeg_environment(env("on")));
  EXPECT_FALSE(apply_libjpeg_environment([](std::string_view) { return std::nullopt; }));
  set_libjpeg_internals(!kInternalsForcedOff);
}

// In a fresh process (the death-test child re-runs this executable): turned off, nothing probes
// libjpeg, not even jpeg_engine_info() (slip --version, bench --json, slipcache.build_info()).
TEST(LibjpegInternalsDeathTest, TurnedOffNeverRunsTheSelfTest) {
  death_test_children_start_undecided();
  EXPECT_EXIT(
      {
        set_libjpeg_internals(false);
        const JpegEngineInfo info = jpeg_engine_info();
        JpegRegionDecoder d;
        const auto jpeg = detailed_jpeg(64, 48, TJSAMP_420, false);
        JpegImageInfo header;
        std::vector<uint8_t> scratch;
        DecodedRegion region;
        const bool decoded = d.read_header(jpeg, header) && d.decode_region(1, 0, 0, 64, 48, scratch, region);
        std::exit(decoded && !info.entropy_hook && !d.last_decode_used_internals() && libjpeg_decisions_probed() == 0 ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
}

// The decision follows the SIMD level: a self-test run below avx2 never exercised slip's Huffman
// decoder, so moving up to avx2 decides again (with it) before the decoder touches an image.
TEST(LibjpegInternalsDeathTest, ChangingTheSimdLevelDecidesAgain) {
#if !SLIP_JPEG_INTERNALS_COMPILED
  GTEST_SKIP() << "this build uses libjpeg's public API only";
#else
  if (kInternalsForcedOff) GTEST_SKIP() << "SLIP_JPEG_INTERNALS=off";
  // A library of another ABI generation (LD_LIBRARY_PATH: scripts/test-jpeg-31.sh) is refused
  // before any self-test, at every level (SelfTestPassesWithTheLibraryThisBuildWasCompiledAgainst
  // checks that); libjpeg_loaded() names it without deciding anything.
  if ((libjpeg_loaded().find("3.x ABI") != std::string::npos) != (LIBJPEG_TURBO_VERSION_NUMBER >= 3000000))
    GTEST_SKIP() << "loaded " << libjpeg_loaded() << ": another ABI generation than compiled against, never probed";
  set_simd_level(cpu_simd_level());
  if (!HuffmanDecoder::runs_here()) GTEST_SKIP() << "slip's Huffman decoder does not run on this CPU (needs BMI2 and avx2)";
  death_test_children_start_undecided();
  EXPECT_EXIT(
      {
        set_simd_level(SimdLevel::sse4);
        const bool low = libjpeg_internals_usable();
        const int after_low = libjpeg_decisions_probed();
        set_simd_level(cpu_simd_level());
        const bool high = libjpeg_internals_usable();
        const int after_high = libjpeg_decisions_probed();
        std::exit(low && high && after_low == 1 && after_high == 2 ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
#endif
}

// The self-test's method-pointer check: libjpeg's own functions are in the loaded library; a
// pointer elsewhere (this executable's code, data, null) is not, so a moved member fails it.
TEST(LibjpegInternals, MethodPointersOutsideTheLibraryAreRefused) {
  EXPECT_TRUE(libjpeg_holds(reinterpret_cast<const void*>(&jpeg_read_header)));
  EXPECT_TRUE(libjpeg_holds(reinterpret_cast<const void*>(&jpeg_start_decompress)));
  EXPECT_FALSE(libjpeg_holds(reinterpret_cast<const void*>(&libjpeg_holds)));
  static const int data = 1;
  EXPECT_FALSE(libjpeg_holds(&data));
  EXPECT_FALSE(libjpeg_holds(nullptr));
  EXPECT_FALSE(libjpeg_holds(reinterpret_cast<const void*>(uintptr_t{0x10})));
}

// libjpeg checks its version and struct size inside jpeg_create_*, and reports by longjmp: under
// create()'s own frame that is an error with libjpeg's message, classed as the library's.
TEST(LibjpegErrors, CreateWithAnotherStructSizeIsCaught) {
  {
    jpeg_decompress_struct cinfo{};
    LibjpegErrors errors;
    errors.attach(reinterpret_cast<j_common_ptr>(&cinfo));
    EXPECT_FALSE(errors.create(&cinfo, sizeof cinfo + 8));
    EXPECT_TRUE(errors.capability);
    EXPECT_NE(errors.message.find("struct mismatch"), std::string::npos) << errors.message;
    jpeg_destroy_decompress(&cinfo);  // safe after a failed create
  }
  {
    jpeg_compress_struct cinfo{};
    LibjpegErrors errors;
    errors.attach(reinterpret_cast<j_common_ptr>(&cinfo));
    EXPECT_FALSE(errors.create(&cinfo, sizeof cinfo - 8));
    EXPECT_TRUE(errors.capability);
    EXPECT_NE(errors.message.find("struct mismatch"), std::string::npos) << errors.message;
    jpeg_destroy_compress(&cinfo);
    EXPECT_TRUE(errors.create(&cinfo));  // the right size
    jpeg_destroy_compress(&cinfo);
  }
  EXPECT_EQ(libjpeg_unusable(), "");  // the library this build runs with is an 8-bit libjpeg
}

// A JPEG this libjpeg cannot decode (12-bit samples: SOF1 with precision 12) is not corrupt:
// "this libjpeg cannot decode", Errc::io (exit 4), not bad_input (verify's 1, bench's 3).
TEST(LibjpegErrors, AMissingCapabilityIsNotCorruptData) {
  auto jpeg = detailed_jpeg(64, 48, TJSAMP_420, false);
  size_t sof = 2;
  while (sof + 4 < jpeg.size() && !(jpeg[sof] == std::byte{0xFF} && jpeg[sof + 1] == std::byte{0xC0})) ++sof;
  ASSERT_LT(sof + 4, jpeg.size());
  jpeg[sof + 1] = std::byte{0xC1};  // extended sequential
  jpeg[sof + 4] = std::byte{12};    // precision
  JpegRegionDecoder d;
  JpegImageInfo info;
  std::vector<uint8_t> scratch;
  DecodedRegion region;
  EXPECT_FALSE(d.read_header(jpeg, info) && d.decode_region(1, 0, 0, 64, 48, scratch, region));
  EXPECT_EQ(d.failure_code(), Errc::io) << d.failure();
  EXPECT_NE(d.failure().find("this libjpeg cannot decode"), std::string::npos) << d.failure();
  EXPECT_NE(d.failure().find("precision 12"), std::string::npos) << d.failure();
  try {
    engine_decode_full(jpeg);
    ADD_FAILURE() << "a 12-bit JPEG decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::io) << e.message();
  }
  // Corrupt data stays bad input.
  auto corrupt = detailed_jpeg(64, 48, TJSAMP_420, false);
  corrupt[sof + 1] = std::byte{0xC4};  // a DHT where the SOF was: no frame header
  EXPECT_FALSE(d.read_header(corrupt, info) && d.decode_region(1, 0, 0, 64, 48, scratch, region));
  EXPECT_EQ(d.failure_code(), Errc::bad_input) << d.failure();
}

}  // namespace
}  // namespace slip::detail
