// Shared by the Loader tests over one cache and over a dataset: ranks resuming one state.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "slip/loader.hpp"

namespace slip::test {

// Ranks 0 .. world-1, each a Loader made by make_loader(rank) that loads `state` and takes
// `batches` batches (all of the epoch when nullopt): the samples they saw, in rank order, and
// in `out` where they all stand after (every rank must report the same place).
template <class MakeLoader>
std::vector<uint64_t> run_resumed_ranks(uint32_t world, const LoaderState& state, std::optional<size_t> batches, LoaderState& out,
                                        MakeLoader&& make_loader) {
  std::vector<uint64_t> seen;
  for (uint32_t r = 0; r < world; ++r) {
    const std::unique_ptr<Loader> loader = make_loader(r);
    loader->load_state(state);
    const uint64_t g = loader->start();
    for (size_t k = 0; !batches || k < *batches; ++k) {
      const auto next = loader->next(g);
      if (next.status != Loader::Next::batch) break;
      seen.insert(seen.end(), next.batch->samples.begin(), next.batch->samples.end());
    }
    const LoaderState s = loader->state();
    if (r > 0) {
      EXPECT_EQ(s.consumed, out.consumed) << "every rank stands at the same place";
    }
    out = s;
  }
  return seen;
}

}  // namespace slip::test
