// FFCV .beton / .ffcv files (format version 2, as FFCV's DatasetWriter writes them), read with
// pread, never mapped (a file truncated by another process while it is read is an error naming
// the offset, not a SIGBUS); every offset, size and count is bounds-checked before use. Samples come out in sample-id order whatever the
// page order.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/npy.hpp"
#include "slip/source.hpp"
#include "sources/source_registry.hpp"
#include "util/file_time.hpp"
#include "util/file_io.hpp"
#include "util/untrusted.hpp"

namespace slip {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kHeaderSize = 24, kDescriptorSize = 1041, kAllocEntrySize = 24;

enum FfcvType : uint8_t { kFloat = 0, kInt = 1, kImage = 2, kBytes = 3, kNDArray = 4, kJson = 5, kTensor = 6 };

struct FfcvField {
  std::string name;
  uint8_t type_id = 0;
  uint64_t entry_size = 0, entry_align = 1, offset = 0;
  std::string dtype;            // ndarray
  std::vector<uint64_t> shape;  // ndarray
  uint64_t array_bytes = 0;     // ndarray payload length
  bool raw = false;             // unknown type read as raw metadata bytes (--raw-field)
};

class FfcvSource final : public Source {
 public:
  FfcvSource(const std::string& path, const SourceOptions& options)
      : path_(path), file_(path), max_payload_bytes_(detail::max_sample_bytes(options)) {
    parse(options);
  }

  const Schema& schema() const override { return schema_; }
  std::optional<uint64_t> size() const override { return num_samples_; }
  SourceIdentity identity() const override { return identity_; }

  uint64_t skip(uint64_t n) override {
    const uint64_t done = std::min(n, num_samples_ - next_);
    next_ += done;
    return done;
  }

  bool next(Sample& out) override {
    if (next_ >= num_samples_) return false;
    const uint64_t s = next_++;
    out.source_index = s;
    out.origin = path_ + "#" + std::to_string(s);
    out.problem.reset();
    oversize_.reset();
    out.values.resize(fields_.size());
    const uint64_t row_at = metadata_offset_ + s * row_size_;
    const std::byte* row = metadata_row(s);
    for (size_t i = 0; i < fields_.size(); ++i) {
      const FfcvField& f = fields_[i];
      Value& v = out.values[i];
      v = Value{};
      const std::byte* e = row + f.offset;
      const uint64_t at = row_at + f.offset;
      if (f.raw) {
        v.bytes.assign(e, e + f.entry_size);
        continue;
      }
      switch (f.type_id) {
        case kFloat:
          v.float_value = detail::load_le<double>(e);
          break;
        case kInt:
          v.int_value = detail::load_le<int64_t>(e);
          break;
        case kImage:
          read_image(s, f, e, at, v);
          break;
        case kBytes:
        case kJson: {
          const uint64_t ptr = detail::load_le<uint64_t>(e), size = detail::load_le<uint64_t>(e + 8);
          read_payload(s, f, ptr, size, at, v.bytes);
          if (f.type_id == kJson && !oversize_) {
            // FFCV's JSONField: the bytes before the terminating NUL (the NUL must be last).
            if (size == 0 || v.bytes.back() != std::byte{0})
              throw fail(s, "JSON payload of field \"" + f.name + "\" lacks its NUL terminator", ptr + size);
            v.bytes.pop_back();
            if (std::find(v.bytes.begin(), v.bytes.end(), std::byte{0}) != v.bytes.end())
              throw fail(s, "JSON payload of field \"" + f.name + "\" holds a NUL before its end", ptr);
          }
          break;
        }
        case kNDArray:
        case kTensor:
          read_payload(s, f, detail::load_le<uint64_t>(e), f.array_bytes, at, v.bytes);
          break;
      }
    }
    if (oversize_) out.problem = std::move(oversize_);
    return true;
  }

 private:
  Error fail(std::optional<uint64_t> sample, const std::string& why, uint64_t offset) const {
    Error e(Errc::bad_input, why);
    e.with_path(path_).with_offset(offset);
    if (sample) e.with_sample(*sample);
    return e;
  }

  // Sample s's metadata row, read with the rows after it (a block of 64 KiB at a time: one
  // pread per sample would cost more than the copy).
  const std::byte* metadata_row(uint64_t s) {
    if (s < rows_first_ || s >= rows_first_ + rows_count_) {
      rows_first_ = s;
      rows_count_ = std::min<uint64_t>(num_samples_ - s, std::max<uint64_t>(1, (64 << 10) / row_size_));
      rows_.resize(static_cast<size_t>(rows_count_ * row_size_));
      file_.read_at(metadata_offset_ + s * row_size_, rows_);
    }
    return rows_.data() + (s - rows_first_) * row_size_;
  }

