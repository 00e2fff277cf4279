// YUV420 payloads (docs/FORMAT.md#yuv420): the colour conversion against an independent numpy
// implementation, the sibling files against the Python builder's fixture, the round trip
// against the JPEG decode, the sibling reader's checks, and the engine on sibling files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "slip/cache.hpp"
#include "slip/convert.hpp"
#include "slip/decode.hpp"
#include "slip/pipelines.hpp"
#include "slip/error.hpp"
#include "slip/image.hpp"
#include "slip/npy.hpp"
#include "slip/source.hpp"
#include "slip/verify.hpp"
#include "slip/yuv420.hpp"
#include "image/yuv420_kernels.hpp"
#include "test_support.hpp"

namespace slip {
namespace {

namespace fs = std::filesystem;

std::vector<std::byte> yuv_test_file_bytes(const fs::path& p) { return test::read_bytes(p); }

void write_file(const fs::path& p, std::span<const std::byte> bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

RgbImage random_rgb(uint32_t w, uint32_t h, uint32_t seed) {
  RgbImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(size_t{w} * h * 3);
  std::mt19937 rng(seed);
  // Extremes included: saturated channels are where clipping and truncation matter.
  for (auto& p : img.pixels) p = static_cast<uint8_t>(rng() % 4 == 0 ? (rng() % 2) * 255 : rng() % 256);
  return img;
}

fs::path corpus(const std::string& rel) { return test::shared_dir() / "corpus/imagenet_like" / rel; }

// Every byte of slip's payload equals what an independent numpy implementation of docs/FORMAT.md#yuv420-conversion
// computes from the same RGB pixels: random images of odd and tiny sizes, and real photos of
// every awkward kind (grayscale, CMYK, PNG named .JPEG, 1x1) after slip's decode.
TEST(Yuv420, ConversionIsByteIdenticalToNumpyReference) {
  SLIP_REQUIRE_SHARED();
  SLIP_REQUIRE_PYTHON();
  test::TempDir tmp;
  std::vector<std::pair<std::string, RgbImage>> images;
  const uint32_t sizes[][2] = {{1, 1}, {3, 7}, {7, 3}, {2, 2}, {499, 375}, {64, 33}};
  uint32_t seed = 1;
  for (const auto& s : sizes)
    images.emplace_back("random_" + std::to_string(s[0]) + "x" + std::to_string(s[1]), random_rgb(s[0], s[1], seed++));
  const char* awkward[] = {"n01440764/n01440764_2578.JPEG",  /* grayscale JPEG */
                           "n02102040/n02102040_3343.JPEG",  /* CMYK JPEG */
                           "n01440764/n01440764_12741.JPEG", /* PNG named .JPEG */
                           "n02979186/n02979186_11501.JPEG", /* 1x1 */
                           "n01440764/n01440764_10026.JPEG"};
  for (const char* rel : awkward) images.emplace_back(fs::path(rel).stem().string(), decode_to_rgb(yuv_test_file_bytes(corpus(rel))));
  for (const auto& [name, rgb] : images) {
    const Yuv420Image yuv = rgb_to_yuv420(rgb);
    EXPECT_EQ(yuv.width, rgb.width + rgb.width % 2) << name;
    EXPECT_EQ(yuv.height, rgb.height + rgb.height % 2) << name;
    EXPECT_EQ(yuv.planes.size(), yuv420_payload_size(rgb.width, rgb.height)) << name;
    std::string npy = npy_header("'|u1'", std::vector<uint64_t>{rgb.height, rgb.width, 3});
    npy.append(reinterpret_cast<const char*>(rgb.pixels.data()), rgb.pixels.size());
    write_file(tmp.path() / (name + ".rgb.npy"), std::as_bytes(std::span(npy.data(), npy.size())));
    write_file(tmp.path() / (name + ".yuv"), yuv.planes);
  }
  const auto r = test::run(test::python() + " " + (fs::path(SLIP_SOURCE_DIR) / "tests/reference/yuv420_numpy.py").string() + " " +
                           tmp.path().string() + " 2>&1");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find(std::to_string(images.size()) + " payloads byte-identical"), std::string::npos) << r.out;
}

TEST(Yuv420, RejectsEmptyAndMismatchedBuffers) {
  RgbImage empty;
  EXPECT_THROW(rgb_to_yuv420(empty), Error);
  RgbImage wrong = random_rgb(4, 4, 1);
  wrong.pixels.pop_back();
  EXPECT_THROW(rgb_to_yuv420(wrong), Error);
  const std::vector<std::byte> payload(4 * 4 * 3 / 2);
  EXPECT_NO_THROW(yuv420_to_rgb(payload, 4, 4));
  EXPECT_THROW(yuv420_to_rgb(payload, 4, 6), Error);
  EXPECT_THROW(yuv420_to_rgb(payload, 3, 4), Error);  // odd sizes are never stored
}

// slip yuv420 on the Python builder's JPEG fixture gives the payloads of the Python builder's
// YUV420 fixture of the same 24 images. The builder decoded with Pillow, slip with TurboJPEG:
// both are libjpeg-turbo (ISLOW IDCT, fancy upsampling), so on Debian 12 they agree exactly;
// the documented bound (docs/YUV420.md) is <= 0.1% of bytes differing by at most 2.
TEST(Yuv420, SiblingsOfJpegFixtureMatchPythonYuv420Fixture) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  const fs::path fixtures = test::shared_dir() / "fixtures/pyslipstream";
  test::writable_copy(fixtures / "slipcache-3131b662", tmp.path() / "jpeg");
  const std::string manifest_before = test::read_file(tmp.path() / "jpeg/manifest.json");
  SiblingOptions opt;
  opt.threads = 2;
  const auto results = add_yuv420_siblings(tmp.path() / "jpeg", opt);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].reused);
  EXPECT_EQ(results[0].samples, 24u);
  // A Python cache's manifest is left alone (siblings are not listed in it, docs/FORMAT.md#yuv420-siblings).
  EXPECT_EQ(test::read_file(tmp.path() / "jpeg/manifest.json"), manifest_before);

  const Cache jpeg = Cache::open(tmp.path() / "jpeg");
  const Cache want = Cache::open(fixtures / "slipcache-3131b662-yuv420");
  const auto siblings = Yuv420Siblings::open(jpeg, "image");
  ASSERT_TRUE(siblings);
  ASSERT_EQ(siblings->size(), want.size());
  uint64_t total = 0, differing = 0;
  int max_diff = 0;
  for (uint64_t i = 0; i < want.size(); ++i) {
    const MetaRecord a = siblings->record(i), b = want.record(0, i);
    EXPECT_EQ(a.width, b.width) << i;
    EXPECT_EQ(a.height, b.height) << i;
    const auto pa = siblings->payload(i), pb = want.payload(0, i);
    ASSERT_EQ(pa.size(), pb.size()) << i;
    for (size_t k = 0; k < pa.size(); ++k) {
      const int d = std::abs(int(pa[k]) - int(pb[k]));
      differing += d != 0;
      max_diff = std::max(max_diff, d);
    }
    total += pa.size();
  }
  std::printf("siblings vs Python yuv420 fixture: %llu of %llu bytes differ (%.4f%%), max difference %d\n",
              static_cast<unsigned long long>(differing), static_cast<unsigned long long>(total),
              100.0 * static_cast<double>(differing) / static_cast<double>(total), max_diff);
  EXPECT_LE(static_cast<double>(differing), 0.001 * static_cast<double>(total));
  EXPECT_LE(max_diff, 2);

  // Idempotent: valid siblings are kept.
  const auto again = add_yuv420_siblings(tmp.path() / "jpeg", opt);
  EXPECT_TRUE(again[0].reused);
}

