// slip man [-o DIR] — man pages (slip(1), slip-<command>(1)) generated from the CLI definition.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "cli_model.hpp"
#include "output.hpp"
#include "command.hpp"
#include "slip/environment.hpp"
#include "slip/error.hpp"
#include "slip/runtime.hpp"

namespace slip::cli {

namespace {

constexpr const char* kManDate = "2026-11-22";  // bump with the CLI

// Source lines of at most 78 bytes (roff joins them again), none starting with '.' or '\''.
std::string wrap(const std::string& text) {
  std::string lines;
  auto emit = [&](std::string line) {
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (!line.empty() && (line[0] == '.' || line[0] == '\'')) line = "\\&" + line;
    if (!lines.empty()) lines += "\n";
    lines += line;
  };
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    while (line.size() > 78) {
      size_t cut = line.rfind(' ', 78);
      if (cut == std::string::npos || cut == 0) cut = line.find(' ', 78);
      if (cut == std::string::npos) break;
      emit(line.substr(0, cut));
      line = line.substr(cut + 1);
    }
    emit(line);
  }
  return lines;
}

// roff: escape backslashes and hyphens, and keep '.' or '\'' off the start of a line.
std::string roff(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
  }
  return wrap(out);
}

const std::map<std::string, std::vector<std::pair<std::string, std::string>>>& examples() {
  static const std::map<std::string, std::vector<std::pair<std::string, std::string>>> e = {
      {"convert",
       {{"Convert an ImageFolder into $SLIPSTREAM_CACHE_DIR and print the cache path:", "slip convert ~/data/imagenet/train"},
        {"Skip unreadable images, keeping a record of them, and report as JSON:",
         "slip convert ~/data/train \\-o /scratch/caches \\-\\-on\\-error skip \\-\\-json"}}},
      {"info", {{"Describe a cache:", "slip info /scratch/caches/train\\-1a2b3c4d.slipstream"}}},
      {"verify", {{"Check a cache in CI; exit 1 names the failing samples:", "slip verify \\-\\-json CACHE | jq .ok"}}},
      {"cat", {{"Extract sample 17's image and label:", "slip cat CACHE 17 \\-o s17.jpg; slip cat CACHE 17 \\-\\-field label"}}},
      {"ls", {{"List caches and whether each is complete:", "slip ls /scratch/caches"}}},
      {"index", {{"Index the labels as the Python loader expects:", "slip index CACHE \\-\\-field label"}}},
      {"subset",
       {{"Keep three classes as a new cache:", "slip subset CACHE \\-\\-names n01440764,n02102040,n02979186"},
        {"Five samples per class, as an id list:",
         "slip subset CACHE \\-\\-values 0,1,2 \\-\\-per\\-class 5 \\-\\-mode ids \\-o ids.npy"}}},
      {"order", {{"Rank 1 of 8, epoch 3:", "slip order CACHE \\-\\-seed 0 \\-\\-epoch 3 \\-\\-rank 1 \\-\\-world\\-size 8"}}},
      {"completions", {{"Install bash completion:", "slip completions bash > /etc/bash_completion.d/slip"}}},
      {"man", {{"Write the pages into DIR/man1 (MANPATH=DIR man slip\\-convert finds them):", "slip man \\-o ~/.local/share/man"}}},
  };
  return e;
}

void option_entries(std::ostream& o, const std::vector<OptionInfo>& options) {
  for (const OptionInfo& opt : options) {
    std::string head;
    for (const auto& s : opt.short_names) head += (head.empty() ? "" : ", ") + std::string("\\fB\\-") + s + "\\fR";
    for (const auto& l : opt.long_names) head += (head.empty() ? "" : ", ") + std::string("\\fB\\-\\-") + roff(l) + "\\fR";
    if (!opt.positional.empty())
      head = "\\fI" + roff(opt.positional) + "\\fR";
    else if (opt.takes_value)
      head += " \\fI" + (opt.choices.empty() ? roff(opt.type.empty() ? "VALUE" : opt.type) : roff([&] {
                std::string c;
                for (const auto& x : opt.choices) c += (c.empty() ? "" : "|") + x;
                return c;
              }())) +
              "\\fR";
    std::string help = opt.help;
    if (!help.empty() && help.back() != '.' && help.back() != ')') help += ".";
    o << ".TP\n" << head << "\n" << roff(help);
    if (!opt.default_value.empty()) o << "\nDefault: " << roff(opt.default_value) << ".";
    if (!opt.envname.empty()) o << "\nEnvironment: \\fB" << roff(opt.envname) << "\\fR.";
    o << "\n";
  }
}

void common_tail(std::ostream& o, const std::string& self) {
  o << ".SH ENVIRONMENT\n";
  for (const EnvironmentVariable& v : environment_variables()) {
    std::string names;
    for (const std::string& n : split_names(v.names)) names += (names.empty() ? "" : ", ") + std::string("\\fB") + roff(n) + "\\fR";
    o << ".TP\n"
      << names << "\n"
      << roff(std::string(v.what) + ". Values: " + std::string(v.values) + ". Default: " + std::string(v.default_value) + ".") << "\n";
  }
  o << ".SH FILES\n"
       ".TP\n\\fI<name>\\-<id8>.slipstream/\\fR\nA cache: \\fImanifest.json\\fR, \\fI<field>.bin\\fR,\n\\fI<field>.meta.npy\\fR, "
       "\\fI<field>.npy\\fR, checksums; see FORMAT.md.\n"
       ".TP\n\\fI.<name>\\-<id8>.slipstream.tmp\\-<pid>/\\fR\nA conversion in progress or abandoned; never a cache.\n"
       ".SH EXIT STATUS\n"
       ".TP\n0\nSuccess.\n.TP\n1\nVerification failed.\n.TP\n2\nUsage error.\n.TP\n3\nBad input (malformed source or cache).\n"
       ".TP\n4\nI/O error (missing file, permission, disk full).\n.TP\n5\nRemote failure after retries (retryable).\n"
       ".TP\n130, 143\nInterrupted by SIGINT, SIGTERM.\n";
  const auto it = examples().find(self);
  if (it != examples().end()) {
    o << ".SH EXAMPLES\n";
    bool first = true;
    for (const auto& [what, cmd] : it->second) {
      o << (first ? "" : ".PP\n") << roff(what) << "\n.PP\n.RS\n.nf\n" << cmd << "\n.fi\n.RE\n";
      first = false;
    }
  }
}

