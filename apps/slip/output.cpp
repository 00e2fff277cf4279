#include "output.hpp"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <iostream>

#include "slip/error.hpp"

namespace slip::cli {

uint64_t parse_count(const std::string& text) {
  size_t used = 0;
  unsigned long long v = 0;
  // stoull would take " 5", "+5" and "-1" (as 18446744073709551615).
  if (text.empty() || text[0] < '0' || text[0] > '9') throw Error(Errc::usage, "not a number: \"" + text + "\"");
  try {
    v = std::stoull(text, &used);
  } catch (const std::exception&) {
    throw Error(Errc::usage, "not a number: \"" + text + "\"");
  }
  const std::string unit = text.substr(used);
  static const std::pair<const char*, uint64_t> units[] = {
      {"", 1}, {"K", 1000}, {"M", 1000000}, {"G", 1000000000}, {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30}, {"k", 1000}};
  for (const auto& [name, mult] : units)
    if (unit == name) {
      if (v > UINT64_MAX / mult) throw Error(Errc::usage, "too large: \"" + text + "\"");
      return v * mult;
    }
  throw Error(Errc::usage, "unknown unit in \"" + text + "\" (use K, M, G, KiB, MiB or GiB)");
}

namespace {

// Why `text` is not a decimal integer of the option's kind, or "" when it is; leading zeros
// are dropped so that CLI11's base-0 conversion cannot read the digits as octal.
std::string strict_integer(std::string& text, bool is_signed) {
  const bool negative = is_signed && !text.empty() && text[0] == '-';
  const std::string_view digits = std::string_view(text).substr(negative ? 1 : 0);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos)
    return "\"" + text + "\" is not a " + (is_signed ? "whole number" : "non-negative whole number");
  uint64_t magnitude = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
  const uint64_t limit = !is_signed ? UINT64_MAX : negative ? uint64_t{1} << 63 : uint64_t{INT64_MAX};
  if (ec != std::errc() || end != digits.data() + digits.size() || magnitude > limit) return "\"" + text + "\" is out of range";
  const size_t first = digits.find_first_not_of('0');
  text = (negative && magnitude ? "-" : "") + std::string(first == std::string_view::npos ? "0" : digits.substr(first));
  return {};
}

}  // namespace

void strict_integer_options(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    std::string type = opt->get_type_name();  // "UINT", or with validators "UINT:POSITIVE"
    type = type.substr(0, type.find_first_of(": "));
    if (type != "UINT" && type != "INT") continue;
    const bool is_signed = type == "INT";
    opt->transform(CLI::Validator([is_signed](std::string& text) { return strict_integer(text, is_signed); }, ""));
  }
  for (CLI::App* sub : app.get_subcommands({})) strict_integer_options(*sub);
}

uint64_t parse_unsigned(std::string_view text, std::string_view what) {
  std::string copy(text);
  if (const std::string problem = strict_integer(copy, false); !problem.empty())
    throw Error(Errc::usage, std::string(what) + ": " + problem);
  return std::stoull(copy);
}

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }
bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

void print_json(const nlohmann::ordered_json& object) {
  nlohmann::ordered_json out;
  out["schema"] = kJsonSchemaVersion;
  for (auto& [k, v] : object.items()) out[k] = v;
  std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  std::cout.flush();
}

Progress::Progress(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled), start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { finish(); }

void Progress::update(uint64_t done, std::optional<uint64_t> total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(100) && !(total && done >= *total)) return;
  last_ = now;
  drawn_ = true;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
  char line[160];
  if (total && *total > 0) {
    const double eta = rate > 0 ? static_cast<double>(*total - std::min(done, *total)) / rate : 0;
    std::snprintf(line, sizeof line, "\r%s %llu/%llu (%3.0f%%) %.0f/s ETA %.0fs   ", label_.c_str(), static_cast<unsigned long long>(done),
                  static_cast<unsigned long long>(*total), 100.0 * static_cast<double>(done) / static_cast<double>(*total), rate, eta);
  } else {
    std::snprintf(line, sizeof line, "\r%s %llu %.0f/s   ", label_.c_str(), static_cast<unsigned long long>(done), rate);
  }
  std::fputs(line, stderr);
  std::fflush(stderr);
}

void Progress::finish() {
  if (enabled_ && drawn_) {
    std::fputs("\n", stderr);
    std::fflush(stderr);
  }
  drawn_ = false;
  enabled_ = false;
}

}  // namespace slip::cli
