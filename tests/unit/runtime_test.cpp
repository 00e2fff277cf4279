// The thread pool and the parallel convert path (also run under ThreadSanitizer in CI).
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "slip/convert.hpp"
#include "slip/error.hpp"
#include "slip/runtime.hpp"
#include "test_support.hpp"

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

TEST(Runtime, AvailableCpusHonoursSlurm) {
  const unsigned all = available_cpus();
  ::setenv("SLURM_CPUS_PER_TASK", "1", 1);
  EXPECT_EQ(available_cpus(), 1u);
  ::unsetenv("SLURM_CPUS_PER_TASK");
  EXPECT_EQ(available_cpus(), all);
  EXPECT_GE(all, 1u);
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
  ::setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
  std::string first;
  for (unsigned threads : {1u, 2u}) {
    auto src = open_source((std::filesystem::path(SLIP_SOURCE_DIR) / "examples/sample").string());
    ConvertOptions opt;
    opt.output_dir = tmp.path() / std::to_string(threads);
    opt.threads = threads;
    const auto r = convert(*src, opt);
    std::string all;
    for (const char* f : {"manifest.json", "image.bin", "image.meta.npy", "image.xxh3.npy", "label.npy", "path.bin"})
      all += test::read_file(r.cache_path / f);
    if (first.empty())
      first = all;
    else
      EXPECT_TRUE(all == first) << "threads=" << threads;
  }
  ::unsetenv("SOURCE_DATE_EPOCH");
}

}  // namespace
}  // namespace slip
