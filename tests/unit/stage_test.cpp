// Node-local staging (slip/stage.hpp): one copier per directory, takeover of a killed copier,
// damaged sources refused, eviction under a budget that spares held caches, no second copy.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "slip/cache.hpp"
#include "slip/convert.hpp"
#include "slip/error.hpp"
#include "slip/source.hpp"
#include "slip/stage.hpp"
#include "slip/subset.hpp"
#include "slip/verify.hpp"
#include "test_support.hpp"
#include "util/atomic_file.hpp"
#include "util/file_io.hpp"

namespace slip {
namespace {

namespace fs = std::filesystem;

class Stage : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = std::make_unique<test::TempDir>();
    auto src = open_source(std::string(SLIP_SOURCE_DIR) + "/examples/sample");
    ConvertOptions opt;
    opt.output_dir = tmp_->path() / "caches";
    cache_ = convert(*src, opt).cache_path;
  }
  static void TearDownTestSuite() { tmp_.reset(); }
  void SetUp() override {
    dir_ = tmp_->path() / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::create_directories(dir_);
  }
  StageOptions options() const {
    StageOptions o;
    o.dir = dir_ / "stage";
    o.links = false;  // count copied bytes: the same file system would allow a link
    o.threads = 1;
    return o;
  }
  static uint64_t cache_bytes(const fs::path& dir) {
    uint64_t n = 0;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && !e.path().filename().string().ends_with(".lock")) n += e.file_size();
    return n;
  }
  // A copy of the cache under another directory name (a distinct staged cache): "<stem>-<id8>.slipstream",
  // as slip names caches, so that it is staged under that name.
  fs::path copy_named(const std::string& name) const {
    const std::string stem = name.substr(0, name.size() - std::string(".slipstream").size());
    const fs::path to = dir_ / "sources" / (stem + "-" + Cache::open(cache_).provenance().content_id.substr(0, 8) + ".slipstream");
    fs::create_directories(to.parent_path());
    fs::copy(cache_, to, fs::copy_options::recursive);
    return to;
  }
  static inline std::unique_ptr<test::TempDir> tmp_;
  static inline fs::path cache_;
  fs::path dir_;
};

