// FFCV files written by FFCV's own writer (../shared/fixtures/ffcv) convert field for field to
// what FFCV's own reader reports in *.expected.json; damaged copies give clear errors.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "slip/cache.hpp"
#include "slip/convert.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/image.hpp"
#include "slip/verify.hpp"
#include "test_support.hpp"

namespace slip {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path fixtures() { return test::shared_dir() / "fixtures/ffcv"; }

fs::path fixture_file(const std::string& name, const fs::path& tmp) {
  const fs::path plain = fixtures() / (name + ".beton");
  if (fs::exists(plain)) return plain;
  const fs::path out = tmp / (name + ".beton");  // the gzip-compressed real-page-size fixture
  const auto r = test::run("gzip -dc '" + (fixtures() / (name + ".beton.gz")).string() + "' > '" + out.string() + "'");
  EXPECT_EQ(r.status, 0);
  return out;
}

std::string hex_bits(double d) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(std::bit_cast<uint64_t>(d)));
  return buf;
}

class FfcvFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(FfcvFixture, ConvertsToWhatFfcvReads) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  const json expected = json::parse(test::read_file(fixtures() / (GetParam() + ".expected.json")));
  const fs::path beton = fixture_file(GetParam(), tmp.path());
  const std::string file_bytes = test::read_file(beton);
  auto source = open_source(beton.string());
  ConvertOptions opt;
  opt.output_dir = tmp.path() / "out";
  const ConvertResult r = convert(*source, opt);
  const Cache cache = Cache::open(r.cache_path);
  ASSERT_EQ(cache.size(), expected["num_samples"].get<uint64_t>());
  EXPECT_EQ(cache.provenance().source_kind, "ffcv");
  std::vector<std::string> names;
  for (const auto& f : expected["fields"]) names.push_back(f["name"]);
  ASSERT_EQ(cache.fields().size(), names.size());
  uint64_t raw_images = 0;
  for (uint64_t s = 0; s < cache.size(); ++s) {
    const json& sample = expected["samples"][s];
    for (const auto& fdesc : expected["fields"]) {
      const std::string name = fdesc["name"];
      const int type = fdesc["type_id"];
      const json& want = sample[name];
      const size_t fi = *cache.field_index(name);
      SCOPED_TRACE(GetParam() + " sample " + std::to_string(s) + " field " + name);
      switch (type) {
        case 1:
          EXPECT_EQ(cache.int_value(fi, s), want["value"].get<int64_t>());
          break;
        case 0:
          EXPECT_EQ(hex_bits(cache.float_value(fi, s)), want["bits_hex"].get<std::string>());
          break;
        case 2: {
          const MetaRecord rec = cache.record(fi, s);
          EXPECT_EQ(rec.width, want["width"].get<uint32_t>());
          EXPECT_EQ(rec.height, want["height"].get<uint32_t>());
          const auto payload = cache.payload(fi, s);
          if (want["mode"] == "jpg") {
            EXPECT_EQ(sha256_hex(payload), want["payload_sha256"].get<std::string>());
            EXPECT_EQ(payload.size(), want["payload_length"].get<uint64_t>());
          } else {
            // Raw pixels were encoded as RGB JPEG q100 4:4:4: the decode is close to the pixels
            // FFCV stored (read here straight from the .beton at the expected pointer).
            const uint64_t ptr = want["data_ptr"], len = want["payload_length"];
            EXPECT_EQ(sha256_hex(std::string_view(file_bytes).substr(ptr, len)), want["payload_sha256"].get<std::string>());
            const RgbImage img = decode_jpeg_rgb(payload);
            ASSERT_EQ(img.pixels.size(), len);
            double se = 0;
            for (uint64_t k = 0; k < len; ++k) {
              const double d = double(img.pixels[k]) - double(static_cast<uint8_t>(file_bytes[ptr + k]));
              se += d * d;
            }
            const double psnr = se == 0 ? 99 : 10 * std::log10(255.0 * 255.0 / (se / double(len)));
            EXPECT_GT(psnr, 35.0) << "raw pixels re-encoded too lossily";
            ++raw_images;
          }
          break;
        }
        case 3:
          EXPECT_EQ(sha256_hex(cache.payload(fi, s)), want["sha256"].get<std::string>());
          break;
        case 5:
          EXPECT_EQ(cache.string(fi, s), want["text"].get<std::string>());
          break;
        case 4:
        case 6: {
          EXPECT_EQ(cache.field(name).dtype, want["dtype"].get<std::string>());
          EXPECT_EQ(sha256_hex(cache.array_bytes(fi, s)), want["sha256"].get<std::string>());
          std::vector<uint64_t> shape{cache.size()};
          for (const auto& d : want["shape"]) shape.push_back(d);
          EXPECT_EQ(cache.field(name).shape, shape);
          break;
        }
      }
    }
  }
  EXPECT_EQ(r.transcoded, raw_images) << "every raw image is in the ledger";
  const VerifyReport v = verify_cache(r.cache_path);
  for (const auto& i : v.issues) ADD_FAILURE() << i.file << ": " << i.message;
}

