// ImageFolder source with torchvision's semantics (datasets.ImageFolder / make_dataset):
// classes are the sorted sub-directory names of the root (label = position), files are found
// recursively inside each class folder (following symlinks), walked in sorted directory order
// with names sorted inside each directory, kept when the lower-cased name ends in one of
// torchvision's IMG_EXTENSIONS.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/runtime.hpp"
#include "slip/source.hpp"
#include "sources/image_extensions.hpp"
#include "sources/source_registry.hpp"
#include "format/manifest_io.hpp"
#include "util/log.hpp"
#include "util/file_lock.hpp"
#include "util/progress.hpp"
#include "util/file_io.hpp"
#include "util/file_time.hpp"
#include "util/read_ahead.hpp"
#include "sources/listing_check.hpp"
#include "sources/scan_snapshot.hpp"

namespace slip {

namespace fs = std::filesystem;

namespace {

// The images in sample order: relative paths (class/.../file) packed in one string, with a
// label each. At 1.28M images this is ~60 MB where a std::string per image took twice that.
class EntryList {
 public:
  void add(std::string_view relative, uint32_t label, uint64_t size = 0, int64_t mtime_ns = detail::kUnknownMtime) {
    names_.append(relative);
    ends_.push_back(names_.size());
    labels_.push_back(label);
    sizes_.push_back(size);
    mtimes_.push_back(mtime_ns);
  }
  // What the scan's stat saw (set from its threads, one index each).
  void set_stat(size_t i, uint64_t size, int64_t mtime_ns) {
    sizes_[i] = size;
    mtimes_[i] = mtime_ns;
  }
  uint64_t size_of(size_t i) const { return sizes_[i]; }
  int64_t mtime_of(size_t i) const { return mtimes_[i]; }
  size_t size() const { return labels_.size(); }
  std::string_view relative(size_t i) const {
    const uint64_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(names_).substr(begin, ends_[i] - begin);
  }
  uint32_t label(size_t i) const { return labels_[i]; }
  void reserve(size_t n) {
    ends_.reserve(n);
    labels_.reserve(n);
    sizes_.reserve(n);
    mtimes_.reserve(n);
  }

 private:
  std::string names_;
  std::vector<uint64_t> ends_;
  std::vector<uint32_t> labels_;
  std::vector<uint64_t> sizes_;
  std::vector<int64_t> mtimes_;
};

class ImageFolderSource final : public Source, public detail::ListingCheckable {
 public:
  ImageFolderSource(const std::string& root_arg, detail::ReadAheadOptions read_options, bool content_fingerprint,
                    const SourceOptions& options = {})
      : read_options_(read_options), content_fingerprint_(content_fingerprint) {
    std::error_code ec;
    root_ = fs::absolute(fs::path(root_arg), ec).lexically_normal();
    if (root_.has_filename() == false) root_ = root_.parent_path();
    if (!fs::exists(root_, ec)) throw Error(Errc::io, "no such directory").with_path(root_arg);
    if (!fs::is_directory(root_, ec)) throw Error(Errc::bad_input, "not a directory").with_path(root_arg);
    root_slash_ = root_.string();
    if (root_slash_.empty() || root_slash_.back() != '/') root_slash_ += '/';
    root_name_slash_ = root_.filename().string() + "/";
    if (options.scan_snapshot_dir.empty())
      scan(options.progress);
    else
      scan_shared(options.scan_snapshot_dir, options.progress);
    schema_.fields = {{"image", FieldType::image, {}, {}},
                      {"label", FieldType::int64, {}, {}},
                      {"index", FieldType::int64, {}, {}},
                      {"path", FieldType::str, {}, {}}};
  }

  const Schema& schema() const override { return schema_; }
  std::optional<uint64_t> size() const override { return entries_.size(); }
  SourceIdentity identity() const override { return {"imagefolder", root_.string(), fingerprint_, root_.filename().string(), {}}; }

