// Field indexes: building, the pickled form the Python loader reads, the CSR form slip reads.
#include "slip/index.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <unordered_map>

#include "format/layout.hpp"
#include "format/manifest_io.hpp"
#include "util/atomic_file.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/npy.hpp"
#include "util/file_io.hpp"
#include "util/untrusted.hpp"

namespace slip {

namespace fs = std::filesystem;

namespace {

// The field's position, or Error(usage) naming the fields the cache has (Cache::field's message).
size_t field_position(const Cache& cache, std::string_view field) {
  if (const auto i = cache.field_index(field)) return *i;
  (void)cache.field(field);  // throws
  throw Error(Errc::usage, "no field \"" + std::string(field) + "\"");
}

}  // namespace

std::string pickled_index_name(std::string_view field) { return detail::field_file(field, detail::FileKind::pickled_index); }

std::vector<std::string> csr_index_names(std::string_view field) {
  using detail::FileKind;
  return {detail::field_file(field, FileKind::index_keys), detail::field_file(field, FileKind::index_offsets),
          detail::field_file(field, FileKind::index_ids)};
}

std::optional<size_t> FieldIndex::find(int64_t value) const {
  if (key_type == FieldType::int64) {
    auto it = std::lower_bound(int_keys.begin(), int_keys.end(), value);
    if (it != int_keys.end() && *it == value) return static_cast<size_t>(it - int_keys.begin());
  } else if (key_type == FieldType::float64) {
    for (size_t k = 0; k < float_keys.size(); ++k)
      if (float_keys[k] == static_cast<double>(value)) return k;
  }
  return std::nullopt;
}

std::optional<size_t> FieldIndex::find(std::string_view value) const {
  for (size_t k = 0; k < str_keys.size(); ++k)
    if (str_keys[k] == value) return k;
  return std::nullopt;
}

namespace {

// Groups sample ids by key position (keys already known), ids ascending: a counting sort.
void fill_groups(FieldIndex& idx, const std::vector<uint32_t>& key_of_sample) {
  const size_t k = idx.num_keys();
  std::vector<uint64_t> counts(k + 1, 0);
  for (uint32_t key : key_of_sample) ++counts[key + 1];
  std::partial_sum(counts.begin(), counts.end(), counts.begin());
  idx.offsets = counts;
  idx.ids.assign(key_of_sample.size(), 0);
  std::vector<uint64_t> next(counts.begin(), counts.end() - 1);
  for (size_t i = 0; i < key_of_sample.size(); ++i) idx.ids[next[key_of_sample[i]]++] = static_cast<int64_t>(i);
}

}  // namespace

FieldCardinality field_cardinality(const Cache& cache, std::string_view field) {
  const auto fi = field_position(cache, field);
  const CacheField& f = cache.fields()[fi];
  const uint64_t n = cache.size();
  std::vector<uint64_t> hashes(n);
  if (f.type == FieldType::str) {
    for (uint64_t i = 0; i < n; ++i) hashes[i] = xxh3_64(std::as_bytes(std::span(cache.string(fi, i))));
  } else if ((f.type == FieldType::int64 || f.type == FieldType::float64) && f.shape.size() == 1) {
    const bool floating = f.dtype == "<f8" || f.dtype == "<f4";
    for (uint64_t i = 0; i < n; ++i) {
      hashes[i] = floating ? std::bit_cast<uint64_t>(cache.float_value(fi, i)) : static_cast<uint64_t>(cache.int_value(fi, i));
    }
  } else {
    throw Error(Errc::usage, "field \"" + f.name + "\" is not an int, float or str field").with_path(cache.path().string());
  }
  std::sort(hashes.begin(), hashes.end());
  FieldCardinality c;
  c.samples = n;
  c.distinct = static_cast<uint64_t>(std::unique(hashes.begin(), hashes.end()) - hashes.begin());
  return c;
}

FieldIndex build_field_index(const Cache& cache, std::string_view field) {
  const size_t fi = field_position(cache, field);
  const CacheField& f = cache.fields()[fi];
  cache.check_checksums(fi);  // an index derived from corrupt values would be checksummed as good
  FieldIndex idx;
  idx.field = f.name;
  const uint64_t n = cache.size();
  std::vector<uint32_t> key_of(n);
  if (f.type == FieldType::str) {
    idx.key_type = FieldType::str;
    std::unordered_map<std::string_view, uint32_t> seen;
    for (uint64_t i = 0; i < n; ++i) {
      const std::string_view s = cache.string(fi, i);
      auto [it, inserted] = seen.emplace(s, static_cast<uint32_t>(idx.str_keys.size()));
      if (inserted) idx.str_keys.emplace_back(s);
      key_of[i] = it->second;
    }
    idx.offsets.assign(idx.str_keys.size() + 1, 0);
  } else if ((f.type == FieldType::int64 || f.type == FieldType::float64) && f.shape.size() == 1) {
    if (f.dtype == "<f8" || f.dtype == "<f4") {
      idx.key_type = FieldType::float64;
      std::vector<double> values(n);
      for (uint64_t i = 0; i < n; ++i) values[i] = cache.float_value(fi, i);
      // numpy.unique sorts and keeps one NaN (numpy >= 1.21); NaN compares unequal, so its id list is empty.
      std::vector<double> keys;
      bool has_nan = false;
      for (double v : values) {
        if (std::isnan(v))
          has_nan = true;
        else
          keys.push_back(v);
      }
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      if (has_nan) keys.push_back(std::nan(""));
      idx.float_keys = keys;
      idx.offsets.assign(keys.size() + 1, 0);
      // Samples whose value is NaN belong to no key: index them separately and drop.
      std::vector<uint32_t> key_of_valid;
      std::vector<int64_t> valid_ids;
      for (uint64_t i = 0; i < n; ++i) {
        if (std::isnan(values[i])) continue;
        const auto it = std::lower_bound(keys.begin(), keys.end() - (has_nan ? 1 : 0), values[i]);
        key_of_valid.push_back(static_cast<uint32_t>(it - keys.begin()));
        valid_ids.push_back(static_cast<int64_t>(i));
      }
      fill_groups(idx, key_of_valid);
      for (auto& id : idx.ids) id = valid_ids[static_cast<size_t>(id)];
      return idx;
    }
    idx.key_type = FieldType::int64;
    std::vector<int64_t> values(n);
    for (uint64_t i = 0; i < n; ++i) values[i] = cache.int_value(fi, i);
    idx.int_keys = values;
    std::sort(idx.int_keys.begin(), idx.int_keys.end());
    idx.int_keys.erase(std::unique(idx.int_keys.begin(), idx.int_keys.end()), idx.int_keys.end());
    if (idx.int_keys.size() > 0xFFFFFFFFull) throw Error(Errc::usage, "too many distinct values to index");
    for (uint64_t i = 0; i < n; ++i)
      key_of[i] = static_cast<uint32_t>(std::lower_bound(idx.int_keys.begin(), idx.int_keys.end(), values[i]) - idx.int_keys.begin());
    idx.offsets.assign(idx.int_keys.size() + 1, 0);
  } else {
    throw Error(Errc::usage, "field \"" + f.name + "\" has type " + f.type_name + ": only int, float and str fields can be indexed");
  }
  fill_groups(idx, key_of);
  return idx;
}

// ---- the pickled form -------------------------------------------------------------------

namespace {

// Emits the pickle opcodes numpy's object-array save produces (protocol 3, numpy.core names:
// loadable by numpy 1.x and 2.x), without memoization (the pickle VM does not require it).
class Pickler {
 public:
  std::string out;

