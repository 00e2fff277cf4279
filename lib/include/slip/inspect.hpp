// slip/inspect.hpp — summaries of caches (`slip info`) and cache directories (`slip ls`).
#pragma once

#include "slip/export.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "slip/cache.hpp"
#include "slip/cache.hpp"

SLIP_API_BEGIN
namespace slip {

struct Distribution {
  uint64_t min = 0, median = 0, max = 0;
  double mean = 0;
};

struct FieldSummary {
  std::string name;
  std::string type;    // manifest type string
  std::string dtype;   // numeric fields
  uint64_t bytes = 0;  // sum of the field's storage files
  // image/bytes fields
  Distribution payload_size;
  std::string image_format;
  uint64_t max_size = 0;
  // image fields
  Distribution width, height;
  // int fields: every distinct value's count when there are at most `histogram_limit` of
  // them (the label histogram); beyond that `histogram_truncated` and only the summary below.
  std::map<int64_t, uint64_t> histogram;
  bool histogram_truncated = false;
  // int fields, always: number of distinct values, smallest and largest, and the most
  // frequent values (count descending, then value ascending; at most 10).
  uint64_t distinct = 0;
  int64_t value_min = 0, value_max = 0;
  std::vector<std::pair<int64_t, uint64_t>> most_frequent;
};

struct LedgerSummary {
  std::map<std::string, uint64_t> actions;  // "transcoded" -> 6, "skipped" -> 1
  std::vector<LedgerEntry> entries;         // as recorded, in order (slip info lists them)
};

struct CacheSummary {
  std::filesystem::path path;
  uint64_t samples = 0;
  uint64_t total_bytes = 0;  // every file in the directory
  std::vector<FieldSummary> fields;
  CacheProvenance provenance;
  LedgerSummary ledger;
  std::vector<std::string> indexes;  // *_index.npy present
};

// Reads the whole metadata (not the payloads) in O(n log n) time and 8n bytes per int field.
// `histogram_limit`: int fields with more distinct values than this get a summary
// (distinct, min, max, most frequent) and no full histogram.
CacheSummary summarize(const Cache& cache, size_t histogram_limit = 100000);

struct CacheListing {
  std::filesystem::path path;
  std::string name;
  bool complete = false;
  std::string state;  // "complete", "incomplete (in progress, pid N)", "incomplete (abandoned)", "damaged: ..."
  uint64_t samples = 0;
  uint64_t bytes = 0;
  std::string source;  // kind + uri
  // slip.options: what made these bytes (CacheProvenance::options), sorted by key.
  std::vector<std::pair<std::string, std::string>> options;
  // slip temporaries inside the cache ("<name> (abandoned)" / "<name> (in progress)"), e.g. of
  // a killed `slip yuv420`; the next run of that command removes abandoned ones.
  std::vector<std::string> temporaries;
  uint64_t temporary_bytes = 0;
};

// "jpeg-restarts=1, on-error=skip" (values escaped for a terminal): how `info` and `ls` show a
// cache's options; empty for the defaults.
std::string options_summary(const std::vector<std::pair<std::string, std::string>>& options);

// Caches (directories with a manifest.json) and slip's temporary directories under `dir`.
std::vector<CacheListing> list_caches(const std::filesystem::path& dir);

}  // namespace slip
SLIP_API_END
