// The CLI's log sink: every log line goes to stderr as "slip: LEVEL: message", with the
// message made printable (names from datasets, caches and servers can hold ESC sequences or
// newlines that would clear the screen or fake a "slip: info:" line), and each distinct
// warning printed once (a source may meet the same member again, e.g. when it reads its first
// shard for the schema and then for the samples).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

#include <spdlog/sinks/base_sink.h>

namespace slip::cli {

class PrintableStderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit PrintableStderrSink(bool color);

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override;

 private:
  bool color_;
  std::unordered_set<std::string> warned_;
};

}  // namespace slip::cli
