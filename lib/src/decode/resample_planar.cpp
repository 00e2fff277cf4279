#include "decode/resample_planar.hpp"

#include <algorithm>

#include <immintrin.h>

namespace slip::detail {
namespace {

constexpr int kBits = 14;  // coefficient precision: |k| < 2^15 for every filter weight (bicubic peaks at 1.0)

// Pillow's 22-bit coefficients rounded to 14 bits (the weights are the same doubles).
void to_q14(const ResampleAxis& axis, int out_size, std::vector<int16_t>& q) {
  const size_t n = static_cast<size_t>(out_size) * axis.ksize;
  q.resize(n);
  for (size_t i = 0; i < n; ++i) q[i] = static_cast<int16_t>((axis.coeffs[i] + 128) >> 8);
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
  const int vec_width = width & ~15;
  const __m256i half = _mm256_set1_epi32(1 << (kBits - 1));
  const __m128i zero = _mm_setzero_si128();
  for (int r = 0; r < rows; ++r) {
    const uint8_t* base = in + static_cast<size_t>(bounds[2 * r] - row_offset) * in_stride;
    const int n = bounds[2 * r + 1];
    const int16_t* k = coeffs + static_cast<size_t>(r) * ksize;
    uint8_t* o = out + r * out_stride;
    for (int x = 0; x < vec_width; x += 16) {
      __m256i acc0 = half, acc1 = half;
      int j = 0;
      for (; j + 2 <= n; j += 2) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + static_cast<size_t>(j) * in_stride + x));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + static_cast<size_t>(j + 1) * in_stride + x));
        const __m256i kk = _mm256_set1_epi32(static_cast<int32_t>(static_cast<uint16_t>(k[j]) | static_cast<uint32_t>(static_cast<uint16_t>(k[j + 1])) << 16));
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
      const __m256i words = _mm256_permute4x64_epi64(_mm256_packs_epi32(_mm256_srai_epi32(acc0, kBits), _mm256_srai_epi32(acc1, kBits)),
                                                     0xD8);
      const __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o + x), bytes);
    }
  }
  if (vec_width < width)
    vertical_columns_scalar(in, in_stride, vec_width, width, bounds, coeffs, ksize, row_offset, rows, out, out_stride);
}

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
const bool kAvx2 = cpu_has_avx2();

void vertical_columns(const uint8_t* in, size_t in_stride, int width, const ResampleAxis& axis, const std::vector<int16_t>& coeffs,
                      int row_offset, int rows, uint8_t* out, ptrdiff_t out_stride) {
  if (kAvx2)
    vertical_columns_avx2(in, in_stride, width, axis.bounds.data(), coeffs.data(), axis.ksize, row_offset, rows, out, out_stride);
  else
    vertical_columns_scalar(in, in_stride, 0, width, axis.bounds.data(), coeffs.data(), axis.ksize, row_offset, rows, out, out_stride);
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
    for (int x = 0; x < w8; x += 8) transpose8x8(in + static_cast<size_t>(y) * in_stride + x, in_stride, out + static_cast<size_t>(x) * out_stride + y, out_stride);
  for (int y = 0; y < height; ++y) {
    const int x_first = y < h8 ? w8 : 0;
    for (int x = x_first; x < width; ++x) out[static_cast<size_t>(x) * out_stride + y] = in[static_cast<size_t>(y) * in_stride + x];
  }
}

void resample_plane(const PlaneView& in, double x0, double y0, double x1, double y1, int out_w, int out_h, ResampleFilter filter,
                    PlaneResampleScratch& s, uint8_t* out, size_t out_stride, bool mirror) {
  const auto plan = [](ResampleAxis& axis, std::vector<int16_t>& q, PlaneAxisKey& key, const PlaneAxisKey& wanted) {
    if (key == wanted) return;
    precompute_axis(axis, wanted.in_size, wanted.in0, wanted.in1, wanted.out_size, wanted.filter);
    to_q14(axis, wanted.out_size, q);
    key = wanted;
  };
  plan(s.vertical, s.coeffs_v, s.key_v, {in.height, y0, y1, out_h, filter});
  plan(s.horizontal, s.coeffs_h, s.key_h, {in.width, x0, x1, out_w, filter});
  // The columns the horizontal taps read (the bounds grow with the output index).
  const int cx0 = s.horizontal.bounds[0];
  const int cx1 = s.horizontal.bounds[static_cast<size_t>(out_w - 1) * 2] + s.horizontal.bounds[static_cast<size_t>(out_w - 1) * 2 + 1];
  const int columns = cx1 - cx0;
  // Vertical first: out_h rows of the needed columns.
  s.pass1.resize(static_cast<size_t>(out_h) * columns);
  vertical_columns(in.data + cx0, in.stride, columns, s.vertical, s.coeffs_v, 0, out_h, s.pass1.data(), columns);
  // Transposed, the horizontal pass is the same contiguous kernel over columns instead of rows.
  s.pass1_t.resize(static_cast<size_t>(columns) * out_h);
  transpose_plane(s.pass1.data(), static_cast<size_t>(columns), columns, out_h, s.pass1_t.data(), static_cast<size_t>(out_h));
  s.pass2.resize(static_cast<size_t>(out_w) * out_h);
  uint8_t* first = mirror ? s.pass2.data() + static_cast<size_t>(out_w - 1) * out_h : s.pass2.data();
  const ptrdiff_t step = mirror ? -static_cast<ptrdiff_t>(out_h) : static_cast<ptrdiff_t>(out_h);
  vertical_columns(s.pass1_t.data(), static_cast<size_t>(out_h), out_h, s.horizontal, s.coeffs_h, cx0, out_w, first, step);
  transpose_plane(s.pass2.data(), static_cast<size_t>(out_h), out_h, out_w, out, out_stride);
}

}  // namespace slip::detail
