// slip/simd.hpp — which SIMD kernels the library runs.
//
// Every kernel family (the RGB and planar resamplers, the colour conversions, the Huffman
// decoder's BMI2 path) runs the highest variant it has at or below the level in use; every level
// gives the same bytes (the tests compare them). The default is the best level this CPU has.
#pragma once

#include "slip/export.hpp"

#include <string_view>

#include "slip/runtime.hpp"

SLIP_API_BEGIN
namespace slip {

// Lowest first. sse4: SSE4.1 and SSSE3. avx2: AVX2 (with BMI2 for the Huffman decoder).
// avx512: F, BW, VNNI and VBMI (Ice Lake, Sapphire Rapids, Zen 4 and later).
enum class SimdLevel { scalar, sse4, avx2, avx512 };

// "scalar", "sse4", "avx2" or "avx512".
std::string_view simd_level_name(SimdLevel level) noexcept;
// The inverse; Error(usage) naming the levels for any other name.
SimdLevel parse_simd_level(std::string_view name);

// The highest level this CPU (and OS) supports.
SimdLevel cpu_simd_level() noexcept;
// The level in use: cpu_simd_level() unless set_simd_level chose a lower one.
SimdLevel simd_level() noexcept;
// simd_level()'s name, e.g. for a version line.
std::string_view simd_level_name() noexcept;

// Process-wide: the kernels run at most `level` from now on (calls already running may finish
// with the previous level; both give the same bytes). Throws Error(usage) naming the level and
// what this CPU has when the CPU lacks it: a level is never silently lowered.
void set_simd_level(SimdLevel level);
void set_simd_level(std::string_view name);

// SLIP_SIMD (scalar, sse4, avx2 or avx512) from `env`, when set: set_simd_level(its value). The
// `slip` command and the Python module call it once at start (the library reads no environment
// variable by itself). Throws as set_simd_level does, naming the variable.
void apply_simd_environment(const Environment& env);

}  // namespace slip
SLIP_API_END
