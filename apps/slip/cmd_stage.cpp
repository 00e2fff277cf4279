// slip stage SRC... --to DIR [--budget SIZE] [--copy] [--json]
#include <chrono>
#include <iostream>

#include "cli_errors.hpp"
#include "command.hpp"
#include "output.hpp"
#include "slip/convert.hpp"
#include "slip/error.hpp"
#include "slip/stage.hpp"

namespace slip::cli {

Action setup_stage(CLI::App& sub, const GlobalOptions& global) {
  struct Args {
    std::vector<std::string> caches;
    std::string to, budget;
    bool copy = false, json = false;
    unsigned threads = 0;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("cache", a->caches, "Cache directories to stage (several: each is staged; the exit status is the worst)")
      ->type_name("CACHE")
      ->required();
  sub.add_option("--to", a->to, "The node-local stage directory (/dev/shm/..., local NVMe); created when missing")
      ->type_name("DIR")
      ->required();
  sub.add_option("--budget", a->budget,
                 "Bytes the staged caches in DIR may use together (12G, 500GiB): least-recently-used ones no process holds are "
                 "removed to make room")
      ->type_name("SIZE");
  sub.add_flag("--copy", a->copy, "Always copy the bytes (no reflink or hard link, even where the file system allows one)");
  sub.add_option("-j,--threads", a->threads, "Threads checking the copy, up to 1024 (default: CPUs available to the process)")
      ->check(in_range(0, kMaxConvertThreads));
  sub.add_flag("--json", a->json, "Print one JSON object per cache (one per line)");
  return [a, &global]() -> int {
    reject_stdout(a->to, "--to");
    StageOptions options;
    options.dir = a->to;
    if (!a->budget.empty()) options.budget = parse_count(a->budget);
    options.links = !a->copy;
    options.threads = resolve_threads(a->threads);
    std::vector<StagedCache> held;  // every cache of this run stays held, so none evicts another
    const auto one = [&](const std::string& cache) -> int {
      const auto t0 = std::chrono::steady_clock::now();
      Progress progress("stage", global.show_progress());
      options.progress = [&](uint64_t done, uint64_t total) { progress.update(done, total); };
      StagedCache s = stage(cache, options);
      progress.finish();
      if (a->json) {
        nlohmann::ordered_json evicted = nlohmann::ordered_json::array();
        for (const auto& e : s.evicted) evicted.push_back(e.string());
        print_json({{"command", "stage"},
                    {"path", s.path().string()},
                    {"source", s.source().string()},
                    {"copied", s.copied},
                    {"bytes", s.bytes},
                    {"bytes_copied", s.bytes_copied},
                    {"bytes_linked", s.bytes_linked},
                    {"bytes_verified", s.bytes_verified},
                    {"evicted", evicted},
                    {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}});
      } else {
        std::cout << s.path().string() << "\n" << std::flush;
      }
      held.push_back(std::move(s));
      return 0;
    };
    return for_each_cache(a->caches, a->json, "stage", one);
  };
}

}  // namespace slip::cli
