// libFuzzer target: the FFCV reader (header, field descriptors, metadata rows, allocation
// table, payload bounds) on arbitrary file contents.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "slip/error.hpp"
#include "slip/source.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/slip-fuzz-ffcv-" + std::to_string(::getpid()) + ".beton";
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  try {
    auto src = slip::open_source(path);
    slip::Sample s;
    for (int i = 0; i < 100000 && src->next(s); ++i) {
    }
  } catch (const slip::Error&) {
  }
  return 0;
}
