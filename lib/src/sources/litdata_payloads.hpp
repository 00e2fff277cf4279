// Internal: a LitData item's payloads decoded by their serializers (index.json's data_format):
// int, bool and float scalars, numpy and tensor arrays, PIL raw images; other payloads verbatim.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "slip/error.hpp"
#include "slip/schema.hpp"
#include "slip/source.hpp"
#include "util/untrusted.hpp"

namespace slip::detail::litdata {

// One leaf of an item (a field): its serializer and, for arrays, what the pre-scan found.
struct Leaf {
  std::string name, format, base, suffix;
  FieldType type = FieldType::bytes;
  bool array = false;   // numpy/tensor/no_header_*: element bytes + dtype/shape
  bool uniform = true;  // every sample has the same dtype and shape (pre-scan)
  std::string dtype;    // uniform arrays
  std::vector<uint64_t> shape;
};

// Where a payload is, for its errors: the chunk file, the item and the item's offset there.
struct PayloadPlace {
  const std::filesystem::path& dir;
  const std::string& chunk_file;
  uint64_t item = 0;
  uint64_t offset = 0;
  // Bad input: "item I: field "F": why", naming the chunk file and the item's offset.
  Error bad(const Leaf& leaf, const std::string& why) const;
};

// Array payload -> (dtype, shape, element bytes).
void parse_array(const Leaf& leaf, std::span<const std::byte> p, std::string& dtype, std::vector<uint64_t>& shape,
                 std::span<const std::byte>& data, const PayloadPlace& at);

// One payload into its value, as the leaf's serializer wrote it.
void decode_payload(const Leaf& leaf, std::span<const std::byte> p, Value& v, const PayloadPlace& at);

}  // namespace slip::detail::litdata
