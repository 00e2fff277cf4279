// The planar resampler's passes (vertical kernels, transposes, row gathers) and resample_plane();
// the weights they apply come from plan_axis (resample_weights.cpp).
#include "decode/resample_planar.hpp"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "util/cpu.hpp"
#include "util/scratch.hpp"

namespace slip::detail {
namespace {

inline uint8_t clamp_q14(int32_t s) {
  s >>= kPlaneCoeffBits;
  return static_cast<uint8_t>(s < 0 ? 0 : s > 255 ? 255 : s);
}

// Output row r = sum over taps j of k[r][j] * input row (bounds[2r] - row_offset + j), for
// columns [0, width). Rows of `in` are contiguous bytes: this one kernel serves both
// passes (the horizontal pass runs on a transposed copy).
void vertical_columns_scalar(const uint8_t* in, size_t in_stride, int width, const int32_t* bounds, const int16_t* coeffs, int ksize,
                             int row_offset, int rows, uint8_t* out, ptrdiff_t out_stride) {
  for (int r = 0; r < rows; ++r) {
    const uint8_t* base = in + static_cast<size_t>(bounds[2 * r] - row_offset) * in_stride;
    const int n = bounds[2 * r + 1];
    const int16_t* k = coeffs + static_cast<size_t>(r) * ksize;
    uint8_t* o = out + r * out_stride;
    for (int x = 0; x < width; ++x) {
      int32_t s = 1 << (kPlaneCoeffBits - 1);
      for (int j = 0; j < n; ++j) s += base[static_cast<size_t>(j) * in_stride + x] * k[j];
      o[x] = clamp_q14(s);
    }
  }
}

#if defined(__x86_64__)
// AVX2: two taps per multiply-add, the two rows' bytes interleaved into 16-bit pairs against
// a broadcast coefficient pair. Same integer sums as the scalar kernel.
//
// 32 columns per step: the in-lane unpacks put columns [0-3 | 16-19], [4-7 | 20-23],
// [8-11 | 24-27], [12-15 | 28-31] in the four sums, and the in-lane packs put them back in order.
// kTaps > 0: the tap count at compile time (see vertical_step64).
template <int kTaps>
__attribute__((target("avx2"))) inline __m128i vertical_step16(const uint8_t* base, size_t in_stride, int taps, const int16_t* k) {
  const int n = kTaps > 0 ? kTaps : taps;
  const __m256i half = _mm256_set1_epi32(1 << (kPlaneCoeffBits - 1));
  const __m128i zero = _mm_setzero_si128();
  __m256i acc0 = half, acc1 = half;
  int j = 0;
  for (; j + 2 <= n; j += 2) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + static_cast<size_t>(j) * in_stride));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + static_cast<size_t>(j + 1) * in_stride));
    const __m256i kk = _mm256_set1_epi32(madd_pair(k[j], k[j + 1]));
    acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, b)), kk));
    acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(a, b)), kk));
  }
  if (j < n) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + static_cast<size_t>(j) * in_stride));
    const __m256i kk = _mm256_set1_epi32(static_cast<uint16_t>(k[j]));
    acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, zero)), kk));
    acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(a, zero)), kk));
  }
  // acc0: columns 0-7, acc1: 8-15; packs works per 128-bit lane, the permute restores order.
  const __m256i words = _mm256_permute4x64_epi64(
      _mm256_packs_epi32(_mm256_srai_epi32(acc0, kPlaneCoeffBits), _mm256_srai_epi32(acc1, kPlaneCoeffBits)), 0xD8);
  return _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
}

// Byte pairs (columns [0-7 | 16-23] in `lo`, [8-15 | 24-31] in `hi`) times a coefficient pair.
__attribute__((target("avx2"))) inline void accumulate_pairs(__m256i lo, __m256i hi, __m256i kk, __m256i* acc) {
  const __m256i zero = _mm256_setzero_si256();
  acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(_mm256_unpacklo_epi8(lo, zero), kk));
  acc[1] = _mm256_add_epi32(acc[1], _mm256_madd_epi16(_mm256_unpackhi_epi8(lo, zero), kk));
  acc[2] = _mm256_add_epi32(acc[2], _mm256_madd_epi16(_mm256_unpacklo_epi8(hi, zero), kk));
  acc[3] = _mm256_add_epi32(acc[3], _mm256_madd_epi16(_mm256_unpackhi_epi8(hi, zero), kk));
}

