// slip subset CACHE --field label (--values 0,217 | --values-file F | --names n01440764,...)
//             [--classes-file F] [--per-class K] [--seed S] [--mode copy|ids] [-o DIR] [--json]
#include <charconv>
#include <iostream>

#include "command.hpp"
#include "output.hpp"
#include "slip/cache.hpp"
#include "slip/convert.hpp"
#include "slip/error.hpp"
#include "slip/runtime.hpp"
#include "slip/subset.hpp"

namespace slip::cli {

namespace {
// Where a copy subset goes: -o, else $SLIPSTREAM_CACHE_DIR when the user set it, else beside its
// parent cache, on the same file system (a subset of /scratch/C belongs in /scratch, not in
// ~/.slipstream on a home directory with a small quota).
std::filesystem::path subset_root(const std::string& given, const Cache& parent) {
  if (!given.empty() || env_value(process_environment(), "SLIPSTREAM_CACHE_DIR")) return output_root(given);
  std::filesystem::path cache = std::filesystem::absolute(parent.path()).lexically_normal();
  if (!cache.has_filename()) cache = cache.parent_path();  // "C/": the directory C
  return cache.parent_path();
}
}  // namespace

Action setup_subset(CLI::App& sub, const GlobalOptions& global) {
  struct Args {
    std::string cache;
    SubsetSelection sel;
    std::vector<std::string> values;
    std::string values_file;
    std::string classes_file;
    std::string mode = "copy";
    std::string output;
    std::string name;
    bool json = false;
    bool dry_run = false;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("cache", a->cache, "Parent cache directory")->type_name("CACHE")->required();
  sub.add_option("-F,--field", a->sel.field, "Field whose values select samples")->type_name("FIELD")->default_val("label");
  auto* values = sub.add_option("--values", a->values, "Values to keep (comma-separated)")->type_name("VALUES")->delimiter(',');
  auto* values_file = sub.add_option("--values-file", a->values_file, "File with one value per line")->type_name("FILE");
  auto* names = sub.add_option("--names", a->sel.names, "Class names to keep (comma-separated), via the path field")
                    ->type_name("NAME")
                    ->delimiter(',');
  sub.add_option("--classes-file", a->classes_file, "Class names, one per line, line i = label i (instead of the path field)")
      ->type_name("FILE");
  values->excludes(values_file);
  sub.add_option("--per-class", a->sel.per_class, "Keep K samples per value (few-shot), chosen by --seed")->default_val(0);
  sub.add_option("--seed", a->sel.seed, "Seed for --per-class")->default_val(0);
  sub.add_option("--mode", a->mode, "copy: write a new cache; ids: write the selected ids as an int64 .npy")
      ->check(CLI::IsMember({"copy", "ids"}))
      ->default_val("copy");
  sub.add_option("-o,--output", a->output, "Output directory (copy) or .npy file (ids; - for stdout)")
      ->type_name("PATH")
      ->default_str("copy: $SLIPSTREAM_CACHE_DIR if set, else beside the parent cache (its directory); ids: ./<cache>-<n>.ids.npy");
  sub.add_option("--name", a->name, "Name part of the subset cache (default: <parent>-subset)")->type_name("NAME");
  sub.add_flag("--json", a->json, "Print one JSON object");
  sub.add_flag("-n,--dry-run", a->dry_run, "Say what would be selected and written where; write nothing");
  (void)names;
  return [a, &global]() -> int {
    set_error_subject(a->cache);  // --json failures name it
    if (a->mode == "copy") reject_stdout(a->output, "-o (with --mode copy)");
    if (a->values.empty() && a->values_file.empty() && a->sel.names.empty())
      throw Error(Errc::usage, "give --values, --values-file or --names");
    // --values-file is read by select_samples as a stream (its values are not held here).
    a->sel.values_file = a->values_file;
    const Cache cache = Cache::open(a->cache);
    const bool str_field = cache.field(a->sel.field).type == FieldType::str;
    for (const auto& v : a->values) {
      if (str_field) {
        a->sel.str_values.push_back(v);
        continue;
      }
      int64_t value = 0;
      const auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), value);
      if (v.empty() || error != std::errc() || end != v.data() + v.size())
        throw Error(Errc::usage, "not an integer value (or beyond 64 bits): \"" + printable(v) + "\"");
      a->sel.values.push_back(value);
    }
    a->sel.classes_file = a->classes_file;
    SubsetReport report;
    const std::vector<uint64_t> ids = select_samples(cache, a->sel, &report);
    nlohmann::ordered_json j{{"command", "subset"}, {"parent", a->cache}, {"mode", a->mode}, {"selected", ids.size()}};
    if (!a->values_file.empty()) {
      j["values_read"] = report.values_read;
      j["values_not_found"] = report.values_not_found;
    }
    if (a->dry_run) {
      j["dry_run"] = true;
      std::string path;
      if (a->mode == "ids") {
        path = a->output.empty() ? cache.path().filename().string() + "-" + std::to_string(ids.size()) + ".ids.npy" : a->output;
      } else {
        auto source = open_cache_subset(a->cache, ids);
        ConvertOptions options;
        options.output_dir = subset_root(a->output, cache);
        options.created = source_date_epoch();
        options.name = a->name;
        options.non_jpeg = NonJpegPolicy::keep;  // as the real run: part of the content id
        path = planned_cache_path(*source, options).string();
      }
      j["path"] = path;
      if (!a->json) std::cerr << "slip: dry run: would write " << ids.size() << " samples to " << path << "\n";
    } else if (a->mode == "ids") {
      // Default: ./<parent>-<n>.ids.npy (never inside the cache, which is checksummed).
      const std::string out =
          a->output.empty() ? cache.path().filename().string() + "-" + std::to_string(ids.size()) + ".ids.npy" : a->output;
      if (is_stdout(out)) {
        // -o -: the .npy is stdout, so nothing else may be printed there.
        if (a->json) throw Error(Errc::usage, "--json and -o - both write to stdout; give -o FILE");
        write_output(out, ids_npy(ids), true);
        return 0;
      }
      write_ids_npy(out, ids);
      j["path"] = out;
    } else {
      auto source = open_cache_subset(a->cache, ids);
      ConvertOptions options;
      options.output_dir = subset_root(a->output, cache);  // as --help says
      options.name = a->name;
      options.non_jpeg = NonJpegPolicy::keep;  // payloads are copied as the parent stores them
      Progress progress("subset", global.show_progress());
      options.progress = [&](const ProgressUpdate& p) { progress.update(p.done, p.total); };
      const ConvertResult r = convert(*source, options);
      progress.finish();
      j["path"] = r.cache_path.string();
      j["content_id"] = r.content_id;
      j["reused"] = r.reused;
    }
    if (a->json)
      print_json(j);
    else
      std::cout << j["path"].get<std::string>() << "\n";
    return 0;
  };
}

}  // namespace slip::cli
