// Internal: waiting between attempts (exponential backoff with jitter, Retry-After honoured).
#pragma once

#include <string>

#include "net/http.hpp"
#include "slip/transport.hpp"

namespace slip::net {

// Sleeps before attempt `attempt` (1 = the first retry): initial * 2^(attempt-1), capped, times a
// random factor in [0.5, 1.5); a Retry-After header (seconds) raises it, within the cap.
// Returns early with Error(interrupted) on SIGINT/SIGTERM.
void wait_before_retry(const RetryPolicy& policy, unsigned attempt, const Headers* response_headers);

}  // namespace slip::net
