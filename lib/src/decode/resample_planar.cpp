#include "decode/resample_planar.hpp"

#include <algorithm>
#include <cmath>

#include <immintrin.h>

namespace slip::detail {
namespace {

constexpr int kMaxTapsOnStack = 512;  // coefficient rows up to this length are computed vectorised
constexpr int kBits = 14;  // coefficient precision: |k| < 2^15 for every filter weight (bicubic peaks at 1.0)

template <ResampleFilter kFilter>
inline float filter_weight(float x) {
  x = std::fabs(x);
  if constexpr (kFilter == ResampleFilter::bilinear) {
    return std::max(0.0f, 1.0f - x);
  } else {  // Keys' cubic with a = -0.5, as Pillow's bicubic; written as selects
    constexpr float a = -0.5f;
    const float near = ((a + 2.0f) * x - (a + 3.0f)) * x * x + 1.0f;
    const float far = (((x - 5.0f) * x + 8.0f) * x - 4.0f) * a;
    return x < 1.0f ? near : x < 2.0f ? far : 0.0f;
  }
}

// One output's Q14 weights: tap x (of `stride`, x < n) weighs filter((x + offset) * inv);
// the rest are 0. In float: the offset is small (it is relative to the first tap), so the
// weights are exact to ~1e-7, far below the Q14 step of 6e-5.
template <ResampleFilter kFilter>
void output_weights_scalar(float offset, float inv, int n, int stride, int16_t* q) {
  float w[kMaxTapsOnStack];
  float sum = 0;
  for (int x = 0; x < stride; ++x) {
    const float v = x < n ? filter_weight<kFilter>((static_cast<float>(x) + offset) * inv) : 0.0f;
    w[x] = v;
    sum += v;
  }
  const float norm = sum != 0.0f ? static_cast<float>(1 << kBits) / sum : 0.0f;
  // cvtss2si rounds to nearest even in the default rounding mode, as lrint (which is a libm
  // call: it was most of the planning time).
  for (int x = 0; x < stride; ++x) q[x] = static_cast<int16_t>(_mm_cvtss_si32(_mm_set_ss(w[x] * norm)));
}

// The same, 8 taps per step (stride is a multiple of 8).
template <ResampleFilter kFilter>
__attribute__((target("avx2"))) void output_weights_avx2(float offset, float inv, int n, int stride, int16_t* q) {
  __m256 w[kMaxTapsOnStack / 8];
  const __m256 lane = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7), off = _mm256_set1_ps(offset), vinv = _mm256_set1_ps(inv);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)), one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
  __m256 sum = zero;
  for (int c = 0; c < stride / 8; ++c) {
    const __m256 xs = _mm256_add_ps(lane, _mm256_set1_ps(static_cast<float>(8 * c)));
    const __m256 t = _mm256_and_ps(_mm256_mul_ps(_mm256_add_ps(xs, off), vinv), abs_mask);
    __m256 v;
    if constexpr (kFilter == ResampleFilter::bilinear) {
      v = _mm256_max_ps(zero, _mm256_sub_ps(one, t));
    } else {
      const __m256 a = _mm256_set1_ps(-0.5f);
      const __m256 near = _mm256_add_ps(
          _mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(1.5f), t), _mm256_set1_ps(2.5f)), t), t), one);
      const __m256 far = _mm256_mul_ps(
          _mm256_sub_ps(_mm256_mul_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(t, _mm256_set1_ps(5.0f)), t), _mm256_set1_ps(8.0f)), t),
                        _mm256_set1_ps(4.0f)),
          a);
      v = _mm256_blendv_ps(_mm256_blendv_ps(zero, far, _mm256_cmp_ps(t, _mm256_set1_ps(2.0f), _CMP_LT_OQ)), near,
                           _mm256_cmp_ps(t, one, _CMP_LT_OQ));
    }
    v = _mm256_and_ps(v, _mm256_cmp_ps(xs, _mm256_set1_ps(static_cast<float>(n)), _CMP_LT_OQ));
    w[c] = v;
    sum = _mm256_add_ps(sum, v);
  }
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  const float total = _mm_cvtss_f32(s);
  const __m256 norm = _mm256_set1_ps(total != 0.0f ? static_cast<float>(1 << kBits) / total : 0.0f);
  for (int c = 0; c < stride / 8; ++c) {
    const __m256i qi = _mm256_cvtps_epi32(_mm256_mul_ps(w[c], norm));  // nearest even, as lrint
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 8 * c),
                     _mm_packs_epi32(_mm256_castsi256_si128(qi), _mm256_extracti128_si256(qi, 1)));
  }
}

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
const bool kAvx2 = cpu_has_avx2();