template <int kTaps>
__attribute__((target("avx2"))) inline __m256i vertical_step32(const uint8_t* base, size_t in_stride, int taps, const int16_t* k) {
  const int n = kTaps > 0 ? kTaps : taps;
  const __m256i zero = _mm256_setzero_si256();
  __m256i acc[4];
  for (auto& a : acc) a = _mm256_set1_epi32(1 << (kPlaneCoeffBits - 1));
  int j = 0;
  for (; j + 2 <= n; j += 2) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + static_cast<size_t>(j) * in_stride));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + static_cast<size_t>(j + 1) * in_stride));
    const __m256i kk = _mm256_set1_epi32(madd_pair(k[j], k[j + 1]));
    accumulate_pairs(_mm256_unpacklo_epi8(a, b), _mm256_unpackhi_epi8(a, b), kk, acc);
  }
  if (j < n) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + static_cast<size_t>(j) * in_stride));
    const __m256i kk = _mm256_set1_epi32(static_cast<uint16_t>(k[j]));
    accumulate_pairs(_mm256_unpacklo_epi8(a, zero), _mm256_unpackhi_epi8(a, zero), kk, acc);
  }
  for (auto& a : acc) a = _mm256_srai_epi32(a, kPlaneCoeffBits);
  // acc[0], acc[1]: columns [0-3 | 16-19], [4-7 | 20-23] -> words [0-7 | 16-23]; likewise 8-15 | 24-31.
  return _mm256_packus_epi16(_mm256_packs_epi32(acc[0], acc[1]), _mm256_packs_epi32(acc[2], acc[3]));
}

// One output row of width >= 16. Widths past a multiple of the step end with one more full step
// over the last columns (it rewrites a few with the same values): a scalar tail cost 6% of a
// multi-crop epoch.
template <int kTaps>
__attribute__((target("avx2"))) void vertical_row_avx2(const uint8_t* base, size_t in_stride, int width, int n, const int16_t* k,
                                                       uint8_t* o) {
  if (width >= 32) {
    for (int step = 0; step < width; step += 32) {
      const int x = std::min(step, width - 32);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + x), vertical_step32<kTaps>(base + x, in_stride, n, k));
    }
  } else {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o), vertical_step16<kTaps>(base, in_stride, n, k));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + width - 16), vertical_step16<kTaps>(base + width - 16, in_stride, n, k));
  }
}

// A row kernel instantiated for the common tap counts (bicubic at a 2.5x shrink: 11), the
// run-time loop past them.
template <template <int> class Row>
void by_taps(int n, const uint8_t* base, size_t in_stride, int width, const int16_t* k, uint8_t* o) {
  using Fn = void (*)(const uint8_t*, size_t, int, int, const int16_t*, uint8_t*);
  static constexpr Fn kRows[] = {Row<0>::run, Row<0>::run, Row<2>::run, Row<3>::run,  Row<4>::run,  Row<5>::run, Row<6>::run,
                                 Row<7>::run, Row<8>::run, Row<9>::run, Row<10>::run, Row<11>::run, Row<12>::run};
  kRows[n >= 0 && n <= 12 ? n : 0](base, in_stride, width, n, k, o);
}

template <int kTaps>
struct RowAvx2 {
  static void run(const uint8_t* base, size_t in_stride, int width, int n, const int16_t* k, uint8_t* o) {
    vertical_row_avx2<kTaps>(base, in_stride, width, n, k, o);
  }
};

__attribute__((target("avx2"))) void vertical_columns_avx2(const uint8_t* in, size_t in_stride, int width, const int32_t* bounds,
                                                           const int16_t* coeffs, int ksize, int row_offset, int rows, uint8_t* out,
                                                           ptrdiff_t out_stride) {
  for (int r = 0; r < rows; ++r) {
    const uint8_t* base = in + static_cast<size_t>(bounds[2 * r] - row_offset) * in_stride;
    by_taps<RowAvx2>(bounds[2 * r + 1], base, in_stride, width, coeffs + static_cast<size_t>(r) * ksize, out + r * out_stride);
  }
}

// GCC 12's AVX-512 headers build their unused operands from a self-initialised variable
// (_mm512_undefined_epi32), which -Wuninitialized (and -Wmaybe-uninitialized) flags wherever an
// intrinsic is inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// AVX-512 (F, BW, VNNI; VBMI for the row gathers' vpermb): 64 columns per step with the same
// integer sums as the AVX2 step (vpdpwssd is pmaddwd and the add in one instruction, without
// saturation), so the same bytes; each unpack moves 64 bytes, half the shuffles per column.
// Measured here (Xeon, rdtsc, min of 300 calls): a 250 -> 224 plane 20% faster, 112 -> 224 18%,
// 186 -> 96 26%, transposes included.
#define SLIP_AVX512 __attribute__((target("avx2,avx512f,avx512bw,avx512vnni,avx512vbmi")))

