#include "conformance/src/peer.h"

#include <ucp/api/ucp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "control/tls.h"
#include "wire/checksum.h"
#include "wire/crypto.h"
#include "wire/error_registry.h"
#include "wire/fast_frame.h"
#include "wire/signing.h"

namespace aobj::conformance {
namespace {

std::shared_ptr<grpc::Channel> ChannelFor(const TargetOptions& t) {
  // A large send bound: hostile cases send oversized messages on purpose.
  auto ch = MakeChannel(t.endpoint, t.tls, 64 << 20);
  if (!ch.ok()) return grpc::CreateChannel(t.endpoint, grpc::InsecureChannelCredentials());
  return *ch;
}

// The memory protection targets reported in OpenSession replies (bit 1 hardware, bit 2 emulated).
std::atomic<int> g_protections_seen{0};

std::string Clip(std::string s, size_t n = 600) {
  if (s.size() > n) s = s.substr(0, n) + absl::StrCat("... (", s.size(), " chars)");
  return s;
}

}  // namespace

struct GuardWatch {
  CaseContext* ctx = nullptr;
  std::mutex mu;
  std::vector<RegisteredMemory*> live;
};

std::string BrokenGuard(const RegisteredMemory& m) {
  const size_t g = m.guard();
  const uint8_t* before = m.data() - g;
  const uint8_t* after = m.data() + m.size();
  for (size_t i = 0; i < g; ++i) {
    if (before[i] != kGuardFill) {
      return absl::StrCat("the octet ", g - i, " before the start of a ", m.size(),
                          "-octet window's memory was written");
    }
  }
  for (size_t i = 0; i < g; ++i) {
    if (after[i] != kGuardFill) {
      size_t n = 1;
      while (i + n < g && after[i + n] != kGuardFill) ++n;
      return absl::StrCat(n, " octet(s) from ", i, " past the end of a ", m.size(),
                          "-octet window's memory were written");
    }
  }
  return "";
}

void GuardedDeleter::operator()(RegisteredMemory* m) const {
  if (m == nullptr) return;
  std::string broken;
  if (watch != nullptr) {
    std::lock_guard<std::mutex> l(watch->mu);
    std::erase(watch->live, m);
    broken = BrokenGuard(*m);
    // Released memory is checked once more; a write found only now came after the last reply.
    if (!broken.empty() && watch->ctx != nullptr) {
      watch->ctx->Expect(false,
                         "no octet outside the windows the requests described was written, up "
                         "to the memory's release after the last reply (AOBJ-MEM-009, "
                         "AOBJ-MEM-010)",
                         "guard octets unchanged", broken);
    }
  }
  delete m;
}

std::string CodeName(ErrorCode code) {
  ErrorInfo info = GetErrorInfo(code);
  if (info.code != code || static_cast<uint32_t>(code) == 0) {
    return absl::StrCat("code ", static_cast<int64_t>(static_cast<int32_t>(code)));
  }
  return std::string(info.name);
}

std::string Outcome(const RawReply& r) {
  if (r.grpc_status.ok()) return "OK";
  std::string s = r.error_trailers > 0 ? r.error.name() : "(no aobj-error-bin trailer)";
  absl::StrAppend(&s, " (gRPC ", static_cast<int>(r.grpc_status.error_code()), ")");
  if (!r.error.message().empty()) absl::StrAppend(&s, ": ", r.error.message());
  else if (!r.grpc_status.error_message().empty()) absl::StrAppend(&s, ": ", r.grpc_status.error_message());
  return s;
}

std::string Hex(const std::string& bytes) { return HexEncode(bytes); }

Peer::Peer(CaseContext& ctx, std::string label, std::string access_key, std::string secret,
           const char* alloc_prio)
    : ctx_(ctx),
      label_(std::move(label)),
      channel_(ChannelFor(ctx.target())) {
  last_auth_.access_key_id = access_key;
  signing_key_ = DeriveSigningKey(secret);
  auto c = UcxContext::Create(ctx.target().data_channel, alloc_prio);
  if (!c.ok()) {
    ctx_.Require(false, "create the suite's UCP context", "OK", c.status().ToString());
  }
  context_ = std::move(*c);
  auto w = UcxWorker::Create(*context_, "conformance-" + label_);
  if (!w.ok()) ctx_.Require(false, "create the suite's UCP worker", "OK", w.status().ToString());
  worker_ = std::move(*w);
  worker_address_ = worker_->address();
  watch_ = std::make_shared<GuardWatch>();
  watch_->ctx = &ctx_;
}

Peer::~Peer() {
  // Leave no session behind for the lease to collect (not part of any verdict).
  if (!session_hex_.empty()) CloseQuietly();
  if (stalled_ != nullptr) ucp_worker_destroy(stalled_);
}

void Peer::CloseQuietly() {
  RequestAuth auth;
  auth.access_key_id = last_auth_.access_key_id;
  auth.timestamp = std::to_string(absl::ToUnixMillis(absl::Now()));
  auth.nonce_hex = HexEncode(RandomBytes(kNonceBytes));
  auth.session_hex = session_hex_;
  const std::string body = pb::CloseSessionRequest().SerializeAsString();
  auth.signature_hex = SignRequest(signing_key_, MethodPath(Method::kCloseSession), auth, body);
  channel_.Call(MethodPath(Method::kCloseSession), body,
                {{kMetaAccessKeyId, auth.access_key_id},
                 {kMetaTimestamp, auth.timestamp},
                 {kMetaNonce, auth.nonce_hex},
                 {kMetaSignature, auth.signature_hex},
                 {kMetaSessionId, auth.session_hex}},
                absl::Seconds(5));
}

RawReply Peer::Send(Method method, const std::string& body, const Tamper& t,
                    const std::string& shown) {
  std::string session;
  if (t.session_hex == "-") session = "";
  else if (!t.session_hex.empty()) session = t.session_hex;
  else if (method != Method::kOpenSession) session = session_hex_;
  RequestAuth auth;
  auth.access_key_id = t.access_key_id.empty() ? last_auth_.access_key_id : t.access_key_id;
  auth.timestamp = !t.signed_timestamp.empty()
                       ? t.signed_timestamp
                       : std::to_string(absl::ToUnixMillis(absl::Now()) + t.clock_offset_ms);
  auth.nonce_hex = t.nonce_hex.empty() ? HexEncode(RandomBytes(kNonceBytes)) : t.nonce_hex;
  auth.session_hex = session;
  auth.signature_hex = SignRequest(signing_key_, MethodPath(method), auth, body);
  std::string tampering;
  if (t.flip_signature) {
    auth.signature_hex[0] = auth.signature_hex[0] == 'a' ? 'b' : 'a';
    tampering += " [signature altered]";
  }
  if (t.flip_signature_at >= 0 &&
      static_cast<size_t>(t.flip_signature_at) < auth.signature_hex.size()) {
    char& c = auth.signature_hex[t.flip_signature_at];
    c = c == 'a' ? 'b' : 'a';
    tampering += absl::StrCat(" [signature hex digit ", t.flip_signature_at, " altered]");
  }
  if (t.edit_signature) {
    auth.signature_hex = t.edit_signature(auth.signature_hex);
    tampering += " [signature " + t.edit_signature_what + "]";
  }
  if (!t.access_key_id.empty()) {
    tampering += absl::StrCat(" [access key ID of ", t.access_key_id.size(), " octets]");
  }
  if (!t.signed_timestamp.empty()) tampering += " [timestamp " + t.signed_timestamp + ", signed]";
  if (!t.timestamp.empty()) {
    auth.timestamp = t.timestamp;
    tampering += " [timestamp " + t.timestamp + "]";
  }
  if (t.clock_offset_ms != 0) tampering += absl::StrCat(" [clock ", t.clock_offset_ms, " ms]");
  std::vector<std::pair<std::string, std::string>> md;
  md.emplace_back(kMetaAccessKeyId, auth.access_key_id);
  if (!t.omit_timestamp) md.emplace_back(kMetaTimestamp, auth.timestamp);
  if (!t.omit_nonce) md.emplace_back(kMetaNonce, auth.nonce_hex);
  if (t.duplicate_nonce_entry) md.emplace_back(kMetaNonce, HexEncode(RandomBytes(kNonceBytes)));
  if (!t.omit_signature) md.emplace_back(kMetaSignature, auth.signature_hex);
  if (t.session_hex == "-" && method == Method::kOpenSession) {
    md.emplace_back(kMetaSessionId, HexEncode(RandomBytes(kSessionIdBytes)));
    tampering += " [session id on OpenSession]";
  } else if (!session.empty() && !t.omit_session) {
    md.emplace_back(kMetaSessionId, session);
  }
  for (const auto& [k, v] : t.extra_metadata) {
    md.emplace_back(k, v);
    tampering += " [" + k + ": " + v + "]";
  }
  if (t.omit_signature) tampering += " [no signature]";
  if (t.omit_timestamp) tampering += " [no timestamp]";
  if (t.omit_nonce) tampering += " [no nonce]";
  if (t.omit_session) tampering += " [no session id]";
  if (t.duplicate_nonce_entry) tampering += " [nonce entry twice]";
  if (!t.body_suffix.empty()) tampering += absl::StrCat(" [", t.body_suffix.size(), " octets appended after signing]");
  if (!t.raw_body.empty()) tampering += absl::StrCat(" [raw body of ", t.raw_body.size(), " octets]");
  const std::string own_key = last_auth_.access_key_id;
  last_auth_ = auth;
  last_auth_.access_key_id = own_key;  // a claimed key is for this request only
  last_md_ = md;
  last_body_ = body + t.body_suffix;
  last_method_ = method;
  last_shown_ = shown;
  if (fast() && FastPathCarries(method) && t.extra_metadata.empty() && !t.duplicate_nonce_entry) {
    // The same fields as the metadata above; an omitted entry travels as an empty string.
    FastRequest fr;
    fr.timeout_ms = static_cast<uint32_t>(absl::ToInt64Milliseconds(ctx_.target().call_timeout));
    fr.method = MethodName(method);
    fr.auth = auth;
    if (t.omit_timestamp) fr.auth.timestamp.clear();
    if (t.omit_nonce) fr.auth.nonce_hex.clear();
    if (t.omit_signature) fr.auth.signature_hex.clear();
    if (t.omit_session) fr.auth.session_hex.clear();
    fr.body = last_body_;
    auto frame = EncodeFastRequest(fr);
    if (frame.ok()) {
      last_fast_frame_ = *frame;
      last_fast_nonce_ = auth.nonce_hex;
      bool got = false;
      RawReply r = SendFastFrame(*frame, auth.nonce_hex, ctx_.target().call_timeout, &got);
      return Finish(method, shown, tampering + " [fast path]", std::move(r));
    }
  }
  last_fast_frame_.clear();
  RawReply r = channel_.Call(MethodPath(method), last_body_, md, ctx_.target().call_timeout);
  return Finish(method, shown, tampering, std::move(r));
}

// Replies by nonce, filled on the worker's progress thread.
struct Peer::FastInbox {
  absl::Mutex mu;
  absl::flat_hash_map<std::string, FastReply> replies ABSL_GUARDED_BY(mu);
  absl::flat_hash_set<std::string> waiting ABSL_GUARDED_BY(mu);
  size_t stray ABSL_GUARDED_BY(mu) = 0;
};

void Peer::UseFastPath(const Peer* via) {
  const Peer& owner = via != nullptr ? *via : *this;
  if (!owner.Negotiated(7) || owner.session().fast_path_address().empty()) {
    ctx_.Unsupported("the target did not negotiate FAST_PATH (capability 7) with an address");
  }
  if (fast_inbox_ == nullptr) {
    fast_inbox_ = std::make_shared<FastInbox>();
    absl::Status s =
        worker_->SetMessageHandler(kFastReplyAmId, [inbox = fast_inbox_](absl::string_view m) {
          auto r = ParseFastReply(m);
          absl::MutexLock l(&inbox->mu);
          if (!r.ok() || !inbox->waiting.contains(r->nonce_hex)) {
            ++inbox->stray;  // AOBJ-DAT-169: dropped, and counted for the cases
            return;
          }
          inbox->replies[r->nonce_hex] = std::move(*r);
        });
    ctx_.Require(s.ok(), "register the suite's FAST_REPLY handler", "OK", s.ToString());
  }
  auto ep = worker_->ConnectForMessages(owner.session().fast_path_address());
  ctx_.Require(ep.ok(), "an endpoint to fast_path_address (AOBJ-DAT-163)", "created",
               ep.status().ToString());
  fast_ep_ = *ep;
  fast_on_ = true;
}

size_t Peer::stray_fast_replies() {
  if (fast_inbox_ == nullptr) return 0;
  absl::MutexLock l(&fast_inbox_->mu);
  return fast_inbox_->stray;
}

RawReply Peer::SendFastFrame(const std::string& frame, const std::string& nonce_hex,
                             absl::Duration wait, bool* got) {
  *got = false;
  RawReply r;
  {
    absl::MutexLock l(&fast_inbox_->mu);
    fast_inbox_->waiting.insert(nonce_hex);
  }
  absl::Status sent = worker_->SendMessage(fast_ep_, kFastRequestAmId, frame);
  FastReply reply;
  {
    absl::MutexLock l(&fast_inbox_->mu);
    auto arrived = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(fast_inbox_->mu) {
      return fast_inbox_->replies.contains(nonce_hex);
    };
    if (sent.ok()) fast_inbox_->mu.AwaitWithTimeout(absl::Condition(&arrived), wait);
    fast_inbox_->waiting.erase(nonce_hex);
    auto it = fast_inbox_->replies.find(nonce_hex);
    if (it != fast_inbox_->replies.end()) {
      *got = true;
      reply = std::move(it->second);
      fast_inbox_->replies.erase(it);
    }
  }
  if (!*got) {
    r.grpc_status = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                                 absl::StrCat("no fast reply within ", absl::FormatDuration(wait)));
    r.status = MakeError(ErrorCode::kDeadlineExceeded, r.grpc_status.error_message());
    return r;
  }
  if (!reply.error) {
    r.body = std::move(reply.body);
    return r;
  }
  // The same checks as an error trailer (Section 3.3); the gRPC status is the registry's, as a
  // gRPC call would carry it (there is none on this path).
  r.error_trailers = 1;
  r.error_trailer = reply.body;
  if (r.error.ParseFromString(reply.body) && r.error.code() != pb::ERROR_CODE_UNSPECIFIED) {
    const ErrorCode code = static_cast<ErrorCode>(static_cast<uint32_t>(r.error.code()));
    r.status = MakeError(code, r.error.message());
    r.grpc_status =
        grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(GetErrorInfo(code).canonical)),
                     r.error.message());
  } else {
    r.status = MakeError(ErrorCode::kInternal, "an unparsable error in a fast reply");
    r.grpc_status = grpc::Status(grpc::StatusCode::INTERNAL, "unparsable fast error");
  }
  return r;
}

