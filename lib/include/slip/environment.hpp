// slip/environment.hpp — the table of the environment variables slip honours.
#pragma once

#include "slip/export.hpp"

#include <span>
#include <string_view>

SLIP_API_BEGIN
namespace slip {

// The environment variables slip honours, in one table: `slip --help`, the man pages and
// docs/COMMANDS.md are generated from it (scripts/regen-cli-docs.sh), and
// tests/integration/environment_table.sh fails when the code reads a variable missing here.
// Every behaviour switch is an option field first (ConvertOptions::parallel_writes, ...); the
// slip command fills the field from the variable.
struct EnvironmentVariable {
  std::string_view names;          // one name, or several read together ("AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL")
  std::string_view values;         // what it may be set to
  std::string_view what;           // what it changes
  std::string_view default_value;  // what happens when it is unset (or empty)
};
std::span<const EnvironmentVariable> environment_variables();

}  // namespace slip
SLIP_API_END
