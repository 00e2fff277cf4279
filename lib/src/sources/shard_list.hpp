// Internal: expanding shard arguments the way WebDataset users write them.
#pragma once

#include <string>
#include <vector>

namespace slip::detail {

// Brace ranges "shard-{000000..000099}.tar" (zero padding kept), lists "{train,val}.tar",
// nested left to right, then shell globs, then "@list.txt" (one shard per line, '#'
// comments). "-" stays "-" (stdin). Throws Error(usage/io) for bad patterns or lists.
std::vector<std::string> expand_shards(const std::vector<std::string>& args);
bool looks_like_shard_pattern(const std::string& arg);
// Brace ranges and lists only (remote URIs: no globbing, no @lists).
std::vector<std::string> expand_braces(const std::string& arg);

}  // namespace slip::detail
