// slip/export.hpp — which symbols libslipstream exports.
//
// The library is built with -fvisibility=hidden: only what the public headers declare inside
// `namespace SLIP_API slip` is exported (GCC/Clang apply a namespace's visibility to every
// declaration in it). Internals, and the copies of nlohmann::json, fmt and spdlog code the
// library instantiates, stay private, so a program with its own copies of those libraries
// cannot interpose on ours, nor we on theirs. Test hooks live in namespace SLIP_HIDDEN detail.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define SLIP_API __attribute__((visibility("default")))
#define SLIP_HIDDEN __attribute__((visibility("hidden")))
#else
#define SLIP_API
#define SLIP_HIDDEN
#endif
