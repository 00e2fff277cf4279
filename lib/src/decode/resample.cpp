#include "decode/resample.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "util/cpu.hpp"

namespace slip::detail {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double bilinear_filter(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double bicubic_filter(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

inline uint8_t clip8(int32_t in) {
  if (in >= (1 << kPrecisionBits << 8)) return 255;
  if (in <= 0) return 0;
  return static_cast<uint8_t>(in >> kPrecisionBits);
}

}  // namespace

namespace {

// The filter is a template parameter so that it inlines (a call per tap cost more than the tap).
template <double (*fn)(double), int support_unit_int>
void precompute_axis_with(ResampleAxis& axis, int in_size, double in0, double in1, int out_size) {
  const double support_unit = support_unit_int;
  const double scale = (in1 - in0) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = support_unit * filterscale;
  const int ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  axis.ksize = ksize;
  axis.bounds.resize(static_cast<size_t>(out_size) * 2);
  axis.coeffs.resize(static_cast<size_t>(out_size) * ksize);
  axis.weights.resize(static_cast<size_t>(ksize));
  double* weights = axis.weights.data();
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    // Pillow's own truncating "rounding", kept for byte-exact results.
    int xmin = static_cast<int>(center - support + 0.5);  // NOLINT(bugprone-incorrect-roundings)
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);  // NOLINT(bugprone-incorrect-roundings)
    if (xmax > in_size) xmax = in_size;
    xmax = std::clamp(xmax - xmin, 0, ksize);
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double w = fn((x + xmin - center + 0.5) * ss);
      weights[x] = w;
      ww += w;
    }
    int32_t* k = &axis.coeffs[static_cast<size_t>(xx) * ksize];
    for (int x = 0; x < ksize; ++x) {
      double w = x < xmax ? weights[x] : 0.0;
      if (x < xmax && ww != 0.0) w /= ww;
      k[x] = static_cast<int32_t>(w < 0 ? -0.5 + w * (1 << kPrecisionBits) : 0.5 + w * (1 << kPrecisionBits));
    }
    axis.bounds[static_cast<size_t>(xx) * 2] = xmin;
    axis.bounds[static_cast<size_t>(xx) * 2 + 1] = xmax;
  }
}

}  // namespace

void precompute_axis(ResampleAxis& axis, int in_size, double in0, double in1, int out_size, ResampleFilter filter) {
  if (filter == ResampleFilter::bicubic)
    precompute_axis_with<bicubic_filter, 2>(axis, in_size, in0, in1, out_size);
  else
    precompute_axis_with<bilinear_filter, 1>(axis, in_size, in0, in1, out_size);
}

namespace {

// One output row of the horizontal pass (scalar: the reference and the fallback).
void horizontal_row_scalar(const uint8_t* in_row, const ResampleAxis& axis, int first, int last, uint8_t* out_row) {
  const int32_t* bounds = axis.bounds.data();
  for (int xx = first; xx < last; ++xx) {
    const int xmin = bounds[xx * 2], n = bounds[xx * 2 + 1];
    const int32_t* k = &axis.coeffs[static_cast<size_t>(xx) * axis.ksize];
    int32_t s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
    const uint8_t* p = in_row + static_cast<size_t>(xmin) * 3;
    for (int x = 0; x < n; ++x, p += 3) {
      s0 += p[0] * k[x];
      s1 += p[1] * k[x];
      s2 += p[2] * k[x];
    }
    out_row[xx * 3] = clip8(s0);
    out_row[xx * 3 + 1] = clip8(s1);
    out_row[xx * 3 + 2] = clip8(s2);
  }
}

// clip8 over a row of sums, 16 at a time with SSE2 (baseline x86-64): >> 22, then the packs
// saturate to [0, 255] exactly as clip8's two comparisons do.
void clip_row(const int32_t* acc, int n, uint8_t* out) {
  int i = 0;
#if defined(__x86_64__)
  for (; i + 16 <= n; i += 16) {
    const auto* a = reinterpret_cast<const __m128i*>(acc + i);
    const __m128i s0 = _mm_srai_epi32(_mm_loadu_si128(a), kPrecisionBits);
    const __m128i s1 = _mm_srai_epi32(_mm_loadu_si128(a + 1), kPrecisionBits);
    const __m128i s2 = _mm_srai_epi32(_mm_loadu_si128(a + 2), kPrecisionBits);
    const __m128i s3 = _mm_srai_epi32(_mm_loadu_si128(a + 3), kPrecisionBits);
    const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(s0, s1), _mm_packs_epi32(s2, s3));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), bytes);
  }
