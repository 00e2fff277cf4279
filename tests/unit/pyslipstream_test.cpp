// slip reads the caches the Python slipstream wrote, and writes the same bytes from the same
// source (../shared/fixtures/pyslipstream, with the upstream loader's *.expected.json).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <optional>

#include <nlohmann/json.hpp>

#include "slip/cache.hpp"
#include "slip/convert.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/merge.hpp"
#include "slip/verify.hpp"
#include "format/manifest_io.hpp"
#include "util/file_io.hpp"
#include "test_support.hpp"

namespace slip {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path fixture(const std::string& name) { return test::shared_dir() / "fixtures/pyslipstream" / name; }

std::string hex(std::span<const std::byte> b) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (std::byte x : b) {
    s += k[std::to_integer<int>(x) >> 4];
    s += k[std::to_integer<int>(x) & 15];
  }
  return s;
}

class PyFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(PyFixture, ReadsEverySampleAsTheUpstreamLoader) {
  SLIP_REQUIRE_SHARED();
  const json expected = json::parse(test::read_file(fixture(GetParam() + ".expected.json")));
  const Cache cache = Cache::open(fixture(GetParam()));
  ASSERT_EQ(cache.size(), expected["num_samples"].get<uint64_t>());
  std::vector<std::string> order;
  for (const auto& f : cache.fields()) order.push_back(f.name);
  EXPECT_EQ(order, expected["field_order"].get<std::vector<std::string>>());
  const CacheField& image = cache.field("image");
  EXPECT_EQ(image.max_size, expected["fields"]["image"]["max_size"].get<uint64_t>());
  EXPECT_EQ(image.image_format, expected["fields"]["image"]["image_format"].get<std::string>());
  EXPECT_EQ(cache.field("label").dtype, "<i8");
  const size_t fi = *cache.field_index("image"), li = *cache.field_index("label"), ii = *cache.field_index("index"),
               pi = *cache.field_index("path");
  for (const auto& s : expected["samples"]) {
    const uint64_t id = s["sample_id"];
    const auto& img = s["fields"]["image"];
    const auto payload = cache.payload(fi, id);
    const MetaRecord r = cache.record(fi, id);
    EXPECT_EQ(sha256_hex(payload), img["sha256"].get<std::string>()) << id;
    EXPECT_EQ(payload.size(), img["length"].get<uint64_t>()) << id;
    EXPECT_EQ(r.height, img["height"].get<uint32_t>()) << id;
    EXPECT_EQ(r.width, img["width"].get<uint32_t>()) << id;
    EXPECT_EQ(r.data_ptr, img["offset"].get<uint64_t>()) << id;
    EXPECT_EQ(hex(payload.first(4)), img["head_hex"].get<std::string>()) << id;
    EXPECT_EQ(hex(payload.last(4)), img["tail_hex"].get<std::string>()) << id;
    EXPECT_EQ(cache.int_value(li, id), s["fields"]["label"].get<int64_t>()) << id;
    EXPECT_EQ(cache.int_value(ii, id), s["fields"]["index"].get<int64_t>()) << id;
    EXPECT_EQ(cache.string(pi, id), s["fields"]["path"].get<std::string>()) << id;
  }
}

TEST_P(PyFixture, VerifiesCleanAndSaysChecksumsAreAbsent) {
  SLIP_REQUIRE_SHARED();
  const VerifyReport r = verify_cache(fixture(GetParam()));
  for (const auto& i : r.issues) ADD_FAILURE() << i.file << ": " << i.message;
  EXPECT_TRUE(r.ok());
  EXPECT_FALSE(r.checksums_present);
  EXPECT_FALSE(r.slip_written);
  EXPECT_EQ(r.payloads_checked, 24u);
  bool noted = false;
  for (const auto& n : r.notes) noted |= n.find("checksums absent") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST_P(PyFixture, ManifestTextIsWhatOurSerialiserWrites) {
  SLIP_REQUIRE_SHARED();
  // slip writes manifests with nlohmann's dump(2, ' ', ensure_ascii); upstream with Python's
  // json.dump(indent=2). Same text for the same object:
  const std::string text = test::read_file(fixture(GetParam()) / "manifest.json");
  EXPECT_EQ(nlohmann::ordered_json::parse(text).dump(2, ' ', true), text);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PyFixture, ::testing::Values("slipcache-3131b662", "slipcache-3131b662-yuv420"));

// The fixture's source ImageFolder rebuilt under `root` from the JPEG cache (its payloads are
// the source files verbatim, `path` gives their names), converted by slip into root/out.
ConvertResult convert_fixture_source(const fs::path& root, std::optional<ShardSpec> shard = std::nullopt) {
  const Cache py = Cache::open(fixture("slipcache-3131b662"));
  const size_t fi = *py.field_index("image"), pi = *py.field_index("path");
  for (uint64_t i = 0; i < py.size(); ++i) {
    const fs::path p = root / "src" / std::string(py.string(pi, i));
    if (fs::exists(p)) continue;  // (a second part of the same source)
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(py.payload(fi, i).data()), static_cast<std::streamsize>(py.payload(fi, i).size()));
  }
  auto source = open_source((root / "src/slipfixture_src").string());
  ConvertOptions options;
  options.output_dir = root / "out";
  options.threads = 2;
  options.shard = shard;
  return convert(*source, options);
}

