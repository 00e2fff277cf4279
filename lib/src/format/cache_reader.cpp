// Opening a cache: the manifest, memory maps of every storage file, structural checks.
#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "format/layout.hpp"
#include "format/staging.hpp"
#include "slip/cache.hpp"
#include "slip/error.hpp"
#include "slip/source.hpp"
#include "slip/hash.hpp"
#include "slip/npy.hpp"
#include "slip/runtime.hpp"
#include "util/file_io.hpp"
#include "util/untrusted.hpp"

namespace slip {

namespace fs = std::filesystem;
using nlohmann::json;

struct Cache::Impl {
  fs::path dir;
  std::string manifest_text;
  bool manifest_sum_mismatch = false;  // manifest.json.xxh3 present and not manifest_text's
  uint64_t num_samples = 0;
  std::vector<CacheField> fields;
  // Field name -> position: lookups by name stay constant-time for caches of many fields (a
  // scan of 40,000 fields per lookup made opening and verifying quadratic).
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, size_t, NameHash, std::equal_to<>> field_by_name;
  CacheProvenance provenance;
  std::map<std::string, uint64_t> file_sizes;
  std::unordered_map<std::string, detail::MappedFile> files;
  std::unordered_map<std::string, uint64_t> data_offsets;  // .npy data start
  std::map<std::string, std::string> file_sums;            // slip.checksums.files: name -> hex XXH3-64

  // Field `i`, or Error(usage): an index from the caller never escapes as std::out_of_range.
  const CacheField& field_at(size_t i) const {
    if (i >= fields.size())
      throw Error(Errc::usage, "no field number " + std::to_string(i) + " (the cache has " + std::to_string(fields.size()) + ")")
          .with_path(dir.string());
    return fields[i];
  }

  const detail::MappedFile& file(const std::string& name) const {
    auto it = files.find(name);
    if (it == files.end()) throw Error(Errc::usage, "no such file in the cache: " + name).with_path(dir.string());
    return it->second;
  }
  std::string file_path(const std::string& name) const { return (dir / name).string(); }
};

namespace {

uint64_t get_u64(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) throw Error(Errc::bad_input, std::string("manifest lacks \"") + key + "\" " + where);
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0))
    throw Error(Errc::bad_input, std::string("manifest \"") + key + "\" " + where + " is not a non-negative integer");
  return it->get<uint64_t>();
}

// A directory entry exists, whatever its type (a dangling symbolic link too: opening it
// then says what it is instead of "missing"). An entry that cannot be looked up (a directory
// the user may not search) is an I/O error with the OS's reason, never "missing".
bool present(const fs::path& p) {
  std::error_code ec;
  const fs::file_type type = fs::symlink_status(p, ec).type();
  if (type == fs::file_type::not_found) return false;
  if (ec) throw_errno("cannot look up", p.string(), ec.value());
  return true;
}

// "(40, 1)" as numpy writes a shape.
std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

// <f>.npy of a numeric or ndarray field against the manifest: "float" types (float, float32,
// float64) are (N,) <f8, "ndarray" the manifest's dtype and (N, *shape), every other type (int,
// bool, unknown: what the Python builder writes) (N,) <i8. Byte order is part of the dtype.
void check_numeric_typing(const CacheField& f, const NpyHeader& h, const std::string& path) {
  std::string want_dtype;
  std::vector<uint64_t> want_shape;
  if (f.type == FieldType::ndarray) {
    want_dtype = f.dtype;  // empty: the manifest names none
    if (!f.shape.empty()) {
      want_shape = f.shape;
      want_shape[0] = h.shape[0];
    }
  } else {
    want_dtype = f.type == FieldType::float64 ? "<f8" : "<i8";
    want_shape = {h.shape[0]};
  }
  const std::string got = h.simple_dtype().empty() ? h.descr : h.simple_dtype();
  if (!want_dtype.empty() && got != want_dtype)
    throw Error(Errc::bad_input, "field \"" + detail::escape_for_terminal(f.name) + "\" of type \"" +
                                     detail::escape_for_terminal(f.type_name) + "\" holds dtype " + detail::escape_for_terminal(got) +
                                     ", not the " + want_dtype + " its manifest type stores")
        .with_path(path)
        .with_offset(10);
  if (!want_shape.empty() && h.shape != want_shape)
    throw Error(Errc::bad_input, "field \"" + detail::escape_for_terminal(f.name) + "\" of type \"" +
                                     detail::escape_for_terminal(f.type_name) + "\" holds shape " + shape_text(h.shape) + ", not the " +
                                     shape_text(want_shape) + " its manifest describes")
        .with_path(path)
        .with_offset(10);
}

