#include "decode/restart_cut.hpp"

#include <algorithm>
#include <cstring>

namespace slip::detail {
namespace {

const uint8_t* bytes_of(std::span<const std::byte> d) { return reinterpret_cast<const uint8_t*>(d.data()); }

uint32_t ceil_div(uint32_t a, uint32_t b) { return a / b + (a % b != 0); }

uint64_t interval_count(const RestartGeometry& g) {
  const uint64_t mcus = uint64_t{g.mcus_per_row()} * g.mcu_rows();
  return (mcus + g.interval - 1) / g.interval;
}

bool valid(const RestartGeometry& g) { return g.interval > 0 && g.mcu_width > 0 && g.mcu_height > 0 && g.width > 0 && g.height > 0; }

}  // namespace

bool index_restart_intervals(std::span<const std::byte> jpeg, const RestartGeometry& geometry, std::vector<size_t>& ends) {
  ends.clear();
  if (!valid(geometry) || geometry.entropy_offset > jpeg.size()) return false;
  const uint64_t expected = interval_count(geometry);
  const uint8_t* const data = bytes_of(jpeg);
  const size_t size = jpeg.size();
  for (size_t i = geometry.entropy_offset;;) {
    const auto* ff = static_cast<const uint8_t*>(std::memchr(data + i, 0xFF, size - i));
    if (!ff) return false;  // no EOI
    const size_t at = static_cast<size_t>(ff - data);
    if (at + 1 >= size) return false;
    const uint8_t marker = data[at + 1];
    if (marker == 0x00) {  // a stuffed FF data byte
      i = at + 2;
      continue;
    }
    if (marker == 0xD9) {  // EOI: the last interval ends here
      if (ends.size() + 1 != expected) return false;
      ends.push_back(at);
      return true;
    }
    // Only RSTn in sequence; fill bytes and any other marker leave the image to the full decode.
    if (marker != 0xD0 + ends.size() % 8 || ends.size() + 1 >= expected) return false;
    ends.push_back(at);
    i = at + 2;
  }
}

bool cut_restart_window(std::span<const std::byte> jpeg, const RestartGeometry& geometry, std::span<const size_t> ends, uint32_t x0,
                        uint32_t y0, uint32_t x1, uint32_t y1, std::vector<std::byte>& out, RestartCut& cut) {
  const RestartGeometry& g = geometry;
  if (!valid(g) || ends.size() != interval_count(g) || g.entropy_offset > jpeg.size() || g.sof_offset + 10 > g.entropy_offset) return false;
  x1 = std::min(x1, g.width);
  y1 = std::min(y1, g.height);
  if (x0 >= x1 || y0 >= y1) return false;
  const uint32_t per_row = g.mcus_per_row(), rows = g.mcu_rows();
  // The grid the intervals make: `columns` intervals of `column_px` pixels side by side in each
  // step of `row_step` MCU rows.
  uint32_t row_step = 1, columns = 1, column_px = 0;
  if (per_row % g.interval == 0) {
    columns = per_row / g.interval;
    column_px = g.interval * g.mcu_width;
  } else if (g.interval % per_row == 0) {
    row_step = g.interval / per_row;
    column_px = per_row * g.mcu_width;
  } else {
    return false;
  }
  const uint32_t c0 = x0 / column_px, c1 = std::min(columns, ceil_div(x1, column_px));
  const uint32_t r0 = y0 / g.mcu_height / row_step * row_step;
  const uint32_t r1 = std::min(rows, ceil_div(ceil_div(y1, g.mcu_height), row_step) * row_step);
  if (c0 == 0 && c1 == columns && r0 == 0 && r1 == rows) return false;
  cut.x = c0 * column_px;
  cut.y = r0 * g.mcu_height;
  cut.width = c1 == columns ? g.width - cut.x : (c1 - c0) * column_px;
  cut.height = r1 == rows ? g.height - cut.y : (r1 - r0) * g.mcu_height;

  const std::byte* const data = jpeg.data();
  out.assign(data, data + g.entropy_offset);
  out[g.sof_offset + 5] = std::byte(cut.height >> 8);
  out[g.sof_offset + 6] = std::byte(cut.height & 0xFF);
  out[g.sof_offset + 7] = std::byte(cut.width >> 8);
  out[g.sof_offset + 8] = std::byte(cut.width & 0xFF);
  uint32_t written = 0;
  for (uint32_t r = r0; r < r1; r += row_step)
    for (uint32_t c = c0; c < c1; ++c) {
      const size_t index = size_t{r / row_step} * columns + c;
      const size_t begin = index == 0 ? g.entropy_offset : ends[index - 1] + 2;
      if (written > 0) {
        out.push_back(std::byte{0xFF});
        out.push_back(std::byte(0xD0 + (written - 1) % 8));
      }
      out.insert(out.end(), data + begin, data + ends[index]);
      ++written;
    }
  out.push_back(std::byte{0xFF});
  out.push_back(std::byte{0xD9});
  return true;
}

}  // namespace slip::detail
