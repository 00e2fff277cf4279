// libFuzzer target: the LitData reader. Input: u32le length of index.json, index.json, then the
// bytes of chunk-0-0.bin (the file the seeds' index names).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "slip/error.hpp"
#include "slip/source.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::filesystem::path dir = "/tmp/slip-fuzz-litdata-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  if (size < 4) return 0;
  uint32_t n;
  std::memcpy(&n, data, 4);
  if (n > size - 4) n = static_cast<uint32_t>(size - 4);
  std::ofstream(dir / "index.json", std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data + 4), n);
  std::ofstream(dir / "chunk-0-0.bin", std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data + 4 + n), static_cast<std::streamsize>(size - 4 - n));
  try {
    auto src = slip::open_source(dir.string());
    slip::Sample s;
    for (int i = 0; i < 10000 && src->next(s); ++i) {
    }
  } catch (const slip::Error&) {
  }
  return 0;
}
