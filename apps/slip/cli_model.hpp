// A plain description of the command line, read back from the CLI11 app itself, so that help,
// shell completions and man pages are generated from the one definition and cannot drift.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace slip::cli {

struct OptionInfo {
  std::vector<std::string> long_names;   // without "--"
  std::vector<std::string> short_names;  // without "-"
  std::string positional;                // name, for positionals
  std::string help;
  std::string type;                  // the placeholder: "N", "DIR", "SIZE", ... empty for flags and choices
  std::vector<std::string> choices;  // from IsMember checks
  std::string default_value;
  std::string envname;
  bool takes_value = false;
  bool required = false;
  bool is_path = false;  // complete file names (DIR, FILE, PATH, CACHE, SOURCE)
};

struct CommandInfo {
  std::string name;
  std::string help;
  std::vector<OptionInfo> options;  // named options and flags
  std::vector<OptionInfo> positionals;
};

std::vector<OptionInfo> describe_options(const CLI::App& app, bool positionals);
std::vector<CommandInfo> describe_commands(const CLI::App& root);

// "A, B" -> {"A", "B"}: the names of one row of the environment table (slip/environment.hpp).
std::vector<std::string> split_names(std::string_view names);
// `slip --help`'s footer lines for the environment table.
std::string environment_help();
// "slip convert SOURCE [--output DIR] [--force] [--non-jpeg transcode|keep|fail] ...": every
// option of the command, long names, choices spelled out (docs/COMMANDS.md's synopses).
std::string synopsis(const CommandInfo& command);
// The Markdown that docs/COMMANDS.md embeds between its "generated" markers (`slip man
// --markdown`, scripts/regen-cli-docs.sh): the synopses, the environment and the pipelines.
std::string markdown_reference(const std::vector<CommandInfo>& commands);

}  // namespace slip::cli
