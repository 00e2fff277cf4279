// slip/mix.hpp — the epoch order of a dataset of many caches, optionally mixed with weights.
//
// An epoch is a sequence of L positions; position p maps to a dataset-wide sample id
// (slip/dataset.hpp) with O(log caches) work and O(caches) memory, no table of L entries.
// The order is a pure function of (seed, epoch, cache sizes, weights, block size): it does not
// depend on the number of ranks, threads or the batch size. Ranks interleave over it
// (RankPositions), so "the first S positions of the epoch" means the same on any world size.
#pragma once

#include "slip/export.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "slip/shuffle.hpp"

SLIP_API_BEGIN
namespace slip {

// How much of one cache an epoch takes, as MosaicML Streaming's Stream defines it:
//   proportion: relative share of the epoch (the epoch has epoch_size samples, default: the
//               total of all caches); the caches' counts are epoch_size * p_i / sum(p),
//               rounded down, the remainder given one each to the largest fractional parts
//               (ties: the lower cache index);
//   repeat:     times per epoch, fractional allowed: floor(repeat * n_i) samples;
//   choose:     samples per epoch (may exceed n_i).
// proportion cannot be mixed with repeat/choose; a cache with `none` among repeat/choose
// ones takes repeat 1. A count above n_i takes every sample floor(c/n_i) times plus a keyed
// random subset (whole blocks of block_size) for the rest; below n_i, only that subset.
enum class WeightKind : uint8_t { none, proportion, repeat, choose };
struct StreamWeight {
  WeightKind kind = WeightKind::none;
  double value = 0;  // choose: a whole number
  bool operator==(const StreamWeight&) const = default;
};

// "proportion:0.7,0.3", "repeat:2,0.5" or "choose:1000,500": one value per cache, in order.
// Throws Error(usage) naming the item that is wrong (or a count other than num_caches).
std::vector<StreamWeight> parse_weights(std::string_view text, size_t num_caches);
const char* weight_kind_name(WeightKind kind) noexcept;

// The samples each cache contributes to an epoch (their sum is the epoch length). `weights`
// empty: every cache once (or, with epoch_size, in proportion to its size). epoch_size is
// for proportions only (refused with repeat/choose). Throws Error(usage) for negative or
// non-finite weights, an empty epoch or one over 2^62 samples.
std::vector<uint64_t> samples_per_cache(std::span<const uint64_t> sizes, std::span<const StreamWeight> weights,
                                        std::optional<uint64_t> epoch_size = std::nullopt);

struct MixSpec {
  std::vector<uint64_t> sizes;         // samples of each cache (Dataset::sizes())
  std::vector<StreamWeight> weights;   // one per cache, or empty: each cache once
  std::optional<uint64_t> epoch_size;  // with proportions (or no weights)
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t block_size = 1;  // > 1: runs of block_size positions read one block of one cache
};

// The global order of one epoch. Built as an EpochOrder (two-level Feistel shuffle) over the
// concatenation of the caches' contributions, each contribution being its cache's samples in
// order, whole times over, then a keyed block-shuffled subset: so one cache, or several without
// weights, gives exactly the EpochOrder of the concatenated caches (`slip order` on one cache
// is unchanged), and every sample appears once per epoch.
class MixedOrder {
 public:
  explicit MixedOrder(const MixSpec& spec);
  uint64_t size() const noexcept { return length_; }                           // positions in the epoch (L)
  uint64_t operator()(uint64_t position) const noexcept;                       // dataset-wide sample id; position < size()
  void fill(uint64_t first, std::span<uint64_t> out) const noexcept;           // positions first, first+1, ...
  const std::vector<uint64_t>& per_cache() const noexcept { return chosen_; }  // samples from each cache

 private:
  std::vector<uint64_t> first_id_;                  // prefix sums of the sizes
  std::vector<uint64_t> chosen_;                    // contribution of each cache
  std::vector<uint64_t> first_pos_;                 // prefix sums of the contributions
  std::vector<std::optional<EpochOrder>> partial_;  // the subset order of caches with a partial pass
  uint64_t length_ = 0;
  std::optional<EpochOrder> global_;
};

// The positions of an epoch of `epoch_length` that rank `rank` of `world_size` reads once the
// first `consumed` positions are done (0 at the start of an epoch): rank r takes the remaining
// positions r, r+W, r+2W, ... and every rank takes ceil(R/W) of them (R remaining), the
// shortfall padded by repeating the first remaining positions, as PyTorch's DistributedSampler
// pads. Resuming on another world size: pass the positions consumed so far, in the old run's
// terms (its ranks in lock step: consumed = W_old * per-rank count), and nothing is lost or
// repeated beyond the padding. Throws Error(usage) for consumed > epoch_length.
class RankPositions {
 public:
  RankPositions(uint64_t epoch_length, uint64_t consumed, uint32_t rank, uint32_t world_size);
  uint64_t size() const noexcept { return count_; }  // positions left for this rank
  uint64_t operator()(uint64_t i) const noexcept;    // the global position of its i-th
 private:
  uint64_t start_ = 0, remaining_ = 0, count_ = 0;
  uint32_t rank_ = 0, world_ = 1;
};

// A rank's share of an epoch: its i-th sample is MixedOrder(spec)(RankPositions(...)(i)). The
// one definition of "rank r's samples" that `slip order` prints and slip::Loader reads.
class RankOrder {
 public:
  RankOrder(const MixSpec& spec, uint64_t consumed, uint32_t rank, uint32_t world_size);
  uint64_t size() const noexcept { return positions_.size(); }
  const MixedOrder& order() const noexcept { return order_; }
  const RankPositions& positions() const noexcept { return positions_; }
  void fill(uint64_t first, std::span<uint64_t> out) const noexcept;  // its samples first, first+1, ...

 private:
  MixedOrder order_;
  RankPositions positions_;
};

}  // namespace slip
SLIP_API_END
