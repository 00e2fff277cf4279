// BatchDecoder's batch-level API: options checked, batches spread over the worker pool, whole
// images (decode_full, decode_images into PackedImages), the first failure in slot order.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <optional>
#include <stdexcept>

#include <sys/mman.h>
#include <unistd.h>

#include "decode/engine_impl.hpp"
#include "format/layout.hpp"
#include "slip/cache.hpp"
#include "slip/dataset.hpp"
#include "slip/decode.hpp"
#include "slip/error.hpp"
#include "slip/error_class.hpp"
#include "slip/hash.hpp"
#include "slip/image.hpp"
#include "slip/runtime.hpp"
#include "slip/yuv420.hpp"

namespace slip {

ResampleMode effective_resample_mode(const DecodeOptions& options) {
  if (options.resample != ResampleMode::automatic) return options.resample;
  return options.crop_aware ? ResampleMode::planar : ResampleMode::rgb;
}

size_t crop_group_sample_bytes(const CropGroup& group, PixelType type) {
  return static_cast<size_t>(group.count) * group.size * group.size * 3 * (type == PixelType::float32 ? 4 : 1);
}

// A sample's bytes are bad: the error names the payload file, the sample and its offset.
void BatchDecoder::Impl::fail(Worker& w, size_t slot, uint64_t id, const std::string& message) {
  record(w, slot, named_error(Error(Errc::bad_input, message), id));
}
// The region decoder's failure, in its class: corrupt data, or this libjpeg cannot decode it.
void BatchDecoder::Impl::fail_jpeg(Worker& w, size_t slot, uint64_t id) {
  record(w, slot, named_error(Error(w.jpeg.failure_code(), w.jpeg.failure()), id));
}
// Records the exception in flight (called from a catch block). Each keeps its class: a
// corrupt payload stays bad input, an I/O error or an interruption stays what it is,
// std::bad_alloc is rethrown as itself ("out of memory", not a verdict on the cache), and
// any other exception (std::system_error, a std::length_error) is classed as
// current_exception_error() classes it (I/O), never as the sample's bad bytes.
void BatchDecoder::Impl::fail(Worker& w, size_t slot, uint64_t id) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    record(w, slot, std::current_exception());
  } catch (...) {
    const Error e = current_exception_error();
    record(w, slot, named_error(Error(e.code(), e.message()), id));
  }
}
void BatchDecoder::Impl::record(Worker& w, size_t slot, std::exception_ptr error) {
  if (slot >= w.error_slot) return;  // the first failure in slot order is reported
  w.error_slot = slot;
  w.error = std::move(error);
}
// The error, of its class, named by the sample's payload file, id and offset: in a dataset,
// its cache's file and id there (what `slip cat CACHE ID` shows), and the global id.
std::exception_ptr BatchDecoder::Impl::named_error(Error e, uint64_t id) const {
  if (id < samples) {
    const auto [part, local] = locate(id);
    if (parts.size() > 1) e = Error(e.code(), e.message() + " (dataset sample " + std::to_string(id) + ")");
    e.with_path(payload_file(*part)).with_sample(local);
    try {
      e.with_offset(record_of(id).data_ptr);
    } catch (const Error&) {
    }
  }
  return std::make_exception_ptr(e);
}
std::string BatchDecoder::Impl::payload_file(const Part& part) const {
  return part.siblings ? part.siblings->bin_path().string()
                       : (part.cache->path() / detail::field_file(part.cache->fields()[field].name, detail::FileKind::bin)).string();
}

void BatchDecoder::Impl::rethrow_first_error() {
  Worker* first = nullptr;
  for (Worker& w : workers)
    if (w.error && (!first || w.error_slot < first->error_slot)) first = &w;
  if (!first) return;
  const std::exception_ptr e = first->error;
  for (Worker& w : workers) {
    w.error = nullptr;
    w.error_slot = std::numeric_limits<size_t>::max();
  }
  std::rethrow_exception(e);
}

BatchDecoder::BatchDecoder(const Cache& cache, DecodeOptions options) {
  open(std::span<const Cache* const>(std::array{&cache}), nullptr, std::move(options));
}

BatchDecoder::BatchDecoder(const Dataset& dataset, DecodeOptions options) {
  std::vector<const Cache*> caches(dataset.num_caches());
  for (size_t i = 0; i < caches.size(); ++i) caches[i] = &dataset.cache(i);
  open(caches, &dataset, std::move(options));
}

