// slip/merge.hpp — joining the part caches of a job-array conversion (`convert --shard I/N`).
#pragma once

#include "slip/export.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "slip/runtime.hpp"

SLIP_API_BEGIN
namespace slip {

struct MergeOptions {
  std::filesystem::path output_dir;  // empty: the directory holding the work directory
  bool force = false;                // rebuild even if the merged cache exists
  bool link = false;                 // hard-link the files of a single part instead of copying
  // Once the merged cache is published (every part's checksums were verified while copying),
  // remove the parts (and their work directory when nothing else is left in it): the parts
  // otherwise double the disk a conversion takes. Also when the merged cache already existed.
  bool clean = false;
  std::function<void(uint64_t done, uint64_t total)> progress;
  CancelToken cancel;              // cancel() from any thread stops the merge (slip/runtime.hpp)
  std::optional<int64_t> created;  // the manifest's "created" time (ConvertOptions::created); default now
};

struct MergeResult {
  std::filesystem::path cache_path;
  std::string content_id;
  bool reused = false;
  std::string reuse_checked;  // when reused: what was checked (as ConvertResult::reuse_checked)
  uint64_t parts = 0, samples = 0, bytes = 0;
  double seconds = 0;
};

// `inputs` is either one work directory (<name>-<id8>.parts/) or the part directories. Checks
// that the parts are complete and uncorrupted (manifest checksum, file sizes, every listed
// file's checksum and every payload's, payloads tiling their .bin), belong to the same source
// and cover it exactly once, then writes the cache a single-process convert writes, byte for
// byte (with the same SOURCE_DATE_EPOCH), atomically. Throws Error(bad_input) naming the
// offending part.
MergeResult merge_parts(const std::vector<std::filesystem::path>& inputs, const MergeOptions& options = {});

struct PartState {
  uint64_t index = 0;
  std::string state;  // "done", "missing", "incomplete" (in progress / abandoned), "damaged: ..."
  std::filesystem::path path;
};

// The parts of a work directory, by index, for `slip merge --status` (count read from any part).
std::vector<PartState> part_status(const std::filesystem::path& workdir);
// How many parts the work directory's part names claim, and how many are done (for `slip ls`),
// without a list as long as the claimed count.
struct PartCounts {
  uint64_t total = 0, done = 0;
};
PartCounts count_parts(const std::filesystem::path& workdir);

// The merge step of a job array finds its work directory from the arguments the tasks were
// given (`slip convert SRC... -o OUT --shard ...`, then `slip merge --source SRC... -o OUT`)
// instead of opening the source again: the work directory is named by the content id, which
// for an ImageFolder needs a scan. Each task records its source arguments in
// <workdir>/sources.json (the first task's record stays; every task of one conversion gives the
// same); local paths are made absolute, so the merge may run from another directory.
void record_part_sources(const std::filesystem::path& workdir, const std::vector<std::string>& sources);
// The work directory under `root` whose recorded sources are `sources`. Throws Error(usage)
// when none is there, or several are (the source changed between conversions: each has its own
// content id), naming them.
std::filesystem::path find_workdir(const std::filesystem::path& root, const std::vector<std::string>& sources);

}  // namespace slip
SLIP_API_END