// What may not be opened as a cache, before its manifest is read: no directory, a staging
// directory (never a cache, even once every file is written: a run killed between its last
// flush and the rename leaves one that would otherwise open, and verify, clean), no manifest.
void cache_refuse_non_cache(const fs::path& dir, const fs::path& manifest_path) {
  std::error_code ec;
  const fs::file_status dir_status = fs::status(dir, ec);
  if (ec && dir_status.type() != fs::file_type::not_found) throw_errno("cannot open", dir.string(), ec.value());
  if (!fs::is_directory(dir_status)) throw Error(Errc::io, "not a directory").with_path(dir.string());
  if (const auto staging = detail::temporary_at(dir))
    throw Error(Errc::bad_input, std::string("a temporary directory of ") +
                                     (staging->in_progress ? "a run in progress" : "an interrupted run") + ", not a cache: it becomes " +
                                     staging->final_name + " only when the run renames it" +
                                     (staging->in_progress ? "" : "; the next run of the same command removes it"))
        .with_path(staging->path.string());
  if (!present(manifest_path)) throw Error(Errc::bad_input, "not a slipstream cache (no manifest.json)").with_path(dir.string());
}

json cache_parse_manifest(const std::string& text, const fs::path& manifest_path) {
  try {
    return detail::parse_json_bounded(text);
  } catch (const json::parse_error& e) {
    throw Error(Errc::bad_input, std::string("manifest.json is not valid JSON: ") + e.what())
        .with_path(manifest_path.string())
        .with_offset(e.byte);
  } catch (const json::exception& e) {  // e.g. a number too large for 64 bits
    throw Error(Errc::bad_input, std::string("manifest.json: ") + e.what()).with_path(manifest_path.string());
  } catch (Error& e) {  // nested too deep
    throw e.with_path(manifest_path.string());
  }
}

// One entry of the manifest's "fields" (untrusted): its type, and what that type's files need.
CacheField cache_field_from_spec(const std::string& name, const nlohmann::ordered_json& spec) {
  if (!spec.is_object() || !spec.contains("type") || !spec["type"].is_string())
    throw Error(Errc::bad_input, "field \"" + name + "\" has no \"type\" string");
  detail::check_field_name(name, "manifest field name");
  CacheField f;
  f.name = name;
  f.type_name = spec["type"].get<std::string>();
  f.type = field_type_from_name(f.type_name);
  if (is_payload_type(f.type)) {
    const json plain = detail::parse_json_bounded(spec.dump());
    f.max_size = get_u64(plain, "max_size", "for field \"" + name + "\"");
    f.image_format = spec.value("image_format", std::string("jpeg"));
  } else if (f.type == FieldType::ndarray) {
    // The per-sample dtype and shape the manifest promises; <f>.npy must be exactly that.
    if (auto d = spec.find("dtype"); d != spec.end()) {
      if (!d->is_string() || npy_dtype_size(d->get<std::string>()) == 0)
        throw Error(Errc::bad_input, "field \"" + name + "\": \"dtype\" is not a numpy dtype slip reads");
      f.dtype = d->get<std::string>();
    }
    if (auto sh = spec.find("shape"); sh != spec.end()) {
      if (!sh->is_array()) throw Error(Errc::bad_input, "field \"" + name + "\": \"shape\" is not a list");
      std::vector<uint64_t> dims{0};  // [0]: num_samples, filled in below
      for (const auto& d : *sh) {
        if (!d.is_number_unsigned() || dims.size() > 32)
          throw Error(Errc::bad_input, "field \"" + name + "\": \"shape\" is not a list of at most 32 sizes");
        dims.push_back(d.get<uint64_t>());
      }
      f.shape = std::move(dims);
    }
  }
  f.files = detail::storage_files(name, f.type);
  return f;
}