SLIP_AVX512 inline void accumulate_pairs512(__m512i lo, __m512i hi, __m512i kk, __m512i* acc) {
  const __m512i zero = _mm512_setzero_si512();
  acc[0] = _mm512_dpwssd_epi32(acc[0], _mm512_unpacklo_epi8(lo, zero), kk);
  acc[1] = _mm512_dpwssd_epi32(acc[1], _mm512_unpackhi_epi8(lo, zero), kk);
  acc[2] = _mm512_dpwssd_epi32(acc[2], _mm512_unpacklo_epi8(hi, zero), kk);
  acc[3] = _mm512_dpwssd_epi32(acc[3], _mm512_unpackhi_epi8(hi, zero), kk);
}

// kTaps > 0: the tap count at compile time, the loop unrolled, the sums' short dependency
// chains no longer behind a run-time loop. Measured here (rdtsc, min of 300 calls, whole plane,
// alternating builds): 250 -> 224 33.8k -> 29.3k ticks, 400 -> 224 48.6k -> 42.1k; with the
// AVX2 kernels 77.9k -> 61.1k and 118k -> 98k.
template <int kTaps>
SLIP_AVX512 inline __m512i vertical_step64(const uint8_t* base, size_t in_stride, int taps, const int16_t* k) {
  const int n = kTaps > 0 ? kTaps : taps;
  const __m512i zero = _mm512_setzero_si512();
  __m512i acc[4];
  for (auto& a : acc) a = _mm512_set1_epi32(1 << (kPlaneCoeffBits - 1));
  int j = 0;
  for (; j + 2 <= n; j += 2) {
    const __m512i a = _mm512_loadu_si512(base + static_cast<size_t>(j) * in_stride);
    const __m512i b = _mm512_loadu_si512(base + static_cast<size_t>(j + 1) * in_stride);
    accumulate_pairs512(_mm512_unpacklo_epi8(a, b), _mm512_unpackhi_epi8(a, b), _mm512_set1_epi32(madd_pair(k[j], k[j + 1])), acc);
  }
  if (j < n) {
    const __m512i a = _mm512_loadu_si512(base + static_cast<size_t>(j) * in_stride);
    accumulate_pairs512(_mm512_unpacklo_epi8(a, zero), _mm512_unpackhi_epi8(a, zero), _mm512_set1_epi32(static_cast<uint16_t>(k[j])), acc);
  }
  // (The zero-masking form: GCC 12's plain _mm512_srai_epi32 trips -Wuninitialized in its header.)
  for (auto& a : acc) a = _mm512_maskz_srai_epi32(0xFFFF, a, kPlaneCoeffBits);
  // Every unpack and pack works within 128-bit lanes, so the packs put each lane's columns back
  // in order, as in vertical_step32.
  return _mm512_packus_epi16(_mm512_packs_epi32(acc[0], acc[1]), _mm512_packs_epi32(acc[2], acc[3]));
}

// One output row of width >= 64: 64-column steps, the last one overlapping the columns before
// (or a 32-column one when at most 32 are left).
template <int kTaps>
SLIP_AVX512 void vertical_row_avx512(const uint8_t* base, size_t in_stride, int width, int n, const int16_t* k, uint8_t* o) {
  int x = 0;
  for (; x + 64 <= width; x += 64) _mm512_storeu_si512(o + x, vertical_step64<kTaps>(base + x, in_stride, n, k));
  if (x < width) {
    if (width - x <= 32)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + width - 32), vertical_step32<kTaps>(base + width - 32, in_stride, n, k));
    else
      _mm512_storeu_si512(o + width - 64, vertical_step64<kTaps>(base + width - 64, in_stride, n, k));
  }
}

template <int kTaps>
struct RowAvx512 {
  static void run(const uint8_t* base, size_t in_stride, int width, int n, const int16_t* k, uint8_t* o) {
    vertical_row_avx512<kTaps>(base, in_stride, width, n, k, o);
  }
};

SLIP_AVX512 void vertical_columns_avx512(const uint8_t* in, size_t in_stride, int width, const int32_t* bounds, const int16_t* coeffs,
                                         int ksize, int row_offset, int rows, uint8_t* out, ptrdiff_t out_stride) {
  for (int r = 0; r < rows; ++r) {
    const uint8_t* base = in + static_cast<size_t>(bounds[2 * r] - row_offset) * in_stride;
    const int n = bounds[2 * r + 1];
    const int16_t* k = coeffs + static_cast<size_t>(r) * ksize;
    uint8_t* o = out + r * out_stride;
    if (width < 64) {
      by_taps<RowAvx2>(n, base, in_stride, width, k, o);
      continue;
    }
    by_taps<RowAvx512>(n, base, in_stride, width, k, o);
  }
}

