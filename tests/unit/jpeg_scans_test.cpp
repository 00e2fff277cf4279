// Progressive JPEGs with an absurd number of scans (each refining one bit of one coefficient)
// cost minutes to decode from a few kilobytes: every slip decoder refuses more than
// kMaxJpegScans, as TurboJPEG's TJFLAG_LIMITSCANS does. Below the limit they decode as usual.
#include <gtest/gtest.h>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <jpeglib.h>

#include "decode/jpeg_region.hpp"
#include "image/jpeg_restarts.hpp"
#include "slip/error.hpp"
#include "slip/image.hpp"

namespace slip {
namespace {

// A 16x16 grayscale progressive JPEG whose script refines coefficients 1..`bands` bit by bit:
// 1 + 10 * bands scans.
std::vector<std::byte> many_scan_jpeg(int bands) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buffer, &size);
  c.image_width = c.image_height = 16;
  c.input_components = 1;
  c.in_color_space = JCS_GRAYSCALE;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 95, TRUE);
  std::vector<jpeg_scan_info> script;
  script.push_back({1, {0}, 0, 0, 0, 0});  // DC
  for (int k = 1; k <= bands; ++k) {
    script.push_back({1, {0}, k, k, 0, 9});
    for (int a = 9; a >= 1; --a) script.push_back({1, {0}, k, k, a, a - 1});
  }
  c.scan_info = script.data();
  c.num_scans = static_cast<int>(script.size());
  jpeg_start_compress(&c, TRUE);
  std::vector<unsigned char> row(16);
  for (int y = 0; y < 16; ++y) {
    for (int x = 0; x < 16; ++x) row[x] = static_cast<unsigned char>((x * 37 + y * 91) % 256);
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::vector<std::byte> out(size);
  std::memcpy(out.data(), buffer, size);
  std::free(buffer);
  return out;
}

TEST(JpegScans, MoreThanTheLimitIsRefusedByEveryDecoder) {
  const auto bomb = many_scan_jpeg(63);  // 631 scans
  EXPECT_THROW(decode_to_rgb(bomb), Error);
  EXPECT_FALSE(detail::reencode_with_restarts(bomb));
  detail::JpegRegionDecoder jpeg;
  detail::JpegImageInfo info;
  ASSERT_TRUE(jpeg.read_header(bomb, info));
  std::vector<uint8_t> scratch;
  detail::DecodedPlanes planes;
  EXPECT_FALSE(jpeg.decode_planes(1, 0, 0, 16, 16, scratch, planes));
  EXPECT_NE(jpeg.message().find("more than 500 scans"), std::string::npos) << jpeg.message();
  ASSERT_TRUE(jpeg.read_header(bomb, info));
  detail::DecodedRegion region;
  EXPECT_FALSE(jpeg.decode_region(1, 0, 0, 16, 16, scratch, region));
  EXPECT_NE(jpeg.message().find("more than 500 scans"), std::string::npos) << jpeg.message();
}

TEST(JpegScans, UpToTheLimitDecodes) {
  const auto fine = many_scan_jpeg(30);  // 301 scans
  const RgbImage rgb = decode_to_rgb(fine);
  EXPECT_EQ(rgb.width, 16u);
  const auto reencoded = detail::reencode_with_restarts(fine);
  ASSERT_TRUE(reencoded);
  EXPECT_EQ(decode_to_rgb(*reencoded).pixels, rgb.pixels);
  detail::JpegRegionDecoder jpeg;
  detail::JpegImageInfo info;
  ASSERT_TRUE(jpeg.read_header(fine, info));
  std::vector<uint8_t> scratch;
  detail::DecodedRegion region;
  EXPECT_TRUE(jpeg.decode_region(1, 0, 0, 16, 16, scratch, region)) << jpeg.message();
}

}  // namespace
}  // namespace slip
