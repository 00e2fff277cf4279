// The command table: one row per subcommand (as git's commands[]). Each cmd_<name>.cpp
// defines the row's setup function: it declares the subcommand's flags on `sub` and returns
// the action to run when that subcommand was chosen. Actions return the exit code; errors
// are thrown as slip::Error and turned into one line + exit code by main().
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace slip::cli {

struct GlobalOptions {
  int verbose = 0;
  bool quiet = false;
  bool progress = false;     // --progress: force progress bars even when stderr is not a terminal
  bool no_progress = false;  // --no-progress
  // Progress bars are drawn only on a terminal (or with --progress), never with -q.
  bool show_progress() const;
};

using Action = std::function<int()>;
using Setup = Action (*)(CLI::App& sub, const GlobalOptions& global);

struct Command {
  const char* name;
  const char* summary;
  Setup setup;
};

Action setup_convert(CLI::App&, const GlobalOptions&);
Action setup_info(CLI::App&, const GlobalOptions&);
Action setup_verify(CLI::App&, const GlobalOptions&);
Action setup_cat(CLI::App&, const GlobalOptions&);
Action setup_ls(CLI::App&, const GlobalOptions&);
Action setup_index(CLI::App&, const GlobalOptions&);
Action setup_subset(CLI::App&, const GlobalOptions&);
Action setup_order(CLI::App&, const GlobalOptions&);
Action setup_merge(CLI::App&, const GlobalOptions&);
Action setup_bench(CLI::App&, const GlobalOptions&);
Action setup_yuv420(CLI::App&, const GlobalOptions&);
Action setup_stage(CLI::App&, const GlobalOptions&);
Action setup_completions(CLI::App&, const GlobalOptions&);
Action setup_man(CLI::App&, const GlobalOptions&);

}  // namespace slip::cli
