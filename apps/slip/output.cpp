#include "output.hpp"

#include "exit_codes.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <iostream>

#include <spdlog/spdlog.h>

#include "slip/convert.hpp"
#include "slip/dataset.hpp"
#include "slip/error.hpp"
#include "slip/runtime.hpp"

namespace slip::cli {

uint64_t parse_count(const std::string& text) {
  uint64_t v = 0;
  // Digits first (no " 5", "+5" or "-1"), then the unit; from_chars never throws.
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || text[0] < '0' || text[0] > '9') throw Error(Errc::usage, "not a number: \"" + printable(text) + "\"");
  if (error != std::errc()) throw Error(Errc::usage, "too large: \"" + printable(text) + "\"");
  const std::string unit(end, text.data() + text.size());
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
  if (!is_signed && text.size() > 1 && text[0] == '-' && text.find_first_not_of("0123456789", 1) == std::string::npos)
    return "must be >= 0 (got '" + text + "')";  // CLI11 would wrap "-1" to 2^64-1
  const bool negative = is_signed && !text.empty() && text[0] == '-';
  const std::string_view digits = std::string_view(text).substr(negative ? 1 : 0);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos)
    return std::string("wants ") + (is_signed ? "an integer" : "a non-negative integer") + ", got '" + text + "'";
  uint64_t magnitude = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
  const uint64_t limit = !is_signed ? UINT64_MAX : negative ? uint64_t{1} << 63 : uint64_t{INT64_MAX};
  if (ec != std::errc() || end != digits.data() + digits.size() || magnitude > limit) return "is out of range (got '" + text + "')";
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

void typed_placeholders(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_type_size() == 0) continue;  // a flag
    const std::string full = opt->get_type_name();
    const std::string type = full.substr(0, full.find_first_of(": "));
    if (type == "UINT" || type == "INT")
      opt->type_name("N");
    else if (type == "FLOAT")
      opt->type_name("NUM");
    else if (type == "TEXT" && full.find(":{") != std::string::npos)
      opt->type_name("");  // the choices say it
  }
  for (CLI::App* sub : app.get_subcommands({})) typed_placeholders(*sub);
}

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
  std::string out = CLI::Formatter::make_option_opts(opt);
  if (out.rfind(" :{", 0) == 0) out.erase(1, 1);
  return out;
}

uint64_t parse_unsigned(std::string_view text, std::string_view what) {
  std::string copy(text);
  if (const std::string problem = strict_integer(copy, false); !problem.empty())
    throw Error(Errc::usage, std::string(what) + ": " + problem);
  uint64_t value = 0;
  std::from_chars(copy.data(), copy.data() + copy.size(), value);  // digits within range: checked above
  return value;
}

std::filesystem::path output_root(const std::string& given) {
  // Absolute, so the cache paths printed (the last stdout line of convert, subset, merge) work
  // from any directory a script or a SLURM job later runs in.
  return std::filesystem::absolute(given.empty() ? default_cache_root(process_environment()) : std::filesystem::path(given));
}

unsigned resolve_threads(unsigned requested) { return requested ? requested : available_cpus(process_environment()); }

std::optional<int64_t> source_date_epoch() {
  const auto v = env_value(process_environment(), "SOURCE_DATE_EPOCH");
  if (!v) return std::nullopt;
  // As the reproducible-builds convention says: a decimal count of seconds, else an error.
  if (v->size() > 18 || v->find_first_not_of("0123456789") != std::string::npos)
    throw Error(Errc::usage, "SOURCE_DATE_EPOCH=\"" + printable(*v) + "\" is not a number of seconds");
  int64_t seconds = 0;
  std::from_chars(v->data(), v->data() + v->size(), seconds);  // at most 18 digits: checked above
  return seconds;
}

bool parallel_writes_environment() {
  const auto v = env_value(process_environment(), "SLIP_PARALLEL_WRITES");
  if (!v || *v == "0") return false;
  if (*v == "1") return true;
  throw Error(Errc::usage, "SLIP_PARALLEL_WRITES=\"" + printable(*v) + "\" must be 0 or 1");
}

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }
OutputFile::OutputFile(const std::string& path, bool binary) : path_(path) {
  if (path.empty() || is_stdout(path)) {
    if (binary && stdout_is_terminal()) throw Error(Errc::usage, "refusing to write binary data to a terminal; use -o FILE or a pipe");
    file_ = stdout;
    return;
  }
  check_output_outside_caches(path, "the output file");  // a file in a cache fails its verify
  // Never through a symbolic link (a planted one would redirect the output): open_for_writing.
  const int fd = open_output_file(path);
  file_ = ::fdopen(fd, binary ? "wb" : "w");
  if (!file_) {
    const int err = errno;
    ::close(fd);
    throw_errno("cannot create", path, err);
  }
}

OutputFile::~OutputFile() {
  if (file_ && file_ != stdout) std::fclose(file_);
}

bool OutputFile::write(std::string_view data) {
  if (reader_gone_) return false;
  if (std::fwrite(data.data(), 1, data.size(), file_) != data.size()) {
    if (file_ == stdout && errno == EPIPE) {  // the reader is gone (`| head`): not an error
      reader_gone_ = true;
      return false;
    }
    throw_errno("cannot write", file_ == stdout ? "stdout" : path_, errno);
  }
  return true;
}

void OutputFile::close() {
  if (!file_) return;
  if (file_ == stdout) {
    if (std::fflush(stdout) != 0 && errno != EPIPE) throw Error(Errc::io, "cannot write to stdout");
  } else if (std::fclose(file_) != 0) {
    file_ = nullptr;
    throw_errno("cannot write", path_, errno);
  }
  file_ = nullptr;
}

