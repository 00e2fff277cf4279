// slip/convert.hpp — turning any Source into a cache, atomically and idempotently.
#pragma once

#include "slip/export.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "slip/cache.hpp"
#include "slip/image.hpp"
#include "slip/source.hpp"

SLIP_API_BEGIN
namespace slip {

enum class NonJpegPolicy { transcode, keep, fail };
enum class OnError { fail, skip };
// How image fields are stored: the encoded files (JPEG, verbatim where possible), or decoded
// planar YUV 4:2:0 pixels (docs/FORMAT.md#yuv420-conversion; larger, but no entropy decoding when training).
enum class StoredFormat { jpeg, yuv420 };

// One slice of a conversion split across a job array: the index-th of `count` contiguous
// slices by sample index, [floor(i*S/count), floor((i+1)*S/count)).
struct ShardSpec {
  uint64_t index = 0;
  uint64_t count = 1;
  // --shard auto: the SLURM array variables it came from. The first task to run records the
  // split (count and first task id) in the work directory (array.json); a resubmitted subset
  // of the array (--array=1, --array=1,7) keeps that numbering instead of its own.
  bool automatic = false;
  uint64_t task_id = 0, task_min = 0;
};
// The most parts a conversion may be split into: SLURM's largest job array (MaxArraySize is at
// most 4,000,001). More is a mistake or a forged number, and `ls`/`merge --status` list every part.
inline constexpr uint64_t kMaxShardCount = 4'000'001;
// Parses "I/N" or "auto" (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN of SLURM_ARRAY_TASK_COUNT,
// looked up in `env`). Throws Error(usage).
ShardSpec parse_shard(const std::string& text, const Environment& env = {});

// ConvertOptions::parallel_writes takes effect from this many threads up.
inline constexpr unsigned kParallelWriteThreads = 8;

struct ConvertOptions {
  std::filesystem::path output_dir;                   // required (the slip command: -o, else default_cache_root())
  std::string name;                                   // empty: the source's default name
  unsigned threads = 0;                               // 0: available_cpus()
  bool force = false;                                 // rebuild even when a complete cache exists
  NonJpegPolicy non_jpeg = NonJpegPolicy::transcode;  // jpeg storage only
  // yuv420: every image is decoded once (TurboJPEG; other formats as decode_to_rgb) and stored
  // as its exact YUV420 payload (docs/FORMAT.md#yuv420-conversion); the cache is named <name>-yuv420-<id8> and its content id
  // differs from the JPEG cache's of the same source.
  StoredFormat image_format = StoredFormat::jpeg;
  // jpeg storage: every stored JPEG re-encoded losslessly (same DCT coefficients, so the same
  // pixels from any decoder) with a restart marker every few MCUs of a row, so that the decode
  // engine entropy-decodes only the part of an image under a crop (docs/FORMAT.md#restart-markers).
  // A JPEG libjpeg reports anything about is stored as it came. A byte-affecting option.
  bool jpeg_restarts = false;
  OnError on_error = OnError::fail;
  // A conversion that leaves no sample (an empty source, or every sample skipped) is an error
  // (Error(bad_input)) unless this is set. Part caches of a job array may always be empty.
  bool allow_empty = false;
  // Images whose header claims more pixels are refused (decompression bombs). Decoding is
  // refused above kDecodePixelLimit whatever this says (slip/image.hpp).
  uint64_t max_image_pixels = kDefaultMaxImagePixels;
  // Sample bytes held between reading and writing (read ahead, being prepared, being written);
  // one sample larger than a quarter of it still goes through, alone.
  uint64_t max_bytes_in_flight = uint64_t{256} << 20;
  // From kParallelWriteThreads threads up, the workers write the payloads through a shared
  // mapping of each .bin instead of one writer thread appending them; the cache is the same,
  // byte for byte. Off until measured where it pays (docs/PERFORMANCE.md "Parallel writes").
  // The slip command sets it from --parallel-writes or SLIP_PARALLEL_WRITES=1; the library
  // never reads the variable.
  bool parallel_writes = false;
  ProgressCallback progress;  // called from the writing thread
  CancelToken cancel;         // cancel() from any thread stops the conversion (slip/runtime.hpp)
  // The manifest's "created" time, seconds since the epoch; default now. The slip command
  // passes SOURCE_DATE_EPOCH when set, for byte-identical manifests (reproducible builds).
  std::optional<int64_t> created;
  // Convert only this slice, as a part cache in <output_dir>/<name>-<id8>.parts/ (merge_parts
  // joins them into the cache a single process would write).
  std::optional<ShardSpec> shard;
  // The settings the source was opened with. Those that change the cache's bytes (renames,
  // field choices, limits; see canonical_options) go into the content id, so a cache built
  // with other options is never returned as this one.
  SourceOptions source_options;
};

// The options that change the bytes of a cache, canonical and sorted: "key=value" lines
// (convert's non-default --non-jpeg, --on-error, --max-image-pixels, --jpeg-restarts; the source's --rename,
// --fields, --field, --raw-field, --layout, --image-field, --label-field, --missing,
// --max-sample-bytes, --allow-truncated). Empty for the defaults. Threads, progress, download
// and network settings never appear: they do not change the bytes.
std::string canonical_options(const ConvertOptions& options);

struct ConvertResult {
  std::filesystem::path cache_path;
  std::string content_id;  // 64 hex digits
  bool reused = false;     // an identical complete cache already existed (counts and ledger are then the stored ones)
  // When reused: what was checked before the cache was taken as complete (its payloads are not
  // read: `slip verify` checks them). A cache there that fails these checks is converted again.
  std::string reuse_checked;
  std::string options;  // canonical_options(): the byte-affecting options, recorded in the manifest
  uint64_t source_samples = 0, written = 0, skipped = 0;
  uint64_t transcoded = 0;  // samples with a transcoded field (the ledger has one entry per field)
  uint64_t bytes_written = 0;
  bool parallel_writes = false;  // the workers wrote the payloads (parallel_writes asked for, enough threads)
  double seconds = 0;
  // Busy seconds of each pipeline stage (they overlap, so they may add up to more than
  // `seconds`): reading the source, preparing (parse, checksum, transcode; on all threads, wall
  // time), writing. The stage whose busy time is closest to `seconds` bounds the run.
  struct StageSeconds {
    double read = 0, prepare = 0, write = 0;
  } stage_seconds;
  std::vector<LedgerEntry> ledger;
};

// SHA-256 over kind, normalised URI, fingerprint and "slipstream-v1" (docs/FORMAT.md), and
// the stored format when it is not JPEG.
std::string content_id(const SourceIdentity& identity, StoredFormat format = StoredFormat::jpeg);
// ... and with the canonical byte-affecting options (empty: the same id as above).
std::string content_id(const SourceIdentity& identity, const ConvertOptions& options);
// "<name>-<id8>.slipstream"
std::string cache_dir_name(const std::string& name, const std::string& content_id);

// Where convert() would write this source with these options (a part cache under
// <name>-<id8>.parts/ when options.shard is set); nothing is read or written.
std::filesystem::path planned_cache_path(const Source& source, const ConvertOptions& options);

// Throws Error(usage) naming both when `output_dir` is a local source directory or inside one
// (an ImageFolder would list the caches as a class the next time). Remote sources and files
// (tar shards) are not checked. Links are resolved on both sides.
void check_output_outside_sources(const std::vector<std::string>& sources, const std::filesystem::path& output_dir);

// Streams `source` into <output_dir>/<name>-<id8>.slipstream. Writes into a hidden temporary
// directory beside it and renames it into place only when complete and fsynced; any error or
// interruption removes the temporary directory. Throws slip::Error.
ConvertResult convert(Source& source, const ConvertOptions& options);

}  // namespace slip
SLIP_API_END
