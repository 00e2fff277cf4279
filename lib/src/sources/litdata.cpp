// LitData "optimized" datasets (as LitData's optimize() writes them): index.json, chunk files (zstd
// decompressed in memory, never written back), PyTreeLoader items, field names recovered from
// config.data_spec. Samples in global index order (chunks[] order); each item's payloads are
// decoded by litdata_payloads.cpp.
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "slip/error.hpp"
#include "sources/litdata_names.hpp"
#include "sources/litdata_payloads.hpp"
#include "sources/source_registry.hpp"
#include "slip/hash.hpp"
#include "slip/source.hpp"
#include "util/file_io.hpp"
#include "util/untrusted.hpp"

namespace slip {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using detail::load_le;
using detail::litdata::Leaf;

struct Chunk {
  std::string file;
  uint64_t size = 0, bytes = 0;
};

class LitDataSource final : public Source {
 public:
  LitDataSource(const std::string& dir, const SourceOptions& options)
      : dir_(fs::absolute(dir).lexically_normal()), max_item_bytes_(detail::max_sample_bytes(options)) {
    if (!dir_.has_filename()) dir_ = dir_.parent_path();  // "dataset/" -> "dataset"
    const fs::path index_path = dir_ / "index.json";
    std::error_code ec;
    if (!fs::exists(index_path, ec)) {
      for (const auto& e : fs::directory_iterator(dir_, ec))
        if (e.path().filename().string().find("index.json") != std::string::npos)
          throw Error(Errc::bad_input,
                      "incomplete LitData dataset: per-worker " + e.path().filename().string() + " but no merged index.json")
              .with_path(dir_.string());
      throw Error(Errc::bad_input, "not a LitData dataset (no index.json)").with_path(dir_.string());
    }
    const std::string text = detail::read_text_file(index_path);
    index_path_ = index_path.string();
    json index;
    try {
      index = detail::parse_json_bounded(text);
    } catch (const json::exception& e) {
      throw Error(Errc::bad_input, std::string("index.json is not valid JSON: ") + e.what()).with_path(index_path_);
    }
    try {
      parse_index(index, options);
    } catch (const json::exception& e) {
      // Whatever typed access the checks above missed: a wrong JSON type is bad input too.
      throw Error(Errc::bad_input, std::string("index.json has an unexpected structure: ") + e.what()).with_path(index_path_);
    }
    identity_ = {"litdata", dir_.string(), "sha256:" + sha256_hex(text), dir_.filename().string(), {}};
    prescan_arrays();
  }

  const Schema& schema() const override { return schema_; }
  SourceIdentity identity() const override { return identity_; }
  std::optional<uint64_t> size() const override { return total_; }

  uint64_t skip(uint64_t n) override {
    uint64_t done = 0;
    while (done < n && chunk_ < chunks_.size()) {
      const uint64_t left = chunks_[chunk_].size - item_;
      const uint64_t take = std::min(left, n - done);
      item_ += take;
      done += take;
      global_ += take;
      if (item_ == chunks_[chunk_].size) {
        ++chunk_;
        item_ = 0;
        loaded_ = SIZE_MAX;
      }
    }
    return done;
  }

  bool next(Sample& out) override {
    while (chunk_ < chunks_.size() && item_ >= chunks_[chunk_].size) {
      ++chunk_;
      item_ = 0;
    }
    if (chunk_ >= chunks_.size()) return false;
    const auto item = item_bytes(chunk_, item_);
    out.source_index = global_;
    out.origin = (dir_ / chunks_[chunk_].file).string() + "#" + std::to_string(item_);
    out.problem.reset();
    out.skip.reset();
    out.values.assign(leaves_.size(), Value{});
    const auto payloads = split_item(item, chunk_, item_);
    // A payload that does not decode spoils this sample only (--on-error decides); the item
    // table and chunk structure were checked by split_item, so the next item is still readable.
    try {
      for (size_t j = 0; j < leaves_.size(); ++j)
        detail::litdata::decode_payload(leaves_[j], payloads[j], out.values[j], place(chunk_, item_));
    } catch (const Error& e) {
      if (e.code() != Errc::bad_input) throw;
      out.problem = e.message() + (e.offset() ? " (byte " + std::to_string(*e.offset()) + ")" : std::string());
    }
    ++item_;
    ++global_;
    return true;
  }

