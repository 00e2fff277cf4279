// slip — the command-line front end of libslipstream.
#include <malloc.h>
#include <signal.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <string_view>

#include <spdlog/spdlog.h>

#include "cli_errors.hpp"
#include "cli_model.hpp"
#include "command.hpp"
#include "exit_codes.hpp"
#include "log_sink.hpp"
#include "output.hpp"
#include "slip/decode.hpp"
#include "slip/error.hpp"
#include "slip/error_class.hpp"
#include "slip/log.hpp"
#include "slip/runtime.hpp"
#include "slip/simd.hpp"

namespace slip::cli {

// The command table. A new subcommand is one row here and one cmd_<name>.cpp.
const Command kCommands[] = {
    {"convert", "Convert a dataset (ImageFolder, ...) into a slipstream cache", setup_convert},
    {"info", "Describe a cache: fields, sizes, distributions, labels, provenance", setup_info},
    {"verify", "Check a cache end to end: structure, sizes, bounds, JPEG markers, checksums", setup_verify},
    {"cat", "Write one sample's field (raw bytes or value) to stdout or a file", setup_cat},
    {"ls", "List the caches in a directory ($SLIPSTREAM_CACHE_DIR by default)", setup_ls},
    {"index", "Build value -> sample-id indexes of int/str fields (pickled for Python, CSR for slip)", setup_index},
    {"subset", "Select samples by class (or any field value), few-shot too, as a new cache or an id list", setup_subset},
    {"order", "Print an epoch's shuffled order: O(1)-memory Feistel permutation, per rank", setup_order},
    {"merge", "Join the part caches of a job-array conversion (convert --shard I/N) into one cache", setup_merge},
    {"bench", "Measure how fast a cache loads (raw I/O, decode, center, RRC, multi-crop) against the machine's limit", setup_bench},
    {"yuv420", "Add the YUV420 sibling files (docs/FORMAT.md) to a JPEG cache, decoded once on all threads", setup_yuv420},
    {"stage", "Copy caches to a node-local directory once per node (verified, shared by the node's processes, evicted under a budget)",
     setup_stage},
    {"completions", "Print a bash, zsh or fish completion script", setup_completions},
    {"man", "Print or write the man pages", setup_man},
};

namespace {
// The subcommand that was given --json, if any: its failures are also a JSON object on stdout,
// so a script reading stdout sees why instead of nothing (docs/JSON.md).
const CLI::App* json_command(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) {
    const CLI::Option* json = sub->get_option_no_throw("--json");
    if (json != nullptr && json->count() > 0) return sub;
  }
  return nullptr;
}

// The stderr line, and with --json the object on stdout; the exit status.
int report_failure(const CLI::App& app, const slip::Error& e) {
  spdlog::error("{}", e.describe());
  if (const CLI::App* sub = json_command(app)) print_json(error_json(sub->get_name(), e, error_subject()));
  return exit_code(e.code());
}

// A command line CLI11 refused: parsing stopped before --json was counted (`slip conver X --json`,
// an unknown flag before it), so the words decide. The object's command is the subcommand
// named, or null when none is (a misspelt one).
int report_usage_error(const CLI::App& app, const slip::Error& e, int argc, char** argv) {
  spdlog::error("{}", e.describe());
  std::string command;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word == "--") break;  // what follows is operands, not flags
    if (word == "--json") json = true;
    if (command.empty() && !word.starts_with('-'))
      for (const CLI::App* sub : app.get_subcommands({}))
        if (sub->get_name() == word) command = word;
  }
  if (json) {
    nlohmann::ordered_json object = error_json(command, e, "");
    if (command.empty()) object["command"] = nullptr;
    print_json(object);
  }
  return exit_code(e.code());
}
}  // namespace

bool GlobalOptions::show_progress() const {
  if (quiet || no_progress) return false;
  return progress || stderr_is_terminal();
}

}  // namespace slip::cli

