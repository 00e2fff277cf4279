// The planar decoder's regions (decode/jpeg_region.cpp): a region's planes are the same bytes
// as the same samples of a whole-image decode, on every JPEG kind the corpus has (baseline and
// progressive, 4:2:0, 4:2:2, 4:4:4, grayscale, restart markers, odd sizes) and on synthetic
// samplings, at every DCT scale. The rows above a region are only entropy-decoded and the
// blocks beside it are not transformed, so any slip in the iMCU arithmetic shows as moved,
// missing or stale samples. The same for parts of a region (multi-crop windows): the samples
// under each part.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <turbojpeg.h>

#include "decode/jpeg_region.hpp"
#include "test_support.hpp"

namespace slip::detail {
namespace {

namespace fs = std::filesystem;

// A JPEG of `samp` (TurboJPEG subsampling) made from a smooth synthetic photo.
std::vector<std::byte> synthetic_jpeg(int width, int height, int samp, bool progressive) {
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * height * 3);
  std::mt19937 rng(static_cast<uint32_t>(width * 31 + height));
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c)
        rgb[(static_cast<size_t>(y) * width + x) * 3 + c] = static_cast<uint8_t>((x * (c + 1) + y * (3 - c)) / 3 + rng() % 32);
  tjhandle h = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int flags = progressive ? TJFLAG_PROGRESSIVE : 0;
  EXPECT_EQ(tjCompress2(h, rgb.data(), width, 0, height, TJPF_RGB, &jpeg, &size, samp, 90, flags), 0) << tjGetErrorStr2(h);
  std::vector<std::byte> out(size);
  std::memcpy(out.data(), jpeg, size);
  tjFree(jpeg);
  tjDestroy(h);
  return out;
}

