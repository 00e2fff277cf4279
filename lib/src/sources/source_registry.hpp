// Internal: how open_source() picks a source. Each source kind contributes one entry: a
// probe ("is this URI mine?") and an opener; the first matching entry wins.
#pragma once

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
// "--io-depth N": 1..1024 requests in flight; throws Error(usage) otherwise.
uint64_t parse_io_depth(const std::string& text);

}  // namespace slip::detail