#pragma GCC diagnostic pop
#else
// Not x86-64: the level is scalar, so vertical_columns runs the scalar kernel.
constexpr auto vertical_columns_avx2 = vertical_columns_scalar;
constexpr auto vertical_columns_avx512 = vertical_columns_scalar;
#endif

void vertical_columns(SimdLevel kernels, const uint8_t* in, size_t in_stride, int width, const PlaneAxis& axis, int row_offset, int rows,
                      uint8_t* out, ptrdiff_t out_stride) {
  const auto run = width < 16 || kernels < SimdLevel::avx2 ? vertical_columns_scalar
                   : kernels == SimdLevel::avx2            ? vertical_columns_avx2
                                                           : vertical_columns_avx512;
  run(in, in_stride, width, axis.bounds.data(), axis.coeffs.data(), axis.ksize, row_offset, rows, out, out_stride);
}

#if defined(__x86_64__)
// One 8x8 byte block through three rounds of SSE2 unpacks.
inline void transpose8x8(const uint8_t* in, size_t in_stride, uint8_t* out, size_t out_stride) {
  __m128i r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + i * in_stride));
  const __m128i t0 = _mm_unpacklo_epi8(r[0], r[1]), t1 = _mm_unpacklo_epi8(r[2], r[3]);
  const __m128i t2 = _mm_unpacklo_epi8(r[4], r[5]), t3 = _mm_unpacklo_epi8(r[6], r[7]);
  const __m128i u0 = _mm_unpacklo_epi16(t0, t1), u1 = _mm_unpackhi_epi16(t0, t1);
  const __m128i u2 = _mm_unpacklo_epi16(t2, t3), u3 = _mm_unpackhi_epi16(t2, t3);
  const __m128i cols[4] = {_mm_unpacklo_epi32(u0, u2), _mm_unpackhi_epi32(u0, u2), _mm_unpacklo_epi32(u1, u3), _mm_unpackhi_epi32(u1, u3)};
  for (int i = 0; i < 4; ++i) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + (2 * i) * out_stride), cols[i]);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + (2 * i + 1) * out_stride), _mm_srli_si128(cols[i], 8));
  }
}
#else
// A kRows x kColumns byte block, byte by byte (the compiler vectorises it).
template <size_t kRows, size_t kColumns>
void transpose_block(const uint8_t* in, size_t in_stride, uint8_t* out, size_t out_stride) {
  for (size_t y = 0; y < kRows; ++y)
    for (size_t x = 0; x < kColumns; ++x) out[x * out_stride + y] = in[y * in_stride + x];
}
constexpr auto transpose8x8 = transpose_block<8, 8>;
#endif

#if defined(__x86_64__)

// A 16-row x 32-column block: each 128-bit lane is a 16x16 transpose (four rounds of in-lane
// unpacks), lane 0 for columns 0-15 and lane 1 for columns 16-31. Shuffles are the bottleneck
// (one port): this does half as many per byte as 8x8 blocks in SSE2.
__attribute__((target("avx2"))) void transpose16x32(const uint8_t* in, size_t in_stride, uint8_t* out, size_t out_stride) {
  __m256i r[16], t[16], u[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i * in_stride));
  for (int i = 0; i < 8; ++i) {  // t[i]: 16-bit units (rows 2i, 2i+1) of columns 0-7; t[i + 8]: of columns 8-15
    t[i] = _mm256_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
    t[i + 8] = _mm256_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // u[4g + i]: 32-bit units (rows 4i..4i+3) of columns 4g..4g+3
    u[i] = _mm256_unpacklo_epi16(t[2 * i], t[2 * i + 1]);
    u[i + 4] = _mm256_unpackhi_epi16(t[2 * i], t[2 * i + 1]);
    u[i + 8] = _mm256_unpacklo_epi16(t[2 * i + 8], t[2 * i + 9]);
    u[i + 12] = _mm256_unpackhi_epi16(t[2 * i + 8], t[2 * i + 9]);
  }
  for (int g = 0; g < 4; ++g) {
    const __m256i lo0 = _mm256_unpacklo_epi32(u[4 * g], u[4 * g + 1]), hi0 = _mm256_unpackhi_epi32(u[4 * g], u[4 * g + 1]);
    const __m256i lo1 = _mm256_unpacklo_epi32(u[4 * g + 2], u[4 * g + 3]), hi1 = _mm256_unpackhi_epi32(u[4 * g + 2], u[4 * g + 3]);
    const __m256i cols[4] = {_mm256_unpacklo_epi64(lo0, lo1), _mm256_unpackhi_epi64(lo0, lo1), _mm256_unpacklo_epi64(hi0, hi1),
                             _mm256_unpackhi_epi64(hi0, hi1)};
    for (int k = 0; k < 4; ++k) {
      const size_t c = (size_t{4} * static_cast<size_t>(g)) + static_cast<size_t>(k);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + c * out_stride), _mm256_castsi256_si128(cols[k]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (c + 16) * out_stride), _mm256_extracti128_si256(cols[k], 1));
    }
  }
}

