// slipcache._core, the compiled half of the `slipcache` Python package (python/slipcache wraps
// and documents it): caches and a batch loader on slip's decode engine, for training loops.
// Uses only libslipstream's public API. Batches are buffers handed to numpy without
// copying; a buffer goes back to a pool when Python drops the last array that views it, and is
// reused for a later batch (new ones are allocated only while Python holds the others). The next
// `prefetch` batches are decoded on a background thread, with the GIL released, while Python
// trains on the current one.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstdlib>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>

#include <unistd.h>

#include "slip/slip.hpp"

namespace py = pybind11;

namespace {

// A cache shared by the Python objects that view its mapped files (arrays keep it alive).
using CachePtr = std::shared_ptr<slip::Cache>;

py::object field_value(const slip::Cache& cache, size_t fi, uint64_t i) {
  const slip::CacheField& f = cache.fields()[fi];
  switch (f.type) {
    case slip::FieldType::int64:
      return py::int_(cache.int_value(fi, i));
    case slip::FieldType::float64:
      return py::float_(cache.float_value(fi, i));
    case slip::FieldType::str: {
      const std::string_view s = cache.string(fi, i);
      return py::str(s.data(), s.size());
    }
    case slip::FieldType::image:
    case slip::FieldType::bytes: {
      const auto p = cache.payload(fi, i);
      return py::bytes(reinterpret_cast<const char*>(p.data()), p.size());
    }
    case slip::FieldType::ndarray: {
      const auto a = cache.array_bytes(fi, i);
      std::vector<py::ssize_t> shape(f.shape.begin() + 1, f.shape.end());
      py::array out(py::dtype(f.dtype), shape);           // dtype: one of the numeric ones Cache::open admits
      if (static_cast<size_t>(out.nbytes()) != a.size())  // never copy past the array
        throw slip::Error(slip::Errc::bad_input, "field \"" + f.name + "\": " + std::to_string(a.size()) + " bytes for its shape")
            .with_path(cache.path().string())
            .with_sample(i);
      std::memcpy(out.mutable_data(), a.data(), a.size());
      return out;
    }
  }
  return py::none();
}

// A zero-copy read-only view of a numeric or ndarray field's .npy data.
py::array column(const CachePtr& cache, const std::string& name) {
  const auto fi = cache->field_index(name);
  if (!fi) throw slip::Error(slip::Errc::usage, "no field \"" + name + "\"").with_path(cache->path().string());
  const slip::CacheField& f = cache->fields()[*fi];
  if (f.type != slip::FieldType::int64 && f.type != slip::FieldType::float64 && f.type != slip::FieldType::ndarray)
    throw slip::Error(slip::Errc::usage, "field \"" + name + "\" is " + f.type_name + ": column() views numeric and ndarray fields");
  const std::string& file = f.files[0];
  const auto bytes = cache->file_bytes(file).subspan(cache->npy_data_offset(file));
  std::vector<py::ssize_t> shape(f.shape.begin(), f.shape.end());
  py::capsule owner(new CachePtr(cache), [](void* p) { delete static_cast<CachePtr*>(p); });
  py::array out(py::dtype(f.dtype), shape, {}, bytes.data(), owner);
  py::detail::array_proxy(out.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return out;
}

py::dict verify_dict(const slip::VerifyReport& r) {
  py::dict d;
  d["ok"] = r.ok();
  d["samples"] = r.samples;
  d["payloads_checked"] = r.payloads_checked;
  d["checksums_checked"] = r.checksums_checked;
  d["issue_count"] = r.issue_count;
  py::list issues;
  for (const auto& i : r.issues) {
    py::dict issue;
    issue["file"] = i.file;
    issue["sample"] = i.sample ? py::object(py::int_(*i.sample)) : py::none();
    issue["field"] = i.field;
    issue["message"] = i.message;
    issues.append(issue);
  }
  d["issues"] = issues;
  d["notes"] = r.notes;
  d["images_decoded"] = r.images_decoded;
  d["decode_max_diff"] = r.decode_max_diff;
  d["seconds"] = r.seconds;
  return d;
}

// ---- Loader ---------------------------------------------------------------------------------

// The samples a Loader draws from: every sample, an explicit list, or an arithmetic progression
// (a Python range, kept as three numbers so that range(10**8) costs no memory per sample).
class SampleIndices {
 public:
  static SampleIndices list(std::vector<uint64_t> ids) {
    SampleIndices s;
    s.list_ = std::move(ids);
    s.count_ = s.list_.size();
    s.explicit_ = true;
    return s;
  }
  static SampleIndices progression(uint64_t first, int64_t step, uint64_t count) {
    SampleIndices s;
    s.first_ = first;
    s.step_ = step;
    s.count_ = count;
    s.explicit_ = true;
    s.progression_ = true;
    return s;
  }
  bool given() const { return explicit_; }  // false: every sample of the cache
  uint64_t size() const { return count_; }
  uint64_t operator[](uint64_t i) const {
    if (!progression_) return list_[i];
    return first_ + static_cast<uint64_t>(step_) * i;  // modular: a negative step counts down
  }
  // The first id >= `samples`, if any (O(1) for a progression).
  std::optional<uint64_t> first_beyond(uint64_t samples) const {
    if (progression_) {
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

 private:
  std::vector<uint64_t> list_;
  uint64_t first_ = 0, count_ = 0;
  int64_t step_ = 1;
  bool explicit_ = false, progression_ = false;
};

struct LoaderConfig {
  size_t batch_size = 256;
  slip::DecodeOptions decode;
  bool shuffle = true, drop_last = false;
  uint64_t epoch = 0;
  uint32_t rank = 0, world_size = 1;
  uint64_t block_size = 1;
  SampleIndices indices;  // not given: every sample; given and empty: an empty epoch
  std::vector<std::string> fields;
  size_t prefetch = 2;
  bool full_decode = false;  // pipeline "decode": whole images, each its own size
  bool skip_errors = false;  // on_error="skip": drop samples that fail to decode, count them
};

// One batch's memory: the crop groups' pixels and the requested fields' values.
struct Buffer {
  std::vector<std::vector<std::byte>> groups;
  std::vector<std::vector<std::byte>> fields;  // int64 or float64, batch_size each
  slip::PackedImages full;                     // pipeline "decode": the batch's images in one block
  size_t count = 0;
  uint64_t index = 0;  // which batch of the epoch
};

using BufferPtr = std::shared_ptr<Buffer>;

// Buffers Python has let go of, for the next batches. Shared with the arrays' owners: a batch
// may outlive its Loader (then its buffer is simply freed), and a caller that keeps every batch
// (list(loader)) makes the loader allocate more instead of waiting for a buffer that never
// comes back.
class Pool {
 public:
  void put(BufferPtr b) {
    // In a forked child the mutex may have been held by a thread that no longer exists: the
    // buffer is simply freed there.
    if (getpid() != pid_) return;
    std::lock_guard lock(mutex_);
    if (idle_) release_block(*b);
    free_.push_back(std::move(b));
  }
  // Between iterations (the producer has made its last batch), buffers coming back keep no
  // pages of their decode-pipeline block: which batches the pool held at an epoch's end (a
  // 12-MPix photo is 36 MB of them) changed RSS there by tens of MB from epoch to epoch.
  // The next iteration's first batches fault their pages in again (a few per epoch).
  static void release_block(Buffer& b) {
    b.full.images.clear();
    b.full.resize(0);  // the block stays; its pages go back (after any batch over 4 MiB)
  }
  void set_idle(bool idle) {
    std::lock_guard lock(mutex_);
    idle_ = idle;
    if (idle)
      for (const BufferPtr& b : free_) release_block(*b);
  }
  BufferPtr take() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) return nullptr;
    BufferPtr b = std::move(free_.front());
    free_.pop_front();
    return b;
  }

 private:
  const pid_t pid_ = getpid();
  std::mutex mutex_;
  std::deque<BufferPtr> free_;
  bool idle_ = false;
};

// A sample the loader dropped under on_error="skip", and why.
struct Skipped {
  uint64_t sample;
  std::string message;
};

// The loader and its one running iteration (a background producer thread). iter() starts a new
// iteration, which supersedes the previous one; the epoch advances by itself from one iteration
// to the next unless set_epoch() chose the next one.
class Loader {
 public:
  Loader(CachePtr cache, LoaderConfig config) : cache_(std::move(cache)), config_(std::move(config)), epoch_(config_.epoch) {
    if (config_.full_decode) {
      image_field_ = image_field();
      if (cache_->fields()[image_field_].image_format == "yuv420" || config_.decode.yuv420_siblings)
        throw slip::Error(slip::Errc::usage, "the decode pipeline reads encoded images; this field is YUV420 planes");
      if (config_.decode.type != slip::PixelType::uint8 || config_.decode.layout != slip::PixelLayout::hwc)
        throw slip::Error(slip::Errc::usage, "the decode pipeline returns uint8 HWC images");
      slip::DecodeOptions whole = config_.decode;  // (the Loader's own groups stay empty: no crop buffers)
      whole.groups = slip::pipeline_crop_groups("decode");
      decoder_ = std::make_unique<slip::BatchDecoder>(*cache_, std::move(whole));
    } else {
      decoder_ = std::make_unique<slip::BatchDecoder>(*cache_, config_.decode);
    }
    for (const std::string& name : config_.fields) {
      const auto fi = cache_->field_index(name);
      if (!fi) throw slip::Error(slip::Errc::usage, "no field \"" + name + "\"").with_path(cache_->path().string());
      const auto t = cache_->fields()[*fi].type;
      if (t != slip::FieldType::int64 && t != slip::FieldType::float64)
        throw slip::Error(slip::Errc::usage, "field \"" + name + "\": the loader returns int and float fields");
      field_ids_.push_back(*fi);
    }
    if (const auto beyond = config_.indices.first_beyond(cache_->size()))
      throw slip::Error(slip::Errc::usage,
                        "index " + std::to_string(*beyond) + " is beyond the cache's " + std::to_string(cache_->size()) + " samples");
    pool_ = std::make_shared<Pool>();
  }
  ~Loader() { stop_worker(); }
  bool forked() const { return getpid() != pid_; }

  const CachePtr& cache() const { return cache_; }
  const LoaderConfig& config() const { return config_; }
  uint64_t samples() const { return config_.indices.given() ? config_.indices.size() : cache_->size(); }
  uint64_t per_rank() const { return samples() == 0 ? 0 : slip::EpochOrder(order_spec(epoch_)).size(); }
  size_t batches() const {
    const uint64_t n = per_rank();
    return config_.drop_last ? n / config_.batch_size : (n + config_.batch_size - 1) / config_.batch_size;
  }

  // The next iter() runs `epoch` from batch `start_batch` (resuming mid-epoch); the running
  // iteration, if any, finishes its own epoch undisturbed.
  void set_epoch(uint64_t e, uint64_t start_batch) {
    if (start_batch > batches())
      throw slip::Error(slip::Errc::usage,
                        "start_batch " + std::to_string(start_batch) + " is beyond the epoch's " + std::to_string(batches()) + " batches");
    epoch_ = e;
    start_batch_ = start_batch;
    epoch_chosen_ = true;
  }
  uint64_t epoch() const { return epoch_; }
  // (epoch, batch): set_epoch(epoch, batch) resumes right after the last batch handed out.
  std::pair<uint64_t, uint64_t> state() const { return {epoch_, epoch_chosen_ ? start_batch_ : next_batch_}; }

  std::vector<Skipped> skipped() {
    check_process();
    std::lock_guard lock(mutex_);
    return skipped_;
  }

  // The image field the pipelines read: DecodeOptions::field, else the first image field.
  size_t image_field() const {
    if (!config_.decode.field.empty()) return *cache_->field_index(config_.decode.field);
    size_t fi = 0;
    while (fi < cache_->fields().size() && cache_->fields()[fi].type != slip::FieldType::image) ++fi;
    if (fi == cache_->fields().size())
      throw slip::Error(slip::Errc::usage, "the cache has no image field").with_path(cache_->path().string());
    return fi;
  }

  // The source window of crop `crop` of `sample` in the loader's epoch (what the engine decodes).
  py::tuple window(uint64_t sample, uint32_t crop) const {
    if (sample >= cache_->size()) throw slip::Error(slip::Errc::usage, "sample " + std::to_string(sample) + " is beyond the cache");
    const slip::MetaRecord r = cache_->record(image_field(), sample);
    uint32_t index = crop;
    for (const slip::CropGroup& g : config_.decode.groups) {
      if (index < g.count) {
        const slip::CropWindow w =
            slip::sample_crop_window(g, r.width, r.height, config_.decode.seed, epoch_, sample, crop, config_.decode.flip_probability);
        return py::make_tuple(w.x, w.y, w.width, w.height, w.flip);
      }
      index -= g.count;
    }
    throw slip::Error(slip::Errc::usage, "crop " + std::to_string(crop) + " is beyond the pipeline's crops");
  }

  // The sample ids of this rank's epoch, in order (what `slip order` prints).
  std::vector<uint64_t> order() const {
    std::vector<uint64_t> ids(per_rank());
    fill_ids(epoch_, 0, ids);
    return ids;
  }

  // Starts an iteration (iter()) and returns its generation, which next() checks. Called with
  // the GIL held; a next() of the iteration it replaces, waiting on another thread, wakes and
  // raises ValueError.
  uint64_t start() {
    check_process();
    {
      std::lock_guard lock(mutex_);
      ++generation_;  // first: a waiting next() must not take the end of the old run for its own
    }
    ready_cv_.notify_all();
    stop_worker();
    if (!epoch_chosen_ && started_) {  // as DataLoader/FFCV: a new epoch for each pass
      ++epoch_;
      start_batch_ = 0;
    }
    epoch_chosen_ = false;
    started_ = true;
    next_batch_ = start_batch_;
    std::lock_guard lock(mutex_);
    stop_ = false;
    finished_ = false;
    error_ = nullptr;
    skipped_.clear();
    pool_->set_idle(false);
    worker_ = std::thread([this, epoch = epoch_, first = start_batch_] { produce(epoch, first); });
    return generation_;
  }

  // The next batch of iteration `generation` as a dict of numpy arrays; nullopt at the end of
  // the epoch. After an error every later call raises it again: the epoch is over, but never
  // silently. Called with the GIL held, which it releases while it waits (never holding mutex_
  // while it takes the GIL back). Any number of threads may call it and iter() at once: a
  // batch goes to one caller of its own iteration, and a replaced iteration raises ValueError.
  std::optional<py::dict> next(uint64_t generation) {
    check_process();
    const auto replaced = [] {
      return py::value_error(
          "this iterator is no longer running: a later iter(loader) replaced it, or it was interrupted "
          "(one iteration per Loader runs at a time, whichever thread started it)");
    };
    BufferPtr b;
    bool interrupted = false;
    {
      py::gil_scoped_release release;
      std::unique_lock lock(mutex_);
      const auto wake = [&] { return generation != generation_ || !ready_.empty() || finished_; };
      while (!ready_cv_.wait_for(lock, std::chrono::milliseconds(50), wake)) {
        lock.unlock();
        bool signalled = false;
        {
          py::gil_scoped_acquire acquire;
          signalled = PyErr_CheckSignals() != 0;  // Ctrl-C: the exception is set on this thread
        }
        lock.lock();
        if (signalled) {
          interrupted = true;
          break;
        }
      }
      if (generation == generation_ && !interrupted && !ready_.empty()) {
        b = std::move(ready_.front());
        ready_.pop_front();
        space_cv_.notify_all();
      }
    }
    // The GIL is held again; iter() changes generation_ only under it, so this check holds until
    // we return.
    if (generation != generation_) {
      if (b) pool_->put(std::move(b));
      if (interrupted) throw py::error_already_set();
      throw replaced();
    }
    if (interrupted) {
      {
        std::lock_guard lock(mutex_);
        ++generation_;
      }
      ready_cv_.notify_all();
      stop_worker();
      throw py::error_already_set();  // with the GIL held again: KeyboardInterrupt
    }
    if (!b) {
      std::lock_guard lock(mutex_);
      if (error_) std::rethrow_exception(error_);
      return std::nullopt;
    }
    next_batch_ = b->index + 1;
    return to_dict(std::move(b));
  }

  // Refuses a Loader inherited through fork(): its producer and decode threads were not copied
  // into this process, and a lock one of them held at the fork would stay locked.
  void check_process() const {
    const pid_t now = getpid();
    if (now != pid_)
      throw slip::Error(slip::Errc::usage, "this Loader was created in process " + std::to_string(pid_) +
                                               " and cannot run in its forked child " + std::to_string(now) +
                                               " (its decode threads stay in the parent): create the Loader in the child, after "
                                               "the fork (in the worker function or worker_init_fn)");
  }

 private:
  py::dict to_dict(BufferPtr b) {
    // Every array of the batch shares one owner: the buffer returns to the pool when the last
    // of them is garbage-collected.
    struct Lease {
      std::weak_ptr<Pool> pool;
      BufferPtr buffer;
    };
    const size_t count = b->count;
    Buffer& buffer = *b;
    py::capsule owner(std::make_unique<Lease>(Lease{pool_, std::move(b)}).release(), [](void* p) {
      std::unique_ptr<Lease> lease(static_cast<Lease*>(p));
      if (auto pool = lease->pool.lock()) pool->put(std::move(lease->buffer));
    });
    py::dict out;
    const auto& groups = config_.decode.groups;
    const bool f32 = config_.decode.type == slip::PixelType::float32;
    const py::dtype pixel = f32 ? py::dtype::of<float>() : py::dtype::of<uint8_t>();
    const auto n = static_cast<py::ssize_t>(count);
    py::list images;
    if (config_.full_decode) {  // a list of (H, W, 3) arrays, one per sample, views of the batch's one block
      for (size_t i = 0; i < count; ++i) {
        const slip::PackedImages::Extent& im = buffer.full.images[i];
        images.append(py::array(pixel, {static_cast<py::ssize_t>(im.height), static_cast<py::ssize_t>(im.width), py::ssize_t{3}}, {},
                                buffer.full.pixels().data() + im.offset, owner));
      }
      out["image"] = images;
    }
    for (size_t g = 0; g < groups.size(); ++g) {
      const auto s = static_cast<py::ssize_t>(groups[g].size);
      const auto c = static_cast<py::ssize_t>(groups[g].count);
      std::vector<py::ssize_t> shape;
      if (config_.decode.layout == slip::PixelLayout::hwc)
        shape = c == 1 ? std::vector<py::ssize_t>{n, s, s, 3} : std::vector<py::ssize_t>{n, c, s, s, 3};
      else
        shape = c == 1 ? std::vector<py::ssize_t>{n, 3, s, s} : std::vector<py::ssize_t>{n, c, 3, s, s};
      images.append(py::array(pixel, shape, {}, buffer.groups[g].data(), owner));
    }
    if (!config_.full_decode) out["image"] = groups.size() == 1 ? py::object(images[0]) : py::object(images);
    for (size_t k = 0; k < field_ids_.size(); ++k) {
      const bool is_int = cache_->fields()[field_ids_[k]].type == slip::FieldType::int64;
      out[py::str(config_.fields[k])] =
          py::array(is_int ? py::dtype::of<int64_t>() : py::dtype::of<double>(), {n}, {}, buffer.fields[k].data(), owner);
    }
    return out;
  }

  slip::ShuffleSpec order_spec(uint64_t epoch) const {
    slip::ShuffleSpec spec;
    spec.num_samples = samples();
    spec.seed = config_.decode.seed;
    spec.epoch = epoch;
    spec.block_size = config_.block_size;
    spec.rank = config_.rank;
    spec.world_size = config_.world_size;
    return spec;
  }
  void fill_ids(uint64_t epoch, uint64_t first, std::span<uint64_t> ids) const {
    if (ids.empty()) return;  // an empty epoch has no order to build
    if (config_.shuffle) {
      slip::EpochOrder(order_spec(epoch)).fill(first, ids);
    } else {  // the same rank slicing over the identity order
      const uint64_t n = samples(), per = (n + config_.world_size - 1) / config_.world_size;
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = (config_.rank * per + first + i) % n;
    }
    if (config_.indices.given())
      for (uint64_t& id : ids) id = config_.indices[id];
  }

  // A batch never holds more than the rank's samples, whatever batch_size says.
  size_t batch_capacity() const { return static_cast<size_t>(std::min<uint64_t>(config_.batch_size, std::max<uint64_t>(1, per_rank()))); }

  // Decodes `batch` into `b`; under on_error="skip" a failed batch is decoded again one sample at
  // a time, keeping those that decode (packed to the front), and returns how many were kept.
  size_t decode_into(Buffer& b, std::span<uint64_t> batch, uint64_t epoch) {
    if (config_.full_decode) {
      // The engine's threads; one block per batch, reused by the next batch this buffer holds.
      try {
        decoder_->decode_images(batch, b.full);
        return batch.size();
      } catch (const slip::Error& e) {
        if (!config_.skip_errors || e.code() != slip::Errc::bad_input) throw;  // only a corrupt sample is skipped
      }
      size_t kept = 0;
      for (size_t i = 0; i < batch.size(); ++i) {
        try {
          decoder_->decode_images(batch.subspan(i, 1), b.full);
          batch[kept++] = batch[i];
        } catch (const slip::Error& e) {
          if (e.code() != slip::Errc::bad_input) throw;
          record_skip(batch[i], e.describe());
        }
      }
      decoder_->decode_images(batch.first(kept), b.full);  // the good ones, packed (each decoded twice: the rare path)
      return kept;
    }
    auto outputs_at = [&](size_t slot, size_t count) {
      std::vector<std::span<std::byte>> outs;
      for (size_t g = 0; g < b.groups.size(); ++g) {
        const size_t bytes = slip::crop_group_sample_bytes(config_.decode.groups[g], config_.decode.type);
        outs.push_back(std::span<std::byte>(b.groups[g]).subspan(slot * bytes, count * bytes));
      }
      return outs;
    };
    try {
      decoder_->decode(batch, epoch, outputs_at(0, batch.size()));
      return batch.size();
    } catch (const slip::Error& e) {
      if (!config_.skip_errors || e.code() != slip::Errc::bad_input) throw;  // an I/O error or an interruption is no bad sample
    }
    size_t kept = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      try {
        decoder_->decode(batch.subspan(i, 1), epoch, outputs_at(kept, 1));  // crops depend on (seed, epoch, sample) only
        batch[kept++] = batch[i];
      } catch (const slip::Error& e) {
        if (e.code() != slip::Errc::bad_input) throw;
        record_skip(batch[i], e.describe());
      }
    }
    return kept;
  }

  void record_skip(uint64_t sample, std::string message) {
    std::lock_guard lock(mutex_);
    skipped_.push_back({sample, std::move(message)});
  }

  // The producer thread: every failure, allocation failures included, is handed to next(),
  // which raises it in Python (an exception escaping a thread would abort the interpreter).
  void produce(uint64_t epoch, uint64_t first_batch) {
    try {
      std::vector<uint64_t> ids(batch_capacity());
      const size_t total = batches();
      const uint64_t n = per_rank();
      for (size_t k = first_batch; k < total; ++k) {
        {  // at most `prefetch` decoded batches wait for Python
          std::unique_lock lock(mutex_);
          space_cv_.wait(lock, [&] { return stop_ || ready_.size() < config_.prefetch; });
          if (stop_) return;
        }
        BufferPtr b = pool_->take();
        if (!b) b = make_buffer();
        const size_t count = static_cast<size_t>(std::min<uint64_t>(config_.batch_size, n - k * config_.batch_size));
        std::span<uint64_t> batch(ids.data(), count);
        fill_ids(epoch, k * config_.batch_size, batch);
        const size_t kept = decode_into(*b, batch, epoch);
        if (kept == 0) {  // every sample skipped
          pool_->put(std::move(b));
          continue;
        }
        for (size_t f = 0; f < field_ids_.size(); ++f) {
          const bool is_int = cache_->fields()[field_ids_[f]].type == slip::FieldType::int64;
          for (size_t i = 0; i < kept; ++i) {
            if (is_int) {
              const int64_t v = cache_->int_value(field_ids_[f], batch[i]);
              std::memcpy(b->fields[f].data() + i * 8, &v, 8);
            } else {
              const double v = cache_->float_value(field_ids_[f], batch[i]);
              std::memcpy(b->fields[f].data() + i * 8, &v, 8);
            }
          }
        }
        b->count = kept;
        b->index = k;
        std::lock_guard lock(mutex_);
        ready_.push_back(std::move(b));
        ready_cv_.notify_all();
      }
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
    }
    if (config_.full_decode) pool_->set_idle(true);
    std::lock_guard lock(mutex_);
    finished_ = true;
    ready_cv_.notify_all();
  }

  BufferPtr make_buffer() const {
    const size_t capacity = batch_capacity();
    auto b = std::make_shared<Buffer>();
    try {
      for (const auto& g : config_.decode.groups) {
        const size_t per_sample = slip::crop_group_sample_bytes(g, config_.decode.type);
        if (per_sample != 0 && capacity > SIZE_MAX / per_sample) throw std::bad_alloc();
        b->groups.emplace_back(capacity * per_sample);
      }
      b->fields.assign(field_ids_.size(), std::vector<std::byte>(capacity * 8));
    } catch (const std::length_error&) {  // beyond vector::max_size(): still "out of memory" to Python
      throw std::bad_alloc();
    }
    return b;
  }

  // Stops and joins the producer (which never takes the GIL, so the GIL may be held here) and
  // returns the batches it decoded but never handed out to the pool.
  void stop_worker() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    space_cv_.notify_all();
    if (worker_.joinable()) worker_.join();
    std::lock_guard lock(mutex_);
    for (BufferPtr& b : ready_) pool_->put(std::move(b));  // decoded but never handed out
    ready_.clear();
    finished_ = true;
  }