// The manifest's "slip" section (slip-written caches): provenance and the files' checksums.
void cache_read_slip_section(const nlohmann::ordered_json& s, const std::vector<CacheField>& fields, CacheProvenance& p,
                             std::map<std::string, std::string>& file_sums) {
  if (auto c = s.find("checksums"); c != s.end() && c->is_object())
    if (auto files = c->find("files"); files != c->end() && files->is_object())
      for (auto& [name, sum] : files->items())
        if (sum.is_string()) file_sums[name] = sum.get<std::string>();
  p.present = true;
  p.format_version = s.value("format_version", 0);
  p.tool_version = s.value("tool_version", std::string());
  p.content_id = s.value("content_id", std::string());
  p.created = s.value("created", std::string());
  if (auto src = s.find("source"); src != s.end() && src->is_object()) {
    p.source_kind = src->value("kind", std::string());
    p.source_uri = src->value("uri", std::string());
    // Caches of several shards written before "uris" existed joined them with newlines:
    // shown as one summary line.
    if (p.source_uri.find('\n') != std::string::npos && p.source_kind.rfind("tar", 0) == 0 && !src->contains("uris")) {
      std::vector<std::string> parts;
      for (size_t a = 0, b; a <= p.source_uri.size(); a = b + 1) {
        b = p.source_uri.find('\n', a);
        if (b == std::string::npos) b = p.source_uri.size();
        parts.push_back(p.source_uri.substr(a, b - a));
      }
      p.source_uri = source_summary(parts, "inputs");
    }
    p.source_fingerprint = src->value("fingerprint", std::string());
  }
  if (auto o = s.find("options"); o != s.end() && o->is_object())
    for (auto& [key, value] : o->items())
      if (value.is_string()) p.options.emplace_back(key, value.get<std::string>());
  if (std::none_of(p.options.begin(), p.options.end(), [](const auto& kv) { return kv.first == "image-format"; }))
    for (const CacheField& f : fields)
      if (f.type == FieldType::image && !f.image_format.empty() && f.image_format != "jpeg") {
        p.options.emplace_back("image-format", f.image_format);
        break;
      }
  if (auto c = s.find("counts"); c != s.end() && c->is_object()) {
    p.source_samples = c->value("source_samples", uint64_t{0});
    p.skipped = c->value("skipped", uint64_t{0});
    p.transcoded = c->value("transcoded", uint64_t{0});
  }
}

// Maps every storage file of a cache and checks what reading relies on: each .npy's dtype,
// order and shape against num_samples, and enough bytes for its records.
struct CacheFileMapper {
  const fs::path& dir;
  uint64_t n;
  std::unordered_map<std::string, detail::MappedFile>& files;
  std::unordered_map<std::string, uint64_t>& data_offsets;
  bool sized = false;                           // some field's files grow with num_samples
  const CacheField* zero_size_field = nullptr;  // one whose samples are 0 bytes (shape (N, 0))

  const detail::MappedFile& file(const std::string& name) const {
    auto it = files.find(name);
    if (it == files.end()) throw Error(Errc::usage, "no such file in the cache: " + name).with_path(dir.string());
    return it->second;
  }

