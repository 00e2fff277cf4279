// slip bench CACHE|DATASET... --pipeline NAME (slip/pipelines.hpp) [--threads N] [--batch-size B]
//                  [--epochs E] [--cold] [--order sequential|shuffle] [--seed S] [--compare YUVCACHE|siblings]
//                  [--kernels scalar|sse4|avx2|avx512] [--checksum] [--json]
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli_errors.hpp"
#include "command.hpp"
#include "output.hpp"
#include "bench_harness.hpp"
#include "slip/cache.hpp"
#include "slip/dataset.hpp"
#include "slip/decode.hpp"
#include "slip/error.hpp"
#include "slip/pipelines.hpp"
#include "slip/simd.hpp"

namespace slip::cli {

namespace {

nlohmann::ordered_json report_json(const BenchReport& r) {
  nlohmann::ordered_json j;
  j["command"] = "bench";
  j["pipeline"] = r.pipeline;
  j["caches"] = r.caches;
  j["field"] = r.field;
  j["image_format"] = r.image_format;
  j["yuv420_siblings"] = r.yuv420_siblings;
  j["threads"] = r.threads;
  j["cpus"] = r.cpus;
  j["oversubscribed"] = r.threads > r.cpus;
  j["batch_size"] = r.batch_size;
  j["samples"] = r.samples;
  j["payload_bytes"] = r.payload_bytes;
  j["crops_per_image"] = r.crops_per_image;
  j["crop_aware"] = r.dct_scaling == 1;
  if (!r.resample.empty()) j["resample"] = r.resample;
  if (!r.kernels.empty()) j["kernels"] = r.kernels;
  if (!r.checksum.empty()) j["checksum"] = r.checksum;
  auto epochs = nlohmann::ordered_json::array();
  for (const BenchEpoch& e : r.epochs)
    epochs.push_back({{"seconds", e.seconds},
                      {"images_per_second", e.images_per_second},
                      {"megabytes_per_second", e.megabytes_per_second},
                      {"ms_per_batch", e.ms_per_batch},
                      {"crops", e.crops}});
  j["epochs"] = epochs;
  j["best_images_per_second"] = r.best_images_per_second;
  j["epoch_spread"] = r.epoch_spread;
  j["noisy"] = r.noisy;
  const JpegEngineInfo engine = jpeg_engine_info();
  j["engine"] = {
      {"entropy_hook", engine.entropy_hook}, {"libjpeg_compiled", engine.libjpeg_compiled}, {"libjpeg_loaded", engine.libjpeg_loaded}};
  if (!engine.entropy_hook) j["engine"]["reason"] = engine.reason;
  if (!r.limit_kind.empty()) {
    j["limit"] = {{"kind", r.limit_kind},
                  {"images_per_second", r.limit_images_per_second},
                  {"megabytes_per_second", r.limit_megabytes_per_second},
                  {"single_thread_images_per_second", r.limit_single_thread_images_per_second},
                  {"ideal_images_per_second", r.limit_ideal_images_per_second}};
    j["efficiency"] = r.efficiency;
    j["efficiency_vs_ideal"] = r.efficiency_vs_ideal;
  }
  return j;
}

// The flags of `slip bench`.
struct BenchArgs {
  std::vector<std::string> inputs;
  std::string cache;  // the inputs as one label (the first line, error subjects)
  BenchOptions options;
  std::string order = "sequential";
  std::string layout = "hwc", dtype = "uint8", filter = "bilinear", resample = "auto";
  bool no_crop_aware = false;
  bool no_limit = false;
  bool json = false;
  std::string compare;
  bool scaling = false;
  std::string kernels;
};

void declare_bench_flags(CLI::App& sub, BenchArgs& a) {
  sub.add_option("cache", a.inputs,
                 "Cache directory; or caches, directories of caches (job-array parts) or dataset list files, read as one dataset "
                 "(global ids, each sample from its own cache)")
      ->type_name("CACHE")
      ->required();
  // The names and their help come from the library's registry (slip/pipelines.hpp).
  std::vector<std::string> pipeline_choices;
  std::string pipeline_help = "What to measure:";
  for (const Pipeline& p : pipelines()) {
    pipeline_choices.emplace_back(p.name);
    pipeline_help += (pipeline_choices.size() == 1 ? " " : "; ") + std::string(p.name) + " (" + std::string(p.help) + ")";
  }
  sub.add_option("-p,--pipeline", a.options.pipeline, pipeline_help)->check(CLI::IsMember(pipeline_choices))->default_val("rrc");
  sub.add_option("-j,--threads", a.options.decode.threads, "Decode threads, up to 256 (default: CPUs available to the process)")
      ->check(in_range(0, 256));
  sub.add_option("-b,--batch-size", a.options.batch_size, "Samples per batch (at most 1048576)")
      ->default_val(256)
      ->check(in_range(1, kMaxBatchSize));
  sub.add_option("-e,--epochs", a.options.epochs, "Epochs to time")->default_val(3)->check(at_least(1));
  sub.add_flag("--cold", a.options.cold, "Drop the cache files from the page cache before the first epoch");
  sub.add_option("--order", a.order, "sequential or shuffle (Feistel order per epoch)")
      ->check(CLI::IsMember({"sequential", "shuffle"}))
      ->default_val("sequential");
  sub.add_option("--seed", a.options.decode.seed, "Seed of crops, flips and shuffle")->default_val(0);
  sub.add_option("--crops", a.options.crops, "multicrop: crop groups, e.g. 2x224@0.32-1,8x96@0.05-0.32 (default: dino)")->type_name("SPEC");
  sub.add_option("--flip", a.options.decode.flip_probability, "Horizontal flip probability")->default_val(0.5);
  sub.add_option("--layout", a.layout, "Pixel layout: hwc (NHWC) or chw (NCHW), any case, as the Python Loader's layout=")
      ->check(CLI::IsMember({"hwc", "chw", "nhwc", "nchw"}, CLI::ignore_case))
      ->default_val("hwc");
  sub.add_option("--dtype", a.dtype, "uint8, or float32 with ImageNet normalisation")
      ->check(CLI::IsMember({"uint8", "float32"}))
      ->default_val("uint8");
  sub.add_option("--filter", a.filter, "Resampling filter: bilinear or bicubic (both antialiased)")
      ->check(CLI::IsMember({"bilinear", "bicubic"}))
      ->default_val("bilinear");
  sub.add_option("--resample", a.resample,
                 "auto, rgb (decode to RGB, then Pillow-exact resizing) or planar (resize the JPEG's Y/Cb/Cr planes, then "
                 "convert; faster, within a documented bound of rgb). auto: planar unless --no-crop-aware")
      ->check(CLI::IsMember({"auto", "rgb", "planar"}))
      ->default_val("auto");
  sub.add_flag("--no-crop-aware", a.no_crop_aware, "Decode whole images, then crop (to measure what crop-aware decoding gains)");
  sub.add_option("--field", a.options.decode.field, "Image field (default: the first)")->type_name("FIELD");
  sub.add_option("--max-samples", a.options.max_samples, "Use only the first N samples");
  sub.add_flag("--no-limit", a.no_limit, "Skip the limit measurement");
  sub.add_flag("--yuv420-siblings", a.options.decode.yuv420_siblings,
               "Measure the field's YUV420 sibling files (slip yuv420) instead of its JPEGs");
  sub.add_option("--compare", a.compare,
                 "Run the same pipeline on a second storage of the same images (a YUV420 cache, or 'siblings' for this "
                 "cache's YUV420 sibling files) and print the speed and storage ratios")
      ->type_name("CACHE");
  sub.add_flag("--scaling", a.scaling,
               "Run once per thread count (1, 2, 4, ... up to the CPUs) and print one row each: rate, measured and ideal "
               "limits, efficiency, speed-up over one thread");
  sub.add_option("--kernels", a.kernels,
                 "SIMD level of the kernels: scalar, sse4, avx2 or avx512 (default: SLIP_SIMD, else the best this CPU has; a "
                 "level the CPU lacks is an error). Every level gives the same pixels")
      ->check(CLI::IsMember({"scalar", "sse4", "avx2", "avx512"}));
  sub.add_flag("--checksum", a.options.checksum,
               "Print a hash of every output pixel of every epoch (equal at every --kernels level; hashing is not timed)");
  sub.add_flag("--json", a.json, "Print one JSON report object");
}

// What a bench reads: one cache, or a dataset (several inputs, a directory of caches or of
// job-array parts, a list file), opened as `slip order` and `info` open them.
struct BenchTarget {
  std::optional<Cache> cache;
  std::optional<Dataset> dataset;
  BenchInput input() const { return dataset ? BenchInput(*dataset) : BenchInput(*cache); }
  uint64_t size() const { return dataset ? dataset->size() : cache->size(); }
};

BenchTarget open_bench_target(const std::vector<std::string>& inputs) {
  BenchTarget t;
  if (inputs.size() == 1 && !Dataset::is_dataset_input(inputs.front())) {
    t.cache.emplace(Cache::open(inputs.front()));
    t.cache->check_checksums();  // the tables (payload sums would skew the timing)
    return t;
  }
  const std::vector<std::filesystem::path> paths(inputs.begin(), inputs.end());
  t.dataset.emplace(Dataset::open(paths));
  for (size_t i = 0; i < t.dataset->num_caches(); ++i) t.dataset->cache(i).check_checksums();
  return t;
}

// JSON "path": the one input, or the list of them.
nlohmann::ordered_json bench_path_json(const std::vector<std::string>& inputs) {
  return inputs.size() == 1 ? nlohmann::ordered_json(inputs.front()) : nlohmann::ordered_json(inputs);
}

// The library's options from the flags.
BenchOptions bench_options_from(const BenchArgs& a) {
  BenchOptions options = a.options;
  options.decode.threads = resolve_threads(options.decode.threads);
  options.shuffle = a.order == "shuffle";
  options.decode.layout = parse_pixel_layout(a.layout);
  options.decode.type = a.dtype == "float32" ? PixelType::float32 : PixelType::uint8;
  options.decode.filter = a.filter == "bicubic" ? ResampleFilter::bicubic : ResampleFilter::bilinear;
  options.decode.crop_aware = !a.no_crop_aware;
  options.decode.resample = a.resample == "rgb"      ? ResampleMode::rgb
                            : a.resample == "planar" ? ResampleMode::planar
                                                     : ResampleMode::automatic;
  options.measure_limit = !a.no_limit;
  return options;
}

// The measured limit and the efficiency against it, under the epochs.
void print_bench_limit(bool text, const BenchReport& report) {
  if (!text || report.limit_kind.empty()) return;
  if (report.limit_kind == "memcpy")
    std::printf("limit:   %9.1f MB/s (memcpy, %u threads)\n", report.limit_megabytes_per_second, report.threads);
  else
    std::printf("limit:   %9.1f img/s (tjDecompress2 full decode on %u threads at once; one thread %.1f img/s, x %u = %.1f ideal)\n",
                report.limit_images_per_second, report.threads, report.limit_single_thread_images_per_second, report.threads,
                report.limit_ideal_images_per_second);
  std::printf("efficiency: %.2f (best epoch / limit; %.2f against the ideal)\n", report.efficiency, report.efficiency_vs_ideal);
  if (report.threads > report.cpus)
    std::printf("note:    %u threads on %u CPUs: threads share CPUs, the limit is measured so\n", report.threads, report.cpus);
}

void print_bench_noise(bool text, const BenchReport& report) {
  if (text && report.noisy)
    std::printf("noisy:   epochs differ by %.0f%% (> %.0f%%): the machine was busy; too noisy to judge, run again\n",
                report.epoch_spread * 100, BenchReport::kNoisyEpochSpread * 100);
}

using EpochPrinter = std::function<void(const BenchReport&, size_t)>;

// --compare: the same pipeline on a second storage of the same images.
void run_bench_compare(const BenchArgs& a, const BenchTarget& target, const BenchOptions& options, const EpochPrinter& print_epoch,
                       bool text, bool quiet) {
  BenchOptions other_options = options;
  std::optional<BenchTarget> other_target;
  if (a.compare == "siblings") {
    other_options.decode.yuv420_siblings = true;
  } else {
    other_target.emplace(open_bench_target({a.compare}));
    other_options.decode.field.clear();
    other_options.decode.yuv420_siblings = false;
  }
  const BenchTarget& other = other_target ? *other_target : target;
  if (other.size() != target.size())
    throw Error(Errc::usage,
                "--compare needs the same images: " + std::to_string(target.size()) + " vs " + std::to_string(other.size()) + " samples")
        .with_path(a.compare);
  const BenchComparison c = run_bench_comparison(target.input(), options, other.input(), other_options, print_epoch);
  if (a.json) {
    nlohmann::ordered_json base = report_json(c.base), other = report_json(c.other);
    base["path"] = bench_path_json(a.inputs);
    other["path"] = a.compare == "siblings" ? bench_path_json(a.inputs) : nlohmann::ordered_json(a.compare);
    print_json({{"command", "bench"},
                {"path", bench_path_json(a.inputs)},
                {"compare", a.compare},
                {"base", base},
                {"other", other},
                {"speed_ratio", c.speed_ratio},
                {"storage_ratio", c.storage_ratio}});
  } else if (!quiet) {
    print_bench_limit(text, c.base);
    print_bench_noise(text, c.base);
    print_bench_noise(text, c.other);
    std::printf("%s vs %s, pipeline %s: %.1f vs %.1f img/s: %.2fx the speed at %.2fx the bytes\n",
                c.other.yuv420_siblings ? "yuv420 siblings" : printable(c.other.image_format).c_str(),
                printable(c.base.image_format).c_str(), c.base.pipeline.c_str(), c.other.best_images_per_second,
                c.base.best_images_per_second, c.speed_ratio, c.storage_ratio);
  }
}

// --scaling: one row per thread count.
void run_bench_rows(const BenchArgs& a, const BenchTarget& target, const BenchOptions& options, bool text) {
  if (!a.compare.empty()) throw Error(Errc::usage, "--scaling and --compare do not go together");
  if (text)
    std::printf("%-8s %12s %14s %14s %11s %9s %9s\n", "threads", "img/s", "limit img/s", "ideal img/s", "efficiency", "vs ideal",
                "speed-up");
  double one_thread = 0;
  const std::vector<BenchReport> reports = run_bench_scaling(target.input(), options, [&](const BenchReport& r) {
    if (one_thread == 0) one_thread = r.best_images_per_second;
    if (text)
      std::printf("%-8u %12.1f %14.1f %14.1f %11.2f %9.2f %8.2fx\n", r.threads, r.best_images_per_second, r.limit_images_per_second,
                  r.limit_ideal_images_per_second, r.efficiency, r.efficiency_vs_ideal,
                  one_thread > 0 ? r.best_images_per_second / one_thread : 0.0);
    std::fflush(stdout);
  });
  if (a.json) {
    auto rows = nlohmann::ordered_json::array();
    for (const BenchReport& r : reports) rows.push_back(report_json(r));
    print_json(nlohmann::ordered_json{{"command", "bench"}, {"path", bench_path_json(a.inputs)}, {"scaling", rows}});
  }
}

// The first line of a run: what it reads and how.
void print_bench_heading(const std::string& label, const BenchReport& r) {
  std::string how;
  if (r.caches > 1) how += ", " + std::to_string(r.caches) + " caches";
  if (r.crops_per_image > 1) how += ", " + std::to_string(r.crops_per_image) + " crops/image";
  how += r.yuv420_siblings ? ", yuv420 siblings" : r.image_format == "yuv420" ? ", yuv420" : "";
  if (!r.resample.empty())
    how += ", " + r.resample + " resampling" + (r.kernels.empty() ? "" : " (" + r.kernels + " kernels)");
  else if (!r.kernels.empty())
    how += ", " + r.kernels + " kernels";
  std::printf("%s: pipeline %s, %llu images (%s), %u threads, batch %zu%s\n", printable(label).c_str(), r.pipeline.c_str(),
              static_cast<unsigned long long>(r.samples), human_bytes(r.payload_bytes).c_str(), r.threads, r.batch_size, how.c_str());
}

}  // namespace

Action setup_bench(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<BenchArgs>();
  declare_bench_flags(sub, *a);
  return [a, &global]() -> int {
    for (const std::string& input : a->inputs) a->cache += (a->cache.empty() ? "" : " ") + input;
    set_error_subject(a->inputs.front());  // --json failures name it
    if (!a->kernels.empty()) set_simd_level(a->kernels);
    const BenchOptions options = bench_options_from(*a);
    const BenchTarget target = open_bench_target(a->inputs);
    const bool text = !a->json && !global.quiet;
    // With --compare the second run is the other storage: its lines name it, not this input.
    int run = 0;
    const auto print_epoch = [&](const BenchReport& r, size_t epoch) {
      if (!text) return;
      if (epoch == 0 && ++run)
        print_bench_heading(run == 1 ? a->cache : a->compare == "siblings" ? a->cache + " (yuv420 siblings)" : a->compare, r);
      const BenchEpoch& e = r.epochs.back();
      std::printf("epoch %zu: %9.1f img/s %9.1f MB/s %8.2f ms/batch%s\n", epoch + 1, e.images_per_second, e.megabytes_per_second,
                  e.ms_per_batch, epoch == 0 && options.cold ? "  (cold)" : "");
      std::fflush(stdout);
    };
    if (!a->compare.empty()) {
      run_bench_compare(*a, target, options, print_epoch, text, global.quiet);
      return 0;
    }
    if (a->scaling) {
      run_bench_rows(*a, target, options, text);
      return 0;
    }
    const BenchReport report = run_bench(target.input(), options, print_epoch);
    if (a->json) {
      nlohmann::ordered_json j{{"command", "bench"}, {"path", bench_path_json(a->inputs)}};
      j.update(report_json(report));
      print_json(j);
    } else {
      print_bench_limit(text, report);
      print_bench_noise(text, report);
      if (!report.checksum.empty() && !global.quiet) std::printf("checksum: %s\n", report.checksum.c_str());
    }
    return 0;
  };
}

}  // namespace slip::cli
