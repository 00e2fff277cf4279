// slip order DATASET... --seed S --epoch E [--mix KIND:V,...] [--epoch-size N] [--rank R --world-size W] [--consumed S]
//            [--block-size B] [--format npy|text] [-o FILE] [--json]
#include <cstdio>
#include <filesystem>
#include <optional>
#include <iostream>

#include "cli_errors.hpp"
#include "command.hpp"
#include "slip/runtime.hpp"
#include "slip/npy.hpp"
#include "output.hpp"
#include "slip/dataset.hpp"
#include "slip/mix.hpp"
#include "slip/error.hpp"
#include "slip/shuffle.hpp"
#include "slip/subset.hpp"

namespace slip::cli {

namespace {

struct OrderArgs {
  std::vector<std::string> inputs;
  ShuffleSpec spec;
  std::string mix;
  std::optional<uint64_t> epoch_size;
  uint64_t consumed = 0;
  std::string format = "text";
  std::string output;
  bool json = false;
};

// The flags of `slip order`, bound to `a`.
void declare_order_flags(CLI::App& sub, OrderArgs& a) {
  sub.add_option("cache", a.inputs,
                 "Caches, directories of caches or dataset list files, read as one dataset (only sample counts are read)")
      ->type_name("CACHE")
      ->required();
  sub.add_option("--seed", a.spec.seed, "Shuffle seed")->default_val(0);
  sub.add_option("--epoch", a.spec.epoch, "Epoch number (each epoch is a different order)")->default_val(0);
  sub.add_option("--rank", a.spec.rank, "This process's rank")->default_val(0);
  sub.add_option("--mix", a.mix,
                 "Weights, one per cache in dataset order: proportion:P1,P2,... (relative), repeat:R1,... (times per epoch) or "
                 "choose:C1,... (samples per epoch); default: a JSON list's weights, else each sample once")
      ->type_name("KIND:V,...");
  sub.add_option("--epoch-size", a.epoch_size, "Samples per epoch, split by the proportions (default: all samples)")->check(at_least(1));
  sub.add_option("--consumed", a.consumed,
                 "Resume: skip the first S positions of the epoch (read by all ranks, of any world size) and split the rest")
      ->default_val(0);
  sub.add_option("--world-size", a.spec.world_size,
                 "Number of ranks; rank r takes positions r, r+W, ..., ceil(L/W) of them, padded by repetition")
      ->default_val(1)
      ->check(at_least(1));
  sub.add_option("--block-size", a.spec.block_size, "Shuffle blocks of B consecutive samples, then within blocks (1: plain shuffle)")
      ->default_val(1)
      ->check(at_least(1));
  sub.add_option("--format", a.format, "text (one id per line) or npy (int64 array)")
      ->check(CLI::IsMember({"text", "npy"}))
      ->default_val("text");
  sub.add_option("-o,--output", a.output, "Write to this file instead of stdout (- for stdout); npy is never written to a terminal")
      ->type_name("FILE");
  sub.add_flag("--json", a.json, "One JSON object on stdout: the order's settings and its ids (or, with -o FILE, the file they went to)");
}

// --json without -o: streamed as one line, `{..., "ids": [` then the ids block by block: O(1)
// memory as the text output (an epoch of billions of ids is never held).
void print_order_json(const nlohmann::ordered_json& head, const RankOrder& order) {
  std::string text = head.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // (paths need not be UTF-8)
  text.pop_back();
  text += ",\"ids\":[";
  OutputFile out("", false);
  std::vector<uint64_t> ids(std::min<uint64_t>(order.size(), 1 << 16));
  for (uint64_t first = 0; first < order.size(); first += ids.size()) {
    throw_if_interrupted();
    const std::span<uint64_t> block(ids.data(), std::min<uint64_t>(ids.size(), order.size() - first));
    order.fill(first, block);
    for (size_t i = 0; i < block.size(); ++i) text += (first + i ? "," : "") + std::to_string(block[i]);
    if (!out.write(text)) return;
    text.clear();
  }
  if (!out.write("]}\n")) return;
  out.close();
}

// The ids as text lines or an .npy array, to -o FILE or stdout. False when the reader has gone.
bool write_order_ids(const OrderArgs& a, const RankOrder& order) {
  const bool npy = a.format == "npy";
  OutputFile out(a.output, npy);  // npy: into a file or a pipe, never onto a terminal
  if (npy && !out.write(npy_header("'<i8'", std::vector<uint64_t>{order.size()}))) return false;
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
    if (!more) return false;  // the reader has gone
  }
  out.close();
  return true;
}

int run_order(const OrderArgs& a) {
  if (!a.inputs.empty()) set_error_subject(a.inputs.front());
  const bool to_file = !a.output.empty() && !is_stdout(a.output);
  if (a.json && a.format == "npy" && !to_file)
    throw Error(Errc::usage, "order --json --format npy: the array is not JSON; add -o FILE to write it there");
  std::vector<std::filesystem::path> inputs(a.inputs.begin(), a.inputs.end());
  const Dataset dataset = Dataset::open(inputs);
  if (a.spec.rank >= a.spec.world_size) throw Error(Errc::usage, "--rank must be in [0, world size)");
  MixSpec mix;
  mix.sizes = dataset.sizes();
  mix.weights = a.mix.empty() ? dataset.weights() : parse_weights(a.mix, dataset.num_caches());
  mix.epoch_size = a.epoch_size ? a.epoch_size : dataset.epoch_size();
  mix.seed = a.spec.seed;
  mix.epoch = a.spec.epoch;
  mix.block_size = a.spec.block_size;
  const RankOrder order(mix, a.consumed, a.spec.rank, a.spec.world_size);  // what slip::Loader reads
  // Streamed in blocks: memory stays O(1) in the number of samples (the order is a pure
  // function of the position), whatever the size of the epoch.
  const bool npy = a.format == "npy";
  nlohmann::ordered_json head{{"schema", kJsonSchemaVersion},
                              {"command", "order"},
                              {"path", a.inputs.size() == 1 ? nlohmann::ordered_json(a.inputs.front()) : nlohmann::ordered_json(a.inputs)},
                              {"seed", a.spec.seed},
                              {"epoch", a.spec.epoch},
                              {"rank", a.spec.rank},
                              {"world_size", a.spec.world_size},
                              {"block_size", a.spec.block_size},
                              {"consumed", a.consumed},
                              {"num_samples", dataset.size()},
                              {"size", order.size()}};
  if (a.json && !to_file) {
    print_order_json(head, order);
    return 0;
  }
  if (!write_order_ids(a, order)) return 0;
  if (a.json) {
    head["output"] = a.output;
    head["format"] = a.format;
    head.erase("schema");
    print_json(head);
  } else if (npy && to_file) {
    std::cout << a.output << "\n";
  }
  return 0;
}

}  // namespace

Action setup_order(CLI::App& sub, const GlobalOptions&) {
  auto a = std::make_shared<OrderArgs>();
  declare_order_flags(sub, *a);
  return [a]() -> int { return run_order(*a); };
}

}  // namespace slip::cli
