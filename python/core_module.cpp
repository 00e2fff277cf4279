// slipcache._core, the compiled half of the `slipcache` Python package (python/slipcache wraps
// and documents it): caches and a batch loader on slip's decode engine, for training loops.
// Uses only libslipstream's public API; the Loader's engine (prefetch thread, buffer pool, skip
// policy, epoch and elastic state) is slip::Loader (slip/loader.hpp), and this only converts
// types. Batches are buffers handed to numpy without copying; a buffer goes back to the
// loader's pool when Python drops the last array that views it.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>

#include "slip/slip.hpp"

namespace py = pybind11;

namespace {

// A cache shared by the Python objects that view its mapped files (arrays keep it alive).
using CachePtr = std::shared_ptr<slip::Cache>;
using DatasetPtr = std::shared_ptr<slip::Dataset>;

// Mix weights as Python passes them: (kind, value) per cache, kind "proportion", "repeat",
// "choose" (slip order --mix's words) or "" for a cache without one. slipcache checks the types.
using WeightList = std::vector<std::pair<std::string, double>>;

slip::StreamWeight stream_weight_of(const std::string& kind, double value) {
  for (const auto k : {slip::WeightKind::proportion, slip::WeightKind::repeat, slip::WeightKind::choose})
    if (kind == slip::weight_kind_name(k)) return {k, value};
  if (kind.empty() || kind == "none") return {};
  throw slip::Error(slip::Errc::usage, "a weight is proportion, repeat or choose, not \"" + kind + "\"");
}

std::vector<slip::StreamWeight> stream_weights_of(const WeightList& list) {
  std::vector<slip::StreamWeight> out;
  for (const auto& [kind, value] : list) out.push_back(stream_weight_of(kind, value));
  return out;
}

WeightList weight_list_of(const std::vector<slip::StreamWeight>& weights) {
  WeightList out;
  for (const slip::StreamWeight& w : weights)
    out.emplace_back(w.kind == slip::WeightKind::none ? std::string() : std::string(slip::weight_kind_name(w.kind)), w.value);
  return out;
}

// The weights as state_dict() records them: [{"proportion": 0.7}, ...] ({} for a cache without).
py::list weight_dicts(const std::vector<slip::StreamWeight>& weights) {
  py::list out;
  for (const slip::StreamWeight& w : weights) {
    py::dict d;
    if (w.kind == slip::WeightKind::choose)
      d[slip::weight_kind_name(w.kind)] = static_cast<uint64_t>(w.value);
    else if (w.kind != slip::WeightKind::none)
      d[slip::weight_kind_name(w.kind)] = w.value;
    out.append(d);
  }
  return out;
}

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
// The engine is slip::Loader (slip/loader.hpp); this converts its batches and states. Its
// producer thread never takes the GIL, so the GIL may be held while it is stopped or joined.

// Python's handle on a Loader: a forked child never destroys its parent's Loader (its threads
// exist only in the parent); slip::Loader's destructor leaves them alone there too.
struct LoaderDelete {
  void operator()(slip::Loader* loader) const {
    if (!loader->forked()) std::default_delete<slip::Loader>()(loader);
  }
};
using LoaderPtr = std::unique_ptr<slip::Loader, LoaderDelete>;

// What iter(loader) returns: next() asks the loader for its iteration's next batch.
struct LoaderIterator {
  slip::Loader* loader;
  uint64_t generation;
};

// A batch as a dict of numpy arrays. Every array shares one owner: the batch's buffer returns to
// the loader's pool when the last of them is garbage-collected.
py::dict batch_dict(const slip::Loader& loader, slip::BatchPtr b) {
  const slip::LoaderOptions& o = loader.options();
  slip::Batch& batch = *b;
  py::capsule owner(std::make_unique<slip::BatchPtr>(std::move(b)).release(), [](void* p) { delete static_cast<slip::BatchPtr*>(p); });
  py::dict out;
  const bool f32 = o.decode.type == slip::PixelType::float32;
  const py::dtype pixel = f32 ? py::dtype::of<float>() : py::dtype::of<uint8_t>();
  const auto n = static_cast<py::ssize_t>(batch.count);
  py::list images;
  if (o.full_decode) {  // a list of (H, W, 3) arrays, one per sample, views of the batch's one block
    for (size_t i = 0; i < batch.count; ++i) {
      const slip::PackedImages::Extent& im = batch.full.images[i];
      images.append(py::array(pixel, {static_cast<py::ssize_t>(im.height), static_cast<py::ssize_t>(im.width), py::ssize_t{3}}, {},
                              batch.full.pixels().data() + im.offset, owner));
    }
    out["image"] = images;
  }
  const auto& groups = o.decode.groups;
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto s = static_cast<py::ssize_t>(groups[g].size);
    const auto c = static_cast<py::ssize_t>(groups[g].count);
    std::vector<py::ssize_t> shape;
    if (o.decode.layout == slip::PixelLayout::hwc)
      shape = c == 1 ? std::vector<py::ssize_t>{n, s, s, 3} : std::vector<py::ssize_t>{n, c, s, s, 3};
    else
      shape = c == 1 ? std::vector<py::ssize_t>{n, 3, s, s} : std::vector<py::ssize_t>{n, c, 3, s, s};
    images.append(py::array(pixel, shape, {}, batch.groups[g].data(), owner));
  }
  if (!o.full_decode) out["image"] = groups.size() == 1 ? py::object(images[0]) : py::object(images);
  for (size_t k = 0; k < o.fields.size(); ++k) {
    const bool is_int = loader.cache().fields()[*loader.cache().field_index(o.fields[k])].type == slip::FieldType::int64;
    out[py::str(o.fields[k])] =
        py::array(is_int ? py::dtype::of<int64_t>() : py::dtype::of<double>(), {n}, {}, batch.fields[k].data(), owner);
  }
  return out;
}

