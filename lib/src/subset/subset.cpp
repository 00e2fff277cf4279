#include "slip/subset.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include "slip/dataset.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/index.hpp"
#include "slip/npy.hpp"
#include "slip/shuffle.hpp"
#include "util/file_io.hpp"
#include "util/log.hpp"
#include "util/untrusted.hpp"

namespace slip {

namespace fs = std::filesystem;

namespace {

// Class folder of an ImageFolder path "<root>/<class>/<file>".
std::string class_of_path(std::string_view path) {
  const auto first = path.find('/');
  if (first == std::string_view::npos) return {};
  const auto second = path.find('/', first + 1);
  if (second == std::string_view::npos) return {};
  return std::string(path.substr(first + 1, second - first - 1));
}

// Label values of sel.names: from the classes file, or from the `path` field's class folders
// of every cache (a dataset's caches must agree on each folder's value).
std::vector<int64_t> names_to_values(std::span<const Cache* const> caches, const SubsetSelection& sel) {
  const Cache& first = *caches.front();
  std::map<std::string, int64_t> by_name;
  if (!sel.classes_file.empty()) {
    detail::check_input_file(sel.classes_file);  // a FIFO or device would block the open below
    std::ifstream in(sel.classes_file);
    if (!in) throw Error(Errc::io, "cannot read classes file").with_path(sel.classes_file.string());
    std::string line;
    int64_t value = 0;
    uint64_t line_number = 0;
    while (detail::getline_bounded(in, line, sel.classes_file.string(), ++line_number)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) by_name.emplace(line, value);
      ++value;
    }
  } else {
    for (const Cache* c : caches) {
      const Cache& cache = *c;
      const auto pi = cache.field_index("path");
      const auto li = cache.field_index(sel.field);
      if (!pi || !li)
        throw Error(Errc::usage, "--names needs a `path` field (ImageFolder sources) or --classes-file").with_path(cache.path().string());
      cache.check_checksums(*pi);
      for (uint64_t i = 0; i < cache.size(); ++i) {
        const std::string name = class_of_path(cache.string(*pi, i));
        const int64_t value = cache.int_value(*li, i);
        auto [it, inserted] = by_name.emplace(name, value);
        if (!inserted && it->second != value)
          throw Error(Errc::bad_input, "class folder \"" + name + "\" has two label values (" + std::to_string(it->second) + ", " +
                                           std::to_string(value) + ")")
              .with_path(cache.path().string())
              .with_sample(i);
      }
    }
  }
  std::vector<int64_t> values;
  for (const auto& name : sel.names) {
    auto it = by_name.find(name);
    if (it == by_name.end()) throw Error(Errc::usage, "unknown class name \"" + name + "\"").with_path(first.path().string());
    values.push_back(it->second);
  }
  return values;
}

// Marks the keys named by the lines of sel.values_file in `chosen`, reading the file in blocks:
// memory is the index's (bounded by the cache) plus one block and one value, whatever the
// file's size (a 200 MB file of ids once held every line as a string: 5.75 GB).
void mark_values_file(const FieldIndex& idx, const SubsetSelection& sel, std::vector<uint8_t>& chosen, SubsetReport& report) {
  const fs::path& file = sel.values_file;
  detail::check_input_file(file);  // a FIFO or device would block the open below
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(Errc::io, "cannot read values file").with_path(file.string());
  const bool text = idx.key_type == FieldType::str;
  // Hashed lookups: FieldIndex::find is linear for str and float keys.
  std::unordered_map<std::string_view, size_t> str_keys;
  std::unordered_map<double, size_t> float_keys;
  size_t longest = 32;  // an int64 has at most 20 characters: longer lines cannot parse
  if (text) {
    str_keys.reserve(idx.str_keys.size());
    for (size_t k = 0; k < idx.str_keys.size(); ++k) {
      str_keys.emplace(idx.str_keys[k], k);
      longest = std::max(longest, idx.str_keys[k].size() + 1);
    }
  } else if (idx.key_type == FieldType::float64) {
    for (size_t k = 0; k < idx.float_keys.size(); ++k) float_keys.emplace(idx.float_keys[k], k);
  }
  detail::RepeatedWarning not_found("values of field \"" + sel.field + "\" not found in " + detail::escape_for_terminal(file.string()));
  uint64_t line_no = 0;
  auto take = [&](std::string_view v, bool overlong) {
    ++line_no;
    if (!v.empty() && v.back() == '\r') v.remove_suffix(1);
    if (v.empty() && !overlong) return;
    ++report.values_read;
    std::optional<size_t> key;
    if (text) {
      if (!overlong)
        if (auto it = str_keys.find(v); it != str_keys.end()) key = it->second;
    } else {
      int64_t value = 0;
      const auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), value);
      if (overlong || error != std::errc() || end != v.data() + v.size())
        throw Error(Errc::usage, "line " + std::to_string(line_no) + ": not an integer value (or beyond 64 bits): \"" +
                                     detail::escape_for_terminal(v.substr(0, 64)) + (overlong || v.size() > 64 ? "...\"" : "\""))
            .with_path(file.string());
      if (idx.key_type == FieldType::float64) {
        if (auto it = float_keys.find(static_cast<double>(value)); it != float_keys.end()) key = it->second;
      } else {
        key = idx.find(value);
      }
    }
    if (key) {
      chosen[*key] = 1;
      return;
    }
    ++report.values_not_found;
    not_found.warn("{}: line {}: field \"{}\" has no sample with value \"{}{}\"", detail::escape_for_terminal(file.string()), line_no,
                   sel.field, detail::escape_for_terminal(v.substr(0, 64)), overlong || v.size() > 64 ? "..." : "");
  };
  std::vector<char> block(size_t{1} << 20);
  std::string partial;  // a line cut by a block boundary, at most `longest` bytes kept
  bool overlong = false;
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const auto got = static_cast<size_t>(in.gcount());
    if (got == 0) break;
    std::string_view rest(block.data(), got);
    for (size_t nl; (nl = rest.find('\n')) != std::string_view::npos; rest.remove_prefix(nl + 1)) {
      const std::string_view piece = rest.substr(0, nl);
      if (partial.empty() && !overlong) {
        take(piece, false);
      } else {
        if (partial.size() + piece.size() > longest) overlong = true;
        if (!overlong) partial.append(piece);
        take(partial, overlong);
        partial.clear();
        overlong = false;
      }
    }
    if (partial.size() + rest.size() > longest) overlong = true;
    if (!overlong) partial.append(rest);
  }
  if (in.bad()) throw Error(Errc::io, "cannot read values file").with_path(file.string());
  if (!partial.empty() || overlong) take(partial, overlong);
}

