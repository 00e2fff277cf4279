#include "sources/shard_list.hpp"

#include <glob.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "slip/error.hpp"
#include "slip/runtime.hpp"
#include "util/file_io.hpp"
#include "util/untrusted.hpp"

namespace slip::detail {

namespace {

// A shard argument expands to at most this many shards (brace ranges multiply: {0..9999}{0..9999}
// would be 10^8 strings), and @lists nest at most this deep.
constexpr size_t kMaxShards = 10'000'000;
constexpr size_t kMaxListDepth = 16;

void check_count(size_t n, const std::string& what) {
  if (n > kMaxShards)
    throw Error(Errc::usage, "\"" + escape_for_terminal(what) + "\" expands to more than " + std::to_string(kMaxShards) + " shards");
}

std::vector<std::string> expand_braces_bounded(const std::string& s, const std::string& whole);

}  // namespace

std::vector<std::string> expand_braces(const std::string& s) { return expand_braces_bounded(s, s); }

namespace {

std::vector<std::string> expand_braces_bounded(const std::string& s, const std::string& whole) {
  const auto open = s.find('{');
  if (open == std::string::npos) return {s};
  const auto close = s.find('}', open);
  if (close == std::string::npos) throw Error(Errc::usage, "unbalanced '{' in \"" + s + "\"");
  const std::string body = s.substr(open + 1, close - open - 1), head = s.substr(0, open), tail = s.substr(close + 1);
  std::vector<std::string> items;
  if (const auto dots = body.find(".."); dots != std::string::npos) {
    const std::string a = body.substr(0, dots), b = body.substr(dots + 2);
    if (a.empty() || b.empty() || a.find_first_not_of("0123456789") != std::string::npos ||
        b.find_first_not_of("0123456789") != std::string::npos)
      throw Error(Errc::usage, "brace range {" + body + "} is not {first..last} of numbers");
    const auto first = parse_decimal<uint64_t>(a), last = parse_decimal<uint64_t>(b);
    if (!first || !last)
      throw Error(Errc::usage, "brace range {" + escape_for_terminal(body) + "} has a number beyond 2^64-1 (and would be too large)");
    const uint64_t lo = *first, hi = *last;
    if (hi < lo || hi - lo > 10000000) throw Error(Errc::usage, "brace range {" + body + "} is empty or too large");
    const size_t width = a.size() > 1 && a[0] == '0' ? a.size() : 0;  // zero-padded like WebDataset
    for (uint64_t v = lo; v <= hi; ++v) {
      std::string n = std::to_string(v);
      if (n.size() < width) n.insert(0, width - n.size(), '0');
      items.push_back(n);
    }
  } else {
    size_t start = 0;
    while (true) {
      const auto comma = body.find(',', start);
      items.push_back(body.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  const std::vector<std::string> rests = expand_braces_bounded(tail, whole);
  check_count(items.size() * rests.size(), whole);
  std::vector<std::string> out;
  out.reserve(items.size() * rests.size());
  for (const auto& item : items)
    for (const auto& rest : rests) out.push_back(head + item + rest);
  return out;
}

}  // namespace

bool looks_like_shard_pattern(const std::string& arg) {
  return arg == "-" || (!arg.empty() && arg[0] == '@') || arg.find('{') != std::string::npos ||
         arg.find_first_of("*?[") != std::string::npos;
}

namespace {

// `lists`: the @list files being expanded, outermost first (a list naming one of them is a cycle).
void expand_into(const std::vector<std::string>& args, std::vector<std::filesystem::path>& lists, std::vector<std::string>& out) {
  for (const std::string& arg : args) {
    throw_if_interrupted();
    if (arg == "-") {
      out.push_back(arg);
    } else if (!arg.empty() && arg[0] == '@') {
      const std::string file = arg.substr(1);
      std::error_code ec;
      const std::filesystem::path canonical = std::filesystem::weakly_canonical(file, ec);
      for (const auto& open : lists)
        if (!ec && open == canonical)
          throw Error(Errc::bad_input, "the shard list includes itself (through @" + escape_for_terminal(file) + ")")
              .with_path(lists.back());
      if (lists.size() >= kMaxListDepth)
        throw Error(Errc::bad_input, "@lists nested deeper than " + std::to_string(kMaxListDepth) + " levels").with_path(file);
      detail::check_input_file(file);  // a FIFO or device would block the open below
      std::ifstream in(file);
      if (!in) throw Error(Errc::io, "cannot read the shard list").with_path(file);
      std::vector<std::string> lines;
      uint64_t line_number = 0;
      for (std::string line; getline_bounded(in, line, file, ++line_number);) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (!line.empty() && line[0] != '#') lines.push_back(line);
        check_count(lines.size(), file);
      }
      lists.push_back(ec ? std::filesystem::path(file) : canonical);
      expand_into(lines, lists, out);
      lists.pop_back();
    } else {
      for (const std::string& b : expand_braces(arg)) {
        if (b.find_first_of("*?[") == std::string::npos) {
          out.push_back(b);
          check_count(out.size(), arg);
          continue;
        }
        glob_t g{};
        const int rc = ::glob(b.c_str(), 0, nullptr, &g);
        if (rc == GLOB_NOMATCH) {
          globfree(&g);
          throw Error(Errc::io, "no file matches the pattern").with_path(b);
        }
        for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);  // glob sorts
        globfree(&g);
        check_count(out.size(), arg);
      }
    }
  }
}

}  // namespace

std::vector<std::string> expand_shards(const std::vector<std::string>& args) {
  std::vector<std::filesystem::path> lists;
  std::vector<std::string> out;
  expand_into(args, lists, out);
  return out;
}

}  // namespace slip::detail
