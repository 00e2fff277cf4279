// slip cat CACHE INDEX [--field F] [-o FILE]
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "command.hpp"
#include "output.hpp"
#include "slip/cache.hpp"
#include "slip/error.hpp"

namespace slip::cli {

Action setup_cat(CLI::App& sub, const GlobalOptions&) {
  struct Args {
    std::string cache;
    uint64_t index = 0;
    std::string field;
    std::string output;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("cache", a->cache, "Cache directory")->type_name("CACHE")->required();
  sub.add_option("index", a->index, "Sample id (0-based)")->required();
  sub.add_option("-F,--field", a->field, "Field to print (default: the first image field, else the first field)")->type_name("FIELD");
  sub.add_option("-o,--output", a->output, "Write to this file instead of stdout (- for stdout)")->type_name("FILE");
  return [a]() -> int {
    const Cache cache = Cache::open(a->cache);
    size_t fi = 0;
    if (!a->field.empty()) {
      if (const auto found = cache.field_index(a->field))
        fi = *found;
      else
        (void)cache.field(a->field);  // throws, naming the fields there are
    } else {
      for (size_t i = 0; i < cache.fields().size(); ++i)
        if (cache.fields()[i].type == FieldType::image) {
          fi = i;
          break;
        }
    }
    const CacheField& f = cache.fields().at(fi);
    // What is printed must be what was written: the field's files and this payload against the
    // checksums slip recorded (a corrupt byte is an error, not silently different output).
    cache.check_checksums(fi);
    if (is_payload_type(f.type)) cache.check_payload(fi, a->index);
    std::string text;  // values print as text + newline; payloads as raw bytes
    std::span<const std::byte> raw;
    bool binary = false;
    switch (f.type) {
      case FieldType::image:
      case FieldType::bytes:
      case FieldType::ndarray:
        raw = cache.array_bytes(fi, a->index);
        binary = true;
        break;
      case FieldType::str:
        // The value verbatim into a pipe or file; escaped on a terminal (it is dataset text).
        text = std::string(cache.string(fi, a->index));
        text = ((a->output.empty() || is_stdout(a->output)) && stdout_is_terminal() ? printable(text) : text) + "\n";
        break;
      case FieldType::int64:
        text = std::to_string(cache.int_value(fi, a->index)) + "\n";
        break;
      case FieldType::float64: {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g\n", cache.float_value(fi, a->index));
        text = buf;
        break;
      }
    }
    if (!binary) raw = std::as_bytes(std::span(text.data(), text.size()));
    write_output(a->output, std::string_view(reinterpret_cast<const char*>(raw.data()), raw.size()), binary);
    return 0;
  };
}

}  // namespace slip::cli