TEST_F(Stage, SixConcurrentCallersCopyOnce) {
  const StageOptions o = options();
  std::vector<StagedCache> got(6);
  std::vector<std::string> errors(6);
  std::vector<std::thread> threads;
  // flock conflicts between separate opens of the lock file, so threads contend as processes do.
  for (size_t i = 0; i < 6; ++i)
    threads.emplace_back([&, i] {
      try {
        got[i] = stage(cache_, o);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  uint64_t copied_bytes = 0, copiers = 0;
  for (size_t i = 0; i < 6; ++i) {
    ASSERT_EQ(errors[i], "") << "caller " << i;
    EXPECT_TRUE(got[i].held());
    EXPECT_EQ(got[i].path(), o.dir / cache_.filename());
    copied_bytes += got[i].bytes_copied;
    copiers += got[i].copied;
  }
  EXPECT_EQ(copiers, 1u);
  EXPECT_EQ(copied_bytes, cache_bytes(cache_));  // the source's bytes were read once in all
  EXPECT_TRUE(verify_cache(o.dir / cache_.filename()).ok());
}

TEST_F(Stage, AlreadyStagedIsNotCopiedAgainButACutCopyIs) {
  const StageOptions o = options();
  StagedCache first = stage(cache_, o);
  EXPECT_TRUE(first.copied);
  EXPECT_EQ(first.bytes_copied, first.bytes);
  EXPECT_GT(first.bytes_verified, 0u);
  StagedCache again = stage(cache_, o);
  EXPECT_FALSE(again.copied);
  EXPECT_EQ(again.bytes_copied, 0u);
  // A file of the copy cut afterwards: no longer whole. Held, it is never replaced under its
  // readers; released, the next caller copies it again.
  fs::resize_file(first.path() / "label.npy", 10);
  EXPECT_THROW((void)stage(cache_, o), Error);
  first.release();
  again.release();
  const StagedCache third = stage(cache_, o);
  EXPECT_TRUE(third.copied);
  EXPECT_TRUE(verify_cache(third.path()).ok());
}

TEST_F(Stage, LinksWhereTheFileSystemAllows) {
  StageOptions o = options();
  o.links = true;
  const StagedCache s = stage(cache_, o);
  EXPECT_EQ(s.bytes_copied + s.bytes_linked, s.bytes);
  EXPECT_TRUE(verify_cache(s.path()).ok());
}

TEST_F(Stage, KilledCopierIsTakenOver) {
  const StageOptions o = options();
  int reached[2], never[2];
  ASSERT_EQ(::pipe(reached), 0);
  ASSERT_EQ(::pipe(never), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    StageOptions co = o;
    co.progress = [&](uint64_t done, uint64_t total) {
      if (done == 0 || done >= total) return;
      (void)!::write(reached[1], "x", 1);  // midway: tell the parent, then wait to be killed
      char c;
      (void)!::read(never[0], &c, 1);
      ::_exit(3);
    };
    try {
      (void)stage(cache_, co);
    } catch (...) {
    }
    ::_exit(2);  // finished without pausing: the test cannot kill it midway
  }
  ::close(reached[1]);
  char c = 0;
  ASSERT_EQ(::read(reached[0], &c, 1), 1) << "the copier ended before it was midway";
  const auto temps = detail::find_temporaries(o.dir);
  ASSERT_FALSE(temps.empty());
  EXPECT_TRUE(temps.front().in_progress);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  ::close(reached[0]);
  ::close(never[0]);
  ::close(never[1]);
  EXPECT_FALSE(fs::exists(o.dir / cache_.filename()));
  const StagedCache s = stage(cache_, o);  // takes the dead copier's lock, sweeps its leftovers
  EXPECT_TRUE(s.copied);
  EXPECT_TRUE(detail::find_temporaries(o.dir).empty());
  EXPECT_TRUE(verify_cache(s.path()).ok());
}

TEST_F(Stage, DamagedSourceIsRefusedAndNothingPublished) {
  for (const char* file : {"image.bin", "label.npy"}) {
    const fs::path src = copy_named(std::string("damaged-") + file + ".slipstream");
    {
      std::fstream f(src / file, std::ios::in | std::ios::out | std::ios::binary);
      const auto size = static_cast<std::streamoff>(fs::file_size(src / file));
      f.seekg(size - 3);  // inside the last payload / the last value
      char byte = 0;
      f.read(&byte, 1);
      byte = static_cast<char>(byte ^ 0x20);
      f.seekp(size - 3);
      f.write(&byte, 1);
    }
    const StageOptions o = options();
    try {
      (void)stage(src, o);
      ADD_FAILURE() << file << ": a damaged source was staged";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::bad_input) << e.describe();
      EXPECT_NE(e.describe().find("checksum mismatch"), std::string::npos) << e.describe();
      EXPECT_NE(e.path().find(file), std::string::npos) << e.describe();
    }
    EXPECT_FALSE(fs::exists(o.dir / src.filename())) << file;
    EXPECT_TRUE(detail::find_temporaries(o.dir).empty()) << file;
  }
}

TEST_F(Stage, FilesTheCacheDoesNotAccountForAreRefusedBeforeCopying) {
  // A stray sparse file, and a table grown past its recorded size: both were copied whole (a
  // 3 GB stray file: 32 s and 3 GB written) before the check of the copy refused them, and a
  // budget evicted staged caches to make room for them.
  const fs::path stray = copy_named("stray.slipstream");
  { std::ofstream(stray / "notes.bin"); }
  fs::resize_file(stray / "notes.bin", uint64_t{8} << 20);
  const fs::path grown = copy_named("grown.slipstream");
  fs::resize_file(grown / "image.bin", fs::file_size(grown / "image.bin") + (uint64_t{8} << 20));
  for (const auto& [src, file, why] :
       {std::tuple{stray, "notes.bin", "unknown file"}, std::tuple{grown, "image.bin", "differs from file_sizes"}}) {
    StageOptions o = options();
    uint64_t copied = 0;
    o.progress = [&](uint64_t done, uint64_t) { copied = std::max(copied, done); };
    try {
      (void)stage(src, o);
      ADD_FAILURE() << file << ": staged";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::bad_input) << e.describe();
      EXPECT_EQ(e.path(), (src / file).string()) << e.describe();
      EXPECT_NE(e.describe().find(why), std::string::npos) << e.describe();
      EXPECT_NE(e.describe().find("nothing was copied"), std::string::npos) << e.describe();
    }
    EXPECT_EQ(copied, 0u) << file << ": bytes were copied before the refusal";
    EXPECT_FALSE(fs::exists(o.dir / src.filename())) << file;
    EXPECT_TRUE(detail::find_temporaries(o.dir).empty()) << file;
  }
  // Temporaries and lock files of commands in the source are not part of the copy, nor refused.
  const fs::path busy = copy_named("busy.slipstream");
  { std::ofstream(busy / "manifest.json.lock"); }
  const StagedCache s = stage(busy, options());
  EXPECT_TRUE(verify_cache(s.path()).ok());
}

// The source's writers (`slip index`, `slip yuv420` hold its manifest.json.lock exclusively while
// they add files and replace the manifest) cannot run while it is copied: the copy is one state of
// the cache. Before, nothing was held, and a copy taken during an index run was refused as damaged
// (exit 3). Checked from inside the copy (the progress callback), without timing.
TEST_F(Stage, TheSourcesWritersWaitUntilTheCopyIsPublished) {
  const fs::path src = copy_named("locked.slipstream");
  const fs::path lock = src / "manifest.json.lock";
  StageOptions o = options();
  int tries = 0, refused = 0;
  o.progress = [&](uint64_t, uint64_t) {
    ++tries;
    const detail::UniqueFd fd(::open(lock.c_str(), O_RDWR | O_CLOEXEC));
    if (fd && ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) ++refused;
  };
  const StagedCache s = stage(src, o);
  EXPECT_GT(tries, 0);
  EXPECT_EQ(refused, tries) << "a writer could have taken the source's lock during the copy";
  {
    const detail::UniqueFd after(::open(lock.c_str(), O_RDWR | O_CLOEXEC));
    ASSERT_TRUE(after);
    EXPECT_EQ(::flock(after.get(), LOCK_EX | LOCK_NB), 0) << "still held after the stage";
  }
  EXPECT_TRUE(verify_cache(src).ok());  // the lock file is one of the cache's own files
}

TEST_F(Stage, BudgetEvictsLeastRecentlyUsedUnheldCaches) {
  const fs::path a = copy_named("a.slipstream"), b = copy_named("b.slipstream"), c = copy_named("c.slipstream"),
                 d = copy_named("d.slipstream");
  StageOptions o = options();
  const uint64_t size = cache_bytes(cache_);
  o.budget = 2 * size + size / 2;  // two caches fit
  StagedCache held_a = stage(a, o);
  StagedCache staged_b = stage(b, o);
  staged_b.release();
  // Last uses in a known order (file times can be coarser than two stagings): a oldest.
  const auto set_used = [&](const std::string& name, time_t when) {
    const struct timespec t[2] = {{when, 0}, {when, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, (o.dir / ("." + name + ".stage-lock")).c_str(), t, 0), 0);
  };
  set_used(a.filename().string(), 1000);
  set_used(b.filename().string(), 2000);
  // a is the least recently used but held: b goes.
  const StagedCache staged_c = stage(c, o);
  ASSERT_EQ(staged_c.evicted.size(), 1u);
  EXPECT_EQ(staged_c.evicted.front(), o.dir / b.filename());
  EXPECT_TRUE(fs::exists(o.dir / a.filename()));
  EXPECT_FALSE(fs::exists(o.dir / b.filename()));
  EXPECT_FALSE(fs::exists(o.dir / ".b.slipstream.stage-lock"));
  // a and c both held: d does not fit, and nothing is removed.
  try {
    (void)stage(d, o);
    ADD_FAILURE() << "d was staged beyond the budget";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::io) << e.describe();
    EXPECT_NE(e.describe().find("does not fit the budget"), std::string::npos) << e.describe();
  }
  EXPECT_TRUE(fs::exists(o.dir / a.filename()));
  EXPECT_TRUE(fs::exists(o.dir / c.filename()));
  EXPECT_FALSE(fs::exists(o.dir / d.filename()));
  EXPECT_TRUE(detail::find_temporaries(o.dir).empty());
  // Released, a goes (the least recently used) and d fits.
  held_a.release();
  const StagedCache staged_d = stage(d, o);
  ASSERT_EQ(staged_d.evicted.size(), 1u);
  EXPECT_EQ(staged_d.evicted.front(), o.dir / a.filename());
  EXPECT_TRUE(verify_cache(staged_d.path()).ok());
  // Larger than the whole budget: refused before anything is removed.
  o.budget = size - 1;
  EXPECT_THROW((void)stage(a, o), Error);
  EXPECT_TRUE(fs::exists(o.dir / c.filename()));
}

