// slip/runtime.hpp — process-wide concerns: interruption, thread counts, parallel loops.
#pragma once

#include "slip/export.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

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

// CPUs this process may use: sched_getaffinity, capped by the cgroup CPU quota and by
// SLURM_CPUS_PER_TASK when set. Always >= 1.
unsigned available_cpus();

// Runs body(i) for i in [0, count) on up to `threads` threads (the caller's included).
// The first exception thrown by any body is rethrown after all threads stop.
void parallel_for(size_t count, unsigned threads, const std::function<void(size_t)>& body);

// Library version ("0.1.0") and the versions of the libraries it was built with.
std::string version();
std::string build_info();

}  // namespace slip
SLIP_API_END
