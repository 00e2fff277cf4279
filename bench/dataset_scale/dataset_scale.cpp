// Simulation benchmark for datasets of many caches (docs/SCALE.md#many-caches): builds a
// synthetic dataset (real manifests and .meta.npy records, sparse payload files) and measures,
// for one rank of a large job, the time and peak RSS to open the dataset, to plan an epoch's
// mixed order for the rank, and to resume mid-epoch on another world size, and whether any
// payload page was touched. Not a test: nothing here is asserted about time.
//
//   slip_dataset_scale build DIR [--caches 1000] [--samples 100000000]
//   slip_dataset_scale run DIR [--rank R] [--world 512] [--resume-at 73000000] [--resume-world 384]
#include <sys/resource.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "slip/dataset.hpp"
#include "slip/error.hpp"
#include "slip/mix.hpp"
#include "slip/npy.hpp"

namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A /proc/self/status value in kB (VmHWM, VmRSS, RssFile).
long status_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(key);
  while (std::getline(in, line))
    if (line.compare(0, n, key) == 0 && line[n] == ':') return std::stol(line.substr(n + 1));
  return -1;
}

// CPU seconds of this process so far (user + system): the figure to read on a loaded machine.
double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Bytes this process read from storage and through read() (/proc/self/io).
long io_value(const char* key) {
  std::ifstream in("/proc/self/io");
  std::string k;
  long v;
  while (in >> k >> v)
    if (k == std::string(key) + ":") return v;
  return -1;
}

void write_all(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw slip::Error(slip::Errc::io, "cannot write").with_path(p.string());
}

int build(const fs::path& dir, uint64_t caches, uint64_t samples) {
  fs::create_directories(dir);
  std::vector<uint64_t> sizes(caches, samples / caches);
  for (uint64_t i = 0; i < samples % caches; ++i) ++sizes[i];
  // Uneven caches, same total: pairs trade 5% of their samples.
  for (uint64_t i = 0; i + 1 < caches; i += 2) {
    const uint64_t d = sizes[i] / 20;
    sizes[i] -= d;
    sizes[i + 1] += d;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<char> records;
  for (uint64_t c = 0; c < caches; ++c) {
    char name[64];
    std::snprintf(name, sizeof name, "synthetic-%05llu.slipstream", static_cast<unsigned long long>(c));
    const fs::path cdir = dir / name;
    fs::create_directories(cdir);
    const uint64_t n = sizes[c];
    // Records: payloads of 60-140 KB back to back, as a real ImageNet-like cache has.
    const std::vector<uint64_t> shape{n};
    const std::string meta_header = slip::npy_header(slip::kMetaRecordDescr, shape);
    records.resize(n * 24);
    uint64_t ptr = 0, max_size = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t size = 60000 + (i * 7919 + c * 104729) % 80000;
      const uint32_t h = 375, w = 500;
      std::memcpy(&records[i * 24], &ptr, 8);
      std::memcpy(&records[i * 24 + 8], &size, 8);
      std::memcpy(&records[i * 24 + 16], &h, 4);
      std::memcpy(&records[i * 24 + 20], &w, 4);
      ptr += size;
      max_size = std::max(max_size, size);
    }
    {
      std::ofstream f(cdir / "image.meta.npy", std::ios::binary);
      f << meta_header;
      f.write(records.data(), static_cast<std::streamsize>(records.size()));
    }
    // The payloads: a sparse file of the right size (nothing of it is read by what is measured).
    {
      const int fd = ::open((cdir / "image.bin").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(ptr)) != 0)
        throw slip::Error(slip::Errc::io, "cannot create").with_path((cdir / "image.bin").string());
      ::close(fd);
    }
    // Labels: all 0, written as a sparse file after the header.
    const std::string label_header = slip::npy_header("'<i8'", shape);
    {
      write_all(cdir / "label.npy", label_header);
      fs::resize_file(cdir / "label.npy", label_header.size() + n * 8);
    }
    char id[65];
    std::snprintf(id, sizeof id, "%064llx", static_cast<unsigned long long>(0x51ab0000ull + c));
    const std::string manifest =
        "{\n  \"version\": 1,\n  \"num_samples\": " + std::to_string(n) +
        ",\n  \"fields\": {\n    \"image\": {\"type\": \"ImageBytes\", \"num_samples\": " + std::to_string(n) +
        ", \"max_size\": " + std::to_string(max_size * 6 / 5) +
        ", \"image_format\": \"jpeg\"},\n    \"label\": {\"type\": \"int\", \"num_samples\": " + std::to_string(n) +
        "}\n  },\n  \"file_sizes\": {\"image.bin\": " + std::to_string(ptr) +
        ", \"image.meta.npy\": " + std::to_string(meta_header.size() + n * 24) +
        ", \"label.npy\": " + std::to_string(label_header.size() + n * 8) +
        "},\n  \"slip\": {\"format_version\": 1, \"tool_version\": \"synthetic\", \"content_id\": \"" + id + "\"}\n}";
    write_all(cdir / "manifest.json", manifest);
  }
  // The list file with content ids (what a job would be given).
  const slip::Dataset d = slip::Dataset::open(dir);
  write_all(dir / "dataset.json", d.list_json());
  std::printf("built %llu caches, %llu samples in %.1f s: %s\n", static_cast<unsigned long long>(d.num_caches()),
              static_cast<unsigned long long>(d.size()), seconds_since(t0), (dir / "dataset.json").c_str());
  return 0;
}

