#include "util/read_ahead.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>

#include "util/file_time.hpp"

namespace slip::detail {

namespace {

// An open regular file and its size, or the problem. O_NONBLOCK: opening a FIFO must not wait
// for a writer (the type check refuses it).
struct OpenedFile {
  int fd = -1;
  uint64_t size = 0;
  int64_t mtime_ns = INT64_MIN;
  std::optional<std::string> problem;
};

OpenedFile open_regular(const std::string& path, uint64_t max_bytes) {
  OpenedFile f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (f.fd < 0) {
    f.problem = std::string("cannot open: ") + std::strerror(errno);
    return f;
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0)
    f.problem = std::string("cannot stat: ") + std::strerror(errno);
  else if (!S_ISREG(st.st_mode))
    f.problem = "not a regular file";
  else if (static_cast<uint64_t>(st.st_size) > max_bytes)
    f.problem = "file of " + std::to_string(st.st_size) + " bytes exceeds the limit of " + std::to_string(max_bytes) +
                " bytes (--max-sample-bytes; not read)";
  else {
    f.size = static_cast<uint64_t>(st.st_size);
    f.mtime_ns = unix_mtime_ns(st);
  }
  if (f.problem) {
    ::close(f.fd);
    f.fd = -1;
  }
  return f;
}

// Reads the opened file whole and closes it.
ReadResult read_opened(OpenedFile& f) {
  ReadResult out;
  if (f.fd < 0) {
    out.problem = f.problem;
    return out;
  }
  out.size = f.size;
  out.mtime_ns = f.mtime_ns;
  out.bytes.resize(static_cast<size_t>(f.size));
  size_t done = 0;
  while (done < out.bytes.size()) {
    const ssize_t n = ::read(f.fd, out.bytes.data() + done, out.bytes.size() - done);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) {
      out.problem = std::string("cannot read: ") + std::strerror(errno);
      break;
    }
    if (n == 0) {
      out.problem = "file shrank while reading";
      break;
    }
    done += static_cast<size_t>(n);
  }
  ::close(f.fd);
  f.fd = -1;
  if (out.problem) out.bytes.clear();
  return out;
}

}  // namespace

ReadAhead::ThreadUsage ReadAhead::ThreadUsage::now() noexcept {
  ThreadUsage u;
  struct rusage r {};
  u.known = ::getrusage(RUSAGE_THREAD, &r) == 0;
  u.cpu_us =
      static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e6 + static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
  u.voluntary_switches = static_cast<uint64_t>(r.ru_nvcsw);
  return u;
}

ReadAhead::ReadCost ReadAhead::ThreadUsage::since() const noexcept {
  const ThreadUsage end = now();
  if (!known || !end.known) return {0, 1};  // unknown: counted as a read that slept (slow)
  return {end.cpu_us - cpu_us, end.voluntary_switches - voluntary_switches};
}

ReadResult read_whole_file(const std::string& path, uint64_t max_bytes) {
  OpenedFile f = open_regular(path, max_bytes);
  return read_opened(f);
}

ReadAhead::ReadAhead(std::function<std::string(uint64_t)> path_of, uint64_t first, uint64_t count, ReadAheadOptions options,
                     std::function<bool(uint64_t)> slow_read_for_test)
    : path_of_(std::move(path_of)),
      first_(first),
      end_(first + count),
      options_(options),
      slow_read_for_test_(std::move(slow_read_for_test)),
      next_to_read_(first),
      next_to_take_(first) {
  options_.depth = std::max(1u, options_.depth);
  // Workers may run ahead of take() by up to 2x depth files (bytes permitting), so a slow
  // file does not stall the others.
  ring_.resize(std::max<uint64_t>(1, std::min<uint64_t>(count, uint64_t{options_.depth} * 2)));
  const unsigned threads = static_cast<unsigned>(std::min<uint64_t>(options_.depth, std::max<uint64_t>(count, 1)));
  workers_.reserve(threads);
  for (unsigned t = 0; t < threads; ++t) workers_.emplace_back([this] { work(); });
}

ReadAhead::~ReadAhead() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  claim_.notify_all();
  budget_.notify_all();
  slot_ready_.notify_all();
  for (auto& w : workers_) w.join();
}

