// source_summary: how messages, `info` and `ls` show a cache's source. Here, not in sources/,
// so that reading a cache needs none of the source readers (the reader-only build, the wheel).
#include <string>
#include <string_view>
#include <vector>

#include "slip/source.hpp"

namespace slip {

std::string source_summary(const std::vector<std::string>& uris, std::string_view kind) {
  if (uris.empty()) return {};
  if (uris.size() == 1) return uris.front();
  std::string count = std::to_string(uris.size());
  for (int i = static_cast<int>(count.size()) - 3; i > 0; i -= 3) count.insert(static_cast<size_t>(i), ",");
  return count + " " + std::string(kind) + " (" + uris.front() + " .. " + uris.back() + ")";
}

}  // namespace slip
