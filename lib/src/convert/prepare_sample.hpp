// Internal: one sample prepared for the cache (convert_pipeline.cpp runs it on the workers):
// image fields checked and, where the cache's format asks, transcoded; payload checksums.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "slip/convert.hpp"
#include "slip/source.hpp"

namespace slip::detail {

// What preparing one sample produced.
struct PreparedSample {
  std::vector<uint64_t> sums;
  std::vector<uint64_t> offsets;  // where each payload field's bytes go in its .bin (CacheWriter::place)
  std::optional<std::string> problem;
  std::string problem_field;
  // (field, reason): each transcoded field with its own reason (a sample may hold a CMYK
  // JPEG in one field and raw pixels in another).
  std::vector<std::pair<std::string, std::string>> transcoded;
};

// Prepares sample `s` (which it may change: transcoded image bytes) for a cache of `schema`:
// `out` holds its checksums, or the problem that keeps it out of the cache.
void prepare_sample(Sample& s, const Schema& schema, NonJpegPolicy policy, bool restarts, uint64_t max_pixels, PreparedSample& out);

}  // namespace slip::detail
