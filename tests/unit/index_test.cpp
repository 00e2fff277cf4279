// Field indexes against a brute-force scan and Debian's numpy; subsets of the corpus.
#include <gtest/gtest.h>

#include <memory>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <optional>
#include <thread>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "slip/convert.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/index.hpp"
#include "slip/subset.hpp"
#include "slip/verify.hpp"
#include "format/layout.hpp"
#include "slip/log.hpp"
#include "test_support.hpp"
#include "util/file_lock.hpp"

namespace slip {
namespace {

namespace fs = std::filesystem;

// A small in-memory source with an int, a float (with -0.0, NaN and repeats) and a str field.
class TableSource final : public Source {
 public:
  explicit TableSource(size_t n) : n_(n) {
    schema_.fields = {{"cls", FieldType::int64, {}, {}}, {"score", FieldType::float64, {}, {}}, {"tag", FieldType::str, {}, {}}};
  }
  const Schema& schema() const override { return schema_; }
  SourceIdentity identity() const override { return {"table", "mem://table", std::to_string(n_), "table", {}}; }
  std::optional<uint64_t> size() const override { return n_; }
  bool next(Sample& s) override {
    if (i_ >= n_) return false;
    s.source_index = i_;
    s.values.assign(3, Value{});
    s.values[0].int_value = static_cast<int64_t>((i_ * 7919) % 13) - 5 + (i_ % 50 == 0 ? 100000000000 : 0);
    const double scores[] = {0.5, -0.0, 0.0, 2.25, std::nan(""), -1e300};
    s.values[1].float_value = scores[i_ % 6];
    const std::string tag = i_ % 3 == 0 ? "zebra" : i_ % 3 == 1 ? "äpfel" : "apple";
    s.values[2].bytes.assign(reinterpret_cast<const std::byte*>(tag.data()), reinterpret_cast<const std::byte*>(tag.data()) + tag.size());
    s.origin = "row " + std::to_string(i_);
    ++i_;
    return true;
  }

 private:
  size_t n_, i_ = 0;
  Schema schema_;
};

TEST(FieldIndex, EqualsBruteForceAndLoadsInNumpy) {
  SLIP_REQUIRE_PYTHON();
  test::TempDir tmp;
  TableSource src(997);
  ConvertOptions opt;
  opt.output_dir = tmp.path();
  const ConvertResult r = convert(src, opt);
  Cache cache = Cache::open(r.cache_path);
  for (const char* field : {"cls", "score", "tag"}) {
    const FieldIndex idx = build_field_index(cache, field);
    // Brute force: for every key, the ascending ids whose value equals it.
    const size_t fi = *cache.field_index(field);
    size_t total = 0;
    for (size_t k = 0; k < idx.num_keys(); ++k) {
      std::vector<int64_t> want;
      for (uint64_t i = 0; i < cache.size(); ++i) {
        bool eq;
        if (idx.key_type == FieldType::str)
          eq = cache.string(fi, i) == idx.str_keys[k];
        else if (idx.key_type == FieldType::float64)
          eq = cache.float_value(fi, i) == idx.float_keys[k];
        else
          eq = cache.int_value(fi, i) == idx.int_keys[k];
        if (eq) want.push_back(static_cast<int64_t>(i));
      }
      const auto got = idx.ids_of(k);
      EXPECT_EQ(std::vector<int64_t>(got.begin(), got.end()), want) << field << " key " << k;
      total += got.size();
    }
    EXPECT_EQ(total, std::string(field) == "score" ? cache.size() - (cache.size() + 1) / 6 : cache.size()) << field;
    write_field_index(cache, idx);
    cache = Cache::open(r.cache_path);
    const auto back = read_field_index(cache, field);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->ids, idx.ids);
    EXPECT_EQ(back->offsets, idx.offsets);
    EXPECT_EQ(back->int_keys, idx.int_keys);
    EXPECT_EQ(back->str_keys, idx.str_keys);
    EXPECT_EQ(back->float_keys.size(), idx.float_keys.size());
  }
  // numpy, independently: the pickled dict (allow_pickle=True) and the CSR arrays
  // (allow_pickle=False) both equal a brute-force grouping of the stored columns.
  const std::string script = R"PY(
import sys, numpy as np, math
c = sys.argv[1]
cols = {"cls": np.load(c + "/cls.npy"), "score": np.load(c + "/score.npy")}
off = np.load(c + "/tag.offsets.npy"); blob = open(c + "/tag.bin", "rb").read()
cols["tag"] = [blob[o:o + l].decode() for o, l in off]
for f, col in cols.items():
    d = np.load(f"{c}/{f}_index.npy", allow_pickle=True).item()
    assert type(d) is dict
    if f == "tag":
        keys = list(dict.fromkeys(col))   # first appearance
        want = {k: np.array([i for i, v in enumerate(col) if v == k], dtype="<i8") for k in keys}
    else:
        keys = [x.item() for x in np.unique(col)]
        want = {k: np.nonzero(col == k)[0].astype("<i8") for k in keys}
    assert len(d) == len(want), (f, len(d), len(want))
    for (k1, v1), (k2, v2) in zip(d.items(), want.items()):
        assert type(k1) is type(k2), (f, k1, k2)
        assert (k1 == k2) or (isinstance(k1, float) and math.isnan(k1) and math.isnan(k2)), (f, k1, k2)
        assert v1.dtype == np.dtype("<i8") and np.array_equal(v1, v2), (f, k1)
    keys_csr = np.load(f"{c}/{f}.index.keys.npy", allow_pickle=False)
    offs = np.load(f"{c}/{f}.index.offsets.npy", allow_pickle=False)
    ids = np.load(f"{c}/{f}.index.ids.npy", allow_pickle=False)
    for j, (k, v) in enumerate(want.items()):
        assert np.array_equal(ids[offs[j]:offs[j + 1]], v), (f, k)
print("numpy agrees")
)PY";
  std::ofstream(tmp.path() / "check.py") << script;
  const auto res = test::run(test::python() + " " + (tmp.path() / "check.py").string() + " " + r.cache_path.string() + " 2>&1");
  EXPECT_EQ(res.status, 0) << res.out;
  const VerifyReport v = verify_cache(r.cache_path);
  for (const auto& i : v.issues) ADD_FAILURE() << i.file << ": " << i.message;
}

