// Internal: the manifest of a converted (or merged) cache, and the slice a part cache covers.
// convert() and merge_parts() both build manifests here, so a merged cache's manifest is
// byte-identical to a single-process conversion's.
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "format/cache_writer.hpp"
#include "slip/convert.hpp"

namespace slip::detail {

struct PartInfo {
  uint64_t index = 0, count = 1;
  uint64_t start = 0, end = 0;   // source samples [start, end)
  uint64_t total = 0;            // source samples (or files) in the whole
  std::string unit = "samples";  // "samples", or "files" for sources sliced by file (tar shards)
  std::string whole_content_id;  // content id of the single-process cache
  std::string whole_name;        // its directory name, "<name>-<id8>.slipstream"
  std::string content_id;        // this part's: SHA-256 of the whole's id and the slice
  // Source::recheck_listing() at the end of the task (empty where the source has none): the
  // whole source as listed for the conversion and as this task saw it when done. merge
  // refuses a part whose two differ (a file changed during the conversion).
  std::string listing, listing_seen;
  std::string dir_name() const;  // "part-00003-of-00007.slipstream"
};

PartInfo plan_part(const Source& source, const ShardSpec& shard, const std::string& whole_content_id);
// --shard auto: the split recorded in <workdir>/array.json by the array's first task (recorded
// now if there is none) decides index and count. No-op for an explicit I/N.
void resolve_auto_shard(const std::filesystem::path& workdir, ShardSpec& shard);

// `result` supplies the counts and the ledger; `files` the sizes, checksums and max payloads.
nlohmann::ordered_json build_manifest(const Schema& schema, const SourceIdentity& identity, const ConvertResult& result,
                                      const WrittenFiles& files, const std::optional<PartInfo>& part,
                                      std::optional<int64_t> created = std::nullopt);

}  // namespace slip::detail
