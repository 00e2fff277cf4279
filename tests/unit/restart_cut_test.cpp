// Restart markers (docs/FORMAT.md#restart-markers): re-encoding keeps every pixel, and a window
// cut out of a restart-marker JPEG (decode/restart_cut.cpp) decodes to the very samples the
// whole image has there, on every JPEG kind of the corpus and every sampling, at every DCT
// scale. Irregular restart streams are refused (the engine then decodes the whole image).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <turbojpeg.h>

#include "decode/jpeg_region.hpp"
#include "decode/restart_cut.hpp"
#include "image/jpeg_restarts.hpp"
#include "test_support.hpp"

namespace slip::detail {
namespace {

// TurboJPEG's full decode to RGB (the pixels every libjpeg-turbo reader gets).
std::vector<uint8_t> rgb_of(const std::vector<std::byte>& jpeg) {
  tjhandle h = tjInitDecompress();
  int w = 0, ht = 0, samp = 0, cs = 0;
  const auto* data = reinterpret_cast<const unsigned char*>(jpeg.data());
  EXPECT_EQ(tjDecompressHeader3(h, data, jpeg.size(), &w, &ht, &samp, &cs), 0);
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * ht * 3);
  EXPECT_EQ(tjDecompress2(h, data, jpeg.size(), rgb.data(), w, 0, ht, TJPF_RGB, 0), 0) << tjGetErrorStr2(h);
  tjDestroy(h);
  return rgb;
}

std::vector<std::byte> cut_test_jpeg(int width, int height, int samp, bool progressive) {
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * height * 3);
  std::mt19937 rng(static_cast<uint32_t>(width * 31 + height));
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>((i / 3 % width) + (i / 3 / width) * 2 + rng() % 40);
  tjhandle h = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(h, rgb.data(), width, 0, height, TJPF_RGB, &jpeg, &size, samp, 90, progressive ? TJFLAG_PROGRESSIVE : 0), 0);
  std::vector<std::byte> out(size);
  std::memcpy(out.data(), jpeg, size);
  tjFree(jpeg);
  tjDestroy(h);
  return out;
}

// A few corpus JPEGs of every kind the manifest lists (baseline/progressive, samplings,
// grayscale, restart markers, odd sizes), with their names.
std::vector<std::pair<std::string, std::vector<std::byte>>> corpus_jpegs(int per_kind) {
  std::vector<std::pair<std::string, std::vector<std::byte>>> out;
  std::map<std::string, int> seen;
  for (const auto& col : test::corpus_manifest()) {
    if (col.size() < 8 || col[4] != "jpeg" || col[5] == "cmyk") continue;
    if (std::stoll(col[2]) * std::stoll(col[3]) > 4'000'000) continue;  // the huge ones: slow, and no other kind
    if (seen[col[5] + "/" + col[6] + "/" + col[7]]++ >= per_kind) continue;
    out.emplace_back(col[0], test::read_bytes(test::shared_dir() / "corpus/imagenet_like" / col[0]));
  }
  return out;
}

TEST(JpegRestarts, IntervalsTileEveryMcuRowAndStayNarrow) {
  for (uint32_t mcu_width : {8u, 16u, 32u})
    for (uint32_t per_row = 1; per_row < 300; ++per_row) {
      const uint32_t k = restart_interval_for(per_row, mcu_width);
      ASSERT_GE(k, 1u);
      EXPECT_EQ(per_row % k, 0u) << per_row;
      EXPECT_TRUE(k == 1 || k * mcu_width <= kRestartIntervalPixels) << per_row;
    }
  EXPECT_EQ(restart_interval_for(32, 16), 4u);  // a 500-pixel 4:2:0 row: 8 intervals of 64 px
  EXPECT_EQ(restart_interval_for(31, 16), 1u);  // prime: one MCU each
}

