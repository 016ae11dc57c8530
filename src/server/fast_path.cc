#include "server/fast_path.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "aobj/status.h"
#include "wire/error_detail.h"
#include "wire/fast_frame.h"
#include "wire/printable.h"
#include "wire/protocol.h"

namespace aobj {

void FastPathServer::Attach(RequestHandler* handler, const Authenticator* auth, SubmitFn submit,
                            SessionTable* sessions, DataChannel* channel, ClockFn clock,
                            RunHereFn run_here) {
  absl::MutexLock l(&mu_);
  handler_ = handler;
  auth_ = auth;
  submit_ = std::move(submit);
  run_here_ = std::move(run_here);
  clock_ = clock ? std::move(clock) : ClockFn([] { return absl::Now(); });
  sessions_ = sessions;
  channel_ = channel;
  serving_ = true;
}

void FastPathServer::Stop() {
  absl::MutexLock l(&mu_);
  serving_ = false;
}

void FastPathServer::OnFrame(absl::string_view frame, absl::string_view principal,
                             bool more_behind) {
  received_.fetch_add(1, std::memory_order_relaxed);
  absl::ReaderMutexLock l(&mu_);
  if (!serving_) {
    unroutable_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const absl::Time arrived = clock_ ? clock_() : absl::Now();
  auto parsed = ParseFastRequest(frame);
  if (!parsed.ok()) {  // AOBJ-DAT-168: nothing in it can route a reply
    malformed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  auto req = std::make_shared<FastRequest>(std::move(*parsed));
  // AOBJ-DAT-168: replies go only to the endpoint of the session named, and only when the key
  // claimed is the session's (and, confined, the process that delivered it is that key's).
  std::shared_ptr<const SessionState> session = sessions_->Peek(req->auth.session_hex);
  if (session == nullptr || session->access_key_id != req->auth.access_key_id ||
      (!principal.empty() && principal != session->access_key_id)) {
    unroutable_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint64_t endpoint = session->endpoint;
  const Method method = MethodFromName(req->method);
  // Counted and logged as a failure of its method; a name no method has is only answered.
  auto refuse = [&](absl::Status why) {
    Reply(endpoint, req->auth.nonce_hex,
          method == Method::kCount ? why : handler_->Refuse(method, req->auth, std::move(why)),
          nullptr);
  };
  if (!session->HasCapability(kCapFastPath)) {
    refuse(MakeError(ErrorCode::kInvalidArgument,
                     "the session did not negotiate FAST_PATH (AOBJ-DAT-167)"));
    return;
  }
  if (!FastPathCarries(method)) {  // AOBJ-DAT-167
    refuse(MakeError(
        ErrorCode::kInvalidArgument,
        absl::StrCat("the fast path does not carry \"", PrintableAscii(req->method.substr(0, 64)),
                     "\"; send it by gRPC (AOBJ-DAT-167)")));
    return;
  }
  // AOBJ-SEC-012: a claim that already fails is answered without queueing.
  if (absl::Status claim = auth_->CheckClaim(req->auth, true); !claim.ok()) {
    Reply(endpoint, req->auth.nonce_hex, handler_->Refuse(method, req->auth, claim), nullptr);
    return;
  }
  const uint64_t bytes = req->body.size();
  const std::string key = req->auth.access_key_id;
  auto run = [this, req, method, endpoint, arrived](bool here) {
    CallControl call;
    call.must_not_wait = here;
    if (req->timeout_ms > 0) call.deadline = arrived + absl::Milliseconds(req->timeout_ms);
    aobj::v1::VersionRange supported;
    absl::StatusOr<std::string> out =
        handler_->Handle(method, req->auth, req->body, clock_(), &supported, &call);
    const bool version_error =
        !out.ok() && ErrorCodeOf(out.status()) == ErrorCode::kUnsupportedVersion;
    Reply(endpoint, req->auth.nonce_hex, out, version_error ? &supported : nullptr);
  };
  // AOBJ-SEC-013, AOBJ-SEC-014: the same queues, fairness and bounds as a gRPC call. A request
  // that waits on nothing runs here when a request thread would start it at once anyway (it is
  // counted as one of them), two thread hand-offs sooner; not when more frames wait behind it on
  // this thread, which request threads then serve side by side.
  if (run_here_ && !more_behind && handler_->AnswersWithoutWaiting(method, *session, req->body) &&
      run_here_(key, [&run] { run(true); })) {
    served_here_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  absl::Status queued = submit_(key, bytes, [run] { run(false); });
  if (!queued.ok()) {
    Reply(endpoint, req->auth.nonce_hex, handler_->Refuse(method, req->auth, queued), nullptr);
  }
}

void FastPathServer::Reply(uint64_t endpoint, const std::string& nonce_hex,
                           const absl::StatusOr<std::string>& out,
                           const aobj::v1::VersionRange* supported) {
  FastReply reply;
  reply.nonce_hex = nonce_hex;
  if (out.ok()) {
    reply.body = *out;
  } else {
    reply.error = true;
    // The same aobj.v1.Error as the gRPC trailer carries.
    reply.body = ErrorDetail(out.status(), supported).SerializeAsString();
  }
  auto frame = EncodeFastReply(reply);
  if (!frame.ok()) {
    // AOBJ-DAT-171: a response too large for a frame is answered with that error instead.
    reply.error = true;
    reply.body = ErrorDetail(MakeError(ErrorCode::kInternal,
                                       "the response exceeds the fast path's frame limit; send "
                                       "the request by gRPC"))
                     .SerializeAsString();
    frame = EncodeFastReply(reply);
    if (!frame.ok()) return;
  }
  answered_.fetch_add(1, std::memory_order_relaxed);
  channel_->SendFastReply(endpoint, std::move(*frame));
}

}  // namespace aobj
