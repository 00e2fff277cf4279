// The decode engine: samplers against torchvision's own draws, pixels against Pillow's
// resized_crop outputs (../shared/reference), crop-aware decoding against full decode + crop,
// determinism across thread counts, awkward images and corrupt JPEGs.
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>
#include <turbojpeg.h>

#include "decode/jpeg_region.hpp"
#include "decode/samplers.hpp"
#include "image/jpeg_restarts.hpp"
#include "slip/cache.hpp"
#include "slip/convert.hpp"
#include "slip/decode.hpp"
#include "slip/pipelines.hpp"
#include "slip/error.hpp"
#include "slip/image.hpp"
#include "slip/npy.hpp"
#include "slip/source.hpp"
#include "test_support.hpp"

namespace slip {
namespace {

namespace fs = std::filesystem;

std::vector<std::byte> file_bytes(const fs::path& p) { return test::read_bytes(p); }

// (top, left, height, width) rows of a reference draws file.
std::vector<std::array<int32_t, 4>> read_draws(const fs::path& p) {
  const auto bytes = file_bytes(p);
  const NpyHeader h = parse_npy_header(bytes, p.string());
  EXPECT_EQ(h.descr, "'<i4'");
  EXPECT_EQ(h.shape.size(), 2u);
  std::vector<std::array<int32_t, 4>> rows(h.shape.at(0));
  EXPECT_EQ(bytes.size() - h.data_offset, rows.size() * 16);
  std::memcpy(rows.data(), bytes.data() + h.data_offset, rows.size() * 16);
  return rows;
}

struct DrawsFile {
  const char* name;
  int width, height;
  double scale_lo, scale_hi;
};
const DrawsFile kDraws[] = {
    {"rrc_W500_H375_scale0.08-1.npy", 500, 375, 0.08, 1.0},     {"rrc_W375_H500_scale0.08-1.npy", 375, 500, 0.08, 1.0},
    {"rrc_W250_H250_scale0.08-1.npy", 250, 250, 0.08, 1.0},     {"rrc_W4000_H3000_scale0.08-1.npy", 4000, 3000, 0.08, 1.0},
    {"rrc_W100_H30_scale0.08-1.npy", 100, 30, 0.08, 1.0},       {"rrc_W500_H375_scale0.32-1.npy", 500, 375, 0.32, 1.0},
    {"rrc_W500_H375_scale0.05-0.32.npy", 500, 375, 0.05, 0.32},
};

// Fed torch's own generator (MT19937 seeded with 0), the sampler reproduces torchvision's
// get_params row for row; the reference README explains the rare +-1 differences (float32 exp
// rounding in torch), expected at about 1 row in 100,000.
TEST(RrcSampler, ReproducesTorchvisionDrawsRowForRow) {
  SLIP_REQUIRE_SHARED();
  for (const DrawsFile& f : kDraws) {
    const auto rows = read_draws(test::shared_dir() / "reference/rrc_draws" / f.name);
    ASSERT_EQ(rows.size(), 100000u);
    std::mt19937 torch_generator(0);
    size_t differing = 0;
    for (const auto& row : rows) {
      const CropWindow w = detail::rrc_window(torch_generator, f.width, f.height, f.scale_lo, f.scale_hi, 3.0 / 4.0, 4.0 / 3.0);
      if (w.y != row[0] || w.x != row[1] || w.height != row[2] || w.width != row[3]) ++differing;
    }
    EXPECT_LE(differing, 5u) << f.name;
    RecordProperty(f.name, static_cast<int>(differing));
  }
}

// Two-sample Kolmogorov-Smirnov statistic.
double ks_statistic(std::vector<double> a, std::vector<double> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  size_t i = 0, j = 0;
  double d = 0;
  while (i < a.size() && j < b.size()) {
    const double x = std::min(a[i], b[j]);
    while (i < a.size() && a[i] <= x) ++i;
    while (j < b.size() && b[j] <= x) ++j;
    d = std::max(d, std::abs(static_cast<double>(i) / a.size() - static_cast<double>(j) / b.size()));
  }
  return d;
}

// slip's own generator (counter-based, keyed by seed/epoch/sample/crop) draws from the same
// distribution as torchvision: 100k windows per configuration against the reference draws,
// two-sample KS on area fraction, log aspect ratio and the window centre (x and y). Threshold:
// the KS critical value at alpha = 0.001 for n = m = 100000, 1.949 * sqrt(2 / 100000) = 0.00872.
TEST(RrcSampler, CounterGeneratorMatchesTorchvisionDistribution) {
  SLIP_REQUIRE_SHARED();
  const double critical = 1.949 * std::sqrt(2.0 / 100000.0);
  for (const DrawsFile& f : kDraws) {
    const auto rows = read_draws(test::shared_dir() / "reference/rrc_draws" / f.name);
    CropGroup g;
    g.scale_lo = f.scale_lo;
    g.scale_hi = f.scale_hi;
    std::array<std::vector<double>, 4> ref, ours;
    const double area = static_cast<double>(f.width) * f.height;
    for (size_t k = 0; k < rows.size(); ++k) {
      const auto& r = rows[k];
      ref[0].push_back(r[2] * static_cast<double>(r[3]) / area);
      ref[1].push_back(std::log(static_cast<double>(r[3]) / r[2]));
      ref[2].push_back((r[1] + r[3] / 2.0) / f.width);
      ref[3].push_back((r[0] + r[2] / 2.0) / f.height);
      const CropWindow w = sample_crop_window(g, f.width, f.height, 7, 3, k, 0, 0.0);
      ours[0].push_back(w.height * static_cast<double>(w.width) / area);
      ours[1].push_back(std::log(static_cast<double>(w.width) / w.height));
      ours[2].push_back((w.x + w.width / 2.0) / f.width);
      ours[3].push_back((w.y + w.height / 2.0) / f.height);
    }
    const char* names[] = {"area fraction", "log aspect", "centre x", "centre y"};
    for (int s = 0; s < 4; ++s) EXPECT_LT(ks_statistic(ref[s], ours[s]), critical) << f.name << ": " << names[s];
  }
}

TEST(Samplers, WindowsLieInsideAndAreFixedBySeed) {
  std::mt19937 sizes(1);
  const std::vector<CropGroup> groups = {pipeline_crop_groups("center")[0], pipeline_crop_groups("rrc")[0],
                                         pipeline_crop_groups("direct-rrc")[0], parse_crop_groups("dino")[1]};
  std::vector<std::pair<uint32_t, uint32_t>> dims = {{1, 1}, {3, 7}, {7, 3}, {1, 500}, {4000, 3000}, {100, 30}, {499, 375}};
  for (int i = 0; i < 200; ++i) dims.emplace_back(1 + sizes() % 1500, 1 + sizes() % 1500);
  for (const CropGroup& g : groups)
    for (auto [w, h] : dims)
      for (uint64_t sample = 0; sample < 20; ++sample) {
        const CropWindow a = sample_crop_window(g, w, h, 42, 1, sample, 3, 0.5);
        ASSERT_GE(a.x, 0);
        ASSERT_GE(a.y, 0);
        ASSERT_GE(a.width, 1);
        ASSERT_GE(a.height, 1);
        ASSERT_LE(a.x + a.width, static_cast<int64_t>(w)) << w << "x" << h;
        ASSERT_LE(a.y + a.height, static_cast<int64_t>(h)) << w << "x" << h;
        const CropWindow b = sample_crop_window(g, w, h, 42, 1, sample, 3, 0.5);
        ASSERT_TRUE(a.x == b.x && a.y == b.y && a.width == b.width && a.height == b.height && a.flip == b.flip);
      }
  // Seeds, epochs and crop indices change the windows (rrc on a large image).
  const CropGroup rrc = pipeline_crop_groups("rrc")[0];
  int same = 0;
  for (uint64_t s = 0; s < 100; ++s) {
    const CropWindow a = sample_crop_window(rrc, 500, 375, 1, 0, s, 0, 0);
    const CropWindow b = sample_crop_window(rrc, 500, 375, 2, 0, s, 0, 0);
    const CropWindow c = sample_crop_window(rrc, 500, 375, 1, 1, s, 0, 0);
    same += (a.x == b.x && a.width == b.width) + (a.x == c.x && a.width == c.width);
  }
  EXPECT_LT(same, 5);
}

TEST(Samplers, PixelLayoutOneSpellingAnyCase) {
  // bench said hwc/chw, the Loader NHWC/NCHW: both spellings, any case, everywhere.
  for (const char* name : {"hwc", "HWC", "nhwc", "NHWC", "NhWc"}) EXPECT_EQ(parse_pixel_layout(name), PixelLayout::hwc) << name;
  for (const char* name : {"chw", "CHW", "nchw", "NCHW", "nChW"}) EXPECT_EQ(parse_pixel_layout(name), PixelLayout::chw) << name;
  for (const char* name : {"", "cwh", "nhw", "NCHWX", "n chw"}) {
    try {
      parse_pixel_layout(name);
      ADD_FAILURE() << "accepted '" << name << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::usage) << name;
      EXPECT_NE(e.message().find("HWC (NHWC) or CHW (NCHW)"), std::string::npos) << e.message();
    }
  }
}

TEST(Samplers, CropSpecsParseAndRejectNonsense) {
  const auto dino = parse_crop_groups("dino");
  ASSERT_EQ(dino.size(), 2u);
  EXPECT_EQ(dino[0].count, 2u);
  EXPECT_EQ(dino[0].size, 224u);
  EXPECT_DOUBLE_EQ(dino[0].scale_lo, 0.32);
  EXPECT_EQ(dino[1].count, 8u);
  EXPECT_EQ(dino[1].size, 96u);
  EXPECT_DOUBLE_EQ(dino[1].scale_hi, 0.32);
  EXPECT_EQ(parse_crop_groups("128")[0].count, 1u);
  for (const char* bad : {"", "x224", "2x", "2x224@0.5", "2x224@0.9-0.1", "0x224", "2x0", "2x224@0-1", "a", "2x224@0.1-1.5",
                          "4294967297x96", "65x96", "1.5x96", "96.5", "-1x96"})
    EXPECT_THROW(parse_crop_groups(bad), Error) << bad;
}

// A cache of the six reference images of ../shared/reference/resized_crop, in windows.json order.
struct ReferenceCache {
  test::TempDir tmp;
  nlohmann::json windows;
  std::optional<Cache> cache;
  ReferenceCache() {
    const fs::path ref = test::shared_dir() / "reference/resized_crop";
    windows = nlohmann::json::parse(test::read_file(ref / "windows.json"));
    fs::create_directories(tmp.path() / "src/c");
    int i = 0;
    for (const auto& img : windows["images"]) {
      char name[32];
      std::snprintf(name, sizeof name, "%02d.JPEG", i++);
      fs::copy_file(test::shared_dir() / "corpus/imagenet_like" / img["image"].get<std::string>(), tmp.path() / "src/c" / name);
    }
    auto source = open_source((tmp.path() / "src").string());
    ConvertOptions opt;
    opt.output_dir = tmp.path() / "out";
    cache.emplace(Cache::open(convert(*source, opt).cache_path));
  }
};

struct PixelDiff {
  double mean = 0, psnr = 0;
  int max = 0;
};
PixelDiff compare(const std::vector<uint8_t>& ours, const RgbImage& ref) {
  EXPECT_EQ(ours.size(), ref.pixels.size());
  PixelDiff d;
  double sq = 0;
  for (size_t i = 0; i < std::min(ours.size(), ref.pixels.size()); ++i) {
    const int e = std::abs(int(ours[i]) - int(ref.pixels[i]));
    d.max = std::max(d.max, e);
    d.mean += e;
    sq += e * e;
  }
  d.mean /= static_cast<double>(ours.size());
  sq /= static_cast<double>(ours.size());
  d.psnr = sq == 0 ? 99.0 : 10 * std::log10(255.0 * 255.0 / sq);
  return d;
}

RgbImage read_png(const fs::path& p) { return decode_to_rgb(file_bytes(p)); }

// RGB rows (pitch 0: packed) encoded by TurboJPEG into `path`.
void write_jpeg(const fs::path& path, const uint8_t* rgb, int width, int pitch, int height, int sampling, int quality) {
  tjhandle h = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  ASSERT_EQ(tjCompress2(h, rgb, width, pitch, height, TJPF_RGB, &jpeg, &size, sampling, quality, 0), 0) << tjGetErrorStr2(h);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(jpeg), static_cast<std::streamsize>(size));
  tjFree(jpeg);
  tjDestroy(h);
}