  void proto() { out += "\x80\x03"; }
  void stop() { out += '.'; }
  void global(std::string_view module, std::string_view name) {
    out += 'c';
    out += module;
    out += '\n';
    out += name;
    out += '\n';
  }
  void mark() { out += '('; }
  void tuple() { out += 't'; }
  void tuple1() { out += '\x85'; }
  void tuple3() { out += '\x87'; }
  void empty_tuple() { out += ')'; }
  void reduce() { out += 'R'; }
  void build() { out += 'b'; }
  void none() { out += 'N'; }
  void boolean(bool v) { out += v ? '\x88' : '\x89'; }
  void empty_list() { out += ']'; }
  void append() { out += 'a'; }
  void empty_dict() { out += '}'; }
  void setitems() { out += 'u'; }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      out += 'K';
      out += static_cast<char>(v);
    } else if (v >= 0 && v < 65536) {
      out += 'M';
      le(static_cast<uint64_t>(v), 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      out += 'J';
      le(static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(v))), 4);
    } else {
      // LONG1: little-endian two's complement, minimal length.
      std::string bytes;
      uint64_t u = static_cast<uint64_t>(v);
      for (int i = 0; i < 8; ++i) bytes += static_cast<char>((u >> (8 * i)) & 0xff);
      while (bytes.size() > 1) {
        const auto last = static_cast<unsigned char>(bytes.back());
        const auto prev = static_cast<unsigned char>(bytes[bytes.size() - 2]);
        if ((last == 0x00 && !(prev & 0x80)) || (last == 0xff && (prev & 0x80)))
          bytes.pop_back();
        else
          break;
      }
      out += '\x8a';
      out += static_cast<char>(bytes.size());
      out += bytes;
    }
  }
  void real(double v) {
    out += 'G';
    const uint64_t bits = std::bit_cast<uint64_t>(v);
    for (int i = 7; i >= 0; --i) out += static_cast<char>((bits >> (8 * i)) & 0xff);
  }
  void unicode(std::string_view s) {
    out += 'X';
    le(s.size(), 4);
    out += s;
  }
  void bytes(std::string_view b) {
    if (b.size() < 256) {
      out += 'C';
      out += static_cast<char>(b.size());
    } else {
      out += 'B';
      le(b.size(), 4);
    }
    out += b;
  }
  // numpy.dtype(name, False, True) with its BUILD state.
  void dtype(std::string_view name, std::string_view order, int flags) {
    global("numpy", "dtype");
    unicode(name);
    boolean(false);
    boolean(true);
    tuple3();
    reduce();
    mark();
    integer(3);
    unicode(order);
    none();
    none();
    none();
    integer(-1);
    integer(-1);
    integer(flags);
    tuple();
    build();
  }
  // numpy.core.multiarray._reconstruct(ndarray, (0,), b'b'), the empty array shell.
  void array_shell() {
    global("numpy.core.multiarray", "_reconstruct");
    global("numpy", "ndarray");
    integer(0);
    tuple1();
    bytes("b");
    tuple3();
    reduce();
  }
  void int64_array(std::span<const int64_t> ids) {
    array_shell();
    mark();
    integer(1);
    integer(static_cast<int64_t>(ids.size()));
    tuple1();
    dtype("i8", "<", 0);
    boolean(false);
    bytes(std::string_view(reinterpret_cast<const char*>(ids.data()), ids.size_bytes()));
    tuple();
    build();
  }

 private:
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
  }
};

}  // namespace

