// slip yuv420 CACHE [--field F] [-j N] [--force] [--json]: add the sibling YUV420 files of
// docs/FORMAT.md#yuv420-siblings to a JPEG cache, as the Python loader would build them on first use.
#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>

#include "cli_errors.hpp"
#include "command.hpp"
#include "output.hpp"
#include "slip/convert.hpp"
#include "slip/yuv420.hpp"

namespace slip::cli {

namespace {
struct Yuv420Args {
  std::string cache;
  std::string field;
  unsigned threads = 0;
  bool force = false;
  bool json = false;
};
}  // namespace

Action setup_yuv420(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<Yuv420Args>();
  sub.add_option("cache", a->cache, "The JPEG cache directory")->type_name("CACHE")->required();
  sub.add_option("--field", a->field, "Image field to convert (default: every JPEG image field)")->type_name("FIELD");
  sub.add_option("-j,--threads", a->threads, "Decoding threads, up to 1024 (default: CPUs available to the process)")
      ->check(in_range(0, kMaxConvertThreads));
  sub.add_flag("-f,--force", a->force, "Rebuild the sibling files even when valid ones exist");
  sub.add_flag("--json", a->json,
               "Print one JSON object (the cache path and, per field, its files, sizes and time) instead of the file names");
  return [a, &global]() -> int {
    set_error_subject(a->cache);  // --json failures name it
    SiblingOptions options;
    options.field = a->field;
    options.threads = resolve_threads(a->threads);
    options.force = a->force;
    Progress progress("yuv420", global.show_progress());
    options.progress = [&](uint64_t done, uint64_t total) { progress.update(done, total); };
    const std::vector<SiblingResult> results = add_yuv420_siblings(a->cache, options);
    progress.finish();
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const SiblingResult& r : results) {
      const double ratio = r.jpeg_bytes ? static_cast<double>(r.bytes) / static_cast<double>(r.jpeg_bytes) : 0.0;
      if (a->json) {
        out.push_back({{"field", r.field},
                       {"files", yuv420_sibling_files(r.field)},
                       {"samples", r.samples},
                       {"bytes", r.bytes},
                       {"jpeg_bytes", r.jpeg_bytes},
                       {"storage_ratio", ratio},
                       {"reused", r.reused},
                       {"seconds", r.seconds}});
        continue;
      }
      if (r.reused)
        spdlog::info("{}: valid YUV420 siblings already present (--force rebuilds)", r.field);
      else if (!global.quiet)
        spdlog::info("{}: {} samples, {} ({:.2f}x the JPEG bytes) in {:.2f} s", r.field, r.samples, human_bytes(r.bytes), ratio, r.seconds);
      for (const std::string& name : yuv420_sibling_files(r.field)) std::cout << printable(name) << "\n";
    }
    if (a->json) print_json({{"command", "yuv420"}, {"path", a->cache}, {"fields", out}});
    return 0;
  };
}

}  // namespace slip::cli
