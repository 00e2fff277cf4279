#include "util/worker_pool.hpp"

#include <algorithm>
#include <utility>

namespace slip::detail {

WorkerPool::WorkerPool(unsigned threads) {
  for (unsigned t = 1; t < std::max(threads, 1u); ++t) threads_.emplace_back([this, t] { loop(t); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::work(unsigned thread) {
  while (!failed_.load(std::memory_order_relaxed)) {
    const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= count_) return;
    try {
      (*body_)(thread, i);
    } catch (...) {
      std::lock_guard lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }
}

void WorkerPool::loop(unsigned thread) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    work(thread);
    std::lock_guard lock(mutex_);
    if (--active_ == 0) done_.notify_one();
  }
}

void WorkerPool::run(size_t count, const Body& body) {
  {
    std::lock_guard lock(mutex_);
    body_ = &body;
    count_ = count;
    next_.store(0, std::memory_order_relaxed);
    failed_.store(false, std::memory_order_relaxed);
    active_ = static_cast<unsigned>(threads_.size());
    ++generation_;
  }
  start_.notify_all();
  work(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return active_ == 0; });
  body_ = nullptr;
  // Every worker wrote error_ before its last decrement of active_ under mutex_.
  if (std::exception_ptr e = std::exchange(error_, nullptr)) std::rethrow_exception(e);
}

}  // namespace slip::detail
