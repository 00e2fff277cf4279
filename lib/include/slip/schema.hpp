// slip/schema.hpp — field types and sample values shared by sources, writer and reader.
#pragma once

#include "slip/export.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

SLIP_API_BEGIN
namespace slip {

// How a field is stored (docs/FORMAT.md). The manifest `type` string is field_type_name().
enum class FieldType {
  image,    // "ImageBytes": encoded image payloads (<f>.bin + <f>.meta.npy)
  bytes,    // "bytes": opaque payloads, same storage with height = width = 0
  str,      // "str": UTF-8 strings (<f>.bin + <f>.offsets.npy)
  int64,    // "int": <f>.npy, <i8
  float64,  // "float": <f>.npy, <f8
  ndarray,  // "ndarray": <f>.npy of shape (N, *shape) with the source's dtype
};

std::string_view field_type_name(FieldType type) noexcept;
// Maps a manifest type string to its storage; unknown strings are numeric storage (as the
// Python loader does), reported as int64 unless the .npy says otherwise.
FieldType field_type_from_name(std::string_view name) noexcept;
bool is_payload_type(FieldType type) noexcept;  // image or bytes: <f>.bin + <f>.meta.npy

struct FieldSpec {
  std::string name;
  FieldType type = FieldType::bytes;
  // ndarray only: numpy dtype string ("<f4", ">i2", ...) and per-sample shape.
  std::string dtype;
  std::vector<uint64_t> shape;
  // image/bytes: the manifest's image_format, "jpeg" (encoded files) or "yuv420" (docs/FORMAT.md#yuv420).
  std::string image_format = "jpeg";
};

struct Schema {
  std::vector<FieldSpec> fields;
  // Index of the field named `name`, or nullopt.
  std::optional<size_t> find(std::string_view name) const;
};

// The allocator of sample bytes: std::allocator, except that growing a vector leaves the new
// bytes uninitialised. A sample buffer is sized and then filled by read() or a decompressor;
// zero-filling it first (and faulting its pages in twice) was a third of a page-cache
// ImageFolder conversion (perf).
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() noexcept = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0)
      ::new (static_cast<void*>(p)) U;  // default-initialised: bytes left as they are
    else
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// Sample bytes (encoded images, opaque payloads, strings, array elements).
using Bytes = std::vector<std::byte, UninitializedAllocator<std::byte>>;

// One field value of one sample. Which member is meaningful follows the field type:
// image/bytes/str/ndarray use `bytes`, int64 uses `int_value`, float64 uses `float_value`.
struct Value {
  Bytes bytes;
  int64_t int_value = 0;
  double float_value = 0.0;
  // Images only, when the source knows them (e.g. FFCV metadata); 0 = read from the bytes.
  uint32_t height = 0;
  uint32_t width = 0;
  bool missing = false;  // the source had no value for this field (policy decides)
  // Images only: when nonzero, `bytes` holds height*width*raw_channels raw 8-bit pixels
  // (1 = L, 3 = RGB, 4 = RGBA, row-major) rather than an encoded file; the writer encodes them
  // per --non-jpeg (RGB JPEG q100) and records each in the ledger. FFCV raw and LitData pil.
  uint8_t raw_channels = 0;
  // With raw_channels: what the source's pixels were, for the ledger ("pil CMYK pixels (4
  // channels, converted to RGB)"); empty: described by raw_channels alone.
  std::string raw_description;
};

// One sample as a source yields it.
struct Sample {
  uint64_t source_index = 0;  // position in the source, 0-based
  std::vector<Value> values;  // one per schema field, in schema order
  std::string origin;         // where it came from: a path, "shard.tar:member@offset", ...
  // A problem the source found while reading this sample (unreadable file, ...). The writer
  // applies --on-error: fail with it, or skip the sample and record it in the ledger.
  std::optional<std::string> problem;
  // The source asks for this sample to be skipped and recorded in the ledger with this reason
  // whatever --on-error says (e.g. tar --missing skip).
  std::optional<std::string> skip;
  // Fields the source had no value for and filled with a stand-in (tar --missing empty: -1 for
  // an int, NaN for a float, empty bytes or text), each with why: a `filled` ledger entry each.
  std::vector<std::pair<std::string, std::string>> filled;
};

}  // namespace slip
SLIP_API_END
