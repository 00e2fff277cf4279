// The `slip` Python module: caches and a batch loader on slip's decode engine, for training
// loops. Uses only libslipstream's public API. Batches are buffers handed to numpy without
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
#include <thread>

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

struct LoaderConfig {
  size_t batch_size = 256;
  slip::DecodeOptions decode;
  bool shuffle = true, drop_last = false;
  uint64_t epoch = 0;
  uint32_t rank = 0, world_size = 1;
  uint64_t block_size = 1;
  std::vector<uint64_t> indices;  // empty: every sample
  std::vector<std::string> fields;
  size_t prefetch = 2;
  bool full_decode = false;  // pipeline "decode": whole images, each its own size
};

// One batch's memory: the crop groups' pixels and the requested fields' values.
struct Buffer {
  std::vector<std::vector<std::byte>> groups;
  std::vector<std::vector<std::byte>> fields;  // int64 or float64, batch_size each
  std::vector<slip::RgbImage> full;            // pipeline "decode"
  size_t count = 0;
};

using BufferPtr = std::shared_ptr<Buffer>;

// Buffers Python has let go of, for the next batches. Shared with the arrays' owners: a batch
// may outlive its Loader (then its buffer is simply freed), and a caller that keeps every batch
// (list(loader)) makes the loader allocate more instead of waiting for a buffer that never
// comes back.
class Pool {
 public:
  void put(BufferPtr b) {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(b));
  }
  BufferPtr take() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) return nullptr;
    BufferPtr b = std::move(free_.front());
    free_.pop_front();
    return b;
  }

 private:
  std::mutex mutex_;
  std::deque<BufferPtr> free_;
};

