// slip/inspect.hpp — summaries of caches (`slip info`) and cache directories (`slip ls`).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "slip/cache.hpp"

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
  // int fields with few distinct values: value -> count (label histogram)
  std::map<int64_t, uint64_t> histogram;
  bool histogram_truncated = false;
};

struct LedgerSummary {
  std::map<std::string, uint64_t> actions;  // "transcoded" -> 6, "skipped" -> 1
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

// Reads the whole metadata (not the payloads). `histogram_limit`: int fields with more
// distinct values than this get no histogram.
CacheSummary summarize(const Cache& cache, size_t histogram_limit = 100000);

struct CacheListing {
  std::filesystem::path path;
  std::string name;
  bool complete = false;
  std::string state;  // "complete", "incomplete (in progress, pid N)", "incomplete (abandoned)", "damaged: ..."
  uint64_t samples = 0;
  uint64_t bytes = 0;
  std::string source;  // kind + uri
  // slip temporaries inside the cache ("<name> (abandoned)" / "<name> (in progress)"), e.g. of
  // a killed `slip yuv420`; the next run of that command removes abandoned ones.
  std::vector<std::string> temporaries;
  uint64_t temporary_bytes = 0;
};

// Caches (directories with a manifest.json) and slip's temporary directories under `dir`.
std::vector<CacheListing> list_caches(const std::filesystem::path& dir);

}  // namespace slip