// Full decode + crop + resize (the engine's reference path) is Pillow's crop().resize() to the
// byte, for bilinear and bicubic, downscaling and upscaling, grayscale and 4:4:4 included:
// both decode with libjpeg-turbo's ISLOW IDCT and fancy upsampling, and the resampler is
// Pillow's fixed-point algorithm.
TEST(DecodePixels, FullDecodePathEqualsPillowResizedCrop) {
  SLIP_REQUIRE_SHARED();
  ReferenceCache ref;
  const fs::path dir = test::shared_dir() / "reference/resized_crop";
  uint64_t sample = 0;
  for (const auto& img : ref.windows["images"]) {
    for (const auto& win : img["windows"])
      for (const char* filter : {"bilinear", "bicubic"}) {
        DecodeOptions o;
        o.crop_aware = false;
        o.filter = std::string(filter) == "bicubic" ? ResampleFilter::bicubic : ResampleFilter::bilinear;
        o.threads = 1;
        const std::vector<CropWindow> w = {{win["left"], win["top"], win["width"], win["height"], false}};
        const auto ours = detail::decode_crops_for_test(*ref.cache, sample, o, w);
        const PixelDiff d = compare(ours, read_png(dir / win["outputs"][filter].get<std::string>()));
        EXPECT_EQ(d.max, 0) << img["image"] << " " << win << " " << filter << " mean " << d.mean;
      }
    ++sample;
  }
}

