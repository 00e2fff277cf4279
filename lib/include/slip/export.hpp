// slip/export.hpp — which symbols libslipstream exports.
//
// The library is built with -fvisibility=hidden: only what the public headers declare between
// SLIP_API_BEGIN and SLIP_API_END (a visibility push/pop, understood by GCC and Clang alike) is
// exported, and the version script (lib/slipstream.map) keeps the dynamic table to slip::.
// Internals, and the copies of nlohmann::json, fmt and spdlog code the library instantiates,
// stay private, so a program with its own copies of those libraries cannot interpose on ours,
// nor we on theirs. Test hooks in public headers are marked SLIP_HIDDEN.
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
