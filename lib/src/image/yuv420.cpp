// The YUV420 payload conversions of docs/FORMAT.md#yuv420-conversion and their inverse.
//
// The forward transform must be bit-exact with the Python builder (numpy float32), so it is
// computed in float32 with the products summed left to right and no fused multiply-add: this
// file is compiled with -ffp-contract=off (lib/CMakeLists.txt) and never with -ffast-math.
#include "slip/yuv420_image.hpp"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "image/yuv420_kernels.hpp"
#include "slip/error.hpp"
#include "util/cpu.hpp"

namespace slip {

namespace detail {

namespace {

inline uint8_t truncate_to_u8(float v) {
  // Clip to [0, 255], then truncate toward zero (numpy's astype(uint8) of a clipped array).
  return static_cast<uint8_t>(std::min(std::max(v, 0.0f), 255.0f));
}

struct Yuv {
  uint8_t y, u, v;
};

inline Yuv rgb_pixel_to_yuv(const uint8_t* p) {
  const float r = p[0], g = p[1], b = p[2];
  const float y = 0.299f * r + 0.587f * g + 0.114f * b;
  const float u = -0.168736f * r - 0.331264f * g + 0.5f * b + 128.0f;
  const float v = 0.5f * r - 0.418688f * g - 0.081312f * b + 128.0f;
  return {truncate_to_u8(y), truncate_to_u8(u), truncate_to_u8(v)};
}

}  // namespace

void rgb_row_pair_to_yuv420(const uint8_t* row0, const uint8_t* row1, uint32_t width, uint32_t padded_width, uint8_t* y0, uint8_t* y1,
                            uint8_t* u, uint8_t* v) {
  for (uint32_t x = 0; x < padded_width; x += 2) {
    // Column x+1 replicates the last column when the width is odd.
    const uint32_t xa = x, xb = std::min(x + 1, width - 1);
    const Yuv a = rgb_pixel_to_yuv(row0 + xa * 3), b = rgb_pixel_to_yuv(row0 + xb * 3);
    const Yuv c = rgb_pixel_to_yuv(row1 + xa * 3), d = rgb_pixel_to_yuv(row1 + xb * 3);
    y0[x] = a.y;
    y0[x + 1] = b.y;
    y1[x] = c.y;
    y1[x + 1] = d.y;
    // floor of the mean of the four truncated full-resolution values.
    u[x / 2] = static_cast<uint8_t>((a.u + b.u + c.u + d.u) >> 2);
    v[x / 2] = static_cast<uint8_t>((a.v + b.v + c.v + d.v) >> 2);
  }
}

namespace {

// The inverse full-range BT.601 transform in 1/64 fixed point (1.402, 0.344136, 0.714136,
// 1.772 -> 90, 22, 46, 113; +32 rounds): every intermediate fits an int16 lane, so the row
// loops below vectorise; the coefficients are within 0.0065 of the exact ones (at most one
// level of error at full chroma). u and v are centred (stored value - 128).
inline uint8_t clamp255(int v) { return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v); }
inline void yuv_to_rgb_pixel(int y, int u, int v, uint8_t* o) {
  const int l = y * 64 + 32;
  o[0] = clamp255((l + 90 * v) >> 6);
  o[1] = clamp255((l - 22 * u - 46 * v) >> 6);
  o[2] = clamp255((l + 113 * u) >> 6);
}

}  // namespace

namespace {

void interleave_rgb_scalar(const uint8_t* r, const uint8_t* g, const uint8_t* b, int n, uint8_t* out) {
  for (int i = 0; i < n; ++i) {
    out[3 * i] = r[i];
    out[3 * i + 1] = g[i];
    out[3 * i + 2] = b[i];
  }
}

#if defined(__x86_64__)
// Byte k of the 48 packed bytes of 16 pixels is channel k % 3 of pixel k / 3: for each 16-byte
// third of the output and each plane, a pshufb mask picking that plane's bytes (0x80: none).
struct InterleaveMasks {
  alignas(16) uint8_t mask[3][3][16];  // [output third][plane][byte]
  InterleaveMasks() {
    for (int third = 0; third < 3; ++third)
      for (int plane = 0; plane < 3; ++plane)
        for (int j = 0; j < 16; ++j) {
          const int k = third * 16 + j;
          mask[third][plane][j] = k % 3 == plane ? static_cast<uint8_t>(k / 3) : 0x80;
        }
  }
};
const InterleaveMasks kMasks;

__attribute__((target("ssse3"))) void interleave_rgb_ssse3(const uint8_t* r, const uint8_t* g, const uint8_t* b, int n, uint8_t* out) {
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i pr = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + i));
    const __m128i pg = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + i));
    const __m128i pb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
    for (int third = 0; third < 3; ++third) {
      const auto* m = reinterpret_cast<const __m128i*>(kMasks.mask[third]);
      const __m128i v = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(pr, _mm_load_si128(m)), _mm_shuffle_epi8(pg, _mm_load_si128(m + 1))),
                                     _mm_shuffle_epi8(pb, _mm_load_si128(m + 2)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 3 * i + 16 * third), v);
    }
  }
  interleave_rgb_scalar(r + i, g + i, b + i, n - i, out + 3 * i);
}
#else
constexpr auto interleave_rgb_ssse3 = interleave_rgb_scalar;  // never picked: cpu_has_ssse3() is false
#endif

