// bench/kernel_ab.sh's driver: times two builds of a kernel alternately, 20 rounds of `iters`
// runs each, and prints the best times and their ratio (B over A), and whether the two builds
// gave the same bytes (resampling).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string_view>
#include <vector>

extern "C" double slip_ab_a(int kind, const uint8_t* in, int w, int h, int out, int filter, uint8_t* out_buffer, int iters);
extern "C" double slip_ab_b(int kind, const uint8_t* in, int w, int h, int out, int filter, uint8_t* out_buffer, int iters);

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s resample|colour W H OUT bilinear|bicubic\n", argv[0]);
    return 2;
  }
  const int kind = std::string_view(argv[1]) == "colour" ? 1 : 0;
  const int w = std::atoi(argv[2]), h = std::atoi(argv[3]), out = std::atoi(argv[4]);
  const int filter = std::string_view(argv[5]) == "bicubic" ? 1 : 0;
  const bool sizes_ok =
      kind == 1 ? w >= 1 && w <= 1024 : w >= 1 && h >= 1 && out >= 1 && static_cast<size_t>(w) * h <= (size_t{1} << 20) && out <= 1024;
  if (!sizes_ok) {
    std::fprintf(stderr, "sizes out of range (W x H at most 1 MiB, OUT at most 1024)\n");
    return 2;
  }
  std::vector<uint8_t> in(size_t{4} << 20);
  std::mt19937 rng(1);
  for (auto& v : in) v = static_cast<uint8_t>(rng());
  std::vector<uint8_t> out_a(static_cast<size_t>(out) * out + 64), out_b(out_a.size());
  double a = 1e300, b = 1e300;
  for (int round = 0; round < 20; ++round) {
    a = std::min(a, slip_ab_a(kind, in.data(), w, h, out, filter, out_a.data(), 50));
    b = std::min(b, slip_ab_b(kind, in.data(), w, h, out, filter, out_b.data(), 50));
  }
  if (kind == 1)
    std::printf("colour, sixteen %d px crops: A %.2f us, B %.2f us, B/A %.3f\n", w, a, b, b / a);
  else
    std::printf("resample %dx%d -> %d %s: A %.2f us, B %.2f us, B/A %.3f, %s\n", w, h, out, argv[5], a, b, b / a,
                out_a == out_b ? "same bytes" : "DIFFERENT BYTES");
  return kind == 0 && out_a != out_b ? 1 : 0;
}
