// slip's Huffman decoder (decode/huffman_decoder.cpp) against libjpeg-turbo's own, the
// independent implementation it stands in for: the same planes and RGB on every baseline JPEG
// of the corpus, as stored and re-encoded with restart markers, at every DCT scale and through
// the row-skipping region decode; and on damaged streams, never a result libjpeg would not
// give: what slip's decoder accepts, libjpeg decodes without a warning to the same samples, and
// the default mode's verdict is libjpeg's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "decode/jpeg_region.hpp"
#include "decode/libjpeg_internals.hpp"
#include "slip/decode.hpp"
#include "image/jpeg_restarts.hpp"
#include "test_support.hpp"
#include "util/cpu.hpp"

namespace slip::detail {
namespace {

// slip's decoder runs inside libjpeg's entropy module: only where the process may use the
// internals (not under another libjpeg-turbo ABI, nor in CI's SLIP_JPEG_INTERNALS=off run,
// where libjpeg_internals_test.cpp and the pixel tests cover the public-API path), on a CPU with
// BMI2 (x86-64: elsewhere attach() declines and libjpeg decodes).
#define SLIP_REQUIRE_JPEG_INTERNALS()                                                                      \
  if (!libjpeg_internals_usable()) GTEST_SKIP() << "libjpeg internals off: " << jpeg_engine_info().reason; \
  if (!cpu_has_bmi2()) GTEST_SKIP() << "slip's Huffman decoder needs x86-64 BMI2: libjpeg decodes here"

// Every JPEG of the corpus but CMYK and the multi-megapixel ones, with its manifest kind.
struct CorpusJpeg {
  std::string name, kind;
  bool progressive = false;
  std::vector<std::byte> bytes;
};
std::vector<CorpusJpeg> corpus_jpegs() {
  std::vector<CorpusJpeg> out;
  for (const auto& col : test::corpus_manifest()) {
    if (col.size() < 8 || col[4] != "jpeg" || col[5] == "cmyk") continue;
    if (std::stoll(col[2]) * std::stoll(col[3]) > 4'000'000) continue;
    out.push_back({col[0], col[5] + "/" + col[6], col[7] == "yes", test::read_bytes(test::shared_dir() / "corpus/imagenet_like" / col[0])});
  }
  return out;
}

// Every `step`-th sequential (not progressive) corpus JPEG, up to `images` of them, as stored and
// re-encoded with restart markers.
struct SequentialStream {
  const CorpusJpeg* image;
  std::vector<std::byte> bytes;
};
std::vector<SequentialStream> sequential_streams(const std::vector<CorpusJpeg>& corpus, size_t step, int images) {
  std::vector<SequentialStream> out;
  for (size_t i = 0; i < corpus.size() && images > 0; i += step) {
    if (corpus[i].progressive) continue;
    --images;
    out.push_back({&corpus[i], corpus[i].bytes});
    if (auto r = reencode_with_restarts(corpus[i].bytes)) out.push_back({&corpus[i], std::move(*r)});
  }
  return out;
}

// One decode's outcome: success and the samples it gave (planes or RGB rows, packed).
struct Outcome {
  bool ok = false;
  bool slip_huffman = false;
  std::vector<uint8_t> samples;
  bool operator==(const Outcome& o) const { return ok == o.ok && samples == o.samples; }
};

Outcome planes_of(JpegRegionDecoder& d, EntropyDecoding mode, const std::vector<std::byte>& jpeg, int denom, int x0, int y0, int x1,
                  int y1) {
  Outcome r;
  JpegImageInfo info;
  d.set_entropy_decoding(mode);
  if (!d.read_header(jpeg, info) || !d.planar_capable()) return r;
  std::vector<uint8_t> scratch;
  DecodedPlanes planes;
  r.ok = d.decode_planes(denom, x0, y0, x1, y1, scratch, planes);
  r.slip_huffman = d.last_decode_used_slip_huffman();
  if (!r.ok) return r;
  for (int c = 0; c < planes.planes; ++c)
    for (int y = 0; y < planes.height[c]; ++y)
      r.samples.insert(r.samples.end(), planes.data[c] + static_cast<size_t>(y) * planes.stride[c],
                       planes.data[c] + static_cast<size_t>(y) * planes.stride[c] + planes.width[c]);
  return r;
}

Outcome rgb_region_of(JpegRegionDecoder& d, EntropyDecoding mode, const std::vector<std::byte>& jpeg, int x0, int y0, int x1, int y1) {
  Outcome r;
  JpegImageInfo info;
  d.set_entropy_decoding(mode);
  if (!d.read_header(jpeg, info) || !info.rgb_capable) return r;
  std::vector<uint8_t> scratch;
  DecodedRegion region;
  r.ok = d.decode_region(1, x0, y0, x1, y1, scratch, region);
  r.slip_huffman = d.last_decode_used_slip_huffman();
  if (!r.ok) return r;
  for (int y = 0; y < y1 - y0; ++y) {
    const uint8_t* row = region.data + static_cast<size_t>(y) * region.stride + static_cast<size_t>(region.x_offset) * 3;
    r.samples.insert(r.samples.end(), row, row + static_cast<size_t>(x1 - x0) * 3);
  }
  return r;
}

// `jpeg` (a damaged or cut stream of the image `info` describes) decoded to planes and through
// the RGB region path (rows above skipped, columns cropped) with slip's decoder alone, libjpeg's,
// and the default mode: slip's decoder may accept only what libjpeg decodes without a warning,
// to the same samples, and the default mode must end as libjpeg does. Returns the planes'
// verdicts.
struct Verdicts {
  bool libjpeg = false, slip = false;
};
Verdicts expect_libjpegs_verdict(JpegRegionDecoder& d, const JpegImageInfo& info, const std::vector<std::byte>& jpeg,
                                 const std::string& what) {
  const Outcome lib = planes_of(d, EntropyDecoding::libjpeg, jpeg, 1, 0, 0, info.width, info.height);
  const Outcome ours = planes_of(d, EntropyDecoding::slip_only, jpeg, 1, 0, 0, info.width, info.height);
  const Outcome standard = planes_of(d, EntropyDecoding::slip_then_libjpeg, jpeg, 1, 0, 0, info.width, info.height);
  if (ours.ok) {
    EXPECT_TRUE(lib.ok) << what << ": slip's decoder accepted what libjpeg warns about";
    EXPECT_EQ(ours.samples, lib.samples) << what;
  }
  EXPECT_TRUE(standard == lib) << what << ": the default mode must give libjpeg's verdict";
  const int x0 = info.width / 3, y0 = info.height / 2;
  const Outcome lib_rgb = rgb_region_of(d, EntropyDecoding::libjpeg, jpeg, x0, y0, info.width, info.height);
  const Outcome ours_rgb = rgb_region_of(d, EntropyDecoding::slip_only, jpeg, x0, y0, info.width, info.height);
  const Outcome standard_rgb = rgb_region_of(d, EntropyDecoding::slip_then_libjpeg, jpeg, x0, y0, info.width, info.height);
  if (ours_rgb.ok) {
    EXPECT_TRUE(lib_rgb.ok) << what << " (region)";
    EXPECT_EQ(ours_rgb.samples, lib_rgb.samples) << what << " (region)";
  }
  EXPECT_TRUE(standard_rgb == lib_rgb) << what << " (region)";
  return {lib.ok, ours.ok};
}

TEST(HuffmanDecoder, CorpusDecodesToLibjpegsSamplesStoredAndWithRestartMarkers) {
  SLIP_REQUIRE_SHARED();
  SLIP_REQUIRE_JPEG_INTERNALS();
  const auto corpus = corpus_jpegs();
  ASSERT_GT(corpus.size(), 700u);
  JpegRegionDecoder d;
  int slip_decoded = 0, progressive = 0, restarted = 0, planar_regions = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const CorpusJpeg& image = corpus[i];
    std::vector<std::vector<std::byte>> variants{image.bytes};
    if (i % 4 == 0)
      if (auto r = reencode_with_restarts(image.bytes)) variants.push_back(std::move(*r)), ++restarted;
    for (const auto& jpeg : variants) {
      JpegImageInfo info;
      ASSERT_TRUE(d.read_header(jpeg, info)) << image.name;
      const int denom = i % 7 == 0 ? 1 << (i / 7 % 4) : 1;  // 1/2, 1/4, 1/8 on some
      const Outcome lib = planes_of(d, EntropyDecoding::libjpeg, jpeg, denom, 0, 0, info.width, info.height);
      const Outcome ours = planes_of(d, EntropyDecoding::slip_only, jpeg, denom, 0, 0, info.width, info.height);
      if (!lib.ok) continue;  // not planar (4:1:1 and the like)
      EXPECT_FALSE(lib.slip_huffman);
      if (image.progressive && jpeg.size() == image.bytes.size()) {
        // Progressive scans stay libjpeg's.
        EXPECT_FALSE(ours.slip_huffman) << image.name;
        ++progressive;
      } else {
        EXPECT_TRUE(ours.ok && ours.slip_huffman) << image.name << " (" << image.kind << ")";
        slip_decoded += ours.slip_huffman;
      }
      EXPECT_EQ(ours.samples, lib.samples) << image.name << " at 1/" << denom << (jpeg.size() != image.bytes.size() ? " restarts" : "");
      // The planar path's region: rows above only entropy-decoded and columns beside the region
      // not transformed (MCUs slip's decoder decodes without writing coefficients).
      if (i % 5 == 1 && info.height > 40 && info.width > 40) {
        const int x0 = info.width / 4, y0 = info.height / 2, x1 = info.width - info.width / 6, y1 = info.height - 3;
        const Outcome lib_region = planes_of(d, EntropyDecoding::libjpeg, jpeg, 1, x0, y0, x1, y1);
        const Outcome ours_region = planes_of(d, EntropyDecoding::slip_only, jpeg, 1, x0, y0, x1, y1);
        ASSERT_TRUE(lib_region.ok) << image.name;
        EXPECT_EQ(ours_region.samples, lib_region.samples) << image.name << " planar region";
        ++planar_regions;
      }
      // The RGB path: columns cropped and rows above skipped (libjpeg-turbo's skip decodes
      // those MCUs into no blocks at all).
      if (i % 5 == 0 && info.height > 40 && info.width > 40) {
        const int x0 = info.width / 5, y0 = info.height / 3, x1 = info.width - info.width / 7, y1 = info.height - 5;
        const Outcome lib_rgb = rgb_region_of(d, EntropyDecoding::libjpeg, jpeg, x0, y0, x1, y1);
        const Outcome ours_rgb = rgb_region_of(d, EntropyDecoding::slip_only, jpeg, x0, y0, x1, y1);
        ASSERT_TRUE(lib_rgb.ok) << image.name;
        EXPECT_EQ(ours_rgb.samples, lib_rgb.samples) << image.name << " region";
      }
    }
  }
  // Not vacuous: most of the corpus went through slip's decoder, restart markers included.
  EXPECT_GT(slip_decoded, 700);
  EXPECT_GT(planar_regions, 150);
  EXPECT_GT(progressive, 10);
  EXPECT_GT(restarted, 150);
}

// The payloads of a JPEG's DHT segments (its Huffman tables as written), up to its first scan.
std::vector<std::byte> huffman_segments(const std::vector<std::byte>& jpeg) {
  std::vector<std::byte> tables;
  size_t at = 2;  // after SOI
  while (at + 4 <= jpeg.size() && jpeg[at] == std::byte{0xFF}) {
    const auto marker = std::to_integer<int>(jpeg[at + 1]);
    const size_t length = (std::to_integer<size_t>(jpeg[at + 2]) << 8) | std::to_integer<size_t>(jpeg[at + 3]);
    if (marker == 0xDA || at + 2 + length > jpeg.size()) break;  // the scan
    if (marker == 0xC4)
      tables.insert(tables.end(), jpeg.begin() + static_cast<ptrdiff_t>(at + 4), jpeg.begin() + static_cast<ptrdiff_t>(at + 2 + length));
    at += 2 + length;
  }
  return tables;
}

// The tables most corpus JPEGs share (the standard ones) stay built while a few images with their
// own tables come between two that use them, and every decode still gives libjpeg's samples.
TEST(HuffmanDecoder, TablesStayBuiltThroughImagesWithOtherTables) {
  SLIP_REQUIRE_SHARED();
  SLIP_REQUIRE_JPEG_INTERNALS();
  const auto corpus = corpus_jpegs();
  std::map<std::vector<std::byte>, std::vector<const CorpusJpeg*>> by_tables;
  for (const CorpusJpeg& image : corpus)
    if (!image.progressive && image.kind.rfind("rgb", 0) == 0) by_tables[huffman_segments(image.bytes)].push_back(&image);
  const auto common =
      std::max_element(by_tables.begin(), by_tables.end(), [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  ASSERT_NE(common, by_tables.end());
  ASSERT_GE(common->second.size(), 2u);
  std::vector<const CorpusJpeg*> others;  // each with tables of its own
  for (const auto& [tables, images] : by_tables)
    if (&tables != &common->first && images.size() == 1 && others.size() < 5) others.push_back(images[0]);
  ASSERT_EQ(others.size(), 5u);

  JpegRegionDecoder d;
  // Builds `image` needed, after checking it decodes to libjpeg's samples.
  const auto builds_for = [&](const CorpusJpeg& image) {
    const size_t before = d.huffman_tables_built();
    JpegImageInfo info;
    EXPECT_TRUE(d.read_header(image.bytes, info)) << image.name;
    const Outcome ours = planes_of(d, EntropyDecoding::slip_only, image.bytes, 1, 0, 0, info.width, info.height);
    const size_t built = d.huffman_tables_built() - before;
    const Outcome lib = planes_of(d, EntropyDecoding::libjpeg, image.bytes, 1, 0, 0, info.width, info.height);
    EXPECT_TRUE(ours.ok && ours.slip_huffman) << image.name;
    EXPECT_EQ(ours.samples, lib.samples) << image.name;
    return built;
  };
  const CorpusJpeg& first = *common->second[0];
  const CorpusJpeg& second = *common->second[1];
  EXPECT_GT(builds_for(first), 0u) << first.name;
  // Three images with tables of their own, then the common tables again: still built.
  for (int i = 0; i < 3; ++i) EXPECT_GT(builds_for(*others[i]), 0u) << others[i]->name;
  EXPECT_EQ(builds_for(second), 0u) << second.name << ": the common tables were built again";
  // Past a slot's capacity the least recently used go: two more push out the first two others'
  // tables, not the common ones (used since).
  for (int i = 3; i < 5; ++i) EXPECT_GT(builds_for(*others[i]), 0u) << others[i]->name;
  EXPECT_EQ(builds_for(first), 0u) << first.name;
  EXPECT_EQ(builds_for(*others[2]), 0u) << others[2]->name;
  EXPECT_GT(builds_for(*others[0]), 0u) << others[0]->name << ": its tables should have been replaced";
}
// Where the symbols of a JPEG's first AC Huffman table start (0 if it has none before its scan).
size_t first_ac_symbols(const std::vector<std::byte>& jpeg) {
  size_t at = 2;
  while (at + 4 <= jpeg.size() && jpeg[at] == std::byte{0xFF}) {
    const auto marker = std::to_integer<int>(jpeg[at + 1]);
    const size_t length = (std::to_integer<size_t>(jpeg[at + 2]) << 8) | std::to_integer<size_t>(jpeg[at + 3]);
    if (marker == 0xDA || at + 2 + length > jpeg.size()) return 0;
    if (marker == 0xC4)
      for (size_t table = at + 4; table + 17 <= at + 2 + length;) {
        size_t symbols = 0;
        for (size_t l = 1; l <= 16; ++l) symbols += std::to_integer<size_t>(jpeg[table + l]);
        if (std::to_integer<int>(jpeg[table]) >> 4 == 1) return table + 17;
        table += 17 + symbols;
      }
    at += 2 + length;
  }
  return 0;
}

// A kept table is reused only for the very same table: one whose code counts match a kept
// table's but whose symbols differ (here the first two AC symbols swapped, a valid table that
// decodes the same bits to other coefficients) is built anew, and the decode gives libjpeg's
// verdict and samples.
TEST(HuffmanDecoder, TableWithTheSameCodeCountsButOtherSymbolsIsBuiltAnew) {
  SLIP_REQUIRE_SHARED();
  SLIP_REQUIRE_JPEG_INTERNALS();
  int compared = 0;
  for (const CorpusJpeg& image : corpus_jpegs()) {
    if (image.progressive || image.kind.rfind("rgb", 0) != 0 || compared == 8) continue;
    const size_t symbols = first_ac_symbols(image.bytes);
    if (symbols == 0 || image.bytes[symbols] == image.bytes[symbols + 1]) continue;
    std::vector<std::byte> swapped = image.bytes;
    std::swap(swapped[symbols], swapped[symbols + 1]);
    JpegRegionDecoder d;  // fresh: it holds this image's tables only
    JpegImageInfo info;
    ASSERT_TRUE(d.read_header(image.bytes, info)) << image.name;
    const Outcome original = planes_of(d, EntropyDecoding::slip_only, image.bytes, 1, 0, 0, info.width, info.height);
    ASSERT_TRUE(original.ok && original.slip_huffman) << image.name;
    const size_t before = d.huffman_tables_built();
    const Outcome ours = planes_of(d, EntropyDecoding::slip_only, swapped, 1, 0, 0, info.width, info.height);
    EXPECT_GT(d.huffman_tables_built(), before) << image.name << ": the swapped table was not built";
    const Outcome lib = planes_of(d, EntropyDecoding::libjpeg, swapped, 1, 0, 0, info.width, info.height);
    if (ours.ok) {
      EXPECT_EQ(ours.samples, lib.samples) << image.name;
    }
    EXPECT_TRUE(!ours.ok || lib.ok) << image.name << ": slip's decoder accepted what libjpeg refuses";
    EXPECT_NE(ours.samples, original.samples) << image.name;
    ++compared;
  }
  EXPECT_EQ(compared, 8);
}

// Damage the corpus really could carry (flipped bytes, truncation, stray or misnumbered
// markers, fill bytes, a dropped byte) in the entropy-coded data of baseline and restart JPEGs.
TEST(HuffmanDecoder, DamagedStreamsNeverDecodeToWhatLibjpegWouldNot) {
  SLIP_REQUIRE_SHARED();
  SLIP_REQUIRE_JPEG_INTERNALS();
  const auto corpus = corpus_jpegs();
  JpegRegionDecoder d;
  std::mt19937 rng(20261126);
  int both_decoded = 0, slip_refused_libjpeg_decoded = 0, both_refused = 0;
  for (const SequentialStream& stream : sequential_streams(corpus, 29, 24)) {
    const std::vector<std::byte>& base = stream.bytes;
    const std::string& name = stream.image->name;
    JpegImageInfo info;
    ASSERT_TRUE(d.read_header(base, info));
    // The entropy-coded data starts after the first SOS segment.
    size_t start = 0;
    for (size_t p = 2; p + 4 < base.size(); ++p)
      if (base[p] == std::byte{0xFF} && base[p + 1] == std::byte{0xDA}) {
        start = p + 2 + (static_cast<size_t>(base[p + 2]) << 8 | static_cast<size_t>(base[p + 3]));
        break;
      }
    ASSERT_GT(start, 0u);
    for (int m = 0; m < 30; ++m) {
      std::vector<std::byte> jpeg = base;
      std::uniform_int_distribution<size_t> where(start, jpeg.size() - 3);
      const size_t at = where(rng);
      switch (m % 6) {
        case 0:
          jpeg[at] = static_cast<std::byte>(rng());
          break;  // a changed byte
        case 1:
          jpeg.resize(at);
          break;  // truncated
        case 2:
          jpeg.insert(jpeg.begin() + static_cast<long>(at), {std::byte{0xFF}, static_cast<std::byte>(0xD0 + rng() % 8)});
          break;
        case 3:
          jpeg.insert(jpeg.begin() + static_cast<long>(at), {std::byte{0xFF}, std::byte{0xFF}, std::byte{0x00}});
          break;
        case 4:
          jpeg.erase(jpeg.begin() + static_cast<long>(at));
          break;  // a byte lost
        case 5:   // a marker renumbered
          for (size_t p = at; p + 1 < jpeg.size(); ++p)
            if (jpeg[p] == std::byte{0xFF} && (static_cast<int>(jpeg[p + 1]) & 0xF8) == 0xD0) {
              jpeg[p + 1] = static_cast<std::byte>(0xD0 + rng() % 8);
              break;
            }
          jpeg[at] ^= std::byte{0x10};
          break;
      }
      const Verdicts v = expect_libjpegs_verdict(d, info, jpeg, name + " mutation " + std::to_string(m));
      both_decoded += v.slip && v.libjpeg;
      slip_refused_libjpeg_decoded += !v.slip && v.libjpeg;
      both_refused += !v.slip && !v.libjpeg;
    }
  }
  // Damage that libjpeg decodes silently into other pixels exists, and slip's decoder matched it
  // there; damage libjpeg refuses was refused too.
  EXPECT_GT(both_decoded, 50);
  EXPECT_GT(both_refused, 50);
  std::printf("damaged streams: %d decoded by both, %d refused by both, %d refused by slip's decoder only\n", both_decoded, both_refused,
              slip_refused_libjpeg_decoded);
}

// The data's end around the last bit the image needs: the end-of-image marker dropped, 0-24
// bytes of junk appended or the last 1-3 bytes of the scan cut, then the marker put back or
// not. Whether libjpeg warns (premature end of file) depends on how far its reader ran ahead,
// not on the bits the image needed; slip's decoder must refuse every such stream libjpeg warns
// about (found by fuzz_huffman_decoder once the decoder's refill points moved).
TEST(HuffmanDecoder, DataEndingWithoutAMarkerNearTheLastBitGivesLibjpegsVerdict) {
  SLIP_REQUIRE_SHARED();
  SLIP_REQUIRE_JPEG_INTERNALS();
  const auto corpus = corpus_jpegs();
  JpegRegionDecoder d;
  std::mt19937 rng(20261127);
  int lib_warned = 0, lib_clean = 0;
  for (const SequentialStream& stream : sequential_streams(corpus, 53, 12)) {
    const std::vector<std::byte>& base = stream.bytes;
    const std::string& name = stream.image->name;
    JpegImageInfo info;
    ASSERT_TRUE(d.read_header(base, info));
    ASSERT_GE(base.size(), 4u);
    ASSERT_TRUE(base[base.size() - 2] == std::byte{0xFF} && base[base.size() - 1] == std::byte{0xD9}) << name;
    const std::vector<std::byte> scan(base.begin(), base.end() - 2);
    for (int variant = 0; variant < 2 * 28; ++variant) {
      const int tail = variant % 28 - 3;
      std::vector<std::byte> jpeg = scan;
      if (tail < 0) jpeg.resize(jpeg.size() - static_cast<size_t>(-tail));
      for (int b = 0; b < tail; ++b) jpeg.push_back(static_cast<std::byte>(rng() % 255));  // never 0xFF
      if (variant >= 28) jpeg.insert(jpeg.end(), {std::byte{0xFF}, std::byte{0xD9}});      // then the end-of-image marker
      const Verdicts v = expect_libjpegs_verdict(d, info, jpeg, name + " tail " + std::to_string(tail) + (variant >= 28 ? " + EOI" : ""));
      (v.libjpeg ? lib_clean : lib_warned) += 1;
    }
  }
  // Both verdicts occur: some tails are long enough that libjpeg never reaches the end.
  EXPECT_GT(lib_warned, 50);
  EXPECT_GT(lib_clean, 50);
}

}  // namespace
}  // namespace slip::detail