RawReply Peer::Resend() {
  if (!last_fast_frame_.empty()) {
    bool got = false;
    RawReply f =
        SendFastFrame(last_fast_frame_, last_fast_nonce_, ctx_.target().call_timeout, &got);
    return Finish(last_method_, last_shown_,
                  " [replay of the previous fast request, byte for byte]", std::move(f));
  }
  RawReply r =
      channel_.Call(MethodPath(last_method_), last_body_, last_md_, ctx_.target().call_timeout);
  return Finish(last_method_, last_shown_, " [replay of the previous request, byte for byte]",
                std::move(r));
}

// What holds of every successful reply of a method, whatever the case asked (so a fault in a
// reply field is caught by every case that meets it, not only by the case written for it). Each
// rule is a MUST of the spec about the reply alone, or about the reply and the request as sent.
void Peer::CheckReply(Method method, const RawReply& r, const RuleFn& rule) {
  const std::string what = absl::StrCat(MethodName(method), " reply");
  const bool have_session = open_.lease_ms() != 0 && HexEncode(open_.session_id()) == session_hex_;
  auto data_reply = [&](uint64_t bytes, pb::TransferPath path, bool inline_sent,
                        uint64_t inline_received) {
    // AOBJ-DAT-011: an empty body moves nothing; AOBJ-DAT-030: the path is the one that moved it.
    rule((bytes == 0) == (path == pb::TRANSFER_PATH_NONE),
         what + ": path NONE exactly when no octet moved (AOBJ-DAT-011, AOBJ-DAT-030)",
         bytes == 0 ? "TRANSFER_PATH_NONE" : "INLINE or RMA",
         absl::StrCat(pb::TransferPath_Name(path), ", ", bytes, " octets"));
    if (path == pb::TRANSFER_PATH_INLINE) {
      rule(inline_sent || inline_received == bytes,
           what + ": an INLINE reply carries exactly bytes_transferred octets (AOBJ-DAT-030)",
           absl::StrCat(bytes), absl::StrCat(inline_received));
    }
  };
  switch (method) {
    case Method::kRenewSession: {
      pb::RenewSessionResponse resp;
      if (!have_session || !resp.ParseFromString(r.body)) return;
      rule(resp.lease_ms() == open_.lease_ms(),
           what + ": lease_ms is the session's lease (AOBJ-SES-008, AOBJ-SES-017)",
           absl::StrCat(open_.lease_ms()), absl::StrCat(resp.lease_ms()));
      return;
    }
    case Method::kGetObject: {
      pb::GetObjectRequest req;
      pb::GetObjectResponse resp;
      if (!req.ParseFromString(last_body_) || !resp.ParseFromString(r.body)) return;
      data_reply(resp.bytes_transferred(), resp.path(), false, resp.inline_data().size());
      if (resp.path() == pb::TRANSFER_PATH_INLINE) {
        rule(req.accept_inline(),
             what + ": INLINE only to a GET that set accept_inline (AOBJ-DAT-008)",
             "accept_inline set", "not set");
        if (have_session) {
          // AOBJ-DAT-104: for a range, the range's length stands for the object's size.
          const uint64_t t = open_.limits().inline_threshold();
          const uint64_t n = req.has_range() ? resp.bytes_transferred() : resp.metadata().size();
          rule(n <= t,
               what +
                   ": INLINE only for a body of at most inline_threshold octets (AOBJ-DAT-008, "
                   "AOBJ-DAT-104)",
               absl::StrCat("<= ", t), absl::StrCat(n));
        }
      } else if (!req.has_range()) {
        rule(resp.inline_data().empty(),
             what + ": inline_data only on the INLINE path (AOBJ-DAT-030)", "none",
             absl::StrCat(resp.inline_data().size(), " octets"));
      }
      if (!req.has_range()) {
        rule(resp.bytes_transferred() == resp.metadata().size(),
             what + ": a whole-object GET moves the object's size (AOBJ-DAT-003)",
             absl::StrCat(resp.metadata().size()), absl::StrCat(resp.bytes_transferred()));
      }
      return;
    }
    case Method::kPutObject:
    case Method::kUploadPart: {
      uint64_t size = 0;
      bool inline_sent = false;
      uint64_t bytes = 0;
      pb::TransferPath path = pb::TRANSFER_PATH_UNSPECIFIED;
      if (method == Method::kPutObject) {
        pb::PutObjectRequest req;
        pb::PutObjectResponse resp;
        if (!req.ParseFromString(last_body_) || !resp.ParseFromString(r.body)) return;
        size = req.size();
        inline_sent = !req.inline_data().empty();
        bytes = resp.bytes_transferred();
        path = resp.path();
      } else {
        pb::UploadPartRequest req;
        pb::UploadPartResponse resp;
        if (!req.ParseFromString(last_body_) || !resp.ParseFromString(r.body)) return;
        size = req.size();
        inline_sent = !req.inline_data().empty();
        bytes = resp.bytes_transferred();
        path = resp.path();
      }
      rule(bytes == size,
           what + ": bytes_transferred is the declared size (AOBJ-DAT-003, AOBJ-DAT-151)",
           absl::StrCat(size), absl::StrCat(bytes));
      data_reply(bytes, path, true, 0);
      if (size > 0) {
        rule((path == pb::TRANSFER_PATH_INLINE) == inline_sent,
             what + ": path INLINE exactly when the body came inline (AOBJ-DAT-030)",
             inline_sent ? "TRANSFER_PATH_INLINE" : "TRANSFER_PATH_RMA",
             pb::TransferPath_Name(path));
      }
      return;
    }
    case Method::kDeleteObjects: {
      pb::DeleteObjectsRequest req;
      pb::DeleteObjectsResponse resp;
      if (!req.ParseFromString(last_body_) || !resp.ParseFromString(r.body)) return;
      if (req.quiet()) {
        rule(resp.deleted().empty(), what + ": quiet leaves deleted empty (AOBJ-OBJ-143)", "0",
             absl::StrCat(resp.deleted_size()));
      }
      for (const auto& e : resp.errors()) {
        const auto code = static_cast<ErrorCode>(static_cast<uint32_t>(e.error().code()));
        const ErrorInfo info = GetErrorInfo(code);
        rule(e.error().code() != 0 && info.code == code && e.error().name() == info.name &&
                 e.error().s3_code() == info.s3_code && e.error().retryable() == info.retryable,
             what + ": each failed key's error is a registry row (AOBJ-ERR-004)",
             absl::StrCat(std::string(info.name), " ", std::string(info.s3_code)),
             e.error().ShortDebugString());
      }
      return;
    }
    case Method::kListObjectsV2: {
      pb::ListObjectsV2Request req;
      pb::ListObjectsV2Response resp;
      if (!req.ParseFromString(last_body_) || !resp.ParseFromString(r.body)) return;
      const uint32_t max = req.max_keys() == 0 ? 1000 : req.max_keys();
      const size_t n = resp.objects_size() + resp.common_prefixes_size();
      if (req.max_keys() <= 1000) {
        rule(n <= max, what + ": at most max_keys entries (AOBJ-OBJ-102)", absl::StrCat("<= ", max),
             absl::StrCat(n));
      }
      if (resp.is_truncated()) {
        rule(!resp.next_continuation_token().empty(),
             what + ": a truncated page carries a continuation token (AOBJ-OBJ-103)", "a token",
             "none");
      }
      for (int i = 0; i < resp.objects_size(); ++i) {
        const std::string& k = resp.objects(i).key();
        rule(k.compare(0, req.prefix().size(), req.prefix()) == 0,
             what + ": every key starts with the prefix (AOBJ-OBJ-100)", req.prefix(), k);
        if (i > 0) {
          rule(resp.objects(i - 1).key() < k,
               what + ": keys in ascending octet order, each once (AOBJ-OBJ-100)",
               absl::StrCat("after ", resp.objects(i - 1).key()), k);
        }
      }
      return;
    }
    default:
      return;
  }
}

