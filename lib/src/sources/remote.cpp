// Remote sources: fetch (slip/remote.hpp), then open the local copy with the usual probes;
// tar shards listed with their sizes and times are read while later ones download.
// The source keeps the remote URI as its identity, so manifests name where the data lives,
// not where this machine happened to download it.
#include "slip/error.hpp"
#include "slip/remote.hpp"
#include "slip/source.hpp"
#include "sources/remote_reading.hpp"
#include "sources/source_registry.hpp"

namespace slip {

namespace {

class RemoteSource final : public Source {
 public:
  RemoteSource(std::unique_ptr<Source> local, const std::vector<std::string>& remote_uris) : local_(std::move(local)) {
    identity_ = local_->identity();
    identity_.uri.clear();
    for (const std::string& uri : remote_uris) identity_.uri.append(identity_.uri.empty() ? "" : "\n").append(uri);
    // What manifests list: the URIs given, never this machine's download paths.
    identity_.uris = remote_uris.size() > 1 ? remote_uris : std::vector<std::string>{};
  }
  const Schema& schema() const override { return local_->schema(); }
  SourceIdentity identity() const override { return identity_; }
  std::optional<uint64_t> size() const override { return local_->size(); }
  bool next(Sample& out) override { return local_->next(out); }
  uint64_t skip(uint64_t n) override { return local_->skip(n); }
  std::optional<FileSlice> select_files(uint64_t index, uint64_t count) override { return local_->select_files(index, count); }

 private:
  std::unique_ptr<Source> local_;
  SourceIdentity identity_;
};

}  // namespace

std::unique_ptr<Source> open_local_sources(const std::vector<std::string>& paths, const SourceOptions& options, bool remote);

std::unique_ptr<Source> open_remote_sources(const std::vector<std::string>& uris, const SourceOptions& options) {
  // Shards are read as they arrive unless the identity needs their bytes first (--fingerprint
  // content) or the layout reorders members across shards.
  const bool may_stream =
      options.get("fingerprint").value_or("stat") != "content" && options.get("layout").value_or("webdataset") == "webdataset";
  detail::RemoteReading reading = detail::start_remote_reading(uris, RemoteOptions::from_settings(options), may_stream);
  std::unique_ptr<Source> local;
  if (reading.arrivals) {
    detail::check_source_settings("tar", options, true);
    local = detail::open_arriving_tar_shards(reading.fetched.local_paths, options, reading.arrivals, reading.fingerprint);
  } else {
    local = open_local_sources(reading.fetched.local_paths, options, true);
  }
  return std::make_unique<RemoteSource>(std::move(local), reading.fetched.remote_uris);
}

}  // namespace slip