#pragma GCC diagnostic push  // as for the AVX-512 kernels above
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// transpose16x32 on four 128-bit lanes: a 16-row x 64-column block, half the shuffles per byte.
SLIP_AVX512 void transpose16x64(const uint8_t* in, size_t in_stride, uint8_t* out, size_t out_stride) {
  __m512i r[16], t[16], u[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(in + i * in_stride);
  for (int i = 0; i < 8; ++i) {
    t[i] = _mm512_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
    t[i + 8] = _mm512_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    u[i] = _mm512_unpacklo_epi16(t[2 * i], t[2 * i + 1]);
    u[i + 4] = _mm512_unpackhi_epi16(t[2 * i], t[2 * i + 1]);
    u[i + 8] = _mm512_unpacklo_epi16(t[2 * i + 8], t[2 * i + 9]);
    u[i + 12] = _mm512_unpackhi_epi16(t[2 * i + 8], t[2 * i + 9]);
  }
  for (int g = 0; g < 4; ++g) {
    const __m512i lo0 = _mm512_unpacklo_epi32(u[4 * g], u[4 * g + 1]), hi0 = _mm512_unpackhi_epi32(u[4 * g], u[4 * g + 1]);
    const __m512i lo1 = _mm512_unpacklo_epi32(u[4 * g + 2], u[4 * g + 3]), hi1 = _mm512_unpackhi_epi32(u[4 * g + 2], u[4 * g + 3]);
    const __m512i cols[4] = {_mm512_unpacklo_epi64(lo0, lo1), _mm512_unpackhi_epi64(lo0, lo1), _mm512_unpacklo_epi64(hi0, hi1),
                             _mm512_unpackhi_epi64(hi0, hi1)};
    for (int k = 0; k < 4; ++k) {
      const size_t c = (size_t{4} * static_cast<size_t>(g)) + static_cast<size_t>(k);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + c * out_stride), _mm512_castsi512_si128(cols[k]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (c + 16) * out_stride), _mm512_extracti32x4_epi32(cols[k], 1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (c + 32) * out_stride), _mm512_extracti32x4_epi32(cols[k], 2));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (c + 48) * out_stride), _mm512_extracti32x4_epi32(cols[k], 3));
    }
  }
}

// The horizontal pass without transposes: each group of 16 outputs loads the 64 input bytes
// its taps read, and per tap pair one vpermb spreads each output's two input bytes into the
// 16-bit pair vpdpwssd multiplies by that output's coefficient pair: the integer sums of the
// other kernels, so the same bytes. It costs two shuffles per 16 outputs and tap pair where the
// transposed vertical kernel costs 2.5, and the two transposes (a third of the resampling) go.
// Measured here (rdtsc, min of 300 calls, one process, whole plane): 250 -> 224 55.0k -> 37.3k
// ticks, 112 -> 224 39.1k -> 23.7k, 186 -> 96 14.1k -> 10.1k; bicubic 400 -> 224 96.3k -> 68.9k.
constexpr __mmask64 kLowBytesOfWords = 0x5555555555555555ULL;

// The first output of row-gather group `group`.
inline int group_start(int group, int groups, int out_w) {
  const int whole = (out_w / 64) * 4;
  return group < whole ? 16 * group : out_w - (16 * (groups - group));
}

