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
#include <memory>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "aobj/client.h"

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

// Whether the session itself is lost, so that a new one is needed before trying again: the
// connection failed, the server forgot or expired the session, or its data channel is shut
// (spec 7.5: after a deadline the session's later data requests fail).
bool SessionLost(const absl::Status& status);

// Whether a failure left the request's outcome unknown: no AOBJ reply came (the connection
// failed, or the call's deadline passed or it was cancelled on this side). AOBJ-ERR-011 forbids
// repeating such a request, but for the read-only methods it lists, until its outcome has been
// learned by other means (the CLI asks the server: a HEAD, or whether the session still exists).
bool UnknownOutcome(const absl::Status& status);

// The session a command works through, replaced when it is lost. Thread-safe. A replaced
// session stays open until this object goes, for the threads still using it.
class Sessions {
 public:
  Sessions(ClientOptions options, std::unique_ptr<Client> first);
  ~Sessions();
  Sessions(const Sessions&) = delete;
  Sessions& operator=(const Sessions&) = delete;
  // The current session; *generation (may be null) tells it from its successors.
  Client& Current(uint64_t* generation);
  // Opens a new session in place of generation `seen`, unless another thread already replaced
  // it. Returns why a new one could not be opened.
  absl::Status Renew(uint64_t seen);
  // The session of `generation` (which may have been replaced since).
  Client& At(uint64_t generation);
  uint64_t renewals() const;

 private:
  mutable absl::Mutex mu_;
  const ClientOptions options_;
  std::vector<std::unique_ptr<Client>> clients_ ABSL_GUARDED_BY(mu_);  // back(): current
};

}  // namespace aobj::cli

#endif  // AOBJ_TOOLS_CLI_RETRY_H_
