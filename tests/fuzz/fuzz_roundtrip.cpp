// libFuzzer target: round trip. The input is split into up to 8 samples of four fields (an
// image, opaque bytes, a string, an int), written as a cache by convert() and read back:
// every stored sample must equal what went in (images verbatim unless the ledger says they
// were transcoded or skipped), and verify must accept the cache.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "slip/cache.hpp"
#include "slip/convert.hpp"
#include "slip/error.hpp"
#include "slip/source.hpp"
#include "slip/verify.hpp"

namespace {

namespace fs = std::filesystem;

class MemorySource : public slip::Source {
 public:
  explicit MemorySource(std::vector<slip::Sample> samples) : samples_(std::move(samples)) {
    for (const auto& [name, type] : {std::pair{"image", slip::FieldType::image}, std::pair{"blob", slip::FieldType::bytes},
                                     std::pair{"name", slip::FieldType::str}, std::pair{"label", slip::FieldType::int64}}) {
      slip::FieldSpec spec;
      spec.name = name;
      spec.type = type;
      schema_.fields.push_back(spec);
    }
  }
  const slip::Schema& schema() const override { return schema_; }
  slip::SourceIdentity identity() const override { return {"memory", "memory://fuzz", "fuzz", "fuzz", {}}; }
  std::optional<uint64_t> size() const override { return samples_.size(); }
  bool next(slip::Sample& out) override {
    if (at_ >= samples_.size()) return false;
    out = samples_[at_++];
    return true;
  }

 private:
  slip::Schema schema_;
  std::vector<slip::Sample> samples_;
  size_t at_ = 0;
};

slip::Bytes slice(const uint8_t* data, size_t size) {
  slip::Bytes out(size);
  if (size) std::memcpy(out.data(), data, size);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t n = 1 + data[0] % 8;
  data += 1;
  size -= 1;
  // Each sample takes an equal share of the rest: image bytes, then a quarter as blob and name.
  const size_t share = size / n;
  std::vector<slip::Sample> samples(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = data + i * share;
    const size_t image = share - share / 4, rest = share / 4;
    slip::Sample& s = samples[i];
    s.source_index = i;
    s.origin = "fuzz:" + std::to_string(i);
    s.values.resize(4);
    s.values[0].bytes = slice(p, image);
    s.values[1].bytes = slice(p + image, rest / 2);
    const auto name = slice(p + image + rest / 2, rest - rest / 2);
    s.values[2].bytes = name;
    s.values[3].int_value = static_cast<int64_t>(i) * 1000003 - static_cast<int64_t>(share);
  }
  static const fs::path root = fs::temp_directory_path() / ("slip-fuzz-roundtrip-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(root, ec);
  slip::ConvertOptions options;
  options.output_dir = root;
  options.threads = 1;
  options.force = true;
  options.on_error = slip::OnError::skip;
  options.max_image_pixels = 1 << 20;
  MemorySource source(samples);
  try {
    const slip::ConvertResult r = slip::convert(source, options);
    std::set<uint64_t> changed, skipped;
    for (const slip::LedgerEntry& e : r.ledger) {
      if (e.action == "skipped")
        skipped.insert(e.source_index);
      else
        changed.insert(e.source_index);
    }
    const slip::Cache cache = slip::Cache::open(r.cache_path);
    if (cache.size() != n - skipped.size()) __builtin_trap();
    uint64_t id = 0;
    for (size_t i = 0; i < n; ++i) {
      if (skipped.count(i)) continue;
      const auto image = cache.payload(0, id), blob = cache.payload(1, id);
      const std::string_view name = cache.string(2, id);
      const auto& want = samples[i].values;
      if (!changed.count(i) && (image.size() != want[0].bytes.size() || !std::equal(image.begin(), image.end(), want[0].bytes.begin())))
        __builtin_trap();
      if (blob.size() != want[1].bytes.size() || !std::equal(blob.begin(), blob.end(), want[1].bytes.begin())) __builtin_trap();
      if (name.size() != want[2].bytes.size() || std::memcmp(name.data(), want[2].bytes.data(), name.size()) != 0) __builtin_trap();
      if (cache.int_value(3, id) != want[3].int_value) __builtin_trap();
      ++id;
    }
    if (!slip::verify_cache(r.cache_path).ok()) __builtin_trap();
  } catch (const slip::Error&) {
    // Every sample skipped (an empty cache is refused) and similar: a clean error is fine.
  }
  fs::remove_all(root, ec);
  return 0;
}
