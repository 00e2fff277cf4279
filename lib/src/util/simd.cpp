// The process-wide SIMD level (slip/simd.hpp): the CPU's best, probed once, unless lowered.
#include "slip/simd.hpp"

#include <atomic>
#include <string>

#include "slip/error.hpp"
#include "util/cpu.hpp"

namespace slip {
namespace {

constexpr SimdLevel kLevels[] = {SimdLevel::scalar, SimdLevel::sse4, SimdLevel::avx2, SimdLevel::avx512};

// -1 until first read or set: constant-initialised, so kernels' static initialisers may read it.
std::atomic<int> g_level{-1};

std::string levels_up_to(SimdLevel best) {
  std::string names;
  for (SimdLevel l : kLevels)
    if (l <= best) names += (names.empty() ? "" : ", ") + std::string(simd_level_name(l));
  return names;
}

}  // namespace

std::string_view simd_level_name(SimdLevel level) noexcept {
  switch (level) {
    case SimdLevel::scalar:
      return "scalar";
    case SimdLevel::sse4:
      return "sse4";
    case SimdLevel::avx2:
      return "avx2";
    case SimdLevel::avx512:
      return "avx512";
  }
  return "unknown";
}

SimdLevel parse_simd_level(std::string_view name) {
  for (SimdLevel l : kLevels)
    if (simd_level_name(l) == name) return l;
  throw Error(Errc::usage, "unknown SIMD level '" + std::string(name) + "' (scalar, sse4, avx2 or avx512)");
}

SimdLevel cpu_simd_level() noexcept {
  static const SimdLevel best = detail::best_simd_level();
  return best;
}

SimdLevel simd_level() noexcept {
  const int level = g_level.load(std::memory_order_relaxed);
  if (level >= 0) return static_cast<SimdLevel>(level);
  int unset = -1;
  const SimdLevel best = cpu_simd_level();
  g_level.compare_exchange_strong(unset, static_cast<int>(best), std::memory_order_relaxed);  // a set_simd_level that won stays
  return static_cast<SimdLevel>(g_level.load(std::memory_order_relaxed));
}

std::string_view simd_level_name() noexcept { return simd_level_name(simd_level()); }

void set_simd_level(SimdLevel level) {
  const SimdLevel best = cpu_simd_level();
  if (level > best)
    throw Error(Errc::usage,
                "SIMD level " + std::string(simd_level_name(level)) + " is not available on this CPU (it has " + levels_up_to(best) + ")");
  g_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

void set_simd_level(std::string_view name) { set_simd_level(parse_simd_level(name)); }

void apply_simd_environment(const Environment& env) {
  const auto value = env_value(env, "SLIP_SIMD");
  if (!value) return;
  try {
    set_simd_level(*value);
  } catch (const Error& e) {
    throw Error(e.code(), "SLIP_SIMD: " + e.message());
  }
}

}  // namespace slip
