#include "util/untrusted.hpp"

#include <cstdio>

#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "slip/error.hpp"

namespace slip::detail {

namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 when it is not one.
size_t utf8_sequence_length(std::string_view text, size_t i) noexcept {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

// C1 controls (U+0080..U+009F) are two-byte sequences C2 80..C2 9F; some terminals obey them.
bool is_c1_control(std::string_view text, size_t i, size_t n) noexcept {
  return n == 2 && static_cast<unsigned char>(text[i]) == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0;
}

}  // namespace

bool is_valid_utf8(std::string_view text) noexcept { return !invalid_utf8_at(text); }

std::optional<size_t> invalid_utf8_at(std::string_view text) noexcept {
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {  // ASCII runs: most text
      ++i;
      continue;
    }
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0) return i;
    i += n;
  }
  return std::nullopt;
}

std::string escape_for_terminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto hex = [&](unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    out += buf;
  };
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
      ++i;
    } else if (c == '\t') {
      out += "\\t";
      ++i;
    } else if (c == '\r') {
      out += "\\r";
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      hex(c);
      ++i;
    } else {
      const size_t n = utf8_sequence_length(text, i);
      if (n == 0 || is_c1_control(text, i, n)) {
        for (size_t k = 0; k < (n == 0 ? 1 : n); ++k) hex(static_cast<unsigned char>(text[i + k]));
        i += n == 0 ? 1 : n;
      } else {
        out.append(text.substr(i, n));
        i += n;
      }
    }
  }
  return out;
}

std::string file_stem_problem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxFieldNameBytes) return "is longer than " + std::to_string(kMaxFieldNameBytes) + " bytes";
  if (!is_valid_utf8(name)) return "is not valid UTF-8";
  if (name == "." || name == "..") return "is a directory name";
  if (name.front() == '.') return "starts with '.'";
  for (size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c == '/' || c == '\\') return "contains a path separator";
    if (c < 0x20 || c == 0x7F) return "contains a control character";
    if (c == 0xC2 && i + 1 < name.size() && static_cast<unsigned char>(name[i + 1]) < 0xA0) return "contains a control character";
  }
  return {};
}

std::string reserved_name_problem(std::string_view name) {
  auto ends_with = [&](std::string_view suffix) {
    return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
  };
  if (name == "manifest") return "is reserved for manifest.json";
  if (ends_with("_yuv420")) return "ends with \"_yuv420\", reserved for the YUV420 sibling files";
  if (ends_with("_index")) return "ends with \"_index\", reserved for slip index files (the Python loader loads every *_index.npy)";
  if (name.find(".index.") != std::string_view::npos || ends_with(".index")) return "contains \".index\", reserved for slip index files";
  return {};
}

void check_field_name(std::string_view name, std::string_view what) {
  std::string problem = file_stem_problem(name);
  if (problem.empty()) problem = reserved_name_problem(name);
  if (!problem.empty())
    throw Error(Errc::bad_input, std::string(what) + " \"" + escape_for_terminal(name) + "\" " + problem +
                                     " (field names become file names; --rename OLD=NEW maps it)");
}

