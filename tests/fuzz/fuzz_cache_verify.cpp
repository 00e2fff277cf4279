// libFuzzer target, end to end: a cache directory made from the input is opened, every
// sample of every field is read, its indexes are read, and verify_cache runs over it.
// Untrusted: the manifest, every .npy header and table, the payload files, the index files.
#include <cstddef>
#include <cstdint>

#include "cache_container.hpp"
#include "slip/cache.hpp"
#include "slip/error.hpp"
#include "slip/index.hpp"
#include "slip/verify.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static slip::fuzz::ScratchCache scratch;
  scratch.unpack(data, size);
  try {
    const slip::Cache cache = slip::Cache::open(scratch.dir());
    const uint64_t n = cache.size() < 4096 ? cache.size() : 4096;
    for (size_t f = 0; f < cache.fields().size(); ++f) {
      const slip::CacheField& field = cache.fields()[f];
      for (uint64_t i = 0; i < n; ++i) {
        try {
          switch (field.type) {
            case slip::FieldType::image:
            case slip::FieldType::bytes:
              (void)cache.payload(f, i);
              (void)cache.payload_checksum(f, i);
              break;
            case slip::FieldType::str:
              (void)cache.string(f, i);
              break;
            case slip::FieldType::int64:
              (void)cache.int_value(f, i);
              break;
            case slip::FieldType::float64:
              (void)cache.float_value(f, i);
              break;
            case slip::FieldType::ndarray:
              (void)cache.array_bytes(f, i);
              break;
          }
        } catch (const slip::Error&) {
        }
      }
    }
    try {
      (void)slip::read_field_index(cache, "label");
    } catch (const slip::Error&) {
    }
  } catch (const slip::Error&) {
  }
  try {
    slip::VerifyOptions options;
    options.threads = 1;
    (void)slip::verify_cache(scratch.dir(), options);
  } catch (const slip::Error&) {
  }
  return 0;
}