SLIP_AVX512 void plan_row_gathers(const PlaneAxis& axis, bool mirror, RowGatherPlan& plan) {
  const int out_w = axis.key.out_size;
  plan.key = axis.key;
  plan.mirror = mirror;
  plan.usable = false;
  int max_taps = 0;
  for (int o = 0; o < out_w; ++o) max_taps = std::max(max_taps, axis.bounds[(2 * static_cast<size_t>(o)) + 1]);
  plan.pairs = (max_taps + 1) / 2;
  // Whole blocks of 64 outputs, then the last out_w % 64 in as few groups of 16 as cover them,
  // ending at the last output (overlapping the block before by less than a group).
  plan.groups = ((out_w / 64) * 4) + ((out_w % 64) + 15) / 16;
  const auto entries = static_cast<size_t>(plan.groups) * static_cast<size_t>(plan.pairs);
  scratch_of(plan.window, static_cast<size_t>(plan.groups));
  scratch_of(plan.selectors, entries * 64);
  scratch_of(plan.coeff_pairs, entries * 16);
  const int first_column = axis.bounds[0];
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i last_byte = _mm512_set1_epi32(63);
  for (int group = 0; group < plan.groups; ++group) {
    const int start = group_start(group, plan.groups, out_w);
    const __m512i x = _mm512_add_epi32(_mm512_set1_epi32(start), lanes);
    const __m512i source = mirror ? _mm512_sub_epi32(_mm512_set1_epi32(out_w - 1), x) : x;
    const __m512i first = _mm512_i32gather_epi32(_mm512_slli_epi32(source, 1), axis.bounds.data(), 4);
    const __m512i count =
        _mm512_i32gather_epi32(_mm512_add_epi32(_mm512_slli_epi32(source, 1), _mm512_set1_epi32(1)), axis.bounds.data(), 4);
    const int window = _mm512_reduce_min_epi32(first);
    if (_mm512_reduce_max_epi32(_mm512_add_epi32(first, count)) - window > 64) return;  // too long a shrink: the transposed kernels
    plan.window[static_cast<size_t>(group)] = window - first_column;
    const __m512i relative = _mm512_sub_epi32(first, _mm512_set1_epi32(window));
    const __m512i coeff_row = _mm512_mullo_epi32(source, _mm512_set1_epi32(axis.ksize));
    for (int pair = 0; pair < plan.pairs; ++pair) {
      const size_t entry = (static_cast<size_t>(group) * static_cast<size_t>(plan.pairs)) + static_cast<size_t>(pair);
      // Taps past an output's count have coefficient 0; their selectors stay inside the 64 bytes.
      const __m512i lo = _mm512_min_epi32(_mm512_add_epi32(relative, _mm512_set1_epi32(2 * pair)), last_byte);
      const __m512i hi = _mm512_min_epi32(_mm512_add_epi32(relative, _mm512_set1_epi32((2 * pair) + 1)), last_byte);
      _mm512_storeu_si512(&plan.selectors[entry * 64], _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
      const __m512i taps = _mm512_add_epi32(coeff_row, _mm512_set1_epi32(2 * pair));
      _mm512_storeu_si512(&plan.coeff_pairs[entry * 16], _mm512_i32gather_epi32(taps, axis.coeffs.data(), 2));
    }
  }
  plan.usable = true;
}

// One group's 16 sums in each of kRows rows, shifted: the rows share the group's selector and
// coefficient loads, and their sums are independent chains of multiply-adds (one row's chain,
// 5 cycles a step, bounded the pass). kPairs > 0: the pair count at compile time (the loop
// unrolled, the sums kept in registers: the run-time loop cost twice as much at one or two pairs).
template <int kPairs, int kRows>
SLIP_AVX512 inline void gather_group(const uint8_t* const* rows, int window, const uint8_t* selectors, const int32_t* coeffs, int pairs,
                                     __m512i* sums) {
  __m512i source[kRows];
  for (int r = 0; r < kRows; ++r) {
    source[r] = _mm512_loadu_si512(rows[r] + window);
    sums[r] = _mm512_set1_epi32(1 << (kPlaneCoeffBits - 1));
  }
  const int n = kPairs > 0 ? kPairs : pairs;
  for (int p = 0; p < n; ++p) {
    const __m512i selector = _mm512_loadu_si512(selectors + (64 * p)), kk = _mm512_loadu_si512(coeffs + (16 * p));
    for (int r = 0; r < kRows; ++r)
      sums[r] = _mm512_dpwssd_epi32(sums[r], _mm512_maskz_permutexvar_epi8(kLowBytesOfWords, selector, source[r]), kk);
  }
  for (int r = 0; r < kRows; ++r) sums[r] = _mm512_maskz_srai_epi32(0xFFFF, sums[r], kPlaneCoeffBits);
}

// kRows rows of `in` (from the axis's first column) to rows of out_w outputs.
template <int kPairs, int kRows>
SLIP_AVX512 inline void gather_rows(const uint8_t* in, size_t in_stride, const RowGatherPlan& plan, int out_w, uint8_t* out,
                                    size_t out_stride) {
  // The packs leave output dword 4 * group + lane at 4 * lane + group.
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const auto entry_bytes = static_cast<size_t>(plan.pairs) * 64;
  const auto entry_coeffs = static_cast<size_t>(plan.pairs) * 16;
  const uint8_t* rows[kRows];
  for (int r = 0; r < kRows; ++r) rows[r] = in + (static_cast<size_t>(r) * in_stride);
  for (int group = 0; group < plan.groups; group += 4) {
    const int block_groups = std::min(4, plan.groups - group);
    __m512i sums[4][kRows];
    for (int g = 0; g < 4; ++g) {
      if (g < block_groups) {
        const size_t entry = static_cast<size_t>(group) + static_cast<size_t>(g);
        gather_group<kPairs, kRows>(rows, plan.window[entry], &plan.selectors[entry * entry_bytes], &plan.coeff_pairs[entry * entry_coeffs],
                                    plan.pairs, sums[g]);
      } else {
        for (int r = 0; r < kRows; ++r) sums[g][r] = _mm512_setzero_si512();
      }
    }
    const __mmask64 lanes = block_groups == 4 ? ~__mmask64{0} : (__mmask64{1} << (16 * block_groups)) - 1;
    const int start = group_start(group, plan.groups, out_w);
    for (int r = 0; r < kRows; ++r) {
      const __m512i bytes = _mm512_packus_epi16(_mm512_packs_epi32(sums[0][r], sums[1][r]), _mm512_packs_epi32(sums[2][r], sums[3][r]));
      _mm512_mask_storeu_epi8(out + (static_cast<size_t>(r) * out_stride) + start, lanes, _mm512_permutexvar_epi32(order, bytes));
    }
  }
}

// Rows of `in` (from the axis's first column) to rows of out_w outputs, two at a time; out_w >= 64.
template <int kPairs>
SLIP_AVX512 void horizontal_rows_avx512(const uint8_t* in, size_t in_stride, int rows, const RowGatherPlan& plan, int out_w, uint8_t* out,
                                        size_t out_stride) {
  int r = 0;
  for (; r + 4 <= rows; r += 4)
    gather_rows<kPairs, 4>(in + (static_cast<size_t>(r) * in_stride), in_stride, plan, out_w, out + (static_cast<size_t>(r) * out_stride),
                           out_stride);
  for (; r + 2 <= rows; r += 2)
    gather_rows<kPairs, 2>(in + (static_cast<size_t>(r) * in_stride), in_stride, plan, out_w, out + (static_cast<size_t>(r) * out_stride),
                           out_stride);
  if (r < rows)
    gather_rows<kPairs, 1>(in + (static_cast<size_t>(r) * in_stride), in_stride, plan, out_w, out + (static_cast<size_t>(r) * out_stride),
                           out_stride);
}

void horizontal_rows(const uint8_t* in, size_t in_stride, int rows, const RowGatherPlan& plan, int out_w, uint8_t* out, size_t out_stride) {
  // Up to 8 pairs: as many as 64 bytes hold for 16 outputs (bicubic to a 3.4x shrink).
  constexpr decltype(&horizontal_rows_avx512<0>) by_pairs[] = {
      horizontal_rows_avx512<0>, horizontal_rows_avx512<1>, horizontal_rows_avx512<2>, horizontal_rows_avx512<3>, horizontal_rows_avx512<4>,
      horizontal_rows_avx512<5>, horizontal_rows_avx512<6>, horizontal_rows_avx512<7>, horizontal_rows_avx512<8>};
  by_pairs[plan.pairs < 9 ? plan.pairs : 0](in, in_stride, rows, plan, out_w, out, out_stride);
}

#pragma GCC diagnostic pop
#undef SLIP_AVX512
#else
// Not x86-64: the level is scalar, so transpose_plane takes the 8x8 blocks and resample_plane
// the transposed passes; these stand in for the x86 kernels they name.
constexpr auto transpose16x32 = transpose_block<16, 32>;
constexpr auto transpose16x64 = transpose_block<16, 64>;
void plan_row_gathers(const PlaneAxis& axis, bool mirror, RowGatherPlan& plan) {
  plan.key = axis.key;
  plan.mirror = mirror;
  plan.usable = false;  // so horizontal_rows is never run
}
void horizontal_rows(const uint8_t*, size_t, int, const RowGatherPlan&, int, uint8_t*, size_t) {}
#endif

// Rows [y0, y1) x columns [x0, x1) in 8x8 blocks, the ragged edges byte by byte.
void transpose_region_8x8(const uint8_t* in, size_t in_stride, int x0, int x1, int y0, int y1, uint8_t* out, size_t out_stride) {
  const int x8 = x0 + ((x1 - x0) & ~7), y8 = y0 + ((y1 - y0) & ~7);
  for (int y = y0; y < y8; y += 8)
    for (int x = x0; x < x8; x += 8)
      transpose8x8(in + static_cast<size_t>(y) * in_stride + x, in_stride, out + static_cast<size_t>(x) * out_stride + y, out_stride);
  for (int y = y0; y < y1; ++y) {
    const int x_first = y < y8 ? x8 : x0;
    for (int x = x_first; x < x1; ++x) out[static_cast<size_t>(x) * out_stride + y] = in[static_cast<size_t>(y) * in_stride + x];
  }
}

}  // namespace

