// slip's XXH3-64 (the run-time dispatched AVX2/AVX-512 code) against libxxhash's plain SSE2
// XXH3_64bits and the published value of the empty input: caches written before and after the
// switch, and by any other XXH3 implementation, must carry the same checksums.
#include <xxhash.h>

#include <cstddef>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "slip/hash.hpp"

namespace {

std::vector<std::byte> random_bytes(size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng());
  return out;
}

TEST(Xxh3, EmptyInputHasThePublishedValue) {
  EXPECT_EQ(slip::xxh3_64({}), 0x2D06800538D394C2ull);  // xxhash's own test vector
  EXPECT_EQ(slip::hex64(slip::Xxh3().digest()), "2d06800538d394c2");
}

TEST(Xxh3, OneShotMatchesThePlainImplementationAtEveryLength) {
  const auto data = random_bytes((1 << 20) + 4099, 1);
  // Every length through the short-input, mid-size and first stripes/blocks (1024 bytes a
  // block of 16 stripes), then long inputs with ragged tails.
  for (size_t len = 0; len <= 2100; ++len) ASSERT_EQ(slip::xxh3_64(std::span(data.data(), len)), XXH3_64bits(data.data(), len)) << len;
  for (size_t len : {size_t{65536}, size_t{65537}, size_t{1} << 20, data.size()})
    ASSERT_EQ(slip::xxh3_64(std::span(data.data(), len)), XXH3_64bits(data.data(), len)) << len;
}

TEST(Xxh3, StreamingInRandomPiecesEqualsOneShot) {
  const auto data = random_bytes((3 << 20) + 123, 2);
  std::mt19937 rng(3);
  for (int round = 0; round < 4; ++round) {
    slip::Xxh3 h;
    for (size_t at = 0; at < data.size();) {
      const size_t n = std::min<size_t>(data.size() - at, std::uniform_int_distribution<size_t>(0, round % 2 ? 300 : 200000)(rng));
      h.update(std::span(data.data() + at, n));
      at += n;
    }
    EXPECT_EQ(h.digest(), XXH3_64bits(data.data(), data.size())) << round;
  }
}

}  // namespace
