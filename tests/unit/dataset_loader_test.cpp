// slip::Loader over a slip::Dataset of several caches: global ids, pixels as from the merged
// cache, every sample once per epoch across ranks, weighted mixes (slip order's RankOrder, the
// proportions), elastic resumption 8 -> 5 -> 8 with a mix, the mix recorded in the state and
// changed between epochs, a changed part refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "slip/cache.hpp"
#include "slip/convert.hpp"
#include "slip/dataset.hpp"
#include "slip/error.hpp"
#include "slip/loader.hpp"
#include "slip/mix.hpp"
#include "slip/pipelines.hpp"
#include "slip/source.hpp"
#include "loader_ranks.hpp"
#include "test_support.hpp"

namespace slip {
namespace {

namespace fs = std::filesystem;

// examples/sample (40 JPEGs) converted whole and as 3 parts (`slip convert --shard I/3`): the
// parts' work directory is a dataset whose global ids are the whole cache's ids.
struct SampleParts {
  test::TempDir tmp;
  std::shared_ptr<const Cache> whole;
  fs::path parts_dir;
  std::shared_ptr<const Dataset> dataset;
};

const SampleParts& sample_parts() {
  static SampleParts p = [] {
    SampleParts s;
    const std::string src = (fs::path(SLIP_SOURCE_DIR) / "examples/sample").string();
    ConvertOptions opt;
    opt.output_dir = s.tmp.path() / "whole";
    s.whole = std::make_shared<const Cache>(Cache::open(convert(*open_source(src), opt).cache_path));
    for (uint64_t i = 0; i < 3; ++i) {
      ConvertOptions part;
      part.output_dir = s.tmp.path() / "parts";
      part.shard = ShardSpec{i, 3};
      s.parts_dir = convert(*open_source(src), part).cache_path.parent_path();
    }
    s.dataset = std::make_shared<const Dataset>(Dataset::open(s.parts_dir));
    return s;
  }();
  return p;
}

LoaderOptions dataset_options(uint32_t rank = 0, uint32_t world = 1, size_t batch = 4) {
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

LoaderMix proportions(std::vector<double> p, std::optional<uint64_t> epoch_size) {
  LoaderMix m;
  for (double v : p) m.weights.push_back({WeightKind::proportion, v});
  m.epoch_size = epoch_size;
  return m;
}

// Checks each batch's labels and pixels against its samples' own caches (each decoded alone by
// a BatchDecoder over that cache, with the same options): returns the epoch's samples.
std::vector<uint64_t> run_checked(Loader& loader, const Dataset& d, const LoaderOptions& o) {
  std::vector<uint64_t> seen;
  const Cache& merged = *sample_parts().whole;
  const size_t label = *d.cache(0).field_index("label");
  while (BatchPtr b = loader.next()) {
    EXPECT_EQ(b->samples.size(), b->count);
    for (size_t i = 0; i < b->count; ++i) {
      const auto [c, local] = d.locate(b->samples[i]);
      int64_t value = 0;
      std::memcpy(&value, b->fields[0].data() + i * 8, 8);
      EXPECT_EQ(value, d.cache(c).int_value(label, local)) << "sample " << b->samples[i];
      EXPECT_EQ(value, merged.int_value(label, b->samples[i])) << "sample " << b->samples[i];
      const uint64_t id = b->samples[i];
      if (o.full_decode) {
        DecodeOptions whole = o.decode;
        whole.groups = pipeline_crop_groups("decode");
        BatchDecoder alone(merged, whole);
        PackedImages ref;
        alone.decode_images(std::span(&id, 1), ref);
        const auto& x = b->full.images.at(i);
        EXPECT_EQ(x.width, ref.images[0].width);
        EXPECT_EQ(x.height, ref.images[0].height);
        if (x.width == ref.images[0].width && x.height == ref.images[0].height) {
          EXPECT_EQ(0, std::memcmp(b->full.pixels().data() + x.offset, ref.pixels().data(), size_t{x.width} * x.height * 3));
        }
      } else {
        BatchDecoder alone(merged, o.decode);
        const size_t bytes = crop_group_sample_bytes(o.decode.groups[0], o.decode.type);
        std::vector<std::byte> ref(bytes);
        const std::span<std::byte> out(ref);
        alone.decode(std::span(&id, 1), loader.epoch(), std::span(&out, 1));
        EXPECT_EQ(0, std::memcmp(b->groups[0].data() + i * bytes, ref.data(), bytes)) << "pixels of sample " << b->samples[i];
      }
    }
    seen.insert(seen.end(), b->samples.begin(), b->samples.end());
  }
  return seen;
}

TEST(DatasetLoader, EverySampleOncePerEpochAcrossRanksWithEachCachesPixels) {
  const auto& p = sample_parts();
  ASSERT_EQ(p.dataset->num_caches(), 3u);
  ASSERT_EQ(p.dataset->size(), 40u);
  for (uint32_t world : {1u, 3u, 8u}) {
    std::map<uint64_t, int> count;
    for (uint32_t r = 0; r < world; ++r) {
      const LoaderOptions o = dataset_options(r, world, 3);
      Loader loader(p.dataset, o);
      const auto seen = run_checked(loader, *p.dataset, o);
      EXPECT_EQ(seen.size(), (40u + world - 1) / world);
      EXPECT_EQ(seen, loader.order());
      // Without weights, the dataset's order is the whole cache's (global id = whole id).
      Loader whole(p.whole, o);
      EXPECT_EQ(seen, whole.order()) << "W=" << world;
      for (uint64_t id : seen) ++count[id];
    }
    EXPECT_EQ(count.size(), 40u) << "every sample, W=" << world;
    int extra = 0;
    for (const auto& [id, k] : count) extra += k - 1;
    EXPECT_EQ(extra, static_cast<int>((40 + world - 1) / world * world - 40)) << "only DistributedSampler's padding repeats";
  }
  // The decode pipeline: whole images from each cache, in batch order.
  LoaderOptions o = dataset_options(0, 1, 7);
  o.full_decode = true;
  o.decode.groups.clear();
  Loader full(p.dataset, o);
  EXPECT_EQ(run_checked(full, *p.dataset, o).size(), 40u);
}

TEST(DatasetLoader, OrderIsSlipOrdersRankOrderForTheSameMix) {
  const auto& p = sample_parts();
  const LoaderMix mix = proportions({0.5, 0.3, 0.2}, 50);
  for (uint32_t world : {1u, 3u}) {
    for (uint32_t r = 0; r < world; ++r) {
      LoaderOptions o = dataset_options(r, world, 4);
      o.block_size = 2;
      o.epoch = 3;
      Loader loader(p.dataset, o, mix);
      const MixSpec spec{p.dataset->sizes(), mix.weights, mix.epoch_size, 7, 3, 2};
      const RankOrder expected(spec, 0, r, world);
      std::vector<uint64_t> ids(expected.size());
      expected.fill(0, ids);
      EXPECT_EQ(loader.order(), ids);
      EXPECT_EQ(run_checked(loader, *p.dataset, o), ids) << "the batches are that order";
      EXPECT_EQ(loader.samples(), 50u);
    }
  }
  // A JSON list's weights are the default mix (as `slip order` without --mix).
  Dataset listed = Dataset::open(p.parts_dir);
  std::string json = listed.list_json();
  // Give the three entries proportions 5, 3, 2 and the list an epoch size.
  size_t at = 0;
  for (const char* w : {"5", "3", "2"}) {
    at = json.find("\"num_samples\"", at);
    at = json.find('\n', at);
    json.insert(at, std::string(",\n      \"proportion\": ") + w);
    at += 1;
  }
  json.insert(json.find("\"caches\""), "\"epoch_size\": 50,\n  ");
  const test::TempDir tmp;
  std::ofstream(tmp.path() / "list.json") << json;
  auto from_list = std::make_shared<const Dataset>(Dataset::open(tmp.path() / "list.json"));
  ASSERT_EQ(from_list->weights().size(), 3u) << json;
  LoaderOptions o = dataset_options(0, 1, 4);
  o.block_size = 2;
  o.epoch = 3;
  Loader listed_loader(from_list, o);
  Loader given(p.dataset, o, proportions({5, 3, 2}, 50));
  EXPECT_EQ(listed_loader.order(), given.order());
}

TEST(DatasetLoader, ProportionsWithinBinomialBounds) {
  const auto& p = sample_parts();
  const std::vector<uint64_t> sizes = p.dataset->sizes();
  // 60% / 30% / 10% of 200 samples an epoch: cache 0 (13 samples) repeats, cache 2 is a subset.
  const LoaderMix mix = proportions({0.6, 0.3, 0.1}, 200);
  Loader loader(p.dataset, dataset_options(0, 1, 32), mix);
  const std::vector<double> share{0.6, 0.3, 0.1};
  std::vector<uint64_t> in_cache2(sizes[2], 0);
  const int epochs = 30;
  for (int e = 0; e < epochs; ++e) {
    loader.set_epoch(static_cast<uint64_t>(e));
    const std::vector<uint64_t> order = loader.order();
    ASSERT_EQ(order.size(), 200u);
    std::vector<uint64_t> per(3, 0), first_half(3, 0);
    for (size_t i = 0; i < order.size(); ++i) {
      const auto where = p.dataset->locate(order[i]);
      ++per[where.cache];
      if (i < 100) ++first_half[where.cache];
      if (where.cache == 2) ++in_cache2[where.sample];
    }
    EXPECT_EQ(per, (std::vector<uint64_t>{120, 60, 20})) << "the epoch's counts are exact";
    // Any stretch of the shuffled epoch mixes the caches at their shares (binomial bounds, 4 sigma).
    for (size_t c = 0; c < 3; ++c) {
      const double sigma = std::sqrt(100 * share[c] * (1 - share[c]));
      EXPECT_LE(std::abs(static_cast<double>(first_half[c]) - 100 * share[c]), 4 * sigma) << "epoch " << e << " cache " << c;
    }
  }
  // Cache 2 gives 20 of its 14 samples an epoch: each once, and 6 of them (a new subset each
  // epoch) twice: each sample 30 + Binomial(30, 6/14) times over 30 epochs.
  const double q = 6.0 / 14, sigma = std::sqrt(epochs * q * (1 - q));
  ASSERT_EQ(sizes[2], 14u);
  for (uint64_t s = 0; s < sizes[2]; ++s)
    EXPECT_LE(std::abs(static_cast<double>(in_cache2[s]) - epochs * (1 + q)), 4 * sigma) << "sample " << s;
  // The loader decodes what order() says, from the right caches.
  loader.set_epoch(0);
  EXPECT_EQ(run_checked(loader, *p.dataset, dataset_options(0, 1, 32)).size(), 200u);
}

// Ranks that each took `batches` batches of an epoch from `state`: what they saw, and where
// they all stand after.
std::vector<uint64_t> run_dataset_ranks(const SampleParts& p, const LoaderMix& mix, uint32_t world, size_t batch, const LoaderState& state,
                                        std::optional<size_t> batches, LoaderState& out) {
  return test::run_resumed_ranks(world, state, batches, out,
                                 [&](uint32_t r) { return std::make_unique<Loader>(p.dataset, dataset_options(r, world, batch), mix); });
}

TEST(DatasetLoader, ElasticResumeEightFiveEightWithAMix) {
  const auto& p = sample_parts();
  const LoaderMix mix = proportions({0.2, 0.5, 0.3}, 46);
  LoaderState start;
  start.seed = 7;
  start.samples = 46;
  start.mix = mix;
  LoaderState a, b, c;
  auto seen = run_dataset_ranks(p, mix, 8, 2, start, 1, a);  // positions 0..15
  EXPECT_EQ(a.consumed, 16u);
  EXPECT_EQ(a.mix, mix);
  const auto mid = run_dataset_ranks(p, mix, 5, 1, a, 2, b);  // 16..25
  EXPECT_EQ(b.consumed, 26u);
  seen.insert(seen.end(), mid.begin(), mid.end());
  const auto rest = run_dataset_ranks(p, mix, 8, 3, b, std::nullopt, c);  // the 20 left: 3 per rank, 4 of padding
  EXPECT_EQ(c.consumed, 46u);
  seen.insert(seen.end(), rest.begin(), rest.end());
  // Exactly the epoch's positions, plus the padding (positions 26..29 again).
  const MixedOrder order(MixSpec{p.dataset->sizes(), mix.weights, mix.epoch_size, 7, 0, 1});
  std::multiset<uint64_t> expected;
  for (uint64_t pos = 0; pos < 46; ++pos) expected.insert(order(pos));
  for (uint64_t pos = 26; pos < 30; ++pos) expected.insert(order(pos));
  EXPECT_EQ(std::multiset<uint64_t>(seen.begin(), seen.end()), expected);
}

TEST(DatasetLoader, StateRecordsTheMixAndSetMixTakesEffectNextEpoch) {
  const auto& p = sample_parts();
  const LoaderMix first = proportions({0.6, 0.2, 0.2}, 30), second = proportions({0.1, 0.1, 0.8}, 20);
  const LoaderOptions o = dataset_options(0, 1, 5);
  Loader loader(p.dataset, o, first);
  const uint64_t g = loader.start();
  std::vector<uint64_t> before;
  for (int k = 0; k < 2; ++k) {
    auto r = loader.next(g);
    ASSERT_EQ(r.status, Loader::Next::batch);
    before.insert(before.end(), r.batch->samples.begin(), r.batch->samples.end());
  }
  loader.set_mix(second);  // the running epoch keeps its mix
  LoaderState s = loader.state();
  EXPECT_EQ(s.version, 3u);
  EXPECT_EQ(s.mix, first);
  EXPECT_EQ(s.samples, 30u);
  EXPECT_EQ(s.consumed, 10u);
  std::vector<uint64_t> rest;
  for (;;) {
    auto r = loader.next(g);
    if (r.status != Loader::Next::batch) break;
    rest.insert(rest.end(), r.batch->samples.begin(), r.batch->samples.end());
  }
  EXPECT_EQ(before.size() + rest.size(), 30u);
  // The next epoch runs the new mix.
  const auto next_epoch = run_checked(loader, *p.dataset, o);
  EXPECT_EQ(loader.epoch(), 1u);
  EXPECT_EQ(next_epoch.size(), 20u);
  Loader fresh(p.dataset, o, second);
  fresh.set_epoch(1);
  EXPECT_EQ(next_epoch, fresh.order());

  // A mid-epoch state resumes with the mix it records, whatever the resuming Loader's own mix;
  // that one applies from the next epoch.
  Loader resumed(p.dataset, o, second);
  resumed.load_state(s);
  EXPECT_EQ(resumed.samples(), 30u);
  const auto resumed_rest = run_checked(resumed, *p.dataset, o);
  EXPECT_EQ(resumed_rest, rest);
  EXPECT_EQ(run_checked(resumed, *p.dataset, o), next_epoch);
  // A state whose recorded mix gives another epoch length over this dataset, or weights not one
  // per cache, is refused.
  LoaderState bad = s;
  bad.samples = 31;
  EXPECT_THROW(resumed.load_state(bad), Error);
  bad = s;
  bad.mix.weights.pop_back();
  EXPECT_THROW(resumed.load_state(bad), Error);
  // A version 2 state (no mix) resumes with the Loader's own mix, checked by its length.
  LoaderState v2 = s;
  v2.version = 2;
  v2.mix = {};
  Loader own(p.dataset, o, first);
  own.load_state(v2);
  EXPECT_EQ(run_checked(own, *p.dataset, o), rest);
  Loader other(p.dataset, o, second);
  EXPECT_THROW(other.load_state(v2), Error) << "30 samples recorded, 20 under this mix";
}

TEST(DatasetLoader, BuffersGrowWhenTheMixGrowsTheEpoch) {
  const auto& p = sample_parts();
  const LoaderOptions o = dataset_options(0, 1, 16);
  Loader loader(p.dataset, o, proportions({1, 1, 1}, 3));  // a 3-sample epoch: 3-sample buffers
  EXPECT_EQ(run_checked(loader, *p.dataset, o).size(), 3u);
  loader.set_mix(proportions({1, 1, 1}, 40));
  const auto seen = run_checked(loader, *p.dataset, o);
  EXPECT_EQ(seen.size(), 40u);
  EXPECT_EQ(seen, loader.order());
}

TEST(DatasetLoader, RefusesBadMixesAndAChangedPart) {
  const auto& p = sample_parts();
  EXPECT_THROW(Loader(p.dataset, dataset_options(), proportions({1, 1}, std::nullopt)), Error) << "2 weights, 3 caches";
  LoaderMix mixed = proportions({1, 1, 1}, std::nullopt);
  mixed.weights[1] = {WeightKind::repeat, 2};
  EXPECT_THROW(Loader(p.dataset, dataset_options(), mixed), Error) << "proportion with repeat";
  LoaderOptions unshuffled = dataset_options();
  unshuffled.shuffle = false;
  EXPECT_THROW(Loader(p.dataset, unshuffled, proportions({1, 1, 1}, 10)), Error);
  LoaderOptions subset = dataset_options();
  subset.indices = SampleIndices::list({39, 0});
  EXPECT_THROW(Loader(p.dataset, subset, proportions({1, 1, 1}, 10)), Error);
  Loader indexed(p.dataset, subset);  // indices are global ids
  const std::vector<uint64_t> picked = indexed.order();
  EXPECT_EQ(std::multiset<uint64_t>(picked.begin(), picked.end()), (std::multiset<uint64_t>{0, 39}));
  subset.indices = SampleIndices::list({40});
  EXPECT_THROW(Loader(p.dataset, subset), Error);

  // A list naming the parts with their content ids; one part re-converted afterwards (here: its
  // manifest's content id changed) is refused when the list is opened for a Loader.
  const test::TempDir tmp;
  for (const auto& e : fs::directory_iterator(p.parts_dir))
    if (fs::is_directory(e.path())) fs::copy(e.path(), tmp.path() / e.path().filename(), fs::copy_options::recursive);
  const Dataset copy = Dataset::open(tmp.path());
  std::ofstream(tmp.path() / "list.json") << copy.list_json();
  const fs::path changed = copy.cache(1).path() / "manifest.json";
  const std::string id = Dataset::content_id_of(copy.cache(1));
  std::stringstream text;
  text << std::ifstream(changed).rdbuf();
  std::string manifest = text.str();
  ASSERT_NE(manifest.find(id), std::string::npos);
  std::string other_id = id;
  other_id[0] = other_id[0] == 'a' ? 'b' : 'a';
  manifest.replace(manifest.find(id), id.size(), other_id);
  std::ofstream(changed, std::ios::trunc) << manifest;
  try {
    Loader loader(std::make_shared<const Dataset>(Dataset::open(tmp.path() / "list.json")), dataset_options());
    ADD_FAILURE() << "a changed part was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::bad_input);
    EXPECT_NE(e.describe().find("changed since the list was written"), std::string::npos) << e.describe();
    EXPECT_NE(e.describe().find(copy.cache(1).path().string()), std::string::npos) << e.describe();
  }
}

}  // namespace
}  // namespace slip