// Crop-aware decoding (rows skipped, columns cropped, DCT scaling when the window is >= 2x the
// output) stays close to Pillow. Documented bound (docs/PERFORMANCE.md, "Decoding and `slip bench`"): mean absolute
// difference <= 1.5 and PSNR >= 33 dB per crop; without DCT scaling the output is exact.
TEST(DecodePixels, CropAwarePathWithinBoundOfPillow) {
  SLIP_REQUIRE_SHARED();
  ReferenceCache ref;
  const fs::path dir = test::shared_dir() / "reference/resized_crop";
  uint64_t sample = 0;
  double worst_mean = 0, worst_psnr = 99;
  for (const auto& img : ref.windows["images"]) {
    for (const auto& win : img["windows"]) {
      DecodeOptions o;
      o.threads = 1;
      o.resample = ResampleMode::rgb;  // the default (planar) has its own test: PlanarPathWithinBoundOfPillow
      const std::vector<CropWindow> w = {{win["left"], win["top"], win["width"], win["height"], false}};
      const auto ours = detail::decode_crops_for_test(*ref.cache, sample, o, w);
      const PixelDiff d = compare(ours, read_png(dir / win["outputs"]["bilinear"].get<std::string>()));
      const bool scaled = win["width"].get<int>() >= 448 && win["height"].get<int>() >= 448;
      if (!scaled) {
        EXPECT_EQ(d.max, 0) << img["image"] << " " << win;
      }
      EXPECT_LE(d.mean, 1.5) << img["image"] << " " << win;
      EXPECT_GE(d.psnr, 33.0) << img["image"] << " " << win;
      worst_mean = std::max(worst_mean, d.mean);
      worst_psnr = std::min(worst_psnr, d.psnr);
    }
    ++sample;
  }
  std::printf("crop-aware vs Pillow: worst mean abs diff %.3f, worst PSNR %.2f dB\n", worst_mean, worst_psnr);
}

// The center pipeline (one resize of the exact source box) against torchvision's Resize(256) +
// CenterCrop(224) (a resize of the whole image, then a crop): equal but for the filter taps at
// the crop's border and DCT scaling of large images (rgb), and the planar path's own rounding.
// Bound, for both: mean <= 1, PSNR >= 40 dB.
TEST(DecodePixels, CenterPipelineCloseToResize256CenterCrop224) {
  SLIP_REQUIRE_SHARED();
  ReferenceCache ref;
  const fs::path dir = test::shared_dir() / "reference/resized_crop";
  uint64_t sample = 0;
  for (const auto& img : ref.windows["images"]) {
    const std::string stem = fs::path(img["image"].get<std::string>()).stem().string();
    for (ResampleMode mode : {ResampleMode::rgb, ResampleMode::planar}) {
      DecodeOptions o;
      o.threads = 1;
      o.resample = mode;
      o.groups = pipeline_crop_groups("center");
      const CropWindow w = sample_crop_window(o.groups[0], img["width"], img["height"], 0, 0, sample, 0, 0);
      const auto ours = detail::decode_crops_for_test(*ref.cache, sample, o, {w});
      const PixelDiff d = compare(ours, read_png(dir / (stem + "_val_resize256_center224.png")));
      const char* name = mode == ResampleMode::rgb ? "rgb" : "planar";
      EXPECT_LE(d.mean, 1.0) << stem << " " << name;
      EXPECT_GE(d.psnr, 40.0) << stem << " " << name;
      std::printf("center %s (%s): mean %.3f max %d PSNR %.2f\n", stem.c_str(), name, d.mean, d.max, d.psnr);
    }
    ++sample;
  }
}

struct SampleCache {
  test::TempDir tmp;
  std::optional<Cache> cache;
  explicit SampleCache(const fs::path& src, bool jpeg_restarts = false) {
    auto source = open_source(src.string());
    ConvertOptions opt;
    opt.output_dir = tmp.path() / "out";
    opt.non_jpeg = NonJpegPolicy::keep;
    opt.jpeg_restarts = jpeg_restarts;
    cache.emplace(Cache::open(convert(*source, opt).cache_path));
  }
};

