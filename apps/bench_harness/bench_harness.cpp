// slip bench: epochs of batches through the decode engine (or raw copies), timed, and the
// machine's limit measured in the same run on the same samples. Only libslipstream's public
// API is used (this is not part of the library): its own thread pool for raw copies, its own
// cancellation checks between batches.
#include "bench_harness.hpp"

#include <fcntl.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "slip/cache.hpp"
#include "slip/dataset.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/image.hpp"
#include "slip/pipelines.hpp"
#include "slip/runtime.hpp"
#include "slip/shuffle.hpp"
#include "slip/simd.hpp"
#include "slip/yuv420.hpp"

namespace slip {

size_t BenchInput::num_caches() const noexcept { return dataset_ ? dataset_->num_caches() : 1; }
const Cache& BenchInput::cache(size_t index) const {
  if (dataset_) return dataset_->cache(index);
  if (index != 0) throw Error(Errc::usage, "no cache " + std::to_string(index) + " in a bench input of one cache");
  return *cache_;
}
uint64_t BenchInput::size() const noexcept { return dataset_ ? dataset_->size() : cache_->size(); }
std::pair<size_t, uint64_t> BenchInput::locate(uint64_t id) const {
  if (!dataset_) return {0, id};
  const Dataset::Location at = dataset_->locate(id);
  return {at.cache, at.sample};
}

namespace {

using Clock = std::chrono::steady_clock;

double elapsed_seconds(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A signal (SIGINT) or the options' token stops the run between batches and limit passes.
void bench_check_cancel(const CancelToken& cancel) {
  throw_if_interrupted();
  if (cancel.cancelled()) throw Error(Errc::interrupted, "cancelled");
}

// Runs body(thread, i) for i in [0, count) on persistent threads (the caller's included): the
// raw pipeline's copies, where starting threads per batch would be most of what is timed.
class BenchPool {
 public:
  using Body = std::function<void(unsigned, size_t)>;
  explicit BenchPool(unsigned threads) {
    for (unsigned t = 1; t < threads; ++t) workers_.emplace_back([this, t] { serve(t); });
  }
  ~BenchPool() {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& w : workers_) w.join();
  }
  BenchPool(const BenchPool&) = delete;
  BenchPool& operator=(const BenchPool&) = delete;

  void run(size_t count, const Body& body) {
    {
      const std::lock_guard lock(mutex_);
      body_ = &body;
      count_ = count;
      next_ = 0;
      busy_ = workers_.size();
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    work(0);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return busy_ == 0; });
    body_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void work(unsigned thread) {
    for (size_t i; (i = next_.fetch_add(1)) < count_;) try {
        (*body_)(thread, i);
      } catch (...) {
        const std::lock_guard lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
  }
  void serve(unsigned thread) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      work(thread);
      const std::lock_guard lock(mutex_);
      if (--busy_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const Body* body_ = nullptr;
  size_t count_ = 0, busy_ = 0;
  std::atomic<size_t> next_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

// The measured field's payloads and records by global id: the field's own, or its YUV420
// sibling files (docs/FORMAT.md#yuv420-siblings), cache by cache.
class BenchPayloads {
 public:
  BenchPayloads(const BenchInput& input, size_t field, bool siblings) : input_(input), field_(field) {
    uint64_t largest = 0;
    for (size_t c = 0; c < input.num_caches(); ++c) {
      const Cache& cache = input.cache(c);
      field_max_size_ = std::max(field_max_size_, cache.fields()[field].max_size);
      if (!siblings) continue;
      // The engine checked they exist.
      const auto& s = siblings_.emplace_back(Yuv420Siblings::open(cache, cache.fields()[field].name));
      for (uint64_t id = 0; s && id < s->size(); ++id) largest = std::max(largest, s->record(id).data_size);
    }
    // The loader's own rule for siblings: floor(1.2 x the largest payload).
    if (siblings) field_max_size_ = static_cast<uint64_t>(static_cast<double>(largest) * 1.2);
  }
  MetaRecord record(uint64_t id) const {
    const auto [c, local] = input_.locate(id);
    return siblings_.empty() ? input_.cache(c).record(field_, local) : siblings_[c]->record(local);
  }
  std::span<const std::byte> payload(uint64_t id) const {
    const auto [c, local] = input_.locate(id);
    return siblings_.empty() ? input_.cache(c).payload(field_, local) : siblings_[c]->payload(local);
  }
  uint64_t field_max_size() const noexcept { return field_max_size_; }
  // Drops the caches' files from the page cache, and the sibling files (not part of a Cache's mappings).
  void drop_page_cache() const {
    for (size_t c = 0; c < input_.num_caches(); ++c) input_.cache(c).drop_page_cache();
    for (const auto& s : siblings_) {
      for (const std::string& name : yuv420_sibling_files(input_.cache(0).fields()[field_].name)) {
        const std::filesystem::path file = s->bin_path().parent_path() / name;
        const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        ::close(fd);
      }
    }
  }
  void keep_resident_below() const {
    if (input_.dataset())
      input_.dataset()->keep_resident_below();
    else
      input_.cache(0).keep_resident_below();
  }
  void release_resident_pages() const {
    if (input_.dataset())
      input_.dataset()->release_resident_pages();
    else
      input_.cache(0).release_resident_pages();
  }

 private:
  const BenchInput& input_;
  size_t field_;
  std::vector<std::optional<Yuv420Siblings>> siblings_;
  uint64_t field_max_size_ = 0;
};

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

  TurboJpegLimit(const BenchPayloads& payloads, uint64_t samples, unsigned threads, const CancelToken& cancel)
      : payloads_(payloads), samples_(samples), threads_(threads), cancel_(cancel) {
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
    bench_check_cancel(cancel_);
    const auto payload = payloads_.payload(id);
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
    const size_t bytes = static_cast<size_t>(width) * height * 3;
    if (d.pixels.size() < bytes) d.pixels.resize(bytes);
    unsigned char* const pixels = d.pixels.data();
    tjDecompress2(d.handle.get(), data, static_cast<unsigned long>(payload.size()), pixels, width, 0, height, TJPF_RGB, TJFLAG_LIMITSCANS);
    return 1;
  }

  const BenchPayloads& payloads_;
  uint64_t samples_;
  unsigned threads_;
  const CancelToken& cancel_;
  std::vector<Decoder> decoders_;
  uint64_t set_size_ = 0;
  double single_best_ = 0, concurrent_best_ = 0;
};

using EpochCallback = std::function<void(const BenchReport&, size_t)>;

// One run of the benchmark, in named steps: set-up (pipeline, engine, samples, buffers), the
// timed epochs with the JPEG limit's slices between them, the limit, the noise verdict.
class BenchRun {
 public:
  BenchRun(BenchInput input, const BenchOptions& options) : input_(input), options_(options) {}

  BenchReport run(const EpochCallback& on_epoch) {
    resolve_pipeline();
    open_engine();
    plan_samples();
    allocate_buffers();
    if (options_.cold) payloads_->drop_page_cache();
    if (options_.checksum && !raw_) {
      checksum_.emplace();
      if (full_) digests_.resize(batch_);
    }
    // The JPEG limit's slices run before every epoch and after the last.
    if (options_.measure_limit && !raw_ && report_.image_format == "jpeg")
      jpeg_limit_.emplace(*payloads_, report_.samples, threads_, options_.cancel);
    for (unsigned epoch = 0; epoch < options_.epochs; ++epoch) {
      if (jpeg_limit_) jpeg_limit_->slice();
      report_.epochs.push_back(run_epoch(epoch));
      report_.best_images_per_second = std::max(report_.best_images_per_second, report_.epochs.back().images_per_second);
      if (on_epoch) on_epoch(report_, epoch);
    }
    if (checksum_) report_.checksum = hex64(checksum_->digest());
    if (options_.measure_limit) measure_limit();
    judge_noise();
    return std::move(report_);
  }

 private:
  // The pipeline's crop groups and the engine's options; usage errors before anything is read.
  void resolve_pipeline() {
    const std::string& pipeline = options_.pipeline;
    const Pipeline* named = find_pipeline(pipeline);
    if (named == nullptr) throw Error(Errc::usage, "unknown pipeline '" + pipeline + "' (" + pipeline_names() + ")");
    raw_ = named->kind == PipelineKind::raw;
    full_ = named->kind == PipelineKind::full;
    if (options_.batch_size < 1 || options_.batch_size > kMaxBatchSize)
      throw Error(Errc::usage,
                  "--batch-size must be in 1.." + std::to_string(kMaxBatchSize) + ", got " + std::to_string(options_.batch_size));
    if (options_.epochs < 1) throw Error(Errc::usage, "--epochs must be >= 1");
    decode_ = options_.decode;
    // --crops replaces the groups of a pipeline of several crops (multicrop).
    const bool several = !raw_ && !full_ && !named->crop_spec.empty();
    decode_.groups = several && !options_.crops.empty() ? parse_crop_groups(options_.crops)
                     : raw_                             ? std::vector<CropGroup>{CropGroup{}}
                                                        : pipeline_crop_groups(pipeline);
    threads_ = std::clamp(decode_.threads ? decode_.threads : available_cpus(), 1u, 256u);
    decode_.threads = threads_;
    report_.pipeline = pipeline;
  }

  // The engine validates the field and options even for raw (it names the image field).
  void open_engine() {
    const Dataset* dataset = input_.dataset();
    engine_ = dataset ? std::make_unique<BatchDecoder>(*dataset, decode_) : std::make_unique<BatchDecoder>(input_.cache(0), decode_);
    const std::vector<CacheField>& fields = input_.cache(0).fields();
    for (size_t i = 0; i < fields.size(); ++i)
      if (decode_.field.empty() ? fields[i].type == FieldType::image : fields[i].name == decode_.field) {
        field_ = i;
        break;
      }
    payloads_.emplace(input_, field_, decode_.yuv420_siblings);
  }

  // The report's description of the run, and the payload bytes of an epoch (each record checked
  // against the manifest's max_size, which sizes the raw buffers).
  void plan_samples() {
    const CacheField& field = input_.cache(0).fields()[field_];
    report_.caches = input_.num_caches();
    report_.field = field.name;
    report_.image_format = decode_.yuv420_siblings ? "yuv420" : field.image_format.empty() ? "jpeg" : field.image_format;
    report_.yuv420_siblings = decode_.yuv420_siblings;
    report_.threads = threads_;
    report_.cpus = available_cpus();
    report_.batch_size = options_.batch_size;
    report_.samples = options_.max_samples ? std::min<uint64_t>(options_.max_samples, input_.size()) : input_.size();
    report_.dct_scaling = decode_.crop_aware ? 1 : 0;
    if (!raw_ && !full_) report_.resample = effective_resample_mode(decode_) == ResampleMode::planar ? "planar" : "rgb";
    if (!raw_) report_.kernels = simd_level_name();
    for (const CropGroup& g : decode_.groups) report_.crops_per_image += raw_ || full_ ? 0 : g.count;
    if (report_.samples == 0) throw Error(Errc::usage, "the cache has no samples to benchmark");
    for (uint64_t id = 0; id < report_.samples; ++id) {
      const MetaRecord record = payloads_->record(id);
      if (record.data_size > payloads_->field_max_size()) {
        const auto [c, local] = input_.locate(id);
        throw Error(Errc::bad_input, "payload larger than the manifest's max_size")
            .with_path(input_.cache(c).path().string())
            .with_sample(local);
      }
      report_.payload_bytes += record.data_size;
    }
  }

  // Output buffers: preallocated once, reused by every batch, for at most the samples there are
  // (as the Python loader does), within kMaxBatchBytes.
  void allocate_buffers() {
    batch_ = static_cast<size_t>(std::min<uint64_t>(options_.batch_size, report_.samples));
    uint64_t per_sample = raw_ ? std::clamp<uint64_t>(payloads_->field_max_size(), 1, kMaxBatchBytes) + 16 : 8;
    if (!raw_ && !full_)
      for (const CropGroup& g : decode_.groups) per_sample += crop_group_sample_bytes(g, decode_.type);
    if (per_sample > kMaxBatchBytes / batch_)
      throw Error(Errc::usage, "a batch of " + std::to_string(batch_) + " samples needs more than " + std::to_string(kMaxBatchBytes) +
                                   " bytes of buffers (" + std::to_string(per_sample) + " a sample); use a smaller --batch-size");
    if (!raw_ && !full_) {
      for (const CropGroup& g : decode_.groups) buffers_.emplace_back(batch_ * crop_group_sample_bytes(g, decode_.type));
      for (auto& b : buffers_) outputs_.emplace_back(b);
    }
    // raw: what a loader's I/O stage fills: payload bytes (max_size each), sizes, heights, widths.
    max_size_ = std::max<uint64_t>(payloads_->field_max_size(), 1);
    raw_data_.resize(raw_ ? batch_ * max_size_ : 0);
    raw_records_.resize(raw_ ? batch_ : 0);
    pool_ = std::make_unique<BenchPool>(raw_ ? threads_ : 1);
    ids_.resize(batch_);
  }

  // One timed epoch. RSS stays under ~kResidentWindowBytes of mapped cache (plus the batch
  // buffers), however large the input: resident pages are released past the window.
  BenchEpoch run_epoch(unsigned epoch) {
    std::unique_ptr<EpochOrder> order;
    if (options_.shuffle) {
      ShuffleSpec spec;
      spec.num_samples = report_.samples;
      spec.seed = decode_.seed;
      spec.epoch = epoch;
      order = std::make_unique<EpochOrder>(spec);
    }
    uint64_t batches = 0;
    double hashing_seconds = 0;  // left out of the epoch's time
    const auto start = Clock::now();
    for (uint64_t first = 0; first < report_.samples; first += options_.batch_size) {
      bench_check_cancel(options_.cancel);
      const size_t count = static_cast<size_t>(std::min<uint64_t>(options_.batch_size, report_.samples - first));
      const std::span<uint64_t> batch(ids_.data(), count);
      if (order)
        order->fill(first, batch);
      else
        for (size_t i = 0; i < count; ++i) batch[i] = first + i;
      decode_batch(batch, epoch);
      if (checksum_) {
        const auto hashing = Clock::now();
        hash_batch(count);
        hashing_seconds += elapsed_seconds(hashing);
      }
      ++batches;
      payloads_->keep_resident_below();
    }
    BenchEpoch e;
    e.seconds = elapsed_seconds(start) - hashing_seconds;
    e.images_per_second = static_cast<double>(report_.samples) / e.seconds;
    e.megabytes_per_second = static_cast<double>(report_.payload_bytes) / 1e6 / e.seconds;
    e.ms_per_batch = e.seconds * 1e3 / static_cast<double>(batches);
    e.crops = report_.samples * report_.crops_per_image;
    return e;
  }

  void decode_batch(std::span<const uint64_t> batch, unsigned epoch) {
    if (raw_) {
      pool_->run(batch.size(), [&](unsigned, size_t i) {
        raw_records_[i] = payloads_->record(batch[i]);
        const auto payload = payloads_->payload(batch[i]);
        std::memcpy(raw_data_.data() + i * max_size_, payload.data(), payload.size());
      });
    } else if (full_) {
      engine_->decode_images(batch, whole_);
    } else {
      engine_->decode(batch, epoch, outputs_);
    }
  }

  // decode: each image's XXH3 of its rows (what decode_full gives); crops: the batch's buffers.
  void hash_batch(size_t count) {
    if (full_) {
      for (size_t i = 0; i < count; ++i) {
        const PackedImages::Extent& e = whole_.images[i];
        digests_[i] = xxh3_64(std::as_bytes(whole_.pixels().subspan(e.offset, size_t{e.width} * e.height * 3)));
      }
      checksum_->update(std::as_bytes(std::span<const uint64_t>(digests_.data(), count)));
      return;
    }
    for (size_t g = 0; g < outputs_.size(); ++g)
      checksum_->update(outputs_[g].first(count * crop_group_sample_bytes(decode_.groups[g], decode_.type)));
  }

  void measure_limit() {
    if (raw_) {
      measure_memcpy_limit();
      report_.limit_ideal_images_per_second = report_.limit_images_per_second;  // memcpy: measured on the threads
    } else if (jpeg_limit_) {
      jpeg_limit_->slice();
      report_.limit_kind = "tjDecompress2 on the threads at once";
      report_.limit_single_thread_images_per_second = jpeg_limit_->single_best();
      report_.limit_images_per_second = jpeg_limit_->concurrent_best();
      report_.limit_ideal_images_per_second = report_.limit_single_thread_images_per_second * threads_;
      report_.limit_megabytes_per_second =
          report_.limit_images_per_second * static_cast<double>(report_.payload_bytes) / static_cast<double>(report_.samples) / 1e6;
    }
    if (report_.limit_images_per_second > 0) report_.efficiency = report_.best_images_per_second / report_.limit_images_per_second;
    if (report_.limit_ideal_images_per_second > 0)
      report_.efficiency_vs_ideal = report_.best_images_per_second / report_.limit_ideal_images_per_second;
  }

  // The same copies (same sizes, same destinations, same threads) from a warm heap copy of the
  // payloads instead of the mapped files: memcpy bandwidth for this access pattern. The heap
  // copy holds the first payloads up to a quarter of the resident window (at least one batch),
  // so the limit costs bounded memory on an input of any size.
  void measure_memcpy_limit() {
    std::vector<uint64_t> offsets{0};
    for (uint64_t id = 0; id < report_.samples; ++id) {
      if (id >= options_.batch_size && offsets.back() >= Cache::kResidentWindowBytes / 4) break;
      offsets.push_back(offsets.back() + payloads_->record(id).data_size);
    }
    const uint64_t limit_samples = offsets.size() - 1;
    std::vector<std::byte> heap(offsets.back());
    for (uint64_t id = 0; id < limit_samples; ++id) {
      const auto payload = payloads_->payload(id);
      std::memcpy(heap.data() + offsets[id], payload.data(), payload.size());
    }
    payloads_->release_resident_pages();
    uint64_t copied = 0;
    const auto start = Clock::now();
    do {
      bench_check_cancel(options_.cancel);
      for (uint64_t first = 0; first < limit_samples; first += options_.batch_size) {
        const size_t count = static_cast<size_t>(std::min<uint64_t>(options_.batch_size, limit_samples - first));
        pool_->run(count, [&](unsigned, size_t i) {
          const uint64_t id = first + i;
          std::memcpy(raw_data_.data() + i * max_size_, heap.data() + offsets[id], offsets[id + 1] - offsets[id]);
        });
      }
      copied += offsets.back();
    } while (elapsed_seconds(start) < 1.0);
    report_.limit_kind = "memcpy";
    report_.limit_megabytes_per_second = static_cast<double>(copied) / 1e6 / elapsed_seconds(start);
    const double bytes_per_image = static_cast<double>(report_.payload_bytes) / static_cast<double>(report_.samples);
    report_.limit_images_per_second = report_.limit_megabytes_per_second * 1e6 / bytes_per_image;
    report_.limit_single_thread_images_per_second = report_.limit_images_per_second / threads_;
  }

  // (best - worst) / best over the timed epochs, the first left out when there are three or more.
  void judge_noise() {
    const size_t first_judged = report_.epochs.size() >= 3 ? 1 : 0;
    double worst = report_.best_images_per_second, best = 0;
    for (size_t i = first_judged; i < report_.epochs.size(); ++i) {
      worst = std::min(worst, report_.epochs[i].images_per_second);
      best = std::max(best, report_.epochs[i].images_per_second);
    }
    report_.epoch_spread = best > 0 ? (best - worst) / best : 0;
    report_.noisy = report_.epoch_spread > BenchReport::kNoisyEpochSpread;
  }

  BenchInput input_;
  const BenchOptions& options_;
  bool raw_ = false, full_ = false;
  DecodeOptions decode_;
  unsigned threads_ = 1;
  size_t field_ = 0;
  std::unique_ptr<BatchDecoder> engine_;
  std::optional<BenchPayloads> payloads_;
  BenchReport report_;
  size_t batch_ = 0;
  std::vector<std::vector<std::byte>> buffers_;
  std::vector<std::span<std::byte>> outputs_;
  uint64_t max_size_ = 1;
  std::vector<std::byte> raw_data_;
  std::vector<MetaRecord> raw_records_;  // raw: sizes, heights, widths, as a loader's I/O stage keeps them
  std::unique_ptr<BenchPool> pool_;
  std::vector<uint64_t> ids_;
  std::optional<Xxh3> checksum_;
  std::vector<uint64_t> digests_;  // decode: one per sample of a batch
  PackedImages whole_;             // decode: the batch's images in one block, as the Loader's decode pipeline has them
  std::optional<TurboJpegLimit> jpeg_limit_;
};

}  // namespace

BenchReport run_bench(BenchInput input, const BenchOptions& options, const EpochCallback& on_epoch) {
  return BenchRun(input, options).run(on_epoch);
}

std::vector<unsigned> scaling_thread_counts(unsigned cpus) {
  std::vector<unsigned> counts;
  for (unsigned n = 1; n < cpus; n *= 2) counts.push_back(n);
  counts.push_back(std::max(cpus, 1u));
  return counts;
}

std::vector<BenchReport> run_bench_scaling(BenchInput input, const BenchOptions& options,
                                           const std::function<void(const BenchReport&)>& on_report) {
  std::vector<BenchReport> reports;
  for (unsigned threads : scaling_thread_counts(available_cpus())) {
    BenchOptions o = options;
    o.decode.threads = threads;
    reports.push_back(run_bench(input, o));
    if (on_report) on_report(reports.back());
  }
  return reports;
}

BenchComparison run_bench_comparison(BenchInput base, const BenchOptions& base_options, BenchInput other, const BenchOptions& other_options,
                                     const std::function<void(const BenchReport&, size_t)>& on_epoch) {
  BenchComparison c;
  c.base = run_bench(base, base_options, on_epoch);
  c.other = run_bench(other, other_options, on_epoch);
  if (c.base.best_images_per_second > 0) c.speed_ratio = c.other.best_images_per_second / c.base.best_images_per_second;
  if (c.base.payload_bytes > 0) c.storage_ratio = static_cast<double>(c.other.payload_bytes) / static_cast<double>(c.base.payload_bytes);
  return c;
}

}  // namespace slip
