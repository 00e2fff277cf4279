// The planar resampler's weights: per axis, Pillow's bounds and each output's row of Q14
// coefficients (plan_axis), computed by scalar, AVX2 and AVX-512 kernels that give the same
// bits. The passes that apply them are in resample_planar.cpp.
#include <algorithm>
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "decode/resample_planar.hpp"
#include "util/cpu.hpp"
#include "util/scratch.hpp"

namespace slip::detail {
namespace {

constexpr int kMaxTapsOnStack = 512;  // the AVX2 weight kernel's buffer: longer rows go scalar

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

// A weight rounded to nearest even: cvtss2si in the default rounding mode on x86-64, as lrint
// (a libm call there: it was most of the planning time).
inline int16_t round_to_int16(float v) {
#if defined(__x86_64__)
  return static_cast<int16_t>(_mm_cvtss_si32(_mm_set_ss(v)));
#else
  return static_cast<int16_t>(std::lrint(v));
#endif
}

// One output's Q14 weights: tap x (of `stride`, x < n) weighs filter((x + offset) * inv);
// the rest are 0. In float: the offset is small (it is relative to the first tap), so the
// weights are exact to ~1e-7, far below the Q14 step of 6e-5.
template <ResampleFilter kFilter>
void output_weights_scalar(float offset, float inv, int n, int stride, int16_t* q) {
  auto weight = [&](int x) { return x < n ? filter_weight<kFilter>((static_cast<float>(x) + offset) * inv) : 0.0f; };
  float sum = 0;
  for (int x = 0; x < stride; ++x) sum += weight(x);
  const float norm = sum != 0.0f ? static_cast<float>(1 << kPlaneCoeffBits) / sum : 0.0f;
  for (int x = 0; x < stride; ++x) q[x] = round_to_int16(weight(x) * norm);
}

// output_weights_avx2's weights without AVX2: tap x summed into lane x % 8, the lanes added as
// its horizontal sum adds them, ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)); the scalar level plans
// the rows the AVX2 level gives that kernel with it, so both levels' weights are the same bits.
template <ResampleFilter kFilter>
void output_weights_lanes(float offset, float inv, int n, int stride, int16_t* q) {
  auto weight = [&](int x) { return x < n ? filter_weight<kFilter>((static_cast<float>(x) + offset) * inv) : 0.0f; };
  float lanes[8] = {};
  for (int x = 0; x < stride; ++x) lanes[x % 8] += weight(x);
  const float sum = ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
  const float norm = sum != 0.0f ? static_cast<float>(1 << kPlaneCoeffBits) / sum : 0.0f;
  for (int x = 0; x < stride; ++x) q[x] = round_to_int16(weight(x) * norm);
}

#if defined(__x86_64__)

// filter_weight on 8 values of |x| at once (as selects, like the scalar one).
template <ResampleFilter kFilter>
__attribute__((target("avx2"))) inline __m256 filter_weight8(__m256 t) {
  const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
  if constexpr (kFilter == ResampleFilter::bilinear) {
    return _mm256_max_ps(zero, _mm256_sub_ps(one, t));
  } else {
    const __m256 a = _mm256_set1_ps(-0.5f);
    const __m256 near =
        _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(1.5f), t), _mm256_set1_ps(2.5f)), t), t), one);
    const __m256 far = _mm256_mul_ps(
        _mm256_sub_ps(_mm256_mul_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(t, _mm256_set1_ps(5.0f)), t), _mm256_set1_ps(8.0f)), t),
                      _mm256_set1_ps(4.0f)),
        a);
    return _mm256_blendv_ps(_mm256_blendv_ps(zero, far, _mm256_cmp_ps(t, _mm256_set1_ps(2.0f), _CMP_LT_OQ)), near,
                            _mm256_cmp_ps(t, one, _CMP_LT_OQ));
  }
}

