// A dataset of many caches (slip/dataset.hpp): inputs expanded to caches, fields checked to
// agree, global ids through prefix sums.
#include "slip/dataset.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "format/layout.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "util/atomic_file.hpp"
#include "util/file_io.hpp"
#include "util/untrusted.hpp"

namespace fs = std::filesystem;

namespace slip {

namespace {

// A list file larger than this is not a list of caches (a million entries fit in far less).
constexpr uint64_t kMaxListFileBytes = uint64_t{64} << 20;
constexpr size_t kMaxDatasetCaches = 1'000'000;

struct DatasetItem {
  fs::path path;
  std::string content_id;           // expected, from a list ("" = not checked)
  std::optional<uint64_t> samples;  // expected, from a JSON list
  StreamWeight weight;
  std::string origin;  // what named it (for errors): the list file or directory
  // A part found in a work directory of `slip convert --shard`: the slot its name claims, which
  // its manifest's part record must confirm (a name alone says nothing of what the part holds).
  std::optional<std::pair<uint64_t, uint64_t>> slot;  // (index, count)
};

bool dataset_is_cache_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p / detail::kManifestName, ec);
}

bool dataset_hex_id(std::string_view s) {
  if (s.starts_with("xxh3:")) s.remove_prefix(5);
  return !s.empty() && s.size() <= 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// The part caches of a `slip convert --shard` work directory, in part order; all of them.
std::vector<DatasetItem> dataset_parts_of(const fs::path& workdir) {
  std::error_code ec;
  std::map<uint64_t, fs::path> parts;
  uint64_t count = 0;
  for (const auto& e : fs::directory_iterator(workdir, ec)) {
    const std::string name = e.path().filename().string();
    unsigned long long index = 0, n = 0;
    if (name.empty() || name[0] == '.' || std::sscanf(name.c_str(), "part-%llu-of-%llu", &index, &n) != 2) continue;
    if (!dataset_is_cache_dir(e.path())) continue;
    if (n == 0 || index >= n || n > kMaxDatasetCaches)
      throw Error(Errc::bad_input, "\"" + printable(name) + "\" names an impossible part").with_path(workdir.string());
    if (count != 0 && n != count)
      throw Error(Errc::bad_input, "parts of " + std::to_string(count) + " and of " + std::to_string(n) + " slices in one work directory")
          .with_path(workdir.string());
    count = n;
    parts.emplace(index, e.path());
  }
  if (ec) throw_errno("cannot list", workdir.string(), ec.value());
  if (parts.empty()) throw Error(Errc::bad_input, "no finished part caches in the work directory").with_path(workdir.string());
  for (uint64_t i = 0; i < count; ++i)
    if (!parts.count(i)) {
      char name[64];
      std::snprintf(name, sizeof name, "part-%05llu-of-%05llu", static_cast<unsigned long long>(i), static_cast<unsigned long long>(count));
      throw Error(Errc::bad_input, std::string(name) + " is missing (" + std::to_string(parts.size()) + " of " + std::to_string(count) +
                                       " parts finished; `slip merge --status` lists them), so the directory is not the whole dataset; "
                                       "name the parts to use in a list file")
          .with_path(workdir.string());
    }
  std::vector<DatasetItem> out;
  for (auto& [i, p] : parts) out.push_back({p, "", std::nullopt, {}, workdir.string(), std::pair{i, count}});
  return out;
}

void dataset_expand_dir(const fs::path& dir, std::vector<DatasetItem>& out) {
  if (dataset_is_cache_dir(dir)) {
    out.push_back({dir, "", std::nullopt, {}, dir.string(), std::nullopt});
    return;
  }
  std::error_code ec;
  std::vector<fs::path> children;
  bool has_parts = false;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.' || !e.is_directory(ec)) continue;  // hidden: temporaries of running commands
    children.push_back(e.path());
    if (name.rfind("part-", 0) == 0) has_parts = true;
  }
  if (ec) throw_errno("cannot list", dir.string(), ec.value());
  std::sort(children.begin(), children.end());
  const size_t before = out.size();
  if (has_parts) {  // the work directory itself
    for (DatasetItem& part : dataset_parts_of(dir)) out.push_back(std::move(part));
    return;
  }
  for (const fs::path& c : children) {
    if (dataset_is_cache_dir(c))
      out.push_back({c, "", std::nullopt, {}, dir.string(), std::nullopt});
    else if (c.filename().string().ends_with(".parts"))
      for (DatasetItem& part : dataset_parts_of(c)) out.push_back(std::move(part));
  }
  if (out.size() == before)
    throw Error(Errc::bad_input, "neither a cache (no manifest.json) nor a directory of caches").with_path(dir.string());
}