#endif
  for (; i < n; ++i) out[i] = clip8(acc[i]);
}

// Exact 16-bit split of the fixed-point coefficients (see ResampleAxis::pairs_lo).
void pack_coefficient_pairs(ResampleAxis& axis, int out_size) {
  const int pairs = (axis.ksize + 1) / 2;
  axis.pairs_lo.resize(static_cast<size_t>(out_size) * pairs);
  axis.pairs_hi.resize(static_cast<size_t>(out_size) * pairs);
  for (int xx = 0; xx < out_size; ++xx) {
    const int32_t* k = &axis.coeffs[static_cast<size_t>(xx) * axis.ksize];
    for (int j = 0; j < pairs; ++j) {
      const int32_t a = k[2 * j], b = 2 * j + 1 < axis.ksize ? k[2 * j + 1] : 0;
      const auto lo = [](int32_t v) { return static_cast<uint32_t>(v & 0x7FF); };
      const auto hi = [](int32_t v) { return static_cast<uint32_t>(static_cast<uint16_t>(static_cast<int16_t>(v >> 11))); };
      axis.pairs_lo[static_cast<size_t>(xx) * pairs + j] = static_cast<int32_t>(lo(a) | lo(b) << 16);
      axis.pairs_hi[static_cast<size_t>(xx) * pairs + j] = static_cast<int32_t>(hi(a) | hi(b) << 16);
    }
  }
}

#if defined(__x86_64__)
// SSE4.1 + SSSE3: two taps per step. The 8 bytes at a tap pair hold both pixels; one shuffle
// puts (r0, r1, g0, g1, b0, b1, 0, 0) in 16-bit lanes and two multiply-adds against the split
// coefficients give the three channel sums of both taps. Integer sums identical to Pillow's.
// Pixels whose 8-byte loads would pass the row's end take the scalar path.
__attribute__((target("sse4.1"))) void horizontal_row_madd(const uint8_t* in_row, int in_width, const ResampleAxis& axis, int out_w,
                                                           uint8_t* out_row) {
  const int32_t* bounds = axis.bounds.data();
  const int pairs_per_output = (axis.ksize + 1) / 2;
  const __m128i shuffle = _mm_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
  const __m128i half = _mm_set1_epi32(1 << (kPrecisionBits - 1));
  for (int xx = 0; xx < out_w; ++xx) {
    const int xmin = bounds[xx * 2], n = bounds[xx * 2 + 1];
    const int pairs = (n + 1) / 2;
    // The last load starts at pixel xmin + 2 * (pairs - 1) and reads 8 bytes.
    if (3 * (xmin + 2 * (pairs - 1)) + 8 > 3 * in_width) {
      horizontal_row_scalar(in_row, axis, xx, xx + 1, out_row);
      continue;
    }
    const int32_t* lo = &axis.pairs_lo[static_cast<size_t>(xx) * pairs_per_output];
    const int32_t* hi = &axis.pairs_hi[static_cast<size_t>(xx) * pairs_per_output];
    const uint8_t* p = in_row + static_cast<size_t>(xmin) * 3;
    __m128i sum_lo = _mm_setzero_si128(), sum_hi = _mm_setzero_si128();
    for (int j = 0; j < pairs; ++j, p += 6) {
      // An odd tap count's last pair has a zero second coefficient: the extra pixel adds 0.
      const __m128i px = _mm_shuffle_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), shuffle);
      sum_lo = _mm_add_epi32(sum_lo, _mm_madd_epi16(px, _mm_set1_epi32(lo[j])));
      sum_hi = _mm_add_epi32(sum_hi, _mm_madd_epi16(px, _mm_set1_epi32(hi[j])));
    }
    const __m128i sum = _mm_add_epi32(_mm_add_epi32(_mm_slli_epi32(sum_hi, 11), sum_lo), half);
    // clip8 on all lanes: >> 22, then saturate to [0, 255] by the two packs.
    const __m128i shifted = _mm_srai_epi32(sum, kPrecisionBits);
    const int32_t rgbx = _mm_cvtsi128_si32(_mm_packus_epi16(_mm_packs_epi32(shifted, shifted), shifted));
    // 4 bytes at once; the fourth is overwritten by the next pixel (3 bytes for the last one).
    if (xx + 1 < out_w)
      std::memcpy(out_row + xx * 3, &rgbx, 4);  // constant sizes: single stores
    else
      std::memcpy(out_row + xx * 3, &rgbx, 3);
  }
}

