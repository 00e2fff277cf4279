#include "decode/samplers.hpp"

#include <charconv>
#include <cmath>
#include <string>

#include "decode/rng.hpp"
#include "slip/error.hpp"

namespace slip {
namespace detail {

CropWindow direct_rrc_window(CounterRng& gen, int64_t width, int64_t height, double scale_lo, double scale_hi, double ratio_lo,
                             double ratio_hi) {
  // With s the area fraction and r = w/h: w <= W  <=>  s*r <= W/H,  h <= H  <=>  s/r <= H/W.
  const double aspect = static_cast<double>(width) / static_cast<double>(height);
  // So the smallest scale fits exactly for r in [s_lo * W/H, (W/H) / s_lo].
  const double r_min = std::max(std::log(ratio_lo), std::log(scale_lo * aspect));
  const double r_max = std::min(std::log(ratio_hi), std::log(aspect / scale_lo));
  if (r_min <= r_max) {
    const double r = std::exp(r_min + gen.uniform() * (r_max - r_min));
    const double s_max = std::min({scale_hi, aspect / r, r / aspect});
    const double s = scale_lo + gen.uniform() * std::max(0.0, s_max - scale_lo);
    const double area = s * static_cast<double>(width) * static_cast<double>(height);
    const int64_t w = std::clamp<int64_t>(round_half_even(std::sqrt(area * r)), 1, width);
    const int64_t h = std::clamp<int64_t>(round_half_even(std::sqrt(area / r)), 1, height);
    const auto top = static_cast<int64_t>(gen() % static_cast<uint32_t>(height - h + 1));
    const auto left = static_cast<int64_t>(gen() % static_cast<uint32_t>(width - w + 1));
    return {static_cast<int32_t>(left), static_cast<int32_t>(top), static_cast<int32_t>(w), static_cast<int32_t>(h), false};
  }
  // No ratio in range admits the smallest scale (an extreme aspect ratio): torchvision's fallback.
  int64_t w = width, h = height;
  if (aspect < ratio_lo)
    h = round_half_even(static_cast<double>(w) / ratio_lo);
  else if (aspect > ratio_hi)
    w = round_half_even(static_cast<double>(h) * ratio_hi);
  w = std::clamp<int64_t>(w, 1, width);
  h = std::clamp<int64_t>(h, 1, height);
  return {static_cast<int32_t>((width - w) / 2), static_cast<int32_t>((height - h) / 2), static_cast<int32_t>(w), static_cast<int32_t>(h),
          false};
}

CropWindow center_window(int64_t width, int64_t height, double center_ratio) {
  // torchvision's Resize(S) + CenterCrop(C), C/S = center_ratio, as one resize: the short side
  // becomes S, the long side int(S * long / short); the crop starts at round((resized - C) / 2)
  // (half to even). The box is that crop mapped back to source pixels; the window is its hull.
  const double s = 256.0, c = s * center_ratio;
  const bool wide = width >= height;
  const auto short_side = static_cast<double>(std::min(width, height)), long_side = static_cast<double>(std::max(width, height));
  const double resized_long = std::floor(s * long_side / short_side);
  const double rw = wide ? resized_long : s, rh = wide ? s : resized_long;
  const double left = static_cast<double>(round_half_even((rw - c) / 2.0)), top = static_cast<double>(round_half_even((rh - c) / 2.0));
  const double sx = static_cast<double>(width) / rw, sy = static_cast<double>(height) / rh;
  CropWindow w;
  w.box_x0 = std::clamp(left * sx, 0.0, static_cast<double>(width));
  w.box_x1 = std::clamp((left + c) * sx, w.box_x0, static_cast<double>(width));
  w.box_y0 = std::clamp(top * sy, 0.0, static_cast<double>(height));
  w.box_y1 = std::clamp((top + c) * sy, w.box_y0, static_cast<double>(height));
  w.x = static_cast<int32_t>(std::floor(w.box_x0));
  w.y = static_cast<int32_t>(std::floor(w.box_y0));
  w.width = std::max<int32_t>(1, static_cast<int32_t>(std::ceil(w.box_x1)) - w.x);
  w.height = std::max<int32_t>(1, static_cast<int32_t>(std::ceil(w.box_y1)) - w.y);
  w.width = std::min<int32_t>(w.width, static_cast<int32_t>(width - w.x));
  w.height = std::min<int32_t>(w.height, static_cast<int32_t>(height - w.y));
  if (!(w.box_x1 > w.box_x0 && w.box_y1 > w.box_y0)) w.box_x0 = w.box_x1 = w.box_y0 = w.box_y1 = 0;
  return w;
}

}  // namespace detail

namespace {

double parse_number(std::string_view text, std::string_view spec) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    throw Error(Errc::usage, "bad crop spec '" + std::string(spec) + "': '" + std::string(text) + "' is not a number");
  return value;
}

CropGroup parse_one_group(std::string_view item, std::string_view spec) {
  // [COUNTx]SIZE[@LO-HI]
  CropGroup group;
  group.sampler = CropSampler::rrc;
  std::string_view rest = item;
  if (const auto at = rest.find('@'); at != std::string_view::npos) {
    const std::string_view range = rest.substr(at + 1);
    const auto dash = range.find('-');
    if (dash == std::string_view::npos) throw Error(Errc::usage, "bad crop spec '" + std::string(spec) + "': scale range needs LO-HI");
    group.scale_lo = parse_number(range.substr(0, dash), spec);
    group.scale_hi = parse_number(range.substr(dash + 1), spec);
    rest = rest.substr(0, at);
  }
  if (const auto x = rest.find('x'); x != std::string_view::npos) {
    // Checked as a double: a cast first would wrap 4294967297 to 1.
    const double count = parse_number(rest.substr(0, x), spec);
    if (count < 1 || count > 64 || count != std::floor(count))
      throw Error(Errc::usage, "bad crop spec '" + std::string(spec) + "': count must be an integer in 1..64");
    group.count = static_cast<uint32_t>(count);
    rest = rest.substr(x + 1);
  }
  const double size = parse_number(rest, spec);
  if (size < 1 || size > 4096 || size != std::floor(size))
    throw Error(Errc::usage, "bad crop spec '" + std::string(spec) + "': size must be an integer in 1..4096");
  group.size = static_cast<uint32_t>(size);
  if (group.count < 1 || group.count > 64) throw Error(Errc::usage, "bad crop spec '" + std::string(spec) + "': count must be in 1..64");
  if (!(group.scale_lo > 0 && group.scale_lo <= group.scale_hi && group.scale_hi <= 1))
    throw Error(Errc::usage, "bad crop spec '" + std::string(spec) + "': need 0 < LO <= HI <= 1");
  return group;
}

}  // namespace

