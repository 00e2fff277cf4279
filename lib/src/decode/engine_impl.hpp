// Internal: BatchDecoder::Impl, shared by engine.cpp (the batch-level API, slot-ordered failures)
// and engine_sample.cpp (one sample decoded into its crops).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "decode/jpeg_region.hpp"
#include "decode/resample.hpp"
#include "decode/resample_planar.hpp"
#include "util/worker_pool.hpp"
#include "slip/cache.hpp"
#include "slip/dataset.hpp"
#include "slip/decode.hpp"
#include "slip/error.hpp"
#include "slip/image.hpp"
#include "slip/runtime.hpp"
#include "slip/yuv420.hpp"

namespace slip {

struct BatchDecoder::Impl {
  // One pool thread's decoder and scratch, and the first failure among its slots.
  struct Worker {
    detail::JpegRegionDecoder jpeg;
    std::vector<uint8_t> region;
    std::vector<uint8_t> crop;
    std::vector<uint16_t> sums;  // YUV420 reduction
    detail::ResampleScratch resample;
    detail::PlaneResampleScratch planar;
    std::vector<uint8_t> plane_y, plane_cb, plane_cr;
    std::vector<CropWindow> windows;
    std::vector<detail::PixelRect> parts;  // the windows in DCT-scaled pixels (planar multi-crop)
    std::vector<size_t> restart_ends;      // a restart-marker JPEG's intervals (restart_cut.hpp)
    std::vector<std::byte> restart_jpeg;   // the intervals under the windows, as a JPEG
    std::vector<uint32_t> sizes;
    RgbImage fallback;
    uint64_t decoded_bytes = 0;
    const std::vector<CropWindow>* forced_windows = nullptr;  // tests: fixed windows instead of the samplers'
    std::exception_ptr error;  // the first failure in slot order: an Error with the sample's context, or as thrown
    size_t error_slot = std::numeric_limits<size_t>::max();
  };
  // One cache's payloads: the field's own, or its YUV420 sibling files.
  struct Part {
    const Cache* cache;
    std::optional<Yuv420Siblings> siblings;  // options.yuv420_siblings: payloads from <f>_yuv420.*
  };
  std::vector<Part> parts;           // one per cache (one without a dataset)
  const Dataset* dataset = nullptr;  // ids are the dataset's global ids, each read from its own cache
  uint64_t samples = 0;              // ids are below this
  DecodeOptions options;
  size_t field = 0;
  bool yuv420 = false;

  // The cache of a sample id and its id there.
  std::pair<const Part*, uint64_t> locate(uint64_t id) const {
    if (!dataset) return {&parts.front(), id};
    const Dataset::Location at = dataset->locate(id);
    return {&parts[at.cache], at.sample};
  }
  std::span<const std::byte> payload_of(uint64_t id) const {
    const auto [part, local] = locate(id);
    return part->siblings ? part->siblings->payload(local) : part->cache->payload(field, local);
  }
  MetaRecord record_of(uint64_t id) const {
    const auto [part, local] = locate(id);
    return part->siblings ? part->siblings->record(local) : part->cache->record(field, local);
  }
  void check_ids(std::span<const uint64_t> ids) const {
    for (uint64_t id : ids)
      if (id >= samples) throw Error(Errc::usage, "sample id " + std::to_string(id) + " is out of range");
  }
  std::vector<Worker> workers;
  detail::WorkerPool pool;
  std::array<float, 3> scale{}, bias{};
  uint32_t total_crops = 0;
  bool planar = false;  // resize Y/Cb/Cr planes (ResampleMode::planar, or automatic with crop-aware decoding)

  Impl(DecodeOptions o, unsigned threads) : options(std::move(o)), workers(threads), pool(threads) {}

  // Failures, recorded per worker for their slot; the first in slot order is rethrown
  // (engine.cpp).
  void fail(Worker& w, size_t slot, uint64_t id, const std::string& message);
  void fail_jpeg(Worker& w, size_t slot, uint64_t id);
  void fail(Worker& w, size_t slot, uint64_t id);
  void record(Worker& w, size_t slot, std::exception_ptr error);
  std::exception_ptr named_error(Error e, uint64_t id) const;
  std::string payload_file(const Part& part) const;
  void rethrow_first_error();

  // One sample's decode (engine_sample.cpp).
  void make_sample_windows(Worker& w, uint64_t id, int width, int height, bool full) const;
  bool yuv420_dimensions(Worker& w, size_t slot, uint64_t id, std::span<const std::byte> payload, int& width, int& height);
  bool process_planar(Worker& w, size_t slot, uint64_t id, std::span<const std::span<std::byte>> outputs);
  static bool cut_restart_window(Worker& w, std::span<const std::byte> payload, int x0, int y0, int x1, int y1, detail::RestartCut& cut,
                                 bool planar);
  static bool decode_window_planes(Worker& w, int denom, int x0, int y0, int x1, int y1, const detail::RestartCut& cut,
                                   detail::DecodedPlanes& planes);
  bool process_planar_yuv420(Worker& w, size_t slot, uint64_t id, std::span<const std::span<std::byte>> outputs);
  void resize_planar_crops(Worker& w, size_t slot, const detail::DecodedPlanes& planes, int denom,
                           std::span<const std::span<std::byte>> outputs);
  bool prepare(Worker& w, size_t slot, uint64_t id, bool full, detail::RgbView& view, double& inv_scale, double& origin_x, double& origin_y,
               std::span<uint8_t> target = {});
  void emit(const uint8_t* crop, uint32_t size, bool flip, std::byte* dst) const;
  void process(unsigned thread, size_t slot, uint64_t id, std::span<const std::span<std::byte>> outputs);

  uint64_t epoch = 0;

  // visit(worker, slot, view) for each id's whole decoded image, on the pool (the full-decode
  // paths); a sample that fails is recorded for its slot and the first failure rethrown.
  template <class Visit>
  void for_each_whole_image(std::span<const uint64_t> ids, Visit&& visit) {
    for_each_whole_image(
        ids, [](size_t) { return std::span<uint8_t>{}; }, visit);
  }
  // ... decoding image `slot` straight into target_of(slot) when it fits there.
  template <class TargetOf, class Visit>
  void for_each_whole_image(std::span<const uint64_t> ids, TargetOf&& target_of, Visit&& visit) {
    throw_if_interrupted();
    check_ids(ids);
    const detail::WorkerPool::Body body = [&](unsigned thread, size_t slot) {
      Worker& w = workers[thread];
      try {
        detail::RgbView view;
        double inv_scale, origin_x, origin_y;
        if (prepare(w, slot, ids[slot], true, view, inv_scale, origin_x, origin_y, target_of(slot)))
          visit(w, slot, view);  // else: recorded
      } catch (...) {
        fail(w, slot, ids[slot]);
      }
    };
    pool.run(ids.size(), body);
    rethrow_first_error();
  }
};

}  // namespace slip