class Loader {
 public:
  Loader(CachePtr cache, LoaderConfig config) : cache_(std::move(cache)), config_(std::move(config)) {
    if (config_.full_decode) {
      image_field_ = image_field();
      if (cache_->fields()[image_field_].image_format == "yuv420" || config_.decode.yuv420_siblings)
        throw slip::Error(slip::Errc::usage, "the decode pipeline reads encoded images; this field is YUV420 planes");
      if (config_.decode.type != slip::PixelType::uint8 || config_.decode.layout != slip::PixelLayout::hwc)
        throw slip::Error(slip::Errc::usage, "the decode pipeline returns uint8 HWC images");
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
    for (uint64_t id : config_.indices)
      if (id >= cache_->size()) throw slip::Error(slip::Errc::usage, "index " + std::to_string(id) + " is beyond the cache's samples");
    pool_ = std::make_shared<Pool>();
  }
  ~Loader() { stop_worker(); }

  uint64_t samples() const { return config_.indices.empty() ? cache_->size() : config_.indices.size(); }
  uint64_t per_rank() const { return order_spec().num_samples == 0 ? 0 : slip::EpochOrder(order_spec()).size(); }
  size_t batches() const {
    const uint64_t n = per_rank();
    return config_.drop_last ? n / config_.batch_size : (n + config_.batch_size - 1) / config_.batch_size;
  }
  void set_epoch(uint64_t e) {
    stop_worker();
    config_.epoch = e;
  }
  uint64_t epoch() const { return config_.epoch; }

  // The image field the pipelines read: DecodeOptions::field, else the first image field.
  size_t image_field() const {
    if (!config_.decode.field.empty()) return *cache_->field_index(config_.decode.field);
    size_t fi = 0;
    while (fi < cache_->fields().size() && cache_->fields()[fi].type != slip::FieldType::image) ++fi;
    if (fi == cache_->fields().size())
      throw slip::Error(slip::Errc::usage, "the cache has no image field").with_path(cache_->path().string());
    return fi;
  }

  // The source window of crop `crop` of `sample` in the current epoch (what the engine decodes).
  py::tuple window(uint64_t sample, uint32_t crop) const {
    if (sample >= cache_->size()) throw slip::Error(slip::Errc::usage, "sample " + std::to_string(sample) + " is beyond the cache");
    const slip::MetaRecord r = cache_->record(image_field(), sample);
    uint32_t index = crop;
    for (const slip::CropGroup& g : config_.decode.groups) {
      if (index < g.count) {
        const slip::CropWindow w = slip::sample_crop_window(g, r.width, r.height, config_.decode.seed, config_.epoch, sample, crop,
                                                            config_.decode.flip_probability);
        return py::make_tuple(w.x, w.y, w.width, w.height, w.flip);
      }
      index -= g.count;
    }
    throw slip::Error(slip::Errc::usage, "crop " + std::to_string(crop) + " is beyond the pipeline's crops");
  }

  // The sample ids of this rank's epoch, in order (what `slip order` prints).
  std::vector<uint64_t> order() const {
    std::vector<uint64_t> ids(per_rank());
    fill_ids(0, ids);
    return ids;
  }

  void start() {
    stop_worker();
    stop_ = false;
    worker_ = std::thread([this] { produce(); });
  }

  // The next batch as a dict of numpy arrays; nullopt at the end of the epoch.
  std::optional<py::dict> next() {
    BufferPtr b;
    bool interrupted = false;
    {
      py::gil_scoped_release release;
      std::unique_lock lock(mutex_);
      while (!ready_cv_.wait_for(lock, std::chrono::milliseconds(50), [&] { return !ready_.empty() || finished_; })) {
        lock.unlock();
        bool signalled = false;
        {
          py::gil_scoped_acquire acquire;
          signalled = PyErr_CheckSignals() != 0;  // Ctrl-C: the exception is set on this thread
        }
        if (signalled) {
          stop_worker();
          interrupted = true;
          break;
        }
        lock.lock();
      }
      if (!interrupted && !ready_.empty()) {
        b = std::move(ready_.front());
        ready_.pop_front();
        space_cv_.notify_all();
      }
    }
    if (interrupted) throw py::error_already_set();  // with the GIL held again: KeyboardInterrupt
    if (!b) {
      if (error_) {
        auto e = error_;
        error_ = nullptr;
        std::rethrow_exception(e);
      }
      return std::nullopt;
    }
    // Every array of the batch shares one owner: the buffer returns to the pool when the last
    // of them is garbage-collected.
    struct Lease {
      std::weak_ptr<Pool> pool;
      BufferPtr buffer;
    };
    py::capsule owner(std::make_unique<Lease>(Lease{pool_, b}).release(), [](void* p) {
      std::unique_ptr<Lease> lease(static_cast<Lease*>(p));
      if (auto pool = lease->pool.lock()) pool->put(std::move(lease->buffer));
    });
    py::dict out;
    const auto& groups = config_.decode.groups;
    const bool f32 = config_.decode.type == slip::PixelType::float32;
    const py::dtype pixel = f32 ? py::dtype::of<float>() : py::dtype::of<uint8_t>();
    py::list images;
    if (config_.full_decode) {  // a list of (H, W, 3) arrays, one per sample
      for (size_t i = 0; i < b->count; ++i) {
        const slip::RgbImage& im = b->full[i];
        images.append(py::array(pixel, {static_cast<py::ssize_t>(im.height), static_cast<py::ssize_t>(im.width), py::ssize_t{3}}, {},
                                im.pixels.data(), owner));
      }
      out["image"] = images;
    }
    for (size_t g = 0; g < groups.size(); ++g) {
      const auto s = static_cast<py::ssize_t>(groups[g].size);
      const auto c = static_cast<py::ssize_t>(groups[g].count);
      const auto n = static_cast<py::ssize_t>(b->count);
      std::vector<py::ssize_t> shape;
      if (config_.decode.layout == slip::PixelLayout::hwc)
        shape = c == 1 ? std::vector<py::ssize_t>{n, s, s, 3} : std::vector<py::ssize_t>{n, c, s, s, 3};
      else
        shape = c == 1 ? std::vector<py::ssize_t>{n, 3, s, s} : std::vector<py::ssize_t>{n, c, 3, s, s};
      images.append(py::array(pixel, shape, {}, b->groups[g].data(), owner));
    }
    if (!config_.full_decode) out["image"] = groups.size() == 1 ? py::object(images[0]) : py::object(images);
    for (size_t k = 0; k < field_ids_.size(); ++k) {
      const bool is_int = cache_->fields()[field_ids_[k]].type == slip::FieldType::int64;
      out[py::str(config_.fields[k])] = py::array(is_int ? py::dtype::of<int64_t>() : py::dtype::of<double>(),
                                                  {static_cast<py::ssize_t>(b->count)}, {}, b->fields[k].data(), owner);
    }
    return out;
  }

 private:
  slip::ShuffleSpec order_spec() const {
    slip::ShuffleSpec spec;
    spec.num_samples = samples();
    spec.seed = config_.decode.seed;
    spec.epoch = config_.epoch;
    spec.block_size = config_.block_size;
    spec.rank = config_.rank;
    spec.world_size = config_.world_size;
    return spec;
  }
  void fill_ids(uint64_t first, std::span<uint64_t> ids) const {
    if (config_.shuffle) {
      slip::EpochOrder(order_spec()).fill(first, ids);
    } else {  // the same rank slicing over the identity order
      const uint64_t n = samples(), per = (n + config_.world_size - 1) / config_.world_size;
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = (config_.rank * per + first + i) % n;
    }
    if (!config_.indices.empty())
      for (uint64_t& id : ids) id = config_.indices[id];
  }

  void produce() {
    std::vector<uint64_t> ids(config_.batch_size);
    try {
      const size_t total = batches();
      const uint64_t n = per_rank();
      for (size_t k = 0; k < total; ++k) {
        {  // at most `prefetch` decoded batches wait for Python
          std::unique_lock lock(mutex_);
          space_cv_.wait(lock, [&] { return stop_ || ready_.size() < config_.prefetch; });
          if (stop_) return;
        }
        BufferPtr b = pool_->take();
        if (!b) b = make_buffer();
        const size_t count = static_cast<size_t>(std::min<uint64_t>(config_.batch_size, n - k * config_.batch_size));
        std::span<uint64_t> batch(ids.data(), count);
        fill_ids(k * config_.batch_size, batch);
        if (config_.full_decode) {
          b->full.resize(count);
          slip::parallel_for(count, config_.decode.threads ? config_.decode.threads : slip::available_cpus(), [&](size_t i) {
            try {
              b->full[i] = slip::engine_decode_full(cache_->payload(image_field_, batch[i]));
            } catch (slip::Error& e) {
              e.with_sample(batch[i]).with_path((cache_->path() / (cache_->fields()[image_field_].name + ".bin")).string());
              throw;
            }
          });
        } else {
          std::vector<std::span<std::byte>> outs;
          for (auto& g : b->groups) outs.emplace_back(g);
          decoder_->decode(batch, config_.epoch, outs);
        }
        for (size_t f = 0; f < field_ids_.size(); ++f) {
          const bool is_int = cache_->fields()[field_ids_[f]].type == slip::FieldType::int64;
          for (size_t i = 0; i < count; ++i) {
            if (is_int) {
              const int64_t v = cache_->int_value(field_ids_[f], batch[i]);
              std::memcpy(b->fields[f].data() + i * 8, &v, 8);
            } else {
              const double v = cache_->float_value(field_ids_[f], batch[i]);
              std::memcpy(b->fields[f].data() + i * 8, &v, 8);
            }
          }
        }
        b->count = count;
        std::lock_guard lock(mutex_);
        ready_.push_back(std::move(b));
        ready_cv_.notify_all();
      }
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
    }
    std::lock_guard lock(mutex_);
    finished_ = true;
    ready_cv_.notify_all();
  }

  BufferPtr make_buffer() const {
    auto b = std::make_shared<Buffer>();
    for (const auto& g : config_.decode.groups)
      b->groups.emplace_back(config_.batch_size * slip::crop_group_sample_bytes(g, config_.decode.type));
    b->fields.assign(field_ids_.size(), std::vector<std::byte>(config_.batch_size * 8));
    return b;
  }

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
    finished_ = false;
  }

