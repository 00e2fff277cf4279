#include "format/pickle_index.hpp"

#include <bit>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <optional>
#include <string_view>

#include "slip/error.hpp"
#include "slip/npy.hpp"
#include "util/untrusted.hpp"

namespace slip::detail {

namespace {

// Objects live in one arena and refer to each other by position: no ownership cycles, no
// recursive destruction, whatever the memo opcodes build.
enum class Kind : uint8_t { none, boolean, integer, real, str, bytes, tuple, list, dict, global, dtype, array };
// Protocol 2 has no bytes opcode: bytes are pickled as _codecs.encode(text, 'latin1'), and
// b'' as bytes(); both only ever make a bytes object.
enum class Callable : uint8_t { reconstruct, ndarray, dtype, codecs_encode, bytes };

struct Node {
  Kind kind = Kind::none;
  bool built = false;           // dtype / array: BUILD applied
  int64_t integer = 0;          // boolean, integer
  double real = 0;              // real
  Callable callable{};          // global
  std::string text;             // str, bytes, dtype name ("O8", "i8")
  std::vector<uint32_t> items;  // tuple, list; dict: key, value, key, value...
  // array after BUILD
  uint32_t array_dtype = 0;
  std::vector<uint64_t> shape;
  uint32_t array_data = 0;  // list (object arrays) or bytes (int64 arrays)
};

class Reader {
 public:
  Reader(std::span<const std::byte> pickle, uint64_t base, const std::string& path) : p_(pickle), base_(base), path_(path) {}

  PickledIndex run() {
    if (p_.size() < 2 || u8(0) != 0x80) refuse("does not start with a PROTO opcode", 0);
    for (;;) {
      if (pos_ >= p_.size()) refuse("ends without STOP", pos_);
      op_at_ = pos_;
      const uint8_t op = u8(pos_++);
      if (op == '.') break;
      step(op);
    }
    if (pos_ != p_.size()) refuse("has bytes after STOP", pos_);
    if (stack_.size() != 1 || !marks_.empty()) refuse("leaves " + std::to_string(stack_.size()) + " objects at STOP", op_at_);
    return result(stack_[0]);
  }

 private:
  [[noreturn]] void refuse(const std::string& why, uint64_t at) const {
    throw Error(Errc::bad_input, "index pickle " + why + " (refused unread: it is not the dict of int64 arrays slip and numpy write)")
        .with_path(path_)
        .with_offset(base_ + at);
  }
  [[noreturn]] void refuse(const std::string& why) const { refuse(why, op_at_); }

  uint8_t u8(uint64_t at) const { return static_cast<uint8_t>(p_[at]); }
  std::span<const std::byte> take(uint64_t n) {
    if (n > p_.size() - pos_) refuse("is truncated", pos_);
    const auto out = p_.subspan(pos_, n);
    pos_ += n;
    return out;
  }
  uint64_t le(size_t n) {
    const auto b = take(n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(b[i])} << (8 * i);
    return v;
  }
  std::string text(uint64_t n) {
    const auto b = take(n);
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }
  std::string line() {
    const uint64_t start = pos_;
    while (pos_ < p_.size() && u8(pos_) != '\n') {
      if (pos_ - start > 64) refuse("names a global longer than any it may name");
      ++pos_;
    }
    if (pos_ >= p_.size()) refuse("is truncated", pos_);
    std::string s(reinterpret_cast<const char*>(p_.data() + start), pos_ - start);
    ++pos_;
    return s;
  }