// Pillow's geometry (precompute_axis in resample.cpp: the same support, bounds and
// normalisation), weights straight to Q14. Each output's row of coefficients is padded to a
// multiple of 8 with zeros.
template <ResampleFilter kFilter>
void plan_axis_with(PlaneAxis& axis, const PlaneAxisKey& k) {
  const double support_unit = kFilter == ResampleFilter::bicubic ? 2.0 : 1.0;
  const double scale = (k.in1 - k.in0) / k.out_size;
  const double filterscale = std::max(scale, 1.0), inv_filterscale = 1.0 / filterscale;
  const double support = support_unit * filterscale;
  const int ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  const int stride = (ksize + 7) & ~7;
  axis.ksize = stride;
  axis.bounds.resize(static_cast<size_t>(k.out_size) * 2);
  axis.coeffs.resize(static_cast<size_t>(k.out_size) * stride);
  const auto weights = kAvx2 ? output_weights_avx2<kFilter> : output_weights_scalar<kFilter>;
  for (int o = 0; o < k.out_size; ++o) {
    const double center = k.in0 + (o + 0.5) * scale;
    const int xmin = std::max(0, static_cast<int>(center - support + 0.5));          // NOLINT(bugprone-incorrect-roundings): Pillow's
    const int xmax = std::min(k.in_size, static_cast<int>(center + support + 0.5));  // NOLINT(bugprone-incorrect-roundings)
    const int n = std::clamp(xmax - xmin, 0, ksize);
    int16_t* q = &axis.coeffs[static_cast<size_t>(o) * stride];
    if (stride <= kMaxTapsOnStack) {
      weights(static_cast<float>(xmin - center + 0.5), static_cast<float>(inv_filterscale), n, stride, q);
    } else {  // a window over ~250x the output: the rare slow way, in double
      double sum = 0;
      for (int x = 0; x < n; ++x) sum += filter_weight<kFilter>(static_cast<float>((x + xmin - center + 0.5) * inv_filterscale));
      const double norm = sum != 0.0 ? (1 << kBits) / sum : 0.0;
      for (int x = 0; x < stride; ++x)
        q[x] = x < n ? static_cast<int16_t>(std::lrint(
                           filter_weight<kFilter>(static_cast<float>((x + xmin - center + 0.5) * inv_filterscale)) * norm))
                     : int16_t{0};
    }
    axis.bounds[static_cast<size_t>(o) * 2] = xmin;
    axis.bounds[static_cast<size_t>(o) * 2 + 1] = n;
  }
  axis.key = k;
}

void plan_axis(PlaneAxis& axis, const PlaneAxisKey& k) {
  if (axis.key == k) return;
  if (k.filter == ResampleFilter::bicubic)
    plan_axis_with<ResampleFilter::bicubic>(axis, k);
  else
    plan_axis_with<ResampleFilter::bilinear>(axis, k);
}

inline uint8_t clamp_q14(int32_t s) {
  s >>= kBits;
  return static_cast<uint8_t>(s < 0 ? 0 : s > 255 ? 255 : s);
}

// Output row r = sum over taps j of k[r][j] * input row (bounds[2r] - row_offset + j), for
// columns [x_first, width). Rows of `in` are contiguous bytes: this one kernel serves both
// passes (the horizontal pass runs on a transposed copy).
void vertical_columns_scalar(const uint8_t* in, size_t in_stride, int x_first, int width, const int32_t* bounds, const int16_t* coeffs,
                             int ksize, int row_offset, int rows, uint8_t* out, ptrdiff_t out_stride) {
  for (int r = 0; r < rows; ++r) {
    const uint8_t* base = in + static_cast<size_t>(bounds[2 * r] - row_offset) * in_stride;
    const int n = bounds[2 * r + 1];
    const int16_t* k = coeffs + static_cast<size_t>(r) * ksize;
    uint8_t* o = out + r * out_stride;
    for (int x = x_first; x < width; ++x) {
      int32_t s = 1 << (kBits - 1);
      for (int j = 0; j < n; ++j) s += base[static_cast<size_t>(j) * in_stride + x] * k[j];
      o[x] = clamp_q14(s);
    }
  }
}