  CachePtr cache_;
  LoaderConfig config_;
  std::unique_ptr<slip::BatchDecoder> decoder_;  // the crop pipelines
  size_t image_field_ = 0;                       // the decode pipeline's field
  std::vector<size_t> field_ids_;
  std::shared_ptr<Pool> pool_;
  // The epoch of the running (or last) iteration, or of the next one once set_epoch chose it.
  uint64_t epoch_ = 0, start_batch_ = 0, next_batch_ = 0, generation_ = 0;
  bool epoch_chosen_ = true, started_ = false;  // the constructor's epoch is the first one
  std::mutex mutex_;
  std::condition_variable ready_cv_, space_cv_;
  std::deque<BufferPtr> ready_;
  bool stop_ = false, finished_ = false;
  std::exception_ptr error_;
  std::vector<Skipped> skipped_;
  std::thread worker_;
  const pid_t pid_ = getpid();  // the process that made the threads
};

// Python's handle on a Loader. A forked child never destroys its parent's Loader: the producer
// and decode threads exist only in the parent, so they cannot be joined there (std::thread's
// destructor would terminate the child), and destroying a condition variable a parent thread
// was waiting on at the fork blocks forever (glibc waits for its waiters). The child leaves the
// object to its own exit.
struct LoaderDelete {
  void operator()(Loader* loader) const {
    if (!loader->forked()) std::default_delete<Loader>()(loader);
  }
};
using LoaderPtr = std::unique_ptr<Loader, LoaderDelete>;

