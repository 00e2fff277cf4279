// The image module against real files: the 800-image corpus and its manifest, the broken
// files of corpus/bad, and Pillow 9.4 (run here) as the reference for every RGB conversion.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <turbojpeg.h>

#include "slip/error.hpp"
#include "slip/image.hpp"
#include "slip/decode.hpp"
#include "test_support.hpp"

namespace slip {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

using ByteVector = std::vector<std::byte>;

fs::path corpus() { return test::shared_dir() / "corpus"; }
fs::path imagenet(const std::string& rel) { return corpus() / "imagenet_like" / rel; }

ByteVector load(const fs::path& p) {
  const std::string s = test::read_file(p);
  const auto* b = reinterpret_cast<const std::byte*>(s.data());
  return ByteVector(b, b + s.size());
}
ByteVector bytes_of(std::string_view s) {
  const auto* b = reinterpret_cast<const std::byte*>(s.data());
  return ByteVector(b, b + s.size());
}
// A string literal's bytes, embedded NULs included (without the terminating one).
template <size_t N>
ByteVector lit(const char (&s)[N]) {
  return bytes_of(std::string_view(s, N - 1));
}
std::span<const std::byte> prefix(const ByteVector& b, size_t n) { return std::span<const std::byte>(b).first(n); }

JpegHeader header_of(const ByteVector& b) {
  JpegHeader h;
  EXPECT_TRUE(parse_jpeg_header(b, h));
  return h;
}

// The corpus files the tests single out (their features are in corpus/README.md).
constexpr const char* kBaseline = "n01440764/n01440764_10532.JPEG";  // 500x375 4:2:0 q93, source of bad/*
constexpr const char* kProgressive = "n01440764/n01440764_3835.JPEG";
constexpr const char* kGrayProgressive = "n03888605/n03888605_3878.JPEG";
constexpr const char* kGray = "n01440764/n01440764_2578.JPEG";
constexpr const char* kExif = "n02102040/n02102040_13645.JPEG";  // 594x742, 128x160 thumbnail
constexpr const char* kTiny = "n03888605/n03888605_7974.JPEG";   // 3x7, 651 bytes
const std::vector<std::string> kCmyk = {"n02102040/n02102040_3343.JPEG", "n03394916/n03394916_3591.JPEG", "n03888605/n03888605_4557.JPEG",
                                        "n03888605/n03888605_6050.JPEG"};
const std::vector<std::string> kPng = {"n01440764/n01440764_12741.JPEG", "n01440764/n01440764_13396.JPEG", "n02979186/n02979186_7595.JPEG",
                                       "n03445777/n03445777_10337.JPEG", "n03888605/n03888605_10054.JPEG", "n03888605/n03888605_4775.JPEG"};

struct ManifestRow {
  std::string path, format, color, progressive;
  uint32_t width = 0, height = 0;
};

std::vector<ManifestRow> manifest() {
  std::istringstream in(test::read_file(corpus() / "imagenet_like.manifest.tsv"));
  std::vector<ManifestRow> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> col;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, '\t');) col.push_back(c);
    if (col.size() < 8) continue;
    rows.push_back({col[0], col[4], col[5], col[7], static_cast<uint32_t>(std::stoul(col[2])), static_cast<uint32_t>(std::stoul(col[3]))});
  }
  return rows;
}

// ---- Pillow as the reference -------------------------------------------------------------

// mode "convert": writes Image.open(p).convert("RGB") of each path as OUT/<i>.rgb and prints
// "i w h". mode "synth": writes PNGs of every colour type, bit depth, tRNS and interlace
// variant (by hand, since Pillow cannot write most of them) plus GIF/BMP/PPM through Pillow,
// each with its Pillow conversion, and prints "name w h".
constexpr const char* kPillowScript = R"PY(
import random, struct, sys, warnings, zlib
from PIL import Image
warnings.simplefilter("ignore")
mode, out = sys.argv[1], sys.argv[2]

def ref(src, name):
    im = Image.open(src).convert("RGB")
    open(f"{out}/{name}.rgb", "wb").write(im.tobytes())
    print(name, im.size[0], im.size[1])

if mode == "convert":
    for i, p in enumerate(sys.argv[3:]):
        ref(p, str(i))
    sys.exit(0)

rnd = random.Random(1234)
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]

def pack(samples, depth):
    if depth == 16:
        return b"".join(struct.pack(">H", s) for s in samples)
    if depth == 8:
        return bytes(samples)
    per, acc, n, out_ = 8 // depth, 0, 0, bytearray()
    for s in samples:
        acc = (acc << depth) | s
        n += 1
        if n == per:
            out_.append(acc); acc = n = 0
    if n:
        out_.append(acc << (depth * (per - n)))
    return bytes(out_)

def chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

def png(name, w, h, ctype, depth, interlace=False, trns=None, plte_n=None):
    ch = CHANNELS[ctype]
    hi = (1 << depth) - 1 if ctype != 3 else min((1 << depth), plte_n) - 1
    px = [[[rnd.randint(0, hi) for _ in range(ch)] for _ in range(w)] for _ in range(h)]
    def rows(x0, y0, dx, dy):
        raw = b""
        for y in range(y0, h, dy):
            samples = [s for x in range(x0, w, dx) for s in px[y][x]]
            if samples:
                raw += b"\0" + pack(samples, depth)
        return raw
    raw = b"".join(rows(*p) for p in ADAM7) if interlace else rows(0, 0, 1, 1)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, int(interlace)))
    if ctype == 3:
        data += chunk(b"PLTE", bytes(rnd.randint(0, 255) for _ in range(3 * plte_n)))
    if trns is not None:
        data += chunk(b"tRNS", trns)
    data += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    open(f"{out}/{name}.img", "wb").write(data)
    ref(f"{out}/{name}.img", name)