// Four rows at once with AVX2: rows r and r+1 share one 256-bit register (one per 128-bit lane),
// rows r+2 and r+3 another, so each broadcast coefficient pair feeds four rows' multiply-adds.
// Same integer arithmetic as horizontal_row_madd: the sums, and so the bytes, are identical.
__attribute__((target("avx2"))) void horizontal_4rows_madd_avx2(const uint8_t* in0, size_t in_stride, int in_width,
                                                                const ResampleAxis& axis, int out_w, uint8_t* out0, size_t out_stride) {
  const int32_t* bounds = axis.bounds.data();
  const int pairs_per_output = (axis.ksize + 1) / 2;
  const __m256i shuffle = _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,  //
                                           0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
  const __m256i half = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  const uint8_t* in1 = in0 + in_stride;
  const uint8_t* in2 = in1 + in_stride;
  const uint8_t* in3 = in2 + in_stride;
  uint8_t* out[4] = {out0, out0 + out_stride, out0 + 2 * out_stride, out0 + 3 * out_stride};
  for (int xx = 0; xx < out_w; ++xx) {
    const int xmin = bounds[xx * 2], n = bounds[xx * 2 + 1];
    const int pairs = (n + 1) / 2;
    if (3 * (xmin + 2 * (pairs - 1)) + 8 > 3 * in_width) {
      horizontal_row_scalar(in0, axis, xx, xx + 1, out[0]);
      horizontal_row_scalar(in1, axis, xx, xx + 1, out[1]);
      horizontal_row_scalar(in2, axis, xx, xx + 1, out[2]);
      horizontal_row_scalar(in3, axis, xx, xx + 1, out[3]);
      continue;
    }
    const int32_t* lo = &axis.pairs_lo[static_cast<size_t>(xx) * pairs_per_output];
    const int32_t* hi = &axis.pairs_hi[static_cast<size_t>(xx) * pairs_per_output];
    const size_t offset = static_cast<size_t>(xmin) * 3;
    __m256i lo01 = _mm256_setzero_si256(), hi01 = _mm256_setzero_si256(), lo23 = _mm256_setzero_si256(), hi23 = _mm256_setzero_si256();
    for (int j = 0; j < pairs; ++j) {
      const size_t at = offset + static_cast<size_t>(j) * 6;
      const __m256i px01 =
          _mm256_shuffle_epi8(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in0 + at))),
                                                      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in1 + at)), 1),
                              shuffle);
      const __m256i px23 =
          _mm256_shuffle_epi8(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in2 + at))),
                                                      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in3 + at)), 1),
                              shuffle);
      const __m256i k_lo = _mm256_set1_epi32(lo[j]), k_hi = _mm256_set1_epi32(hi[j]);
      lo01 = _mm256_add_epi32(lo01, _mm256_madd_epi16(px01, k_lo));
      hi01 = _mm256_add_epi32(hi01, _mm256_madd_epi16(px01, k_hi));
      lo23 = _mm256_add_epi32(lo23, _mm256_madd_epi16(px23, k_lo));
      hi23 = _mm256_add_epi32(hi23, _mm256_madd_epi16(px23, k_hi));
    }
    const __m256i s01 = _mm256_srai_epi32(_mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(hi01, 11), lo01), half), kPrecisionBits);
    const __m256i s23 = _mm256_srai_epi32(_mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(hi23, 11), lo23), half), kPrecisionBits);
    // Saturate to [0, 255] per 128-bit lane: byte 0..3 of each lane hold R, G, B, x of one row.
    const __m256i p16 = _mm256_packs_epi32(s01, s23);  // lanes: [r0 | r2], [r1 | r3] as int16
    const __m256i p8 = _mm256_packus_epi16(p16, p16);
    const __m128i low = _mm256_castsi256_si128(p8), high = _mm256_extracti128_si256(p8, 1);
    const int32_t px[4] = {_mm_cvtsi128_si32(low), _mm_cvtsi128_si32(high), _mm_extract_epi32(low, 1), _mm_extract_epi32(high, 1)};
    const size_t o = static_cast<size_t>(xx) * 3;
    if (xx + 1 < out_w) {
      for (int r = 0; r < 4; ++r) std::memcpy(out[r] + o, &px[r], 4);
    } else {
      for (int r = 0; r < 4; ++r) std::memcpy(out[r] + o, &px[r], 3);
    }
  }
}