std::vector<std::vector<std::byte>> run_batch(const Cache& cache, DecodeOptions o, uint64_t epoch) {
  BatchDecoder engine(cache, o);
  std::vector<uint64_t> ids(cache.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = ids.size() - 1 - i;  // any order
  std::vector<std::vector<std::byte>> buffers;
  std::vector<std::span<std::byte>> outputs;
  for (const CropGroup& g : o.groups) buffers.emplace_back(ids.size() * crop_group_sample_bytes(g, o.type));
  for (auto& b : buffers) outputs.emplace_back(b);
  engine.decode(ids, epoch, outputs);
  return buffers;
}

TEST(DecodeEngine, OneAndTwoThreadsGiveIdenticalBatches) {
  SampleCache c(fs::path(SLIP_SOURCE_DIR) / "examples/sample");
  for (const char* pipeline : {"rrc", "direct-rrc", "center", "multicrop"}) {
    DecodeOptions o;
    o.groups = pipeline_crop_groups(pipeline);
    o.flip_probability = 0.5;
    o.seed = 11;
    o.threads = 1;
    const auto one = run_batch(*c.cache, o, 2);
    o.threads = 2;
    const auto two = run_batch(*c.cache, o, 2);
    EXPECT_EQ(one, two) << pipeline;
    o.threads = 3;
    o.type = PixelType::float32;
    o.layout = PixelLayout::chw;
    const auto f = run_batch(*c.cache, o, 2);
    // float32 CHW is the normalised transpose of the uint8 HWC batch.
    const CropGroup& g = o.groups[0];
    const size_t pixels = static_cast<size_t>(g.size) * g.size;
    const auto* u8 = reinterpret_cast<const uint8_t*>(one[0].data());
    const auto* f32 = reinterpret_cast<const float*>(f[0].data());
    for (size_t p = 0; p < pixels; p += 97)
      for (int ch = 0; ch < 3; ++ch)
        ASSERT_NEAR(f32[ch * pixels + p], (u8[p * 3 + ch] / 255.0f - o.mean[ch]) / o.std[ch], 1e-5) << pipeline;
  }
}

// A cache converted with --jpeg-restarts holds other bytes (re-encoded with restart markers) but
// the same coefficients, and the engine decodes only the restart intervals under the crops:
// every pipeline, planar and Pillow-exact, gives the plain cache's crops to the byte.
TEST(DecodeEngine, RestartMarkerCacheGivesThePlainCachesCrops) {
  const fs::path sample = fs::path(SLIP_SOURCE_DIR) / "examples/sample";
  SampleCache plain(sample), restarted(sample, true);
  ASSERT_EQ(plain.cache->size(), restarted.cache->size());
  uint64_t differing_payloads = 0, reencodable = 0;
  for (uint64_t id = 0; id < plain.cache->size(); ++id) {
    const auto a = plain.cache->payload(0, id), b = restarted.cache->payload(0, id);
    differing_payloads += a.size() != b.size() || std::memcmp(a.data(), b.data(), a.size()) != 0;
    JpegHeader h;
    reencodable += parse_jpeg_header(a, h) && h.components != 4;  // CMYK (kept by --non-jpeg keep) is left as it is
  }
  EXPECT_EQ(differing_payloads, reencodable) << "every YCbCr and grayscale JPEG is re-encoded";
  EXPECT_GE(reencodable, 30u);
  for (const char* pipeline : {"rrc", "direct-rrc", "center", "multicrop"})
    for (ResampleMode mode : {ResampleMode::planar, ResampleMode::rgb}) {
      DecodeOptions o;
      o.groups = pipeline_crop_groups(pipeline);
      o.flip_probability = 0.5;
      o.seed = 5;
      o.resample = mode;
      for (uint64_t epoch : {0, 1, 2})
        EXPECT_EQ(run_batch(*plain.cache, o, epoch), run_batch(*restarted.cache, o, epoch))
            << pipeline << (mode == ResampleMode::rgb ? " rgb" : " planar") << " epoch " << epoch;
    }
  BatchDecoder plain_engine(*plain.cache, DecodeOptions{}), restarted_engine(*restarted.cache, DecodeOptions{});
  std::vector<uint64_t> ids(plain.cache->size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = i;
  EXPECT_EQ(plain_engine.decode_full(ids), restarted_engine.decode_full(ids));
}

// A restart-marker JPEG that lies is never decoded differently through a cut than whole:
// - a marker out of sequence makes the stream irregular, so the image is decoded whole and
//   every epoch fails naming the sample (libjpeg warns);
// - junk bytes inside one interval are corruption no decoder notices: the crops through the cut
//   equal those of the same damaged bytes decoded whole (the same bytes behind an FF fill byte
//   before EOI, which makes the engine refuse the cut), or both fail alike.
TEST(DecodeEngine, DamagedRestartJpegDecodesThroughACutAsItDoesWhole) {
  const fs::path sample = fs::path(SLIP_SOURCE_DIR) / "examples/sample/n01440764";
  std::vector<std::byte> intact;
  for (const auto& entry : fs::directory_iterator(sample)) {
    const auto bytes = file_bytes(entry.path());
    JpegHeader h;
    if (parse_jpeg_header(bytes, h) && h.components == 3 && !h.progressive && h.width >= 300 && h.height >= 300) {
      intact = *detail::reencode_with_restarts(bytes);
      break;
    }
  }
  ASSERT_FALSE(intact.empty());
  detail::JpegRegionDecoder jpeg;
  detail::JpegImageInfo info;
  ASSERT_TRUE(jpeg.read_header(intact, info));
  detail::RestartGeometry g;
  std::vector<size_t> ends;
  ASSERT_TRUE(jpeg.restart_geometry(g) && detail::index_restart_intervals(intact, g, ends));
  ASSERT_GT(ends.size(), 40u);
  auto cache_of = [](const std::vector<std::byte>& jpeg_bytes, test::TempDir& tmp) {
    fs::create_directories(tmp.path() / "src/c");
    std::ofstream(tmp.path() / "src/c/x.jpg", std::ios::binary)
        .write(reinterpret_cast<const char*>(jpeg_bytes.data()), static_cast<std::streamsize>(jpeg_bytes.size()));
    auto source = open_source((tmp.path() / "src").string());
    ConvertOptions opt;
    opt.output_dir = tmp.path() / "out";
    return Cache::open(convert(*source, opt).cache_path);
  };
  // Every (pipeline, path, epoch): the crops, or the error's text.
  auto outcomes = [](const Cache& cache) {
    std::vector<std::string> out;
    for (const char* pipeline : {"rrc", "center", "multicrop"})
      for (ResampleMode mode : {ResampleMode::planar, ResampleMode::rgb})
        for (uint64_t epoch = 0; epoch < 6; ++epoch) {
          DecodeOptions o;
          o.groups = pipeline_crop_groups(pipeline);
          o.resample = mode;
          o.seed = 3;
          o.threads = 1;
          try {
            std::string crops;
            for (const auto& group : run_batch(cache, o, epoch)) crops.append(reinterpret_cast<const char*>(group.data()), group.size());
            out.push_back(crops);
          } catch (const Error& e) {
            out.push_back(std::string("error: ") + e.what());
          }
        }
    return out;
  };

  auto out_of_sequence = intact;
  out_of_sequence[ends[ends.size() / 2] + 1] = std::byte(0xD0 + (ends.size() / 2 + 3) % 8);
  test::TempDir sequence_dir;
  for (const std::string& outcome : outcomes(cache_of(out_of_sequence, sequence_dir))) {
    EXPECT_EQ(outcome.rfind("error: ", 0), 0u) << "a crop of an irregular restart stream";
    EXPECT_NE(outcome.find("sample 0"), std::string::npos) << outcome;
  }

  auto junk = intact;
  const std::byte extra[] = {std::byte{0x5A}, std::byte{0x3C}, std::byte{0x77}};
  junk.insert(junk.begin() + static_cast<std::ptrdiff_t>(ends[ends.size() / 2] - 1), std::begin(extra), std::end(extra));
  auto junk_whole = junk;
  junk_whole.insert(junk_whole.end() - 2, std::byte{0xFF});  // FF FF D9: a fill byte, no cut
  test::TempDir junk_dir, whole_dir;
  const Cache junk_cache = cache_of(junk, junk_dir), whole_cache = cache_of(junk_whole, whole_dir);
  {
    detail::JpegImageInfo i;
    std::vector<size_t> e;
    ASSERT_TRUE(jpeg.read_header(junk_whole, i) && jpeg.restart_geometry(g));
    ASSERT_FALSE(detail::index_restart_intervals(junk_whole, g, e)) << "the reference must be decoded whole";
  }
  const auto through_cuts = outcomes(junk_cache), whole = outcomes(whole_cache);
  ASSERT_EQ(through_cuts.size(), whole.size());
  size_t differing = 0;
  for (size_t i = 0; i < whole.size(); ++i) differing += through_cuts[i] != whole[i];
  EXPECT_EQ(differing, 0u) << "of " << whole.size() << " outcomes";
  test::TempDir intact_dir;
  const auto clean = outcomes(cache_of(intact, intact_dir));
  size_t changed = 0;
  for (size_t i = 0; i < whole.size(); ++i) changed += clean[i] != whole[i];
  EXPECT_GT(changed, 0u) << "the junk changes nothing: the comparison above proves nothing";
}

// Flip mirrors the unflipped crop exactly.
// The loader's "decode" pipeline: whole images on the engine's threads into the caller's
// images, reused batch after batch (larger, smaller and non-JPEG images in the same slots), each
// exactly engine_decode_full's.
TEST(DecodeEngine, DecodeImagesIntoReusedImagesIsTheSingleImagePath) {
  SampleCache c(fs::path(SLIP_SOURCE_DIR) / "examples/sample");
  DecodeOptions o;
  o.groups = pipeline_crop_groups("decode");
  o.threads = 2;
  BatchDecoder engine(*c.cache, o);
  const size_t n = c.cache->size();
  ASSERT_GE(n, 8u);
  std::vector<uint64_t> forward(n), backward(n);
  for (size_t i = 0; i < n; ++i) forward[i] = i, backward[i] = n - 1 - i;
  std::vector<RgbImage> images(n);
  for (const auto* ids : {&forward, &backward, &forward}) {
    engine.decode_images(*ids, images);
    for (size_t slot = 0; slot < n; ++slot) {
      const RgbImage want = engine_decode_full(c.cache->payload(0, (*ids)[slot]));
      ASSERT_EQ(images[slot].width, want.width) << (*ids)[slot];
      ASSERT_EQ(images[slot].height, want.height) << (*ids)[slot];
      ASSERT_TRUE(images[slot].pixels == want.pixels) << "sample " << (*ids)[slot] << " in slot " << slot;
    }
  }
  std::vector<RgbImage> too_few(1);
  EXPECT_THROW(engine.decode_images(forward, too_few), Error);
}

// A slot that once held a large image does not keep its storage for the small ones after it;
// storage that fits is reused, not reallocated. Which worker decodes a slot (and so whose buffer
// changes hands with it) is up to the scheduler: the storage pointer is compared on one thread,
// where the hand-overs are fixed; the large storage must be let go on any number of threads.
TEST(DecodeEngine, DecodeImagesLetsGoOfALargeImagesStorage) {
  test::TempDir tmp;
  fs::create_directories(tmp.path() / "src/c");
  constexpr int kW = 1600, kH = 1200;  // 5.8 MB of RGB
  std::vector<uint8_t> rgb(static_cast<size_t>(kW) * kH * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>((i / 3 % kW) ^ (i / 3 / kW) ^ (i % 3 * 85));
  for (const auto& [name, width, height] : {std::tuple{"a_big.jpg", kW, kH}, std::tuple{"b_small.jpg", 64, 48}}) {
    write_jpeg(tmp.path() / "src/c" / name, rgb.data(), width, kW * 3, height, TJSAMP_420, 90);
  }
  SampleCache c(tmp.path() / "src");
  ASSERT_EQ(c.cache->size(), 2u);
  const uint64_t big = 0, small = 1;
  const RgbImage small_reference = engine_decode_full(c.cache->payload(0, small));
  for (unsigned threads : {1u, 2u, 4u}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    DecodeOptions o;
    o.groups = pipeline_crop_groups("decode");
    o.threads = threads;
    BatchDecoder engine(*c.cache, o);
    std::vector<RgbImage> slot(1);
    engine.decode_images({&big, 1}, slot);
    ASSERT_EQ(slot[0].width, static_cast<uint32_t>(kW));
    EXPECT_GE(slot[0].pixels.capacity(), rgb.size());
    for (int round = 0; round < 3; ++round) {
      const uint8_t* storage = slot[0].pixels.data();
      engine.decode_images({&small, 1}, slot);
      EXPECT_EQ(slot[0].width, 64u);
      EXPECT_LT(slot[0].pixels.capacity(), size_t{4} << 20) << "the large image's storage was kept (round " << round << ")";
      EXPECT_TRUE(slot[0].pixels == small_reference.pixels);
      // One thread: the first small decode hands the slot the worker's buffer (the worker takes
      // the large one); the worker then decodes into the large buffer, too large to hand over,
      // and copies into the slot's storage, which fits.
      if (threads == 1 && round > 0) {
        EXPECT_EQ(slot[0].pixels.data(), storage) << "storage that fits was reallocated (round " << round << ")";
      }
    }
  }
}

// The Loader's "decode" pipeline: a batch's whole images packed in one block, each exactly
// engine_decode_full's (non-JPEG sample images included), and the block reused batch after batch
// whatever thread decodes what: over many shuffled batches it is reallocated only for a batch
// larger than any before, so the storage, and the memory of a long run, stop growing (issue
// 42: RSS that crept by 30-50% over 60-200 epochs, each image's storage ratcheting up to 4 MiB).
TEST(DecodeEngine, PackedImagesAreTheSingleImagePathInOneReusedBlock) {
  SampleCache c(fs::path(SLIP_SOURCE_DIR) / "examples/sample");
  DecodeOptions o;
  o.groups = pipeline_crop_groups("decode");
  o.threads = 3;
  BatchDecoder engine(*c.cache, o);
  const size_t n = c.cache->size();
  std::vector<RgbImage> want;
  std::vector<size_t> bytes;
  for (size_t i = 0; i < n; ++i) {
    want.push_back(engine_decode_full(c.cache->payload(0, i)));
    bytes.push_back(want.back().pixels.size());
  }
  PackedImages packed;
  std::vector<uint64_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = i;
  size_t reallocations = 0, reuses = 0;
  std::mt19937_64 rng(7);
  for (int round = 0; round < 60; ++round) {
    std::shuffle(ids.begin(), ids.end(), rng);
    const size_t batch = 1 + rng() % 8;
    const std::span<const uint64_t> some(ids.data(), batch);
    size_t total = 0;
    for (uint64_t id : some) total += bytes[id];
    const uint8_t* storage = packed.pixels().data();
    const size_t capacity = packed.capacity();
    engine.decode_images(some, packed);
    ASSERT_EQ(packed.images.size(), batch);
    ASSERT_EQ(packed.pixels().size(), total);
    size_t offset = 0;
    for (size_t slot = 0; slot < batch; ++slot) {
      const PackedImages::Extent& e = packed.images[slot];
      const RgbImage& w = want[some[slot]];
      ASSERT_EQ(e.offset, offset);
      ASSERT_EQ(e.width, w.width);
      ASSERT_EQ(e.height, w.height);
      ASSERT_EQ(std::memcmp(packed.pixels().data() + e.offset, w.pixels.data(), w.pixels.size()), 0) << "sample " << some[slot];
      offset += w.pixels.size();
    }
    // The storage rule, whatever thread decoded what: a new block only for a batch that does
    // not fit, then with 1/4 to spare.
    const bool must_change = total > capacity;
    if (must_change) {
      ++reallocations;
      const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
      EXPECT_EQ(packed.capacity(), (total + total / 4 + page - 1) / page * page) << "round " << round;
    } else {
      ++reuses;
      EXPECT_EQ(packed.pixels().data(), storage) << "round " << round << ": a block that fits was reallocated";
      EXPECT_EQ(packed.capacity(), capacity) << "round " << round;
    }
  }
  EXPECT_GE(reuses, 50u) << reallocations << " reallocations in 60 batches";
  EXPECT_THROW(engine.decode_images(std::vector<uint64_t>{n}, packed), Error);
}

// A block that once held a large batch keeps its place for a much smaller one, but the pages
// past what it uses go back to the system (over 4 MiB and over twice the need), and it is reused.
TEST(DecodeEngine, PackedImagesLetGoOfALargeBatchsPages) {
  test::TempDir tmp;
  fs::create_directories(tmp.path() / "src/c");
  constexpr int kW = 1600, kH = 1200;  // 5.8 MB of RGB
  std::vector<uint8_t> rgb(static_cast<size_t>(kW) * kH * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>((i / 3 % kW) ^ (i / 3 / kW) ^ (i % 3 * 85));
  for (const auto& [name, width, height] : {std::tuple{"a_big.jpg", kW, kH}, std::tuple{"b_small.jpg", 64, 48}})
    write_jpeg(tmp.path() / "src/c" / name, rgb.data(), width, kW * 3, height, TJSAMP_420, 90);
  SampleCache c(tmp.path() / "src");
  DecodeOptions o;
  o.groups = pipeline_crop_groups("decode");
  o.threads = 2;
  BatchDecoder engine(*c.cache, o);
  PackedImages packed;
  const std::vector<uint64_t> both = {0, 1}, small = {1};
  engine.decode_images(both, packed);
  ASSERT_EQ(packed.pixels().size(), rgb.size() + 64 * 48 * 3);
  const uint8_t* storage = packed.pixels().data();
  const auto resident_pages = [&] {  // of the block past the first MiB
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const auto begin = (reinterpret_cast<uintptr_t>(storage) + (size_t{1} << 20)) / page * page;
    const auto end = (reinterpret_cast<uintptr_t>(storage) + rgb.size()) / page * page;
    std::vector<unsigned char> in((end - begin) / page);
    EXPECT_EQ(mincore(reinterpret_cast<void*>(begin), end - begin, in.data()), 0);
    return std::count_if(in.begin(), in.end(), [](unsigned char v) { return (v & 1) != 0; });
  };
  EXPECT_GT(resident_pages(), 1000);
  engine.decode_images(small, packed);
  EXPECT_EQ(packed.pixels().data(), storage) << "the block was reallocated";
  EXPECT_EQ(resident_pages(), 0) << "the large batch's pages were kept";
  const RgbImage want = engine_decode_full(c.cache->payload(0, 1));
  ASSERT_TRUE(std::equal(packed.pixels().begin(), packed.pixels().end(), want.pixels.begin(), want.pixels.end()));
  engine.decode_images(both, packed);  // and it grows back in place
  EXPECT_EQ(packed.pixels().data(), storage);
  EXPECT_EQ(packed.images[1].offset, rgb.size());
  EXPECT_TRUE(std::equal(packed.pixels().begin() + static_cast<ptrdiff_t>(rgb.size()), packed.pixels().end(), want.pixels.begin(),
                         want.pixels.end()));
}

// The packed block on a YUV420 cache: each image planned from its record (a YUV420 payload has
// no header; before, every one was planned empty, decoded aside and the batch packed again)
// and decoded straight into its place: the same images as the per-image path, one block.
TEST(DecodeEngine, PackedImagesOfAYuv420CacheArePlannedFromTheirRecords) {
  SLIP_REQUIRE_SHARED();
  const Cache yuv = Cache::open(test::shared_dir() / "fixtures/pyslipstream/slipcache-3131b662-yuv420");
  DecodeOptions o;
  o.groups = pipeline_crop_groups("decode");
  o.threads = 2;
  BatchDecoder engine(yuv, o);
  std::vector<uint64_t> ids(yuv.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = ids.size() - 1 - i;
  std::vector<RgbImage> want(ids.size());
  engine.decode_images(ids, want);
  PackedImages packed;
  engine.decode_images(ids, packed);
  size_t offset = 0;
  for (size_t slot = 0; slot < ids.size(); ++slot) {
    const PackedImages::Extent& e = packed.images[slot];
    const MetaRecord r = yuv.record(0, ids[slot]);
    ASSERT_EQ(e.width, r.width);
    ASSERT_EQ(e.height, r.height);
    ASSERT_EQ(e.offset, offset);
    ASSERT_EQ(want[slot].pixels.size(), size_t{e.width} * e.height * 3);
    ASSERT_EQ(std::memcmp(packed.pixels().data() + e.offset, want[slot].pixels.data(), want[slot].pixels.size()), 0) << "slot " << slot;
    offset += want[slot].pixels.size();
  }
  EXPECT_EQ(packed.pixels().size(), offset);
}

// The packed block is mapped from the system, not taken from malloc (issue 42: RSS that swung
// by tens of MB over epochs with 12-MPix photos): freeing a malloc'd block of up to 32 MiB
// raises glibc's mmap threshold to its size, after which the decoders' transient buffers up to
// that size stay in malloc's arenas. malloc's own count (in use, mmapped) does not see it.
TEST(DecodeEngine, PackedImagesBlockIsNotMallocs) {
  PackedImages packed;
  const struct mallinfo2 before = mallinfo2();
  packed.resize(size_t{20} << 20);
  std::memset(packed.pixels().data(), 1, packed.pixels().size());
  const struct mallinfo2 after = mallinfo2();
  EXPECT_LT(after.uordblks + after.hblkhd, before.uordblks + before.hblkhd + (size_t{1} << 20))
      << "the block came from malloc (in use " << before.uordblks << " -> " << after.uordblks << ", mmapped " << before.hblkhd << " -> "
      << after.hblkhd << ")";
  EXPECT_GE(packed.capacity(), size_t{25} << 20);
  packed.resize(size_t{1} << 20);  // pages given back, block kept
  EXPECT_GE(packed.capacity(), size_t{25} << 20);
  EXPECT_EQ(packed.pixels()[0], 1);
}

// release_past(keep): what an idle Loader block keeps between epochs. The block and its first
// `keep` bytes stay (same address, same capacity, same bytes, pages resident); the pages past
// them go back (read as zeros), however small the block.
TEST(DecodeEngine, PackedImagesReleasePastKeepsTheFirstBytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  PackedImages packed;
  packed.resize(3 * page + 100);  // small: resize(0) would keep every page of it
  for (size_t i = 0; i < packed.pixels().size(); ++i) packed.pixels()[i] = static_cast<uint8_t>(i % 251 + 1);
  const uint8_t* block = packed.pixels().data();
  const size_t capacity = packed.capacity();
  const size_t keep = page + 10;  // the first two pages stay (keep rounds up to whole pages)
  packed.release_past(keep);
  EXPECT_EQ(packed.pixels().data(), block);
  EXPECT_EQ(packed.capacity(), capacity);
  EXPECT_EQ(packed.pixels().size(), keep);
  std::vector<unsigned char> in(capacity / page);
  ASSERT_EQ(mincore(const_cast<uint8_t*>(block), capacity, in.data()), 0);
  EXPECT_EQ(in[0] & 1, 1);
  EXPECT_EQ(in[1] & 1, 1);
  for (size_t p = 2; p < in.size(); ++p) EXPECT_EQ(in[p] & 1, 0) << "page " << p << " was kept";
  packed.resize(3 * page + 100);  // same block, grown back in place
  EXPECT_EQ(packed.pixels().data(), block);
  for (size_t i = 0; i < 2 * page; ++i) ASSERT_EQ(packed.pixels()[i], static_cast<uint8_t>(i % 251 + 1)) << "byte " << i;
  for (size_t i = 2 * page; i < packed.pixels().size(); ++i) ASSERT_EQ(packed.pixels()[i], 0) << "byte " << i;
  packed.release_past(size_t{1} << 40);  // beyond the block: nothing to give back
  EXPECT_EQ(packed.pixels().size(), 3 * page + 100);
  EXPECT_EQ(packed.pixels()[2 * page - 1], static_cast<uint8_t>((2 * page - 1) % 251 + 1));
}

TEST(DecodeEngine, FlipMirrorsTheCrop) {
  SampleCache c(fs::path(SLIP_SOURCE_DIR) / "examples/sample");
  DecodeOptions o;
  o.threads = 1;
  const CropWindow w0 = {10, 20, 150, 120, false}, w1 = {10, 20, 150, 120, true};
  const auto a = detail::decode_crops_for_test(*c.cache, 3, o, {w0});
  const auto b = detail::decode_crops_for_test(*c.cache, 3, o, {w1});
  for (int y = 0; y < 224; ++y)
    for (int x = 0; x < 224; ++x)
      for (int ch = 0; ch < 3; ++ch) ASSERT_EQ(a[(y * 224 + x) * 3 + ch], b[(y * 224 + 223 - x) * 3 + ch]);
}

// Crop-aware decoding against full decode + crop over every image of the corpus sample and
// random windows: exact without DCT scaling, within the documented bound with it.
TEST(DecodeEngine, CropAwareMatchesFullDecodeWithinBound) {
  SampleCache c(fs::path(SLIP_SOURCE_DIR) / "examples/sample");
  for (const char* pipeline : {"rrc", "center", "multicrop"}) {
    DecodeOptions o;
    o.groups = pipeline_crop_groups(pipeline);
    o.threads = 2;
    const auto aware = run_batch(*c.cache, o, 5);
    o.crop_aware = false;
    const auto full = run_batch(*c.cache, o, 5);
    for (size_t g = 0; g < aware.size(); ++g) {
      std::vector<uint8_t> a(aware[g].size()), b(full[g].size());
      std::memcpy(a.data(), aware[g].data(), a.size());
      std::memcpy(b.data(), full[g].data(), b.size());
      RgbImage ref;
      ref.pixels = b;
      const PixelDiff d = compare(a, ref);
      EXPECT_LE(d.mean, 1.5) << pipeline;
      EXPECT_GE(d.psnr, 33.0) << pipeline;
      std::printf("%s group %zu: crop-aware vs full: mean %.4f max %d PSNR %.2f\n", pipeline, g, d.mean, d.max, d.psnr);
    }
  }
}

// Awkward images: 1x1, 3x7, grayscale, CMYK (transcoded at convert), PNG named .JPEG (kept),
// 4000x3000; every pipeline decodes them with windows inside the image.
TEST(DecodeEngine, AwkwardImagesDecodeInEveryPipeline) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  const fs::path src = tmp.path() / "src/c";
  fs::create_directories(src);
  auto write_jpeg = [&](const char* name, uint32_t w, uint32_t h) {
    RgbImage img;
    img.width = w;
    img.height = h;
    for (uint32_t i = 0; i < w * h * 3; ++i) img.pixels.push_back(static_cast<uint8_t>(i * 37));
    const auto jpeg = encode_rgb_jpeg(img, 90);
    std::ofstream(src / name, std::ios::binary).write(reinterpret_cast<const char*>(jpeg.data()), jpeg.size());
  };
  write_jpeg("a_1x1.jpg", 1, 1);
  write_jpeg("b_3x7.jpg", 3, 7);
  const std::string tsv = test::read_file(test::shared_dir() / "corpus/imagenet_like.manifest.tsv");
  std::istringstream lines(tsv);
  std::string line;
  std::set<std::string> wanted_kinds;
  int k = 0;
  while (std::getline(lines, line)) {
    std::vector<std::string> col;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, '\t');) col.push_back(cell);
    if (col.size() < 6 || col[0] == "path") continue;
    const std::string kind = col[4] + "/" + col[5] + (std::stoi(col[2]) * std::stoi(col[3]) > 10000000 ? "/huge" : "");
    if (kind == "jpeg/rgb" || !wanted_kinds.insert(kind).second) continue;
    fs::copy_file(test::shared_dir() / "corpus/imagenet_like" / col[0], src / ("z" + std::to_string(k++) + ".JPEG"));
  }
  ASSERT_GE(k, 5);  // gray, cmyk, png gray/rgb/rgba, huge
  SampleCache c(tmp.path() / "src");
  for (const char* pipeline : {"center", "rrc", "direct-rrc", "multicrop"}) {
    DecodeOptions o;
    o.groups = pipeline_crop_groups(pipeline);
    o.flip_probability = 0.5;
    EXPECT_NO_THROW(run_batch(*c.cache, o, 0)) << pipeline;
  }
  BatchDecoder engine(*c.cache, DecodeOptions{});
  std::vector<uint64_t> ids(c.cache->size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = i;
  uint64_t expected = 0;
  for (uint64_t id : ids) {
    const RgbImage img = decode_to_rgb(c.cache->payload(0, id));
    expected += img.pixels.size();
  }
  EXPECT_EQ(engine.decode_full(ids), expected);
}

TEST(DecodeEngine, CorruptJpegIsAnErrorNamingTheSample) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  const fs::path src = tmp.path() / "src/c";
  fs::create_directories(src);
  fs::copy_file(fs::path(SLIP_SOURCE_DIR) / "examples/sample" /
                    fs::directory_iterator(fs::path(SLIP_SOURCE_DIR) / "examples/sample")->path().filename() /
                    fs::directory_iterator(*fs::directory_iterator(fs::path(SLIP_SOURCE_DIR) / "examples/sample"))->path().filename(),
                src / "a.jpg");
  fs::copy_file(test::shared_dir() / "corpus/bad/garbage_in_entropy.JPEG", src / "b.jpg");
  SampleCache c(tmp.path() / "src");
  ASSERT_EQ(c.cache->size(), 2u);
  for (const char* pipeline : {"center", "rrc", "decode"}) {
    DecodeOptions o;
    o.groups = pipeline_crop_groups(pipeline);
    o.crop_aware = std::string(pipeline) != "rrc";
    o.groups[0].sampler = CropSampler::full == o.groups[0].sampler ? CropSampler::center : o.groups[0].sampler;
    try {
      run_batch(*c.cache, o, 0);
      FAIL() << pipeline << ": a corrupt JPEG decoded without error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::bad_input);
      ASSERT_TRUE(e.sample().has_value());
      EXPECT_EQ(*e.sample(), 1u) << e.describe();
      EXPECT_NE(e.describe().find("image.bin"), std::string::npos) << e.describe();
    }
  }
  EXPECT_THROW(engine_decode_full(c.cache->payload(0, 1)), Error);
}

}  // namespace
}  // namespace slip