int main(int argc, char** argv) {
  using namespace slip::cli;
  // A closed stdout (`slip ls | head -1`) ends the program quietly instead of killing it.
  ::signal(SIGPIPE, SIG_IGN);
  // Past `ulimit -f` a write fails with EFBIG, reported as an I/O error naming the file (exit
  // 4) with the staging directory removed, instead of SIGXFSZ killing the process mid-write.
  ::signal(SIGXFSZ, SIG_IGN);
  slip::install_interrupt_handlers();
  // Samples of 4 MiB or more are mapped and unmapped by malloc, never kept in its arenas:
  // glibc's default threshold grows to the largest block freed, after which 16 MiB samples
  // freed by one thread stay in that thread's arena, and a conversion bounded to 256 MiB in
  // flight peaked at twice that (tests/integration/tar_bounds.sh). Not lower: at 1 MiB, every
  // 1-4 MiB photo (ImageNet has them) was a fresh mapping, its pages faulted in by read()
  // and unmapped again; that was a third of a page-cache conversion's page faults (perf).
  ::mallopt(M_MMAP_THRESHOLD, 4 << 20);
  // Smaller blocks freed by the writer are kept for the readers to reuse: with the default 128
  // KiB trim threshold each arena handed its freed samples back to the kernel at once (madvise,
  // TLB shootdowns) and the next read faulted fresh pages in; 40% of a page-cache ImageFolder
  // conversion went to that churn (perf). 4 MiB per arena is a few samples, not a leak.
  ::mallopt(M_TRIM_THRESHOLD, 4 << 20);

  // Colour only on a terminal, as spdlog's colour sink did; NO_COLOR (no-color.org) turns it off
  // when set to a non-empty value (an empty NO_COLOR= leaves colour on, as the convention says).
  const char* no_color = std::getenv("NO_COLOR");
  const bool color = stderr_is_terminal() && (no_color == nullptr || *no_color == '\0');
  auto logger = std::make_shared<spdlog::logger>("slip", std::make_shared<PrintableStderrSink>(color));
  spdlog::set_default_logger(logger);
  // The library prints nothing itself: its warnings and notes come here.
  slip::set_log_handler([](slip::LogLevel level, std::string_view message) {
    const auto spd = level == slip::LogLevel::warning ? spdlog::level::warn
                     : level == slip::LogLevel::info  ? spdlog::level::info
                                                      : spdlog::level::debug;
    spdlog::log(spd, "{}", message);
  });

  GlobalOptions global;
  CLI::App app{"slip — prepare vision datasets as slipstream caches for fast training"};
  app.name("slip");
  app.formatter(std::make_shared<HelpFormatter>());  // before the subcommands: they copy it
  app.set_version_flag("-V,--version", [] {
    // SLIP_JPEG_INTERNALS=off: --version reports the engine without probing libjpeg; a value
    // other than on/off/auto is a usage error (exit 2, through the parse's catch below).
    slip::apply_libjpeg_environment(slip::process_environment());
    try {
      slip::apply_simd_environment(slip::process_environment());  // the level SLIP_SIMD asks for, if the CPU has it
    } catch (const slip::Error&) {
    }
    return "slip " + slip::version() + "\n" + slip::build_info();
  });
  app.add_flag("-v,--verbose", global.verbose, "More log output on stderr (repeatable)");
  app.add_flag("-q,--quiet", global.quiet, "Only errors on stderr; no progress");
  app.add_flag("--progress", global.progress, "Show progress even when stderr is not a terminal");
  app.add_flag("--no-progress", global.no_progress, "Never show progress");
  app.require_subcommand(1);
  app.fallthrough();  // global flags may also follow the subcommand: `slip convert -q ...`
  app.footer(
      "Exit codes: 0 success, 1 verification failed, 2 usage error, 3 bad input, 4 I/O error,\n"
      "            5 remote failure after retries, 130 interrupted (SIGINT), 143 terminated (SIGTERM).\n" +
      environment_help());  // from the one table, slip/environment.hpp

  std::map<CLI::App*, Action> actions;
  for (const Command& cmd : kCommands) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.summary);
    actions[sub] = cmd.setup(*sub, global);
  }
  // Integer options: decimal digits within the type's range ("-1" is not 2^64-1, "010" not 8).
  strict_integer_options(app);
  typed_placeholders(app);

  // Bare `slip`: the help (what a newcomer needs), on stderr so scripts capturing stdout get
  // nothing, and the usage-error exit status.
  if (argc <= 1) {
    std::cerr << app.help();
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, naming the bad word (README: every usage error is `slip: error: ...`, exit 2).
    return report_usage_error(app, slip::Error(slip::Errc::usage, describe_parse_error(app, e)), argc, argv);
  } catch (const slip::Error& e) {
    // An option's own parser (--max-sample-bytes 99999999999999999999999) ran inside CLI11:
    // without this the error ended the process through std::terminate (exit 134).
    return report_failure(app, e);
  }
  if (global.quiet)
    spdlog::set_level(spdlog::level::err);
  else if (global.verbose >= 2)
    spdlog::set_level(spdlog::level::trace);
  else if (global.verbose == 1)
    spdlog::set_level(spdlog::level::debug);

  for (CLI::App* sub : app.get_subcommands()) {
    try {
      slip::apply_simd_environment(slip::process_environment());
      // SLIP_JPEG_INTERNALS=on|off|auto (off: libjpeg's public API only, never probed).
      slip::apply_libjpeg_environment(slip::process_environment());
      return actions.at(sub)();
    } catch (...) {  // one mapping: out of memory and OS errors are I/O (exit 4), an Error keeps its class
      return report_failure(app, slip::current_exception_error());
    }
  }
  return 0;
}
