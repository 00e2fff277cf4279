#include "util/log.hpp"

#include <atomic>
#include <mutex>

namespace slip {

namespace {
std::mutex& handler_mutex() {
  static std::mutex m;
  return m;
}
LogHandler& handler() {
  static LogHandler h;
  return h;
}
std::atomic<bool> installed{false};
}  // namespace

void set_log_handler(LogHandler h) {
  std::lock_guard lock(handler_mutex());
  installed.store(static_cast<bool>(h), std::memory_order_release);
  handler() = std::move(h);
}

namespace detail {

bool log_enabled() noexcept { return installed.load(std::memory_order_acquire); }

void log_message(LogLevel level, const std::string& message) {
  std::lock_guard lock(handler_mutex());
  if (handler()) handler()(level, message);
}

}  // namespace detail
}  // namespace slip