using Interleave = void (*)(const uint8_t*, const uint8_t*, const uint8_t*, int, uint8_t*);
// The kernel for a level (at most the CPU's: SSSE3 comes with sse4).
Interleave interleave_for(SimdLevel level) { return level >= SimdLevel::sse4 ? interleave_rgb_ssse3 : interleave_rgb_scalar; }

}  // namespace

namespace {

// n pixels of one row from luma column xs: chroma sample j covers luma columns 2j and 2j + 1.
// level: scalar runs the portable loops only (what a CPU without SSE gets).
void yuv420_row_to_rgb(const uint8_t* yrow, const uint8_t* urow, const uint8_t* vrow, int x0, int n, uint8_t* o, SimdLevel level) {
  const Interleave interleave_rgb = interleave_for(level);
  // In three passes the compiler vectorises (-O3): chroma upsampled to full width, the inverse
  // transform on 16-bit lanes into planar rows, then interleaved into packed RGB. Fixed point
  // with 6 fractional bits keeps every intermediate inside int16.
  constexpr int kRowChunk = 256;
  alignas(32) int16_t uu[kRowChunk + 2], vv[kRowChunk + 2];
  alignas(32) uint8_t rr[kRowChunk], gg[kRowChunk], bb[kRowChunk];
  for (int start = 0; start < n; start += kRowChunk) {
    const int m = std::min(kRowChunk, n - start);
    const int xs = x0 + start;
    // Each chroma sample covers two columns; an odd first column takes the second half of a pair.
    const int odd = xs & 1;
    const int pairs = (m - odd + 1) / 2;
    const uint8_t* uc = urow + ((xs + odd) >> 1);
    const uint8_t* vc = vrow + ((xs + odd) >> 1);
    if (odd) {
      uu[0] = static_cast<int16_t>(urow[xs >> 1] - 128);
      vv[0] = static_cast<int16_t>(vrow[xs >> 1] - 128);
    }
    alignas(32) int16_t up2[kRowChunk / 2 + 1], vp2[kRowChunk / 2 + 1];
    for (int j = 0; j < pairs; ++j) {
      up2[j] = static_cast<int16_t>(uc[j] - 128);
      vp2[j] = static_cast<int16_t>(vc[j] - 128);
    }
    int16_t* ud = uu + odd;
    int16_t* vd = vv + odd;
    for (int j = 0; j < pairs; ++j) {
      ud[2 * j] = ud[2 * j + 1] = up2[j];
      vd[2 * j] = vd[2 * j + 1] = vp2[j];
    }
    const uint8_t* yy = yrow + xs;
    // Eight pixels per step on 16-bit lanes (every intermediate fits int16, see above); the
    // saturating pack is the clamp to [0, 255]. Bit-identical to the scalar tail.
    int i = 0;
#if defined(__x86_64__)
    const __m128i zero = _mm_setzero_si128(), bias = _mm_set1_epi16(32);
    const __m128i k90 = _mm_set1_epi16(90), k22 = _mm_set1_epi16(22), k46 = _mm_set1_epi16(46), k113 = _mm_set1_epi16(113);
    for (; level >= SimdLevel::sse4 && i + 8 <= m; i += 8) {
      const __m128i l =
          _mm_add_epi16(_mm_slli_epi16(_mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(yy + i)), zero), 6), bias);
      const __m128i u = _mm_loadu_si128(reinterpret_cast<const __m128i*>(uu + i));
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(vv + i));
      const __m128i r = _mm_srai_epi16(_mm_add_epi16(l, _mm_mullo_epi16(v, k90)), 6);
      const __m128i g = _mm_srai_epi16(_mm_sub_epi16(_mm_sub_epi16(l, _mm_mullo_epi16(u, k22)), _mm_mullo_epi16(v, k46)), 6);
      const __m128i b = _mm_srai_epi16(_mm_add_epi16(l, _mm_mullo_epi16(u, k113)), 6);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(rr + i), _mm_packus_epi16(r, r));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(gg + i), _mm_packus_epi16(g, g));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(bb + i), _mm_packus_epi16(b, b));
    }