#else
// Not x86-64: the level is scalar (util/cpu.hpp), so these are not reached; should they be, the
// scalar kernel gives the same bytes.
void horizontal_row_madd(const uint8_t* in_row, int, const ResampleAxis& axis, int out_w, uint8_t* out_row) {
  horizontal_row_scalar(in_row, axis, 0, out_w, out_row);
}
void horizontal_4rows_madd_avx2(const uint8_t* in0, size_t in_stride, int, const ResampleAxis& axis, int out_w, uint8_t* out0,
                                size_t out_stride) {
  for (size_t r = 0; r < 4; ++r) horizontal_row_scalar(in0 + r * in_stride, axis, 0, out_w, out0 + r * out_stride);
}
#endif

void horizontal_row(const uint8_t* in_row, int in_width, const ResampleAxis& axis, int out_w, uint8_t* out_row, SimdLevel level) {
  if (level >= SimdLevel::sse4)
    horizontal_row_madd(in_row, in_width, axis, out_w, out_row);
  else
    horizontal_row_scalar(in_row, axis, 0, out_w, out_row);
}

// The vertical pass's inner loop, compiled twice (AVX2 and baseline) and picked per call by the
// level in use (util/cpu.hpp says why not target_clones).
void accumulate_row_baseline(int32_t* acc, const uint8_t* p, int32_t w, int values) {
  for (int i = 0; i < values; ++i) acc[i] += p[i] * w;
}
#if defined(__x86_64__)
__attribute__((target("avx2"))) void accumulate_row_avx2(int32_t* acc, const uint8_t* p, int32_t w, int values) {
  for (int i = 0; i < values; ++i) acc[i] += p[i] * w;
}
#else
constexpr auto accumulate_row_avx2 = accumulate_row_baseline;  // never picked: cpu_has_avx2() is false
#endif
using AccumulateRow = void (*)(int32_t*, const uint8_t*, int32_t, int);

}  // namespace

