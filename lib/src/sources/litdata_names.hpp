// Internal: the one rule for LitData chunk file names (index.json is untrusted, locally and
// remotely): a plain name inside the dataset directory.
#pragma once

#include <string_view>

namespace slip::detail {

// Non-empty, not ".", and no "/", backslash, ".." or NUL.
inline bool is_safe_chunk_name(std::string_view name) {
  return !name.empty() && name.find_first_of(std::string_view("/\\\0", 3)) == std::string_view::npos &&
         name.find("..") == std::string_view::npos && name != ".";
}

}  // namespace slip::detail