namespace slip {
namespace {

// The YUV420 paths of the engine on the Python-built fixture against the JPEG rgb path on the
// JPEG fixture of the same 24 images, same windows: rgb (nearest-neighbour chroma, fixed-point
// BT.601 inverse, then Pillow's resampling) and planar (the Y, U, V planes resized, then
// libjpeg's inverse). Bound: mean absolute difference <= 3 and PSNR >= 30 dB per crop (4:2:0
// chroma and the truncating forward transform cost about 1 level on average). And the two
// YUV420 paths against each other: mean <= 1.5, PSNR >= 36 dB.
TEST(DecodeEngine, Yuv420FixtureDecodesCloseToItsJpegTwin) {
  SLIP_REQUIRE_SHARED();
  const Cache jpeg = Cache::open(test::shared_dir() / "fixtures/pyslipstream/slipcache-3131b662");
  const Cache yuv = Cache::open(test::shared_dir() / "fixtures/pyslipstream/slipcache-3131b662-yuv420");
  ASSERT_EQ(jpeg.size(), yuv.size());
  DecodeOptions o;
  o.threads = 1;
  o.resample = ResampleMode::rgb;
  DecodeOptions planar = o;
  planar.resample = ResampleMode::planar;
  double worst_mean[2] = {0, 0}, worst_psnr[2] = {99, 99}, worst_between_mean = 0, worst_between_psnr = 99;
  for (uint64_t i = 0; i < jpeg.size(); ++i) {
    const MetaRecord r = jpeg.record(0, i);
    const CropWindow w = sample_crop_window(pipeline_crop_groups("rrc")[0], r.width, r.height, 3, 0, i, 0, 0);
    RgbImage ref;
    ref.pixels = detail::decode_crops_for_test(jpeg, i, o, {w});
    const std::vector<uint8_t> yuv_rgb = detail::decode_crops_for_test(yuv, i, o, {w});
    const std::vector<uint8_t> yuv_planar = detail::decode_crops_for_test(yuv, i, planar, {w});
    int k = 0;
    for (const auto* ours : {&yuv_rgb, &yuv_planar}) {
      const PixelDiff d = compare(*ours, ref);
      EXPECT_LE(d.mean, 3.0) << i << (k ? " planar" : " rgb");
      EXPECT_GE(d.psnr, 30.0) << i << (k ? " planar" : " rgb");
      worst_mean[k] = std::max(worst_mean[k], d.mean);
      worst_psnr[k] = std::min(worst_psnr[k], d.psnr);
      ++k;
    }
    RgbImage rgb_path;
    rgb_path.pixels = yuv_rgb;
    const PixelDiff between = compare(yuv_planar, rgb_path);
    EXPECT_LE(between.mean, 1.5) << i;
    EXPECT_GE(between.psnr, 36.0) << i;
    worst_between_mean = std::max(worst_between_mean, between.mean);
    worst_between_psnr = std::min(worst_between_psnr, between.psnr);
  }
  std::printf("yuv420 vs jpeg fixture: rgb worst mean %.3f, PSNR %.2f dB; planar worst mean %.3f, PSNR %.2f dB\n", worst_mean[0],
              worst_psnr[0], worst_mean[1], worst_psnr[1]);
  std::printf("yuv420 planar vs rgb: worst mean %.3f, PSNR %.2f dB\n", worst_between_mean, worst_between_psnr);
}

// The planar path (ResampleMode::planar: the JPEG's Y/Cb/Cr planes resized, then converted)
// against Pillow's resized_crop outputs on the reference windows, bilinear and bicubic.
// Documented bound (docs/PERFORMANCE.md, "Decoding and `slip bench`"): mean absolute difference <= 1.5 and
// PSNR >= 36 dB per crop (chroma resized from its stored resolution instead of libjpeg's
// upsampled chroma, colour transform after resizing, 14-bit taps).
TEST(DecodePixels, PlanarPathWithinBoundOfPillow) {
  SLIP_REQUIRE_SHARED();
  ReferenceCache ref;
  const fs::path dir = test::shared_dir() / "reference/resized_crop";
  uint64_t sample = 0;
  double worst_mean = 0, worst_psnr = 99, total_mean = 0;
  int crops = 0;
  for (const auto& img : ref.windows["images"]) {
    for (const auto& win : img["windows"])
      for (const char* filter : {"bilinear", "bicubic"}) {
        DecodeOptions o;
        o.threads = 1;
        o.resample = ResampleMode::planar;
        o.filter = std::string(filter) == "bicubic" ? ResampleFilter::bicubic : ResampleFilter::bilinear;
        const std::vector<CropWindow> w = {{win["left"], win["top"], win["width"], win["height"], false}};
        const auto ours = detail::decode_crops_for_test(*ref.cache, sample, o, w);
        const PixelDiff d = compare(ours, read_png(dir / win["outputs"][filter].get<std::string>()));
        EXPECT_LE(d.mean, 1.5) << img["image"] << " " << win << " " << filter;
        EXPECT_GE(d.psnr, 36.0) << img["image"] << " " << win << " " << filter;
        worst_mean = std::max(worst_mean, d.mean);
        worst_psnr = std::min(worst_psnr, d.psnr);
        total_mean += d.mean;
        ++crops;
      }
    ++sample;
  }
  std::printf("planar vs Pillow: %d crops, average mean abs diff %.3f, worst mean %.3f, worst PSNR %.2f dB\n", crops, total_mean / crops,
              worst_mean, worst_psnr);
}

// One corpus photo re-encoded with every chroma subsampling TurboJPEG writes, in one cache:
// multi-crop through the planar path (odd and even sizes, flips) against the RGB path on the
// same windows, within the documented bound (mean <= 1, PSNR >= 40 dB); 4:1:1 (chroma at 1/4, not planar-capable) takes
// the RGB path and is identical.
TEST(DecodeEngine, PlanarPathOnEveryChromaSubsampling) {
  SLIP_REQUIRE_SHARED();
  const auto windows = nlohmann::json::parse(test::read_file(test::shared_dir() / "reference/resized_crop/windows.json"));
  const RgbImage photo =
      decode_to_rgb(file_bytes(test::shared_dir() / "corpus/imagenet_like" / windows["images"][0]["image"].get<std::string>()));
  test::TempDir tmp;
  fs::create_directories(tmp.path() / "src/c");
  const std::pair<const char*, int> samplings[] = {{"s420", TJSAMP_420}, {"s422", TJSAMP_422},   {"s444", TJSAMP_444},
                                                   {"s440", TJSAMP_440}, {"sgray", TJSAMP_GRAY}, {"s411", TJSAMP_411}};
  for (const auto& [name, samp] : samplings) {
    write_jpeg(tmp.path() / "src/c" / (std::string(name) + ".jpg"), photo.pixels.data(), static_cast<int>(photo.width), 0,
               static_cast<int>(photo.height), samp, 92);
  }
  SampleCache c(tmp.path() / "src");
  ASSERT_EQ(c.cache->size(), 6u);
  DecodeOptions o;
  o.groups = parse_crop_groups("2x224@0.32-1,3x97@0.05-0.4,2x7@0.01-0.1");
  o.flip_probability = 0.5;
  o.seed = 5;
  o.threads = 2;
  o.resample = ResampleMode::planar;
  const auto planar = run_batch(*c.cache, o, 1);
  o.resample = ResampleMode::rgb;
  const auto rgb = run_batch(*c.cache, o, 1);
  // run_batch decodes ids in reverse order: slot i holds sample size - 1 - i.
  const auto order = [&](uint64_t id) { return c.cache->size() - 1 - id; };
  for (uint64_t id = 0; id < c.cache->size(); ++id) {
    for (size_t g = 0; g < o.groups.size(); ++g) {
      const size_t bytes = crop_group_sample_bytes(o.groups[g], o.type);
      const auto* a = reinterpret_cast<const uint8_t*>(planar[g].data()) + order(id) * bytes;
      const auto* b = reinterpret_cast<const uint8_t*>(rgb[g].data()) + order(id) * bytes;
      RgbImage ref;
      ref.pixels.assign(b, b + bytes);
      const PixelDiff d = compare(std::vector<uint8_t>(a, a + bytes), ref);
      std::printf("sample %llu group %zu: planar vs rgb mean %.3f max %d PSNR %.2f\n", static_cast<unsigned long long>(id), g, d.mean,
                  d.max, d.psnr);
      EXPECT_LE(d.mean, 1.0) << "sample " << id << " group " << g;
      EXPECT_GE(d.psnr, 40.0) << "sample " << id << " group " << g;
      if (id == 0) {
        EXPECT_EQ(d.max, 0) << "4:1:1 (sample 0, files sort by name) must take the RGB path";
      }
    }
  }
}

// Flips in the planar path mirror the unflipped crop exactly, for even and odd output sizes.
TEST(DecodeEngine, PlanarFlipMirrorsTheCrop) {
  SampleCache c(fs::path(SLIP_SOURCE_DIR) / "examples/sample");
  for (uint32_t size : {96u, 97u}) {
    DecodeOptions o;
    o.threads = 1;
    o.resample = ResampleMode::planar;
    o.groups = {CropGroup{}};
    o.groups[0].size = size;
    const CropWindow w0 = {10, 20, 150, 120, false}, w1 = {10, 20, 150, 120, true};
    const auto a = detail::decode_crops_for_test(*c.cache, 3, o, {w0});
    const auto b = detail::decode_crops_for_test(*c.cache, 3, o, {w1});
    for (uint32_t y = 0; y < size; ++y)
      for (uint32_t x = 0; x < size; ++x)
        for (int ch = 0; ch < 3; ++ch) ASSERT_EQ(a[(y * size + x) * 3 + ch], b[(y * size + size - 1 - x) * 3 + ch]) << size;
  }
}

}  // namespace
}  // namespace slip
