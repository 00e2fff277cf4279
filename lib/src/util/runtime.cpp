#include "slip/runtime.hpp"

#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "util/file_io.hpp"
#include "util/untrusted.hpp"

#include "slip/error.hpp"
#include "slip/simd.hpp"
#include "util/cancel.hpp"
#include "slip_version_config.hpp"
#include "util/worker_pool.hpp"

namespace slip {

namespace {
std::atomic<int> g_signal{0};
extern "C" void on_signal(int sig) { g_signal.store(sig, std::memory_order_relaxed); }
}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int interrupted() noexcept { return g_signal.load(std::memory_order_relaxed); }

namespace {
thread_local const std::atomic<bool>* t_cancel = nullptr;
const std::atomic<bool>* flag_of(const CancelToken& token) { return static_cast<const std::atomic<bool>*>(token.handle().get()); }
}  // namespace

CancelToken::CancelToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
void CancelToken::cancel() noexcept { const_cast<std::atomic<bool>*>(flag_of(*this))->store(true, std::memory_order_relaxed); }
bool CancelToken::cancelled() const noexcept { return flag_of(*this)->load(std::memory_order_relaxed); }

namespace detail {
const std::atomic<bool>* current_cancel_flag() noexcept { return t_cancel; }
// An outer call's token stays in force: a nested call with its own (never cancelled) token
// must not hide the outer cancellation, so the outer flag is kept when one is installed.
CancelScope::CancelScope(const CancelToken& token) : previous_(t_cancel) {
  if (!t_cancel) t_cancel = flag_of(token);
}
CancelScope::CancelScope(const std::atomic<bool>* flag) : previous_(t_cancel) { t_cancel = flag; }
CancelScope::~CancelScope() { t_cancel = previous_; }
}  // namespace detail

void set_interrupted(int signal) noexcept { g_signal.store(signal, std::memory_order_relaxed); }

void throw_if_interrupted() {
  if (t_cancel && t_cancel->load(std::memory_order_relaxed)) throw Error(Errc::interrupted, "cancelled");
  if (const int sig = interrupted()) throw Error(Errc::interrupted, sig == SIGTERM ? "terminated (SIGTERM)" : "interrupted (SIGINT)");
}

namespace {

// cgroup v2 "cpu.max" ("max 100000" or "200000 100000"), else cgroup v1 quota/period.
unsigned cgroup_cpu_limit() {
  std::ifstream v2("/sys/fs/cgroup/cpu.max");
  std::string quota;
  long long period = 0;
  if (v2 >> quota >> period && quota != "max" && period > 0) {
    const long long q = std::atoll(quota.c_str());
    if (q > 0) return static_cast<unsigned>(std::max(1LL, (q + period - 1) / period));
  }
  std::ifstream q1("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), p1("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  long long q = -1, p = 0;
  if (q1 >> q && p1 >> p && q > 0 && p > 0) return static_cast<unsigned>(std::max(1LL, (q + p - 1) / p));
  return 0;
}

}  // namespace

unsigned available_cpus() {
  unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = std::max(1, CPU_COUNT(&set));
  if (const unsigned limit = cgroup_cpu_limit(); limit > 0) cpus = std::min(cpus, limit);
  return std::max(1u, cpus);
}

unsigned available_cpus(const Environment& env) {
  unsigned cpus = available_cpus();
  if (const auto slurm = env_value(env, "SLURM_CPUS_PER_TASK")) {
    const uint64_t n = detail::parse_decimal<uint64_t>(*slurm).value_or(0);  // not a number: ignored
    if (n > 0) cpus = static_cast<unsigned>(std::min<uint64_t>(cpus, n));
  }
  return cpus;
}

Environment process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
}

std::optional<std::string> env_value(const Environment& env, std::string_view name) {
  if (!env) return std::nullopt;
  auto v = env(name);
  if (v && v->empty()) return std::nullopt;
  return v;
}

void parallel_for(size_t count, unsigned threads, const std::function<void(size_t)>& body) {
  if (count == 0) return;
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::min<size_t>(count, 1024))));
  if (threads == 1) {
    for (size_t i = 0; i < count; ++i) body(i);
    return;
  }
  // The engine's pool, with the same exception rule; the caller's cancel flag follows the work.
  const std::atomic<bool>* cancel = t_cancel;
  detail::WorkerPool pool(threads);
  pool.run(count, [&](unsigned, size_t i) {
    const detail::CancelScope scope(cancel);
    body(i);
  });
}

int open_output_file(const std::filesystem::path& path) { return detail::open_for_writing(path, detail::Create::user_output).release(); }

std::filesystem::path default_cache_root(const Environment& env) {
  const auto home = env_value(env, "HOME");
  if (auto dir = env_value(env, "SLIPSTREAM_CACHE_DIR")) {
    if (dir->rfind("~/", 0) == 0 || *dir == "~") {
      if (!home) throw Error(Errc::usage, "SLIPSTREAM_CACHE_DIR starts with ~ but HOME is not set");
      *dir = *home + dir->substr(1);
    }
    return std::filesystem::absolute(*dir).lexically_normal();
  }
  if (!home) throw Error(Errc::usage, "no cache directory: set SLIPSTREAM_CACHE_DIR or HOME, or pass -o DIR");
  return std::filesystem::path(*home) / ".slipstream";
}

std::string version() { return SLIP_VERSION_STRING; }

}  // namespace slip
