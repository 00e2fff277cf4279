// slip ls [DIR] [--json]
#include <cstdio>
#include <iostream>

#include "command.hpp"
#include "output.hpp"
#include "slip/convert.hpp"
#include "slip/inspect.hpp"

namespace slip::cli {

Action setup_ls(CLI::App& sub, const GlobalOptions&) {
  struct Args {
    std::string dir;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("dir", a->dir, "Directory holding caches")->default_str("$SLIPSTREAM_CACHE_DIR or ~/.slipstream");
  sub.add_flag("--json", a->json, "Print one JSON object");
  return [a]() -> int {
    const std::filesystem::path dir = a->dir.empty() ? default_cache_root() : std::filesystem::path(a->dir);
    const auto caches = list_caches(dir);
    if (a->json) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const auto& c : caches)
        list.push_back({{"name", c.name},
                        {"path", c.path.string()},
                        {"complete", c.complete},
                        {"state", c.state},
                        {"samples", c.samples},
                        {"bytes", c.bytes},
                        {"source", c.source},
                        {"temporaries", c.temporaries},
                        {"temporary_bytes", c.temporary_bytes}});
      print_json({{"command", "ls"}, {"dir", dir.string()}, {"caches", list}});
      return 0;
    }
    for (const auto& c : caches) {
      std::printf("%-40s %10llu %10s  %-10s %s\n", c.name.c_str(), static_cast<unsigned long long>(c.samples), human_bytes(c.bytes).c_str(),
                  c.complete ? "complete" : "INCOMPLETE", c.complete ? c.source.c_str() : c.state.c_str());
      // Left inside a cache by an interrupted run; the next run of the same command removes them.
      for (const auto& t : c.temporaries) std::printf("  temporary file %s\n", t.c_str());
      if (!c.temporaries.empty()) std::printf("  (%s in temporary files)\n", human_bytes(c.temporary_bytes).c_str());
    }
    return 0;
  };
}

}  // namespace slip::cli
