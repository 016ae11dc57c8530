// SessionChannel (session_channel.h): opening, renewing and closing the session, and every
// signed call on it.
#include "client/session_channel.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "control/tls.h"
#include "wire/convert.h"
#include "wire/crypto.h"
#include "wire/error_detail.h"
#include "wire/protocol.h"
#include "wire/status_macros.h"

namespace aobj::client_internal {

namespace pb = aobj::v1;

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

}  // namespace

bool BusyRetryPolicy::Retries(Method method, const RawReply& reply) {
  const ErrorCode code = ErrorCodeOf(reply.status);
  if (code == ErrorCode::kSlowDown || code == ErrorCode::kTooManyTransfers) return true;
  // A connection the server's transport refused or closed (GOAWAY under memory pressure:
  // UNAVAILABLE, no AOBJ error) leaves the outcome unknown; only a request that changes
  // nothing is sent again.
  return reply.error.code() == aobj::v1::ERROR_CODE_UNSPECIFIED &&
         reply.grpc_status.error_code() == grpc::StatusCode::UNAVAILABLE &&
         RepeatableWhenUnknown(method);
}

absl::Duration BusyRetryPolicy::Pause(int attempt) {
  thread_local std::minstd_rand rng{std::random_device{}()};
  const int64_t ceiling_us =
      std::min<int64_t>(kFirstPauseUs << std::min(attempt, kMaxDoublings), kMaxPauseUs);
  std::uniform_int_distribution<int64_t> pick(ceiling_us / 2, ceiling_us);
  return absl::Microseconds(pick(rng));
}

SessionChannel::~SessionChannel() {
  Close(CallContext()).IgnoreError();
  StopRenewer();
  // The worker's progress thread calls back into this object (fast replies, the fast
  // endpoint's failure), so it stops here, before the members those callbacks use are gone.
  std::unique_ptr<UcxWorker> worker;
  {
    absl::MutexLock l(&mu_);
    worker = std::move(worker_);
  }
  worker.reset();
}

bool SessionChannel::HasCapability(uint32_t c) const {
  return std::find(info_.capabilities.begin(), info_.capabilities.end(), c) !=
         info_.capabilities.end();
}

