// slip::Loader (slip/loader.hpp): the batching thread, buffer pool, skip policy and epoch state
// behind slipcache.Loader, usable from C++. Nothing here knows Python: the binding releases the
// GIL around next() and polls for signals between its timeouts.
#include "slip/loader.hpp"

#include <algorithm>
#include <limits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include <unistd.h>

#include "slip/cache.hpp"
#include "slip/dataset.hpp"
#include "slip/error.hpp"
#include "slip/image.hpp"
#include "slip/mix.hpp"
#include "slip/pipelines.hpp"
#include "slip/shuffle.hpp"

namespace slip {

SampleIndices SampleIndices::list(std::vector<uint64_t> ids) {
  SampleIndices s;
  s.list_ = std::move(ids);
  s.count_ = s.list_.size();
  s.given_ = true;
  return s;
}

SampleIndices SampleIndices::progression(uint64_t first, int64_t step, uint64_t count) {
  SampleIndices s;
  s.first_ = first;
  s.step_ = step;
  s.count_ = count;
  s.given_ = true;
  s.progression_ = true;
  return s;
}

std::optional<uint64_t> SampleIndices::first_beyond(uint64_t samples) const {
  if (progression_) {  // O(1): a progression's extremes are its ends
    if (count_ == 0) return std::nullopt;
    const uint64_t last = (*this)[count_ - 1];
    if (first_ >= samples) return first_;
    if (last >= samples) return last;
    return std::nullopt;
  }
  for (uint64_t id : list_)
    if (id >= samples) return id;
  return std::nullopt;
}

namespace {

// Buffers the caller has let go of, for the next batches. Shared with the batches' deleters: a
// batch may outlive its Loader (then its buffer is simply freed), and a caller that keeps every
// batch makes the loader allocate more instead of waiting for a buffer that never comes back.
class LoaderPool {
 public:
  void put(std::unique_ptr<Batch> b) {
    // In a forked child the mutex may have been held by a thread that no longer exists: the
    // buffer is simply freed there.
    if (getpid() != pid_) return;
    std::lock_guard lock(mutex_);
    if (idle_) idle_loader_block(*b);
    free_.push_back(std::move(b));
  }
  // A whole batch of the decode pipeline took `bytes` of its block: what every block keeps
  // between iterations is the smallest such batch seen (every whole batch writes at least that).
  void note_whole_batch(size_t bytes) {
    std::lock_guard lock(mutex_);
    keep_ = std::min(keep_, bytes);
  }
  // Between iterations (the producer has made its last batch), a decode-pipeline block keeps
  // only the pages that every whole batch writes (the smallest whole batch seen; none before
  // the first) and gives back the rest: which batches the pool held at an epoch's end (a
  // 12-MPix photo is 36 MB of them) no longer changes RSS there, and the next iteration's
  // batches do not fault in again the pages all of them use (releasing every page cost the
  // decode pipeline 10-40% of its speed on short epochs: each block faulted in anew).
  void set_idle(bool idle) {
    std::lock_guard lock(mutex_);
    idle_ = idle;
    if (idle)
      for (const auto& b : free_) idle_loader_block(*b);
  }
  // The buffer given back last (its pages and cache lines are the warmest): the batches in
  // flight cycle through as few blocks as they need, the others stay idle.
  std::unique_ptr<Batch> take() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) return nullptr;
    auto b = std::move(free_.back());
    free_.pop_back();
    return b;
  }

 private:
  const pid_t pid_ = getpid();
  std::mutex mutex_;
  std::deque<std::unique_ptr<Batch>> free_;
  bool idle_ = false;
  size_t keep_ = SIZE_MAX;  // SIZE_MAX: no whole batch yet (an idle block then keeps nothing)

  void idle_loader_block(Batch& b) const {
    b.full.images.clear();
    b.full.release_past(keep_ == SIZE_MAX ? 0 : keep_);  // the block stays
  }
};