void transpose_plane(const uint8_t* in, size_t in_stride, int width, int height, uint8_t* out, size_t out_stride, SimdLevel kernels) {
  kernels = std::min(kernels, active_simd_level());
  if (kernels == SimdLevel::avx512 && width >= 64 && height >= 16) {
    for (int y0 = 0; y0 < height; y0 += 16) {
      const int y = std::min(y0, height - 16);
      for (int x0 = 0; x0 < width; x0 += 64) {
        const int x = std::min(x0, width - 64);
        transpose16x64(in + static_cast<size_t>(y) * in_stride + x, in_stride, out + static_cast<size_t>(x) * out_stride + y, out_stride);
      }
    }
    return;
  }
  if (kernels >= SimdLevel::avx2 && width >= 32 && height >= 16) {
    // The last block of each row and column of blocks overlaps the one before it instead of
    // leaving a ragged edge: it writes a few bytes twice, with the same values (the 8x8 and
    // byte-wise edge cost as much as a third of the AVX2 blocks on the multi-crop planes).
    for (int y0 = 0; y0 < height; y0 += 16) {
      const int y = std::min(y0, height - 16);
      for (int x0 = 0; x0 < width; x0 += 32) {
        const int x = std::min(x0, width - 32);
        transpose16x32(in + static_cast<size_t>(y) * in_stride + x, in_stride, out + static_cast<size_t>(x) * out_stride + y, out_stride);
      }
    }
    return;
  }
  transpose_region_8x8(in, in_stride, 0, width, 0, height, out, out_stride);  // smaller than one AVX2 block, or no AVX2
}

