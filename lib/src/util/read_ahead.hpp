// Reads a known sequence of files with many requests in flight and hands their bytes over in
// order. On a network file system (NFS, Lustre, GPFS) every open/stat/read costs 0.2-2 ms, so a
// reader that waits for one file before asking for the next is bound by latency, not by the
// storage's bandwidth; `depth` blocking reads on a small thread pool hide that latency.
// Memory is bounded by `max_bytes_in_flight` (read but not yet taken), not by file sizes: a
// worker waits before reading a file that would exceed it, unless it is the oldest one
// pending (so one huge file still gets through).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "slip/schema.hpp"  // Bytes

namespace slip::detail {

struct ReadAheadOptions {
  unsigned depth = 32;  // files being read at once (threads)
  // Read but not yet taken. 64 MiB hides the latency of 32 requests of files up to 2 MiB each;
  // the conversion pipeline holds its own --max-in-flight behind it.
  uint64_t max_bytes_in_flight = 64ull << 20;
  uint64_t max_file_bytes = UINT64_MAX;  // larger files are not read: a problem instead
  // Reading adapts to the storage. While workers read, a run of reads that never slept (no
  // I/O wait) and took under inline_below_us of CPU each (the page cache: ~15 us for a 100 KB
  // photo) switches to inline reading: a hand-over to a worker and back costs more than such a
  // read (futex wake-ups were a fifth of a page-cache conversion), so take() reads each file
  // itself and the workers sleep. A few inline reads in a row slower than parallel_above_us (a
  // network file system, a cold disk) wake them again: `depth` reads in flight.
  double inline_below_us = 50;
  double parallel_above_us = 150;
};

struct ReadResult {
  Bytes bytes;
  std::optional<std::string> problem;  // "cannot open: ...", "file shrank while reading", ...
  // The file's size and Unix-ns mtime when it was opened (fstat), so a reader can tell that
  // it changed since it was listed; unknown (INT64_MIN) when it could not be opened.
  uint64_t size = 0;
  int64_t mtime_ns = INT64_MIN;
  std::exception_ptr error;  // what a worker's read threw (out of memory): take() rethrows it
};

// Reads a whole file; a failure is returned as a problem, never thrown. Refuses anything but
// a regular file (FIFOs and devices would block or never end).
ReadResult read_whole_file(const std::string& path, uint64_t max_bytes = UINT64_MAX);

class ReadAhead {
 public:
  // Files first .. first+count-1 of the sequence, named by path_of(i) (called on the workers).
  // slow_read_for_test (tests only): each read's verdict (true: slow) by file index instead of its
  // measured cost, so the adaptation is checked without clocks or a quiet machine; called under
  // the reader's lock.
  ReadAhead(std::function<std::string(uint64_t)> path_of, uint64_t first, uint64_t count, ReadAheadOptions options,
            std::function<bool(uint64_t index)> slow_read_for_test = {});
  ~ReadAhead();  // stops the workers (reads in progress finish first)
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // The next file in order (blocks until it is read); nullopt after the last one.
  std::optional<ReadResult> take();
  // The most bytes ever held read-but-not-taken (<= max_bytes_in_flight + one file).
  uint64_t peak_bytes_in_flight() const;
  // Whether take() now reads the files itself (see ReadAheadOptions::inline_below_us).
  bool reading_inline() const;

 private:
  struct Slot {
    bool ready = false;
    ReadResult result;
  };
  struct ReadCost {
    double cpu_us = 0;
    uint64_t slept = 0;  // voluntary context switches: waits for I/O (or a FUSE daemon)
    ReadCost& operator+=(const ReadCost& o) {
      cpu_us += o.cpu_us;
      slept += o.slept;
      return *this;
    }
  };
  struct ThreadUsage {   // this thread's CPU time and voluntary switches (getrusage)
    bool known = false;  // getrusage answered
    double cpu_us = 0;
    uint64_t voluntary_switches = 0;
    static ThreadUsage now() noexcept;
    ReadCost since() const noexcept;
  };
  static constexpr unsigned kFastReadsToGoInline = 16;
  static constexpr unsigned kSlowReadsToGoParallel = 3;
  void work();
  void record_worker_read(uint64_t index, const ReadCost& cost);  // under mutex_
  void record_inline_read(uint64_t index, double wall_us);        // under mutex_

  std::function<std::string(uint64_t)> path_of_;
  uint64_t first_, end_;
  ReadAheadOptions options_;
  std::function<bool(uint64_t)> slow_read_for_test_;
  mutable std::mutex mutex_;
  std::condition_variable slot_ready_;  // take() waits for the oldest file
  std::condition_variable claim_;       // workers wait for a free ring slot
  std::condition_variable budget_;      // workers wait for bytes in flight to drop
  unsigned budget_waiters_ = 0;
  std::vector<Slot> ring_;  // slot of file i: ring_[(i - first_) % ring_.size()]
  uint64_t next_to_read_;   // the next file a worker claims
  uint64_t next_to_take_;   // the next file take() returns
  uint64_t bytes_in_flight_ = 0, peak_bytes_ = 0;
  bool stopping_ = false;
  bool inline_ = false;               // take() reads the next file itself (reads are fast)
  unsigned fast_reads_in_a_row_ = 0;  // worker reads that never slept and took little CPU
  unsigned slow_reads_in_a_row_ = 0;  // inline reads over parallel_above_us
  std::vector<std::thread> workers_;
};

}  // namespace slip::detail
