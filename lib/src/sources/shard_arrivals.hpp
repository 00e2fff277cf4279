// Internal: tar shards that arrive while they are read (remote shards downloading in order),
// so a conversion starts on the first shard instead of waiting for the last.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "slip/source.hpp"

namespace slip::detail {

class ShardArrivals {
 public:
  virtual ~ShardArrivals() = default;
  // Blocks until shard `index` (of the whole list) is complete on disk. Throws its download's
  // Error, or Error(interrupted) once abort() was called.
  virtual void wait(size_t index) = 0;
  // Only shards [begin, end) will be read (a job-array task's slice): fetch no others.
  virtual void restrict_to(size_t begin, size_t end) = 0;
  // Stops the downloads and wakes every wait(); called before the reader joins its threads.
  virtual void abort() noexcept = 0;
};

// Tar shards (WebDataset layout) at `local_paths`, each read only once `arrivals` says it is
// there. The identity's fingerprint is `fingerprint` (what stat of the finished files would
// give), as no file can be statted up front.
std::unique_ptr<Source> open_arriving_tar_shards(const std::vector<std::string>& local_paths, const SourceOptions& options,
                                                 std::shared_ptr<ShardArrivals> arrivals, std::string fingerprint);

}  // namespace slip::detail
