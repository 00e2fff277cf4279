// slip::Dataset (many caches as one) and slip::MixedOrder / RankPositions (weighted, elastic
// epoch orders): ids, refusals, mixing counts and proportions, every sample once across ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sys/resource.h>
#include <unistd.h>

#include "slip/dataset.hpp"
#include "slip/error.hpp"
#include "slip/mix.hpp"
#include "slip/npy.hpp"
#include "slip/shuffle.hpp"
#include "slip/subset.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using slip::Dataset;
using slip::MixedOrder;
using slip::MixSpec;
using slip::RankPositions;
using slip::StreamWeight;
using slip::WeightKind;

namespace {

struct TinyCache {
  uint64_t n = 0;
  int64_t first_label = 0;  // label of sample i: first_label + i
  std::string content_id;   // "" : no slip section (like a Python-written cache)
  std::string label_type;   // "int" or "float"
  std::string part;         // a "slip.part" object as JSON text, or ""
};

// A minimal valid cache: one int field "label" (`<i8`, or `<f8` for a float type).
void write_tiny_cache(const fs::path& dir, uint64_t n, int64_t first_label, const std::string& content_id,
                      const std::string& label_type = "int", const std::string& part = "") {
  const TinyCache c{n, first_label, content_id, label_type, part};
  fs::create_directories(dir);
  const bool is_float = c.label_type == "float";
  {
    std::ofstream f(dir / "label.npy", std::ios::binary);
    const std::vector<uint64_t> shape{c.n};
    f << slip::npy_header(is_float ? "'<f8'" : "'<i8'", shape);
    for (uint64_t i = 0; i < c.n; ++i) {
      if (is_float) {
        const double v = static_cast<double>(c.first_label + static_cast<int64_t>(i));
        f.write(reinterpret_cast<const char*>(&v), 8);
      } else {
        const int64_t v = c.first_label + static_cast<int64_t>(i);
        f.write(reinterpret_cast<const char*>(&v), 8);
      }
    }
  }
  std::string slip_section;
  if (!c.content_id.empty())
    slip_section = ", \"slip\": {\"format_version\": 1, \"content_id\": \"" + c.content_id + "\"" +
                   (c.part.empty() ? "" : ", \"part\": " + c.part) + "}";
  std::ofstream(dir / "manifest.json") << "{\"version\": 1, \"num_samples\": " << c.n << ", \"fields\": {\"label\": {\"type\": \""
                                       << c.label_type << "\", \"num_samples\": " << c.n << "}}" << slip_section << "}";
}

std::string hex_id(int k) {
  std::string s(64, '0');
  const std::string t = std::to_string(k);
  s.replace(64 - t.size(), t.size(), t);
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const slip::Error& e) {
    return e.describe();
  }
  return "(no error)";
}

}  // namespace

TEST(Dataset, GlobalIdsArePrefixSumsOverTheCaches) {
  slip::test::TempDir tmp;
  const std::vector<uint64_t> sizes{5, 0, 7, 3};
  std::vector<fs::path> paths;
  int64_t label = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    paths.push_back(tmp.path() / ("c" + std::to_string(i)));
    write_tiny_cache(paths.back(), sizes[i], label, hex_id(static_cast<int>(i) + 1));
    label += static_cast<int64_t>(sizes[i]);
  }
  const Dataset d = Dataset::open(paths);
  ASSERT_EQ(d.num_caches(), 4u);
  EXPECT_EQ(d.size(), 15u);
  EXPECT_EQ(d.sizes(), sizes);
  EXPECT_EQ(d.first_id(2), 5u);
  for (uint64_t g = 0; g < d.size(); ++g) {
    const auto loc = d.locate(g);
    EXPECT_EQ(d.global_id(loc.cache, loc.sample), g);
    // Labels were written as global ids: reading through locate gives them back.
    const auto field = *d.cache(loc.cache).field_index("label");
    EXPECT_EQ(d.cache(loc.cache).int_value(field, loc.sample), static_cast<int64_t>(g)) << g;
  }
  EXPECT_EQ(d.locate(5).cache, 2u);  // the empty cache 1 holds no id
  EXPECT_NE(error_of([&] { d.locate(15); }).find("past the dataset's 15 samples"), std::string::npos);
}

