// One build of a kernel for bench/kernel_ab.sh: compiled twice, from the sources of two
// revisions, into two shared objects whose entry points (SLIP_AB_ENTRY) the driver times
// alternately in one process, so both see the same machine at the same moment.
#include SLIP_AB_SOURCE
#ifdef SLIP_AB_SOURCE2
#include SLIP_AB_SOURCE2  // the planar weights (resample_weights.cpp), of the same revision
#endif

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>

using namespace slip::detail;  // NOLINT(google-build-using-namespace): a benchmark shim

// The best time (microseconds) of `iters` runs of one unit of work on `in` (at least 4 MB).
//   kind 0: resample_plane, a w x h plane to an out x out crop four times (fractional boxes,
//           every other one mirrored), filter 0 bilinear, 1 bicubic; `out_buffer` >= out^2.
//   kind 1: ycbcr_planes_to_rgb, sixteen w x w crops into a 64 MB batch, one after the other.
extern "C" double SLIP_AB_ENTRY(int kind, const uint8_t* in, int w, int h, int out, int filter, uint8_t* out_buffer, int iters) {
#ifndef SLIP_AB_COLOUR
  static PlaneResampleScratch scratch;
#endif
  static std::vector<uint8_t> batch(size_t{64} << 20);
  static size_t at = 0;
  double best = 1e300;
  for (int it = 0; it < iters; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
#ifndef SLIP_AB_COLOUR
    if (kind == 0) {
      for (int k = 0; k < 4; ++k)
        resample_plane({in, w, h, static_cast<size_t>(w)}, 0.25 * k, 0.5 * k, w - 0.5 * k, h - 0.25 * k, out, out,
                       filter ? slip::ResampleFilter::bicubic : slip::ResampleFilter::bilinear, scratch, out_buffer,
                       static_cast<size_t>(out), (k & 1) != 0);
    }
#else
    if (kind == 1) {
      const size_t crop = static_cast<size_t>(w) * w * 3;
      for (int k = 0; k < 16; ++k) {
        if (at + crop > batch.size()) at = 0;
        ycbcr_planes_to_rgb(in, in + (size_t{1} << 20), in + (size_t{2} << 20), static_cast<size_t>(w), w, w, batch.data() + at,
                            static_cast<size_t>(w) * 3);
        at += crop;
      }
    }
#endif
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  if (kind == 1) out_buffer[0] = batch[at / 2];
  return best;
}
