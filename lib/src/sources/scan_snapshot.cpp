#include "sources/scan_snapshot.hpp"

#include <atomic>
#include <charconv>

#include "format/manifest_io.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "slip/runtime.hpp"
#include "util/atomic_file.hpp"
#include "util/file_io.hpp"

namespace slip::detail {

namespace fs = std::filesystem;

namespace {

// 2: each image with its size and mtime (a scan of version 1 is not read: the tree is scanned again).
constexpr std::string_view kMagic = "slip-imagefolder-scan 2";

// Names may hold any byte but NUL and '/': tabs, newlines and backslashes are escaped so one
// record stays one line.
void append_escaped(std::string& out, std::string_view text) {
  for (char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
}

std::optional<std::string> unescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    if (++i == text.size()) return std::nullopt;
    if (text[i] == '\\')
      out += '\\';
    else if (text[i] == 't')
      out += '\t';
    else if (text[i] == 'n')
      out += '\n';
    else
      return std::nullopt;
  }
  return out;
}

template <class T>
std::optional<T> number(std::string_view text) {
  T v{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// Splits "a\tb\tc" into at most `n` fields (the last keeps any further tabs: there are none,
// names are escaped).
std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start));
    if (tab == std::string_view::npos) return out;
    start = tab + 1;
  }
}

std::optional<ScanSnapshot> parse(std::string_view text, std::string_view root, std::string_view mode, const ScanEntrySink& entry) {
  // The last line is "end\t<SHA-256 of everything before it>": a torn or edited file is ignored.
  // Both ends are checked before the body is hashed, so a file that is not a snapshot (a
  // planted sparse one of any size) is refused after reading a few bytes, not all of them.
  if (text.size() < 70 || text.back() != '\n' || !text.starts_with(std::string(kMagic) + "\n")) return std::nullopt;
  const size_t tail = text.size() - 70;  // the end line is 69 bytes with its newline
  const size_t in_tail = text.substr(tail).rfind('\n', 68);
  if (in_tail == std::string_view::npos) return std::nullopt;
  const size_t last = tail + in_tail;
  const std::string_view body = text.substr(0, last + 1);
  const std::string_view end_line = text.substr(last + 1, text.size() - last - 2);
  if (end_line != "end\t" + sha256_hex(std::as_bytes(std::span(body.data(), body.size())))) return std::nullopt;

  ScanSnapshot s;
  size_t pos = 0, entries = 0;
  auto next_line = [&]() -> std::optional<std::string_view> {
    if (pos >= body.size()) return std::nullopt;
    const size_t nl = body.find('\n', pos);
    const std::string_view line = body.substr(pos, nl - pos);
    pos = nl + 1;
    return line;
  };
  auto header = next_line();
  if (!header || *header != kMagic) return std::nullopt;
  while (auto line = next_line()) {
    const auto f = fields(*line);
    if (f[0] == "root" && f.size() == 2) {
      auto v = unescape(f[1]);
      if (!v || *v != root) return std::nullopt;
      s.root = std::move(*v);
    } else if (f[0] == "mode" && f.size() == 2) {
      if (f[1] != mode) return std::nullopt;
      s.mode = std::string(f[1]);
    } else if (f[0] == "fingerprint" && f.size() == 2) {
      s.fingerprint = std::string(f[1]);
    } else if (f[0] == "d" && f.size() == 3) {
      auto mtime = number<int64_t>(f[1]);
      auto dir = unescape(f[2]);
      if (!mtime || !dir) return std::nullopt;
      s.dirs.emplace_back(std::move(*dir), *mtime);
    } else if (f[0] == "e" && f.size() == 5) {
      auto label = number<uint32_t>(f[1]);
      auto size = number<uint64_t>(f[2]);
      auto mtime = number<int64_t>(f[3]);
      auto rel = unescape(f[4]);
      if (!label || !size || !mtime || !rel) return std::nullopt;
      entry(ScanEntry{*label, *rel, *size, *mtime});
      ++entries;
    } else {
      return std::nullopt;
    }
  }
  if (s.root.empty() || s.mode.empty() || s.fingerprint.empty() || s.dirs.empty() || entries == 0) return std::nullopt;
  return s;
}

}  // namespace

std::string scan_snapshot_name(std::string_view root, std::string_view mode) {
  const std::string key = std::string(root) + "\n" + std::string(mode);
  return "." + fs::path(root).filename().string() + "-" + sha256_hex(std::as_bytes(std::span(key.data(), key.size()))).substr(0, 16) +
         ".scan";
}

std::optional<ScanSnapshot> load_scan_snapshot(const fs::path& file, std::string_view root, std::string_view mode, unsigned threads,
                                               const ScanEntrySink& entry) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return std::nullopt;
  std::optional<ScanSnapshot> s;
  try {
    // Parsed where it is mapped, never copied: its size (a planted sparse file of any size)
    // sizes no allocation, and parsing stops at the first line that is not the format's.
    const MappedFile mapped(file, Open::cache_file);
    const auto bytes = mapped.bytes();
    s = parse(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), root, mode, entry);
  } catch (const Error&) {
    return std::nullopt;  // unreadable: scan again
  }
  if (!s) return std::nullopt;
  std::atomic<bool> changed{false};
  parallel_for(s->dirs.size(), threads, [&](size_t i) {
    if (changed.load(std::memory_order_relaxed)) return;
    const fs::path dir = s->dirs[i].first == "." ? fs::path(s->root) : fs::path(s->root) / s->dirs[i].first;
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || unix_mtime_ns(st) != s->dirs[i].second) changed = true;
  });
  if (changed) return std::nullopt;
  return s;
}

void save_scan_snapshot(const fs::path& file, const ScanSnapshot& snapshot, size_t count, const std::function<ScanEntry(size_t)>& entry) {
  std::string text;
  text.reserve(count * 48 + snapshot.dirs.size() * 48 + 256);
  text += kMagic;
  text += "\nroot\t";
  append_escaped(text, snapshot.root);
  text += "\nmode\t" + snapshot.mode + "\nfingerprint\t" + snapshot.fingerprint + "\n";
  for (const auto& [dir, mtime] : snapshot.dirs) {
    text += "d\t" + std::to_string(mtime) + "\t";
    append_escaped(text, dir);
    text += '\n';
  }
  for (size_t i = 0; i < count; ++i) {
    const ScanEntry e = entry(i);
    text += "e\t" + std::to_string(e.label) + "\t" + std::to_string(e.size) + "\t" + std::to_string(e.mtime_ns) + "\t";
    append_escaped(text, e.relative);
    text += '\n';
  }
  text += "end\t" + sha256_hex(std::as_bytes(std::span(text.data(), text.size()))) + "\n";
  replace_file(file, text);
}

void remove_scan_snapshots(const fs::path& dir, std::string_view root) {
  for (const char* mode : {"stat", "content"}) {
    const fs::path file = dir / scan_snapshot_name(root, mode);
    std::error_code ec;
    fs::remove(file, ec);
    fs::remove(file.string() + ".lock", ec);
  }
}

}  // namespace slip::detail
