// Shared helpers for the unit tests: paths to reference data, running commands, temp dirs.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

namespace slip::test {

inline std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("SLIP_SHARED_DIR"); env && *env) return env;
  return SLIP_SHARED_DIR;
}
inline std::string python() { return SLIP_PYTHON; }
inline std::string slip_binary() { return SLIP_BINARY; }

struct CommandResult {
  int status = -1;
  std::string out;
};

// Runs a shell command, capturing stdout; returns the exit status.
inline CommandResult run(const std::string& command) {
  CommandResult r;
  std::FILE* p = ::popen(command.c_str(), "r");
  if (!p) return r;
  std::array<char, 65536> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

// A whole file. A missing or unreadable file throws (the test fails naming it): an empty
// string would let two missing files compare equal.
// Why tests needing the reference data (../shared) or Python cannot run here; "" when they can.
inline std::string shared_missing() {
  static const std::string why = std::filesystem::is_directory(shared_dir() / "corpus")
                                     ? std::string()
                                     : "needs the reference data (" + shared_dir().string() + "/corpus not found; set SLIP_SHARED_DIR)";
  return why;
}

#define SLIP_REQUIRE_SHARED()                                                                                        \
  do {                                                                                                               \
    if (const std::string slip_why_ = ::slip::test::shared_missing(); !slip_why_.empty()) GTEST_SKIP() << slip_why_; \
  } while (0)
#define SLIP_REQUIRE_PYTHON()                                                                                        \
  do {                                                                                                               \
    if (const std::string slip_why_ = ::slip::test::python_missing(); !slip_why_.empty()) GTEST_SKIP() << slip_why_; \
  } while (0)

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("test::read_file: cannot open " + p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::runtime_error("test::read_file: cannot read " + p.string());
  return ss.str();
}

inline std::string python_missing() {
  static const std::string why = run(python() + " -c 'import numpy, PIL' 2>/dev/null").status == 0
                                     ? std::string()
                                     : "needs " + python() + " with numpy and Pillow (SLIP_PYTHON)";
  return why;
}

// A whole file as bytes (the form the library's span<const std::byte> APIs take).
inline std::vector<std::byte> read_bytes(const std::filesystem::path& p) {
  const std::string s = read_file(p);
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

// The test corpus's manifest (corpus/imagenet_like.manifest.tsv) without its header: per image,
// its columns (path, class, width, height, format, color, subsampling, progressive, notes, sha256).
inline std::vector<std::vector<std::string>> corpus_manifest() {
  std::istringstream lines(read_file(shared_dir() / "corpus/imagenet_like.manifest.tsv"));
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    std::vector<std::string>& columns = rows.emplace_back();
    std::istringstream fields(line);
    for (std::string f; std::getline(fields, f, '\t');) columns.push_back(f);
  }
  return rows;
}

// Copies a directory (a read-only fixture) to `to` and makes the copy writable.
inline void writable_copy(const std::filesystem::path& from, const std::filesystem::path& to) {
  namespace fs = std::filesystem;
  fs::copy(from, to, fs::copy_options::recursive);
  for (const auto& e : fs::recursive_directory_iterator(to)) fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  fs::permissions(to, fs::perms::owner_all, fs::perm_options::add);
}

// A fresh directory removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "slip-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace slip::test