class CorpusSubset : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::shared_missing().empty()) return;  // SetUp skips each test
    tmp_ = std::make_unique<test::TempDir>();
    auto src = open_source((test::shared_dir() / "corpus/imagenet_like").string());
    ConvertOptions opt;
    opt.output_dir = tmp_->path();
    cache_path_ = convert(*src, opt).cache_path;
  }
  static void TearDownTestSuite() { tmp_.reset(); }
  void SetUp() override { SLIP_REQUIRE_SHARED(); }
  static inline std::unique_ptr<test::TempDir> tmp_;
  static inline fs::path cache_path_;
};

TEST_F(CorpusSubset, ThreeClassesByValuesAndByNamesAgree) {
  const Cache cache = Cache::open(cache_path_);
  SubsetSelection by_values;
  by_values.values = {0, 4, 9};
  SubsetSelection by_names;
  by_names.names = {"n01440764", "n03028079", "n03888605"};
  const auto ids = select_samples(cache, by_values);
  EXPECT_EQ(ids, select_samples(cache, by_names));
  // Brute force over the label column.
  std::vector<uint64_t> want;
  const size_t li = *cache.field_index("label");
  for (uint64_t i = 0; i < cache.size(); ++i) {
    const auto l = cache.int_value(li, i);
    if (l == 0 || l == 4 || l == 9) want.push_back(i);
  }
  EXPECT_EQ(ids, want);
  EXPECT_EQ(ids.size(), 240u);

  auto src = open_cache_subset(cache_path_, ids);
  ConvertOptions opt;
  opt.output_dir = tmp_->path() / "subsets";
  opt.non_jpeg = NonJpegPolicy::keep;
  const ConvertResult r = convert(*src, opt);
  const Cache sub = Cache::open(r.cache_path);
  ASSERT_EQ(sub.size(), 240u);
  std::map<int64_t, int> per_class;
  const size_t fi = *cache.field_index("image");
  for (uint64_t j = 0; j < sub.size(); ++j) {
    ++per_class[sub.int_value(*sub.field_index("label"), j)];
    const auto a = sub.payload(*sub.field_index("image"), j), b = cache.payload(fi, ids[j]);
    ASSERT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << "payload of subset sample " << j;
    EXPECT_EQ(sub.string(*sub.field_index("path"), j), cache.string(*cache.field_index("path"), ids[j]));
  }
  EXPECT_EQ(per_class, (std::map<int64_t, int>{{0, 80}, {4, 80}, {9, 80}}));
  EXPECT_EQ(sub.provenance().source_kind, "subset");
  EXPECT_NE(sub.provenance().source_fingerprint.find(cache.provenance().content_id), std::string::npos);
  EXPECT_TRUE(verify_cache(r.cache_path).ok());
}

TEST_F(CorpusSubset, PerClassIsDeterministicPerSeed) {
  const Cache cache = Cache::open(cache_path_);
  SubsetSelection s;
  s.values = {1, 2, 3};
  s.per_class = 5;
  s.seed = 11;
  const auto a = select_samples(cache, s), b = select_samples(cache, s);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 15u);
  s.seed = 12;
  EXPECT_NE(select_samples(cache, s), a);
  std::map<int64_t, int> per;
  for (auto id : a) ++per[cache.int_value(*cache.field_index("label"), id)];
  EXPECT_EQ(per, (std::map<int64_t, int>{{1, 5}, {2, 5}, {3, 5}}));
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
}

