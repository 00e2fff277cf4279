// slip/runtime.hpp — process-wide concerns: interruption, thread counts, parallel loops.
#pragma once

#include "slip/export.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

SLIP_API_BEGIN
namespace slip {

// Cancels one call from another thread: put a token in the call's options (ConvertOptions,
// SourceOptions, MergeOptions, VerifyOptions), call cancel() whenever; the call stops at its next
// check (every few samples or files) with Error(Errc::interrupted, "cancelled") and removes its
// temporary files, as it does on SIGINT. Copies share one flag; a default token is never cancelled
// unless cancel() is called on it or a copy.
class CancelToken {
 public:
  CancelToken();
  void cancel() noexcept;
  bool cancelled() const noexcept;
  const std::shared_ptr<const void>& handle() const noexcept { return flag_; }  // for the library's checks

 private:
  std::shared_ptr<const void> flag_;
};

// The library reads no environment variable by itself. The few conventions it honours
// (SLURM_ARRAY_TASK_*, SLURM_CPUS_PER_TASK, SLIPSTREAM_CACHE_DIR, HOME, AWS_*, CURL_CA_BUNDLE;
// SOURCE_DATE_EPOCH through ConvertOptions::created) are looked up through an Environment that
// the caller passes in options; the `slip` command passes process_environment(). An empty
// Environment has no variables. (libcurl itself still honours the proxy variables.)
using Environment = std::function<std::optional<std::string>(std::string_view name)>;
// getenv(); variables set to the empty string count as unset.
Environment process_environment();
// env(name) when env is set and the value is not empty, else nullopt.
std::optional<std::string> env_value(const Environment& env, std::string_view name);

// Installs SIGINT/SIGTERM handlers that only record the signal; long-running library calls
// poll interrupted() and unwind with Error(interrupted), removing their temporary files.
void install_interrupt_handlers();
// 0, or the number of the signal that asked us to stop.
int interrupted() noexcept;
// Throws Error(Errc::interrupted) if a signal arrived or the token of the call running on this
// thread (or of the call whose parallel_for started it) was cancelled.
void throw_if_interrupted();
// For tests and embedding programs: record `signal` as if it had been delivered (0 clears).
void set_interrupted(int signal) noexcept;

// CPUs this process may use: sched_getaffinity, capped by the cgroup CPU quota. Always >= 1.
// What `threads = 0` means in the library's options.
unsigned available_cpus();
// ... also capped by SLURM_CPUS_PER_TASK when `env` has it (the `slip` command's default -j).
unsigned available_cpus(const Environment& env);

// The most worker threads a conversion starts (-j): beyond any machine's cores; a larger count
// is a mistake that would start threads until the system refuses.
inline constexpr unsigned kMaxConvertThreads = 1024;

// Runs body(i) for i in [0, count) on up to `threads` threads (the caller's included).
// The first exception thrown by any body is rethrown after all threads stop.
void parallel_for(size_t count, unsigned threads, const std::function<void(size_t)>& body);

// Where the slip command keeps caches: $SLIPSTREAM_CACHE_DIR (a leading ~ is $HOME) if set,
// else $HOME/.slipstream, both looked up in `env` (pass process_environment()). Throws
// Error(usage) when neither is set. The library never picks a directory by itself.
std::filesystem::path default_cache_root(const Environment& env);

// Opens (creates or truncates) a file the user named as an output (-o FILE) for writing and
// returns its descriptor, which the caller closes. Never through a symbolic link, which anyone
// who can write to its directory could have planted (the system's own /dev/stdout and
// /dev/fd/N are followed); a FIFO or a device such as /dev/null is written as a shell's
// redirection would. Throws Error(io) naming the path.
int open_output_file(const std::filesystem::path& path);

// Progress of a long phase, reported to the caller's callback (throttled by the caller).
// `phase` names it: "scan" (listing an ImageFolder's class folders: done/total folders),
// "fingerprint" (stat or hash of every file: done/total files), "convert" (samples written:
// done/total samples, bytes so far).
struct ProgressUpdate {
  uint64_t done = 0;
  std::optional<uint64_t> total;
  uint64_t bytes = 0;
  std::string_view phase = "convert";
};
using ProgressCallback = std::function<void(const ProgressUpdate&)>;

// Library version ("0.1.0"). build_info() (slip/decode.hpp) adds the libraries it was built with.
std::string version();

}  // namespace slip
SLIP_API_END
