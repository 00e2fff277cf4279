// A FIFO between two pipeline stages holding at most `capacity` items: the producer waits when
// it is full (so the bytes in flight stay bounded), the consumer when it is empty. close()
// ends the stream (pop() returns nullopt once drained); abort() wakes both sides at once and
// makes every later push/pop fail, so a stage that failed stops the others.
#pragma once

#include <condition_variable>
#include <cstddef>
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

}  // namespace slip::detail