void BatchDecoder::open(std::span<const Cache* const> caches, const Dataset* dataset, DecodeOptions options) {
  const Cache& cache = *caches.front();  // a dataset's caches have the same fields (Dataset::open checked)
  unsigned threads = options.threads ? options.threads : available_cpus();
  threads = std::clamp(threads, 1u, 256u);
  if (options.groups.empty()) throw Error(Errc::usage, "no crop groups");
  for (const CropGroup& g : options.groups)
    if (g.size < 1 || g.size > 4096 || g.count < 1) throw Error(Errc::usage, "crop size must be in 1..4096 and count >= 1");
  if (!(options.flip_probability >= 0 && options.flip_probability <= 1)) throw Error(Errc::usage, "flip probability must be in [0, 1]");
  std::optional<size_t> field;
  if (options.field.empty()) {
    for (size_t i = 0; i < cache.fields().size() && !field; ++i)
      if (cache.fields()[i].type == FieldType::image) field = i;
    if (!field) throw Error(Errc::usage, "the cache has no image field");
  } else {
    field = cache.field_index(options.field);
    if (!field || (cache.fields()[*field].type != FieldType::image && cache.fields()[*field].type != FieldType::bytes))
      throw Error(Errc::usage, "'" + options.field + "' is not an image field of the cache");
  }
  impl_ = std::make_unique<Impl>(std::move(options), threads);
  impl_->field = *field;
  impl_->dataset = dataset;
  impl_->yuv420 = cache.fields()[*field].image_format == "yuv420";
  if (impl_->options.yuv420_siblings && impl_->yuv420)
    throw Error(Errc::usage, "the field is already stored as YUV420; it has no sibling files");
  for (const Cache* c : caches) {
    Impl::Part& part = impl_->parts.emplace_back(Impl::Part{c, std::nullopt});
    impl_->samples += c->size();
    if (!impl_->options.yuv420_siblings) continue;
    part.siblings = Yuv420Siblings::open(*c, c->fields()[*field].name);
    if (!part.siblings)
      throw Error(Errc::usage, "no YUV420 sibling files for field '" + c->fields()[*field].name + "' (make them with slip yuv420)")
          .with_path(c->path().string());
  }
  if (impl_->options.yuv420_siblings) impl_->yuv420 = true;
  for (const CropGroup& g : impl_->options.groups) impl_->total_crops += g.count;
  impl_->planar = effective_resample_mode(impl_->options) == ResampleMode::planar;
  for (int c = 0; c < 3; ++c) {
    if (!(impl_->options.std[c] > 0)) throw Error(Errc::usage, "normalisation std must be > 0");
    impl_->scale[c] = 1.0f / (255.0f * impl_->options.std[c]);
    impl_->bias[c] = -impl_->options.mean[c] / impl_->options.std[c];
  }
}

BatchDecoder::~BatchDecoder() = default;

const DecodeOptions& BatchDecoder::options() const noexcept { return impl_->options; }
unsigned BatchDecoder::threads() const noexcept { return impl_->pool.size(); }

void BatchDecoder::decode(std::span<const uint64_t> ids, uint64_t epoch, std::span<const std::span<std::byte>> outputs) {
  throw_if_interrupted();
  Impl& impl = *impl_;
  if (outputs.size() != impl.options.groups.size()) throw Error(Errc::usage, "decode needs one output buffer per crop group");
  for (size_t g = 0; g < outputs.size(); ++g)
    if (outputs[g].size() < ids.size() * crop_group_sample_bytes(impl.options.groups[g], impl.options.type))
      throw Error(Errc::usage, "output buffer " + std::to_string(g) + " is too small for the batch");
  impl.check_ids(ids);
  impl.epoch = epoch;
  const detail::WorkerPool::Body body = [&](unsigned thread, size_t slot) {
    try {
      impl.process(thread, slot, ids[slot], outputs);
    } catch (...) {
      impl.fail(impl.workers[thread], slot, ids[slot]);
    }
  };
  impl.pool.run(ids.size(), body);
  impl.rethrow_first_error();
}

uint64_t BatchDecoder::decode_full(std::span<const uint64_t> ids) { return decode_full(ids, {}); }

