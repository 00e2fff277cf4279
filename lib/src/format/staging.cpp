#include "format/staging.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <nlohmann/json.hpp>

#include "format/layout.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "util/file_io.hpp"

namespace slip::detail {

namespace fs = std::filesystem;

bool process_alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

StagingDir::StagingDir(const fs::path& root, const std::string& final_name) : root_(root), final_(root / final_name) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw Error(Errc::io, "cannot create output directory: " + ec.message()).with_path(root.string());
  const std::string prefix = "." + final_name + ".tmp-";
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && !process_alive(std::atol(name.c_str() + prefix.size()))) {
      std::error_code rm;
      fs::remove_all(entry.path(), rm);
    }
  }
  tmp_ = root / (prefix + std::to_string(::getpid()));
  fs::remove_all(tmp_, ec);
  if (!fs::create_directory(tmp_, ec) || ec)
    throw Error(Errc::io, "cannot create directory: " + (ec ? ec.message() : std::string("exists"))).with_path(tmp_.string());
}

StagingDir::~StagingDir() {
  if (!published_) {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }
}

void StagingDir::publish() {
  fsync_directory(tmp_);
  std::error_code ec;
  // An existing (forced or stale) cache is moved aside first, then removed.
  if (fs::exists(final_, ec)) {
    const fs::path old = root_ / ("." + final_.filename().string() + ".old-" + std::to_string(::getpid()));
    fs::remove_all(old, ec);
    fs::rename(final_, old, ec);
    if (ec) throw Error(Errc::io, "cannot replace existing cache: " + ec.message()).with_path(final_.string());
    fs::remove_all(old, ec);
  }
  fs::rename(tmp_, final_, ec);
  if (ec) throw Error(Errc::io, "cannot publish cache: " + ec.message()).with_path(final_.string());
  published_ = true;
  fsync_directory(root_);
}

bool manifest_sum_matches(const fs::path& dir, std::string_view text) {
  try {
    return read_text_file(dir / kManifestSumName) == hex64(xxh3_64(std::as_bytes(std::span(text.data(), text.size())))) + "\n";
  } catch (const Error&) {
    return false;
  }
}

bool is_complete_cache(const fs::path& dir, const std::string& id) {
  try {
    const std::string text = read_text_file(dir / kManifestName);
    if (!manifest_sum_matches(dir, text)) return false;
    const auto manifest = nlohmann::json::parse(text);
    if (manifest.at("slip").at("content_id").get<std::string>() != id) return false;
    for (auto& [name, size] : manifest.at("file_sizes").items())
      if (fs::file_size(dir / name) != size.get<uint64_t>()) return false;
    return true;
  } catch (...) {
    return false;
  }
}

std::string utc_timestamp() {
  std::time_t now = std::time(nullptr);
  if (const char* sde = std::getenv("SOURCE_DATE_EPOCH"); sde && *sde) now = static_cast<std::time_t>(std::atoll(sde));
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace slip::detail
