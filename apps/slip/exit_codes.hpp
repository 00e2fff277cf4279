// The exit codes of the `slip` command (README "Exit codes"): the library reports categories
// (slip::Errc); this is the one place that turns them into process exit statuses.
#pragma once

#include <csignal>

#include "slip/error.hpp"
#include "slip/runtime.hpp"

namespace slip::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitVerifyFailed = 1,  // a cache failed verification (verify, merge --status)
  kExitUsage = 2,
  kExitBadInput = 3,
  kExitIo = 4,
  kExitRetryable = 5,  // a remote failure after retries: SLURM may requeue
};

// 130 (SIGINT) or 143 (SIGTERM) for an interruption, as shells report a signal.
inline int exit_code(Errc code) noexcept {
  switch (code) {
    case Errc::usage:
      return kExitUsage;
    case Errc::bad_input:
      return kExitBadInput;
    case Errc::io:
      return kExitIo;
    case Errc::retryable:
      return kExitRetryable;
    case Errc::interrupted:
      return 128 + (slip::interrupted() ? slip::interrupted() : SIGINT);
  }
  return kExitIo;
}

}  // namespace slip::cli