uint64_t BatchDecoder::decode_full(std::span<const uint64_t> ids, std::span<uint64_t> digests) {
  if (!digests.empty() && digests.size() != ids.size()) throw Error(Errc::usage, "decode_full needs one digest slot per id");
  for (Impl::Worker& w : impl_->workers) w.decoded_bytes = 0;
  impl_->for_each_whole_image(ids, [&](Impl::Worker& w, size_t slot, const detail::RgbView& view) {
    w.decoded_bytes += static_cast<uint64_t>(view.width) * static_cast<uint64_t>(view.height) * 3;
    if (digests.empty()) return;
    Xxh3 rows;
    for (int y = 0; y < view.height; ++y)
      rows.update(
          {reinterpret_cast<const std::byte*>(view.data) + static_cast<size_t>(y) * view.stride, static_cast<size_t>(view.width) * 3});
    digests[slot] = rows.digest();
  });
  uint64_t total = 0;
  for (const Impl::Worker& w : impl_->workers) total += w.decoded_bytes;
  return total;
}

void BatchDecoder::decode_images(std::span<const uint64_t> ids, std::span<RgbImage> images) {
  if (images.size() != ids.size()) throw Error(Errc::usage, "decode_images needs one image per id");
  impl_->for_each_whole_image(ids, [&](Impl::Worker& w, size_t slot, const detail::RgbView& view) {
    RgbImage& image = images[slot];
    const size_t row = static_cast<size_t>(view.width) * 3, bytes = row * static_cast<size_t>(view.height);
    // Storage is reused, but not a huge image's for every later one: a slot that once held a
    // 50-MPix photo would otherwise keep 150 MB for the rest of the run.
    constexpr size_t kAlwaysKeep = size_t{4} << 20;
    const auto oversized = [&](const std::vector<uint8_t>& v) { return v.capacity() > kAlwaysKeep && v.capacity() / 2 > bytes; };
    image.width = static_cast<uint32_t>(view.width);
    image.height = static_cast<uint32_t>(view.height);
    // A whole image decoded packed at the start of a worker buffer (JPEG's region, the other
    // formats' image) changes hands instead of being copied: the worker takes the slot's old
    // storage for its next decode.
    for (std::vector<uint8_t>* decoded : {&w.region, &w.fallback.pixels})
      if (view.data == decoded->data() && view.stride == row && decoded->size() >= bytes && !oversized(*decoded)) {
        std::swap(image.pixels, *decoded);
        image.pixels.resize(bytes);
        return;
      }
    if (oversized(image.pixels)) std::vector<uint8_t>().swap(image.pixels);
    image.pixels.resize(bytes);
    for (int y = 0; y < view.height; ++y)
      std::memcpy(image.pixels.data() + static_cast<size_t>(y) * row, view.data + static_cast<size_t>(y) * view.stride, row);
  });
}

void BatchDecoder::decode_images(std::span<const uint64_t> ids, PackedImages& out) {
  // The plan: each image's place from its header's size (what the decoders allocate by too; one
  // beyond the pixel limit is refused by them and planned empty), YUV420 payloads' from their
  // records. Every image is then decoded straight into its place: no per-image buffer, no copy
  // (only other formats' codecs decode into their own buffer, copied once). An image that
  // decodes to another size than its header said (a JPEG whose height is set by a DNL marker,
  // say) is noted; the batch is then planned again with the decoded sizes and decoded again:
  // rare, never wrong.
  Impl& impl = *impl_;
  impl.check_ids(ids);
  out.images.assign(ids.size(), {});
  for (size_t i = 0; i < ids.size(); ++i) {
    ImageSize size;
    if (impl.yuv420) {
      const MetaRecord record = impl.record_of(ids[i]);
      size = {record.width, record.height};
    } else {
      size = declared_image_size(impl.payload_of(ids[i]));
    }
    if (uint64_t{size.width} * size.height > kDecodePixelLimit) size = {};
    out.images[i] = {0, size.width, size.height};
  }
  for (int pass = 0;; ++pass) {
    size_t total = 0;
    for (PackedImages::Extent& e : out.images) {
      e.offset = total;
      total += size_t{e.width} * e.height * 3;
    }
    out.resize(total);
    const std::span<uint8_t> pixels = out.pixels();
    std::atomic<bool> misfit = false;
    impl.for_each_whole_image(
        ids,
        [&](size_t slot) {
          const PackedImages::Extent& e = out.images[slot];
          return pixels.subspan(e.offset, size_t{e.width} * e.height * 3);
        },
        [&](Impl::Worker& w, size_t slot, const detail::RgbView& view) {
          // A worker does not keep a huge image's scratch (used only by images that did not fit) for every later one.
          constexpr size_t kAlwaysKeep = size_t{4} << 20;
          if (w.region.capacity() > kAlwaysKeep && view.data != w.region.data()) std::vector<uint8_t>().swap(w.region);
          PackedImages::Extent& e = out.images[slot];
          if (e.width != static_cast<uint32_t>(view.width) || e.height != static_cast<uint32_t>(view.height)) {
            // Planned again after this pass (each slot is this thread's alone until then).
            e.width = static_cast<uint32_t>(view.width);
            e.height = static_cast<uint32_t>(view.height);
            misfit.store(true, std::memory_order_relaxed);
            return;
          }
          uint8_t* const dst = pixels.data() + e.offset;
          const size_t row = size_t{e.width} * 3;
          if (view.data == dst && view.stride == row) return;  // decoded in place
          for (int y = 0; y < view.height; ++y)
            std::memcpy(dst + static_cast<size_t>(y) * row, view.data + static_cast<size_t>(y) * view.stride, row);
        });
    if (!misfit.load(std::memory_order_relaxed)) return;
    // The sizes are the decoders' own now: a second pass fits unless a decode is not deterministic.
    if (pass == 1) throw std::logic_error("decode_images: an image decoded to two different sizes");
  }
}