 private:
  Error fail(size_t chunk, std::optional<uint64_t> item, const std::string& why, uint64_t offset) const {
    Error e(Errc::bad_input, (item ? "item " + std::to_string(*item) + ": " : std::string()) + why);
    e.with_path((dir_ / chunks_[chunk].file).string()).with_offset(offset);
    return e;
  }

  void parse_index(const json& index, const SourceOptions& options) {
    auto bad = [&](const std::string& why) { return Error(Errc::bad_input, why).with_path(index_path_); };
    if (index.contains("shards")) throw bad("an MDS (Mosaic) index (\"shards\"): not supported");
    if (!index.contains("chunks") || !index["chunks"].is_array() || !index.contains("config") || !index["config"].is_object())
      throw bad("index.json lacks \"chunks\" or \"config\"");
    const json& config = index["config"];
    if (config.contains("encryption") && !config["encryption"].is_null()) throw bad("the dataset is encrypted: not supported (no key)");
    const std::string loader = config.value("item_loader", std::string("PyTreeLoader"));
    if (loader != "PyTreeLoader")
      throw bad("item loader " + loader + " is not supported (TokensLoader/ParquetLoader datasets are out of scope)");
    if (config.contains("compression") && !config["compression"].is_null()) {
      const std::string c = config["compression"].get<std::string>();
      if (c.rfind("zstd", 0) != 0) throw bad("unknown compression \"" + c + "\"");
      zstd_ = true;
    }
    if (!config.contains("data_format") || !config["data_format"].is_array() || config["data_format"].empty())
      throw bad("config.data_format is not a non-empty array");
    std::vector<std::string> names;
    if (config.contains("data_spec") && config["data_spec"].is_string()) {
      json spec;
      try {
        spec = detail::parse_json_bounded(config["data_spec"].get<std::string>());
      } catch (const json::exception&) {
        throw bad("config.data_spec is not JSON");
      }
      if (!spec.is_array() || spec.size() != 2 || spec[0] != 1) throw bad("data_spec is not [1, node]");
      flatten(spec[1], "", names, bad);
    }
    const auto& formats = config["data_format"];
    if (!names.empty() && names.size() != formats.size())
      throw bad("data_spec has " + std::to_string(names.size()) + " leaves for " + std::to_string(formats.size()) + " data_format entries");
    std::vector<std::string> renames = options.get_all("fields");
    std::vector<std::string> given;
    for (const auto& r : renames) {
      size_t start = 0;
      while (true) {
        const auto c = r.find(',', start);
        given.push_back(r.substr(start, c == std::string::npos ? std::string::npos : c - start));
        if (c == std::string::npos) break;
        start = c + 1;
      }
    }
    // One name per leaf, or none: too few would leave later leaves with their positions as
    // names, too many would name nothing, and either way the names would not mean what was meant.
    if (!given.empty() && given.size() != formats.size())
      throw Error(Errc::usage, "--fields gives " + std::to_string(given.size()) + (given.size() == 1 ? " name" : " names") +
                                   "; the dataset's samples have " + std::to_string(formats.size()) + " leaves (one name each)")
          .with_path(index_path_);
    const auto raw_fields = options.get_all("raw-field");
    for (size_t j = 0; j < formats.size(); ++j) {
      if (!formats[j].is_string()) throw bad("data_format entries must be strings");
      Leaf leaf;
      leaf.format = formats[j].get<std::string>();
      const auto colon = leaf.format.find(':');
      leaf.base = leaf.format.substr(0, colon);
      leaf.suffix = colon == std::string::npos ? "" : leaf.format.substr(colon + 1);
      leaf.name = j < given.size() ? given[j] : names.empty() ? (formats.size() == 1 ? "0" : std::to_string(j)) : names[j];
      const std::string& b = leaf.base;
      if (b == "int" || b == "bool")
        leaf.type = FieldType::int64;
      else if (b == "float")
        leaf.type = FieldType::float64;
      else if (b == "str" || b == "text")
        leaf.type = FieldType::str;
      else if (b == "jpeg" || b == "image" || b == "pil")
        leaf.type = FieldType::image;
      else if (b == "numpy" || b == "tensor" || b == "no_header_numpy" || b == "no_header_tensor") {
        leaf.array = true;
        leaf.type = FieldType::ndarray;
      } else if (b == "bytes" || b == "file" || b == "pickle" || b == "jpeg_array" || b == "video" || b == "audio" || b == "nifti" ||
                 b == "mesh" || b == "pdf" || b == "tifffile" || b == "tiff" ||
                 std::find(raw_fields.begin(), raw_fields.end(), leaf.name) != raw_fields.end()) {
        leaf.type = FieldType::bytes;  // verbatim payload (never unpickled): a known serializer, or --raw-field
      } else {
        throw bad("field \"" + leaf.name + "\" has serializer \"" + leaf.format + "\", which slip does not know (--raw-field " + leaf.name +
                  " keeps its bytes)");
      }
      leaves_.push_back(std::move(leaf));
    }
    for (const auto& c : index["chunks"]) {
      if (!c.is_object() || !c.contains("filename") || !c["filename"].is_string() || !c.contains("chunk_size") ||
          !c["chunk_size"].is_number_unsigned() || !c.contains("chunk_bytes") || !c["chunk_bytes"].is_number_unsigned())
        throw bad("a chunk entry lacks filename, chunk_size or chunk_bytes");
      Chunk ch{c["filename"].get<std::string>(), c["chunk_size"].get<uint64_t>(), c["chunk_bytes"].get<uint64_t>()};
      if (!detail::is_safe_chunk_name(ch.file)) throw bad("chunk filename \"" + ch.file + "\" could leave the dataset directory");
      if (ch.bytes > (uint64_t{1} << 32)) throw bad("chunk " + ch.file + " claims more than 4 GiB");
      // What the index says a chunk holds bounds its bytes before anything is read or sized by
      // them: a count, a table of count + 1 offsets, and items of at most --max-sample-bytes.
      const uint64_t table = ch.size <= ch.bytes / 4 ? 4 + 4 * (ch.size + 1) : UINT64_MAX;
      if (table > ch.bytes || (ch.bytes > table && (ch.bytes - table - 1) / max_item_bytes_ + 1 > ch.size))
        throw bad("chunk " + ch.file + ": chunk_bytes " + std::to_string(ch.bytes) + " cannot hold its " + std::to_string(ch.size) +
                  " items (a table of " + std::to_string(ch.size + 1) + " offsets, items of at most --max-sample-bytes " +
                  std::to_string(max_item_bytes_) + ")");
      total_ += ch.size;
      chunks_.push_back(std::move(ch));
    }
  }