// Checks one re-encoded JPEG: the pixels of the original, the restart interval chosen, and
// windows cut at every scale against the whole image's planes. Returns the windows checked.
int check_reencoded(const std::vector<std::byte>& original, const std::string& name, uint32_t seed) {
  const auto reencoded = reencode_with_restarts(original);
  if (!reencoded) {
    ADD_FAILURE() << name << ": not re-encoded";
    return 0;
  }
  EXPECT_EQ(rgb_of(*reencoded), rgb_of(original)) << name << ": pixels changed";
  JpegRegionDecoder decoder;
  JpegImageInfo info;
  EXPECT_TRUE(decoder.read_header(*reencoded, info)) << name;
  RestartGeometry g;
  if (!decoder.restart_geometry(g)) {
    ADD_FAILURE() << name << ": no restart geometry";
    return 0;
  }
  EXPECT_EQ(g.interval, restart_interval_for(g.mcus_per_row(), g.mcu_width)) << name;
  std::vector<size_t> ends;
  EXPECT_TRUE(index_restart_intervals(*reencoded, g, ends)) << name;
  // The frame header the geometry names is the SOF (FF C0 or C1) before the scan data.
  EXPECT_LT(g.sof_offset + 10, g.entropy_offset) << name;
  EXPECT_EQ(std::to_integer<int>((*reencoded)[g.sof_offset]), 0xFF) << name;
  EXPECT_EQ(std::to_integer<int>((*reencoded)[g.sof_offset + 1]) & 0xFE, 0xC0) << name;
  if (!decoder.planar_capable()) return 0;
  std::mt19937 rng(seed);
  std::vector<uint8_t> whole_scratch, cut_scratch;
  std::vector<std::byte> cut_jpeg;
  int checked = 0;
  for (int denom : {1, 2, 4, 8}) {
    EXPECT_TRUE(decoder.read_header(*reencoded, info));
    int width = 0, height = 0;
    decoder.scaled_size(denom, width, height);
    DecodedPlanes whole;
    EXPECT_TRUE(decoder.decode_planes(denom, 0, 0, width, height, whole_scratch, whole)) << name;
    for (int trial = 0; trial < 8; ++trial) {
      // Windows in image pixels, from one pixel to most of the image, on each edge now and then.
      const auto w = static_cast<uint32_t>(info.width), h = static_cast<uint32_t>(info.height);
      const uint32_t x0 = trial == 0 ? 0 : rng() % w, y0 = trial == 1 ? 0 : rng() % h;
      const uint32_t x1 = trial == 2 ? w : x0 + 1 + rng() % (w - x0), y1 = trial == 3 ? h : y0 + 1 + rng() % (h - y0);
      RestartCut cut;
      if (!cut_restart_window(*reencoded, g, ends, x0, y0, x1, y1, cut_jpeg, cut)) {
        // Only a window whose intervals are the whole image is not cut.
        EXPECT_TRUE(x0 < g.interval * g.mcu_width && y0 < g.mcu_height) << name;
        continue;
      }
      std::ostringstream where;
      where << name << " 1/" << denom << " window [" << x0 << "," << x1 << ")x[" << y0 << "," << y1 << ") cut at " << cut.x << "," << cut.y
            << " " << cut.width << "x" << cut.height;
      EXPECT_LE(cut.x, x0) << where.str();
      EXPECT_LE(cut.y, y0) << where.str();
      EXPECT_GE(cut.x + cut.width, std::min(x1, w)) << where.str();
      EXPECT_GE(cut.y + cut.height, std::min(y1, h)) << where.str();
      EXPECT_LT(cut_jpeg.size(), reencoded->size() + 16) << where.str();
      JpegImageInfo cut_info;
      const bool read = decoder.read_header(cut_jpeg, cut_info);
      EXPECT_TRUE(read) << where.str() << ": " << decoder.message();
      if (!read) continue;
      EXPECT_EQ(cut_info.width, static_cast<int>(cut.width)) << where.str();
      EXPECT_EQ(cut_info.height, static_cast<int>(cut.height)) << where.str();
      int cw = 0, ch = 0;
      decoder.scaled_size(denom, cw, ch);
      DecodedPlanes part;
      const bool ok = decoder.decode_planes(denom, 0, 0, cw, ch, cut_scratch, part);
      EXPECT_TRUE(ok) << where.str() << ": " << decoder.message();
      if (!ok) continue;
      for (int p = 0; p < part.planes; ++p) {
        const double sx = p == 0 ? 1.0 : part.chroma_scale_x, sy = p == 0 ? 1.0 : part.chroma_scale_y;
        const auto ox = static_cast<size_t>(cut.x / denom * sx), oy = static_cast<size_t>(cut.y / denom * sy);
        const bool inside =
            ox + part.width[p] <= static_cast<size_t>(whole.width[p]) && oy + part.height[p] <= static_cast<size_t>(whole.height[p]);
        EXPECT_TRUE(inside) << where.str() << " plane " << p;
        if (!inside) continue;
        int mismatches = 0;
        for (int y = 0; y < part.height[p]; ++y)
          mismatches += std::memcmp(part.data[p] + static_cast<size_t>(y) * part.stride[p], whole.data[p] + (oy + y) * whole.stride[p] + ox,
                                    static_cast<size_t>(part.width[p])) != 0;
        EXPECT_EQ(mismatches, 0) << where.str() << " plane " << p;
      }
      ++checked;
    }
  }
  return checked;
}

TEST(JpegRestarts, ReencodedCorpusKeepsItsPixelsAndCutsDecodeToTheWholeImagesSamples) {
  SLIP_REQUIRE_SHARED();
  int images = 0, windows = 0;
  for (const auto& [name, jpeg] : corpus_jpegs(3)) {
    windows += check_reencoded(jpeg, name, static_cast<uint32_t>(images));
    ++images;
  }
  EXPECT_GE(images, 12);
  EXPECT_GE(windows, images * 20);
}