  NpyHeader check_npy(const CacheField& f, const std::string& name, std::string_view want_descr, const std::vector<uint64_t>& want_shape) {
    const auto& file = this->file(name);
    NpyHeader h = parse_npy_header(file.bytes(), file.path());
    const std::string field = "field \"" + detail::escape_for_terminal(f.name) + "\": ";
    if (!want_descr.empty() && h.descr != want_descr)
      throw Error(Errc::bad_input,
                  field + "unexpected dtype " + detail::escape_for_terminal(h.descr) + " (want " + std::string(want_descr) + ")")
          .with_path(file.path())
          .with_offset(10);
    if (h.fortran_order) throw Error(Errc::bad_input, field + "Fortran-order array").with_path(file.path());
    if (!want_shape.empty() && h.shape != want_shape)
      throw Error(Errc::bad_input, field + "array shape " + shape_text(h.shape) + " does not match num_samples " + std::to_string(n) +
                                       " (want " + shape_text(want_shape) + ")")
          .with_path(file.path())
          .with_offset(10);
    data_offsets[name] = h.data_offset;
    return h;
  }

  void need_bytes(const std::string& name, uint64_t elements, uint64_t elem_size) {
    const auto& file = this->file(name);
    const uint64_t start = data_offsets[name];
    if (elem_size != 0 && elements > (file.size() - std::min(file.size(), start)) / elem_size)
      throw Error(Errc::bad_input,
                  "file too short for " + std::to_string(elements) + " records of " + std::to_string(elem_size) + " bytes (truncated?)")
          .with_path(file.path())
          .with_offset(file.size());
  }

  void map(CacheField& f) {
    if (f.type != FieldType::int64 && f.type != FieldType::float64 && f.type != FieldType::ndarray) sized = true;
    for (const std::string& name : f.files) {
      const fs::path p = dir / name;
      if (!present(p)) throw Error(Errc::bad_input, "storage file of field \"" + f.name + "\" is missing").with_path(p.string());
      files.emplace(name, detail::MappedFile(p, detail::Open::cache_file));
    }
    switch (f.type) {
      case FieldType::image:
      case FieldType::bytes:
        check_npy(f, f.files[1], kMetaRecordDescr, {n});
        need_bytes(f.files[1], n, sizeof(MetaRecord));
        if (present(dir / detail::checksum_file(f.name))) {
          const std::string cs = detail::checksum_file(f.name);
          files.emplace(cs, detail::MappedFile(dir / cs, detail::Open::cache_file));
          check_npy(f, cs, "'<u8'", {n});
          need_bytes(cs, n, 8);
          f.has_checksums = true;
        }
        break;
      case FieldType::str:
        check_npy(f, f.files[1], "'<u8'", {n, 2});
        need_bytes(f.files[1], n, 16);
        break;
      default:
        map_numeric(f);
        break;
    }
  }

  void map_numeric(CacheField& f) {
    const std::string path = (dir / f.files[0]).string();
    NpyHeader h = check_npy(f, f.files[0], "", {});
    if (h.shape.empty() || h.shape[0] != n)
      throw Error(Errc::bad_input, "array length does not match num_samples " + std::to_string(n)).with_path(path).with_offset(10);
    // The file must hold what the manifest's type says (docs/FORMAT.md#numeric): a float NaN,
    // a big-endian or an (N, 1) array under "type": "int" would otherwise be read as
    // something else by each reader (or dropped by the Loader).
    check_numeric_typing(f, h, path);
    f.dtype = h.simple_dtype();
    f.shape = h.shape;
    const size_t elem = npy_dtype_size(f.dtype);
    if (elem == 0) throw Error(Errc::bad_input, "unsupported dtype " + h.descr).with_path(path).with_offset(10);
    need_bytes(f.files[0], h.element_count(), elem);
    const bool empty_samples = std::find(h.shape.begin() + 1, h.shape.end(), uint64_t{0}) != h.shape.end();
    if (!empty_samples)
      sized = true;
    else if (!zero_size_field)
      zero_size_field = &f;
  }
};

}  // namespace

Cache::Cache() : impl_(std::make_unique<Impl>()) {}
Cache::~Cache() = default;
Cache::Cache(Cache&&) noexcept = default;
Cache& Cache::operator=(Cache&&) noexcept = default;