std::string dataset_read_list(const fs::path& file) {
  std::error_code ec;
  const uint64_t size = fs::file_size(file, ec);
  if (ec) throw_errno("cannot read", file.string(), ec.value());
  if (size > kMaxListFileBytes)
    throw Error(Errc::bad_input, "a dataset list of " + std::to_string(size) + " bytes (at most " + std::to_string(kMaxListFileBytes) + ")")
        .with_path(file.string());
  std::ifstream in(file, std::ios::binary);
  if (!in) throw_errno("cannot open", file.string(), errno);
  std::string text(size, '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

// A JSON list read straight into DatasetItems (nlohmann's SAX interface): a DOM of the file
// would cost up to 30 times its size ("[{},{},...]": an object per 3 bytes, 2 GB for 64 MiB)
// before its entries were counted. Here memory is the items alone (at most kMaxDatasetCaches),
// members slip does not know are skipped unbuilt, and the first bad entry stops the parse.
class DatasetJsonList final : public nlohmann::json_sax<nlohmann::json> {
 public:
  DatasetJsonList(const fs::path& file, std::vector<DatasetItem>& out, std::optional<uint64_t>& epoch_size)
      : file_(file), out_(out), epoch_size_(epoch_size) {}

  bool null() override { return scalar(Scalar::null); }
  bool boolean(bool) override { return scalar(Scalar::other); }
  bool number_integer(number_integer_t v) override { return number(static_cast<double>(v), std::nullopt); }
  bool number_unsigned(number_unsigned_t v) override { return number(static_cast<double>(v), v); }
  bool number_float(number_float_t v, const string_t&) override { return number(v, std::nullopt); }
  bool string(string_t& v) override {
    string_ = std::move(v);
    return scalar(Scalar::string);
  }
  bool binary(binary_t&) override { return scalar(Scalar::other); }
  bool start_object(std::size_t) override { return open(true); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    if (const auto* syntax = dynamic_cast<const nlohmann::json::parse_error*>(&e)) throw *syntax;
    throw Error(Errc::bad_input, std::string("dataset list: ") + e.what()).with_path(file_.string());
  }

  // After the parse: the checks that need the whole document.
  void finish() {
    if (!caches_seen_) throw bad("no \"caches\" list");
  }

 private:
  enum class Scalar { null, string, other, number };
  // Where the value being read stands.
  enum class Role { root, root_member, caches, entry, entry_member, skipped };
  struct Level {
    Role role;  // of the container opened at this level
    bool object;
  };

  Error bad(const std::string& why) const { return Error(Errc::bad_input, "dataset list: " + why).with_path(file_.string()); }
  // The entry being read, or (before it is known to be one) the next.
  std::string where(bool next = false) const { return "entry " + std::to_string(out_.size() - (next ? 0 : 1)) + ": "; }

  // The role of a value about to be read, from the container it is in.
  Role role_here() const {
    if (stack_.empty()) return Role::root;
    const Level& top = stack_.back();
    switch (top.role) {
      case Role::root:  // an object (a root list is the caches list)
        return key_ == "caches" || key_ == "epoch_size" ? Role::root_member : Role::skipped;
      case Role::caches:
        return Role::entry;
      case Role::entry:
        return Role::entry_member;
      default:
        return Role::skipped;
    }
  }

  void new_entry() {
    if (out_.size() >= kMaxDatasetCaches) throw bad("more than " + std::to_string(kMaxDatasetCaches) + " caches");
    out_.emplace_back();
    out_.back().origin = file_.string();
  }

  bool scalar(Scalar kind) {
    switch (role_here()) {
      case Role::root:
        throw bad("\"caches\" is not a list");
      case Role::root_member:  // numbers come through number()
        if (key_ == "caches") throw bad("\"caches\" is not a list");
        if (kind != Scalar::null) throw bad("\"epoch_size\" is not a sample count");
        epoch_size_.reset();
        return true;
      case Role::entry:
        if (kind != Scalar::string) throw bad(where(true) + "neither a path nor an object");
        new_entry();
        check_path();
        return true;
      case Role::entry_member:
        return member(kind, 0, std::nullopt);
      default:
        return true;
    }
  }

  bool number(double v, std::optional<uint64_t> count) {
    switch (role_here()) {
      case Role::root_member:
        if (key_ == "caches") throw bad("\"caches\" is not a list");
        if (!count) throw bad("\"epoch_size\" is not a sample count");
        epoch_size_ = *count;
        return true;
      case Role::entry_member:
        return member(Scalar::number, v, count);
      case Role::root:
        throw bad("\"caches\" is not a list");
      case Role::entry:
        throw bad(where(true) + "neither a path nor an object");
      default:
        return true;
    }
  }

  // The path of the entry just read (string_): a NUL would end it early in every system call,
  // opening another cache than the one named.
  void check_path() {
    if (string_.empty()) throw bad(where() + "empty path");
    if (string_.find('\0') != std::string::npos) throw bad(where() + "a NUL byte in the path");
    out_.back().path = string_;
  }

  // A member of an entry object (a null is as if absent).
  bool member(Scalar kind, double v, std::optional<uint64_t> count) {
    DatasetItem& item = out_.back();
    if (key_ == "path") {
      has_path_ = kind == Scalar::string;
      if (has_path_) check_path();
    } else if (key_ == "content_id") {
      if (kind == Scalar::null) return true;
      if (kind != Scalar::string || !dataset_hex_id(string_)) throw bad(where() + "\"content_id\" is not a content id");
      item.content_id = string_;
    } else if (key_ == "num_samples") {
      if (kind == Scalar::null) return true;
      if (!count) throw bad(where() + "\"num_samples\" is not a sample count");
      item.samples = *count;
    } else {
      for (WeightKind wk : {WeightKind::proportion, WeightKind::repeat, WeightKind::choose}) {
        if (key_ != weight_kind_name(wk)) continue;
        if (kind == Scalar::null) return true;
        if (item.weight.kind != WeightKind::none && item.weight.kind != wk)
          throw bad(where() + "at most one of proportion, repeat and choose");
        if (kind != Scalar::number || !(v >= 0) || !std::isfinite(v)) throw bad(where() + "\"" + key_ + "\" is not a number >= 0");
        if (wk == WeightKind::choose && v != std::floor(v)) throw bad(where() + "\"choose\" is not a whole number of samples");
        item.weight = {wk, v};
      }
    }
    return true;
  }

  bool open(bool object) {
    if (stack_.size() >= detail::kMaxJsonDepth)
      throw Error(Errc::bad_input, "JSON nested deeper than " + std::to_string(detail::kMaxJsonDepth) + " levels")
          .with_path(file_.string());
    Role role = role_here();
    if (role == Role::root && !object) role = Role::caches;
    if (role == Role::root_member) {
      if (key_ == "epoch_size") throw bad("\"epoch_size\" is not a sample count");
      if (object) throw bad("\"caches\" is not a list");
      role = Role::caches;
    }
    if (role == Role::caches) {
      if (caches_seen_) out_.clear();  // a repeated "caches": the last one counts, as in a DOM
      caches_seen_ = true;
    } else if (role == Role::entry) {
      if (!object) throw bad(where(true) + "neither a path nor an object");
      new_entry();
      has_path_ = false;
    } else if (role == Role::entry_member) {
      if (key_ == "path") throw bad(where() + "no \"path\" string");
      if (key_ == "content_id") throw bad(where() + "\"content_id\" is not a content id");
      if (key_ == "num_samples") throw bad(where() + "\"num_samples\" is not a sample count");
      for (WeightKind wk : {WeightKind::proportion, WeightKind::repeat, WeightKind::choose})
        if (key_ == weight_kind_name(wk)) throw bad(where() + "\"" + key_ + "\" is not a number >= 0");
      role = Role::skipped;
    }
    stack_.push_back({role, object});
    return true;
  }

  bool close() {
    if (stack_.back().role == Role::entry) {
      if (!has_path_) throw bad(where() + "no \"path\" string");
    }
    stack_.pop_back();
    return true;
  }

  const fs::path& file_;
  std::vector<DatasetItem>& out_;
  std::optional<uint64_t>& epoch_size_;
  std::vector<Level> stack_;
  std::string key_, string_;
  bool caches_seen_ = false, has_path_ = false;
};

void dataset_parse_json_list(const fs::path& file, const std::string& text, std::vector<DatasetItem>& out,
                             std::optional<uint64_t>& epoch_size) {
  DatasetJsonList list(file, out, epoch_size);
  try {
    nlohmann::json::sax_parse(text, &list);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(Errc::bad_input, std::string("dataset list is not valid JSON: ") + e.what()).with_path(file.string()).with_offset(e.byte);
  } catch (const nlohmann::json::exception& e) {
    throw Error(Errc::bad_input, std::string("dataset list: ") + e.what()).with_path(file.string());
  }
  list.finish();
}

void dataset_parse_text_list(const fs::path& file, const std::string& text, std::vector<DatasetItem>& out) {
  std::istringstream in(text);
  std::string line;
  uint64_t number = 0;
  while (detail::getline_bounded(in, line, file.string(), ++number)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    line = line.substr(first, line.find_last_not_of(" \t") + 1 - first);
    DatasetItem item;
    item.origin = file.string() + ": line " + std::to_string(number);
    // "PATH CONTENT_ID": the last word is the id when it looks like one (paths may hold spaces).
    const auto gap = line.find_last_of(" \t");
    if (gap != std::string::npos && dataset_hex_id(line.substr(gap + 1))) {
      item.content_id = line.substr(gap + 1);
      line = line.substr(0, line.find_last_not_of(" \t", gap) + 1);
    }
    if (line.find('\0') != std::string::npos)  // a NUL would end the path early: another cache
      throw Error(Errc::bad_input, "dataset list: line " + std::to_string(number) + ": a NUL byte in the path").with_path(file.string());
    item.path = line;
    if (out.size() >= kMaxDatasetCaches)
      throw Error(Errc::bad_input, "dataset list: more than " + std::to_string(kMaxDatasetCaches) + " caches").with_path(file.string());
    out.push_back(std::move(item));
  }
}

std::string dataset_type_text(const CacheField& f) {
  std::string t = f.type_name;
  if (!f.image_format.empty() && f.image_format != "jpeg") t += " (" + f.image_format + ")";
  if (!f.dtype.empty()) t += " dtype " + f.dtype;
  if (f.shape.size() > 1) {
    t += " shape (";
    for (size_t i = 1; i < f.shape.size(); ++i) t += (i > 1 ? ", " : "") + std::to_string(f.shape[i]);
    t += ")";
  }
  return t;
}

// Throws naming `other` and the first way its fields differ from `first`'s.
void dataset_check_fields(const Cache& first, const Cache& other) {
  const auto& a = first.fields();
  const auto& b = other.fields();
  auto differ = [&](const std::string& what) {
    return Error(Errc::bad_input, "fields differ from " + first.path().string() + " (the dataset's first cache): " + what)
        .with_path(other.path().string());
  };
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i >= b.size()) throw differ("no field \"" + printable(a[i].name) + "\"");
    if (i >= a.size()) throw differ("an extra field \"" + printable(b[i].name) + "\"");
    if (a[i].name != b[i].name)
      throw differ("field " + std::to_string(i) + " is \"" + printable(b[i].name) + "\", not \"" + printable(a[i].name) + "\"");
    const std::string ta = dataset_type_text(a[i]), tb = dataset_type_text(b[i]);
    if (ta != tb) throw differ("field \"" + printable(a[i].name) + "\" is " + printable(tb) + ", not " + printable(ta));
  }
}

