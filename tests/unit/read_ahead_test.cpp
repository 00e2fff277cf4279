// util/read_ahead.hpp: files handed over in order whatever the depth, problems per file,
// bytes in flight bounded, FIFOs refused without blocking.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "util/read_ahead.hpp"

namespace slip::detail {
namespace {

namespace fs = std::filesystem;

class ReadAheadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("slip-readahead-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::mt19937 rng(3);
    for (int i = 0; i < kFiles; ++i) {
      std::string content(1000 + rng() % 9000, '\0');
      for (char& c : content) c = static_cast<char>(rng());
      contents_.push_back(content);
      std::ofstream(path(i), std::ios::binary) << content;
    }
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(uint64_t i) const { return (dir_ / ("f" + std::to_string(i))).string(); }

  static constexpr int kFiles = 300;
  fs::path dir_;
  std::vector<std::string> contents_;
};

TEST_F(ReadAheadTest, InOrderForEveryDepthAndStart) {
  for (unsigned depth : {1u, 2u, 7u, 32u}) {
    for (uint64_t first : {uint64_t{0}, uint64_t{123}}) {
      ReadAhead reader([&](uint64_t i) { return path(i); }, first, kFiles - first, {depth, 1u << 20, UINT64_MAX});
      for (uint64_t i = first; i < kFiles; ++i) {
        auto r = reader.take();
        ASSERT_TRUE(r.has_value());
        ASSERT_FALSE(r->problem) << *r->problem;
        ASSERT_EQ(std::string(reinterpret_cast<const char*>(r->bytes.data()), r->bytes.size()), contents_[i])
            << "depth " << depth << " file " << i;
      }
      EXPECT_FALSE(reader.take().has_value());
    }
  }
}

TEST_F(ReadAheadTest, BytesInFlightBoundedByBudgetPlusOneFile) {
  const uint64_t budget = 40000;
  ReadAhead reader([&](uint64_t i) { return path(i); }, 0, kFiles, {16, budget, UINT64_MAX});
  for (int i = 0; i < kFiles; ++i) {
    if (i % 50 == 0) ::usleep(20000);  // let the workers run ahead and hit the budget
    ASSERT_TRUE(reader.take().has_value());
  }
  EXPECT_LE(reader.peak_bytes_in_flight(), budget + 10000);
  EXPECT_GT(reader.peak_bytes_in_flight(), 0u);
}

TEST_F(ReadAheadTest, ProblemsArePerFileAndNeverBlock) {
  fs::remove(path(5));
  fs::remove(path(6));
  ASSERT_EQ(::mkfifo(path(6).c_str(), 0600), 0);  // a FIFO nobody writes: must not hang
  fs::remove(path(7));
  fs::create_directory(path(7));
  ReadAhead reader([&](uint64_t i) { return path(i); }, 0, 10, {4, 1u << 20, 5000});
  for (int i = 0; i < 10; ++i) {
    auto r = reader.take();
    ASSERT_TRUE(r.has_value());
    if (i == 5) {
      ASSERT_TRUE(r->problem);
      EXPECT_NE(r->problem->find("cannot open"), std::string::npos) << *r->problem;
    } else if (i == 6 || i == 7) {
      ASSERT_TRUE(r->problem);
      EXPECT_EQ(*r->problem, "not a regular file");
    } else if (contents_[i].size() > 5000) {
      ASSERT_TRUE(r->problem);
      EXPECT_NE(r->problem->find("exceeds the limit of 5000 bytes"), std::string::npos) << *r->problem;
    } else {
      EXPECT_FALSE(r->problem);
      EXPECT_EQ(r->bytes.size(), contents_[i].size());
    }
  }
}

// Files 0-99 fast, 100-199 slow (as on a loaded network file system), 200-299 fast: inline
// reads over the fast files, `depth` reads in flight over the slow ones, inline again after.
// Each read's verdict is the test's (slow_read_for_test), not a clock's, and a worker's read of
// a slow file blocks until four of them are in flight at once: the outcome cannot depend on
// how busy the machine is or how threads are scheduled. (The wait's 60 s limit only turns a
// reader that never reads in parallel into a failure instead of a hang.)
TEST_F(ReadAheadTest, FastFilesAreReadInlineSlowOnesInParallel) {
  const auto slow = [](uint64_t i) { return i >= 100 && i < 200; };
  const std::thread::id taker = std::this_thread::get_id();
  std::mutex mutex;
  std::condition_variable four_in_flight;
  int slow_in_flight = 0, most_slow_in_flight = 0;
  bool released = false, gave_up = false;
  ReadAheadOptions options{8, 1u << 20, UINT64_MAX};
  ReadAhead reader(
      [&](uint64_t i) {
        if (slow(i) && std::this_thread::get_id() != taker) {  // take()'s own inline reads never wait
          std::unique_lock lock(mutex);
          most_slow_in_flight = std::max(most_slow_in_flight, ++slow_in_flight);
          if (most_slow_in_flight >= 4) released = true;
          four_in_flight.notify_all();
          if (!four_in_flight.wait_for(lock, std::chrono::seconds(60), [&] { return released; })) gave_up = released = true;
          --slow_in_flight;
        }
        return path(i);
      },
      0, kFiles, options, slow);
  bool inline_before_slow = false, inline_during_slow = true;
  for (int i = 0; i < kFiles; ++i) {
    if (i == 99) inline_before_slow = reader.reading_inline();
    if (i == 150) inline_during_slow = reader.reading_inline();
    auto r = reader.take();
    ASSERT_TRUE(r.has_value());
    ASSERT_FALSE(r->problem) << *r->problem;
    ASSERT_EQ(std::string(reinterpret_cast<const char*>(r->bytes.data()), r->bytes.size()), contents_[i]) << "file " << i;
  }
  EXPECT_FALSE(reader.take().has_value());
  EXPECT_TRUE(inline_before_slow) << "fast files were not read inline";
  EXPECT_FALSE(inline_during_slow) << "slow files were read inline";
  EXPECT_FALSE(gave_up) << "slow files were not read four at a time";
  EXPECT_GE(most_slow_in_flight, 4);
  EXPECT_TRUE(reader.reading_inline()) << "did not go back to inline reads after the slow files";
}

// Sample buffers are not zero-filled (slip::Bytes), so a file that yields fewer bytes than its
// size promised must be a problem with no bytes, never a buffer whose tail was not written.
// sysfs files are such liars: st_size 4096, a few bytes of content. Read inline and by workers.
TEST_F(ReadAheadTest, FileShorterThanItsSizeIsAProblemWithNoBytes) {
  const std::string liar = "/sys/devices/system/cpu/online";
  struct stat st {};
  if (::stat(liar.c_str(), &st) != 0 || st.st_size != 4096) GTEST_SKIP() << "no sysfs file with a 4096-byte size here: " << liar;
  const ReadResult direct = read_whole_file(liar);
  ASSERT_TRUE(direct.problem);
  EXPECT_EQ(*direct.problem, "file shrank while reading");
  EXPECT_TRUE(direct.bytes.empty());
  // Every other file a liar, through a reader that goes inline after the first fast reads.
  ReadAheadOptions options{4, 1u << 20, UINT64_MAX};
  options.inline_below_us = 1e6;
  ReadAhead reader([&](uint64_t i) { return i % 2 ? liar : path(i); }, 0, 100, options);
  bool went_inline = false;
  for (uint64_t i = 0; i < 100; ++i) {
    went_inline = went_inline || reader.reading_inline();
    auto r = reader.take();
    ASSERT_TRUE(r.has_value());
    if (i % 2) {
      ASSERT_TRUE(r->problem) << "file " << i;
      EXPECT_TRUE(r->bytes.empty()) << "file " << i;
    } else {
      ASSERT_FALSE(r->problem) << *r->problem;
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(r->bytes.data()), r->bytes.size()), contents_[i]);
    }
  }
  EXPECT_TRUE(went_inline);
}

TEST_F(ReadAheadTest, DestroyedEarlyStopsCleanly) {
  ReadAhead reader([&](uint64_t i) { return path(i); }, 0, kFiles, {8, 20000, UINT64_MAX});
  ASSERT_TRUE(reader.take().has_value());
}  // workers blocked on the budget must wake and exit

}  // namespace
}  // namespace slip::detail