absl::Status SessionChannel::Open(const ClientOptions& options) {
  options_ = options;
  if (options_.access_key_id.empty()) {
    return MakeError(ErrorCode::kMissingAuthentication, "no access key id configured");
  }
  signer_ = std::make_unique<RequestSigner>(options_.access_key_id, options_.secret);
  auto ctx = UcxContext::Create(options_.data_channel);
  if (!ctx.ok()) return ctx.status();
  context_ = std::move(*ctx);
  auto worker = UcxWorker::Create(*context_, "client");
  if (!worker.ok()) return worker.status();
  worker_ = std::move(*worker);

  auto channel = MakeChannel(options_.endpoint, options_.tls);
  if (!channel.ok()) return channel.status();
  control_ = *channel;
  rpc_ = std::make_unique<RawChannel>(std::move(*channel));

  pb::OpenSessionRequest req;
  // AOBJ-SES-034: the versions this client implements within the configured bounds, as a list
  // with a grease value among them (AOBJ-EXT-011); the range too, for servers that predate the
  // list.
  std::vector<uint32_t> versions;
  for (uint32_t v = kProtocolVersion; v <= kProtocolVersion; ++v) {
    if (v >= options_.min_version && v <= options_.max_version) versions.push_back(v);
  }
  if (versions.empty()) {
    return MakeError(ErrorCode::kUnsupportedVersion,
                     absl::StrCat("this client implements version ", kProtocolVersion,
                                  " only, outside the configured [", options_.min_version, ", ",
                                  options_.max_version, "]"));
  }
  req.mutable_versions()->set_min(versions.front());
  req.mutable_versions()->set_max(versions.back());
  for (uint32_t v : versions) req.add_offered_versions(v);
  if (options_.grease) req.add_offered_versions(RandomGreaseValue());
  // AOBJ-DAT-022: CRC32C always offered. AOBJ-EXT-005: every capability the client may use is
  // offered here, so HasCapability (the server's answer) never enables one it did not offer.
  for (uint32_t c : {kCapInline, kCapCrc32c, kCapCrc64Nvme, kCapMultiDescriptor, kCapCancel}) {
    req.add_capabilities(c);
  }
  if (options_.batch_get) req.add_capabilities(kCapBatchGet);
  if (options_.batch_put) req.add_capabilities(kCapBatchPut);
  if (options_.opaque_etags) {
    req.add_capabilities(kCapOpaqueEtag);
    req.add_capabilities(kCapOpaquePartEtag);
  }
  if (options_.fast_path) req.add_capabilities(kCapFastPath);
  // AOBJ-EXT-002, AOBJ-EXT-017: a grease capability with grease parameters, and a grease field.
  if (options_.grease) {
    const uint32_t grease = RandomGreaseValue();
    req.add_capabilities(grease);
    pb::CapabilityParams* p = req.add_capability_params();
    p->set_capability(grease);
    p->set_params(RandomGreaseOctets());
    req.GetReflection()->MutableUnknownFields(&req)->AddVarint(
        RandomGreaseField(), static_cast<uint8_t>(RandomBytes(1)[0]));
  }
  req.set_worker_address(worker_->address());
  // AOBJ-SES-039: this client implements the UCX binding only, whose address is worker_address;
  // a grease binding with a few random octets beside it (AOBJ-EXT-014).
  req.add_bindings()->set_binding(kBindingUcx);
  std::vector<uint32_t> offered_bindings = {kBindingUcx};
  if (options_.grease) {
    auto* g = req.add_bindings();
    g->set_binding(RandomGreaseValue());
    g->set_endpoint_address(RandomBytes(8));
  }
  LimitsToProto(options_.requested_limits, req.mutable_requested_limits());
  req.set_client_name(options_.client_name);
  req.set_require_hardware_protection(options_.require_hardware_protection);
  pb::OpenSessionResponse resp;
  if (absl::Status s = Call(CallContext(), Method::kOpenSession, req, &resp); !s.ok()) return s;
  if (resp.session_id().size() != kSessionIdBytes) {
    return MakeError(ErrorCode::kInternal, "server sent a malformed session id");
  }
  info_.session_id = HexEncode(resp.session_id());
  // AOBJ-SES-037: only what was offered; a session answered otherwise is closed unused.
  absl::Status negotiated = CheckNegotiated(
      versions, std::vector<uint32_t>(req.capabilities().begin(), req.capabilities().end()),
      resp.version(),
      std::vector<uint32_t>(resp.capabilities().begin(), resp.capabilities().end()));
  if (negotiated.ok()) negotiated = CheckSelectedBinding(offered_bindings, resp.binding());
  if (!negotiated.ok()) {
    pb::CloseSessionResponse closed;
    Call(CallContext(), Method::kCloseSession, pb::CloseSessionRequest(), &closed).IgnoreError();
    return negotiated;
  }
  info_.version = resp.version();
  info_.capabilities.clear();
  for (uint32_t c : resp.capabilities()) {
    if (!IsGrease(c)) info_.capabilities.push_back(c);  // AOBJ-EXT-001
  }
  info_.limits = AnnouncedLimitsFromProto(resp.limits());
  info_.protection = static_cast<MemoryProtection>(resp.memory_protection());
  info_.lease_ms = static_cast<int64_t>(resp.lease_ms());
  info_.server_name = resp.server_name();
  // AOBJ-SES-033: a hint; entries out of bounds are dropped, not followed.
  for (const std::string& g : resp.gateways()) {
    if (!g.empty() && g.size() <= kMaxGatewayAddressBytes && info_.gateways.size() < kMaxGateways) {
      info_.gateways.push_back(g);
    }
  }
  // A server that sends no challenges predates endpoint binding.
  if (resp.endpoint_challenges() > 0) {
    AOBJ_RETURN_IF_ERROR(ConfirmEndpoint(resp.session_id(), resp.endpoint_challenges()));
  }
  if (HasCapability(kCapFastPath) && !resp.fast_path_address().empty() &&
      resp.fast_path_address().size() <= kMaxWorkerAddressBytes) {
    ConnectFastPath(resp.fast_path_address());
  }
  {
    absl::MutexLock lock(&mu_);
    open_ = true;
  }
  renewer_ = std::thread([this] { RenewLoop(); });
  return absl::OkStatus();
}

absl::Status SessionChannel::ConfirmEndpoint(const std::string& session_id, uint32_t challenges) {
  // AOBJ-SES-026: prove that this worker is the session's, over the challenges the server sent
  // it; until then the server moves no byte by RMA (AOBJ-SES-027).
  auto received = worker_->AwaitChallenges(
      session_id, challenges,
      absl::Milliseconds(std::clamp<int64_t>(options_.timeout_ms, 1000, 10000)));
  absl::Status s = received.status();
  if (s.ok()) {
    pb::ConfirmEndpointRequest confirm;
    confirm.set_proof(signer_->EndpointProof(session_id, *received));
    pb::ConfirmEndpointResponse ack;
    s = Call(CallContext(), Method::kConfirmEndpoint, confirm, &ack);
  }
  if (!s.ok()) {
    pb::CloseSessionResponse closed;
    Call(CallContext(), Method::kCloseSession, pb::CloseSessionRequest(), &closed).IgnoreError();
  }
  return s;
}

