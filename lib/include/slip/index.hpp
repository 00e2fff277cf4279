// slip/index.hpp — field indexes: value -> ascending sample ids, for int, float and str fields.
//
// Written in two forms (docs/FORMAT.md "Field indexes"):
//  1. <field>_index.npy: a pickled 0-d object array holding a dict {value: int64 ids}, exactly
//     what the Python slipstream loader globs and loads with np.load(allow_pickle=True).item();
//  2. a pickle-free CSR form slip itself reads (and numpy with allow_pickle=False):
//     <field>.index.keys.npy (sorted distinct values: <i8, <f8 or <U<n>),
//     <field>.index.offsets.npy (<i8, K+1), <field>.index.ids.npy (<i8, N).
#pragma once

#include "slip/export.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "slip/cache.hpp"

SLIP_API_BEGIN
namespace slip {

struct FieldIndex {
  std::string field;
  FieldType key_type = FieldType::int64;  // int64, float64 or str
  // Distinct values, in the Python loader's order: ascending numbers; strings by first appearance.
  std::vector<int64_t> int_keys;
  std::vector<double> float_keys;
  std::vector<std::string> str_keys;
  std::vector<uint64_t> offsets;  // K + 1: ids of key k are ids[offsets[k] .. offsets[k+1])
  std::vector<int64_t> ids;       // ascending within each key

  size_t num_keys() const noexcept { return offsets.empty() ? 0 : offsets.size() - 1; }
  std::span<const int64_t> ids_of(size_t key) const { return std::span(ids).subspan(offsets[key], offsets[key + 1] - offsets[key]); }
  // Key position of an int / str value, if present.
  std::optional<size_t> find(int64_t value) const;
  std::optional<size_t> find(std::string_view value) const;
};

// Builds the index of an int, float or str field in O(N log K) time and O(N) memory. Throws
// Error(usage) for image/bytes/ndarray fields.
FieldIndex build_field_index(const Cache& cache, std::string_view field);

// How many distinct values an int, float or str field holds, counted in 8 bytes per sample
// (64-bit hashes of the values, sorted; collisions are negligible below 2^32 values) before
// anything is built. An index of a (nearly) unique field — paths, ids — holds one array per
// sample: the CLI refuses it without --force.
struct FieldCardinality {
  uint64_t samples = 0;
  uint64_t distinct = 0;
  // More than half the samples have a value of their own, and there are over 1,000 values.
  bool nearly_unique() const noexcept { return distinct > 1000 && distinct * 2 > samples; }
};
FieldCardinality field_cardinality(const Cache& cache, std::string_view field);

// Writes both forms into the cache directory and records them (file names and XXH3-64 sums)
// in the manifest's "slip" section, rewriting manifest.json atomically.
void write_field_index(const Cache& cache, const FieldIndex& index);

#ifdef SLIP_UNSTABLE_API  // slip/export.hpp "Unstable API"
// The pickled form alone (for tests and tools): the bytes of <field>_index.npy.
std::string pickled_index_npy(const FieldIndex& index);
#endif

// Reads the CSR form of `field` if present; nullopt when the cache has no index for it.
// Throws Error(bad_input) when the files are malformed.
std::optional<FieldIndex> read_field_index(const Cache& cache, std::string_view field);

// File names of the two forms.
std::string pickled_index_name(std::string_view field);
std::vector<std::string> csr_index_names(std::string_view field);

}  // namespace slip
SLIP_API_END
