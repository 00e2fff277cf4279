#include "cli_errors.hpp"

#include <algorithm>
#include <charconv>

namespace slip::cli {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  // A unique prefix is the intended word ("conv" -> "convert").
  std::string prefix_match;
  int prefixes = 0;
  for (const auto& c : candidates)
    if (word.size() >= 2 && c.size() > word.size() && c.compare(0, word.size(), word) == 0) {
      prefix_match = c;
      ++prefixes;
    }
  if (prefixes == 1) return prefix_match;
  // Otherwise the closest within a third of the word's length (at least 1, at most 3 edits).
  const size_t limit = std::clamp<size_t>(word.size() / 3, 1, 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const auto& c : candidates) {
    const size_t dist = edit_distance(word, c);
    if (dist < best_distance) {
      best = c;
      best_distance = dist;
    }
  }
  return best;
}

namespace {

std::vector<std::string> flag_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& l : o->get_lnames()) out.push_back("--" + l);
    for (const auto& s : o->get_snames()) out.push_back("-" + s);
  }
  return out;
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

// "'--forse' is not a slip convert option. The most similar option is '--force'"
std::string unknown_word(const std::string& word, const CLI::App& root, const CLI::App* sub) {
  const std::string where = sub ? "slip " + sub->get_name() : "slip";
  if (word.size() > 1 && word[0] == '-') {
    const std::string bare = word.substr(0, word.find('='));
    std::vector<std::string> candidates = flag_names(root);
    if (sub)
      for (auto& f : flag_names(*sub)) candidates.push_back(std::move(f));
    std::string msg = "'" + bare + "' is not a " + where + " option";
    const std::string near = nearest(bare, candidates);
    if (!near.empty()) msg += ". The most similar option is '" + near + "'";
    return msg + " (see '" + where + " --help')";
  }
  if (!sub) {
    std::vector<std::string> names;
    for (const CLI::App* s : root.get_subcommands([](const CLI::App*) { return true; })) names.push_back(s->get_name());
    std::string msg = "'" + word + "' is not a slip command";
    const std::string near = nearest(word, names);
    if (!near.empty()) msg += ". The most similar command is '" + near + "'";
    return msg + " (see 'slip --help')";
  }
  return "unexpected argument '" + word + "' for '" + where + "' (see '" + where + " --help')";
}

}  // namespace

std::string describe_parse_error(CLI::App& root, const CLI::ParseError& e) {
  const auto parsed = root.get_subcommands();
  const CLI::App* sub = parsed.empty() ? nullptr : parsed.front();
  const std::vector<std::string> extra = root.remaining(true);
  const bool required = dynamic_cast<const CLI::RequiredError*>(&e) != nullptr;
  const bool no_command = required && sub == nullptr;
  // An unknown word is named first: it is usually why something required seems missing.
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr || required) {
    if (!extra.empty()) return unknown_word(extra.front(), root, sub);
    if (no_command) return "a command is required (see 'slip --help')";
  }
  std::string msg = one_line(e.what());
  // CLI11: "Could not convert: --seed = abc" -> "--seed wants a non-negative integer, got 'abc'".
  const std::string prefix = "Could not convert: ";
  if (msg.rfind(prefix, 0) == 0 && msg.find(" = ") != std::string::npos) {
    const std::string name = msg.substr(prefix.size(), msg.find(" = ") - prefix.size());
    const std::string value = msg.substr(msg.find(" = ") + 3);
    std::string type;
    for (const CLI::App* app : {sub, static_cast<const CLI::App*>(&root)})
      if (app != nullptr && type.empty())
        for (const CLI::Option* o : app->get_options())
          if (o->check_name(name)) type = o->get_type_name().substr(0, o->get_type_name().find(':'));
    // Placeholders (typed_placeholders): N an integer (a signed one's sign is checked before), NUM a number.
    const std::string wants = type == "N" ? "a non-negative integer" : type == "NUM" ? "a number" : "a valid value";
    return name + " wants " + wants + ", got '" + value + "'";
  }
  // CLI11: "--mode: 1 required TEXT:{copy,ids} missing" -> "--mode needs a value: copy, ids".
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr && msg.ends_with(" missing")) {
    const std::string name = msg.substr(0, msg.find(':'));
    std::string out = name + " needs a value";
    const auto open = msg.find('{'), close = msg.find('}');
    if (open != std::string::npos && close != std::string::npos && close > open) {
      std::string choices = msg.substr(open + 1, close - open - 1);
      for (size_t i = 0; (i = choices.find(',', i)) != std::string::npos; i += 2) choices.replace(i, 1, ", ");
      out += ": " + choices;
    }
    return out;
  }
  // CLI11 says "--block-size: must be >= 1"; the flag and the rule read as one sentence.
  for (const char* rule : {": must be ", ": is out of range ", ": wants "}) {
    const auto colon = msg.find(rule);
    if (colon != std::string::npos) msg.erase(colon, 1);
  }
  return msg;
}

CLI::Validator at_least(long long min) {
  return CLI::Validator(
      [min](std::string& value) -> std::string {
        // Unsigned values up to 2^64-1 pass; a sign makes it a signed comparison.
        const char* first = value.data();
        const char* last = value.data() + value.size();
        const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
        if (digits) {  // beyond 2^64-1 is out of range (CLI11 would silently saturate)
          unsigned long long v = 0;
          const auto [end, error] = std::from_chars(first, last, v);
          if (error == std::errc::result_out_of_range) return "is out of range (got '" + value + "')";
          if (min <= 0 || v >= static_cast<unsigned long long>(min)) return {};
          return "must be >= " + std::to_string(min) + " (got '" + value + "')";
        }
        long long v = 0;
        const auto [end, error] = std::from_chars(first, last, v);
        if (error == std::errc::result_out_of_range) return "is out of range (got '" + value + "')";
        if (error != std::errc() || end != last) return {};  // not an integer: the conversion names it
        if (v >= min) return {};
        return "must be >= " + std::to_string(min) + " (got '" + value + "')";
      },
      "");
}

CLI::Validator in_range(long long min, unsigned long long max) {
  const CLI::Validator low = at_least(min);
  return CLI::Validator(
      [low, min, max](std::string& value) -> std::string {
        if (std::string why = low(value); !why.empty()) return why;
        // An integer that sizes an allocation or a thread count: past `max` is a usage error
        // naming the bound, never "cannot create std::vector larger than max_size()".
        unsigned long long v = 0;
        const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (error != std::errc() || end != value.data() + value.size() || v <= max) return {};
        return "must be in " + std::to_string(min) + ".." + std::to_string(max) + " (got '" + value + "')";
      },
      "");
}

}  // namespace slip::cli
