// Weighted epoch orders over many caches (slip/mix.hpp).
#include "slip/mix.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <string>

#include "slip/error.hpp"
#include "util/splitmix.hpp"

namespace slip {

namespace {

// The seed of cache i's subset order: independent of the global order's key.
uint64_t mix_cache_seed(uint64_t seed, size_t cache) noexcept {
  return detail::splitmix64_step(seed ^ detail::splitmix64_step(cache + 0x6D69787375627365ull));
}

constexpr uint64_t kMaxEpochLength = uint64_t{1} << 62;

std::string mix_cache_name(size_t i) { return "cache " + std::to_string(i); }

}  // namespace

const char* weight_kind_name(WeightKind kind) noexcept {
  switch (kind) {
    case WeightKind::proportion:
      return "proportion";
    case WeightKind::repeat:
      return "repeat";
    case WeightKind::choose:
      return "choose";
    default:
      return "none";
  }
}

std::vector<StreamWeight> parse_weights(std::string_view text, size_t num_caches) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos)
    throw Error(Errc::usage, "weights \"" + printable(text) + "\": want KIND:V1,V2,... with KIND proportion, repeat or choose");
  const std::string_view kind_text = text.substr(0, colon);
  WeightKind kind;
  if (kind_text == "proportion")
    kind = WeightKind::proportion;
  else if (kind_text == "repeat")
    kind = WeightKind::repeat;
  else if (kind_text == "choose")
    kind = WeightKind::choose;
  else
    throw Error(Errc::usage, "weights: unknown kind \"" + printable(kind_text) + "\" (proportion, repeat or choose)");
  std::vector<StreamWeight> out;
  std::string_view rest = text.substr(colon + 1);
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (out.size() >= num_caches)
      throw Error(Errc::usage, "weights: more values than the " + std::to_string(num_caches) + " caches of the dataset");
    double v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || !std::isfinite(v) || v < 0)
      throw Error(Errc::usage,
                  "weights: value " + std::to_string(out.size() + 1) + " \"" + printable(item) + "\" is not a finite number >= 0");
    if (kind == WeightKind::choose && v != std::floor(v))
      throw Error(Errc::usage,
                  "weights: choose value " + std::to_string(out.size() + 1) + " \"" + printable(item) + "\" is not a whole number");
    out.push_back({kind, v});
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (out.size() != num_caches)
    throw Error(Errc::usage, "weights: " + std::to_string(out.size()) + " values for " + std::to_string(num_caches) +
                                 " caches (one per cache, in order)");
  return out;
}

std::vector<uint64_t> samples_per_cache(std::span<const uint64_t> sizes, std::span<const StreamWeight> weights,
                                        std::optional<uint64_t> epoch_size) {
  const size_t n = sizes.size();
  if (n == 0) throw Error(Errc::usage, "a dataset needs at least one cache");
  if (!weights.empty() && weights.size() != n)
    throw Error(Errc::usage, std::to_string(weights.size()) + " weights for " + std::to_string(n) + " caches (one per cache)");
  uint64_t total = 0;
  for (uint64_t s : sizes) {
    if (s > kMaxEpochLength - total) throw Error(Errc::usage, "the dataset has more than 2^62 samples");
    total += s;
  }
  bool relative = false, absolute = false;
  for (size_t i = 0; i < weights.size(); ++i) {
    const StreamWeight& w = weights[i];
    if (!std::isfinite(w.value) || w.value < 0)
      throw Error(Errc::usage, mix_cache_name(i) + ": " + weight_kind_name(w.kind) + " must be a finite number >= 0");
    if (w.kind == WeightKind::choose && w.value != std::floor(w.value))
      throw Error(Errc::usage, mix_cache_name(i) + ": choose must be a whole number of samples");
    relative |= w.kind == WeightKind::proportion;
    absolute |= w.kind == WeightKind::repeat || w.kind == WeightKind::choose;
  }
  if (relative && absolute)
    throw Error(Errc::usage, "proportion (relative) cannot be combined with repeat/choose (absolute) in one mix, as in MosaicML Streaming");
  if (relative)
    for (size_t i = 0; i < weights.size(); ++i)
      if (weights[i].kind != WeightKind::proportion)
        throw Error(Errc::usage, mix_cache_name(i) + " has no proportion: with proportions, every cache needs one");
  std::vector<uint64_t> chosen(n);
  if (absolute) {
    if (epoch_size)
      throw Error(Errc::usage, "epoch_size applies to proportions; with repeat/choose the epoch is the sum of the caches' counts");
    for (size_t i = 0; i < n; ++i) {
      const StreamWeight& w = weights[i];
      long double c = w.kind == WeightKind::choose   ? static_cast<long double>(w.value)
                      : w.kind == WeightKind::repeat ? std::floor(static_cast<long double>(w.value) * sizes[i])
                                                     : static_cast<long double>(sizes[i]);
      if (c > static_cast<long double>(kMaxEpochLength))
        throw Error(Errc::usage, mix_cache_name(i) + ": the mix takes more than 2^62 samples");
      chosen[i] = static_cast<uint64_t>(c);
    }
  } else if (relative || epoch_size) {
    // Without weights but with an epoch size, caches are drawn in proportion to their size.
    const uint64_t target = epoch_size.value_or(total);
    if (target > kMaxEpochLength) throw Error(Errc::usage, "epoch_size over 2^62 samples");
    std::vector<long double> p(n);
    long double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += p[i] = relative ? static_cast<long double>(weights[i].value) : static_cast<long double>(sizes[i]);
    if (!(sum > 0)) throw Error(Errc::usage, "the proportions are all 0");
    std::vector<long double> frac(n);
    uint64_t given = 0;
    for (size_t i = 0; i < n; ++i) {
      const long double share = static_cast<long double>(target) * p[i] / sum;
      chosen[i] = static_cast<uint64_t>(std::floor(share));
      frac[i] = share - std::floor(share);
      given += chosen[i];
    }
    // Largest remainders first (ties: lower index), so the counts sum to the target exactly.
    std::vector<size_t> idx(n);
    std::iota(idx.begin(), idx.end(), size_t{0});
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return frac[a] > frac[b]; });
    for (size_t k = 0; given < target && k < n; ++k, ++given) ++chosen[idx[k]];
  } else {
    chosen.assign(sizes.begin(), sizes.end());
  }
  uint64_t length = 0;
  for (size_t i = 0; i < n; ++i) {
    if (chosen[i] > 0 && sizes[i] == 0)
      throw Error(Errc::usage, mix_cache_name(i) + " has no samples but the mix takes " + std::to_string(chosen[i]) + " from it");
    if (chosen[i] > kMaxEpochLength - length) throw Error(Errc::usage, "the mixed epoch has more than 2^62 samples");
    length += chosen[i];
  }
  if (length == 0) throw Error(Errc::usage, "the mix selects no samples (an empty epoch)");
  return chosen;
}