Cache Cache::open(const fs::path& dir) {
  Cache cache;
  Impl& m = *cache.impl_;
  m.dir = dir;
  const fs::path manifest_path = dir / detail::kManifestName;
  cache_refuse_non_cache(dir, manifest_path);
  auto [manifest_text, sum_matches] = detail::read_manifest_with_sum(dir);
  m.manifest_text = std::move(manifest_text);
  m.manifest_sum_mismatch = !sum_matches.value_or(true);
  const json manifest = cache_parse_manifest(m.manifest_text, manifest_path);
  try {
    if (!manifest.is_object()) throw Error(Errc::bad_input, "manifest is not a JSON object");
    m.num_samples = get_u64(manifest, "num_samples", "at top level");
    auto fields_it = manifest.find("fields");
    if (fields_it == manifest.end() || !fields_it->is_object()) throw Error(Errc::bad_input, "manifest lacks a \"fields\" object");
    if (auto fsz = manifest.find("file_sizes"); fsz != manifest.end()) {
      if (!fsz->is_object()) throw Error(Errc::bad_input, "manifest \"file_sizes\" is not an object");
      for (auto& [name, size] : fsz->items()) {
        if (!size.is_number_unsigned()) throw Error(Errc::bad_input, "file_sizes[\"" + name + "\"] is not a size");
        m.file_sizes[name] = size.get<uint64_t>();
      }
    }
    // nlohmann::json sorts keys; field order comes from the text, so parse it ordered.
    const auto ordered = detail::parse_ordered_json_bounded(m.manifest_text);
    for (auto& [name, spec] : ordered.at("fields").items()) m.fields.push_back(cache_field_from_spec(name, spec));
    for (size_t i = 0; i < m.fields.size(); ++i) m.field_by_name.emplace(m.fields[i].name, i);
    // Without a field nothing ties num_samples to a file (10^18 would be accepted).
    if (m.fields.empty()) throw Error(Errc::bad_input, "manifest has no fields (a cache holds at least one)");
    // A field whose files are another's (an int field "image_yuv420.meta" owns the records
    // `slip yuv420` writes for "image") is clobbered by the next command: refused at open, so
    // index and yuv420 never write into a data field.
    {
      std::vector<std::pair<std::string_view, FieldType>> named;
      named.reserve(m.fields.size());
      for (const CacheField& f : m.fields) named.emplace_back(f.name, field_type_from_name(f.type_name));
      detail::check_field_files_disjoint(named, "manifest", "; slip never writes such a cache");
    }
    if (auto slip_it = ordered.find("slip"); slip_it != ordered.end() && slip_it->is_object())
      cache_read_slip_section(*slip_it, m.fields, m.provenance, m.file_sums);
  } catch (Error& e) {
    throw e.with_path(manifest_path.string());
  } catch (const nlohmann::json::exception& e) {
    throw Error(Errc::bad_input, std::string("manifest.json: ") + e.what()).with_path(manifest_path.string());
  }

  // Map every storage file and check what reading relies on.
  CacheFileMapper mapper{dir, m.num_samples, m.files, m.data_offsets};
  for (CacheField& f : m.fields) mapper.map(f);
  // Samples of 0 bytes fit any count: with no other field, num_samples (10^15) is tied to
  // nothing on disk, and every command that walks the samples would believe it.
  if (!mapper.sized && mapper.zero_size_field && m.num_samples > 0)
    throw Error(Errc::bad_input, "field \"" + detail::escape_for_terminal(mapper.zero_size_field->name) +
                                     "\" holds 0 bytes a sample and no other field ties num_samples " + std::to_string(m.num_samples) +
                                     " to the files; slip never writes such a cache")
        .with_path(m.file_path(mapper.zero_size_field->files[0]))
        .with_offset(10);
  return cache;
}