  template <typename Bad>
  void flatten(const json& node, const std::string& prefix, std::vector<std::string>& out, Bad& bad) {
    if (!node.is_object() || !node.contains("children_spec") || !node["children_spec"].is_array()) throw bad("data_spec node is malformed");
    const auto& children = node["children_spec"];
    if (children.empty()) {
      out.push_back(prefix.empty() ? "0" : prefix);
      return;
    }
    // Untrusted JSON: find(), never const operator[] on a key that may be absent (UB).
    const auto type_it = node.find("type");
    const std::string type = type_it != node.end() && type_it->is_string() ? type_it->get<std::string>() : "";
    std::vector<std::string> keys;
    if (type == "builtins.dict" || type == "collections.OrderedDict" || type == "collections.defaultdict") {
      const auto ctx_it = node.find("context");
      json ctx = ctx_it != node.end() ? *ctx_it : json();
      if (ctx.is_string()) {
        try {
          ctx = detail::parse_json_bounded(ctx.get<std::string>());
        } catch (const json::exception&) {
          throw bad("dict context is not JSON");
        }
      }
      if (type == "collections.defaultdict" && ctx.is_object()) {
        const auto inner = ctx.find("dict_context");
        ctx = inner != ctx.end() ? json(*inner) : json();
      }
      if (!ctx.is_array() || ctx.size() != children.size()) throw bad("dict context does not name every child");
      for (const auto& k : ctx) keys.push_back(k.is_string() ? k.get<std::string>() : k.dump());
    } else {
      for (size_t j = 0; j < children.size(); ++j) keys.push_back(std::to_string(j));
    }
    for (size_t j = 0; j < children.size(); ++j) flatten(children[j], prefix.empty() ? keys[j] : prefix + "." + keys[j], out, bad);
  }

