#include "format/cache_writer.hpp"

#include <algorithm>
#include <cstring>

#include "format/layout.hpp"
#include "slip/cache.hpp"
#include "slip/error.hpp"
#include "util/untrusted.hpp"
#include "slip/npy.hpp"
#include "util/file_io.hpp"

namespace slip::detail {

namespace fs = std::filesystem;

struct CacheWriter::Column {
  FieldSpec spec;
  std::unique_ptr<FileWriter> data;      // str: <f>.bin; ndarray: <f>.npy.part, the element bytes
  std::unique_ptr<PlacedWriter> placed;  // image/bytes: <f>.bin
  uint64_t appended_end = 0;             // image/bytes: where the next record must start
  std::vector<MetaRecord> meta;          // image/bytes
  std::vector<uint64_t> offsets;         // str: (offset, length) pairs
  std::vector<uint64_t> sums;            // image/bytes: XXH3-64 per payload
  std::vector<int64_t> ints;
  std::vector<double> floats;
  uint64_t ndarray_sample_bytes = 0;
  uint64_t max_size = 0;
};

namespace {

template <typename T>
std::span<const std::byte> as_bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v.data(), v.size()));
}

// Writes header + data as one .npy and returns (size, checksum).
std::pair<uint64_t, uint64_t> write_npy(const fs::path& path, std::string_view descr, std::vector<uint64_t> shape,
                                        std::span<const std::byte> data) {
  FileWriter w(path);
  w.write(npy_header(descr, shape));
  w.write(data);
  w.close();
  return {w.bytes_written(), w.checksum()};
}

}  // namespace

CacheWriter::CacheWriter(fs::path dir, Schema schema, bool parallel_payloads) : dir_(std::move(dir)), schema_(std::move(schema)) {
  detail::check_schema_names(schema_, "cache");  // every writer, whoever built the schema
  for (const FieldSpec& spec : schema_.fields) {
    auto col = std::make_unique<Column>();
    col->spec = spec;
    if (is_payload_type(spec.type)) {
      // Every payload has its own checksum (<f>.xxh3.npy) and the records tile the file
      // (verify checks both): a whole-file checksum would hash every byte a second time.
      if (parallel_payloads)
        col->placed = std::make_unique<PlacedWriter>(dir_ / field_file(spec.name, FileKind::bin));
      else
        col->data =
            std::make_unique<FileWriter>(dir_ / field_file(spec.name, FileKind::bin), size_t{256} << 10, FileWriter::Checksum::none);
    } else if (spec.type == FieldType::str) {
      col->data = std::make_unique<FileWriter>(dir_ / field_file(spec.name, FileKind::bin));
    } else if (spec.type == FieldType::ndarray) {
      col->data = std::make_unique<FileWriter>(dir_ / (spec.name + ".npy.part"));
      uint64_t elems = 1;
      for (uint64_t d : spec.shape) elems *= d;
      col->ndarray_sample_bytes = elems * npy_dtype_size(spec.dtype);
      if (npy_dtype_size(spec.dtype) == 0)
        throw Error(Errc::bad_input, "field \"" + spec.name + "\": unsupported array dtype " + spec.dtype);
    }
    columns_.push_back(std::move(col));
  }
  // A cache whose every field is 0 bytes a sample could claim any num_samples: Cache::open refuses it.
  if (!columns_.empty() && std::all_of(columns_.begin(), columns_.end(),
                                       [](const auto& c) { return c->spec.type == FieldType::ndarray && c->ndarray_sample_bytes == 0; }))
    throw Error(Errc::bad_input, "field \"" + detail::escape_for_terminal(columns_[0]->spec.name) +
                                     "\": every field holds 0 bytes a sample (empty arrays), so nothing in the cache's files would "
                                     "tie its sample count to them");
}

CacheWriter::~CacheWriter() = default;

void CacheWriter::place(std::span<const Value> values, std::span<uint64_t> offsets) {
  for (size_t i = 0; i < columns_.size() && i < values.size(); ++i)
    if (columns_[i]->placed) offsets[i] = columns_[i]->placed->reserve(values[i].bytes.size());
}

size_t CacheWriter::open_window() {
  window_steps_.clear();
  size_t total = 0;
  for (size_t i = 0; i < columns_.size(); ++i)
    if (columns_[i]->placed) {
      const size_t steps = columns_[i]->placed->open_window();
      window_steps_.emplace_back(i, steps);
      total += steps;
    }
  return total;
}

void CacheWriter::populate(size_t k) const noexcept {
  for (const auto& [column, steps] : window_steps_) {
    if (k < steps) return columns_[column]->placed->populate(k);
    k -= steps;
  }
}

void CacheWriter::write_placed(std::span<const Value> values, std::span<const uint64_t> offsets) const {
  for (size_t i = 0; i < columns_.size() && i < values.size(); ++i)
    if (columns_[i]->placed) columns_[i]->placed->write_at(offsets[i], values[i].bytes);
}

void CacheWriter::close_window() {
  for (auto& c : columns_)
    if (c->placed) c->placed->close_window();
}

void CacheWriter::append_borrowing(std::span<const Value> values, std::span<const uint64_t> payload_sums) {
  std::vector<uint64_t> offsets(columns_.size(), 0);
  for (size_t i = 0; i < columns_.size() && i < values.size(); ++i) {
    Column& c = *columns_[i];
    if (!c.data || !is_payload_type(c.spec.type)) continue;
    offsets[i] = c.data->bytes_written();
    c.data->write_borrowed(values[i].bytes);
  }
  append(values, payload_sums, offsets);
}