  // Reads a payload [ptr, ptr+size) into `out`; it must lie in the data region (after the
  // metadata, before the allocation table). Zero-length payloads are never read.
  void read_payload(uint64_t s, const FfcvField& f, uint64_t ptr, uint64_t size, uint64_t entry_at, Bytes& out) const {
    out.clear();
    if (size == 0) return;
    if (ptr < metadata_end_ || ptr > alloc_table_ptr_ || size > alloc_table_ptr_ - ptr)
      throw fail(s,
                 "payload of field \"" + f.name + "\" [" + std::to_string(ptr) + ", +" + std::to_string(size) +
                     ") lies outside the data region [" + std::to_string(metadata_end_) + ", " + std::to_string(alloc_table_ptr_) + ")",
                 entry_at);
    if (size > max_payload_bytes_) {  // never read: the sample is bad (--on-error)
      oversize_ = "payload of field \"" + f.name + "\" of " + std::to_string(size) + " bytes exceeds --max-sample-bytes " +
                  std::to_string(max_payload_bytes_) + " (not read)";
      return;
    }
    out.resize(static_cast<size_t>(size));
    try {
      file_.read_at(ptr, out);
    } catch (Error& e) {
      e.with_sample(s);
      throw;
    }
  }

  void read_image(uint64_t s, const FfcvField& f, const std::byte* e, uint64_t at, Value& v) const {
    const auto mode = static_cast<uint8_t>(e[0]);
    const uint16_t width = detail::load_le<uint16_t>(e + 1), height = detail::load_le<uint16_t>(e + 3);
    const uint64_t ptr = detail::load_le<uint64_t>(e + 5);
    if (width == 0 || height == 0) throw fail(s, "image of field \"" + f.name + "\" has a zero dimension", at);
    if (mode == 0) {
      // The JPEG's length lives only in the allocation table: the entry of this sample with
      // this pointer and a non-zero size.
      auto it = alloc_.find({s, ptr});
      if (it == alloc_.end())
        throw fail(s, "no allocation-table entry for the JPEG of field \"" + f.name + "\" at " + std::to_string(ptr), at);
      read_payload(s, f, ptr, it->second, at, v.bytes);
      v.width = width;  // the writer cross-checks these against the JPEG's own frame header
      v.height = height;
    } else if (mode == 1) {
      const uint64_t size = uint64_t{width} * height * 3;
      read_payload(s, f, ptr, size, at, v.bytes);
      v.width = width;
      v.height = height;
      v.raw_channels = 3;
    } else {
      throw fail(s, "image of field \"" + f.name + "\" has unknown mode " + std::to_string(mode), at);
    }
  }

  void parse(const SourceOptions& options) {
    const uint64_t file_size = file_.size();
    const std::vector<std::byte> head = read_header(file_size);
    const std::map<std::string, std::string> rename = parse_renames(options);
    const size_t unknown = parse_descriptors(head, options.get_all("raw-field"));
    if (unknown > 1) throw Error(Errc::usage, "at most one --raw-field can be deduced per file").with_path(path_);
    layout_rows(unknown == 1);
    check_tables(file_size);
    read_alloc_table(file_size);
    build_schema(rename);
    set_identity(options, file_size);
  }

  // The 24-byte header, checked; returns it with the field descriptors after it.
  std::vector<std::byte> read_header(uint64_t file_size) {
    if (file_size < kHeaderSize) throw fail(std::nullopt, "file too short for the 24-byte FFCV header", file_size);
    std::vector<std::byte> head(kHeaderSize);
    file_.read_at(0, head);
    const std::byte* h = head.data();
    const uint16_t version = detail::load_le<uint16_t>(h);
    const uint16_t num_fields = detail::load_le<uint16_t>(h + 2);
    const uint32_t page_size = detail::load_le<uint32_t>(h + 4);
    num_samples_ = detail::load_le<uint64_t>(h + 8);
    alloc_table_ptr_ = detail::load_le<uint64_t>(h + 16);
    if (version != 2) throw fail(std::nullopt, "not an FFCV file (version " + std::to_string(version) + ", want 2)", 0);
    if (page_size == 0 || (page_size & (page_size - 1)))
      throw fail(std::nullopt, "page size " + std::to_string(page_size) + " is not a power of two", 4);
    if (num_fields == 0) throw fail(std::nullopt, "no fields", 2);
    if (alloc_table_ptr_ == 0)
      throw fail(std::nullopt, "allocation table pointer is 0: the FFCV writer never finished this file (died before finalize)", 16);
    metadata_offset_ = kHeaderSize + kDescriptorSize * num_fields;
    if (metadata_offset_ > file_size)
      throw fail(std::nullopt, "file too short for its " + std::to_string(num_fields) + " field descriptors", file_size);
    head.resize(static_cast<size_t>(metadata_offset_));  // the header and the field descriptors
    file_.read_at(0, head);
    return head;
  }

