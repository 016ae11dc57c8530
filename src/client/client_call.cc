#include "client/client_impl.h"

namespace aobj::client_internal {

namespace {

// Methods that change nothing on the server but a session that expires by itself: when one
// ends without an AOBJ reply (outcome unknown, AOBJ-ERR-006), sending it again as a new request
// cannot do twice what was meant once (AOBJ-ERR-011).
bool RepeatableWhenUnknown(Method m) {
  switch (m) {
    case Method::kOpenSession:
    case Method::kRenewSession:
    case Method::kHeadBucket:
    case Method::kHeadObject:
    case Method::kListBuckets:
    case Method::kListObjectsV2:
    case Method::kListParts:
    case Method::kListMultipartUploads:
      return true;
    default:
      return false;
  }
}

// The client's busy-retry policy (AOBJ-FLO-003: exponentially increasing, randomized): after
// SLOW_DOWN or TOO_MANY_TRANSFERS, or a repeatable request whose outcome is unknown, up to
// ClientOptions::busy_retries more attempts, the pause before attempt n + 1 a random point in
// the upper half of kFirstBusyPauseUs * 2^n, at most kMaxBusyPauseUs, and never past the
// operation's deadline (Call()).
constexpr int64_t kFirstBusyPauseUs = 20000;
constexpr int64_t kMaxBusyPauseUs = 1000000;
constexpr int kMaxBusyDoublings = 10;  // 20 ms << 10 is past the cap: no shift overflows

// The pause before busy retry `attempt` (0 first).
absl::Duration BusyPause(int attempt) {
  thread_local std::minstd_rand rng{std::random_device{}()};
  const int64_t ceiling_us =
      std::min<int64_t>(kFirstBusyPauseUs << std::min(attempt, kMaxBusyDoublings), kMaxBusyPauseUs);
  std::uniform_int_distribution<int64_t> pick(ceiling_us / 2, ceiling_us);
  return absl::Microseconds(pick(rng));
}

}  // namespace

void ClientImpl::SendCancel(const std::string& nonce) {
  const CallContext ctx;  // not part of the operation being cancelled
  pb::RenewSessionRequest req;
  pb::RenewSessionResponse resp;
  if (HasCapability(kCapCancel)) {
    req.add_cancel(nonce);
    Call(ctx, Method::kRenewSession, req, &resp).IgnoreError();
  } else {
    Call(ctx, Method::kRenewSession, req, &resp, nullptr, {{kMetaCancel, nonce}}).IgnoreError();
  }
}

absl::Status ClientImpl::DataCall(const CallContext& ctx, Method method,
                                  const google::protobuf::Message& req,
                                  google::protobuf::Message* resp, bool spin) {
  std::shared_ptr<std::atomic<int>> spinning;
  {
    absl::MutexLock l(&mu_);
    if (data_channel_lost_) {
      return MakeError(ErrorCode::kDataChannelUnavailable,
                       "the data channel was shut after a request ended without a reply "
                       "(AOBJ-MEM-014); connect a new client");
    }
    if (spin && worker_ != nullptr) {
      spinning = worker_->spin_counter();
      spinning->fetch_add(1);
      worker_->Wake();
    }
  }
  bool no_reply = false;
  absl::Status s = Call(ctx, method, req, resp, &no_reply);
  if (spinning) spinning->fetch_sub(1);
  // AOBJ-MEM-027: TRANSFER_FAILED or DATA_CHANNEL_UNAVAILABLE means the server failed the
  // session's data channel (AOBJ-DAT-159) by closing its endpoint; operations it sent before
  // that may still sit in this worker's queues and would be applied by its next progress.
  // Destroying the worker is what makes the reply a fence here too.
  const ErrorCode code = ErrorCodeOf(s);
  if (no_reply || code == ErrorCode::kTransferFailed ||
      code == ErrorCode::kDataChannelUnavailable) {
    std::unique_ptr<UcxWorker> doomed;
    {
      absl::MutexLock l(&mu_);
      data_channel_lost_ = true;
      doomed = std::move(worker_);
    }
    doomed.reset();
    FailFastWaiters();
  }
  return s;
}

absl::Status ClientImpl::Call(const CallContext& ctx, Method method,
                              const google::protobuf::Message& req, google::protobuf::Message* resp,
                              bool* no_reply,
                              std::vector<std::pair<std::string, std::string>> extra_md) {
  std::string body;
  req.SerializeToString(&body);  // AOBJ-AUTH-016: hashed and sent as these same octets
  const std::string session = method == Method::kOpenSession ? "" : info_.session_id;
  // AOBJ-SES-022: once the server said the session is gone, no request names it again.
  if (const uint32_t gone = session_gone_.load(); !session.empty() && gone != 0) {
    return MakeError(static_cast<ErrorCode>(gone),
                     "the server ended this session earlier; connect a new client");
  }
  // AOBJ-CTL-010: every call carries a deadline, the earliest of the client's and the
  // operation's (CallOptions).
  const absl::Time now = absl::Now();
  const absl::Time deadline = std::min(now + absl::Milliseconds(options_.timeout_ms), ctx.deadline);
  if (deadline <= now) {
    // Nothing sent, so nothing to wait for.
    return MakeError(ErrorCode::kDeadlineExceeded,
                     "the operation's deadline passed before "
                     "the call was sent");
  }
  RawReply reply;
  for (int attempt = 0;; ++attempt) {
    const absl::Time sent = absl::Now();
    // AOBJ-ERR-007: every attempt is a new request, with its own nonce and timestamp.
    RequestAuth auth = signer_->Sign(MethodPath(method), session, body, sent);
    // An asynchronous operation that was cancelled sends nothing more; otherwise Cancel()
    // can name this call by its nonce (AOBJ-DAT-156).
    if (ctx.op != nullptr && !ctx.op->Sending(auth.nonce_hex)) {
      return MakeError(ErrorCode::kCancelled, "cancelled before it was sent");
    }
    // Spec 8.9: on the fast path when it carries the method and the message fits a frame.
    if (!FastCall(method, body, auth, extra_md.empty(), deadline - sent, &reply)) {
      std::vector<std::pair<std::string, std::string>> md = AuthMetadata(auth);
      for (const auto& entry : extra_md) md.push_back(entry);
      reply = rpc_->Call(MethodPath(method), body, md, deadline - sent);
    }
    const ErrorCode code = ErrorCodeOf(reply.status);
    // A connection the server's transport refused or closed (GOAWAY under memory pressure:
    // UNAVAILABLE, no AOBJ error) leaves the outcome unknown; only a request that changes
    // nothing is sent again.
    const bool unknown_outcome = reply.error.code() == aobj::v1::ERROR_CODE_UNSPECIFIED &&
                                 reply.grpc_status.error_code() == grpc::StatusCode::UNAVAILABLE &&
                                 RepeatableWhenUnknown(method);
    if (reply.status.ok() || attempt >= options_.busy_retries ||
        (code != ErrorCode::kSlowDown && code != ErrorCode::kTooManyTransfers &&
         !unknown_outcome)) {
      break;
    }
    // AOBJ-FLO-003: the server did nothing; wait a randomized, doubling pause, unless the
    // deadline would pass first.
    const absl::Duration pause = BusyPause(attempt);
    if (absl::Now() + pause >= deadline) break;
    absl::SleepFor(pause);
  }
  if (!reply.status.ok()) {
    const ErrorCode code = ErrorCodeOf(reply.status);
    if (!session.empty() &&
        (code == ErrorCode::kSessionExpired || code == ErrorCode::kNoSuchSession)) {
      session_gone_.store(static_cast<uint32_t>(code));  // AOBJ-SES-022
    }
    // AOBJ-ERR-006: without an AOBJ error the outcome is unknown.
    const bool unknown = reply.error.code() == aobj::v1::ERROR_CODE_UNSPECIFIED;
    if (no_reply != nullptr) *no_reply = unknown;
    // AOBJ-CTL-014: the client's own deadline or cancellation, without a reply, is reported
    // with the registry's code rather than as INTERNAL.
    if (unknown && reply.grpc_status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      return MakeError(
          ErrorCode::kDeadlineExceeded,
          absl::StrCat("no reply before the deadline: ", reply.grpc_status.error_message()));
    }
    if (unknown && reply.grpc_status.error_code() == grpc::StatusCode::CANCELLED) {
      return MakeError(ErrorCode::kCancelled,
                       absl::StrCat("the call was cancelled: ", reply.grpc_status.error_message()));
    }
    return reply.status;
  }
  if (!resp->ParseFromString(reply.body)) {
    return MakeError(ErrorCode::kInternal,
                     absl::StrCat("malformed ", resp->GetTypeName(), " from the server"));
  }
  return absl::OkStatus();
}

bool ClientImpl::FastCall(Method method, const std::string& body, const RequestAuth& auth,
                          bool plain, absl::Duration timeout, RawReply* reply) {
  if (fast_ep_ == 0 || fast_closed_.load() || !plain || !FastPathCarries(method)) return false;
  // A control connection that is not up (the server went away, or the channel idled) is what
  // tells this client that the server may have restarted and forgotten the session: such a
  // call goes by gRPC, which connects and gets the server's answer.
  if (control_->GetState(false) != GRPC_CHANNEL_READY) return false;
  FastRequest req;
  // The call's deadline, as gRPC would send it (section 3.7); at least a millisecond.
  req.timeout_ms =
      static_cast<uint32_t>(std::clamp<int64_t>(absl::ToInt64Milliseconds(timeout), 1, UINT32_MAX));
  req.method = MethodName(method);
  req.auth = auth;
  req.body = body;
  auto frame = EncodeFastRequest(req);
  if (!frame.ok()) return false;
  auto waiter = std::make_shared<FastWaiter>();
  {
    absl::MutexLock l(&fast_mu_);
    fast_waiters_[auth.nonce_hex] = waiter;
  }
  absl::Status sent = MakeError(ErrorCode::kDataChannelUnavailable, "no data channel");
  {
    absl::MutexLock l(&mu_);
    if (worker_ != nullptr && !data_channel_lost_) {
      sent = worker_->SendMessage(fast_ep_, kFastRequestAmId, std::move(*frame));
    }
  }
  if (!sent.ok()) {
    absl::MutexLock l(&fast_mu_);
    fast_waiters_.erase(auth.nonce_hex);
    return false;  // nothing left: gRPC carries it
  }
  // The data channel says nothing about a server that died (an endpoint in error mode NONE),
  // so the wait also watches the control connection: when it drops, the reply will not come.
  const absl::Time until = absl::Now() + timeout;
  bool answered = false;
  bool connection_lost = false;
  while (!(answered = waiter->done.WaitForNotificationWithTimeout(
               std::min(until - absl::Now(), kFastWatchInterval)))) {
    if (absl::Now() >= until) break;
    if (control_->GetState(false) != GRPC_CHANNEL_READY) {
      connection_lost = true;
      break;
    }
  }
  {
    absl::MutexLock l(&fast_mu_);
    fast_waiters_.erase(auth.nonce_hex);
  }
  *reply = RawReply();
  if (!answered || waiter->lost) {
    // AOBJ-DAT-169: no reply is an unknown outcome, as a gRPC call that ends without one.
    reply->grpc_status =
        waiter->lost ? grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                    "the data channel failed before the fast-path reply (the "
                                    "server's worker went away, or the session was closed)")
        : connection_lost
            ? grpc::Status(grpc::StatusCode::UNAVAILABLE,
                           "the connection to the server dropped before the fast-path reply")
            : grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                           "no fast-path reply before the deadline");
    reply->status =
        MakeError(waiter->lost ? ErrorCode::kDataChannelUnavailable : ErrorCode::kInternal,
                  absl::StrCat(reply->grpc_status.error_message(), "; the outcome is unknown"));
    return true;
  }
  FastReply& r = waiter->reply;
  if (!r.error) {
    reply->body = std::move(r.body);
    return true;
  }
  aobj::v1::Error error;
  if (!error.ParseFromString(r.body) || error.code() == aobj::v1::ERROR_CODE_UNSPECIFIED) {
    reply->grpc_status = grpc::Status(grpc::StatusCode::INTERNAL, "malformed fast-path error");
    reply->status = MakeError(ErrorCode::kInternal, "the server sent a malformed error reply");
    return true;
  }
  reply->grpc_status = grpc::Status(grpc::StatusCode::UNKNOWN, error.message());
  reply->status = MakeError(static_cast<ErrorCode>(error.code()), error.message());
  reply->error = std::move(error);
  reply->error_trailers = 1;
  reply->error_trailer = r.body;
  return true;
}

void ClientImpl::OnFastReply(absl::string_view message) {
  auto parsed = ParseFastReply(message);
  if (!parsed.ok()) return;
  absl::MutexLock l(&fast_mu_);
  auto it = fast_waiters_.find(parsed->nonce_hex);
  if (it == fast_waiters_.end() || it->second->done.HasBeenNotified()) return;
  it->second->reply = std::move(*parsed);
  it->second->done.Notify();
}

void ClientImpl::FailFastWaiters() {
  absl::MutexLock l(&fast_mu_);
  for (auto& [nonce, w] : fast_waiters_) {
    if (w->done.HasBeenNotified()) continue;
    w->lost = true;
    w->done.Notify();
  }
}

}  // namespace aobj::client_internal