std::string page_for(const CLI::App& root, const CommandInfo* cmd, const std::vector<CommandInfo>& all) {
  std::ostringstream o;
  std::string upper = cmd ? cmd->name : "";
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::string title = cmd ? "SLIP\\-" + roff(upper) : "SLIP";
  o << ".TH " << title << " 1 " << kManDate << " \"slip " << version() << "\" \"User Commands\"\n";
  o << ".SH NAME\n"
    << wrap((cmd ? "slip\\-" + roff(cmd->name) : std::string("slip")) + " \\- " +
            roff(cmd ? cmd->help : "prepare vision datasets as slipstream caches for fast training"))
    << "\n";
  o << ".SH SYNOPSIS\n";
  if (cmd) {
    o << "\\fBslip " << roff(cmd->name) << "\\fR [\\fIOPTIONS\\fR]";
    for (const auto& p : cmd->positionals) o << (p.required ? " \\fI" : " [\\fI") << roff(p.positional) << (p.required ? "\\fR" : "\\fR]");
    o << "\n";
  } else {
    o << "\\fBslip\\fR [\\fB\\-v\\fR] [\\fB\\-q\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]\n";
  }
  o << ".SH DESCRIPTION\n";
  if (cmd) {
    o << roff(cmd->help) << ".\n";
  } else {
    o << "\\fBslip\\fR converts image datasets into the cache the Python slipstream loader memory\\-maps, "
         "and checks, inspects, indexes, subsets and benchmarks such caches. Commands:\n";
    for (const auto& c : all) o << ".TP\n\\fBslip\\-" << roff(c.name) << "\\fR(1)\n" << roff(c.help) << "\n";
  }
  const auto opts = cmd ? cmd->options : describe_options(root, false);
  if (cmd && !cmd->positionals.empty()) {
    o << ".SH ARGUMENTS\n";
    option_entries(o, cmd->positionals);
  }
  o << ".SH OPTIONS\n";
  option_entries(o, opts);
  common_tail(o, cmd ? cmd->name : "");
  o << ".SH SEE ALSO\n";
  if (cmd)
    o << "\\fBslip\\fR(1)\n";
  else {
    for (size_t i = 0; i < all.size(); ++i) o << (i ? ",\n" : "") << "\\fBslip\\-" << roff(all[i].name) << "\\fR(1)";
    o << "\n";
  }
  return o.str();
}

}  // namespace

Action setup_man(CLI::App& sub, const GlobalOptions&) {
  struct Args {
    std::string command;
    std::string output;
    bool markdown = false;
  };
  auto a = std::make_shared<Args>();
  // The commands are all declared by now (man is the last row of the table): their names are the choices.
  std::vector<std::string> names{"slip"};
  for (const CLI::App* c : sub.get_parent()->get_subcommands([](const CLI::App*) { return true; })) names.push_back(c->get_name());
  sub.add_option("command", a->command, "Print only this command's page (default: write every page into -o DIR)")
      ->check(CLI::IsMember(names));
  sub.add_option("-o,--output", a->output,
                 "Man directory to write man1/slip.1 and man1/slip-<command>.1 into, as MANPATH expects (- for stdout: one page)")
      ->type_name("DIR");
  sub.add_flag("--markdown", a->markdown,
               "Print the Markdown reference that docs/COMMANDS.md embeds (synopses, environment, pipelines) instead");
  return [a, &sub]() -> int {
    const CLI::App& root = *sub.get_parent();
    const auto cmds = describe_commands(root);
    if (a->markdown) {
      if (!a->command.empty() || !a->output.empty()) throw Error(Errc::usage, "--markdown prints the whole reference: no COMMAND or -o");
      std::cout << markdown_reference(cmds);
      return 0;
    }
    if (a->output.empty() || a->output == "-") {  // - is stdout, as everywhere
      if (a->command.empty() || a->command == "slip") {
        std::cout << page_for(root, nullptr, cmds);
        return 0;
      }
      for (const auto& c : cmds)
        if (c.name == a->command) {
          std::cout << page_for(root, &c, cmds);
          return 0;
        }
      throw Error(Errc::usage, "no such command: " + a->command);
    }
    // Section 1 pages go into DIR/man1, so DIR works as a MANPATH entry (man looks there).
    const std::filesystem::path section = std::filesystem::path(a->output) / "man1";
    std::filesystem::create_directories(section);
    auto write = [&](const std::string& name, const std::string& text) {
      write_output((section / name).string(), text, false);  // never through a planted link
    };
    write("slip.1", page_for(root, nullptr, cmds));
    for (const auto& c : cmds) write("slip-" + c.name + ".1", page_for(root, &c, cmds));
    return 0;
  };
}

}  // namespace slip::cli
