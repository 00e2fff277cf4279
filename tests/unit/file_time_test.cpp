// The fingerprint clock (util/file_time.hpp): exact Unix nanoseconds for every real time, and no
// overflow for a time past 2262 (a server's Last-Modified of 2500 reaches it through a download).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "util/file_time.hpp"

namespace slip::detail {
namespace {

TEST(FileTime, ExactNanosecondsForRealTimes) {
  struct stat st {};
  st.st_mtim.tv_sec = 1700000000;
  st.st_mtim.tv_nsec = 123456789;
  EXPECT_EQ(unix_mtime_ns(st), int64_t{1700000000123456789});
  st.st_mtim.tv_sec = -1;  // 1969: before the epoch is still exact
  st.st_mtim.tv_nsec = 5;
  EXPECT_EQ(unix_mtime_ns(st), int64_t{-999999995});
}

TEST(FileTime, FarFutureFileTimesDoNotOverflowAndStayDistinct) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() / ("slip-file-time-" + std::to_string(::getpid()));
  std::ofstream(file) << "x";
  const auto touch = [&](time_t seconds) {
    const struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
    struct stat st {};
    return ::utimensat(AT_FDCWD, file.c_str(), times, 0) == 0 && ::stat(file.c_str(), &st) == 0 && st.st_mtim.tv_sec == seconds;
  };
  // Past 2262 (int64 nanoseconds end there) and before 2446 (where ext4 clamps).
  const time_t year_2300 = 10413792000, year_2301 = year_2300 + 31536000;
  if (!touch(year_2300)) GTEST_SKIP() << "this file system does not keep a time in 2300";
  const int64_t a = unix_mtime_ns(file);  // UBSan (scripts/ci-sanitizers.sh) fails here on overflow
  ASSERT_TRUE(touch(year_2301));
  EXPECT_NE(a, unix_mtime_ns(file));
  EXPECT_NE(a, 0);
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace slip::detail
