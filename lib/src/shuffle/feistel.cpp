#include <algorithm>

#include "slip/error.hpp"
#include "util/splitmix.hpp"
#include "slip/shuffle.hpp"

namespace slip {

namespace {

uint64_t derive(uint64_t a, uint64_t b) noexcept { return detail::splitmix64_step(a ^ detail::splitmix64_step(b + 0x632BE59BD9B4E019ull)); }

}  // namespace

FeistelPermutation::FeistelPermutation(uint64_t n, uint64_t key, int rounds) : n_(n), key_(key), rounds_(rounds) {
  if (n == 0) throw Error(Errc::usage, "cannot permute an empty range");
  // Smallest even bit width 2h with 2^(2h) >= n (h >= 1), so cycle-walking needs < 4 steps
  // on average.
  int bits = 0;
  while (bits < 64 && (uint64_t{1} << bits) < n) ++bits;
  half_bits_ = std::max(1, (bits + 1) / 2);
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
}

uint64_t FeistelPermutation::round_fn(uint64_t value, int round) const noexcept {
  return detail::splitmix64_step(value ^ derive(key_, static_cast<uint64_t>(round))) & half_mask_;
}

uint64_t FeistelPermutation::operator()(uint64_t x) const noexcept {
  if (n_ == 1) return 0;
  do {
    uint64_t left = x >> half_bits_, right = x & half_mask_;
    for (int r = 0; r < rounds_; ++r) {
      const uint64_t next = left ^ round_fn(right, r);
      left = right;
      right = next;
    }
    x = (left << half_bits_) | right;
  } while (x >= n_);  // cycle-walk back into [0, n)
  return x;
}

EpochOrder::EpochOrder(const ShuffleSpec& spec) : spec_(spec), num_blocks_(0), last_block_size_(0), per_rank_(0), block_perm_(1, 0) {
  if (spec.num_samples == 0) throw Error(Errc::usage, "the cache has no samples to order");
  if (spec.block_size == 0) throw Error(Errc::usage, "--block-size must be >= 1");
  if (spec.world_size == 0 || spec.rank >= spec.world_size) throw Error(Errc::usage, "--rank must be in [0, world size)");
  const uint64_t b = std::min(spec.block_size, spec.num_samples);
  spec_.block_size = b;
  num_blocks_ = (spec.num_samples + b - 1) / b;
  last_block_size_ = spec.num_samples - (num_blocks_ - 1) * b;
  if (spec.start > spec.num_samples) throw Error(Errc::usage, "the start position is beyond the epoch's samples");
  per_rank_ = (spec.num_samples - spec.start + spec.world_size - 1) / spec.world_size;
  // The full blocks are permuted; the last (possibly short) block is inserted at a keyed slot.
  const uint64_t full = last_block_size_ == b ? num_blocks_ : num_blocks_ - 1;
  block_perm_ = FeistelPermutation(std::max<uint64_t>(full, 1), derive(spec.seed, spec.epoch * 2 + 1));
}

uint64_t EpochOrder::global(uint64_t p) const noexcept {
  const uint64_t n = spec_.num_samples, b = spec_.block_size;
  p %= n;
  const uint64_t epoch_key = derive(spec_.seed, spec_.epoch * 2 + 2);
  const bool has_short = last_block_size_ != b;
  uint64_t block, offset, size;
  if (!has_short) {
    block = block_perm_(p / b);
    offset = p % b;
    size = b;
  } else {
    const uint64_t short_slot = derive(epoch_key, 0x5107) % num_blocks_;
    const uint64_t boundary = short_slot * b;
    if (p < boundary) {
      block = num_blocks_ > 1 ? block_perm_(p / b) : 0;
      offset = p % b;
      size = b;
    } else if (p < boundary + last_block_size_) {
      block = num_blocks_ - 1;
      offset = p - boundary;
      size = last_block_size_;
    } else {
      const uint64_t q = p - last_block_size_;
      block = block_perm_(q / b);
      offset = q % b;
      size = b;
    }
  }
  const FeistelPermutation within(size, derive(epoch_key, block));
  return block * b + within(offset);
}

uint64_t EpochOrder::operator()(uint64_t position) const noexcept {
  // Rank r takes every W-th global position from start + r, so the epoch's global order (and
  // which samples "the first S positions" are) is the same for every world size; positions past
  // the end wrap to the first remaining one (start): padding by repetition, as DistributedSampler
  // does, and as RankPositions (slip/mix.hpp) counts.
  const uint64_t remaining = spec_.num_samples - spec_.start;
  if (remaining == 0) return global(0);  // (no position of this rank: size() is 0)
  return global(spec_.start + (spec_.rank + position * spec_.world_size) % remaining);
}

void EpochOrder::fill(uint64_t start, std::span<uint64_t> out) const noexcept {
  for (size_t i = 0; i < out.size(); ++i) out[i] = (*this)(start + i);
}

}  // namespace slip