// The dedicated cache written by convert --image-format yuv420 and the sibling files of the
// JPEG cache of the same ImageFolder hold the same payloads (both decode each JPEG once with
// TurboJPEG); the slip-written siblings are checksummed, verified, and rebuilt when damaged.
TEST(Yuv420, ConvertedCacheEqualsSiblingsAndBothVerify) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  const fs::path src = tmp.path() / "src";
  const char* files[] = {"n01440764/n01440764_2578.JPEG",  "n01440764/n01440764_10026.JPEG", "n01440764/n01440764_10235.JPEG",
                         "n02979186/n02979186_11501.JPEG", "n02102040/n02102040_3343.JPEG",  "n01440764/n01440764_12741.JPEG"};
  for (const char* rel : files) {
    fs::create_directories(src / fs::path(rel).parent_path());
    fs::copy_file(corpus(rel), src / rel);
  }
  ConvertOptions opt;
  opt.output_dir = tmp.path() / "out";
  opt.threads = 2;
  auto source = open_source(src.string());
  const ConvertResult jr = convert(*source, opt);
  opt.image_format = StoredFormat::yuv420;
  source = open_source(src.string());
  const ConvertResult yr = convert(*source, opt);
  EXPECT_NE(jr.content_id, yr.content_id);
  EXPECT_NE(jr.cache_path, yr.cache_path);
  EXPECT_NE(yr.cache_path.filename().string().find("-yuv420-"), std::string::npos) << yr.cache_path;

  const Cache yc = Cache::open(yr.cache_path);
  EXPECT_EQ(yc.fields()[0].image_format, "yuv420");
  EXPECT_NE(yc.manifest_text().find("\"image_format\": \"yuv420\""), std::string::npos);
  ASSERT_EQ(add_yuv420_siblings(jr.cache_path).size(), 1u);
  const Cache jc = Cache::open(jr.cache_path);
  const auto sib = Yuv420Siblings::open(jc, "image");
  ASSERT_TRUE(sib);
  ASSERT_EQ(yc.size(), jc.size());
  for (uint64_t i = 0; i < yc.size(); ++i) {
    const auto payload = jc.payload(0, i);
    const RgbImage direct = decode_to_rgb(payload);
    const MetaRecord r = yc.record(0, i);
    EXPECT_EQ(r.width, direct.width + direct.width % 2) << i;
    EXPECT_EQ(r.height, direct.height + direct.height % 2) << i;
    // CMYK and PNG were stored as JPEG q100 in the JPEG cache (the ledger says which), so the
    // siblings decoded a re-encoded image there; every other payload must be identical.
    const bool transcoded = std::any_of(jr.ledger.begin(), jr.ledger.end(), [&](const LedgerEntry& e) { return e.sample == i; });
    if (!transcoded) {
      const auto a = yc.payload(0, i), b = sib->payload(i);
      EXPECT_TRUE(a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin())) << "sample " << i;
    }
  }
  VerifyOptions vo;
  EXPECT_TRUE(verify_cache(yr.cache_path, vo).ok());
  const VerifyReport jrep = verify_cache(jr.cache_path, vo);
  EXPECT_TRUE(jrep.ok());
  // The siblings' checksums are in the manifest and checked by verify.
  EXPECT_NE(jc.manifest_text().find("image_yuv420.bin"), std::string::npos);

  // Damage one sibling byte: verify names the file, and slip yuv420 rebuilds instead of reusing.
  {
    std::fstream f(jr.cache_path / "image_yuv420.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('\x7f');
  }
  const VerifyReport bad = verify_cache(jr.cache_path, vo);
  ASSERT_FALSE(bad.ok());
  bool named = false;
  for (const auto& issue : bad.issues) named |= issue.file == "image_yuv420.bin";
  EXPECT_TRUE(named);
  const auto rebuilt = add_yuv420_siblings(jr.cache_path);
  EXPECT_FALSE(rebuilt[0].reused);
  EXPECT_TRUE(verify_cache(jr.cache_path, vo).ok());
  // No temporaries left behind.
  for (const auto& e : fs::directory_iterator(jr.cache_path)) EXPECT_NE(e.path().filename().string()[0], '.') << e.path();
}