RawReply Peer::Finish(Method method, const std::string& shown, const std::string& tampering,
                      RawReply r) {
  Exchange e;
  e.peer = label_;
  e.method = MethodName(method);
  e.request = Clip(shown) + tampering;
  e.outcome = Outcome(r);
  if (r.grpc_status.ok() && !r.body.empty()) {
    // Parse for display only; cases parse what they need themselves.
    std::unique_ptr<google::protobuf::Message> m;
    switch (method) {
      case Method::kOpenSession: m = std::make_unique<pb::OpenSessionResponse>(); break;
      case Method::kPutObject: m = std::make_unique<pb::PutObjectResponse>(); break;
      case Method::kGetObject: m = std::make_unique<pb::GetObjectResponse>(); break;
      case Method::kHeadObject: m = std::make_unique<pb::HeadObjectResponse>(); break;
      case Method::kListObjectsV2: m = std::make_unique<pb::ListObjectsV2Response>(); break;
      case Method::kUploadPart: m = std::make_unique<pb::UploadPartResponse>(); break;
      case Method::kCompleteMultipartUpload:
        m = std::make_unique<pb::CompleteMultipartUploadResponse>();
        break;
      case Method::kCreateMultipartUpload:
        m = std::make_unique<pb::CreateMultipartUploadResponse>();
        break;
      default: break;
    }
    if (m && m->ParseFromString(r.body)) {
      if (method == Method::kGetObject) {
        auto* g = static_cast<pb::GetObjectResponse*>(m.get());
        if (g->inline_data().size() > 64) {
          g->set_inline_data(absl::StrCat("<", g->inline_data().size(), " octets>"));
        }
      }
      e.response = Clip(m->ShortDebugString());
    } else {
      e.response = absl::StrCat(r.body.size(), " octets");
    }
  }
  ctx_.Record(std::move(e));
  CheckGuards(method);
  // The error-trailer rules hold for every reply (Section 3.3 and 11.1); only a broken rule is
  // recorded as a check (it ends the case).
  auto rule = [&](bool ok, std::string what, std::string expected, std::string actual) {
    if (!ok) ctx_.Require(false, std::move(what), std::move(expected), std::move(actual));
  };
  const std::string what = absl::StrCat(MethodName(method), " reply");
  if (r.grpc_status.ok()) {
    rule(r.error_trailers == 0, what + ": no aobj-error-bin on success (AOBJ-CTL-008)",
                 "0 trailers", absl::StrCat(r.error_trailers));
    CheckReply(method, r, rule);
  } else if (r.grpc_status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED &&
             r.grpc_status.error_code() != grpc::StatusCode::UNAVAILABLE &&
             r.grpc_status.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) {
    // (gRPC itself ends calls with these three without the server's involvement.)
    rule(r.error_trailers == 1,
                 what + ": exactly one aobj-error-bin trailer on failure (AOBJ-CTL-002, AOBJ-ERR-001)",
                 "1 trailer", absl::StrCat(r.error_trailers, " trailers; ", Outcome(r)));
    pb::Error parsed;
    const bool parses = parsed.ParseFromString(r.error_trailer);
    rule(parses, what + ": the trailer parses as aobj.v1.Error (AOBJ-CTL-002)",
                 "parsable", parses ? "parsable" : "unparsable");
    const auto code = static_cast<ErrorCode>(static_cast<uint32_t>(parsed.code()));
    rule(parsed.code() != 0, what + ": code is not UNSPECIFIED (AOBJ-ERR-009)",
                 "non-zero code", absl::StrCat(parsed.code()));
    ErrorInfo info = GetErrorInfo(code);
    if (info.code == code) {
      rule(parsed.name() == info.name && parsed.s3_code() == info.s3_code &&
                       parsed.retryable() == info.retryable,
                   what + ": name, s3_code and retryable from the registry row (AOBJ-ERR-004)",
                   absl::StrCat(std::string(info.name), " ", std::string(info.s3_code), " retryable=", info.retryable),
                   absl::StrCat(parsed.name(), " ", parsed.s3_code(),
                                " retryable=", parsed.retryable()));
      rule(static_cast<int>(r.grpc_status.error_code()) == static_cast<int>(info.canonical),
                   what + ": gRPC status from the registry row (AOBJ-ERR-005)",
                   absl::StrCat(static_cast<int>(info.canonical)),
                   absl::StrCat(static_cast<int>(r.grpc_status.error_code())));
    }
  }
  return r;
}

