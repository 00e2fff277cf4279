// Corruption and truncation sweeps (the detected fraction must be 100%):
// - every single-byte flip in every metadata file of a cache, and 2,000 flips spread over
//   image.bin, make verify_cache fail and name the file or the sample;
// - a JPEG source truncated at every byte (small file) or every 100 bytes gives bad_input and
//   leaves no cache.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "slip/convert.hpp"
#include "slip/error.hpp"
#include "slip/index.hpp"
#include "slip/verify.hpp"
#include "test_support.hpp"

namespace slip {
namespace {

namespace fs = std::filesystem;

void flip(const fs::path& file, uint64_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x5A));
}

class Sweep : public ::testing::Test {
 protected:
  void SetUp() override {
    auto src = open_source((fs::path(SLIP_SOURCE_DIR) / "examples/sample").string());
    ConvertOptions opt;
    opt.output_dir = tmp_.path();
    cache_ = convert(*src, opt).cache_path;
    const Cache c = Cache::open(cache_);
    write_field_index(c, build_field_index(c, "label"));
    options_.threads = 1;
    options_.max_issues = 4;
    ASSERT_TRUE(verify_cache(cache_, options_).ok());
  }
  test::TempDir tmp_;
  fs::path cache_;
  VerifyOptions options_;
};

TEST_F(Sweep, EverySingleByteFlipInMetadataIsCaught) {
  const char* files[] = {"manifest.json",       "manifest.json.xxh3", "image.meta.npy",   "image.xxh3.npy",       "label.npy",
                         "index.npy",           "path.bin",           "path.offsets.npy", "label.index.keys.npy", "label.index.offsets.npy",
                         "label.index.ids.npy", "label_index.npy"};
  uint64_t total = 0, caught = 0;
  for (const char* name : files) {
    const fs::path file = cache_ / name;
    const uint64_t size = fs::file_size(file);
    uint64_t file_caught = 0;
    for (uint64_t off = 0; off < size; ++off) {
      flip(file, off);
      const VerifyReport r = verify_cache(cache_, options_);
      flip(file, off);  // restore
      ++total;
      if (!r.ok() && !r.issues.empty()) {
        ++caught;
        ++file_caught;
      } else {
        ADD_FAILURE() << name << ": flip at byte " << off << " not detected";
      }
    }
    std::printf("sweep %-24s %6llu positions, %6llu detected\n", name, static_cast<unsigned long long>(size),
                static_cast<unsigned long long>(file_caught));
  }
  std::printf("metadata single-byte flips: %llu/%llu detected (%.2f%%)\n", static_cast<unsigned long long>(caught),
              static_cast<unsigned long long>(total), 100.0 * static_cast<double>(caught) / static_cast<double>(total));
  EXPECT_EQ(caught, total);
  EXPECT_TRUE(verify_cache(cache_, options_).ok());
}

TEST_F(Sweep, PayloadFlipsAreCaughtAndNameTheSample) {
  const Cache c = Cache::open(cache_);
  const size_t fi = *c.field_index("image");
  const fs::path bin = cache_ / "image.bin";
  const uint64_t size = fs::file_size(bin);
  uint64_t caught = 0;
  const uint64_t positions = 2000;
  for (uint64_t k = 0; k < positions; ++k) {
    const uint64_t off = k * (size - 1) / (positions - 1);
    uint64_t sample = 0;
    while (!(c.record(fi, sample).data_ptr <= off && off < c.record(fi, sample).data_ptr + c.record(fi, sample).data_size)) ++sample;
    flip(bin, off);
    const VerifyReport r = verify_cache(cache_, options_);
    flip(bin, off);
    bool named = false;
    for (const auto& i : r.issues) named |= i.sample == sample;
    if (!r.ok() && named)
      ++caught;
    else
      ADD_FAILURE() << "flip at image.bin byte " << off << " (sample " << sample << ") not detected or not named";
  }
  std::printf("image.bin flips: %llu/%llu detected with the sample named\n", static_cast<unsigned long long>(caught),
              static_cast<unsigned long long>(positions));
  EXPECT_EQ(caught, positions);
}

