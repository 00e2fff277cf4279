// One mapping from error class to exit code, with no re-classing on the way (issue 42/45): each
// kind of exception, thrown through the paths that used to catch std::exception and call it
// something else, keeps its class. A permission error is I/O (exit 4), never "bad input" (3)
// or a verification finding (1); out of memory is I/O "out of memory"; a slip::Error keeps its
// code.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <new>
#include <system_error>

#include "convert/manifest_build.hpp"
#include "format/staging.hpp"
#include "slip/cache.hpp"
#include "slip/convert.hpp"
#include "slip/error.hpp"
#include "slip/error_class.hpp"
#include "slip/source.hpp"
#include "slip/verify.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace {

slip::Error classed(const std::function<void()>& thrower) {
  try {
    thrower();
  } catch (...) {
    return slip::current_exception_error();
  }
  ADD_FAILURE() << "nothing was thrown";
  return slip::Error(slip::Errc::usage, "nothing thrown");
}

// Runs `body` as a user who may not read what root chmod'ed away (nobody, in a child process:
// root reads everything), or as this user when it is not root. `body` returns "" on success or
// what went wrong; the child's verdict comes back through a pipe.
std::string as_unprivileged(const std::function<std::string()>& body) {
  if (::geteuid() != 0) return body();
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string verdict;
    if (::setgid(65534) != 0 || ::setuid(65534) != 0)
      verdict = "cannot become nobody";
    else
      try {
        verdict = body();
      } catch (...) {
        verdict = "unexpected exception: " + slip::current_exception_error().describe();
      }
    if (verdict.empty()) verdict = "ok";
    (void)!::write(fds[1], verdict.data(), verdict.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string verdict;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) verdict.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return verdict == "ok" ? std::string() : verdict.empty() ? "the child died" : verdict;
}

// The error `f` throws, checked to be I/O naming "Permission denied"; "" when it is.
std::string expect_permission_error(const std::string& what, const std::function<void()>& f) {
  try {
    f();
  } catch (const slip::Error& e) {
    if (e.code() != slip::Errc::io) return what + ": class " + slip::errc_name(e.code()) + ", want io: " + e.describe();
    if (e.describe().find("Permission denied") == std::string::npos) return what + ": no OS message: " + e.describe();
    return {};
  } catch (...) {
    return what + ": not a slip::Error: " + slip::current_exception_error().describe();
  }
  return what + ": no error";
}

class ErrorClass : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("slip-error-class-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::permissions(dir_,
                    fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
    auto src = slip::open_imagefolder(std::string(SLIP_SOURCE_DIR) + "/examples/sample");
    slip::ConvertOptions opt;
    opt.output_dir = dir_ / "caches";
    cache_ = slip::convert(*src, opt).cache_path;
    for (const auto& e : fs::recursive_directory_iterator(dir_))  // readable by anyone, until a test says otherwise
      fs::permissions(e.path(), fs::perms::others_read | fs::perms::others_exec | fs::perms::group_read | fs::perms::group_exec,
                      fs::perm_options::add);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::permissions(cache_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }
  static inline fs::path dir_, cache_;
};

}  // namespace

TEST(ErrorClassMap, EachKindKeepsOrGetsItsClass) {
  const slip::Error kept = classed([] { throw slip::Error(slip::Errc::bad_input, "bad bytes").with_path("f.bin"); });
  EXPECT_EQ(kept.code(), slip::Errc::bad_input);
  EXPECT_EQ(kept.describe(), "f.bin: bad bytes");
  EXPECT_EQ(classed([] { throw slip::Error(slip::Errc::retryable, "503"); }).code(), slip::Errc::retryable);
  EXPECT_EQ(classed([] { throw slip::Error(slip::Errc::interrupted, "SIGINT"); }).code(), slip::Errc::interrupted);

  const slip::Error oom = classed([] { throw std::bad_alloc(); });
  EXPECT_EQ(oom.code(), slip::Errc::io);
  EXPECT_EQ(oom.message(), "out of memory");

  const slip::Error sys = classed([] { throw std::system_error(EACCES, std::generic_category(), "open"); });
  EXPECT_EQ(sys.code(), slip::Errc::io);
  EXPECT_NE(sys.message().find("Permission denied"), std::string::npos) << sys.describe();

  const slip::Error fse = classed(
      [] { throw fs::filesystem_error("status", fs::path("/x/manifest.json"), std::make_error_code(std::errc::permission_denied)); });
  EXPECT_EQ(fse.code(), slip::Errc::io);
  EXPECT_EQ(fse.path(), "/x/manifest.json");
  EXPECT_NE(fse.message().find("Permission denied"), std::string::npos) << fse.describe();

  const slip::Error other = classed([] { throw std::length_error("vector"); });
  EXPECT_EQ(other.code(), slip::Errc::io);
  EXPECT_EQ(other.message(), "internal error: vector");
  EXPECT_EQ(classed([] { throw 42; }).code(), slip::Errc::io);
}

// A cache directory this user may not search: opening and verifying it is I/O "Permission
// denied" (it was "not a slipstream cache (no manifest.json)", bad input, and a verify finding).
TEST_F(ErrorClass, UnsearchableCacheIsAnIoErrorEverywhere) {
  fs::permissions(cache_, fs::perms::owner_all);  // 0700, owned by root
  const std::string verdict = as_unprivileged([] {
    std::string v = expect_permission_error("Cache::open", [] { (void)slip::Cache::open(cache_); });
    if (v.empty()) v = expect_permission_error("verify_cache", [] { (void)slip::verify_cache(cache_, {}); });
    if (v.empty())
      v = expect_permission_error("is_complete_cache", [] { (void)slip::detail::is_complete_cache(cache_, std::string(64, '0')); });
    return v;
  });
  fs::permissions(cache_,
                  fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec | fs::perms::group_read | fs::perms::group_exec);
  EXPECT_EQ(verdict, "");
}

// An unreadable manifest: I/O from open, verify (not a finding: no report comes back), the reuse
// check and the job-array split record (which called it a damaged record, bad input).
TEST_F(ErrorClass, UnreadableManifestIsAnIoErrorEverywhere) {
  const fs::path manifest = cache_ / "manifest.json";
  fs::permissions(manifest, fs::perms::owner_read | fs::perms::owner_write);
  const fs::path workdir = dir_ / "split";
  fs::create_directories(workdir);
  { std::ofstream(workdir / "array.json") << "{\"count\": 2, \"task_min\": 0}\n"; }
  fs::permissions(workdir, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(workdir / "array.json", fs::perms::owner_read | fs::perms::owner_write);
  const std::string verdict = as_unprivileged([&] {
    std::string v = expect_permission_error("Cache::open", [] { (void)slip::Cache::open(cache_); });
    if (v.empty()) v = expect_permission_error("verify_cache", [] { (void)slip::verify_cache(cache_, {}); });
    if (v.empty()) v = expect_permission_error("reuse_problem", [] { (void)slip::detail::reuse_problem(cache_, std::string(64, '0')); });
    if (v.empty())
      v = expect_permission_error("resolve_auto_shard", [&] {
        slip::ShardSpec shard;
        shard.automatic = true;
        shard.task_id = 1;
        shard.task_min = 0;
        shard.count = 2;
        slip::detail::resolve_auto_shard(workdir, shard);
      });
    return v;
  });
  fs::permissions(manifest, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read | fs::perms::group_read);
  EXPECT_EQ(verdict, "");
}
