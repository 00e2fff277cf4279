#include "cli_model.hpp"

#include <regex>
#include <sstream>

#include "slip/environment.hpp"
#include "slip/pipelines.hpp"

namespace slip::cli {

namespace {
// Values that name files complete file names; the placeholder says which (typed_placeholders):
// numbers, sizes, seconds, URLs and field names complete nothing.
bool is_path_placeholder(const std::string& type) {
  for (const char* t : {"DIR", "FILE", "PATH", "CACHE", "SOURCE"})
    if (type == t) return true;
  return false;
}
}  // namespace

std::vector<OptionInfo> describe_options(const CLI::App& app, bool positionals) {
  std::vector<OptionInfo> out;
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_positional() != positionals) continue;
    if (!positionals && opt->get_lnames().empty() && opt->get_snames().empty()) continue;
    OptionInfo o;
    o.long_names = opt->get_lnames();
    o.short_names = opt->get_snames();
    if (positionals) o.positional = opt->get_name();
    o.help = opt->get_description();
    // A flag (--json, --help) expects no argument; get_type_size() is 1 for flags too.
    o.takes_value = opt->get_expected_max() > 0;
    o.required = opt->get_required();
    o.envname = opt->get_envname();
    o.default_value = opt->get_default_str();
    if (o.takes_value) {
      std::string type = opt->get_type_name();
      static const std::regex braces(R"(\{([^}]*)\})");
      std::smatch m;
      if (std::regex_search(type, m, braces)) {
        std::string list = m[1];
        size_t start = 0;
        while (start <= list.size()) {
          const size_t comma = list.find(',', start);
          o.choices.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
          if (comma == std::string::npos) break;
          start = comma + 1;
        }
      }
      o.type = type.substr(0, type.find(':'));  // "N:POSITIVE" -> "N"
      o.is_path = o.choices.empty() && is_path_placeholder(o.type);
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<CommandInfo> describe_commands(const CLI::App& root) {
  std::vector<CommandInfo> out;
  for (const CLI::App* sub : root.get_subcommands([](const CLI::App*) { return true; })) {
    CommandInfo c;
    c.name = sub->get_name();
    c.help = sub->get_description();
    c.options = describe_options(*sub, false);
    c.positionals = describe_options(*sub, true);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<std::string> split_names(std::string_view names) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < names.size()) {
    const size_t comma = names.find(", ", start);
    out.emplace_back(names.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 2;
  }
  return out;
}

std::string environment_help() {
  std::string out = "Environment (docs/COMMANDS.md#environment):";
  for (const EnvironmentVariable& v : environment_variables())
    out += "\n  " + std::string(v.names) + " = " + std::string(v.values) + ": " + std::string(v.what) +
           " (default: " + std::string(v.default_value) + ")";
  return out;
}

namespace {
std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}
std::string joined(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : std::string(separator)) + item;
  return out;
}
// A Markdown table cell: | is the column separator, even inside code spans.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}
}  // namespace

std::string synopsis(const CommandInfo& command) {
  std::string out = "slip " + command.name;
  for (const OptionInfo& p : command.positionals) {
    const std::string name = p.type.empty() ? upper(p.positional) : p.type;
    out += p.required ? " " + name : " [" + name + "]";
  }
  for (const OptionInfo& o : command.options) {
    if (!o.long_names.empty() && o.long_names[0] == "help") continue;
    std::string item = o.long_names.empty() ? "-" + o.short_names[0] : "--" + o.long_names[0];
    if (o.takes_value) item += " " + (o.choices.empty() ? (o.type.empty() ? std::string("VALUE") : o.type) : joined(o.choices, "|"));
    out += o.required ? " " + item : " [" + item + "]";
  }
  return out;
}

std::string markdown_reference(const std::vector<CommandInfo>& commands) {
  std::ostringstream o;
  o << "<!-- generated: begin (scripts/regen-cli-docs.sh from the CLI definition; tests/integration/docs_generated.sh checks it) -->\n\n";
  o << "| command | what it does |\n| --- | --- |\n";
  for (const CommandInfo& c : commands) o << "| `" << cell(synopsis(c)) << "` | " << cell(c.help) << " |\n";
  o << "\n### Environment\n\n";
  o << "The library reads no variable itself; the `slip` command (and the Python module, for `SLIP_SIMD` and "
       "`SLIP_JPEG_INTERNALS`) passes these to it.\n\n";
  o << "| variable | values | what it does | unset |\n| --- | --- | --- | --- |\n";
  for (const EnvironmentVariable& v : environment_variables()) {
    std::string names;
    for (const std::string& n : split_names(v.names)) names += (names.empty() ? "" : ", ") + std::string("`") + n + "`";
    o << "| " << names << " | " << cell(std::string(v.values)) << " | " << cell(std::string(v.what)) << " | "
      << cell(std::string(v.default_value)) << " |\n";
  }
  o << "\n### Pipelines\n\n";
  o << "`slip bench --pipeline NAME` and the Python `Loader(pipeline=NAME)` (which also takes a crop spec such as "
       "`2x224@0.32-1,8x96@0.05-0.32`) name one of these (lib/src/decode/pipelines.cpp):\n\n";
  o << "| pipeline | what it does | Loader |\n| --- | --- | --- |\n";
  for (const Pipeline& p : pipelines())
    o << "| `" << p.name << "` | " << cell(std::string(p.help)) << " | " << (p.loader ? "yes" : "no (bench only)") << " |\n";
  o << "\n<!-- generated: end -->\n";
  return o.str();
}

}  // namespace slip::cli