// The same, 8 taps per step (stride is a multiple of 8, at most kMaxTapsOnStack).
template <ResampleFilter kFilter>
__attribute__((target("avx2"))) void output_weights_avx2(float offset, float inv, int n, int stride, int16_t* q) {
  __m256 w[kMaxTapsOnStack / 8];
  const __m256 lane = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7), off = _mm256_set1_ps(offset), vinv = _mm256_set1_ps(inv);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)), zero = _mm256_setzero_ps();
  __m256 sum = zero;
  for (int c = 0; c < stride / 8; ++c) {
    const __m256 xs = _mm256_add_ps(lane, _mm256_set1_ps(static_cast<float>(8 * c)));
    const __m256 t = _mm256_and_ps(_mm256_mul_ps(_mm256_add_ps(xs, off), vinv), abs_mask);
    __m256 v = filter_weight8<kFilter>(t);
    v = _mm256_and_ps(v, _mm256_cmp_ps(xs, _mm256_set1_ps(static_cast<float>(n)), _CMP_LT_OQ));
    w[c] = v;
    sum = _mm256_add_ps(sum, v);
  }
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  const float total = _mm_cvtss_f32(s);
  const __m256 norm = _mm256_set1_ps(total != 0.0f ? static_cast<float>(1 << kPlaneCoeffBits) / total : 0.0f);
  for (int c = 0; c < stride / 8; ++c) {
    const __m256i qi = _mm256_cvtps_epi32(_mm256_mul_ps(w[c], norm));  // nearest even, as lrint
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 8 * c), _mm_packs_epi32(_mm256_castsi256_si128(qi), _mm256_extracti128_si256(qi, 1)));
  }
}

// An 8x8 block of 16-bit values: r[x] lane o -> q[o * row_stride + x].
__attribute__((target("avx2"))) inline void store_transposed8x8(const __m128i* r, int16_t* q, size_t row_stride) {
  const __m128i a0 = _mm_unpacklo_epi16(r[0], r[1]), a1 = _mm_unpackhi_epi16(r[0], r[1]);
  const __m128i a2 = _mm_unpacklo_epi16(r[2], r[3]), a3 = _mm_unpackhi_epi16(r[2], r[3]);
  const __m128i a4 = _mm_unpacklo_epi16(r[4], r[5]), a5 = _mm_unpackhi_epi16(r[4], r[5]);
  const __m128i a6 = _mm_unpacklo_epi16(r[6], r[7]), a7 = _mm_unpackhi_epi16(r[6], r[7]);
  const __m128i b0 = _mm_unpacklo_epi32(a0, a2), b1 = _mm_unpackhi_epi32(a0, a2);
  const __m128i b2 = _mm_unpacklo_epi32(a1, a3), b3 = _mm_unpackhi_epi32(a1, a3);
  const __m128i b4 = _mm_unpacklo_epi32(a4, a6), b5 = _mm_unpackhi_epi32(a4, a6);
  const __m128i b6 = _mm_unpacklo_epi32(a5, a7), b7 = _mm_unpackhi_epi32(a5, a7);
  const __m128i rows[8] = {_mm_unpacklo_epi64(b0, b4), _mm_unpackhi_epi64(b0, b4), _mm_unpacklo_epi64(b1, b5), _mm_unpackhi_epi64(b1, b5),
                           _mm_unpacklo_epi64(b2, b6), _mm_unpackhi_epi64(b2, b6), _mm_unpacklo_epi64(b3, b7), _mm_unpackhi_epi64(b3, b7)};
  for (size_t o = 0; o < 8; ++o) _mm_storeu_si128(reinterpret_cast<__m128i*>(q + (o * row_stride)), rows[o]);
}

