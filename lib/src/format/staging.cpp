#include "format/staging.hpp"

#include <fcntl.h>
#include <stdio.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "format/layout.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "util/file_io.hpp"
#include "util/file_lock.hpp"
#include "util/untrusted.hpp"

namespace slip::detail {

namespace fs = std::filesystem;

namespace {
const fs::path& created(const fs::path& root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw Error(Errc::io, "cannot create output directory: " + ec.message()).with_path(root.string());
  return root;
}

// A cache that a publication replaces may be being rewritten (index, yuv420 and every other
// manifest writer hold its lock, format/manifest_io.hpp ManifestUpdate): wait for them, and keep
// the next one out until the swap is done; that one then locks the new cache under the name
// (FileLock locks what the name means once it has waited). Nothing when no directory is there.
std::optional<FileLock> lock_cache_being_replaced(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return std::nullopt;
  try {
    return std::optional<FileLock>(std::in_place, dir / kCacheLockName, "the lock of the cache it replaces");
  } catch (const Error&) {
    if (!fs::exists(fs::symlink_status(dir, ec))) return std::nullopt;  // removed meanwhile: nothing to wait for
    throw;
  }
}
}  // namespace

StagingDir::StagingDir(const fs::path& root, const std::string& final_name)
    : root_(root), final_(root / final_name), lock_(created(root), final_name) {
  remove_stale_temporaries(root, final_name);
  std::error_code ec;
  if (!fs::create_directory(lock_.path(), ec) || ec)
    throw Error(Errc::io, "cannot create directory: " + (ec ? ec.message() : std::string("exists"))).with_path(lock_.path().string());
}

StagingDir::~StagingDir() = default;  // the lock removes an unpublished directory

void StagingDir::publish() {
  fsync_directory(lock_.path());
  std::error_code ec;
  // Atomic on Linux file systems that have renameat2: the new cache goes in under the final
  // name unless one is there (RENAME_NOREPLACE); one that is there (forced, stale, or another
  // run's published a moment ago: two `--force` runs of one source) is swapped out in one step
  // (RENAME_EXCHANGE) and removed from our temporary name. Both runs succeed; the last wins.
  for (int attempt = 0;; ++attempt) {
    if (::renameat2(AT_FDCWD, lock_.path().c_str(), AT_FDCWD, final_.c_str(), RENAME_NOREPLACE) == 0) break;
    const int error = errno;
    if (error == EINVAL || error == ENOSYS) {  // no renameat2 here (some network file systems)
      publish_by_moving_aside();
      break;
    }
    if (error != EEXIST && error != ENOTEMPTY) throw_errno("cannot publish cache", final_.string(), error);
    std::optional<FileLock> writers_done = lock_cache_being_replaced(final_);
    if (::renameat2(AT_FDCWD, lock_.path().c_str(), AT_FDCWD, final_.c_str(), RENAME_EXCHANGE) == 0) {
      writers_done.reset();
      fs::remove_all(lock_.path(), ec);  // the cache we replaced
      break;
    }
    // ENOENT: the one there was removed between the two calls; try again.
    if (errno != ENOENT || attempt >= 16) throw_errno("cannot replace existing cache", final_.string(), errno);
  }
  published_ = true;
  lock_.release();
  fsync_directory(root_);
}

void StagingDir::publish_by_moving_aside() {
  std::error_code ec;
  // An existing (forced or stale) cache is moved aside first, then removed.
  if (fs::exists(final_, ec)) {
    const std::optional<FileLock> writers_done = lock_cache_being_replaced(final_);
    const fs::path old = lock_.path().string() + ".old";  // unique to this run, under its lock
    fs::remove_all(old, ec);
    fs::rename(final_, old, ec);
    if (ec) throw Error(Errc::io, "cannot replace existing cache: " + ec.message()).with_path(final_.string());
    fs::remove_all(old, ec);
  }
  fs::rename(lock_.path(), final_, ec);
  if (ec) throw Error(Errc::io, "cannot publish cache: " + ec.message()).with_path(final_.string());
}

namespace {

// The type of dir/name; not_found when absent. Any other failure to look it up (permission)
// is an I/O error, never taken for "missing" or "damaged".
fs::file_type staging_entry_type(const fs::path& path) {
  std::error_code ec;
  const fs::file_type type = fs::symlink_status(path, ec).type();
  if (ec && type != fs::file_type::not_found) throw_errno("cannot look up", path.string(), ec.value());
  return type;
}

}  // namespace

bool manifest_sum_matches(const fs::path& dir, std::string_view text) {
  if (staging_entry_type(dir / kManifestSumName) == fs::file_type::not_found) return false;
  try {
    return read_text_file(dir / kManifestSumName, Open::cache_file) ==
           hex64(xxh3_64(std::as_bytes(std::span(text.data(), text.size())))) + "\n";
  } catch (const Error& e) {
    if (e.code() != Errc::bad_input) throw;  // unreadable (permission, I/O): not a mismatch
    return false;
  }
}

std::pair<std::string, std::optional<bool>> read_manifest_with_sum(const fs::path& dir) {
  const auto read = [&]() -> std::pair<std::string, std::optional<bool>> {
    std::string text = read_text_file(dir / kManifestName, Open::cache_file);
    std::error_code ec;
    if (fs::symlink_status(dir / kManifestSumName, ec).type() == fs::file_type::not_found) return {std::move(text), std::nullopt};
    const bool matches = manifest_sum_matches(dir, text);
    return {std::move(text), matches};
  };
  auto pair = read();
  if (pair.second.value_or(true)) return pair;
  const SharedFileLock writers_done(dir / kCacheLockName);
  return writers_done.held() ? read() : pair;
}

bool is_complete_cache(const fs::path& dir, const std::string& id) {
  // Only what the files say decides "incomplete"; an error reading them keeps its class.
  const std::string text = read_text_file(dir / kManifestName, Open::cache_file);
  if (!manifest_sum_matches(dir, text)) return false;
  try {
    const auto manifest = detail::parse_json_bounded(text);
    if (manifest.at("slip").at("content_id").get<std::string>() != id) return false;
    for (auto& [name, size] : manifest.at("file_sizes").items()) {
      if (!file_stem_problem(name).empty() || staging_entry_type(dir / name) != fs::file_type::regular) return false;
      std::error_code ec;
      const uint64_t got = fs::file_size(dir / name, ec);
      if (ec) throw_errno("cannot read the size of", (dir / name).string(), ec.value());
      if (got != size.get<uint64_t>()) return false;
    }
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  } catch (const Error& e) {
    if (e.code() != Errc::bad_input) throw;
    return false;
  }
}

std::string reuse_problem(const fs::path& dir, const std::string& id) {
  try {
    const std::string text = read_text_file(dir / kManifestName, Open::cache_file);
    if (!manifest_sum_matches(dir, text)) return "manifest.json does not match manifest.json.xxh3 (or that is missing)";
    const auto manifest = detail::parse_json_bounded(text);
    if (manifest.at("slip").at("content_id").get<std::string>() != id) return "its manifest records another content id";
    for (auto& [name, size] : manifest.at("file_sizes").items()) {
      if (!file_stem_problem(name).empty()) return "the manifest lists a file named \"" + escape_for_terminal(name) + "\"";
      std::error_code ec;
      if (!fs::is_regular_file(fs::symlink_status(dir / name, ec))) return escape_for_terminal(name) + " is missing or not a regular file";
      const uint64_t want = size.get<uint64_t>(), got = fs::file_size(dir / name, ec);
      if (ec || got != want)
        return escape_for_terminal(name) + " is " + std::to_string(got) + " bytes; the manifest says " + std::to_string(want);
    }
    // The tables: every listed .npy but an ndarray field's data (which may be as large as
    // payloads); never a .bin (payloads, strings, YUV420 siblings).
    std::set<std::string> arrays;
    for (auto& [name, field] : manifest.at("fields").items())
      if (field.value("type", std::string()) == field_type_name(FieldType::ndarray)) arrays.insert(name + ".npy");
    const auto& sums = manifest.at("slip").at("checksums").at("files");
    for (auto& [name, sum] : sums.items()) {
      if (!name.ends_with(".npy") || arrays.count(name) || !file_stem_problem(name).empty()) continue;
      if (hex64(xxh3_64_of_file(dir / name, Open::cache_file).second) != sum.get<std::string>())
        return escape_for_terminal(name) + " does not match its checksum";
    }
    return {};
  } catch (const nlohmann::json::exception& e) {
    return std::string("damaged manifest: ") + e.what();
  } catch (const Error& e) {
    if (e.code() != Errc::bad_input) throw;  // a permission or disk error is not damage: it keeps its class
    return e.describe();
  }
}

std::string utc_timestamp(std::optional<int64_t> seconds_since_epoch) {
  const std::time_t now = seconds_since_epoch ? static_cast<std::time_t>(*seconds_since_epoch) : std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace slip::detail