const fs::path& Cache::path() const noexcept { return impl_->dir; }
uint64_t Cache::size() const noexcept { return impl_->num_samples; }
const std::vector<CacheField>& Cache::fields() const noexcept { return impl_->fields; }
const CacheProvenance& Cache::provenance() const noexcept { return impl_->provenance; }
const std::string& Cache::manifest_text() const noexcept { return impl_->manifest_text; }
const std::map<std::string, uint64_t>& Cache::file_sizes() const noexcept { return impl_->file_sizes; }

std::optional<size_t> Cache::field_index(std::string_view name) const noexcept {
  const auto it = impl_->field_by_name.find(name);
  if (it == impl_->field_by_name.end()) return std::nullopt;
  return it->second;
}

const CacheField& Cache::field(std::string_view name) const {
  if (auto i = field_index(name)) return impl_->fields[*i];
  // Name the fields there are: the usual cause is a source whose label is called otherwise.
  std::string names;
  for (const CacheField& f : impl_->fields) names += (names.empty() ? "" : ", ") + f.name;
  throw Error(Errc::usage, "the cache has no field \"" + std::string(name) + "\" (its fields: " + names + ")")
      .with_path(impl_->dir.string());
}

std::optional<fs::path> enclosing_cache(const fs::path& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec || p.empty()) return std::nullopt;  // unresolvable: writing there will say why
  if (!p.has_filename()) p = p.parent_path();
  while (true) {
    // stat, not lstat: a link named manifest.json still makes the directory a cache to its readers.
    if (fs::is_regular_file(p / detail::kManifestName, ec)) return p;
    if (!p.has_relative_path()) return std::nullopt;  // the root
    p = p.parent_path();
  }
}

void check_output_outside_caches(const fs::path& path, std::string_view what) {
  const auto cache = enclosing_cache(path);
  if (!cache) return;
  std::error_code ec;
  const bool is_cache = fs::equivalent(*cache, path, ec);
  throw Error(Errc::usage, std::string(what) + (is_cache ? " is the cache " : " is inside the cache ") +
                               detail::escape_for_terminal(cache->string()) +
                               ": what slip wrote there would be no part of that cache (`slip verify` would fail); write it "
                               "elsewhere")
      .with_path(path.string());
}

namespace {
void check_sample(uint64_t sample, uint64_t n, const std::string& path) {
  if (sample >= n)
    throw Error(Errc::usage, "sample " + std::to_string(sample) + " out of range (cache has " + std::to_string(n) + ")").with_path(path);
}
}  // namespace

MetaRecord Cache::record(size_t field, uint64_t sample) const {
  const CacheField& f = impl_->field_at(field);
  check_sample(sample, impl_->num_samples, impl_->dir.string());
  const auto& meta = impl_->file(f.files[1]);
  MetaRecord r;
  std::memcpy(&r, meta.bytes().data() + impl_->data_offsets.at(f.files[1]) + sample * sizeof(MetaRecord), sizeof r);
  return r;
}

std::span<const std::byte> Cache::payload(size_t field, uint64_t sample) const {
  const CacheField& f = impl_->field_at(field);
  if (!is_payload_type(f.type)) throw Error(Errc::usage, "field \"" + f.name + "\" holds no payloads");
  const MetaRecord r = record(field, sample);
  const auto& bin = impl_->file(f.files[0]);
  if (r.data_ptr > bin.size() || r.data_size > bin.size() - r.data_ptr)
    throw Error(Errc::bad_input, "payload [" + std::to_string(r.data_ptr) + ", +" + std::to_string(r.data_size) + ") lies outside " +
                                     f.files[0] + " (" + std::to_string(bin.size()) + " bytes)")
        .with_path(impl_->file_path(f.files[1]))
        .with_sample(sample)
        .with_offset(impl_->data_offsets.at(f.files[1]) + sample * sizeof(MetaRecord));
  return bin.bytes().subspan(r.data_ptr, r.data_size);
}