// A batch handed out: its buffer goes back to the pool when the last owner drops it.
BatchPtr lend_loader_batch(std::unique_ptr<Batch> b, const std::shared_ptr<LoaderPool>& pool) {
  return BatchPtr(b.release(), [weak = std::weak_ptr<LoaderPool>(pool)](Batch* p) {
    std::unique_ptr<Batch> owned(p);
    if (auto pool = weak.lock()) pool->put(std::move(owned));
  });
}

}  // namespace

// The running iteration: a producer thread filling `ready` with at most `prefetch` batches.
struct Loader::Engine {
  DecodeOptions decode;
  // One decoder over every cache (global ids): one pool of threads and one set of per-thread
  // buffers decode a batch in place whatever caches its samples come from.
  std::unique_ptr<BatchDecoder> decoder;
  std::vector<size_t> field_ids;
  std::shared_ptr<LoaderPool> pool = std::make_shared<LoaderPool>();
  mutable std::mutex mutex;
  std::condition_variable ready_cv, space_cv;
  std::deque<std::unique_ptr<Batch>> ready;
  bool stop = false, finished = true;
  std::exception_ptr error;
  std::vector<SkippedSample> skipped;
  std::thread worker;
  uint64_t generation = 0;
  uint64_t run_epoch = 0, run_origin = 0, handed = 0, run_batches = 0;  // the iteration state() describes
  ResolvedMix run_mix;                                                  // and its mix
  const pid_t pid = getpid();                                           // the process that made the threads

  // Stops and joins the producer; the batches it decoded but never handed out go to the pool.
  void stop_worker() {
    {
      std::lock_guard lock(mutex);
      stop = true;
    }
    space_cv.notify_all();
    if (worker.joinable()) worker.join();
    std::lock_guard lock(mutex);
    for (auto& b : ready) pool->put(std::move(b));
    ready.clear();
    finished = true;
  }
};

namespace {

struct LoaderRun {  // what one iteration produces
  uint64_t epoch, origin, per_rank;
  size_t batches;
  size_t capacity;  // of every buffer of the Loader (pooled ones serve every later iteration)
  Loader::ResolvedMix mix;
};

}  // namespace

// ---- construction and epoch state ---------------------------------------------------------

Loader::Loader(std::shared_ptr<const Cache> cache, LoaderOptions options)
    : cache_(std::move(cache)), options_(std::move(options)), engine_(std::make_unique<Engine>()), epoch_(options_.epoch) {
  if (!cache_) throw Error(Errc::usage, "the Loader needs a cache");
  caches_ = {cache_.get()};
  first_ids_ = {0, cache_->size()};
  init();
  mix_ = resolve({});
}

Loader::Loader(std::shared_ptr<const Dataset> dataset, LoaderOptions options, std::optional<LoaderMix> mix)
    : dataset_(std::move(dataset)), options_(std::move(options)), engine_(std::make_unique<Engine>()), epoch_(options_.epoch) {
  if (!dataset_ || dataset_->num_caches() == 0) throw Error(Errc::usage, "the Loader needs a dataset of at least one cache");
  first_ids_ = {0};
  for (size_t i = 0; i < dataset_->num_caches(); ++i) {
    caches_.push_back(&dataset_->cache(i));
    first_ids_.push_back(first_ids_.back() + caches_.back()->size());
  }
  init();
  mix_ = resolve(mix ? std::move(*mix) : LoaderMix{dataset_->weights(), dataset_->epoch_size()});
}