// The field's index in one cache: its stored CSR form (checked against its sums), else built.
FieldIndex subset_cache_index(const Cache& cache, const SubsetSelection& sel) {
  // The selection is derived from the field's values (or its stored index): check them first.
  if (const auto fi = cache.field_index(sel.field)) cache.check_checksums(*fi);
  cache.check_file_checksums(csr_index_names(sel.field));
  std::optional<FieldIndex> idx = read_field_index(cache, sel.field);
  return idx ? std::move(*idx) : build_field_index(cache, sel.field);
}

// The indexes of a dataset's caches as one index over global ids, keyed as the index of the
// merged cache would be (FieldIndex's order: numbers ascending, NaN last; strings by first
// appearance), so that key positions and id lists, and with them --per-class's draws, are the
// merged cache's.
FieldIndex subset_merge_indexes(const std::vector<FieldIndex>& parts, std::span<const uint64_t> first_ids) {
  FieldIndex out;
  out.field = parts.front().field;
  out.key_type = parts.front().key_type;
  std::vector<std::vector<size_t>> key_of(parts.size());  // part key -> merged key
  if (out.key_type == FieldType::str) {
    std::unordered_map<std::string, size_t> seen;
    for (size_t p = 0; p < parts.size(); ++p)
      for (const std::string& k : parts[p].str_keys) {
        auto [it, fresh] = seen.emplace(k, out.str_keys.size());
        if (fresh) out.str_keys.push_back(k);
        key_of[p].push_back(it->second);
      }
  } else if (out.key_type == FieldType::float64) {
    bool nan = false;
    for (const FieldIndex& part : parts)
      for (double k : part.float_keys) std::isnan(k) ? void(nan = true) : out.float_keys.push_back(k);
    std::sort(out.float_keys.begin(), out.float_keys.end());
    out.float_keys.erase(std::unique(out.float_keys.begin(), out.float_keys.end()), out.float_keys.end());
    const size_t numbers = out.float_keys.size();
    if (nan) out.float_keys.push_back(std::nan(""));
    for (size_t p = 0; p < parts.size(); ++p)
      for (double k : parts[p].float_keys)
        key_of[p].push_back(std::isnan(k)
                                ? numbers
                                : static_cast<size_t>(std::lower_bound(out.float_keys.begin(), out.float_keys.begin() + numbers, k) -
                                                      out.float_keys.begin()));
  } else {
    for (const FieldIndex& part : parts) out.int_keys.insert(out.int_keys.end(), part.int_keys.begin(), part.int_keys.end());
    std::sort(out.int_keys.begin(), out.int_keys.end());
    out.int_keys.erase(std::unique(out.int_keys.begin(), out.int_keys.end()), out.int_keys.end());
    for (size_t p = 0; p < parts.size(); ++p)
      for (int64_t k : parts[p].int_keys)
        key_of[p].push_back(static_cast<size_t>(std::lower_bound(out.int_keys.begin(), out.int_keys.end(), k) - out.int_keys.begin()));
  }
  const size_t keys = out.float_keys.size() + out.int_keys.size() + out.str_keys.size();
  // Counts, then the ids: part after part, so each key's global ids stay ascending.
  out.offsets.assign(keys + 1, 0);
  for (size_t p = 0; p < parts.size(); ++p)
    for (size_t k = 0; k < parts[p].num_keys(); ++k) out.offsets[key_of[p][k] + 1] += parts[p].ids_of(k).size();
  for (size_t k = 0; k < keys; ++k) out.offsets[k + 1] += out.offsets[k];
  out.ids.resize(out.offsets.back());
  std::vector<uint64_t> next(out.offsets.begin(), out.offsets.end() - 1);
  for (size_t p = 0; p < parts.size(); ++p)
    for (size_t k = 0; k < parts[p].num_keys(); ++k)
      for (int64_t id : parts[p].ids_of(k)) out.ids[next[key_of[p][k]]++] = id + static_cast<int64_t>(first_ids[p]);
  return out;
}

