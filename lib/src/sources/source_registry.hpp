// Internal: how open_source() picks a source. Each source kind contributes one entry: a
// probe ("is this URI mine?") and an opener; the first matching entry wins.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "slip/source.hpp"

namespace slip::detail {

struct SourceKind {
  const char* name;
  std::function<bool(const std::string& uri, const SourceOptions&)> probe;
  std::function<std::unique_ptr<Source>(const std::string& uri, const SourceOptions&)> open;
};

// The ImageFolder source with its source options ("io-depth").
std::unique_ptr<Source> open_imagefolder(const std::string& root, const SourceOptions& options);
// Throws Error(usage) for a setting `kind` does not read (remote settings pass when `remote`).
void check_source_settings(std::string_view kind, const SourceOptions& options, bool remote);
// --max-sample-bytes: the most one sample's file or member may hold to be read into memory
// (tar members, ImageFolder files, LitData items); sizes are checked before anything is read.
inline constexpr uint64_t kDefaultMaxSampleBytes = uint64_t{256} << 20;
// The setting, or kDefaultMaxSampleBytes; throws Error(usage) for 0 or what is not a number.
uint64_t max_sample_bytes(const SourceOptions& options);
// "--io-depth N": 1..1024 requests in flight; throws Error(usage) otherwise.
uint64_t parse_io_depth(const std::string& text);

}  // namespace slip::detail
