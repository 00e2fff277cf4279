// slip/loader.hpp — batches for a training loop: a background thread decodes the next batches of
// a rank's epoch into pooled buffers while the caller uses the current one.
//
// The epoch's order is global and does not depend on the number of ranks: position g of epoch e
// holds sample EpochOrder{seed, e, block_size}.global(g). Rank r of W takes positions r, r+W,
// r+2W, ... (as PyTorch's DistributedSampler), so after every rank took k batches of B samples
// the first k*B*W positions are consumed whatever W was; a LoaderState records that count and
// resumes on any number of ranks with every sample of the epoch seen once (ranks that run past
// the epoch's end repeat the first positions left: DistributedSampler's padding). The order and
// the ranks' shares are slip/mix.hpp's MixedOrder and RankPositions: the same library calls as
// `slip order` (dataset_mix_spec), so the Loader's order is `slip order`'s for the same inputs.
//
// Over a Dataset (slip/dataset.hpp) of several caches, sample ids are the dataset's global ids
// (cache 0's samples first, then cache 1's, ...) and an epoch may be mixed with weights
// (StreamWeight: proportion, repeat or choose per cache, and an epoch_size). One BatchDecoder over
// the dataset decodes a batch in place on one pool of threads, whatever caches its samples come
// from. Crops and flips are keyed by (seed, epoch, global id), so the parts of a `slip convert
// --shard I/N` job read as a dataset give the merged cache's pixels, sample for sample.
// Memory is O(caches): nothing per sample. The mix may change between epochs (set_mix).
//
// Threads: next() may be called from any thread (a batch goes to one caller); start(),
// set_epoch() and load_state() are not concurrent with each other. A Loader inherited through
// fork() refuses to run (its threads stay in the parent). Batches are shared_ptrs whose buffers
// go back to the Loader's pool when the last owner drops them, even after the Loader is gone.
#pragma once

#include "slip/decode.hpp"
#include "slip/export.hpp"
#include "slip/mix.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

SLIP_API_BEGIN
namespace slip {

class Cache;
class Dataset;

// The samples a Loader draws from: every sample, an explicit list, or an arithmetic progression
// (kept as three numbers, so that a range of 10^8 ids costs no memory per sample).
class SampleIndices {
 public:
  static SampleIndices list(std::vector<uint64_t> ids);
  static SampleIndices progression(uint64_t first, int64_t step, uint64_t count);
  bool given() const noexcept { return given_; }  // false: every sample of the cache
  uint64_t size() const noexcept { return count_; }
  uint64_t operator[](uint64_t i) const noexcept {
    if (!progression_) return list_[i];
    return first_ + static_cast<uint64_t>(step_) * i;  // modular: a negative step counts down
  }
  std::optional<uint64_t> first_beyond(uint64_t samples) const;  // the first id >= samples, if any

 private:
  std::vector<uint64_t> list_;
  uint64_t first_ = 0, count_ = 0;
  int64_t step_ = 1;
  bool given_ = false, progression_ = false;
};

struct LoaderOptions {
  size_t batch_size = 256;
  DecodeOptions decode;      // crop groups, seed, threads, pixel type and layout
  bool full_decode = false;  // pipeline "decode": whole uint8 HWC images, each its own size
  bool shuffle = true;       // else the identity order (still interleaved over the ranks)
  bool drop_last = false;
  uint64_t epoch = 0;  // of the first iteration
  uint32_t rank = 0, world_size = 1;
  uint64_t block_size = 1;
  SampleIndices indices;            // global ids; not given: every sample; given and empty: an empty epoch
  std::vector<std::string> fields;  // int64 and float64 fields returned with the pixels
  size_t prefetch = 2;              // decoded batches waiting for the caller, at most
  bool skip_errors = false;         // drop samples that fail to decode (bad_input), record them
};

// One batch: the crop groups' pixels (batch-major, crop_group_sample_bytes per sample), or the
// whole images in one block (full_decode), and the requested fields' values (8 bytes each).
// `samples` are global ids (over a Dataset: Dataset::locate gives the cache and local id; over
// one cache they are its sample ids).
struct Batch {
  std::vector<std::vector<std::byte>> groups;
  std::vector<std::vector<std::byte>> fields;
  PackedImages full;
  std::vector<uint64_t> samples;  // the sample ids, in batch order (skipped ones left out)
  size_t count = 0;
  uint64_t index = 0;  // which batch of the running iteration
};
using BatchPtr = std::shared_ptr<Batch>;

struct SkippedSample {
  uint64_t sample;  // global id
  std::string message;
};

// The weights of an epoch's mix (slip/mix.hpp): one per cache, or none (every sample once, or
// in proportion to the caches' sizes with an epoch_size).
struct LoaderMix {
  std::vector<StreamWeight> weights;
  std::optional<uint64_t> epoch_size;
  bool operator==(const LoaderMix&) const = default;
};

// Where a Loader stands: epoch `epoch` with its first `consumed` global positions handed out.
// Recorded with what gives it meaning; loads on any world_size and batch_size. Version 3 adds
// the mix of epoch `epoch` (version 2 states have none and resume with the Loader's own).
struct LoaderState {
  uint32_t version = 3;
  uint64_t seed = 0, epoch = 0, consumed = 0;
  uint64_t samples = 0;  // the positions an epoch has (the samples it draws from)
  uint32_t world_size = 1;
  uint64_t batch_size = 0;
  LoaderMix mix;  // version >= 3
};

class Loader {
 public:
  Loader(std::shared_ptr<const Cache> cache, LoaderOptions options);
  // Over a dataset: `mix` nullopt takes the weights and epoch size its JSON list gave (as
  // `slip order` without --mix). Throws Error(usage) for weights that are not one per cache,
  // an invalid mix (samples_per_cache), weights with `indices` or without `shuffle`.
  Loader(std::shared_ptr<const Dataset> dataset, LoaderOptions options, std::optional<LoaderMix> mix = std::nullopt);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  const Cache& cache() const noexcept { return *caches_.front(); }  // the first (all share its fields)
  size_t num_caches() const noexcept { return caches_.size(); }
  const Cache& cache(size_t index) const { return *caches_.at(index); }
  const LoaderOptions& options() const noexcept { return options_; }
  uint64_t samples() const noexcept;   // positions per epoch
  uint64_t per_rank() const noexcept;  // this rank's samples of a whole epoch (padded)
  size_t batches() const noexcept;     // this rank's batches of a whole epoch
  uint64_t epoch() const noexcept { return epoch_; }
  // The mix of the epochs that start after this call (at position 0): a running iteration,
  // and a chosen mid-epoch resumption (load_state, set_epoch with start_batch > 0), keep the
  // mix they were chosen with. Throws Error(usage) as the constructor for a bad mix.
  void set_mix(LoaderMix mix);
  const LoaderMix& mix() const noexcept { return mix_.mix; }  // the one set_mix/the constructor gave

