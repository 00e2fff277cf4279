#include "cli_model.hpp"

#include <regex>

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

}  // namespace slip::cli