for d in (1, 2, 4, 8, 16):
    png(f"gray{d}", 13, 7, 0, d)
png("gray8_trns", 13, 7, 0, 8, trns=struct.pack(">H", 7))
png("gray16_trns", 13, 7, 0, 16, trns=struct.pack(">H", 300))
png("gray16_low", 13, 7, 0, 16)  # random 16-bit values: almost all clip to 255
for d in (8, 16):
    png(f"rgb{d}", 13, 7, 2, d)
    png(f"ga{d}", 13, 7, 4, d)
    png(f"rgba{d}", 13, 7, 6, d)
png("rgb8_trns", 13, 7, 2, 8, trns=struct.pack(">HHH", 1, 2, 3))
for d in (1, 2, 4, 8):
    png(f"pal{d}", 13, 7, 3, d, plte_n=min(1 << d, 200))
png("pal8_trns", 13, 7, 3, 8, trns=bytes(range(0, 250, 5)), plte_n=200)
png("pal4_short_trns", 13, 7, 3, 4, trns=b"\x00\x80", plte_n=16)
png("rgb8_interlaced", 19, 11, 2, 8, interlace=True)
png("gray4_interlaced", 19, 11, 0, 4, interlace=True)
png("pal2_interlaced", 19, 11, 3, 2, interlace=True, plte_n=4)
png("rgba16_interlaced", 19, 11, 6, 16, interlace=True)
png("gray16_interlaced_1x1", 1, 1, 0, 16, interlace=True)

# Formats stb_image reads, written by Pillow from a random RGB image.
rgb = Image.frombytes("RGB", (23, 9), bytes(rnd.randint(0, 255) for _ in range(23 * 9 * 3)))
for name, im, fmt in (("bmp_rgb", rgb, "BMP"), ("bmp_l", rgb.convert("L"), "BMP"),
                      ("ppm_rgb", rgb, "PPM"), ("pgm_l", rgb.convert("L"), "PPM"),
                      ("gif_p", rgb.convert("P", palette=Image.ADAPTIVE, colors=64), "GIF")):
    im.save(f"{out}/{name}.img", fmt)
    ref(f"{out}/{name}.img", name)
)PY";

struct PillowImage {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> pixels;
};

// Runs the script; returns name -> Pillow's RGB pixels (and, for "synth", the image files).
std::map<std::string, PillowImage> run_pillow(const TempDir& tmp, const std::string& mode, const std::vector<fs::path>& paths = {}) {
  const fs::path script = tmp.path() / "pillow_ref.py";
  std::ofstream(script) << kPillowScript;
  std::string cmd = test::python() + " " + script.string() + " " + mode + " " + tmp.path().string();
  for (const auto& p : paths) cmd += " '" + p.string() + "'";
  const auto r = test::run(cmd);
  EXPECT_EQ(r.status, 0) << cmd;
  std::map<std::string, PillowImage> out;
  std::istringstream in(r.out);
  std::string name;
  PillowImage img;
  while (in >> name >> img.width >> img.height) {
    const std::string raw = test::read_file(tmp.path() / (name + ".rgb"));
    img.pixels.assign(raw.begin(), raw.end());
    out[name] = img;
  }
  return out;
}

// Largest per-sample difference, or -1 when the sizes differ.
int max_abs_diff(const RgbImage& a, const PillowImage& b) {
  if (a.width != b.width || a.height != b.height || a.pixels.size() != b.pixels.size()) return -1;
  int m = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) m = std::max(m, std::abs(int{a.pixels[i]} - int{b.pixels[i]}));
  return m;
}

double psnr(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  double se = 0;
  for (size_t i = 0; i < a.size(); ++i) se += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  const double mse = se / double(a.size());
  return mse == 0 ? 99.0 : 10.0 * std::log10(255.0 * 255.0 / mse);
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::bad_input) << e.message();
    return e.message();
  }
  ADD_FAILURE() << "no slip::Error thrown";
  return {};
}

// ---- sniffing ----------------------------------------------------------------------------

