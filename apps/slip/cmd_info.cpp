// slip info CACHE [--json]
#include <cstdio>
#include <iostream>

#include "command.hpp"
#include "output.hpp"
#include "slip/cache.hpp"
#include "slip/inspect.hpp"

namespace slip::cli {

namespace {
nlohmann::ordered_json dist_json(const Distribution& d) { return {{"min", d.min}, {"median", d.median}, {"max", d.max}, {"mean", d.mean}}; }
}  // namespace

Action setup_info(CLI::App& sub, const GlobalOptions&) {
  struct Args {
    std::string cache;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("cache", a->cache, "Cache directory")->required();
  sub.add_flag("--json", a->json, "Print one JSON object");
  return [a]() -> int {
    const Cache cache = Cache::open(a->cache);
    // The summary is derived from the tables: refuse ones that do not match their checksums
    // (`slip verify` reports what is damaged).
    cache.check_checksums();
    const CacheSummary s = summarize(cache);
    const CacheProvenance& p = s.provenance;
    if (a->json) {
      nlohmann::ordered_json fields = nlohmann::ordered_json::array();
      for (const FieldSummary& f : s.fields) {
        nlohmann::ordered_json j{{"name", f.name}, {"type", f.type}, {"bytes", f.bytes}};
        if (!f.dtype.empty()) j["dtype"] = f.dtype;
        if (!f.image_format.empty()) {
          j["image_format"] = f.image_format;
          j["max_size"] = f.max_size;
          j["payload_size"] = dist_json(f.payload_size);
        }
        if (f.type == "ImageBytes" || f.type == "HFImageDict") {
          j["width"] = dist_json(f.width);
          j["height"] = dist_json(f.height);
        }
        if (!f.histogram.empty()) {
          nlohmann::ordered_json h = nlohmann::ordered_json::object();
          for (auto [v, c] : f.histogram) h[std::to_string(v)] = c;
          j["histogram"] = std::move(h);
        }
        fields.push_back(std::move(j));
      }
      nlohmann::ordered_json j{
          {"command", "info"}, {"path", s.path.string()}, {"samples", s.samples}, {"bytes", s.total_bytes}, {"fields", fields}};
      if (p.present)
        j["provenance"] = {{"tool_version", p.tool_version},
                           {"content_id", p.content_id},
                           {"created", p.created},
                           {"source", {{"kind", p.source_kind}, {"uri", p.source_uri}, {"fingerprint", p.source_fingerprint}}},
                           {"source_samples", p.source_samples}};
      else
        j["provenance"] = nullptr;
      j["ledger"] = s.ledger.actions;
      j["indexes"] = s.indexes;
      print_json(j);
      return 0;
    }
    std::printf("cache:    %s\n", s.path.c_str());
    std::printf("samples:  %llu\n", static_cast<unsigned long long>(s.samples));
    std::printf("size:     %s\n", human_bytes(s.total_bytes).c_str());
    std::printf("fields:\n");
    for (const FieldSummary& f : s.fields) {
      std::printf("  %-12s %-11s %10s", f.name.c_str(), f.type.c_str(), human_bytes(f.bytes).c_str());
      if (!f.dtype.empty()) std::printf("  dtype %s", f.dtype.c_str());
      if (!f.image_format.empty())
        std::printf("  format %s, payload bytes min/median/max %llu/%llu/%llu (max_size %llu)", f.image_format.c_str(),
                    static_cast<unsigned long long>(f.payload_size.min), static_cast<unsigned long long>(f.payload_size.median),
                    static_cast<unsigned long long>(f.payload_size.max), static_cast<unsigned long long>(f.max_size));
      std::printf("\n");
      if (f.type == "ImageBytes" || f.type == "HFImageDict")
        std::printf("  %-12s width min/median/max %llu/%llu/%llu, height %llu/%llu/%llu\n", "",
                    static_cast<unsigned long long>(f.width.min), static_cast<unsigned long long>(f.width.median),
                    static_cast<unsigned long long>(f.width.max), static_cast<unsigned long long>(f.height.min),
                    static_cast<unsigned long long>(f.height.median), static_cast<unsigned long long>(f.height.max));
    }
    for (const FieldSummary& f : s.fields) {
      if (f.histogram.empty() || f.histogram.size() > 50) continue;
      std::printf("%s histogram (%zu values):\n", f.name.c_str(), f.histogram.size());
      for (auto [v, c] : f.histogram) std::printf("  %8lld %8llu\n", static_cast<long long>(v), static_cast<unsigned long long>(c));
    }
    if (p.present) {
      std::printf("provenance:\n  source:      %s %s\n  fingerprint: %s\n  content id:  %s\n  created:     %s by slip %s\n",
                  p.source_kind.c_str(), p.source_uri.c_str(), p.source_fingerprint.c_str(), p.content_id.c_str(), p.created.c_str(),
                  p.tool_version.c_str());
      std::printf("  source samples %llu, skipped %llu, transcoded %llu\n", static_cast<unsigned long long>(p.source_samples),
                  static_cast<unsigned long long>(p.skipped), static_cast<unsigned long long>(p.transcoded));
    } else {
      std::printf("provenance: none (not written by slip; checksums absent)\n");
    }
    if (!s.ledger.actions.empty()) {
      std::printf("ledger:");
      for (const auto& [action, count] : s.ledger.actions) std::printf(" %s %llu", action.c_str(), static_cast<unsigned long long>(count));
      std::printf("\n");
    }
    if (!s.indexes.empty()) {
      std::printf("indexes:");
      for (const auto& i : s.indexes) std::printf(" %s", i.c_str());
      std::printf("\n");
    }
    return 0;
  };
}

}  // namespace slip::cli