  static std::map<std::string, std::string> parse_renames(const SourceOptions& options) {
    std::map<std::string, std::string> rename;
    for (const auto& r : options.get_all("rename")) {
      const auto eq = r.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == r.size()) throw Error(Errc::usage, "--rename wants OLD=NEW, got \"" + r + "\"");
      rename[r.substr(0, eq)] = r.substr(eq + 1);
    }
    return rename;
  }

  // The field descriptors after the header; returns how many are of unknown types (--raw-field).
  size_t parse_descriptors(const std::vector<std::byte>& head, const std::vector<std::string>& raw_fields) {
    const std::byte* h = head.data();
    const uint16_t num_fields = detail::load_le<uint16_t>(h + 2);
    size_t unknown = 0;
    for (uint16_t i = 0; i < num_fields; ++i) {
      const std::byte* d = h + kHeaderSize + kDescriptorSize * i;
      FfcvField f;
      f.type_id = static_cast<uint8_t>(d[0]);
      const char* name = reinterpret_cast<const char*>(d + 1);
      f.name.assign(name, strnlen(name, 16));
      const uint64_t at = kHeaderSize + kDescriptorSize * i;
      switch (f.type_id) {
        case kFloat:
        case kInt:
          f.entry_size = 8;
          f.entry_align = 8;
          break;
        case kImage:
          f.entry_size = 13;
          break;
        case kBytes:
        case kJson:
          f.entry_size = 16;
          break;
        case kNDArray:
        case kTensor:
          f.entry_size = 8;
          f.entry_align = 8;
          parse_array_args(f, d + 17, at + 17);
          break;
        default:
          if (std::find(raw_fields.begin(), raw_fields.end(), f.name) == raw_fields.end())
            throw fail(std::nullopt,
                       "field \"" + f.name + "\" has type id " + std::to_string(f.type_id) +
                           " (a custom FFCV field class); its layout is unknown: use --raw-field " + f.name +
                           " to keep its raw metadata bytes",
                       at);
          f.raw = true;
          ++unknown;
      }
      fields_.push_back(std::move(f));
    }
    return unknown;
  }

  // Metadata table and allocation table bounds: the sample count is checked against the file
  // size before anything is sized by it. Rows of 0 bytes would let any count pass.
  void check_tables(uint64_t file_size) {
    if (row_size_ == 0 && num_samples_ > 0)
      throw fail(std::nullopt, "metadata rows of 0 bytes: the sample count " + std::to_string(num_samples_) + " cannot be checked", 8);
    if (metadata_offset_ > file_size) throw fail(std::nullopt, "metadata table starts past the end of the file", 8);
    if (row_size_ != 0 && num_samples_ > (file_size - metadata_offset_) / row_size_)
      throw fail(std::nullopt,
                 "sample count " + std::to_string(num_samples_) + " does not fit the file (" + std::to_string(file_size) + " bytes)", 8);
    metadata_end_ = metadata_offset_ + num_samples_ * row_size_;
    if (alloc_table_ptr_ < metadata_end_ || alloc_table_ptr_ > file_size)
      throw fail(std::nullopt,
                 "allocation table pointer " + std::to_string(alloc_table_ptr_) + " lies outside [" + std::to_string(metadata_end_) + ", " +
                     std::to_string(file_size) + "] (truncated file?)",
                 16);
    if ((file_size - alloc_table_ptr_) % kAllocEntrySize != 0)
      throw fail(std::nullopt,
                 "allocation table of " + std::to_string(file_size - alloc_table_ptr_) +
                     " bytes is not a whole number of 24-byte entries (truncated file?)",
                 file_size);
  }