struct DatasetPartRecord {
  uint64_t index = 0, count = 0;
  std::string whole;  // the whole conversion's content id
};

std::optional<DatasetPartRecord> dataset_part_record(const Cache& cache) {
  // Parsing a manifest costs more than opening the rest of a small cache: only parts are parsed.
  if (!cache.provenance().present || cache.manifest_text().find("\"whole_content_id\"") == std::string::npos) return std::nullopt;
  try {
    const nlohmann::json m = detail::parse_json_bounded(cache.manifest_text());
    const auto& part = m.at("slip").at("part");
    return DatasetPartRecord{part.at("index").get<uint64_t>(), part.at("count").get<uint64_t>(),
                             part.at("whole_content_id").get<std::string>()};
  } catch (...) {
    return std::nullopt;  // not a part (or not one slip can read as such: treated as a cache)
  }
}

// A part found by its name in a work directory is that slot of one conversion: its part record
// says so, and every part of the directory belongs to the conversion of the first (before: a
// part of another source's conversion, or a renamed one, was read as the rest of the dataset,
// while `slip merge` refused the same directory). `first_whole`: work directory -> the whole
// content id and path of its first part.
void dataset_check_part_slot(const DatasetItem& item, const std::optional<DatasetPartRecord>& record,
                             std::map<std::string, std::pair<std::string, fs::path>>& first_whole) {
  const auto [index, count] = *item.slot;
  const auto bad = [&](const std::string& why) { return Error(Errc::bad_input, why).with_path(item.path.string()); };
  const std::string named = "part " + std::to_string(index) + " of " + std::to_string(count);
  if (!record) throw bad("named as " + named + " in " + item.origin + ", but its manifest records no part of a `slip convert --shard` run");
  if (record->index != index || record->count != count)
    throw bad("its manifest records part " + std::to_string(record->index) + " of " + std::to_string(record->count) + ", not " + named +
              " as its name says (renamed, or copied from another work directory)");
  const auto [it, first] = first_whole.try_emplace(item.origin, record->whole, item.path);
  if (!first && it->second.first != record->whole)
    throw bad("a part of another conversion (whole content id " + record->whole + ") than " + it->second.second.string() + " (" +
              it->second.first + "): a work directory holds the parts of one conversion");
}

}  // namespace

