// libFuzzer target: the WebDataset tar reader (slip's side of libarchive: member names,
// grouping, adjacency, field parsing) on arbitrary (possibly compressed) archives.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "slip/error.hpp"
#include "slip/source.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/slip-fuzz-tar-" + std::to_string(::getpid()) + ".tar";
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  try {
    auto src = slip::open_sources({path});
    slip::Sample s;
    for (int i = 0; i < 10000 && src->next(s); ++i) {
    }
  } catch (const slip::Error&) {
  }
  return 0;
}