  void read_alloc_table(uint64_t file_size) {
    const uint64_t entries = (file_size - alloc_table_ptr_) / kAllocEntrySize;
    // One entry per payload: at most one per sample and field. More is a table that lies (a
    // sparse tail of zeros), refused before it is read or anything is sized by it.
    if (entries / fields_.size() > num_samples_)
      throw fail(std::nullopt,
                 "allocation table of " + std::to_string(entries) + " entries for " + std::to_string(num_samples_) + " samples of " +
                     std::to_string(fields_.size()) + " fields (at most one a payload)",
                 alloc_table_ptr_);
    alloc_.reserve(entries);
    std::vector<std::byte> table;              // read a block of entries at a time
    constexpr uint64_t kBlockEntries = 43690;  // ~1 MiB
    for (uint64_t k = 0; k < entries; ++k) {
      if (k % kBlockEntries == 0) {
        table.resize(static_cast<size_t>(std::min(kBlockEntries, entries - k) * kAllocEntrySize));
        file_.read_at(alloc_table_ptr_ + k * kAllocEntrySize, table);
      }
      const std::byte* e = table.data() + (k % kBlockEntries) * kAllocEntrySize;
      const uint64_t sample = detail::load_le<uint64_t>(e), ptr = detail::load_le<uint64_t>(e + 8),
                     size = detail::load_le<uint64_t>(e + 16);
      if (sample >= num_samples_)
        throw fail(
            std::nullopt,
            "allocation entry " + std::to_string(k) + " names sample " + std::to_string(sample) + " of " + std::to_string(num_samples_),
            alloc_table_ptr_ + k * 24);
      if (size > 0) alloc_.emplace(std::make_pair(sample, ptr), size);
    }
  }

  void build_schema(std::map<std::string, std::string> rename) {
    for (const auto& entry : rename) {
      const std::string& from = entry.first;
      const std::string& to = entry.second;
      if (std::none_of(fields_.begin(), fields_.end(), [&from](const FfcvField& f) { return f.name == from; }))
        throw Error(Errc::usage, "--rename " + detail::escape_for_terminal(from) + "=" + detail::escape_for_terminal(to) +
                                     ": the file has no field \"" + detail::escape_for_terminal(from) + "\"")
            .with_path(path_);
    }
    for (const FfcvField& f : fields_) {
      FieldSpec spec;
      spec.name = rename.count(f.name) ? rename[f.name] : f.name;
      if (f.raw)
        spec.type = FieldType::bytes;
      else
        switch (f.type_id) {
          case kFloat:
            spec.type = FieldType::float64;
            break;
          case kInt:
            spec.type = FieldType::int64;
            break;
          case kImage:
            spec.type = FieldType::image;
            break;
          case kBytes:
            spec.type = FieldType::bytes;
            break;
          case kJson:
            spec.type = FieldType::str;
            break;
          default:
            spec.type = FieldType::ndarray;
            spec.dtype = f.dtype;
            spec.shape = f.shape;
            break;
        }
      if (schema_.find(spec.name))
        throw Error(Errc::bad_input, "two fields named \"" + spec.name + "\" (FFCV truncates names to 16 bytes); use --rename")
            .with_path(path_);
      schema_.fields.push_back(std::move(spec));
    }
  }

  void set_identity(const SourceOptions& options, uint64_t file_size) {
    std::error_code ec;
    const fs::path abs = fs::absolute(path_, ec).lexically_normal();
    identity_.kind = "ffcv";
    identity_.uri = abs.string();
    identity_.default_name = abs.stem().string();
    if (options.get("fingerprint") == std::optional<std::string>("content")) {
      identity_.fingerprint = "sha256:" + file_.sha256_hex();
    } else {
      identity_.fingerprint = "stat:" + std::to_string(file_size) + ":" + std::to_string(detail::unix_mtime_ns(abs));
    }
  }

  // NDArray/TorchTensor arguments: u64 shape[32] (up to the last non-zero), u64 dtype text
  // length, then the dtype text `[["", "<code>"]]`.
  void parse_array_args(FfcvField& f, const std::byte* a, uint64_t at) {
    for (int i = 0; i < 32; ++i) f.shape.push_back(detail::load_le<uint64_t>(a + 8 * i));
    while (!f.shape.empty() && f.shape.back() == 0) f.shape.pop_back();
    const uint64_t len = detail::load_le<uint64_t>(a + 256);
    if (len == 0 || len > 1024 - 264)
      throw fail(std::nullopt, "field \"" + f.name + "\": bad dtype length " + std::to_string(len), at + 256);
    const std::string text(reinterpret_cast<const char*>(a + 264), len);
    try {
      const auto j = detail::parse_json_bounded(text);
      if (!j.is_array() || j.size() != 1 || !j[0].is_array() || j[0].size() != 2 || !j[0][1].is_string())
        throw fail(std::nullopt, "field \"" + f.name + "\": dtype " + text + " is not a single plain type", at + 264);
      f.dtype = j[0][1].get<std::string>();
    } catch (const nlohmann::json::exception&) {
      throw fail(std::nullopt, "field \"" + f.name + "\": dtype text is not JSON", at + 264);
    }
    const uint64_t item = npy_dtype_size(f.dtype);
    if (item == 0) throw fail(std::nullopt, "field \"" + f.name + "\": unsupported dtype " + f.dtype, at + 264);
    uint64_t n = item;
    for (uint64_t d : f.shape) {
      if (d != 0 && n > UINT32_MAX / d) throw fail(std::nullopt, "field \"" + f.name + "\": array shape too large", at);
      n *= d;
    }
    f.array_bytes = n;
  }