TEST(ImageSniff, MagicBytesOnly) {
  SLIP_REQUIRE_SHARED();
  EXPECT_EQ(sniff_image_format(lit("\xFF\xD8")), ImageFormat::jpeg);
  EXPECT_EQ(sniff_image_format(lit("\x89PNG\r\n\x1a\n")), ImageFormat::png);
  EXPECT_EQ(sniff_image_format(lit("\x89PNG\r\n\x1a")), ImageFormat::unknown);
  EXPECT_EQ(sniff_image_format(lit("GIF89a...")), ImageFormat::gif);
  EXPECT_EQ(sniff_image_format(lit("GIF87a")), ImageFormat::gif);
  EXPECT_EQ(sniff_image_format(lit("BM\x36\0\0\0")), ImageFormat::bmp);
  EXPECT_EQ(sniff_image_format(lit("RIFF\x10\0\0\0WEBPVP8 ")), ImageFormat::webp);
  EXPECT_EQ(sniff_image_format(lit("RIFF\x10\0\0\0WAVE")), ImageFormat::unknown);
  EXPECT_EQ(sniff_image_format(lit("II*\0")), ImageFormat::tiff);
  EXPECT_EQ(sniff_image_format(lit("MM\0*")), ImageFormat::tiff);
  EXPECT_EQ(sniff_image_format(lit("P6\n3 2\n255\n")), ImageFormat::ppm);
  EXPECT_EQ(sniff_image_format(lit("P5 ")), ImageFormat::ppm);
  EXPECT_EQ(sniff_image_format(lit("P7\n")), ImageFormat::unknown);
  EXPECT_EQ(sniff_image_format(lit("Pillow")), ImageFormat::unknown);
  EXPECT_EQ(sniff_image_format({}), ImageFormat::unknown);
  EXPECT_EQ(sniff_image_format(lit("\xFF")), ImageFormat::unknown);
  // The PNG-as-.JPEG files are judged by content, never by name.
  for (const auto& p : kPng) EXPECT_EQ(sniff_image_format(load(imagenet(p))), ImageFormat::png) << p;
  EXPECT_STREQ(image_format_name(ImageFormat::jpeg), "jpeg");
  EXPECT_STREQ(image_format_name(ImageFormat::png), "png");
  EXPECT_STREQ(image_format_name(ImageFormat::ppm), "ppm");
  EXPECT_STREQ(image_format_name(ImageFormat::unknown), "unknown");
}

// ---- the SOF walk ------------------------------------------------------------------------

TEST(ImageJpegHeader, Baseline) {
  SLIP_REQUIRE_SHARED();
  const ByteVector b = load(imagenet(kBaseline));
  const JpegHeader h = header_of(b);
  EXPECT_EQ(h.width, 500u);
  EXPECT_EQ(h.height, 375u);
  EXPECT_EQ(h.components, 3);
  EXPECT_EQ(h.sof_marker, 0xC0);
  EXPECT_FALSE(h.progressive);
  EXPECT_FALSE(h.adobe_transform_seen);
  ASSERT_LT(h.sof_offset + 1, b.size());
  EXPECT_EQ(b[h.sof_offset], std::byte{0xFF});
  EXPECT_EQ(b[h.sof_offset + 1], std::byte{0xC0});
  EXPECT_TRUE(jpeg_decodes_to_rgb(b));
}

TEST(ImageJpegHeader, Progressive) {
  SLIP_REQUIRE_SHARED();
  JpegHeader h = header_of(load(imagenet(kProgressive)));
  EXPECT_EQ(h.width, 500u);
  EXPECT_EQ(h.height, 375u);
  EXPECT_EQ(h.sof_marker, 0xC2);
  EXPECT_TRUE(h.progressive);
  EXPECT_EQ(h.components, 3);

  h = header_of(load(imagenet(kGrayProgressive)));
  EXPECT_EQ(h.width, 500u);
  EXPECT_EQ(h.height, 500u);
  EXPECT_EQ(h.sof_marker, 0xC2);
  EXPECT_TRUE(h.progressive);
  EXPECT_EQ(h.components, 1);
}

TEST(ImageJpegHeader, Grayscale) {
  SLIP_REQUIRE_SHARED();
  const ByteVector b = load(imagenet(kGray));
  const JpegHeader h = header_of(b);
  EXPECT_EQ(h.width, 500u);
  EXPECT_EQ(h.height, 375u);
  EXPECT_EQ(h.components, 1);
  EXPECT_FALSE(h.progressive);
  EXPECT_TRUE(jpeg_decodes_to_rgb(b));
}

TEST(ImageJpegHeader, CmykHasAdobeMarkerAndFourComponents) {
  SLIP_REQUIRE_SHARED();
  const std::vector<std::pair<uint32_t, uint32_t>> sizes = {{657, 657}, {500, 375}, {204, 272}, {500, 456}};
  for (size_t i = 0; i < kCmyk.size(); ++i) {
    const ByteVector b = load(imagenet(kCmyk[i]));
    const JpegHeader h = header_of(b);
    EXPECT_EQ(h.width, sizes[i].first) << kCmyk[i];
    EXPECT_EQ(h.height, sizes[i].second) << kCmyk[i];
    EXPECT_EQ(h.components, 4) << kCmyk[i];
    EXPECT_TRUE(h.adobe_transform_seen) << kCmyk[i];
    EXPECT_FALSE(jpeg_decodes_to_rgb(b)) << kCmyk[i];
  }
}