  CachePtr cache_;
  LoaderConfig config_;
  std::unique_ptr<slip::BatchDecoder> decoder_;  // the crop pipelines
  size_t image_field_ = 0;                       // the decode pipeline's field
  std::vector<size_t> field_ids_;
  std::shared_ptr<Pool> pool_;
  std::mutex mutex_;
  std::condition_variable ready_cv_, space_cv_;
  std::deque<BufferPtr> ready_;
  bool stop_ = false, finished_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

std::pair<double, double> pair_of(const py::object& o, const char* what) {
  const auto t = o.cast<std::vector<double>>();
  if (t.size() != 2 || !(t[0] > 0) || t[0] > t[1])
    throw slip::Error(slip::Errc::usage, std::string(what) + " wants (low, high), 0 < low <= high");
  return {t[0], t[1]};
}

}  // namespace

PYBIND11_MODULE(slip, m) {
  m.doc() = "slip: read slipstream caches and load training batches on slip's decode engine";
  m.attr("__version__") = slip::version();
  // As the slip command: SLIP_JPEG_INTERNALS=off decodes through libjpeg's public API only.
  if (const char* internals = std::getenv("SLIP_JPEG_INTERNALS"); internals != nullptr && (std::string_view(internals) == "off" || std::string_view(internals) == "0"))
    slip::set_libjpeg_internals(false);
  m.def("build_info", &slip::build_info, "The libraries slip runs with: libjpeg compiled against and loaded, the JPEG entropy hook, SIMD kernels");
  static py::exception<slip::Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const slip::Error& e) {
      error(e.describe().c_str());
    }
  });

  py::class_<slip::Cache, CachePtr>(m, "Cache", "A slipstream cache directory (the Python loader's or slip's)")
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
      .def("column", &column, py::arg("field"), "A read-only numpy view (no copy) of an int, float or ndarray field")
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
        d["indexes"] = s.indexes;
        return d;
      });

  py::class_<Loader>(m, "Loader", "Batches of decoded, cropped images (and fields) from a cache, prefetched on slip's engine")
      .def(py::init([](py::object cache, size_t batch_size, const std::string& pipeline, uint32_t size, py::object scale, py::object ratio,
                       bool flip, uint64_t seed, uint64_t epoch, bool shuffle, uint32_t rank, uint32_t world_size, bool drop_last,
                       unsigned threads, const std::string& layout, const std::string& dtype, std::vector<float> mean,
                       std::vector<float> std, std::optional<std::vector<uint64_t>> indices, std::vector<std::string> fields,
                       bool yuv420_siblings, uint64_t block_size, size_t prefetch, const std::string& resample, const std::string& filter,
                       bool crop_aware) {
             CachePtr c = py::isinstance<py::str>(cache) ? std::make_shared<slip::Cache>(slip::Cache::open(cache.cast<std::string>()))
                                                         : cache.cast<CachePtr>();
             if (batch_size == 0) throw slip::Error(slip::Errc::usage, "batch_size must be >= 1");
             if (world_size == 0 || rank >= world_size) throw slip::Error(slip::Errc::usage, "rank must be < world_size");
             LoaderConfig cfg;
             cfg.batch_size = batch_size;
             cfg.full_decode = pipeline == "decode";
             cfg.decode.groups = cfg.full_decode ? std::vector<slip::CropGroup>{}
                                 : pipeline == "rrc" || pipeline == "center" || pipeline == "direct-rrc" || pipeline == "multicrop"
                                     ? slip::pipeline_crop_groups(pipeline)
                                     : [&] {
                                         try {
                                           return slip::parse_crop_groups(pipeline);
                                         } catch (const slip::Error& e) {
                                           throw slip::Error(slip::Errc::usage,
                                                             "pipeline must be rrc, center, direct-rrc, multicrop, decode or crop groups "
                                                             "such as 2x224@0.32-1,8x96@0.05-0.32 (" +
                                                                 std::string(e.what()) + ")");
                                         }
                                       }();
             for (auto& g : cfg.decode.groups) {
               if (cfg.decode.groups.size() == 1 && g.count == 1) g.size = size;
               if ((pipeline == "rrc" || pipeline == "direct-rrc") && !scale.is_none())
                 std::tie(g.scale_lo, g.scale_hi) = pair_of(scale, "scale");
               if ((pipeline == "rrc" || pipeline == "direct-rrc") && !ratio.is_none())
                 std::tie(g.ratio_lo, g.ratio_hi) = pair_of(ratio, "ratio");
               if (pipeline == "center") g.center_ratio = 224.0 / 256.0;
             }
             cfg.decode.flip_probability = flip && pipeline != "center" ? 0.5 : 0.0;
             cfg.decode.seed = seed;
             cfg.decode.threads = threads;
             if (layout != "NHWC" && layout != "NCHW") throw slip::Error(slip::Errc::usage, "layout must be NHWC or NCHW");
             cfg.decode.layout = layout == "NCHW" ? slip::PixelLayout::chw : slip::PixelLayout::hwc;
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
             cfg.shuffle = shuffle;
             cfg.epoch = epoch;
             cfg.rank = rank;
             cfg.world_size = world_size;
             cfg.drop_last = drop_last;
             cfg.block_size = std::max<uint64_t>(1, block_size);
             if (indices) cfg.indices = *indices;
             cfg.fields = std::move(fields);
             cfg.prefetch = std::max<size_t>(1, prefetch);
             return std::make_unique<Loader>(std::move(c), std::move(cfg));
           }),
           py::arg("cache"), py::arg("batch_size") = 256, py::arg("pipeline") = "rrc", py::arg("size") = 224, py::arg("scale") = py::none(),
           py::arg("ratio") = py::none(), py::arg("flip") = true, py::arg("seed") = 0, py::arg("epoch") = 0, py::arg("shuffle") = true,
           py::arg("rank") = 0, py::arg("world_size") = 1, py::arg("drop_last") = false, py::arg("threads") = 0, py::arg("layout") = "NHWC",
           py::arg("dtype") = "uint8", py::arg("mean") = std::vector<float>{0.485f, 0.456f, 0.406f},
           py::arg("std") = std::vector<float>{0.229f, 0.224f, 0.225f}, py::arg("indices") = py::none(),
           py::arg("fields") = std::vector<std::string>{"label"}, py::arg("yuv420_siblings") = false, py::arg("block_size") = 1,
           py::arg("prefetch") = 2, py::arg("resample") = "auto", py::arg("filter") = "bilinear", py::arg("crop_aware") = true)
      .def("__len__", &Loader::batches)
      .def_property_readonly("epoch", &Loader::epoch)
      .def("set_epoch", &Loader::set_epoch, py::arg("epoch"))
      .def("order", &Loader::order, "This rank's sample ids for the current epoch (as `slip order`)")
      .def("window", &Loader::window, py::arg("sample"), py::arg("crop") = 0,
           "(x, y, width, height, flip): the source window of a sample's crop in the current epoch")
      .def("__iter__",
           [](Loader& l) -> Loader& {
             l.start();
             return l;
           })
      .def("__next__", [](Loader& l) {
        auto b = l.next();
        if (!b) throw py::stop_iteration();
        return *b;
      });
}