void Loader::init() {
  const Cache& first = *caches_.front();
  if (options_.batch_size == 0) throw Error(Errc::usage, "batch_size must be >= 1");
  if (options_.world_size == 0 || options_.rank >= options_.world_size) throw Error(Errc::usage, "rank must be < world_size");
  options_.block_size = std::max<uint64_t>(1, options_.block_size);
  options_.prefetch = std::max<size_t>(1, options_.prefetch);
  if (options_.full_decode) {
    const size_t fi = image_field();
    if (first.fields()[fi].image_format == "yuv420" || options_.decode.yuv420_siblings)
      throw Error(Errc::usage, "the decode pipeline reads encoded images; this field is YUV420 planes");
    if (options_.decode.type != PixelType::uint8 || options_.decode.layout != PixelLayout::hwc)
      throw Error(Errc::usage, "the decode pipeline returns uint8 HWC images");
    options_.decode.groups.clear();  // the Loader's own groups stay empty: no crop buffers
    engine_->decode = options_.decode;
    engine_->decode.groups = pipeline_crop_groups("decode");
  } else {
    engine_->decode = options_.decode;
  }
  // The decoder now: a bad option fails here, not at the first batch.
  engine_->decoder =
      dataset_ ? std::make_unique<BatchDecoder>(*dataset_, engine_->decode) : std::make_unique<BatchDecoder>(first, engine_->decode);
  for (const std::string& name : options_.fields) {
    const auto fi = first.field_index(name);
    if (!fi) throw Error(Errc::usage, "no field \"" + name + "\"").with_path(first.path().string());
    const auto t = first.fields()[*fi].type;
    if (t != FieldType::int64 && t != FieldType::float64)
      throw Error(Errc::usage, "field \"" + name + "\": the loader returns int and float fields");
    engine_->field_ids.push_back(*fi);
  }
  const uint64_t total = first_ids_.back();
  if (const auto beyond = options_.indices.first_beyond(total))
    throw Error(Errc::usage, "index " + std::to_string(*beyond) + " is beyond the " + (caches_.size() > 1 ? "dataset's " : "cache's ") +
                                 std::to_string(total) + " samples");
}

// A mix checked against this Loader's caches, with the length of its epochs.
Loader::ResolvedMix Loader::resolve(LoaderMix mix) const {
  ResolvedMix r;
  const bool plain = mix.weights.empty() && !mix.epoch_size;
  if (options_.indices.given()) {
    if (!plain) throw Error(Errc::usage, "weights and epoch_size mix whole caches: not with indices");
    r.samples = options_.indices.size();
  } else {
    if (!mix.weights.empty() && mix.weights.size() != caches_.size())
      throw Error(Errc::usage, std::to_string(mix.weights.size()) + " weights for " + std::to_string(caches_.size()) +
                                   " caches (one per cache, in dataset order)");
    if (!plain && !options_.shuffle) throw Error(Errc::usage, "weights and epoch_size need shuffle (a mixed epoch is a shuffled one)");
    std::vector<uint64_t> sizes(caches_.size());
    for (size_t i = 0; i < sizes.size(); ++i) sizes[i] = first_ids_[i + 1] - first_ids_[i];
    r.samples = first_ids_.back();
    if (!plain) {  // the library's checks and counts (an empty dataset without weights is an empty epoch)
      r.samples = 0;
      for (uint64_t c : samples_per_cache(sizes, mix.weights, mix.epoch_size)) r.samples += c;
    }
  }
  r.mix = std::move(mix);
  return r;
}

void Loader::set_mix(LoaderMix mix) { mix_ = resolve(std::move(mix)); }

const Loader::ResolvedMix& Loader::current_mix() const {
  if (epoch_chosen_) return origin_ > 0 && resume_mix_ ? *resume_mix_ : mix_;
  if (started_) return engine_->run_mix;  // the running (or last) iteration's; set by start() only
  return mix_;
}

Loader::~Loader() {
  // A forked child cannot join the parent's threads (std::thread's destructor would terminate)
  // nor destroy a condition variable a parent thread waited on (glibc blocks): it leaves the
  // engine to the process's exit.
  if (forked()) {
    static_cast<void>(engine_.release());
    return;
  }
  engine_->stop_worker();
}

bool Loader::forked() const noexcept { return getpid() != engine_->pid; }