  // The next start() runs `epoch` from this rank's batch `start_batch` (positions before
  // start_batch*batch_size*world_size are skipped); a running iteration is not disturbed.
  void set_epoch(uint64_t epoch, uint64_t start_batch = 0);
  LoaderState state() const;
  // A state taken mid-epoch resumes that epoch with the mix it records (version 3; version 2:
  // the Loader's own mix); the Loader's own mix applies again from the next epoch. A state at
  // an epoch's start or end needs no mix. Throws Error(usage) when the state's seed or samples
  // differ (another order: the recorded mix over this dataset gives another epoch length), or
  // its weights are not one per cache.
  void load_state(const LoaderState& state);

  // Starts an iteration (stopping the running one) and returns its generation; without a
  // set_epoch()/load_state() since the last one, it runs the next epoch.
  uint64_t start();
  enum class Next { batch, end, timeout, replaced };
  struct NextResult {
    Next status;
    BatchPtr batch;  // status == batch
  };
  // Waits at most `wait` for iteration `generation`'s next batch. At the end of an iteration
  // that failed, rethrows its error (every call). `replaced`: a later start() or interrupt()
  // superseded this iteration.
  NextResult next(uint64_t generation, std::chrono::milliseconds wait = std::chrono::milliseconds::max());
  // For C++ loops: the running iteration's next batch (starting one when none runs; batches
  // whose samples were all skipped are passed over); nullptr at its end, after which the next
  // call starts the next epoch. Throws the iteration's error.
  BatchPtr next();
  void interrupt();  // ends the running iteration (its next() calls return `replaced`)
  uint64_t generation() const;

  std::vector<SkippedSample> skipped() const;               // in the running iteration
  std::vector<uint64_t> order() const;                      // this rank's global sample ids of epoch(), in order
  CropWindow window(uint64_t sample, uint32_t crop) const;  // sample: a global id
  size_t image_field() const;
  bool forked() const noexcept;
  void check_process() const;  // Error(usage) in a forked child

  struct Engine;  // the thread, its queue and the buffer pool (defined in the library)
  struct ResolvedMix {
    LoaderMix mix;
    uint64_t samples = 0;  // positions of an epoch under it
  };

 private:
  void init();
  ResolvedMix resolve(LoaderMix mix) const;
  const ResolvedMix& current_mix() const;  // the mix of epoch_ as the Loader stands
  uint64_t batches_of(uint64_t samples) const noexcept;
  uint64_t origin_for(uint64_t start_batch) const noexcept;
  std::shared_ptr<const Cache> cache_;      // the one-cache constructor's
  std::shared_ptr<const Dataset> dataset_;  // the dataset constructor's
  std::vector<const Cache*> caches_;        // either's caches, in dataset order
  std::vector<uint64_t> first_ids_;         // prefix sums of their sizes (caches_.size() + 1)
  LoaderOptions options_;
  ResolvedMix mix_;                        // set_mix's / the constructor's
  std::optional<ResolvedMix> resume_mix_;  // the chosen mid-epoch resumption's
  std::unique_ptr<Engine> engine_;
  uint64_t epoch_ = 0, origin_ = 0;  // the next (or running) iteration's epoch and first position
  bool epoch_chosen_ = true, started_ = false;
  uint64_t convenience_generation_ = 0;
  bool convenience_running_ = false;
};

}  // namespace slip
SLIP_API_END
