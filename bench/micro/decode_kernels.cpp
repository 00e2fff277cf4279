// Micro-benchmarks of the kernels behind slip bench: full JPEG decode (TurboJPEG, the limit,
// against the engine's libjpeg path), crop-aware region decode, the Pillow-exact resampler, the
// planar resampler, and the YUV420 conversions. One thread each; items/s are images (or crops) per second.
#include <benchmark/benchmark.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <vector>

#include "decode/jpeg_region.hpp"
#include "decode/resample.hpp"
#include "decode/resample_planar.hpp"
#include "image/jpeg_restarts.hpp"
#include "image/yuv420_kernels.hpp"
#include "slip/decode.hpp"
#include "slip/image.hpp"
#include "slip/yuv420.hpp"

namespace {

namespace fs = std::filesystem;

fs::path shared_dir() {
  if (const char* env = std::getenv("SLIP_SHARED_DIR"); env && *env) return env;
  return SLIP_SHARED_DIR;
}

// A typical ImageNet training image: 500x375, 4:2:0 baseline.
const std::vector<std::byte>& sample_jpeg() {
  static const std::vector<std::byte> bytes = [] {
    std::ifstream in(shared_dir() / "corpus/imagenet_like/n01440764/n01440764_10235.JPEG", std::ios::binary);
    const std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> out(raw.size());
    std::memcpy(out.data(), raw.data(), raw.size());
    return out;
  }();
  return bytes;
}

void BM_TurboJpegFullDecode(benchmark::State& state) {
  const auto& jpeg = sample_jpeg();
  std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitDecompress(), tjDestroy);
  int w = 0, h = 0, ss = 0, cs = 0;
  const auto* data = reinterpret_cast<const unsigned char*>(jpeg.data());
  tjDecompressHeader3(handle.get(), data, jpeg.size(), &w, &h, &ss, &cs);
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  for (auto _ : state) benchmark::DoNotOptimize(tjDecompress2(handle.get(), data, jpeg.size(), rgb.data(), w, 0, h, TJPF_RGB, 0));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TurboJpegFullDecode);

void BM_EngineFullDecode(benchmark::State& state) {
  const auto& jpeg = sample_jpeg();
  for (auto _ : state) benchmark::DoNotOptimize(slip::engine_decode_full(jpeg));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EngineFullDecode);

