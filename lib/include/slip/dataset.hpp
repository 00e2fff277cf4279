// slip/dataset.hpp — several caches with the same fields, read as one dataset.
//
// Sample ids are global: cache 0's samples first, then cache 1's, ... A global id maps to
// (cache, local id) by a binary search over the caches' first ids: memory is O(caches),
// nothing per sample. Weighted epoch orders over a dataset: slip/mix.hpp.
#pragma once

#include "slip/export.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "slip/cache.hpp"
#include "slip/mix.hpp"

SLIP_API_BEGIN
namespace slip {

class Dataset {
 public:
  // Each input is one of
  //  - a cache directory;
  //  - a directory of caches: its sub-directories that are caches, by name, and the parts of
  //    every `<name>.parts` work directory of `slip convert --shard I/N` in it (or the work
  //    directory itself), in part order; all parts of a job array must be there;
  //  - a list file (docs/FORMAT.md#dataset-lists): JSON, or text with one `PATH [CONTENT_ID]`
  //    per line; a cache whose content id differs from the list's is refused (it changed).
  // Throws Error(bad_input) naming the cache and the first difference when the caches' fields
  // differ (names, order, types, image formats, dtypes, shapes), when a cache is named twice
  // or beside its own parts; Error(io)/Error(bad_input) as Cache::open for each cache.
  static Dataset open(std::span<const std::filesystem::path> inputs);
  static Dataset open(const std::filesystem::path& input);
  // The cache directories `inputs` name, as open() expands them, without opening the caches
  // (for commands that report on each cache, damaged ones included).
  static std::vector<std::filesystem::path> cache_paths(std::span<const std::filesystem::path> inputs);
  // Whether `input` names a dataset rather than one cache (a list file or a directory that is
  // not itself a cache).
  static bool is_dataset_input(const std::filesystem::path& input);
  ~Dataset();
  Dataset(Dataset&&) noexcept;
  Dataset& operator=(Dataset&&) noexcept;

  size_t num_caches() const noexcept;
  uint64_t size() const noexcept;  // samples of all caches
  const Cache& cache(size_t index) const;
  uint64_t first_id(size_t index) const;                   // global id of the cache's sample 0
  std::vector<uint64_t> sizes() const;                     // samples of each cache (MixSpec::sizes)
  const std::vector<CacheField>& fields() const noexcept;  // cache 0's (all agree)

  struct Location {
    size_t cache;
    uint64_t sample;  // local id in that cache
  };
  Location locate(uint64_t global_id) const;  // throws Error(usage) past size()
  uint64_t global_id(size_t cache, uint64_t sample) const;

  // Cache::release_resident_pages / keep_resident_below / drop_page_cache for every cache: the
  // resident window is the process's, whichever caches filled it.
  void release_resident_pages() const noexcept;
  void keep_resident_below(uint64_t limit = Cache::kResidentWindowBytes) const noexcept;
  void drop_page_cache() const;

  // Weights and epoch size a JSON list file gave (empty / nullopt otherwise).
  const std::vector<StreamWeight>& weights() const noexcept;
  std::optional<uint64_t> epoch_size() const noexcept;

  // The content id a list records for a cache: slip's content id, or "xxh3:<manifest sum>" for
  // a cache without one (a Python-written cache).
  static std::string content_id_of(const Cache& cache);
  // A JSON list file naming this dataset's caches (absolute paths), content ids, sample counts
  // and weights: write it once, and a cache changed since is refused when it is opened.
  std::string list_json() const;

 private:
  Dataset();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace slip
SLIP_API_END
