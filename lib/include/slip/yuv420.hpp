// slip/yuv420.hpp — the YUV420 image payloads of docs/FORMAT.md#yuv420: the conversions
// (slip/yuv420_image.hpp, the image layer), the sibling files inside a JPEG cache (docs/FORMAT.md#yuv420-siblings) and building them.
#pragma once

#include "slip/export.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "slip/cache.hpp"
#include "slip/image.hpp"
#include "slip/yuv420_image.hpp"

#include "slip/runtime.hpp"

SLIP_API_BEGIN
namespace slip {

// "<field>_yuv420": the stem of the sibling files <stem>.bin and <stem>.meta.npy.
std::string yuv420_sibling_stem(std::string_view field);
// The sibling files themselves: {"<field>_yuv420.bin", "<field>_yuv420.meta.npy"}.
std::vector<std::string> yuv420_sibling_files(std::string_view field);

// The sibling YUV420 copy of a JPEG image field (docs/FORMAT.md#yuv420-siblings), memory-mapped. Opening checks
// the .npy header, the record count (the cache's N) and every record against the payload file
// and its dimensions, so payload() never reads out of bounds.
class Yuv420Siblings {
 public:
  // nullopt when either file is missing (the Python loader's rule); throws Error(bad_input)
  // naming the file, the sample and the offset when the files are present but malformed.
  static std::optional<Yuv420Siblings> open(const Cache& cache, std::string_view field);
  ~Yuv420Siblings();
  Yuv420Siblings(Yuv420Siblings&&) noexcept;
  Yuv420Siblings& operator=(Yuv420Siblings&&) noexcept;

  uint64_t size() const noexcept;
  MetaRecord record(uint64_t sample) const;
  std::span<const std::byte> payload(uint64_t sample) const;
  uint64_t payload_bytes() const noexcept;  // size of <stem>.bin
  const std::filesystem::path& bin_path() const noexcept;

 private:
  Yuv420Siblings();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct SiblingOptions {
  std::string field;     // empty: every JPEG image field
  unsigned threads = 0;  // 0: available_cpus()
  bool force = false;    // rebuild even when valid siblings exist
  // Called with (samples converted, total) from the calling thread.
  std::function<void(uint64_t, uint64_t)> progress;
  CancelToken cancel;  // cancel() from any thread stops the conversion (slip/runtime.hpp)
};

struct SiblingResult {
  std::string field;
  uint64_t samples = 0;
  uint64_t bytes = 0;       // size of <stem>.bin
  uint64_t jpeg_bytes = 0;  // size of <field>.bin, for the storage ratio
  bool reused = false;      // valid siblings were already there
  double seconds = 0;
};

// Adds <f>_yuv420.bin + <f>_yuv420.meta.npy beside each JPEG image field of the cache at
// `dir`: every payload decoded once (TurboJPEG; other formats through decode_to_rgb) on all
// threads and converted by rgb_to_yuv420. Files are written under temporary names, fsynced and
// renamed (payloads first, table last, so a crash never leaves a table without its payloads).
// In a slip-written cache both files' XXH3-64 are added to the manifest's checksums. Existing
// siblings with N records (and matching checksums, where recorded) are kept unless `force`.
// Throws Error(usage) when no field qualifies, Error(bad_input) naming the sample when a
// payload does not decode.
std::vector<SiblingResult> add_yuv420_siblings(const std::filesystem::path& dir, const SiblingOptions& options = {});

}  // namespace slip
SLIP_API_END
