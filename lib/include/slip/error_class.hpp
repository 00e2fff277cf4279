// slip/error_class.hpp — THE mapping of every exception to an error class.
#pragma once

#include "slip/error.hpp"
#include "slip/export.hpp"

SLIP_API_BEGIN
namespace slip {

// The exception in flight (call it inside a catch block) as an Error that keeps its class
// (docs/HOSTILE_INPUTS.md "Error classes"). A slip::Error is returned as it is; std::bad_alloc
// is Errc::io "out of memory" (a resource of this machine, not a verdict on the input);
// std::system_error (std::filesystem::filesystem_error included) is Errc::io with the OS's
// message and path; any other std::exception, or anything else, is Errc::io "internal error:
// ...". Code that turns an exception into an exit code, a Python exception or a finding goes
// through this (or catches only the classes it means), never a catch-all that re-classes.
Error current_exception_error();

}  // namespace slip
SLIP_API_END