TEST(ImageJpegHeader, ExifThumbnailWithEarlyEoiIsSkipped) {
  SLIP_REQUIRE_SHARED();
  const ByteVector b = load(imagenet(kExif));
  const JpegHeader h = header_of(b);
  EXPECT_EQ(h.width, 594u);
  EXPECT_EQ(h.height, 742u);
  EXPECT_EQ(h.components, 3);
  // The thumbnail's SOI, SOF0 and EOI all sit inside APP1, before the real frame header.
  auto find = [&](uint8_t marker, size_t from) {
    for (size_t i = from; i + 1 < b.size(); ++i)
      if (b[i] == std::byte{0xFF} && b[i + 1] == std::byte{marker}) return i;
    return b.size();
  };
  const size_t thumb_soi = find(0xD8, 2), thumb_sof = find(0xC0, 2), early_eoi = find(0xD9, 2);
  EXPECT_LT(thumb_soi, thumb_sof);
  EXPECT_LT(thumb_sof, early_eoi);
  EXPECT_LT(early_eoi, h.sof_offset);
  ASSERT_LT(thumb_sof + 9, b.size());
  // A naive scan for the first FFC0 would report the 128x160 thumbnail instead.
  const uint32_t thumb_h = uint32_t(std::to_integer<uint8_t>(b[thumb_sof + 5])) << 8 | std::to_integer<uint8_t>(b[thumb_sof + 6]);
  const uint32_t thumb_w = uint32_t(std::to_integer<uint8_t>(b[thumb_sof + 7])) << 8 | std::to_integer<uint8_t>(b[thumb_sof + 8]);
  EXPECT_EQ(thumb_w, 128u);
  EXPECT_EQ(thumb_h, 160u);
  // Truncating right after the thumbnail's EOI leaves no frame header.
  JpegHeader t;
  EXPECT_FALSE(parse_jpeg_header(prefix(b, early_eoi + 2), t));
}

TEST(ImageJpegHeader, SpecWalkRules) {
  auto parse = [](const ByteVector& b) {
    JpegHeader h;
    const bool ok = parse_jpeg_header(b, h);
    return std::make_pair(ok, h);
  };
  // Stray bytes, fill bytes, standalone markers (incl. a second SOI/EOI) and a COM segment.
  auto [ok, h] =
      parse(lit("\xFF\xD8"
                "ab"
                "\xFF\xFF\xFF\x01"
                "\xFF\xD0\xFF\xD9\xFF\x00"
                "\xFF\xFE\x00\x04"
                "zz"
                "\xFF\xC1\x00\x0B\x08\x01\x02\x03\x04\x03"
                "xx"));
  ASSERT_TRUE(ok);
  EXPECT_EQ(h.height, 0x0102u);
  EXPECT_EQ(h.width, 0x0304u);
  EXPECT_EQ(h.components, 3);
  EXPECT_EQ(h.sof_marker, 0xC1);
  EXPECT_EQ(h.sof_offset, 20u);
  EXPECT_FALSE(h.progressive);
  // C4 (DHT), C8 (JPG) and CC (DAC) are segments, not frames: skipped by their length.
  for (const char m : {'\xC4', '\xC8', '\xCC'}) {
    ByteVector b = lit("\xFF\xD8\xFF");
    b.push_back(std::byte(m));
    for (const ByteVector& part : {lit("\x00\x0A\x08\x00\x10\x00\x20\x03\x00\x00"), lit("\xFF\xCA\x00\x0B\x08\x00\x05\x00\x06\x01"
                                                                                        "xx")})
      b.insert(b.end(), part.begin(), part.end());
    std::tie(ok, h) = parse(b);
    ASSERT_TRUE(ok) << int(uint8_t(m));
    EXPECT_EQ(h.width, 6u);
    EXPECT_EQ(h.height, 5u);
    EXPECT_EQ(h.sof_marker, 0xCA);
    EXPECT_EQ(h.sof_offset, 14u);
    EXPECT_TRUE(h.progressive);  // SOF10: progressive, arithmetic coding
  }
  // Upstream needs marker+9 (the component count) inside the data.
  EXPECT_FALSE(parse(lit("\xFF\xD8\xFF\xC0\x00\x11\x08\x00\x05\x00\x06")).first);
  EXPECT_TRUE(parse(lit("\xFF\xD8\xFF\xC0\x00\x11\x08\x00\x05\x00\x06\x03")).first);
  // A segment whose length runs past the end hides whatever follows.
  EXPECT_FALSE(parse(lit("\xFF\xD8\xFF\xE1\x7F\xFF\xFF\xC0\x00\x11\x08\x00\x05\x00\x06\x03")).first);
  // Zero-length segments still advance the walk (no infinite loop).
  EXPECT_TRUE(parse(lit("\xFF\xD8\xFF\xE0\x00\x00\xFF\xC0\x00\x11\x08\x00\x05\x00\x06\x03")).first);
  // A complete Adobe APP14 before the frame is noticed; a cut-off one is not.
  const ByteVector adobe =
      lit("\xFF\xD8\xFF\xEE\x00\x0E"
          "Adobe"
          "\x00\x64\x00\x00\x00\x00\x02"
          "\xFF\xC0\x00\x11\x08\x00\x05\x00\x06\x04");
  std::tie(ok, h) = parse(adobe);
  ASSERT_TRUE(ok);
  EXPECT_TRUE(h.adobe_transform_seen);
  EXPECT_EQ(h.components, 4);
  // No SOI.
  EXPECT_FALSE(parse(lit("\xFF\xC0\x00\x11\x08\x00\x05\x00\x06\x03")).first);
  EXPECT_FALSE(parse(ByteVector{}).first);
}

