// util/atomic_file.hpp: the one way slip replaces a file.
#include "util/atomic_file.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "slip/error.hpp"
#include "test_support.hpp"
#include "util/file_io.hpp"

namespace slip {
namespace {

namespace fs = std::filesystem;

size_t entries(const fs::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicFile, TemporaryIsNeverVisibleUnderTheFinalName) {
  test::TempDir tmp;
  const fs::path file = tmp.path() / "data.json";
  detail::replace_file(file, "old");
  {
    detail::AtomicFile f(file);
    EXPECT_NE(f.temp_path(), file);
    EXPECT_EQ(f.temp_path().parent_path(), file.parent_path());  // same file system: rename is atomic
    detail::write_text_file(f.temp_path(), "new");
    EXPECT_EQ(test::read_file(file), "old");  // written, not yet committed
    // The temporary is recognisably slip's and in progress (its lock is held).
    const auto temps = detail::find_temporaries(tmp.path(), "data.json");
    ASSERT_EQ(temps.size(), 1u);
    EXPECT_TRUE(temps[0].in_progress);
    f.commit();
    EXPECT_EQ(test::read_file(file), "new");
  }
  EXPECT_EQ(entries(tmp.path()), 1u) << "the temporary or its lock file was left behind";
}

TEST(AtomicFile, UncommittedWriteLeavesTheOldFile) {
  test::TempDir tmp;
  const fs::path file = tmp.path() / "data.bin";
  detail::replace_file(file, "old");
  {
    detail::AtomicFile f(file);
    detail::write_text_file(f.temp_path(), "half-written");
    // ... and the writer fails: no commit().
  }
  EXPECT_EQ(test::read_file(file), "old");
  EXPECT_EQ(entries(tmp.path()), 1u);
}

TEST(AtomicFile, FailedRenameThrowsAndLeavesTheOldEntry) {
  test::TempDir tmp;
  const fs::path target = tmp.path() / "busy";
  fs::create_directories(target / "inside");  // a non-empty directory: rename(2) over it fails
  try {
    detail::replace_file(target, "new");
    FAIL() << "replacing a non-empty directory succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::io);
  }
  EXPECT_TRUE(fs::is_directory(target / "inside"));
  EXPECT_EQ(entries(tmp.path()), 1u) << "the temporary was left behind";
}

TEST(AtomicFile, RemovesAbandonedTemporariesOfTheSameName) {
  test::TempDir tmp;
  const fs::path file = tmp.path() / "m.json";
  // A killed run's leftover: its lock file exists but nobody holds it.
  const fs::path stale = tmp.path() / ".m.json.tmp-1-deadbeef";
  detail::write_text_file(stale, "junk");
  detail::write_text_file(stale.string() + ".lock", "");
  detail::replace_file(file, "fresh");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_FALSE(fs::exists(stale.string() + ".lock"));
  EXPECT_EQ(test::read_file(file), "fresh");
}

TEST(AtomicFile, CreatesAFileThatDidNotExist) {
  test::TempDir tmp;
  detail::replace_file(tmp.path() / "new.txt", "x");
  EXPECT_EQ(test::read_file(tmp.path() / "new.txt"), "x");
  EXPECT_EQ(entries(tmp.path()), 1u);
}

}  // namespace
}  // namespace slip