  // "sha256:" + SHA-256 of "<class/relative/path>\t<size>\t<mtime ns>\n" per image in sample
  // order ("?" for what could not be stat'ed): the stat fingerprint's lines, here for both the
  // scan's record and a fresh stat (on read_options_.depth threads, a chunk at a time).
  detail::ListingCheck recheck_listing() const override {
    auto line_of = [](std::string& line, std::string_view relative, std::optional<std::pair<uint64_t, int64_t>> stat) {
      line.assign(relative).push_back('\t');
      if (!stat || stat->second == detail::kUnknownMtime) return line.append("?\t?\n"), void();
      line.append(std::to_string(stat->first)).push_back('\t');
      line.append(std::to_string(stat->second)).push_back('\n');
    };
    Sha256 listed, now;
    constexpr size_t kChunk = 16384;
    std::vector<std::string> lines;
    std::string line;
    for (size_t first = 0; first < entries_.size(); first += kChunk) {
      throw_if_interrupted();
      const size_t count = std::min(kChunk, entries_.size() - first);
      for (size_t k = 0; k < count; ++k) {
        line_of(line, entries_.relative(first + k), std::pair{entries_.size_of(first + k), entries_.mtime_of(first + k)});
        listed.update(line);
      }
      lines.assign(count, std::string());
      parallel_for(count, read_options_.depth, [&](size_t k) {
        const std::string_view relative = entries_.relative(first + k);
        struct stat st {};
        const bool ok = ::stat(full_path(relative).c_str(), &st) == 0;
        line_of(lines[k], relative,
                ok ? std::optional(std::pair{static_cast<uint64_t>(st.st_size), detail::unix_mtime_ns(st)}) : std::nullopt);
      });
      for (const std::string& l : lines) now.update(l);
    }
    return detail::ListingCheck{"sha256:" + listed.hex_digest(), "sha256:" + now.hex_digest()};
  }

  uint64_t skip(uint64_t n) override {
    const uint64_t done = std::min<uint64_t>(n, entries_.size() - pos_);
    pos_ += done;
    reader_.reset();  // restarts at the new position
    return done;
  }

  bool next(Sample& out) override {
    if (pos_ >= entries_.size()) return false;
    const std::string_view relative = entries_.relative(pos_);
    out.source_index = pos_;
    out.values.resize(4);
    for (auto& v : out.values) v = Value{};
    out.problem.reset();
    out.origin = full_path(relative);
    // Files are read ahead of the writer with io-depth requests in flight (util/read_ahead.hpp).
    if (!reader_)
      reader_ = std::make_unique<detail::ReadAhead>([this](uint64_t i) { return full_path(entries_.relative(i)); }, pos_,
                                                    entries_.size() - pos_, read_options_);
    detail::ReadResult read = std::move(*reader_->take());
    if (!read.problem) check_unchanged(pos_, read);
    out.values[0].bytes = std::move(read.bytes);
    out.problem = std::move(read.problem);
    out.values[1].int_value = entries_.label(pos_);
    out.values[2].int_value = static_cast<int64_t>(pos_);
    // The Python reader stores the path relative to the root's parent (docs/FORMAT.md#imagefolder).
    Bytes& path = out.values[3].bytes;
    path.resize(root_name_slash_.size() + relative.size());
    std::memcpy(path.data(), root_name_slash_.data(), root_name_slash_.size());
    std::memcpy(path.data() + root_name_slash_.size(), relative.data(), relative.size());
    ++pos_;
    return true;
  }

 private:
  // The file read must be the one the scan fingerprinted: an image rewritten in place (same
  // name, the directory's mtime unchanged) between the scan and this read, e.g. between two
  // tasks of a job array sharing one saved scan, would be stored under a content id that
  // describes its old bytes, and merged with the other tasks' parts as if nothing changed.
  void check_unchanged(size_t i, const detail::ReadResult& read) const {
    const int64_t scanned_mtime = entries_.mtime_of(i);
    if (scanned_mtime == detail::kUnknownMtime || read.mtime_ns == detail::kUnknownMtime) return;
    if (read.size == entries_.size_of(i) && read.mtime_ns == scanned_mtime) return;
    throw Error(Errc::bad_input, "changed since the ImageFolder scan (" + std::to_string(entries_.size_of(i)) + " bytes, mtime " +
                                     std::to_string(scanned_mtime) + " ns then; " + std::to_string(read.size) + " bytes, mtime " +
                                     std::to_string(read.mtime_ns) +
                                     " ns now): the content id no longer describes the tree; convert (every task) again")
        .with_path(full_path(entries_.relative(i)))
        .with_sample(i);
  }