#endif
    for (; i < m; ++i) {
      // 1.402, 0.344136, 0.714136, 1.772 in 1/64 units; +32 rounds.
      const int l = yy[i] * 64 + 32;
      const int r = (l + 90 * vv[i]) >> 6;
      const int g = (l - 22 * uu[i] - 46 * vv[i]) >> 6;
      const int b = (l + 113 * uu[i]) >> 6;
      rr[i] = static_cast<uint8_t>(r < 0 ? 0 : r > 255 ? 255 : r);
      gg[i] = static_cast<uint8_t>(g < 0 ? 0 : g > 255 ? 255 : g);
      bb[i] = static_cast<uint8_t>(b < 0 ? 0 : b > 255 ? 255 : b);
    }
    interleave_rgb(rr, gg, bb, m, o + static_cast<size_t>(start) * 3);
  }
}

}  // namespace

void yuv420_region_to_rgb(const uint8_t* yp, int width, int height, int x0, int y0, int x1, int y1, uint8_t* out, size_t stride) {
  const uint8_t* up = yp + static_cast<size_t>(width) * height;
  const uint8_t* vp = up + static_cast<size_t>(width / 2) * (height / 2);
  const SimdLevel level = active_simd_level();
  for (int y = y0; y < y1; ++y)
    yuv420_row_to_rgb(yp + static_cast<size_t>(y) * width, up + static_cast<size_t>(y / 2) * (width / 2),
                      vp + static_cast<size_t>(y / 2) * (width / 2), x0, x1 - x0, out + static_cast<size_t>(y - y0) * stride, level);
}