// Eight outputs' rows of kStride (8 or 16) Q14 weights at once (8: bilinear below 3.5x
// reduction, bicubic below 1.75x; 16: bicubic to 3.75x), one output per lane. Each lane sums
// its taps in the order of the kernel the same rows took one at a time (8: the scalar one, in
// tap order; 16: output_weights_avx2's, pairs of taps 8 apart, then its horizontal sum), so the
// weights are that kernel's, bit for bit. offset[o], n[o]: output o's. max_taps: at least every
// n[o]; taps past it are 0 without evaluating the filter (up to 7 of 16 for bicubic).
template <ResampleFilter kFilter, int kStride>
__attribute__((target("avx2"))) void output_weights8_avx2(const float* offset, float inv, const int32_t* n, int max_taps, int16_t* q) {
  const __m256 off = _mm256_loadu_ps(offset), vinv = _mm256_set1_ps(inv);
  const __m256i taps = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(n));
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)), zero = _mm256_setzero_ps();
  __m256 w[kStride];
  for (int x = 0; x < kStride; ++x) {
    if (x >= max_taps) {  // past every output's count: 0, as the mask below would make it
      w[x] = zero;
      continue;
    }
    const __m256 t = _mm256_and_ps(_mm256_mul_ps(_mm256_add_ps(_mm256_set1_ps(static_cast<float>(x)), off), vinv), abs_mask);
    __m256 v = filter_weight8<kFilter>(t);
    w[x] = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_cmpgt_epi32(taps, _mm256_set1_epi32(x))));  // taps past n weigh 0
  }
  __m256 sum = zero;
  if constexpr (kStride == 8) {
    for (const __m256& v : w) sum = _mm256_add_ps(sum, v);
  } else {
    static_assert(kStride == 16);
    __m256 lanes[8];
    for (int i = 0; i < 8; ++i) lanes[i] = _mm256_add_ps(w[i], w[8 + i]);
    sum = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(lanes[0], lanes[4]), _mm256_add_ps(lanes[2], lanes[6])),
                        _mm256_add_ps(_mm256_add_ps(lanes[1], lanes[5]), _mm256_add_ps(lanes[3], lanes[7])));
  }
  const __m256 nonzero = _mm256_cmp_ps(sum, zero, _CMP_NEQ_OQ);
  const __m256 norm = _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(static_cast<float>(1 << kPlaneCoeffBits)), sum), nonzero);
  // w[x] lane o -> q[o][x]: pack to 16 bits, then 8x8 transposes of 16-bit values.
  for (int block = 0; block < kStride / 8; ++block) {
    __m128i r[8];
    for (int x = 0; x < 8; ++x) {
      const __m256i qi = _mm256_cvtps_epi32(_mm256_mul_ps(w[(8 * block) + x], norm));  // nearest even, as lrint
      r[x] = _mm_packs_epi32(_mm256_castsi256_si128(qi), _mm256_extracti128_si256(qi, 1));
    }
    store_transposed8x8(r, q + (8 * block), kStride);
  }
}

// GCC 12's AVX-512 headers start some intrinsics from an uninitialised vector
// (_mm512_undefined_epi32), which -Wuninitialized flags wherever one is inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// filter_weight8 on 16 values, the same operations in the same order.
template <ResampleFilter kFilter>
__attribute__((target("avx2,avx512f"))) inline __m512 filter_weight16(__m512 t) {
  const __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
  if constexpr (kFilter == ResampleFilter::bilinear) {
    return _mm512_max_ps(zero, _mm512_sub_ps(one, t));
  } else {
    const __m512 a = _mm512_set1_ps(-0.5f);
    const __m512 near =
        _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(1.5f), t), _mm512_set1_ps(2.5f)), t), t), one);
    const __m512 far = _mm512_mul_ps(
        _mm512_sub_ps(_mm512_mul_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps(t, _mm512_set1_ps(5.0f)), t), _mm512_set1_ps(8.0f)), t),
                      _mm512_set1_ps(4.0f)),
        a);
    const __m512 beyond_one = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, _mm512_set1_ps(2.0f), _CMP_LT_OQ), zero, far);
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, one, _CMP_LT_OQ), beyond_one, near);
  }
}