pb::OpenSessionRequest Peer::DefaultOpen() const {
  pb::OpenSessionRequest req;
  req.mutable_versions()->set_min(1);
  req.mutable_versions()->set_max(1);
  for (uint32_t c : {1u, 2u, 3u, 4u}) req.add_capabilities(c);
  req.set_worker_address(worker_address_);
  return req;
}

RawReply Peer::Open(const pb::OpenSessionRequest& req, bool confirm) {
  RawReply r = Send(Method::kOpenSession, req);
  if (r.status.ok()) {
    open_.ParseFromString(r.body);
    session_hex_ = HexEncode(open_.session_id());
    if (open_.memory_protection() == pb::MEMORY_PROTECTION_HARDWARE) g_protections_seen |= 1;
    if (open_.memory_protection() == pb::MEMORY_PROTECTION_EMULATED) g_protections_seen |= 2;
    proof_.clear();
    if (confirm) {
      RawReply c = Confirm();
      if (!c.status.ok()) return c;
    }
  }
  return r;
}

RawReply Peer::Confirm(const std::string& proof) {
  pb::ConfirmEndpointRequest req;
  req.set_proof(proof.empty() ? Proof() : proof);
  return Send(Method::kConfirmEndpoint, req);
}

const std::string& Peer::Proof() {
  if (!proof_.empty()) return proof_;
  const size_t n = open_.endpoint_challenges();
  std::string all;
  if (n == 0 || n > kMaxEndpointChallenges) {
    ctx_.Require(false, "OpenSession announces 1 to 4 endpoint challenges (AOBJ-SES-025)", "1..4",
                 absl::StrCat(n));
  } else if (stalled_ != nullptr) {
    // The stalled worker is progressed here, and only here.
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    for (;;) {
      ucp_worker_progress(stalled_);
      size_t have = 0;
      for (size_t i = 0; i < n; ++i) have += stalled_challenges_[i].empty() ? 0 : 1;
      if (have == n || absl::Now() > deadline) break;
    }
    for (size_t i = 0; i < n; ++i) all += stalled_challenges_[i];
  } else {
    auto got = worker_->AwaitChallenges(open_.session_id(), n, absl::Seconds(10));
    if (got.ok()) all = *got;
  }
  ctx_.Require(all.size() == n * kEndpointChallengeBytes,
               "the endpoint challenges reach the session's worker by active message "
               "(AOBJ-SES-025)",
               absl::StrCat(n, " challenge(s)"),
               absl::StrCat(all.size() / kEndpointChallengeBytes, " arrived within 10 s"));
  proof_ =
      EndpointProof(DeriveEndpointKey(signing_key_, open_.session_id()), open_.session_id(), all);
  return proof_;
}