// The next batch of iteration `generation`, or nullopt at its end. Called with the GIL held,
// which it releases while it waits (taking it back every 50 ms to let Ctrl-C through). Any number
// of threads may call it and iter() at once: a batch goes to one caller of its own iteration,
// and a replaced iteration raises ValueError.
std::optional<py::dict> loader_next(slip::Loader& loader, uint64_t generation) {
  loader.check_process();
  for (;;) {
    slip::Loader::NextResult r;
    {
      py::gil_scoped_release release;
      r = loader.next(generation, std::chrono::milliseconds(50));
    }
    if (r.status == slip::Loader::Next::timeout) {
      if (PyErr_CheckSignals() != 0) {  // Ctrl-C: the exception is set on this thread
        if (loader.generation() == generation) loader.interrupt();
        throw py::error_already_set();
      }
      continue;
    }
    // The GIL is held again; iter() changes the generation only under it, so this check holds
    // until we return (a batch taken for a run replaced meanwhile goes back to the pool).
    if (r.status == slip::Loader::Next::replaced || loader.generation() != generation)
      throw py::value_error(
          "this iterator is no longer running: a later iter(loader) replaced it, or it was interrupted "
          "(one iteration per Loader runs at a time, whichever thread started it)");
    if (r.status == slip::Loader::Next::end) return std::nullopt;
    if (r.batch->count == 0) continue;  // every sample of it skipped
    return batch_dict(loader, std::move(r.batch));
  }
}