// Every prefix of a small JPEG: the header is found exactly when marker+9 is inside the
// prefix, and then equals the full file's; decoding fails cleanly for every proper prefix.
TEST(ImageJpegHeader, TruncatedAtEveryByte) {
  SLIP_REQUIRE_SHARED();
  const ByteVector b = load(imagenet(kTiny));
  const JpegHeader full = header_of(b);
  EXPECT_EQ(full.width, 3u);
  EXPECT_EQ(full.height, 7u);
  ASSERT_EQ(decode_jpeg_rgb(b).pixels.size(), 3u * 7 * 3);
  for (size_t n = 0; n <= b.size(); ++n) {
    JpegHeader h;
    const bool ok = parse_jpeg_header(prefix(b, n), h);
    ASSERT_EQ(ok, n > full.sof_offset + 9) << n;
    if (ok) {
      EXPECT_EQ(h.width, full.width);
      EXPECT_EQ(h.height, full.height);
      EXPECT_EQ(h.components, full.components);
      EXPECT_EQ(h.sof_offset, full.sof_offset);
    } else {
      EXPECT_EQ(h.width, 0u);
    }
    const ImageSize s = probe_image_size(prefix(b, n));
    EXPECT_EQ(s.width, ok ? 3u : 0u);
    if (n < b.size()) {
      EXPECT_THROW(decode_jpeg_rgb(prefix(b, n)), Error) << n;
      EXPECT_THROW(decode_to_rgb(prefix(b, n)), Error) << n;
    }
  }
  // The same over the EXIF file's metadata (prefixes up to just past its frame header).
  const ByteVector e = load(imagenet(kExif));
  const JpegHeader ef = header_of(e);
  for (size_t n = 0; n <= ef.sof_offset + 64; ++n) {
    JpegHeader h;
    const bool ok = parse_jpeg_header(prefix(e, n), h);
    ASSERT_EQ(ok, n > ef.sof_offset + 9) << n;
    if (ok) {
      EXPECT_EQ(h.width, 594u);
    }
  }
}

// All 800 corpus files against the manifest (written by an independent parser, cross-checked
// with Pillow): JPEGs through the SOF walk, PNGs through probe_image_size.
TEST(ImageJpegHeader, WholeCorpusMatchesManifest) {
  SLIP_REQUIRE_SHARED();
  const auto rows = manifest();
  ASSERT_EQ(rows.size(), 800u);
  std::map<std::string, int> counts;
  for (const auto& r : rows) {
    const ByteVector b = load(imagenet(r.path));
    ASSERT_FALSE(b.empty()) << r.path;
    const ImageSize size = probe_image_size(b);
    EXPECT_EQ(size.width, r.width) << r.path;
    EXPECT_EQ(size.height, r.height) << r.path;
    JpegHeader h;
    const bool ok = parse_jpeg_header(b, h);
    if (r.format == "jpeg") {
      EXPECT_EQ(sniff_image_format(b), ImageFormat::jpeg) << r.path;
      ASSERT_TRUE(ok) << r.path;
      EXPECT_EQ(h.width, r.width) << r.path;
      EXPECT_EQ(h.height, r.height) << r.path;
      EXPECT_EQ(h.components, r.color == "gray" ? 1 : r.color == "cmyk" ? 4 : 3) << r.path;
      EXPECT_EQ(h.progressive, r.progressive == "yes") << r.path;
      EXPECT_EQ(jpeg_decodes_to_rgb(b), r.color != "cmyk") << r.path;
    } else {
      ASSERT_EQ(r.format, "png");
      EXPECT_EQ(sniff_image_format(b), ImageFormat::png) << r.path;
      EXPECT_FALSE(ok) << r.path;
      EXPECT_FALSE(jpeg_decodes_to_rgb(b)) << r.path;
    }
    ++counts[r.format + "/" + r.color];
  }
  EXPECT_EQ(counts["jpeg/rgb"], 780);
  EXPECT_EQ(counts["jpeg/gray"], 10);
  EXPECT_EQ(counts["jpeg/cmyk"], 4);
  EXPECT_EQ(counts["png/rgb"] + counts["png/gray"] + counts["png/rgba"], 6);
}

// ---- corpus/bad: every file has a documented outcome -------------------------------------

