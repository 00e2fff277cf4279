// bench_harness.hpp — the bench harness of `slip bench`: how fast a cache or a dataset of
// caches loads, and how close that is to the machine's limit. A tool built on libslipstream's
// public API (BatchDecoder, Dataset, the pipelines) and not part of it, as zstd keeps its bench
// in programs/: its own static library (apps/bench_harness/, target slip_bench_harness) that
// the slip command links; libslipstream neither contains nor exports it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "slip/decode.hpp"
#include "slip/runtime.hpp"

namespace slip {

class Cache;
class Dataset;

// What a bench reads: one cache, or a dataset of several (slip/dataset.hpp) read through global
// ids, each sample from its own cache. Either converts implicitly; it refers to, and must not
// outlive, the cache or dataset.
class BenchInput {
 public:
  BenchInput(const Cache& cache) noexcept : cache_(&cache) {}
  BenchInput(const Dataset& dataset) noexcept : dataset_(&dataset) {}
  const Dataset* dataset() const noexcept { return dataset_; }
  size_t num_caches() const noexcept;
  const Cache& cache(size_t index) const;
  uint64_t size() const noexcept;                         // samples of all caches
  std::pair<size_t, uint64_t> locate(uint64_t id) const;  // (cache, its local id) of a global id

 private:
  const Cache* cache_ = nullptr;
  const Dataset* dataset_ = nullptr;
};

// The largest --batch-size: a million 224x224 crops are 150 GB of buffers, beyond any machine;
// larger is a mistake (2^64 - 1 was "cannot create std::vector larger than max_size()").
inline constexpr size_t kMaxBatchSize = size_t{1} << 20;
// The most a batch's preallocated buffers may take (batch size x bytes per sample).
inline constexpr uint64_t kMaxBatchBytes = uint64_t{64} << 30;

struct BenchOptions {
  std::string pipeline = "rrc";  // a name of slip/pipelines.hpp (raw, decode, center, rrc, ...)
  std::string crops;             // multicrop: a crop spec overriding the dino preset
  DecodeOptions decode;          // threads, seed, layout, type, filter, crop_aware, field
  size_t batch_size = 256;
  unsigned epochs = 3;
  bool cold = false;         // drop the cache's files from the page cache before epoch 1
  bool shuffle = false;      // Feistel order per epoch instead of sequential
  uint64_t max_samples = 0;  // 0: every sample
  bool measure_limit = true;
  // Hash every output pixel of every epoch (BenchReport::checksum), outside the timed spans: the
  // same cache and options give the same hash at every SIMD level (slip/simd.hpp).
  bool checksum = false;
  CancelToken cancel;  // cancel() from any thread stops the run (slip/runtime.hpp)
};

struct BenchEpoch {
  double seconds = 0;
  double images_per_second = 0;
  double megabytes_per_second = 0;  // payload bytes read (10^6 B/s)
  double ms_per_batch = 0;
  uint64_t crops = 0;
};

struct BenchReport {
  std::string pipeline;
  size_t caches = 1;  // the caches read (a dataset's count)
  std::string field, image_format;
  bool yuv420_siblings = false;  // the field's <f>_yuv420.* sibling files were measured
  unsigned threads = 1;
  size_t batch_size = 0;
  uint64_t samples = 0;
  uint64_t payload_bytes = 0;  // per epoch
  uint32_t crops_per_image = 0;
  int dct_scaling = 0;   // crop-aware decoding on (1) / off (0)
  std::string resample;  // crop pipelines: "rgb" or "planar" (ResampleMode after automatic resolved)
  std::string kernels;   // decoding pipelines: the SIMD level the kernels ran at (slip/simd.hpp), e.g. "avx2"
  // checksum: 16 hex digits, XXH3-64 over the epochs' outputs in order (crop pipelines: each
  // batch's output buffers; decode: each sample's full RGB decode); empty otherwise.
  std::string checksum;
  std::vector<BenchEpoch> epochs;
  // The limit measured in the same run on the same samples: decode pipelines, tjDecompress2
  // (full image to RGB) on `threads` threads at once, each decoding the same images with its own
  // handle, the best of slices run before every epoch and after the last (so the limit and the
  // epochs see the same machine), each a pass over the epochs' images (at most ~2 s of them on a
  // large cache); raw, memcpy between heap buffers on the threads.
  std::string limit_kind;
  double limit_images_per_second = 0;
  double limit_megabytes_per_second = 0;
  double limit_single_thread_images_per_second = 0;  // decode pipelines: one thread alone
  double limit_ideal_images_per_second = 0;          // one thread's rate x threads (what N threads never quite reach)
  double best_images_per_second = 0;                 // the best epoch (warm)
  double efficiency = 0;                             // best / the measured limit
  double efficiency_vs_ideal = 0;                    // best / the ideal limit (the figure before the limit was measured)
  unsigned cpus = 0;                                 // available_cpus() during the run: threads above it share CPUs
  // (best - worst) / best over the timed epochs (the first one left out when there are three or
  // more: it warms the page cache and the buffers). Above kNoisyEpochSpread the machine was
  // busy and the run is too noisy to judge a ratio by.
  double epoch_spread = 0;
  bool noisy = false;
  static constexpr double kNoisyEpochSpread = 0.10;
};

// Runs the benchmark over the input's samples (a dataset's in global id order; --max-samples
// takes the first ones); `on_epoch` (optional) is called after each epoch.
BenchReport run_bench(BenchInput input, const BenchOptions& options,
                      const std::function<void(const BenchReport&, size_t epoch)>& on_epoch = {});

// 1, 2, 4, ... below `cpus`, then `cpus` itself: the thread counts of a scaling run.
std::vector<unsigned> scaling_thread_counts(unsigned cpus);
// The benchmark once per scaling_thread_counts(available_cpus()) (options.decode.threads is
// replaced); `on_report` (optional) is called after each count's run.
std::vector<BenchReport> run_bench_scaling(BenchInput input, const BenchOptions& options,
                                           const std::function<void(const BenchReport&)>& on_report = {});

// The same pipeline on two storages of the same images (a JPEG cache and its YUV420 cache or
// sibling files), run one after the other in this process: the speed ratio other/base of the
// best epochs and the storage ratio other/base of the payload bytes.
struct BenchComparison {
  BenchReport base, other;
  double speed_ratio = 0;
  double storage_ratio = 0;
};
BenchComparison run_bench_comparison(BenchInput base, const BenchOptions& base_options, BenchInput other, const BenchOptions& other_options,
                                     const std::function<void(const BenchReport&, size_t epoch)>& on_epoch = {});

}  // namespace slip
