#include "format/pickle_index.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>

#include "slip/error.hpp"
#include "slip/npy.hpp"
#include "util/file_io.hpp"
#include "util/untrusted.hpp"

namespace slip::detail {

using pickle::Kind;
using pickle::Value;
using pickle::ValueList;

namespace {

// Protocol 2 has no bytes opcode: bytes are pickled as _codecs.encode(text, 'latin1'), and
// b'' as bytes(); both only ever make a bytes object.
enum class Callable : uint8_t { reconstruct, ndarray, dtype, codecs_encode, bytes };

// What one object costs against the budget, in values (16 bytes): a node is ~64 bytes.
constexpr uint64_t kNodeWeight = 4;
constexpr uint64_t kMemoWeight = 4;
// Beyond 2 values per key: one SETITEMS batch of 1,000 pairs on the stack (CPython and slip),
// the arrays built for it, the outer structure and the memo of numpy's globals and dtype.
constexpr uint64_t kBudgetSlack = 65536;

bool is_node(Kind k) { return k >= Kind::tuple; }

}  // namespace

class PickleReader {
 public:
  PickleReader(std::span<const std::byte> pickle, uint64_t base, const std::string& path, uint64_t samples,
               const MappedFile* mapped = nullptr)
      : p_(pickle), base_(base), path_(path), samples_(samples), mapped_(mapped) {
    // 2 values per key, at most one key per sample (+1: a NaN key of the Python form).
    const uint64_t per_samples = samples > (uint64_t{1} << 40) ? uint64_t{1} << 41 : 2 * (samples + 1);
    budget_ = std::min<uint64_t>(per_samples + kBudgetSlack, uint64_t{1} << 31);
  }

  PickledIndex run() {
    scan();
    release_behind(p_.size());
    pos_ = 0;
    released_ = 0;
    memo_count_ = 0;
    for (;;) {
      if (pos_ - released_ >= kReleaseStep) release_behind(pos_);
      op_at_ = pos_;
      const uint8_t op = u8(pos_++);
      if (op == '.') break;
      step(op);
    }
    release_behind(p_.size());
    if (stack_.size() != 1 || !marks_.empty()) refuse("leaves " + std::to_string(stack_.size()) + " objects at STOP", op_at_);
    return result(stack_[0]);
  }

 private:
  struct Node {
    uint32_t refs = 0;
    Kind kind = Kind::none;
    bool built = false;         // dtype / array: BUILD applied
    bool object_dtype = false;  // dtype 'O8' (else 'i8'); an array: its dtype's, once built
    Value data;                 // a built array: its list (object) or bytes (int64)
    uint64_t count = 0;         // a built int64 array: its length
    ValueList items;            // tuple, list; dict: key, value, key, value...
  };

  [[noreturn]] void refuse(const std::string& why, uint64_t at) const {
    throw Error(Errc::bad_input, "index pickle " + why + " (refused unread: it is not the dict of int64 arrays slip and numpy write)")
        .with_path(path_)
        .with_offset(base_ + at);
  }
  [[noreturn]] void refuse(const std::string& why) const { refuse(why, op_at_); }

  uint8_t u8(uint64_t at) const {
    if (at >= p_.size()) refuse("is truncated", at);
    return static_cast<uint8_t>(p_[at]);
  }
  uint64_t skip(uint64_t n) {  // the offset of the next n bytes
    if (n > p_.size() - pos_) refuse("is truncated", pos_);
    const uint64_t at = pos_;
    pos_ += n;
    return at;
  }
  uint64_t le(size_t n) {
    const uint64_t at = skip(n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(p_[at + i])} << (8 * i);
    return v;
  }
  std::string_view line() {
    const uint64_t start = pos_;
    while (pos_ < p_.size() && u8(pos_) != '\n') {
      if (pos_ - start > 64) refuse("names a global longer than any it may name");
      ++pos_;
    }
    if (pos_ >= p_.size()) refuse("is truncated", pos_);
    const std::string_view s(reinterpret_cast<const char*>(p_.data() + start), pos_ - start);
    ++pos_;
    return s;
  }
  std::string_view text_of(const Value& v) const {
    const char* base = (v.flags & Value::kDerived) ? derived_.data() : reinterpret_cast<const char*>(p_.data());
    return {base + v.bits, v.len};
  }