TEST(Dataset, DirectoryOfCachesAndJobArrayParts) {
  slip::test::TempDir tmp;
  write_tiny_cache(tmp.path() / "b.slipstream", 4, 0, hex_id(2));
  write_tiny_cache(tmp.path() / "a.slipstream", 2, 0, hex_id(1));
  fs::create_directories(tmp.path() / ".a.slipstream.tmp-1-2");  // a temporary: skipped
  const fs::path work = tmp.path() / "w-12345678.parts";
  auto part = [&](int i, int n) {
    char name[64];
    std::snprintf(name, sizeof name, "part-%05d-of-%05d.slipstream", i, n);
    write_tiny_cache(
        work / name, static_cast<uint64_t>(10 + i), 0, hex_id(100 + i), "int",
        "{\"index\": " + std::to_string(i) + ", \"count\": " + std::to_string(n) + ", \"whole_content_id\": \"" + hex_id(99) + "\"}");
  };
  part(1, 3);
  part(0, 3);
  // A missing part: the job array has not finished; the directory is not the whole dataset.
  EXPECT_NE(error_of([&] { Dataset::open(tmp.path()); }).find("part-00002-of-00003 is missing"), std::string::npos);
  part(2, 3);
  const Dataset d = Dataset::open(tmp.path());
  ASSERT_EQ(d.num_caches(), 5u);
  EXPECT_EQ(d.sizes(), (std::vector<uint64_t>{2, 4, 10, 11, 12}));  // by name, parts in part order
  EXPECT_EQ(d.cache(2).path().filename(), "part-00000-of-00003.slipstream");
  // The work directory alone is the conversion's dataset, without merge.
  EXPECT_EQ(Dataset::open(work).size(), 33u);
  // The merged cache beside its parts would give every sample twice.
  write_tiny_cache(tmp.path() / "whole.slipstream", 33, 0, hex_id(99));
  EXPECT_NE(error_of([&] { Dataset::open(tmp.path()); }).find("both the merged cache"), std::string::npos);
}

// A work directory's parts are one conversion's, each in the slot its name claims: a part of
// another source's conversion, or a renamed one, was read as the rest of the dataset (order,
// info, verify and the Loader, silently; `slip merge` refused the directory).
TEST(Dataset, WorkDirectoryPartsAreOneConversionsInTheirSlots) {
  slip::test::TempDir tmp;
  const fs::path work = tmp.path() / "w-12345678.parts";
  auto part = [&](const std::string& name, int i, int n, int whole, int id) {
    write_tiny_cache(
        work / name, 5, 0, hex_id(id), "int",
        "{\"index\": " + std::to_string(i) + ", \"count\": " + std::to_string(n) + ", \"whole_content_id\": \"" + hex_id(whole) + "\"}");
  };
  part("part-00000-of-00002.slipstream", 0, 2, 99, 100);
  part("part-00001-of-00002.slipstream", 1, 2, 98, 101);  // another conversion's part 1
  const std::string mixed = error_of([&] { Dataset::open(work); });
  EXPECT_NE(mixed.find("part-00001-of-00002.slipstream: a part of another conversion (whole content id " + hex_id(98) + ") than "),
            std::string::npos)
      << mixed;
  fs::remove_all(work / "part-00001-of-00002.slipstream");
  part("part-00001-of-00002.slipstream", 0, 4, 99, 101);  // part 0 of 4, renamed
  const std::string renamed = error_of([&] { Dataset::open(work); });
  EXPECT_NE(renamed.find("its manifest records part 0 of 4, not part 1 of 2 as its name says"), std::string::npos) << renamed;
  fs::remove_all(work / "part-00001-of-00002.slipstream");
  write_tiny_cache(work / "part-00001-of-00002.slipstream", 5, 0, hex_id(101));  // no part record
  const std::string plain = error_of([&] { Dataset::open(work); });
  EXPECT_NE(plain.find("named as part 1 of 2 in " + work.string() + ", but its manifest records no part"), std::string::npos) << plain;
  fs::remove_all(work / "part-00001-of-00002.slipstream");
  part("part-00001-of-00002.slipstream", 1, 2, 99, 101);
  EXPECT_EQ(Dataset::open(work).size(), 10u);
  // Named one by one (or in a list), caches are whatever they are: no slot to confirm.
  const std::vector<fs::path> named{work / "part-00000-of-00002.slipstream", tmp.path() / "other"};
  write_tiny_cache(tmp.path() / "other", 3, 0, hex_id(7));
  EXPECT_EQ(Dataset::open(named).size(), 8u);
}