std::vector<CropGroup> parse_crop_groups(std::string_view spec) {
  if (spec == "dino") return parse_crop_groups("2x224@0.32-1,8x96@0.05-0.32");
  std::vector<CropGroup> groups;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = spec.find(',', start);
    const std::string_view item = spec.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    groups.push_back(parse_one_group(item, spec));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return groups;
}

CropWindow sample_crop_window(const CropGroup& group, uint32_t image_width, uint32_t image_height, uint64_t seed, uint64_t epoch,
                              uint64_t sample, uint32_t crop_index, double flip_probability) {
  CropWindow window;
  detail::CounterRng gen(seed, epoch, sample, crop_index, 0);
  switch (group.sampler) {
    case CropSampler::full:
      window = {0, 0, static_cast<int32_t>(image_width), static_cast<int32_t>(image_height), false};
      break;
    case CropSampler::center:
      window = detail::center_window(image_width, image_height, group.center_ratio);
      break;
    case CropSampler::rrc:
      window = detail::rrc_window(gen, image_width, image_height, group.scale_lo, group.scale_hi, group.ratio_lo, group.ratio_hi);
      break;
    case CropSampler::direct_rrc:
      window = detail::direct_rrc_window(gen, image_width, image_height, group.scale_lo, group.scale_hi, group.ratio_lo, group.ratio_hi);
      break;
  }
  if (flip_probability > 0) {
    detail::CounterRng flip_gen(seed, epoch, sample, crop_index, 1);
    window.flip = flip_gen.uniform() < flip_probability;
  }
  return window;
}

}  // namespace slip