// AVX2: 16 columns per step; two taps per multiply-add (the two rows' bytes interleaved into
// 16-bit pairs against a broadcast coefficient pair). Same integer sums as the scalar kernel.
__attribute__((target("avx2"))) void vertical_columns_avx2(const uint8_t* in, size_t in_stride, int width, const int32_t* bounds,
                                                           const int16_t* coeffs, int ksize, int row_offset, int rows, uint8_t* out,
                                                           ptrdiff_t out_stride) {
  // Widths past a multiple of 16 end with one more full step over the last 16 columns (it
  // rewrites a few columns with the same values): the scalar tail cost 6% of a multi-crop epoch.
  const int vec_width = width >= 16 ? width : 0;
  const __m256i half = _mm256_set1_epi32(1 << (kBits - 1));
  const __m128i zero = _mm_setzero_si128();
  for (int r = 0; r < rows; ++r) {
    const uint8_t* base = in + static_cast<size_t>(bounds[2 * r] - row_offset) * in_stride;
    const int n = bounds[2 * r + 1];
    const int16_t* k = coeffs + static_cast<size_t>(r) * ksize;
    uint8_t* o = out + r * out_stride;
    for (int step = 0; step < vec_width; step += 16) {
      const int x = std::min(step, vec_width - 16);
      __m256i acc0 = half, acc1 = half;
      int j = 0;
      for (; j + 2 <= n; j += 2) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + static_cast<size_t>(j) * in_stride + x));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + static_cast<size_t>(j + 1) * in_stride + x));
        const __m256i kk = _mm256_set1_epi32(
            static_cast<int32_t>(static_cast<uint16_t>(k[j]) | static_cast<uint32_t>(static_cast<uint16_t>(k[j + 1])) << 16));
        acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, b)), kk));
        acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(a, b)), kk));
      }
      if (j < n) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + static_cast<size_t>(j) * in_stride + x));
        const __m256i kk = _mm256_set1_epi32(static_cast<uint16_t>(k[j]));
        acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, zero)), kk));
        acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(a, zero)), kk));
      }
      // acc0: columns 0-7, acc1: 8-15; packs works per 128-bit lane, the permute restores order.
      const __m256i words =
          _mm256_permute4x64_epi64(_mm256_packs_epi32(_mm256_srai_epi32(acc0, kBits), _mm256_srai_epi32(acc1, kBits)), 0xD8);
      const __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + x), bytes);
    }
  }
  if (vec_width == 0) vertical_columns_scalar(in, in_stride, 0, width, bounds, coeffs, ksize, row_offset, rows, out, out_stride);
}

void vertical_columns(const uint8_t* in, size_t in_stride, int width, const PlaneAxis& axis, int row_offset, int rows, uint8_t* out,
                      ptrdiff_t out_stride) {
  if (kAvx2)
    vertical_columns_avx2(in, in_stride, width, axis.bounds.data(), axis.coeffs.data(), axis.ksize, row_offset, rows, out, out_stride);
  else
    vertical_columns_scalar(in, in_stride, 0, width, axis.bounds.data(), axis.coeffs.data(), axis.ksize, row_offset, rows, out, out_stride);
}

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

}  // namespace

void transpose_plane(const uint8_t* in, size_t in_stride, int width, int height, uint8_t* out, size_t out_stride) {
  const int w8 = width & ~7, h8 = height & ~7;
  for (int y = 0; y < h8; y += 8)
    for (int x = 0; x < w8; x += 8)
      transpose8x8(in + static_cast<size_t>(y) * in_stride + x, in_stride, out + static_cast<size_t>(x) * out_stride + y, out_stride);
  for (int y = 0; y < height; ++y) {
    const int x_first = y < h8 ? w8 : 0;
    for (int x = x_first; x < width; ++x) out[static_cast<size_t>(x) * out_stride + y] = in[static_cast<size_t>(y) * in_stride + x];
  }
}

void resample_plane(const PlaneView& in, double x0, double y0, double x1, double y1, int out_w, int out_h, ResampleFilter filter,
                    PlaneResampleScratch& s, uint8_t* out, size_t out_stride, bool mirror) {
  plan_axis(s.vertical, {in.height, y0, y1, out_h, filter});
  plan_axis(s.horizontal, {in.width, x0, x1, out_w, filter});
  // The columns the horizontal taps read (the bounds grow with the output index).
  const int cx0 = s.horizontal.bounds[0];
  const int cx1 = s.horizontal.bounds[static_cast<size_t>(out_w - 1) * 2] + s.horizontal.bounds[static_cast<size_t>(out_w - 1) * 2 + 1];
  const int columns = cx1 - cx0;
  // Vertical first: out_h rows of the needed columns.
  s.pass1.resize(static_cast<size_t>(out_h) * columns);
  vertical_columns(in.data + cx0, in.stride, columns, s.vertical, 0, out_h, s.pass1.data(), columns);
  // Transposed, the horizontal pass is the same contiguous kernel over columns instead of rows.
  s.pass1_t.resize(static_cast<size_t>(columns) * out_h);
  transpose_plane(s.pass1.data(), static_cast<size_t>(columns), columns, out_h, s.pass1_t.data(), static_cast<size_t>(out_h));
  s.pass2.resize(static_cast<size_t>(out_w) * out_h);
  uint8_t* first = mirror ? s.pass2.data() + static_cast<size_t>(out_w - 1) * out_h : s.pass2.data();
  const ptrdiff_t step = mirror ? -static_cast<ptrdiff_t>(out_h) : static_cast<ptrdiff_t>(out_h);
  vertical_columns(s.pass1_t.data(), static_cast<size_t>(out_h), out_h, s.horizontal, cx0, out_w, first, step);
  transpose_plane(s.pass2.data(), static_cast<size_t>(out_h), out_h, out_w, out, out_stride);
}

}  // namespace slip::detail
