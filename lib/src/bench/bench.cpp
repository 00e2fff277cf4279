// slip bench: epochs of batches through the decode engine (or raw copies), timed, and the
// machine's limit measured in the same run on the same samples.
#include "slip/bench.hpp"

#include <turbojpeg.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <latch>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "util/worker_pool.hpp"
#include "slip/cache.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/image.hpp"
#include "slip/pipelines.hpp"
#include "slip/runtime.hpp"
#include "slip/shuffle.hpp"
#include "slip/simd.hpp"
#include "slip/yuv420.hpp"
#include "util/file_io.hpp"
#include "util/cancel.hpp"
#include "util/scratch.hpp"

namespace slip {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_seconds(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Full TurboJPEG decodes of a cache's JPEG samples, measured in slices between the epochs so
// that the limit and the epochs see the same machine (a shared machine's speed drifts over
// seconds): the first slice decodes every sample once in order on one thread, or stops past
// kMaxSliceSeconds (and 64 images) on a large cache, fixing the set; each later slice decodes
// that same set once. The set is the epochs' images wherever a pass fits in a slice: a subset
// would leave out the heaviest images and overstate the limit. With N > 1 threads each slice
// also runs the set on N threads at once, each with its own handle and buffer: the measured
// limit, which SMT siblings, turbo limits and shared memory bandwidth hold below N times one
// thread's rate (the ideal). Each limit is its best slice, as the report's rate is the best epoch.
class TurboJpegLimit {
 public:
  static constexpr double kMaxSliceSeconds = 2.0;

  TurboJpegLimit(const Cache& cache, size_t field, uint64_t samples, unsigned threads)
      : cache_(cache), field_(field), samples_(samples), threads_(threads) {
    decoders_.reserve(threads);
    for (unsigned t = 0; t < threads; ++t) decoders_.emplace_back();
  }

  void slice() {
    single_best_ = std::max(single_best_, single_slice());
    if (threads_ > 1) concurrent_best_ = std::max(concurrent_best_, concurrent_slice());
  }
  double single_best() const { return single_best_; }
  // One thread's rate when the limit ran on one thread.
  double concurrent_best() const { return threads_ > 1 ? concurrent_best_ : single_best_; }

 private:
  struct Decoder {
    std::unique_ptr<void, int (*)(tjhandle)> handle{tjInitDecompress(), tjDestroy};
    std::vector<uint8_t> pixels;
    Decoder() {
      if (!handle) throw Error(Errc::io, "tjInitDecompress failed");
    }
  };

  double single_slice() {
    uint64_t images = 0;
    const auto start = Clock::now();
    if (set_size_ == 0) {
      uint64_t id = 0;
      for (; id < samples_ && !(images >= 64 && elapsed_seconds(start) > kMaxSliceSeconds); ++id) images += decode(decoders_[0], id);
      set_size_ = std::max<uint64_t>(id, 1);
    } else {
      for (uint64_t id = 0; id < set_size_; ++id) images += decode(decoders_[0], id);
    }
    const double elapsed = elapsed_seconds(start);
    return images && elapsed > 0 ? static_cast<double>(images) / elapsed : 0.0;
  }

  // Every thread decodes the whole set, all started at once; the rate counts until the last ends.
  double concurrent_slice() {
    std::vector<uint64_t> images(threads_, 0);
    std::vector<std::exception_ptr> errors(threads_);
    std::latch ready(threads_ + 1);
    std::vector<std::jthread> workers;
    workers.reserve(threads_);
    try {
      for (unsigned t = 0; t < threads_; ++t)
        workers.emplace_back([&, t] {
          ready.arrive_and_wait();
          try {
            for (uint64_t id = 0; id < set_size_; ++id) images[t] += decode(decoders_[t], id);
          } catch (...) {
            errors[t] = std::current_exception();
          }
        });
    } catch (...) {
      ready.count_down(static_cast<std::ptrdiff_t>(threads_ - workers.size()) + 1);  // release the started ones
      throw;
    }
    ready.arrive_and_wait();
    const auto start = Clock::now();
    workers.clear();  // joins
    const double elapsed = elapsed_seconds(start);
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
    uint64_t total = 0;
    for (uint64_t n : images) total += n;
    return total && elapsed > 0 ? static_cast<double>(total) / elapsed : 0.0;
  }

  // 1 when sample `id` is a JPEG TurboJPEG decodes to RGB (CMYK and non-JPEG payloads skipped).
  uint64_t decode(Decoder& d, uint64_t id) {
    throw_if_interrupted();
    const auto payload = cache_.payload(field_, id);
    if (sniff_image_format(payload) != ImageFormat::jpeg) return 0;
    int width = 0, height = 0, subsamp = 0, colorspace = 0;
    const auto* data = reinterpret_cast<const unsigned char*>(payload.data());
    if (tjDecompressHeader3(d.handle.get(), data, static_cast<unsigned long>(payload.size()), &width, &height, &subsamp, &colorspace) !=
            0 ||
        colorspace == TJCS_CMYK || colorspace == TJCS_YCCK ||
        static_cast<uint64_t>(width) * static_cast<uint64_t>(height) > kDecodePixelLimit)
      return 0;
    // The buffer only grows: resize() would zero-fill it again after every smaller image, work
    // that is not the decoder's and that made the limit read low.
    unsigned char* const pixels = detail::scratch_of(d.pixels, static_cast<size_t>(width) * height * 3);
    tjDecompress2(d.handle.get(), data, static_cast<unsigned long>(payload.size()), pixels, width, 0, height, TJPF_RGB, TJFLAG_LIMITSCANS);
    return 1;
  }

  const Cache& cache_;
  size_t field_;
  uint64_t samples_;
  unsigned threads_;
  std::vector<Decoder> decoders_;
  uint64_t set_size_ = 0;
  double single_best_ = 0, concurrent_best_ = 0;
};

}  // namespace

// Over 120 lines (issue 46): set-up, the limit passes and the timed epochs share the engine and buffers;
// its commented steps are where it splits, not done while no build could check the split.
BenchReport run_bench(const Cache& cache, const BenchOptions& options, const std::function<void(const BenchReport&, size_t)>& on_epoch) {
  const detail::CancelScope cancel_scope(options.cancel);
  const std::string& pipeline = options.pipeline;
  const Pipeline* named = find_pipeline(pipeline);
  if (named == nullptr) throw Error(Errc::usage, "unknown pipeline '" + pipeline + "' (" + pipeline_names() + ")");
  const bool raw = named->kind == PipelineKind::raw;
  const bool full = named->kind == PipelineKind::full;
  if (options.batch_size < 1 || options.batch_size > kMaxBatchSize)
    throw Error(Errc::usage, "--batch-size must be in 1.." + std::to_string(kMaxBatchSize) + ", got " + std::to_string(options.batch_size));
  if (options.epochs < 1) throw Error(Errc::usage, "--epochs must be >= 1");

  DecodeOptions decode = options.decode;
  // --crops replaces the groups of a pipeline of several crops (multicrop).
  const bool several = !raw && !full && !named->crop_spec.empty();
  decode.groups = several && !options.crops.empty() ? parse_crop_groups(options.crops)
                  : raw                             ? std::vector<CropGroup>{CropGroup{}}
                                                    : pipeline_crop_groups(pipeline);
  const unsigned threads = std::clamp(decode.threads ? decode.threads : available_cpus(), 1u, 256u);
  decode.threads = threads;
  // The engine validates the field and options even for raw (it names the image field).
  BatchDecoder engine(cache, decode);
  size_t field = 0;
  for (size_t i = 0; i < cache.fields().size(); ++i)
    if (decode.field.empty() ? cache.fields()[i].type == FieldType::image : cache.fields()[i].name == decode.field) {
      field = i;
      break;
    }

  // The payloads measured: the field's own, or its YUV420 sibling files (docs/FORMAT.md#yuv420-siblings).
  std::optional<Yuv420Siblings> siblings;
  if (decode.yuv420_siblings) siblings = Yuv420Siblings::open(cache, cache.fields()[field].name);  // the engine checked they exist
  const auto record_of = [&](uint64_t id) { return siblings ? siblings->record(id) : cache.record(field, id); };
  const auto payload_of = [&](uint64_t id) { return siblings ? siblings->payload(id) : cache.payload(field, id); };
  uint64_t field_max_size = cache.fields()[field].max_size;
  if (siblings) {
    // The loader's own rule for siblings: floor(1.2 x the largest payload).
    uint64_t largest = 0;
    for (uint64_t id = 0; id < siblings->size(); ++id) largest = std::max(largest, siblings->record(id).data_size);
    field_max_size = static_cast<uint64_t>(static_cast<double>(largest) * 1.2);
  }

  BenchReport report;
  report.pipeline = pipeline;
  report.field = cache.fields()[field].name;
  report.image_format = siblings ? "yuv420" : cache.fields()[field].image_format.empty() ? "jpeg" : cache.fields()[field].image_format;
  report.yuv420_siblings = siblings.has_value();
  report.threads = threads;
  report.cpus = available_cpus();
  report.batch_size = options.batch_size;
  report.samples = options.max_samples ? std::min<uint64_t>(options.max_samples, cache.size()) : cache.size();
  report.dct_scaling = decode.crop_aware ? 1 : 0;
  if (!raw && !full) report.resample = effective_resample_mode(decode) == ResampleMode::planar ? "planar" : "rgb";
  if (!raw) report.kernels = simd_level_name();
  for (const CropGroup& g : decode.groups) report.crops_per_image += raw || full ? 0 : g.count;
  if (report.samples == 0) throw Error(Errc::usage, "the cache has no samples to benchmark");
  for (uint64_t id = 0; id < report.samples; ++id) {
    const MetaRecord record = record_of(id);
    if (record.data_size > field_max_size) throw Error(Errc::bad_input, "payload larger than the manifest's max_size").with_sample(id);
    report.payload_bytes += record.data_size;
  }

  // Output buffers: preallocated once, reused by every batch, for at most the samples there are
  // (as the Python loader does), within kMaxBatchBytes.
  const size_t batch = static_cast<size_t>(std::min<uint64_t>(options.batch_size, report.samples));
  {
    uint64_t per_sample = raw ? std::clamp<uint64_t>(field_max_size, 1, kMaxBatchBytes) + 16 : 8;
    if (!raw && !full)
      for (const CropGroup& g : decode.groups) per_sample += crop_group_sample_bytes(g, decode.type);
    if (per_sample > kMaxBatchBytes / batch)
      throw Error(Errc::usage, "a batch of " + std::to_string(batch) + " samples needs more than " + std::to_string(kMaxBatchBytes) +
                                   " bytes of buffers (" + std::to_string(per_sample) + " a sample); use a smaller --batch-size");
  }
  std::vector<std::vector<std::byte>> buffers;
  std::vector<std::span<std::byte>> outputs;
  if (!raw && !full) {
    for (const CropGroup& g : decode.groups) buffers.emplace_back(batch * crop_group_sample_bytes(g, decode.type));
    for (auto& b : buffers) outputs.emplace_back(b);
  }
  // raw: what a loader's I/O stage fills: payload bytes (max_size each), sizes, heights, widths.
  const uint64_t max_size = std::max<uint64_t>(field_max_size, 1);
  std::vector<std::byte> raw_data(raw ? batch * max_size : 0);
  std::vector<uint64_t> raw_sizes(raw ? batch : 0);
  std::vector<uint32_t> raw_heights(raw_sizes.size()), raw_widths(raw_sizes.size());
  detail::WorkerPool raw_pool(raw ? threads : 1);

  if (options.cold) {
    cache.drop_page_cache();
    if (siblings) {
      // The sibling files are not part of the Cache's mappings: drop them separately.
      for (const std::string& name : yuv420_sibling_files(report.field)) {
        const detail::MappedFile f(cache.path() / name);
        f.drop_page_cache();
      }
    }
  }
  std::vector<uint64_t> ids(batch);
  std::optional<Xxh3> checksum;
  std::vector<uint64_t> digests;  // decode: one per sample of a batch
  PackedImages whole;             // decode: the batch's images in one block, as the Loader's decode pipeline has them
  if (options.checksum && !raw) {
    checksum.emplace();
    if (full) digests.resize(batch);
  }
  // The JPEG limit's slices run before every epoch and after the last.
  std::optional<TurboJpegLimit> jpeg_limit;
  if (options.measure_limit && !raw && report.image_format == "jpeg") jpeg_limit.emplace(cache, field, report.samples, threads);
  for (unsigned epoch = 0; epoch < options.epochs; ++epoch) {
    if (jpeg_limit) jpeg_limit->slice();
    std::unique_ptr<EpochOrder> order;
    if (options.shuffle) {
      ShuffleSpec spec;
      spec.num_samples = report.samples;
      spec.seed = decode.seed;
      spec.epoch = epoch;
      order = std::make_unique<EpochOrder>(spec);
    }
    uint64_t batches = 0;
    double hashing_seconds = 0;  // left out of the epoch's time
    // RSS stays under ~kResidentWindowBytes of mapped cache (plus the batch buffers), however
    // large the cache: resident pages are released past the window (page cache untouched).
    const auto start = Clock::now();
    for (uint64_t first = 0; first < report.samples; first += options.batch_size) {
      throw_if_interrupted();
      const size_t count = static_cast<size_t>(std::min<uint64_t>(options.batch_size, report.samples - first));
      const std::span<uint64_t> batch(ids.data(), count);
      if (order)
        order->fill(first, batch);
      else
        for (size_t i = 0; i < count; ++i) batch[i] = first + i;
      if (raw) {
        raw_pool.run(count, [&](unsigned, size_t i) {
          const MetaRecord record = record_of(batch[i]);
          const auto payload = payload_of(batch[i]);
          std::memcpy(raw_data.data() + i * max_size, payload.data(), payload.size());
          raw_sizes[i] = record.data_size;
          raw_heights[i] = record.height;
          raw_widths[i] = record.width;
        });
      } else if (full) {
        engine.decode_images(batch, whole);
      } else {
        engine.decode(batch, epoch, outputs);
      }
      if (checksum) {
        const auto hashing = Clock::now();
        if (full) {
          // Each image's XXH3 of its rows (what decode_full gives), so the checksum is the same as before.
          for (size_t i = 0; i < count; ++i) {
            const PackedImages::Extent& e = whole.images[i];
            digests[i] = xxh3_64(std::as_bytes(whole.pixels().subspan(e.offset, size_t{e.width} * e.height * 3)));
          }
          checksum->update(std::as_bytes(std::span<const uint64_t>(digests.data(), count)));
        } else
          for (size_t g = 0; g < outputs.size(); ++g)
            checksum->update(outputs[g].first(count * crop_group_sample_bytes(decode.groups[g], decode.type)));
        hashing_seconds += elapsed_seconds(hashing);
      }
      ++batches;
      cache.keep_resident_below();
    }
    BenchEpoch e;
    e.seconds = elapsed_seconds(start) - hashing_seconds;
    e.images_per_second = static_cast<double>(report.samples) / e.seconds;
    e.megabytes_per_second = static_cast<double>(report.payload_bytes) / 1e6 / e.seconds;
    e.ms_per_batch = e.seconds * 1e3 / static_cast<double>(batches);
    e.crops = report.samples * report.crops_per_image;
    report.epochs.push_back(e);
    report.best_images_per_second = std::max(report.best_images_per_second, e.images_per_second);
    if (on_epoch) on_epoch(report, epoch);
  }

  if (checksum) report.checksum = hex64(checksum->digest());
  if (options.measure_limit) {
    if (raw) {
      // The same copies (same sizes, same destinations, same threads) from a warm heap copy of
      // the payloads instead of the mapped cache file: memcpy bandwidth for this access pattern.
      // The heap copy holds the first payloads up to a quarter of the resident window (at least one
      // batch), so the limit costs bounded memory on a cache of any size.
      std::vector<uint64_t> offsets{0};
      for (uint64_t id = 0; id < report.samples; ++id) {
        if (id >= options.batch_size && offsets.back() >= Cache::kResidentWindowBytes / 4) break;
        offsets.push_back(offsets.back() + record_of(id).data_size);
      }
      const uint64_t limit_samples = offsets.size() - 1;
      std::vector<std::byte> heap(offsets.back());
      for (uint64_t id = 0; id < limit_samples; ++id) {
        const auto payload = payload_of(id);
        std::memcpy(heap.data() + offsets[id], payload.data(), payload.size());
      }
      cache.release_resident_pages();
      uint64_t copied = 0;
      const auto start = Clock::now();
      do {
        for (uint64_t first = 0; first < limit_samples; first += options.batch_size) {
          const size_t count = static_cast<size_t>(std::min<uint64_t>(options.batch_size, limit_samples - first));
          raw_pool.run(count, [&](unsigned, size_t i) {
            const uint64_t id = first + i;
            std::memcpy(raw_data.data() + i * max_size, heap.data() + offsets[id], offsets[id + 1] - offsets[id]);
          });
        }
        copied += offsets.back();
      } while (elapsed_seconds(start) < 1.0);
      report.limit_kind = "memcpy";
      report.limit_megabytes_per_second = static_cast<double>(copied) / 1e6 / elapsed_seconds(start);
      const double bytes_per_image = static_cast<double>(report.payload_bytes) / static_cast<double>(report.samples);
      report.limit_images_per_second = report.limit_megabytes_per_second * 1e6 / bytes_per_image;
      report.limit_single_thread_images_per_second = report.limit_images_per_second / threads;
    } else if (jpeg_limit) {
      jpeg_limit->slice();
      report.limit_kind = "tjDecompress2 on the threads at once";
      report.limit_single_thread_images_per_second = jpeg_limit->single_best();
      report.limit_images_per_second = jpeg_limit->concurrent_best();
      report.limit_ideal_images_per_second = report.limit_single_thread_images_per_second * threads;
      report.limit_megabytes_per_second =
          report.limit_images_per_second * static_cast<double>(report.payload_bytes) / static_cast<double>(report.samples) / 1e6;
    }
    if (raw) report.limit_ideal_images_per_second = report.limit_images_per_second;  // memcpy: measured on the threads
    if (report.limit_images_per_second > 0) report.efficiency = report.best_images_per_second / report.limit_images_per_second;
    if (report.limit_ideal_images_per_second > 0)
      report.efficiency_vs_ideal = report.best_images_per_second / report.limit_ideal_images_per_second;
  }
  const size_t first_judged = report.epochs.size() >= 3 ? 1 : 0;
  double worst = report.best_images_per_second, best = 0;
  for (size_t i = first_judged; i < report.epochs.size(); ++i) {
    worst = std::min(worst, report.epochs[i].images_per_second);
    best = std::max(best, report.epochs[i].images_per_second);
  }
  report.epoch_spread = best > 0 ? (best - worst) / best : 0;
  report.noisy = report.epoch_spread > BenchReport::kNoisyEpochSpread;
  return report;
}

std::vector<unsigned> scaling_thread_counts(unsigned cpus) {
  std::vector<unsigned> counts;
  for (unsigned n = 1; n < cpus; n *= 2) counts.push_back(n);
  counts.push_back(std::max(cpus, 1u));
  return counts;
}

std::vector<BenchReport> run_bench_scaling(const Cache& cache, const BenchOptions& options,
                                           const std::function<void(const BenchReport&)>& on_report) {
  std::vector<BenchReport> reports;
  for (unsigned threads : scaling_thread_counts(available_cpus())) {
    BenchOptions o = options;
    o.decode.threads = threads;
    reports.push_back(run_bench(cache, o));
    if (on_report) on_report(reports.back());
  }
  return reports;
}

BenchComparison run_bench_comparison(const Cache& base, const BenchOptions& base_options, const Cache& other,
                                     const BenchOptions& other_options, const std::function<void(const BenchReport&, size_t)>& on_epoch) {
  BenchComparison c;
  c.base = run_bench(base, base_options, on_epoch);
  c.other = run_bench(other, other_options, on_epoch);
  if (c.base.best_images_per_second > 0) c.speed_ratio = c.other.best_images_per_second / c.base.best_images_per_second;
  if (c.base.payload_bytes > 0) c.storage_ratio = static_cast<double>(c.other.payload_bytes) / static_cast<double>(c.base.payload_bytes);
  return c;
}

}  // namespace slip