absl::Status Peer::VerifyResponseSignature(const RawReply& r) const {
  return VerifyOpenSessionResponse(signing_key_, last_auth_.signature_hex, r.body,
                                   r.response_signature);
}

bool Peer::Negotiated(uint32_t capability) const {
  for (uint32_t c : open_.capabilities()) {
    if (c == capability) return true;
  }
  return false;
}

KeyedMemory MemoryKindOf(const RegisteredMemory& m) { return KeyedMemoryOf(m.packed_rkey()); }

std::string MemoryKindName(KeyedMemory kind) {
  switch (kind) {
    case KeyedMemory::kSysvSegment:
      return "System V shared memory";
    case KeyedMemory::kStatedSegment:
      return "posix shared memory (keys state each segment)";
    case KeyedMemory::kOrdinary:
      break;
  }
  return "ordinary memory (keys state no segment: no server can bound a window in it)";
}

std::string DescribeDataChannel(const TargetOptions& target) {
  const char* tls = std::getenv("UCX_TLS");
  const char* devices = std::getenv("UCX_NET_DEVICES");
  std::string transports = tls != nullptr ? std::string(tls)
                           : !target.data_channel.transports.empty()
                               ? target.data_channel.transports
                               : "UCX's default";
  std::string out =
      absl::StrCat("UCX ", ucp_get_version_string(), ", transports ", transports, ", devices ",
                   devices != nullptr ? devices : target.data_channel.net_devices);
  auto ctx = UcxContext::Create(target.data_channel);
  if (ctx.ok()) {
    auto m = RegisteredMemory::Allocate(**ctx, 1 << 16);
    if (m.ok()) absl::StrAppend(&out, ", memory: ", MemoryKindName(MemoryKindOf(**m)));
  }
  const int seen = g_protections_seen.load();
  absl::StrAppend(&out, ", memory protection reported: ",
                  seen == 0   ? "none (no session opened)"
                  : seen == 1 ? "HARDWARE"
                  : seen == 2 ? "EMULATED"
                              : "HARDWARE and EMULATED");
  return out;
}