void ReadAhead::work() {
  std::unique_lock lock(mutex_);
  while (true) {
    // Claim the next file once its ring slot is free (the file ring_.size() before it taken).
    claim_.wait(lock, [&] { return stopping_ || next_to_read_ >= end_ || (!inline_ && next_to_read_ < next_to_take_ + ring_.size()); });
    if (stopping_ || next_to_read_ >= end_) return;
    const uint64_t index = next_to_read_++;
    lock.unlock();
    // Open and size first (one request on most network file systems: the attributes come with
    // the open), so the byte budget is respected before the bytes are read.
    ThreadUsage usage = ThreadUsage::now();
    OpenedFile file = open_regular(path_of_(index), options_.max_file_bytes);
    ReadCost cost = usage.since();
    lock.lock();
    const uint64_t charge = file.size;
    ++budget_waiters_;
    budget_.wait(lock, [&] { return stopping_ || index == next_to_take_ || bytes_in_flight_ + charge <= options_.max_bytes_in_flight; });
    --budget_waiters_;
    if (stopping_) {
      if (file.fd >= 0) ::close(file.fd);
      return;
    }
    bytes_in_flight_ += charge;
    peak_bytes_ = std::max(peak_bytes_, bytes_in_flight_);
    lock.unlock();
    usage = ThreadUsage::now();
    ReadResult result;
    try {
      result = read_opened(file);
    } catch (...) {  // std::bad_alloc: handed to take(), never std::terminate on this thread
      if (file.fd >= 0) ::close(file.fd);
      result = ReadResult{};
      result.error = std::current_exception();
    }
    cost += usage.since();
    lock.lock();
    record_worker_read(index, cost);
    // The charge is corrected to what was really read (the file may have changed).
    bytes_in_flight_ = bytes_in_flight_ - charge + result.bytes.size();
    Slot& slot = ring_[(index - first_) % ring_.size()];
    slot.result = std::move(result);
    slot.ready = true;
    // Only take() waits here, and only for the oldest file: waking it for any other is wasted.
    if (index == next_to_take_) slot_ready_.notify_one();
  }
}

uint64_t ReadAhead::peak_bytes_in_flight() const {
  std::lock_guard lock(mutex_);
  return peak_bytes_;
}

// Under mutex_. A worker's read is fast when it never slept (no voluntary context switch: no
// I/O wait) and its CPU time is small. Wall time would not do: 32 workers on two cores inflate
// each other's, and a page-cache conversion stayed parallel for half its files.
void ReadAhead::record_worker_read(uint64_t index, const ReadCost& cost) {
  const bool fast = slow_read_for_test_ ? !slow_read_for_test_(index) : cost.slept == 0 && cost.cpu_us < options_.inline_below_us;
  fast_reads_in_a_row_ = fast ? fast_reads_in_a_row_ + 1 : 0;
  if (!inline_ && fast_reads_in_a_row_ >= kFastReadsToGoInline) inline_ = true;
}

// Under mutex_. Reading inline, a few slow reads in a row mean the storage is slow (a network
// file system, a cold disk) and put the workers back to work. One is not enough: the reading
// thread is sometimes preempted mid-read on a busy machine, and each false alarm wakes every
// worker.
void ReadAhead::record_inline_read(uint64_t index, double wall_us) {
  const bool slow = slow_read_for_test_ ? slow_read_for_test_(index) : wall_us > options_.parallel_above_us;
  slow_reads_in_a_row_ = slow ? slow_reads_in_a_row_ + 1 : 0;
  if (slow_reads_in_a_row_ < kSlowReadsToGoParallel) return;
  inline_ = false;
  fast_reads_in_a_row_ = slow_reads_in_a_row_ = 0;
  claim_.notify_all();
}

bool ReadAhead::reading_inline() const {
  std::lock_guard lock(mutex_);
  return inline_;
}

std::optional<ReadResult> ReadAhead::take() {
  std::unique_lock lock(mutex_);
  if (next_to_take_ >= end_) return std::nullopt;
  if (inline_ && next_to_read_ == next_to_take_) {
    // Reads finish faster than a hand-over to a worker would (page cache): read the next file
    // here. Its bytes go straight to the caller, so they are never in flight.
    const uint64_t index = next_to_read_++;
    ++next_to_take_;
    lock.unlock();
    const auto t = std::chrono::steady_clock::now();
    ReadResult out = read_whole_file(path_of_(index), options_.max_file_bytes);
    const double wall_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
    lock.lock();
    record_inline_read(index, wall_us);
    return out;
  }
  Slot& slot = ring_[(next_to_take_ - first_) % ring_.size()];
  slot_ready_.wait(lock, [&] { return slot.ready; });
  ReadResult out = std::move(slot.result);
  slot = Slot{};
  if (out.error) {
    ++next_to_take_;
    std::rethrow_exception(out.error);
  }
  bytes_in_flight_ -= std::min<uint64_t>(bytes_in_flight_, out.bytes.size());
  ++next_to_take_;
  const bool budget_waiting = budget_waiters_ > 0;
  const bool workers_reading = !inline_;
  lock.unlock();
  // One ring slot freed: one worker may claim one more file. Waking all 32 on every file cost
  // 40% of a page-cache conversion in futex calls (perf). Workers waiting on the byte budget are
  // few and rare; they all re-check.
  if (workers_reading) claim_.notify_one();
  if (budget_waiting) budget_.notify_all();
  return out;
}

}  // namespace slip::detail
