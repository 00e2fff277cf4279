// A window of a JPEG with restart markers, cut out as a smaller JPEG without decoding anything.
//
// A restart marker ends each run of `interval` MCUs: the entropy decoder restarts there on a
// byte boundary with its DC predictors at zero. When the intervals tile the MCU grid (each MCU
// row holds a whole number of intervals, or each interval whole MCU rows), the intervals under a
// window, with the frame header's size made theirs and the markers renumbered, are a JPEG of
// exactly that part of the image: the same coefficients, so the same pixels, and the entropy
// decoding of everything else is never done. Without restart markers every row above a window
// has to be entropy-decoded to find where the window's rows begin.
//
// Everything here reads untrusted bytes: every read is bounds-checked, the index grows only with
// markers actually found, and any irregularity (fill bytes, a marker out of sequence, a count
// that does not match the frame) makes the caller decode the whole image as usual.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace slip::detail {

// What the frame and scan headers say (the JPEG decoder has read them).
struct RestartGeometry {
  uint32_t width = 0, height = 0;          // the frame's size in pixels
  uint32_t mcu_width = 0, mcu_height = 0;  // one MCU in pixels (8 x sampling factor; 8x8 for one component)
  uint32_t interval = 0;                   // MCUs per restart interval (DRI), > 0
  size_t entropy_offset = 0;               // the first byte after the SOS segment
  size_t sof_offset = 0;                   // the frame header's marker (FF Cn), before entropy_offset
  uint32_t mcus_per_row() const { return (width + mcu_width - 1) / mcu_width; }
  uint32_t mcu_rows() const { return (height + mcu_height - 1) / mcu_height; }
};

// The offset of each restart interval's end (the FF of the RSTn marker after it, or of the EOI
// after the last) in `jpeg`, in `ends`. False unless the entropy-coded data holds exactly the
// frame's intervals, with markers RST0, RST1, ... in sequence and nothing but EOI after the last.
bool index_restart_intervals(std::span<const std::byte> jpeg, const RestartGeometry& geometry, std::vector<size_t>& ends);

// Where a cut window lies in the whole image, in pixels.
struct RestartCut {
  uint32_t x = 0, y = 0;           // its top-left pixel
  uint32_t width = 0, height = 0;  // its frame size
};

// Writes to `out` a JPEG of the restart intervals that cover pixels [x0, x1) x [y0, y1): the
// header bytes up to the scan data with the frame's size replaced (the SOF at sof_offset),
// those intervals' bytes with markers RST0.. between them, then EOI. False (out unspecified)
// when the intervals do not tile the MCU grid, the window is empty, or the cut would be the
// whole image.
bool cut_restart_window(std::span<const std::byte> jpeg, const RestartGeometry& geometry, std::span<const size_t> ends, uint32_t x0,
                        uint32_t y0, uint32_t x1, uint32_t y1, std::vector<std::byte>& out, RestartCut& cut);

}  // namespace slip::detail
