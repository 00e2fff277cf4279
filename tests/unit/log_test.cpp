// The library prints nothing: warnings reach the installed LogHandler, or nobody.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <mutex>
#include <string>
#include <vector>

#include "slip/convert.hpp"
#include "slip/log.hpp"
#include "slip/source.hpp"
#include "test_support.hpp"

namespace slip {
namespace {

// A tar with one sample and a symlink member, which the tar source warns about.
std::string tar_with_a_warning(const test::TempDir& dir) {
  const auto jpg = test::shared_dir() / "corpus/imagenet_like/n01440764";
  const auto first = *std::filesystem::directory_iterator(jpg);
  std::filesystem::create_directories(dir.path() / "s");
  std::filesystem::copy_file(first.path(), dir.path() / "s/a.jpg");
  std::ofstream(dir.path() / "s/a.cls") << "1\n";
  std::filesystem::create_symlink("a.jpg", dir.path() / "s/b.jpg");
  const std::string tar = (dir.path() / "w.tar").string();
  EXPECT_EQ(test::run("tar -cf " + tar + " -C " + (dir.path() / "s").string() + " a.jpg a.cls b.jpg").status, 0);
  return tar;
}

// Runs `body` with stdout and stderr redirected to a file; returns what was written there.
template <class F>
std::string captured_output(const test::TempDir& dir, F&& body) {
  const std::string path = (dir.path() / "captured").string();
  std::fflush(stdout);
  std::fflush(stderr);
  const int saved_out = ::dup(1), saved_err = ::dup(2);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(fd, 1);
  ::dup2(fd, 2);
  body();
  std::fflush(stdout);
  std::fflush(stderr);
  ::dup2(saved_out, 1);
  ::dup2(saved_err, 2);
  ::close(fd);
  ::close(saved_out);
  ::close(saved_err);
  return test::read_file(path);
}

TEST(LibraryLog, PrintsNothingWithoutAHandlerAndForwardsWithOne) {
  SLIP_REQUIRE_SHARED();
  test::TempDir dir;
  const std::string tar = tar_with_a_warning(dir);
  set_log_handler({});
  const std::string printed = captured_output(dir, [&] {
    auto source = open_source(tar);
    ConvertOptions options;
    options.output_dir = dir.path() / "out1";
    convert(*source, options);
  });
  EXPECT_EQ(printed, "");

  std::mutex m;
  std::vector<std::pair<LogLevel, std::string>> got;
  set_log_handler([&](LogLevel level, std::string_view message) {
    std::lock_guard lock(m);
    got.emplace_back(level, std::string(message));
  });
  const std::string printed2 = captured_output(dir, [&] {
    auto source = open_source(tar);
    ConvertOptions options;
    options.output_dir = dir.path() / "out2";
    convert(*source, options);
  });
  set_log_handler({});
  EXPECT_EQ(printed2, "");
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.front().first, LogLevel::warning);
  EXPECT_NE(got.front().second.find("member b.jpg"), std::string::npos) << got.front().second;
  EXPECT_NE(got.front().second.find("symlink skipped"), std::string::npos) << got.front().second;
}

}  // namespace
}  // namespace slip
