// SplitMix64's step (increment by the golden ratio, then finalize): the keyed mixing behind the
// Feistel orders (shuffle/) and the mixed orders' per-cache seeds (dataset/). One definition, so
// the two never drift apart (an order written by one must be the order read by the other).
#pragma once

#include <cstdint>

namespace slip::detail {

constexpr uint64_t splitmix64_step(uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace slip::detail
