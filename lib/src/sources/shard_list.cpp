#include "sources/shard_list.hpp"

#include <glob.h>

#include <cstdio>
#include <fstream>

#include "slip/error.hpp"

namespace slip::detail {

std::vector<std::string> expand_braces(const std::string& s) {
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
    const unsigned long long lo = std::stoull(a), hi = std::stoull(b);
    if (hi < lo || hi - lo > 10000000) throw Error(Errc::usage, "brace range {" + body + "} is empty or too large");
    const size_t width = a.size() > 1 && a[0] == '0' ? a.size() : 0;  // zero-padded like WebDataset
    for (unsigned long long v = lo; v <= hi; ++v) {
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
  std::vector<std::string> out;
  for (const auto& item : items)
    for (auto& rest : expand_braces(tail)) out.push_back(head + item + rest);
  return out;
}

bool looks_like_shard_pattern(const std::string& arg) {
  return arg == "-" || (!arg.empty() && arg[0] == '@') || arg.find('{') != std::string::npos ||
         arg.find_first_of("*?[") != std::string::npos;
}

std::vector<std::string> expand_shards(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& arg : args) {
    if (arg == "-") {
      out.push_back(arg);
    } else if (!arg.empty() && arg[0] == '@') {
      std::ifstream in(arg.substr(1));
      if (!in) throw Error(Errc::io, "cannot read the shard list").with_path(arg.substr(1));
      std::vector<std::string> lines;
      for (std::string line; std::getline(in, line);) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (!line.empty() && line[0] != '#') lines.push_back(line);
      }
      for (auto& s : expand_shards(lines)) out.push_back(s);
    } else {
      for (const std::string& b : expand_braces(arg)) {
        if (b.find_first_of("*?[") == std::string::npos) {
          out.push_back(b);
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
      }
    }
  }
  return out;
}

}  // namespace slip::detail