// YUV420 -> RGB of slip's payloads against the RGB decode of the JPEG they came from, over the
// first 120 corpus images: per image mean absolute difference <= 2.5 and PSNR >= 30 dB (4:2:0
// chroma, the truncating forward transform and nearest-neighbour upsampling all cost a little).
TEST(Yuv420, RoundTripStaysCloseToTheJpegDecode) {
  SLIP_REQUIRE_SHARED();
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(test::shared_dir() / "corpus/imagenet_like"))
    if (e.is_regular_file()) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  double worst_mean = 0, worst_psnr = 99, sum_psnr = 0;
  int count = 0;
  for (size_t i = 0; i < paths.size() && count < 120; i += paths.size() / 120 + 1) {
    const auto bytes = yuv_test_file_bytes(paths[i]);
    RgbImage rgb;
    try {
      rgb = decode_to_rgb(bytes);
    } catch (const Error&) {
      continue;  // the corpus's deliberately broken files
    }
    if (uint64_t{rgb.width} * rgb.height > 4'000'000) continue;
    const Yuv420Image yuv = rgb_to_yuv420(rgb);
    const RgbImage back = yuv420_to_rgb(yuv.planes, yuv.width, yuv.height);
    double sum = 0, sq = 0;
    for (uint32_t y = 0; y < rgb.height; ++y)
      for (uint32_t x = 0; x < rgb.width * 3; ++x) {
        const int d = int(rgb.pixels[size_t{y} * rgb.width * 3 + x]) - int(back.pixels[size_t{y} * back.width * 3 + x]);
        sum += std::abs(d);
        sq += d * d;
      }
    const double n = double(rgb.width) * rgb.height * 3;
    const double mean = sum / n, psnr = sq == 0 ? 99 : 10 * std::log10(255.0 * 255.0 * n / sq);
    EXPECT_LE(mean, 2.5) << paths[i];
    EXPECT_GE(psnr, 30.0) << paths[i];
    worst_mean = std::max(worst_mean, mean);
    worst_psnr = std::min(worst_psnr, psnr);
    sum_psnr += psnr;
    ++count;
  }
  EXPECT_GE(count, 100);
  std::printf("round trip over %d images: worst mean %.3f, worst PSNR %.2f dB, mean PSNR %.2f dB\n", count, worst_mean, worst_psnr,
              sum_psnr / count);
}

