// A program embedding libslipstream, as a training framework or a data service would: the
// library prints nothing unless a log handler is installed, and a conversion stops when the
// program cancels its token from another thread, leaving no cache and no temporary behind.
// Usage: embed TAR_THAT_WARNS IMAGEFOLDER OUTPUT_DIR
#include <slip/slip.hpp>

#include <cstdio>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  try {
    // 1. No handler: warnings are dropped, nothing reaches stdout or stderr.
    auto count_samples = [&] {
      auto source = slip::open_source(argv[1]);
      slip::Sample sample;
      int n = 0;
      while (source->next(sample)) ++n;
      return n;
    };
    const int quiet_samples = count_samples();
    // 2. With a handler: the same warnings arrive here.
    int warnings = 0;
    slip::set_log_handler([&](slip::LogLevel level, std::string_view) { warnings += level == slip::LogLevel::warning; });
    const int samples = count_samples();
    slip::set_log_handler({});

    // 3. Cancel a conversion from another thread once it has started writing.
    slip::ConvertOptions options;
    options.output_dir = argv[3];
    std::promise<void> started, cancelled;
    std::thread canceller([&, token = options.cancel]() mutable {
      started.get_future().wait();
      token.cancel();
      cancelled.set_value();
    });
    bool first = true;
    options.progress = [&](const slip::ProgressUpdate&) {
      if (!first) return;
      first = false;
      started.set_value();
      cancelled.get_future().wait();  // the writer goes on only once the token is cancelled
    };
    std::string outcome = "not cancelled";
    try {
      auto folder = slip::open_source(argv[2]);
      slip::convert(*folder, options);
    } catch (const slip::Error& e) {
      outcome = std::string(slip::errc_name(e.code())) + ": " + e.what();
    }
    if (first) started.set_value();
    canceller.join();
    size_t left = 0;
    for (const auto& entry : std::filesystem::directory_iterator(argv[3])) left += entry.path().filename() != "downloads";
    std::printf("%d samples without a handler, %d with; %d warnings; convert %s; %zu entries left\n", quiet_samples, samples, warnings,
                outcome.c_str(), left);
    return 0;
  } catch (const slip::Error& e) {
    std::printf("error: %s\n", e.what());
    return 3;
  }
}
