// A FIFO between two pipeline stages holding at most `capacity` items: the producer waits when
// it is full (so the bytes in flight stay bounded), the consumer when it is empty. close()
// ends the stream (pop() returns nullopt once drained); abort() wakes both sides at once and
// makes every later push/pop fail, so a stage that failed stops the others.
#pragma once

#include <condition_variable>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

namespace slip::detail {

template <class T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(capacity ? capacity : 1) {}

  // False when the queue was aborted (the item is dropped).
  bool push(T item) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return aborted_ || items_.size() < capacity_; });
    if (aborted_) return false;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }
  // The next item; nullopt when closed and drained, or aborted.
  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return aborted_ || closed_ || !items_.empty(); });
    if (aborted_ || items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }
  // An item if one is waiting, without blocking.
  std::optional<T> try_pop() {
    std::lock_guard lock(mutex_);
    if (aborted_ || items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }
  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    not_empty_.notify_all();
  }
  void abort() {
    std::lock_guard lock(mutex_);
    aborted_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable not_full_, not_empty_;
  std::deque<T> items_;
  size_t capacity_;
  bool closed_ = false, aborted_ = false;
};

// Bytes held by a pipeline, across all its stages: acquire() before reading more waits while
// `limit` or more are held; release() when they are written. abort() wakes the waiter for good.
class ByteBudget {
 public:
  explicit ByteBudget(uint64_t limit) : limit_(limit) {}
  // Waits until fewer than `limit` bytes are held; false when aborted.
  bool wait_for_room() {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return aborted_ || held_ < limit_; });
    return !aborted_;
  }
  bool full() const {
    std::lock_guard lock(mutex_);
    return held_ >= limit_;
  }
  void add(uint64_t bytes) {
    std::lock_guard lock(mutex_);
    held_ += bytes;
  }
  void release(uint64_t bytes) {
    std::lock_guard lock(mutex_);
    held_ -= std::min(bytes, held_);
    room_.notify_all();
  }
  void abort() {
    std::lock_guard lock(mutex_);
    aborted_ = true;
    room_.notify_all();
  }

 private:
  const uint64_t limit_;
  mutable std::mutex mutex_;
  std::condition_variable room_;
  uint64_t held_ = 0;
  bool aborted_ = false;
};

}  // namespace slip::detail