struct Dataset::Impl {
  std::vector<Cache> caches;
  std::vector<uint64_t> first;  // caches.size() + 1 prefix sums
  std::vector<StreamWeight> weights;
  std::optional<uint64_t> epoch_size;
};

Dataset::Dataset() : impl_(std::make_unique<Impl>()) {}
Dataset::~Dataset() = default;
Dataset::Dataset(Dataset&&) noexcept = default;
Dataset& Dataset::operator=(Dataset&&) noexcept = default;

std::string Dataset::content_id_of(const Cache& cache) {
  if (!cache.provenance().content_id.empty()) return cache.provenance().content_id;
  const std::string& text = cache.manifest_text();
  return "xxh3:" + hex64(xxh3_64(std::as_bytes(std::span(text.data(), text.size()))));
}

Dataset Dataset::open(const fs::path& input) { return open(std::span<const fs::path>(&input, 1)); }

namespace {

struct DatasetInputs {
  std::vector<DatasetItem> items;
  std::optional<uint64_t> epoch_size;
  bool from_json = false;
};

DatasetInputs dataset_expand_inputs(std::span<const fs::path> inputs) {
  if (inputs.empty()) throw Error(Errc::usage, "a dataset needs at least one cache");
  DatasetInputs out;
  std::vector<DatasetItem>& items = out.items;
  std::optional<uint64_t>& epoch_size = out.epoch_size;
  bool& from_json = out.from_json;
  for (const fs::path& input : inputs) {
    std::error_code ec;
    const fs::file_status st = fs::status(input, ec);
    if (fs::is_directory(st)) {
      dataset_expand_dir(input, items);
    } else if (fs::is_regular_file(st)) {
      const std::string text = dataset_read_list(input);
      const auto first = text.find_first_not_of(" \t\r\n");
      std::vector<DatasetItem> listed;
      if (first != std::string::npos && (text[first] == '{' || text[first] == '[')) {
        if (inputs.size() > 1)
          throw Error(Errc::usage, "a JSON dataset list (with its weights) must be the only input").with_path(input.string());
        dataset_parse_json_list(input, text, listed, epoch_size);
        from_json = true;
      } else {
        dataset_parse_text_list(input, text, listed);
      }
      if (listed.empty()) throw Error(Errc::bad_input, "the dataset list names no caches").with_path(input.string());
      for (DatasetItem& item : listed) {
        if (item.path.is_relative()) item.path = input.parent_path() / item.path;  // relative to the list
        items.push_back(std::move(item));
      }
    } else if (st.type() == fs::file_type::not_found) {
      throw Error(Errc::io, "no such cache, directory or dataset list").with_path(input.string());
    } else {
      if (ec) throw_errno("cannot open", input.string(), ec.value());
      throw Error(Errc::bad_input, "neither a directory nor a dataset list").with_path(input.string());
    }
    if (items.size() > kMaxDatasetCaches) throw Error(Errc::usage, "more than " + std::to_string(kMaxDatasetCaches) + " caches");
  }
  return out;
}

// The mix a JSON list gives must be one `slip order` can run (proportions with repeat/choose,
// epoch_size with repeat/choose, an empty epoch, over 2^62 samples): bad input naming the list
// when it is read (exit 3), not a usage error of the command that later mixes (exit 2, no file).
void dataset_check_list_mix(const Dataset& d, const std::string& list) {
  try {
    (void)samples_per_cache(d.sizes(), d.weights(), d.epoch_size());
  } catch (const Error& e) {
    if (e.code() != Errc::usage) throw;
    throw Error(Errc::bad_input, "dataset list: its weights and epoch_size: " + e.message()).with_path(list);
  }
}

}  // namespace