py::dict state_dict_of(const slip::LoaderState& s) {
  py::dict d;
  d["version"] = s.version;
  d["epoch"] = s.epoch;
  d["consumed"] = s.consumed;
  d["samples"] = s.samples;
  d["seed"] = s.seed;
  d["world_size"] = s.world_size;
  d["batch_size"] = s.batch_size;
  d["weights"] = weight_dicts(s.mix.weights);  // the mix of this epoch (version 3)
  d["epoch_size"] = s.mix.epoch_size ? py::object(py::int_(*s.mix.epoch_size)) : py::object(py::none());
  return d;
}

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
slip::SampleIndices sample_indices(const py::object& o) {
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
    if (count == 0) return slip::SampleIndices::progression(0, 1, 0);
    const uint64_t first = id_of(o[py::int_(0)]), last = id_of(o[py::int_(count - 1)]);
    const int64_t step = count == 1 ? 1 : (static_cast<int64_t>(last) - static_cast<int64_t>(first)) / static_cast<int64_t>(count - 1);
    return slip::SampleIndices::progression(first, step, count);
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
    return slip::SampleIndices::list(std::move(ids));
  }
  return slip::SampleIndices::list(o.cast<std::vector<uint64_t>>());
}

// A named crop pipeline of the library's registry (slip/pipelines.hpp), not a crop spec.
bool is_preset(const std::string& pipeline) {
  const slip::Pipeline* p = slip::find_pipeline(pipeline);
  return p != nullptr && p->loader && p->kind == slip::PipelineKind::crops;
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
      throw slip::Error(slip::Errc::usage, "pipeline must be one of " + slip::pipeline_names(", ", true) +
                                               " or crop groups such as 2x224@0.32-1,8x96@0.05-0.32 (" + std::string(e.what()) + ")");
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
  const slip::Pipeline* named = slip::find_pipeline(pipeline);
  const bool rrc = named != nullptr && named->takes_scale_ratio;
  if (!rrc && (!scale.is_none() || !ratio.is_none()))
    throw slip::Error(slip::Errc::usage, "scale and ratio are for the rrc and direct-rrc pipelines (a crop spec gives its own scales)");
  for (auto& g : groups) {
    if (rrc && !scale.is_none()) std::tie(g.scale_lo, g.scale_hi) = pair_of(scale, "scale");
    if (rrc && !ratio.is_none()) std::tie(g.ratio_lo, g.ratio_hi) = pair_of(ratio, "ratio");
  }
  return groups;
}

// _core.Loader(...): the options slipcache.Loader has converted (and documented), checked once more.
// `source` is a Cache or a Dataset; weights/epoch_size None: a dataset list's (else none).
LoaderPtr make_loader(py::object source, size_t batch_size, const std::string& pipeline, std::optional<uint32_t> size, py::object scale,
                      py::object ratio, bool flip, uint64_t seed, uint64_t epoch, bool shuffle, uint32_t rank, uint32_t world_size,
                      bool drop_last, unsigned threads, const std::string& layout, const std::string& dtype, std::vector<float> mean,
                      std::vector<float> std, py::object indices, std::optional<std::vector<std::string>> fields, bool yuv420_siblings,
                      uint64_t block_size, size_t prefetch, const std::string& resample, const std::string& filter, bool crop_aware,
                      const std::string& on_error, std::optional<WeightList> weights, std::optional<uint64_t> epoch_size) {
  CachePtr cache;
  DatasetPtr dataset;
  if (py::isinstance<slip::Dataset>(source))
    dataset = source.cast<DatasetPtr>();
  else
    cache = source.cast<CachePtr>();  // TypeError for anything else
  const slip::Cache& first = dataset ? dataset->cache(0) : *cache;
  if (batch_size == 0) throw slip::Error(slip::Errc::usage, "batch_size must be >= 1");
  if (world_size == 0 || rank >= world_size) throw slip::Error(slip::Errc::usage, "rank must be < world_size");
  slip::LoaderOptions cfg;
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
  } else if (const auto label = first.field_index("label");
             label && (first.fields()[*label].type == slip::FieldType::int64 || first.fields()[*label].type == slip::FieldType::float64)) {
    cfg.fields = {"label"};  // the default: the label when the cache has one
  }
  cfg.prefetch = std::max<size_t>(1, prefetch);
  if (dataset) {
    std::optional<slip::LoaderMix> mix;
    if (weights || epoch_size)  // each one not given: the list's, as `slip order`
      mix = slip::LoaderMix{weights ? stream_weights_of(*weights) : dataset->weights(), epoch_size ? epoch_size : dataset->epoch_size()};
    return LoaderPtr(std::make_unique<slip::Loader>(std::move(dataset), std::move(cfg), std::move(mix)).release());
  }
  auto loader = std::make_unique<slip::Loader>(std::move(cache), std::move(cfg));
  if (weights || epoch_size) loader->set_mix({weights ? stream_weights_of(*weights) : std::vector<slip::StreamWeight>{}, epoch_size});
  return LoaderPtr(loader.release());
}