// Decodes random regions of `jpeg` at every scale and compares them with the whole image.
// Returns the number of regions checked.
int check_regions(const std::vector<std::byte>& jpeg, const std::string& name, uint32_t seed) {
  JpegRegionDecoder decoder;
  JpegImageInfo info;
  if (!decoder.read_header(jpeg, info) || !decoder.planar_capable()) return 0;
  std::mt19937 rng(seed);
  int checked = 0;
  std::vector<uint8_t> whole_scratch, region_scratch;
  for (int denom : {1, 2, 4, 8}) {
    EXPECT_TRUE(decoder.read_header(jpeg, info));
    int width = 0, height = 0;
    decoder.scaled_size(denom, width, height);
    DecodedPlanes whole;
    EXPECT_TRUE(decoder.decode_planes(denom, 0, 0, width, height, whole_scratch, whole)) << name << ": " << decoder.message();
    EXPECT_EQ(whole.x_origin, 0);
    EXPECT_EQ(whole.y_origin, 0);
    EXPECT_EQ(whole.width[0], width) << name;
    EXPECT_EQ(whole.height[0], height) << name;
    for (int trial = 0; trial < 6; ++trial) {
      // Regions from one pixel to the whole image, touching each edge now and then.
      const int x0 = trial == 0 ? 0 : static_cast<int>(rng() % static_cast<uint32_t>(width));
      const int y0 = trial == 1 ? 0 : static_cast<int>(rng() % static_cast<uint32_t>(height));
      const int x1 = trial == 2 ? width : x0 + 1 + static_cast<int>(rng() % static_cast<uint32_t>(width - x0));
      const int y1 = trial == 3 ? height : y0 + 1 + static_cast<int>(rng() % static_cast<uint32_t>(height - y0));
      EXPECT_TRUE(decoder.read_header(jpeg, info));
      DecodedPlanes part;
      const bool ok = decoder.decode_planes(denom, x0, y0, x1, y1, region_scratch, part);
      EXPECT_TRUE(ok) << name << ": " << decoder.message();
      if (!ok) continue;
      std::ostringstream where;
      where << name << " 1/" << denom << " region [" << x0 << "," << x1 << ")x[" << y0 << "," << y1 << ")";
      // The part covers the region, starts on the grid, and holds what the whole image holds.
      EXPECT_LE(part.x_origin, x0) << where.str();
      EXPECT_LE(part.y_origin, y0) << where.str();
      EXPECT_GE(part.x_origin + part.width[0], x1) << where.str();
      EXPECT_GE(part.y_origin + part.height[0], y1) << where.str();
      EXPECT_EQ(part.planes, whole.planes);
      EXPECT_EQ(part.chroma_scale_x, whole.chroma_scale_x);
      EXPECT_EQ(part.chroma_scale_y, whole.chroma_scale_y);
      for (int p = 0; p < part.planes; ++p) {
        const double sx = p == 0 ? 1.0 : part.chroma_scale_x, sy = p == 0 ? 1.0 : part.chroma_scale_y;
        const int ox = static_cast<int>(part.x_origin * sx), oy = static_cast<int>(part.y_origin * sy);
        EXPECT_EQ(ox + part.width[p] <= whole.width[p], true) << where.str();
        EXPECT_EQ(oy + part.height[p] <= whole.height[p], true) << where.str();
        int mismatches = 0;
        for (int y = 0; y < part.height[p]; ++y)
          mismatches +=
              std::memcmp(part.data[p] + static_cast<size_t>(y) * part.stride[p],
                          whole.data[p] + static_cast<size_t>(oy + y) * whole.stride[p] + ox, static_cast<size_t>(part.width[p])) != 0;
        EXPECT_EQ(mismatches, 0) << where.str() << " plane " << p;
      }
      // Parts of the region (as multi-crop windows): only the samples under a part are
      // promised, chroma under the part's chroma hull; the scratch is poisoned first so stale
      // bytes cannot pass for right ones.
      std::vector<PixelRect> parts;
      for (int i = 0; i < 3; ++i) {
        const int px0 = x0 + static_cast<int>(rng() % static_cast<uint32_t>(x1 - x0));
        const int py0 = y0 + static_cast<int>(rng() % static_cast<uint32_t>(y1 - y0));
        parts.push_back({px0, py0, px0 + 1 + static_cast<int>(rng() % static_cast<uint32_t>(x1 - px0)),
                         py0 + 1 + static_cast<int>(rng() % static_cast<uint32_t>(y1 - py0))});
      }
      std::fill(region_scratch.begin(), region_scratch.end(), uint8_t{0xA5});
      EXPECT_TRUE(decoder.read_header(jpeg, info));
      DecodedPlanes sparse;
      EXPECT_TRUE(decoder.decode_planes(denom, x0, y0, x1, y1, region_scratch, sparse, parts)) << where.str();
      EXPECT_EQ(sparse.x_origin, part.x_origin);
      EXPECT_EQ(sparse.y_origin, part.y_origin);
      for (const PixelRect& r : parts)
        for (int p = 0; p < sparse.planes; ++p) {
          const double sx = p == 0 ? 1.0 : sparse.chroma_scale_x, sy = p == 0 ? 1.0 : sparse.chroma_scale_y;
          const int ox = static_cast<int>(sparse.x_origin * sx), oy = static_cast<int>(sparse.y_origin * sy);
          const int cx0 = static_cast<int>(std::floor(r.x0 * sx)), cy0 = static_cast<int>(std::floor(r.y0 * sy));
          const int cx1 = std::min(whole.width[p], static_cast<int>(std::ceil(r.x1 * sx)));
          const int cy1 = std::min(whole.height[p], static_cast<int>(std::ceil(r.y1 * sy)));
          int mismatches = 0;
          for (int y = cy0; y < cy1; ++y)
            mismatches += std::memcmp(sparse.data[p] + static_cast<size_t>(y - oy) * sparse.stride[p] + (cx0 - ox),
                                      whole.data[p] + static_cast<size_t>(y) * whole.stride[p] + cx0, static_cast<size_t>(cx1 - cx0)) != 0;
          EXPECT_EQ(mismatches, 0) << where.str() << " part [" << r.x0 << "," << r.x1 << ")x[" << r.y0 << "," << r.y1 << ") plane " << p;
        }
      ++checked;
    }
  }
  return checked;
}