  // The bytes of chunk c: read whole (pread, never mapped: a chunk truncated by another
  // process is an error naming it, not a SIGBUS), or decompressed (checked against chunk_bytes).
  // The item count and offset table come first and are checked against index.json before the
  // rest is read or decompressed, so a chunk that lies (zeros, a zstd bomb) costs its table.
  std::span<const std::byte> chunk_bytes(size_t c) {
    if (loaded_ == c)
      return zstd_ ? std::span<const std::byte>(decompressed_.get(), decompressed_size_)
                   : std::span<const std::byte>(raw_.get(), raw_size_);
    const fs::path p = dir_ / chunks_[c].file;
    std::error_code ec;
    if (!fs::exists(p, ec)) throw Error(Errc::bad_input, "chunk file listed in index.json is missing").with_path(p.string());
    const detail::InputFile file(p);
    // The next chunk is read from disk (or a network file system) while this one is converted.
    if (c + 1 < chunks_.size()) detail::prefetch_file(dir_ / chunks_[c + 1].file);
    const uint64_t bytes = chunks_[c].bytes;  // bounded by the item count (parse_index)
    if (!zstd_ && file.size() != bytes)       // before sizing anything by the file
      throw fail(c, std::nullopt,
                 "chunk holds " + std::to_string(file.size()) + " bytes, index.json says " + std::to_string(bytes) + " (truncated chunk?)",
                 file.size());
    // A zstd frame of chunk_bytes is at most ZSTD_compressBound of them: a larger file is not one.
    if (zstd_ && file.size() > ZSTD_compressBound(static_cast<size_t>(bytes)) + 64)
      throw fail(c, std::nullopt,
                 "compressed chunk of " + std::to_string(file.size()) + " bytes is larger than any zstd frame of the " +
                     std::to_string(bytes) + " bytes index.json says it holds",
                 0);
    const uint64_t table = 4 + 4 * (chunks_[c].size + 1);
    loaded_ = SIZE_MAX;  // until this chunk is whole and checked
    if (!zstd_) {
      ensure_capacity(raw_, raw_capacity_, bytes);
      raw_size_ = bytes;
      file.read_at(0, std::span(raw_.get(), table));
      check_chunk_table(c, std::span<const std::byte>(raw_.get(), table));
      file.read_at(table, std::span(raw_.get() + table, bytes - table));
      loaded_ = c;
      return {raw_.get(), raw_size_};
    }
    ensure_capacity(raw_, raw_capacity_, file.size());
    raw_size_ = file.size();
    file.read_at(0, std::span(raw_.get(), raw_size_));
    const std::span<const std::byte> data(raw_.get(), raw_size_);
    // chunk_bytes comes from the (untrusted) index: when the zstd frame records its content
    // size, the two must agree before anything is allocated.
    const unsigned long long framed = ZSTD_getFrameContentSize(data.data(), data.size());
    if (framed == ZSTD_CONTENTSIZE_ERROR) throw fail(c, std::nullopt, "not a zstd frame", 0);
    if (framed != ZSTD_CONTENTSIZE_UNKNOWN && framed != bytes)
      throw fail(c, std::nullopt, "the zstd frame holds " + std::to_string(framed) + " bytes, index.json says " + std::to_string(bytes), 0);
    ensure_capacity(decompressed_, decompressed_capacity_, bytes);  // never zero-filled: pages cost only once written
    decompressed_size_ = bytes;
    std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> dctx(ZSTD_createDCtx(), &ZSTD_freeDCtx);
    ZSTD_inBuffer in{data.data(), data.size(), 0};
    // First the table alone, checked; then the rest (never past chunk_bytes).
    ZSTD_outBuffer out{decompressed_.get(), static_cast<size_t>(table), 0};
    bool table_checked = false;
    size_t rc = 1;
    while (true) {
      rc = ZSTD_decompressStream(dctx.get(), &out, &in);
      if (ZSTD_isError(rc)) throw fail(c, std::nullopt, std::string("zstd: ") + ZSTD_getErrorName(rc), in.pos);
      if (!table_checked && out.pos == out.size) {
        check_chunk_table(c, std::span<const std::byte>(decompressed_.get(), table));
        table_checked = true;
        out.size = static_cast<size_t>(bytes);
        continue;
      }
      if (out.pos == out.size && (in.pos < in.size || rc != 0)) {
        // More output than chunk_bytes promised: the index lies (never grow past it).
        std::byte probe;
        ZSTD_outBuffer extra{&probe, 1, 0};
        const size_t rc2 = ZSTD_decompressStream(dctx.get(), &extra, &in);
        if (ZSTD_isError(rc2) || extra.pos)
          throw fail(c, std::nullopt, "decompresses to more than chunk_bytes " + std::to_string(bytes), in.pos);
        rc = rc2;
      }
      if (rc == 0 && in.pos == in.size) break;
      if (in.pos == in.size && out.pos < out.size) break;  // input used up: cut short (below)
    }
    if (!table_checked || out.pos != bytes)
      throw fail(c, std::nullopt,
                 "decompresses to " + std::to_string(out.pos) + " bytes, index.json says " + std::to_string(bytes) + " (truncated chunk?)",
                 data.size());
    loaded_ = c;
    return {decompressed_.get(), decompressed_size_};
  }

