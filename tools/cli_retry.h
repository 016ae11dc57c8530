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

class Sessions;

// Sends a request that AOBJ-ERR-011 lets a client repeat whatever became of it (a listing page,
// a HEAD) through the current session of lane 0 (`fallback` without `sessions`) until it
// succeeds, fails for good or has used policy.max_attempts; a lost session is replaced before
// the next attempt. `before_retry(failure, next_attempt, pause)` runs before each pause: a
// notice, a change to the request.
absl::Status RetryRepeatable(
    const RetryPolicy& policy, Sessions* sessions, Client& fallback,
    const std::function<absl::Status(Client&)>& call,
    const std::function<void(const absl::Status&, int, absl::Duration)>& before_retry);

// The sessions a command works through: one per gateway it spreads over (spec 5.11; the
// --endpoint list, then the gateways the first server listed), each replaced when it is lost.
// Worker `lane` works through gateway lane % count; a gateway that cannot be reached or is lost
// hands its lanes to the next one that works, and says so through `notice` (never silently).
// Thread-safe. A replaced session stays open until this object goes, for the threads still
// using it.
class Sessions {
 public:
  // `first` is open on gateways[0] (options.endpoint). `notice` gets one line per change of
  // gateway; it may be empty.
  Sessions(ClientOptions options, std::unique_ptr<Client> first,
           std::vector<std::string> gateways = {},
           std::function<void(const std::string&)> notice = nullptr);
  ~Sessions();
  Sessions(const Sessions&) = delete;
  Sessions& operator=(const Sessions&) = delete;
  // The current session of lane 0; *generation (may be null) tells it from its successors.
  Client& Current(uint64_t* generation) { return ForLane(0, generation); }
  // The current session of worker `lane` (opened on first use).
  Client& ForLane(size_t lane, uint64_t* generation);
  // Opens a new session in place of generation `seen` (on its gateway, else on the next one
  // that answers), unless another thread already replaced it. Returns why none could be opened.
  absl::Status Renew(uint64_t seen);
  // The session of `generation` (which may have been replaced since).
  Client& At(uint64_t generation);
  uint64_t renewals() const;
  // Counts a transfer done through the session of `generation`.
  void Served(uint64_t generation);
  // Transfers done through each gateway that did any, in the order of the gateway list.
  std::vector<std::pair<std::string, uint64_t>> ServedByGateway() const;

 private:
  struct Opened {
    std::unique_ptr<Client> client;
    size_t gateway = 0;
    uint64_t served = 0;
  };
  // A session on gateway `g`, or on the next gateway after it that answers; the index of the
  // session in opened_, or the error of the last attempt.
  absl::StatusOr<size_t> OpenFrom(size_t g, const std::string& why_moved)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  const ClientOptions options_;
  const std::vector<std::string> gateways_;  // [0]: options_.endpoint
  const std::function<void(const std::string&)> notice_;
  std::vector<Opened> opened_ ABSL_GUARDED_BY(mu_);    // generation -> session
  std::vector<int64_t> current_ ABSL_GUARDED_BY(mu_);  // per gateway: generation, or -1
  uint64_t renewals_ ABSL_GUARDED_BY(mu_) = 0;
};

// The gateways a command spreads over: `configured` (the --endpoint list, in order), then
// those the server listed (SessionInfo::gateways) that are not among them; at most `limit`.
std::vector<std::string> GatewayList(const std::vector<std::string>& configured,
                                     const std::vector<std::string>& listed, size_t limit);

}  // namespace aobj::cli

#endif  // AOBJ_TOOLS_CLI_RETRY_H_