void bind_cache(py::module_& m) {
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
}

// _core.Dataset: caches read as one (slip/dataset.hpp), as `slip order` opens its inputs.
void bind_dataset(py::module_& m) {
  py::class_<slip::Dataset, DatasetPtr>(m, "Dataset")
      .def(py::init([](const std::vector<std::string>& inputs) {
             const std::vector<std::filesystem::path> paths(inputs.begin(), inputs.end());
             return std::make_shared<slip::Dataset>(slip::Dataset::open(paths));
           }),
           py::arg("inputs"))
      .def_static(
          "is_dataset_input", [](const std::string& path) { return slip::Dataset::is_dataset_input(path); }, py::arg("path"))
      .def("__len__", &slip::Dataset::size)
      .def_property_readonly("num_caches", &slip::Dataset::num_caches)
      .def_property_readonly("paths",
                             [](const slip::Dataset& d) {
                               std::vector<std::string> out;
                               for (size_t i = 0; i < d.num_caches(); ++i) out.push_back(d.cache(i).path().string());
                               return out;
                             })
      .def_property_readonly("sizes", &slip::Dataset::sizes)
      .def_property_readonly("fields",
                             [](const slip::Dataset& d) {
                               py::dict out;
                               for (const auto& f : d.fields()) out[py::str(f.name)] = f.type_name;
                               return out;
                             })
      .def_property_readonly("weights", [](const slip::Dataset& d) { return weight_dicts(d.weights()); })
      .def_property_readonly("epoch_size", &slip::Dataset::epoch_size)
      .def("list_json", &slip::Dataset::list_json);
  m.def(
      "parse_weights", [](const std::string& text, size_t num_caches) { return weight_list_of(slip::parse_weights(text, num_caches)); },
      py::arg("text"), py::arg("num_caches"), "slip order --mix's text (\"proportion:0.7,0.3\") as (kind, value) pairs");
}