// Convert the rebuilt source with slip and compare every storage file byte for byte with what
// the Python writer produced.
TEST(PyFixtureRoundTrip, SlipWritesTheSameStorageFilesAsPython) {
  SLIP_REQUIRE_SHARED();
  const fs::path fx = fixture("slipcache-3131b662");
  test::TempDir tmp;
  const ConvertResult r = convert_fixture_source(tmp.path());
  ASSERT_EQ(r.written, 24u);
  EXPECT_EQ(r.transcoded, 0u);
  for (const char* name : {"image.bin", "image.meta.npy", "label.npy", "index.npy", "path.bin", "path.offsets.npy"})
    EXPECT_TRUE(test::read_file(r.cache_path / name) == test::read_file(fx / name)) << name << " differs";
  const json mine = json::parse(test::read_file(r.cache_path / "manifest.json"));
  const json theirs = json::parse(test::read_file(fx / "manifest.json"));
  for (const char* key : {"version", "num_samples", "fields", "file_sizes"}) EXPECT_EQ(mine[key], theirs[key]) << key;
  // And the upstream part of the manifest comes first, in upstream's key order.
  const std::string text = test::read_file(r.cache_path / "manifest.json");
  const std::string theirs_text = test::read_file(fx / "manifest.json");
  EXPECT_EQ(text.substr(0, theirs_text.size() - 2), theirs_text.substr(0, theirs_text.size() - 2));
  const VerifyReport v = verify_cache(r.cache_path);
  EXPECT_TRUE(v.ok());
  EXPECT_TRUE(v.checksums_present);
  // payloads + manifest + 6 files: the 5 storage files other than image.bin (covered payload by
  // payload, docs/FORMAT.md#checksums) + image.xxh3.npy
  EXPECT_EQ(v.checksums_checked, 24u + 1u + 6u);
  const json listed = mine["slip"]["checksums"]["files"];
  EXPECT_FALSE(listed.contains("image.bin"));
  for (const char* name : {"image.meta.npy", "image.xxh3.npy", "label.npy", "index.npy", "path.bin", "path.offsets.npy"})
    EXPECT_TRUE(listed.contains(name)) << name;
}

bool has_issue(const VerifyReport& report, std::string_view file, std::string_view text) {
  for (const VerifyIssue& i : report.issues)
    if (i.file == file && i.message.find(text) != std::string::npos) return true;
  return false;
}

// A payload .bin is not in slip.checksums.files: its records must tile it, so bytes no payload
// covers are found even when the manifest (sizes and checksum) was made to agree with them.
TEST(PyFixtureRoundTrip, BytesNoPayloadCoversAreFoundWithoutAWholeFileChecksum) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  const fs::path dir = convert_fixture_source(tmp.path()).cache_path;
  ASSERT_TRUE(verify_cache(dir).ok());
  std::ofstream(dir / "image.bin", std::ios::binary | std::ios::app) << "trailing";
  nlohmann::ordered_json manifest = detail::read_manifest(dir);
  manifest["file_sizes"]["image.bin"] = fs::file_size(dir / "image.bin");
  detail::write_manifest(dir, manifest);
  const VerifyReport report = verify_cache(dir);
  EXPECT_FALSE(report.ok());
  EXPECT_TRUE(has_issue(report, "image.bin", "but the records cover")) << "trailing bytes not found";
}

// Points sample `record`'s image payload one byte further in the cache (or part) at `dir`;
// returns the rewritten image.meta.npy's checksum, for a manifest made to agree.
std::string move_record_by_one_byte(const fs::path& dir, size_t record) {
  const fs::path meta = dir / "image.meta.npy";
  std::string bytes = test::read_file(meta);
  const uint64_t at = bytes.size() - Cache::open(dir).size() * sizeof(MetaRecord) + record * sizeof(MetaRecord);
  uint64_t ptr = 0;
  std::memcpy(&ptr, bytes.data() + at, 8);
  ptr += 1;
  std::memcpy(bytes.data() + at, &ptr, 8);
  std::ofstream(meta, std::ios::binary | std::ios::trunc) << bytes;
  return hex64(detail::xxh3_64_of_file(meta).second);
}

// A record moved off its place (a gap, payload 5 read from the wrong bytes), with the records'
// own checksum made to agree: the contiguity rule and the payload checksum both report it.
TEST(PyFixtureRoundTrip, ARecordOutOfPlaceIsFoundWithoutAWholeFileChecksum) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  const fs::path dir = convert_fixture_source(tmp.path()).cache_path;
  nlohmann::ordered_json manifest = detail::read_manifest(dir);
  manifest["slip"]["checksums"]["files"]["image.meta.npy"] = move_record_by_one_byte(dir, 5);
  detail::write_manifest(dir, manifest);
  const VerifyReport report = verify_cache(dir);
  EXPECT_FALSE(report.ok());
  EXPECT_TRUE(has_issue(report, "image.meta.npy", "must be contiguous")) << "the gap is not reported";
  EXPECT_TRUE(has_issue(report, "image.bin", "payload checksum mismatch")) << "the moved payload is not reported";
}