std::string_view Cache::string(size_t field, uint64_t sample) const {
  const CacheField& f = impl_->field_at(field);
  if (f.type != FieldType::str) throw Error(Errc::usage, "field \"" + f.name + "\" is not a string field");
  check_sample(sample, impl_->num_samples, impl_->dir.string());
  const auto& offs = impl_->file(f.files[1]);
  uint64_t row[2];
  const uint64_t at = impl_->data_offsets.at(f.files[1]) + sample * 16;
  std::memcpy(row, offs.bytes().data() + at, 16);
  const auto& bin = impl_->file(f.files[0]);
  if (row[0] > bin.size() || row[1] > bin.size() - row[0])
    throw Error(Errc::bad_input, "string [" + std::to_string(row[0]) + ", +" + std::to_string(row[1]) + ") lies outside " + f.files[0])
        .with_path(impl_->file_path(f.files[1]))
        .with_sample(sample)
        .with_offset(at);
  const std::string_view text(reinterpret_cast<const char*>(bin.bytes().data()) + row[0], row[1]);
  // str fields are UTF-8 (the Python loader decodes them, and raises UnicodeDecodeError).
  if (const auto bad = detail::invalid_utf8_at(text))
    throw Error(Errc::bad_input, "field \"" + detail::escape_for_terminal(f.name) + "\": string is not valid UTF-8")
        .with_path(impl_->file_path(f.files[0]))
        .with_sample(sample)
        .with_offset(row[0] + *bad);
  return text;
}

int64_t Cache::int_value(size_t field, uint64_t sample) const {
  const CacheField& f = impl_->field_at(field);
  if (is_payload_type(f.type) || f.type == FieldType::str) throw Error(Errc::usage, "field \"" + f.name + "\" is not a numeric field");
  check_sample(sample, impl_->num_samples, impl_->dir.string());
  const auto& file = impl_->file(f.files[0]);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(file.bytes().data()) + impl_->data_offsets.at(f.files[0]);
  if (f.shape.size() != 1) throw Error(Errc::usage, "field \"" + f.name + "\" is not a scalar field");
  if (f.dtype == "<i8") {
    int64_t v;
    std::memcpy(&v, p + sample * 8, 8);
    return v;
  }
  if (f.dtype == "<u8") {
    uint64_t v;
    std::memcpy(&v, p + sample * 8, 8);
    return static_cast<int64_t>(v);
  }
  if (f.dtype == "<i4") {
    int32_t v;
    std::memcpy(&v, p + sample * 4, 4);
    return v;
  }
  if (f.dtype == "|b1" || f.dtype == "|u1") return p[sample];
  if (f.dtype == "|i1") return static_cast<int8_t>(p[sample]);
  throw Error(Errc::usage, "field \"" + f.name + "\" has dtype " + f.dtype + ", not an integer");
}

double Cache::float_value(size_t field, uint64_t sample) const {
  const CacheField& f = impl_->field_at(field);
  if (is_payload_type(f.type) || f.type == FieldType::str) throw Error(Errc::usage, "field \"" + f.name + "\" is not a numeric field");
  check_sample(sample, impl_->num_samples, impl_->dir.string());
  const auto& file = impl_->file(f.files[0]);
  const std::byte* p = file.bytes().data() + impl_->data_offsets.at(f.files[0]);
  if (f.dtype == "<f8") {
    double v;
    std::memcpy(&v, p + sample * 8, 8);
    return v;
  }
  if (f.dtype == "<f4") {
    float v;
    std::memcpy(&v, p + sample * 4, 4);
    return v;
  }
  return static_cast<double>(int_value(field, sample));
}

std::span<const std::byte> Cache::array_bytes(size_t field, uint64_t sample) const {
  const CacheField& f = impl_->field_at(field);
  check_sample(sample, impl_->num_samples, impl_->dir.string());
  if (is_payload_type(f.type) || f.type == FieldType::str) return payload(field, sample);
  uint64_t per_sample = npy_dtype_size(f.dtype);
  for (size_t d = 1; d < f.shape.size(); ++d) per_sample *= f.shape[d];
  const auto& file = impl_->file(f.files[0]);
  return file.bytes().subspan(impl_->data_offsets.at(f.files[0]) + sample * per_sample, per_sample);
}