  static constexpr uint64_t kReleaseStep = uint64_t{32} << 20;
  void release_behind(uint64_t upto) {
    if (mapped_) mapped_->release_resident_pages(0, base_ + upto);
    released_ = upto;
  }

  // ---- pass 1: opcodes, argument bounds, and which memo entries are ever read back ----------

  // Every memo index is the count of entries before it, as CPython's pickler and numpy write
  // them; a GET must name an earlier one. Only entries some GET reads are kept in pass 2.
  void scan() {
    if (p_.size() < 2 || u8(0) != 0x80) refuse("does not start with a PROTO opcode", 0);
    for (;;) {
      if (pos_ >= p_.size()) refuse("ends without STOP", pos_);
      if (pos_ - released_ >= kReleaseStep) release_behind(pos_);
      op_at_ = pos_;
      const uint8_t op = u8(pos_++);
      switch (op) {
        case '.':
          if (pos_ != p_.size()) refuse("has bytes after STOP", pos_);
          return;
        case 0x80: {
          const uint64_t v = le(1);
          if (op_at_ != 0 || v < 2 || v > 4) refuse("uses pickle protocol " + std::to_string(v));
          break;
        }
        case 0x95:  // FRAME (a length hint)
          if (le(8) > p_.size() - pos_) refuse("has a FRAME beyond its end");
          break;
        case 'c': {
          const std::string_view module = line(), name = line();
          (void)callable(module, name);
          break;
        }
        case 'q':
        case 'r':
        case 0x94: {
          const uint64_t index = op == 0x94 ? memo_count_ : le(op == 'q' ? 1 : 4);
          if (index != memo_count_)
            refuse("memoizes at index " + std::to_string(index) + " where numpy's pickler writes " + std::to_string(memo_count_));
          ++memo_count_;
          read_back_.push_back(false);
          break;
        }
        case 'h':
        case 'j': {
          const uint64_t index = le(op == 'h' ? 1 : 4);
          if (index >= memo_count_) refuse("reads memo " + std::to_string(index) + ", which was never stored");
          read_back_[index] = true;
          break;
        }
        case 'K':
        case 'C':
        case 0x8c:
          if (op == 'K')
            skip(1);
          else
            skip(le(1));
          break;
        case 'M':
          skip(2);
          break;
        case 'J':
          skip(4);
          break;
        case 'G':
          skip(8);
          break;
        case 0x8a: {
          const uint64_t n = le(1);
          if (n == 0 || n > 8) refuse("holds an integer wider than 64 bits");
          skip(n);
          break;
        }
        case 'B':
        case 'X':
          skip(le(4));
          break;
        case 0x93:
        case 'N':
        case 0x88:
        case 0x89:
        case '(':
        case ')':
        case 0x85:
        case 0x86:
        case 0x87:
        case 't':
        case ']':
        case '}':
        case 'a':
        case 'e':
        case 's':
        case 'u':
        case 'R':
        case 'b':
          break;
        default: {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", op);
          refuse(std::string("uses opcode ") + hex + (op >= 0x20 && op < 0x7f ? std::string(" '") + char(op) + "'" : std::string()) +
                 ", which numpy's index files never contain");
        }
      }
    }
  }

  // ---- objects: reference-counted nodes, a budget for everything held at once --------------

  void charge(uint64_t n) {
    held_ += n;
    if (held_ > budget_)
      refuse("holds more than " + std::to_string(budget_) + " objects at once (an index of a cache of " + std::to_string(samples_) +
             " samples needs fewer)");
  }
  void uncharge(uint64_t n) { held_ -= n; }

  Value new_node(Kind kind) {
    charge(kNodeWeight);
    uint32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = static_cast<uint32_t>(nodes_.size());
      nodes_.emplace_back();
    }
    Node& n = nodes_[id];
    n.refs = 1;
    n.kind = kind;
    return Value{kind, 0, 0, id};
  }
  Node& node(const Value& v) { return nodes_[v.bits]; }
  const Node& node(const Value& v) const { return nodes_[v.bits]; }
  void retain(const Value& v) {
    if (is_node(v.kind)) ++node(v).refs;
  }
  // Drops one reference; frees what nobody holds any more (iteratively: no recursion however
  // deep the nesting).
  void release(const Value& v) {
    if (!is_node(v.kind) || --node(v).refs != 0) return;
    std::vector<uint32_t> work{static_cast<uint32_t>(v.bits)};
    while (!work.empty()) {
      const uint32_t id = work.back();
      work.pop_back();
      Node& n = nodes_[id];
      auto drop = [&](const Value& item) {
        if (is_node(item.kind) && --nodes_[item.bits].refs == 0) work.push_back(static_cast<uint32_t>(item.bits));
      };
      for (size_t i = 0; i < n.items.size(); ++i) drop(n.items[i]);
      drop(n.data);
      uncharge(n.items.size() + kNodeWeight + (n.data.kind != Kind::none ? 1 : 0));
      n = Node{};
      free_.push_back(id);
    }
  }