void Loader::check_process() const {
  const pid_t now = getpid();
  if (now != engine_->pid)
    throw Error(Errc::usage, "this Loader was created in process " + std::to_string(engine_->pid) + " and cannot run in its forked child " +
                                 std::to_string(now) +
                                 " (its decode threads stay in the parent): create the Loader in the child, after the fork (in the "
                                 "worker function or worker_init_fn)");
}

uint64_t Loader::samples() const noexcept { return current_mix().samples; }

namespace {

uint64_t loader_ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

}  // namespace

uint64_t Loader::per_rank() const noexcept { return loader_ceil_div(samples(), options_.world_size); }

size_t Loader::batches() const noexcept { return static_cast<size_t>(batches_of(samples())); }

uint64_t Loader::batches_of(uint64_t samples) const noexcept {
  const uint64_t n = loader_ceil_div(samples, options_.world_size);
  return options_.drop_last ? n / options_.batch_size : loader_ceil_div(n, options_.batch_size);
}

// The first global position of an iteration that starts at this rank's batch `start_batch` of
// an epoch under the Loader's own mix.
uint64_t Loader::origin_for(uint64_t start_batch) const noexcept {
  if (start_batch >= batches_of(mix_.samples)) return mix_.samples;  // the epoch is over (drop_last included)
  const uint64_t per_batch = static_cast<uint64_t>(options_.batch_size) * options_.world_size;
  return std::min<uint64_t>(mix_.samples, start_batch * per_batch);  // start_batch < batches: no overflow
}

void Loader::set_epoch(uint64_t epoch, uint64_t start_batch) {
  const uint64_t batches = batches_of(mix_.samples);  // a chosen epoch runs the Loader's own mix
  if (start_batch > batches)
    throw Error(Errc::usage,
                "start_batch " + std::to_string(start_batch) + " is beyond the epoch's " + std::to_string(batches) + " batches");
  epoch_ = epoch;
  origin_ = origin_for(start_batch);
  resume_mix_ = mix_;  // what a mid-epoch start keeps, whatever set_mix says later
  epoch_chosen_ = true;
}

LoaderState Loader::state() const {
  LoaderState s;
  s.seed = options_.decode.seed;
  s.world_size = options_.world_size;
  s.batch_size = options_.batch_size;
  if (epoch_chosen_) {  // the next iteration is chosen: it starts at its origin
    const ResolvedMix& m = current_mix();
    s.epoch = epoch_;
    s.consumed = origin_;
    s.samples = m.samples;
    s.mix = m.mix;
    return s;
  }
  std::lock_guard lock(engine_->mutex);
  s.epoch = engine_->run_epoch;
  s.mix = engine_->run_mix.mix;
  s.samples = engine_->run_mix.samples;
  // Every rank took `handed` batches of positions origin + r + p*W: the first handed*B*W
  // positions after the origin are consumed (all of them once the iteration's batches are).
  const uint64_t per_batch = static_cast<uint64_t>(options_.batch_size) * options_.world_size;
  const uint64_t left = s.samples - engine_->run_origin;
  s.consumed =
      engine_->handed >= engine_->run_batches ? s.samples : engine_->run_origin + std::min<uint64_t>(left, engine_->handed * per_batch);
  return s;
}

