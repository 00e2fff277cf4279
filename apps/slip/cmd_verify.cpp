// slip verify CACHE [--json]
#include <iostream>

#include "cli_errors.hpp"
#include "command.hpp"
#include "exit_codes.hpp"
#include "output.hpp"
#include "slip/convert.hpp"
#include "slip/dataset.hpp"
#include "slip/error.hpp"
#include "slip/simd.hpp"
#include "slip/verify.hpp"

namespace slip::cli {

Action setup_verify(CLI::App& sub, const GlobalOptions& global) {
  struct Args {
    std::vector<std::string> caches;
    unsigned threads = 0;
    size_t max_issues = 100;
    bool json = false;
    bool decode = false;
    int max_diff = 1;
    double mean_diff = 0.01;
    std::string kernels;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("cache", a->caches,
                 "Cache directories, directories of caches or dataset lists (one report per cache, then the dataset's; the exit "
                 "status is the worst)")
      ->type_name("CACHE")
      ->required();
  sub.add_option("-j,--threads", a->threads, "Worker threads, up to 1024 (default: CPUs available to the process)")
      ->check(in_range(0, kMaxConvertThreads));
  sub.add_option("--max-issues", a->max_issues, "Issues to list in detail")->default_val(100);
  sub.add_flag("--json", a->json, "Print one JSON report object per cache (one per line)");
  sub.add_flag("--decode", a->decode, "Also decode every image with the engine and with TurboJPEG and compare the pixels");
  sub.add_option("--max-diff", a->max_diff, "--decode: largest allowed absolute pixel difference")->default_val(1);
  sub.add_option("--mean-diff", a->mean_diff, "--decode: largest allowed mean absolute difference per image")->default_val(0.01);
  sub.add_option("--kernels", a->kernels,
                 "--decode: SIMD level of the engine's kernels: scalar, sse4, avx2 or avx512 (default: SLIP_SIMD, else the best "
                 "this CPU has; a level the CPU lacks is an error)")
      ->check(CLI::IsMember({"scalar", "sse4", "avx2", "avx512"}));
  const auto one = [a, &global](const std::string& cache) -> int {
    VerifyOptions options;
    options.decode = a->decode;
    options.max_diff = a->max_diff;
    options.mean_diff = a->mean_diff;
    options.threads = resolve_threads(a->threads);
    options.max_issues = a->max_issues;
    Progress progress("verify", global.show_progress());
    options.progress = [&](std::string_view phase, uint64_t done, uint64_t total) {
      progress.phase("verify " + std::string(phase));
      progress.update(done, total);
    };
    const VerifyReport r = verify_cache(cache, options);
    progress.finish();
    if (a->json) {
      nlohmann::ordered_json j;
      j["command"] = "verify";
      j["path"] = r.path.string();
      j["ok"] = r.ok();
      j["samples"] = r.samples;
      j["slip_written"] = r.slip_written;
      j["checksums_present"] = r.checksums_present;
      j["payloads_checked"] = r.payloads_checked;
      j["checksums_checked"] = r.checksums_checked;
      j["bytes_hashed"] = r.bytes_hashed;
      j["issue_count"] = r.issue_count;
      nlohmann::ordered_json issues = nlohmann::ordered_json::array();
      for (const VerifyIssue& i : r.issues)
        issues.push_back({{"file", i.file},
                          {"sample", i.sample ? nlohmann::ordered_json(*i.sample) : nullptr},
                          {"field", i.field},
                          {"message", i.message}});
      j["issues"] = std::move(issues);
      j["notes"] = r.notes;
      j["unknown_files"] = r.unknown_files;
      j["temporaries"] = r.temporaries;
      if (r.decode_checked)
        j["decode"] = {{"images", r.images_decoded}, {"max_diff", r.decode_max_diff}, {"mean_diff", r.decode_mean_diff}};
      j["seconds"] = r.seconds;
      print_json(j);
    } else {
      for (const VerifyIssue& i : r.issues) {
        std::cout << "FAIL " << printable(i.file);
        if (i.sample) std::cout << ": sample " << *i.sample;
        if (!i.field.empty()) std::cout << ": field " << printable(i.field);
        std::cout << ": " << printable(i.message) << "\n";
      }
      if (r.issue_count > r.issues.size()) std::cout << "... and " << (r.issue_count - r.issues.size()) << " more issues\n";
      if (!global.quiet)
        for (const std::string& n : r.notes) std::cerr << "slip: note: " << printable(n) << "\n";
      std::cout << (r.ok() ? "OK " : "FAILED ") << printable(r.path.string()) << ": " << r.samples << " samples, " << r.payloads_checked
                << " payloads checked, " << r.checksums_checked << " checksums verified"
                << (r.checksums_present ? "" : " (checksums absent)");
      if (r.decode_checked)
        std::cout << ", " << r.images_decoded << " images decoded (max diff " << r.decode_max_diff << ", mean " << r.decode_mean_diff
                  << ")";
      if (!r.ok()) std::cout << ", " << r.issue_count << " issues";
      std::cout << "\n";
    }
    return r.ok() ? 0 : kExitVerifyFailed;
  };
  return [a, one]() -> int {
    if (!a->kernels.empty()) set_simd_level(a->kernels);
    // The dataset as a whole: its caches' fields agree and a list's content ids still match.
    const auto total = [a](const Dataset& d) -> int {
      if (a->json)
        print_json({{"command", "verify"}, {"dataset", true}, {"ok", true}, {"caches", d.num_caches()}, {"samples", d.size()}});
      else
        std::cout << "OK dataset: " << d.num_caches() << " caches, " << d.size() << " samples, fields agree\n";
      return 0;
    };
    return for_each_dataset_cache(a->caches, a->json, "verify", one, total, kExitVerifyFailed);
  };
}

}  // namespace slip::cli
