#include "format/layout.hpp"

namespace slip::detail {

std::vector<std::string> storage_files(std::string_view field, FieldType type) {
  const std::string f(field);
  switch (type) {
    case FieldType::image:
    case FieldType::bytes:
      return {f + ".bin", f + ".meta.npy"};
    case FieldType::str:
      return {f + ".bin", f + ".offsets.npy"};
    default:
      return {f + ".npy"};
  }
}

std::string checksum_file(std::string_view field) { return std::string(field) + ".xxh3.npy"; }

}  // namespace slip::detail

namespace slip {

std::string_view field_type_name(FieldType type) noexcept {
  switch (type) {
    case FieldType::image:
      return "ImageBytes";
    case FieldType::bytes:
      return "bytes";
    case FieldType::str:
      return "str";
    case FieldType::int64:
      return "int";
    case FieldType::float64:
      return "float";
    case FieldType::ndarray:
      return "ndarray";
  }
  return "bytes";
}

FieldType field_type_from_name(std::string_view name) noexcept {
  if (name == "ImageBytes" || name == "HFImageDict") return FieldType::image;
  if (name == "bytes") return FieldType::bytes;
  if (name == "str") return FieldType::str;
  if (name == "float" || name == "float32" || name == "float64") return FieldType::float64;
  if (name == "ndarray") return FieldType::ndarray;
  return FieldType::int64;
}

bool is_payload_type(FieldType type) noexcept { return type == FieldType::image || type == FieldType::bytes; }

std::optional<size_t> Schema::find(std::string_view name) const {
  for (size_t i = 0; i < fields.size(); ++i)
    if (fields[i].name == name) return i;
  return std::nullopt;
}

}  // namespace slip
