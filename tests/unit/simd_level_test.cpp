// The SIMD level override (slip/simd.hpp): names, refusals, SLIP_SIMD, and the kernel families
// that read the process-wide level (the RGB resampler, the YUV420 region conversion) giving the
// scalar level's bytes at every level this CPU has.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "decode/resample.hpp"
#include "image/yuv420_kernels.hpp"
#include "slip/error.hpp"
#include "slip/simd.hpp"
#include "util/cpu.hpp"

namespace slip {
namespace {

// Sets the process-wide level for one scope; the previous level comes back after.
class ScopedSimdLevel {
 public:
  explicit ScopedSimdLevel(SimdLevel level) : saved_(simd_level()) { set_simd_level(level); }
  ~ScopedSimdLevel() { set_simd_level(saved_); }
  ScopedSimdLevel(const ScopedSimdLevel&) = delete;
  ScopedSimdLevel& operator=(const ScopedSimdLevel&) = delete;

 private:
  SimdLevel saved_;
};

constexpr SimdLevel kAll[] = {SimdLevel::scalar, SimdLevel::sse4, SimdLevel::avx2, SimdLevel::avx512};

TEST(SimdLevel, NamesRoundTripAndOthersAreRefused) {
  for (SimdLevel l : kAll) EXPECT_EQ(parse_simd_level(simd_level_name(l)), l);
  EXPECT_EQ(simd_level_name(SimdLevel::sse4), "sse4");
  try {
    parse_simd_level("avx");
    FAIL() << "'avx' was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::usage);
    EXPECT_NE(std::string(e.what()).find("unknown SIMD level 'avx' (scalar, sse4, avx2 or avx512)"), std::string::npos) << e.what();
  }
}

// The default is the CPU's best, which is what libgcc's probe says (AVX-512 needing F, BW,
// VNNI and VBMI); every level up to it can be set and read back.
TEST(SimdLevel, DefaultsToTheCpusBestAndEveryLevelUpToItCanBeSet) {
  EXPECT_EQ(cpu_simd_level(), detail::best_simd_level());
  EXPECT_EQ(simd_level(), cpu_simd_level());
  EXPECT_EQ(simd_level_name(), simd_level_name(cpu_simd_level()));
  for (SimdLevel l : kAll) {
    if (l > cpu_simd_level()) continue;
    const ScopedSimdLevel scoped(l);
    EXPECT_EQ(simd_level(), l);
    EXPECT_EQ(detail::active_simd_level(), l);
    EXPECT_EQ(simd_level_name(), simd_level_name(l));
  }
  EXPECT_EQ(simd_level(), cpu_simd_level());
}

// A level above the CPU's is refused, naming it and what the CPU has, and changes nothing.
TEST(SimdLevel, ALevelTheCpuLacksIsRefused) {
  if (cpu_simd_level() == SimdLevel::avx512) GTEST_SKIP() << "this CPU has every level";
  const SimdLevel missing = static_cast<SimdLevel>(static_cast<int>(cpu_simd_level()) + 1);
  const ScopedSimdLevel scoped(SimdLevel::scalar);
  try {
    set_simd_level(missing);
    FAIL() << simd_level_name(missing) << " was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::usage);
    const std::string want = "SIMD level " + std::string(simd_level_name(missing)) + " is not available on this CPU (it has scalar";
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::string(simd_level_name(cpu_simd_level())) + ")"), std::string::npos) << e.what();
  }
  EXPECT_EQ(simd_level(), SimdLevel::scalar);
  EXPECT_THROW(set_simd_level("avx512"), Error);
}

