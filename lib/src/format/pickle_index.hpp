// Internal: reading a "<field>_index.npy" (docs/FORMAT.md#pickled-index) without running its pickle.
//
// The Python loader globs *_index.npy and opens each with numpy.load(allow_pickle=True): a
// pickle there runs whatever it names (os.system, ...) on the machine that loads the cache.
// This is a pickle *reader*, not a VM: it accepts only the opcodes numpy's save and slip's
// writer emit (protocols 2-4), only the callables numpy.core/_core.multiarray._reconstruct,
// numpy.ndarray and numpy.dtype with exactly the arguments they are pickled with, and only the
// result shape `slip index` and write_index produce: a 0-d object ndarray holding one dict of
// int / float / str keys to 1-D little-endian int64 ndarrays. Everything else is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace slip::detail {

struct PickledIndex {
  std::vector<std::variant<int64_t, double, std::string>> keys;
  std::vector<std::vector<int64_t>> ids;  // ids[k]: the sample ids of keys[k]
};

// `file` is the whole .npy file (header descr '|O', shape ()). Throws Error(bad_input) naming
// `path` with the byte offset of what was refused. Never executes anything.
PickledIndex read_pickled_index(std::span<const std::byte> file, const std::string& path);

}  // namespace slip::detail