TEST(Dataset, ChangedCacheInAListIsRefused) {
  slip::test::TempDir tmp;
  write_tiny_cache(tmp.path() / "a", 3, 0, hex_id(1));
  write_tiny_cache(tmp.path() / "b", 4, 0, hex_id(2));
  write_tiny_cache(tmp.path() / "py", 2, 0, "");  // no slip content id: the manifest's sum stands in
  const std::string py_id = Dataset::content_id_of(slip::Cache::open(tmp.path() / "py"));
  EXPECT_EQ(py_id.rfind("xxh3:", 0), 0u);
  std::ofstream(tmp.path() / "list.txt") << "# parts of a dataset\na " << hex_id(1) << "\n\nb\t" << hex_id(2) << "\r\npy " << py_id << "\n";
  EXPECT_EQ(Dataset::open(tmp.path() / "list.txt").size(), 9u);  // relative to the list
  // The same JSON list the library writes opens the same dataset.
  const std::string json = Dataset::open(tmp.path() / "list.txt").list_json();
  std::ofstream(tmp.path() / "list.json") << json;
  EXPECT_EQ(Dataset::open(tmp.path() / "list.json").sizes(), (std::vector<uint64_t>{3, 4, 2}));
  // Cache b re-converted (another content id): refused by both lists, naming it.
  fs::remove_all(tmp.path() / "b");
  write_tiny_cache(tmp.path() / "b", 4, 0, hex_id(7));
  for (const char* list : {"list.txt", "list.json"}) {
    const std::string e = error_of([&] { Dataset::open(tmp.path() / list); });
    EXPECT_NE(e.find((tmp.path() / "b").string()), std::string::npos) << e;
    EXPECT_NE(e.find("changed since the list was written"), std::string::npos) << e;
    EXPECT_NE(e.find(hex_id(2)), std::string::npos) << e;
  }
  // A Python-written cache rewritten (its manifest differs): refused too.
  fs::remove_all(tmp.path() / "b");
  write_tiny_cache(tmp.path() / "b", 4, 0, hex_id(2));
  fs::remove_all(tmp.path() / "py");
  write_tiny_cache(tmp.path() / "py", 3, 0, "");
  EXPECT_NE(error_of([&] { Dataset::open(tmp.path() / "list.txt"); }).find("changed since"), std::string::npos);
  // The same cache twice, and hostile lists.
  std::ofstream(tmp.path() / "twice.txt") << "a\na\n";
  EXPECT_NE(error_of([&] { Dataset::open(tmp.path() / "twice.txt"); }).find("the same cache"), std::string::npos);
  std::ofstream(tmp.path() / "bad.json") << "{\"caches\": [{\"path\": \"a\", \"proportion\": -1}]}";
  EXPECT_NE(error_of([&] { Dataset::open(tmp.path() / "bad.json"); }).find("entry 0: \"proportion\" is not a number >= 0"),
            std::string::npos);
  std::ofstream(tmp.path() / "empty.txt") << "# nothing\n";
  EXPECT_NE(error_of([&] { Dataset::open(tmp.path() / "empty.txt"); }).find("names no caches"), std::string::npos);
}

