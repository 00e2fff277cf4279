#include "slip/npy.hpp"

#include <cstring>
#include <limits>

#include "slip/error.hpp"

namespace slip {

namespace {

std::string shape_repr(std::span<const uint64_t> shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ",";
  out += ")";
  return out;
}

}  // namespace

std::string npy_header(std::string_view descr, std::span<const uint64_t> shape) {
  std::string text = "{'descr': ";
  text += descr;
  text += ", 'fortran_order': False, 'shape': ";
  text += shape_repr(shape);
  text += ", }";
  // numpy reserves room so the header can grow in place: 21 - digits(shape[0]) spaces.
  if (!shape.empty()) {
    const size_t digits = std::to_string(shape[0]).size();
    if (digits < 21) text.append(21 - digits, ' ');
  }
  const size_t with_newline = text.size() + 1;
  const size_t pad = 64 - ((10 + with_newline) % 64);  // 64, not 0, when already aligned
  text.append(pad, ' ');
  text += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  const auto len = static_cast<uint16_t>(text.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>(len >> 8);
  out += text;
  return out;
}

std::string NpyHeader::simple_dtype() const {
  if (descr.size() >= 2 && descr.front() == '\'' && descr.back() == '\'') return descr.substr(1, descr.size() - 2);
  return {};
}

uint64_t NpyHeader::element_count() const {
  uint64_t n = 1;
  for (uint64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / d) return std::numeric_limits<uint64_t>::max();
    n *= d;
  }
  return n;
}

namespace {

// A tiny parser for the Python dict literal numpy writes; accepts any key order and spacing.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path, uint64_t base) : text_(text), path_(path), base_(base) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    skip_ws();
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') break;
      const std::string key = read_quoted();
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        h.descr = read_descr();
        have_descr = true;
      } else if (key == "fortran_order") {
        if (text_.substr(pos_, 4) == "True") {
          h.fortran_order = true;
          pos_ += 4;
        } else if (text_.substr(pos_, 5) == "False") {
          pos_ += 5;
        } else
          fail("fortran_order is neither True nor False");
        have_order = true;
      } else if (key == "shape") {
        h.shape = read_shape();
        have_shape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_ws();
      if (peek() == '}') break;
      fail("expected ',' or '}'");
    }
    if (!have_descr || !have_order || !have_shape) fail("header lacks descr, fortran_order or shape");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(Errc::bad_input, "malformed .npy header: " + why).with_path(path_).with_offset(base_ + pos_);
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n')) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string read_quoted() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    const size_t end = text_.find(q, pos_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return s;
  }
  // A descr is a quoted type string or a bracketed record list; kept verbatim.
  std::string read_descr() {
    const size_t start = pos_;
    if (peek() == '\'' || peek() == '"') {
      read_quoted();
      return std::string(text_.substr(start, pos_ - start));
    }
    if (peek() != '[') fail("descr is neither a string nor a list");
    int depth = 0;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == '[' || c == '(')
        ++depth;
      else if (c == ']' || c == ')') {
        if (--depth == 0) return std::string(text_.substr(start, pos_ - start));
      } else if (c == '\'' || c == '"') {
        const size_t end = text_.find(c, pos_);
        if (end == std::string_view::npos) fail("unterminated string in descr");
        pos_ = end + 1;
      }
    }
    fail("unterminated descr list");
  }
  std::vector<uint64_t> read_shape() {
    expect('(');
    std::vector<uint64_t> shape;
    while (true) {
      skip_ws();
      if (peek() == ')') {
        ++pos_;
        break;
      }
      if (peek() < '0' || peek() > '9') fail("shape holds a non-integer");
      uint64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        const uint64_t digit = static_cast<uint64_t>(peek() - '0');
        if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) fail("shape dimension overflows");
        v = v * 10 + digit;
        ++pos_;
      }
      shape.push_back(v);
      skip_ws();
      if (peek() == ',')
        ++pos_;
      else if (peek() != ')')
        fail("expected ',' or ')' in shape");
      if (shape.size() > 32) fail("more than 32 dimensions");
    }
    return shape;
  }

  std::string_view text_;
  const std::string& path_;
  uint64_t base_;
  size_t pos_ = 0;
};

}  // namespace

NpyHeader parse_npy_header(std::span<const std::byte> file, const std::string& path) {
  auto fail = [&](const std::string& why, uint64_t offset) -> Error {
    return Error(Errc::bad_input, "malformed .npy file: " + why).with_path(path).with_offset(offset);
  };
  if (file.size() < 10) throw fail("shorter than the 10-byte preamble", file.size());
  if (std::memcmp(file.data(), "\x93NUMPY", 6) != 0) throw fail("missing \\x93NUMPY magic", 0);
  const auto major = static_cast<uint8_t>(file[6]);
  uint64_t header_len = 0, text_start = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(file[8]) | (static_cast<uint64_t>(static_cast<uint8_t>(file[9])) << 8);
    text_start = 10;
  } else if (major == 2 || major == 3) {
    if (file.size() < 12) throw fail("shorter than the 12-byte preamble", file.size());
    for (int i = 0; i < 4; ++i) header_len |= static_cast<uint64_t>(static_cast<uint8_t>(file[8 + i])) << (8 * i);
    text_start = 12;
  } else {
    throw fail("unsupported format version " + std::to_string(major), 6);
  }
  if (header_len > file.size() - text_start) throw fail("header length runs past the end of the file", 8);
  std::string_view text(reinterpret_cast<const char*>(file.data()) + text_start, header_len);
  NpyHeader h = HeaderParser(text, path, text_start).parse();
  h.data_offset = text_start + header_len;
  return h;
}

size_t npy_dtype_size(std::string_view dtype) noexcept {
  if (dtype.size() < 3) return 0;
  const char order = dtype[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') return 0;
  const char kind = dtype[1];
  if (kind != 'i' && kind != 'u' && kind != 'f' && kind != 'b' && kind != 'c') return 0;
  size_t size = 0;
  for (char c : dtype.substr(2)) {
    if (c < '0' || c > '9') return 0;
    size = size * 10 + static_cast<size_t>(c - '0');
    if (size > 16) return 0;
  }
  return (size == 1 || size == 2 || size == 4 || size == 8 || size == 16) ? size : 0;
}

}  // namespace slip
