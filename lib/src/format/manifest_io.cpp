#include "format/manifest_io.hpp"

#include "format/layout.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "util/atomic_file.hpp"
#include "util/file_io.hpp"
#include "util/untrusted.hpp"

namespace slip::detail {

namespace fs = std::filesystem;

std::string manifest_text(const nlohmann::ordered_json& manifest) {
  return manifest.dump(2, ' ', true, nlohmann::json::error_handler_t::replace);
}

void write_manifest(const fs::path& dir, const nlohmann::ordered_json& manifest) {
  const std::string text = manifest_text(manifest);
  replace_file(dir / kManifestName, text);
  replace_file(dir / kManifestSumName, hex64(xxh3_64(std::as_bytes(std::span(text.data(), text.size())))) + "\n");
}

nlohmann::ordered_json read_manifest(const fs::path& dir) {
  const fs::path p = dir / kManifestName;
  const std::string text = read_text_file(p);
  try {
    return parse_ordered_json_bounded(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(Errc::bad_input, std::string("manifest.json is not valid JSON: ") + e.what()).with_path(p.string()).with_offset(e.byte);
  } catch (const nlohmann::json::exception& e) {
    throw Error(Errc::bad_input, std::string("manifest.json: ") + e.what()).with_path(p.string());
  } catch (Error& e) {  // nested too deep
    throw e.with_path(p.string());
  }
}

ManifestUpdate::ManifestUpdate(const fs::path& dir)
    : dir_(dir), lock_(dir / kCacheLockName, "the cache's lock"), manifest_(read_manifest(dir)) {}

}  // namespace slip::detail