// Two caches of one directory name (every job array's parts are "part-00000-of-00002.slipstream"):
// staging the second failed while the first was held ("a reader is using" an "older copy"), or
// replaced it, so a Loader over two job arrays' parts could not stage. A name without the
// content id gets it added; slip's "<name>-<id8>.slipstream" stays as it is.
TEST_F(Stage, CachesOfOneDirectoryNameAreStagedApart) {
  const fs::path a = dir_ / "a" / "part-00000-of-00002.slipstream", b = dir_ / "b" / "part-00000-of-00002.slipstream";
  fs::create_directories(a.parent_path());
  fs::copy(cache_, a, fs::copy_options::recursive);
  ConvertOptions opt;
  opt.output_dir = dir_ / "subset";
  const fs::path sub = convert(*open_cache_subset(cache_, {0, 1, 2}), opt).cache_path;
  fs::create_directories(b.parent_path());
  fs::copy(sub, b, fs::copy_options::recursive);
  const StageOptions o = options();
  const StagedCache sa = stage(a, o);
  const StagedCache sb = stage(b, o);
  const std::string id_a = Cache::open(a).provenance().content_id, id_b = Cache::open(b).provenance().content_id;
  EXPECT_EQ(sa.path(), o.dir / ("part-00000-of-00002-" + id_a.substr(0, 8) + ".slipstream"));
  EXPECT_EQ(sb.path(), o.dir / ("part-00000-of-00002-" + id_b.substr(0, 8) + ".slipstream"));
  EXPECT_EQ(Cache::open(sa.path()).size(), 40u);
  EXPECT_EQ(Cache::open(sb.path()).size(), 3u);
  EXPECT_TRUE(stage(a, o).held());  // found again under its name, not copied again
  EXPECT_FALSE(stage(a, o).copied);
  EXPECT_EQ(stage(cache_, o).path(), o.dir / cache_.filename());
}

