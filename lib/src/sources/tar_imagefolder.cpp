// An ImageFolder packed in tar shards (`--layout imagefolder`): members <class>/.../<file>,
// labelled and ordered as the ImageFolder source labels and orders a directory tree.
#include <algorithm>
#include <filesystem>
#include <map>

#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/runtime.hpp"
#include "slip/source.hpp"
#include "sources/image_extensions.hpp"
#include "sources/tar_members.hpp"
#include "util/file_io.hpp"
#include "util/file_time.hpp"
#include "util/log.hpp"

namespace slip::detail {

namespace fs = std::filesystem;

namespace {

// An ImageFolder packed in tar shards (`--layout imagefolder`): members <class>/.../<file> with
// torchvision's image extensions; classes and order exactly as the ImageFolder source gives
// them. Members arriving out of that order are held in memory (bounded); a shard far from
// sorted order is refused with a hint to repack it.
class TarImageFolderSource final : public Source {
 public:
  TarImageFolderSource(std::vector<std::string> shards, const SourceOptions& options)
      : shards_(std::move(shards)), limits_(tar_limits(options)) {
    const bool content = options.get("fingerprint") == std::optional<std::string>("content");
    Sha256 fp;
    std::string uri;
    std::vector<std::pair<std::pair<std::string, std::string>, std::string>> entries;  // ((dir, name), full)
    for (std::string& s : shards_)
      if (s == "-") s = spooled_.spool();  // an ImageFolder tar streamed on stdin
    for (const std::string& shard : shards_) {
      std::error_code ec;
      const fs::path abs = fs::absolute(shard, ec).lexically_normal();
      if (!fs::exists(abs, ec)) throw Error(Errc::io, "no such tar shard").with_path(shard);
      if (!fs::is_regular_file(abs, ec)) detail::check_input_file(abs);  // a FIFO, device, directory: refused, named
      const bool from_stdin = spooled_.count(shard) > 0;
      uri += (uri.empty() ? "" : "\n") + (from_stdin ? std::string("-") : abs.string());
      uris_.push_back(from_stdin ? std::string("-") : abs.string());
      if (content || from_stdin) {
        fp.update((from_stdin ? std::string("-") : abs.filename().string()) + "\t" + detail::InputFile(abs).sha256_hex() + "\n");
      } else {
        fp.update(abs.filename().string() + "\t" + std::to_string(fs::file_size(abs, ec)) + "\t" +
                  std::to_string(detail::unix_mtime_ns(abs)) + "\n");
      }
      ArchivePtr a = open_archive(shard);
      archive_entry* e = nullptr;
      int rc;
      uint64_t headers = 0;
      bool missing_end_marker = false;
      while ((rc = next_header_checked(a.get(), &e, headers, missing_end_marker)) == ARCHIVE_OK || rc == ARCHIVE_WARN) {
        ++headers;
        throw_if_interrupted();
        if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e)) continue;
        const std::string name = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
        if (const std::string problem = member_header_problem(e, limits_.max_member_bytes); !problem.empty())
          throw Error(Errc::bad_input, "member " + name + ": " + problem)
              .with_path(shard)
              .with_offset(static_cast<uint64_t>(std::max<la_int64_t>(0, archive_read_header_position(a.get()))));
        std::string clean = name.rfind("./", 0) == 0 ? name.substr(2) : name;
        if (!detail::has_image_folder_extension(clean)) continue;
        const auto slash = clean.rfind('/');
        if (slash == std::string::npos) continue;  // files at the root belong to no class
        if (clean[0] == '/' || clean.find("..") != std::string::npos)
          throw Error(Errc::bad_input, "member " + name + ": unsafe member name").with_path(shard);
        entries.push_back({{clean.substr(0, slash), clean.substr(slash + 1)}, clean});
      }
      if (rc != ARCHIVE_EOF) throw Error(Errc::bad_input, std::string("corrupt tar: ") + archive_error_string(a.get())).with_path(shard);
      if (missing_end_marker && !limits_.allow_truncated)
        throw Error(Errc::bad_input,
                    "the shard ends without tar's end-of-archive blocks: it was cut short (--allow-truncated converts what is there)")
            .with_path(shard)
            .with_offset(static_cast<uint64_t>(archive_filter_bytes(a.get(), 0)));
      if (missing_end_marker)
        detail::warn("{}: the shard ends without tar's end-of-archive blocks (cut short?); converted what is there", shard);
    }
    // torchvision: sorted class names; inside a class, sorted(os.walk): directories in path
    // order, file names sorted.
    std::sort(entries.begin(), entries.end());
    std::map<std::string, uint32_t> class_label;
    for (const auto& en : entries) class_label.emplace(en.second.substr(0, en.second.find('/')), 0);
    uint32_t label = 0;
    for (auto& [c, l] : class_label) l = label++;
    std::stable_sort(entries.begin(), entries.end(), [](const auto& x, const auto& y) {
      return x.second.substr(0, x.second.find('/')) < y.second.substr(0, y.second.find('/'));
    });
    for (const auto& en : entries) {
      order_.emplace(en.second, order_.size());
      names_.push_back(en.second);
      labels_.push_back(class_label[en.second.substr(0, en.second.find('/'))]);
    }
    if (names_.empty()) throw Error(Errc::bad_input, "no <class>/<image> members (--layout imagefolder)").with_path(shards_.front());
    root_name_ = spooled_.count(shards_.front()) ? "stdin" : shard_stem(shards_.front());
    identity_ = {
        "tar-imagefolder", uri, (content || !spooled_.empty() ? "sha256-shards:" : "stat-shards:") + fp.hex_digest(), root_name_, {}};
    identity_.uris = uris_;
    schema_.fields = {{"image", FieldType::image, {}, {}},
                      {"label", FieldType::int64, {}, {}},
                      {"index", FieldType::int64, {}, {}},
                      {"path", FieldType::str, {}, {}}};
  }

