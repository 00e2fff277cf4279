// Fuzz input <-> a cache directory: the input is a sequence of (u8 file id, u32le length,
// bytes) records; each becomes one file of a fixed cache layout in a fresh temporary
// directory. tools: pack_cache.py builds seeds from real caches.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace slip::fuzz {

inline constexpr const char* kFiles[] = {
    "manifest.json",  "manifest.json.xxh3", "image.bin",        "image.meta.npy",       "image.xxh3.npy",          "label.npy",
    "index.npy",      "path.bin",           "path.offsets.npy", "label.index.keys.npy", "label.index.offsets.npy", "label.index.ids.npy",
    "label_index.npy"};
inline constexpr size_t kFileCount = sizeof(kFiles) / sizeof(kFiles[0]);

class ScratchCache {
 public:
  ScratchCache() {
    static const std::filesystem::path base = [] {
      const char* shm = "/dev/shm";
      return std::filesystem::exists(shm) ? std::filesystem::path(shm) : std::filesystem::temp_directory_path();
    }();
    dir_ = base / ("slip-fuzz-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~ScratchCache() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::filesystem::path& dir() const { return dir_; }

  void unpack(const uint8_t* data, size_t size) {
    for (size_t i = 0; i < kFileCount; ++i) std::filesystem::remove(dir_ / kFiles[i]);
    size_t pos = 0;
    while (pos + 5 <= size) {
      const uint8_t id = data[pos];
      uint32_t len;
      std::memcpy(&len, data + pos + 1, 4);
      pos += 5;
      if (len > size - pos) len = static_cast<uint32_t>(size - pos);
      std::ofstream(dir_ / kFiles[id % kFileCount], std::ios::binary | std::ios::app).write(reinterpret_cast<const char*>(data + pos), len);
      pos += len;
    }
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace slip::fuzz