// output_weights8_avx2 for sixteen outputs (AVX-512F): each lane's operations and sum order
// are the eight-output kernel's, so the same weights; half the instructions per output.
template <ResampleFilter kFilter, int kStride>
__attribute__((target("avx2,avx512f"))) void output_weights16_avx512(const float* offset, float inv, const int32_t* n, int max_taps,
                                                                     int16_t* q) {
  const __m512 off = _mm512_loadu_ps(offset), vinv = _mm512_set1_ps(inv);
  const __m512i taps = _mm512_loadu_si512(n);
  const __m512 zero = _mm512_setzero_ps();
  __m512 w[kStride];
  for (int x = 0; x < kStride; ++x) {
    if (x >= max_taps) {  // past every output's count: 0, as the mask below would make it
      w[x] = zero;
      continue;
    }
    // _mm512_abs_ps: the sign bit cleared, as the AVX2 kernel's and (AVX-512F, no DQ needed).
    const __m512 t = _mm512_abs_ps(_mm512_mul_ps(_mm512_add_ps(_mm512_set1_ps(static_cast<float>(x)), off), vinv));
    w[x] = _mm512_maskz_mov_ps(_mm512_cmpgt_epi32_mask(taps, _mm512_set1_epi32(x)), filter_weight16<kFilter>(t));  // taps past n weigh 0
  }
  __m512 sum = zero;
  if constexpr (kStride == 8) {
    for (const __m512& v : w) sum = _mm512_add_ps(sum, v);
  } else {
    static_assert(kStride == 16);
    __m512 lanes[8];
    for (int i = 0; i < 8; ++i) lanes[i] = _mm512_add_ps(w[i], w[8 + i]);
    sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(lanes[0], lanes[4]), _mm512_add_ps(lanes[2], lanes[6])),
                        _mm512_add_ps(_mm512_add_ps(lanes[1], lanes[5]), _mm512_add_ps(lanes[3], lanes[7])));
  }
  const __mmask16 nonzero = _mm512_cmp_ps_mask(sum, zero, _CMP_NEQ_OQ);
  const __m512 norm = _mm512_maskz_div_ps(nonzero, _mm512_set1_ps(static_cast<float>(1 << kPlaneCoeffBits)), sum);
  // w[x] lane o -> q[o][x]: to 16 bits with signed saturation (packs_epi32's), then 8x8
  // transposes of outputs 0-7 and 8-15.
  for (int block = 0; block < kStride / 8; ++block) {
    __m128i lo[8], hi[8];
    for (int x = 0; x < 8; ++x) {
      const __m256i q16 = _mm512_cvtsepi32_epi16(_mm512_cvtps_epi32(_mm512_mul_ps(w[(8 * block) + x], norm)));  // nearest even
      lo[x] = _mm256_castsi256_si128(q16);
      hi[x] = _mm256_extracti128_si256(q16, 1);
    }
    store_transposed8x8(lo, q + (8 * block), kStride);
    store_transposed8x8(hi, q + (8 * kStride) + (8 * block), kStride);
  }
}

#pragma GCC diagnostic pop