INSTANTIATE_TEST_SUITE_P(All, FfcvFixture,
                         ::testing::Values("one_sample", "imagenet_like", "imagenet_like_default_pages", "small_pages", "rgb_jpg",
                                           "rgb_raw", "rgb_smart", "rgb_proportion", "all_fields", "bytes_edge"));

Errc open_and_read(const fs::path& file, std::string* message = nullptr, std::optional<uint64_t>* offset = nullptr) {
  try {
    auto src = open_source(file.string());
    Sample s;
    while (src->next(s)) {
    }
    return static_cast<Errc>(0);
  } catch (const Error& e) {
    if (message) *message = e.message();
    if (offset) *offset = e.offset();
    return e.code();
  }
}

TEST(FfcvErrors, UnfinishedWriterAndCustomTypes) {
  SLIP_REQUIRE_SHARED();
  std::string msg;
  EXPECT_EQ(open_and_read(fixtures() / "unfinished_writer.beton", &msg), Errc::bad_input);
  EXPECT_NE(msg.find("never finished"), std::string::npos) << msg;
  EXPECT_EQ(open_and_read(fixtures() / "custom_type.beton", &msg), Errc::bad_input);
  EXPECT_NE(msg.find("\"custom\""), std::string::npos) << msg;
  // With --raw-field the custom field's 8 metadata bytes come out verbatim: the ints 0..2 of
  // the expected file, little-endian.
  SourceOptions o;
  o.set("raw-field", "custom");
  auto src = open_source((fixtures() / "custom_type.beton").string(), o);
  const json expected = json::parse(test::read_file(fixtures() / "custom_type.expected.json"));
  Sample s;
  for (uint64_t i = 0; src->next(s); ++i) {
    int64_t v;
    ASSERT_EQ(s.values[0].bytes.size(), 8u);
    std::memcpy(&v, s.values[0].bytes.data(), 8);
    EXPECT_EQ(v, expected["samples"][i]["custom"]["value"].get<int64_t>());
    EXPECT_EQ(s.values[1].int_value, expected["samples"][i]["plain"]["value"].get<int64_t>());
  }
}

TEST(FfcvErrors, TruncatedCopiesAreRejectedNeverCrash) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  const std::string bytes = test::read_file(fixtures() / "small_pages.beton");
  size_t rejected = 0, total = 0;
  for (size_t cut = 0; cut < bytes.size(); cut += 97) {
    const fs::path f = tmp.path() / "cut.beton";
    std::ofstream(f, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(cut));
    ++total;
    std::string msg;
    std::optional<uint64_t> off;
    if (open_and_read(f, &msg, &off) == Errc::bad_input && off)
      ++rejected;
    else
      ADD_FAILURE() << "cut at " << cut << " accepted or unclear: " << msg;
  }
  EXPECT_EQ(rejected, total);
}