  // A buffer reused across chunks, grown (never zero-filled) when a chunk needs more.
  static void ensure_capacity(std::unique_ptr<std::byte[]>& buffer, uint64_t& capacity, uint64_t size) {
    if (capacity >= size && buffer) return;
    buffer.reset();
    buffer = std::make_unique_for_overwrite<std::byte[]>(std::max<uint64_t>(size, 1));
    capacity = size;
  }

  // Chunk c's item count and offset table (its first 4 + 4 (count + 1) bytes) against
  // index.json and --max-sample-bytes: what the rest of the chunk must be.
  void check_chunk_table(size_t c, std::span<const std::byte> table) const {
    const uint64_t len = chunks_[c].bytes;
    const uint64_t n = load_le<uint32_t>(table.data());
    if (n != chunks_[c].size)
      throw fail(c, std::nullopt, "chunk holds " + std::to_string(n) + " items, index.json says " + std::to_string(chunks_[c].size), 0);
    uint64_t prev = 4 + 4 * (n + 1);
    if (load_le<uint32_t>(table.data() + 4) != prev) throw fail(c, 0, "first item offset is not right after the offset table", 4);
    for (uint64_t i = 1; i <= n; ++i) {
      const uint64_t off = load_le<uint32_t>(table.data() + 4 + 4 * i);
      if (off < prev) throw fail(c, i - 1, "item offsets go backwards", 4 + 4 * i);
      if (off - prev > max_item_bytes_)
        throw fail(c, i - 1,
                   "item of " + std::to_string(off - prev) + " bytes exceeds --max-sample-bytes " + std::to_string(max_item_bytes_),
                   4 + 4 * i);
      prev = off;
    }
    if (prev != len)
      throw fail(c, n ? std::optional<uint64_t>(n - 1) : std::nullopt,
                 "last item ends at " + std::to_string(prev) + ", the chunk at " + std::to_string(len), 4 + 4 * n);
  }

  std::span<const std::byte> item_bytes(size_t c, uint64_t i) {
    const auto data = chunk_bytes(c);
    const uint64_t a = load_le<uint32_t>(data.data() + 4 + 4 * i), b = load_le<uint32_t>(data.data() + 8 + 4 * i);
    item_offset_ = a;
    return data.subspan(a, b - a);
  }