  const Schema& schema() const override { return schema_; }
  SourceIdentity identity() const override { return identity_; }
  std::optional<uint64_t> size() const override { return names_.size(); }

  bool next(Sample& out) override {
    if (next_ >= names_.size()) return false;
    while (!buffered_.count(next_)) read_more();
    Bytes bytes = std::move(buffered_[next_]);
    buffered_.erase(next_);
    held_ -= bytes.size();
    out.source_index = next_;
    out.origin = names_[next_];
    out.problem.reset();
    out.skip.reset();
    out.values.assign(4, Value{});
    out.values[0].bytes = std::move(bytes);
    out.values[1].int_value = labels_[next_];
    out.values[2].int_value = static_cast<int64_t>(next_);
    const std::string path = root_name_ + "/" + names_[next_];
    out.values[3].bytes.assign(reinterpret_cast<const std::byte*>(path.data()),
                               reinterpret_cast<const std::byte*>(path.data()) + path.size());
    ++next_;
    return true;
  }

 private:
  static std::string shard_stem(const std::string& s) {
    std::string n = fs::path(s).filename().string();
    const auto dot = n.find('.');
    return dot == std::string::npos || dot == 0 ? n : n.substr(0, dot);
  }
  static ArchivePtr open_archive(const std::string& path) {
    ArchivePtr a(archive_read_new(), &archive_read_free);
    archive_read_support_filter_all(a.get());
    archive_read_support_format_tar(a.get());
    archive_read_support_format_gnutar(a.get());
    if (open_shard_file(a.get(), path, 1 << 20) != ARCHIVE_OK)
      throw Error(Errc::bad_input, std::string("not a readable tar: ") + archive_error_string(a.get())).with_path(path);
    return a;
  }

  // Reads members in archive order until the next one in ImageFolder order is buffered.
  void read_more() {
    while (true) {
      if (!archive_) {
        if (shard_ >= shards_.size())
          throw Error(Errc::bad_input, "member " + names_[next_] + " vanished between passes").with_path(shards_.back());
        archive_ = open_archive(shards_[shard_]);
      }
      archive_entry* e = nullptr;
      const int rc = archive_read_next_header(archive_.get(), &e);
      if (rc == ARCHIVE_EOF) {
        archive_.reset();
        ++shard_;
        continue;
      }
      if (rc < ARCHIVE_WARN)
        throw Error(Errc::bad_input, std::string("corrupt tar: ") + archive_error_string(archive_.get())).with_path(shards_[shard_]);
      if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e)) continue;
      std::string name = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
      if (name.rfind("./", 0) == 0) name = name.substr(2);
      auto it = order_.find(name);
      if (it == order_.end()) continue;
      Bytes data;
      std::string problem;
      try {
        problem = read_member_data(archive_.get(), limits_.max_member_bytes, data, member_size_hint(e));
      } catch (const Error& err) {
        throw Error(Errc::bad_input, "member " + name + ": " + err.message()).with_path(shards_[shard_]);
      }
      if (!problem.empty()) throw Error(Errc::bad_input, "member " + name + ": " + problem).with_path(shards_[shard_]);
      held_ += data.size();
      if (held_ > (uint64_t{1} << 30))
        throw Error(Errc::bad_input, "members are far from ImageFolder order (over 1 GiB held); repack with `tar --sort=name`")
            .with_path(shards_[shard_]);
      buffered_[it->second] = std::move(data);
      if (it->second == next_) return;
    }
  }

  std::vector<std::string> uris_;
  StdinSpools spooled_;
  std::vector<std::string> shards_;
  TarLimits limits_;
  std::vector<std::string> names_;
  std::vector<uint32_t> labels_;
  std::map<std::string, uint64_t> order_;
  std::map<uint64_t, Bytes> buffered_;
  uint64_t held_ = 0, next_ = 0;
  size_t shard_ = 0;
  ArchivePtr archive_{nullptr, &archive_read_free};
  std::string root_name_;
  Schema schema_;
  SourceIdentity identity_;
};

}  // namespace

std::unique_ptr<Source> open_tar_imagefolder(std::vector<std::string> shards, const SourceOptions& options) {
  return std::make_unique<TarImageFolderSource>(std::move(shards), options);
}

}  // namespace slip::detail