void Loader::load_state(const LoaderState& state) {
  const auto differ = [&](const char* what, uint64_t was, uint64_t now) {
    return Error(Errc::usage, std::string("cannot resume epoch ") + std::to_string(state.epoch) + " with a different " + what + " (" +
                                  std::to_string(was) + " -> " + std::to_string(now) + "): the epoch's order would differ");
  };
  if (state.consumed > state.samples)
    throw Error(Errc::usage, "the state's consumed samples (" + std::to_string(state.consumed) + ") exceed its epoch's " +
                                 std::to_string(state.samples));
  // The next epoch of a whole one would wrap to epoch 0 and repeat its order.
  if (state.samples > 0 && state.consumed == state.samples && state.epoch == std::numeric_limits<uint64_t>::max())
    throw Error(Errc::usage, "the state completes epoch " + std::to_string(state.epoch) + ", the last one: no epoch follows it");
  std::optional<ResolvedMix> resume;
  if (state.consumed > 0 && state.consumed < state.samples) {  // mid-epoch: the order must be the same
    if (state.seed != options_.decode.seed) throw differ("seed", state.seed, options_.decode.seed);
    resume = state.version >= 3 ? resolve(state.mix) : mix_;  // the epoch goes on with the mix it began with
    if (state.samples != resume->samples) throw differ("number of samples", state.samples, resume->samples);
  }
  if (state.samples > 0 && state.consumed == state.samples) {
    epoch_ = state.epoch + 1;  // a whole epoch: the next one from its start
    origin_ = 0;
  } else {
    epoch_ = state.epoch;
    origin_ = state.consumed;
  }
  resume_mix_ = std::move(resume);
  epoch_chosen_ = true;
}

// ---- orders and windows -------------------------------------------------------------------

namespace {

// This rank's share of iteration (epoch, origin): RankOrder (what `slip order` prints) over the
// dataset's MixedOrder, or the identity order interleaved the same way (unshuffled); with
// indices, over the indices (ids[i] = indices[position's id]). Built once per iteration: O(caches).
class LoaderIds {
 public:
  LoaderIds(const LoaderOptions& o, std::span<const uint64_t> first_ids, const Loader::ResolvedMix& mix, uint64_t epoch, uint64_t origin)
      : o_(o), positions_(mix.samples, origin, o.rank, o.world_size) {
    if (mix.samples == 0 || !o.shuffle) return;
    MixSpec spec{{mix.samples}, {}, std::nullopt, o.decode.seed, epoch, o.block_size};
    if (!o.indices.given()) {  // the dataset's caches and the mix, as `slip order` builds it
      spec.sizes.clear();
      for (size_t i = 0; i + 1 < first_ids.size(); ++i) spec.sizes.push_back(first_ids[i + 1] - first_ids[i]);
      spec.weights = mix.mix.weights;
      spec.epoch_size = mix.mix.epoch_size;
    }
    order_.emplace(spec, origin, o.rank, o.world_size);
  }
  void fill(uint64_t first, std::span<uint64_t> ids) const {
    if (ids.empty() || positions_.size() == 0) return;
    if (order_)
      order_->fill(first, ids);
    else
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = positions_(first + i);  // unshuffled: the identity order
    if (o_.indices.given())
      for (uint64_t& id : ids) id = o_.indices[id];
  }

 private:
  const LoaderOptions& o_;
  RankPositions positions_;
  std::optional<RankOrder> order_;
};

}  // namespace

std::vector<uint64_t> Loader::order() const {
  const ResolvedMix& m = current_mix();
  std::vector<uint64_t> ids(loader_ceil_div(m.samples, options_.world_size));
  LoaderIds(options_, first_ids_, m, epoch_, 0).fill(0, ids);
  return ids;
}

size_t Loader::image_field() const {
  const Cache& first = *caches_.front();  // the dataset's caches share its fields
  if (!options_.decode.field.empty()) {
    const auto fi = first.field_index(options_.decode.field);
    if (!fi) throw Error(Errc::usage, "no field \"" + options_.decode.field + "\"").with_path(first.path().string());
    return *fi;
  }
  size_t fi = 0;
  while (fi < first.fields().size() && first.fields()[fi].type != FieldType::image) ++fi;
  if (fi == first.fields().size()) throw Error(Errc::usage, "the cache has no image field").with_path(first.path().string());
  return fi;
}

