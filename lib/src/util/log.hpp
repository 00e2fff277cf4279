// Internal: the library's log calls, formatted only when a handler is installed.
#pragma once

#include <spdlog/fmt/fmt.h>

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

}  // namespace slip::detail
