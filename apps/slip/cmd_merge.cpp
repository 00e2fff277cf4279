// slip merge PARTS... | --from WORKDIR | --source SRC... [-o DIR] [--link] [--force] [--clean] [--json]
// slip merge --status WORKDIR
#include <iostream>

#include <spdlog/spdlog.h>

#include "command.hpp"
#include "exit_codes.hpp"
#include "output.hpp"
#include "slip/error.hpp"
#include "slip/merge.hpp"

namespace slip::cli {

Action setup_merge(CLI::App& sub, const GlobalOptions& global) {
  struct Args {
    std::vector<std::string> parts, sources;
    std::string from, status, output;
    bool link = false, force = false, json = false, clean = false;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("parts", a->parts, "Part cache directories (from convert --shard I/N)")->type_name("DIR");
  sub.add_option("--from", a->from, "Work directory holding the parts (<name>-<id8>.parts)")->type_name("DIR");
  sub.add_option("--source", a->sources,
                 "The source(s) given to convert --shard (with the same -o): merge the work directory of that conversion, "
                 "found without reading the source (several sources: repeatable, or listed after one --source)")
      ->type_name("SOURCE");
  sub.add_option("--status", a->status, "List done / missing / incomplete parts of a work directory; exit 1 unless all are done")
      ->type_name("DIR");
  sub.add_option("-o,--output", a->output, "Directory to write the merged cache into (default: beside the work directory)")
      ->type_name("DIR");
  sub.add_flag("--link", a->link, "Hard-link instead of copying where possible (one part on the same filesystem)");
  sub.add_flag("-f,--force", a->force, "Rebuild even if the merged cache exists");
  sub.add_flag("--clean", a->clean, "Remove the parts (and their work directory) once the merged cache is published");
  sub.add_flag("--json", a->json, "Print one JSON object");
  return [a, &global]() -> int {
    reject_stdout(a->output, "-o");
    if (!a->status.empty()) {
      const auto states = part_status(a->status);
      bool all = !states.empty();
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const auto& s : states) {
        all = all && s.state == "done";
        list.push_back({{"index", s.index}, {"state", s.state}, {"path", s.path.string()}});
        if (!a->json) std::cout << s.index << "\t" << printable(s.state) << "\n";
      }
      if (a->json) print_json({{"command", "merge"}, {"workdir", a->status}, {"all_done", all}, {"parts", list}});
      return all ? 0 : kExitVerifyFailed;
    }
    std::vector<std::filesystem::path> inputs;
    if (!a->from.empty()) inputs.emplace_back(a->from);
    if (!a->sources.empty()) {
      if (!inputs.empty() || !a->parts.empty())
        throw Error(Errc::usage, "--source names the work directory; give no --from or parts with it");
      inputs.push_back(find_workdir(output_root(a->output), a->sources));
    }
    for (const auto& p : a->parts) inputs.emplace_back(p);
    if (inputs.empty()) throw Error(Errc::usage, "give part directories, --from WORKDIR or --status WORKDIR");
    MergeOptions options;
    options.output_dir = a->output;
    options.link = a->link;
    options.force = a->force;
    options.clean = a->clean;
    options.created = source_date_epoch();
    Progress progress("merge", global.show_progress());
    options.progress = [&](uint64_t done, uint64_t total) { progress.update(done, total); };
    const MergeResult r = merge_parts(inputs, options);
    progress.finish();
    if (r.reused)
      spdlog::info(
          "the merged cache is already there ({}; its payloads were not read: slip verify checks them); nothing to do (--force merges "
          "again)",
          r.reuse_checked);
    if (a->json) {
      nlohmann::ordered_json j{{"command", "merge"}, {"path", r.cache_path.string()}, {"content_id", r.content_id}, {"reused", r.reused}};
      if (r.reused) j["reuse_checked"] = r.reuse_checked;
      j["parts"] = r.parts;
      j["samples"] = r.samples;
      j["bytes"] = r.bytes;
      j["seconds"] = r.seconds;
      print_json(j);
    } else {
      std::cout << r.cache_path.string() << "\n";
    }
    return 0;
  };
}

}  // namespace slip::cli
