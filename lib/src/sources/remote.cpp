// Remote sources: fetch (slip/remote.hpp), then open the local copy with the usual probes.
// The source keeps the remote URI as its identity, so manifests name where the data lives,
// not where this machine happened to download it.
#include "slip/error.hpp"
#include "slip/remote.hpp"
#include "slip/source.hpp"

namespace slip {

namespace {

class RemoteSource final : public Source {
 public:
  RemoteSource(std::unique_ptr<Source> local, const std::vector<std::string>& remote_uris) : local_(std::move(local)) {
    identity_ = local_->identity();
    identity_.uri.clear();
    for (const std::string& uri : remote_uris) identity_.uri.append(identity_.uri.empty() ? "" : "\n").append(uri);
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
  const FetchedDataset fetched = fetch_remote(uris, RemoteOptions::from_settings(options));
  return std::make_unique<RemoteSource>(open_local_sources(fetched.local_paths, options, true), fetched.remote_uris);
}

}  // namespace slip
