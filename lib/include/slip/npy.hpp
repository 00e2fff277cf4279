// slip/npy.hpp — .npy headers byte-identical to numpy.save, and a strict header parser.
#pragma once

#include "slip/export.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

SLIP_API_BEGIN
namespace slip {

// The record dtype of <f>.meta.npy (docs/FORMAT.md#meta-records), as numpy writes its descr.
inline constexpr std::string_view kMetaRecordDescr = "[('data_ptr', '<u8'), ('data_size', '<u8'), ('height', '<u4'), ('width', '<u4')]";

// Returns magic + version 1.0 + length + header text, exactly what numpy.save writes before
// the data for an array with this descr (a Python repr, e.g. "'<i8'") and C-order shape.
std::string npy_header(std::string_view descr, std::span<const uint64_t> shape);

struct NpyHeader {
  std::string descr;  // as written, e.g. "'<i8'" or the record list
  bool fortran_order = false;
  std::vector<uint64_t> shape;
  uint64_t data_offset = 0;  // where the array data starts
  // descr without quotes when it is a simple type ("<i8"), empty for record/object dtypes.
  std::string simple_dtype() const;
  uint64_t element_count() const;  // product of shape (1 for 0-d); saturates on overflow
};

// Parses a .npy header (versions 1.0, 2.0, 3.0) from the first bytes of a file. Throws
// Error(bad_input) naming `path` and the byte offset when it is malformed.
NpyHeader parse_npy_header(std::span<const std::byte> file_bytes, const std::string& path);

// Size in bytes of one element of a simple numpy dtype string ("<i8" -> 8, "|u1" -> 1),
// or 0 when it is not a fixed-size numeric/bool dtype slip understands.
size_t npy_dtype_size(std::string_view dtype) noexcept;

}  // namespace slip
SLIP_API_END