void write_output(const std::string& path, std::string_view data, bool binary) {
  OutputFile out(path, binary);
  out.write(data);
  out.close();
}

void reject_stdout(const std::string& path, const std::string& option) {
  if (is_stdout(path)) throw Error(Errc::usage, option + " names a directory (a cache is a directory); '-' (stdout) is not possible here");
}

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

namespace {
// Each cache in turn, every one checked even when an earlier one fails: its error is logged
// (and printed as a JSON error object under --json) and counts towards the worst exit code.
int each_cache_reporting_errors(const std::vector<std::string>& caches, bool json, const std::string& command,
                                const std::function<int(const std::string&)>& one) {
  int worst = 0;
  for (const std::string& cache : caches) {
    try {
      worst = std::max(worst, one(cache));
    } catch (const Error& e) {
      if (e.code() == Errc::interrupted) throw;
      spdlog::error("{}", e.describe());
      if (json) print_json(error_json(command, e, cache));
      worst = std::max(worst, exit_code(e.code()));
    }
  }
  return worst;
}
}  // namespace

int for_each_cache(const std::vector<std::string>& caches, bool json, const std::string& command,
                   const std::function<int(const std::string&)>& one) {
  if (caches.size() == 1) {
    set_error_subject(caches.front());
    return one(caches.front());
  }
  return each_cache_reporting_errors(caches, json, command, one);
}

int for_each_dataset_cache(const std::vector<std::string>& inputs, bool json, const std::string& command,
                           const std::function<int(const std::string&)>& one, const std::function<int(const Dataset&)>& total,
                           std::optional<int> total_failed) {
  std::vector<std::filesystem::path> paths(inputs.begin(), inputs.end());
  if (std::none_of(paths.begin(), paths.end(), [](const auto& p) { return Dataset::is_dataset_input(p); }))
    return for_each_cache(inputs, json, command, one);
  std::vector<std::string> caches;
  for (const auto& p : Dataset::cache_paths(paths)) caches.push_back(p.string());
  // Several caches always: each one's error is reported and the next one still checked.
  int worst = each_cache_reporting_errors(caches, json, command, one);
  try {
    worst = std::max(worst, total(Dataset::open(paths)));
  } catch (const Error& e) {
    if (e.code() == Errc::interrupted) throw;
    spdlog::error("dataset: {}", e.describe());
    if (json) print_json(error_json(command, e, inputs.size() == 1 ? inputs.front() : std::string()));
    worst = std::max(worst, total_failed.value_or(exit_code(e.code())));
  }
  return worst;
}

nlohmann::ordered_json options_json(const std::vector<std::pair<std::string, std::string>>& options) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [key, value] : options) out[key] = value;
  return out;
}

namespace {
std::string& subject_storage() {
  static std::string subject;
  return subject;
}
}  // namespace

void set_error_subject(std::string subject) { subject_storage() = std::move(subject); }
const std::string& error_subject() { return subject_storage(); }

nlohmann::ordered_json error_json(const std::string& command, const Error& e, const std::string& subject) {
  using J = nlohmann::ordered_json;
  const std::string& path = subject.empty() ? e.path() : subject;
  return {{"command", command},
          {"path", path.empty() ? J(nullptr) : J(path)},
          {"error", e.describe()},
          {"class", errc_name(e.code())},
          {"exit_code", exit_code(e.code())},
          {"file", e.path().empty() ? J(nullptr) : J(e.path())},
          {"sample", e.sample() ? J(*e.sample()) : J(nullptr)},
          {"offset", e.offset() ? J(*e.offset()) : J(nullptr)}};
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
  // A rate needs time to mean anything: none on a phase's first tick (a few items in
  // microseconds read as "984615385/s") nor before half a second has passed, except on the
  // last tick, which is the whole phase's rate (so even a short phase ends with one).
  const double secs = std::chrono::duration<double>(now - start_).count();
  const bool last_tick = total && done >= *total;
  const bool rated = drawn_ && done > 0 && secs > 0 && (secs >= 0.5 || last_tick);
  last_ = now;
  drawn_ = true;
  const double rate = rated ? static_cast<double>(done) / secs : 0;
  char line[160];
  if (total && *total > 0) {
    const int n = std::snprintf(line, sizeof line, "\r%s %llu/%llu (%3.0f%%)", label_.c_str(), static_cast<unsigned long long>(done),
                                static_cast<unsigned long long>(*total), 100.0 * static_cast<double>(done) / static_cast<double>(*total));
    if (rated && n > 0 && static_cast<size_t>(n) < sizeof line)
      std::snprintf(line + n, sizeof line - static_cast<size_t>(n), " %.0f/s ETA %.0fs", rate,
                    static_cast<double>(*total - std::min(done, *total)) / rate);
  } else {
    const int n = std::snprintf(line, sizeof line, "\r%s %llu", label_.c_str(), static_cast<unsigned long long>(done));
    if (rated && n > 0 && static_cast<size_t>(n) < sizeof line)
      std::snprintf(line + n, sizeof line - static_cast<size_t>(n), " %.0f/s", rate);
  }
  std::fputs(line, stderr);
  std::fputs("   ", stderr);  // clears what a longer previous line left
  std::fflush(stderr);
}

void Progress::phase(std::string label) {
  if (label == label_) return;
  if (enabled_ && drawn_) {
    std::fputs("\n", stderr);
    std::fflush(stderr);
  }
  drawn_ = false;
  label_ = std::move(label);
  start_ = std::chrono::steady_clock::now();
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