// Sibling files are untrusted input: each malformation is one error naming the file, the
// sample and the byte offset, never an out-of-bounds read.
TEST(Yuv420, SiblingReaderRejectsMalformedFiles) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  const fs::path dir = tmp.path() / "c";
  test::writable_copy(test::shared_dir() / "fixtures/pyslipstream/slipcache-3131b662", dir);
  {
    const Cache c = Cache::open(dir);
    EXPECT_FALSE(Yuv420Siblings::open(c, "image"));  // absent: not an error
  }
  add_yuv420_siblings(dir);
  const std::string meta = test::read_file(dir / "image_yuv420.meta.npy");
  const uint64_t data_offset = meta.size() - 24 * 24;
  auto with_meta = [&](const std::string& text) {
    std::ofstream(dir / "image_yuv420.meta.npy", std::ios::binary | std::ios::trunc) << text;
    const Cache c = Cache::open(dir);
    try {
      Yuv420Siblings::open(c, "image");
    } catch (const Error& e) {
      return e;
    }
    return Error(Errc::usage, "no error");
  };
  // A record pointing past the payload file.
  std::string bad = meta;
  const uint64_t huge = 1ull << 40;
  std::memcpy(bad.data() + data_offset + 5 * 24, &huge, 8);
  Error e = with_meta(bad);
  EXPECT_EQ(e.code(), Errc::bad_input) << e.what();
  EXPECT_EQ(e.sample(), 5u);
  EXPECT_EQ(e.offset(), data_offset + 5 * 24);
  EXPECT_NE(e.path().find("image_yuv420.meta.npy"), std::string::npos);
  // Dimensions that do not match the payload size.
  bad = meta;
  const uint32_t odd = 7;
  std::memcpy(bad.data() + data_offset + 3 * 24 + 20, &odd, 4);
  e = with_meta(bad);
  EXPECT_EQ(e.code(), Errc::bad_input);
  EXPECT_EQ(e.sample(), 3u);
  // Truncated table, garbage header.
  EXPECT_EQ(with_meta(meta.substr(0, meta.size() - 10)).code(), Errc::bad_input);
  EXPECT_EQ(with_meta("not numpy").code(), Errc::bad_input);
}

