// libFuzzer target: the S3 ListObjectsV2 response parser (bytes from the network) and the
// mapping of listed keys to download paths, which must never leave the download directory.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "net/download.hpp"
#include "net/s3.hpp"
#include "slip/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view xml(reinterpret_cast<const char*>(data), size);
  try {
    const slip::net::S3ListPage page = slip::net::parse_list_objects_v2(xml);
    if (page.next_token && page.next_token->empty()) __builtin_trap();
    const std::filesystem::path root = "/downloads";
    for (const auto& o : page.objects) {
      try {
        const auto p = slip::net::local_path_for(root, "s3", "bucket", o.key);
        const auto rel = p.lexically_relative(root / "s3" / "bucket");
        if (rel.empty() || *rel.begin() == "..") __builtin_trap();
        for (const auto& part : rel)
          if (part == ".." || part == ".") __builtin_trap();
      } catch (const slip::Error&) {
      }
    }
  } catch (const slip::Error&) {
  }
  return 0;
}
