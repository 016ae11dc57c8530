#include "server/handler.h"

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "google/protobuf/unknown_field_set.h"
#include "server/handler_util.h"
#include "server/staged_transfer.h"
#include "wire/checksum.h"
#include "wire/conditions.h"
#include "wire/crypto.h"
#include "wire/descriptor.h"
#include "wire/error_detail.h"
#include "wire/names.h"
#include "wire/printable.h"
#include "wire/range.h"
#include "wire/signing.h"

namespace aobj {
namespace {

const char* ProtectionName(Protection p) {
  return p == Protection::kHardware ? "hardware" : "emulated";
}

}  // namespace

RequestHandler::RequestHandler(HandlerConfig config, ObjectStore* store, DataChannel* channel,
                               Authenticator* auth, SessionTable* sessions,
                               MultipartManager* multipart, BucketAuthorizer* authz)
    : config_(std::move(config)),
      store_(store),
      channel_(channel),
      auth_(auth),
      sessions_(sessions),
      multipart_(multipart),
      authz_(authz),
      staging_(config_.staging_bytes),
      list_token_key_(config_.list_token_key.empty() ? RandomBytes(32) : config_.list_token_key) {}

// A peer-supplied token made safe for a log line: printable, no spaces or quotes, bounded.
static std::string LogToken(const std::string& s) {
  if (s.empty()) return "-";
  std::string out = s.substr(0, 128);
  for (char& c : out) {
    if (c <= ' ' || c > '~' || c == '"') c = '?';
  }
  return out;
}

// Peer-supplied text for a quoted log field: printable ASCII, a quote escaped too,
// so that it can neither end its field nor its line (tenth hostile probe F4: a client name with
// a newline forged a log line of its own).
static std::string LogQuoted(absl::string_view s) {
  std::string out;
  for (char c : PrintableAscii(s)) {
    if (c == '"') {
      out += "\\x22";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

absl::Status RequestHandler::CheckKey(absl::string_view key) const {
  AOBJ_RETURN_IF_ERROR(ValidateObjectKey(key));
  // AOBJ-OBJ-159: a configured limit below S3's 1024 octets.
  if (key.size() > config_.max_key_bytes) {
    return MakeError(ErrorCode::kKeyTooLong,
                     absl::StrCat("object key is ", key.size(), " bytes; this server's limit is ",
                                  config_.max_key_bytes));
  }
  return absl::OkStatus();
}

void RequestHandler::Log(const std::string& line) {
  if (config_.log) config_.log(line);
}

absl::StatusOr<std::string> RequestHandler::Handle(Method method, const RequestAuth& auth,
                                                   absl::string_view body, absl::Time now,
                                                   aobj::v1::VersionRange* supported,
                                                   const CallControl* call) {
  counters_.requests.fetch_add(1, std::memory_order_relaxed);
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> result = Dispatch(method, auth, body, now, call);
  counters_.methods.Record(method, ErrorCodeOf(result.status()), absl::Now() - start);
  if (!result.ok()) {
    if (ErrorCodeOf(result.status()) == ErrorCode::kUnsupportedVersion && supported != nullptr) {
      supported->set_min(config_.min_version);
      supported->set_max(config_.max_version);
    }
    RecordFailure(method, auth, result.status());
    if (config_.grease_errors_percent > 0) result = GreaseError(result.status());
  }
  return result;
}

absl::Status RequestHandler::GreaseError(absl::Status error) const {
  const ErrorCode code = ErrorCodeOf(error);
  const ErrorInfo info = GetErrorInfo(code);
  // AOBJ-EXT-019: never a retryable code, and never the invariants' two codes.
  if (info.retryable || code == ErrorCode::kUnsupportedVersion ||
      code == ErrorCode::kNegotiationFailed) {
    return error;
  }
  const std::string r = RandomBytes(2);
  const uint32_t draw = (static_cast<uint8_t>(r[0]) << 8) | static_cast<uint8_t>(r[1]);
  if (draw % 10000 >= config_.grease_errors_percent * 100) return error;
  return MakeError(static_cast<ErrorCode>(RandomGreaseValue()),
                   absl::StrCat("grease error code (--grease-errors) in place of ",
                                std::string(info.name), ": ", error.message()));
}

bool RequestHandler::AnswersWithoutWaiting(Method method, const SessionState& s,
                                           absl::string_view body) {
  if (!store_->AnswersFromMemory()) return false;
  switch (method) {
    case Method::kHeadObject:
      return true;
    case Method::kPutObject: {
      aobj::v1::PutObjectRequest req;
      if (!req.ParseFromArray(body.data(), static_cast<int>(body.size())) ||
          !req.source().empty() || req.size() > kAnsweredHereBytes) {
        return false;
      }
      // Nor over a large object: the version it replaces may be released on this thread (a
      // large buffer unmapped), which would hold up the RMA of every session it serves.
      auto info = store_->Head(req.bucket(), req.key());
      return !info.ok() || info->size <= kAnsweredHereBytes;
    }
    case Method::kGetObject: {
      aobj::v1::GetObjectRequest req;
      if (!req.ParseFromArray(body.data(), static_cast<int>(body.size())) || !req.accept_inline() ||
          !s.HasCapability(kCapInline)) {
        return false;
      }
      // Only where its size goes: the answer (whatever it is) comes from Handle, after the
      // signature (AOBJ-AUTH-009).
      auto info = store_->Head(req.bucket(), req.key());
      return !info.ok() ||
             info->size <= std::min<uint64_t>(s.limits.inline_threshold, kAnsweredHereBytes);
    }
    default:
      return false;
  }
}

absl::Status RequestHandler::Refuse(Method method, const RequestAuth& auth, absl::Status error) {
  counters_.requests.fetch_add(1, std::memory_order_relaxed);
  counters_.methods.Record(method, ErrorCodeOf(error), absl::ZeroDuration());
  RecordFailure(method, auth, error);
  return error;
}

void RequestHandler::FlushLogSummary() {
  uint64_t suppressed = 0;
  std::vector<std::pair<std::string, uint64_t>> by_key;
  {
    absl::MutexLock l(&log_mu_);
    const absl::Time now = absl::Now();
    if (now - log_window_start_ < absl::Seconds(1)) return;
    log_window_start_ = now;
    log_window_lines_ = 0;
    suppressed = log_suppressed_;
    log_suppressed_ = 0;
    for (const auto& [key, budget] : key_log_) {
      if (budget.suppressed > 0) by_key.emplace_back(key, budget.suppressed);
    }
    key_log_.clear();  // a new window for every key
  }
  if (suppressed > 0) {
    Log(absl::StrCat("event=request_failed_suppressed count=", suppressed,
                     " reason=\"failures before authentication above ",
                     kUnverifiedLogLinesPerSecond, " a second\""));
  }
  for (const auto& [key, n] : by_key) {
    Log(absl::StrCat("event=request_failed_suppressed count=", n, " access_key=", key,
                     " reason=\"failures and cancellations of one access key above ",
                     kKeyLogLinesPerSecond, " a second\""));
  }
}

bool RequestHandler::KeyLogLine(const std::string& access_key_id) {
  if (!config_.log) return false;
  const std::string key = LogToken(access_key_id);
  absl::MutexLock l(&log_mu_);
  auto it = key_log_.find(key);
  if (it == key_log_.end()) {
    // An access key here may still be forged (a failure the signature check did not reach yet):
    // the map is bounded, and keys beyond it share one budget.
    it = key_log_.size() < kLogKeys ? key_log_.try_emplace(key).first
                                    : key_log_.try_emplace("(other keys)").first;
  }
  if (it->second.lines >= kKeyLogLinesPerSecond) {
    ++it->second.suppressed;
    return false;
  }
  ++it->second.lines;
  return true;
}

void RequestHandler::RecordFailure(Method method, const RequestAuth& auth,
                                   const absl::Status& error) {
  counters_.errors.fetch_add(1, std::memory_order_relaxed);
  if (!config_.log) return;
  // AOBJ-OPS-010: failures before the signature is verified (anyone can cause them, as fast as
  // they can send) are logged at most kUnverifiedLogLinesPerSecond a second, and the failures of
  // one access key after it at most kKeyLogLinesPerSecond a second; the rest are counted and
  // reported in one line (per key) when the window ends. Counters see every one.
  const ErrorCode code = ErrorCodeOf(error);
  const bool unverified = code == ErrorCode::kMissingAuthentication ||
                          code == ErrorCode::kInvalidAccessKeyId ||
                          code == ErrorCode::kSignatureDoesNotMatch ||
                          code == ErrorCode::kSlowDown;
  const std::string key = LogToken(auth.access_key_id);
  FlushLogSummary();
  {
    absl::MutexLock l(&log_mu_);
    if (unverified) {
      if (log_window_lines_ >= kUnverifiedLogLinesPerSecond) {
        ++log_suppressed_;
        return;
      }
      ++log_window_lines_;
    }
  }
  if (!unverified && !KeyLogLine(auth.access_key_id)) return;
  // AOBJ-OPS-003: one structured event per failed request.
  Log(absl::StrCat("event=request_failed method=", MethodName(method),
                   " session=", auth.session_hex.empty() ? "-" : auth.session_hex,
                   // A key whose signature was not verified is only claimed (eleventh hostile
                   // probe N4: anyone's failures were logged as the claimed key's).
                   unverified ? " claimed_access_key=" : " access_key=", key,
                   " code=", GetErrorInfo(code).name.data(), " message=\"",
                   LogQuoted(error.message()), "\""));
}

absl::Status RequestHandler::Authorize(const SessionState& s, const BucketNeeds& needs) {
  if (authz_ == nullptr || authz_->open()) return absl::OkStatus();
  for (const BucketNeed& need : needs) {
    AOBJ_RETURN_IF_ERROR(authz_->Check(s.access_key_id, need.bucket, need.access));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> RequestHandler::Dispatch(Method method, const RequestAuth& auth,
                                                     absl::string_view body, absl::Time now,
                                                     const CallControl* call) {
  // AOBJ-AUTH-009: authentication first; a failing request has no other effect.
  AOBJ_RETURN_IF_ERROR(
      auth_->Verify(MethodPath(method), auth, body, method != Method::kOpenSession, now));
  if (call != nullptr) call->signature_verified = true;
  if (method == Method::kOpenSession) return OpenSession(auth, body, now);

  // AOBJ-SES-001 / AOBJ-AUTH-010: the session named in the metadata, owned by the signer.
  auto session = sessions_->Use(auth.session_hex, auth.access_key_id, now);
  if (!session.ok()) return session.status();
  const SessionState& s = **session;

  // AOBJ-SEC-008: each handler reads its request through Admit, which authorizes every bucket
  // the typed request names before anything else is done with it.

  switch (method) {
    case Method::kRenewSession: {
      aobj::v1::RenewSessionRequest req;
      AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
      // AOBJ-DAT-156, AOBJ-DAT-161: a cancellation rides on a renewal of the same session
      // (whose signature and session binding were verified above): in the signed body's
      // `cancel` entries, or in the older `aobj-cancel` metadata entry. It reaches only this
      // session's requests. Every entry is checked before any is applied.
      std::vector<std::string> cancels(req.cancel().begin(), req.cancel().end());
      if (cancels.size() > kMaxCancelEntries) {
        return MakeError(ErrorCode::kInvalidArgument,
                         absl::StrCat("RenewSession names ", cancels.size(),
                                      " requests to cancel; at most ", kMaxCancelEntries));
      }
      if (call != nullptr && !call->cancel_nonce.empty()) cancels.push_back(call->cancel_nonce);
      for (const std::string& nonce : cancels) {
        std::string raw;
        if (nonce.size() != 2 * kNonceBytes || !HexDecode(nonce, &raw)) {
          return MakeError(ErrorCode::kInvalidArgument,
                           absl::StrCat("a cancel entry must be ", 2 * kNonceBytes,
                                        " lower-case hex characters (a request's aobj-nonce)"));
        }
      }
      // Logged within the key's budget of lines (AOBJ-OPS-010): up to 16 entries a request.
      if (config_.log) FlushLogSummary();
      for (const std::string& nonce : cancels) {
        const bool running = in_flight_.Cancel(s.id_hex, nonce);
        if (!KeyLogLine(s.access_key_id)) continue;
        Log(absl::StrCat("event=request_cancel session=", s.id_hex, " nonce=", nonce,
                         " running=", running ? "true" : "false"));
      }
      aobj::v1::RenewSessionResponse resp;
      resp.set_lease_ms(absl::ToInt64Milliseconds(sessions_->lease()));
      return Serialize(resp);
    }
    case Method::kCloseSession: {
      aobj::v1::CloseSessionRequest req;
      AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
      auto endpoints = sessions_->Close(s.id_hex, s.access_key_id);
      if (!endpoints.ok()) return endpoints.status();
      for (uint64_t ep : *endpoints) channel_->Disconnect(ep);  // AOBJ-SES-010
      if (KeyLogLine(s.access_key_id)) {  // within the key's budget (AOBJ-OPS-010)
        Log(absl::StrCat("event=session_closed session=", s.id_hex));
      }
      return Serialize(aobj::v1::CloseSessionResponse());
    }
    case Method::kConfirmEndpoint: {
      aobj::v1::ConfirmEndpointRequest req;
      AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
      if (req.proof().size() != s.endpoint_proof.size()) {  // AOBJ-SES-031
        return MakeError(ErrorCode::kInvalidArgument,
                         absl::StrCat("proof is ", req.proof().size(), " octets; it must be ",
                                      s.endpoint_proof.size()));
      }
      // AOBJ-SES-026: a wrong proof changes nothing; the endpoint stays unconfirmed.
      if (!ConstantTimeEquals(req.proof(), s.endpoint_proof)) {
        if (KeyLogLine(s.access_key_id)) {
          Log(absl::StrCat("event=endpoint_refused session=", s.id_hex));
        }
        return MakeError(ErrorCode::kAccessDenied,
                         "the endpoint proof does not match the challenges sent to the "
                         "session's worker address (AOBJ-SES-026)");
      }
      AOBJ_RETURN_IF_ERROR(channel_->Bind(s.endpoint));
      if (KeyLogLine(s.access_key_id)) {
        Log(absl::StrCat("event=endpoint_confirmed session=", s.id_hex));
      }
      return Serialize(aobj::v1::ConfirmEndpointResponse());
    }
    case Method::kCreateBucket: {
      aobj::v1::CreateBucketRequest req;
      AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
      AOBJ_RETURN_IF_ERROR(ValidateBucketName(req.bucket()));
      absl::MutexLock l(&buckets_mu_);
      if (authz_ == nullptr || authz_->open() || store_->HeadBucket(req.bucket()).ok()) {
        AOBJ_RETURN_IF_ERROR(store_->CreateBucket(req.bucket()));  // or its "exists" error
        return Serialize(aobj::v1::CreateBucketResponse());
      }
      // AOBJ-SEC-009, AOBJ-SEC-016: the creator owns the bucket, recorded before the bucket
      // exists, so that no failure or crash leaves a bucket without its owner.
      AOBJ_RETURN_IF_ERROR(authz_->RecordOwner(req.bucket(), s.access_key_id));
      if (absl::Status created = store_->CreateBucket(req.bucket()); !created.ok()) {
        authz_->ForgetOwner(req.bucket()).IgnoreError();  // else dropped at the next start
        return created;
      }
      return Serialize(aobj::v1::CreateBucketResponse());
    }
    case Method::kDeleteBucket: {
      aobj::v1::DeleteBucketRequest req;
      AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
      AOBJ_RETURN_IF_ERROR(ValidateBucketName(req.bucket()));
      absl::MutexLock l(&buckets_mu_);
      // AOBJ-OBJ-232: through the multipart manager, which refuses while uploads are in progress.
      AOBJ_RETURN_IF_ERROR(multipart_ != nullptr ? multipart_->DeleteBucket(req.bucket())
                                                 : store_->DeleteBucket(req.bucket()));
      if (authz_ != nullptr) AOBJ_RETURN_IF_ERROR(authz_->ForgetOwner(req.bucket()));
      return Serialize(aobj::v1::DeleteBucketResponse());
    }
    case Method::kHeadBucket: {
      aobj::v1::HeadBucketRequest req;
      AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
      AOBJ_RETURN_IF_ERROR(ValidateBucketName(req.bucket()));
      AOBJ_RETURN_IF_ERROR(store_->HeadBucket(req.bucket()));
      return Serialize(aobj::v1::HeadBucketResponse());
    }
    case Method::kPutObject:
    case Method::kGetObject:
    case Method::kGetObjects:
    case Method::kPutObjects:
    case Method::kUploadPart: {
      // AOBJ-DAT-156: a data request can be cancelled by its nonce while it runs.
      const InFlightRequests::Entry entry = in_flight_.Begin(s.id_hex, auth.nonce_hex);
      ActiveCall active(call, entry.flag());
      absl::StatusOr<std::string> reply =
          method == Method::kPutObject    ? PutObject(s, body, active)
          : method == Method::kGetObject  ? GetObject(s, body, active)
          : method == Method::kGetObjects ? GetObjects(s, body, active)
          : method == Method::kPutObjects ? PutObjects(s, body, active)
                                          : UploadPart(s, body, active);
      // AOBJ-FLO-008, AOBJ-FLO-009: every successful data reply grants credits, computed once
      // the request's own count is released (AOBJ-FLO-005: each handler holds its TransferSlot
      // in a local, gone when it returns).
      if (reply.ok()) {
        const double pressure = config_.pressure ? config_.pressure(s.access_key_id) : 0.0;
        AppendCredits(&*reply, GrantCredits(s.limits.max_in_flight, pressure));
      }
      return reply;
    }
    case Method::kHeadObject:
      return HeadObject(s, body);  // handler_object.cc
    case Method::kListBuckets:
      return ListBuckets(s, body);  // handler_list.cc
    case Method::kListObjectsV2:
      return ListObjectsV2(s, body);  // handler_list.cc
    case Method::kDeleteObjects:
      return DeleteObjects(s, body);  // handler_object.cc
    case Method::kCopyObject:
      return CopyObject(s, body);  // handler_copy.cc
    case Method::kCreateMultipartUpload:
      return CreateMultipartUpload(s, body);
    case Method::kCompleteMultipartUpload:
      return CompleteMultipartUpload(s, body);
    case Method::kAbortMultipartUpload:
      return AbortMultipartUpload(s, body);
    case Method::kListParts:
      return ListParts(s, body);
    case Method::kListMultipartUploads:
      return ListMultipartUploads(s, body);
    case Method::kDeleteObject: {
      aobj::v1::DeleteObjectRequest req;
      AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
      AOBJ_RETURN_IF_ERROR(ValidateBucketName(req.bucket()));
      AOBJ_RETURN_IF_ERROR(CheckKey(req.key()));
      AOBJ_RETURN_IF_ERROR(store_->Delete(req.bucket(), req.key()));  // AOBJ-OBJ-004
      return Serialize(aobj::v1::DeleteObjectResponse());
    }
    default:
      return MakeError(ErrorCode::kInvalidArgument, "unknown method");
  }
}

namespace {

// Descriptors this process may still open (the soft limit less those open); -1 if unknown.
long FreeDescriptors() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return -1;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  long open = -1;  // the directory's own descriptor is listed too
  while (readdir(d) != nullptr) ++open;
  closedir(d);
  open -= 2;  // "." and ".."
  return static_cast<long>(rl.rlim_cur) - open;
}

}  // namespace

absl::StatusOr<std::string> RequestHandler::OpenSession(const RequestAuth& auth,
                                                        absl::string_view body, absl::Time now) {
  aobj::v1::OpenSessionRequest req;
  AOBJ_RETURN_IF_ERROR(Parse(body, &req));
  // AOBJ-EXT-015; every entry is then ignored, since no capability of AOBJ/1 has parameters
  // (AOBJ-EXT-018), and so are grease fields (AOBJ-EXT-016, AOBJ-CTL-004).
  std::vector<CapabilityParamEntry> params;
  for (const auto& e : req.capability_params()) {
    params.push_back({e.capability(), e.params().size()});
  }
  AOBJ_RETURN_IF_ERROR(CheckCapabilityParams(params));
  // AOBJ-SES-036: a retry names the offer that was refused; if this server could have served
  // it, the refusal was not this server's (a downgrade).
  AOBJ_RETURN_IF_ERROR(CheckPreviousOffer(
      std::vector<uint32_t>(req.previous_offer().begin(), req.previous_offer().end()),
      config_.min_version, config_.max_version));
  // AOBJ-SES-035: the list when there is one; AOBJ-SES-002..004: the range otherwise.
  auto version = req.offered_versions().empty()
                     ? SelectVersion(req.versions().min(), req.versions().max(),
                                     config_.min_version, config_.max_version)
                     : SelectOfferedVersion(std::vector<uint32_t>(req.offered_versions().begin(),
                                                                  req.offered_versions().end()),
                                            config_.min_version, config_.max_version);
  if (!version.ok()) return version.status();
  // AOBJ-SES-039, AOBJ-SES-040: the data-channel binding comes before its endpoint address,
  // whose format is the binding's. This server implements UCX (binding 1) only.
  std::vector<BindingOffer> bindings;
  for (const auto& b : req.bindings()) {
    bindings.push_back({b.binding(), b.endpoint_address().size()});
  }
  auto binding = SelectBinding(bindings, {kBindingUcx});
  if (!binding.ok()) return binding.status();
  // AOBJ-SES-011
  if (req.worker_address().empty() || req.worker_address().size() > kMaxWorkerAddressBytes) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("worker_address is ", req.worker_address().size(),
                                  " bytes; it must be 1 to ", kMaxWorkerAddressBytes));
  }
  SessionState state;
  state.access_key_id = auth.access_key_id;
  state.version = *version;
  // AOBJ-SES-005 (unknown and grease capabilities are ignored, AOBJ-EXT-001)
  state.capabilities = IntersectCapabilities(
      std::vector<uint32_t>(req.capabilities().begin(), req.capabilities().end()),
      config_.capabilities);
  // AOBJ-SES-006
  state.limits = EffectiveLimits(config_.limits, RequestedLimitsFromProto(req.requested_limits()));

  // AOBJ-SES-017 (Table 1): past the session limit, refuse before creating an endpoint.
  // AOBJ-SES-021: SLOW_DOWN when full, in total or for the access key.
  // AOBJ-FLO-006: sessions end by lease or close, so a second is the hint.
  if (sessions_->open_sessions() >= config_.max_sessions) {
    return WithRetryAfter(MakeError(ErrorCode::kSlowDown,
                                    absl::StrCat("the server already holds ", config_.max_sessions,
                                                 " sessions; retry later")),
                          absl::Seconds(1));
  }
  // AOBJ-SEC-006: one principal cannot take every session.
  if (sessions_->open_sessions_of(auth.access_key_id) >= config_.max_sessions_per_principal) {
    return WithRetryAfter(
        MakeError(ErrorCode::kSlowDown,
                  absl::StrCat("this access key already holds ", config_.max_sessions_per_principal,
                               " sessions; close some or retry later")),
        absl::Seconds(1));
  }
  // AOBJ-SEC-006 (fifth hostile probe of issue 16, C): each session's endpoint holds a
  // descriptor, so sessions within every count could take the descriptors new connections need.
  if (config_.session_reserve_fds > 0) {
    const long free = FreeDescriptors();
    if (free >= 0 && free < config_.session_reserve_fds) {
      return MakeError(ErrorCode::kSlowDown,
                       absl::StrCat("the server is short of file descriptors (", free,
                                    " free; it keeps ", config_.session_reserve_fds,
                                    " for connections and its store); close sessions or retry "
                                    "later"));
    }
  }
  auto ep = channel_->ConnectFor(req.worker_address(), auth.access_key_id);
  if (!ep.ok()) return ep.status();
  auto protection = channel_->GetProtection(*ep);
  // AOBJ-SES-023: every refusal from here on releases the endpoint; the session is created last.
  if (!protection.ok()) {
    channel_->Disconnect(*ep);
    return protection.status();
  }
  // AOBJ-SES-014
  if (req.require_hardware_protection() && *protection != Protection::kHardware) {
    channel_->Disconnect(*ep);
    return MakeError(ErrorCode::kAccessDenied,
                     "the client requires hardware memory protection; this server's data "
                     "channel is emulated (UCX over TCP or shared memory)");
  }
  state.endpoint = *ep;
  // AOBJ-SES-025: challenges to the worker address by active message; the session's endpoint
  // carries no RMA until ConfirmEndpoint proves the endpoint key over them (AOBJ-SES-026/027).
  state.id_hex = sessions_->NewId();
  std::string raw_id;
  HexDecode(state.id_hex, &raw_id);
  auto challenges = channel_->SendChallenges(*ep, raw_id);
  const std::string* signing_key = auth_->SigningKey(auth.access_key_id);
  if (!challenges.ok() || signing_key == nullptr) {
    channel_->Disconnect(*ep);
    if (!challenges.ok()) return challenges.status();
    return MakeError(ErrorCode::kInternal, "the signer's key vanished");
  }
  state.endpoint_proof =
      EndpointProof(DeriveEndpointKey(*signing_key, raw_id), raw_id, *challenges);
  // AOBJ-DAT-163: FAST_PATH stays negotiated only with an address to send fast requests to.
  std::string fast_address;
  if (state.HasCapability(kCapFastPath)) {
    fast_address = channel_->FastPathAddress(*ep);
    if (fast_address.empty() || fast_address.size() > kMaxWorkerAddressBytes) {
      fast_address.clear();
      std::erase(state.capabilities, static_cast<uint32_t>(kCapFastPath));
    }
  }
  // AOBJ-SES-015: version, capabilities, session id, lease, limits, protection, version range.
  aobj::v1::OpenSessionResponse resp;
  resp.set_fast_path_address(fast_address);
  resp.set_version(state.version);
  resp.set_binding(*binding);  // AOBJ-SES-039; UCX needs no server endpoint address
  for (uint32_t c : state.capabilities) resp.add_capabilities(c);
  // AOBJ-EXT-012, AOBJ-EXT-017: one grease ID among them, with grease parameters, and a grease
  // field, so that clients keep ignoring what they do not know.
  if (config_.grease) {
    const uint32_t grease = RandomGreaseValue();
    resp.add_capabilities(grease);
    aobj::v1::CapabilityParams* p = resp.add_capability_params();
    p->set_capability(grease);
    p->set_params(RandomGreaseOctets());
    resp.GetReflection()->MutableUnknownFields(&resp)->AddLengthDelimited(RandomGreaseField(),
                                                                          RandomGreaseOctets());
  }
  auto* l = resp.mutable_limits();
  LimitsToProto(state.limits, l);
  l->set_data_wait_ms(config_.data_wait_ms);  // AOBJ-OPS-008
  l->set_skew_window_ms(config_.skew_window_ms);  // AOBJ-AUTH-019
  l->set_min_part_size(config_.min_part_size);    // AOBJ-OBJ-235
  l->set_max_key_bytes(static_cast<uint32_t>(config_.max_key_bytes));  // AOBJ-OBJ-255
  l->set_max_list_page(config_.max_list_page);
  l->set_max_part_size(config_.max_part_size);  // AOBJ-OBJ-256
  l->set_max_object_size(config_.max_object_size);
  l->set_durable_commits(store_->DurableCommits());  // AOBJ-OBJ-263
  resp.set_memory_protection(*protection == Protection::kHardware
                                 ? aobj::v1::MEMORY_PROTECTION_HARDWARE
                                 : aobj::v1::MEMORY_PROTECTION_EMULATED);  // AOBJ-SES-013
  resp.set_server_name(config_.server_name);
  if (config_.gateways) {
    for (const std::string& g : config_.gateways()) {  // AOBJ-SES-032
      if (resp.gateways_size() == static_cast<int>(kMaxGateways)) break;
      if (!g.empty() && g.size() <= kMaxGatewayAddressBytes) resp.add_gateways(g);
    }
  }
  resp.mutable_supported_versions()->set_min(config_.min_version);
  resp.mutable_supported_versions()->set_max(config_.max_version);
  resp.set_lease_ms(absl::ToInt64Milliseconds(sessions_->lease()));
  resp.set_endpoint_challenges(
      static_cast<uint32_t>(challenges->size() / kEndpointChallengeBytes));
  const std::string id = sessions_->Create(std::move(state), now);
  std::string raw;
  HexDecode(id, &raw);
  resp.set_session_id(raw);
  // AOBJ-SEC-004, AOBJ-SEC-007: never the worker address, a secret or a signing key.
  if (KeyLogLine(auth.access_key_id)) {  // within the key's budget (AOBJ-OPS-010)
    Log(absl::StrCat("event=session_opened session=", id, " access_key=", auth.access_key_id,
                     " version=", resp.version(), " protection=", ProtectionName(*protection),
                     " client=\"", LogQuoted(req.client_name().substr(0, 64)), "\""));
  }
  return Serialize(resp);
}

absl::StatusOr<std::string> RequestHandler::PutObject(const SessionState& s,
                                                      absl::string_view body,
                                                      const ActiveCall& call) {
  aobj::v1::PutObjectRequest req;
  AOBJ_RETURN_IF_ERROR(Admit(s, body, &req));
  AOBJ_RETURN_IF_ERROR(ValidateBucketName(req.bucket()));
  AOBJ_RETURN_IF_ERROR(CheckKey(req.key()));
  // AOBJ-OBJ-120..123, AOBJ-OBJ-133, AOBJ-OBJ-136 (handler_object.cc)
  auto options = PrepareWrite(req.bucket(), req.key(), req.content_type(), req.user_metadata(),
                              req.preconditions());
  if (!options.ok()) return options.status();
  const BodyRequest upload = BodyRequest::Of(req);
  auto plan = PlanBody(s, upload);
  if (!plan.ok()) return plan.status();
  if (s.HasCapability(kCapOpaqueEtag)) plan->etag = BodyPlan::Etag::kOpaque;  // AOBJ-OBJ-016
  auto slot = sessions_->Admit(s.id_hex);  // AOBJ-SES-012
  if (!slot.ok()) return slot.status();

  // AOBJ-OBJ-134: the store checks the conditions again, atomically with the commit.
  auto writer = store_->BeginPut(req.bucket(), req.key(), req.size(), *options);
  if (!writer.ok()) return writer.status();
  auto got = ReceiveBody(s, upload, *plan, writer->get(), call);
  if (!got.ok()) return got.status();
  ObjectInfo info;
  info.size = req.size();
  info.etag = got->etag;  // AOBJ-OBJ-005, AOBJ-OBJ-016
  info.content_type = req.content_type();
  info.crc32c = got->crc32c;
  auto committed = (*writer)->Commit(info);  // AOBJ-OBJ-010
  if (!committed.ok()) return committed.status();
  counters_.bytes_in.fetch_add(req.size(), std::memory_order_relaxed);

  aobj::v1::PutObjectResponse resp;
  resp.set_bytes_transferred(req.size());  // AOBJ-DAT-003
  resp.set_checksum_algorithm(req.checksum_algorithm());
  resp.set_checksum(got->checksum);
  resp.set_path(plan->path);
  ObjectInfoToProto(*committed, resp.mutable_metadata());
  return Serialize(resp);
}

InFlightRequests::Entry InFlightRequests::Begin(const std::string& session_hex,
                                                const std::string& nonce_hex) {
  auto flag = std::make_shared<std::atomic<bool>>(false);
  const std::string id = absl::StrCat(session_hex, "/", nonce_hex);
  absl::MutexLock l(&mu_);
  if (auto it = std::find(early_.begin(), early_.end(), id); it != early_.end()) {
    early_.erase(it);
    flag->store(true);
  }
  running_[id] = flag;
  return Entry(this, id, std::move(flag));
}

void InFlightRequests::End(const std::string& id) {
  absl::MutexLock l(&mu_);
  running_.erase(id);
}

bool InFlightRequests::Cancel(const std::string& session_hex, const std::string& nonce_hex) {
  const std::string id = absl::StrCat(session_hex, "/", nonce_hex);
  absl::MutexLock l(&mu_);
  if (auto it = running_.find(id); it != running_.end()) {
    it->second->store(true);
    return true;
  }
  // The request may still be on its way (or already finished: then this entry ages out). Bounded
  // so that a peer cannot grow it (spec section 14.6).
  if (std::find(early_.begin(), early_.end(), id) == early_.end()) {
    early_.push_back(id);
    if (early_.size() > kMaxEarlyCancels) early_.pop_front();
  }
  return false;
}

size_t InFlightRequests::size() {
  absl::MutexLock l(&mu_);
  return running_.size();
}

absl::Status ActiveCall::Check() const {
  if (flag_ != nullptr && flag_->load()) {
    return MakeError(ErrorCode::kCancelled, "the client cancelled the request");
  }
  if (control_ == nullptr) return absl::OkStatus();
  if (absl::Now() >= control_->deadline) {
    return MakeError(ErrorCode::kDeadlineExceeded, "the call's deadline passed");
  }
  if (control_->cancelled && control_->cancelled()) {
    return MakeError(ErrorCode::kCancelled, "the call was cancelled");
  }
  return absl::OkStatus();
}

absl::Status RequestHandler::ExecuteRma(const SessionState& s, const RmaBatch& batch,
                                        const ActiveCall& call) {
  const uint64_t step = std::max<uint64_t>(config_.cancel_check_bytes, 1);
  RmaBatch part;
  part.direction = batch.direction;
  part.windows = batch.windows;
  part.max_rkey_bytes = batch.max_rkey_bytes;
  uint64_t in_part = 0;
  // AOBJ-MEM-009, AOBJ-MEM-021: every operation of the request is inside its window before the
  // first step is issued (the worker checks each step again).
  AOBJ_RETURN_IF_ERROR(CheckBatchBounds(batch));
  if (call.must_not_wait()) {
    // Chosen to run where it was delivered because it looked RMA-free (an object that grew
    // since, say): nothing moved yet, and a repeat runs on a request thread.
    return WithRetryAfter(MakeError(ErrorCode::kSlowDown,
                                    "the request needs RMA after all, on a thread that must not "
                                    "wait for it; repeat it"),
                          absl::Milliseconds(1));
  }
  auto run = [&]() -> absl::Status {
    // AOBJ-DAT-016: nothing more is issued once the call is cancelled or past its deadline.
    // AOBJ-DAT-155: every earlier step has completed (Execute returns only then), so the error
    // reply that follows is sent after the last RMA operation of the request.
    AOBJ_RETURN_IF_ERROR(call.Check());
    // AOBJ-DAT-157: a call whose client cancelled or went away ends within a short grace.
    absl::Status st = channel_->ExecuteWatched(s.endpoint, part,
                                               [&call] { return !call.Check().ok(); });
    part.ops.clear();
    in_part = 0;
    return st;
  };
  for (const RmaOp& op : batch.ops) {
    for (size_t done = 0; done < op.length;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(op.length - done, step - in_part));
      part.ops.push_back({op.window, op.remote + done, op.local + done, n});
      in_part += n;
      done += n;
      if (in_part == step) AOBJ_RETURN_IF_ERROR(run());
    }
  }
  if (!part.ops.empty() || batch.ops.empty()) AOBJ_RETURN_IF_ERROR(run());
  // AOBJ-DAT-155: a call stopped during its last step is failed like one stopped between steps:
  // nothing is committed for it and it is not answered OK.
  return call.Check();
}

}  // namespace aobj
