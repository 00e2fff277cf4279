#include "slip/error.hpp"
#include "slip/error_class.hpp"

#include <cstring>
#include <filesystem>
#include <new>
#include <system_error>

#include "util/untrusted.hpp"

namespace slip {

const char* errc_name(Errc code) noexcept {
  switch (code) {
    case Errc::usage:
      return "usage";
    case Errc::bad_input:
      return "bad_input";
    case Errc::io:
      return "io";
    case Errc::retryable:
      return "retryable";
    case Errc::interrupted:
      return "interrupted";
  }
  return "unknown";
}

Error::Error(Errc code, std::string message) : code_(code), message_(std::move(message)) { refresh(); }

Error& Error::with_path(std::string path) {
  if (path_.empty()) path_ = std::move(path);
  refresh();
  return *this;
}

Error& Error::with_sample(uint64_t sample) {
  if (!sample_) sample_ = sample;
  refresh();
  return *this;
}

Error& Error::with_offset(uint64_t offset) {
  if (!offset_) offset_ = offset;
  refresh();
  return *this;
}

std::string Error::describe() const {
  std::string out;
  if (!path_.empty()) out += printable(path_) + ": ";
  if (sample_) out += "sample " + std::to_string(*sample_) + ": ";
  if (offset_) out += "byte " + std::to_string(*offset_) + ": ";
  out += printable(message_);
  return out;
}

std::string printable(std::string_view text) { return detail::escape_for_terminal(text); }

void Error::refresh() { what_ = describe(); }

Error current_exception_error() {
  try {
    throw;
  } catch (const Error& e) {
    return e;
  } catch (const std::bad_alloc&) {
    return Error(Errc::io, "out of memory");
  } catch (const std::filesystem::filesystem_error& e) {
    Error out(Errc::io, e.code().message());
    if (!e.path1().empty()) out.with_path(e.path1().string());
    return out;
  } catch (const std::system_error& e) {
    return Error(Errc::io, e.what());
  } catch (const std::exception& e) {
    return Error(Errc::io, std::string("internal error: ") + e.what());
  } catch (...) {
    return Error(Errc::io, "internal error: an exception of unknown type");
  }
}

void throw_errno(const std::string& what, const std::string& path, int err) {
  throw Error(Errc::io, what + ": " + std::strerror(err)).with_path(path);
}

}  // namespace slip