TEST(TruncationSweep, TruncatedJpegSourcesAreBadInputAndLeaveNoCache) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  const fs::path small = test::shared_dir() / "corpus/imagenet_like/n03888605/n03888605_7974.JPEG";  // 3x7
  const fs::path big = test::shared_dir() / "corpus/imagenet_like/n01440764/n01440764_10235.JPEG";
  uint64_t total = 0, caught = 0;
  for (const fs::path& source : {small, big}) {
    const std::string bytes = test::read_file(source);
    const uint64_t step = bytes.size() < 4096 ? 1 : 100;
    for (uint64_t cut = 0; cut < bytes.size(); cut += step) {
      const fs::path root = tmp.path() / "src";
      fs::remove_all(root);
      fs::create_directories(root / "a");
      std::ofstream(root / "a/x.jpg", std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(cut));
      auto src = open_source(root.string());
      ConvertOptions opt;
      opt.output_dir = tmp.path() / "out";
      ++total;
      try {
        convert(*src, opt);
        ADD_FAILURE() << source.filename() << " cut at " << cut << " was accepted";
      } catch (const Error& e) {
        if (e.code() == Errc::bad_input && e.sample() == 0u)
          ++caught;
        else
          ADD_FAILURE() << "cut at " << cut << ": " << e.describe();
      }
      if (fs::exists(opt.output_dir)) {
        EXPECT_TRUE(fs::is_empty(opt.output_dir)) << "cut at " << cut << " left files";
      }
    }
  }
  std::printf("JPEG truncations: %llu/%llu rejected as bad input\n", static_cast<unsigned long long>(caught),
              static_cast<unsigned long long>(total));
  EXPECT_EQ(caught, total);
}

}  // namespace
}  // namespace slip

namespace slip {
namespace {

// Every truncation of a tar shard (every 100 bytes) and of a LitData chunk and index.json
// (every byte under 4 KiB, else every 100) is bad input, never a crash, a hang or a cache.
uint64_t convert_fails(const fs::path& src, const fs::path& out) {
  fs::remove_all(out);
  try {
    auto s = open_source(src.string());
    ConvertOptions opt;
    opt.output_dir = out;
    const auto r = convert(*s, opt);
    std::printf("accepted: %s (%llu samples)\n", src.filename().c_str(), static_cast<unsigned long long>(r.written));
    return 0;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::bad_input) << e.describe();
    EXPECT_TRUE(!fs::exists(out) || fs::is_empty(out));
    return 1;
  }
}

TEST(TruncationSweep, TarShardAndLitDataChunkAndIndex) {
  SLIP_REQUIRE_SHARED();
  SLIP_REQUIRE_PYTHON();
  test::TempDir tmp;
  // A small WebDataset shard made by GNU tar.
  const fs::path stage = tmp.path() / "stage";
  fs::create_directories(stage);
  int k = 0;
  for (const auto& e : fs::directory_iterator(fs::path(SLIP_SOURCE_DIR) / "examples/sample/n02979186")) {
    if (k == 4) break;
    fs::copy_file(e.path(), stage / ("s" + std::to_string(k) + ".jpg"));
    std::ofstream(stage / ("s" + std::to_string(k) + ".cls")) << k;
    ++k;
  }
  ASSERT_EQ(test::run("cd '" + stage.string() + "' && tar -cf ../shard.tar s0.jpg s0.cls s1.jpg s1.cls s2.jpg s2.cls s3.jpg s3.cls").status,
            0);
  const std::string tar = test::read_file(tmp.path() / "shard.tar");
  uint64_t cuts = 0, failed = 0;
  // Cuts before the end of the last member's data (found by Python's tarfile); cuts in the
  // trailing zero padding leave a complete archive.
  const auto end = test::run(test::python() + " -c \"import tarfile; m = tarfile.open('" + (tmp.path() / "shard.tar").string() +
                             "').getmembers()[-1]; print(m.offset_data + m.size)\"");
  ASSERT_EQ(end.status, 0);
  const uint64_t last_data_end = std::stoull(end.out);
  for (uint64_t cut = 0; cut < last_data_end; cut += 100) {
    const fs::path f = tmp.path() / "cut.tar";
    std::ofstream(f, std::ios::binary).write(tar.data(), static_cast<std::streamsize>(cut));
    ++cuts;
    failed += convert_fails(f, tmp.path() / "out");
  }
  std::printf("tar truncations: %llu/%llu rejected\n", static_cast<unsigned long long>(failed), static_cast<unsigned long long>(cuts));
  EXPECT_EQ(failed, cuts);

  // LitData: cut chunk-0-0.bin and index.json of a copy.
  const fs::path fixture = test::shared_dir() / "fixtures/litdata/tuple_samples";
  uint64_t lcuts = 0, lfailed = 0;
  for (const char* file : {"chunk-0-0.bin", "index.json"}) {
    const std::string bytes = test::read_file(fixture / file);
    const uint64_t step = bytes.size() < 4096 ? 1 : 100;
    for (uint64_t cut = 0; cut < bytes.size(); cut += step) {
      const fs::path d = tmp.path() / "ld";
      fs::remove_all(d);
      fs::copy(fixture, d);
      fs::permissions(d / file, fs::perms::owner_write, fs::perm_options::add);
      std::ofstream(d / file, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(cut));
      ++lcuts;
      lfailed += convert_fails(d, tmp.path() / "out");
    }
  }
  std::printf("LitData chunk/index truncations: %llu/%llu rejected\n", static_cast<unsigned long long>(lfailed),
              static_cast<unsigned long long>(lcuts));
  EXPECT_EQ(lfailed, lcuts);
}

}  // namespace
}  // namespace slip