  uint32_t make(Node n) {
    if (arena_.size() >= (1u << 26)) refuse("holds too many objects");
    arena_.push_back(std::move(n));
    return static_cast<uint32_t>(arena_.size() - 1);
  }
  void push(uint32_t id) { stack_.push_back(id); }
  void push(Node n) { push(make(std::move(n))); }
  uint32_t pop() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) refuse("pops an empty stack");
    const uint32_t id = stack_.back();
    stack_.pop_back();
    return id;
  }
  uint32_t top() const {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) refuse("reads an empty stack");
    return stack_.back();
  }
  std::vector<uint32_t> pop_mark() {
    if (marks_.empty()) refuse("has no MARK to pop to");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<uint32_t> items(stack_.begin() + static_cast<ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  Node& at(uint32_t id) { return arena_[id]; }
  const Node& at(uint32_t id) const { return arena_[id]; }

  void memo_put(uint64_t index) {
    if (index >= (1u << 26)) refuse("memoizes at index " + std::to_string(index));
    memo_[static_cast<uint32_t>(index)] = top();
  }
  void memo_get(uint64_t index) {
    auto it = memo_.find(static_cast<uint32_t>(index));
    if (index >= (1u << 26) || it == memo_.end()) refuse("reads memo " + std::to_string(index) + ", which was never stored");
    push(it->second);
  }

  Node integer(int64_t v) {
    Node n;
    n.kind = Kind::integer;
    n.integer = v;
    return n;
  }
  Node tuple(std::vector<uint32_t> items) {
    Node n;
    n.kind = Kind::tuple;
    n.items = std::move(items);
    return n;
  }
  Node str(std::string s) {
    if (!is_valid_utf8(s)) refuse("holds a string that is not UTF-8");
    Node n;
    n.kind = Kind::str;
    n.text = std::move(s);
    return n;
  }

  void global(const std::string& module, const std::string& name) {
    Node n;
    n.kind = Kind::global;
    if ((module == "numpy.core.multiarray" || module == "numpy._core.multiarray") && name == "_reconstruct")
      n.callable = Callable::reconstruct;
    else if (module == "numpy" && name == "ndarray")
      n.callable = Callable::ndarray;
    else if (module == "numpy" && name == "dtype")
      n.callable = Callable::dtype;
    else if (module == "_codecs" && name == "encode")
      n.callable = Callable::codecs_encode;
    else if ((module == "__builtin__" || module == "builtins") && name == "bytes")
      n.callable = Callable::bytes;
    else
      refuse("calls " + escape_for_terminal(module) + "." + escape_for_terminal(name));
    push(std::move(n));
  }

  bool is(uint32_t id, Kind k) const { return at(id).kind == k; }
  bool is_int(uint32_t id, int64_t v) const { return is(id, Kind::integer) && at(id).integer == v; }
  bool is_bool(uint32_t id, bool v) const { return is(id, Kind::boolean) && at(id).integer == (v ? 1 : 0); }
  bool is_str(uint32_t id, std::string_view s) const { return is(id, Kind::str) && at(id).text == s; }

  void reduce() {
    const uint32_t args = pop();
    const uint32_t fn = pop();
    if (!is(fn, Kind::global) || !is(args, Kind::tuple)) refuse("calls something other than numpy's array constructors");
    const auto& a = at(args).items;
    Node n;
    switch (at(fn).callable) {
      case Callable::reconstruct:  // _reconstruct(ndarray, (0,), b'b')
        if (a.size() != 3 || !is(a[0], Kind::global) || at(a[0]).callable != Callable::ndarray || !is(a[1], Kind::tuple) ||
            at(a[1]).items.size() != 1 || !is_int(at(a[1]).items[0], 0) || !is(a[2], Kind::bytes) || at(a[2]).text != "b")
          refuse("calls _reconstruct with arguments numpy does not use");
        n.kind = Kind::array;
        break;
      case Callable::dtype:  // dtype('O8' | 'i8', False, True)
        if (a.size() != 3 || !(is_str(a[0], "O8") || is_str(a[0], "i8")) || !is_bool(a[1], false) || !is_bool(a[2], true))
          refuse("builds a dtype other than object or int64");
        n.kind = Kind::dtype;
        n.text = at(a[0]).text;
        break;
      case Callable::codecs_encode: {  // encode(text, 'latin1'): code points < 256 to bytes
        if (a.size() != 2 || !is(a[0], Kind::str) || !is_str(a[1], "latin1")) refuse("calls _codecs.encode other than for bytes");
        n.kind = Kind::bytes;
        const std::string& t = at(a[0]).text;  // valid UTF-8 (checked when read)
        for (size_t i = 0; i < t.size(); ++i) {
          const auto c = static_cast<unsigned char>(t[i]);
          if (c < 0x80) {
            n.text += static_cast<char>(c);
          } else if ((c == 0xc2 || c == 0xc3) && i + 1 < t.size()) {
            n.text += static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(t[++i]) & 0x3f));
          } else {
            refuse("encodes a character beyond latin-1 as bytes");
          }
        }
        break;
      }
      case Callable::bytes:
        if (!a.empty()) refuse("calls bytes() with arguments");
        n.kind = Kind::bytes;
        break;
      default:
        refuse("calls numpy.ndarray directly");
    }
    push(std::move(n));
  }

  void build() {
    const uint32_t state = pop();
    const uint32_t obj = top();
    if (!is(state, Kind::tuple)) refuse("BUILDs from a state that is not a tuple");
    const auto& s = at(state).items;
    Node& o = at(obj);
    if (o.built) refuse("BUILDs an object twice");
    if (o.kind == Kind::dtype) {
      // (3, order, None, None, None, -1, -1, flags): '|' and 63 for object, '<' and 0 for int64.
      const bool object = o.text == "O8";
      if (s.size() != 8 || !is_int(s[0], 3) || !is_str(s[1], object ? "|" : "<") || !is(s[2], Kind::none) || !is(s[3], Kind::none) ||
          !is(s[4], Kind::none) || !is_int(s[5], -1) || !is_int(s[6], -1) || !is_int(s[7], object ? 63 : 0))
        refuse("gives a dtype a state numpy does not write");
    } else if (o.kind == Kind::array) {
      // (1, shape, dtype, False, data)
      if (s.size() != 5 || !is_int(s[0], 1) || !is(s[1], Kind::tuple) || !is(s[2], Kind::dtype) || !at(s[2]).built || !is_bool(s[3], false))
        refuse("gives an array a state numpy does not write");
      std::vector<uint64_t> shape;
      for (uint32_t d : at(s[1]).items) {
        if (!is(d, Kind::integer) || at(d).integer < 0) refuse("gives an array a bad shape");
        shape.push_back(static_cast<uint64_t>(at(d).integer));
      }
      const bool object = at(s[2]).text == "O8";
      if (object ? !(shape.empty() && is(s[4], Kind::list) && at(s[4]).items.size() == 1)
                 : !(shape.size() == 1 && is(s[4], Kind::bytes) && shape[0] <= at(s[4]).text.size() / 8 &&
                     at(s[4]).text.size() == shape[0] * 8))
        refuse(object ? "holds an object array that is not 0-d with one element"
                      : "holds an int64 array whose bytes do not match its shape");
      o.array_dtype = s[2];
      o.shape = std::move(shape);
      o.array_data = s[4];
    } else {
      refuse("BUILDs something that is not a numpy array or dtype");
    }
    at(obj).built = true;
  }

  void step(uint8_t op) {
    switch (op) {
      case 0x80: {  // PROTO
        const uint64_t v = le(1);
        if (op_at_ != 0 || v < 2 || v > 4) refuse("uses pickle protocol " + std::to_string(v));
        break;
      }
      case 0x95:  // FRAME (a length hint)
        if (le(8) > p_.size() - pos_) refuse("has a FRAME beyond its end");
        break;
      case 'c': {  // GLOBAL
        std::string module = line();
        std::string name = line();
        global(module, name);
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        const uint32_t name = pop(), module = pop();
        if (!is(name, Kind::str) || !is(module, Kind::str)) refuse("has a STACK_GLOBAL without names");
        global(at(module).text, at(name).text);
        break;
      }
      case 'q':
        memo_put(le(1));
        break;
      case 'r':
        memo_put(le(4));
        break;
      case 0x94:
        memo_put(memo_.size());
        break;
      case 'h':
        memo_get(le(1));
        break;
      case 'j':
        memo_get(le(4));
        break;
      case 'K':
        push(integer(static_cast<int64_t>(le(1))));
        break;
      case 'M':
        push(integer(static_cast<int64_t>(le(2))));
        break;
      case 'J':
        push(integer(static_cast<int32_t>(static_cast<uint32_t>(le(4)))));
        break;
      case 0x8a: {  // LONG1: little-endian two's complement
        const uint64_t n = le(1);
        if (n == 0 || n > 8) refuse("holds an integer wider than 64 bits");
        uint64_t v = le(static_cast<size_t>(n));
        if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);
        push(integer(static_cast<int64_t>(v)));
        break;
      }
      case 'G': {  // BINFLOAT, big-endian
        const auto b = take(8);
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<uint8_t>(b[static_cast<size_t>(i)]);
        Node n;
        n.kind = Kind::real;
        n.real = std::bit_cast<double>(bits);
        push(std::move(n));
        break;
      }
      case 'N': {
        push(Node{});
        break;
      }
      case 0x88:
      case 0x89: {
        Node n = integer(op == 0x88 ? 1 : 0);
        n.kind = Kind::boolean;
        push(std::move(n));
        break;
      }
      case 'C':
      case 'B': {
        Node n;
        n.kind = Kind::bytes;
        n.text = text(le(op == 'C' ? 1 : 4));
        push(std::move(n));
        break;
      }
      case 'X':
        push(str(text(le(4))));
        break;
      case 0x8c:
        push(str(text(le(1))));
        break;
      case '(':
        marks_.push_back(stack_.size());
        break;
      case ')':
        push(tuple({}));
        break;
      case 0x85:
      case 0x86:
      case 0x87: {
        std::vector<uint32_t> items(static_cast<size_t>(op - 0x84));
        for (size_t i = items.size(); i-- > 0;) items[i] = pop();
        push(tuple(std::move(items)));
        break;
      }
      case 't':
        push(tuple(pop_mark()));
        break;
      case ']':
      case '}': {
        Node n;
        n.kind = op == ']' ? Kind::list : Kind::dict;
        push(std::move(n));
        break;
      }
      case 'a': {
        const uint32_t v = pop();
        if (!is(top(), Kind::list)) refuse("APPENDs to something that is not a list");
        at(top()).items.push_back(v);
        break;
      }
      case 'e': {
        auto items = pop_mark();
        if (!is(top(), Kind::list)) refuse("APPENDs to something that is not a list");
        auto& list = at(top()).items;
        list.insert(list.end(), items.begin(), items.end());
        break;
      }
      case 's': {
        const uint32_t v = pop(), k = pop();
        if (!is(top(), Kind::dict)) refuse("SETITEMs into something that is not a dict");
        at(top()).items.insert(at(top()).items.end(), {k, v});
        break;
      }
      case 'u': {
        auto items = pop_mark();
        if (items.size() % 2 || !is(top(), Kind::dict)) refuse("SETITEMS without key-value pairs or into something that is not a dict");
        auto& dict = at(top()).items;
        dict.insert(dict.end(), items.begin(), items.end());
        break;
      }
      case 'R':
        reduce();
        break;
      case 'b':
        build();
        break;
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        refuse(std::string("uses opcode ") + hex + (op >= 0x20 && op < 0x7f ? std::string(" '") + char(op) + "'" : std::string()) +
               ", which numpy's index files never contain");
      }
    }
  }

  PickledIndex result(uint32_t root) {
    const Node& a = at(root);
    if (a.kind != Kind::array || !a.built || at(a.array_dtype).text != "O8") refuse("is not a 0-d object array", 0);
    const Node& list = at(a.array_data);
    if (list.items.size() != 1) refuse("is not a 0-d object array", 0);  // (APPENDs after its BUILD)
    const Node& dict = at(list.items[0]);
    if (dict.kind != Kind::dict) refuse("holds something other than a dict", 0);
    PickledIndex out;
    for (size_t i = 0; i < dict.items.size(); i += 2) {
      const Node& k = at(dict.items[i]);
      const Node& v = at(dict.items[i + 1]);
      if (k.kind == Kind::integer)
        out.keys.emplace_back(k.integer);
      else if (k.kind == Kind::real)
        out.keys.emplace_back(k.real);
      else if (k.kind == Kind::str)
        out.keys.emplace_back(k.text);
      else
        refuse("has a dict key that is not an int, float or str", 0);
      if (v.kind != Kind::array || !v.built || at(v.array_dtype).text != "i8") refuse("has a dict value that is not an int64 array", 0);
      const std::string& bytes = at(v.array_data).text;
      std::vector<int64_t> ids(bytes.size() / 8);
      if (!ids.empty()) std::memcpy(ids.data(), bytes.data(), bytes.size());
      out.ids.push_back(std::move(ids));
    }
    return out;
  }

  std::span<const std::byte> p_;
  uint64_t base_;
  const std::string& path_;
  uint64_t pos_ = 0, op_at_ = 0;
  std::vector<Node> arena_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint32_t, uint32_t> memo_;
};

}  // namespace

PickledIndex read_pickled_index(std::span<const std::byte> file, const std::string& path) {
  const NpyHeader h = parse_npy_header(file, path);
  if (h.descr != "'|O'" || !h.shape.empty() || h.fortran_order)
    throw Error(Errc::bad_input, "not a pickled 0-d object array (descr " + escape_for_terminal(h.descr) + ")")
        .with_path(path)
        .with_offset(10);
  if (h.data_offset > file.size()) throw Error(Errc::bad_input, "truncated").with_path(path).with_offset(file.size());
  return Reader(file.subspan(h.data_offset), h.data_offset, path).run();
}

}  // namespace slip::detail
