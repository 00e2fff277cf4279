// slip/error.hpp — the one error type of libslipstream.
//
// Every failure the library reports is a slip::Error: a category (which the CLI maps to its
// exit code), a one-line message and, where known, the file, the sample and the byte offset
// it concerns. Code deep inside the library throws it with as much context as it has; callers
// add context on the way out (with_path / with_sample) instead of wrapping it in new text.
#pragma once

#include "slip/export.hpp"

#include <cstdint>
#include <optional>
#include <exception>
#include <string>
#include <string_view>

SLIP_API_BEGIN
namespace slip {

// What kind of failure it is. The library only categorises; each program maps categories to
// its own outcomes (the `slip` command to exit codes: README "Exit codes"). The values are not
// exit codes and carry no meaning beyond the name.
enum class Errc : int {
  usage = 1,        // a caller error: bad option value, unknown field, impossible request
  bad_input = 2,    // the source or cache bytes are malformed or hostile
  io = 3,           // an operating-system error: open/read/write/rename/disk full/permission
  retryable = 4,    // a remote failure that persisted after retries (trying later may work)
  interrupted = 5,  // cancelled: SIGINT/SIGTERM recorded by install_interrupt_handlers()
};

const char* errc_name(Errc code) noexcept;

class Error : public std::exception {
 public:
  Error(Errc code, std::string message);

  Errc code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  const std::string& path() const noexcept { return path_; }
  std::optional<uint64_t> sample() const noexcept { return sample_; }
  std::optional<uint64_t> offset() const noexcept { return offset_; }

  Error& with_path(std::string path);
  Error& with_sample(uint64_t sample);
  Error& with_offset(uint64_t offset);

  // "PATH: sample N: byte O: MESSAGE" — the single line the CLI prints. Control characters
  // and invalid UTF-8 in the path and message (names from untrusted sources) are escaped
  // (printable()), so the line is always one line and cannot drive a terminal.
  std::string describe() const;
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  void refresh();
  Errc code_;
  std::string message_;
  std::string path_;
  std::optional<uint64_t> sample_;
  std::optional<uint64_t> offset_;
  std::string what_;
};

// `text` made safe for a terminal and for line-oriented output: control characters (C0, DEL,
// C1) and bytes that are not valid UTF-8 become \xNN, \n, \t or \r; printable UTF-8 is
// unchanged (so escaping twice changes nothing). Use it on every name or message that came from a dataset,
// a cache or a server before printing it.
std::string printable(std::string_view text);

// Throws Error(Errc::io) naming `path` and the errno text.
[[noreturn]] void throw_errno(const std::string& what, const std::string& path, int err);

}  // namespace slip
SLIP_API_END