// What iter(loader) returns: next() asks the loader for its iteration's next batch.
struct LoaderIterator {
  Loader* loader;
  uint64_t generation;
};

// The `slip` command's exit status for an error category (README "Exit codes"), as Error.code.
int exit_class(slip::Errc code) {
  switch (code) {
    case slip::Errc::usage:
      return 2;
    case slip::Errc::bad_input:
      return 3;
    case slip::Errc::io:
      return 4;
    case slip::Errc::retryable:
      return 5;
    case slip::Errc::interrupted:
      return 130;
  }
  return 4;
}

std::pair<double, double> pair_of(const py::object& o, const char* what) {
  const auto t = o.cast<std::vector<double>>();
  if (t.size() != 2 || !(t[0] > 0) || t[0] > t[1])
    throw slip::Error(slip::Errc::usage, std::string(what) + " wants (low, high), 0 < low <= high");
  return {t[0], t[1]};
}

// Loader(indices=): None, a range (O(1): no list of ids is made), a 1-D integer numpy array, or
// a sequence of ints. slipcache.Loader has already given Python's messages for wrong types.
SampleIndices sample_indices(const py::object& o) {
  if (o.is_none()) return {};
  const auto id_of = [](const py::handle& v) {
    int overflow = 0;
    const long long id = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (id == -1 && PyErr_Occurred()) throw py::error_already_set();
    if (overflow > 0) throw slip::Error(slip::Errc::usage, "index " + py::str(v).cast<std::string>() + " is beyond the cache's samples");
    if (overflow < 0 || id < 0) throw slip::Error(slip::Errc::usage, "indices must be >= 0, not " + py::str(v).cast<std::string>());
    return static_cast<uint64_t>(id);
  };
  if (PyRange_Check(o.ptr())) {
    const auto count = static_cast<uint64_t>(py::len(o));  // OverflowError beyond ssize_t
    if (count == 0) return SampleIndices::progression(0, 1, 0);
    const uint64_t first = id_of(o[py::int_(0)]), last = id_of(o[py::int_(count - 1)]);
    const int64_t step = count == 1 ? 1 : (static_cast<int64_t>(last) - static_cast<int64_t>(first)) / static_cast<int64_t>(count - 1);
    return SampleIndices::progression(first, step, count);
  }
  if (py::isinstance<py::array>(o)) {
    const auto a = py::reinterpret_borrow<py::array>(o);
    const char kind = a.dtype().kind();
    if (a.ndim() != 1 || (kind != 'i' && kind != 'u'))
      throw py::type_error("indices must be a 1-D array of integers, not " + std::to_string(a.ndim()) + "-D " +
                           py::str(a.dtype()).cast<std::string>());
    std::vector<uint64_t> ids(static_cast<size_t>(a.size()));
    if (kind == 'i') {
      const auto v = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
      for (size_t i = 0; i < ids.size(); ++i) {
        if (v.data()[i] < 0) throw slip::Error(slip::Errc::usage, "indices must be >= 0, not " + std::to_string(v.data()[i]));
        ids[i] = static_cast<uint64_t>(v.data()[i]);
      }
    } else {
      const auto v = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>::ensure(a);
      std::copy_n(v.data(), ids.size(), ids.begin());
    }
    return SampleIndices::list(std::move(ids));
  }
  return SampleIndices::list(o.cast<std::vector<uint64_t>>());
}