TEST(JpegRestarts, EverySamplingBaselineAndProgressive) {
  const std::pair<const char*, int> samplings[] = {{"420", TJSAMP_420}, {"422", TJSAMP_422},   {"444", TJSAMP_444},
                                                   {"440", TJSAMP_440}, {"gray", TJSAMP_GRAY}, {"411", TJSAMP_411}};
  for (const auto& [name, samp] : samplings)
    for (bool progressive : {false, true})
      for (const auto& [w, h] : {std::pair{333, 217}, std::pair{500, 375}, std::pair{17, 9}, std::pair{1, 1}}) {
        const std::string label =
            std::string(name) + (progressive ? " progressive " : " baseline ") + std::to_string(w) + "x" + std::to_string(h);
        check_reencoded(cut_test_jpeg(w, h, samp, progressive), label, static_cast<uint32_t>(w * 7 + samp));
      }
}

// The restart stream of a re-encoded corpus photo, damaged in each way the index must notice.
TEST(JpegRestarts, IrregularRestartStreamsAreRefused) {
  const auto jpeg = *reencode_with_restarts(cut_test_jpeg(333, 217, TJSAMP_420, false));
  JpegRegionDecoder decoder;
  JpegImageInfo info;
  ASSERT_TRUE(decoder.read_header(jpeg, info));
  RestartGeometry g;
  ASSERT_TRUE(decoder.restart_geometry(g));
  std::vector<size_t> ends;
  ASSERT_TRUE(index_restart_intervals(jpeg, g, ends));
  ASSERT_GT(ends.size(), 10u);
  auto refused = [&](std::vector<std::byte> bytes, const char* what) {
    std::vector<size_t> e;
    EXPECT_FALSE(index_restart_intervals(bytes, g, e)) << what;
  };
  {
    auto b = jpeg;
    b[ends[3] + 1] = std::byte{0xD5};  // RST3 out of sequence
    refused(b, "a marker out of sequence");
  }
  {
    auto b = jpeg;
    b.insert(b.begin() + static_cast<std::ptrdiff_t>(ends[2]), std::byte{0xFF});  // a fill byte before RST2
    refused(b, "a fill byte");
  }
  {
    auto b = jpeg;
    b.erase(b.begin() + static_cast<std::ptrdiff_t>(ends[4]), b.begin() + static_cast<std::ptrdiff_t>(ends[5]));  // one interval less
    refused(b, "an interval missing");
  }
  {
    auto b = jpeg;
    b.resize(ends.back());  // no EOI
    refused(b, "no EOI");
  }
  {
    auto b = jpeg;
    b[ends[7] + 1] = std::byte{0xC4};  // another marker inside the scan (a second scan's tables)
    refused(b, "another marker");
  }
  {
    auto b = jpeg;
    const std::byte extra[] = {std::byte{0x12}, std::byte{0xFF}, static_cast<std::byte>(0xD0 + ends.size() % 8)};
    b.insert(b.begin() + static_cast<std::ptrdiff_t>(ends.back()), std::begin(extra), std::end(extra));  // one interval too many
    refused(b, "an extra interval");
  }
  RestartGeometry odd = g;
  odd.interval = 5;  // 21 MCUs per row: 5 neither divides 21 nor is a multiple of it
  std::vector<size_t> e;
  EXPECT_FALSE(index_restart_intervals(jpeg, odd, e));  // counts no longer match
  RestartCut cut;
  std::vector<std::byte> out;
  EXPECT_FALSE(cut_restart_window(jpeg, odd, ends, 100, 100, 120, 120, out, cut));  // intervals that do not tile the rows
  EXPECT_FALSE(cut_restart_window(jpeg, g, ends, 0, 0, 333, 217, out, cut));        // the whole image
  EXPECT_FALSE(cut_restart_window(jpeg, g, ends, 50, 50, 50, 60, out, cut));        // empty
  EXPECT_FALSE(cut_restart_window(jpeg, g, ends, 400, 0, 500, 10, out, cut));       // outside
  EXPECT_TRUE(cut_restart_window(jpeg, g, ends, 100, 100, 120, 120, out, cut));
  EXPECT_EQ(cut.x, 96u);  // 21 MCUs per row: intervals of 3 MCUs (48 px)
  EXPECT_EQ(cut.y, 96u);
  // A frame header that would not fit before the scan data is never patched.
  RestartGeometry late = g;
  late.sof_offset = g.entropy_offset - 9;
  EXPECT_FALSE(cut_restart_window(jpeg, late, ends, 100, 100, 120, 120, out, cut));
}

TEST(JpegRestarts, CorruptOrForeignInputIsNotReencoded) {
  const auto good = cut_test_jpeg(64, 48, TJSAMP_420, false);
  auto truncated = good;
  truncated.resize(good.size() / 2);
  EXPECT_FALSE(reencode_with_restarts(truncated));  // libjpeg warns (premature end): stored as it came
  EXPECT_FALSE(reencode_with_restarts(std::as_bytes(std::span(std::string_view("not a jpeg at all")))));
  EXPECT_FALSE(reencode_with_restarts({}));
  EXPECT_TRUE(reencode_with_restarts(good));
}

}  // namespace
}  // namespace slip::detail
