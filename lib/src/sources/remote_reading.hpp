// Internal: a remote dataset opened for reading. Tar shards whose listing gives each one's size
// and time are read while later ones download; everything else is downloaded first.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "slip/remote.hpp"
#include "sources/shard_arrivals.hpp"

namespace slip::detail {

struct RemoteReading {
  FetchedDataset fetched;  // local_paths and remote_uris; stats when downloaded up front
  // Set when the shards arrive while being read (fetched.local_paths do not all exist yet):
  // the tar source waits on it, and `fingerprint` is the stat fingerprint of the finished files.
  std::shared_ptr<ShardArrivals> arrivals;
  std::string fingerprint;
};

RemoteReading start_remote_reading(const std::vector<std::string>& uris, const RemoteOptions& options, bool may_stream_shards);

}  // namespace slip::detail
