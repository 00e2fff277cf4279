// slip::Loader (slip/loader.hpp): every sample once per epoch across ranks, drop_last, the skip
// policy, resuming mid-epoch (same and other world sizes), the end of an epoch, its buffers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <sys/mman.h>
#include <unistd.h>

#include "slip/cache.hpp"
#include "slip/convert.hpp"
#include "slip/decode.hpp"
#include "slip/error.hpp"
#include "slip/image.hpp"
#include "slip/loader.hpp"
#include "slip/pipelines.hpp"
#include "slip/shuffle.hpp"
#include "slip/source.hpp"
#include "loader_ranks.hpp"
#include "test_support.hpp"

namespace slip {
namespace {

namespace fs = std::filesystem;

// examples/sample (40 JPEGs) as a cache, converted once for every test here.
std::shared_ptr<const Cache> sample_loader_cache() {
  static test::TempDir tmp;
  static std::shared_ptr<const Cache> cache = [] {
    auto source = open_source((fs::path(SLIP_SOURCE_DIR) / "examples/sample").string());
    ConvertOptions opt;
    opt.output_dir = tmp.path() / "out";
    return std::make_shared<const Cache>(Cache::open(convert(*source, opt).cache_path));
  }();
  return cache;
}

LoaderOptions small_options(uint32_t rank = 0, uint32_t world = 1, size_t batch = 4) {
  LoaderOptions o;
  o.batch_size = batch;
  o.decode.groups = parse_crop_groups("16");
  o.decode.threads = 1;
  o.decode.seed = 7;
  o.rank = rank;
  o.world_size = world;
  o.fields = {"label"};
  o.prefetch = 2;
  return o;
}

// The samples of one iteration, batch by batch (checking each batch's label column).
std::vector<uint64_t> run_loader(Loader& loader) {
  std::vector<uint64_t> seen;
  while (BatchPtr b = loader.next()) {
    EXPECT_EQ(b->samples.size(), b->count);
    for (size_t i = 0; i < b->count; ++i) {
      int64_t label = 0;
      std::memcpy(&label, b->fields[0].data() + i * 8, 8);
      EXPECT_EQ(label, loader.cache().int_value(*loader.cache().field_index("label"), b->samples[i]));
    }
    seen.insert(seen.end(), b->samples.begin(), b->samples.end());
  }
  return seen;
}

TEST(Loader, EverySampleOncePerEpochAcrossRanks) {
  const auto cache = sample_loader_cache();
  const uint64_t n = cache->size();
  ASSERT_EQ(n, 40u);
  for (uint32_t world : {1u, 3u, 8u}) {
    std::map<uint64_t, int> count;
    for (uint32_t r = 0; r < world; ++r) {
      Loader loader(cache, small_options(r, world, 3));
      const auto seen = run_loader(loader);
      EXPECT_EQ(seen.size(), (n + world - 1) / world);
      EXPECT_EQ(seen, loader.order()) << "batches come in order()'s order";
      for (uint64_t id : seen) ++count[id];
    }
    EXPECT_EQ(count.size(), n) << "every sample, W=" << world;
    int extra = 0;
    for (auto [id, c] : count) extra += c - 1;
    EXPECT_EQ(static_cast<uint64_t>(extra), (n + world - 1) / world * world - n) << "only the padding repeats";
  }
}

TEST(Loader, RanksInterleaveOverOneGlobalOrder) {
  const auto cache = sample_loader_cache();
  ShuffleSpec spec{cache->size(), 7, 0, 1, 0, 1};
  const EpochOrder global(spec);
  for (uint32_t r = 0; r < 3; ++r) {
    Loader loader(cache, small_options(r, 3));
    const auto order = loader.order();
    for (size_t p = 0; p < order.size(); ++p) EXPECT_EQ(order[p], global.global(r + p * 3)) << "rank " << r << " position " << p;
  }
}

TEST(Loader, DropLastAndEndOfEpoch) {
  const auto cache = sample_loader_cache();
  auto o = small_options(0, 3, 4);  // 14 samples per rank: 3 batches of 4 and one of 2
  Loader full(cache, o);
  EXPECT_EQ(full.batches(), 4u);
  o.drop_last = true;
  Loader dropped(cache, o);
  EXPECT_EQ(dropped.batches(), 3u);
  const uint64_t g = dropped.start();
  size_t batches = 0;
  for (;;) {
    const auto r = dropped.next(g);
    if (r.status != Loader::Next::batch) {
      EXPECT_EQ(r.status, Loader::Next::end);
      break;
    }
    EXPECT_EQ(r.batch->count, 4u);
    ++batches;
  }
  EXPECT_EQ(batches, 3u);
  EXPECT_EQ(dropped.next(g).status, Loader::Next::end) << "next after the end stays at the end";
  EXPECT_EQ(dropped.state().consumed, cache->size()) << "the epoch is complete";
  const uint64_t g2 = dropped.start();
  EXPECT_EQ(dropped.next(g).status, Loader::Next::replaced);
  EXPECT_EQ(dropped.epoch(), 1u) << "a new iteration runs the next epoch";
  EXPECT_EQ(dropped.next(g2).status, Loader::Next::batch);
}

TEST(Loader, ResumeMidEpochOnTheSameWorldSize) {
  const auto cache = sample_loader_cache();
  Loader first(cache, small_options(1, 2, 4));
  const uint64_t g = first.start();
  std::vector<uint64_t> before;
  for (int k = 0; k < 2; ++k) {
    const auto r = first.next(g);
    ASSERT_EQ(r.status, Loader::Next::batch);
    before.insert(before.end(), r.batch->samples.begin(), r.batch->samples.end());
  }
  const LoaderState s = first.state();
  EXPECT_EQ(s.consumed, 2u * 4 * 2);
  Loader resumed(cache, small_options(1, 2, 4));
  resumed.load_state(s);
  auto after = run_loader(resumed);
  before.insert(before.end(), after.begin(), after.end());
  EXPECT_EQ(before, resumed.order()) << "the rest of the rank's epoch, nothing more";
  // Near the end of an epoch, then a whole epoch: the pooled buffers hold a whole batch.
  Loader tail(cache, small_options(0, 1, 8));
  LoaderState near_end = tail.state();
  near_end.consumed = 38;
  tail.load_state(near_end);
  EXPECT_EQ(run_loader(tail).size(), 2u);
  const auto whole = run_loader(tail);
  EXPECT_EQ(tail.epoch(), 1u);
  EXPECT_EQ(whole, tail.order());
  // The old form: set_epoch(epoch, batch).
  Loader old(cache, small_options(1, 2, 4));
  old.set_epoch(0, 2);
  EXPECT_EQ(run_loader(old), after);
}

// Ranks that each took `batches` batches of an epoch that started at `state`: what they saw.
std::vector<uint64_t> run_ranks(const std::shared_ptr<const Cache>& cache, uint32_t world, size_t batch, const LoaderState& state,
                                std::optional<size_t> batches, LoaderState& out) {
  return test::run_resumed_ranks(world, state, batches, out,
                                 [&](uint32_t r) { return std::make_unique<Loader>(cache, small_options(r, world, batch)); });
}

TEST(Loader, ElasticResumeEightFiveEightLosesAndRepeatsNothing) {
  const auto cache = sample_loader_cache();
  const uint64_t n = cache->size();
  LoaderState start;
  start.seed = 7;
  start.samples = n;
  LoaderState a, b, c;
  auto seen = run_ranks(cache, 8, 2, start, 1, a);  // 8 ranks x 1 batch of 2: positions 0..15
  EXPECT_EQ(a.consumed, 16u);
  const auto mid = run_ranks(cache, 5, 1, a, 2, b);  // 5 ranks x 2 batches of 1: positions 16..25
  EXPECT_EQ(b.consumed, 26u);
  seen.insert(seen.end(), mid.begin(), mid.end());
  const auto rest = run_ranks(cache, 8, 3, b, std::nullopt, c);  // the 14 left: 2 per rank, 2 of padding
  EXPECT_EQ(c.consumed, n);
  seen.insert(seen.end(), rest.begin(), rest.end());
  std::multiset<uint64_t> counts(seen.begin(), seen.end());
  EXPECT_EQ(seen.size(), n + 2);
  // The padding repeats the first positions left (26 and 27: DistributedSampler's rule); nothing else twice.
  const EpochOrder global(ShuffleSpec{n, 7, 0, 1, 0, 1});
  for (uint64_t id = 0; id < n; ++id)
    EXPECT_EQ(counts.count(id), id == global.global(26) || id == global.global(27) ? 2u : 1u) << "sample " << id;
  // The samples are the epoch's global order, position by position, whatever the world sizes.
  std::set<uint64_t> first16;
  for (uint64_t p = 0; p < 16; ++p) first16.insert(global.global(p));
  EXPECT_EQ(first16, std::set<uint64_t>(seen.begin(), seen.begin() + 16));
  // A complete epoch's state starts the next epoch.
  Loader next(cache, small_options());
  next.load_state(c);
  EXPECT_EQ(next.epoch(), 1u);
  EXPECT_EQ(next.state().consumed, 0u);
}

TEST(Loader, ElasticResumeRefusesAnotherOrder) {
  const auto cache = sample_loader_cache();
  Loader loader(cache, small_options());
  LoaderState s;
  s.seed = 8;  // not the loader's 7
  s.samples = cache->size();
  s.consumed = 5;
  EXPECT_THROW(loader.load_state(s), Error);
  s.seed = 7;
  s.samples = 39;
  EXPECT_THROW(loader.load_state(s), Error);
  s.samples = cache->size();
  s.consumed = 41;
  EXPECT_THROW(loader.load_state(s), Error);
}

// A state completing epoch 2^64-1 has no next epoch: it wrapped to epoch 0 (repeating its order).
TEST(Loader, AStateCompletingTheLastEpochIsRefused) {
  const auto cache = sample_loader_cache();
  Loader loader(cache, small_options());
  LoaderState s;
  s.seed = 7;
  s.samples = s.consumed = cache->size();
  s.epoch = std::numeric_limits<uint64_t>::max();
  try {
    loader.load_state(s);
    ADD_FAILURE() << "loaded; next epoch " << loader.state().epoch;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::usage);
    EXPECT_NE(e.describe().find("completes epoch 18446744073709551615, the last one"), std::string::npos) << e.describe();
  }
  s.epoch -= 1;
  loader.load_state(s);
  EXPECT_EQ(loader.state().epoch, std::numeric_limits<uint64_t>::max());
  s.consumed = 5;  // mid-epoch: that epoch goes on
  s.epoch += 1;
  loader.load_state(s);
  EXPECT_EQ(loader.state().consumed, 5u);
}

TEST(Loader, SkipsACorruptSampleAndRaisesWithoutSkipping) {
  SLIP_REQUIRE_SHARED();
  test::TempDir tmp;
  const fs::path src = tmp.path() / "src/c";
  fs::create_directories(src);
  const fs::path cls = *fs::directory_iterator(fs::path(SLIP_SOURCE_DIR) / "examples/sample");
  int copied = 0;
  for (const auto& e : fs::directory_iterator(cls))
    if (copied < 3) fs::copy_file(e.path(), src / ("a" + std::to_string(copied++) + ".jpg"));
  fs::copy_file(test::shared_dir() / "corpus/bad/garbage_in_entropy.JPEG", src / "b.jpg");  // sample 3
  auto source = open_source((tmp.path() / "src").string());
  ConvertOptions opt;
  opt.output_dir = tmp.path() / "out";
  const auto cache = std::make_shared<const Cache>(Cache::open(convert(*source, opt).cache_path));
  ASSERT_EQ(cache->size(), 4u);
  for (bool full : {false, true}) {
    LoaderOptions o = small_options(0, 1, 4);
    o.fields.clear();
    o.shuffle = false;
    o.full_decode = full;
    o.decode.groups = pipeline_crop_groups("center");  // as DecodeEngine.CorruptJpegIsAnErrorNamingTheSample: a window that fails
    o.decode.groups[0].size = 16;
    o.decode.crop_aware = true;
    o.skip_errors = true;
    Loader loader(cache, o);
    BatchPtr b = loader.next();
    ASSERT_TRUE(b);
    EXPECT_EQ(b->samples, (std::vector<uint64_t>{0, 1, 2}));
    EXPECT_EQ(full ? b->full.images.size() : b->count, 3u);
    ASSERT_EQ(loader.skipped().size(), 1u);
    EXPECT_EQ(loader.skipped()[0].sample, 3u);
    EXPECT_FALSE(loader.next()) << "the end of the epoch";
    o.skip_errors = false;
    Loader raising(cache, o);
    const uint64_t g = raising.start();
    EXPECT_THROW(raising.next(g), Error);
    EXPECT_THROW(raising.next(g), Error) << "every later call raises it again";
  }
}

TEST(Loader, BuffersGoBackToThePoolAndOutliveTheLoader) {
  const auto cache = sample_loader_cache();
  BatchPtr kept;
  {
    Loader loader(cache, small_options(0, 1, 8));
    const std::byte* first = nullptr;
    {
      BatchPtr b = loader.next();
      ASSERT_TRUE(b);
      first = b->groups[0].data();
    }
    bool reused = false;  // the dropped buffer comes back for a later batch
    while (BatchPtr b = loader.next()) {
      reused |= b->groups[0].data() == first;
      kept = b;
    }
    EXPECT_TRUE(reused);
  }
  ASSERT_TRUE(kept);  // the Loader is gone; its last batch is still whole
  EXPECT_EQ(kept->count, 8u);
}

LoaderOptions whole_image_options(size_t batch) {
  LoaderOptions o = small_options(0, 1, batch);
  o.full_decode = true;
  o.decode.groups.clear();
  o.decode.threads = 2;
  return o;
}

// Image i of a decode-pipeline batch is exactly engine_decode_full's decode of its sample.
void expect_whole_images(const Cache& cache, const Batch& b, const char* when) {
  ASSERT_EQ(b.full.images.size(), b.count) << when;
  for (size_t i = 0; i < b.count; ++i) {
    const RgbImage want = engine_decode_full(cache.payload(0, b.samples[i]));
    const PackedImages::Extent& e = b.full.images[i];
    ASSERT_EQ(e.width, want.width) << when;
    ASSERT_EQ(e.height, want.height) << when;
    ASSERT_EQ(std::memcmp(b.full.pixels().data() + e.offset, want.pixels.data(), want.pixels.size()), 0)
        << when << ": sample " << b.samples[i];
  }
}

// The decode pipeline hands out each batch's block itself (Python's arrays are views of it): a
// batch kept while later batches and epochs run keeps its block (never decoded into again: the
// pool makes another) and its pixels, also after the Loader is gone.
TEST(Loader, AKeptWholeImageBatchKeepsItsBlockAndPixels) {
  const auto cache = sample_loader_cache();
  BatchPtr kept;
  {
    Loader loader(cache, whole_image_options(8));
    kept = loader.next();
    ASSERT_TRUE(kept);
    ASSERT_EQ(kept->count, 8u);
    expect_whole_images(*cache, *kept, "first batch");
    const uint8_t* block = kept->full.pixels().data();
    size_t later = 0;
    for (int epoch = 0; epoch < 3; ++epoch)
      while (BatchPtr b = loader.next()) {
        EXPECT_NE(b->full.pixels().data(), block) << "a kept batch's block was handed out again";
        expect_whole_images(*cache, *b, "a later batch");
        ++later;
      }
    EXPECT_EQ(later, 4u + 5u + 5u);
    expect_whole_images(*cache, *kept, "after three epochs");
  }
  expect_whole_images(*cache, *kept, "after the Loader is gone");
}

// Between epochs the decode pipeline's idle blocks keep the pages every whole batch writes (the
// smallest whole batch's bytes) and give back the rest: a new epoch does not fault in every
// block again (which cost 10-40% of the pipeline's speed on short epochs), and a block that held
// a large batch at an epoch's end keeps no more than the others (RSS flat over epochs).
TEST(Loader, IdleWholeImageBlocksKeepTheSmallestWholeBatchsPages) {
  const auto cache = sample_loader_cache();
  Loader loader(cache, whole_image_options(20));  // 40 images: two whole batches, 10.7 MB each
  size_t keep = SIZE_MAX;
  std::map<const uint8_t*, size_t> blocks;  // block -> capacity
  while (BatchPtr b = loader.next()) {
    ASSERT_EQ(b->count, 20u);
    keep = std::min(keep, b->full.pixels().size());
    blocks[b->full.pixels().data()] = b->full.capacity();
  }
  // The iteration is over and every batch dropped: the blocks are idle in the Loader's pool.
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  ASSERT_GT(keep, 4 * page);
  for (const auto& [block, capacity] : blocks) {
    std::vector<unsigned char> in(capacity / page);
    ASSERT_EQ(mincore(const_cast<uint8_t*>(block), capacity, in.data()), 0);
    const size_t kept_pages = keep / page, first_released = (keep + page - 1) / page;
    EXPECT_EQ(std::count_if(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(kept_pages), [](unsigned char v) { return (v & 1) != 0; }),
              static_cast<std::ptrdiff_t>(kept_pages))
        << "pages every batch writes were given back";
    EXPECT_EQ(
        std::count_if(in.begin() + static_cast<std::ptrdiff_t>(first_released), in.end(), [](unsigned char v) { return (v & 1) != 0; }), 0)
        << "pages past the smallest whole batch were kept";
  }
  // The next epoch decodes into them as before.
  while (BatchPtr b = loader.next()) expect_whole_images(*cache, *b, "the next epoch");
}

}  // namespace
}  // namespace slip
