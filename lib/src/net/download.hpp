// Internal: one remote object into one local file — resumable, checked, shared safely between
// processes (a lock file per download, so SLURM array tasks fetching the same dataset wait
// for each other instead of writing the same .part).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "net/http.hpp"
#include "slip/transport.hpp"

namespace slip::net {

struct DownloadItem {
  std::string uri;  // for messages (redacted)
  // Builds the GET with the given extra headers (Range, If-Range, If-None-Match...), signed now.
  std::function<Transfer(std::vector<std::string> extra_headers)> make_get;
  std::filesystem::path dest;
  // The download directory dest lies in: the directories between them are created and checked
  // one at a time (no link, none owned by another user). Empty: dest's directory is created as is.
  std::filesystem::path download_dir;
  std::optional<uint64_t> expected_size;  // from a listing
  std::string expected_etag;              // from a listing (S3)
  bool etag_is_content_md5 = false;       // S3: a quoted 32-hex ETag is the MD5 of the object
  std::optional<int64_t> listed_mtime;    // from a listing (S3 LastModified), whole seconds
};

enum class DownloadOutcome { downloaded, resumed, reused };

// Makes `item.dest` a complete, checked copy of the remote object. Returns what it did and
// adds the bytes received to *bytes. Throws Error(io) for 4xx, Error(retryable) when network
// failures, 5xx or mismatched lengths/checksums persist through options.retry.
DownloadOutcome download(const DownloadItem& item, const TransportOptions& options, uint64_t* bytes);

// What a HEAD says of the object: its size and Last-Modified (whole seconds), each nullopt
// when the server does not say. Transient failures are retried as downloads are; any other
// failure (404, 405 for servers that refuse HEAD) gives nullopt for both: the GET will report
// what is wrong. Throws only Error(interrupted).
struct ObjectInfo {
  std::optional<uint64_t> size;
  std::optional<int64_t> modified;
};
ObjectInfo probe(const DownloadItem& item, const TransportOptions& options);

// download_dir/<scheme>/<host>/<path...> for a URI, every path segment checked (no "..",
// ".", empty or NUL segments): remote names never leave the download directory.
std::filesystem::path local_path_for(const std::filesystem::path& download_dir, const std::string& scheme, const std::string& host,
                                     std::string_view path);

}  // namespace slip::net
