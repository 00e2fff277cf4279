// slip ls [DIR|CACHE] [--json]
#include <algorithm>
#include <cstdio>
#include <iostream>

#include <spdlog/spdlog.h>

#include "command.hpp"
#include "output.hpp"
#include "slip/convert.hpp"
#include "slip/inspect.hpp"
#include "slip/merge.hpp"

namespace slip::cli {

namespace {

namespace fs = std::filesystem;

// One row of the listing: a cache, a conversion's temporary directory, or a job array's
// work directory of part caches (<name>-<id8>.parts, joined by `slip merge`).
struct Row {
  CacheListing listing;
  std::string kind;    // "cache", "temporary", "parts"
  std::string status;  // one word: complete, damaged, unreadable, converting, abandoned, parts, merged
  std::string detail;  // the source, the damage, the pid, "3/8 parts done"
  bool all_parts_done = false;
};

Row row_of(const CacheListing& c) {
  Row r{c, "cache", "complete", c.source};
  // Caches of one source that differ only by their options: the options tell them apart.
  if (const std::string options = options_summary(c.options); !options.empty()) r.detail += " [" + options + "]";
  const std::string& s = c.state;
  if (s.rfind("incomplete (in progress, pid ", 0) == 0) {
    r.kind = "temporary";
    r.status = "converting";
    r.detail = "pid " + s.substr(29, s.size() - 30);
  } else if (s.rfind("incomplete", 0) == 0) {
    r.kind = "temporary";
    r.status = "abandoned";
    r.detail = "interrupted conversion; safe to delete";
  } else if (s.rfind("damaged: ", 0) == 0) {
    r.status = "damaged";
    r.detail = s.substr(9);
  } else if (s.rfind("unreadable: ", 0) == 0) {  // this user may not read it: not damage
    r.status = "unreadable";
    r.detail = s.substr(12);
  } else if (!c.complete) {
    r.status = "incomplete";
    r.detail = s;
  }
  return r;
}

Row parts_row(const fs::path& dir) {
  CacheListing l;
  l.path = dir;
  l.name = dir.filename().string();
  Row r{l, "parts", "parts", ""};
  uint64_t done = 0, total = 0;
  try {
    const PartCounts counts = count_parts(dir);
    done = counts.done;
    total = counts.total;
    r.all_parts_done = done == total && total > 0;
    r.detail = std::to_string(done) + "/" + std::to_string(total) + " parts done" +
               (done == total && total > 0 ? "; join with slip merge --from" : "");
  } catch (const Error& e) {
    if (e.code() == Errc::interrupted) throw;  // an interruption ends the listing, as elsewhere
    r.detail = (e.code() == Errc::bad_input ? "damaged: " : "unreadable: ") + std::string(e.what());
  }
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) r.listing.bytes += e.file_size(ec);
  return r;
}

bool is_parts_dir(const fs::path& p) {
  std::error_code ec;
  const std::string name = p.filename().string();
  return name.size() > 6 && name.ends_with(".parts") && fs::is_directory(p, ec);
}

std::vector<Row> rows_in(const fs::path& dir) {
  std::vector<Row> rows;
  for (const CacheListing& c : list_caches(dir)) rows.push_back(row_of(c));
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (is_parts_dir(e.path())) rows.push_back(parts_row(e.path()));
  // Parts whose merged cache is here (merged without --clean): done with, not waiting for a merge.
  for (Row& r : rows) {
    if (r.kind != "parts" || !r.all_parts_done) continue;
    const std::string whole = r.listing.name.substr(0, r.listing.name.size() - 6) + ".slipstream";
    const bool merged = std::any_of(rows.begin(), rows.end(), [&](const Row& c) {
      return c.kind == "cache" && c.status == "complete" && c.listing.path.filename() == whole;
    });
    if (merged) {
      r.status = "merged";
      r.detail = "merged into " + whole + "; the parts can go (rm -r, or slip merge --clean next time)";
    }
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.listing.name < b.listing.name; });
  return rows;
}

}  // namespace

Action setup_ls(CLI::App& sub, const GlobalOptions&) {
  struct Args {
    std::string dir;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("dir", a->dir, "Directory holding caches, or one cache (or .parts work directory) to show")
      ->type_name("DIR")
      ->default_str("$SLIPSTREAM_CACHE_DIR or ~/.slipstream");
  sub.add_flag("--json", a->json, "Print one JSON object");
  return [a]() -> int {
    std::string given = a->dir;
    while (given.size() > 1 && given.back() == '/') given.pop_back();  // `slip ls CACHE/` is CACHE
    const fs::path dir = output_root(given);
    std::error_code ec;
    std::vector<Row> rows;
    if (a->dir.empty() && !fs::exists(dir, ec)) {
      // Nothing converted yet: the default directory does not exist, so there are no caches.
    } else if (fs::exists(dir / "manifest.json", ec) || is_parts_dir(dir)) {
      // One cache (or work directory): its row from the listing of its parent.
      const fs::path abs = fs::absolute(dir).lexically_normal();
      const fs::path target = abs.has_filename() ? abs : abs.parent_path();
      for (Row& r : rows_in(target.parent_path()))
        if (r.listing.path.filename() == target.filename()) rows.push_back(std::move(r));
    } else {
      rows = rows_in(dir);
    }
    if (a->json) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const Row& r : rows) {
        const CacheListing& c = r.listing;
        list.push_back({{"name", c.name},
                        {"path", c.path.string()},
                        {"kind", r.kind},
                        {"complete", c.complete},
                        {"status", r.status},
                        {"state", r.kind == "parts" ? r.detail : c.state},
                        {"samples", c.samples},
                        {"bytes", c.bytes},
                        {"source", c.source},
                        {"options", options_json(c.options)},
                        {"temporaries", c.temporaries},
                        {"temporary_bytes", c.temporary_bytes}});
      }
      print_json({{"command", "ls"}, {"dir", dir.string()}, {"caches", list}});
      return 0;
    }
    if (rows.empty()) {
      spdlog::info("no caches in {}", dir.string());  // on stderr (the sink escapes it); -q silences it
      return 0;
    }
    size_t width = 4;
    for (const Row& r : rows) width = std::max(width, printable(r.listing.name).size());
    std::printf("%-*s %10s %10s  %-10s %s\n", static_cast<int>(width), "NAME", "SAMPLES", "SIZE", "STATUS", "SOURCE / DETAIL");
    for (const Row& r : rows) {
      const std::string samples = r.kind == "cache" ? std::to_string(r.listing.samples) : "-";
      std::printf("%-*s %10s %10s  %-10s %s\n", static_cast<int>(width), printable(r.listing.name).c_str(), samples.c_str(),
                  human_bytes(r.listing.bytes).c_str(), r.status.c_str(), printable(r.detail).c_str());
      // Left inside a cache by an interrupted run; the next run of the same command removes them.
      for (const auto& t : r.listing.temporaries) std::printf("  temporary file %s\n", printable(t).c_str());
      if (!r.listing.temporaries.empty()) std::printf("  (%s in temporary files)\n", human_bytes(r.listing.temporary_bytes).c_str());
    }
    return 0;
  };
}

}  // namespace slip::cli