// The bounds loop below for eight outputs, in the same double-precision operations in the same
// order (no contraction: this target has no FMA), so the same bounds and offsets; it was half
// of the planning time.
__attribute__((target("avx2"))) void bounds8_avx2(int o, double in0, double scale, double support, int in_size, int ksize, float* offsets,
                                                  int32_t* counts, int32_t* bounds) {
  const __m256d half = _mm256_set1_pd(0.5), vsupport = _mm256_set1_pd(support);
  for (int part = 0; part < 2; ++part) {
    const __m256d index = _mm256_add_pd(_mm256_cvtepi32_pd(_mm_add_epi32(_mm_set1_epi32(o + 4 * part), _mm_setr_epi32(0, 1, 2, 3))), half);
    const __m256d center = _mm256_add_pd(_mm256_set1_pd(in0), _mm256_mul_pd(index, _mm256_set1_pd(scale)));
    const __m128i xmin = _mm_max_epi32(_mm_setzero_si128(), _mm256_cvttpd_epi32(_mm256_add_pd(_mm256_sub_pd(center, vsupport), half)));
    const __m128i xmax = _mm_min_epi32(_mm_set1_epi32(in_size), _mm256_cvttpd_epi32(_mm256_add_pd(_mm256_add_pd(center, vsupport), half)));
    const __m128i n = _mm_min_epi32(_mm_max_epi32(_mm_sub_epi32(xmax, xmin), _mm_setzero_si128()), _mm_set1_epi32(ksize));
    _mm_storeu_ps(offsets + 4 * part, _mm256_cvtpd_ps(_mm256_add_pd(_mm256_sub_pd(_mm256_cvtepi32_pd(xmin), center), half)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(counts + 4 * part), n);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bounds + 8 * part), _mm_unpacklo_epi32(xmin, n));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bounds + 8 * part + 4), _mm_unpackhi_epi32(xmin, n));
  }
}
#else
// Not x86-64: the level is scalar (util/cpu.hpp), so plan_axis_with computes weights and bounds one output at a
// time with the scalar kernel; these stand in for the x86 kernels it names, with its results.
template <ResampleFilter kFilter>
void output_weights_avx2(float offset, float inv, int n, int stride, int16_t* q) {
  output_weights_scalar<kFilter>(offset, inv, n, stride, q);
}
template <ResampleFilter kFilter, int kStride, int kOutputs = 8>
void output_weights8_avx2(const float* offset, float inv, const int32_t* n, int, int16_t* q) {
  for (int o = 0; o < kOutputs; ++o) output_weights_scalar<kFilter>(offset[o], inv, n[o], kStride, q + o * kStride);
}
template <ResampleFilter kFilter, int kStride>
void output_weights16_avx512(const float* offset, float inv, const int32_t* n, int max_taps, int16_t* q) {
  output_weights8_avx2<kFilter, kStride, 16>(offset, inv, n, max_taps, q);
}
void bounds8_avx2(int o, double in0, double scale, double support, int in_size, int ksize, float* offsets, int32_t* counts,
                  int32_t* bounds) {
  for (int i = 0; i < 8; ++i) {
    const double center = in0 + (o + i + 0.5) * scale;
    const int xmin = std::max(0, static_cast<int>(center - support + 0.5));
    const int xmax = std::min(in_size, static_cast<int>(center + support + 0.5));
    counts[i] = std::clamp(xmax - xmin, 0, ksize);
    bounds[2 * i] = xmin;
    bounds[2 * i + 1] = counts[i];
    offsets[i] = static_cast<float>(xmin - center + 0.5);
  }
}
#endif

