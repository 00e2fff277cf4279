// LitData datasets written by LitData's own writer (../shared/fixtures/litdata) convert to the
// values LitData's own reader reports (*.expected.json); damaged copies give clear errors.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>

#include "slip/cache.hpp"
#include "slip/convert.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/verify.hpp"
#include "test_support.hpp"

namespace slip {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path litdata_fixtures() { return test::shared_dir() / "fixtures/litdata"; }

class LitDataFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(LitDataFixture, ConvertsToWhatLitDataReads) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  const json expected = json::parse(test::read_file(litdata_fixtures() / (GetParam() + ".expected.json")));
  auto source = open_source((litdata_fixtures() / GetParam()).string());
  ConvertOptions opt;
  opt.output_dir = tmp.path();
  const ConvertResult r = convert(*source, opt);
  const Cache cache = Cache::open(r.cache_path);
  ASSERT_EQ(cache.size(), expected["num_samples"].get<uint64_t>());
  EXPECT_EQ(cache.provenance().source_kind, "litdata");
  std::vector<std::string> names;
  for (const auto& f : expected["fields"]) names.push_back(f["name"]);
  std::vector<std::string> mine;
  for (const auto& f : cache.fields()) mine.push_back(f.name);
  EXPECT_EQ(mine, names);
  uint64_t checked = 0;
  for (uint64_t s = 0; s < cache.size(); ++s) {
    const json& sample = expected["samples"][s];
    ASSERT_EQ(sample["index"].get<uint64_t>(), s);
    for (const auto& fdesc : expected["fields"]) {
      const std::string name = fdesc["name"], format = fdesc["format"];
      const json& want = sample["fields"][name];
      const size_t fi = *cache.field_index(name);
      const CacheField& f = cache.fields()[fi];
      SCOPED_TRACE(GetParam() + " sample " + std::to_string(s) + " field " + name + " (" + format + ")");
      switch (f.type) {
        case FieldType::int64:
          if (format == "bool")
            EXPECT_EQ(cache.int_value(fi, s), want["value"].get<bool>() ? 1 : 0);
          else
            EXPECT_EQ(cache.int_value(fi, s), want["value"].get<int64_t>());
          break;
        case FieldType::float64: {
          char bits[32];
          std::snprintf(bits, sizeof bits, "0x%016llx", static_cast<unsigned long long>(std::bit_cast<uint64_t>(cache.float_value(fi, s))));
          EXPECT_EQ(bits, want["bits"].get<std::string>());
          break;
        }
        case FieldType::str:
          EXPECT_EQ(cache.string(fi, s), want["value"].get<std::string>());
          break;
        case FieldType::ndarray:
          EXPECT_EQ(sha256_hex(cache.array_bytes(fi, s)), want["sha256"].get<std::string>());
          break;
        case FieldType::bytes:
          EXPECT_EQ(sha256_hex(cache.payload(fi, s)), want["raw"]["sha256"].get<std::string>());
          break;
        case FieldType::image: {
          const MetaRecord rec = cache.record(fi, s);
          if (format == "jpeg") {
            EXPECT_EQ(sha256_hex(cache.payload(fi, s)), want["raw"]["sha256"].get<std::string>());
            EXPECT_EQ(rec.width, want["jpeg"]["width"].get<uint32_t>());
            EXPECT_EQ(rec.height, want["jpeg"]["height"].get<uint32_t>());
          } else if (format == "pil") {
            EXPECT_EQ(rec.width, want["width"].get<uint32_t>());
            EXPECT_EQ(rec.height, want["height"].get<uint32_t>());
          } else {  // image:<ext>: an encoded file, transcoded when not a JPEG
            EXPECT_EQ(rec.width, want["image"]["width"].get<uint32_t>());
            EXPECT_EQ(rec.height, want["image"]["height"].get<uint32_t>());
          }
          break;
        }
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, cache.size() * names.size());
  const VerifyReport v = verify_cache(r.cache_path);
  for (const auto& i : v.issues) ADD_FAILURE() << i.file << ": " << i.message;
}

INSTANTIATE_TEST_SUITE_P(All, LitDataFixture, ::testing::Values("imagenet_like", "tuple_samples", "all_types", "pil_images", "zstd"));

Errc read_all(const fs::path& dir, std::string* msg = nullptr) {
  try {
    auto src = open_source(dir.string());
    Sample s;
    while (src->next(s)) {
    }
    return static_cast<Errc>(0);
  } catch (const Error& e) {
    if (msg) *msg = e.describe();
    return e.code();
  }
}

TEST(LitDataErrors, DamagedDatasets) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  auto copy = [&](const std::string& name) {
    const fs::path d = tmp.path() / name;
    fs::remove_all(d);
    fs::copy(litdata_fixtures() / name, d, fs::copy_options::recursive);
    for (const auto& e : fs::directory_iterator(d)) fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
    return d;
  };
  std::string msg;
  fs::path d = copy("imagenet_like");
  fs::remove(d / "chunk-1-0.bin");
  EXPECT_EQ(read_all(d, &msg), Errc::bad_input);
  EXPECT_NE(msg.find("chunk-1-0.bin: chunk file listed in index.json is missing"), std::string::npos) << msg;
  d = copy("imagenet_like");
  fs::resize_file(d / "chunk-0-1.bin", fs::file_size(d / "chunk-0-1.bin") - 100);
  EXPECT_EQ(read_all(d, &msg), Errc::bad_input);
  EXPECT_NE(msg.find("chunk-0-1.bin: byte"), std::string::npos) << msg;
  // Offsets out of order: swap two offsets of chunk-0-0.
  d = copy("imagenet_like");
  {
    std::string b = test::read_file(d / "chunk-0-0.bin");
    std::swap_ranges(b.begin() + 12, b.begin() + 16, b.begin() + 16);
    std::ofstream(d / "chunk-0-0.bin", std::ios::binary) << b;
  }
  EXPECT_EQ(read_all(d, &msg), Errc::bad_input);
  EXPECT_NE(msg.find("backwards"), std::string::npos) << msg;
  // An item size header that does not add up.
  d = copy("imagenet_like");
  {
    std::string b = test::read_file(d / "chunk-0-0.bin");
    b[40] = static_cast<char>(b[40] + 1);  // item 0's first payload size
    std::ofstream(d / "chunk-0-0.bin", std::ios::binary) << b;
  }
  EXPECT_EQ(read_all(d, &msg), Errc::bad_input);
  EXPECT_NE(msg.find("item 0: payload sizes add up"), std::string::npos) << msg;
  // An index that lies about counts, a compressed chunk cut short, encryption, TokensLoader.
  d = copy("imagenet_like");
  {
    json idx = json::parse(test::read_file(d / "index.json"));
    idx["chunks"][2]["chunk_size"] = 9999;
    std::ofstream(d / "index.json") << idx.dump();
  }
  EXPECT_EQ(read_all(d, &msg), Errc::bad_input);
  // Refused from the index when 9999 offsets do not fit chunk_bytes, else from the chunk's count.
  EXPECT_TRUE(msg.find("index.json says 9999") != std::string::npos || msg.find("cannot hold its 9999 items") != std::string::npos) << msg;
  d = copy("zstd");
  fs::resize_file(d / "chunk-0-1.zstd.bin", fs::file_size(d / "chunk-0-1.zstd.bin") / 2);
  EXPECT_EQ(read_all(d, &msg), Errc::bad_input);
  // A zstd chunk whose index entry claims 3 GiB: its few items (at most --max-sample-bytes
  // each) cannot fill it, refused from index.json before the chunk is opened; one byte more
  // than it holds is refused from the frame header, before any buffer is allocated.
  d = copy("zstd");
  json zstd_index = json::parse(test::read_file(d / "index.json"));
  const uint64_t real_bytes = zstd_index["chunks"][0]["chunk_bytes"].get<uint64_t>();
  zstd_index["chunks"][0]["chunk_bytes"] = uint64_t{3} << 30;
  std::ofstream(d / "index.json") << zstd_index.dump();
  EXPECT_EQ(read_all(d, &msg), Errc::bad_input);
  EXPECT_NE(msg.find("cannot hold its"), std::string::npos) << msg;
  zstd_index["chunks"][0]["chunk_bytes"] = real_bytes + 1;
  std::ofstream(d / "index.json") << zstd_index.dump();
  EXPECT_EQ(read_all(d, &msg), Errc::bad_input);
  EXPECT_NE(msg.find("the zstd frame holds"), std::string::npos) << msg;
  for (const char* key : {"encryption", "item_loader"}) {
    d = copy("tuple_samples");
    json idx = json::parse(test::read_file(d / "index.json"));
    idx["config"][key] = std::string(key) == "encryption" ? json{{"algorithm", "fernet"}, {"level", "chunk"}} : json("TokensLoader");
    std::ofstream(d / "index.json") << idx.dump();
    EXPECT_EQ(read_all(d, &msg), Errc::bad_input) << key;
    EXPECT_NE(msg.find(std::string(key) == "encryption" ? "encrypted" : "TokensLoader"), std::string::npos) << msg;
  }
  d = copy("tuple_samples");
  {
    json idx = json::parse(test::read_file(d / "index.json"));
    idx["chunks"][0]["filename"] = "../../etc/passwd";
    std::ofstream(d / "index.json") << idx.dump();
  }
  EXPECT_EQ(read_all(d, &msg), Errc::bad_input);
  EXPECT_NE(msg.find("could leave the dataset directory"), std::string::npos) << msg;
}

}  // namespace
}  // namespace slip
