// slip/source.hpp — the one interface every dataset source implements.
//
// A source declares its schema and (where known) its size, names itself for the content id,
// then yields samples in order. The writer never knows which source it reads.
#pragma once

#include "slip/export.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "slip/runtime.hpp"
#include "slip/schema.hpp"

SLIP_API_BEGIN
namespace slip {

// What identifies a source for the content id and the provenance in the manifest.
struct SourceIdentity {
  std::string kind;          // "imagefolder", "tar", "ffcv", "litdata", "slipstream"
  std::string uri;           // normalised: absolute path or URL
  std::string fingerprint;   // kind-specific, documented in docs/FORMAT.md ("Content id")
  std::string default_name;  // the name part of <name>-<id8>.slipstream
  // Several inputs (tar shards): each one, in order. `uri` then joins them with newlines (what
  // the content id hashes); manifests record this list and a one-line summary instead.
  std::vector<std::string> uris;
};

// "1,282 tar shards (/data/train-000000.tar .. /data/train-001281.tar)" for several inputs,
// else the single URI: how messages, `info` and `ls` show a source.
std::string source_summary(const std::vector<std::string>& uris, std::string_view kind = "inputs");

class Source {
 public:
  virtual ~Source() = default;
  Source() = default;
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;

  virtual const Schema& schema() const = 0;
  virtual SourceIdentity identity() const = 0;
  // Number of samples when known up front (progress, preallocation); nullopt otherwise.
  virtual std::optional<uint64_t> size() const = 0;
  // Fills `out` with the next sample and returns true, or returns false at the end.
  // Malformed input that makes the rest of the source unreadable throws slip::Error;
  // a single unreadable sample is returned with Sample::problem set.
  virtual bool next(Sample& out) = 0;
  // Skips the next n samples and returns how many were skipped (fewer at the end). Sources
  // with random access override it to skip without reading.
  // For job-array conversions of sources that do not know their sample count (tar shards):
  // restrict the source to the index-th of `count` contiguous groups of its files and return
  // [start, end) and the total, counted in those files. nullopt: not supported.
  struct FileSlice {
    uint64_t start = 0, end = 0, total = 0;
  };
  virtual std::optional<FileSlice> select_files(uint64_t /*index*/, uint64_t /*count*/) { return std::nullopt; }

  virtual uint64_t skip(uint64_t n) {
    Sample scratch;
    uint64_t done = 0;
    while (done < n && next(scratch)) ++done;
    return done;
  }
};

// Source-specific settings from the command line, as (key, value) pairs in flag order:
// ("fingerprint", "content"), ("field", "cls=int"), ("rename", "img=image"), ...
// Each source reads the keys it knows and rejects values it cannot honour.
struct SourceOptions {
  std::vector<std::pair<std::string, std::string>> settings;
  std::optional<std::string> get(std::string_view key) const;    // last value given
  std::vector<std::string> get_all(std::string_view key) const;  // every value, in order
  void set(std::string key, std::string value) { settings.emplace_back(std::move(key), std::move(value)); }
  // Not settings: how opening reports its progress (an ImageFolder scan of a network file
  // system takes minutes; called from the opening thread, at most every ~0.1 s) and stops.
  ProgressCallback progress;
  CancelToken cancel;
  // The tasks of a job array share one ImageFolder scan through this directory (the output
  // directory): the first saves the file list and fingerprint there, the others reuse it while
  // every directory of the tree keeps its mtime (docs/SLURM.md "What a task costs"). Empty:
  // every open scans. Other source kinds ignore it.
  std::filesystem::path scan_snapshot_dir;
  // Where remote sources look up AWS_*, CURL_CA_BUNDLE, SLIPSTREAM_CACHE_DIR and HOME
  // (RemoteOptions::environment); the slip command passes process_environment().
  Environment environment;
};

// Opens the source named by `uri`, choosing the kind from what it is (a directory of class
// folders, a tar, a .beton, ...). Throws Error(bad_input / io) when it cannot.
std::unique_ptr<Source> open_source(const std::string& uri, const SourceOptions& options = {});

// Several inputs at once (tar shards: a list, brace ranges, globs, @list files, "-" for stdin).
// One argument is the same as open_source(argument).
std::unique_ptr<Source> open_sources(const std::vector<std::string>& uris, const SourceOptions& options = {});

// The ImageFolder source (torchvision semantics), directly.
std::unique_ptr<Source> open_imagefolder(const std::string& root);

}  // namespace slip
SLIP_API_END
