// The YUV420 payload conversions of spec §1.6.1 and their inverse.
//
// The forward transform must be bit-exact with the Python builder (numpy float32), so it is
// computed in float32 with the products summed left to right and no fused multiply-add: this
// file is compiled with -ffp-contract=off (lib/CMakeLists.txt) and never with -ffast-math.
#include "slip/yuv420.hpp"

#include <algorithm>
#include <array>

#include "image/yuv420_kernels.hpp"
#include "slip/error.hpp"

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

void rgb_row_pair_to_yuv420(const uint8_t* row0, const uint8_t* row1, uint32_t width, uint32_t padded_width, uint8_t* y0,
                            uint8_t* y1, uint8_t* u, uint8_t* v) {
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

// Chroma contributions of the inverse transform, 16.16 fixed point, indexed by the stored byte.
struct InverseTables {
  std::array<int32_t, 256> r_v, g_uv_u, g_uv_v, b_u;
  InverseTables() {
    constexpr int32_t kR = 91881, kGu = 22554, kGv = 46802, kB = 116130;  // 1.402, 0.344136, 0.714136, 1.772 * 65536
    for (int i = 0; i < 256; ++i) {
      r_v[i] = kR * (i - 128);
      g_uv_u[i] = -kGu * (i - 128);
      g_uv_v[i] = -kGv * (i - 128);
      b_u[i] = kB * (i - 128);
    }
  }
};
const InverseTables kInverse;

inline uint8_t clamp_fixed(int32_t v) {
  v >>= 16;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

}  // namespace

void yuv420_region_to_rgb(const uint8_t* yp, int width, int height, int x0, int y0, int x1, int y1, uint8_t* out,
                          size_t stride) {
  const uint8_t* up = yp + static_cast<size_t>(width) * height;
  const uint8_t* vp = up + static_cast<size_t>(width / 2) * (height / 2);
  for (int y = y0; y < y1; ++y) {
    const uint8_t* yrow = yp + static_cast<size_t>(y) * width;
    const uint8_t* urow = up + static_cast<size_t>(y / 2) * (width / 2);
    const uint8_t* vrow = vp + static_cast<size_t>(y / 2) * (width / 2);
    uint8_t* o = out + static_cast<size_t>(y - y0) * stride;
    int x = x0;
    auto one = [&](int xx, int32_t rc, int32_t gc, int32_t bc) {
      const int32_t luma = yrow[xx] << 16 | 1 << 15;
      o[0] = clamp_fixed(luma + rc);
      o[1] = clamp_fixed(luma + gc);
      o[2] = clamp_fixed(luma + bc);
      o += 3;
    };
    auto chroma = [&](int xx, int32_t& rc, int32_t& gc, int32_t& bc) {
      const uint8_t u = urow[xx / 2], v = vrow[xx / 2];
      rc = kInverse.r_v[v];
      gc = kInverse.g_uv_u[u] + kInverse.g_uv_v[v];
      bc = kInverse.b_u[u];
    };
    int32_t rc, gc, bc;
    if (x < x1 && (x & 1)) {  // an odd first column shares its chroma with the column before
      chroma(x, rc, gc, bc);
      one(x, rc, gc, bc);
      ++x;
    }
    for (; x + 1 < x1; x += 2) {  // two luma samples per chroma sample
      chroma(x, rc, gc, bc);
      one(x, rc, gc, bc);
      one(x + 1, rc, gc, bc);
    }
    if (x < x1) {
      chroma(x, rc, gc, bc);
      one(x, rc, gc, bc);
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
    detail::rgb_row_pair_to_yuv420(row0, row1, rgb.width, out.width, y_plane + y * w, y_plane + (y + 1) * w,
                                   u_plane + (y / 2) * (w / 2), v_plane + (y / 2) * (w / 2));
  }
  return out;
}

RgbImage yuv420_to_rgb(std::span<const std::byte> payload, uint32_t width, uint32_t height) {
  if (width == 0 || height == 0 || width % 2 || height % 2 || payload.size() != uint64_t{width} * height * 3 / 2)
    throw Error(Errc::bad_input, "YUV420 payload of " + std::to_string(payload.size()) + " bytes does not match " +
                                     std::to_string(width) + "x" + std::to_string(height));
  RgbImage out;
  out.width = width;
  out.height = height;
  out.pixels.resize(uint64_t{width} * height * 3);
  detail::yuv420_region_to_rgb(reinterpret_cast<const uint8_t*>(payload.data()), static_cast<int>(width),
                               static_cast<int>(height), 0, 0, static_cast<int>(width), static_cast<int>(height),
                               out.pixels.data(), static_cast<size_t>(width) * 3);
  return out;
}

}  // namespace slip
