// Counts the work of one phase from any number of threads and reports it to the caller's
// ProgressCallback from the thread that created it only (callbacks need no locking), at most
// every 100 ms, and once more at finish().
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string_view>
#include <thread>

#include "slip/runtime.hpp"

namespace slip::detail {

class PhaseProgress {
 public:
  PhaseProgress(const ProgressCallback& callback, std::string_view phase, std::optional<uint64_t> total)
      : callback_(callback), phase_(phase), total_(total), owner_(std::this_thread::get_id()) {}

  void add(uint64_t n = 1) {
    const uint64_t done = done_.fetch_add(n, std::memory_order_relaxed) + n;
    if (!callback_ || std::this_thread::get_id() != owner_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    callback_(ProgressUpdate{done, total_, 0, phase_});
  }
  void finish() {
    if (callback_) callback_(ProgressUpdate{done_.load(), total_, 0, phase_});
  }

 private:
  const ProgressCallback& callback_;
  std::string_view phase_;
  std::optional<uint64_t> total_;
  std::thread::id owner_;
  std::atomic<uint64_t> done_{0};
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace slip::detail
