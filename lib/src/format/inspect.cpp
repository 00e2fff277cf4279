#include "slip/inspect.hpp"

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "format/layout.hpp"
#include "format/staging.hpp"
#include "slip/error.hpp"
#include "slip/hash.hpp"
#include "util/file_io.hpp"
#include "util/untrusted.hpp"

namespace slip {

namespace fs = std::filesystem;

namespace {

Distribution distribution(std::vector<uint64_t> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.min = values.front();
  d.max = values.back();
  d.median = values[values.size() / 2];
  double sum = 0;
  for (uint64_t v : values) sum += static_cast<double>(v);
  d.mean = sum / static_cast<double>(values.size());
  return d;
}

uint64_t directory_bytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec) && !e.is_symlink(ec)) total += e.file_size(ec);  // never what a link points at
  return total;
}

}  // namespace

CacheSummary summarize(const Cache& cache, size_t histogram_limit) {
  CacheSummary s;
  s.path = cache.path();
  s.samples = cache.size();
  s.total_bytes = directory_bytes(cache.path());
  s.provenance = cache.provenance();
  const uint64_t n = cache.size();
  for (size_t fi = 0; fi < cache.fields().size(); ++fi) {
    const CacheField& f = cache.fields()[fi];
    FieldSummary fs_;
    fs_.name = f.name;
    fs_.type = f.type_name;
    fs_.dtype = f.dtype;
    for (const auto& file : f.files) fs_.bytes += cache.file_bytes(file).size();
    if (is_payload_type(f.type)) {
      fs_.image_format = f.image_format;
      fs_.max_size = f.max_size;
      std::vector<uint64_t> sizes(n), widths, heights;
      if (f.type == FieldType::image) {
        widths.resize(n);
        heights.resize(n);
      }
      for (uint64_t i = 0; i < n; ++i) {
        const MetaRecord r = cache.record(fi, i);
        sizes[i] = r.data_size;
        if (f.type == FieldType::image) {
          widths[i] = r.width;
          heights[i] = r.height;
        }
      }
      fs_.payload_size = distribution(std::move(sizes));
      fs_.width = distribution(std::move(widths));
      fs_.height = distribution(std::move(heights));
    } else if ((f.type == FieldType::int64) && f.shape.size() == 1 && f.dtype != "<f8") {
      // Sort a copy and count runs: linear memory, n log n time, exact at any cardinality.
      std::vector<int64_t> values(n);
      for (uint64_t i = 0; i < n; ++i) values[i] = cache.int_value(fi, i);
      std::sort(values.begin(), values.end());
      std::vector<std::pair<int64_t, uint64_t>> runs;
      for (size_t i = 0; i < values.size();) {
        size_t j = i;
        while (j < values.size() && values[j] == values[i]) ++j;
        runs.emplace_back(values[i], j - i);
        i = j;
      }
      fs_.distinct = runs.size();
      if (!runs.empty()) {
        fs_.value_min = runs.front().first;
        fs_.value_max = runs.back().first;
      }
      if (runs.size() > histogram_limit)
        fs_.histogram_truncated = true;
      else
        fs_.histogram.insert(runs.begin(), runs.end());
      const size_t k = std::min<size_t>(10, runs.size());
      std::partial_sort(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(k), runs.end(),
                        [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
      fs_.most_frequent.assign(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(k));
    }
    s.fields.push_back(std::move(fs_));
  }
  try {
    const auto manifest = detail::parse_json_bounded(cache.manifest_text());
    if (manifest.contains("slip") && manifest["slip"].contains("ledger"))
      for (const auto& e : manifest["slip"]["ledger"]) {
        ++s.ledger.actions[e.value("action", std::string("?"))];
        // Each entry as recorded; a value of the wrong type reads as empty (the manifest is untrusted).
        const auto text = [&](const char* key) {
          return e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : std::string();
        };
        const auto number = [&](const char* key) -> std::optional<uint64_t> {
          if (e.contains(key) && e[key].is_number_unsigned()) return e[key].get<uint64_t>();
          return std::nullopt;
        };
        s.ledger.entries.push_back(
            {number("source_index").value_or(0), number("sample"), text("origin"), text("field"), text("action"), text("reason")});
      }
  } catch (const nlohmann::json::exception&) {
    // A ledger that is not a list of objects (the manifest is untrusted): shown as far as it
    // reads. Only that: out of memory or an interruption is not a property of the ledger.
    ++s.ledger.actions["(unreadable ledger)"];
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache.path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 10 && name.compare(name.size() - 10, 10, "_index.npy") == 0) s.indexes.push_back(name);
  }
  std::sort(s.indexes.begin(), s.indexes.end());
  return s;
}

std::vector<CacheListing> list_caches(const fs::path& dir) {
  std::vector<CacheListing> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(Errc::io, "not a directory").with_path(dir.string());
  fs::directory_iterator it(dir, ec);
  if (ec) throw Error(Errc::io, "cannot list directory: " + ec.message()).with_path(dir.string());
  // slip's temporary directories beside the caches: a run in progress or an abandoned one.
  for (const detail::TempEntry& t : detail::find_temporaries(dir)) {
    if (!t.is_directory) continue;
    CacheListing l;
    l.path = t.path;
    l.name = t.final_name;
    const std::string name = t.path.filename().string();
    l.state = t.in_progress ? "incomplete (in progress, pid " + std::to_string(std::atol(name.c_str() + name.find(".tmp-") + 5)) + ")"
                            : "incomplete (abandoned)";
    l.bytes = t.bytes;
    out.push_back(std::move(l));
  }
  for (const auto& e : it) {
    if (!e.is_directory(ec) || e.is_symlink(ec)) continue;
    const std::string name = e.path().filename().string();
    if (name.size() > 1 && name[0] == '.' && name.find(".tmp-") != std::string::npos) continue;  // listed above
    CacheListing l;
    l.path = e.path();
    l.name = name;
    // Not a cache without a manifest; one this user may not look into is listed, unreadable.
    if (fs::symlink_status(e.path() / detail::kManifestName, ec).type() == fs::file_type::not_found) continue;
    l.bytes = directory_bytes(e.path());
    try {
      const std::string text = detail::read_text_file(e.path() / detail::kManifestName, detail::Open::cache_file);
      const auto m = detail::parse_json_bounded(text);
      l.samples = m.at("num_samples").get<uint64_t>();
      if (m.contains("slip")) {
        // Untrusted JSON: find(), never const operator[] on a key that may be absent.
        const auto& slip = m.at("slip");
        const auto src = slip.is_object() ? slip.find("source") : slip.end();
        if (src != slip.end() && src->is_object()) {
          std::string uri = src->value("uri", std::string());
          if (const auto nl = uri.find('\n'); nl != std::string::npos)  // older manifests joined shards
            uri = uri.substr(0, nl) + " (and " + std::to_string(std::count(uri.begin(), uri.end(), '\n')) + " more)";
          l.source = src->value("kind", std::string()) + ":" + uri;
        }
        if (const auto o = slip.is_object() ? slip.find("options") : slip.end(); o != slip.end() && o->is_object())
          for (auto& [key, value] : o->items())
            if (value.is_string()) l.options.emplace_back(key, value.get<std::string>());
        // Caches written before slip.options held the image format: the fields say it.
        if (std::none_of(l.options.begin(), l.options.end(), [](const auto& kv) { return kv.first == "image-format"; }))
          if (const auto f = m.find("fields"); f != m.end() && f->is_object())
            for (auto& [name, spec] : f->items())
              if (spec.is_object() && spec.value("type", std::string()) == field_type_name(FieldType::image) &&
                  spec.value("image_format", std::string("jpeg")) != "jpeg") {
                l.options.emplace_back("image-format", spec.value("image_format", std::string()));
                std::sort(l.options.begin(), l.options.end());
                break;
              }
      } else {
        l.source = "(python slipstream)";
      }
      l.complete = true;
      l.state = "complete";
      if (fs::exists(e.path() / detail::kManifestSumName, ec)) {
        if (!detail::manifest_sum_matches(e.path(), text)) {
          l.complete = false;
          l.state = "damaged: manifest checksum mismatch";
        }
      }
      if (l.complete && m.contains("file_sizes")) {
        for (auto& [file, size] : m.at("file_sizes").items()) {
          std::error_code fec;
          // Only names inside the cache, never followed through a link (".." or "/etc/x" would
          // probe files elsewhere).
          const bool plain = detail::file_stem_problem(file).empty() && fs::is_regular_file(fs::symlink_status(e.path() / file, fec));
          const auto actual = plain ? fs::file_size(e.path() / file, fec) : 0;
          if (!plain || fec || !size.is_number_unsigned() || actual != size.get<uint64_t>()) {
            l.complete = false;
            l.state = "damaged: " + detail::escape_for_terminal(file) + (!plain || fec ? " missing" : " has the wrong size");
            break;
          }
        }
      }
    } catch (const nlohmann::json::exception& ex) {
      l.complete = false;
      l.state = "damaged: manifest: " + detail::escape_for_terminal(ex.what());
    } catch (const Error& ex) {
      // Damaged (bad input) or unreadable by this user (I/O: "Permission denied"), as the OS
      // says; an interruption ends the listing.
      if (ex.code() != Errc::bad_input && ex.code() != Errc::io) throw;
      l.complete = false;
      l.state = std::string(ex.code() == Errc::io ? "unreadable: " : "damaged: ") + detail::escape_for_terminal(ex.message());
    }
    // Files an interrupted run left inside the cache (e.g. a killed `slip yuv420`).
    for (const detail::TempEntry& t : detail::find_temporaries(e.path())) {
      l.temporaries.push_back(t.path.filename().string() + (t.in_progress ? " (in progress)" : " (abandoned)"));
      l.temporary_bytes += t.bytes;
    }
    out.push_back(std::move(l));
  }
  std::sort(out.begin(), out.end(), [](const CacheListing& a, const CacheListing& b) { return a.name < b.name; });
  return out;
}

std::string options_summary(const std::vector<std::pair<std::string, std::string>>& options) {
  std::string out;
  for (const auto& [key, value] : options)
    out += (out.empty() ? "" : ", ") + detail::escape_for_terminal(key) + "=" + detail::escape_for_terminal(value);
  return out;
}

}  // namespace slip
