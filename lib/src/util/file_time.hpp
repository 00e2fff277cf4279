// Internal: the one clock of every stat fingerprint (docs/FORMAT.md "content ids"): a file's
// modification time in nanoseconds since the Unix epoch, as stat(2) gives it. Not
// std::filesystem's file_clock, whose epoch is the standard library's choice (libstdc++'s is
// not Unix's), so a library upgrade could have changed every content id.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>

namespace slip::detail {

// Computed modulo 2^64: a time past 2262 (a server's Last-Modified, a touched file) wraps rather
// than overflows; every time before that keeps its exact value, so no content id changes.
inline int64_t unix_mtime_ns(const struct stat& st) {
  const uint64_t ns = static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000U + static_cast<uint64_t>(st.st_mtim.tv_nsec);
  return static_cast<int64_t>(ns);
}
// 0 when the file cannot be stat'ed (the fingerprint then differs from any real one).
inline int64_t unix_mtime_ns(const std::filesystem::path& file) {
  struct stat st {};
  return ::stat(file.c_str(), &st) == 0 ? unix_mtime_ns(st) : 0;
}

}  // namespace slip::detail
