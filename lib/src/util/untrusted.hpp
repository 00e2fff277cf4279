// Internal helpers for bytes that come from untrusted sources: names that become file names,
// text that reaches a terminal, JSON of unbounded nesting.
//
// One rule for every name that reaches the file system (field names from FFCV, LitData
// data_spec keys, tar member extensions, --rename/--field targets, manifest field names):
// check_file_stem(). Callers never build paths from source names without it.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <istream>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "slip/schema.hpp"

namespace slip::detail {

// A fixed-width field of a file's bytes (FFCV, LitData: little-endian, as every target slip
// builds for), read without alignment; the caller has checked that sizeof(T) bytes are there.
template <typename T>
T load_le(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The longest field name accepted: the stem plus slip's longest suffix
// ("_yuv420.meta.npy", ".index.offsets.npy") stays well under NAME_MAX (255).
inline constexpr size_t kMaxFieldNameBytes = 200;
// JSON read from disk or the network is refused beyond this nesting depth (the parser recurses).
inline constexpr size_t kMaxJsonDepth = 64;

// True when `text` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view text) noexcept;
// The offset of the first byte that does not start a well-formed UTF-8 sequence, if any.
std::optional<size_t> invalid_utf8_at(std::string_view text) noexcept;

// `text` with every control character (C0, DEL, C1) and every byte that is not valid UTF-8
// escaped as \xNN / \n / \t / \r, so it cannot move the cursor, set a title or start a new
// line on a terminal. Printable UTF-8 (backslash included) passes through unchanged, which
// makes escaping idempotent: a message that embeds an escaped name can be escaped again.
std::string escape_for_terminal(std::string_view text);

// Why `name` cannot be a file stem in a cache directory, or an empty string when it can:
// non-empty, <= kMaxFieldNameBytes bytes, valid UTF-8, no '/', '\\', NUL or control
// characters, not "." or "..", no leading '.'.
std::string file_stem_problem(std::string_view name);

// Why `name` would collide with a file slip itself writes beside the fields (the YUV420
// siblings "<f>_yuv420", the index files "<f>_index.npy" and "<f>.index.*", "manifest"),
// or an empty string when it would not.
std::string reserved_name_problem(std::string_view name);

// Throws Error(bad_input) "<what> \"<escaped name>\" <problem>" unless both checks pass.
// `what` names the origin, e.g. "FFCV field name" or "LitData data_spec key".
void check_field_name(std::string_view name, std::string_view what);

// `text` as a decimal integer of type T: digits only ('-' first for a signed T), the whole text,
// within T's range; nullopt otherwise (never an exception: std::stoull's out_of_range escaped
// as an "internal error" for `x{0..99999999999999999999999}.tar`). Callers name the text in
// their own error.
template <typename T>
std::optional<T> parse_decimal(std::string_view text) noexcept {
  if (text.empty() || text[0] == '+' || (text[0] == '-' && !std::is_signed_v<T>)) return std::nullopt;
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// nlohmann::json::parse with nesting bounded by kMaxJsonDepth: deeper input throws
// Error(bad_input) "JSON nested deeper than 64 levels" instead of exhausting the stack.
// Other parse errors propagate as nlohmann::json::parse_error (callers add context).
nlohmann::json parse_json_bounded(std::string_view text);
// The longest line a list file (@list of shards, --classes-file) may hold: far past any path,
// URL or class name; a file without newlines (a planted sparse one) must not become one line.
inline constexpr size_t kMaxListLineBytes = size_t{64} << 10;
// std::getline bounded by kMaxListLineBytes: false at the end; throws Error(bad_input) naming
// `file` and the 1-based line number for a longer line, before holding more of it.
bool getline_bounded(std::istream& in, std::string& line, const std::string& file, uint64_t line_number);
nlohmann::ordered_json parse_ordered_json_bounded(std::string_view text);

}  // namespace slip::detail
