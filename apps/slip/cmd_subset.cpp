// slip subset CACHE|DATASET... --field label (--values 0,217 | --values-file F | --names n01440764,...)
//             [--classes-file F] [--per-class K] [--seed S] [--mode copy|ids] [-o DIR] [--json]
#include <charconv>
#include <filesystem>
#include <optional>
#include <iostream>

#include "command.hpp"
#include "output.hpp"
#include "slip/cache.hpp"
#include "slip/convert.hpp"
#include "slip/dataset.hpp"
#include "slip/error.hpp"
#include "slip/runtime.hpp"
#include "slip/subset.hpp"

namespace slip::cli {

namespace {
// Where a copy subset goes: -o, else $SLIPSTREAM_CACHE_DIR when the user set it, else beside its
// parent cache, on the same file system (a subset of /scratch/C belongs in /scratch, not in
// ~/.slipstream on a home directory with a small quota).
// A dataset's subset goes beside its first input (a work directory of parts, a list file, a
// cache), never inside a work directory, where it would be taken for a stray part.
std::filesystem::path subset_root(const std::string& given, const std::filesystem::path& parent) {
  if (!given.empty() || env_value(process_environment(), "SLIPSTREAM_CACHE_DIR")) return output_root(given);
  std::filesystem::path cache = std::filesystem::absolute(parent).lexically_normal();
  if (!cache.has_filename()) cache = cache.parent_path();  // "C/": the directory C
  return cache.parent_path();
}

// What a subset selects from: one cache, or a dataset of several (opened as `slip order` does).
struct SubsetParent {
  std::vector<std::filesystem::path> inputs;
  std::optional<Cache> cache;
  std::optional<Dataset> dataset;
  const Cache& first() const { return dataset ? dataset->cache(0) : *cache; }
  std::vector<uint64_t> select(const SubsetSelection& sel, SubsetReport* report) const {
    return dataset ? select_samples(*dataset, sel, report) : select_samples(*cache, sel, report);
  }
  std::unique_ptr<Source> source(std::vector<uint64_t> ids) const {
    return dataset ? open_dataset_subset(inputs, std::move(ids)) : open_cache_subset(inputs.front(), std::move(ids));
  }
  // The default .ids.npy: ./<parent>-<n>.ids.npy (never inside the cache, which is checksummed).
  std::string ids_file(size_t n) const {
    const std::filesystem::path p = std::filesystem::absolute(inputs.front()).lexically_normal();
    return (p.has_filename() ? p : p.parent_path()).filename().string() + "-" + std::to_string(n) + ".ids.npy";
  }
};

SubsetParent open_subset_parent(const std::vector<std::string>& inputs) {
  SubsetParent p;
  p.inputs.assign(inputs.begin(), inputs.end());
  if (inputs.size() == 1 && !Dataset::is_dataset_input(p.inputs.front()))
    p.cache.emplace(Cache::open(p.inputs.front()));
  else
    p.dataset.emplace(Dataset::open(p.inputs));
  return p;
}
// The flags of `slip subset`.
struct SubsetArgs {
  std::vector<std::string> inputs;
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

// --values as the field's type: strings for a str field, else 64-bit integers.
void subset_values_from(SubsetArgs& a, const SubsetParent& parent) {
  const bool str_field = parent.first().field(a.sel.field).type == FieldType::str;
  for (const auto& v : a.values) {
    if (str_field) {
      a.sel.str_values.push_back(v);
      continue;
    }
    int64_t value = 0;
    const auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), value);
    if (v.empty() || error != std::errc() || end != v.data() + v.size())
      throw Error(Errc::usage, "not an integer value (or beyond 64 bits): \"" + printable(v) + "\"");
    a.sel.values.push_back(value);
  }
}

// The conversion that writes a copy subset (and that --dry-run plans).
ConvertOptions subset_convert_options(const SubsetArgs& a, const SubsetParent& parent) {
  ConvertOptions options;
  options.output_dir = subset_root(a.output, parent.cache ? parent.cache->path() : parent.inputs.front());  // as --help says
  options.name = a.name;
  options.non_jpeg = NonJpegPolicy::keep;  // payloads are copied as the parent stores them (part of the content id)
  return options;
}

}  // namespace

Action setup_subset(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<SubsetArgs>();
  sub.add_option("cache", a->inputs,
                 "Parent cache directory; or caches, directories of caches (job-array parts) or dataset list files, read as one "
                 "dataset (global ids; the subset is the merged cache's)")
      ->type_name("CACHE")
      ->required();
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
    set_error_subject(a->inputs.front());  // --json failures name it
    if (a->mode == "copy") reject_stdout(a->output, "-o (with --mode copy)");
    if (a->values.empty() && a->values_file.empty() && a->sel.names.empty())
      throw Error(Errc::usage, "give --values, --values-file or --names");
    // --values-file is read by select_samples as a stream (its values are not held here).
    a->sel.values_file = a->values_file;
    const SubsetParent parent = open_subset_parent(a->inputs);
    subset_values_from(*a, parent);
    a->sel.classes_file = a->classes_file;
    SubsetReport report;
    const std::vector<uint64_t> ids = parent.select(a->sel, &report);
    nlohmann::ordered_json j{
        {"command", "subset"},
        {"parent", a->inputs.size() == 1 ? nlohmann::ordered_json(a->inputs.front()) : nlohmann::ordered_json(a->inputs)},
        {"mode", a->mode},
        {"selected", ids.size()}};
    if (parent.dataset) j["caches"] = parent.dataset->num_caches();
    if (!a->values_file.empty()) {
      j["values_read"] = report.values_read;
      j["values_not_found"] = report.values_not_found;
    }
    if (a->dry_run) {
      j["dry_run"] = true;
      std::string path;
      if (a->mode == "ids") {
        path = a->output.empty() ? parent.ids_file(ids.size()) : a->output;
      } else {
        auto source = parent.source(ids);
        ConvertOptions options = subset_convert_options(*a, parent);
        options.created = source_date_epoch();
        path = planned_cache_path(*source, options).string();
      }
      j["path"] = path;
      if (!a->json) std::cerr << "slip: dry run: would write " << ids.size() << " samples to " << path << "\n";
    } else if (a->mode == "ids") {
      // Default: ./<parent>-<n>.ids.npy (never inside the cache, which is checksummed).
      const std::string out = a->output.empty() ? parent.ids_file(ids.size()) : a->output;
      if (is_stdout(out)) {
        // -o -: the .npy is stdout, so nothing else may be printed there.
        if (a->json) throw Error(Errc::usage, "--json and -o - both write to stdout; give -o FILE");
        write_output(out, ids_npy(ids), true);
        return 0;
      }
      write_ids_npy(out, ids);
      j["path"] = out;
    } else {
      auto source = parent.source(ids);
      ConvertOptions options = subset_convert_options(*a, parent);
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
