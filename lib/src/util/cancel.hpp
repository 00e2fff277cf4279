// Per-call cancellation: a public entry point installs its options' CancelToken for the
// duration of the call (CancelScope); throw_if_interrupted() checks it besides the process's
// signal flag, and parallel_for carries it into its worker threads.
#pragma once

#include <atomic>

#include "slip/runtime.hpp"

namespace slip::detail {

// The flag checked by throw_if_interrupted() on this thread (nullptr: none).
const std::atomic<bool>* current_cancel_flag() noexcept;

class CancelScope {
 public:
  explicit CancelScope(const CancelToken& token);
  explicit CancelScope(const std::atomic<bool>* flag);  // a worker thread adopting its caller's
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

}  // namespace slip::detail