namespace {

// libjpeg's YCbCr -> RGB (jdcolor.c) in its own 16-bit fixed point, so the planar path's
// colours are the ones a full libjpeg decode gives.
constexpr int kYccShift = 16;
constexpr int32_t kYccHalf = 1 << (kYccShift - 1);
constexpr int32_t kCrR = 91881, kCbB = 116130, kCbG = 22554, kCrG = 46802;  // FIX(1.402), FIX(1.772), FIX(0.34414), FIX(0.71414)

void ycbcr_row_scalar(const uint8_t* yr, const uint8_t* cbr, const uint8_t* crr, int m, uint8_t* rr, uint8_t* gg, uint8_t* bb) {
  for (int i = 0; i < m; ++i) {
    const int32_t l = yr[i], cb = cbr[i] - 128, cr = crr[i] - 128;
    const int32_t r = l + ((kCrR * cr + kYccHalf) >> kYccShift);
    const int32_t g = l + ((-kCbG * cb - kCrG * cr + kYccHalf) >> kYccShift);
    const int32_t b = l + ((kCbB * cb + kYccHalf) >> kYccShift);
    rr[i] = static_cast<uint8_t>(std::clamp(r, 0, 255));
    gg[i] = static_cast<uint8_t>(std::clamp(g, 0, 255));
    bb[i] = static_cast<uint8_t>(std::clamp(b, 0, 255));
  }
}

#if defined(__x86_64__)
// AVX2, 32 pixels per step, bit-identical to the scalar loop. libjpeg's coefficients do not
// fit 16 bits, so each is split into a whole multiple of 2^16 (added after the shift, which is
// exact) and a 16-bit remainder, e.g. 1.402 * 2^16 = 91881 = 65536 + 26345:
//   R = Y + Cr + ((26345 Cr + 2^15) >> 16)
//   G = Y - Cr + ((-22554 Cb + 18734 Cr + 2^15) >> 16)      (-46802 = -65536 + 18734)
//   B = Y + 2 Cb + ((-14942 Cb + 2^15) >> 16)               (116130 = 131072 - 14942)
// R's and B's brackets have one term each: pmulhrsw, (x k + 2^14) >> 15, with k about half the
// remainder gives the same integers on all 256 centred chroma values (checked below at compile
// time), one multiply and no shuffles. G's bracket is one pmaddwd over (Cb, Cr) pairs, the
// rounding half added to the sums. The channels are then packed, clamped and interleaved into
// RGB in registers.
constexpr int32_t kCrRRest = kCrR - 65536, kCbBRest = kCbB - 131072, kCrGRest = 65536 - kCrG;
static_assert(kCrRRest > 0 && kCrRRest < 32768 && kCbBRest < 0 && kCbBRest > -32768 && kCrGRest > 0 && kCrGRest < 32768);
constexpr int16_t kCrRHalf = 13173, kCbBHalf = -7471;
constexpr bool mulhrs_matches(int32_t rest, int32_t half) {
  for (int32_t c = -128; c < 128; ++c)
    if (((c * half + (1 << 14)) >> 15) != ((c * rest + kYccHalf) >> kYccShift)) return false;
  return true;
}
static_assert(mulhrs_matches(kCrRRest, kCrRHalf) && mulhrs_matches(kCbBRest, kCbBHalf));

// G's bracket for 16 pixels: unpacklo/hi gave the pairs of pixels [0-3 | 8-11] and
// [4-7 | 12-15]; packs of the two restores the order.
__attribute__((target("avx2"))) inline __m256i term(__m256i lo_pairs, __m256i hi_pairs, __m256i k, __m256i add) {
  return _mm256_packs_epi32(_mm256_srai_epi32(_mm256_add_epi32(_mm256_madd_epi16(lo_pairs, k), add), kYccShift),
                            _mm256_srai_epi32(_mm256_add_epi32(_mm256_madd_epi16(hi_pairs, k), add), kYccShift));
}
__attribute__((target("avx2"))) inline __m256i load16_epi16(const uint8_t* p) {
  return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Channels of 16 pixels (int16, in order) from 16 pixels of centred chroma and luma.
__attribute__((target("avx2"))) inline void ycc16_to_rgb16(__m256i l, __m256i cb, __m256i cr, __m256i& r, __m256i& g, __m256i& b) {
  const __m256i half = _mm256_set1_epi32(kYccHalf);
  const __m256i k_g = _mm256_set1_epi32(madd_pair(-kCbG, kCrGRest));
  r = _mm256_add_epi16(_mm256_add_epi16(l, cr), _mm256_mulhrs_epi16(cr, _mm256_set1_epi16(kCrRHalf)));
  b = _mm256_add_epi16(_mm256_add_epi16(l, _mm256_add_epi16(cb, cb)), _mm256_mulhrs_epi16(cb, _mm256_set1_epi16(kCbBHalf)));
  g = _mm256_add_epi16(_mm256_sub_epi16(l, cr), term(_mm256_unpacklo_epi16(cb, cr), _mm256_unpackhi_epi16(cb, cr), k_g, half));
}

// 32 pixels of one row to 96 bytes of RGB at `out` (16-byte aligned when kStream).
template <bool kStream>
__attribute__((target("avx2"))) inline void ycbcr32_to_rgb(const uint8_t* yp, const uint8_t* cbp, const uint8_t* crp, uint8_t* out) {
  const __m256i c128 = _mm256_set1_epi16(128);
  __m256i ch[3][2];  // [R, G, B][pixels 0-15, 16-31] as int16
  for (int h = 0; h < 2; ++h) {
    ycc16_to_rgb16(load16_epi16(yp + 16 * h), _mm256_sub_epi16(load16_epi16(cbp + 16 * h), c128),
                   _mm256_sub_epi16(load16_epi16(crp + 16 * h), c128), ch[0][h], ch[1][h], ch[2][h]);
  }
  // packus (the clamp) works per lane: [0-7 16-23 | 8-15 24-31]; the permute gives lane 0 pixels
  // 0-15 and lane 1 pixels 16-31, each lane then interleaved on its own.
  __m256i bytes[3];
  for (int c = 0; c < 3; ++c) bytes[c] = _mm256_permute4x64_epi64(_mm256_packus_epi16(ch[c][0], ch[c][1]), 0xD8);
  for (int third = 0; third < 3; ++third) {
    const auto* m = reinterpret_cast<const __m128i*>(kMasks.mask[third]);
    const __m256i v = _mm256_or_si256(_mm256_or_si256(_mm256_shuffle_epi8(bytes[0], _mm256_broadcastsi128_si256(_mm_load_si128(m))),
                                                      _mm256_shuffle_epi8(bytes[1], _mm256_broadcastsi128_si256(_mm_load_si128(m + 1)))),
                                      _mm256_shuffle_epi8(bytes[2], _mm256_broadcastsi128_si256(_mm_load_si128(m + 2))));
    auto* lo = reinterpret_cast<__m128i*>(out + 16 * third);
    auto* hi = reinterpret_cast<__m128i*>(out + 48 + 16 * third);
    if constexpr (kStream) {
      _mm_stream_si128(lo, _mm256_castsi256_si128(v));
      _mm_stream_si128(hi, _mm256_extracti128_si256(v, 1));
    } else {
      _mm_storeu_si128(lo, _mm256_castsi256_si128(v));
      _mm_storeu_si128(hi, _mm256_extracti128_si256(v, 1));
    }
  }
}

// One row: 32-pixel steps, the rest through the scalar loop.
template <bool kStream>
__attribute__((target("avx2"))) void ycbcr_row_to_rgb_avx2(const uint8_t* yp, const uint8_t* cbp, const uint8_t* crp, int width,
                                                           uint8_t* out) {
  int i = 0;
  for (; i + 32 <= width; i += 32) ycbcr32_to_rgb<kStream>(yp + i, cbp + i, crp + i, out + 3 * i);
  if (i < width) {
    alignas(32) uint8_t rr[32], gg[32], bb[32];
    ycbcr_row_scalar(yp + i, cbp + i, crp + i, width - i, rr, gg, bb);
    interleave_rgb_scalar(rr, gg, bb, width - i, out + 3 * i);
  }
}

// GCC 12's AVX-512 headers start some intrinsics from an uninitialised vector
// (_mm512_undefined_epi32), which -Wuninitialized flags wherever one is inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define SLIP_AVX512 __attribute__((target("avx2,avx512f,avx512bw,avx512vbmi")))

// AVX-512 (BW, and VBMI for the byte permutes): 64 pixels per step, the AVX2 step's arithmetic
// on 32 lanes, then the interleave into RGB as two-source byte permutes: output byte k of a
// 64-byte third is channel k % 3 of pixel k / 3; R and G come in one vpermt2b, B in a masked
// vpermb. Half the instructions per pixel of the AVX2 step's pshufb and or cascade.
struct InterleaveIndices512 {
  alignas(64) uint8_t red_green[3][64];  // [third][byte]: R pixel p as p, G pixel p as 64 + p
  alignas(64) uint8_t blue[3][64];
  uint64_t blue_mask[3] = {};
  constexpr InterleaveIndices512() : red_green{}, blue{} {
    for (int third = 0; third < 3; ++third)
      for (int j = 0; j < 64; ++j) {
        const int k = third * 64 + j, pixel = k / 3, channel = k % 3;
        red_green[third][j] = static_cast<uint8_t>(channel == 1 ? 64 + pixel : pixel);
        blue[third][j] = static_cast<uint8_t>(pixel);
        if (channel == 2) blue_mask[third] |= uint64_t{1} << j;
      }
  }
};
constexpr InterleaveIndices512 kInterleave512;

// 32 pixels' bytes widened to int16; only the first `count` read (the rest 0) when kPartial.
template <bool kPartial>
SLIP_AVX512 inline __m512i load32_epi16(const uint8_t* p, int count) {
  if constexpr (kPartial) {
    const __mmask64 mask = count >= 32 ? 0xFFFFFFFFu : count <= 0 ? 0 : (__mmask64{1} << count) - 1;
    return _mm512_cvtepu8_epi16(_mm512_castsi512_si256(_mm512_maskz_loadu_epi8(mask, p)));  // BW, no VL needed
  }
  return _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Channels of 32 pixels (int16, in order): ycc16_to_rgb16 on 32 lanes.
SLIP_AVX512 inline void ycc32_to_rgb32(__m512i l, __m512i cb, __m512i cr, __m512i& r, __m512i& g, __m512i& b) {
  const __m512i half = _mm512_set1_epi32(kYccHalf);
  const __m512i k_g = _mm512_set1_epi32(madd_pair(-kCbG, kCrGRest));
  r = _mm512_add_epi16(_mm512_add_epi16(l, cr), _mm512_mulhrs_epi16(cr, _mm512_set1_epi16(kCrRHalf)));
  b = _mm512_add_epi16(_mm512_add_epi16(l, _mm512_add_epi16(cb, cb)), _mm512_mulhrs_epi16(cb, _mm512_set1_epi16(kCbBHalf)));
  const __m512i g_lo = _mm512_srai_epi32(_mm512_add_epi32(_mm512_madd_epi16(_mm512_unpacklo_epi16(cb, cr), k_g), half), kYccShift);
  const __m512i g_hi = _mm512_srai_epi32(_mm512_add_epi32(_mm512_madd_epi16(_mm512_unpackhi_epi16(cb, cr), k_g), half), kYccShift);
  g = _mm512_add_epi16(_mm512_sub_epi16(l, cr), _mm512_packs_epi32(g_lo, g_hi));
}

// The first `bytes` (1-64) of v at o: streamed in 16-byte pieces when o is 16-byte aligned
// (one 64-byte store when it is 64-byte aligned and v whole), the rest plain (masked) stores.
SLIP_AVX512 inline void store_rgb64(uint8_t* o, __m512i v, int bytes, int alignment) {
  if (alignment == 64 && bytes == 64) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(o), v);
    return;
  }
  int streamed = 0;
  if (alignment != 0) {
    auto* q = reinterpret_cast<__m128i*>(o);
    if (bytes >= 16) _mm_stream_si128(q, _mm512_castsi512_si128(v));
    if (bytes >= 32) _mm_stream_si128(q + 1, _mm512_extracti32x4_epi32(v, 1));
    if (bytes >= 48) _mm_stream_si128(q + 2, _mm512_extracti32x4_epi32(v, 2));
    if (bytes >= 64) _mm_stream_si128(q + 3, _mm512_extracti32x4_epi32(v, 3));
    streamed = bytes & ~15;
  }
  if (streamed < bytes) {
    const __mmask64 mask = (bytes == 64 ? ~__mmask64{0} : (__mmask64{1} << bytes) - 1) & ~((__mmask64{1} << streamed) - 1);
    _mm512_mask_storeu_epi8(o, mask, v);
  }
}

// 64 pixels of one row (the first `pixels` when kPartial) to RGB at `out`.
template <bool kPartial>
SLIP_AVX512 inline void ycbcr64_to_rgb(const uint8_t* yp, const uint8_t* cbp, const uint8_t* crp, uint8_t* out, int alignment,
                                       int pixels = 64) {
  const __m512i c128 = _mm512_set1_epi16(128);
  __m512i ch[3][2];  // [R, G, B][pixels 0-31, 32-63] as int16
  for (int h = 0; h < 2; ++h) {
    const int count = pixels - 32 * h;
    if (kPartial && count <= 0) {  // a tail of at most 32 pixels (96 and 224 px crops end in one): half the work
      ch[0][h] = ch[1][h] = ch[2][h] = _mm512_setzero_si512();
      continue;
    }
    ycc32_to_rgb32(load32_epi16<kPartial>(yp + 32 * h, count), _mm512_sub_epi16(load32_epi16<kPartial>(cbp + 32 * h, count), c128),
                   _mm512_sub_epi16(load32_epi16<kPartial>(crp + 32 * h, count), c128), ch[0][h], ch[1][h], ch[2][h]);
  }
  // packus (the clamp) works per 128-bit lane: lane i holds pixels 8i-8i+7 then 32+8i-32+8i+7;
  // the qword permute puts them in order.
  const __m512i order = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
  __m512i bytes[3];
  for (int c = 0; c < 3; ++c) bytes[c] = _mm512_permutexvar_epi64(order, _mm512_packus_epi16(ch[c][0], ch[c][1]));
  for (int third = 0; third < 3; ++third) {
    const int third_bytes = kPartial ? std::min(64, 3 * pixels - 64 * third) : 64;
    if (third_bytes <= 0) break;
    __m512i v = _mm512_permutex2var_epi8(bytes[0], _mm512_load_si512(kInterleave512.red_green[third]), bytes[1]);
    v = _mm512_mask_permutexvar_epi8(v, kInterleave512.blue_mask[third], _mm512_load_si512(kInterleave512.blue[third]), bytes[2]);
    store_rgb64(out + 64 * third, v, third_bytes, alignment);
  }
}

// One row: 64-pixel steps, then one partial step (masked loads) for the rest. Each step moves
// the output by 192 bytes, a multiple of 64: a row's stores keep its start's alignment.
SLIP_AVX512 void ycbcr_row_to_rgb_avx512(const uint8_t* yp, const uint8_t* cbp, const uint8_t* crp, int width, uint8_t* out, bool stream) {
  const auto address = reinterpret_cast<uintptr_t>(out);
  const int alignment = !stream ? 0 : address % 64 == 0 ? 64 : address % 16 == 0 ? 16 : 0;
  int i = 0;
  for (; i + 64 <= width; i += 64) ycbcr64_to_rgb<false>(yp + i, cbp + i, crp + i, out + 3 * i, alignment);
  if (i < width) ycbcr64_to_rgb<true>(yp + i, cbp + i, crp + i, out + 3 * i, alignment, width - i);
}

#undef SLIP_AVX512
#pragma GCC diagnostic pop
#endif

}  // namespace

