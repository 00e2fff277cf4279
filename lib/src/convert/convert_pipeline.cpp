// The conversion pipeline behind convert(): a reader thread, the preparing workers, a writer
// thread, connected by bounded queues under a budget of sample bytes in flight.
#include "convert/convert_pipeline.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "convert/prepare_sample.hpp"
#include "slip/error.hpp"
#include "slip/runtime.hpp"
#include "util/bounded_queue.hpp"
#include "util/cancel.hpp"
#include "util/worker_pool.hpp"

namespace slip {

namespace {

using detail::PreparedSample;

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
  std::vector<PreparedSample> prepared;
  size_t count = 0;
  uint64_t bytes = 0;  // sample bytes held, released to the budget once written
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The three stages of run_convert_pipeline() and what they share.
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
      PreparedSample& p = batch.prepared[i];
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
          batch->prepared[i] = PreparedSample{};
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
      PreparedSample& p = batch.prepared[i];
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
          detail::prepare_sample(batch->samples[i], schema, options.non_jpeg, options.jpeg_restarts, options.max_image_pixels,
                                 batch->prepared[i]);
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

}  // namespace

void detail::run_convert_pipeline(Source& source, const Schema& schema, const ConvertOptions& options, unsigned threads, bool parallel,
                                  uint64_t remaining, detail::CacheWriter& writer, ConvertResult& result) {
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

}  // namespace slip
