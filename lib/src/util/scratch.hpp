// Scratch buffers reused across samples of different sizes.
#pragma once

#include <cstddef>
#include <vector>

namespace slip::detail {

// At least n elements of `buffer`, keeping its contents: it only grows. std::vector::resize
// zero-fills every element it adds, so resizing one buffer between a 224 px and a 96 px crop
// memset hundreds of KiB per sample; callers overwrite what they use.
template <class T>
T* scratch_of(std::vector<T>& buffer, size_t n) {
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

}  // namespace slip::detail