CropWindow Loader::window(uint64_t global, uint32_t crop) const {
  if (global >= first_ids_.back()) throw Error(Errc::usage, "sample " + std::to_string(global) + " is beyond the cache");
  const size_t c = static_cast<size_t>(std::upper_bound(first_ids_.begin(), first_ids_.end(), global) - first_ids_.begin()) - 1;
  const uint64_t sample = global - first_ids_[c];  // crops are keyed by the id in its own cache
  const MetaRecord r = caches_[c]->record(image_field(), sample);
  uint32_t index = crop;
  for (const CropGroup& g : options_.decode.groups) {
    if (index < g.count)
      return sample_crop_window(g, r.width, r.height, options_.decode.seed, epoch_, sample, crop, options_.decode.flip_probability);
    index -= g.count;
  }
  throw Error(Errc::usage, "crop " + std::to_string(crop) + " is beyond the pipeline's crops");
}

std::vector<SkippedSample> Loader::skipped() const {
  check_process();
  std::lock_guard lock(engine_->mutex);
  return engine_->skipped;
}

uint64_t Loader::generation() const {
  std::lock_guard lock(engine_->mutex);
  return engine_->generation;
}

// ---- the producer -------------------------------------------------------------------------

namespace {

std::unique_ptr<Batch> make_loader_batch(const LoaderOptions& o, size_t capacity, size_t fields) {
  auto b = std::make_unique<Batch>();
  try {
    for (const auto& g : o.decode.groups) {
      const size_t per_sample = crop_group_sample_bytes(g, o.decode.type);
      if (per_sample != 0 && capacity > SIZE_MAX / per_sample) throw std::bad_alloc();
      b->groups.emplace_back(capacity * per_sample);
    }
    b->fields.assign(fields, std::vector<std::byte>(capacity * 8));
    b->samples.reserve(capacity);
  } catch (const std::length_error&) {  // beyond vector::max_size(): still out of memory
    throw std::bad_alloc();
  }
  return b;
}

// Whether a pooled buffer holds `capacity` samples (an iteration under a larger mix may need
// more than the buffers of an earlier one).
bool loader_batch_fits(const Batch& b, const LoaderOptions& o, size_t capacity) {
  if (b.samples.capacity() < capacity) return false;
  for (size_t g = 0; g < b.groups.size(); ++g)
    if (b.groups[g].size() < capacity * crop_group_sample_bytes(o.decode.groups[g], o.decode.type)) return false;
  for (const auto& f : b.fields)
    if (f.size() < capacity * 8) return false;
  return true;
}

// The caches a producer reads, and which one a global id is in (O(log caches)).
struct LoaderCaches {
  std::span<const Cache* const> caches;
  std::span<const uint64_t> first;  // caches.size() + 1 prefix sums
  size_t of(uint64_t id) const {    // the last cache whose first id is <= id (empty caches share their successor's)
    return static_cast<size_t>(std::upper_bound(first.begin(), first.end(), id) - first.begin()) - 1;
  }
};

// Decodes global `ids` into batch slots slot, slot+1, ... of `b`, in place (one decoder call on
// all its threads, whatever caches the samples come from).
void decode_loader_ids(Loader::Engine& e, const LoaderOptions& o, Batch& b, std::span<const uint64_t> ids, size_t slot, uint64_t epoch) {
  if (o.full_decode) return e.decoder->decode_images(ids, b.full);  // one block per batch, reused (slot is 0: see below)
  std::vector<std::span<std::byte>> outs;
  for (size_t g = 0; g < b.groups.size(); ++g) {
    const size_t bytes = crop_group_sample_bytes(o.decode.groups[g], o.decode.type);
    outs.push_back(std::span<std::byte>(b.groups[g]).subspan(slot * bytes, ids.size() * bytes));
  }
  e.decoder->decode(ids, epoch, outs);  // crops depend on (seed, epoch, sample) only, not the slot
}

// Decodes `batch` into `b`; under skip_errors a failed batch is decoded again one sample at a
// time, keeping those that decode (packed to the front); returns how many were kept.
size_t decode_loader_batch(Loader::Engine& e, const LoaderOptions& o, Batch& b, std::span<uint64_t> batch, uint64_t epoch,
                           const std::function<void(uint64_t, std::string)>& skip) {
  const auto decode = [&](std::span<const uint64_t> ids, size_t slot) { decode_loader_ids(e, o, b, ids, slot, epoch); };
  try {
    decode(batch, 0);
    return batch.size();
  } catch (const Error& err) {
    if (!o.skip_errors || err.code() != Errc::bad_input) throw;  // an I/O error or an interruption is no bad sample
  }
  size_t kept = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    try {
      decode(batch.subspan(i, 1), kept);
      batch[kept++] = batch[i];
    } catch (const Error& err) {
      if (err.code() != Errc::bad_input) throw;
      skip(batch[i], err.describe());
    }
  }
  if (o.full_decode && kept > 0) decode(batch.first(kept), 0);  // the good ones, packed (the rare path: decoded twice)
  return kept;
}

