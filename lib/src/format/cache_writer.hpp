// Internal: writes the storage files of one cache, sample by sample, in a given directory.
// Memory grows only with the per-sample tables (24 bytes per payload field, 16 per string
// field, 8 per number); payloads stream straight to <f>.bin.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "slip/schema.hpp"

namespace slip::detail {

class FileWriter;

struct WrittenFiles {
  // Storage files of every field in field order (main file, then table) -> size; this is the
  // manifest's "file_sizes".
  std::vector<std::pair<std::string, uint64_t>> storage_sizes;
  // Every file written (storage and slip's extras) -> XXH3-64.
  std::map<std::string, uint64_t> checksums;
  std::map<std::string, uint64_t> max_payload;  // payload field -> largest data_size
};

class CacheWriter {
 public:
  CacheWriter(std::filesystem::path dir, Schema schema);
  ~CacheWriter();
  CacheWriter(const CacheWriter&) = delete;
  CacheWriter& operator=(const CacheWriter&) = delete;

  // Appends one sample: one Value per schema field. For image fields, Value::height/width
  // must already hold the stored image's dimensions. `payload_sums` holds the XXH3-64 of each
  // payload field's bytes (indexed like the schema; ignored for other fields).
  void append(std::span<const Value> values, std::span<const uint64_t> payload_sums);
  // As append, without copying the payload bytes: the caller keeps `values` alive and
  // unchanged until release_borrowed() (a conversion's batch, released once written).
  void append_borrowing(std::span<const Value> values, std::span<const uint64_t> payload_sums);
  // Hands every borrowed byte to the kernel: the values appended so far may be released.
  void release_borrowed();
  uint64_t count() const noexcept { return count_; }
  uint64_t payload_bytes() const noexcept { return payload_bytes_; }

  // Writes the tables, fsyncs and closes every file.
  WrittenFiles finish();

 private:
  struct Column;
  void append(std::span<const Value> values, std::span<const uint64_t> payload_sums, bool borrow);
  std::filesystem::path dir_;
  Schema schema_;
  std::vector<std::unique_ptr<Column>> columns_;
  uint64_t count_ = 0;
  uint64_t payload_bytes_ = 0;
};

}  // namespace slip::detail