void CacheWriter::release_borrowed() {
  for (auto& c : columns_)  // only payload columns borrow; the others keep their small buffers
    if (c->data && is_payload_type(c->spec.type)) c->data->flush();
}

void CacheWriter::append(std::span<const Value> values, std::span<const uint64_t> payload_sums, std::span<const uint64_t> offsets) {
  if (values.size() != columns_.size())
    throw Error(Errc::bad_input,
                "sample has " + std::to_string(values.size()) + " values for " + std::to_string(columns_.size()) + " fields");
  for (size_t i = 0; i < columns_.size(); ++i) {
    Column& c = *columns_[i];
    const Value& v = values[i];
    switch (c.spec.type) {
      case FieldType::image:
      case FieldType::bytes: {
        // The records tile the file in sample order: place() and append() saw the same samples.
        const uint64_t ptr = offsets[i];
        if (ptr != c.appended_end)
          throw Error(Errc::io, "internal error: field \"" + c.spec.name + "\" placed at byte " + std::to_string(ptr) + ", expected " +
                                    std::to_string(c.appended_end));
        c.appended_end += v.bytes.size();
        const bool image = c.spec.type == FieldType::image;
        c.meta.push_back({ptr, v.bytes.size(), image ? v.height : 0u, image ? v.width : 0u});
        c.sums.push_back(payload_sums[i]);
        c.max_size = std::max<uint64_t>(c.max_size, v.bytes.size());
        payload_bytes_ += v.bytes.size();
        break;
      }
      case FieldType::str:
        c.offsets.push_back(c.data->bytes_written());
        c.offsets.push_back(v.bytes.size());
        c.data->write(v.bytes);
        break;
      case FieldType::int64:
        c.ints.push_back(v.int_value);
        break;
      case FieldType::float64:
        c.floats.push_back(v.float_value);
        break;
      case FieldType::ndarray:
        if (v.bytes.size() != c.ndarray_sample_bytes)
          throw Error(Errc::bad_input, "field \"" + c.spec.name + "\": array of " + std::to_string(v.bytes.size()) + " bytes, expected " +
                                           std::to_string(c.ndarray_sample_bytes));
        c.data->write(v.bytes);
        break;
    }
  }
  ++count_;
}

WrittenFiles CacheWriter::finish() {
  WrittenFiles out;
  const uint64_t n = count_;
  for (auto& col : columns_) {
    Column& c = *col;
    const std::string& f = c.spec.name;
    switch (c.spec.type) {
      case FieldType::image:
      case FieldType::bytes: {
        uint64_t bin_size = 0;
        if (c.placed) {
          c.placed->close();
          bin_size = c.placed->bytes_written();
        } else {
          c.data->close();
          bin_size = c.data->bytes_written();
        }
        if (bin_size != c.appended_end)
          throw Error(Errc::io, "internal error: field \"" + f + "\" has bytes placed for samples never appended");
        out.storage_sizes.emplace_back(field_file(f, FileKind::bin), bin_size);
        auto [size, sum] = write_npy(dir_ / field_file(f, FileKind::meta), kMetaRecordDescr, {n}, as_bytes_of(c.meta));
        out.storage_sizes.emplace_back(field_file(f, FileKind::meta), size);
        out.checksums[field_file(f, FileKind::meta)] = sum;
        auto [csize, csum] = write_npy(dir_ / checksum_file(f), "'<u8'", {n}, as_bytes_of(c.sums));
        out.checksums[checksum_file(f)] = csum;
        (void)csize;
        out.max_payload[f] = c.max_size;
        break;
      }
      case FieldType::str: {
        c.data->close();
        out.storage_sizes.emplace_back(field_file(f, FileKind::bin), c.data->bytes_written());
        out.checksums[field_file(f, FileKind::bin)] = c.data->checksum();
        auto [size, sum] = write_npy(dir_ / field_file(f, FileKind::offsets), "'<u8'", {n, 2}, as_bytes_of(c.offsets));
        out.storage_sizes.emplace_back(field_file(f, FileKind::offsets), size);
        out.checksums[field_file(f, FileKind::offsets)] = sum;
        break;
      }
      case FieldType::int64: {
        auto [size, sum] = write_npy(dir_ / field_file(f, FileKind::npy), "'<i8'", {n}, as_bytes_of(c.ints));
        out.storage_sizes.emplace_back(field_file(f, FileKind::npy), size);
        out.checksums[field_file(f, FileKind::npy)] = sum;
        break;
      }
      case FieldType::float64: {
        auto [size, sum] = write_npy(dir_ / field_file(f, FileKind::npy), "'<f8'", {n}, as_bytes_of(c.floats));
        out.storage_sizes.emplace_back(field_file(f, FileKind::npy), size);
        out.checksums[field_file(f, FileKind::npy)] = sum;
        break;
      }
      case FieldType::ndarray: {
        c.data->close();
        const fs::path part = dir_ / (f + ".npy.part");
        std::vector<uint64_t> shape{n};
        shape.insert(shape.end(), c.spec.shape.begin(), c.spec.shape.end());
        FileWriter w(dir_ / field_file(f, FileKind::npy));
        w.write(npy_header("'" + c.spec.dtype + "'", shape));
        {
          MappedFile data(part);
          w.write(data.bytes());
        }
        w.close();
        fs::remove(part);
        out.storage_sizes.emplace_back(field_file(f, FileKind::npy), w.bytes_written());
        out.checksums[field_file(f, FileKind::npy)] = w.checksum();
        break;
      }
    }
  }
  return out;
}

}  // namespace slip::detail