void ycbcr_planes_to_rgb(const uint8_t* yp, const uint8_t* cbp, const uint8_t* crp, size_t stride, int width, int height, uint8_t* out,
                         size_t out_stride, SimdLevel kernels) {
  // Streaming stores: the engine's crops land in batch buffers far larger than the caches.
  const bool stream = reinterpret_cast<uintptr_t>(out) % 16 == 0 && out_stride % 16 == 0;
  kernels = std::min(kernels, active_simd_level());
#if defined(__x86_64__)
  if (kernels == SimdLevel::avx512) {
    for (int y = 0; y < height; ++y) {
      const size_t row = static_cast<size_t>(y) * stride;
      ycbcr_row_to_rgb_avx512(yp + row, cbp + row, crp + row, width, out + static_cast<size_t>(y) * out_stride, stream);
    }
    if (stream) _mm_sfence();  // streaming stores are weakly ordered: visible before the batch is handed over
    return;
  }
  if (kernels == SimdLevel::avx2) {
    for (int y = 0; y < height; ++y) {
      const size_t row = static_cast<size_t>(y) * stride;
      uint8_t* o = out + static_cast<size_t>(y) * out_stride;
      if (stream)
        ycbcr_row_to_rgb_avx2<true>(yp + row, cbp + row, crp + row, width, o);
      else
        ycbcr_row_to_rgb_avx2<false>(yp + row, cbp + row, crp + row, width, o);
    }
    if (stream) _mm_sfence();  // streaming stores are weakly ordered: visible before the batch is handed over
    return;
  }
#else
  // No streaming stores off x86-64.
  (void)stream;
#endif
  constexpr int kChunk = 256;
  alignas(32) uint8_t rr[kChunk], gg[kChunk], bb[kChunk];
  const Interleave interleave_rgb = interleave_for(kernels);
  for (int y = 0; y < height; ++y) {
    const size_t row = static_cast<size_t>(y) * stride;
    for (int start = 0; start < width; start += kChunk) {
      const int m = std::min(kChunk, width - start);
      ycbcr_row_scalar(yp + row + start, cbp + row + start, crp + row + start, m, rr, gg, bb);
      interleave_rgb(rr, gg, bb, m, out + static_cast<size_t>(y) * out_stride + static_cast<size_t>(start) * 3);
    }
  }
}