  // numpy's aligned-struct rule over the entries. With one raw field of unknown
  // size, its entry spans up to the next field (or the row end, deduced from the file).
  void layout_rows(bool has_raw) {
    uint64_t off = 0, maxalign = 1;
    if (has_raw) {
      if (!alloc_table_ptr_ || num_samples_ == 0 || alloc_table_ptr_ < metadata_offset_)
        throw Error(Errc::usage, "--raw-field: cannot deduce the row size").with_path(path_);
      // Only files without payload pages give the row size exactly: the table ends where the
      // allocation table starts.
      if (file_.size() != alloc_table_ptr_ || (alloc_table_ptr_ - metadata_offset_) % num_samples_)
        throw Error(Errc::usage, "--raw-field works only for files without payloads (row size cannot be deduced)").with_path(path_);
      row_size_ = (alloc_table_ptr_ - metadata_offset_) / num_samples_;
      uint64_t known_after = 0;
      bool seen = false;
      for (const auto& f : fields_) {
        if (f.raw)
          seen = true;
        else if (seen)
          known_after += f.entry_size;
      }
      for (auto& f : fields_) {
        off = (off + f.entry_align - 1) / f.entry_align * f.entry_align;
        f.offset = off;
        if (f.raw) {
          // Fills the gap to the rest; a row too short for the fields after it is malformed
          // (the subtraction would wrap around to a huge size).
          if (off + known_after > row_size_) throw Error(Errc::bad_input, "--raw-field: rows do not add up").with_path(path_);
          f.entry_size = row_size_ - off - known_after;
        }
        off += f.entry_size;
      }
      if (off > row_size_) throw Error(Errc::bad_input, "--raw-field: rows do not add up").with_path(path_);
      return;
    }
    for (auto& f : fields_) {
      off = (off + f.entry_align - 1) / f.entry_align * f.entry_align;
      f.offset = off;
      off += f.entry_size;
      maxalign = std::max(maxalign, f.entry_align);
    }
    row_size_ = (off + maxalign - 1) / maxalign * maxalign;
  }

  struct PairHash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& p) const noexcept {
      return std::hash<uint64_t>()(p.first * 0x9E3779B97F4A7C15ull ^ p.second);
    }
  };

  std::string path_;
  detail::InputFile file_;
  uint64_t max_payload_bytes_;                   // --max-sample-bytes
  mutable std::optional<std::string> oversize_;  // this sample's payload over it (next())
  std::vector<std::byte> rows_;                  // metadata rows rows_first_ .. + rows_count_
  uint64_t rows_first_ = 0, rows_count_ = 0;
  std::vector<FfcvField> fields_;
  Schema schema_;
  SourceIdentity identity_;
  uint64_t num_samples_ = 0, alloc_table_ptr_ = 0, metadata_offset_ = 0, metadata_end_ = 0, row_size_ = 0;
  std::unordered_map<std::pair<uint64_t, uint64_t>, uint64_t, PairHash> alloc_;
  uint64_t next_ = 0;
};

}  // namespace

bool looks_like_ffcv(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".beton" || ext == ".ffcv") return true;
  // No magic number: version 2 (u16 LE) and a plausible header.
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  unsigned char h[8] = {};
  const size_t n = std::fread(h, 1, sizeof h, f);
  std::fclose(f);
  if (n < 8) return false;
  const uint32_t page = h[4] | (h[5] << 8) | (h[6] << 16) | (static_cast<uint32_t>(h[7]) << 24);
  return h[0] == 2 && h[1] == 0 && (h[2] | h[3]) != 0 && page >= 4096 && (page & (page - 1)) == 0;
}

std::unique_ptr<Source> open_ffcv(const std::string& path, const SourceOptions& options) {
  return std::make_unique<FfcvSource>(path, options);
}

}  // namespace slip