  std::vector<std::span<const std::byte>> split_item(std::span<const std::byte> item, size_t c, uint64_t i) const {
    const uint64_t f = leaves_.size();
    if (item.size() < 4 * f)
      throw fail(c, i, "item of " + std::to_string(item.size()) + " bytes is shorter than its size header", item_offset_);
    uint64_t pos = 4 * f, sum = 4 * f;
    for (uint64_t j = 0; j < f; ++j) sum += load_le<uint32_t>(item.data() + 4 * j);
    if (sum != item.size())
      throw fail(c, i, "payload sizes add up to " + std::to_string(sum) + " bytes, the item has " + std::to_string(item.size()),
                 item_offset_);
    std::vector<std::span<const std::byte>> out;
    for (uint64_t j = 0; j < f; ++j) {
      const uint64_t n = load_le<uint32_t>(item.data() + 4 * j);
      out.push_back(item.subspan(pos, n));
      pos += n;
    }
    return out;
  }

  // One pass over array leaves: ndarray when dtype and shape never vary, else bytes.
  void prescan_arrays() {
    const bool any = std::any_of(leaves_.begin(), leaves_.end(), [](const Leaf& l) { return l.array; });
    std::vector<bool> first(leaves_.size(), true);
    if (any) {
      for (size_t c = 0; c < chunks_.size(); ++c)
        for (uint64_t i = 0; i < chunks_[c].size; ++i) {
          const auto payloads = split_item(item_bytes(c, i), c, i);
          for (size_t j = 0; j < leaves_.size(); ++j) {
            Leaf& l = leaves_[j];
            if (!l.array || !l.uniform) continue;
            std::string dtype;
            std::vector<uint64_t> shape;
            std::span<const std::byte> data;
            detail::litdata::parse_array(l, payloads[j], dtype, shape, data, place(c, i));
            if (first[j]) {
              l.dtype = dtype;
              l.shape = shape;
              first[j] = false;
            } else if (dtype != l.dtype || shape != l.shape)
              l.uniform = false;
          }
        }
      loaded_ = SIZE_MAX;
    }
    for (Leaf& l : leaves_) {
      FieldSpec spec{l.name, l.type, {}, {}};
      if (l.array) {
        if (l.uniform && !first[&l - leaves_.data()]) {
          spec.dtype = l.dtype;
          spec.shape = l.shape;
        } else {
          spec.type = FieldType::bytes;
          l.type = FieldType::bytes;
        }  // varying arrays: verbatim payloads
      }
      schema_.fields.push_back(std::move(spec));
    }
  }
  // Where item i of chunk c is, for its payloads' errors (item_offset_: set by item_bytes).
  detail::litdata::PayloadPlace place(size_t c, uint64_t i) const { return {dir_, chunks_[c].file, i, item_offset_}; }

  fs::path dir_;
  uint64_t max_item_bytes_;  // --max-sample-bytes
  std::string index_path_;
  bool zstd_ = false;
  std::vector<Leaf> leaves_;
  std::vector<Chunk> chunks_;
  Schema schema_;
  SourceIdentity identity_;
  uint64_t total_ = 0, global_ = 0, item_ = 0, item_offset_ = 0;
  size_t chunk_ = 0, loaded_ = SIZE_MAX;
  std::unique_ptr<std::byte[]> raw_;  // the chunk file's bytes
  uint64_t raw_size_ = 0, raw_capacity_ = 0;
  std::unique_ptr<std::byte[]> decompressed_;
  uint64_t decompressed_size_ = 0, decompressed_capacity_ = 0;
};

}  // namespace

bool looks_like_litdata(const std::string& uri) {
  std::error_code ec;
  return fs::is_directory(uri, ec) && (fs::exists(fs::path(uri) / "index.json", ec) || fs::exists(fs::path(uri) / "0.index.json", ec));
}

std::unique_ptr<Source> open_litdata(const std::string& dir, const SourceOptions& options) {
  return std::make_unique<LitDataSource>(dir, options);
}

}  // namespace slip