std::string pickled_index_npy(const FieldIndex& idx) {
  Pickler p;
  p.proto();
  p.array_shell();
  p.mark();
  p.integer(1);
  p.empty_tuple();
  p.dtype("O8", "|", 63);
  p.boolean(false);
  p.empty_list();
  p.empty_dict();
  const size_t k = idx.num_keys();
  for (size_t start = 0; start < k; start += 1000) {  // SETITEMS batches, as CPython does
    p.mark();
    for (size_t key = start; key < std::min(k, start + 1000); ++key) {
      switch (idx.key_type) {
        case FieldType::int64:
          p.integer(idx.int_keys[key]);
          break;
        case FieldType::float64:
          p.real(idx.float_keys[key]);
          break;
        default:
          p.unicode(idx.str_keys[key]);
          break;
      }
      p.int64_array(idx.ids_of(key));
    }
    p.setitems();
  }
  p.append();
  p.tuple();
  p.build();
  p.stop();
  return npy_header("'|O'", std::span<const uint64_t>{}) + p.out;
}

// ---- the CSR form ---------------------------------------------------------------------------

namespace {

std::u32string utf8_to_utf32(std::string_view s, const std::string& field) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + static_cast<size_t>(len) > s.size()) throw Error(Errc::bad_input, "field \"" + field + "\" holds invalid UTF-8");
    char32_t cp = len == 1 ? c : c & (0x7f >> len);
    for (int j = 1; j < len; ++j) cp = (cp << 6) | (static_cast<unsigned char>(s[i + static_cast<size_t>(j)]) & 0x3f);
    out += cp;
    i += static_cast<size_t>(len);
  }
  return out;
}

