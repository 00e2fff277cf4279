// Internal: what the SIMD kernels dispatch on. Each kernel file keeps a `const bool` (or a
// function pointer) initialised from these at load time; plain probes rather than target_clones,
// whose IFUNC resolvers run during relocation, before a sanitizer runtime is up.
#pragma once

#include <cstdint>

#include "slip/simd.hpp"

namespace slip::detail {

// The x86 kernels (<immintrin.h>, target attributes) are built on x86-64 only; elsewhere every
// probe says no and the portable scalar kernels run.
#if defined(__x86_64__)
inline bool cpu_has_ssse3() {
  __builtin_cpu_init();  // static initialisers may run before libgcc's own CPU probe
  return __builtin_cpu_supports("ssse3") != 0;
}
inline bool cpu_has_sse41() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.1") != 0;
}
inline bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
}
inline bool cpu_has_bmi2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("bmi2") != 0;
}
#else
inline bool cpu_has_ssse3() { return false; }
inline bool cpu_has_sse41() { return false; }
inline bool cpu_has_avx2() { return false; }
inline bool cpu_has_bmi2() { return false; }
#endif

// Kernel levels (slip/simd.hpp), in order. avx512: F, BW, VNNI and VBMI (Ice Lake, Sapphire
// Rapids, Zen 4 and later), with the OS saving the registers (libgcc checks XCR0). Kernels with a
// level argument give the same bytes at every level; tests compare them.
using SimdLevel = slip::SimdLevel;
inline SimdLevel best_simd_level() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni") &&
                      __builtin_cpu_supports("avx512vbmi");
  const bool sse4 = cpu_has_sse41() && cpu_has_ssse3();
  const bool avx2 = sse4 && cpu_has_avx2();
  return avx2 && avx512 ? SimdLevel::avx512 : avx2 ? SimdLevel::avx2 : sse4 ? SimdLevel::sse4 : SimdLevel::scalar;
#else
  return SimdLevel::scalar;
#endif
}

// The level the kernels run at: the CPU's best unless slip::set_simd_level chose a lower one.
// Read per call (a relaxed atomic load), so that a level set at run time reaches every kernel.
inline SimdLevel active_simd_level() noexcept { return slip::simd_level(); }

// Two 16-bit multipliers in one 32-bit lane, `low` first: the operand pmaddwd multiplies a pair
// of 16-bit values by (sum = a * low + b * high).
constexpr int32_t madd_pair(int16_t low, int16_t high) {
  return static_cast<int32_t>(static_cast<uint16_t>(low) | static_cast<uint32_t>(static_cast<uint16_t>(high)) << 16);
}

}  // namespace slip::detail