void copy_loader_fields(const LoaderCaches& d, const std::vector<size_t>& field_ids, Batch& b, std::span<const uint64_t> ids) {
  for (size_t f = 0; f < field_ids.size(); ++f) {
    const bool is_int = d.caches.front()->fields()[field_ids[f]].type == FieldType::int64;  // the same in every cache
    for (size_t i = 0; i < ids.size(); ++i) {
      const size_t c = d.caches.size() == 1 ? 0 : d.of(ids[i]);
      const Cache& cache = *d.caches[c];
      const uint64_t local = ids[i] - d.first[c];
      if (is_int) {
        const int64_t v = cache.int_value(field_ids[f], local);
        std::memcpy(b.fields[f].data() + i * 8, &v, 8);
      } else {
        const double v = cache.float_value(field_ids[f], local);
        std::memcpy(b.fields[f].data() + i * 8, &v, 8);
      }
    }
  }
}

// The producer thread: every failure, allocation failures included, is handed to next(), which
// rethrows it on the caller's thread (an exception escaping a thread would terminate).
void produce_loader_batches(Loader::Engine& e, LoaderCaches d, const LoaderOptions& o, const LoaderRun& run) {
  try {
    const LoaderIds order(o, d.first, run.mix, run.epoch, run.origin);  // O(caches), once per iteration
    std::vector<uint64_t> ids(run.capacity);
    for (size_t k = 0; k < run.batches; ++k) {
      {  // at most `prefetch` decoded batches wait for the caller
        std::unique_lock lock(e.mutex);
        e.space_cv.wait(lock, [&] { return e.stop || e.ready.size() < o.prefetch; });
        if (e.stop) return;
      }
      std::unique_ptr<Batch> b = e.pool->take();
      while (b && !loader_batch_fits(*b, o, ids.size())) b = e.pool->take();  // too small for this mix: freed
      if (!b) b = make_loader_batch(o, ids.size(), e.field_ids.size());
      const size_t count = static_cast<size_t>(std::min<uint64_t>(o.batch_size, run.per_rank - k * o.batch_size));
      std::span<uint64_t> batch(ids.data(), count);
      order.fill(k * o.batch_size, batch);
      const size_t kept = decode_loader_batch(e, o, *b, batch, run.epoch, [&](uint64_t sample, std::string message) {
        std::lock_guard lock(e.mutex);
        e.skipped.push_back({sample, std::move(message)});
      });
      b->count = kept;
      b->index = k;
      if (o.full_decode && kept == run.capacity) e.pool->note_whole_batch(b->full.pixels().size());
      b->samples.assign(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(kept));
      copy_loader_fields(d, e.field_ids, *b, batch.first(kept));
      std::lock_guard lock(e.mutex);
      e.ready.push_back(std::move(b));  // (an all-skipped batch too: it still counts as handed out)
      e.ready_cv.notify_all();
    }
  } catch (...) {
    std::lock_guard lock(e.mutex);
    e.error = std::current_exception();
  }
  if (o.full_decode) e.pool->set_idle(true);
  std::lock_guard lock(e.mutex);
  e.finished = true;
  e.ready_cv.notify_all();
}

}  // namespace