MixedOrder::MixedOrder(const MixSpec& spec) {
  chosen_ = samples_per_cache(spec.sizes, spec.weights, spec.epoch_size);
  const size_t n = spec.sizes.size();
  first_id_.assign(n + 1, 0);
  first_pos_.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    first_id_[i + 1] = first_id_[i] + spec.sizes[i];
    first_pos_[i + 1] = first_pos_[i] + chosen_[i];
  }
  length_ = first_pos_[n];
  ShuffleSpec g;
  g.num_samples = length_;
  g.seed = spec.seed;
  g.epoch = spec.epoch;
  g.block_size = spec.block_size;
  global_.emplace(g);
  partial_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (spec.sizes[i] == 0 || chosen_[i] % spec.sizes[i] == 0) continue;
    ShuffleSpec s = g;
    s.num_samples = spec.sizes[i];
    s.seed = mix_cache_seed(spec.seed, i);
    partial_[i].emplace(s);
  }
}

uint64_t MixedOrder::operator()(uint64_t position) const noexcept {
  const uint64_t v = global_->global(position);
  // The cache whose contribution holds v (caches contributing nothing have an empty range).
  const size_t i = static_cast<size_t>(std::upper_bound(first_pos_.begin(), first_pos_.end(), v) - first_pos_.begin()) - 1;
  const uint64_t k = v - first_pos_[i], size = first_id_[i + 1] - first_id_[i];
  const uint64_t whole = (chosen_[i] / size) * size;  // whole passes: every sample in cache order
  const uint64_t local = k < whole ? k % size : partial_[i]->global(k - whole);
  return first_id_[i] + local;
}

void MixedOrder::fill(uint64_t first, std::span<uint64_t> out) const noexcept {
  for (size_t j = 0; j < out.size(); ++j) out[j] = (*this)(first + j);
}

RankPositions::RankPositions(uint64_t epoch_length, uint64_t consumed, uint32_t rank, uint32_t world_size) {
  if (world_size == 0 || rank >= world_size) throw Error(Errc::usage, "--rank must be in [0, world size)");
  // Past the end is no position of this epoch: a state or --consumed of another (longer) epoch,
  // which would give an empty epoch and exit 0 (`slip order --consumed 2^64-1`).
  if (consumed > epoch_length)
    throw Error(Errc::usage, "consumed " + std::to_string(consumed) + " is past the epoch's " + std::to_string(epoch_length) +
                                 " positions (at most " + std::to_string(epoch_length) + ": the epoch is done)");
  start_ = consumed;
  remaining_ = epoch_length - start_;
  count_ = (remaining_ + world_size - 1) / world_size;
  rank_ = rank;
  world_ = world_size;
}

uint64_t RankPositions::operator()(uint64_t i) const noexcept {
  if (remaining_ == 0) return start_;
  return start_ + (rank_ + i * world_) % remaining_;  // past the end: the first remaining again
}

RankOrder::RankOrder(const MixSpec& spec, uint64_t consumed, uint32_t rank, uint32_t world_size)
    : order_(spec), positions_(order_.size(), consumed, rank, world_size) {}

void RankOrder::fill(uint64_t first, std::span<uint64_t> out) const noexcept {
  for (size_t i = 0; i < out.size(); ++i) out[i] = order_(positions_(first + i));
}

}  // namespace slip