TEST(ImageBadFiles, EachHasItsDocumentedOutcome) {
  SLIP_REQUIRE_SHARED();
  struct Expect {
    ImageFormat format;
    bool header;               // parse_jpeg_header succeeds
    uint32_t width, height;    // probe_image_size
    bool tj_rgb;               // jpeg_decodes_to_rgb
    std::string decode_error;  // part of decode_jpeg_rgb's message (TurboJPEG's text)
  };
  const std::map<std::string, Expect> table = {
      // Empty: nothing to sniff; TurboJPEG rejects the zero-length buffer.
      {"zero_bytes.JPEG", {ImageFormat::unknown, false, 0, 0, false, "Invalid argument"}},
      // Header intact (first half), scan cut: TurboJPEG's warning is an error here.
      {"truncated_half.JPEG", {ImageFormat::jpeg, true, 500, 375, true, "Premature end of JPEG file"}},
      {"text_file.jpg", {ImageFormat::unknown, false, 0, 0, false, "Not a JPEG file"}},
      // Header intact, scan corrupted: fatal error (reported with TJERR_WARNING, still nonzero).
      {"garbage_in_entropy.JPEG", {ImageFormat::jpeg, true, 500, 375, true, "Unsupported marker type 0x8e"}},
      // The SOF walk reports the zero side as upstream does; decoding refuses it.
      {"sof_height_zero.JPEG", {ImageFormat::jpeg, true, 500, 0, false, "Empty JPEG image"}},
      {"sof_width_zero.JPEG", {ImageFormat::jpeg, true, 0, 375, false, "Empty JPEG image"}},
      // Complete image but no EOI: "Premature end" warning, an error for us as for Pillow.
      {"missing_eoi.JPEG", {ImageFormat::jpeg, true, 500, 375, true, "Premature end of JPEG file"}},
      // TurboJPEG's header call "succeeds" with 0x0 here; we refuse before decoding.
      {"soi_only.JPEG", {ImageFormat::jpeg, false, 0, 0, false, "contains no image"}},
      // IHDR intact (246x246, n01440764_12741), pixel data cut: libpng fails on the missing data.
      {"png_truncated.JPEG", {ImageFormat::png, false, 246, 246, false, "Not a JPEG file"}},
  };
  const bool turbojpeg_3x = jpeg_engine_info().libjpeg_loaded.find("3.x ABI") != std::string::npos;
  std::set<std::string> seen;
  for (const auto& entry : fs::directory_iterator(corpus() / "bad")) {
    const std::string name = entry.path().filename().string();
    seen.insert(name);
    ASSERT_TRUE(table.count(name)) << "undocumented file in corpus/bad: " << name;
    const Expect& x = table.at(name);
    const ByteVector b = load(entry.path());
    SCOPED_TRACE(name);
    EXPECT_EQ(sniff_image_format(b), x.format);
    JpegHeader h;
    EXPECT_EQ(parse_jpeg_header(b, h), x.header);
    const ImageSize s = probe_image_size(b);
    EXPECT_EQ(s.width, x.width);
    EXPECT_EQ(s.height, x.height);
    EXPECT_EQ(jpeg_decodes_to_rgb(b), x.tj_rgb);
    const std::string turbojpeg_error = error_of([&] { decode_jpeg_rgb(b); });
    // TurboJPEG's own words are 2.x's (Debian 12); 3.x's header call words many of these
    // "Could not determine subsampling level", still an error.
    if (turbojpeg_3x) {
      EXPECT_FALSE(turbojpeg_error.empty());
    } else {
      EXPECT_NE(turbojpeg_error.find(x.decode_error), std::string::npos) << turbojpeg_error;
    }
    const std::string why = error_of([&] { decode_to_rgb(b); });
    EXPECT_FALSE(why.empty());
    if (name == "png_truncated.JPEG") {
      EXPECT_NE(why.find("PNG"), std::string::npos) << why;
    }
  }
  EXPECT_EQ(seen.size(), table.size());
}

// ---- pixels against Pillow ---------------------------------------------------------------

// The PNG-as-.JPEG files (RGB, gray, RGBA) must equal Image.open(p).convert("RGB") exactly,
// as must the CMYK JPEGs (same libjpeg-turbo 2.1.5, ISLOW DCT, fancy upsampling) and a
// sample of ordinary JPEGs of each kind.
TEST(ImageDecode, CorpusMatchesPillowExactly) {
  SLIP_REQUIRE_SHARED();
  SLIP_REQUIRE_PYTHON();
  TempDir tmp;
  std::vector<std::string> rel = kPng;
  rel.insert(rel.end(), kCmyk.begin(), kCmyk.end());
  const std::vector<std::string> jpegs = {kBaseline,
                                          kProgressive,
                                          kGrayProgressive,
                                          kGray,
                                          kExif,
                                          kTiny,
                                          "n01440764/n01440764_10908.JPEG",   // 4:2:2
                                          "n03417042/n03417042_11319.JPEG",   // restart markers
                                          "n02979186/n02979186_11501.JPEG"};  // 1x1
  rel.insert(rel.end(), jpegs.begin(), jpegs.end());
  std::vector<fs::path> paths;
  for (const auto& r : rel) paths.push_back(imagenet(r));
  const auto ref = run_pillow(tmp, "convert", paths);
  ASSERT_EQ(ref.size(), rel.size());
  for (size_t i = 0; i < rel.size(); ++i) {
    const ByteVector b = load(paths[i]);
    const RgbImage img = decode_to_rgb(b);
    const int diff = max_abs_diff(img, ref.at(std::to_string(i)));
    EXPECT_EQ(diff, 0) << rel[i];
    if (std::find(kCmyk.begin(), kCmyk.end(), rel[i]) != kCmyk.end())
      std::printf("[ CMYK     ] %s %ux%u max abs diff vs Pillow: %d\n", rel[i].c_str(), img.width, img.height, diff);
    if (sniff_image_format(b) == ImageFormat::jpeg && jpeg_decodes_to_rgb(b)) {
      EXPECT_EQ(decode_jpeg_rgb(b).pixels, img.pixels) << rel[i];
    }
  }
}

// Every PNG colour type and bit depth (tRNS, interlace, odd sizes), and the GIF/BMP/PPM that
// go through stb_image, against Pillow's convert("RGB").
TEST(ImageDecode, SyntheticFormatsMatchPillow) {
  SLIP_REQUIRE_PYTHON();
  TempDir tmp;
  const auto ref = run_pillow(tmp, "synth");
  ASSERT_GE(ref.size(), 30u);
  for (const auto& [name, pil] : ref) {
    const ByteVector b = load(tmp.path() / (name + ".img"));
    RgbImage img;
    ASSERT_NO_THROW(img = decode_to_rgb(b)) << name;
    EXPECT_EQ(max_abs_diff(img, pil), 0) << name;
  }
  // 16-bit gray is clipped like Pillow's mode "I", not reduced to its high byte.
  const RgbImage g = decode_to_rgb(load(tmp.path() / "gray16.img"));
  EXPECT_GT(std::count(g.pixels.begin(), g.pixels.end(), 255), long(g.pixels.size() * 9 / 10));
}