// The selection over an index: keys of the values (`where` names the cache or dataset in
// errors), then every sample of each key or --per-class K of them; ascending ids.
std::vector<uint64_t> subset_select_from_index(const FieldIndex& idx, const std::vector<int64_t>& values, const SubsetSelection& sel,
                                               SubsetReport* report, const std::string& where) {
  std::vector<size_t> keys;
  for (int64_t v : values) {
    auto k = idx.find(v);
    if (!k) throw Error(Errc::usage, "field \"" + sel.field + "\" has no sample with value " + std::to_string(v)).with_path(where);
    keys.push_back(*k);
  }
  for (const auto& s : sel.str_values) {
    auto k = idx.find(std::string_view(s));
    if (!k) throw Error(Errc::usage, "field \"" + sel.field + "\" has no sample with value \"" + s + "\"").with_path(where);
    keys.push_back(*k);
  }
  if (!sel.values_file.empty()) {
    SubsetReport local;
    SubsetReport& r = report ? *report : local;
    std::vector<uint8_t> chosen(idx.num_keys(), 0);
    mark_values_file(idx, sel, chosen, r);
    const size_t before = keys.size();
    for (size_t k = 0; k < chosen.size(); ++k)
      if (chosen[k]) keys.push_back(k);
    if (keys.size() == before && r.values_read > 0)
      throw Error(Errc::usage, "none of the " + std::to_string(r.values_read) + " values is a value of field \"" + sel.field + "\"")
          .with_path(sel.values_file.string());
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<uint64_t> ids;
  for (size_t k : keys) {
    const auto group = idx.ids_of(k);
    if (sel.per_class == 0 || sel.per_class >= group.size()) {
      for (int64_t id : group) ids.push_back(static_cast<uint64_t>(id));
      continue;
    }
    // K of this value's samples, chosen by a keyed permutation of its id list.
    ShuffleSpec spec;
    spec.num_samples = group.size();
    spec.seed = sel.seed;
    spec.epoch = k;  // a different draw per value
    const EpochOrder order(spec);
    for (uint64_t j = 0; j < sel.per_class; ++j) ids.push_back(static_cast<uint64_t>(group[order.global(j)]));
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<int64_t> subset_values_of(std::span<const Cache* const> caches, const SubsetSelection& sel) {
  std::vector<int64_t> values = sel.values;
  if (!sel.names.empty()) {
    const auto named = names_to_values(caches, sel);
    values.insert(values.end(), named.begin(), named.end());
  }
  return values;
}

}  // namespace

std::vector<uint64_t> select_samples(const Cache& cache, const SubsetSelection& sel) { return select_samples(cache, sel, nullptr); }

std::vector<uint64_t> select_samples(const Cache& cache, const SubsetSelection& sel, SubsetReport* report) {
  const FieldIndex idx = subset_cache_index(cache, sel);
  const Cache* const caches[] = {&cache};
  return subset_select_from_index(idx, subset_values_of(caches, sel), sel, report, cache.path().string());
}

std::vector<uint64_t> select_samples(const Dataset& dataset, const SubsetSelection& sel, SubsetReport* report) {
  std::vector<FieldIndex> parts;
  std::vector<const Cache*> caches;
  std::vector<uint64_t> first_ids;
  for (size_t c = 0; c < dataset.num_caches(); ++c) {
    caches.push_back(&dataset.cache(c));
    first_ids.push_back(dataset.first_id(c));
    parts.push_back(subset_cache_index(dataset.cache(c), sel));
  }
  const FieldIndex idx = subset_merge_indexes(parts, first_ids);
  parts.clear();
  return subset_select_from_index(idx, subset_values_of(caches, sel), sel, report, caches.front()->path().string());
}

namespace {

// The name part of a subset of `parent`: its directory name without slip's suffixes (".slipstream",
// "-<8 hex>", a work directory's ".parts", a list file's extension).
std::string subset_parent_name(const fs::path& parent) {
  const fs::path abs = fs::absolute(parent).lexically_normal();
  std::string name = abs.filename().string();
  if (name.empty()) name = abs.parent_path().filename().string();
  if (name.ends_with(".parts")) name.resize(name.size() - 6);
  if (fs::is_regular_file(abs)) name = fs::path(name).stem().string();  // a dataset list
  if (const auto dot = name.rfind(".slipstream"); dot != std::string::npos) name = name.substr(0, dot);
  if (const auto dash = name.rfind('-'); dash != std::string::npos && name.size() - dash == 9) name = name.substr(0, dash);
  return name;
}

// The samples `ids` of one cache, or of a dataset (global ids, each read from its own cache).
class CacheSubsetSource final : public Source {
 public:
  CacheSubsetSource(const fs::path& parent, std::vector<uint64_t> ids) : cache_(Cache::open(parent)), ids_(std::move(ids)) {
    caches_ = {&*cache_};
    const std::string parent_id = cache_->provenance().content_id.empty() ? "manifest-sha256:" + sha256_hex(cache_->manifest_text())
                                                                          : cache_->provenance().content_id;
    prepare(parent.string(), "parent:" + parent_id);
    name_ = subset_parent_name(parent) + "-subset";
    uri_ = fs::absolute(parent).lexically_normal().string();
  }
  CacheSubsetSource(std::span<const fs::path> inputs, std::vector<uint64_t> ids) : dataset_(Dataset::open(inputs)), ids_(std::move(ids)) {
    std::string parents;
    for (size_t c = 0; c < dataset_->num_caches(); ++c) {
      caches_.push_back(&dataset_->cache(c));
      parents += (c ? "," : "") + Dataset::content_id_of(dataset_->cache(c));
    }
    prepare(inputs.front().string(), "dataset:" + parents);
    name_ = subset_parent_name(inputs.front()) + "-subset";
    for (const fs::path& input : inputs) uri_ += (uri_.empty() ? "" : " ") + fs::absolute(input).lexically_normal().string();
  }

  const Schema& schema() const override { return schema_; }
  SourceIdentity identity() const override { return {"subset", uri_, fingerprint_, name_, {}}; }
  std::optional<uint64_t> size() const override { return ids_.size(); }

  bool next(Sample& out) override {
    if (pos_ >= ids_.size()) return false;
    if (pos_ % 64 == 0) {  // random reads of a large parent map in a lot
      if (dataset_)
        dataset_->keep_resident_below();
      else
        cache_->keep_resident_below();
    }
    const uint64_t global = ids_[pos_];
    const Dataset::Location at = dataset_ ? dataset_->locate(global) : Dataset::Location{0, global};
    const Cache& cache = *caches_[at.cache];
    const uint64_t id = at.sample;
    out.source_index = global;
    out.origin = (dataset_ ? fs::absolute(cache.path()).lexically_normal().string() : uri_) + "#" + std::to_string(id);
    out.problem.reset();
    out.values.resize(schema_.fields.size());
    for (size_t f = 0; f < schema_.fields.size(); ++f) {
      Value& v = out.values[f];
      v = Value{};
      switch (schema_.fields[f].type) {
        case FieldType::image:
        case FieldType::bytes: {
          cache.check_payload(f, id);
          const auto p = cache.payload(f, id);
          v.bytes.assign(p.begin(), p.end());
          if (schema_.fields[f].type == FieldType::image) {
            const MetaRecord r = cache.record(f, id);
            v.height = r.height;
            v.width = r.width;
          }
          break;
        }
        case FieldType::str: {
          const auto s = cache.string(f, id);
          v.bytes.assign(reinterpret_cast<const std::byte*>(s.data()), reinterpret_cast<const std::byte*>(s.data()) + s.size());
          break;
        }
        case FieldType::int64:
          v.int_value = cache.int_value(f, id);
          break;
        case FieldType::float64:
          v.float_value = cache.float_value(f, id);
          break;
        case FieldType::ndarray: {
          const auto a = cache.array_bytes(f, id);
          v.bytes.assign(a.begin(), a.end());
          break;
        }
      }
    }
    ++pos_;
    return true;
  }

 private:
  // Checks the ids and the parents' files, and makes the schema and fingerprint.
  void prepare(const std::string& where, const std::string& parents) {
    const uint64_t total = dataset_ ? dataset_->size() : cache_->size();
    for (uint64_t id : ids_)
      if (id >= total) throw Error(Errc::usage, "sample id " + std::to_string(id) + " out of range").with_path(where);
    // Never copy corruption under fresh checksums: every file read is checked against the
    // parents' recorded sums first, and each payload as it is copied (next()).
    for (const Cache* c : caches_) c->check_checksums();
    for (const CacheField& f : caches_.front()->fields()) {
      FieldSpec spec{f.name, f.type, f.dtype, {}};
      if (f.type == FieldType::ndarray) spec.shape.assign(f.shape.begin() + 1, f.shape.end());
      if (f.type == FieldType::image && f.image_format != "jpeg")
        throw Error(Errc::usage, "subsets of " + f.image_format + " caches are not supported yet").with_path(where);
      schema_.fields.push_back(std::move(spec));
    }
    Sha256 h;
    for (uint64_t id : ids_) h.update(std::to_string(id) + "\n");
    fingerprint_ = parents + ";ids-sha256:" + h.hex_digest();
  }

  std::optional<Cache> cache_;
  std::optional<Dataset> dataset_;
  std::vector<const Cache*> caches_;  // the dataset's, or the one cache
  std::vector<uint64_t> ids_;
  Schema schema_;
  std::string fingerprint_, name_, uri_;
  size_t pos_ = 0;
};

}  // namespace

std::unique_ptr<Source> open_cache_subset(const fs::path& parent, std::vector<uint64_t> ids) {
  return std::make_unique<CacheSubsetSource>(parent, std::move(ids));
}

std::unique_ptr<Source> open_dataset_subset(std::span<const fs::path> inputs, std::vector<uint64_t> ids) {
  return std::make_unique<CacheSubsetSource>(inputs, std::move(ids));
}

void write_ids_npy(const fs::path& path, const std::vector<uint64_t>& ids) {
  check_output_outside_caches(path, "the output file");
  detail::FileWriter w(path, size_t{256} << 10, detail::FileWriter::Checksum::none, detail::Create::user_output);
  w.write(npy_header("'<i8'", std::vector<uint64_t>{ids.size()}));
  w.write(std::as_bytes(std::span(ids.data(), ids.size())));
  w.close();
}

std::string ids_npy(const std::vector<uint64_t>& ids) {
  std::string out = npy_header("'<i8'", std::vector<uint64_t>{ids.size()});
  const auto bytes = std::as_bytes(std::span(ids.data(), ids.size()));
  out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return out;
}

}  // namespace slip
