// ImageFolder source with torchvision's semantics (datasets.ImageFolder / make_dataset):
// classes are the sorted sub-directory names of the root (label = position), files are found
// recursively inside each class folder (following symlinks), walked in sorted directory order
// with names sorted inside each directory, kept when the lower-cased name ends in one of
// torchvision's IMG_EXTENSIONS.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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
#include "util/log.hpp"
#include "util/read_ahead.hpp"

namespace slip {

namespace fs = std::filesystem;

namespace {

struct Entry {
  std::string relative;  // class/.../file, relative to the root
  uint32_t label;
};

class ImageFolderSource final : public Source {
 public:
  ImageFolderSource(const std::string& root_arg, detail::ReadAheadOptions read_options, bool content_fingerprint)
      : read_options_(read_options), content_fingerprint_(content_fingerprint) {
    std::error_code ec;
    root_ = fs::absolute(fs::path(root_arg), ec).lexically_normal();
    if (root_.has_filename() == false) root_ = root_.parent_path();
    if (!fs::exists(root_, ec)) throw Error(Errc::io, "no such directory").with_path(root_arg);
    if (!fs::is_directory(root_, ec)) throw Error(Errc::bad_input, "not a directory").with_path(root_arg);
    scan();
    schema_.fields = {{"image", FieldType::image, {}, {}},
                      {"label", FieldType::int64, {}, {}},
                      {"index", FieldType::int64, {}, {}},
                      {"path", FieldType::str, {}, {}}};
  }

  const Schema& schema() const override { return schema_; }
  std::optional<uint64_t> size() const override { return entries_.size(); }
  SourceIdentity identity() const override { return {"imagefolder", root_.string(), fingerprint_, root_.filename().string(), {}}; }

  uint64_t skip(uint64_t n) override {
    const uint64_t done = std::min<uint64_t>(n, entries_.size() - pos_);
    pos_ += done;
    reader_.reset();  // restarts at the new position
    return done;
  }

  bool next(Sample& out) override {
    if (pos_ >= entries_.size()) return false;
    const Entry& e = entries_[pos_];
    out.source_index = pos_;
    out.values.resize(4);
    for (auto& v : out.values) v = Value{};
    out.problem.reset();
    const fs::path file = root_ / e.relative;
    out.origin = file.string();
    // Files are read ahead of the writer with io-depth requests in flight (util/read_ahead.hpp).
    if (!reader_)
      reader_ = std::make_unique<detail::ReadAhead>([this](uint64_t i) { return (root_ / entries_[i].relative).string(); }, pos_,
                                                    entries_.size() - pos_, read_options_);
    detail::ReadResult read = std::move(*reader_->take());
    out.values[0].bytes = std::move(read.bytes);
    out.problem = std::move(read.problem);
    out.values[1].int_value = e.label;
    out.values[2].int_value = static_cast<int64_t>(pos_);
    // The Python reader stores the path relative to the root's parent (docs/FORMAT.md#imagefolder).
    const std::string rel = root_.filename().string() + "/" + e.relative;
    out.values[3].bytes.assign(reinterpret_cast<const std::byte*>(rel.data()), reinterpret_cast<const std::byte*>(rel.data()) + rel.size());
    ++pos_;
    return true;
  }

 private:
  // One class directory walked as sorted(os.walk(class_dir, followlinks=True)) does, except
  // that each directory (device, inode) is entered once: a symbolic link back to an ancestor
  // or to a directory already walked is reported and skipped, never followed again (os.walk
  // would recurse until the path is too long, duplicating every image on the way).
  struct ClassWalk {
    std::map<std::string, std::vector<std::string>> files_by_dir;  // directory -> image names
    std::vector<std::string> warnings;
  };

  static ClassWalk walk_class(const fs::path& class_dir) {
    ClassWalk out;
    std::set<std::pair<dev_t, ino_t>> entered;
    auto enter = [&](const fs::path& dir) {
      struct stat st {};
      if (::stat(dir.c_str(), &st) != 0) return false;  // unreadable: os.walk skips it too
      return entered.emplace(st.st_dev, st.st_ino).second;
    };
    enter(class_dir);
    out.files_by_dir[class_dir.string()];
    std::vector<fs::path> pending{class_dir};
    while (!pending.empty()) {
      throw_if_interrupted();
      const fs::path dir = std::move(pending.back());
      pending.pop_back();
      std::error_code ec;
      fs::directory_iterator it(dir, ec);
      if (ec) throw Error(Errc::io, "cannot list directory: " + ec.message()).with_path(dir.string());
      for (const fs::directory_entry& e : it) {
        std::error_code sec;
        if (e.is_directory(sec)) {  // follows links, like os.walk(followlinks=True)
          if (enter(e.path()))
            pending.push_back(e.path());
          else
            out.warnings.push_back(e.path().string() + ": a directory already walked (a symbolic link loop?); skipped");
          continue;
        }
        const std::string name = e.path().filename().string();
        if (detail::has_image_folder_extension(name)) out.files_by_dir[dir.string()].push_back(name);
      }
    }
    std::sort(out.warnings.begin(), out.warnings.end());
    return out;
  }

  void scan() {
    std::vector<std::string> classes;
    std::error_code ec;
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
    parallel_for(classes.size(), threads, [&](size_t c) { walks[c] = walk_class(root_ / classes[c]); });
    for (uint32_t label = 0; label < classes.size(); ++label) {
      for (const std::string& w : walks[label].warnings) detail::warn("{}", w);
      size_t found = 0;
      for (auto& [dir, names] : walks[label].files_by_dir) {
        std::sort(names.begin(), names.end());
        const std::string rel_dir = fs::path(dir).lexically_relative(root_).string();
        for (const auto& name : names) {
          entries_.push_back(Entry{rel_dir + "/" + name, label});
          ++found;
        }
      }
      if (found == 0)
        throw Error(Errc::bad_input, "class folder holds no image files (extensions: .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp)")
            .with_path((root_ / classes[label]).string());
      walks[label] = ClassWalk{};
    }
    std::vector<std::string> lines(entries_.size());
    parallel_for(entries_.size(), threads, [&](size_t i) {
      if (i % 256 == 0) throw_if_interrupted();
      const fs::path full = root_ / entries_[i].relative;
      if (content_fingerprint_) {  // --fingerprint content: the bytes, so copies keep the id
        const detail::ReadResult r = detail::read_whole_file(full.string());
        lines[i] = entries_[i].relative + "\t" + (r.problem ? std::string("unreadable") : sha256_hex(r.bytes)) + "\n";
        return;
      }
      struct stat st {};
      lines[i] = ::stat(full.c_str(), &st) == 0
                     ? entries_[i].relative + "\t" + std::to_string(st.st_size) + "\t" +
                           std::to_string(static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec) + "\n"
                     : entries_[i].relative + "\tunreadable\n";
    });
    Sha256 fingerprint;
    for (const std::string& line : lines) fingerprint.update(line);
    fingerprint_ = std::string(content_fingerprint_ ? "sha256-content:" : "sha256:") + fingerprint.hex_digest();
  }

  fs::path root_;
  Schema schema_;
  std::vector<Entry> entries_;
  std::string fingerprint_;
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
  const auto fingerprint = options.get("fingerprint").value_or("stat");
  if (fingerprint != "stat" && fingerprint != "content") throw Error(Errc::usage, "--fingerprint wants stat or content");
  return std::make_unique<ImageFolderSource>(root, read, fingerprint == "content");
}
}  // namespace detail

}  // namespace slip