TEST(Dataset, FieldMismatchNamesTheCacheAndTheFirstDifference) {
  slip::test::TempDir tmp;
  write_tiny_cache(tmp.path() / "a", 3, 0, hex_id(1));
  write_tiny_cache(tmp.path() / "b", 3, 0, hex_id(2));
  write_tiny_cache(tmp.path() / "c", 3, 0, hex_id(3), "float");
  const std::vector<fs::path> paths{tmp.path() / "a", tmp.path() / "b", tmp.path() / "c"};
  try {
    Dataset::open(paths);
    FAIL() << "fields that differ were accepted";
  } catch (const slip::Error& e) {
    EXPECT_EQ(e.code(), slip::Errc::bad_input);
    EXPECT_EQ(e.path(), (tmp.path() / "c").string());
    EXPECT_NE(e.message().find("field \"label\" is float dtype <f8, not int dtype <i8"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find((tmp.path() / "a").string()), std::string::npos) << e.message();
  }
}

// Each named limit of a list file, checked before anything is sized by the file.
TEST(Dataset, ListFileLimitsAreNamedAndChecked) {
  slip::test::TempDir tmp;
  write_tiny_cache(tmp.path() / "a", 3, 0, hex_id(1));
  auto expect = [&](const std::string& name, const std::string& what) {
    try {
      Dataset::open(tmp.path() / name);
      ADD_FAILURE() << name << ": opened";
    } catch (const slip::Error& e) {
      EXPECT_EQ(e.code(), slip::Errc::bad_input) << name;
      EXPECT_NE(e.describe().find(what), std::string::npos) << name << ": " << e.describe();
      EXPECT_NE(e.describe().find(name), std::string::npos) << name << ": " << e.describe();
    }
  };
  // Over 64 MiB (sparse: refused by its size, never read).
  std::ofstream(tmp.path() / "big.txt") << "a\n";
  fs::resize_file(tmp.path() / "big.txt", (uint64_t{64} << 20) + 1);
  expect("big.txt", "a dataset list of 67108865 bytes (at most 67108864)");
  // Over 1,000,000 caches, in either form (the count is checked before each entry is kept).
  {
    std::string text, json = "[\"a\"";
    text.reserve(2'000'002);
    json.reserve(4'000'002);
    for (int i = 0; i <= 1'000'000; ++i) text += "a\n";
    for (int i = 0; i < 1'000'000; ++i) json += ",\"a\"";
    std::ofstream(tmp.path() / "many.txt") << text;
    std::ofstream(tmp.path() / "many.json") << json << "]";
  }
  expect("many.txt", "more than 1000000 caches");
  expect("many.json", "more than 1000000 caches");
  // A line over 64 KiB.
  std::ofstream(tmp.path() / "long.txt") << std::string(size_t{64} << 10, 'a') << "b\n";
  expect("long.txt", "line 1 is longer than 65536 bytes");
  // JSON nested past 64 levels.
  std::ofstream(tmp.path() / "deep.json") << "{\"caches\": [\"a\"], \"x\": " << std::string(64, '[') << std::string(64, ']') << "}";
  expect("deep.json", "JSON nested deeper than 64 levels");
  std::ofstream(tmp.path() / "deep_ok.json") << "{\"caches\": [\"a\"], \"x\": " << std::string(63, '[') << std::string(63, ']') << "}";
  EXPECT_EQ(Dataset::open(tmp.path() / "deep_ok.json").size(), 3u);
}

// A sanitizer's shadow memory does not fit under RLIMIT_AS (gcc and clang say so differently).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DATASET_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define DATASET_TEST_SANITIZED 1
#endif
#endif
#ifndef DATASET_TEST_SANITIZED
#define DATASET_TEST_SANITIZED 0
#endif

// In a (forked) child: opens `list` with the address space limited to the current size plus
// 160 MiB. 0: refused naming entry 0; 2: std::bad_alloc.
static int open_under_address_limit(const fs::path& list) {
  std::ifstream status("/proc/self/status");
  std::string line;
  uint64_t vm_kb = 0;
  while (std::getline(status, line))
    if (line.rfind("VmSize:", 0) == 0) vm_kb = std::stoull(line.substr(7));
  rlimit limit{};
  limit.rlim_cur = (vm_kb << 10) + (uint64_t{160} << 20);
  limit.rlim_max = RLIM_INFINITY;
  setrlimit(RLIMIT_AS, &limit);
  try {
    Dataset::open(list);
  } catch (const slip::Error& e) {
    return e.describe().find("entry 0: no \"path\" string") != std::string::npos ? 0 : 1;
  } catch (const std::bad_alloc&) {
    return 2;
  }
  return 3;
}

// A JSON list is read into its entries, not into a document first: 24 MiB of empty objects was
// over 500 MB of nlohmann::json (std::bad_alloc under this limit) before the first entry was
// looked at.
TEST(Dataset, JsonListIsNotInflatedIntoADocument) {
#if DATASET_TEST_SANITIZED
  GTEST_SKIP() << "RLIMIT_AS cannot hold a sanitizer's shadow memory";
#else
  slip::test::TempDir tmp;
  write_tiny_cache(tmp.path() / "a", 3, 0, hex_id(1));
  {
    std::ofstream list(tmp.path() / "objects.json");
    list << "[";
    const std::string chunk = [] {
      std::string c;
      for (int i = 0; i < 4096; ++i) c += "{},";
      return c;
    }();
    for (int i = 0; i < 2048; ++i) list << chunk;
    list << "{}]";
  }
  // Run in a child (fork): the address-space limit is the current size plus 160 MiB.
  EXPECT_EXIT(_exit(open_under_address_limit(tmp.path() / "objects.json")), ::testing::ExitedWithCode(0), "");
#endif
}

// A NUL ends a path early in every system call: "a<NUL>junk" would open cache "a".
TEST(Dataset, NulInAListedPathIsRefused) {
  slip::test::TempDir tmp;
  write_tiny_cache(tmp.path() / "a", 3, 0, hex_id(1));
  std::ofstream(tmp.path() / "nul.txt") << std::string("a\0junk\n", 7);
  EXPECT_NE(error_of([&] { Dataset::open(tmp.path() / "nul.txt"); }).find("line 1: a NUL byte in the path"), std::string::npos);
  std::ofstream(tmp.path() / "nul.json") << "[\"a\", {\"path\": \"a\\u0000junk\"}]";
  EXPECT_NE(error_of([&] { Dataset::open(tmp.path() / "nul.json"); }).find("entry 1: a NUL byte in the path"), std::string::npos);
}

// JSON lists keep their meaning read entry by entry: unknown members (nested too) are skipped,
// every wrong shape names its entry.
TEST(Dataset, JsonListShapes) {
  slip::test::TempDir tmp;
  write_tiny_cache(tmp.path() / "a", 3, 0, hex_id(1));
  write_tiny_cache(tmp.path() / "b", 4, 0, hex_id(2));
  std::ofstream(tmp.path() / "ok.json")
      << "{\"format\": {\"x\": [1, {\"caches\": 5}]}, \"epoch_size\": 4, \"caches\": [{\"path\": \"a\", \"note\": {\"path\": 7, "
         "\"proportion\": [-1]}, \"repeat\": null, \"proportion\": 0.25, \"content_id\": null}, {\"proportion\": 1, \"path\": \"b\", "
         "\"num_samples\": 4}]}";
  const Dataset d = Dataset::open(tmp.path() / "ok.json");
  EXPECT_EQ(d.sizes(), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(d.epoch_size(), 4u);
  ASSERT_EQ(d.weights().size(), 2u);
  EXPECT_EQ(d.weights()[0].kind, WeightKind::proportion);
  EXPECT_EQ(d.weights()[0].value, 0.25);
  const std::vector<std::pair<std::string, std::string>> bad{
      {"{\"caches\": 5}", "\"caches\" is not a list"},
      {"{\"caches\": {\"path\": \"a\"}}", "\"caches\" is not a list"},
      {"{\"x\": [\"a\"]}", "no \"caches\" list"},
      {"{\"epoch_size\": -1, \"caches\": [\"a\"]}", "\"epoch_size\" is not a sample count"},
      {"{\"epoch_size\": [1], \"caches\": [\"a\"]}", "\"epoch_size\" is not a sample count"},
      {"[\"a\", 5]", "entry 1: neither a path nor an object"},
      {"[\"a\", [\"b\"]]", "entry 1: neither a path nor an object"},
      {"[\"a\", {\"path\": 7}]", "entry 1: no \"path\" string"},
      {"[\"a\", {\"x\": \"b\"}]", "entry 1: no \"path\" string"},
      {"[\"\"]", "entry 0: empty path"},
      {"[{\"path\": \"a\", \"num_samples\": 1.5}]", "entry 0: \"num_samples\" is not a sample count"},
      {"[{\"path\": \"a\", \"content_id\": \"XYZ\"}]", "entry 0: \"content_id\" is not a content id"},
      {"[{\"path\": \"a\", \"choose\": \"3\"}]", "entry 0: \"choose\" is not a number >= 0"},
      {"[{\"path\": \"a\", \"repeat\": {}}]", "entry 0: \"repeat\" is not a number >= 0"},
      {"[{\"path\": \"a\", \"proportion\": 1, \"repeat\": 1}]", "entry 0: at most one of proportion, repeat and choose"},
      {"[\"a\"] x", "dataset list is not valid JSON"},
      {"[\"a\",", "dataset list is not valid JSON"},
  };
  for (const auto& [text, want] : bad) {
    std::ofstream(tmp.path() / "bad.json", std::ios::trunc) << text;
    const std::string e = error_of([&] { Dataset::open(tmp.path() / "bad.json"); });
    EXPECT_NE(e.find(want), std::string::npos) << text << ": " << e;
  }
}

// A list's mix is the list's: one `slip order` cannot run is bad input naming the list when it is
// read (before: accepted, then a usage error (exit 2) naming no file from the command that mixed,
// while `subset` and `bench` took the list).
TEST(Dataset, ListMixIsCheckedWhenTheListIsRead) {
  slip::test::TempDir tmp;
  write_tiny_cache(tmp.path() / "a", 3, 0, hex_id(1));
  write_tiny_cache(tmp.path() / "b", 4, 0, hex_id(2));
  const std::vector<std::pair<std::string, std::string>> bad{
      {R"([{"path": "a", "choose": 1.5}, "b"])", "entry 0: \"choose\" is not a whole number of samples"},
      {R"({"epoch_size": 0, "caches": ["a", "b"]})", "the mix selects no samples"},
      {R"({"epoch_size": 4611686018427387905, "caches": ["a", "b"]})", "epoch_size over 2^62 samples"},
      {R"([{"path": "a", "proportion": 1}, {"path": "b", "repeat": 2}])", "proportion (relative) cannot be combined"},
      {R"([{"path": "a", "proportion": 1}, "b"])", "cache 1 has no proportion"},
      {R"({"epoch_size": 5, "caches": [{"path": "a", "repeat": 1}, "b"]})", "epoch_size applies to proportions"},
      {R"([{"path": "a", "proportion": 0}, {"path": "b", "proportion": 0}])", "the proportions are all 0"},
      {R"([{"path": "a", "choose": 4611686018427387904}, "b"])", "more than 2^62 samples"},
  };
  for (const auto& [text, want] : bad) {
    std::ofstream(tmp.path() / "bad.json", std::ios::trunc) << text;
    try {
      (void)Dataset::open(tmp.path() / "bad.json");
      ADD_FAILURE() << text << ": opened";
    } catch (const slip::Error& e) {
      EXPECT_EQ(e.code(), slip::Errc::bad_input) << text << ": " << e.describe();
      EXPECT_EQ(e.path(), (tmp.path() / "bad.json").string()) << text << ": " << e.describe();
      EXPECT_NE(e.describe().find(want), std::string::npos) << text << ": " << e.describe();
    }
  }
  // A list whose mix runs, and a text list (which has no weights), open as before.
  std::ofstream(tmp.path() / "ok.json")
      << R"({"epoch_size": 5, "caches": [{"path": "a", "proportion": 1}, {"path": "b", "proportion": 3}]})";
  EXPECT_EQ(Dataset::open(tmp.path() / "ok.json").epoch_size(), 5u);
  std::ofstream(tmp.path() / "ok2.json") << R"([{"path": "a", "choose": 7}, {"path": "b"}])";
  EXPECT_EQ(Dataset::open(tmp.path() / "ok2.json").weights().size(), 2u);
}

// JSON strings are UTF-8: a cache in a Latin-1 directory cannot be named by a JSON list.
TEST(Dataset, ListJsonRefusesAPathThatIsNotUtf8) {
  slip::test::TempDir tmp;
  const fs::path latin1 = tmp.path() / "caf\xe9";
  write_tiny_cache(latin1, 2, 0, hex_id(1));
  const Dataset d = Dataset::open(latin1);
  try {
    (void)d.list_json();
    FAIL() << "a JSON list of a Latin-1 path";
  } catch (const slip::Error& e) {
    EXPECT_EQ(e.code(), slip::Errc::bad_input);
    EXPECT_NE(e.message().find("not valid UTF-8"), std::string::npos) << e.message();
  }
  // A text list names it.
  std::ofstream(tmp.path() / "list.txt") << "caf\xe9\n";
  EXPECT_EQ(Dataset::open(tmp.path() / "list.txt").size(), 2u);
}

// A dataset's selection is the merged cache's: float keys of the caches merged in ascending
// order, each value's ids the global ids of every cache holding it, --per-class drawing from them.
TEST(Dataset, SubsetSelectsOverEveryCacheByGlobalIds) {
  slip::test::TempDir tmp;
  write_tiny_cache(tmp.path() / "a", 5, 0, "aaaa", "float");  // labels 0..4: global ids 0..4
  write_tiny_cache(tmp.path() / "b", 5, 3, "bbbb", "float");  // labels 3..7: global ids 5..9
  const std::vector<fs::path> paths{tmp.path() / "a", tmp.path() / "b"};
  const Dataset d = Dataset::open(paths);
  slip::SubsetSelection sel;
  sel.values = {3, 4, 7};
  EXPECT_EQ(slip::select_samples(d, sel), (std::vector<uint64_t>{3, 4, 5, 6, 9}));
  sel.per_class = 1;
  sel.seed = 2;
  const std::vector<uint64_t> one = slip::select_samples(d, sel);
  ASSERT_EQ(one.size(), 3u);
  EXPECT_TRUE(one[0] == 3 || one[0] == 5) << one[0];
  EXPECT_TRUE(one[1] == 4 || one[1] == 6) << one[1];
  EXPECT_EQ(one[2], 9u);
  sel.values = {8};
  EXPECT_THROW(slip::select_samples(d, sel), slip::Error);
}

TEST(Mix, OneCacheWithoutWeightsIsTheEpochOrder) {
  for (uint64_t block : {1, 16})
    for (uint64_t seed : {0, 7}) {
      MixSpec m;
      m.sizes = {1000};
      m.seed = seed;
      m.epoch = 3;
      m.block_size = block;
      const MixedOrder mixed(m);
      slip::ShuffleSpec s;
      s.num_samples = 1000;
      s.seed = seed;
      s.epoch = 3;
      s.block_size = block;
      const slip::EpochOrder plain(s);
      for (uint64_t p = 0; p < 1000; ++p) ASSERT_EQ(mixed(p), plain.global(p)) << p;
    }
}

// Without weights every sample is read once per epoch, whatever the number of ranks; the
// padding repeats the first ceil(L/W)*W - L positions, as DistributedSampler does.
TEST(Mix, EverySampleOncePerEpochAcrossRanks) {
  MixSpec m;
  m.sizes = {5, 0, 17, 100, 1, 38};
  for (uint64_t block : {1, 4}) {
    m.block_size = block;
    m.epoch = block;
    const MixedOrder order(m);
    ASSERT_EQ(order.size(), 161u);
    for (uint32_t world : {1u, 3u, 8u}) {
      std::map<uint64_t, int> seen;
      uint64_t total = 0;
      for (uint32_t r = 0; r < world; ++r) {
        const RankPositions mine(order.size(), 0, r, world);
        EXPECT_EQ(mine.size(), (161 + world - 1) / world);
        for (uint64_t i = 0; i < mine.size(); ++i, ++total) ++seen[order(mine(i))];
      }
      EXPECT_EQ(total, (161 + world - 1) / world * world);
      ASSERT_EQ(seen.size(), 161u) << world;
      const uint64_t padding = total - 161;
      std::set<uint64_t> padded;
      for (uint64_t p = 0; p < padding; ++p) padded.insert(order(p));
      for (const auto& [id, count] : seen) EXPECT_EQ(count, padded.count(id) ? 2 : 1) << "sample " << id << ", " << world << " ranks";
    }
  }
}

// A job on 8 ranks stops mid-epoch, resumes on 5, stops again, resumes on 8: every position
// of the epoch is read exactly once (no padding is reached before the end).
TEST(Mix, ResumeOnAnotherWorldSizeLosesAndRepeatsNothing) {
  MixSpec m;
  m.sizes = {300, 200, 500};
  m.weights = {{WeightKind::proportion, 0.5}, {WeightKind::proportion, 0.3}, {WeightKind::proportion, 0.2}};
  m.seed = 11;
  const MixedOrder order(m);
  const uint64_t L = order.size();
  ASSERT_EQ(L, 1000u);
  std::vector<int> read(L, 0);
  uint64_t consumed = 0;
  auto run = [&](uint32_t world, uint64_t steps_per_rank) {  // ranks in lock step
    for (uint32_t r = 0; r < world; ++r) {
      const RankPositions mine(L, consumed, r, world);
      for (uint64_t i = 0; i < std::min(steps_per_rank, mine.size()); ++i) ++read[mine(i)];
    }
    consumed += steps_per_rank * world;
  };
  run(8, 37);  // 296 positions
  run(5, 61);  // 305 more
  run(8, 49);  // 392 more: 993
  run(7, 1);   // the last 7
  EXPECT_EQ(consumed, L);
  for (uint64_t p = 0; p < L; ++p) ASSERT_EQ(read[p], 1) << "position " << p;
  EXPECT_EQ(RankPositions(L, L, 0, 4).size(), 0u);  // a finished epoch leaves nothing
}

// Positions consumed past the epoch's end are no resumption of it (`slip order --consumed 41`
// of 40 samples printed nothing, exit 0); the end itself is an epoch done.
TEST(Mix, ConsumedPastTheEpochIsRefused) {
  EXPECT_EQ(RankPositions(40, 40, 0, 1).size(), 0u);
  EXPECT_EQ(RankPositions(40, 39, 1, 2).size(), 1u);
  for (const uint64_t consumed : {uint64_t{41}, ~uint64_t{0}}) {
    const std::string e = error_of([&] { RankPositions(40, consumed, 0, 1); });
    EXPECT_NE(e.find("consumed " + std::to_string(consumed) + " is past the epoch's 40 positions"), std::string::npos) << e;
  }
  MixSpec spec;
  spec.sizes = {10, 30};
  spec.weights = {{WeightKind::choose, 5}, {WeightKind::choose, 5}};
  EXPECT_EQ(slip::RankOrder(spec, 10, 0, 3).size(), 0u);
  EXPECT_THROW(slip::RankOrder(spec, 11, 0, 3), slip::Error);
}

TEST(Mix, CountsFollowRepeatChooseAndProportion) {
  const std::vector<uint64_t> sizes{10, 20, 30};
  using W = StreamWeight;
  EXPECT_EQ(slip::samples_per_cache(sizes, std::vector<W>{}), sizes);
  EXPECT_EQ(slip::samples_per_cache(sizes, std::vector<W>{{WeightKind::repeat, 2}, {WeightKind::repeat, 0.5}, {WeightKind::choose, 7}}),
            (std::vector<uint64_t>{20, 10, 7}));
  EXPECT_EQ(slip::samples_per_cache(sizes, std::vector<W>{{WeightKind::choose, 25}, {}, {WeightKind::repeat, 0}}),
            (std::vector<uint64_t>{25, 20, 0}));  // none among absolute weights: repeat 1
  // 100 * (1/3, 1/3, 1/3): 33 each, the one left over to the first (ties: lower index).
  EXPECT_EQ(slip::samples_per_cache(
                sizes, std::vector<W>{{WeightKind::proportion, 1}, {WeightKind::proportion, 1}, {WeightKind::proportion, 1}}, 100),
            (std::vector<uint64_t>{34, 33, 33}));
  EXPECT_EQ(slip::samples_per_cache(sizes, std::vector<W>{}, 120), (std::vector<uint64_t>{20, 40, 60}));  // by size
  auto refused = [&](std::vector<W> w, std::optional<uint64_t> e, const char* why) {
    const std::string msg = error_of([&] { slip::samples_per_cache(sizes, w, e); });
    EXPECT_NE(msg.find(why), std::string::npos) << msg;
  };
  refused({{WeightKind::proportion, 1}, {WeightKind::repeat, 1}, {}}, std::nullopt, "cannot be combined");
  refused({{WeightKind::proportion, 1}, {}, {WeightKind::proportion, 1}}, std::nullopt, "cache 1 has no proportion");
  refused({{WeightKind::repeat, 1}, {}, {}}, 50, "epoch_size applies to proportions");
  refused({{WeightKind::repeat, 0}, {WeightKind::repeat, 0}, {WeightKind::repeat, 0}}, std::nullopt, "no samples");
  refused({{WeightKind::repeat, -1}, {}, {}}, std::nullopt, "finite number >= 0");
  EXPECT_EQ(slip::parse_weights("proportion:0.7,0.3", 2)[1].value, 0.3);
  EXPECT_EQ(slip::parse_weights("choose:5,0", 2)[0].kind, WeightKind::choose);
  for (const char* bad : {"0.7,0.3", "weight:1,2", "repeat:1", "repeat:1,2,3", "repeat:1,x", "choose:1.5,2", "repeat:1,-2", "repeat:1,nan"})
    EXPECT_THROW(slip::parse_weights(bad, 2), slip::Error) << bad;
}

// Each epoch takes exactly the counts; repeats give every sample whole times, a partial pass a
// subset without repeats; the subsets of many epochs cover each sample about equally often.
TEST(Mix, RepeatsAndSubsetsPerEpoch) {
  MixSpec m;
  m.sizes = {10, 400};
  m.weights = {{WeightKind::choose, 25}, {WeightKind::repeat, 0.25}};
  const uint64_t epochs = 400;
  std::vector<int> over_epochs(400, 0);
  for (uint64_t e = 0; e < epochs; ++e) {
    m.epoch = e;
    const MixedOrder order(m);
    ASSERT_EQ(order.size(), 125u);
    std::map<uint64_t, int> seen;
    for (uint64_t p = 0; p < order.size(); ++p) ++seen[order(p)];
    int threes = 0;
    for (uint64_t id = 0; id < 10; ++id) {
      ASSERT_TRUE(seen[id] == 2 || seen[id] == 3) << id;
      threes += seen[id] == 3;
    }
    EXPECT_EQ(threes, 5);
    uint64_t from_second = 0;
    for (const auto& [id, count] : seen)
      if (id >= 10) {
        EXPECT_EQ(count, 1);  // a subset: no sample twice
        ++over_epochs[id - 10];
        ++from_second;
      }
    EXPECT_EQ(from_second, 100u);
  }
  // Each sample of the second cache is chosen with probability 1/4 per epoch: Binomial(400, 1/4)
  // (mean 100, sd 8.7); 6 sd either side (a seed-fixed outcome, so no flakiness).
  for (int i = 0; i < 400; ++i) EXPECT_NEAR(over_epochs[i], 100, 52) << "sample " << i;
}

// Proportions hold in every part of the epoch: among the first K positions the count from
// each cache is within 5 sd of the binomial count, epoch after epoch, and on average close.
TEST(Mix, ProportionsWithinBinomialBoundsOverManyEpochs) {
  MixSpec m;
  m.sizes = {2000, 5000, 1000};
  m.weights = {{WeightKind::proportion, 0.7}, {WeightKind::proportion, 0.2}, {WeightKind::proportion, 0.1}};
  m.epoch_size = 10000;
  m.seed = 3;
  const uint64_t K = 1000, epochs = 200;
  const double p[3] = {0.7, 0.2, 0.1};
  double mean[3] = {0, 0, 0};
  for (uint64_t e = 0; e < epochs; ++e) {
    m.epoch = e;
    const MixedOrder order(m);
    ASSERT_EQ(order.per_cache(), (std::vector<uint64_t>{7000, 2000, 1000}));
    uint64_t count[3] = {0, 0, 0};
    for (uint64_t pos = 0; pos < K; ++pos) {
      const uint64_t id = order(pos);
      ++count[id < 2000 ? 0 : id < 7000 ? 1 : 2];
    }
    for (int c = 0; c < 3; ++c) {
      const double sd = std::sqrt(K * p[c] * (1 - p[c]));
      EXPECT_NEAR(static_cast<double>(count[c]), K * p[c], 5 * sd) << "epoch " << e << " cache " << c;
      mean[c] += static_cast<double>(count[c]) / epochs;
    }
  }
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(mean[c], K * p[c], 5 * std::sqrt(K * p[c] * (1 - p[c]) / epochs)) << c;
}

// block_size keeps reads local with weights too: an aligned run of B positions covers at most
// two runs of B virtual positions (the epoch's short block shifts the runs after it), each at
// most two blocks (B consecutive samples of one cache, counted from the cache's sample 0):
// at most 4 blocks, where a uniform shuffle reads ~B.
TEST(Mix, BlockLocalWithWeights) {
  MixSpec m;
  m.sizes = {1000, 3000, 640};
  m.weights = {{WeightKind::repeat, 1.5}, {WeightKind::repeat, 0.5}, {WeightKind::repeat, 2}};
  auto most_blocks_per_run = [&](uint64_t block) {
    m.block_size = block;
    const MixedOrder order(m);
    size_t most = 0;
    for (uint64_t start = 0; start < order.size(); start += 64) {
      std::set<std::pair<int, uint64_t>> blocks;  // (cache, local block)
      for (uint64_t p = start; p < std::min(order.size(), start + 64); ++p) {
        const uint64_t id = order(p);
        const int cache = id < 1000 ? 0 : id < 4000 ? 1 : 2;
        blocks.insert({cache, (id - (cache == 0 ? 0 : cache == 1 ? 1000 : 4000)) / 64});
      }
      most = std::max(most, blocks.size());
    }
    return most;
  };
  EXPECT_LE(most_blocks_per_run(64), 4u);
  EXPECT_GT(most_blocks_per_run(1), 30u);
}

// `slip order` on a dataset prints exactly what the library's MixedOrder + RankPositions give.
TEST(Mix, CliOrderOnADatasetMatchesTheLibrary) {
  slip::test::TempDir tmp;
  write_tiny_cache(tmp.path() / "a", 30, 0, hex_id(1));
  write_tiny_cache(tmp.path() / "b", 50, 0, hex_id(2));
  write_tiny_cache(tmp.path() / "c", 7, 0, hex_id(3));
  const std::vector<fs::path> paths{tmp.path() / "a", tmp.path() / "b", tmp.path() / "c"};
  const Dataset d = Dataset::open(paths);
  MixSpec m;
  m.sizes = d.sizes();
  m.weights = slip::parse_weights("repeat:2,0.5,3", 3);
  m.seed = 5;
  m.epoch = 2;
  m.block_size = 4;
  const MixedOrder order(m);
  std::string want;
  const RankPositions mine(order.size(), 0, 1, 3);
  for (uint64_t i = 0; i < mine.size(); ++i) want += std::to_string(order(mine(i))) + "\n";
  const auto r = slip::test::run(slip::test::slip_binary() + " order " + paths[0].string() + " " + paths[1].string() + " " +
                                 paths[2].string() + " --mix repeat:2,0.5,3 --seed 5 --epoch 2 --block-size 4 --rank 1 --world-size 3");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, want);
  // The same weights from a JSON list file.
  nlohmann::json list = nlohmann::json::parse(d.list_json());
  list["caches"][0]["repeat"] = 2;
  list["caches"][1]["repeat"] = 0.5;
  list["caches"][2]["repeat"] = 3;
  std::ofstream(tmp.path() / "mix.json") << list.dump();
  const auto r2 = slip::test::run(slip::test::slip_binary() + " order " + (tmp.path() / "mix.json").string() +
                                  " --seed 5 --epoch 2 --block-size 4 --rank 1 --world-size 3");
  EXPECT_EQ(r2.status, 0);
  EXPECT_EQ(r2.out, want);
}