// merge checks a part's payload .bin the same way (no whole-file checksum to lean on): a record
// moved off its place and bytes no payload covers are refused, naming the part's file, even
// when the part's manifest (sizes, checksums) was made to agree with them.
TEST(PyFixtureRoundTrip, MergeRefusesAPartWhosePayloadsDoNotTileItsBin) {
  SLIP_REQUIRE_SHARED();
  for (const bool append : {false, true}) {
    test::TempDir tmp;
    convert_fixture_source(tmp.path(), ShardSpec{0, 2});
    const fs::path part = convert_fixture_source(tmp.path(), ShardSpec{1, 2}).cache_path;
    nlohmann::ordered_json manifest = detail::read_manifest(part);
    if (append) {
      std::ofstream(part / "image.bin", std::ios::binary | std::ios::app) << "trailing";
      manifest["file_sizes"]["image.bin"] = fs::file_size(part / "image.bin");
    } else {
      manifest["slip"]["checksums"]["files"]["image.meta.npy"] = move_record_by_one_byte(part, 3);
    }
    detail::write_manifest(part, manifest);
    MergeOptions options;
    options.output_dir = tmp.path() / "merged";
    try {
      merge_parts({part.parent_path()}, options);
      ADD_FAILURE() << (append ? "trailing bytes" : "a moved record") << " merged";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::bad_input);
      const std::string what = e.what();
      EXPECT_NE(what.find((part / "image.bin").string()), std::string::npos) << what;
      EXPECT_NE(what.find(append ? "payloads cover" : "out of place"), std::string::npos) << what;
    }
    EXPECT_FALSE(fs::exists(options.output_dir) && !fs::is_empty(options.output_dir)) << "a refused merge left files";
  }
}

// Caches of earlier builds list their payload .bin in slip.checksums.files as well: verify still
// checks it whole (docs/FORMAT.md#checksums). Built here by adding the entry to a fresh cache.
TEST(PyFixtureRoundTrip, ACacheThatListsItsPayloadBinIsCheckedWholeAsBefore) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  const fs::path dir = convert_fixture_source(tmp.path()).cache_path;
  nlohmann::ordered_json manifest = detail::read_manifest(dir);
  const auto [size, sum] = detail::xxh3_64_of_file(dir / "image.bin");
  manifest["slip"]["checksums"]["files"]["image.bin"] = hex64(sum);
  detail::write_manifest(dir, manifest);
  const VerifyReport clean = verify_cache(dir);
  EXPECT_TRUE(clean.ok());
  EXPECT_EQ(clean.checksums_checked, 24u + 1u + 7u);  // and image.bin, whole
  // One byte changed inside sample 3: both the payload's and the file's checksum disagree.
  const MetaRecord r = Cache::open(dir).record(0, 3);
  {
    std::fstream f(dir / "image.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(r.data_ptr + r.data_size / 2));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(r.data_ptr + r.data_size / 2));
    f.put(static_cast<char>(c ^ 0x10));
  }
  const VerifyReport bad = verify_cache(dir);
  EXPECT_FALSE(bad.ok());
  bool payload = false, whole = false;
  for (const VerifyIssue& i : bad.issues) {
    payload |= i.message.find("payload checksum mismatch") != std::string::npos && i.sample == std::optional<uint64_t>(3);
    whole |= i.message.find("file checksum mismatch") != std::string::npos && i.file == "image.bin";
  }
  EXPECT_TRUE(payload) << "the changed payload is not named";
  EXPECT_TRUE(whole) << "the listed whole-file checksum is not checked";
}

}  // namespace
}  // namespace slip

namespace slip {
namespace {

// Only slip::Error crosses the library boundary: a field number the cache does not have is a
// usage error, not std::out_of_range.
TEST(CacheBoundary, BadFieldNumberIsSlipErrorNotOutOfRange) {
  SLIP_REQUIRE_SHARED();
  const Cache cache = Cache::open(test::shared_dir() / "fixtures/pyslipstream/slipcache-3131b662");
  const size_t missing = cache.fields().size() + 3;
  for (const auto& call : std::vector<std::function<void()>>{
           [&] { (void)cache.record(missing, 0); }, [&] { (void)cache.payload(missing, 0); }, [&] { (void)cache.string(missing, 0); },
           [&] { (void)cache.int_value(missing, 0); }, [&] { (void)cache.array_bytes(missing, 0); }}) {
    try {
      call();
      ADD_FAILURE() << "no throw";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::usage);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "a non-slip exception crossed the boundary: " << e.what();
    }
  }
}

}  // namespace
}  // namespace slip
