// Source-specific flags of `slip convert` (and later `subset`/`merge`), collected into a
// SourceOptions. One block per source kind in source_flags.cpp.
#pragma once

#include <CLI/CLI.hpp>

#include "slip/source.hpp"

namespace slip::cli {

void add_source_flags(CLI::App& sub, SourceOptions& options);

}  // namespace slip::cli
