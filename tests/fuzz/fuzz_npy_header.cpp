// libFuzzer target: the .npy header parser on arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <span>

#include "slip/error.hpp"
#include "slip/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  try {
    const slip::NpyHeader h = slip::parse_npy_header(bytes, "fuzz.npy");
    // Invariants a caller relies on.
    if (h.data_offset > size) __builtin_trap();
    (void)h.element_count();
    (void)slip::npy_dtype_size(h.simple_dtype());
  } catch (const slip::Error&) {
  }
  return 0;
}