namespace {

// Sums `rows` rows of a plane over columns [c0, c1) into sums[0..c1-c0); rows past the plane's
// last row replicate it.
void sum_rows(const uint8_t* plane, int plane_width, int plane_height, int first_row, int rows, int c0, int c1, uint16_t* sums) {
  const int n = c1 - c0;
  std::fill_n(sums, n, uint16_t{0});
  for (int k = 0; k < rows; ++k) {
    const uint8_t* row = plane + static_cast<size_t>(std::min(first_row + k, plane_height - 1)) * plane_width + c0;
    for (int i = 0; i < n; ++i) sums[i] = static_cast<uint16_t>(sums[i] + row[i]);
  }
}

}  // namespace

void yuv420_region_to_rgb_reduced(const uint8_t* yp, int width, int height, int d, int rx0, int ry0, int rx1, int ry1, uint8_t* out,
                                  size_t stride, std::vector<uint16_t>& scratch) {
  const int cw = width / 2, ch = height / 2, h = d / 2;
  const uint8_t* up = yp + static_cast<size_t>(width) * height;
  const uint8_t* vp = up + static_cast<size_t>(cw) * ch;
  // Columns of the full-resolution planes the region covers (clipped; the rest replicates).
  const int l0 = rx0 * d, l1 = std::min(rx1 * d, width);
  const int c0 = rx0 * h, c1 = std::min(rx1 * h, cw);
  scratch.resize(static_cast<size_t>(l1 - l0) + 2 * static_cast<size_t>(c1 - c0));
  uint16_t* ysum = scratch.data();
  uint16_t* usum = ysum + (l1 - l0);
  uint16_t* vsum = usum + (c1 - c0);
  const int luma_area = d * d, chroma_area = h * h;
  for (int ry = ry0; ry < ry1; ++ry) {
    sum_rows(yp, width, height, ry * d, d, l0, l1, ysum);
    sum_rows(up, cw, ch, ry * h, h, c0, c1, usum);
    sum_rows(vp, cw, ch, ry * h, h, c0, c1, vsum);
    uint8_t* o = out + static_cast<size_t>(ry - ry0) * stride;
    for (int rx = rx0; rx < rx1; ++rx, o += 3) {
      int ys = 0, us = 0, vs = 0;
      for (int k = 0; k < d; ++k) ys += ysum[std::min(rx * d + k, l1 - 1) - l0];
      for (int k = 0; k < h; ++k) {
        const int c = std::min(rx * h + k, c1 - 1) - c0;
        us += usum[c];
        vs += vsum[c];
      }
      const int u = (us + chroma_area / 2) / chroma_area, v = (vs + chroma_area / 2) / chroma_area;
      yuv_to_rgb_pixel((ys + luma_area / 2) / luma_area, u - 128, v - 128, o);
    }
  }
}

}  // namespace detail

