// slip's one thread pool. Persistent: threads are started once (per engine, or per
// parallel_for call), not per batch, and each body call learns its thread's index so it can
// use that thread's scratch buffers. One exception rule everywhere: the first exception a body
// throws stops the handing out of further indices and is rethrown by run() once every thread
// has finished its current item.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace slip::detail {

class WorkerPool {
 public:
  using Body = std::function<void(unsigned thread, size_t index)>;
  explicit WorkerPool(unsigned threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  unsigned size() const noexcept { return static_cast<unsigned>(threads_.size()) + 1; }
  // Runs body(thread, i) for every i in [0, count) on all threads (the caller is thread 0) and
  // returns when all are done; rethrows the first exception a body threw (the remaining
  // indices are then not run).
  void run(size_t count, const Body& body);

 private:
  void loop(unsigned thread);
  void work(unsigned thread);

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  uint64_t generation_ = 0;
  bool stop_ = false;
  unsigned active_ = 0;
  const Body* body_ = nullptr;
  size_t count_ = 0;
  std::atomic<size_t> next_{0};
  std::atomic<bool> failed_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;  // the first, under error_mutex_
};

}  // namespace slip::detail