// The engine decodes sibling files exactly as it decodes a dedicated YUV420 cache holding the
// same payloads.
TEST(Yuv420, EngineOnSiblingsEqualsEngineOnDedicatedCache) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  const fs::path fixtures = test::shared_dir() / "fixtures/pyslipstream";
  test::writable_copy(fixtures / "slipcache-3131b662", tmp.path() / "jpeg");
  add_yuv420_siblings(tmp.path() / "jpeg");
  const Cache jpeg = Cache::open(tmp.path() / "jpeg");
  const Cache yuv = Cache::open(fixtures / "slipcache-3131b662-yuv420");
  for (const char* pipeline : {"center", "rrc", "multicrop"}) {
    DecodeOptions o;
    o.groups = pipeline_crop_groups(pipeline);
    o.threads = 2;
    o.seed = 7;
    DecodeOptions s = o;
    s.yuv420_siblings = true;
    BatchDecoder a(yuv, o), b(jpeg, s);
    std::vector<uint64_t> ids(jpeg.size());
    for (uint64_t i = 0; i < ids.size(); ++i) ids[i] = i;
    std::vector<std::vector<std::byte>> out_a, out_b;
    std::vector<std::span<std::byte>> span_a, span_b;
    for (const CropGroup& g : o.groups) {
      out_a.emplace_back(ids.size() * crop_group_sample_bytes(g, o.type));
      out_b.emplace_back(ids.size() * crop_group_sample_bytes(g, o.type));
    }
    for (size_t g = 0; g < o.groups.size(); ++g) {
      span_a.emplace_back(out_a[g]);
      span_b.emplace_back(out_b[g]);
    }
    a.decode(ids, 0, span_a);
    b.decode(ids, 0, span_b);
    EXPECT_EQ(out_a, out_b) << pipeline;
  }
  const auto open_siblings = [](const Cache& c) {
    DecodeOptions o;
    o.yuv420_siblings = true;
    BatchDecoder d(c, o);
  };
  EXPECT_THROW(open_siblings(yuv), Error);  // a YUV420 field has no siblings
  const Cache plain = Cache::open(fixtures / "slipcache-3131b662");
  EXPECT_THROW(open_siblings(plain), Error);  // none built
}

}  // namespace
}  // namespace slip

namespace slip {
namespace {

// A payload whose luma is constant over d x d blocks and chroma over d/2 x d/2 blocks.
std::vector<std::byte> blocky_payload(int w, int h, int d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> p(static_cast<size_t>(w) * h * 3 / 2);
  auto* y = reinterpret_cast<uint8_t*>(p.data());
  uint8_t* u = y + w * h;
  uint8_t* v = u + (w / 2) * (h / 2);
  std::vector<uint8_t> block(static_cast<size_t>((w / d + 1) * (h / d + 1)) * 3);
  for (auto& b : block) b = static_cast<uint8_t>(rng() % 4 == 0 ? (rng() % 2) * 255 : rng() % 256);
  const int bw = w / d + 1;
  for (int r = 0; r < h; ++r)
    for (int c = 0; c < w; ++c) y[r * w + c] = block[((r / d) * bw + c / d) * 3];
  for (int r = 0; r < h / 2; ++r)
    for (int c = 0; c < w / 2; ++c) {
      u[r * (w / 2) + c] = block[((r * 2 / d) * bw + c * 2 / d) * 3 + 1];
      v[r * (w / 2) + c] = block[((r * 2 / d) * bw + c * 2 / d) * 3 + 2];
    }
  return p;
}

// Any region (odd corners included) of the inverse transform equals that part of the whole
// image's; the 1/d reduction of a payload that is constant over d-blocks equals the full
// conversion sampled once per block.
TEST(Yuv420, RegionsAndReductionsAgreeWithTheFullConversion) {
  const int w = 64, h = 48;
  for (int d : {2, 4, 8}) {
    const auto payload = blocky_payload(w, h, d, static_cast<uint32_t>(d));
    const RgbImage full = yuv420_to_rgb(payload, w, h);
    const auto* data = reinterpret_cast<const uint8_t*>(payload.data());
    std::mt19937 rng(d);
    for (int trial = 0; trial < 20; ++trial) {
      const int x0 = static_cast<int>(rng() % w), y0 = static_cast<int>(rng() % h);
      const int x1 = x0 + 1 + static_cast<int>(rng() % (w - x0)), y1 = y0 + 1 + static_cast<int>(rng() % (h - y0));
      std::vector<uint8_t> region(static_cast<size_t>(x1 - x0) * (y1 - y0) * 3);
      detail::yuv420_region_to_rgb(data, w, h, x0, y0, x1, y1, region.data(), static_cast<size_t>(x1 - x0) * 3);
      for (int y = y0; y < y1; ++y)
        ASSERT_EQ(0, std::memcmp(region.data() + static_cast<size_t>(y - y0) * (x1 - x0) * 3,
                                 full.pixels.data() + (static_cast<size_t>(y) * w + x0) * 3, static_cast<size_t>(x1 - x0) * 3))
            << "row " << y << " of region " << x0 << "," << y0 << "-" << x1 << "," << y1;
      const int rx0 = x0 / d, ry0 = y0 / d, rx1 = std::min((x1 + d - 1) / d, w / d), ry1 = std::min((y1 + d - 1) / d, h / d);
      std::vector<uint8_t> reduced(static_cast<size_t>(rx1 - rx0) * (ry1 - ry0) * 3);
      std::vector<uint16_t> scratch;
      detail::yuv420_region_to_rgb_reduced(data, w, h, d, rx0, ry0, rx1, ry1, reduced.data(), static_cast<size_t>(rx1 - rx0) * 3, scratch);
      for (int ry = ry0; ry < ry1; ++ry)
        for (int rx = rx0; rx < rx1; ++rx)
          for (int c = 0; c < 3; ++c)
            ASSERT_EQ(reduced[(static_cast<size_t>(ry - ry0) * (rx1 - rx0) + (rx - rx0)) * 3 + c],
                      full.pixels[(static_cast<size_t>(ry * d) * w + rx * d) * 3 + c])
                << "d " << d << " pixel " << rx << "," << ry;
    }
  }
}

}  // namespace
}  // namespace slip

