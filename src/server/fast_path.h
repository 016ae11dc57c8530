// The server's end of the fast request path (spec section 8.9, capability FAST_PATH): signed
// requests that arrive as UCP active messages on the data channel instead of gRPC calls. Each is
// parsed (wire/fast_frame.h), routed to the session it names, queued under the principal it
// claims like a gRPC call (the server's RequestScheduler: the same fairness and bounds),
// handled by the same
// RequestHandler (the same verification, replay protection, errors and semantics), and answered
// by active message on the session's own endpoint, which the session proved to be its own
// (AOBJ-SES-026) before anything is sent there (AOBJ-DAT-168).
//
// What cannot be answered is dropped and counted: a frame that does not parse (nothing in it can
// be trusted to route a reply), one that names no session this server holds, or one whose
// claimed access key is not the session's (a reply would go to another principal's endpoint).
//
// Threading: OnFrame is called on transport threads (it never blocks: it queues, or runs a
// request that waits on nothing there); requests run on the scheduler's threads. Attach once,
// before sessions open; Stop before the dependencies go (after the scheduler stopped). Ownership:
// the dependencies are borrowed; each must outlive Stop().
#ifndef AOBJ_SERVER_FAST_PATH_H_
#define AOBJ_SERVER_FAST_PATH_H_

#include <atomic>
#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/data_channel.h"
#include "server/handler.h"
#include "session/authenticator.h"
#include "session/session_table.h"
#include "wire/methods.h"

namespace aobj {

struct FastPathStats {
  uint64_t received = 0;
  uint64_t answered = 0;    // replies queued on an endpoint
  uint64_t malformed = 0;   // dropped: not a frame
  uint64_t unroutable = 0;  // dropped: no such session, or not the claimed key's
  uint64_t served_here = 0;  // run on the thread that delivered them (of those answered)
};

class FastPathServer {
 public:
  FastPathServer() = default;
  FastPathServer(const FastPathServer&) = delete;
  FastPathServer& operator=(const FastPathServer&) = delete;

  // Queues `task` under `principal` holding `bytes` (RequestScheduler::Submit); the task runs
  // the request and queues its reply. SLOW_DOWN (or any error) when it cannot be queued.
  using SubmitFn = std::function<absl::Status(absl::string_view principal, uint64_t bytes,
                                              std::function<void()> task)>;
  using ClockFn = std::function<absl::Time()>;
  // Runs `task` on the calling thread under `principal` when the scheduler would start it at
  // once (RequestScheduler::TryRunHere); false, unrun, otherwise.
  using RunHereFn =
      std::function<bool(absl::string_view principal, const std::function<void()>& task)>;
  // Frames that arrive before are dropped (no session exists yet to name). `clock` (null:
  // absl::Now) is the time requests are verified and handled at; fuzzers run it on their own.
  // `run_here` (null: every request is submitted) takes the requests that the handler answers
  // without waiting (RequestHandler::AnswersWithoutWaiting) on the thread that delivered them,
  // which saves two thread hand-offs; they run under CallControl::must_not_wait.
  void Attach(RequestHandler* handler, const Authenticator* auth, SubmitFn submit,
              SessionTable* sessions, DataChannel* channel, ClockFn clock = nullptr,
              RunHereFn run_here = nullptr);
  // From now on frames are dropped; returns once no OnFrame runs.
  void Stop();

  // DataChannel::FastRequestSink: one frame as a peer sent it; `principal` is the access key
  // whose data-channel process delivered it ("" in process: any). With `more_behind` (more
  // waits on the delivering thread) every request is submitted, so that they run side by side.
  void OnFrame(absl::string_view frame, absl::string_view principal, bool more_behind = false);

  FastPathStats stats() const {
    return {received_.load(), answered_.load(), malformed_.load(), unroutable_.load(),
            served_here_.load()};
  }

 private:
  // Queues the reply to `nonce_hex` on `endpoint`: `out` or its error.
  void Reply(uint64_t endpoint, const std::string& nonce_hex,
             const absl::StatusOr<std::string>& out, const aobj::v1::VersionRange* supported);

  // Held shared by OnFrame, exclusively by Attach and Stop.
  absl::Mutex mu_;
  bool serving_ ABSL_GUARDED_BY(mu_) = false;
  // Set by Attach, under mu_; read by OnFrame under mu_ and by queued requests, which the
  // scheduler has run or dropped before Stop is called.
  RequestHandler* handler_ = nullptr;
  const Authenticator* auth_ = nullptr;
  SubmitFn submit_;
  RunHereFn run_here_;
  ClockFn clock_;
  SessionTable* sessions_ = nullptr;
  DataChannel* channel_ = nullptr;
  std::atomic<uint64_t> received_{0}, answered_{0}, malformed_{0}, unroutable_{0}, served_here_{0};
};

}  // namespace aobj

#endif  // AOBJ_SERVER_FAST_PATH_H_