// Pillow's geometry (precompute_axis in resample.cpp: the same support, bounds and
// normalisation), weights straight to Q14. Each output's row of coefficients is padded to a
// multiple of 8 with zeros.
template <ResampleFilter kFilter>
void plan_axis_with(PlaneAxis& axis, const PlaneAxisKey& k, SimdLevel kernels) {
  const double support_unit = kFilter == ResampleFilter::bicubic ? 2.0 : 1.0;
  const double scale = (k.in1 - k.in0) / k.out_size;
  const double filterscale = std::max(scale, 1.0), inv_filterscale = 1.0 / filterscale;
  const double support = support_unit * filterscale;
  const int ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  const int stride = (ksize + 7) & ~7;
  axis.ksize = stride;
  scratch_of(axis.bounds, static_cast<size_t>(k.out_size) * 2);
  scratch_of(axis.coeffs, static_cast<size_t>(k.out_size) * stride);
  // Windows over ~250x the output (rows longer than the AVX2 kernel's stack buffer) go scalar.
  // Below AVX2, rows of 16 taps or more (those the AVX2 kernels sum lane by lane) take its sums.
  const bool avx2 = kernels >= SimdLevel::avx2;
  const bool lane_sums = stride >= 16 && stride <= kMaxTapsOnStack;
  const auto weights = !lane_sums ? output_weights_scalar<kFilter> : avx2 ? output_weights_avx2<kFilter> : output_weights_lanes<kFilter>;
  const auto inv = static_cast<float>(inv_filterscale);
  // Rows of 8 or 16 taps go eight outputs at a time (the one-at-a-time kernel's sums, lane by lane).
  const bool batched = avx2 && (stride == 8 || stride == 16);
  const auto weights8 = stride == 8 ? output_weights8_avx2<kFilter, 8> : output_weights8_avx2<kFilter, 16>;
  const auto weights16 = stride == 8 ? output_weights16_avx512<kFilter, 8> : output_weights16_avx512<kFilter, 16>;
  // The outputs past the last eight: the kernel whose sums the batches reproduce.
  const auto weights_one = stride == 8 ? output_weights_scalar<kFilter> : weights;
  alignas(64) float offsets[16];
  alignas(64) int32_t counts[16];
  int pending = 0;
  int o = 0;
  if (batched && kernels == SimdLevel::avx512)
    for (; o + 16 <= k.out_size; o += 16) {
      bounds8_avx2(o, k.in0, scale, support, k.in_size, ksize, offsets, counts, &axis.bounds[static_cast<size_t>(o) * 2]);
      bounds8_avx2(o + 8, k.in0, scale, support, k.in_size, ksize, offsets + 8, counts + 8, &axis.bounds[static_cast<size_t>(o + 8) * 2]);
      weights16(offsets, inv, counts, ksize, &axis.coeffs[static_cast<size_t>(o) * stride]);
    }
  if (batched)
    for (; o + 8 <= k.out_size; o += 8) {
      bounds8_avx2(o, k.in0, scale, support, k.in_size, ksize, offsets, counts, &axis.bounds[static_cast<size_t>(o) * 2]);
      weights8(offsets, inv, counts, ksize, &axis.coeffs[static_cast<size_t>(o) * stride]);
    }
  for (; o < k.out_size; ++o) {
    const double center = k.in0 + (o + 0.5) * scale;
    const int xmin = std::max(0, static_cast<int>(center - support + 0.5));          // NOLINT(bugprone-incorrect-roundings): Pillow's
    const int xmax = std::min(k.in_size, static_cast<int>(center + support + 0.5));  // NOLINT(bugprone-incorrect-roundings)
    const int n = std::clamp(xmax - xmin, 0, ksize);
    axis.bounds[static_cast<size_t>(o) * 2] = xmin;
    axis.bounds[static_cast<size_t>(o) * 2 + 1] = n;
    const auto offset = static_cast<float>(xmin - center + 0.5);
    if (!batched) {
      weights(offset, inv, n, stride, &axis.coeffs[static_cast<size_t>(o) * stride]);
      continue;
    }
    offsets[pending] = offset;
    counts[pending] = n;
    if (++pending == 8) {
      weights8(offsets, inv, counts, ksize, &axis.coeffs[static_cast<size_t>(o - 7) * stride]);
      pending = 0;
    }
  }
  for (int i = 0; i < pending; ++i)
    weights_one(offsets[i], inv, counts[i], stride, &axis.coeffs[static_cast<size_t>(k.out_size - pending + i) * stride]);
  axis.key = k;
}

}  // namespace

void plan_axis(PlaneAxis& axis, const PlaneAxisKey& k, SimdLevel kernels) {
  if (axis.key == k) return;
  kernels = std::min(kernels, active_simd_level());
  if (k.filter == ResampleFilter::bicubic)
    plan_axis_with<ResampleFilter::bicubic>(axis, k, kernels);
  else
    plan_axis_with<ResampleFilter::bilinear>(axis, k, kernels);
}

}  // namespace slip::detail
