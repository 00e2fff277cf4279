// One sample decoded into its crops (BatchDecoder::Impl's per-sample paths): the planar path
// (Y/Cb/Cr planes resized, JPEG or YUV420), the RGB path, the output layouts; engine_decode_full.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "decode/engine_impl.hpp"
#include "decode/jpeg_region.hpp"
#include "decode/resample.hpp"
#include "decode/resample_planar.hpp"
#include "util/scratch.hpp"
#include "image/yuv420_kernels.hpp"
#include "slip/decode.hpp"
#include "slip/error.hpp"
#include "slip/image.hpp"

namespace slip {

namespace {

using detail::DecodedPlanes;
using detail::DecodedRegion;
using detail::JpegImageInfo;
using detail::JpegRegionDecoder;
using detail::PlaneView;
using detail::RgbView;

// The largest DCT scale denominator (8, 4, 2, else 1) at which every window is still at least
// as large as its output: decoding at 1/d costs about 1/d^2 of the IDCT work, and the
// antialiased resize that follows needs no more pixels than that.
int choose_denominator(std::span<const CropWindow> windows, std::span<const uint32_t> sizes) {
  for (int d : {8, 4, 2}) {
    bool fits = true;
    for (size_t i = 0; i < windows.size() && fits; ++i)
      fits = windows[i].width >= d * static_cast<int64_t>(sizes[i]) && windows[i].height >= d * static_cast<int64_t>(sizes[i]);
    if (fits) return d;
  }
  return 1;
}

// The smallest box [x0, x1) x [y0, y1) holding every window.
void union_box(std::span<const CropWindow> windows, int& x0, int& y0, int& x1, int& y1) {
  x0 = y0 = std::numeric_limits<int>::max();
  x1 = y1 = 0;
  for (const CropWindow& win : windows) {
    x0 = std::min(x0, win.x);
    y0 = std::min(y0, win.y);
    x1 = std::max(x1, win.x + win.width);
    y1 = std::max(y1, win.y + win.height);
  }
}

// JPEGs the engine refuses before decoding (the same cap as every slip decoder, slip/image.hpp).
bool oversized(const JpegImageInfo& info) {
  return info.width <= 0 || info.height <= 0 || static_cast<uint64_t>(info.width) * static_cast<uint64_t>(info.height) > kDecodePixelLimit;
}
std::string refused_message(const JpegImageInfo& info) {
  return "JPEG of " + std::to_string(info.width) + "x" + std::to_string(info.height) + " refused";
}

// The source box a crop's output maps to: the exact fractional box when the sampler gave one
// (center), else the window.
struct SourceBox {
  double x0, y0, x1, y1;
};
SourceBox source_box(const CropWindow& win) {
  if (win.box_x1 > win.box_x0) return {win.box_x0, win.box_y0, win.box_x1, win.box_y1};
  return {static_cast<double>(win.x), static_cast<double>(win.y), static_cast<double>(win.x + win.width),
          static_cast<double>(win.y + win.height)};
}

}  // namespace

// Fills w.windows / w.sizes: one window per crop (or the whole image when `full`).
void BatchDecoder::Impl::make_sample_windows(Worker& w, uint64_t id, int width, int height, bool full) const {
  w.windows.clear();
  w.sizes.clear();
  if (full) {
    w.windows.push_back({0, 0, width, height, false});
    w.sizes.push_back(0);
    return;
  }
  uint32_t crop_index = 0;
  for (const CropGroup& g : options.groups)
    for (uint32_t k = 0; k < g.count; ++k, ++crop_index) {
      if (w.forced_windows) {
        w.windows.push_back((*w.forced_windows)[crop_index]);
        w.sizes.push_back(g.size);
        continue;
      }
      w.windows.push_back(sample_crop_window(g, static_cast<uint32_t>(width), static_cast<uint32_t>(height), options.seed, epoch, id,
                                             crop_index, options.flip_probability));
      w.sizes.push_back(g.size);
    }
}

// A YUV420 payload's dimensions (the record's, checked against the payload size); false after
// fail() when they do not match.
bool BatchDecoder::Impl::yuv420_dimensions(Worker& w, size_t slot, uint64_t id, std::span<const std::byte> payload, int& width,
                                           int& height) {
  const MetaRecord record = record_of(id);
  width = static_cast<int>(record.width);
  height = static_cast<int>(record.height);
  if (width < 2 || height < 2 || width % 2 || height % 2 ||
      payload.size() != static_cast<size_t>(width) * static_cast<size_t>(height) * 3 / 2) {
    fail(w, slot, id,
         "YUV420 payload of " + std::to_string(payload.size()) + " bytes does not match " + std::to_string(width) + "x" +
             std::to_string(height));
    return false;
  }
  return true;
}

// The planar path (ResampleMode::planar): the JPEG decoded to its Y/Cb/Cr planes, each crop's
// window resized plane by plane, then converted to RGB. Returns false, touching nothing, when
// the sample is not a JPEG this path takes (the caller then runs the RGB path); true when done
// or failed (w.error set).
bool BatchDecoder::Impl::process_planar(Worker& w, size_t slot, uint64_t id, std::span<const std::span<std::byte>> outputs) {
  const std::span<const std::byte> payload = payload_of(id);
  JpegImageInfo info;
  if (sniff_image_format(payload) != ImageFormat::jpeg || !w.jpeg.read_header(payload, info) || !w.jpeg.planar_capable()) return false;
  if (oversized(info)) {
    fail(w, slot, id, refused_message(info));
    return true;
  }
  make_sample_windows(w, id, info.width, info.height, false);
  const int denom = options.crop_aware ? choose_denominator(w.windows, w.sizes) : 1;
  // The windows' hull in scaled pixels: the decoder transforms only the iMCUs under it.
  // With several windows, only the iMCUs under one of them (their hull leaves much uncovered).
  int x0, y0, x1, y1;
  union_box(w.windows, x0, y0, x1, y1);
  // A JPEG with restart markers: only the intervals under the hull are decoded, cut out as a
  // smaller JPEG whose top-left pixel is (cut.x, cut.y) of the image (a multiple of 8 pixels,
  // so of every scale's pixel too). Anything unusual about it: the whole image, as usual.
  detail::RestartCut cut{};
  const bool restarted = options.crop_aware && cut_restart_window(w, payload, x0, y0, x1, y1, cut, true);
  DecodedPlanes planes;
  if (!decode_window_planes(w, denom, x0, y0, x1, y1, cut, planes)) {
    // A cut that does not decode: the whole image says what is wrong (or decodes after all).
    if (!restarted || !w.jpeg.read_header(payload, info) || !w.jpeg.planar_capable() ||
        !decode_window_planes(w, denom, x0, y0, x1, y1, {}, planes)) {
      fail_jpeg(w, slot, id);
      return true;
    }
  }
  resize_planar_crops(w, slot, planes, denom, outputs);
  return true;
}

// The restart intervals of `payload` (whose header w.jpeg has read) under pixels [x0, x1) x
// [y0, y1), cut out as w.restart_jpeg and its header read by w.jpeg (true), or nothing done
// and w.jpeg still on `payload` (false). `planar`: the cut must suit decode_planes, else
// decode_region.
bool BatchDecoder::Impl::cut_restart_window(Worker& w, std::span<const std::byte> payload, int x0, int y0, int x1, int y1,
                                            detail::RestartCut& cut, bool planar) {
  detail::RestartGeometry geometry;
  if (!w.jpeg.restart_geometry(geometry) || !detail::index_restart_intervals(payload, geometry, w.restart_ends) ||
      !detail::cut_restart_window(payload, geometry, w.restart_ends, static_cast<uint32_t>(x0), static_cast<uint32_t>(y0),
                                  static_cast<uint32_t>(x1), static_cast<uint32_t>(y1), w.restart_jpeg, cut))
    return false;
  JpegImageInfo info;
  if (w.jpeg.read_header(w.restart_jpeg, info) && (planar ? w.jpeg.planar_capable() : info.rgb_capable) &&
      static_cast<uint32_t>(info.width) == cut.width && static_cast<uint32_t>(info.height) == cut.height)
    return true;
  cut = {};
  w.jpeg.read_header(payload, info);  // back on the whole image (its header read fine before)
  return false;
}

// decode_planes of the JPEG whose header w.jpeg has read: the image's pixels [x0, x1) x
// [y0, y1) (and w.windows' parts), that JPEG's top-left pixel being (cut.x, cut.y) of the
// image; planes in the image's scaled coordinates.
bool BatchDecoder::Impl::decode_window_planes(Worker& w, int denom, int x0, int y0, int x1, int y1, const detail::RestartCut& cut,
                                              DecodedPlanes& planes) {
  const int cut_x = static_cast<int>(cut.x) / denom, cut_y = static_cast<int>(cut.y) / denom;
  w.parts.clear();
  if (w.windows.size() > 1)
    for (const CropWindow& win : w.windows)
      w.parts.push_back({win.x / denom - cut_x, win.y / denom - cut_y, (win.x + win.width + denom - 1) / denom - cut_x,
                         (win.y + win.height + denom - 1) / denom - cut_y});
  if (!w.jpeg.decode_planes(denom, x0 / denom - cut_x, y0 / denom - cut_y, (x1 + denom - 1) / denom - cut_x,
                            (y1 + denom - 1) / denom - cut_y, w.region, planes, w.parts))
    return false;
  planes.x_origin += cut_x;
  planes.y_origin += cut_y;
  return true;
}

// The same for a YUV420 payload (dedicated cache or siblings): its planes are already there,
// chroma at half resolution on both axes. When every window is at least twice its output the
// reduced RGB path (planes averaged down first) does less work: false, and the caller runs it.
bool BatchDecoder::Impl::process_planar_yuv420(Worker& w, size_t slot, uint64_t id, std::span<const std::span<std::byte>> outputs) {
  const std::span<const std::byte> payload = payload_of(id);
  int width = 0, height = 0;
  if (!yuv420_dimensions(w, slot, id, payload, width, height)) return true;
  make_sample_windows(w, id, width, height, false);
  if (choose_denominator(w.windows, w.sizes) > 1) return false;
  const auto* y = reinterpret_cast<const uint8_t*>(payload.data());
  const size_t luma = static_cast<size_t>(width) * static_cast<size_t>(height), chroma = luma / 4;
  DecodedPlanes planes;
  planes.planes = 3;
  planes.data[0] = y;
  planes.data[1] = y + luma;
  planes.data[2] = y + luma + chroma;
  planes.stride[0] = static_cast<size_t>(width);
  planes.stride[1] = planes.stride[2] = static_cast<size_t>(width / 2);
  planes.width[0] = width;
  planes.height[0] = height;
  planes.width[1] = planes.width[2] = width / 2;
  planes.height[1] = planes.height[2] = height / 2;
  planes.chroma_scale_x = planes.chroma_scale_y = 0.5;
  resize_planar_crops(w, slot, planes, 1, outputs);
  return true;
}

// Every crop of w.windows from `planes` (the image at 1/denom): each plane resized on its own
// (chroma from its stored resolution straight to the output size), then converted to RGB.
void BatchDecoder::Impl::resize_planar_crops(Worker& w, size_t slot, const DecodedPlanes& planes, int denom,
                                             std::span<const std::span<std::byte>> outputs) {
  const double inv = 1.0 / denom;
  // The plane view of the integer hull of [x0, x1) x [y0, y1): Pillow crops before resizing,
  // so the filter's taps stop at the window's edges.
  struct Hull {
    PlaneView view;
    double x0, y0, x1, y1;  // the box relative to the view
  };
  auto hull_of = [&](int plane, double x0, double y0, double x1, double y1) {
    // To the decoded part's coordinates (its origin is on the iMCU grid, so exact for chroma).
    const double ox = plane == 0 ? planes.x_origin : planes.x_origin * planes.chroma_scale_x;
    const double oy = plane == 0 ? planes.y_origin : planes.y_origin * planes.chroma_scale_y;
    x0 -= ox, x1 -= ox, y0 -= oy, y1 -= oy;
    x1 = std::min<double>(x1, planes.width[plane]);
    y1 = std::min<double>(y1, planes.height[plane]);
    const int hx0 = std::max(0, static_cast<int>(std::floor(x0))), hy0 = std::max(0, static_cast<int>(std::floor(y0)));
    const int hx1 = std::max(hx0 + 1, std::min(planes.width[plane], static_cast<int>(std::ceil(x1))));
    const int hy1 = std::max(hy0 + 1, std::min(planes.height[plane], static_cast<int>(std::ceil(y1))));
    return Hull{{planes.data[plane] + static_cast<size_t>(hy0) * planes.stride[plane] + hx0, hx1 - hx0, hy1 - hy0, planes.stride[plane]},
                x0 - hx0,
                y0 - hy0,
                x1 - hx0,
                y1 - hy0};
  };
  const bool direct_layout = options.type == PixelType::uint8 && options.layout == PixelLayout::hwc;
  size_t k = 0;
  for (size_t g = 0; g < options.groups.size(); ++g) {
    const CropGroup& group = options.groups[g];
    const int size = static_cast<int>(group.size);
    const size_t per_crop = crop_group_sample_bytes(group, options.type) / group.count;
    const size_t pixels = static_cast<size_t>(size) * size;
    uint8_t* const crop = detail::scratch_of(w.crop, pixels * 3);
    uint8_t* const plane_y = detail::scratch_of(w.plane_y, pixels);
    uint8_t* const plane_cb = detail::scratch_of(w.plane_cb, pixels);
    uint8_t* const plane_cr = detail::scratch_of(w.plane_cr, pixels);
    for (uint32_t c = 0; c < group.count; ++c, ++k) {
      const CropWindow& win = w.windows[k];
      const SourceBox box = source_box(win);
      const double x0 = box.x0 * inv, y0 = box.y0 * inv, x1 = box.x1 * inv, y1 = box.y1 * inv;
      std::byte* dst = outputs[g].data() + slot * crop_group_sample_bytes(group, options.type) + c * per_crop;
      uint8_t* rgb = direct_layout ? reinterpret_cast<uint8_t*>(dst) : crop;
      const Hull y = hull_of(0, x0, y0, x1, y1);
      detail::resample_plane(y.view, y.x0, y.y0, y.x1, y.y1, size, size, options.filter, w.planar, plane_y, static_cast<size_t>(size),
                             win.flip);
      if (planes.planes == 1) {
        for (size_t i = 0; i < pixels; ++i) rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = plane_y[i];
      } else {
        // Chroma is resized from its stored resolution straight to the output size: resizing
        // it to half the output and upsampling after cost 2 levels of mean error (4:2:0 at the
        // output) for about 10% of the time.
        const double sx = planes.chroma_scale_x, sy = planes.chroma_scale_y;
        const Hull cb = hull_of(1, x0 * sx, y0 * sy, x1 * sx, y1 * sy);
        const Hull cr = hull_of(2, x0 * sx, y0 * sy, x1 * sx, y1 * sy);
        detail::resample_plane(cb.view, cb.x0, cb.y0, cb.x1, cb.y1, size, size, options.filter, w.planar, plane_cb,
                               static_cast<size_t>(size), win.flip);
        detail::resample_plane(cr.view, cr.x0, cr.y0, cr.x1, cr.y1, size, size, options.filter, w.planar, plane_cr,
                               static_cast<size_t>(size), win.flip);
        detail::ycbcr_planes_to_rgb(plane_y, plane_cb, plane_cr, static_cast<size_t>(size), size, size, rgb, static_cast<size_t>(size) * 3,
                                    w.planar.kernels);
      }
      if (rgb == crop) emit(crop, group.size, false, dst);
    }
  }
}

// Decodes sample `id`'s pixels covering all its windows into w's region; returns the region
// view and the scale (1/denominator) windows must be mapped by. Fills w.windows.
// `target` (whole images only): where the image lands when it fits there, packed (view.data
// is then target.data()); else the worker's scratch.
bool BatchDecoder::Impl::prepare(Worker& w, size_t slot, uint64_t id, bool full, RgbView& view, double& inv_scale, double& origin_x,
                                 double& origin_y, std::span<uint8_t> target) {
  const std::span<const std::byte> payload = payload_of(id);
  auto make_windows = [&](int width, int height) { make_sample_windows(w, id, width, height, full); };
  inv_scale = 1.0;
  origin_x = origin_y = 0;
  if (yuv420) {
    int width = 0, height = 0;
    if (!yuv420_dimensions(w, slot, id, payload, width, height)) return false;
    make_windows(width, height);
    int x0, y0, x1, y1;
    union_box(w.windows, x0, y0, x1, y1);
    // Large windows: average the planes down by d first (what DCT scaling does for JPEG).
    const int denom = options.crop_aware && !full ? choose_denominator(w.windows, w.sizes) : 1;
    if (denom > 1) {
      const int rx0 = x0 / denom, ry0 = y0 / denom;
      const int rx1 = std::min((x1 + denom - 1) / denom, (width + denom - 1) / denom);
      const int ry1 = std::min((y1 + denom - 1) / denom, (height + denom - 1) / denom);
      const size_t stride = static_cast<size_t>(rx1 - rx0) * 3;
      uint8_t* const region = detail::scratch_of(w.region, stride * static_cast<size_t>(ry1 - ry0));
      detail::yuv420_region_to_rgb_reduced(reinterpret_cast<const uint8_t*>(payload.data()), width, height, denom, rx0, ry0, rx1, ry1,
                                           region, stride, w.sums);
      view = {region, rx1 - rx0, ry1 - ry0, stride};
      inv_scale = 1.0 / denom;
      origin_x = rx0;
      origin_y = ry0;
      return true;
    }
    const size_t stride = static_cast<size_t>(x1 - x0) * 3, bytes = stride * static_cast<size_t>(y1 - y0);
    uint8_t* const region = full && target.size() >= bytes ? target.data() : detail::scratch_of(w.region, bytes);
    detail::yuv420_region_to_rgb(reinterpret_cast<const uint8_t*>(payload.data()), width, height, x0, y0, x1, y1, region, stride);
    view = {region, x1 - x0, y1 - y0, stride};
    origin_x = x0;
    origin_y = y0;
    return true;
  }
  JpegImageInfo info;
  if (sniff_image_format(payload) == ImageFormat::jpeg && w.jpeg.read_header(payload, info) && info.rgb_capable) {
    if (oversized(info)) {
      fail(w, slot, id, refused_message(info));
      return false;
    }
    make_windows(info.width, info.height);
    int x0 = 0, y0 = 0, x1 = info.width, y1 = info.height;
    int denom = 1;
    if (options.crop_aware && !full) {
      union_box(w.windows, x0, y0, x1, y1);
      denom = choose_denominator(w.windows, w.sizes);
    } else if (!full) {
      // The reference path: the whole image, cropped afterwards.
    }
    // A margin around the windows' hull: libjpeg's fancy upsampling treats the edges of a
    // cropped or skipped region as image edges, which changes the pixels next to them.
    const int margin = options.crop_aware && !full ? 16 : 0;
    const int rx0 = std::max(0, x0 / denom - margin), ry0 = std::max(0, y0 / denom - margin);
    const int rx1 = (x1 + denom - 1) / denom + margin, ry1 = (y1 + denom - 1) / denom + margin;
    // Restart markers: only the intervals under the region (margin included, so the cut's
    // own edges, which fancy upsampling treats as image edges, stay outside the windows).
    detail::RestartCut cut{};
    const bool restarted =
        options.crop_aware && !full && cut_restart_window(w, payload, rx0 * denom, ry0 * denom, rx1 * denom, ry1 * denom, cut, false);
    int cut_x = static_cast<int>(cut.x) / denom, cut_y = static_cast<int>(cut.y) / denom;
    DecodedRegion region;
    if (!w.jpeg.decode_region(denom, rx0 - cut_x, ry0 - cut_y, rx1 - cut_x, ry1 - cut_y, full ? target : std::span<uint8_t>{}, w.region,
                              region)) {
      // A cut that does not decode: the whole image says what is wrong (or decodes after all).
      cut_x = cut_y = 0;
      if (!restarted || !w.jpeg.read_header(payload, info) || !w.jpeg.decode_region(denom, rx0, ry0, rx1, ry1, w.region, region)) {
        fail_jpeg(w, slot, id);
        return false;
      }
    }
    view = {region.data + static_cast<size_t>(region.x_offset) * 3, std::min(rx1, region.scaled_width + cut_x) - rx0,
            std::min(ry1, region.scaled_height + cut_y) - ry0, region.stride};
    inv_scale = 1.0 / denom;
    origin_x = rx0;
    origin_y = ry0;
    return true;
  }
  // Everything else (PNG and other images kept by --non-jpeg keep, CMYK JPEGs): a full
  // decode through the general codec; this path allocates per sample.
  try {
    w.fallback = decode_to_rgb(payload);
  } catch (const Error& e) {
    if (e.code() != Errc::bad_input) throw;  // an interruption or an I/O error keeps its class
    fail(w, slot, id, e.message());
    return false;
  }
  make_windows(static_cast<int>(w.fallback.width), static_cast<int>(w.fallback.height));
  view = {w.fallback.pixels.data(), static_cast<int>(w.fallback.width), static_cast<int>(w.fallback.height),
          static_cast<size_t>(w.fallback.width) * 3};
  return true;
}

void BatchDecoder::Impl::emit(const uint8_t* crop, uint32_t size, bool flip, std::byte* dst) const {
  const size_t plane = static_cast<size_t>(size) * size;
  const bool chw = options.layout == PixelLayout::chw;
  if (options.type == PixelType::uint8) {
    auto* out = reinterpret_cast<uint8_t*>(dst);
    if (!chw && !flip) {
      std::memcpy(out, crop, plane * 3);
      return;
    }
    for (uint32_t y = 0; y < size; ++y)
      for (uint32_t x = 0; x < size; ++x) {
        const uint8_t* p = crop + (static_cast<size_t>(y) * size + (flip ? size - 1 - x : x)) * 3;
        const size_t o = static_cast<size_t>(y) * size + x;
        if (chw) {
          out[o] = p[0];
          out[plane + o] = p[1];
          out[2 * plane + o] = p[2];
        } else {
          std::memcpy(out + o * 3, p, 3);
        }
      }
    return;
  }
  auto* out = reinterpret_cast<float*>(dst);
  for (uint32_t y = 0; y < size; ++y)
    for (uint32_t x = 0; x < size; ++x) {
      const uint8_t* p = crop + (static_cast<size_t>(y) * size + (flip ? size - 1 - x : x)) * 3;
      const size_t o = static_cast<size_t>(y) * size + x;
      for (int c = 0; c < 3; ++c) {
        const float v = static_cast<float>(p[c]) * scale[c] + bias[c];
        if (chw)
          out[c * plane + o] = v;
        else
          out[o * 3 + c] = v;
      }
    }
}

void BatchDecoder::Impl::process(unsigned thread, size_t slot, uint64_t id, std::span<const std::span<std::byte>> outputs) {
  Worker& w = workers[thread];
  if (planar && (yuv420 ? process_planar_yuv420(w, slot, id, outputs) : process_planar(w, slot, id, outputs))) return;
  RgbView view;
  double inv_scale, ox, oy;
  if (!prepare(w, slot, id, false, view, inv_scale, ox, oy)) return;
  size_t k = 0;
  for (size_t g = 0; g < options.groups.size(); ++g) {
    const CropGroup& group = options.groups[g];
    const size_t per_crop = crop_group_sample_bytes(group, options.type) / group.count;
    uint8_t* const crop = detail::scratch_of(w.crop, static_cast<size_t>(group.size) * group.size * 3);
    for (uint32_t c = 0; c < group.count; ++c, ++k) {
      const CropWindow& win = w.windows[k];
      // Pillow crops first, then resizes: the filter never reads outside the crop. So the
      // resampler sees only the window's pixels (its integer hull when DCT-scaled).
      const SourceBox box = source_box(win);
      const double x0 = box.x0 * inv_scale - ox, y0 = box.y0 * inv_scale - oy;
      const double x1 = std::min<double>(box.x1 * inv_scale - ox, view.width);
      const double y1 = std::min<double>(box.y1 * inv_scale - oy, view.height);
      const int hx0 = static_cast<int>(std::floor(x0)), hy0 = static_cast<int>(std::floor(y0));
      const int hx1 = std::min(view.width, static_cast<int>(std::ceil(x1)));
      const int hy1 = std::min(view.height, static_cast<int>(std::ceil(y1)));
      const RgbView hull = {view.data + static_cast<size_t>(hy0) * view.stride + static_cast<size_t>(hx0) * 3, hx1 - hx0, hy1 - hy0,
                            view.stride};
      std::byte* dst = outputs[g].data() + slot * crop_group_sample_bytes(group, options.type) + c * per_crop;
      // The flip is done by the resampler (mirrored taps); uint8 HWC is resampled straight into
      // the caller's batch, other layouts go through emit().
      const bool direct = options.type == PixelType::uint8 && options.layout == PixelLayout::hwc;
      detail::resample_rgb(hull, x0 - hx0, y0 - hy0, x1 - hx0, y1 - hy0, static_cast<int>(group.size), static_cast<int>(group.size),
                           options.filter, w.resample, direct ? reinterpret_cast<uint8_t*>(dst) : crop, win.flip);
      if (!direct) emit(crop, group.size, false, dst);
    }
  }
}

RgbImage engine_decode_full(std::span<const std::byte> payload) {
  if (sniff_image_format(payload) == ImageFormat::jpeg) {
    JpegRegionDecoder jpeg;
    JpegImageInfo info;
    if (jpeg.read_header(payload, info) && info.rgb_capable) {
      if (oversized(info)) throw Error(Errc::bad_input, refused_message(info));
      std::vector<uint8_t> scratch;
      DecodedRegion region;
      if (!jpeg.decode_region(1, 0, 0, info.width, info.height, scratch, region)) throw Error(jpeg.failure_code(), jpeg.failure());
      RgbImage image;
      image.width = static_cast<uint32_t>(info.width);
      image.height = static_cast<uint32_t>(info.height);
      image.pixels.resize(static_cast<size_t>(info.width) * info.height * 3);
      for (int y = 0; y < info.height; ++y)
        std::memcpy(image.pixels.data() + static_cast<size_t>(y) * info.width * 3,
                    region.data + static_cast<size_t>(y) * region.stride + static_cast<size_t>(region.x_offset) * 3,
                    static_cast<size_t>(info.width) * 3);
      return image;
    }
    if (!jpeg.message().empty()) throw Error(jpeg.failure_code(), jpeg.failure());
  }
  return decode_to_rgb(payload);
}

}  // namespace slip
