// slip order CACHE --seed S --epoch E [--rank R --world-size W] [--block-size B] [--format npy|text] [-o FILE]
#include <cstdio>
#include <iostream>

#include "cli_errors.hpp"
#include "command.hpp"
#include "slip/runtime.hpp"
#include "slip/npy.hpp"
#include "output.hpp"
#include "slip/cache.hpp"
#include "slip/error.hpp"
#include "slip/shuffle.hpp"
#include "slip/subset.hpp"

namespace slip::cli {

Action setup_order(CLI::App& sub, const GlobalOptions&) {
  struct Args {
    std::string cache;
    ShuffleSpec spec;
    std::string format = "text";
    std::string output;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  sub.add_option("cache", a->cache, "Cache directory (only its sample count is read)")->type_name("CACHE")->required();
  sub.add_option("--seed", a->spec.seed, "Shuffle seed")->default_val(0);
  sub.add_option("--epoch", a->spec.epoch, "Epoch number (each epoch is a different order)")->default_val(0);
  sub.add_option("--rank", a->spec.rank, "This process's rank")->default_val(0);
  sub.add_option("--world-size", a->spec.world_size,
                 "Number of ranks; rank R takes positions R, R+W, R+2W, ... of the global order (ceil(N/W), padded by repetition)")
      ->default_val(1)
      ->check(at_least(1));
  sub.add_option("--block-size", a->spec.block_size, "Shuffle blocks of B consecutive samples, then within blocks (1: plain shuffle)")
      ->default_val(1)
      ->check(at_least(1));
  sub.add_option("--format", a->format, "text (one id per line) or npy (int64 array)")
      ->check(CLI::IsMember({"text", "npy"}))
      ->default_val("text");
  sub.add_option("-o,--output", a->output, "Write to this file instead of stdout (- for stdout); npy is never written to a terminal")
      ->type_name("FILE");
  sub.add_flag("--json", a->json, "One JSON object on stdout: the order's settings and its ids (or, with -o FILE, the file they went to)");
  return [a]() -> int {
    set_error_subject(a->cache);
    const bool to_file = !a->output.empty() && !is_stdout(a->output);
    if (a->json && a->format == "npy" && !to_file)
      throw Error(Errc::usage, "order --json --format npy: the array is not JSON; add -o FILE to write it there");
    const Cache cache = Cache::open(a->cache);
    ShuffleSpec spec = a->spec;
    spec.num_samples = cache.size();
    const EpochOrder order(spec);
    // Streamed in blocks: memory stays O(1) in the number of samples (the order is a pure
    // function of the position), whatever the size of the epoch.
    const bool npy = a->format == "npy";
    nlohmann::ordered_json head{{"schema", kJsonSchemaVersion},
                                {"command", "order"},
                                {"path", a->cache},
                                {"seed", spec.seed},
                                {"epoch", spec.epoch},
                                {"rank", spec.rank},
                                {"world_size", spec.world_size},
                                {"block_size", spec.block_size},
                                {"num_samples", spec.num_samples},
                                {"size", order.size()}};
    if (a->json && !to_file) {
      // Streamed as one line, `{..., "ids": [` then the ids block by block: O(1) memory as the
      // text output (an epoch of billions of ids is never held).
      std::string text = head.dump();
      text.pop_back();
      text += ",\"ids\":[";
      OutputFile out("", false);
      std::vector<uint64_t> ids(std::min<uint64_t>(order.size(), 1 << 16));
      for (uint64_t first = 0; first < order.size(); first += ids.size()) {
        throw_if_interrupted();
        const std::span<uint64_t> block(ids.data(), std::min<uint64_t>(ids.size(), order.size() - first));
        order.fill(first, block);
        for (size_t i = 0; i < block.size(); ++i) text += (first + i ? "," : "") + std::to_string(block[i]);
        if (!out.write(text)) return 0;
        text.clear();
      }
      if (!out.write("]}\n")) return 0;
      out.close();
      return 0;
    }
    OutputFile out(a->output, npy);  // npy: into a file or a pipe, never onto a terminal
    if (npy && !out.write(npy_header("'<i8'", std::vector<uint64_t>{order.size()}))) return 0;
    std::vector<uint64_t> ids(std::min<uint64_t>(order.size(), 1 << 16));
    std::string text;
    for (uint64_t first = 0; first < order.size(); first += ids.size()) {
      throw_if_interrupted();
      const std::span<uint64_t> block(ids.data(), std::min<uint64_t>(ids.size(), order.size() - first));
      order.fill(first, block);
      bool more;
      if (npy) {
        const auto bytes = std::as_bytes(block);
        more = out.write(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
      } else {
        text.clear();
        for (uint64_t id : block) text += std::to_string(id) + "\n";
        more = out.write(text);
      }
      if (!more) return 0;  // the reader has gone
    }
    out.close();
    if (a->json) {
      head["output"] = a->output;
      head["format"] = a->format;
      head.erase("schema");
      print_json(head);
    } else if (npy && to_file) {
      std::cout << a->output << "\n";
    }
    return 0;
  };
}

}  // namespace slip::cli
