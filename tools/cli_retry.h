// How the `aobj` CLI keeps going when a transfer fails for a reason that may pass: a server
// restarting, a lost connection, an expired or forgotten session, a data channel shut by a
// deadline, a busy server. Each transfer of cp, mv and sync is tried up to --max-attempts times
// (AOBJ_MAX_ATTEMPTS; boto3's max_attempts), with exponential pauses and jitter between tries;
// where the session is the casualty, a new one is opened first. Downloads resume from the last
// whole chunk written (DownloadFile). Nothing is retried that the server refused for what the
// request says (NoSuchKey, AccessDenied, PreconditionFailed ...) or that failed on this machine.
#ifndef AOBJ_TOOLS_CLI_RETRY_H_
#define AOBJ_TOOLS_CLI_RETRY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "aobj/client.h"
#include "aobj/gateways.h"

namespace aobj::cli {

struct RetryPolicy {
  int max_attempts = 5;  // the first try included; 1: never retry
  absl::Duration base = absl::Milliseconds(500);
  absl::Duration cap = absl::Seconds(20);
  // The pause after failed attempt `attempt` (1, 2, ...): d = min(cap, base * 2^(attempt-1)),
  // half of it fixed and half random ("equal jitter"), so that a restarting server gets time
  // and many clients do not come back in step.
  absl::Duration Pause(int attempt, absl::BitGen& rng) const;
};

// Whether another attempt may succeed: the control channel failed without a reply, or the
// server's error is retryable (spec Table 3) or says the session is gone. Failures without an
// AOBJ code that did not happen in the control channel (files, directories) are not.
bool Retryable(const absl::Status& status);

// Whether the session itself is lost (aobj/gateways.h): a new one is opened before the next try.
using aobj::SessionLost;

// Whether a failure left the request's outcome unknown: no AOBJ reply came (the connection
// failed, or the call's deadline passed or it was cancelled on this side). AOBJ-ERR-011 forbids
// repeating such a request, but for the read-only methods it lists, until its outcome has been
// learned by other means (the CLI asks the server: a HEAD, or whether the session still exists).
bool UnknownOutcome(const absl::Status& status);

// The sessions a command works through: one per gateway it spreads over (spec 5.11; the
// --endpoint list, then the gateways the first server listed), each replaced when it is lost,
// a lost or unreachable gateway's lanes moved to the next one with a notice (aobj/gateways.h).
using Sessions = aobj::Gateways;
using aobj::GatewayList;

// Sends a request that AOBJ-ERR-011 lets a client repeat whatever became of it (a listing page,
// a HEAD) through the current session of lane 0 (`fallback` without `sessions`) until it
// succeeds, fails for good or has used policy.max_attempts; a lost session is replaced before
// the next attempt. `before_retry(failure, next_attempt, pause)` runs before each pause: a
// notice, a change to the request.
absl::Status RetryRepeatable(
    const RetryPolicy& policy, Sessions* sessions, Client& fallback,
    const std::function<absl::Status(Client&)>& call,
    const std::function<void(const absl::Status&, int, absl::Duration)>& before_retry);

}  // namespace aobj::cli

#endif  // AOBJ_TOOLS_CLI_RETRY_H_