std::string utf32_to_utf8(std::u32string_view s) {
  std::string out;
  for (char32_t cp : s) {
    if (cp < 0x80)
      out += static_cast<char>(cp);
    else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }
  return out;
}

template <typename T>
std::string npy_of(std::string_view descr, const std::vector<T>& v) {
  return npy_header(descr, std::vector<uint64_t>{v.size()}) + std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

}  // namespace

void write_field_index(const Cache& cache, const FieldIndex& idx) {
  const fs::path& dir = cache.path();
  std::vector<std::pair<std::string, std::string>> files;
  files.emplace_back(pickled_index_name(idx.field), pickled_index_npy(idx));
  const auto names = csr_index_names(idx.field);
  std::string keys;
  switch (idx.key_type) {
    case FieldType::int64:
      keys = npy_of("'<i8'", idx.int_keys);
      break;
    case FieldType::float64:
      keys = npy_of("'<f8'", idx.float_keys);
      break;
    default: {
      std::vector<std::u32string> wide;
      size_t width = 1;
      for (const auto& s : idx.str_keys) {
        wide.push_back(utf8_to_utf32(s, idx.field));
        width = std::max(width, wide.back().size());
      }
      keys = npy_header("'<U" + std::to_string(width) + "'", std::vector<uint64_t>{wide.size()});
      for (auto& w : wide) {
        w.resize(width, U'\0');
        keys.append(reinterpret_cast<const char*>(w.data()), width * 4);
      }
    }
  }
  files.emplace_back(names[0], std::move(keys));
  std::vector<int64_t> offsets(idx.offsets.begin(), idx.offsets.end());
  files.emplace_back(names[1], npy_of("'<i8'", offsets));
  files.emplace_back(names[2], npy_of("'<i8'", idx.ids));

  // Under the cache's lock, with the manifest read after taking it: a concurrent `slip index` of
  // another field or `slip yuv420` keeps its records, and files and records change together.
  detail::ManifestUpdate update(dir);
  auto& manifest = update.manifest();
  auto& slip = manifest["slip"];
  if (!slip.is_object()) slip = nlohmann::ordered_json::object();
  auto& sums = slip["checksums"];
  if (!sums.is_object()) sums = {{"algorithm", "xxh3-64"}, {"files", nlohmann::ordered_json::object()}};
  for (const auto& [name, bytes] : files) {
    detail::replace_file(dir / name, bytes);
    sums["files"][name] = hex64(xxh3_64(std::as_bytes(std::span(bytes.data(), bytes.size()))));
  }
  slip["indexes"][idx.field] = {
      {"pickled", files[0].first}, {"keys", names[0]}, {"offsets", names[1]}, {"ids", names[2]}, {"num_keys", idx.num_keys()}};
  update.commit();
}

