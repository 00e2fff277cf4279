// Internal: the library's log calls, formatted only when a handler is installed.
#pragma once

#include <spdlog/fmt/fmt.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "slip/log.hpp"

namespace slip::detail {

bool log_enabled() noexcept;
void log_message(LogLevel level, const std::string& message);

template <class... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (log_enabled()) log_message(level, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
  log(LogLevel::warning, format, std::forward<Args>(args)...);
}
template <class... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
  log(LogLevel::info, format, std::forward<Args>(args)...);
}

// One kind of warning that an input can repeat without bound (a tar of 400,000 members without
// an extension printed 400,001 lines): the first `shown` are printed, the rest only counted,
// and "<count> more <what> not shown" is printed once when it goes. Thread-safe.
class RepeatedWarning {
 public:
  explicit RepeatedWarning(std::string what, uint64_t shown = 5) : what_(std::move(what)), shown_(shown) {}
  ~RepeatedWarning() {
    const uint64_t n = count_.load();
    if (n > shown_) log(LogLevel::warning, "... and {} more {} (not shown)", n - shown_, what_);
  }
  RepeatedWarning(const RepeatedWarning&) = delete;
  RepeatedWarning& operator=(const RepeatedWarning&) = delete;

  template <class... Args>
  void warn(fmt::format_string<Args...> format, Args&&... args) {
    if (count_.fetch_add(1) < shown_) log(LogLevel::warning, format, std::forward<Args>(args)...);
  }

 private:
  std::string what_;
  uint64_t shown_;
  std::atomic<uint64_t> count_{0};
};

}  // namespace slip::detail
