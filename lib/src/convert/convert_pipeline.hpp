// Internal: convert()'s pipeline: samples read, prepared on the workers and written in order,
// the three stages overlapping within a byte budget.
#pragma once

#include <cstdint>

#include "format/cache_writer.hpp"
#include "slip/convert.hpp"
#include "slip/source.hpp"

namespace slip::detail {

// Up to `remaining` samples of `source` prepared and appended to `writer` (its payloads written
// by the workers when `parallel`), counted, timed and ledgered in `result`.
void run_convert_pipeline(Source& source, const Schema& schema, const ConvertOptions& options, unsigned threads, bool parallel,
                          uint64_t remaining, CacheWriter& writer, ConvertResult& result);

}  // namespace slip::detail
