// The thread pool and the parallel convert path (also run under ThreadSanitizer in CI).
#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "slip/convert.hpp"
#include "slip/error.hpp"
#include "slip/runtime.hpp"
#include "test_support.hpp"
#include "util/worker_pool.hpp"

namespace slip {
namespace {

TEST(ParallelFor, EveryIndexExactlyOnce) {
  for (unsigned threads : {1u, 2u, 7u}) {
    std::vector<std::atomic<int>> hits(10007);
    parallel_for(hits.size(), threads, [&](size_t i) { hits[i].fetch_add(1); });
    for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << i << " threads " << threads;
  }
}

TEST(ParallelFor, FirstExceptionPropagatesAfterAllThreadsStop) {
  std::atomic<int> ran{0};
  EXPECT_THROW(parallel_for(1000, 4,
                            [&](size_t i) {
                              ran.fetch_add(1);
                              if (i == 10) throw Error(Errc::bad_input, "boom");
                            }),
               Error);
  EXPECT_GE(ran.load(), 11);
}

// How many bodies other threads run before they see the failure depends on the scheduler, so
// the stop is counted exactly on the caller's thread alone (a pool of 1): every index up to the
// throwing one, none after. With more threads: the exception, and a pool still usable.
TEST(WorkerPool, FirstExceptionIsRethrownAndThePoolStaysUsable) {
  // So many indices that handing all of them out would never end: run returns only because the
  // pool stops once a body has thrown, however the threads are scheduled (no timing involved).
  constexpr size_t kCount = std::numeric_limits<size_t>::max() / 2;
  for (unsigned threads : {1u, 4u}) {
    detail::WorkerPool pool(threads);
    std::atomic<size_t> ran{0};
    EXPECT_THROW(pool.run(kCount,
                          [&](unsigned, size_t i) {
                            ran.fetch_add(1);
                            if (i == 10) throw std::runtime_error("boom");
                          }),
                 std::runtime_error);
    if (threads == 1) {
      EXPECT_EQ(ran.load(), 11u) << "indices were handed out after the exception";
    } else {
      EXPECT_GE(ran.load(), 11u);
      EXPECT_LT(ran.load(), kCount);
    }
    std::vector<std::atomic<int>> seen(1000);
    pool.run(seen.size(), [&](unsigned thread, size_t i) {
      EXPECT_LT(thread, pool.size());
      seen[i].fetch_add(1);
    });
    for (const auto& s : seen) EXPECT_EQ(s.load(), 1);
  }
}

TEST(Runtime, AvailableCpusHonoursSlurmOnlyThroughTheGivenEnvironment) {
  const unsigned all = available_cpus();
  EXPECT_GE(all, 1u);
  const Environment slurm_one = [](std::string_view name) -> std::optional<std::string> {
    if (name == "SLURM_CPUS_PER_TASK") return "1";
    return std::nullopt;
  };
  EXPECT_EQ(available_cpus(slurm_one), 1u);
  EXPECT_EQ(available_cpus(Environment{}), all);
  // The process environment is read only when the caller passes it.
  ::setenv("SLURM_CPUS_PER_TASK", "1", 1);
  EXPECT_EQ(available_cpus(), all);
  EXPECT_EQ(available_cpus(process_environment()), 1u);
  ::unsetenv("SLURM_CPUS_PER_TASK");
  EXPECT_EQ(available_cpus(process_environment()), all);
}

TEST(Runtime, InterruptUnwindsConvertAndRemovesItsTemporaryDirectory) {
  test::TempDir tmp;
  auto src = open_source((std::filesystem::path(SLIP_SOURCE_DIR) / "examples/sample").string());
  ConvertOptions opt;
  opt.output_dir = tmp.path();
  opt.progress = [](const ProgressUpdate&) { set_interrupted(2); };
  try {
    convert(*src, opt);
    FAIL() << "convert ignored the interruption";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::interrupted);
  }
  set_interrupted(0);
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path()));
}

