// slip info CACHE [--json]
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "command.hpp"
#include "output.hpp"
#include "slip/cache.hpp"
#include "slip/dataset.hpp"
#include "slip/inspect.hpp"

namespace slip::cli {

namespace {
// Histograms with more values than this are summarised on one line in the text output (a
// screenful is not a summary; the full histogram is in --json).
constexpr size_t kHistogramLines = 20;
// Columns for names from the cache: UTF-8 sequences count as one.
size_t display_width(const std::string& text) {
  size_t n = 0;
  for (const char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}
std::string pad(const std::string& text, size_t width) {
  const size_t w = display_width(text);
  return w >= width ? text : text + std::string(width - w, ' ');
}
nlohmann::ordered_json dist_json(const Distribution& d) { return {{"min", d.min}, {"median", d.median}, {"max", d.max}, {"mean", d.mean}}; }

// One field of `slip info --json`.
nlohmann::ordered_json info_field_json(const FieldSummary& f) {
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
  if (f.distinct > 0) {
    j["distinct"] = f.distinct;
    j["min"] = f.value_min;
    j["max"] = f.value_max;
    nlohmann::ordered_json top = nlohmann::ordered_json::array();
    for (auto [v, c] : f.most_frequent) top.push_back({v, c});
    j["most_frequent"] = std::move(top);
    j["histogram_truncated"] = f.histogram_truncated;
    if (!f.histogram_truncated) {
      // ordered_json's operator[] searches linearly; the keys are distinct, so append.
      nlohmann::ordered_json h = nlohmann::ordered_json::object();
      auto& entries = h.get_ref<nlohmann::ordered_json::object_t&>();
      entries.reserve(f.histogram.size());
      for (auto [v, c] : f.histogram) entries.emplace_back(std::to_string(v), c);
      j["histogram"] = std::move(h);
    }
  }
  return j;
}

// One cache's `slip info --json` object.
nlohmann::ordered_json info_json(const CacheSummary& s) {
  const CacheProvenance& p = s.provenance;
  nlohmann::ordered_json fields = nlohmann::ordered_json::array();
  for (const FieldSummary& f : s.fields) fields.push_back(info_field_json(f));
  nlohmann::ordered_json j{
      {"command", "info"}, {"path", s.path.string()}, {"samples", s.samples}, {"bytes", s.total_bytes}, {"fields", fields}};
  if (p.present)
    j["provenance"] = {{"tool_version", p.tool_version},
                       {"content_id", p.content_id},
                       {"created", p.created},
                       {"source", {{"kind", p.source_kind}, {"uri", p.source_uri}, {"fingerprint", p.source_fingerprint}}},
                       {"source_samples", p.source_samples},
                       {"options", options_json(p.options)}};
  else
    j["provenance"] = nullptr;
  j["ledger"] = s.ledger.actions;
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const LedgerEntry& e : s.ledger.entries)
    entries.push_back({{"source_index", e.source_index},
                       {"sample", e.sample ? nlohmann::ordered_json(*e.sample) : nullptr},
                       {"origin", e.origin},
                       {"field", e.field},
                       {"action", e.action},
                       {"reason", e.reason}});
  j["ledger_entries"] = std::move(entries);
  j["indexes"] = s.indexes;
  return j;
}

// The text report's field table: one line a field (two for images).
void print_info_fields(const CacheSummary& s) {
  std::printf("fields:\n");
  // Columns as wide as the longest name and type (names are the source's: any length).
  size_t name_width = 12, type_width = 11;
  for (const FieldSummary& f : s.fields) {
    name_width = std::max(name_width, display_width(printable(f.name)));
    type_width = std::max(type_width, display_width(printable(f.type)));
  }
  for (const FieldSummary& f : s.fields) {
    std::printf("  %s %s %10s", pad(printable(f.name), name_width).c_str(), pad(printable(f.type), type_width).c_str(),
                human_bytes(f.bytes).c_str());
    if (!f.dtype.empty()) std::printf("  dtype %s", printable(f.dtype).c_str());
    if (!f.image_format.empty())
      std::printf("  format %s, payload bytes min/median/max %llu/%llu/%llu (max_size %llu)", printable(f.image_format).c_str(),
                  static_cast<unsigned long long>(f.payload_size.min), static_cast<unsigned long long>(f.payload_size.median),
                  static_cast<unsigned long long>(f.payload_size.max), static_cast<unsigned long long>(f.max_size));
    std::printf("\n");
    if (f.type == "ImageBytes" || f.type == "HFImageDict")
      std::printf("  %s width min/median/max %llu/%llu/%llu, height %llu/%llu/%llu\n", std::string(name_width, ' ').c_str(),
                  static_cast<unsigned long long>(f.width.min), static_cast<unsigned long long>(f.width.median),
                  static_cast<unsigned long long>(f.width.max), static_cast<unsigned long long>(f.height.min),
                  static_cast<unsigned long long>(f.height.median), static_cast<unsigned long long>(f.height.max));
  }
}

// The text report's value histograms of the int fields.
void print_info_histograms(const CacheSummary& s) {
  for (const FieldSummary& f : s.fields) {
    if (f.distinct == 0) continue;
    // Every value once (an id, an index, a path hash): its histogram says nothing but that.
    if (f.distinct > 1 && !f.most_frequent.empty() && f.most_frequent.front().second == 1) {
      std::printf("%s: %llu distinct values, min %lld, max %lld (unique)\n", printable(f.name).c_str(),
                  static_cast<unsigned long long>(f.distinct), static_cast<long long>(f.value_min), static_cast<long long>(f.value_max));
      continue;
    }
    if (!f.histogram_truncated && f.histogram.size() <= kHistogramLines) {
      std::printf("%s histogram (%zu values):\n", printable(f.name).c_str(), f.histogram.size());
      for (auto [v, c] : f.histogram) std::printf("  %8lld %8llu\n", static_cast<long long>(v), static_cast<unsigned long long>(c));
      continue;
    }
    // Too many values for a screen: a one-line summary (the full histogram is in --json).
    std::printf("%s: %llu distinct values, min %lld, max %lld; most frequent:", printable(f.name).c_str(),
                static_cast<unsigned long long>(f.distinct), static_cast<long long>(f.value_min), static_cast<long long>(f.value_max));
    for (size_t i = 0; i < f.most_frequent.size() && i < 5; ++i)
      std::printf("%s %lld (%llu)", i ? "," : "", static_cast<long long>(f.most_frequent[i].first),
                  static_cast<unsigned long long>(f.most_frequent[i].second));
    if (f.distinct > 5) std::printf(" and %llu more", static_cast<unsigned long long>(f.distinct - std::min<uint64_t>(f.distinct, 5)));
    std::printf(f.histogram_truncated ? "\n" : "; full histogram: slip info --json\n");
  }
}

// The text report's provenance, ledger and indexes.
void print_info_provenance(const CacheSummary& s) {
  const CacheProvenance& p = s.provenance;
  if (p.present) {
    std::printf("provenance:\n  source:      %s %s\n  fingerprint: %s\n  content id:  %s\n  created:     %s by slip %s\n",
                printable(p.source_kind).c_str(), printable(p.source_uri).c_str(), printable(p.source_fingerprint).c_str(),
                printable(p.content_id).c_str(), printable(p.created).c_str(), printable(p.tool_version).c_str());
    std::printf("  source samples %llu, skipped %llu, transcoded %llu\n", static_cast<unsigned long long>(p.source_samples),
                static_cast<unsigned long long>(p.skipped), static_cast<unsigned long long>(p.transcoded));
    const std::string options = options_summary(p.options);
    std::printf("  options:     %s\n", options.empty() ? "none (the defaults)" : options.c_str());
  } else {
    std::printf("provenance: none (not written by slip; checksums absent)\n");
  }
  if (!s.ledger.actions.empty()) {
    std::printf("ledger:");
    for (const auto& [action, count] : s.ledger.actions)
      std::printf(" %s %llu", printable(action).c_str(), static_cast<unsigned long long>(count));
    std::printf("\n");
    // The samples skipped or transcoded are named, not only counted (all of them: --json).
    constexpr size_t kShown = 10;
    for (size_t i = 0; i < s.ledger.entries.size() && i < kShown; ++i) {
      const LedgerEntry& e = s.ledger.entries[i];
      std::printf("  %-11s source #%llu %s%s%s: %s\n", printable(e.action).c_str(), static_cast<unsigned long long>(e.source_index),
                  printable(e.origin).c_str(), e.field.empty() ? "" : (" (" + printable(e.field) + ")").c_str(),
                  e.sample ? (" -> sample " + std::to_string(*e.sample)).c_str() : "", printable(e.reason).c_str());
    }
    if (s.ledger.entries.size() > kShown)
      std::printf("  ... and %zu more (slip info --json lists them all)\n", s.ledger.entries.size() - kShown);
  }
  if (!s.indexes.empty()) {
    std::printf("indexes:");
    for (const auto& i : s.indexes) std::printf(" %s", printable(i).c_str());
    std::printf("\n");
  }
}

// One cache's text report.
void print_info_text(const CacheSummary& s) {
  std::printf("cache:    %s\n", printable(s.path.string()).c_str());
  std::printf("samples:  %llu\n", static_cast<unsigned long long>(s.samples));
  std::printf("size:     %s\n", human_bytes(s.total_bytes).c_str());
  print_info_fields(s);
  print_info_histograms(s);
  print_info_provenance(s);
}

// A dataset's total after its caches' reports.
void print_info_dataset(const Dataset& d, bool json, size_t& reports) {
  uint64_t bytes = 0;
  for (size_t i = 0; i < d.num_caches(); ++i)
    for (const auto& [name, size] : d.cache(i).file_sizes()) bytes += size;
  if (json) {
    nlohmann::ordered_json caches = nlohmann::ordered_json::array();
    for (size_t i = 0; i < d.num_caches(); ++i)
      caches.push_back({{"path", d.cache(i).path().string()},
                        {"samples", d.cache(i).size()},
                        {"first_id", d.first_id(i)},
                        {"content_id", Dataset::content_id_of(d.cache(i))}});
    print_json({{"command", "info"}, {"dataset", true}, {"caches", std::move(caches)}, {"samples", d.size()}, {"bytes", bytes}});
    return;
  }
  if (reports++ > 0) std::printf("\n");
  std::printf("dataset:  %zu caches, fields agree\n", d.num_caches());
  for (size_t i = 0; i < d.num_caches(); ++i)
    std::printf("  %6zu  %12llu samples  ids from %llu  %s\n", i, static_cast<unsigned long long>(d.cache(i).size()),
                static_cast<unsigned long long>(d.first_id(i)), printable(d.cache(i).path().string()).c_str());
  std::printf("total:    %llu samples, %s\n", static_cast<unsigned long long>(d.size()), human_bytes(bytes).c_str());
}
}  // namespace

Action setup_info(CLI::App& sub, const GlobalOptions&) {
  struct Args {
    std::vector<std::string> caches;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("cache", a->caches,
                 "Cache directories, directories of caches or dataset lists (one report per cache, then the dataset's total; "
                 "the exit status is the worst)")
      ->type_name("CACHE")
      ->required();
  sub.add_flag("--json", a->json, "Print one JSON object per cache (one per line)");
  auto reports = std::make_shared<size_t>(0);  // text reports printed so far (blank line between)
  const auto one = [a, reports](const std::string& path) -> int {
    const Cache cache = Cache::open(path);
    // The summary is derived from the tables: refuse ones that do not match their checksums
    // (`slip verify` reports what is damaged).
    cache.check_checksums();
    const CacheSummary s = summarize(cache);
    if (a->json) {
      print_json(info_json(s));
      return 0;
    }
    if ((*reports)++ > 0) std::printf("\n");
    print_info_text(s);
    return 0;
  };
  const auto total = [a, reports](const Dataset& d) -> int {
    print_info_dataset(d, a->json, *reports);
    return 0;
  };
  return [a, one, total]() -> int { return for_each_dataset_cache(a->caches, a->json, "info", one, total); };
}

}  // namespace slip::cli