void SessionChannel::ConnectFastPath(const std::string& address) {
  // AOBJ-DAT-163, AOBJ-DAT-164: fast requests only after the endpoint is confirmed, to the
  // address the server gave.
  absl::Status s =
      worker_->SetMessageHandler(kFastReplyAmId, [this](absl::string_view m) { OnFastReply(m); });
  if (!s.ok()) return;
  // A server side that goes away fails the endpoint: the requests waiting for a reply end at
  // once, and later ones go by gRPC.
  auto ep = worker_->ConnectForMessages(address, [this](const absl::Status& why) {
    fast_closed_.store(true);
    FailFastWaiters();
    (void)why;
  });
  if (ep.ok()) {
    fast_ep_ = *ep;
    info_.fast_path_address = address;
  }
}

void SessionChannel::SendCancel(const std::string& nonce) {
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

absl::Status SessionChannel::AcquireCredit(const CallContext& ctx) {
  const absl::Time deadline =
      std::min(absl::Now() + absl::Milliseconds(options_.timeout_ms), ctx.deadline);
  absl::MutexLock l(&credit_mu_);
  auto credit = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(credit_mu_) {
    return outstanding_ < CreditsFromReply(granted_, info_.limits.max_in_flight);
  };
  // In slices, so that an asynchronous operation cancelled while it waits gives up at once
  // (a cancellation does not touch credit_mu_, so nothing else would wake this wait).
  while (!credit_mu_.AwaitWithDeadline(absl::Condition(&credit),
                                       std::min(deadline, absl::Now() + kCreditWaitSlice))) {
    if (ctx.op != nullptr && ctx.op->CancelRequested()) {
      return MakeError(ErrorCode::kCancelled, "cancelled while waiting for a credit; nothing sent");
    }
    if (absl::Now() >= deadline) {
      return MakeError(
          ErrorCode::kDeadlineExceeded,
          absl::StrCat("the deadline passed while ", outstanding_,
                       " data requests held the session's credits (the server granted ",
                       CreditsFromReply(granted_, info_.limits.max_in_flight),
                       "; AOBJ-FLO-010); nothing was sent"));
    }
  }
  ++outstanding_;
  return absl::OkStatus();
}

void SessionChannel::ReleaseCredit(const google::protobuf::Message* reply) {
  absl::MutexLock l(&credit_mu_);
  --outstanding_;
  if (reply == nullptr) return;
  // AOBJ-FLO-010: the latest successful data reply's grant holds until the next one; the field
  // is number 15 in each data reply.
  const google::protobuf::FieldDescriptor* field =
      reply->GetDescriptor()->FindFieldByNumber(kCreditsField);
  if (field != nullptr && field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_UINT32) {
    granted_ = reply->GetReflection()->GetUInt32(*reply, field);
  }
}

absl::Status SessionChannel::DataCall(const CallContext& ctx, Method method,
                                      const google::protobuf::Message& req,
                                      google::protobuf::Message* resp, bool spin) {
  // AOBJ-FLO-010. The wait is bounded by the operation's deadline and ClientOptions::timeout_ms;
  // the call then gets its own timeout_ms from when it is sent (a call cut short by time spent
  // waiting would more often end without a reply, which costs the data channel, AOBJ-MEM-014).
  AOBJ_RETURN_IF_ERROR(AcquireCredit(ctx));
  std::shared_ptr<std::atomic<int>> spinning;
  {
    absl::MutexLock l(&mu_);
    if (data_channel_lost_) {
      ReleaseCredit(nullptr);
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
  ReleaseCredit(s.ok() ? resp : nullptr);
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

absl::Status SessionChannel::Call(const CallContext& ctx, Method method,
                                  const google::protobuf::Message& req,
                                  google::protobuf::Message* resp, bool* no_reply,
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
  RequestAuth auth;
  for (int attempt = 0;; ++attempt) {
    const absl::Time sent = absl::Now();
    // AOBJ-ERR-007: every attempt is a new request, with its own nonce and timestamp.
    auth = signer_->Sign(MethodPath(method), session, body, sent);
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
    if (reply.status.ok() || attempt >= options_.busy_retries ||
        !BusyRetryPolicy::Retries(method, reply)) {
      break;
    }
    // AOBJ-FLO-003: the server did nothing; wait a randomized, doubling pause, and never less
    // than the server's hint, taken up to a minute (AOBJ-FLO-007), unless the deadline would
    // pass first.
    const absl::Duration pause = std::max(
        BusyRetryPolicy::Pause(attempt),
        absl::Milliseconds(std::min<int64_t>(reply.error.retry_after_ms(), kMaxRetryAfterMs)));
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
  // AOBJ-AUTH-021: nothing of a negotiation is used before its signature is checked.
  if (method == Method::kOpenSession) {
    AOBJ_RETURN_IF_ERROR(
        signer_->VerifyOpenSessionResponse(auth, reply.body, reply.response_signature));
  }
  if (!resp->ParseFromString(reply.body)) {
    return MakeError(ErrorCode::kInternal,
                     absl::StrCat("malformed ", resp->GetTypeName(), " from the server"));
  }
  return absl::OkStatus();
}

bool SessionChannel::FastCall(Method method, const std::string& body, const RequestAuth& auth,
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
  bool alone = false;  // no other fast request of this client is waiting
  {
    absl::MutexLock l(&fast_mu_);
    fast_waiters_[auth.nonce_hex] = waiter;
    alone = fast_waiters_.size() == 1;
  }
  absl::Status sent = MakeError(ErrorCode::kDataChannelUnavailable, "no data channel");
  // A request alone receives its reply on this thread (UcxWorker::DriveTicket: one wake-up less
  // each way); with others waiting, the progress thread delivers every reply, which keeps many
  // in flight cheaper than leaders taking turns. The ticket is taken while worker_ is known
  // alive; the worker's destruction waits for it.
  UcxWorker::DriveTicket driver;
  {
    absl::MutexLock l(&mu_);
    if (worker_ != nullptr && !data_channel_lost_) {
      sent = worker_->SendMessage(fast_ep_, kFastRequestAmId, std::move(*frame));
      if (sent.ok() && alone) driver = worker_->EnterDrive();
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
  const auto replied = [&waiter] { return waiter->done.HasBeenNotified(); };
  for (;;) {
    const absl::Time slice = std::min(until, absl::Now() + kFastWatchInterval);
    if ((answered = driver.Drive(replied, slice) ||
                    waiter->done.WaitForNotificationWithTimeout(slice - absl::Now()))) {
      break;
    }
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
    // As the same failure on gRPC would read (a control-channel failure, which callers such as
    // aobj::SessionLost recognise), except a failed data channel, which has its own code.
    reply->status = waiter->lost ? MakeError(ErrorCode::kDataChannelUnavailable,
                                             absl::StrCat(reply->grpc_status.error_message(),
                                                          "; the outcome is unknown"))
                                 : FromGrpcStatus(reply->grpc_status, {}, nullptr);
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

void SessionChannel::OnFastReply(absl::string_view message) {
  auto parsed = ParseFastReply(message);
  if (!parsed.ok()) return;
  absl::MutexLock l(&fast_mu_);
  auto it = fast_waiters_.find(parsed->nonce_hex);
  if (it == fast_waiters_.end() || it->second->done.HasBeenNotified()) return;
  it->second->reply = std::move(*parsed);
  it->second->done.Notify();
}

void SessionChannel::FailFastWaiters() {
  absl::MutexLock l(&fast_mu_);
  for (auto& [nonce, w] : fast_waiters_) {
    if (w->done.HasBeenNotified()) continue;
    w->lost = true;
    w->done.Notify();
  }
}

absl::Status SessionChannel::Renew(const CallContext& ctx) {
  pb::RenewSessionRequest req;
  pb::RenewSessionResponse resp;
  return Call(ctx, Method::kRenewSession, req, &resp);
}

absl::Status SessionChannel::Close(const CallContext& ctx) {
  {
    absl::MutexLock l(&mu_);
    if (!open_) return absl::OkStatus();
    open_ = false;
  }
  StopRenewer();
  absl::Status closed = absl::OkStatus();
  if (session_gone_.load() == 0) {  // AOBJ-SES-022: otherwise nothing to close
    pb::CloseSessionRequest req;
    pb::CloseSessionResponse resp;
    closed = Call(ctx, Method::kCloseSession, req, &resp);
  }
  // Spec 8.9: the server forgets the session's endpoint once its transfers end, and drops fast
  // requests for it after that; from now on every request goes by gRPC (and learns that the
  // session is gone), and those still waiting for a fast reply end now.
  fast_closed_.store(true);
  FailFastWaiters();
  return closed;
}

void SessionChannel::RenewLoop() {
  const absl::Duration period = absl::Milliseconds(std::max<int64_t>(info_.lease_ms / 3, 100));
  absl::MutexLock l(&mu_);
  while (open_) {
    if (mu_.AwaitWithTimeout(absl::Condition(
                                 +[](bool* open) { return !*open; }, &open_),
                             period)) {
      break;
    }
    mu_.Unlock();
    const absl::Status renewed = Renew(CallContext());
    mu_.Lock();
    // AOBJ-SES-022: a session the server no longer knows is not renewed again; other failures
    // (a slow server) surface on the next operation and renewal goes on.
    const ErrorCode code = ErrorCodeOf(renewed);
    if (code == ErrorCode::kSessionExpired || code == ErrorCode::kNoSuchSession) break;
  }
}

void SessionChannel::StopRenewer() {
  if (renewer_.joinable() && renewer_.get_id() != std::this_thread::get_id()) renewer_.join();
}
}  // namespace aobj::client_internal