TEST(SimdLevel, SlipSimdFromTheEnvironment) {
  const ScopedSimdLevel scoped(cpu_simd_level());
  const auto env_with = [](std::optional<std::string> value) -> Environment {
    return [value](std::string_view name) { return name == "SLIP_SIMD" ? value : std::nullopt; };
  };
  apply_simd_environment(env_with(std::nullopt));
  EXPECT_EQ(simd_level(), cpu_simd_level());
  apply_simd_environment(env_with(""));  // empty counts as unset
  EXPECT_EQ(simd_level(), cpu_simd_level());
  apply_simd_environment(env_with("scalar"));
  EXPECT_EQ(simd_level(), SimdLevel::scalar);
  try {
    apply_simd_environment(env_with("fast"));
    FAIL() << "SLIP_SIMD=fast was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::usage);
    EXPECT_NE(std::string(e.what()).find("SLIP_SIMD: unknown SIMD level 'fast'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(simd_level(), SimdLevel::scalar);
}

// One test per level above scalar (skipped where the CPU lacks it), against the scalar level.
class AboveScalar : public ::testing::TestWithParam<SimdLevel> {
 protected:
  void SetUp() override {
    if (GetParam() > cpu_simd_level()) GTEST_SKIP() << "this CPU has no " << simd_level_name(GetParam());
  }
};
INSTANTIATE_TEST_SUITE_P(Levels, AboveScalar, ::testing::Values(SimdLevel::sse4, SimdLevel::avx2, SimdLevel::avx512),
                         [](const auto& info) { return std::string(simd_level_name(info.param)); });

std::vector<uint8_t> noise(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 7 / 5) % 256 / 2 + rng() % 128);  // a ramp and noise
  return v;
}

// The Pillow-exact RGB resampler (SSE4.1 multiply-adds, AVX2 four rows at a time and vertical
// pass): shrinks, enlargements, fractional boxes, one-pixel images, both filters, mirrored.
TEST_P(AboveScalar, RgbResamplerGivesTheScalarBytes) {
  struct Case {
    int w, h;
    double x0, y0, x1, y1;
    int ow, oh;
  };
  const Case cases[] = {{500, 375, 0, 0, 500, 375, 224, 224},
                        {333, 250, 17.5, 3.25, 301.0, 240.5, 96, 96},
                        {97, 130, 0, 0, 97, 130, 224, 224},
                        {640, 480, 100, 50, 612, 470, 97, 61},
                        {1, 1, 0, 0, 1, 1, 7, 5},
                        {3, 7, 0, 0, 3, 7, 2, 9},
                        {1200, 900, 0, 0, 1200, 900, 200, 150},
                        {48, 33, 0, 0, 48, 33, 48, 33},
                        {20, 30, 0, 0, 20, 30, 24, 17},
                        {2400, 40, 0, 0, 2400, 40, 4, 3},
                        {64, 300, 0, 0, 64, 300, 64, 100},
                        {300, 64, 0, 0, 300, 64, 100, 64}};
  int compared = 0;
  for (const Case& c : cases)
    for (ResampleFilter f : {ResampleFilter::bilinear, ResampleFilter::bicubic})
      for (bool mirror : {false, true}) {
        const size_t stride = static_cast<size_t>(c.w) * 3 + 5;
        const auto in = noise(stride * static_cast<size_t>(c.h), static_cast<uint32_t>(c.w * 31 + c.h));
        const auto run = [&](SimdLevel level) {
          const ScopedSimdLevel scoped(level);
          detail::ResampleScratch scratch;
          std::vector<uint8_t> out(static_cast<size_t>(c.ow) * c.oh * 3);
          detail::resample_rgb({in.data(), c.w, c.h, stride}, c.x0, c.y0, c.x1, c.y1, c.ow, c.oh, f, scratch, out.data(), mirror);
          return out;
        };
        ASSERT_EQ(run(GetParam()), run(SimdLevel::scalar))
            << c.w << "x" << c.h << " -> " << c.ow << "x" << c.oh << (f == ResampleFilter::bicubic ? " bicubic" : " bilinear")
            << (mirror ? " mirrored" : "");
        ++compared;
      }
  EXPECT_EQ(compared, static_cast<int>(std::size(cases)) * 4);
}

// YUV420 payload regions to RGB (the SSE2 steps and SSSE3 interleave from sse4 up): every
// region width from 1 to 70 at even and odd first columns.
TEST_P(AboveScalar, Yuv420RegionsGiveTheScalarBytes) {
  constexpr int kW = 150, kH = 12;
  const auto payload = noise(static_cast<size_t>(kW) * kH * 3 / 2, 9);
  int compared = 0;
  for (int x0 : {0, 1, 6, 17})
    for (int width = 1; width <= 70; ++width) {
      const int x1 = std::min(kW, x0 + width), y0 = x0 % 3, y1 = kH;
      const auto run = [&](SimdLevel level) {
        const ScopedSimdLevel scoped(level);
        std::vector<uint8_t> out(static_cast<size_t>(x1 - x0) * 3 * (y1 - y0));
        detail::yuv420_region_to_rgb(payload.data(), kW, kH, x0, y0, x1, y1, out.data(), static_cast<size_t>(x1 - x0) * 3);
        return out;
      };
      ASSERT_EQ(run(GetParam()), run(SimdLevel::scalar)) << "columns " << x0 << ".." << x1;
      ++compared;
    }
  EXPECT_EQ(compared, 4 * 70);
}

}  // namespace
}  // namespace slip