  void push(const Value& v) {
    charge(1);
    stack_.push_back(v);
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  Value pop() {  // the caller owns the reference
    if (stack_.size() <= floor()) refuse("pops an empty stack");
    const Value v = stack_.back();
    stack_.pop_back();
    uncharge(1);
    return v;
  }
  const Value& top() const {
    if (stack_.size() <= floor()) refuse("reads an empty stack");
    return stack_.back();
  }
  // Moves the values above the last MARK into `into` (a container's items).
  void pop_mark_into(ValueList& into) {
    if (marks_.empty()) refuse("has no MARK to pop to");
    const size_t m = marks_.back();
    marks_.pop_back();
    uncharge(1);
    for (size_t i = m; i < stack_.size(); ++i) into.push_back(stack_[i]);  // charge moves with them
    stack_.resize(m);
  }
  ValueList pop_mark() {
    ValueList items;
    pop_mark_into(items);
    return items;
  }

  void memo_put() {
    const uint64_t index = memo_count_++;
    if (!read_back_[index]) return;  // never read: not kept
    const Value& v = top();
    retain(v);
    charge(kMemoWeight);
    memo_.emplace(index, v);
  }
  void memo_get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) refuse("reads memo " + std::to_string(index) + ", which was never stored");
    retain(it->second);
    push(it->second);
  }

  static Value scalar(Kind kind, uint64_t bits) { return Value{kind, 0, 0, bits}; }
  static Value integer(int64_t v) { return scalar(Kind::integer, static_cast<uint64_t>(v)); }
  Value slice(Kind kind, uint64_t n) {
    if (n > std::numeric_limits<uint32_t>::max()) refuse("holds a string longer than 4 GiB");
    const uint64_t at = skip(n);
    Value v{kind, 0, static_cast<uint32_t>(n), at};
    if (kind == Kind::str && !is_valid_utf8(text_of(v))) refuse("holds a string that is not UTF-8");
    return v;
  }

  Callable callable(std::string_view module, std::string_view name) const {
    if ((module == "numpy.core.multiarray" || module == "numpy._core.multiarray") && name == "_reconstruct") return Callable::reconstruct;
    if (module == "numpy" && name == "ndarray") return Callable::ndarray;
    if (module == "numpy" && name == "dtype") return Callable::dtype;
    if (module == "_codecs" && name == "encode") return Callable::codecs_encode;
    if ((module == "__builtin__" || module == "builtins") && name == "bytes") return Callable::bytes;
    refuse("calls " + escape_for_terminal(module) + "." + escape_for_terminal(name));
  }

  bool is_int(const Value& v, int64_t want) const { return v.kind == Kind::integer && static_cast<int64_t>(v.bits) == want; }
  bool is_bool(const Value& v, bool want) const { return v.kind == Kind::boolean && v.bits == (want ? 1u : 0u); }
  bool is_str(const Value& v, std::string_view want) const { return v.kind == Kind::str && text_of(v) == want; }
  bool is_callable(const Value& v, Callable c) const { return v.kind == Kind::global && v.bits == static_cast<uint64_t>(c); }
  const ValueList& items(const Value& tuple) const { return node(tuple).items; }

  Value tuple_of(const std::vector<Value>& values) {
    Value t = new_node(Kind::tuple);
    for (const Value& v : values) node(t).items.push_back(v);
    charge(values.size());
    return t;
  }

  void reduce() {
    const Value args = pop(), fn = pop();
    if (fn.kind != Kind::global || args.kind != Kind::tuple) refuse("calls something other than numpy's array constructors");
    const ValueList& a = items(args);
    Value out;
    switch (static_cast<Callable>(fn.bits)) {
      case Callable::reconstruct:  // _reconstruct(ndarray, (0,), b'b')
        if (a.size() != 3 || !is_callable(a[0], Callable::ndarray) || a[1].kind != Kind::tuple || items(a[1]).size() != 1 ||
            !is_int(items(a[1])[0], 0) || a[2].kind != Kind::bytes || text_of(a[2]) != "b")
          refuse("calls _reconstruct with arguments numpy does not use");
        out = new_node(Kind::array);
        break;
      case Callable::dtype:  // dtype('O8' | 'i8', False, True)
        if (a.size() != 3 || !(is_str(a[0], "O8") || is_str(a[0], "i8")) || !is_bool(a[1], false) || !is_bool(a[2], true))
          refuse("builds a dtype other than object or int64");
        {
          const bool object = is_str(a[0], "O8");
          out = new_node(Kind::dtype);  // (may move the nodes `a` lives in)
          node(out).object_dtype = object;
          break;
        }
      case Callable::codecs_encode: {  // encode(text, 'latin1'): code points < 256 to bytes
        if (a.size() != 2 || a[0].kind != Kind::str || !is_str(a[1], "latin1")) refuse("calls _codecs.encode other than for bytes");
        const std::string_view t = text_of(a[0]);  // valid UTF-8 (checked when read)
        const size_t start = derived_.size();
        for (size_t i = 0; i < t.size(); ++i) {
          const auto c = static_cast<unsigned char>(t[i]);
          if (c < 0x80) {
            derived_ += static_cast<char>(c);
          } else if ((c == 0xc2 || c == 0xc3) && i + 1 < t.size()) {
            derived_ += static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(t[++i]) & 0x3f));
          } else {
            refuse("encodes a character beyond latin-1 as bytes");
          }
        }
        out = Value{Kind::bytes, Value::kDerived, static_cast<uint32_t>(derived_.size() - start), start};
        break;
      }
      case Callable::bytes:
        if (!a.empty()) refuse("calls bytes() with arguments");
        out = Value{Kind::bytes, 0, 0, 0};
        break;
      default:
        refuse("calls numpy.ndarray directly");
    }
    release(args);
    push(out);
  }

  void build() {
    const Value state = pop();
    const Value obj = top();
    if (state.kind != Kind::tuple) refuse("BUILDs from a state that is not a tuple");
    if (obj.kind != Kind::dtype && obj.kind != Kind::array) refuse("BUILDs something that is not a numpy array or dtype");
    const ValueList& s = items(state);
    if (node(obj).built) refuse("BUILDs an object twice");
    if (obj.kind == Kind::dtype) {
      // (3, order, None, None, None, -1, -1, flags): '|' and 63 for object, '<' and 0 for int64.
      const bool object = node(obj).object_dtype;
      if (s.size() != 8 || !is_int(s[0], 3) || !is_str(s[1], object ? "|" : "<") || s[2].kind != Kind::none || s[3].kind != Kind::none ||
          s[4].kind != Kind::none || !is_int(s[5], -1) || !is_int(s[6], -1) || !is_int(s[7], object ? 63 : 0))
        refuse("gives a dtype a state numpy does not write");
    } else {
      // (1, shape, dtype, False, data)
      if (s.size() != 5 || !is_int(s[0], 1) || s[1].kind != Kind::tuple || s[2].kind != Kind::dtype || !node(s[2]).built ||
          !is_bool(s[3], false))
        refuse("gives an array a state numpy does not write");
      const ValueList& shape = items(s[1]);
      for (size_t i = 0; i < shape.size(); ++i)
        if (shape[i].kind != Kind::integer || static_cast<int64_t>(shape[i].bits) < 0) refuse("gives an array a bad shape");
      const bool object = node(s[2]).object_dtype;
      const Value& data = s[4];
      if (object ? !(shape.empty() && data.kind == Kind::list && node(data).items.size() == 1)
                 : !(shape.size() == 1 && data.kind == Kind::bytes && shape[0].bits <= data.len / 8 && data.len == shape[0].bits * 8))
        refuse(object ? "holds an object array that is not 0-d with one element"
                      : "holds an int64 array whose bytes do not match its shape");
      if (!object) {  // every id a sample of the cache (read now, while its pages are resident)
        const char* bytes = text_of(data).data();
        for (uint64_t i = 0; i < shape[0].bits; ++i) {
          int64_t id = 0;
          std::memcpy(&id, bytes + i * 8, 8);
          if (id < 0 || static_cast<uint64_t>(id) >= samples_)
            refuse("lists sample id " + std::to_string(id) + ", beyond the cache's " + std::to_string(samples_) + " samples");
        }
      }
      Node& a = node(obj);
      a.object_dtype = object;
      a.count = object ? 0 : shape[0].bits;
      a.data = data;
      retain(data);
      charge(1);
    }
    node(obj).built = true;
    release(state);
  }

  // A built int64 array as the value it is from now on: (offset, count) of its data, without
  // the node (arrays are never changed after their BUILD).
  Value settle(const Value& v) {
    if (v.kind != Kind::array) return v;
    const Node& a = node(v);
    if (!a.built || a.object_dtype) return v;
    const Value out{Kind::ids, a.data.flags, static_cast<uint32_t>(a.count), a.data.bits};
    release(v);
    return out;
  }

  // NOLINTNEXTLINE(readability-function-size): one case per pickle opcode, read as the table it is
  void step(uint8_t op) {
    switch (op) {
      case 0x80:
        skip(1);
        break;
      case 0x95:
        skip(8);
        break;
      case 'c': {
        const std::string_view module = line(), name = line();
        push(scalar(Kind::global, static_cast<uint64_t>(callable(module, name))));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        const Value name = pop(), module = pop();
        if (name.kind != Kind::str || module.kind != Kind::str) refuse("has a STACK_GLOBAL without names");
        push(scalar(Kind::global, static_cast<uint64_t>(callable(text_of(module), text_of(name)))));
        break;
      }
      case 'q':
        skip(1);
        memo_put();
        break;
      case 'r':
        skip(4);
        memo_put();
        break;
      case 0x94:
        memo_put();
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
        uint64_t v = le(static_cast<size_t>(n));
        if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);
        push(integer(static_cast<int64_t>(v)));
        break;
      }
      case 'G': {  // BINFLOAT, big-endian
        const uint64_t at = skip(8);
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<uint8_t>(p_[at + static_cast<uint64_t>(i)]);
        push(scalar(Kind::real, bits));
        break;
      }
      case 'N':
        push(Value{});
        break;
      case 0x88:
      case 0x89:
        push(scalar(Kind::boolean, op == 0x88 ? 1 : 0));
        break;
      case 'C':
      case 'B':
        push(slice(Kind::bytes, le(op == 'C' ? 1 : 4)));
        break;
      case 'X':
        push(slice(Kind::str, le(4)));
        break;
      case 0x8c:
        push(slice(Kind::str, le(1)));
        break;
      case '(':
        charge(1);
        marks_.push_back(stack_.size());
        break;
      case ')':
        push(new_node(Kind::tuple));
        break;
      case 0x85:
      case 0x86:
      case 0x87: {
        std::vector<Value> items(static_cast<size_t>(op - 0x84));
        for (size_t i = items.size(); i-- > 0;) items[i] = pop();
        push(tuple_of(items));
        break;
      }
      case 't': {
        Value t = new_node(Kind::tuple);
        pop_mark_into(node(t).items);
        push(t);
        break;
      }
      case ']':
        push(new_node(Kind::list));
        break;
      case '}':
        push(new_node(Kind::dict));
        break;
      case 'a': {
        const Value v = pop();
        if (top().kind != Kind::list) refuse("APPENDs to something that is not a list");
        node(top()).items.push_back(v);
        charge(1);
        break;
      }
      case 'e': {  // the values keep the charge they had on the stack
        const ValueList values = pop_mark();
        if (top().kind != Kind::list) refuse("APPENDs to something that is not a list");
        ValueList& list = node(top()).items;
        for (size_t i = 0; i < values.size(); ++i) list.push_back(values[i]);
        break;
      }
      case 's': {
        const Value v = pop(), k = pop();
        if (top().kind != Kind::dict) refuse("SETITEMs into something that is not a dict");
        const Value dict = top(), value = settle(v);
        node(dict).items.push_back(k);
        node(dict).items.push_back(value);
        charge(2);
        break;
      }
      case 'u': {
        const ValueList values = pop_mark();  // (keeping their charge)
        if (values.size() % 2 || top().kind != Kind::dict) refuse("SETITEMS without key-value pairs or into something that is not a dict");
        const Value dict = top();
        for (size_t i = 0; i < values.size(); i += 2) {
          const Value value = settle(values[i + 1]);
          node(dict).items.push_back(values[i]);
          node(dict).items.push_back(value);
        }
        break;
      }
      case 'R':
        reduce();
        break;
      case 'b':
        build();
        break;
      default:
        refuse("uses an opcode the first pass did not check");  // unreachable: scan() refused it
    }
  }

  PickledIndex result(const Value& root) {
    if (root.kind != Kind::array || !node(root).built || !node(root).object_dtype) refuse("is not a 0-d object array", 0);
    const Value& list = node(root).data;
    if (node(list).items.size() != 1) refuse("is not a 0-d object array", 0);  // (APPENDs after its BUILD)
    const Value& dict = node(list).items[0];
    if (dict.kind != Kind::dict) refuse("holds something other than a dict", 0);
    ValueList& items = node(dict).items;
    uint64_t total = 0;
    for (size_t i = 0; i < items.size(); i += 2) {
      const Kind k = items[i].kind;
      if (k != Kind::integer && k != Kind::real && k != Kind::str) refuse("has a dict key that is not an int, float or str", 0);
      items[i + 1] = settle(items[i + 1]);
      if (items[i + 1].kind != Kind::ids) refuse("has a dict value that is not an int64 array", 0);
      total += items[i + 1].len;
      if (total > samples_)
        refuse("lists more sample ids than the cache's " + std::to_string(samples_) + " samples (each sample is under one key)", 0);
    }
    PickledIndex out;
    out.pickle_ = p_;
    out.derived_ = std::move(derived_);
    out.items_ = std::move(items);
    out.total_ids_ = total;
    return out;
  }

  std::span<const std::byte> p_;
  uint64_t base_;
  const std::string& path_;
  uint64_t samples_;
  const MappedFile* mapped_;
  uint64_t released_ = 0;
  uint64_t budget_ = 0, held_ = 0;
  uint64_t pos_ = 0, op_at_ = 0;
  uint64_t memo_count_ = 0;
  std::vector<bool> read_back_;  // memo index -> some GET reads it
  std::unordered_map<uint64_t, Value> memo_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> free_;
  std::vector<Value> stack_;
  std::vector<size_t> marks_;
  std::string derived_;
};

