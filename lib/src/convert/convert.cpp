// convert(): source -> cache. Samples are read in order, prepared in parallel (format
// sniffing, SOF parsing, transcoding, checksums), placed in order and written in parallel, and
// their records appended in order by one writer.
#include "slip/convert.hpp"

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "format/cache_writer.hpp"
#include "format/layout.hpp"
#include "format/manifest_io.hpp"
#include "format/staging.hpp"
#include "convert/manifest_build.hpp"
#include "image/jpeg_restarts.hpp"
#include <limits>
#include <exception>
#include <atomic>
#include <mutex>
#include <thread>
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/image.hpp"
#include "slip/runtime.hpp"
#include "slip/remote.hpp"
#include "slip/yuv420.hpp"
#include "sources/listing_check.hpp"
#include "util/untrusted.hpp"
#include "util/file_io.hpp"
#include "util/bounded_queue.hpp"
#include "util/cancel.hpp"
#include "util/worker_pool.hpp"
#include "util/log.hpp"

namespace slip {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {
fs::path output_root(const ConvertOptions& options) {
  if (options.output_dir.empty()) throw Error(Errc::usage, "no output directory (ConvertOptions::output_dir is empty)");
  check_output_outside_caches(options.output_dir, "the output directory");  // (subset -o CACHE once wrote a cache into it)
  return options.output_dir;
}
}  // namespace

std::string content_id(const SourceIdentity& id, StoredFormat format) {
  Sha256 h;
  h.update(id.kind);
  h.update("\n");
  h.update(id.uri);
  h.update("\n");
  h.update(id.fingerprint);
  h.update("\n");
  h.update(detail::kContentIdSalt);
  if (format == StoredFormat::yuv420) h.update("\nimage_format=yuv420");
  return h.hex_digest();
}

std::string canonical_options(const ConvertOptions& options) {
  std::vector<std::string> lines;
  if (options.non_jpeg != NonJpegPolicy::transcode)
    lines.push_back(std::string("non-jpeg=") + (options.non_jpeg == NonJpegPolicy::keep ? "keep" : "fail"));
  if (options.on_error != OnError::fail) lines.push_back("on-error=skip");
  if (options.jpeg_restarts && options.image_format == StoredFormat::jpeg) lines.push_back("jpeg-restarts=1");
  if (options.max_image_pixels != ConvertOptions{}.max_image_pixels)
    lines.push_back("max-image-pixels=" + std::to_string(options.max_image_pixels));
  // Source settings that change which samples or bytes are stored, in the order given where
  // order matters (repeatable flags keep theirs; different keys are sorted below).
  static const char* const kByteAffecting[] = {"rename",      "fields",      "field",   "raw-field",        "layout",
                                               "image-field", "label-field", "missing", "max-sample-bytes", "allow-truncated"};
  for (const char* key : kByteAffecting) {
    const auto values = options.source_options.get_all(key);
    if (values.empty()) continue;
    std::string joined;
    for (const auto& v : values) joined += (joined.empty() ? "" : ",") + v;
    lines.push_back(std::string(key) + "=" + joined);
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::string content_id(const SourceIdentity& id, const ConvertOptions& options) {
  const std::string canonical = canonical_options(options);
  if (canonical.empty()) return content_id(id, options.image_format);
  Sha256 h;
  h.update(content_id(id, options.image_format));
  h.update("\noptions\n");
  h.update(canonical);
  return h.hex_digest();
}

std::string cache_dir_name(const std::string& name, const std::string& id) {
  return name + "-" + id.substr(0, 8) + std::string(detail::kCacheSuffix);
}

namespace {

// What preparing one sample produced.
struct Prepared {
  std::vector<uint64_t> sums;
  std::vector<uint64_t> offsets;  // where each payload field's bytes go in its .bin (CacheWriter::place)
  std::optional<std::string> problem;
  std::string problem_field;
  // (field, reason): each transcoded field with its own reason (a sample may hold a CMYK
  // JPEG in one field and raw pixels in another).
  std::vector<std::pair<std::string, std::string>> transcoded;
};

// Non-JPEG pixels kept loadable: re-encoded as an RGB JPEG, quality 100.
void store_as_jpeg(Value& v, const RgbImage& rgb) {
  const std::vector<std::byte> jpeg = encode_rgb_jpeg(rgb, 100);
  v.bytes.assign(jpeg.begin(), jpeg.end());
  v.width = rgb.width;
  v.height = rgb.height;
  v.raw_channels = 0;
  v.raw_description.clear();
}

// YUV420 storage: decode (or take the raw pixels), convert exactly as docs/FORMAT.md#yuv420-conversion.
void store_as_yuv420(Value& v, const RgbImage& rgb) {
  const Yuv420Image yuv = rgb_to_yuv420(rgb);
  v.bytes.assign(yuv.planes.begin(), yuv.planes.end());
  v.width = yuv.width;
  v.height = yuv.height;
  v.raw_channels = 0;
  v.raw_description.clear();
}

// --jpeg-restarts: the stored JPEG re-encoded with restart markers, when libjpeg takes it cleanly.
void add_restarts(Value& v) {
  if (std::optional<std::vector<std::byte>> reencoded = detail::reencode_with_restarts(v.bytes))
    v.bytes.assign(reencoded->begin(), reencoded->end());
}

// THE way pixels that were not a JPEG (PNG, CMYK, raw pixels) are stored: as the cache's image
// format asks, and always with a `transcoded` ledger entry saying what the source was and what
// became of it (docs/FORMAT.md#ledger: every sample not stored as it came). No path may store
// them without the entry: a YUV420 conversion once returned before adding it.
// `raw`: the source gave pixels (FFCV raw, LitData pil), not an encoded file.
void store_pixels(Value& v, const RgbImage& rgb, bool to_yuv420, bool restarts, bool raw, const std::string& what, Prepared& out,
                  const std::string& field) {
  if (to_yuv420) {
    store_as_yuv420(v, rgb);
    out.transcoded.emplace_back(field, what + (raw ? " converted to YUV420" : " decoded to RGB and stored as YUV420"));
    return;
  }
  store_as_jpeg(v, rgb);
  if (restarts) add_restarts(v);
  out.transcoded.emplace_back(field, what + (raw ? " encoded as RGB JPEG q100" : " re-encoded as RGB JPEG q100"));
}

void prepare_image(Value& v, NonJpegPolicy policy, bool to_yuv420, bool restarts, uint64_t max_pixels, Prepared& out,
                   const std::string& field) {
  auto problem = [&](std::string why) {
    out.problem = std::move(why);
    out.problem_field = field;
  };
  if (v.raw_channels != 0) {
    // Raw pixels from the source (FFCV raw mode, LitData pil): there is nothing to keep
    // verbatim that a JPEG loader could read, so keep and transcode both encode.
    if (policy == NonJpegPolicy::fail) return problem("raw-pixel image and --non-jpeg fail");
    const uint64_t c = v.raw_channels;
    if ((c != 1 && c != 3 && c != 4) || v.width == 0 || v.height == 0 || v.bytes.size() != uint64_t{v.width} * v.height * c)
      return problem("raw-pixel image of " + std::to_string(v.bytes.size()) + " bytes does not match " + std::to_string(v.width) + "x" +
                     std::to_string(v.height) + "x" + std::to_string(c));
    RgbImage rgb;
    rgb.width = v.width;
    rgb.height = v.height;
    rgb.pixels.resize(uint64_t{v.width} * v.height * 3);
    const auto* src = reinterpret_cast<const uint8_t*>(v.bytes.data());
    for (uint64_t i = 0, n = uint64_t{v.width} * v.height; i < n; ++i)
      for (uint64_t k = 0; k < 3; ++k) rgb.pixels[i * 3 + k] = src[i * c + (c == 1 ? 0 : k)];
    // The source's own description (a pil mode, FFCV raw) says what the pixels were before it
    // made them 1, 3 or 4 channels; `c` alone would hide a CMYK or RGBX source.
    const std::string what = !v.raw_description.empty() ? v.raw_description
                             : c == 1                   ? "raw 1-channel (grey) pixels"
                             : c == 3                   ? "raw 3-channel (RGB) pixels"
                                                        : "raw 4-channel (RGBA, alpha dropped) pixels";
    return store_pixels(v, rgb, to_yuv420, restarts, true, what, out, field);
  }
  if (v.bytes.empty()) return problem("empty image (0 bytes)");
  const ImageFormat format = sniff_image_format(v.bytes);
  std::string why_not_jpeg;
  if (format == ImageFormat::jpeg) {
    JpegHeader h;
    if (!parse_jpeg_header(v.bytes, h)) return problem("not a valid JPEG: no frame header (SOF) found");
    if (h.width == 0 || h.height == 0) return problem("JPEG frame header gives a zero dimension");
    if (uint64_t{h.width} * h.height > max_pixels)
      return problem("image of " + std::to_string(h.width) + "x" + std::to_string(h.height) + " pixels exceeds --max-image-pixels " +
                     std::to_string(max_pixels) + " (decompression bomb?)");
    if (!jpeg_has_eoi_after(v.bytes, h.sof_offset)) return problem("truncated JPEG: no end-of-image marker after the frame");
    if (v.height != 0 && (v.height != h.height || v.width != h.width))
      return problem("source says " + std::to_string(v.width) + "x" + std::to_string(v.height) + " but the JPEG is " +
                     std::to_string(h.width) + "x" + std::to_string(h.height));
    // A CMYK JPEG is converted below like any non-JPEG source (with its ledger entry), also
    // into YUV420. Other JPEGs becoming YUV420 is the cache's declared format (image_format,
    // slip.options): recorded once, not per sample.
    if (to_yuv420 && h.components != 4) {
      try {
        return store_as_yuv420(v, decode_to_rgb(v.bytes));
      } catch (const Error& e) {
        if (e.code() != Errc::bad_input) throw;  // an I/O error or an interruption is not the sample's fault
        return problem("JPEG that does not decode: " + e.message());
      }
    }
    if (h.components != 4) {
      v.width = h.width;
      v.height = h.height;
      if (restarts) add_restarts(v);
      return;
    }
    why_not_jpeg = "CMYK JPEG (TurboJPEG cannot decode it to RGB)";
  } else if (format == ImageFormat::unknown) {
    return problem("not an image (unrecognised leading bytes)");
  } else {
    why_not_jpeg = std::string(image_format_name(format)) + " image";
  }
  if (to_yuv420) policy = NonJpegPolicy::transcode;  // pixels are stored whatever the source format
  switch (policy) {
    case NonJpegPolicy::fail:
      return problem(why_not_jpeg + " and --non-jpeg fail");
    case NonJpegPolicy::keep: {
      const ImageSize size = probe_image_size(v.bytes);
      v.width = size.width;
      v.height = size.height;
      return;
    }
    case NonJpegPolicy::transcode: {
      // Every format's header (GIF, BMP and PNM too), before a decoder allocates for it.
      if (const ImageSize size = declared_image_size(v.bytes); uint64_t{size.width} * size.height > max_pixels)
        return problem("image of " + std::to_string(size.width) + "x" + std::to_string(size.height) +
                       " pixels exceeds --max-image-pixels " + std::to_string(max_pixels) + " (decompression bomb?)");
      try {
        store_pixels(v, decode_to_rgb(v.bytes), to_yuv420, restarts, false, why_not_jpeg, out, field);
      } catch (const Error& e) {
        if (e.code() != Errc::bad_input) throw;
        return problem(why_not_jpeg + " that does not decode: " + e.message());
      }
      return;
    }
  }
}

void prepare(Sample& s, const Schema& schema, NonJpegPolicy policy, bool restarts, uint64_t max_pixels, Prepared& out) {
  // An image field's stored format travels in its FieldSpec (set by convert()).
  out = Prepared{};
  out.sums.assign(schema.fields.size(), 0);
  if (s.skip) return;
  if (s.problem) {
    out.problem = s.problem;
    return;
  }
  for (size_t f = 0; f < schema.fields.size(); ++f) {
    Value& v = s.values[f];
    const FieldSpec& spec = schema.fields[f];
    if (v.missing) {
      out.problem = "no value for field \"" + spec.name + "\"";
      out.problem_field = spec.name;
      return;
    }
    if (spec.type == FieldType::image) {
      prepare_image(v, policy, spec.image_format == "yuv420", restarts, max_pixels, out, spec.name);
      if (out.problem) return;
    }
    // A str field must read back as text in numpy and the Python loader (UTF-8 decode).
    if (spec.type == FieldType::str &&
        !detail::is_valid_utf8(std::string_view(reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size()))) {
      out.problem = "field \"" + spec.name + "\" is not valid UTF-8 text (keep such values as bytes: --field EXT=bytes)";
      out.problem_field = spec.name;
      return;
    }
    if (is_payload_type(spec.type)) out.sums[f] = xxh3_64(v.bytes);
  }
}

// The default name comes from the source (a directory or file name: untrusted bytes). It is
// made a safe, single-line file name: control characters, invalid UTF-8 and separators
// become '_', leading dots go, and it is cut to 100 bytes at a character boundary, so the
// path printed as the last stdout line is always one line and always inside the output root.
std::string safe_default_name(std::string_view source_name) {
  // Non-ASCII is kept only when the whole name is printable UTF-8 (no C1 controls).
  const bool keep_utf8 = detail::is_valid_utf8(source_name) && detail::escape_for_terminal(source_name).size() == source_name.size();
  std::string out;
  for (const char ch : source_name) {
    const auto c = static_cast<unsigned char>(ch);
    const bool bad = c < 0x20 || c == 0x7F || c == '/' || c == '\\' || (c >= 0x80 && !keep_utf8);
    out += bad ? '_' : ch;
  }
  while (!out.empty() && out.front() == '.') out.erase(0, 1);
  if (out.size() > 100) {
    size_t cut = 100;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
  }
  return out.empty() ? std::string("dataset") : out;
}

std::string default_cache_name(const SourceIdentity& identity, const ConvertOptions& options) {
  const std::string base = safe_default_name(identity.default_name);
  return options.image_format == StoredFormat::yuv420 ? base + "-yuv420" : base;
}

}  // namespace

// The cache's name: --name (checked by the file-stem rule) or the source's safe default.
std::string checked_cache_name(const SourceIdentity& identity, const ConvertOptions& options) {
  std::string name = options.name.empty() ? default_cache_name(identity, options) : options.name;
  if (const std::string problem = detail::file_stem_problem(name); !problem.empty())
    throw Error(Errc::usage, "invalid cache name \"" + detail::escape_for_terminal(name) + "\": " + problem);
  return name;
}

fs::path planned_cache_path(const Source& source, const ConvertOptions& options) {
  const SourceIdentity identity = source.identity();
  detail::check_schema_names(source.schema(), identity.kind);  // the same refusal as convert()
  const std::string id = content_id(identity, options);
  const std::string name = checked_cache_name(identity, options);
  const fs::path root = output_root(options);
  const std::string whole = cache_dir_name(name, id);
  if (!options.shard) return root / whole;
  const fs::path workdir = root / (whole.substr(0, whole.size() - detail::kCacheSuffix.size()) + ".parts");
  ShardSpec shard = *options.shard;
  detail::resolve_auto_shard(workdir, shard);
  const detail::PartInfo part = detail::plan_part(source, shard, id);
  return workdir / part.dir_name();
}

namespace {

// The conversion pipeline: a reader thread pulls samples from the source (which itself keeps
// --io-depth reads in flight) into batches; the calling thread prepares each batch on the
// worker threads (parse, checksum, transcode), places its payloads in sample order and has the
// workers write them in place; a writer thread appends the records in sample order.
// The three stages overlap, connected by bounded queues. The sample bytes held by all stages
// together (read ahead, being prepared, waiting for and being written) stay under
// options.max_bytes_in_flight plus one sample: the reader waits for room before reading, and
// ends its batch early when the budget is spent, so one sample larger than the budget still goes
// through, alone. Memory does not depend on image sizes; the output not on the thread count.
struct Batch {
  std::vector<Sample> samples;
  std::vector<Prepared> prepared;
  size_t count = 0;
  uint64_t bytes = 0;  // sample bytes held, released to the budget once written
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The three stages of run_pipeline() and what they share.
struct ConvertPipeline {
  Source& source;
  const Schema& schema;
  const ConvertOptions& options;
  unsigned threads;
  bool parallel;
  uint64_t remaining;
  detail::CacheWriter& writer;
  ConvertResult& result;
  const size_t batch_size = std::max<size_t>(64, threads * 32);
  const uint64_t batch_bytes_limit = std::max<uint64_t>(options.max_bytes_in_flight / 4, 1);
  detail::BoundedQueue<Batch> read_queue{2}, write_queue{1}, free_batches{8};
  detail::ByteBudget budget{std::max<uint64_t>(options.max_bytes_in_flight, 1)};
  std::exception_ptr error;
  std::mutex error_mutex;
  const std::atomic<bool>* cancel = detail::current_cancel_flag();
  ProgressUpdate progress;

  ConvertPipeline(Source& source_, const Schema& schema_, const ConvertOptions& options_, unsigned threads_, bool parallel_,
                  uint64_t remaining_, detail::CacheWriter& writer_, ConvertResult& result_)
      : source(source_),
        schema(schema_),
        options(options_),
        threads(threads_),
        parallel(parallel_),
        remaining(remaining_),
        writer(writer_),
        result(result_) {}

  void fail(std::exception_ptr e) {
    {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::move(e);
    }
    read_queue.abort();
    write_queue.abort();
    free_batches.abort();
    budget.abort();
  }

  // The reader thread: samples from the source into batches, within the byte budget.
  void read_stage() {
    const detail::CancelScope scope(cancel);
    try {
      bool more = true;
      while (more) {
        throw_if_interrupted();
        Batch batch = free_batches.try_pop().value_or(Batch{});
        batch.samples.resize(batch_size);
        batch.prepared.resize(batch_size);
        batch.count = 0;
        batch.bytes = 0;
        if (!budget.wait_for_room()) return;
        const auto t = std::chrono::steady_clock::now();
        while (batch.count < batch_size && remaining > 0 && batch.bytes < batch_bytes_limit && !(batch.count > 0 && budget.full()) &&
               (more = source.next(batch.samples[batch.count]))) {
          uint64_t bytes = 0;
          for (const Value& v : batch.samples[batch.count].values) bytes += v.bytes.size();
          batch.bytes += bytes;
          budget.add(bytes);
          ++batch.count;
          --remaining;
        }
        result.stage_seconds.read += seconds_since(t);
        if (remaining == 0) more = false;
        if (batch.count > 0 && !read_queue.push(std::move(batch))) return;
      }
      read_queue.close();
    } catch (...) {
      fail(std::current_exception());
    }
  }

  // One prepared batch's records (and, not in parallel mode, payloads) appended in sample order,
  // with the ledger and counts.
  void append_batch(Batch& batch) {
    for (size_t i = 0; i < batch.count; ++i) {
      Sample& s = batch.samples[i];
      Prepared& p = batch.prepared[i];
      ++result.source_samples;
      if (s.skip) {
        result.ledger.push_back({s.source_index, std::nullopt, s.origin, "", "skipped", *s.skip});
        ++result.skipped;
        continue;
      }
      if (p.problem) {  // (in parallel mode the placing thread has thrown already)
        if (options.on_error == OnError::fail) throw Error(Errc::bad_input, *p.problem).with_path(s.origin).with_sample(s.source_index);
        result.ledger.push_back({s.source_index, std::nullopt, s.origin, p.problem_field, "skipped", *p.problem});
        ++result.skipped;
        continue;
      }
      for (const auto& [field, why] : s.filled) result.ledger.push_back({s.source_index, writer.count(), s.origin, field, "filled", why});
      // The ledger has an entry per transcoded field; the count is of samples (as written
      // and skipped are), so "N samples written, M transcoded" never has M > N.
      for (const auto& [field, why] : p.transcoded)
        result.ledger.push_back({s.source_index, writer.count(), s.origin, field, "transcoded", why});
      if (!p.transcoded.empty()) ++result.transcoded;
      if (parallel)
        writer.append(s.values, p.sums, p.offsets);
      else
        writer.append_borrowing(s.values, p.sums);
    }
  }

  // The writer thread: batches appended in order, their buffers then handed back to the reader.
  void write_stage() {
    const detail::CancelScope scope(cancel);
    try {
      while (auto batch = write_queue.pop()) {
        throw_if_interrupted();
        const auto t = std::chrono::steady_clock::now();
        append_batch(*batch);
        if (!parallel) writer.release_borrowed();  // before the batch's bytes are released
        result.stage_seconds.write += seconds_since(t);
        progress.done = result.source_samples;
        progress.bytes = writer.payload_bytes();
        if (options.progress) options.progress(progress);
        // The batch's buffers are reused by the reader; their sample bytes are released now.
        for (size_t i = 0; i < batch->count; ++i) {
          for (Value& v : batch->samples[i].values) Bytes().swap(v.bytes);
          batch->prepared[i] = Prepared{};
        }
        budget.release(batch->bytes);
        free_batches.push(std::move(*batch));
      }
    } catch (...) {
      fail(std::current_exception());
    }
  }

  // Parallel mode: payloads are placed here, in sample order (the sizes are known once
  // prepared), and each worker copies the bytes of its samples into place itself, so no one
  // thread copies them all; with -j 1, this thread writes them, in order. The writer thread
  // appends the records.
  void place_and_write(Batch& batch, detail::WorkerPool& pool) {
    for (size_t i = 0; i < batch.count; ++i) {
      Sample& s = batch.samples[i];
      Prepared& p = batch.prepared[i];
      if (s.skip) continue;
      if (p.problem) {
        if (options.on_error == OnError::fail) throw Error(Errc::bad_input, *p.problem).with_path(s.origin).with_sample(s.source_index);
        continue;
      }
      p.offsets.assign(schema.fields.size(), 0);
      writer.place(s.values, p.offsets);
    }
    if (const size_t steps = writer.open_window()) pool.run(steps, [&](unsigned, size_t k) { writer.populate(k); });
    pool.run(batch.count, [&](unsigned, size_t i) {
      if (!batch.prepared[i].offsets.empty()) writer.write_placed(batch.samples[i].values, batch.prepared[i].offsets);
    });
    writer.close_window();
  }

  // The calling thread: each batch prepared on the workers (parse, checksum, transcode).
  // Returns the seconds spent placing and writing payloads (parallel mode).
  double prepare_stage() {
    double write_seconds = 0;  // the placing and parallel writing of the payloads, on this thread's pool
    try {
      // One pool for the whole run: parallel_for would start and join its threads per batch.
      detail::WorkerPool pool(threads);
      while (auto batch = read_queue.pop()) {
        throw_if_interrupted();
        auto t = std::chrono::steady_clock::now();
        pool.run(batch->count, [&](unsigned, size_t i) {
          const detail::CancelScope scope(cancel);
          prepare(batch->samples[i], schema, options.non_jpeg, options.jpeg_restarts, options.max_image_pixels, batch->prepared[i]);
        });
        result.stage_seconds.prepare += seconds_since(t);
        if (!parallel) {
          if (!write_queue.push(std::move(*batch))) break;
          continue;
        }
        t = std::chrono::steady_clock::now();
        place_and_write(*batch, pool);
        write_seconds += seconds_since(t);
        if (!write_queue.push(std::move(*batch))) break;
      }
      write_queue.close();
    } catch (...) {
      fail(std::current_exception());
    }
    return write_seconds;
  }
};

void run_pipeline(Source& source, const Schema& schema, const ConvertOptions& options, unsigned threads, bool parallel, uint64_t remaining,
                  detail::CacheWriter& writer, ConvertResult& result) {
  ConvertPipeline p(source, schema, options, threads, parallel, remaining, writer, result);
  p.progress.total = remaining == std::numeric_limits<uint64_t>::max() ? source.size() : std::optional<uint64_t>(remaining);
  std::thread reader([&p] { p.read_stage(); });
  std::thread writer_thread([&p] { p.write_stage(); });
  const double write_seconds = p.prepare_stage();
  reader.join();
  writer_thread.join();
  result.stage_seconds.write += write_seconds;
  if (p.error) std::rethrow_exception(p.error);
}

// Reuses the cache at `dir` when it is complete (detail::reuse_problem: manifest checksum, file
// sizes, the tables' checksums; not the payloads), filling `result` with what it holds. A cache
// there that does not pass is converted again (the new one replaces it), with a warning saying
// why: a user who runs convert wants a cache that loads, not the damaged one returned.
bool reuse_existing(const fs::path& dir, const std::string& id, ConvertResult& result) {
  std::error_code ec;
  if (!fs::exists(dir / detail::kManifestName, ec)) return false;
  if (const std::string problem = detail::reuse_problem(dir, id); !problem.empty()) {
    detail::warn("{}: the cache there is damaged ({}); converting it again", detail::escape_for_terminal(dir.string()), problem);
    return false;
  }
  // Report what the cache holds, not what this run did (it did nothing).
  result.reused = true;
  result.cache_path = dir;
  result.content_id = id;
  result.reuse_checked = std::string(detail::kReuseChecks);
  const std::string manifest_text = detail::read_text_file(dir / detail::kManifestName, detail::Open::cache_file);  // I/O stays I/O
  try {
    const auto manifest = detail::parse_json_bounded(manifest_text);
    const auto& slip = manifest.at("slip");
    const auto& counts = slip.at("counts");
    result.source_samples = counts.value("source_samples", uint64_t{0});
    result.written = counts.value("written", uint64_t{0});
    result.skipped = counts.value("skipped", uint64_t{0});
    result.transcoded = counts.value("transcoded", uint64_t{0});
    const nlohmann::json ledger = slip.value("ledger", nlohmann::json::array());
    for (const auto& e : ledger) {
      LedgerEntry l;
      l.source_index = e.value("source_index", uint64_t{0});
      if (e.contains("sample") && e["sample"].is_number_unsigned()) l.sample = e["sample"].get<uint64_t>();
      l.origin = e.value("origin", std::string());
      l.field = e.value("field", std::string());
      l.action = e.value("action", std::string());
      l.reason = e.value("reason", std::string());
      result.ledger.push_back(std::move(l));
    }
    const nlohmann::json sizes = manifest.value("file_sizes", nlohmann::json::object());
    for (const auto& [file, size] : sizes.items())
      if (size.is_number_unsigned()) result.bytes_written += size.get<uint64_t>();
  } catch (const nlohmann::json::exception&) {
    // A cache that passed the checks but whose counts cannot be read: report none.
  }
  return true;
}

}  // namespace

void check_output_outside_sources(const std::vector<std::string>& sources, const fs::path& output_dir) {
  std::error_code ec;
  const fs::path out = fs::weakly_canonical(fs::absolute(output_dir, ec), ec);
  if (ec) return;  // unresolvable: creating it will say why
  for (const std::string& s : sources) {
    if (is_remote_uri(s) || s.empty() || s[0] == '@' || s == "-" || !fs::is_directory(s, ec)) continue;
    const fs::path src = fs::weakly_canonical(fs::absolute(s, ec), ec);
    if (ec) continue;
    // Component-wise prefix: /data/src-out is not inside /data/src.
    const auto [src_end, out_at] = std::mismatch(src.begin(), src.end(), out.begin(), out.end());
    if (src_end == src.end())
      throw Error(Errc::usage, "the output directory " + detail::escape_for_terminal(output_dir.string()) +
                                   (out_at == out.end() ? " is" : " is inside") + " the source " + detail::escape_for_terminal(s) +
                                   ": its caches would be read as part of the source next time; write them elsewhere (-o)");
  }
}

ConvertResult convert(Source& source, const ConvertOptions& options) {
  const detail::CancelScope cancel_scope(options.cancel);
  const auto t0 = std::chrono::steady_clock::now();
  const SourceIdentity identity = source.identity();
  Schema schema = source.schema();
  if (options.image_format == StoredFormat::yuv420)
    for (FieldSpec& spec : schema.fields)
      if (spec.type == FieldType::image) spec.image_format = "yuv420";
  // Names from the source become file names: one rule, before anything is written.
  detail::check_schema_names(schema, identity.kind);
  ConvertResult result;
  result.content_id = content_id(identity, options);
  const std::string name = checked_cache_name(identity, options);
  fs::path root = output_root(options);
  if (identity.kind == "imagefolder") check_output_outside_sources({identity.uri}, root);
  std::string final_name = cache_dir_name(name, result.content_id);
  // A shard of a job-array conversion: samples [start, end) of the source, written as a part
  // cache under <root>/<name>-<id8>.parts/, named by the whole's content id and the slice.
  std::optional<detail::PartInfo> part;
  if (options.shard) {
    const fs::path workdir = root / (final_name.substr(0, final_name.size() - detail::kCacheSuffix.size()) + ".parts");
    ShardSpec shard = *options.shard;
    detail::resolve_auto_shard(workdir, shard);
    part = detail::plan_part(source, shard, result.content_id);
    part->whole_name = final_name;
    root = workdir;
    final_name = part->dir_name();
    result.content_id = part->content_id;
  }
  const fs::path final_dir = root / final_name;
  result.cache_path = final_dir;

  result.options = canonical_options(options);
  // --on-error skip changes the bytes only when it skips something: the cache of this source
  // made without it is then the same cache, found under (and published under) its id.
  std::optional<std::string> plain_id;
  ConvertOptions plain = options;
  plain.on_error = OnError::fail;
  if (options.on_error == OnError::skip && !part) plain_id = content_id(identity, plain);
  if (!options.force && (reuse_existing(final_dir, result.content_id, result) ||
                         (plain_id && reuse_existing(root / cache_dir_name(name, *plain_id), *plain_id, result)))) {
    if (result.cache_path != final_dir) result.options = canonical_options(plain);
    return result;
  }
  result.cache_path = final_dir;
  detail::StagingDir staging(root, final_name);
  const fs::path tmp = staging.path();
  uint64_t remaining = std::numeric_limits<uint64_t>::max();
  if (part && part->unit == "files") {
    const auto slice = source.select_files(part->index, part->count);
    if (!slice)
      throw Error(Errc::usage, "--shard needs a source that knows its sample count or can be split by file").with_path(identity.uri);
    part->start = slice->start;
    part->end = slice->end;
    part->total = slice->total;
  } else if (part) {
    if (source.skip(part->start) != part->start)
      throw Error(Errc::bad_input, "the source ended before sample " + std::to_string(part->start)).with_path(identity.uri);
    remaining = part->end - part->start;
  }

  if (options.threads > kMaxConvertThreads)
    throw Error(Errc::usage, "--threads must be in 0.." + std::to_string(kMaxConvertThreads) + ", got " + std::to_string(options.threads));
  const unsigned threads = options.threads ? options.threads : available_cpus();
  // With options.parallel_writes and from kParallelWriteThreads up, the workers write the
  // payloads through a shared mapping (PlacedWriter); otherwise the writer thread writes them,
  // in order. Opt-in until measured where it should pay (16+ cores): on 2 cores the mapping's
  // page faults cost more CPU time than write() (docs/PERFORMANCE.md, "Parallel writes").
  const bool parallel = options.parallel_writes && threads >= kParallelWriteThreads;
  result.parallel_writes = parallel;
  detail::CacheWriter writer(tmp, schema, parallel);
  run_pipeline(source, schema, options, threads, parallel, remaining, writer, result);
  throw_if_interrupted();
  result.written = writer.count();
  if (result.written == 0 && !options.allow_empty && !part)
    throw Error(Errc::bad_input, result.source_samples == 0 ? "the source has no samples (--allow-empty writes an empty cache)"
                                                            : "no sample left: all " + std::to_string(result.source_samples) +
                                                                  " were skipped (see --on-error; --allow-empty writes an empty cache)")
        .with_path(identity.uri);
  const detail::WrittenFiles files = writer.finish();
  // A task's view of the whole source when it is done, for merge to compare (docs/SLURM.md):
  // an image an earlier task stored, rewritten in place since, is in no task's slice any more.
  // Sources whose tasks fingerprint their own inputs afresh need none: their content id differs.
  if (part)
    if (const auto* checkable = dynamic_cast<const detail::ListingCheckable*>(&source)) {
      const detail::ListingCheck check = checkable->recheck_listing();
      part->listing = check.listed;
      part->listing_seen = check.now;
      if (check.listed != check.now)
        detail::warn(
            "{}: the source's files changed during the conversion (sizes or mtimes differ from the listing it uses); "
            "`slip merge` will refuse this part: remove the saved scan and convert every task again",
            detail::escape_for_terminal(identity.uri));
    }

  // Every skip counts (also a source's own, e.g. tar --missing skip): merge, which cannot tell
  // them apart in the parts' ledgers, decides the same way, so merged equals single-process.
  const bool as_plain = plain_id && result.skipped == 0;
  if (as_plain) {
    result.content_id = *plain_id;
    result.options = canonical_options(plain);
    result.cache_path = root / cache_dir_name(name, *plain_id);
  }
  const ojson manifest = detail::build_manifest(schema, identity, result, files, part, options.created);
  detail::write_manifest(tmp, manifest);
  throw_if_interrupted();

  if (as_plain)
    staging.publish_as(result.cache_path.filename().string());
  else
    staging.publish();
  for (const auto& [file, size] : files.storage_sizes) result.bytes_written += size;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace slip