// The vectorised YUV420 -> RGB region kernel against the documented formula written out per
// pixel here (docs/YUV420.md: 1/64 fixed point, nearest chroma), on random planes: regions
// with odd and even starts, narrower and wider than the kernel's 256-pixel chunks.
TEST(Yuv420, RegionKernelMatchesTheFormulaPerPixel) {
  std::mt19937 rng(7);
  for (const auto& [w, h] : {std::pair{2, 2}, {38, 20}, {600, 14}}) {
    std::vector<uint8_t> payload(static_cast<size_t>(w) * h + 2 * static_cast<size_t>(w / 2) * (h / 2));
    for (auto& b : payload) b = static_cast<uint8_t>(rng());
    const uint8_t* yp = payload.data();
    const uint8_t* up = yp + static_cast<size_t>(w) * h;
    const uint8_t* vp = up + static_cast<size_t>(w / 2) * (h / 2);
    for (int trial = 0; trial < 20; ++trial) {
      const int x0 = static_cast<int>(rng() % w), y0 = static_cast<int>(rng() % h);
      const int x1 = x0 + 1 + static_cast<int>(rng() % (w - x0)), y1 = y0 + 1 + static_cast<int>(rng() % (h - y0));
      const size_t stride = static_cast<size_t>(x1 - x0) * 3 + 5;
      std::vector<uint8_t> out(stride * (y1 - y0), 0xAB);
      slip::detail::yuv420_region_to_rgb(yp, w, h, x0, y0, x1, y1, out.data(), stride);
      for (int y = y0; y < y1; ++y)
        for (int x = x0; x < x1; ++x) {
          const int l = yp[static_cast<size_t>(y) * w + x] * 64 + 32;
          const int u = up[static_cast<size_t>(y / 2) * (w / 2) + x / 2] - 128, v = vp[static_cast<size_t>(y / 2) * (w / 2) + x / 2] - 128;
          const int want[3] = {std::clamp((l + 90 * v) >> 6, 0, 255), std::clamp((l - 22 * u - 46 * v) >> 6, 0, 255),
                               std::clamp((l + 113 * u) >> 6, 0, 255)};
          for (int c = 0; c < 3; ++c)
            ASSERT_EQ(out[static_cast<size_t>(y - y0) * stride + static_cast<size_t>(x - x0) * 3 + c], want[c])
                << w << "x" << h << " region " << x0 << "," << y0 << "-" << x1 << "," << y1 << " pixel " << x << "," << y;
        }
    }
  }
}
