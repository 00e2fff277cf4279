// Internal: writes the storage files of one cache, sample by sample, in a given directory.
// Memory grows only with the per-sample tables (24 bytes per payload field, 16 per string
// field, 8 per number); payloads are written in place in <f>.bin by the caller's threads.
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
class PlacedWriter;

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
  // `parallel_payloads`: payload bytes are placed and written by the caller's threads (below);
  // otherwise append_borrowing() writes them, in order, on its thread.
  CacheWriter(std::filesystem::path dir, Schema schema, bool parallel_payloads);
  ~CacheWriter();
  CacheWriter(const CacheWriter&) = delete;
  CacheWriter& operator=(const CacheWriter&) = delete;

  // A sample's payload bytes (image and bytes fields) are placed and written in parallel, its
  // records appended in order:
  //  1. place(), in sample order, on one thread: gives each payload field its offset in <f>.bin
  //     (`offsets`, indexed like the schema; other fields' entries are left alone);
  //  2. open_window(), on that thread, then populate(k) for every k below the count it returned,
  //     then write_placed() for each placed sample, both on any threads, in any order, then
  //     close_window() once all are written;
  //  3. append(), in the same sample order, on one thread: one Value per schema field, with the
  //     offsets place() gave. For image fields, Value::height/width must already hold the
  //     stored image's dimensions; `payload_sums` holds the XXH3-64 of each payload field's
  //     bytes (indexed like the schema; ignored for other fields). Other fields are written here.
  // The payload bytes of one sample are written before its records are appended or after, as
  // long as every sample placed is written before finish().
  void place(std::span<const Value> values, std::span<uint64_t> offsets);
  size_t open_window();
  void populate(size_t k) const noexcept;
  void write_placed(std::span<const Value> values, std::span<const uint64_t> offsets) const;
  void close_window();
  void append(std::span<const Value> values, std::span<const uint64_t> payload_sums, std::span<const uint64_t> offsets);
  // Without parallel_payloads: appends one sample and writes its payloads, without copying the
  // bytes: the caller keeps `values` alive and unchanged until release_borrowed().
  void append_borrowing(std::span<const Value> values, std::span<const uint64_t> payload_sums);
  // Hands every borrowed byte to the kernel: the values appended so far may be released.
  void release_borrowed();
  uint64_t count() const noexcept { return count_; }
  uint64_t payload_bytes() const noexcept { return payload_bytes_; }

  // Writes the tables, fsyncs and closes every file.
  WrittenFiles finish();

 private:
  struct Column;
  std::filesystem::path dir_;
  Schema schema_;
  std::vector<std::unique_ptr<Column>> columns_;
  uint64_t count_ = 0;
  uint64_t payload_bytes_ = 0;
  std::vector<std::pair<size_t, size_t>> window_steps_;  // (column, populate steps) of the open window
};

}  // namespace slip::detail