// _core.Loader and what iter() returns.
void bind_loader(py::module_& m) {
  py::class_<LoaderIterator>(m, "LoaderIterator")
      .def("__iter__", [](LoaderIterator& it) -> LoaderIterator& { return it; })
      .def("__next__", [](LoaderIterator& it) {
        auto b = loader_next(*it.loader, it.generation);
        if (!b) throw py::stop_iteration();
        return *b;
      });

  // Arguments are checked (make_loader) once more, but documented (and converted: paths, defaults) by
  // slipcache.Loader, which is what users call.
  py::class_<slip::Loader, LoaderPtr>(m, "Loader")
      .def(py::init(&make_loader), py::arg("source"), py::arg("batch_size"), py::arg("pipeline"), py::arg("size").none(true),
           py::arg("scale").none(true), py::arg("ratio").none(true), py::arg("flip"), py::arg("seed"), py::arg("epoch"), py::arg("shuffle"),
           py::arg("rank"), py::arg("world_size"), py::arg("drop_last"), py::arg("threads"), py::arg("layout"), py::arg("dtype"),
           py::arg("mean"), py::arg("std"), py::arg("indices").none(true), py::arg("fields").none(true), py::arg("yuv420_siblings"),
           py::arg("block_size"), py::arg("prefetch"), py::arg("resample"), py::arg("filter"), py::arg("crop_aware"), py::arg("on_error"),
           py::arg("weights").none(true) = py::none(), py::arg("epoch_size").none(true) = py::none())
      .def("__len__", &slip::Loader::batches)
      .def_property_readonly("epoch", &slip::Loader::epoch)
      .def_property_readonly("fields", [](const slip::Loader& l) { return l.options().fields; })
      .def_property_readonly("samples_per_epoch", &slip::Loader::per_rank)
      .def("set_epoch", &slip::Loader::set_epoch, py::arg("epoch"), py::arg("start_batch") = 0)
      .def("state", [](const slip::Loader& l) { return state_dict_of(l.state()); })
      .def(
          "load_state",
          [](slip::Loader& l, uint64_t epoch, uint64_t consumed, uint64_t samples, uint64_t seed, std::optional<WeightList> weights,
             std::optional<uint64_t> epoch_size) {
            slip::LoaderState s;
            s.epoch = epoch;
            s.consumed = consumed;
            s.samples = samples;
            s.seed = seed;
            s.version = weights ? 3 : 2;  // a state without a recorded mix resumes with the Loader's own
            if (weights) s.mix = {stream_weights_of(*weights), epoch_size};
            l.load_state(s);
          },
          py::arg("epoch"), py::arg("consumed"), py::arg("samples"), py::arg("seed"), py::arg("weights").none(true) = py::none(),
          py::arg("epoch_size").none(true) = py::none())
      .def(
          "set_mix",
          [](slip::Loader& l, const WeightList& weights, std::optional<uint64_t> epoch_size) {
            l.set_mix({stream_weights_of(weights), epoch_size});
          },
          py::arg("weights"), py::arg("epoch_size").none(true))
      .def_property_readonly("weights", [](const slip::Loader& l) { return weight_dicts(l.mix().weights); })
      .def_property_readonly("epoch_size", [](const slip::Loader& l) { return l.mix().epoch_size; })
      .def_property_readonly("num_caches", &slip::Loader::num_caches)
      .def_property_readonly("skipped",
                             [](slip::Loader& l) {
                               py::list out;
                               for (const slip::SkippedSample& s : l.skipped()) out.append(py::make_tuple(s.sample, s.message));
                               return out;
                             })
      .def("order", &slip::Loader::order)
      .def(
          "window",
          [](const slip::Loader& l, uint64_t sample, uint32_t crop) {
            const slip::CropWindow w = l.window(sample, crop);
            return py::make_tuple(w.x, w.y, w.width, w.height, w.flip);
          },
          py::arg("sample"), py::arg("crop") = 0)
      .def(
          "__iter__",
          [](slip::Loader& l) {
            return LoaderIterator{&l, l.start()};
          },
          py::keep_alive<0, 1>());
}

}  // namespace

// Node-local staging (slip/stage.hpp) for Loader(stage_dir=): the handle keeps the staged copy
// read-locked, so no budgeted `slip stage` evicts it while the Loader reads it.
void bind_stage(py::module_& m) {
  py::class_<slip::StagedCache>(m, "StagedCache")
      .def_property_readonly("path", [](const slip::StagedCache& s) { return s.path().string(); })
      .def_property_readonly("copied", [](const slip::StagedCache& s) { return s.copied; })
      .def("release", &slip::StagedCache::release);
  m.def(
      "stage_dir",
      [](std::optional<std::string> given) -> std::optional<std::string> {
        const auto dir =
            slip::stage_dir_from(given ? std::optional<std::filesystem::path>(*given) : std::nullopt, slip::process_environment());
        return dir ? std::optional<std::string>(dir->string()) : std::nullopt;
      },
      py::arg("given"), "Where to stage: `given` when non-empty, else $SLIP_STAGE_DIR when non-empty, else None");
  m.def(
      "stage",
      [](const std::string& src, const std::string& dir) {
        slip::StageOptions options;
        options.dir = dir;
        py::gil_scoped_release unlocked;
        return std::make_unique<slip::StagedCache>(slip::stage(src, options));
      },
      py::arg("src"), py::arg("dir"), "Stage the cache at `src` into `dir` (one verified copy per node) and hold it");
}

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

  bind_cache(m);
  bind_dataset(m);
  bind_loader(m);
  bind_stage(m);
}
