#include "net/retry.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include "slip/runtime.hpp"

namespace slip::net {

void wait_before_retry(const RetryPolicy& policy, unsigned attempt, const Headers* response_headers) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  double delay = policy.initial_delay_s * std::pow(2.0, attempt > 0 ? attempt - 1 : 0);
  delay = std::min(delay, policy.max_delay_s) * std::uniform_real_distribution<double>(0.5, 1.5)(rng);
  if (response_headers) {
    if (auto it = response_headers->find("retry-after"); it != response_headers->end()) {
      char* end = nullptr;
      const double seconds = std::strtod(it->second.c_str(), &end);
      if (end != it->second.c_str() && seconds > delay) delay = seconds;
    }
  }
  delay = std::clamp(delay, 0.0, policy.max_delay_s);
  using Clock = std::chrono::steady_clock;
  const Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay));
  for (Clock::time_point now = Clock::now(); now < until; now = Clock::now()) {
    throw_if_interrupted();
    std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(50), until - now));
  }
  throw_if_interrupted();
}

}  // namespace slip::net
