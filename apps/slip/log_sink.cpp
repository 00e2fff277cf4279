#include "log_sink.hpp"

#include <cstdio>

#include "slip/error.hpp"

namespace slip::cli {

PrintableStderrSink::PrintableStderrSink(bool color) : color_(color) {}

void PrintableStderrSink::sink_it_(const spdlog::details::log_msg& msg) {
  const std::string text = slip::printable(std::string_view(msg.payload.data(), msg.payload.size()));
  if (msg.level == spdlog::level::warn && !warned_.insert(text).second) return;
  const auto level = spdlog::level::to_string_view(msg.level);
  const char* on = "";
  const char* off = "";
  if (color_) {
    off = "\033[m";
    switch (msg.level) {
      case spdlog::level::err:
      case spdlog::level::critical:
        on = "\033[31m\033[1m";
        break;
      case spdlog::level::warn:
        on = "\033[33m\033[1m";
        break;
      case spdlog::level::info:
        on = "\033[32m";
        break;
      default:
        off = "";
    }
  }
  std::fprintf(stderr, "slip: %s%.*s%s: %s\n", on, static_cast<int>(level.size()), level.data(), off, text.c_str());
}

void PrintableStderrSink::flush_() { std::fflush(stderr); }

}  // namespace slip::cli