bool is_preset(const std::string& pipeline) {
  return pipeline == "rrc" || pipeline == "center" || pipeline == "direct-rrc" || pipeline == "multicrop";
}

// The crop groups of `pipeline`. A crop spec keeps its own sizes; `size` sets the size of a
// pipeline with one crop per image (224 when not given) and is refused for several crops, where
// it would be ambiguous.
std::vector<slip::CropGroup> crop_groups(const std::string& pipeline, std::optional<uint32_t> size, const py::object& scale,
                                         const py::object& ratio) {
  std::vector<slip::CropGroup> groups;
  if (is_preset(pipeline)) {
    groups = slip::pipeline_crop_groups(pipeline);
  } else {
    try {
      groups = slip::parse_crop_groups(pipeline);
    } catch (const slip::Error& e) {
      throw slip::Error(slip::Errc::usage,
                        "pipeline must be rrc, center, direct-rrc, multicrop, decode or crop groups such as 2x224@0.32-1,8x96@0.05-0.32 (" +
                            std::string(e.what()) + ")");
    }
  }
  const bool one_crop = groups.size() == 1 && groups[0].count == 1;
  if (size) {
    if (*size < 1 || *size > 4096) throw slip::Error(slip::Errc::usage, "size must be in 1..4096");
    if (!one_crop)
      throw slip::Error(slip::Errc::usage, "size is for pipelines with one crop per image; \"" + pipeline +
                                               "\" has several: give each group's size in the crop spec");
    groups[0].size = *size;
  }
  const bool rrc = pipeline == "rrc" || pipeline == "direct-rrc";
  if (!rrc && (!scale.is_none() || !ratio.is_none()))
    throw slip::Error(slip::Errc::usage, "scale and ratio are for the rrc and direct-rrc pipelines (a crop spec gives its own scales)");
  for (auto& g : groups) {
    if (rrc && !scale.is_none()) std::tie(g.scale_lo, g.scale_hi) = pair_of(scale, "scale");
    if (rrc && !ratio.is_none()) std::tie(g.ratio_lo, g.ratio_hi) = pair_of(ratio, "ratio");
    if (pipeline == "center") g.center_ratio = 224.0 / 256.0;
  }
  return groups;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "The compiled core of slipcache (use the slipcache package, which documents it)";
  // numpy now, while the import lock keeps every other thread out of this module: pybind11 keeps
  // numpy's API (and dtype(str)'s helper) in function-local statics filled by importing numpy on
  // first use, and that import lets the GIL go; two threads making their first arrays at once
  // then deadlock, one in the static's guard holding the GIL, the other importing, waiting for it.
  py::detail::npy_api::get();
  static_cast<void>(py::dtype(std::string("B")));
  m.attr("__version__") = slip::version();
  m.def("build_info", &slip::build_info,
        "The libraries slip runs with: libjpeg compiled against and loaded, the JPEG entropy hook, SIMD kernels");
  static py::exception<slip::Error> error(m, "Error", PyExc_RuntimeError);
  for (const char* attribute : {"code", "kind", "path", "sample", "offset", "message"}) error.attr(attribute) = py::none();
  // One mapping (slip::current_exception_error): a slip::Error keeps its class; an OS error
  // (std::system_error) is an Error of the io class (code 4); out of memory stays Python's
  // MemoryError; pybind11's own exceptions (error_already_set, ...) pass through.
  py::register_exception_translator([](std::exception_ptr p) {
    const auto raise = [](const slip::Error& e) {
      py::object exc = py::reinterpret_borrow<py::object>(error.ptr())(e.describe());
      exc.attr("code") = exit_class(e.code());
      exc.attr("kind") = slip::errc_name(e.code());
      exc.attr("message") = e.message();
      exc.attr("path") = e.path().empty() ? py::object(py::none()) : py::object(py::str(e.path()));
      exc.attr("sample") = e.sample() ? py::object(py::int_(*e.sample())) : py::object(py::none());
      exc.attr("offset") = e.offset() ? py::object(py::int_(*e.offset())) : py::object(py::none());
      PyErr_SetObject(error.ptr(), exc.ptr());
    };
    try {
      if (p) std::rethrow_exception(p);
    } catch (const slip::Error& e) {
      raise(e);
    } catch (const std::system_error&) {
      raise(slip::current_exception_error());
    }
  });
  // SLIP_SIMD, as the slip command honours it (slip/simd.hpp); a bad value fails the import.
  slip::apply_simd_environment(slip::process_environment());
  // As the slip command: SLIP_JPEG_INTERNALS=off decodes through libjpeg's public API only and
  // build_info() never probes libjpeg; a value other than on/off/auto fails the import.
  slip::apply_libjpeg_environment(slip::process_environment());
  m.def(
      "simd_level", [] { return std::string(slip::simd_level_name()); },
      "The SIMD level the decode kernels run at: scalar, sse4, avx2 or avx512 (SLIP_SIMD, else the CPU's best)");
  m.def(
      "set_simd_level", [](const std::string& level) { slip::set_simd_level(level); }, py::arg("level"),
      "Run the kernels at most at `level` (same pixels at every level); slip.Error if this CPU lacks it");

  py::class_<slip::Cache, CachePtr>(m, "Cache")
      .def(py::init([](const std::string& path) { return std::make_shared<slip::Cache>(slip::Cache::open(path)); }), py::arg("path"))
      .def("__len__", [](const slip::Cache& c) { return c.size(); })
      .def_property_readonly("path", [](const slip::Cache& c) { return c.path().string(); })
      .def_property_readonly("fields",
                             [](const slip::Cache& c) {
                               py::dict d;
                               for (const auto& f : c.fields()) d[py::str(f.name)] = f.type_name;
                               return d;
                             })
      .def("__getitem__",
           [](const slip::Cache& c, int64_t i) {
             if (i < 0) i += static_cast<int64_t>(c.size());
             if (i < 0 || static_cast<uint64_t>(i) >= c.size()) throw py::index_error("sample index out of range");
             py::dict d;
             for (size_t fi = 0; fi < c.fields().size(); ++fi)
               d[py::str(c.fields()[fi].name)] = field_value(c, fi, static_cast<uint64_t>(i));
             return d;
           })
      .def("column", &column, py::arg("field"))
      .def(
          "verify",
          [](const slip::Cache& c, bool decode, unsigned threads) {
            slip::VerifyOptions o;
            o.decode = decode;
            o.threads = threads;
            slip::VerifyReport r;
            {
              py::gil_scoped_release release;
              r = slip::verify_cache(c.path(), o);
            }
            return verify_dict(r);
          },
          py::arg("decode") = false, py::arg("threads") = 0)
      .def("info", [](const slip::Cache& c) {
        const slip::CacheSummary s = slip::summarize(c);
        py::dict d;
        d["path"] = s.path.string();
        d["samples"] = s.samples;
        d["bytes"] = s.total_bytes;
        py::dict fields;
        for (const auto& f : c.fields()) fields[py::str(f.name)] = f.type_name;
        d["fields"] = fields;
        d["content_id"] = s.provenance.content_id;
        py::dict options;  // what made these bytes: "jpeg-restarts" -> "1", "image-format" -> "yuv420", ...
        for (const auto& [key, value] : s.provenance.options) options[py::str(key)] = value;
        d["options"] = options;
        d["indexes"] = s.indexes;
        return d;
      });

  py::class_<LoaderIterator>(m, "LoaderIterator")
      .def("__iter__", [](LoaderIterator& it) -> LoaderIterator& { return it; })
      .def("__next__", [](LoaderIterator& it) {
        auto b = it.loader->next(it.generation);
        if (!b) throw py::stop_iteration();
        return *b;
      });

  // Arguments are checked here once more, but documented (and converted: paths, defaults) by
  // slipcache.Loader, which is what users call.
  py::class_<Loader, LoaderPtr>(m, "Loader")
      .def(py::init([](CachePtr cache, size_t batch_size, const std::string& pipeline, std::optional<uint32_t> size, py::object scale,
                       py::object ratio, bool flip, uint64_t seed, uint64_t epoch, bool shuffle, uint32_t rank, uint32_t world_size,
                       bool drop_last, unsigned threads, const std::string& layout, const std::string& dtype, std::vector<float> mean,
                       std::vector<float> std, py::object indices, std::optional<std::vector<std::string>> fields, bool yuv420_siblings,
                       uint64_t block_size, size_t prefetch, const std::string& resample, const std::string& filter, bool crop_aware,
                       const std::string& on_error) {
             if (batch_size == 0) throw slip::Error(slip::Errc::usage, "batch_size must be >= 1");
             if (world_size == 0 || rank >= world_size) throw slip::Error(slip::Errc::usage, "rank must be < world_size");
             LoaderConfig cfg;
             cfg.batch_size = batch_size;
             cfg.full_decode = pipeline == "decode";
             if (cfg.full_decode) {
               if (size || !scale.is_none() || !ratio.is_none())
                 throw slip::Error(slip::Errc::usage, "the decode pipeline returns whole images: no size, scale or ratio");
               cfg.decode.groups.clear();
             } else {
               cfg.decode.groups = crop_groups(pipeline, size, scale, ratio);
             }
             cfg.decode.flip_probability = flip && pipeline != "center" ? 0.5 : 0.0;
             cfg.decode.seed = seed;
             cfg.decode.threads = threads;
             cfg.decode.layout = slip::parse_pixel_layout(layout);
             if (dtype != "uint8" && dtype != "float32") throw slip::Error(slip::Errc::usage, "dtype must be uint8 or float32");
             cfg.decode.type = dtype == "float32" ? slip::PixelType::float32 : slip::PixelType::uint8;
             if (mean.size() != 3 || std.size() != 3) throw slip::Error(slip::Errc::usage, "mean and std want 3 values");
             std::copy(mean.begin(), mean.end(), cfg.decode.mean.begin());
             std::copy(std.begin(), std.end(), cfg.decode.std.begin());
             cfg.decode.yuv420_siblings = yuv420_siblings;
             cfg.decode.crop_aware = crop_aware;
             if (resample == "rgb")
               cfg.decode.resample = slip::ResampleMode::rgb;
             else if (resample == "planar")
               cfg.decode.resample = slip::ResampleMode::planar;
             else if (resample != "auto")
               throw slip::Error(slip::Errc::usage, "resample must be auto, rgb or planar");
             if (filter == "bicubic")
               cfg.decode.filter = slip::ResampleFilter::bicubic;
             else if (filter != "bilinear")
               throw slip::Error(slip::Errc::usage, "filter must be bilinear or bicubic");
             if (on_error != "raise" && on_error != "skip") throw slip::Error(slip::Errc::usage, "on_error must be raise or skip");
             cfg.skip_errors = on_error == "skip";
             cfg.shuffle = shuffle;
             cfg.epoch = epoch;
             cfg.rank = rank;
             cfg.world_size = world_size;
             cfg.drop_last = drop_last;
             cfg.block_size = std::max<uint64_t>(1, block_size);
             cfg.indices = sample_indices(indices);
             if (fields) {
               cfg.fields = std::move(*fields);
             } else if (const auto label = cache->field_index("label");
                        label && (cache->fields()[*label].type == slip::FieldType::int64 ||
                                  cache->fields()[*label].type == slip::FieldType::float64)) {
               cfg.fields = {"label"};  // the default: the label when the cache has one
             }
             cfg.prefetch = std::max<size_t>(1, prefetch);
             return LoaderPtr(std::make_unique<Loader>(std::move(cache), std::move(cfg)).release());
           }),
           py::arg("cache"), py::arg("batch_size"), py::arg("pipeline"), py::arg("size").none(true), py::arg("scale").none(true),
           py::arg("ratio").none(true), py::arg("flip"), py::arg("seed"), py::arg("epoch"), py::arg("shuffle"), py::arg("rank"),
           py::arg("world_size"), py::arg("drop_last"), py::arg("threads"), py::arg("layout"), py::arg("dtype"), py::arg("mean"),
           py::arg("std"), py::arg("indices").none(true), py::arg("fields").none(true), py::arg("yuv420_siblings"), py::arg("block_size"),
           py::arg("prefetch"), py::arg("resample"), py::arg("filter"), py::arg("crop_aware"), py::arg("on_error"))
      .def("__len__", &Loader::batches)
      .def_property_readonly("epoch", &Loader::epoch)
      .def_property_readonly("cache", &Loader::cache)
      .def_property_readonly("fields", [](const Loader& l) { return l.config().fields; })
      .def_property_readonly("samples_per_epoch", &Loader::per_rank)
      .def("set_epoch", &Loader::set_epoch, py::arg("epoch"), py::arg("start_batch") = 0)
      .def("state", &Loader::state)
      .def_property_readonly("skipped",
                             [](Loader& l) {
                               py::list out;
                               for (const Skipped& s : l.skipped()) out.append(py::make_tuple(s.sample, s.message));
                               return out;
                             })
      .def("order", &Loader::order)
      .def("window", &Loader::window, py::arg("sample"), py::arg("crop") = 0)
      .def(
          "__iter__",
          [](Loader& l) {
            return LoaderIterator{&l, l.start()};
          },
          py::keep_alive<0, 1>());
}