const std::byte* PickledIndex::data(const pickle::Value& v) const {
  return (v.flags & Value::kDerived) ? reinterpret_cast<const std::byte*>(derived_.data()) + v.bits : pickle_.data() + v.bits;
}

PickledIndex::Key PickledIndex::key(size_t k) const {
  const Value& v = items_[2 * k];
  switch (v.kind) {
    case Kind::integer:
      return static_cast<int64_t>(v.bits);
    case Kind::real:
      return std::bit_cast<double>(v.bits);
    default:
      return std::string_view(reinterpret_cast<const char*>(data(v)), v.len);
  }
}

int64_t PickledIndex::id(size_t k, uint64_t j) const {
  int64_t id = 0;
  std::memcpy(&id, data(items_[2 * k + 1]) + j * 8, 8);  // the file's little-endian int64 (unaligned)
  return id;
}

std::vector<int64_t> PickledIndex::ids(size_t k) const {
  std::vector<int64_t> out(id_count(k));
  if (!out.empty()) std::memcpy(out.data(), data(items_[2 * k + 1]), out.size() * 8);
  return out;
}

namespace {

PickledIndex read_npy(std::span<const std::byte> file, const std::string& path, uint64_t samples, const MappedFile* mapped) {
  const NpyHeader h = parse_npy_header(file, path);
  if (h.descr != "'|O'" || !h.shape.empty() || h.fortran_order)
    throw Error(Errc::bad_input, "not a pickled 0-d object array (descr " + escape_for_terminal(h.descr) + ")")
        .with_path(path)
        .with_offset(10);
  if (h.data_offset > file.size()) throw Error(Errc::bad_input, "truncated").with_path(path).with_offset(file.size());
  return PickleReader(file.subspan(h.data_offset), h.data_offset, path, samples, mapped).run();
}

}  // namespace

PickledIndex read_pickled_index(std::span<const std::byte> file, const std::string& path, uint64_t samples) {
  return read_npy(file, path, samples, nullptr);
}

PickledIndex read_pickled_index(const MappedFile& file, uint64_t samples) { return read_npy(file.bytes(), file.path(), samples, &file); }

}  // namespace slip::detail
