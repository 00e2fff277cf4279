// slip/verify.hpp — checking a cache end to end (structure, sizes, bounds, markers, checksums).
#pragma once

#include "slip/export.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "slip/runtime.hpp"

SLIP_API_BEGIN
namespace slip {

class Cache;

struct VerifyIssue {
  std::string file;                // the file concerned, relative to the cache
  std::optional<uint64_t> sample;  // the sample, when one is concerned
  std::string field;
  std::string message;
};

struct VerifyReport {
  std::filesystem::path path;
  uint64_t samples = 0;
  bool slip_written = false;       // has slip's manifest section
  bool checksums_present = false;  // per-payload and per-file checksums exist
  uint64_t payloads_checked = 0;   // payload records bounds/marker-checked
  uint64_t checksums_checked = 0;  // payload + file checksums recomputed
  uint64_t bytes_hashed = 0;
  uint64_t issue_count = 0;  // all issues found (issues holds the first max_issues)
  std::vector<VerifyIssue> issues;
  std::vector<std::string> notes;  // informational ("checksums absent", ...)
  // Files in the cache directory that are no part of it (each also has a note): not written by
  // slip nor the Python slipstream. *_index.npy files are never here: they are checked (the
  // Python loader unpickles them) and an unreadable or unsafe one is an issue.
  std::vector<std::string> unknown_files;
  // Temporaries of interrupted runs (e.g. a killed `slip yuv420`): "<name> (abandoned)" or
  // "<name> (in progress)". Not an issue; the next run of that command removes abandoned ones.
  std::vector<std::string> temporaries;
  // --decode: every JPEG image decoded by the engine and by an accurate full TurboJPEG decode.
  bool decode_checked = false;
  uint64_t images_decoded = 0;
  int decode_max_diff = 0;      // largest absolute pixel difference over all images
  double decode_mean_diff = 0;  // largest per-image mean absolute difference
  double seconds = 0;
  bool ok() const noexcept { return issue_count == 0; }
};

struct VerifyOptions {
  unsigned threads = 0;     // 0: available_cpus()
  size_t max_issues = 100;  // detailed issues kept in the report
  bool decode = false;      // also decode every image (see VerifyReport::decode_*)
  int max_diff = 1;         // decode: fail when any pixel differs by more
  double mean_diff = 0.01;  // decode: fail when an image's mean absolute difference is larger
  // Called with (phase, done, total) from the verifying threads' owner, for every phase that
  // can take long: "payloads" (payloads checked), "checksums" (files hashed), "decode"
  // (images decoded, with `decode`). A new phase starts at done = 0.
  std::function<void(std::string_view phase, uint64_t done, uint64_t total)> progress;
  CancelToken cancel;  // cancel() from any thread stops the check (slip/runtime.hpp)
};

// Never throws for problems in the cache (they become issues); throws Error(io/usage) only
// when the directory cannot be read at all. A slip staging directory (".<name>.tmp-<pid>-<id>")
// is one issue, as Cache::open refuses it: it is never a cache until its run renames it.
VerifyReport verify_cache(const std::filesystem::path& dir, const VerifyOptions& options = {});

// The names in the cache's directory that no part of it accounts for (VerifyReport::unknown_files
// without reading a file: the manifest and a listing; temporaries of running or interrupted
// commands are not among them). Commands that copy a cache refuse these before copying a byte.
std::vector<std::string> unknown_cache_files(const Cache& cache);

}  // namespace slip
SLIP_API_END