std::vector<fs::path> Dataset::cache_paths(std::span<const fs::path> inputs) {
  std::vector<fs::path> out;
  for (DatasetItem& item : dataset_expand_inputs(inputs).items) out.push_back(std::move(item.path));
  return out;
}

bool Dataset::is_dataset_input(const fs::path& input) {
  std::error_code ec;
  if (fs::is_regular_file(input, ec)) return true;
  if (!fs::is_directory(input, ec)) return false;
  // A run's temporary directory (killed before its manifest was written) is one cache-to-be:
  // opening it says what it is (verify: exit 1), not "no caches in it".
  if (detail::temporary_at(input)) return false;
  // A directory whose manifest cannot be looked at (no permission) is taken for a cache, so
  // that opening it reports the real reason (exit 4, "Permission denied").
  const fs::file_status manifest = fs::status(input / detail::kManifestName, ec);
  return manifest.type() == fs::file_type::not_found;
}

Dataset Dataset::open(std::span<const fs::path> inputs) {
  auto [items, epoch_size, from_json] = dataset_expand_inputs(inputs);
  Dataset d;
  Impl& m = *d.impl_;
  m.caches.reserve(items.size());
  m.first.reserve(items.size() + 1);
  m.first.push_back(0);
  std::map<std::string, size_t> by_id;   // content id -> index
  std::map<std::string, size_t> wholes;  // whole content id of parts -> a part's index
  std::map<std::string, std::pair<std::string, fs::path>> workdir_whole;
  for (const DatasetItem& item : items) {
    Cache cache = Cache::open(item.path);
    // Opening touched the first page of each table; with large folios the kernel maps far more
    // (megabytes a file). Unmapped again (the page cache keeps them), so a dataset of thousands
    // of caches opens in the resident memory of one.
    cache.release_resident_pages();
    const std::string id = content_id_of(cache);
    if (!item.content_id.empty() && item.content_id != id)
      throw Error(Errc::bad_input, "content id " + id + " differs from " + item.content_id + " in " + item.origin +
                                       ": the cache changed since the list was written (a new conversion or other bytes)")
          .with_path(item.path.string());
    if (item.samples && *item.samples != cache.size())
      throw Error(Errc::bad_input, "holds " + std::to_string(cache.size()) + " samples, " + item.origin + " says " +
                                       std::to_string(*item.samples) + ": the cache changed since the list was written")
          .with_path(item.path.string());
    if (auto [it, fresh] = by_id.emplace(id, m.caches.size()); !fresh)
      throw Error(Errc::bad_input, "the same cache (content id " + id + ") as " + m.caches[it->second].path().string() +
                                       ": a dataset names each cache once (weights repeat one)")
          .with_path(item.path.string());
    const std::optional<DatasetPartRecord> part = dataset_part_record(cache);
    if (part) wholes.emplace(part->whole, m.caches.size());
    if (item.slot) dataset_check_part_slot(item, part, workdir_whole);
    if (!m.caches.empty()) dataset_check_fields(m.caches.front(), cache);
    if (cache.size() > (uint64_t{1} << 62) - m.first.back())
      throw Error(Errc::bad_input, "the dataset has more than 2^62 samples").with_path(item.path.string());
    m.first.push_back(m.first.back() + cache.size());
    m.caches.push_back(std::move(cache));
    m.weights.push_back(item.weight);
  }
  for (const auto& [whole, part] : wholes)
    if (auto it = by_id.find(whole); it != by_id.end())
      throw Error(Errc::bad_input, "holds both the merged cache " + m.caches[it->second].path().string() + " and its part " +
                                       m.caches[part].path().string() + " (every sample twice): name one of them")
          .with_path(m.caches[part].path().parent_path().string());
  if (!from_json || std::all_of(m.weights.begin(), m.weights.end(), [](const StreamWeight& w) { return w.kind == WeightKind::none; }))
    m.weights.clear();
  m.epoch_size = epoch_size;
  if (!m.weights.empty() || m.epoch_size) dataset_check_list_mix(d, items.front().origin);
  return d;
}