  // --fingerprint content's line for one image: its SHA-256, hashed in blocks (memory bounded
  // whatever its size); a file over the sample limit (never read: its sample is bad) by its
  // size and mtime. nullopt when it cannot be read.
  struct ContentHash {
    std::string hex;
    uint64_t size = 0;
    int64_t mtime_ns = detail::kUnknownMtime;
  };
  static std::optional<ContentHash> content_hash_of(const std::string& path, uint64_t max_bytes) {
    try {
      struct stat st {};
      const detail::UniqueFd fd = detail::open_input_file(path, &st);
      ContentHash out{{}, static_cast<uint64_t>(st.st_size), detail::unix_mtime_ns(st)};
      if (out.size > max_bytes) {
        out.hex = "over-limit " + std::to_string(out.size) + " " + std::to_string(out.mtime_ns);
        return out;
      }
      Sha256 hash;
      std::vector<std::byte> block(std::min<uint64_t>(out.size + 1, 1 << 20));
      while (true) {
        const ssize_t n = ::read(fd.get(), block.data(), block.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::nullopt;
        if (n == 0) break;
        hash.update(std::span<const std::byte>(block.data(), static_cast<size_t>(n)));
      }
      out.hex = hash.hex_digest();
      return out;
    } catch (const Error& e) {
      if (e.code() == Errc::interrupted) throw;
      return std::nullopt;
    }
  }

  // root_ / relative, as fs::path would join them, without parsing a path per image (this
  // runs twice per sample: the string work of fs::path was a few percent of a conversion).
  std::string full_path(std::string_view relative) const {
    std::string full;
    full.reserve(root_slash_.size() + relative.size());
    return full.append(root_slash_).append(relative);
  }

  // One class directory walked as sorted(os.walk(class_dir, followlinks=True)) does, except
  // that each directory (device, inode) is entered once: a symbolic link back to an ancestor
  // or to a directory already walked is reported and skipped, never followed again (os.walk
  // would recurse until the path is too long, duplicating every image on the way).
  struct ClassWalk {
    std::map<std::string, std::vector<std::string>> files_by_dir;  // directory -> image names
    std::vector<std::pair<std::string, int64_t>> dir_mtimes;       // each directory entered, its mtime (ns)
    std::vector<std::string> warnings;
  };

  static ClassWalk walk_class(const std::string& class_dir) {
    ClassWalk out;
    std::set<std::pair<dev_t, ino_t>> entered;
    auto enter = [&](const std::string& dir) {
      struct stat st {};
      if (::stat(dir.c_str(), &st) != 0) return false;  // unreadable: os.walk skips it too
      if (!entered.emplace(st.st_dev, st.st_ino).second) return false;
      out.dir_mtimes.emplace_back(dir, detail::unix_mtime_ns(st));
      return true;
    };
    enter(class_dir);
    out.files_by_dir[class_dir];
    std::vector<std::string> pending{class_dir};
    // readdir, not fs::directory_iterator: one path object per entry was a third of a
    // page-cache scan's CPU.
    struct CloseDir {
      void operator()(DIR* d) const noexcept { ::closedir(d); }
    };
    while (!pending.empty()) {
      throw_if_interrupted();
      const std::string dir = std::move(pending.back());
      pending.pop_back();
      const std::unique_ptr<DIR, CloseDir> handle(::opendir(dir.c_str()));
      if (!handle) throw Error(Errc::io, std::string("cannot list directory: ") + std::strerror(errno)).with_path(dir);
      std::vector<std::string>* names = nullptr;
      while (true) {
        errno = 0;
        const dirent* e = ::readdir(handle.get());
        if (e == nullptr) {
          if (errno != 0) throw Error(Errc::io, std::string("cannot list directory: ") + std::strerror(errno)).with_path(dir);
          break;
        }
        const std::string_view name = e->d_name;
        if (name == "." || name == "..") continue;
        bool is_dir = e->d_type == DT_DIR;
        std::string path;
        if (e->d_type == DT_DIR || e->d_type == DT_LNK || e->d_type == DT_UNKNOWN) {
          path.reserve(dir.size() + 1 + name.size());
          path.append(dir).append("/").append(name);
          struct stat st {};  // follows links, like os.walk(followlinks=True)
          if (!is_dir) is_dir = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
        }
        if (is_dir) {
          if (enter(path))
            pending.push_back(std::move(path));
          else
            out.warnings.push_back(path + ": a directory already walked (a symbolic link loop?); skipped");
          continue;
        }
        if (detail::has_image_folder_extension(name)) {
          if (names == nullptr) names = &out.files_by_dir[dir];
          names->emplace_back(name);
        }
      }
    }
    std::sort(out.warnings.begin(), out.warnings.end());
    return out;
  }

  void scan(const ProgressCallback& progress) {
    std::vector<std::string> classes;
    std::error_code ec;
    struct stat root_st {};
    if (::stat(root_.c_str(), &root_st) == 0) snapshot_.dirs.emplace_back(".", detail::unix_mtime_ns(root_st));
    fs::directory_iterator it(root_, ec);
    if (ec) throw Error(Errc::io, "cannot list directory: " + ec.message()).with_path(root_.string());
    for (const auto& entry : it) {
      if (entry.is_directory(ec)) classes.push_back(entry.path().filename().string());
    }
    std::sort(classes.begin(), classes.end());
    if (classes.empty())
      throw Error(Errc::bad_input, "no class folders: an ImageFolder root holds one sub-directory per class").with_path(root_.string());
    // Class directories are listed in parallel (a network file system answers each listing in
    // milliseconds), then every image is stat'ed in parallel for the fingerprint.
    const unsigned threads = std::max(1u, read_options_.depth);
    std::vector<ClassWalk> walks(classes.size());
    detail::PhaseProgress listed(progress, "scan", classes.size());
    parallel_for(classes.size(), static_cast<unsigned>(std::min<size_t>(threads, classes.size())), [&](size_t c) {
      walks[c] = walk_class((root_ / classes[c]).string());
      listed.add();
    });
    listed.finish();
    for (uint32_t label = 0; label < classes.size(); ++label) {
      for (const std::string& w : walks[label].warnings) detail::warn("{}", w);
      for (const auto& [dir, mtime] : walks[label].dir_mtimes)
        snapshot_.dirs.emplace_back(fs::path(dir).lexically_relative(root_).string(), mtime);
      size_t found = 0;
      for (auto& [dir, names] : walks[label].files_by_dir) {
        std::sort(names.begin(), names.end());
        const std::string rel_dir = fs::path(dir).lexically_relative(root_).string();
        for (const auto& name : names) {
          entries_.add(rel_dir + "/" + name, label);
          ++found;
        }
      }
      if (found == 0)
        throw Error(Errc::bad_input, "class folder holds no image files (extensions: .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp)")
            .with_path((root_ / classes[label]).string());
      walks[label] = ClassWalk{};
    }
    // Lines are made in parallel (a stat, or a read and hash, each) a chunk at a time and hashed
    // in order, so memory does not grow with the number of images.
    detail::PhaseProgress fingerprinted(progress, "fingerprint", entries_.size());
    Sha256 fingerprint;
    constexpr size_t kChunk = 16384;
    std::vector<std::string> lines;
    // The first 8 lines are made here, timed. When they come from the page cache (a few us
    // each), 32 threads cost more to start and switch between than they save, and the rest is
    // made on one thread per CPU; on a network file system, on `depth` threads. Only 8: there,
    // each probe is a serial round trip (64 of them took imagefolder_slowfs from 7.8x to 3.8x).
    constexpr size_t kProbe = 8;
    unsigned line_threads = threads;
    for (size_t first = 0; first < entries_.size(); first += kChunk) {
      throw_if_interrupted();
      const size_t count = std::min(kChunk, entries_.size() - first);
      lines.assign(count, std::string());
      auto make_line = [&](size_t k) {
        const size_t i = first + k;
        if (k % 256 == 0) {
          throw_if_interrupted();
          fingerprinted.add(std::min<size_t>(256, count - k));
        }
        const std::string_view relative = entries_.relative(i);
        const std::string full = full_path(relative);  // (fs::path's string work was half of a page-cache scan's CPU)
        std::string& line = lines[k];
        line.reserve(relative.size() + 48);
        line.append(relative).push_back('\t');
        if (content_fingerprint_) {  // --fingerprint content: the bytes, so copies keep the id
          const auto hashed = content_hash_of(full, read_options_.max_file_bytes);
          line.append(hashed ? hashed->hex : std::string("unreadable")).push_back('\n');
          if (hashed) entries_.set_stat(i, hashed->size, hashed->mtime_ns);
          return;
        }
        struct stat st {};
        if (::stat(full.c_str(), &st) != 0) {
          line.append("unreadable\n");
          return;
        }
        entries_.set_stat(i, static_cast<uint64_t>(st.st_size), detail::unix_mtime_ns(st));
        char number[24];
        line.append(number, std::to_chars(number, number + sizeof number, static_cast<int64_t>(st.st_size)).ptr).push_back('\t');
        line.append(number, std::to_chars(number, number + sizeof number, detail::unix_mtime_ns(st)).ptr).push_back('\n');
      };
      size_t probed = 0;
      if (first == 0) {
        const auto t = std::chrono::steady_clock::now();
        for (; probed < std::min(kProbe, count); ++probed) make_line(probed);
        const double us_per_line =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() / double(std::max<size_t>(probed, 1));
        if (us_per_line < 20) line_threads = std::min(threads, std::max(1u, available_cpus()));
      }
      parallel_for(count - probed, line_threads, [&](size_t k) { make_line(probed + k); });
      for (const std::string& line : lines) fingerprint.update(line);
    }
    fingerprint_ = std::string(content_fingerprint_ ? "sha256-content:" : "sha256:") + fingerprint.hex_digest();
    fingerprinted.finish();
  }

  // The tasks of a job array (--shard) share one scan: the first one lists and fingerprints
  // the tree and saves the result beside the caches; the others, holding the same lock in turn,
  // load it after checking every directory's mtime (a file added, removed or renamed changes
  // its directory's), so a task costs one stat per directory instead of a stat per image.
  void scan_shared(const fs::path& dir, const ProgressCallback& progress) {
    const std::string mode = content_fingerprint_ ? "content" : "stat";
    const fs::path file = dir / detail::scan_snapshot_name(root_.string(), mode);
    std::error_code ec;
    fs::create_directories(dir, ec);
    std::optional<detail::FileLock> lock;
    try {
      lock.emplace(file.string() + ".lock", "the scan lock");
    } catch (const Error& e) {  // best effort: without a lock, tasks starting together each scan
      if (e.code() == Errc::interrupted) throw;
      detail::warn("{}", e.describe());
    }
    EntryList loaded_entries;
    if (auto loaded = detail::load_scan_snapshot(file, root_.string(), mode, read_options_.depth, [&](const detail::ScanEntry& e) {
          loaded_entries.add(e.relative, e.label, e.size, e.mtime_ns);
        })) {
      snapshot_ = std::move(*loaded);
      fingerprint_ = snapshot_.fingerprint;
      entries_ = std::move(loaded_entries);
      detail::info("reused the scan of {} ({} images) from {}", root_.string(), entries_.size(), file.string());
      return;
    }
    scan(progress);
    snapshot_.root = root_.string();
    snapshot_.mode = mode;
    snapshot_.fingerprint = fingerprint_;
    try {
      detail::save_scan_snapshot(file, snapshot_, entries_.size(), [this](size_t i) {
        return detail::ScanEntry{entries_.label(i), entries_.relative(i), entries_.size_of(i), entries_.mtime_of(i)};
      });
    } catch (const Error& e) {  // sharing is an optimisation: a read-only output directory only costs time
      detail::warn("cannot save the scan for the other tasks: {}", e.describe());
    }
  }

  fs::path root_;
  std::string root_slash_;       // root_ with one trailing '/': the prefix of every image's path
  std::string root_name_slash_;  // the root's own name and '/': the prefix of the path field
  Schema schema_;
  EntryList entries_;
  std::string fingerprint_;
  detail::ScanSnapshot snapshot_;  // directory mtimes of this scan
  size_t pos_ = 0;
  detail::ReadAheadOptions read_options_;
  bool content_fingerprint_ = false;
  std::unique_ptr<detail::ReadAhead> reader_;
};

}  // namespace

std::unique_ptr<Source> open_imagefolder(const std::string& root) {
  return std::make_unique<ImageFolderSource>(root, detail::ReadAheadOptions{}, false);
}

namespace detail {
std::unique_ptr<Source> open_imagefolder(const std::string& root, const SourceOptions& options) {
  ReadAheadOptions read;
  if (auto depth = options.get("io-depth")) read.depth = static_cast<unsigned>(parse_io_depth(*depth));
  // A file over --max-sample-bytes is a bad sample, never read (its size is checked first).
  read.max_file_bytes = max_sample_bytes(options);
  const auto fingerprint = options.get("fingerprint").value_or("stat");
  if (fingerprint != "stat" && fingerprint != "content") throw Error(Errc::usage, "--fingerprint wants stat or content");
  return std::make_unique<ImageFolderSource>(root, read, fingerprint == "content", options);
}
}  // namespace detail

}  // namespace slip