void resample_rgb(const RgbView& in, double x0, double y0, double x1, double y1, int out_w, int out_h, ResampleFilter filter,
                  ResampleScratch& scratch, uint8_t* out, bool mirror) {
  const bool need_horizontal = mirror || out_w != in.width || x0 != 0 || x1 != out_w;
  const bool need_vertical = out_h != in.height || y0 != 0 || y1 != out_h;
  // sse4: the horizontal pass's multiply-adds; avx2: four rows at a time and the vertical pass.
  const SimdLevel level = active_simd_level();
  ResampleAxis& hz = scratch.horizontal;
  ResampleAxis& vt = scratch.vertical;
  precompute_axis(hz, in.width, x0, x1, out_w, filter);
  precompute_axis(vt, in.height, y0, y1, out_h, filter);
  if (mirror) {  // output column xx takes the taps of column out_w - 1 - xx
    for (int a = 0, b = out_w - 1; a < b; ++a, --b) {
      std::swap(hz.bounds[static_cast<size_t>(a) * 2], hz.bounds[static_cast<size_t>(b) * 2]);
      std::swap(hz.bounds[static_cast<size_t>(a) * 2 + 1], hz.bounds[static_cast<size_t>(b) * 2 + 1]);
      std::swap_ranges(hz.coeffs.begin() + static_cast<ptrdiff_t>(a) * hz.ksize,
                       hz.coeffs.begin() + static_cast<ptrdiff_t>(a + 1) * hz.ksize,
                       hz.coeffs.begin() + static_cast<ptrdiff_t>(b) * hz.ksize);
    }
  }
  if (need_horizontal && level >= SimdLevel::sse4) pack_coefficient_pairs(hz, out_w);
  const size_t out_stride = static_cast<size_t>(out_w) * 3;

  // Rows the vertical pass reads.
  const int ybox_first = vt.bounds[0];
  const int ybox_last = vt.bounds[static_cast<size_t>(out_h) * 2 - 2] + vt.bounds[static_cast<size_t>(out_h) * 2 - 1];

  const uint8_t* src = in.data;
  size_t src_stride = in.stride;
  int row_offset = 0;  // row of `src` holding input row ybox_first
  if (need_horizontal) {
    const int rows = std::max(ybox_last - ybox_first, 0);
    scratch.temp.resize(static_cast<size_t>(rows) * out_stride);
    int y = 0;
    if (level >= SimdLevel::avx2)
      for (; y + 4 <= rows; y += 4)
        horizontal_4rows_madd_avx2(in.data + static_cast<size_t>(y + ybox_first) * in.stride, in.stride, in.width, hz, out_w,
                                   scratch.temp.data() + static_cast<size_t>(y) * out_stride, out_stride);
    for (; y < rows; ++y)
      horizontal_row(in.data + static_cast<size_t>(y + ybox_first) * in.stride, in.width, hz, out_w,
                     scratch.temp.data() + static_cast<size_t>(y) * out_stride, level);
    src = scratch.temp.data();
    src_stride = out_stride;
    row_offset = ybox_first;
  } else if (!need_vertical) {
    for (int y = 0; y < out_h; ++y) std::memcpy(out + y * out_stride, in.data + y * in.stride, out_stride);
    return;
  }
  if (!need_vertical) {
    for (int y = 0; y < out_h; ++y) std::memcpy(out + y * out_stride, src + y * src_stride, out_stride);
    return;
  }
  const int values = out_w * 3;
  scratch.accumulator.resize(static_cast<size_t>(values));
  const AccumulateRow accumulate_row = level >= SimdLevel::avx2 ? accumulate_row_avx2 : accumulate_row_baseline;
  for (int yy = 0; yy < out_h; ++yy) {
    const int ymin = vt.bounds[static_cast<size_t>(yy) * 2] - row_offset, n = vt.bounds[static_cast<size_t>(yy) * 2 + 1];
    const int32_t* k = &vt.coeffs[static_cast<size_t>(yy) * vt.ksize];
    uint8_t* out_row = out + yy * out_stride;
    // Taps outer, pixels inner (vectorises); integer sums, so the order does not change a bit.
    int32_t* acc = scratch.accumulator.data();
    std::fill_n(acc, values, 1 << (kPrecisionBits - 1));
    for (int y = 0; y < n; ++y) {
      const uint8_t* p = src + static_cast<size_t>(ymin + y) * src_stride;
      accumulate_row(acc, p, k[y], values);
    }
    clip_row(acc, values, out_row);
  }
}

}  // namespace slip::detail
