// Lossless re-encoding of a JPEG with restart markers (slip convert --jpeg-restarts,
// docs/FORMAT.md#restart-markers): the decode engine then entropy-decodes only the restart
// intervals under a crop (decode/restart_cut.hpp) instead of every row above it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace slip::detail {

// The widest restart interval, in pixels of an MCU row, that re-encoding aims for: the columns
// a crop can skip come in steps of at most this. Measured on the corpus (rrc efficiency, one
// thread, same run): 64 px 1.93x, 128 px 1.75-1.84x, 256 px 1.62-1.72x, whole rows 1.63x,
// no restarts 1.46-1.49x. Narrower intervals cost file size (+1.7% at 64 px) and a slow-path
// MCU in libjpeg-turbo's Huffman decoder at every marker.
inline constexpr uint32_t kRestartIntervalPixels = 64;

// MCUs per restart interval for an image `mcus_per_row` MCUs of `mcu_width` pixels wide: the
// largest divisor of mcus_per_row at most kRestartIntervalPixels wide (at least 1), so that every
// MCU row holds whole intervals.
uint32_t restart_interval_for(uint32_t mcus_per_row, uint32_t mcu_width);

// `jpeg` re-encoded with the same DCT coefficients, quantization tables, sampling factors and
// APPn/COM segments (so every decoder gives the same pixels), as a sequential (baseline or
// extended) JPEG with optimal Huffman tables and restart_interval_for(...) MCUs per restart
// interval. nullopt when libjpeg reports anything about the input, even a warning (a corrupt
// JPEG is then stored as it came, not repaired), or when it is not a 1- or 3-component JPEG.
// Throws Error(io) when the loaded libjpeg must not be used (libjpeg_unusable()).
std::optional<std::vector<std::byte>> reencode_with_restarts(std::span<const std::byte> jpeg);

}  // namespace slip::detail
