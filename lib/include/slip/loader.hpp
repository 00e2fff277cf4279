// slip/loader.hpp — batches for a training loop: a background thread decodes the next batches of
// a rank's epoch into pooled buffers while the caller uses the current one.
//
// The epoch's order is global and does not depend on the number of ranks: position g of epoch e
// holds sample EpochOrder{seed, e, block_size}.global(g). Rank r of W takes positions r, r+W,
// r+2W, ... (as PyTorch's DistributedSampler), so after every rank took k batches of B samples
// the first k*B*W positions are consumed whatever W was; a LoaderState records that count and
// resumes on any number of ranks with every sample of the epoch seen once (ranks that run past
// the epoch's end repeat the first positions left: DistributedSampler's padding). The order and
// the ranks' shares are slip/mix.hpp's MixedOrder (over one cache) and RankPositions.
//
// Threads: next() may be called from any thread (a batch goes to one caller); start(),
// set_epoch() and load_state() are not concurrent with each other. A Loader inherited through
// fork() refuses to run (its threads stay in the parent). Batches are shared_ptrs whose buffers
// go back to the Loader's pool when the last owner drops them, even after the Loader is gone.
#pragma once

#include "slip/decode.hpp"
#include "slip/export.hpp"

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
  SampleIndices indices;            // not given: every sample; given and empty: an empty epoch
  std::vector<std::string> fields;  // int64 and float64 fields returned with the pixels
  size_t prefetch = 2;              // decoded batches waiting for the caller, at most
  bool skip_errors = false;         // drop samples that fail to decode (bad_input), record them
};

// One batch: the crop groups' pixels (batch-major, crop_group_sample_bytes per sample), or the
// whole images in one block (full_decode), and the requested fields' values (8 bytes each).
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
  uint64_t sample;
  std::string message;
};

// Where a Loader stands: epoch `epoch` with its first `consumed` global positions handed out.
// Recorded with what gives it meaning; loads on any world_size and batch_size.
struct LoaderState {
  uint32_t version = 2;
  uint64_t seed = 0, epoch = 0, consumed = 0;
  uint64_t samples = 0;  // the positions an epoch has (the samples it draws from)
  uint32_t world_size = 1;
  uint64_t batch_size = 0;
};

class Loader {
 public:
  Loader(std::shared_ptr<const Cache> cache, LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  const Cache& cache() const noexcept { return *cache_; }
  const LoaderOptions& options() const noexcept { return options_; }
  uint64_t samples() const noexcept;   // positions per epoch
  uint64_t per_rank() const noexcept;  // this rank's samples of a whole epoch (padded)
  size_t batches() const noexcept;     // this rank's batches of a whole epoch
  uint64_t epoch() const noexcept { return epoch_; }

  // The next start() runs `epoch` from this rank's batch `start_batch` (positions before
  // start_batch*batch_size*world_size are skipped); a running iteration is not disturbed.
  void set_epoch(uint64_t epoch, uint64_t start_batch = 0);
  LoaderState state() const;
  // Throws Error(usage) when the state's seed or samples differ (another order).
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

  std::vector<SkippedSample> skipped() const;  // in the running iteration
  std::vector<uint64_t> order() const;         // this rank's sample ids of epoch(), in order
  CropWindow window(uint64_t sample, uint32_t crop) const;
  size_t image_field() const;
  bool forked() const noexcept;
  void check_process() const;  // Error(usage) in a forked child

  struct Engine;  // the thread, its queue and the buffer pool (defined in the library)

 private:
  uint64_t origin_for(uint64_t start_batch) const noexcept;
  std::shared_ptr<const Cache> cache_;
  LoaderOptions options_;
  std::unique_ptr<Engine> engine_;
  uint64_t epoch_ = 0, origin_ = 0;  // the next (or running) iteration's epoch and first position
  bool epoch_chosen_ = true, started_ = false;
  uint64_t convenience_generation_ = 0;
  bool convenience_running_ = false;
};

}  // namespace slip
SLIP_API_END