TEST(ImageDecode, RejectsBombsAndUnsupportedFormats) {
  SLIP_REQUIRE_SHARED();
  SLIP_REQUIRE_PYTHON();
  // The baseline JPEG's frame header rewritten to 13380x13375: 178,957,500 pixels, just over
  // Pillow's DecompressionBombError threshold (2 x 89,478,485 = 178,956,970).
  ByteVector b = load(imagenet(kBaseline));
  const JpegHeader h = header_of(b);
  const auto put16 = [&](size_t at, unsigned v) {
    b[at] = std::byte(v >> 8);
    b[at + 1] = std::byte(v & 0xFF);
  };
  put16(h.sof_offset + 5, 13375);
  put16(h.sof_offset + 7, 13380);
  EXPECT_NE(error_of([&] { decode_to_rgb(b); }).find("exceeds the limit"), std::string::npos);
  EXPECT_NE(error_of([&] { decode_jpeg_rgb(b); }).find("exceeds the limit"), std::string::npos);
  put16(h.sof_offset + 5, 65500);  // libjpeg's own maximum side
  put16(h.sof_offset + 7, 65500);
  EXPECT_NE(error_of([&] { decode_to_rgb(b); }).find("exceeds the limit"), std::string::npos);
  put16(h.sof_offset + 7, 65535);  // beyond it, libjpeg refuses first
  EXPECT_NE(error_of([&] { decode_to_rgb(b); }).find("Maximum supported image dimension"), std::string::npos);

  // A PNG whose IHDR claims 20000x20000 (libpng's own limit is 1e6 per side).
  TempDir tmp;
  const fs::path script = tmp.path() / "big.py";
  std::ofstream(script) << "import struct,sys,zlib\n"
                           "c=lambda t,d: struct.pack('>I',len(d))+t+d+struct.pack('>I',zlib.crc32(t+d))\n"
                           "sys.stdout.buffer.write(b'\\x89PNG\\r\\n\\x1a\\n'+c(b'IHDR',struct.pack('>IIBBBBB',"
                           "20000,20000,8,2,0,0,0))+c(b'IDAT',zlib.compress(b'\\0'*61))+c(b'IEND',b''))\n";
  const auto r = test::run(test::python() + " " + script.string());
  ASSERT_EQ(r.status, 0);
  const ByteVector png = bytes_of(r.out);
  EXPECT_EQ(probe_image_size(png).width, 20000u);
  EXPECT_NE(error_of([&] { decode_to_rgb(png); }).find("exceeds the limit"), std::string::npos);

  EXPECT_NE(error_of([&] { decode_to_rgb(lit("RIFF\x10\0\0\0WEBPVP8 ")); }).find("webp"), std::string::npos);
  EXPECT_NE(error_of([&] { decode_to_rgb(lit("II*\0\x08\0\0\0")); }).find("tiff"), std::string::npos);
  // PNM other than 8-bit maxval 255 is refused: stb would not give Pillow's rescaled pixels
  // (and its 16-bit path overruns a buffer, as the ASan build showed).
  EXPECT_NE(error_of([&] { decode_to_rgb(lit("P5 2 1 65535\n\x12\x34\xAB\xCD")); }).find("maxval"), std::string::npos);
  EXPECT_NE(error_of([&] { decode_to_rgb(lit("P6\n# c\n1 1\n100\n\x01\x02\x03")); }).find("maxval 255"), std::string::npos);
  EXPECT_NE(error_of([&] { decode_to_rgb(lit("P3\n1 1\n255\n1 2 3\n")); }).find("P5/P6"), std::string::npos);
  const RgbImage pgm = decode_to_rgb(lit("P5\n# comment\n2 1 255\n\x12\xAB"));
  EXPECT_EQ(pgm.pixels, (std::vector<uint8_t>{0x12, 0x12, 0x12, 0xAB, 0xAB, 0xAB}));
  EXPECT_FALSE(error_of([&] { decode_to_rgb(lit("BM not really")); }).empty());
  EXPECT_FALSE(error_of([&] { decode_to_rgb(lit("GIF89a")); }).empty());
  EXPECT_FALSE(error_of([&] { decode_to_rgb(lit("P6\n")); }).empty());
  EXPECT_FALSE(error_of([&] { decode_to_rgb(lit("hello")); }).empty());
}