namespace {

// Brackets outside strings, counted before any parse: nesting past kMaxJsonDepth is bad input
// (the parsers recurse, and a syntax error found first would hide the real reason).
void check_json_depth(std::string_view text) {
  size_t level = 0;
  bool in_string = false, escaped = false;
  for (char ch : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (ch == '\\')
        escaped = true;
      else if (ch == '"')
        in_string = false;
      continue;
    }
    if (ch == '"') {
      in_string = true;
    } else if (ch == '{' || ch == '[') {
      if (++level > kMaxJsonDepth) throw Error(Errc::bad_input, "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    } else if ((ch == '}' || ch == ']') && level > 0) {
      --level;
    }
  }
}

template <class Json>
Json parse_bounded(std::string_view text) {
  // The depth is bounded before the (recursive) parse. No parser callback: nlohmann's callback
  // parser scans an object's members at every member object's end, quadratic in a manifest of
  // 40,000 fields.
  check_json_depth(text);
  return Json::parse(text);
}

// Builds an ordered_json in linear time. nlohmann's own parser inserts each key through
// ordered_map::operator[], a linear search of the object's keys so far: an object of 200,000
// keys (a hostile manifest) took 35 s. Here each open object has a hash index of its keys and
// members are appended to the ordered_map's vector directly. As nlohmann's parser does, a
// repeated key keeps its first position and takes the last value.
class OrderedJsonBuilder final : public nlohmann::json_sax<nlohmann::ordered_json> {
 public:
  using Json = nlohmann::ordered_json;
  explicit OrderedJsonBuilder(Json& root) : root_(root) {}

  bool null() override { return add(Json(nullptr)); }
  bool boolean(bool v) override { return add(Json(v)); }
  bool number_integer(number_integer_t v) override { return add(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return add(Json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return add(Json(v)); }
  bool string(string_t& v) override { return add(Json(std::move(v))); }
  bool binary(binary_t& v) override { return add(Json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(Json::object()); }
  bool start_array(std::size_t) override { return open(Json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  // The parser's own exception, as its DOM parser throws it (callers read parse_error::byte).
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    if (const auto* syntax = dynamic_cast<const nlohmann::json::parse_error*>(&e)) throw *syntax;
    if (const auto* range = dynamic_cast<const nlohmann::json::out_of_range*>(&e)) throw *range;
    throw Error(Errc::bad_input, e.what());
  }

 private:
  struct Open {
    Json* value;
    std::unordered_map<std::string, size_t> keys;  // objects: key -> position
  };
  // Places `v` (the root, an array element or the member named key_) and returns where it is.
  Json* place(Json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Open& top = stack_.back();
    if (top.value->is_array()) {
      top.value->get_ref<Json::array_t&>().push_back(std::move(v));
      return &top.value->get_ref<Json::array_t&>().back();
    }
    auto& members = top.value->get_ref<Json::object_t&>();
    auto& vector = static_cast<std::vector<std::pair<const std::string, Json>>&>(members);
    if (const auto [it, inserted] = top.keys.try_emplace(key_, vector.size()); !inserted) {
      vector[it->second].second = std::move(v);
      return &vector[it->second].second;
    }
    vector.emplace_back(std::move(key_), std::move(v));
    return &vector.back().second;
  }
  bool add(Json&& v) {
    place(std::move(v));
    return true;
  }
  bool open(Json&& container) {
    if (stack_.size() >= kMaxJsonDepth)
      throw Error(Errc::bad_input, "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    stack_.push_back({place(std::move(container)), {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  Json& root_;
  std::vector<Open> stack_;
  std::string key_;
};

}  // namespace

nlohmann::json parse_json_bounded(std::string_view text) { return parse_bounded<nlohmann::json>(text); }
nlohmann::ordered_json parse_ordered_json_bounded(std::string_view text) {
  check_json_depth(text);
  nlohmann::ordered_json root;
  OrderedJsonBuilder builder(root);
  nlohmann::ordered_json::sax_parse(text, &builder);
  return root;
}

bool getline_bounded(std::istream& in, std::string& line, const std::string& file, uint64_t line_number) {
  line.clear();
  std::streambuf* buf = in.rdbuf();
  while (true) {
    const int c = buf->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(std::ios::eofbit);
      return !line.empty();
    }
    if (c == '\n') return true;
    if (line.size() >= kMaxListLineBytes)
      throw Error(Errc::bad_input, "line " + std::to_string(line_number) + " is longer than " + std::to_string(kMaxListLineBytes) +
                                       " bytes (not a list of names)")
          .with_path(file);
    line.push_back(static_cast<char>(c));
  }
}

}  // namespace slip::detail