uint64_t yuv420_payload_size(uint32_t width, uint32_t height) noexcept {
  const uint64_t w = width + (width & 1u), h = height + (height & 1u);
  return w * h * 3 / 2;
}

Yuv420Image rgb_to_yuv420(const RgbImage& rgb) {
  if (rgb.width == 0 || rgb.height == 0) throw Error(Errc::bad_input, "cannot convert an empty image to YUV420");
  if (rgb.pixels.size() != uint64_t{rgb.width} * rgb.height * 3)
    throw Error(Errc::bad_input, "RGB buffer of " + std::to_string(rgb.pixels.size()) + " bytes does not match " +
                                     std::to_string(rgb.width) + "x" + std::to_string(rgb.height));
  Yuv420Image out;
  out.width = rgb.width + (rgb.width & 1u);
  out.height = rgb.height + (rgb.height & 1u);
  const size_t w = out.width, h = out.height;
  out.planes.resize(w * h * 3 / 2);
  auto* y_plane = reinterpret_cast<uint8_t*>(out.planes.data());
  uint8_t* u_plane = y_plane + w * h;
  uint8_t* v_plane = u_plane + (w / 2) * (h / 2);
  const size_t src_stride = static_cast<size_t>(rgb.width) * 3;
  for (size_t y = 0; y < h; y += 2) {
    const uint8_t* row0 = rgb.pixels.data() + y * src_stride;
    // Row y+1 replicates the last row when the height is odd.
    const uint8_t* row1 = rgb.pixels.data() + std::min<size_t>(y + 1, rgb.height - 1) * src_stride;
    detail::rgb_row_pair_to_yuv420(row0, row1, rgb.width, out.width, y_plane + y * w, y_plane + (y + 1) * w, u_plane + (y / 2) * (w / 2),
                                   v_plane + (y / 2) * (w / 2));
  }
  return out;
}

RgbImage yuv420_to_rgb(std::span<const std::byte> payload, uint32_t width, uint32_t height) {
  if (width == 0 || height == 0 || width % 2 || height % 2 || payload.size() != uint64_t{width} * height * 3 / 2)
    throw Error(Errc::bad_input, "YUV420 payload of " + std::to_string(payload.size()) + " bytes does not match " + std::to_string(width) +
                                     "x" + std::to_string(height));
  RgbImage out;
  out.width = width;
  out.height = height;
  out.pixels.resize(uint64_t{width} * height * 3);
  detail::yuv420_region_to_rgb(reinterpret_cast<const uint8_t*>(payload.data()), static_cast<int>(width), static_cast<int>(height), 0, 0,
                               static_cast<int>(width), static_cast<int>(height), out.pixels.data(), static_cast<size_t>(width) * 3);
  return out;
}

}  // namespace slip
