// A plain description of the command line, read back from the CLI11 app itself, so that help,
// shell completions and man pages are generated from the one definition and cannot drift.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
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

}  // namespace slip::cli