TEST_F(CorpusSubset, IdsFileEqualsBruteForceInNumpy) {
  SLIP_REQUIRE_PYTHON();
  const Cache cache = Cache::open(cache_path_);
  SubsetSelection s;
  s.values = {2, 7};
  const auto ids = select_samples(cache, s);
  const fs::path out = tmp_->path() / "ids.npy";
  write_ids_npy(out, ids);
  const auto r =
      test::run(test::python() + " -c \"import numpy as np; ids=np.load('" + out.string() + "'); lab=np.load('" +
                (cache_path_ / "label.npy").string() +
                "'); assert ids.dtype==np.int64; assert np.array_equal(ids, np.nonzero((lab==2)|(lab==7))[0]); print(len(ids))\"");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "160\n");
}

TEST_F(CorpusSubset, UnknownValuesAndNamesAreUsageErrors) {
  const Cache cache = Cache::open(cache_path_);
  SubsetSelection s;
  s.values = {42};
  EXPECT_THROW(select_samples(cache, s), Error);
  s.values.clear();
  s.names = {"n99999999"};
  EXPECT_THROW(select_samples(cache, s), Error);
  EXPECT_THROW(build_field_index(cache, "image"), Error);
}

// Every writer of a cache holds its lock (format/manifest_io.hpp), convert --force replacing the
// whole cache too (issue 42: `convert --force` beside `index` or `yuv420` was not locked). The test
// holds the lock as a writer would; convert says it waits ("waiting for ..." in the log) and
// leaves the old cache alone until the lock is released. Nothing sleeps: the log line is the
// signal (the 60 s limits only turn a hang into a failure).
TEST(CacheLock, ConvertForceWaitsForAWriterOfTheCacheItReplaces) {
  test::TempDir tmp;
  ConvertOptions opt;
  opt.output_dir = tmp.path();
  TableSource first(50);
  const fs::path cache = convert(first, opt).cache_path;
  std::ofstream(cache / "old-cache-marker") << "the cache convert --force replaces";
  std::promise<void> waiting;
  std::atomic<bool> told = false;
  set_log_handler([&](LogLevel, std::string_view message) {
    if (message.find("waiting for the lock of the cache it replaces") != std::string_view::npos && !told.exchange(true))
      waiting.set_value();
  });
  std::optional<detail::FileLock> writer(std::in_place, cache / detail::kCacheLockName, "a writer's lock");
  std::exception_ptr failed;
  std::thread force([&] {
    try {
      TableSource again(50);
      ConvertOptions o = opt;
      o.force = true;
      convert(again, o);
    } catch (...) {
      failed = std::current_exception();
    }
  });
  const bool waited = waiting.get_future().wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  EXPECT_TRUE(waited) << "convert --force did not wait for the cache's lock";
  EXPECT_TRUE(fs::exists(cache / "old-cache-marker")) << "the cache was replaced while a writer held its lock";
  writer.reset();
  force.join();
  set_log_handler({});
  ASSERT_FALSE(failed);
  EXPECT_FALSE(fs::exists(cache / "old-cache-marker")) << "convert --force did not replace the cache";
  EXPECT_NO_THROW(Cache::open(cache));
}

// A writer that waited for the lock of a cache which convert --force then swapped out locks the
// new cache's lock file, not the old one's (which would keep nobody out of the new cache).
TEST(CacheLock, AWaiterLocksWhatTheNameMeansOnceItHasWaited) {
  test::TempDir tmp;
  const fs::path dir = tmp.path() / "c", lock = dir / detail::kCacheLockName;
  fs::create_directories(dir);
  std::promise<void> waiting;
  std::atomic<bool> told = false;
  set_log_handler([&](LogLevel, std::string_view message) {
    if (message.find("waiting for the second lock") != std::string_view::npos && !told.exchange(true)) waiting.set_value();
  });
  std::optional<detail::FileLock> first(std::in_place, lock, "the first lock");
  std::promise<void> locked;
  std::promise<void> done;
  std::thread second([&] {
    detail::FileLock held(lock, "the second lock");
    locked.set_value();
    done.get_future().wait();
  });
  ASSERT_EQ(waiting.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  fs::rename(dir, tmp.path() / "c.old");  // what convert --force's swap does to the name
  fs::create_directories(dir);
  first.reset();
  ASSERT_EQ(locked.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << "the waiter did not make the new cache's lock file";
  EXPECT_NE(::flock(fd, LOCK_EX | LOCK_NB), 0) << "the waiter does not hold the new cache's lock";
  ::close(fd);
  done.set_value();
  second.join();
  set_log_handler({});
}

}  // namespace
}  // namespace slip
