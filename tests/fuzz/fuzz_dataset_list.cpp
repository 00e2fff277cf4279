// libFuzzer target: dataset list files (docs/FORMAT.md#dataset-lists), text and JSON, opened by
// slip::Dataset::open next to a few small real caches (made once per process, so the paths a
// list names can resolve), then the mix: `--mix` weight strings, the list's own weights and
// epoch size, and the mixed order they give. Input: a control byte, then the list file's bytes;
//   0x01  a second input beside the list (cache "a"): text lists combine, JSON lists are refused
//   0x02  the last line of the input is a `slip order --mix` string, not part of the list
//   0x04  Dataset::cache_paths too
//   0x08  an epoch size of (control >> 4) * 3 + 1 overrides the list's
// Any slip::Error is fine; a crash, leak, UB or huge allocation is not, and neither is a mixed
// order whose ids leave the dataset or whose per-cache counts differ from samples_per_cache's.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "slip/dataset.hpp"
#include "slip/error.hpp"
#include "slip/mix.hpp"
#include "slip/npy.hpp"

namespace fs = std::filesystem;

namespace {

std::string fuzz_hex_id(int k) {
  std::string s(64, '0');
  const std::string t = std::to_string(k);
  s.replace(64 - t.size(), t.size(), t);
  return s;
}

// A minimal valid cache: one field "label" of n int (or float) values; content id hex k (0: none).
void fuzz_write_cache(const fs::path& dir, uint64_t n, int k, bool is_float = false, const std::string& part = "") {
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "label.npy", std::ios::binary);
    const std::vector<uint64_t> shape{n};
    f << slip::npy_header(is_float ? "'<f8'" : "'<i8'", shape);
    for (uint64_t i = 0; i < n; ++i) {
      const int64_t v = static_cast<int64_t>(i);
      f.write(reinterpret_cast<const char*>(&v), 8);
    }
  }
  std::string slip_section;
  if (k != 0)
    slip_section = ", \"slip\": {\"format_version\": 1, \"content_id\": \"" + fuzz_hex_id(k) + "\"" +
                   (part.empty() ? "" : ", \"part\": " + part) + "}";
  std::ofstream(dir / "manifest.json") << "{\"version\": 1, \"num_samples\": " << n << ", \"fields\": {\"label\": {\"type\": \""
                                       << (is_float ? "float" : "int") << "\", \"num_samples\": " << n << "}}" << slip_section << "}";
}

// The caches every list can name, relative to the list: a (3 samples, id 1), b (2, id 2),
// empty (0, id 3), f (float labels, id 4), py (no content id), and the two parts of a
// conversion (ids 10, 11) beside its merged cache "whole" (id 9), and "l\xe9" (id 5), a name
// that is not UTF-8 (Latin-1), as old file systems hold.
class FuzzDatasetDir {
 public:
  FuzzDatasetDir() {
    const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    dir_ = base / ("slip-fuzz-dataset-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fuzz_write_cache(dir_ / "a", 3, 1);
    fuzz_write_cache(dir_ / "b", 2, 2);
    fuzz_write_cache(dir_ / "empty", 0, 3);
    fuzz_write_cache(dir_ / "f", 2, 4, true);
    fuzz_write_cache(dir_ / "py", 4, 0);
    const std::string whole = "\"whole_content_id\": \"" + fuzz_hex_id(9) + "\"}";
    fuzz_write_cache(dir_ / "w.parts" / "part-00000-of-00002", 2, 10, false, "{\"index\": 0, \"count\": 2, " + whole);
    fuzz_write_cache(dir_ / "w.parts" / "part-00001-of-00002", 3, 11, false, "{\"index\": 1, \"count\": 2, " + whole);
    fuzz_write_cache(dir_ / "whole", 5, 9);
    fuzz_write_cache(dir_ / "l\xe9", 1, 5);
  }
  ~FuzzDatasetDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

// The mixed order of one epoch, checked: every id inside the dataset, each cache's count as
// samples_per_cache says (all positions of short epochs; the first 4096 of longer ones).
void fuzz_check_mix(const slip::Dataset& d, const std::vector<slip::StreamWeight>& weights, std::optional<uint64_t> epoch_size,
                    uint64_t seed) {
  slip::MixSpec spec;
  spec.sizes = d.sizes();
  spec.weights = weights;
  spec.epoch_size = epoch_size;
  spec.seed = seed;
  spec.epoch = seed >> 2;
  spec.block_size = 1 + (seed & 3);
  const std::vector<uint64_t> chosen = slip::samples_per_cache(spec.sizes, spec.weights, spec.epoch_size);
  const slip::MixedOrder order(spec);
  uint64_t length = 0;
  for (uint64_t c : chosen) length += c;
  if (order.size() != length) __builtin_trap();
  const uint64_t n = length < 4096 ? length : 4096;
  std::vector<uint64_t> counts(d.num_caches());
  for (uint64_t p = 0; p < n; ++p) {
    const uint64_t id = order(p);
    if (id >= d.size()) __builtin_trap();
    ++counts[d.locate(id).cache];
  }
  if (n == length && counts != chosen) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const FuzzDatasetDir caches;
  if (size < 1) return 0;
  const uint8_t control = data[0];
  std::string_view list(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string mix;
  if (control & 0x02) {
    const auto nl = list.rfind('\n');
    mix = std::string(nl == std::string_view::npos ? list : list.substr(nl + 1));
    list = nl == std::string_view::npos ? std::string_view() : list.substr(0, nl);
  }
  const fs::path file = caches.dir() / "list";
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(list.data(), static_cast<std::streamsize>(list.size()));
  std::vector<fs::path> inputs{file};
  if (control & 0x01) inputs.push_back(caches.dir() / "a");
  try {
    if (control & 0x04) (void)slip::Dataset::cache_paths(inputs);
  } catch (const slip::Error&) {
  }
  try {
    const slip::Dataset d = slip::Dataset::open(inputs);
    if (d.num_caches() == 0 || d.size() != d.first_id(d.num_caches() - 1) + d.sizes().back()) __builtin_trap();
    const std::optional<uint64_t> epoch_size = control & 0x08 ? std::optional<uint64_t>((control >> 4) * 3 + 1) : d.epoch_size();
    try {
      fuzz_check_mix(d, d.weights(), epoch_size, control);
    } catch (const slip::Error&) {
    }
    if (control & 0x02) {
      try {
        fuzz_check_mix(d, slip::parse_weights(mix, d.num_caches()), epoch_size, control);
      } catch (const slip::Error&) {
      }
    }
    // What list_json writes opens the same dataset again (absolute paths, ids, counts, weights).
    const fs::path again = caches.dir() / "again.json";
    std::ofstream(again, std::ios::binary | std::ios::trunc) << d.list_json();
    try {
      const slip::Dataset e = slip::Dataset::open(again);
      if (e.sizes() != d.sizes() || e.weights().size() != d.weights().size() || e.epoch_size() != d.epoch_size()) __builtin_trap();
    } catch (const slip::Error&) {
      __builtin_trap();  // the list slip wrote names caches that just opened
    }
  } catch (const slip::Error&) {
  }
  return 0;
}