TEST_F(Stage, SourceNamedWithDotOrSlashStagesUnderItsName) {
  const StageOptions o = options();
  for (const fs::path& src : {cache_ / ".", fs::path(cache_.string() + "/"), cache_ / "x" / ".."}) {
    const StagedCache s = stage(src, o);
    EXPECT_EQ(s.path(), o.dir / cache_.filename()) << src;
    EXPECT_EQ(s.source(), cache_) << src;
  }
}

TEST_F(Stage, InTheWayAndStageDirRule) {
  const StageOptions o = options();
  fs::create_directories(o.dir / cache_.filename());  // not placed by slip stage
  EXPECT_THROW((void)stage(cache_, o), Error);
  EXPECT_TRUE(fs::is_directory(o.dir / cache_.filename()));

  const Environment none = [](std::string_view) { return std::optional<std::string>(); };
  const Environment empty = [](std::string_view) { return std::optional<std::string>(""); };
  const Environment shm = [](std::string_view name) {
    return name == "SLIP_STAGE_DIR" ? std::optional<std::string>("/dev/shm/x") : std::nullopt;
  };
  EXPECT_EQ(stage_dir_from(std::nullopt, none), std::nullopt);
  EXPECT_EQ(stage_dir_from(fs::path(), none), std::nullopt);
  EXPECT_EQ(stage_dir_from(std::nullopt, empty), std::nullopt);
  EXPECT_EQ(stage_dir_from(std::nullopt, shm), fs::path("/dev/shm/x"));
  EXPECT_EQ(stage_dir_from(fs::path("/local"), shm), fs::path("/local"));
}

}  // namespace
}  // namespace slip
