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

#include "decode/jpeg_region.hpp"
#include "decode/libjpeg_internals.hpp"
#include "image/jpeg_restarts.hpp"
#include "slip/decode.hpp"
#include "test_support.hpp"

namespace slip::detail {
namespace {

// As the slip command does: SLIP_JPEG_INTERNALS=off sends the whole unit suite (this
// executable) through the public-API path; CI runs it so once per build.
const bool kInternalsForcedOff = apply_libjpeg_environment(process_environment());

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

}  // namespace
}  // namespace slip::detail