std::optional<uint64_t> Cache::payload_checksum(size_t field, uint64_t sample) const {
  const CacheField& f = impl_->field_at(field);
  if (!f.has_checksums) return std::nullopt;
  check_sample(sample, impl_->num_samples, impl_->dir.string());
  const std::string cs = detail::checksum_file(f.name);
  uint64_t v;
  std::memcpy(&v, impl_->file(cs).bytes().data() + impl_->data_offsets.at(cs) + sample * 8, 8);
  return v;
}

void Cache::check_checksums(std::optional<size_t> field) const {
  const Impl& m = *impl_;
  if (m.manifest_sum_mismatch)  // as read at open, with the text read then (a writer may replace both since)
    throw Error(Errc::bad_input, "checksum mismatch: manifest.json does not match manifest.json.xxh3 (modified or corrupt)")
        .with_path((m.dir / detail::kManifestName).string());
  std::vector<std::string> names;
  for (size_t fi = 0; fi < m.fields.size(); ++fi) {
    if (field && *field != fi) continue;
    const CacheField& f = m.fields[fi];
    for (size_t k = 0; k < f.files.size(); ++k)
      if (!(k == 0 && is_payload_type(f.type) && f.has_checksums)) names.push_back(f.files[k]);
    if (f.has_checksums) names.push_back(detail::checksum_file(f.name));
  }
  check_file_checksums(names);
}

void Cache::check_file_checksums(const std::vector<std::string>& names) const {
  const Impl& m = *impl_;
  for (const std::string& name : names) {
    auto want = m.file_sums.find(name);
    if (want == m.file_sums.end()) continue;
    throw_if_interrupted();
    uint64_t sum;
    if (auto it = m.files.find(name); it != m.files.end()) {
      sum = xxh3_64(it->second.bytes());
    } else {
      if (!detail::file_stem_problem(name).empty())
        throw Error(Errc::bad_input, "checksums list \"" + detail::escape_for_terminal(name) + "\", which is not a file name")
            .with_path((m.dir / detail::kManifestName).string());
      sum = xxh3_64(detail::MappedFile(m.dir / name, detail::Open::cache_file).bytes());
    }
    if (hex64(sum) != want->second)
      throw Error(Errc::bad_input, "checksum mismatch: the file does not match the XXH3-64 its manifest records (modified or corrupt)")
          .with_path(m.file_path(name));
  }
}

void Cache::check_payload(size_t field, uint64_t sample) const {
  const auto want = payload_checksum(field, sample);
  if (want && xxh3_64(payload(field, sample)) != *want)
    throw Error(Errc::bad_input, "checksum mismatch: payload of field \"" + impl_->field_at(field).name +
                                     "\" does not match its recorded XXH3-64 (modified or corrupt)")
        .with_path(impl_->file_path(impl_->field_at(field).files[0]))
        .with_sample(sample);
}

std::span<const std::byte> Cache::file_bytes(const std::string& name) const { return impl_->file(name).bytes(); }

uint64_t Cache::npy_data_offset(const std::string& name) const {
  auto it = impl_->data_offsets.find(name);
  if (it == impl_->data_offsets.end()) throw Error(Errc::usage, "not a .npy file of the cache: " + name);
  return it->second;
}

void Cache::drop_page_cache() const {
  for (const auto& [name, file] : impl_->files) file.drop_page_cache();
}

void Cache::keep_resident_below(uint64_t limit) const noexcept {
  if (detail::resident_file_bytes() > limit) release_resident_pages();
}

void Cache::release_resident_pages() const noexcept {
  for (const auto& [name, file] : impl_->files) file.release_resident_pages();
}

}  // namespace slip
