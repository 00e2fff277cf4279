// Small helpers shared by the subcommands: terminal checks, sizes, progress, JSON output.
#pragma once

#include <filesystem>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "slip/error.hpp"

namespace slip {
class Dataset;
}

namespace slip::cli {

inline constexpr int kJsonSchemaVersion = 1;

// "89478485", "12M" (x1000^2), "4K", "2G", "64KiB"/"64MiB"/"1GiB" (x1024^n). Throws Error(usage).
uint64_t parse_count(const std::string& text);

// Makes every integer option and argument of `app` and its subcommands strict: decimal digits
// only ("-" first for signed ones), within the type's range. CLI11 alone goes through strtoull
// with base 0, so "-1" became 18446744073709551615, "0x10" 16 and "010" 8. Call after setup.
void strict_integer_options(CLI::App& app);
// Placeholders that say what a value is: UINT/INT become N, FLOAT NUM, and a choice shows its
// values alone ({a,b}, not TEXT:{a,b}); text options name theirs where declared (DIR, FILE,
// SIZE, SECONDS, URL, ...), which also decides which ones complete file names (cli_model.hpp).
// Call after strict_integer_options (it finds integer options by CLI11's type names).
void typed_placeholders(CLI::App& app);
// CLI11's help formatter, showing a choice as {a,b} rather than :{a,b} (its empty type name).
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* opt) const override;
};
// The same rule for text parsed later (values files): throws Error(usage) naming `what`.
uint64_t parse_unsigned(std::string_view text, std::string_view what);

bool stdout_is_terminal();

// The environment conventions of the command (the library reads none by itself):
// -o DIR, else $SLIPSTREAM_CACHE_DIR, else ~/.slipstream.
std::filesystem::path output_root(const std::string& given);
// -j N, else the CPUs this process may use (affinity, cgroup quota, SLURM_CPUS_PER_TASK).
unsigned resolve_threads(unsigned requested);
// SOURCE_DATE_EPOCH (reproducible builds) for the manifests' "created" time; nullopt: now.
std::optional<int64_t> source_date_epoch();
// SLIP_PARALLEL_WRITES: "1" true, unset, empty or "0" false, anything else a usage error.
bool parallel_writes_environment();

// "-" names stdout wherever a file is written (cat -o, order -o, subset --mode ids -o, man -o).
inline bool is_stdout(const std::string& path) { return path == "-"; }
// Writes `data` to the file `path`, or to stdout when `path` is "" or "-"; binary data is
// refused on a terminal (usage error). Throws Error(io) when the write fails.
void write_output(const std::string& path, std::string_view data, bool binary);
// The same, written piece by piece (outputs too large to hold, e.g. an epoch order of billions
// of ids). write() returns false once the reader of stdout has gone (`| head`).
class OutputFile {
 public:
  OutputFile(const std::string& path, bool binary);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  bool write(std::string_view data);
  void close();

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  bool reader_gone_ = false;
};
// For options naming a directory (a cache is a directory): "-" is a usage error.
void reject_stdout(const std::string& path, const std::string& option);
bool stderr_is_terminal();
std::string human_bytes(uint64_t bytes);
// A failure as a JSON object (--json): {"command", "path", "error" (the stderr line), "class"
// (usage, bad_input, io, retryable, interrupted), "exit_code", "file", "sample", "offset"}.
// "path" is what the command was working on (`subject`: the cache, the source), else the
// file the error names; the last three are null when the error does not say.
nlohmann::ordered_json error_json(const std::string& command, const Error& e, const std::string& subject);
// The subject of the failure main() reports with --json (set by for_each_cache and convert).
void set_error_subject(std::string subject);
const std::string& error_subject();
// Runs `one` for each cache in turn (slip verify A B ..., slip info A B ...). The exit status
// is the worst (highest) of the caches'. With several caches an error in one is reported
// (a `slip: error:` line; with --json also an object {"command", "path", "error", "exit_code"})
// and the next cache is still checked; with one cache the error propagates as usual.
int for_each_cache(const std::vector<std::string>& caches, bool json, const std::string& command,
                   const std::function<int(const std::string&)>& one);

// for_each_cache over datasets (slip/dataset.hpp): an input that is a directory of caches or a
// dataset list stands for its caches, each reported by `one`; then `total` reports on the
// dataset as a whole (Dataset::open: fields agree, listed content ids match), and an error
// opening it is reported like a cache's (`total_failed`: the exit status for it, else the
// error's). Plain cache inputs only: exactly for_each_cache.
int for_each_dataset_cache(const std::vector<std::string>& inputs, bool json, const std::string& command,
                           const std::function<int(const std::string&)>& one, const std::function<int(const Dataset&)>& total,
                           std::optional<int> total_failed = std::nullopt);

// A cache's options (CacheProvenance::options) as a JSON object, key -> value ({} for none).
nlohmann::ordered_json options_json(const std::vector<std::pair<std::string, std::string>>& options);

// Prints one JSON object on stdout (with "schema": kJsonSchemaVersion added first).
void print_json(const nlohmann::ordered_json& object);

// A one-line progress display on stderr: count, rate, ETA. Redraws at most 10 times a second.
class Progress {
 public:
  Progress(std::string label, bool enabled);
  ~Progress();
  void update(uint64_t done, std::optional<uint64_t> total);
  // Ends the current line and starts a new one labelled `label` (a new phase of the same job).
  void phase(std::string label);
  void finish();

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace slip::cli