// TurboJPEG 2.1 leaves a handle unusable after some header errors; the next good image on the
// same thread must still decode (it failed with "Bogus DQT index 15" before handles were reset).
TEST(ImageDecode, GoodImageDecodesAfterEveryKindOfFailure) {
  SLIP_REQUIRE_SHARED();
  const ByteVector good = load(imagenet(kTiny));
  const RgbImage expected = decode_jpeg_rgb(good);
  for (const auto& entry : fs::directory_iterator(corpus() / "bad")) {
    const ByteVector b = load(entry.path());
    EXPECT_THROW(decode_jpeg_rgb(b), Error);
    EXPECT_EQ(decode_jpeg_rgb(good).pixels, expected.pixels) << entry.path();
    EXPECT_THROW(decode_to_rgb(b), Error);
    EXPECT_EQ(decode_to_rgb(good).pixels, expected.pixels) << entry.path();
    (void)jpeg_decodes_to_rgb(b);
    EXPECT_TRUE(jpeg_decodes_to_rgb(good)) << entry.path();
  }
}

// Random damage to real JPEG and PNG files: the parsers and decoders never crash, and a
// decode either throws slip::Error or returns a consistent image.
TEST(ImageDecode, SurvivesMutatedInputs) {
  SLIP_REQUIRE_SHARED();
  std::mt19937 rng(42);
  const std::vector<ByteVector> seeds = {load(imagenet(kTiny)), load(imagenet(kExif)), load(imagenet(kCmyk[2])), load(imagenet(kPng[5])),
                                         load(imagenet(kGrayProgressive))};
  int decoded = 0, failed = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    ByteVector b = seeds[iter % seeds.size()];
    const size_t span = std::min<size_t>(b.size(), 4096);  // headers live near the start
    const int edits = 1 + int(rng() % 8);
    for (int e = 0; e < edits; ++e) b[rng() % span] = std::byte(rng() & 0xFF);
    if (iter % 3 == 0) b.resize(rng() % b.size());
    JpegHeader h;
    (void)parse_jpeg_header(b, h);
    (void)probe_image_size(b);
    (void)jpeg_decodes_to_rgb(b);
    try {
      const RgbImage img = decode_to_rgb(b);
      EXPECT_EQ(img.pixels.size(), size_t{img.width} * img.height * 3);
      ++decoded;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::bad_input);
      ++failed;
    }
  }
  EXPECT_GT(failed, 0);
  std::printf("[ MUTATED  ] %d decoded, %d rejected\n", decoded, failed);
}

// ---- encoding ----------------------------------------------------------------------------

TEST(ImageEncode, RoundTripPsnrAbove40dB) {
  SLIP_REQUIRE_SHARED();
  for (const char* rel : {kBaseline, kExif}) {
    const RgbImage src = decode_to_rgb(load(imagenet(rel)));
    const ByteVector jpeg = encode_rgb_jpeg(src, 100);
    const JpegHeader h = header_of(jpeg);
    EXPECT_EQ(h.width, src.width);
    EXPECT_EQ(h.height, src.height);
    EXPECT_EQ(h.sof_marker, 0xC0);  // baseline
    EXPECT_EQ(h.components, 3);
    // 4:4:4 as TurboJPEG itself reads it.
    std::unique_ptr<void, decltype(&tjDestroy)> tj(tjInitDecompress(), &tjDestroy);
    int w = 0, hh = 0, subsamp = -1, cs = -1;
    ASSERT_EQ(tjDecompressHeader3(tj.get(), reinterpret_cast<const unsigned char*>(jpeg.data()), jpeg.size(), &w, &hh, &subsamp, &cs), 0);
    EXPECT_EQ(subsamp, TJSAMP_444);
    EXPECT_EQ(cs, TJCS_YCbCr);

    const RgbImage back = decode_jpeg_rgb(jpeg);
    ASSERT_EQ(back.pixels.size(), src.pixels.size());
    const double db = psnr(src.pixels, back.pixels);
    std::printf("[ PSNR     ] %s q100 4:4:4: %.2f dB, %zu bytes\n", rel, db, jpeg.size());
    EXPECT_GT(db, 40.0);

    const double db75 = psnr(src.pixels, decode_jpeg_rgb(encode_rgb_jpeg(src, 75)).pixels);
    EXPECT_LT(db75, db);  // the quality argument is honoured
  }
  // A transcoded PNG-as-.JPEG keeps its size.
  const RgbImage png = decode_to_rgb(load(imagenet(kPng[4])));
  const JpegHeader h = header_of(encode_rgb_jpeg(png));
  EXPECT_EQ(h.width, 437u);
  EXPECT_EQ(h.height, 546u);
}

TEST(ImageEncode, RejectsInvalidImages) {
  EXPECT_THROW(encode_rgb_jpeg(RgbImage{}), Error);
  EXPECT_THROW(encode_rgb_jpeg(RgbImage{2, 2, std::vector<uint8_t>(11)}), Error);
  EXPECT_THROW(encode_rgb_jpeg(RgbImage{70000, 1, std::vector<uint8_t>(210000)}), Error);
  EXPECT_THROW(encode_rgb_jpeg(RgbImage{1, 1, {1, 2, 3}}, 0), Error);
  EXPECT_THROW(encode_rgb_jpeg(RgbImage{1, 1, {1, 2, 3}}, 101), Error);
  const RgbImage one = decode_jpeg_rgb(encode_rgb_jpeg(RgbImage{1, 1, {200, 100, 50}}));
  ASSERT_EQ(one.pixels.size(), 3u);
  EXPECT_NEAR(one.pixels[0], 200, 2);
  EXPECT_NEAR(one.pixels[1], 100, 2);
  EXPECT_NEAR(one.pixels[2], 50, 2);
}

}  // namespace
}  // namespace slip
