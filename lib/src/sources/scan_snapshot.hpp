// An ImageFolder scan saved for the other tasks of a job array (docs/SLURM.md "What a task
// costs"): the file list in sample order, the fingerprint, and the mtime of every directory
// walked, which is what decides whether the saved scan still describes the tree.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/file_time.hpp"

namespace slip::detail {

struct ScanSnapshot {
  std::string root;  // absolute, normal
  std::string mode;  // "stat" or "content" (--fingerprint)
  std::string fingerprint;
  std::vector<std::pair<std::string, int64_t>> dirs;  // relative to root ("." for root) -> mtime ns
};
// One image as the scan saw it: its size and Unix-ns mtime (kUnknownMtime: it could not be
// stat'ed), which each task compares with the file it reads (an image rewritten in place does
// not change its directory's mtime).
struct ScanEntry {
  uint32_t label = 0;
  std::string_view relative;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};
inline constexpr int64_t kUnknownMtime = INT64_MIN;
using ScanEntrySink = std::function<void(const ScanEntry&)>;

// ".<root's name>-<16 hex digits of SHA-256(root, mode)>.scan": hidden beside the caches.
std::string scan_snapshot_name(std::string_view root, std::string_view mode);

// The saved scan when it is intact (checksum), of this root and mode, and every directory it
// lists still has its recorded mtime (stat'ed on `threads` threads); nullopt otherwise. Its
// images go to `entry` in sample order (also when nullopt is returned after all: discard them).
std::optional<ScanSnapshot> load_scan_snapshot(const std::filesystem::path& file, std::string_view root, std::string_view mode,
                                               unsigned threads, const ScanEntrySink& entry);

// Writes `snapshot` (its entries given by entry(i), i < count) atomically; throws Error(io).
void save_scan_snapshot(const std::filesystem::path& file, const ScanSnapshot& snapshot, size_t count,
                        const std::function<ScanEntry(size_t)>& entry);

// Removes the saved scans of `root` (both modes) from `dir`, and their lock files: a merge ends
// the job array, so a later conversion scans afresh.
void remove_scan_snapshots(const std::filesystem::path& dir, std::string_view root);

}  // namespace slip::detail