TEST(FfcvErrors, LyingHeadersAndPointers) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  const std::string good = test::read_file(fixtures() / "all_fields.beton");
  const json expected = json::parse(test::read_file(fixtures() / "all_fields.expected.json"));
  auto patched = [&](size_t at, const void* v, size_t n) {
    std::string b = good;
    std::memcpy(b.data() + at, v, n);
    const fs::path f = tmp.path() / "p.beton";
    std::ofstream(f, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
    return f;
  };
  std::string msg;
  const uint64_t huge = 1ull << 60;
  EXPECT_EQ(open_and_read(patched(8, &huge, 8), &msg), Errc::bad_input);
  EXPECT_NE(msg.find("does not fit"), std::string::npos) << msg;
  const uint32_t page = 3000;
  EXPECT_EQ(open_and_read(patched(4, &page, 4), &msg), Errc::bad_input);
  const uint64_t past = good.size() + 24;
  EXPECT_EQ(open_and_read(patched(16, &past, 8), &msg), Errc::bad_input);
  const uint8_t unknown = 9;
  EXPECT_EQ(open_and_read(patched(24, &unknown, 1), &msg), Errc::bad_input);
  EXPECT_NE(msg.find("type id 9"), std::string::npos) << msg;
  // A blob pointer far outside the file, in sample 3's metadata row.
  const uint64_t row = expected["layout"]["metadata_offset"].get<uint64_t>() + 3 * expected["layout"]["metadata_row_size"].get<uint64_t>();
  const uint64_t outside = 1ull << 40;
  std::optional<uint64_t> off;
  EXPECT_EQ(open_and_read(patched(row + 21, &outside, 8), &msg, &off), Errc::bad_input);
  EXPECT_NE(msg.find("outside the data region"), std::string::npos) << msg;
  // A JSON payload whose NUL terminator was overwritten.
  const json& meta = expected["samples"][2]["meta"];
  const uint64_t end = meta["ptr"].get<uint64_t>() + meta["size"].get<uint64_t>() - 1;
  const char x = 'x';
  EXPECT_EQ(open_and_read(patched(end, &x, 1), &msg), Errc::bad_input);
  EXPECT_NE(msg.find("NUL"), std::string::npos) << msg;
}

// Sizes are checked before anything is read or sized by them: a payload over
// --max-sample-bytes makes its sample bad (never read), and an allocation table with more
// entries than samples x fields (a sparse tail of zeros: before, each one was read) is refused
// before it is read.
TEST(FfcvErrors, SizesAreBoundedBeforeReading) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  SourceOptions o;
  o.set("max-sample-bytes", "1");
  auto src = open_source((fixtures() / "all_fields.beton").string(), o);
  Sample s;
  uint64_t bad = 0;
  while (src->next(s))
    if (s.problem) {
      ++bad;
      EXPECT_NE(s.problem->find("exceeds --max-sample-bytes 1"), std::string::npos) << *s.problem;
    }
  EXPECT_GT(bad, 0u);

  const std::string good = test::read_file(fixtures() / "all_fields.beton");
  uint16_t fields = 0;
  uint64_t samples = 0;
  std::memcpy(&fields, good.data() + 2, 2);
  std::memcpy(&samples, good.data() + 8, 8);
  const fs::path f = tmp.path() / "padded.beton";
  std::ofstream(f, std::ios::binary).write(good.data(), static_cast<std::streamsize>(good.size()));
  fs::resize_file(f, good.size() + 24 * (samples * fields + 1000000));  // zero entries, sparse
  std::string msg;
  EXPECT_EQ(open_and_read(f, &msg), Errc::bad_input);
  EXPECT_NE(msg.find("allocation table of"), std::string::npos) << msg;
}

}  // namespace
}  // namespace slip