absl::StatusOr<std::unique_ptr<RegisteredMemory>> Peer::TryAllocate(size_t size) {
  return RegisteredMemory::Allocate(*context_, size);
}

Memory Peer::Allocate(size_t size) {
  auto m = RegisteredMemory::Allocate(*context_, size, kGuardBytes);
  if (!m.ok()) ctx_.Require(false, "register memory in the suite", "OK", m.status().ToString());
  RegisteredMemory* raw = m->release();
  std::memset(raw->data() - kGuardBytes, kGuardFill, kGuardBytes);
  std::memset(raw->data() + raw->size(), kGuardFill, kGuardBytes);
  std::lock_guard<std::mutex> l(watch_->mu);
  watch_->live.push_back(raw);
  return Memory(raw, GuardedDeleter{watch_});
}

void Peer::CheckGuards(Method method) {
  std::string broken;
  {
    std::lock_guard<std::mutex> l(watch_->mu);
    for (RegisteredMemory* m : watch_->live) {
      broken = BrokenGuard(*m);
      if (!broken.empty()) {
        // Reported once: the memory is written again so a later reply does not repeat it.
        std::memset(m->data() - kGuardBytes, kGuardFill, kGuardBytes);
        std::memset(m->data() + m->size(), kGuardFill, kGuardBytes);
        break;
      }
    }
  }
  if (!broken.empty()) {
    ctx_.Require(false,
                 absl::StrCat("no octet outside the windows the requests described was written, "
                              "as of the ",
                              MethodName(method), " reply (AOBJ-MEM-009)"),
                 "guard octets unchanged", broken);
  }
}

