// slip/export.hpp — which symbols libslipstream exports.
//
// The library is built with -fvisibility=hidden: only what the public headers declare between
// SLIP_API_BEGIN and SLIP_API_END (a visibility push/pop, understood by GCC and Clang alike) is
// exported, and the version script (lib/slipstream.map) keeps the dynamic table to slip::.
// Internals, and the copies of nlohmann::json, fmt and spdlog code the library instantiates,
// stay private, so a program with its own copies of those libraries cannot interpose on ours,
// nor we on theirs. Test hooks in public headers are marked SLIP_HIDDEN.
//
// Unstable API: slip/sigv4.hpp and the declarations of other headers inside
// `#ifdef SLIP_UNSTABLE_API` serve the library's own tests and tools. They may change or go in
// any release, even a patch release, and are invisible unless the includer defines
// SLIP_UNSTABLE_API (as ZSTD_STATIC_LINKING_ONLY does for zstd). Everything else follows the
// 0.x ABI policy in docs/ARCHITECTURE.md: SONAME libslipstream.so.0.<minor>.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define SLIP_API_BEGIN _Pragma("GCC visibility push(default)")
#define SLIP_API_END _Pragma("GCC visibility pop")
#define SLIP_HIDDEN __attribute__((visibility("hidden")))
#else
#define SLIP_API_BEGIN
#define SLIP_API_END
#define SLIP_HIDDEN
#endif
