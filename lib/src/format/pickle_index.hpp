// Internal: reading a "<field>_index.npy" (docs/FORMAT.md#pickled-index) without running its pickle.
//
// The Python loader globs *_index.npy and opens each with numpy.load(allow_pickle=True): a
// pickle there runs whatever it names (os.system, ...) on the machine that loads the cache.
// This is a pickle *reader*, not a VM: it accepts only the opcodes numpy's save and slip's
// writer emit (protocols 2-4), only the callables numpy.core/_core.multiarray._reconstruct,
// numpy.ndarray and numpy.dtype with exactly the arguments they are pickled with, and only the
// result shape `slip index` and write_index produce: a 0-d object ndarray holding one dict of
// int / float / str keys to 1-D little-endian int64 ndarrays. Everything else is refused.
//
// Memory is bounded by the cache, not by the file: a first pass over the opcodes finds the memo
// entries that are ever read back (only those are kept), objects are reference-counted and
// freed when nothing holds them, scalars and strings are values that point into the file, and
// everything held at once (stack, marks, containers, memo) is counted against what an index of
// the cache's N samples needs (2 per key, K <= N keys, plus a constant): a 64 MiB pickle of
// NEWTRUE opcodes is refused after ~65,000 pushes, an index of 3 M keys is read in ~100 MB.
// Every id is checked against N as its array is built, so the caller need not read them again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace slip::detail {

class MappedFile;

namespace pickle {

enum class Kind : uint8_t { none, boolean, integer, real, str, bytes, global, ids, tuple, list, dict, dtype, array };

// One pickle value in 16 bytes. Scalars are inline; str/bytes are (offset, length) into the
// pickle (or, flag kDerived, into the reader's buffer of decoded protocol-2 bytes); `ids` is a
// built int64 array: (offset, count) of its data; tuple..array: `bits` is a node number.
struct Value {
  static constexpr uint8_t kDerived = 1;
  Kind kind = Kind::none;
  uint8_t flags = 0;
  uint32_t len = 0;
  uint64_t bits = 0;
};

// The items of a container in chunks of 4,096: a dict of 3 M keys grows without copying (and
// transiently doubling) what it already holds.
class ValueList {
 public:
  static constexpr size_t kChunk = 4096;
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  Value& operator[](size_t i) { return chunks_[i / kChunk][i % kChunk]; }
  const Value& operator[](size_t i) const { return chunks_[i / kChunk][i % kChunk]; }
  void push_back(const Value& v) {
    if (size_ == chunks_.size() * kChunk) {
      chunks_.emplace_back();
      if (size_ != 0) chunks_.back().reserve(kChunk);
    }
    chunks_.back().push_back(v);
    ++size_;
  }
  void clear() noexcept {
    chunks_ = {};
    size_ = 0;
  }

 private:
  std::vector<std::vector<Value>> chunks_;
  size_t size_ = 0;
};

}  // namespace pickle

// The dict an index pickle holds. Keys and id arrays refer to the file's bytes: the caller keeps
// the file mapped while it reads them.
class PickledIndex {
 public:
  using Key = std::variant<int64_t, double, std::string_view>;
  size_t size() const noexcept { return items_.size() / 2; }
  Key key(size_t k) const;
  uint64_t id_count(size_t k) const { return items_[2 * k + 1].len; }
  int64_t id(size_t k, uint64_t j) const;
  std::vector<int64_t> ids(size_t k) const;  // a copy
  uint64_t total_ids() const noexcept { return total_ids_; }

 private:
  friend class PickleReader;
  const std::byte* data(const pickle::Value& v) const;
  std::span<const std::byte> pickle_;
  std::string derived_;
  pickle::ValueList items_;  // key, ids, key, ids, ...
  uint64_t total_ids_ = 0;
};

// `file` is the whole .npy file (header descr '|O', shape ()); `samples` the cache's sample
// count, which bounds what the pickle may hold (keys, ids, objects held at once). Throws
// Error(bad_input) naming `path` with the byte offset of what was refused. Never executes anything.
// Every id must be a sample of the cache (0 <= id < samples): checked as each array is built.
PickledIndex read_pickled_index(std::span<const std::byte> file, const std::string& path, uint64_t samples);
// The same on a mapped file, releasing the pages behind each pass (RSS bounded however large
// the pickle: slip's index of 3 M values is 400 MB). Keys then fault their pages back in.
PickledIndex read_pickled_index(const MappedFile& file, uint64_t samples);

}  // namespace slip::detail