int run(const fs::path& input, uint32_t rank, uint32_t world, uint64_t resume_at, uint32_t resume_world) {
  const long io0 = io_value("read_bytes"), rchar0 = io_value("rchar");
  double c = cpu_seconds();
  auto t = std::chrono::steady_clock::now();
  const slip::Dataset d = slip::Dataset::open(input);
  const double t_open = seconds_since(t), c_open = cpu_seconds() - c;
  const long rss_open = status_kb("VmHWM"), anon_open = status_kb("RssAnon");

  // Plan: a mixed epoch (proportions 1:2:3:4 by cache index mod 4, epoch of the dataset's
  // size), this rank's share of it as dataset ids, each located in its cache (as a loader does).
  c = cpu_seconds();
  t = std::chrono::steady_clock::now();
  slip::MixSpec mix;
  mix.sizes = d.sizes();
  for (size_t i = 0; i < d.num_caches(); ++i) mix.weights.push_back({slip::WeightKind::proportion, 1.0 + static_cast<double>(i % 4)});
  mix.seed = 1234;
  mix.epoch = 5;
  mix.block_size = 1;
  const slip::MixedOrder order(mix);
  const slip::RankPositions mine(order.size(), 0, rank, world);
  std::vector<uint64_t> ids(mine.size());
  uint64_t checksum = 0;
  for (uint64_t i = 0; i < mine.size(); ++i) {
    ids[i] = order(mine(i));
    const auto loc = d.locate(ids[i]);
    checksum += loc.cache * 1000003 + loc.sample;
  }
  const double t_plan = seconds_since(t), c_plan = cpu_seconds() - c;
  const long rss_plan = status_kb("VmHWM");

  // Resume: the job stopped after resume_at positions on `world` ranks; this rank of
  // `resume_world` ranks computes what it still reads, from (seed, epoch, weights, position).
  const long file_rss0 = status_kb("RssFile");
  c = cpu_seconds();
  t = std::chrono::steady_clock::now();
  const slip::RankPositions rest(order.size(), resume_at, rank % resume_world, resume_world);
  std::vector<uint64_t> rest_ids(rest.size());
  for (uint64_t i = 0; i < rest.size(); ++i) rest_ids[i] = order(rest(i));
  const double t_resume = seconds_since(t), c_resume = cpu_seconds() - c;
  const long file_rss1 = status_kb("RssFile");
  const long io1 = io_value("read_bytes"), rchar1 = io_value("rchar");
  std::printf(
      "{\"caches\": %zu, \"samples\": %llu, \"epoch\": %llu, \"rank\": %u, \"world\": %u, \"open_s\": %.3f, \"open_cpu_s\": %.3f, "
      "\"open_peak_rss_mb\": %.1f, "
      "\"open_anon_mb\": %.1f, \"plan_s\": %.3f, \"plan_cpu_s\": %.3f, \"plan_ids\": %llu, \"plan_peak_rss_mb\": %.1f, \"resume_at\": "
      "%llu, \"resume_world\": %u, \"resume_s\": %.3f, \"resume_cpu_s\": %.3f, "
      "\"resume_ids\": %llu, \"resume_file_pages_kb\": %ld, \"storage_read_mb\": %.1f, \"read_calls_mb\": %.1f, \"check\": %llu}\n",
      d.num_caches(), static_cast<unsigned long long>(d.size()), static_cast<unsigned long long>(order.size()), rank, world, t_open, c_open,
      rss_open / 1024.0, anon_open / 1024.0, t_plan, c_plan, static_cast<unsigned long long>(ids.size()), rss_plan / 1024.0,
      static_cast<unsigned long long>(resume_at), resume_world, t_resume, c_resume, static_cast<unsigned long long>(rest_ids.size()),
      file_rss1 - file_rss0, (io1 - io0) / 1048576.0, (rchar1 - rchar0) / 1048576.0, static_cast<unsigned long long>(checksum));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 3) {
      std::fprintf(
          stderr,
          "usage: %s build DIR [--caches N] [--samples N] | run DIR|LIST [--rank R] [--world W] [--resume-at S] [--resume-world W2]\n",
          argv[0]);
      return 2;
    }
    const std::string mode = argv[1];
    const fs::path dir = argv[2];
    uint64_t caches = 1000, samples = 100'000'000, resume_at = 73'000'000;
    uint32_t rank = 0, world = 512, resume_world = 384;
    for (int i = 3; i + 1 < argc; i += 2) {
      const std::string k = argv[i];
      const uint64_t v = std::stoull(argv[i + 1]);
      if (k == "--caches")
        caches = v;
      else if (k == "--samples")
        samples = v;
      else if (k == "--rank")
        rank = static_cast<uint32_t>(v);
      else if (k == "--world")
        world = static_cast<uint32_t>(v);
      else if (k == "--resume-at")
        resume_at = v;
      else if (k == "--resume-world")
        resume_world = static_cast<uint32_t>(v);
      else {
        std::fprintf(stderr, "unknown option %s\n", k.c_str());
        return 2;
      }
    }
    if (mode == "build") return build(dir, caches, samples);
    if (mode == "run") return run(dir, rank, world, resume_at, resume_world);
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  } catch (const slip::Error& e) {
    std::fprintf(stderr, "slip_dataset_scale: %s\n", e.describe().c_str());
    return 3;
  }
}
