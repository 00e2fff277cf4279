// Command-line mistakes as one line each: the bad word named, the nearest command or flag
// suggested (as git does), ranges said plainly ("--block-size must be >= 1").
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace slip::cli {

// Optimal-string-alignment distance: insertions, deletions, substitutions, adjacent swaps.
size_t edit_distance(std::string_view a, std::string_view b);
// The candidate nearest to `word`, or "" when none is close enough to be a likely typo.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);
// The message (without "slip: error: ") for a parse error of `root`'s command line.
std::string describe_parse_error(CLI::App& root, const CLI::ParseError& e);
// A check that an integer option is at least `min`; fails as "must be >= MIN".
CLI::Validator at_least(long long min);
// ... and at most `max`: "must be in MIN..MAX" (numbers that size allocations or threads).
CLI::Validator in_range(long long min, unsigned long long max);

}  // namespace slip::cli