void resample_plane(const PlaneView& in, double x0, double y0, double x1, double y1, int out_w, int out_h, ResampleFilter filter,
                    PlaneResampleScratch& s, uint8_t* out, size_t out_stride, bool mirror) {
  plan_axis(s.vertical, {in.height, y0, y1, out_h, filter}, s.kernels);
  plan_axis(s.horizontal, {in.width, x0, x1, out_w, filter}, s.kernels);
  // The columns the horizontal taps read (the bounds grow with the output index).
  const int cx0 = s.horizontal.bounds[0];
  const int cx1 = s.horizontal.bounds[static_cast<size_t>(out_w - 1) * 2] + s.horizontal.bounds[static_cast<size_t>(out_w - 1) * 2 + 1];
  const int columns = cx1 - cx0;
  // Vertical first: out_h rows of the needed columns (and 64 bytes more: the row gathers read
  // whole 64-byte windows).
  uint8_t* const pass1 = scratch_of(s.pass1, (static_cast<size_t>(out_h) * columns) + 64);
  const SimdLevel kernels = std::min(s.kernels, active_simd_level());
  vertical_columns(kernels, in.data + cx0, in.stride, columns, s.vertical, 0, out_h, pass1, columns);
  if (kernels == SimdLevel::avx512 && out_w >= 64) {
    RowGatherPlan& gathers = s.row_gathers;
    if (!(gathers.key == s.horizontal.key && gathers.mirror == mirror)) plan_row_gathers(s.horizontal, mirror, gathers);
    if (gathers.usable) {
      horizontal_rows(pass1, static_cast<size_t>(columns), out_h, gathers, out_w, out, out_stride);
      return;
    }
  }
  // Transposed, the horizontal pass is the same contiguous kernel over columns instead of rows.
  uint8_t* const pass1_t = scratch_of(s.pass1_t, static_cast<size_t>(columns) * out_h);
  transpose_plane(pass1, static_cast<size_t>(columns), columns, out_h, pass1_t, static_cast<size_t>(out_h), kernels);
  uint8_t* const pass2 = scratch_of(s.pass2, static_cast<size_t>(out_w) * out_h);
  uint8_t* first = mirror ? pass2 + static_cast<size_t>(out_w - 1) * out_h : pass2;
  const ptrdiff_t step = mirror ? -static_cast<ptrdiff_t>(out_h) : static_cast<ptrdiff_t>(out_h);
  vertical_columns(kernels, pass1_t, static_cast<size_t>(out_h), out_h, s.horizontal, cx0, out_w, first, step);
  transpose_plane(pass2, static_cast<size_t>(out_h), out_h, out_w, out, out_stride, kernels);
}

}  // namespace slip::detail