void Peer::DropDataChannel() { worker_.reset(); }

void Peer::UseStalledWorker() {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucs_status_t st = ucp_worker_create(context_->get(), &params, &stalled_);
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  if (st == UCS_OK) st = ucp_worker_get_address(stalled_, &addr, &len);
  if (st != UCS_OK) ctx_.Require(false, "create a second UCP worker", "OK", UcxStatusString(st));
  worker_address_.assign(reinterpret_cast<const char*>(addr), len);
  ucp_worker_release_address(stalled_, addr);
  ucp_am_handler_param_t am{};
  am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG;
  am.id = kEndpointChallengeAmId;
  am.arg = stalled_challenges_;
  am.cb = [](void* arg, const void*, size_t, void* data, size_t length,
             const ucp_am_recv_param_t*) -> ucs_status_t {
    EndpointChallenge c;
    if (ParseEndpointChallenge(data, length, &c)) {
      static_cast<std::string*>(arg)[c.index] = std::string(c.challenge);
    }
    return UCS_OK;
  };
  ucp_worker_set_am_recv_handler(stalled_, &am);
}

std::unique_ptr<RegisteredMemory> Peer::RegisterHeap(size_t size, uint8_t fill) {
  heap_.push_back(std::make_unique<uint8_t[]>(size));
  std::memset(heap_.back().get(), fill, size);
  auto m = RegisteredMemory::Register(*context_, heap_.back().get(), size);
  if (!m.ok()) {
    ctx_.Require(false, "register heap memory in the suite", "OK", m.status().ToString());
  }
  return std::move(*m);
}