std::optional<FieldIndex> read_field_index(const Cache& cache, std::string_view field) {
  const auto names = csr_index_names(field);
  std::error_code ec;
  for (const auto& n : names)
    if (!fs::exists(cache.path() / n, ec)) return std::nullopt;
  (void)field_position(cache, field);  // the field must exist
  FieldIndex idx;
  idx.field = std::string(field);
  std::vector<detail::MappedFile> files;
  std::vector<NpyHeader> headers;
  const CacheField& f = cache.fields()[field_position(cache, field)];
  const std::string of_field = "index of field \"" + detail::escape_for_terminal(f.name) + "\": ";
  for (const auto& n : names) {
    files.emplace_back(cache.path() / n, detail::Open::cache_file);
    headers.push_back(parse_npy_header(files.back().bytes(), files.back().path()));
    if (headers.back().shape.size() != 1 || headers.back().fortran_order)
      throw Error(Errc::bad_input, of_field + "array is not 1-D (shape " + std::to_string(headers.back().shape.size()) + "-D)")
          .with_path(files.back().path())
          .with_offset(10);
  }
  // The keys are values of the field: of its type (docs/FORMAT.md#csr-index), byte order
  // included; a float or big-endian key array under an int field would be read as other values.
  {
    const std::string kd = headers[0].simple_dtype();
    const bool fits = f.type == FieldType::str ? kd.rfind("<U", 0) == 0 : kd == f.dtype && (kd == "<i8" || kd == "<f8");
    if (!fits)
      throw Error(Errc::bad_input, of_field + "keys of dtype " + detail::escape_for_terminal(kd.empty() ? headers[0].descr : kd) +
                                       " do not fit the field's " + (f.type == FieldType::str ? std::string("<U (text)") : f.dtype))
          .with_path(files[0].path())
          .with_offset(10);
    for (size_t i : {size_t{1}, size_t{2}})
      if (headers[i].simple_dtype() != "<i8")
        throw Error(Errc::bad_input, of_field + "dtype " + detail::escape_for_terminal(headers[i].descr) + ", not <i8")
            .with_path(files[i].path())
            .with_offset(10);
  }
  auto data = [&](size_t i, uint64_t elem) {
    const uint64_t count = headers[i].shape[0];
    const uint64_t start = headers[i].data_offset;
    if (elem == 0 || count > (files[i].size() - std::min(files[i].size(), start)) / elem)
      throw Error(Errc::bad_input, "index file too short for its shape").with_path(files[i].path()).with_offset(files[i].size());
    return files[i].bytes().subspan(start, count * elem);
  };
  const uint64_t n = cache.size();
  const std::string kd = headers[0].simple_dtype();
  const uint64_t k = headers[0].shape[0];
  if (headers[1].simple_dtype() != "<i8" || headers[1].shape[0] != k + 1 || headers[2].simple_dtype() != "<i8" || headers[2].shape[0] > n)
    throw Error(Errc::bad_input, "index arrays have inconsistent dtypes or shapes").with_path(files[1].path());
  if (kd == "<i8") {
    idx.key_type = FieldType::int64;
    auto d = data(0, 8);
    idx.int_keys.resize(k);
    std::memcpy(idx.int_keys.data(), d.data(), d.size());
  } else if (kd == "<f8") {
    idx.key_type = FieldType::float64;
    auto d = data(0, 8);
    idx.float_keys.resize(k);
    std::memcpy(idx.float_keys.data(), d.data(), d.size());
  } else if (kd.rfind("<U", 0) == 0) {
    idx.key_type = FieldType::str;
    const uint64_t width = std::strtoull(kd.c_str() + 2, nullptr, 10);
    if (width == 0 || width > (1u << 20)) throw Error(Errc::bad_input, "bad string width " + kd).with_path(files[0].path());
    auto d = data(0, width * 4);
    for (uint64_t i = 0; i < k; ++i) {
      std::u32string w(width, U'\0');
      std::memcpy(w.data(), d.data() + i * width * 4, width * 4);
      while (!w.empty() && w.back() == U'\0') w.pop_back();
      idx.str_keys.push_back(utf32_to_utf8(w));
    }
  } else {
    throw Error(Errc::bad_input, "unsupported key dtype " + headers[0].descr).with_path(files[0].path());
  }
  auto od = data(1, 8);
  std::vector<int64_t> offsets(k + 1);
  std::memcpy(offsets.data(), od.data(), od.size());
  auto id = data(2, 8);
  idx.ids.resize(headers[2].shape[0]);
  std::memcpy(idx.ids.data(), id.data(), id.size());
  for (uint64_t i = 0; i <= k; ++i) {
    if (offsets[i] < 0 || static_cast<uint64_t>(offsets[i]) > idx.ids.size() || (i && offsets[i] < offsets[i - 1]) ||
        (i == 0 && offsets[0] != 0))
      throw Error(Errc::bad_input, "index offsets are not ascending within the id array")
          .with_path(files[1].path())
          .with_offset(headers[1].data_offset + i * 8);
    idx.offsets.push_back(static_cast<uint64_t>(offsets[i]));
  }
  if (idx.offsets.back() != idx.ids.size())
    throw Error(Errc::bad_input, "index offsets do not cover the id array").with_path(files[1].path());
  for (size_t i = 0; i < idx.ids.size(); ++i)
    if (idx.ids[i] < 0 || static_cast<uint64_t>(idx.ids[i]) >= n)
      throw Error(Errc::bad_input, "sample id " + std::to_string(idx.ids[i]) + " out of range")
          .with_path(files[2].path())
          .with_offset(headers[2].data_offset + i * 8);
  return idx;
}

}  // namespace slip