size_t Dataset::num_caches() const noexcept { return impl_->caches.size(); }
uint64_t Dataset::size() const noexcept { return impl_->first.back(); }
const Cache& Dataset::cache(size_t index) const {
  if (index >= impl_->caches.size())
    throw Error(Errc::usage, "no cache " + std::to_string(index) + " in a dataset of " + std::to_string(impl_->caches.size()));
  return impl_->caches[index];
}
uint64_t Dataset::first_id(size_t index) const {
  cache(index);  // range check
  return impl_->first[index];
}
std::vector<uint64_t> Dataset::sizes() const {
  std::vector<uint64_t> s(impl_->caches.size());
  for (size_t i = 0; i < s.size(); ++i) s[i] = impl_->first[i + 1] - impl_->first[i];
  return s;
}
const std::vector<CacheField>& Dataset::fields() const noexcept { return impl_->caches.front().fields(); }

Dataset::Location Dataset::locate(uint64_t global_id) const {
  const auto& f = impl_->first;
  if (global_id >= f.back())
    throw Error(Errc::usage, "sample " + std::to_string(global_id) + " is past the dataset's " + std::to_string(f.back()) + " samples");
  // The last cache whose first id is <= global_id (empty caches share their successor's).
  const size_t i = static_cast<size_t>(std::upper_bound(f.begin(), f.end(), global_id) - f.begin()) - 1;
  return {i, global_id - f[i]};
}