pb::MemoryDescriptor Peer::Descriptor(const RegisteredMemory& mem, uint64_t offset,
                                      uint64_t length) {
  pb::MemoryDescriptor d;
  d.set_address(reinterpret_cast<uint64_t>(mem.data()) + offset);
  d.set_length(length);
  d.set_rkey(mem.packed_rkey());
  d.set_memory_type(pb::MEMORY_TYPE_HOST);
  return d;
}

pb::PutObjectRequest Peer::PutRequest(const std::string& bucket, const std::string& key,
                                      const RegisteredMemory& mem, uint64_t size) const {
  pb::PutObjectRequest req;
  req.set_bucket(bucket);
  req.set_key(key);
  req.set_size(size);
  req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
  Checksummer sum(ChecksumAlgorithm::kCrc32c);
  sum.Update(mem.data(), size);
  req.set_checksum(sum.Finish());
  if (size > 0) *req.add_source() = Descriptor(mem, 0, size);
  return req;
}

pb::GetObjectRequest Peer::GetRequest(const std::string& bucket, const std::string& key,
                                      const RegisteredMemory& mem, uint64_t length) const {
  pb::GetObjectRequest req;
  req.set_bucket(bucket);
  req.set_key(key);
  req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
  *req.add_destination() = Descriptor(mem, 0, length);
  return req;
}

RawReply Peer::Put(const std::string& bucket, const std::string& key, const std::string& content) {
  auto mem = Allocate(std::max<size_t>(content.size(), 1));
  if (!content.empty()) std::memcpy(mem->data(), content.data(), content.size());
  return Send(Method::kPutObject, PutRequest(bucket, key, *mem, content.size()));
}

RawReply Peer::Get(const std::string& bucket, const std::string& key, std::string* content,
                   pb::GetObjectResponse* resp, uint64_t window) {
  if (window == 0) window = 1 << 20;
  auto mem = Allocate(window);
  RawReply r = Send(Method::kGetObject, GetRequest(bucket, key, *mem, window));
  pb::GetObjectResponse local;
  if (resp == nullptr) resp = &local;
  if (r.status.ok() && resp->ParseFromString(r.body) && content != nullptr) {
    if (resp->path() == pb::TRANSFER_PATH_INLINE) {
      *content = resp->inline_data();
    } else {
      content->assign(reinterpret_cast<const char*>(mem->data()),
                      std::min<uint64_t>(resp->bytes_transferred(), window));
    }
  }
  return r;
}

RawReply Peer::Head(const std::string& bucket, const std::string& key,
                    pb::HeadObjectResponse* resp) {
  pb::HeadObjectRequest req;
  req.set_bucket(bucket);
  req.set_key(key);
  RawReply r = Send(Method::kHeadObject, req);
  if (resp != nullptr && r.status.ok()) resp->ParseFromString(r.body);
  return r;
}

RawReply Peer::Delete(const std::string& bucket, const std::string& key) {
  pb::DeleteObjectRequest req;
  req.set_bucket(bucket);
  req.set_key(key);
  return Send(Method::kDeleteObject, req);
}

RawReply Peer::CreateBucket(const std::string& bucket) {
  pb::CreateBucketRequest req;
  req.set_bucket(bucket);
  return Send(Method::kCreateBucket, req);
}

RawReply Peer::Close() {
  pb::CloseSessionRequest req;
  RawReply r = Send(Method::kCloseSession, req);
  if (r.grpc_status.ok()) session_hex_.clear();
  return r;
}

}  // namespace aobj::conformance