uint64_t Loader::start() {
  check_process();
  Engine& e = *engine_;
  {
    std::lock_guard lock(e.mutex);
    ++e.generation;  // first: a waiting next() must not take the end of the old run for its own
  }
  e.ready_cv.notify_all();
  e.stop_worker();
  if (!epoch_chosen_ && started_) {  // as DataLoader/FFCV: a new epoch for each pass
    ++epoch_;
    origin_ = 0;
  }
  // A chosen mid-epoch start keeps the mix it was chosen with; an epoch from its start runs the
  // Loader's own (set_mix's).
  ResolvedMix mix = origin_ > 0 && resume_mix_ ? *resume_mix_ : mix_;
  resume_mix_.reset();
  epoch_chosen_ = false;
  started_ = true;
  const uint64_t n = mix.samples;
  // A batch never holds more than a whole epoch's share of the rank, whatever batch_size says.
  LoaderRun run{
      epoch_,
      std::min(origin_, n),
      0,
      0,
      static_cast<size_t>(std::min<uint64_t>(options_.batch_size, std::max<uint64_t>(1, loader_ceil_div(n, options_.world_size)))),
      std::move(mix)};
  run.per_rank = loader_ceil_div(n - run.origin, options_.world_size);
  // Its batches: this rank's share of the positions left, so that a resume with the same world
  // and batch size runs exactly the batches the epoch had left (drop_last included).
  run.batches =
      static_cast<size_t>(options_.drop_last ? run.per_rank / options_.batch_size : loader_ceil_div(run.per_rank, options_.batch_size));
  std::lock_guard lock(e.mutex);
  e.stop = false;
  e.finished = false;
  e.error = nullptr;
  e.skipped.clear();
  e.run_epoch = run.epoch;
  e.run_origin = run.origin;
  e.handed = 0;
  e.run_batches = run.batches;
  e.run_mix = run.mix;
  e.pool->set_idle(false);
  e.worker = std::thread([this, run] { produce_loader_batches(*engine_, LoaderCaches{caches_, first_ids_}, options_, run); });
  return e.generation;
}

Loader::NextResult Loader::next(uint64_t generation, std::chrono::milliseconds wait) {
  check_process();
  Engine& e = *engine_;
  std::unique_lock lock(e.mutex);
  const auto wake = [&] { return generation != e.generation || !e.ready.empty() || e.finished; };
  if (wait == std::chrono::milliseconds::max())
    e.ready_cv.wait(lock, wake);
  else if (!e.ready_cv.wait_for(lock, wait, wake))
    return {Next::timeout, nullptr};
  if (generation != e.generation) return {Next::replaced, nullptr};
  if (e.ready.empty()) {
    if (e.error) std::rethrow_exception(e.error);  // every later call too: the epoch is over, never silently
    return {Next::end, nullptr};
  }
  std::unique_ptr<Batch> b = std::move(e.ready.front());
  e.ready.pop_front();
  ++e.handed;
  e.space_cv.notify_all();
  return {Next::batch, lend_loader_batch(std::move(b), e.pool)};
}

BatchPtr Loader::next() {
  if (!convenience_running_) {
    convenience_generation_ = start();
    convenience_running_ = true;
  }
  for (;;) {
    NextResult r = next(convenience_generation_);
    if (r.status == Next::batch) {
      if (r.batch->count == 0) continue;  // every sample skipped
      return std::move(r.batch);
    }
    convenience_running_ = false;  // the end (or a replaced run): the next call starts the next epoch
    return nullptr;
  }
}

void Loader::interrupt() {
  {
    std::lock_guard lock(engine_->mutex);
    ++engine_->generation;
  }
  engine_->ready_cv.notify_all();
  engine_->stop_worker();
}

}  // namespace slip
