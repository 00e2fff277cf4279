// slip/stage.hpp — node-local staging: one verified copy of a cache per node (/dev/shm, local
// NVMe), made by one process while every other caller on the node waits for it, and held by
// its readers so that an eviction under a budget never removes a copy in use.
#pragma once

#include "slip/export.hpp"
#include "slip/runtime.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

SLIP_API_BEGIN
namespace slip {

struct StageOptions {
  std::filesystem::path dir;       // the stage directory (created when missing)
  std::optional<uint64_t> budget;  // bytes the staged caches in `dir` may use together
  bool links = true;               // reflink (FICLONE) or hard-link where the file system allows; else copy
  unsigned threads = 0;            // threads checking the copy (0: available_cpus())
  // Called with (bytes placed, total bytes) while this call copies; never called when the cache is
  // already staged. Runs on the calling thread, holding the stage directory's lock.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

// A staged cache, held: while the handle lives, the copy is read-locked (a shared flock on
// "<dir>/.<name>.stage-lock") and no `stage` with a budget evicts it. Move-only.
class StagedCache {
 public:
  StagedCache() = default;
  ~StagedCache();
  StagedCache(StagedCache&& other) noexcept;
  StagedCache& operator=(StagedCache&& other) noexcept;
  StagedCache(const StagedCache&) = delete;
  StagedCache& operator=(const StagedCache&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }      // the staged copy
  const std::filesystem::path& source() const noexcept { return source_; }  // the cache it copies (absolute)
  bool held() const noexcept { return fd_ >= 0; }
  void release() noexcept;  // drops the read lock (the copy stays until evicted)

  // What this call did.
  bool copied = false;                         // this call placed the copy (false: it was already staged)
  uint64_t bytes = 0;                          // the cache's size (its files)
  uint64_t bytes_copied = 0;                   // bytes this call read from the source and wrote
  uint64_t bytes_linked = 0;                   // bytes this call placed by reflink or hard link (nothing read)
  uint64_t bytes_verified = 0;                 // bytes of the copy checked against the cache's checksums
  std::vector<std::filesystem::path> evicted;  // staged caches this call removed for the budget

 private:
  friend StagedCache stage(const std::filesystem::path&, const StageOptions&);
  std::filesystem::path path_, source_;
  int fd_ = -1;
};

// Stages the cache at `src` into options.dir under a name that names its content and returns it
// held: its own directory name when that holds the first 8 hex digits of its content id (slip's
// "<name>-<id8>.slipstream"), else that name with "-<id8>" added (a job array's
// "part-00000-of-00002.slipstream" -> "part-00000-of-00002-<id8>.slipstream"), so that two
// caches of one directory name never share a staged copy.
//
// On one node exactly one caller copies: an exclusive flock on "<dir>/.slip-stage.lock" is held
// while a cache is looked up, copied, checked and published, and every other caller waits on it
// (interruptibly). The lock dies with its process, so a copier killed midway is taken over by
// the next caller, which removes the partial copy it left. The copy is written under a
// temporary name, checked as `slip verify` checks a cache (structure, bounds, the manifest's
// and every file's and payload's XXH3-64), and renamed into place only when whole: a damaged
// source throws Error(bad_input) naming the file (and sample) and publishes nothing. A cache
// already staged (same manifest, files of their recorded sizes) is not copied again; a stale
// one (the source changed) is replaced unless a reader holds it (Error(io)).
//
// With a budget, least-recently-staged caches of `dir` that no handle holds are removed until
// this one fits; Error(io) when it cannot fit.
StagedCache stage(const std::filesystem::path& src, const StageOptions& options);

// Where a reader should stage: `given` when set and non-empty, else SLIP_STAGE_DIR in `env`
// (pass process_environment()) when set and non-empty, else nullopt (read the cache where it
// lies). The Loader's stage_dir= rule.
std::optional<std::filesystem::path> stage_dir_from(const std::optional<std::filesystem::path>& given, const Environment& env);

}  // namespace slip
SLIP_API_END