uint64_t Dataset::global_id(size_t cache_index, uint64_t sample) const {
  const Cache& c = cache(cache_index);
  if (sample >= c.size())
    throw Error(Errc::usage, "sample " + std::to_string(sample) + " is past the cache's " + std::to_string(c.size()) + " samples")
        .with_path(c.path().string());
  return impl_->first[cache_index] + sample;
}

void Dataset::release_resident_pages() const noexcept {
  for (const Cache& c : impl_->caches) c.release_resident_pages();
}
void Dataset::keep_resident_below(uint64_t limit) const noexcept {
  if (detail::resident_file_bytes() > limit) release_resident_pages();
}
void Dataset::drop_page_cache() const {
  for (const Cache& c : impl_->caches) c.drop_page_cache();
}

const std::vector<StreamWeight>& Dataset::weights() const noexcept { return impl_->weights; }
std::optional<uint64_t> Dataset::epoch_size() const noexcept { return impl_->epoch_size; }

std::string Dataset::list_json() const {
  nlohmann::ordered_json doc;
  doc["format"] = "slip-dataset-list";
  doc["version"] = 1;
  if (impl_->epoch_size) doc["epoch_size"] = *impl_->epoch_size;
  nlohmann::ordered_json caches = nlohmann::ordered_json::array();
  for (size_t i = 0; i < impl_->caches.size(); ++i) {
    const Cache& c = impl_->caches[i];
    std::error_code ec;
    const fs::path abs = fs::absolute(c.path(), ec);
    nlohmann::ordered_json e;
    const std::string path = (ec ? c.path() : abs.lexically_normal()).string();
    // JSON strings are UTF-8: a Latin-1 directory name would make dump() throw (an "internal
    // error") or, replaced, name another directory.
    if (!detail::is_valid_utf8(path))
      throw Error(Errc::bad_input, "the path is not valid UTF-8, so a JSON dataset list cannot name it (a text list can)").with_path(path);
    e["path"] = path;
    e["content_id"] = content_id_of(c);
    e["num_samples"] = c.size();
    if (!impl_->weights.empty() && impl_->weights[i].kind != WeightKind::none)
      e[weight_kind_name(impl_->weights[i].kind)] = impl_->weights[i].value;
    caches.push_back(std::move(e));
  }
  doc["caches"] = std::move(caches);
  return doc.dump(2) + "\n";
}

}  // namespace slip