TEST(JpegRegion, RegionPlanesEqualWholeImagePlanesOnTheCorpus) {
  SLIP_REQUIRE_SHARED();
  // Every kind of JPEG the corpus manifest lists, a few of each (progressive, grayscale, each
  // subsampling, odd sizes), plus the first images of the common kind.
  std::map<std::string, int> per_kind;
  int images = 0, regions = 0;
  for (const auto& col : test::corpus_manifest()) {
    if (col.size() < 8 || col[4] != "jpeg") continue;
    const std::string kind = col[5] + "/" + col[6] + "/" + col[7];
    if (per_kind[kind]++ >= 6) continue;
    const auto jpeg = test::read_bytes(test::shared_dir() / "corpus/imagenet_like" / col[0]);
    const int n = check_regions(jpeg, col[0] + " (" + kind + ")", static_cast<uint32_t>(images));
    regions += n;
    images += n > 0;
  }
  EXPECT_GE(per_kind.size(), 4u) << "the corpus should hold several JPEG kinds";
  EXPECT_GE(images, 20);
  EXPECT_GE(regions, 20 * 24);
}

TEST(JpegRegion, RegionPlanesEqualWholeImagePlanesOnEverySampling) {
  const std::pair<const char*, int> samplings[] = {{"420", TJSAMP_420}, {"422", TJSAMP_422},   {"444", TJSAMP_444},
                                                   {"440", TJSAMP_440}, {"gray", TJSAMP_GRAY}, {"411", TJSAMP_411}};
  int regions = 0;
  for (const auto& [name, samp] : samplings)
    for (bool progressive : {false, true})
      for (const auto& [w, h] : {std::pair{333, 217}, std::pair{64, 48}, std::pair{17, 9}}) {
        const auto jpeg = synthetic_jpeg(w, h, samp, progressive);
        const std::string label =
            std::string(name) + (progressive ? " progressive " : " baseline ") + std::to_string(w) + "x" + std::to_string(h);
        const int n = check_regions(jpeg, label, static_cast<uint32_t>(w + samp));
        if (samp != TJSAMP_411) {  // 4:1:1 is not planar-capable (chroma at 1/4 of luma)
          EXPECT_EQ(n, 24) << label;
        }
        regions += n;
      }
  EXPECT_GE(regions, 5 * 2 * 3 * 24);
}

// The decode pipeline's batch block (BatchDecoder::decode_images into PackedImages): a whole
// image decoded into a target it fits lands there, packed, byte for byte what the scratch path
// gives, and the scratch is not touched; a target too small is left alone (the scratch is used).
TEST(JpegRegion, AWholeImageDecodesStraightIntoATargetThatFitsIt) {
  for (const bool progressive : {false, true}) {
    const std::vector<std::byte> jpeg = synthetic_jpeg(203, 117, TJSAMP_420, progressive);
    JpegRegionDecoder decoder;
    JpegImageInfo info;
    ASSERT_TRUE(decoder.read_header(jpeg, info));
    std::vector<uint8_t> scratch;
    DecodedRegion want;
    ASSERT_TRUE(decoder.decode_region(1, 0, 0, info.width, info.height, scratch, want));
    const std::vector<uint8_t> want_pixels(want.data, want.data + want.stride * static_cast<size_t>(info.height));
    ASSERT_EQ(want.stride, static_cast<size_t>(info.width) * 3);
    const size_t bytes = want_pixels.size();
    std::vector<uint8_t> block(bytes + 64, 0xA5), untouched;
    ASSERT_TRUE(decoder.read_header(jpeg, info));
    DecodedRegion got;
    ASSERT_TRUE(decoder.decode_region(1, 0, 0, info.width, info.height, std::span<uint8_t>(block.data() + 32, bytes), untouched, got));
    EXPECT_EQ(got.data, block.data() + 32) << "decoded into the scratch, not the target";
    EXPECT_TRUE(untouched.empty());
    EXPECT_EQ(got.stride, static_cast<size_t>(info.width) * 3);
    EXPECT_EQ(got.x_offset, 0);
    EXPECT_TRUE(std::equal(want_pixels.begin(), want_pixels.end(), block.begin() + 32));
    EXPECT_TRUE(std::all_of(block.begin(), block.begin() + 32, [](uint8_t v) { return v == 0xA5; }));
    EXPECT_TRUE(std::all_of(block.end() - 32, block.end(), [](uint8_t v) { return v == 0xA5; })) << "wrote past the target";
    ASSERT_TRUE(decoder.read_header(jpeg, info));
    ASSERT_TRUE(decoder.decode_region(1, 0, 0, info.width, info.height, std::span<uint8_t>(block.data(), bytes - 1), untouched, got));
    EXPECT_EQ(got.data, untouched.data()) << "a target too small was written";
  }
}

}  // namespace
}  // namespace slip::detail
