// slip/log.hpp — where the library's notes and warnings go.
//
// libslipstream prints nothing: a warning (a tar member skipped, a download retried) is handed
// to the handler the embedding program installs, and dropped when there is none. The `slip`
// command forwards them to stderr.
#pragma once

#include "slip/export.hpp"

#include <functional>
#include <string_view>

SLIP_API_BEGIN
namespace slip {

enum class LogLevel { debug, info, warning };

// Called with each message (one line, no trailing newline; names from datasets may hold any
// bytes: escape them with printable() before showing them on a terminal). Calls are serialised;
// they come from whichever thread the library is working on.
using LogHandler = std::function<void(LogLevel level, std::string_view message)>;

// Installs `handler` for the whole process (an empty function removes it). Thread-safe.
void set_log_handler(LogHandler handler);

}  // namespace slip
SLIP_API_END
