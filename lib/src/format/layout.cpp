#include "format/layout.hpp"

#include <unordered_map>
#include <utility>
#include <vector>

#include "slip/error.hpp"
#include "util/untrusted.hpp"

namespace slip::detail {

std::string field_file(std::string_view field, FileKind kind) {
  std::string f(field);
  switch (kind) {
    case FileKind::bin:
      return f + ".bin";
    case FileKind::meta:
      return f + ".meta.npy";
    case FileKind::offsets:
      return f + ".offsets.npy";
    case FileKind::npy:
      return f + ".npy";
    case FileKind::payload_sums:
      return f + ".xxh3.npy";
    case FileKind::pickled_index:
      return f + "_index.npy";
    case FileKind::index_keys:
      return f + ".index.keys.npy";
    case FileKind::index_offsets:
      return f + ".index.offsets.npy";
    case FileKind::index_ids:
      return f + ".index.ids.npy";
    case FileKind::yuv420_bin:
      return f + "_yuv420.bin";
    case FileKind::yuv420_meta:
      return f + "_yuv420.meta.npy";
  }
  return f;
}

std::string_view file_kind_description(FileKind kind) {
  switch (kind) {
    case FileKind::bin:
      return "data";
    case FileKind::meta:
      return "payload records";
    case FileKind::offsets:
      return "string offsets";
    case FileKind::npy:
      return "array";
    case FileKind::payload_sums:
      return "payload checksums";
    case FileKind::pickled_index:
      return "pickled index";
    case FileKind::index_keys:
    case FileKind::index_offsets:
    case FileKind::index_ids:
      return "index";
    case FileKind::yuv420_bin:
      return "YUV420 sibling payloads";
    case FileKind::yuv420_meta:
      return "YUV420 sibling records";
  }
  return "file";
}

std::vector<FieldFile> field_files(std::string_view field, FieldType type) {
  std::vector<FieldFile> out;
  auto add = [&](FileKind k) { out.push_back({field_file(field, k), k}); };
  switch (type) {
    case FieldType::image:
    case FieldType::bytes:
      add(FileKind::bin);
      add(FileKind::meta);
      add(FileKind::payload_sums);
      break;
    case FieldType::str:
      add(FileKind::bin);
      add(FileKind::offsets);
      break;
    default:
      add(FileKind::npy);
      break;
  }
  if (type == FieldType::image) {
    add(FileKind::yuv420_bin);
    add(FileKind::yuv420_meta);
  } else {  // the Python write_index takes any field but an image field; slip index int/float/str
    for (FileKind k : {FileKind::pickled_index, FileKind::index_keys, FileKind::index_offsets, FileKind::index_ids}) add(k);
  }
  return out;
}

std::vector<std::string> storage_files(std::string_view field, FieldType type) {
  switch (type) {
    case FieldType::image:
    case FieldType::bytes:
      return {field_file(field, FileKind::bin), field_file(field, FileKind::meta)};
    case FieldType::str:
      return {field_file(field, FileKind::bin), field_file(field, FileKind::offsets)};
    default:
      return {field_file(field, FileKind::npy)};
  }
}

std::string checksum_file(std::string_view field) { return field_file(field, FileKind::payload_sums); }

void check_field_files_disjoint(std::span<const std::pair<std::string_view, FieldType>> fields, std::string_view origin,
                                std::string_view hint) {
  struct Owner {
    size_t field;  // SIZE_MAX: the cache's own file
    FileKind kind;
  };
  constexpr size_t kCacheItself = SIZE_MAX;
  std::unordered_map<std::string, Owner> owner;
  owner.reserve(fields.size() * 7 + std::size(kCacheOwnFiles));
  for (std::string_view own : kCacheOwnFiles) owner.emplace(std::string(own), Owner{kCacheItself, FileKind::bin});
  for (size_t i = 0; i < fields.size(); ++i) {
    for (FieldFile& file : field_files(fields[i].first, fields[i].second)) {
      auto [it, inserted] = owner.emplace(file.name, Owner{i, file.kind});
      if (inserted) continue;
      const Owner& other = it->second;
      const std::string mine = "\"" + escape_for_terminal(fields[i].first) + "\"";
      const std::string shared = escape_for_terminal(file.name);
      std::string msg;
      if (other.field == kCacheItself) {
        msg = std::string(origin) + ": field " + mine + " would write " + shared + ", the cache's own file";
      } else if (other.field == i) {
        msg = std::string(origin) + ": field " + mine + " would use " + shared + " twice";
      } else {
        const std::string theirs = "\"" + escape_for_terminal(fields[other.field].first) + "\"";
        msg = std::string(origin) + ": fields " + theirs + " and " + mine + " would share the file " + shared + " (" + theirs + "'s " +
              std::string(file_kind_description(other.kind)) + ", " + mine + "'s " + std::string(file_kind_description(file.kind)) + ")";
      }
      throw Error(Errc::bad_input, msg + std::string(hint));
    }
  }
}

void check_schema_names(const Schema& schema, std::string_view origin) {
  std::unordered_map<std::string_view, size_t> position;  // name -> field position
  std::vector<std::pair<std::string_view, FieldType>> fields;
  fields.reserve(schema.fields.size());
  for (size_t i = 0; i < schema.fields.size(); ++i) {
    const FieldSpec& f = schema.fields[i];
    check_field_name(f.name, std::string(origin) + " field name");
    if (auto [it, inserted] = position.emplace(f.name, i); !inserted)
      throw Error(Errc::bad_input, std::string(origin) + ": fields " + std::to_string(it->second) + " and " + std::to_string(i) +
                                       " have the same name \"" + escape_for_terminal(f.name) +
                                       "\" (one would replace the other; --rename OLD=NEW renames one)");
    fields.emplace_back(f.name, f.type);
  }
  // Every file each field has or may get (indexes, YUV420 siblings) from the one naming function.
  check_field_files_disjoint(fields, origin, " (--rename OLD=NEW renames one)");
}

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
