// A counter-based generator: the stream of (seed, epoch, sample, crop, stream) is the SplitMix64
// sequence of a key hashed from those five numbers, so any thread can draw any sample's crops
// without sharing state, and the result never depends on scheduling.
#pragma once

#include <cstdint>

namespace slip::detail {

constexpr uint64_t splitmix64(uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class CounterRng {
 public:
  CounterRng(uint64_t seed, uint64_t epoch, uint64_t sample, uint64_t crop, uint64_t stream) noexcept {
    uint64_t k = splitmix64(seed + 0x9E3779B97F4A7C15ull);
    k = splitmix64(k ^ epoch);
    k = splitmix64(k ^ sample);
    k = splitmix64(k ^ (crop << 8 | stream));
    key_ = k;
  }
  uint32_t operator()() noexcept { return static_cast<uint32_t>(splitmix64(key_ + ++counter_ * 0x9E3779B97F4A7C15ull) >> 32); }
  // Uniform in [0, 1) with 32 random bits.
  double uniform() noexcept { return (*this)() * 0x1p-32; }

 private:
  uint64_t key_ = 0;
  uint64_t counter_ = 0;
};

}  // namespace slip::detail