TEST(Runtime, OneAndTwoThreadsWriteIdenticalCaches) {
  test::TempDir tmp;
  std::vector<std::string> caches;  // one per thread count: every file, concatenated
  for (unsigned threads : {1u, 2u}) {
    auto src = open_source((std::filesystem::path(SLIP_SOURCE_DIR) / "examples/sample").string());
    ConvertOptions opt;
    opt.output_dir = tmp.path() / std::to_string(threads);
    opt.threads = threads;
    opt.created = 1700000000;  // the manifest's time, else two runs a second apart differ
    const auto r = convert(*src, opt);
    std::string all;
    for (const char* f : {"manifest.json", "image.bin", "image.meta.npy", "image.xxh3.npy", "label.npy", "path.bin"}) {
      const std::string bytes = test::read_file(r.cache_path / f);
      ASSERT_FALSE(bytes.empty()) << f << " is empty (threads=" << threads << ")";  // two empty reads are not "identical"
      all += bytes;
    }
    caches.push_back(std::move(all));
  }
  ASSERT_EQ(caches.size(), 2u);
  EXPECT_TRUE(caches[0] == caches[1]) << "1 and 2 threads wrote different caches";
}

}  // namespace
}  // namespace slip

namespace slip {
namespace {

Environment map_environment(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    const auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// The library reads no variable of the process: conventions come in through an Environment.
TEST(Environment, LibraryReadsNoVariableByItself) {
  test::TempDir tmp;
  ::setenv("SLIPSTREAM_CACHE_DIR", tmp.path().c_str(), 1);
  auto src = open_source((std::filesystem::path(SLIP_SOURCE_DIR) / "examples/sample").string());
  try {
    convert(*src, ConvertOptions{});
    ADD_FAILURE() << "convert without an output directory picked one from the environment";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::usage) << e.what();
  }
  ::unsetenv("SLIPSTREAM_CACHE_DIR");
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path()));
  EXPECT_THROW(parse_shard("auto"), Error);  // no SLURM variables unless given
  const ShardSpec s = parse_shard("auto", map_environment({{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  EXPECT_EQ(s.index, 3u);
  EXPECT_EQ(s.count, 4u);
}

TEST(Environment, DefaultCacheRoot) {
  EXPECT_EQ(default_cache_root(map_environment({{"HOME", "/h"}})), std::filesystem::path("/h/.slipstream"));
  EXPECT_EQ(default_cache_root(map_environment({{"HOME", "/h"}, {"SLIPSTREAM_CACHE_DIR", "~/c"}})), std::filesystem::path("/h/c"));
  EXPECT_EQ(default_cache_root(map_environment({{"HOME", "/h"}, {"SLIPSTREAM_CACHE_DIR", "/x/y/"}})), std::filesystem::path("/x/y/"));
  // Empty values are unset; with neither variable there is no default, not "./.slipstream".
  EXPECT_EQ(default_cache_root(map_environment({{"HOME", "/h"}, {"SLIPSTREAM_CACHE_DIR", ""}})), std::filesystem::path("/h/.slipstream"));
  EXPECT_THROW(default_cache_root(Environment{}), Error);
  EXPECT_THROW(default_cache_root(map_environment({{"SLIPSTREAM_CACHE_DIR", "~/c"}})), Error);
}

// A token cancels its own call only: another conversion running at the same time finishes.
TEST(Cancel, TokenStopsItsCallAndRemovesTheTemporaryDirectory) {
  test::TempDir tmp;
  auto src = open_source((std::filesystem::path(SLIP_SOURCE_DIR) / "examples/sample").string());
  ConvertOptions opt;
  opt.output_dir = tmp.path();
  opt.threads = 2;
  CancelToken token = opt.cancel;
  opt.progress = [&](const ProgressUpdate&) { token.cancel(); };
  try {
    convert(*src, opt);
    ADD_FAILURE() << "a cancelled convert completed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::interrupted);
    EXPECT_STREQ(e.what(), "cancelled");
  }
  EXPECT_TRUE(token.cancelled());
  EXPECT_EQ(interrupted(), 0);  // the process was not interrupted
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path()));
  // A fresh token: the same conversion completes.
  auto again = open_source((std::filesystem::path(SLIP_SOURCE_DIR) / "examples/sample").string());
  ConvertOptions ok;
  ok.output_dir = tmp.path();
  EXPECT_EQ(convert(*again, ok).written, 40u);
}

}  // namespace
}  // namespace slip