// Region decode of a centred window of side arg (px) at DCT scale 1 (arg 0: the whole image at 1/2).
void BM_CropAwareDecode(benchmark::State& state) {
  const auto& jpeg = sample_jpeg();
  slip::detail::JpegRegionDecoder decoder;
  slip::detail::JpegImageInfo info;
  std::vector<uint8_t> scratch;
  slip::detail::DecodedRegion region;
  const int side = static_cast<int>(state.range(0));
  for (auto _ : state) {
    decoder.read_header(jpeg, info);
    if (side == 0) {
      decoder.decode_region(2, 0, 0, (info.width + 1) / 2, (info.height + 1) / 2, scratch, region);
    } else {
      const int x0 = (info.width - side) / 2, y0 = (info.height - side) / 2;
      decoder.decode_region(1, x0, y0, x0 + side, y0 + side, scratch, region);
    }
    benchmark::DoNotOptimize(region.data);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CropAwareDecode)->Arg(0)->Arg(128)->Arg(256)->Arg(375);

// The whole sample to its planes (no IDCT skipped) with libjpeg's Huffman decoder (arg 0) or
// slip's (arg 1), as stored (arg2 0) or re-encoded with restart markers (arg2 1), which sends
// libjpeg-turbo 2.1 to its slow decoder.
void BM_PlanesFullDecode(benchmark::State& state) {
  static const std::vector<std::byte> restarted = *slip::detail::reencode_with_restarts(sample_jpeg());
  const auto& jpeg = state.range(1) ? restarted : sample_jpeg();
  slip::detail::JpegRegionDecoder decoder;
  decoder.set_entropy_decoding(state.range(0) ? slip::detail::EntropyDecoding::slip_only : slip::detail::EntropyDecoding::libjpeg);
  slip::detail::JpegImageInfo info;
  std::vector<uint8_t> scratch;
  slip::detail::DecodedPlanes planes;
  for (auto _ : state) {
    decoder.read_header(jpeg, info);
    if (!decoder.decode_planes(1, 0, 0, info.width, info.height, scratch, planes)) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(planes.data[0]);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PlanesFullDecode)->Args({0, 0})->Args({1, 0})->Args({0, 1})->Args({1, 1});

// libjpeg's Huffman decoder against slip's on the corpus's baseline JPEGs (arg 1: re-encoded
// with restart markers): each image decoded whole to its planes by one then the other, R
// rounds, each image's fastest of each kept (thread CPU time). A ratio measured in one run, as
// the machines here are shared: libjpeg_over_slip > 1 means slip's is faster.
double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
void BM_EntropyDecoderRatio(benchmark::State& state) {
  std::vector<std::vector<std::byte>> images;
  for (const auto& entry : fs::recursive_directory_iterator(shared_dir() / "corpus/imagenet_like")) {
    if (!entry.is_regular_file() || entry.path().extension() != ".JPEG" || images.size() >= 200) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> bytes(raw.size());
    std::memcpy(bytes.data(), raw.data(), raw.size());
    if (state.range(0)) {
      auto restarted = slip::detail::reencode_with_restarts(bytes);
      if (!restarted) continue;
      bytes = std::move(*restarted);
    }
    images.push_back(std::move(bytes));
  }
  slip::detail::JpegRegionDecoder libjpeg, ours;
  libjpeg.set_entropy_decoding(slip::detail::EntropyDecoding::libjpeg);
  ours.set_entropy_decoding(slip::detail::EntropyDecoding::slip_only);
  std::vector<double> best_libjpeg(images.size(), 1e9), best_ours(images.size(), 1e9);
  std::vector<uint8_t> scratch;
  slip::detail::DecodedPlanes planes;
  size_t decoded = 0;
  auto timed = [&](slip::detail::JpegRegionDecoder& d, const std::vector<std::byte>& jpeg, double& best) {
    slip::detail::JpegImageInfo info;
    const double t0 = thread_seconds();
    // Second argument 1: only the last row is transformed, every row above it only
    // entropy-decoded, so the ratio is (nearly) the Huffman decoders' alone.
    if (!d.read_header(jpeg, info) || !d.planar_capable()) return;
    if (!d.decode_planes(1, 0, state.range(1) ? info.height - 1 : 0, info.width, info.height, scratch, planes)) return;
    best = std::min(best, thread_seconds() - t0);
  };
  for (auto _ : state)
    for (int round = 0; round < 5; ++round)
      for (size_t i = 0; i < images.size(); ++i) {
        timed(libjpeg, images[i], best_libjpeg[i]);
        timed(ours, images[i], best_ours[i]);
        ++decoded;
      }
  double sum_libjpeg = 0, sum_ours = 0;
  for (size_t i = 0; i < images.size(); ++i)
    if (best_libjpeg[i] < 1e9 && best_ours[i] < 1e9) sum_libjpeg += best_libjpeg[i], sum_ours += best_ours[i];
  state.counters["libjpeg_ms"] = 1e3 * sum_libjpeg;
  state.counters["slip_ms"] = 1e3 * sum_ours;
  state.counters["libjpeg_over_slip"] = sum_ours > 0 ? sum_libjpeg / sum_ours : 0;
  state.SetItemsProcessed(static_cast<int64_t>(decoded));
}
BENCHMARK(BM_EntropyDecoderRatio)->ArgsProduct({{0, 1}, {0, 1}})->Iterations(1)->Unit(benchmark::kMillisecond);

// The resampler: a side x side RGB window to 224x224 (bilinear), as rrc does after decoding.
void BM_ResampleTo224(benchmark::State& state) {
  const int side = static_cast<int>(state.range(0));
  std::vector<uint8_t> in(static_cast<size_t>(side) * side * 3);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  std::vector<uint8_t> out(224 * 224 * 3);
  slip::detail::ResampleScratch scratch;
  const slip::detail::RgbView view{in.data(), side, side, static_cast<size_t>(side) * 3};
  for (auto _ : state) {
    slip::detail::resample_rgb(view, 0, 0, side, side, 224, 224,
                               state.range(1) ? slip::ResampleFilter::bicubic : slip::ResampleFilter::bilinear, scratch, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ResampleTo224)->Args({160, 0})->Args({300, 0})->Args({448, 0})->Args({300, 1});

// The planar path's work for the same crop: a side x side luma plane and two 4:2:0 chroma
// planes each to 224x224, then the conversion to RGB (compare with BM_ResampleTo224).
void BM_PlanarResampleTo224(benchmark::State& state) {
  const int side = static_cast<int>(state.range(0)), half = (side + 1) / 2;
  std::vector<uint8_t> y(static_cast<size_t>(side) * side), c(static_cast<size_t>(half) * half);
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<uint8_t>(i * 40503u >> 8);
  std::vector<uint8_t> py(224 * 224), pcb(py.size()), pcr(py.size()), out(224 * 224 * 3);
  slip::detail::PlaneResampleScratch scratch;
  scratch.kernels = static_cast<slip::detail::SimdLevel>(state.range(2));
  if (scratch.kernels > slip::detail::best_simd_level()) {
    state.SkipWithError("this CPU lacks that kernel level");
    return;
  }
  const auto filter = state.range(1) ? slip::ResampleFilter::bicubic : slip::ResampleFilter::bilinear;
  for (auto _ : state) {
    slip::detail::resample_plane({y.data(), side, side, static_cast<size_t>(side)}, 0, 0, side, side, 224, 224, filter, scratch, py.data(),
                                 224, false);
    slip::detail::resample_plane({c.data(), half, half, static_cast<size_t>(half)}, 0, 0, side / 2.0, side / 2.0, 224, 224, filter, scratch,
                                 pcb.data(), 224, false);
    slip::detail::resample_plane({c.data(), half, half, static_cast<size_t>(half)}, 0, 0, side / 2.0, side / 2.0, 224, 224, filter, scratch,
                                 pcr.data(), 224, false);
    slip::detail::ycbcr_planes_to_rgb(py.data(), pcb.data(), pcr.data(), 224, 224, 224, out.data(), 224 * 3);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}
// Args: source side, bicubic, kernel level (slip::SimdLevel: 2 AVX2, 3 AVX-512; the same bytes).
BENCHMARK(BM_PlanarResampleTo224)->ArgsProduct({{160, 300, 448}, {0}, {2, 3}})->Args({300, 1, 2})->Args({300, 1, 3});

// The planar path's pieces for one 224 crop: the colour conversion into an interleaved RGB
// buffer, and one plane transpose (two per resized plane).
void BM_YcbcrPlanesToRgb224(benchmark::State& state) {
  std::vector<uint8_t> y(224 * 224), cb(y.size()), cr(y.size()), out(224 * 224 * 3);
  for (size_t i = 0; i < y.size(); ++i) {
    y[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
    cb[i] = static_cast<uint8_t>(i * 40503u >> 8);
    cr[i] = static_cast<uint8_t>(i * 7919u >> 4);
  }
  const auto level = static_cast<slip::detail::SimdLevel>(state.range(0));  // 2 AVX2, 3 AVX-512 (at most the CPU's)
  for (auto _ : state) {
    slip::detail::ycbcr_planes_to_rgb(y.data(), cb.data(), cr.data(), 224, 224, 224, out.data(), 224 * 3, level);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_YcbcrPlanesToRgb224)->Arg(2)->Arg(3);

void BM_TransposePlane(benchmark::State& state) {
  const int width = static_cast<int>(state.range(0)), height = 224;
  std::vector<uint8_t> in(static_cast<size_t>(width) * height), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  for (auto _ : state) {
    slip::detail::transpose_plane(in.data(), static_cast<size_t>(width), width, height, out.data(), static_cast<size_t>(height));
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(in.size()));
}
BENCHMARK(BM_TransposePlane)->Arg(224)->Arg(301);

void BM_RgbToYuv420(benchmark::State& state) {
  const slip::RgbImage rgb = slip::decode_to_rgb(sample_jpeg());
  for (auto _ : state) benchmark::DoNotOptimize(slip::rgb_to_yuv420(rgb));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RgbToYuv420);

// YUV420 -> packed RGB of a side x side region (the engine's YUV420 decode), and the 1/2 reduction.
void BM_Yuv420RegionToRgb(benchmark::State& state) {
  const slip::Yuv420Image yuv = slip::rgb_to_yuv420(slip::decode_to_rgb(sample_jpeg()));
  const int side = static_cast<int>(state.range(0)), reduce = static_cast<int>(state.range(1));
  std::vector<uint8_t> out(static_cast<size_t>(side) * side * 3);
  std::vector<uint16_t> sums;
  const auto* data = reinterpret_cast<const uint8_t*>(yuv.planes.data());
  const int w = static_cast<int>(yuv.width), h = static_cast<int>(yuv.height);
  for (auto _ : state) {
    if (reduce > 1)
      slip::detail::yuv420_region_to_rgb_reduced(data, w, h, reduce, 0, 0, side / reduce, side / reduce, out.data(),
                                                 static_cast<size_t>(side / reduce) * 3, sums);
    else
      slip::detail::yuv420_region_to_rgb(data, w, h, 0, 0, side, side, out.data(), static_cast<size_t>(side) * 3);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Yuv420RegionToRgb)->Args({300, 1})->Args({374, 2});

}  // namespace

BENCHMARK_MAIN();
