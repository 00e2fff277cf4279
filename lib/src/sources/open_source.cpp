// open_source(): the table of source kinds, probed in order (specific formats first, the
// ImageFolder directory last). A new source adds one row here.
#include <filesystem>
#include <vector>

#include "slip/error.hpp"
#include "sources/source_registry.hpp"

namespace slip {

namespace fs = std::filesystem;

namespace {

bool is_directory(const std::string& uri) {
  std::error_code ec;
  return fs::is_directory(uri, ec);
}

}  // namespace

bool looks_like_ffcv(const std::string& path);
bool looks_like_tar(const std::string& uri);
bool looks_like_litdata(const std::string& uri);
std::unique_ptr<Source> open_litdata(const std::string& dir, const SourceOptions& options);
std::unique_ptr<Source> open_tar_shards(const std::vector<std::string>& args, const SourceOptions& options);
std::unique_ptr<Source> open_ffcv(const std::string& path, const SourceOptions& options);

namespace {

const std::vector<detail::SourceKind>& source_kinds() {
  static const std::vector<detail::SourceKind> kinds = {
      {"ffcv", [](const std::string& uri, const SourceOptions&) { return looks_like_ffcv(uri); },
       [](const std::string& uri, const SourceOptions& o) { return open_ffcv(uri, o); }},
      {"litdata", [](const std::string& uri, const SourceOptions&) { return looks_like_litdata(uri); },
       [](const std::string& uri, const SourceOptions& o) { return open_litdata(uri, o); }},
      {"tar", [](const std::string& uri, const SourceOptions&) { return looks_like_tar(uri); },
       [](const std::string& uri, const SourceOptions& o) { return open_tar_shards({uri}, o); }},
      {"imagefolder", [](const std::string& uri, const SourceOptions&) { return is_directory(uri); },
       [](const std::string& uri, const SourceOptions&) { return open_imagefolder(uri); }},
  };
  return kinds;
}

}  // namespace

std::optional<std::string> SourceOptions::get(std::string_view key) const {
  std::optional<std::string> out;
  for (const auto& [k, v] : settings)
    if (k == key) out = v;
  return out;
}

std::vector<std::string> SourceOptions::get_all(std::string_view key) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : settings)
    if (k == key) out.push_back(v);
  return out;
}

std::unique_ptr<Source> open_sources(const std::vector<std::string>& uris, const SourceOptions& options) {
  if (uris.size() == 1) return open_source(uris[0], options);
  if (uris.empty()) throw Error(Errc::usage, "no source given");
  return open_tar_shards(uris, options);  // several inputs: tar shards
}

std::unique_ptr<Source> open_source(const std::string& uri, const SourceOptions& options) {
  for (const auto& kind : source_kinds())
    if (kind.probe(uri, options)) return kind.open(uri, options);
  std::error_code ec;
  if (!fs::exists(uri, ec)) throw Error(Errc::io, "no such file or directory").with_path(uri);
  throw Error(Errc::bad_input,
              "not a source slip can read (an ImageFolder directory, an FFCV .beton, WebDataset tar shards, a LitData directory)")
      .with_path(uri);
}

}  // namespace slip