void PackedImages::Unmap::operator()(uint8_t* block) const noexcept {
  if (block) ::munmap(block, bytes);
}

void PackedImages::resize(size_t bytes) {
  constexpr size_t kAlwaysKeep = size_t{4} << 20;
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (capacity_ < bytes) {
    storage_.reset();  // first: the old block and the new one are never held at once
    capacity_ = size_ = 0;
    if (bytes > std::numeric_limits<size_t>::max() / 2) throw std::bad_alloc();
    // Room for somewhat larger batches to come, in whole pages.
    const size_t capacity = (bytes + bytes / 4 + page - 1) / page * page;
    void* const block = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) throw std::bad_alloc();
    storage_ = std::unique_ptr<uint8_t[], Unmap>(static_cast<uint8_t*>(block), Unmap{capacity});
    capacity_ = capacity;
  } else if (size_ > bytes + std::max(kAlwaysKeep, bytes / 4)) {
    // A much smaller batch after a larger one (a huge image, an epoch's short last batch): the
    // block stays (a new one would fault in every page again, batch after batch), but the pages
    // past what this batch uses go back to the system; they read as zeros when used again.
    const size_t first = (bytes + page - 1) / page * page;  // whole pages only (the block is page-aligned)
    if (capacity_ > first) madvise(storage_.get() + first, capacity_ - first, MADV_DONTNEED);
  }
  size_ = bytes;
}

void PackedImages::release_past(size_t keep) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t first = keep >= capacity_ ? capacity_ : (keep + page - 1) / page * page;
  if (capacity_ > first) madvise(storage_.get() + first, capacity_ - first, MADV_DONTNEED);
  size_ = std::min(size_, keep);
}

namespace detail {

std::vector<uint8_t> decode_crops_for_test(const Cache& cache, uint64_t sample, const DecodeOptions& options,
                                           const std::vector<CropWindow>& windows) {
  BatchDecoder decoder(cache, options);
  decoder.impl_->workers[0].forced_windows = &windows;
  size_t total = 0;
  for (const CropGroup& g : options.groups) total += crop_group_sample_bytes(g, options.type);
  std::vector<uint8_t> out(total);
  std::vector<std::span<std::byte>> outputs;
  size_t offset = 0;
  for (const CropGroup& g : options.groups) {
    outputs.emplace_back(reinterpret_cast<std::byte*>(out.data()) + offset, crop_group_sample_bytes(g, options.type));
    offset += crop_group_sample_bytes(g, options.type);
  }
  const uint64_t ids[] = {sample};
  decoder.decode(ids, 0, outputs);
  return out;
}

}  // namespace detail

PixelLayout parse_pixel_layout(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (lower == "hwc" || lower == "nhwc") return PixelLayout::hwc;
  if (lower == "chw" || lower == "nchw") return PixelLayout::chw;
  throw Error(Errc::usage, "layout must be HWC (NHWC) or CHW (NCHW), in any case, not '" + printable(name) + "'");
}

}  // namespace slip
