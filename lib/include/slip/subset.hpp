// slip/subset.hpp — selecting samples of a cache by field value (few-shot too), and a Source
// that reads a selection of a cache so convert() can write it as a new, independent cache.
#pragma once

#include "slip/export.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "slip/cache.hpp"
#include "slip/source.hpp"

SLIP_API_BEGIN
namespace slip {

struct SubsetSelection {
  std::string field = "label";
  std::vector<int64_t> values;          // int values of `field`
  std::vector<std::string> str_values;  // str values of `field`
  // Class names, mapped to label values through the `path` field's class folder
  // (<root>/<class>/<file>, as the ImageFolder source writes it) or through `classes_file`.
  std::vector<std::string> names;
  std::filesystem::path classes_file;  // one class name per line; line i (0-based) is value i
  // One value per line (a trailing '\r' dropped, empty lines ignored), read as a stream:
  // memory is bounded by the field's distinct values, not by the file. Values the field does
  // not hold are warned about (the first 5, then a count) and counted, not errors (those in
  // `values` / `str_values` are); a file none of whose values is held is Error(usage).
  std::filesystem::path values_file;
  uint64_t per_class = 0;  // 0: every sample of each value; K: K per value
  uint64_t seed = 0;       // chooses the K per value, deterministically
};

// Ascending sample ids matching the selection. Uses the field's CSR index when the cache has
// one, builds what it needs otherwise. Throws Error(usage) for unknown values or names.
std::vector<uint64_t> select_samples(const Cache& cache, const SubsetSelection& selection);

class Dataset;
struct SubsetReport;

// The same over a dataset of many caches (slip/dataset.hpp): ascending global ids, exactly the
// ids select_samples gives on the caches merged into one (`slip merge`): values are matched
// across caches and --per-class draws from each value's global id list.
std::vector<uint64_t> select_samples(const Dataset& dataset, const SubsetSelection& selection, SubsetReport* report = nullptr);

// What select_samples found in `values_file`.
struct SubsetReport {
  uint64_t values_read = 0;       // non-empty lines
  uint64_t values_not_found = 0;  // lines whose value the field does not hold (warned about)
};
std::vector<uint64_t> select_samples(const Cache& cache, const SubsetSelection& selection, SubsetReport* report);

// A Source yielding the given samples of the cache at `parent`, in the given (ascending)
// order, with every field's values as stored. Its identity: kind "subset", the parent's path,
// a fingerprint over the parent's content id and the ids; name "<parent name>-subset".
std::unique_ptr<Source> open_cache_subset(const std::filesystem::path& parent, std::vector<uint64_t> ids);

// The same for global ids of the dataset `inputs` name (Dataset::open): each sample read from
// its own cache, the values those of the merged cache's subset. Its identity: kind "subset",
// the inputs' paths, a fingerprint over every cache's content id and the ids.
std::unique_ptr<Source> open_dataset_subset(std::span<const std::filesystem::path> inputs, std::vector<uint64_t> ids);

// Writes ids as a 1-D int64 .npy (what loaders take as indices=).
void write_ids_npy(const std::filesystem::path& path, const std::vector<uint64_t>& ids);
// The same .npy file as bytes (for a pipe: `slip order --format npy | ...`).
std::string ids_npy(const std::vector<uint64_t>& ids);

}  // namespace slip
SLIP_API_END
