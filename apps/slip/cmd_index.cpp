// slip index CACHE --field label [--field ...] [--json]
#include <iostream>

#include "command.hpp"
#include "output.hpp"
#include "slip/cache.hpp"
#include "slip/index.hpp"

namespace slip::cli {

Action setup_index(CLI::App& sub, const GlobalOptions&) {
  struct Args {
    std::string cache;
    std::vector<std::string> fields;
    bool json = false;
    bool force = false;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("cache", a->cache, "Cache directory")->type_name("CACHE")->required();
  sub.add_option("-F,--field", a->fields, "Field to index (int, float or str; repeatable)")->type_name("FIELD")->required();
  sub.add_flag("--json", a->json, "Print one JSON object");
  sub.add_flag("--force", a->force, "Index a field even when its values are nearly unique (one id array per sample)");
  return [a]() -> int {
    set_error_subject(a->cache);  // --json failures name it
    nlohmann::ordered_json written = nlohmann::ordered_json::array();
    if (!a->force) {  // check every field before writing any index
      const Cache cache = Cache::open(a->cache);
      for (const std::string& field : a->fields) {
        const FieldCardinality c = field_cardinality(cache, field);
        if (c.nearly_unique())
          throw Error(Errc::usage, "field \"" + field + "\" has " + std::to_string(c.distinct) + " distinct values in " +
                                       std::to_string(c.samples) +
                                       " samples: its index would hold one id list per sample (larger than the field, slow for "
                                       "the Python loader to unpickle); --force builds it anyway")
              .with_path(a->cache);
      }
    }
    for (const std::string& field : a->fields) {
      const Cache cache = Cache::open(a->cache);  // reopened: each index rewrites the manifest
      const FieldIndex idx = build_field_index(cache, field);
      write_field_index(cache, idx);
      std::vector<std::string> files{pickled_index_name(field)};
      for (const auto& n : csr_index_names(field)) files.push_back(n);
      written.push_back({{"field", field}, {"num_keys", idx.num_keys()}, {"samples", idx.ids.size()}, {"files", files}});
      if (!a->json)
        std::cout << printable(field) << ": " << idx.num_keys() << " values, " << idx.ids.size() << " samples -> "
                  << (cache.path() / files[0]).string() << "\n";
    }
    if (a->json) print_json({{"command", "index"}, {"path", a->cache}, {"indexes", written}});
    return 0;
  };
}

}  // namespace slip::cli
