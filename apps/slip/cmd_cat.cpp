// slip cat CACHE INDEX [--field F] [-o FILE]
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "command.hpp"
#include "output.hpp"
#include "slip/cache.hpp"
#include "slip/error.hpp"
#include "slip/schema.hpp"

namespace slip::cli {

Action setup_cat(CLI::App& sub, const GlobalOptions&) {
  struct Args {
    std::string cache;
    uint64_t index = 0;
    std::string field;
    std::string output;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("cache", a->cache, "Cache directory")->type_name("CACHE")->required();
  sub.add_option("index", a->index, "Sample id (0-based)")->required();
  sub.add_option("-F,--field", a->field, "Field to print (default: the first image field, else the first field)")->type_name("FIELD");
  sub.add_option("-o,--output", a->output, "Write to this file instead of stdout (- for stdout)")->type_name("FILE");
  sub.add_flag("--json", a->json, "One JSON object on stdout: the value of an int/float/str field, or the file -o wrote a payload to");
  return [a]() -> int {
    set_error_subject(a->cache);
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
    // A payload's bytes are not JSON: with --json they go to the -o file, the object says where.
    if (a->json && is_payload_type(f.type) && (a->output.empty() || is_stdout(a->output)))
      throw Error(Errc::usage, "cat --json: field \"" + f.name + "\" holds " + std::string(field_type_name(f.type)) +
                                   " payloads, which JSON cannot carry; add -o FILE to write them there");
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
    if (a->json) {
      nlohmann::ordered_json out{
          {"command", "cat"}, {"path", a->cache}, {"sample", a->index}, {"field", f.name}, {"type", field_type_name(f.type)}};
      if (f.type == FieldType::int64)
        out["value"] = cache.int_value(fi, a->index);
      else if (f.type == FieldType::float64)
        out["value"] = cache.float_value(fi, a->index);
      else if (f.type == FieldType::str)
        out["value"] = std::string(cache.string(fi, a->index));  // JSON escapes it; invalid UTF-8 is replaced
      if (!a->output.empty() && !is_stdout(a->output)) {
        write_output(a->output, std::string_view(reinterpret_cast<const char*>(raw.data()), raw.size()), binary);
        out["output"] = a->output;
      }
      out["bytes"] = raw.size();
      print_json(out);
      return 0;
    }
    write_output(a->output, std::string_view(reinterpret_cast<const char*>(raw.data()), raw.size()), binary);
    return 0;
  };
}

}  // namespace slip::cli
