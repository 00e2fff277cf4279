// slip/shuffle.hpp — an O(1)-memory shuffled epoch order: a keyed Feistel bijection on [0, N).
//
// Two levels, so reads stay local: the order of blocks of B consecutive samples is shuffled,
// then the samples inside each block. Position p of an epoch maps to a sample id with O(1)
// work and no table; (seed, epoch, position) is the whole state needed to resume.
#pragma once

#include "slip/export.hpp"

#include <cstdint>
#include <span>

SLIP_API_BEGIN
namespace slip {

// A keyed pseudo-random permutation of [0, n) for any n >= 1 (cycle-walking Feistel on the
// next power of four). Same (n, key) -> same permutation.
class FeistelPermutation {
 public:
  FeistelPermutation(uint64_t n, uint64_t key, int rounds = 6);
  uint64_t operator()(uint64_t x) const noexcept;  // x < n
  uint64_t size() const noexcept { return n_; }

 private:
  uint64_t round_fn(uint64_t value, int round) const noexcept;
  uint64_t n_;
  uint64_t key_;
  int rounds_;
  int half_bits_;
  uint64_t half_mask_;
};

struct ShuffleSpec {
  uint64_t num_samples = 0;
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t block_size = 1;  // 1: plain one-level shuffle
  uint32_t rank = 0;
  uint32_t world_size = 1;
  uint64_t start = 0;  // global positions before it were consumed (an elastic resume): ranks share the rest
};

// The epoch order for one rank. The global order does not depend on the world size: rank r
// takes global positions start+r, start+r+W, start+r+2W, ... (PyTorch's DistributedSampler
// interleaving), ceil((N-start)/W) of them; positions past N wrap to `start` (DistributedSampler's
// padding by repetition of the first remaining positions; slip/mix.hpp's RankPositions). So "the first S positions" of an epoch are
// consumed once every rank took S/W of them, whatever W was. (Dropping the tail is not offered.)
class EpochOrder {
 public:
  explicit EpochOrder(const ShuffleSpec& spec);
  uint64_t size() const noexcept { return per_rank_; }       // positions for this rank
  uint64_t operator()(uint64_t position) const noexcept;     // sample id
  uint64_t global(uint64_t global_position) const noexcept;  // sample id at a global position
  void fill(uint64_t start, std::span<uint64_t> out) const noexcept;

 private:
  ShuffleSpec spec_;
  uint64_t num_blocks_;
  uint64_t last_block_size_;
  uint64_t per_rank_;
  FeistelPermutation block_perm_;
};

}  // namespace slip
SLIP_API_END
