#include "conformance/src/fake_server.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/byte_buffer.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "aobj/status.h"
#include "aobj/v1/aobj.grpc.pb.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/unknown_field_set.h"
#include "transport/ucx_context.h"
#include "transport/ucx_worker.h"
#include "wire/checksum.h"
#include "wire/crypto.h"
#include "wire/protocol.h"
#include "wire/range.h"

extern char** environ;

namespace aobj::conformance {
namespace {

constexpr char kService[] = "aobj.v1.ObjectService";
constexpr uint64_t kMaxWorkerAddress = 8192;          // AOBJ-SES-011
constexpr uint64_t kMaxOp = uint64_t{64} << 20;       // AOBJ-DAT-012: RMA operations of 64 MiB
constexpr uint64_t kMaxExtraWindow = uint64_t{64} << 20;  // window read beyond a PUT's body

std::string Clip(std::string s, size_t n = 600) {
  if (s.size() > n) s = s.substr(0, n) + absl::StrCat("... (", s.size(), " chars)");
  return s;
}

const google::protobuf::MethodDescriptor* MethodDesc(const std::string& name) {
  const auto* sd = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(kService);
  return sd == nullptr ? nullptr : sd->FindMethodByName(name);
}

// A fresh message of the request (or response) type of `name`, or null.
std::unique_ptr<google::protobuf::Message> NewMessage(const std::string& name, bool request) {
  const auto* md = MethodDesc(name);
  if (md == nullptr) return nullptr;
  const auto* type = request ? md->input_type() : md->output_type();
  const auto* proto = google::protobuf::MessageFactory::generated_factory()->GetPrototype(type);
  return std::unique_ptr<google::protobuf::Message>(proto->New());
}

// The request's short text form for the transcript (large octet fields summarized).
std::string ShowRequest(Method method, const std::string& body) {
  if (method == Method::kPutObject) {
    pb::PutObjectRequest r;
    if (!r.ParseFromString(body)) return absl::StrCat(body.size(), " unparsable octets");
    if (r.inline_data().size() > 64) {
      r.set_inline_data(absl::StrCat("<", r.inline_data().size(), " octets>"));
    }
    for (auto& d : *r.mutable_source()) d.set_rkey(absl::StrCat("<", d.rkey().size(), " octets>"));
    return Clip(r.ShortDebugString());
  }
  if (method == Method::kGetObject) {
    pb::GetObjectRequest r;
    if (!r.ParseFromString(body)) return absl::StrCat(body.size(), " unparsable octets");
    for (auto& d : *r.mutable_destination()) {
      d.set_rkey(absl::StrCat("<", d.rkey().size(), " octets>"));
    }
    return Clip(r.ShortDebugString());
  }
  if (method == Method::kOpenSession) {
    pb::OpenSessionRequest r;
    if (!r.ParseFromString(body)) return absl::StrCat(body.size(), " unparsable octets");
    r.set_worker_address(absl::StrCat("<", r.worker_address().size(), " octets>"));
    return Clip(r.ShortDebugString());
  }
  auto m = NewMessage(MethodName(method), true);
  if (m == nullptr || !m->ParseFromString(body)) {
    return absl::StrCat(body.size(), " unparsable octets");
  }
  return Clip(m->ShortDebugString());
}

std::string Md5Hex(const std::string& s) {
  Md5 m;
  m.Update(s.data(), s.size());
  return HexEncode(m.Finish());
}

std::string ChecksumOf(ChecksumAlgorithm algo, const std::string& s) {
  Checksummer c(algo);
  c.Update(s.data(), s.size());
  return c.Finish();
}

// Pads a serialized message with an unknown length-delimited field (number 999) so that it is
// `target` octets long; a message already that long is returned as it is.
std::string PadMessage(std::string body, uint64_t target) {
  auto varint_len = [](uint64_t v) { return v < 128 ? 1 : v < 16384 ? 2 : v < 2097152 ? 3 : 4; };
  if (body.size() + 3 > target) return body;
  uint64_t payload = target - body.size() - 3;  // tag 2 octets ((999 << 3) | 2 = 0x3eba)
  while (payload > 0 && body.size() + 2 + varint_len(payload) + payload > target) --payload;
  body += std::string("\xba\x3e", 2);
  uint64_t v = payload;
  while (v >= 128) {
    body.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  body.push_back(static_cast<char>(v));
  body.append(payload, 'p');
  return body;
}

}  // namespace

FakeScript::FakeScript() {
  supported_versions.set_min(1);
  supported_versions.set_max(1);
  limits.set_max_transfer_bytes(uint64_t{1} << 30);
  limits.set_max_in_flight(16);
  limits.set_inline_threshold(16384);
  limits.set_max_descriptors(16);
  limits.set_max_rkey_bytes(1024);
}

// ---- gRPC glue ------------------------------------------------------------------------------

namespace {

// aobj.v1.ObjectService with every method taking raw octets, so that the fake server sees the
// request exactly as sent (the signature covers those octets, AOBJ-AUTH-016).
class RawService final : public aobj::v1::ObjectService::Service {
 public:
  explicit RawService(FakeServer* fs) {
    const auto* sd = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(kService);
    for (int i = 0; i < sd->method_count(); ++i) {
      const std::string name = sd->method(i)->name();
      const Method method = MethodFromName(name);
      const std::string path = absl::StrCat("/", kService, "/", name);
      MarkMethodRawCallback(
          i, new grpc::internal::CallbackUnaryHandler<grpc::ByteBuffer, grpc::ByteBuffer>(
                 [fs, method, path](grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                    grpc::ByteBuffer* resp) {
                   grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
                   std::string body;
                   std::vector<grpc::Slice> slices;
                   if (req->Dump(&slices).ok()) {
                     for (const auto& s : slices) {
                       body.append(reinterpret_cast<const char*>(s.begin()), s.size());
                     }
                   }
                   std::vector<std::pair<std::string, std::string>> md;
                   for (const auto& [k, v] : ctx->client_metadata()) {
                     md.emplace_back(std::string(k.data(), k.size()),
                                     std::string(v.data(), v.size()));
                   }
                   const bool has_deadline =
                       ctx->deadline() - std::chrono::system_clock::now() <
                       std::chrono::hours(24 * 365);
                   fs->Spawn([fs, method, path, md = std::move(md), body = std::move(body),
                              has_deadline, ctx, reactor, resp]() mutable {
                     FakeServer::Answer a =
                         fs->Handle(method, path, std::move(md), std::move(body), has_deadline);
                     if (a.status.ok()) {
                       grpc::Slice slice(a.body.data(), a.body.size());
                       *resp = grpc::ByteBuffer(&slice, 1);
                     }
                     if (a.has_trailer) ctx->AddTrailingMetadata(kErrorTrailer, a.trailer);
                     if (!a.response_signature.empty()) {
                       ctx->AddTrailingMetadata(kMetaResponseSignature, a.response_signature);
                     }
                     reactor->Finish(a.status);
                   });
                   return reactor;
                 }));
    }
  }
};

}  // namespace

FakeServer::FakeServer(CaseContext& ctx, FakeScript script, std::string access_key_id,
                       std::string secret)
    : ctx_(ctx),
      script_(std::move(script)),
      access_key_id_(std::move(access_key_id)),
      secret_(std::move(secret)),
      signing_key_(DeriveSigningKey(secret_)) {}

FakeServer::~FakeServer() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
    threads = std::move(threads_);
  }
  for (auto& t : threads) t.join();
  if (grpc_) grpc_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  grpc_.reset();
  service_.reset();
  worker_.reset();  // closes every endpoint
  ucx_.reset();
}

void FakeServer::Spawn(std::function<void()> fn) {
  {
    absl::MutexLock l(&mu_);
    if (!stopping_) {
      threads_.emplace_back(std::move(fn));
      return;
    }
  }
  fn();  // the case is over: answered at once, on gRPC's thread
}

absl::Status FakeServer::Start() {
  DataChannelOptions dc = ctx_.target().data_channel;
  // As a server should: UCX's posix shared-memory transport names files the client chooses, and
  // the worker's window checks accept System V segments only (AOBJ-MEM-012).
  if (dc.transports.empty()) dc.transports = "^posix";
  auto ucx = UcxContext::Create(dc);
  if (!ucx.ok()) return ucx.status();
  ucx_ = std::move(*ucx);
  auto worker = UcxWorker::Create(*ucx_, "fake-server");
  if (!worker.ok()) return worker.status();
  worker_ = std::move(*worker);
  service_ = std::make_unique<RawService>(this);
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!script_.tls_cert_file.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    std::ifstream cert(script_.tls_cert_file), key(script_.tls_key_file);
    std::stringstream cert_pem, key_pem;
    cert_pem << cert.rdbuf();
    key_pem << key.rdbuf();
    if (cert_pem.str().empty() || key_pem.str().empty()) {
      return MakeError(ErrorCode::kInternal, "cannot read the fake server's TLS certificate");
    }
    ssl.pem_key_cert_pairs.push_back({key_pem.str(), cert_pem.str()});
    creds = grpc::SslServerCredentials(ssl);
  }
  builder.AddListeningPort("127.0.0.1:0", creds, &port_);
  builder.RegisterService(service_.get());
  // Large bounds: the suite wants to see an oversized request (AOBJ-CTL-006), not have gRPC
  // refuse it, and to send padded replies (AOBJ-CTL-007).
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.SetMaxSendMessageSize(64 << 20);
  grpc_ = builder.BuildAndStart();
  if (grpc_ == nullptr || port_ == 0) {
    return MakeError(ErrorCode::kInternal, "the fake server cannot listen on 127.0.0.1");
  }
  return absl::OkStatus();
}

void FakeServer::AddBucket(const std::string& bucket) {
  absl::MutexLock l(&mu_);
  buckets_.insert(bucket);
}

void FakeServer::AddObject(const std::string& bucket, const std::string& key,
                           const std::string& content) {
  absl::MutexLock l(&mu_);
  buckets_.insert(bucket);
  objects_[{bucket, key}] =
      StoredObject{content, absl::StrCat("\"", Md5Hex(content), "\""), absl::ToUnixMillis(absl::Now())};
}

std::vector<ReceivedRequest> FakeServer::Requests() {
  absl::MutexLock l(&mu_);
  return requests_;
}

std::optional<StoredObject> FakeServer::Object(const std::string& bucket, const std::string& key) {
  absl::MutexLock l(&mu_);
  auto it = objects_.find({bucket, key});
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

std::vector<FakeServer::IssuedToken> FakeServer::Tokens() {
  absl::MutexLock l(&mu_);
  return tokens_;
}

std::vector<UploadRecord> FakeServer::Uploads() {
  absl::MutexLock l(&mu_);
  return uploads_;
}

bool FakeServer::WaitAnswered(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    {
      absl::MutexLock l(&mu_);
      bool all = true;
      for (const ReceivedRequest& r : requests_) all = all && !r.outcome.empty();
      if (all) return true;
    }
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
}

std::vector<std::string> FakeServer::SessionIds() {
  absl::MutexLock l(&mu_);
  return session_ids_;
}

int FakeServer::endpoints_connected() {
  absl::MutexLock l(&mu_);
  return endpoints_;
}

int FakeServer::max_data_in_flight() {
  absl::MutexLock l(&mu_);
  return max_data_in_flight_;
}

int FakeServer::data_requests_over_grant(std::string* first) {
  absl::MutexLock l(&mu_);
  if (first != nullptr) *first = over_grant_first_;
  return over_grant_;
}

// ---- answers --------------------------------------------------------------------------------

FakeServer::Answer FakeServer::Error(ErrorCode code, const std::string& message) {
  Answer a;
  a.status = ToGrpcStatus(MakeError(code, message), &a.trailer);
  a.has_trailer = true;
  a.shown = "";
  return a;
}

FakeServer::Answer FakeServer::Ok(const google::protobuf::Message& m) {
  Answer a;
  a.status = grpc::Status::OK;
  m.SerializeToString(&a.body);
  a.shown = Clip(m.ShortDebugString());
  return a;
}

const Fault* FakeServer::MatchFault(Method method) {
  for (size_t i = 0; i < script_.faults.size(); ++i) {
    const Fault& f = script_.faults[i];
    const bool match = f.method == method ||
                       (f.method == Method::kCount && method != Method::kOpenSession);
    if (!match) continue;
    const int n = ++fault_hits_[static_cast<int>(i)];
    if (f.nth == 0 || f.nth == n) return &f;
  }
  return nullptr;
}

FakeServer::Answer FakeServer::Handle(Method method, const std::string& path,
                                      std::vector<std::pair<std::string, std::string>> metadata,
                                      std::string body, bool has_deadline) {
  ReceivedRequest rec;
  rec.method = method;
  rec.method_name = method == Method::kCount ? path : MethodName(method);
  rec.metadata = std::move(metadata);
  rec.body = std::move(body);
  rec.has_deadline = has_deadline;
  rec.received = absl::Now();
  // The authentication entries; a repeated one is malformed (AOBJ-AUTH-014).
  std::string repeated;
  auto entry = [&](const char* key) {
    int n = 0;
    std::string value;
    for (const auto& [k, v] : rec.metadata) {
      if (k == key && n++ == 0) value = v;
    }
    if (n > 1) repeated = key;
    return value;
  };
  rec.auth.access_key_id = entry(kMetaAccessKeyId);
  rec.auth.timestamp = entry(kMetaTimestamp);
  rec.auth.nonce_hex = entry(kMetaNonce);
  rec.auth.session_hex = entry(kMetaSessionId);
  rec.auth.signature_hex = entry(kMetaSignature);
  int64_t ts = 0;
  absl::Status syntax =
      CheckAuthSyntax(rec.auth, method != Method::kOpenSession, &ts);
  if (syntax.ok() && !repeated.empty()) {
    syntax = MakeError(ErrorCode::kMissingAuthentication, absl::StrCat(repeated, " sent twice"));
  }
  rec.auth_syntax_ok = syntax.ok();
  rec.auth_syntax_error = syntax.ok() ? "" : std::string(syntax.message());
  rec.signature_ok = rec.auth.access_key_id == access_key_id_ &&
                     VerifySignature(signing_key_, path, rec.auth, rec.body).ok();
  {
    absl::MutexLock l(&mu_);
    rec.index = static_cast<int>(requests_.size());
    requests_.push_back(rec);
  }
  if (script_.reply_delay > absl::ZeroDuration()) absl::SleepFor(script_.reply_delay);
  Answer a = Process(rec);
  if (a.status.ok()) {
    rec.outcome = "OK";
  } else {
    pb::Error e;
    rec.outcome = a.has_trailer && e.ParseFromString(a.trailer)
                      ? absl::StrCat(e.name().empty() ? absl::StrCat("code ", e.code()) : e.name(),
                                     " (gRPC ", static_cast<int>(a.status.error_code()), ")")
                      : absl::StrCat("gRPC ", static_cast<int>(a.status.error_code()),
                                     " without aobj-error-bin");
    if (!a.status.error_message().empty()) absl::StrAppend(&rec.outcome, ": ", a.status.error_message());
  }
  {
    absl::MutexLock l(&mu_);
    requests_[rec.index] = rec;
  }
  Exchange ex;
  ex.peer = "client";
  ex.method = rec.method_name;
  ex.request = ShowRequest(method, rec.body);
  if (!rec.auth_syntax_ok) absl::StrAppend(&ex.request, " [malformed authentication: ", rec.auth_syntax_error, "]");
  absl::StrAppend(&ex.request, rec.signature_ok ? " [signature verifies]" : " [signature does NOT verify]");
  if (!rec.rma_error.empty()) absl::StrAppend(&ex.request, " [RMA: ", rec.rma_error, "]");
  ex.outcome = rec.outcome;
  ex.response = a.shown;
  ctx_.Record(std::move(ex));
  return a;
}

FakeServer::Answer FakeServer::Process(ReceivedRequest& rec) {
  // A server's order (AOBJ-AUTH-009), without the clock and replay checks: the cases look at
  // timestamps and nonces themselves.
  if (!rec.auth_syntax_ok) return Error(ErrorCode::kMissingAuthentication, rec.auth_syntax_error);
  if (rec.auth.access_key_id != access_key_id_) {
    return Error(ErrorCode::kInvalidAccessKeyId, "unknown access key id");
  }
  if (!rec.signature_ok) return Error(ErrorCode::kSignatureDoesNotMatch, "bad signature");
  if (rec.method == Method::kOpenSession) return OpenSession(rec);

  Session session;
  const Fault* fault = nullptr;
  {
    absl::MutexLock l(&mu_);
    auto it = sessions_.find(rec.auth.session_hex);
    if (it == sessions_.end()) return Error(ErrorCode::kNoSuchSession, "no such session");
    if (it->second.dead) {
      return Error(it->second.dead_code, "the session is no longer open");
    }
    fault = MatchFault(rec.method);
    rec.fault_applied = fault != nullptr;
    if (fault != nullptr && fault->kind == FaultKind::kError &&
        (fault->code == static_cast<uint32_t>(ErrorCode::kSessionExpired) ||
         fault->code == static_cast<uint32_t>(ErrorCode::kNoSuchSession))) {
      it->second.dead = true;
      it->second.dead_code = static_cast<ErrorCode>(fault->code);
    }
    session = it->second;
  }
  // AOBJ-FLO-010: data requests outstanding from arrival to answer, the delay of a kDelay fault
  // included (FakeScript::reply_delay, applied before, is not). A request that arrives past the
  // slack after the first granting reply is "late": its client had the grant when it sent it, so
  // a client that follows the grant never has more late requests outstanding than the grant.
  // Requests sent before the grant arrived are left out, whatever their timing.
  const bool data = rec.method == Method::kPutObject || rec.method == Method::kGetObject ||
                    rec.method == Method::kUploadPart || rec.method == Method::kGetObjects ||
                    rec.method == Method::kPutObjects;
  bool late = false;
  if (data) {
    absl::MutexLock l(&mu_);
    late = script_.grant_credits != 0 && rec.received > first_grant_ + kGrantSlack;
    if (late && late_outstanding_ >= static_cast<int>(script_.grant_credits) &&
        over_grant_++ == 0) {
      over_grant_first_ = absl::StrCat(
          rec.method_name, " arrived ", absl::FormatDuration(rec.received - first_grant_),
          " after the first reply granting ", script_.grant_credits, " credit(s), with ",
          late_outstanding_, " other data request(s) sent since the grant outstanding");
    }
    late_outstanding_ += late ? 1 : 0;
  }
  absl::Cleanup answered = [this, late] {
    if (!late) return;
    absl::MutexLock l(&mu_);
    --late_outstanding_;
  };
  if (fault != nullptr && fault->kind == FaultKind::kError) {
    Answer a;
    pb::Error e;
    e.set_code(static_cast<pb::ErrorCode>(static_cast<int32_t>(fault->code)));
    const ErrorInfo info = GetErrorInfo(static_cast<ErrorCode>(fault->code));
    const bool known = info.code == static_cast<ErrorCode>(fault->code) && fault->code != 0;
    e.set_name(!fault->name.empty() ? fault->name : known ? std::string(info.name) : "");
    e.set_s3_code(known ? std::string(info.s3_code) : "InternalError");
    e.set_message("scripted failure of the conformance suite");
    e.set_retryable(fault->retryable);
    e.set_retry_after_ms(fault->retry_after_ms);
    e.SerializeToString(&a.trailer);
    a.has_trailer = true;
    a.status = grpc::Status(fault->grpc_code, "scripted failure");
    return a;
  }
  if (fault != nullptr && fault->kind == FaultKind::kErrorNoTrailer) {
    Answer a;
    a.status = grpc::Status(fault->grpc_code, "scripted failure without aobj-error-bin");
    return a;
  }
  if (fault != nullptr && fault->kind == FaultKind::kDelay) {
    absl::SleepFor(fault->delay);
    fault = nullptr;
  }
  Answer a;
  auto bad_message = [&] {
    return Error(ErrorCode::kInvalidArgument, "the request message does not parse");
  };
  switch (rec.method) {
    case Method::kConfirmEndpoint: {
      pb::ConfirmEndpointRequest r;
      if (!r.ParseFromString(rec.body)) return bad_message();
      if (!ConstantTimeEquals(r.proof(), session.endpoint_proof)) {
        return Error(ErrorCode::kAccessDenied, "the endpoint proof does not match");
      }
      if (absl::Status st = worker_->Bind(session.endpoint); !st.ok()) {
        return Error(ErrorCode::kDataChannelUnavailable, std::string(st.message()));
      }
      a = Ok(pb::ConfirmEndpointResponse());
      break;
    }
    case Method::kRenewSession: {
      pb::RenewSessionResponse r;
      r.set_lease_ms(script_.lease_ms);
      a = Ok(r);
      break;
    }
    case Method::kCloseSession: {
      uint64_t endpoint = 0;
      {
        absl::MutexLock l(&mu_);
        auto it = sessions_.find(rec.auth.session_hex);
        endpoint = it->second.endpoint;
        // Remembered as closed: later requests naming it get NO_SUCH_SESSION (AOBJ-SES-010).
        it->second.dead = true;
        it->second.dead_code = ErrorCode::kNoSuchSession;
      }
      worker_->Disconnect(endpoint);
      a = Ok(pb::CloseSessionResponse());
      break;
    }
    case Method::kCreateBucket: {
      pb::CreateBucketRequest r;
      if (!r.ParseFromString(rec.body)) return bad_message();
      absl::MutexLock l(&mu_);
      if (!buckets_.insert(r.bucket()).second) {
        return Error(ErrorCode::kBucketAlreadyExists, "bucket exists");
      }
      a = Ok(pb::CreateBucketResponse());
      break;
    }
    case Method::kHeadBucket: {
      pb::HeadBucketRequest r;
      if (!r.ParseFromString(rec.body)) return bad_message();
      absl::MutexLock l(&mu_);
      if (buckets_.count(r.bucket()) == 0) return Error(ErrorCode::kNoSuchBucket, "no such bucket");
      a = Ok(pb::HeadBucketResponse());
      break;
    }
    case Method::kDeleteBucket: {
      pb::DeleteBucketRequest r;
      if (!r.ParseFromString(rec.body)) return bad_message();
      absl::MutexLock l(&mu_);
      if (buckets_.erase(r.bucket()) == 0) return Error(ErrorCode::kNoSuchBucket, "no such bucket");
      a = Ok(pb::DeleteBucketResponse());
      break;
    }
    case Method::kHeadObject: {
      pb::HeadObjectRequest r;
      if (!r.ParseFromString(rec.body)) return bad_message();
      absl::MutexLock l(&mu_);
      if (buckets_.count(r.bucket()) == 0) return Error(ErrorCode::kNoSuchBucket, "no such bucket");
      auto it = objects_.find({r.bucket(), r.key()});
      if (it == objects_.end()) return Error(ErrorCode::kNoSuchKey, "no such key");
      pb::HeadObjectResponse resp;
      auto* m = resp.mutable_metadata();
      m->set_size(it->second.content.size());
      if (fault != nullptr && fault->kind == FaultKind::kUndersizedHead &&
          !it->second.content.empty()) {
        m->set_size(it->second.content.size() - 1);
      }
      m->set_etag(it->second.etag);
      m->set_last_modified_ms(it->second.last_modified_ms);
      m->set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
      m->set_checksum(ChecksumOf(ChecksumAlgorithm::kCrc32c, it->second.content));
      a = Ok(resp);
      break;
    }
    case Method::kDeleteObject: {
      pb::DeleteObjectRequest r;
      if (!r.ParseFromString(rec.body)) return bad_message();
      absl::MutexLock l(&mu_);
      if (buckets_.count(r.bucket()) == 0) return Error(ErrorCode::kNoSuchBucket, "no such bucket");
      objects_.erase({r.bucket(), r.key()});
      a = Ok(pb::DeleteObjectResponse());
      break;
    }
    case Method::kListObjectsV2:
      a = List(rec, session);
      break;
    case Method::kCreateMultipartUpload:
      a = CreateUpload(rec);
      break;
    case Method::kCompleteMultipartUpload:
      a = CompleteUpload(rec);
      break;
    case Method::kAbortMultipartUpload:
      a = AbortUpload(rec);
      break;
    case Method::kUploadPart:
    case Method::kPutObject:
    case Method::kGetObjects:
    case Method::kPutObjects:
    case Method::kGetObject: {
      {
        absl::MutexLock l(&mu_);
        // AOBJ-SES-012: the session's credit of data requests.
        if (data_in_flight_ >= static_cast<int>(session.limits.max_in_flight())) {
          return Error(ErrorCode::kTooManyTransfers, "max_in_flight data requests in progress");
        }
        ++data_in_flight_;
        max_data_in_flight_ = std::max(max_data_in_flight_, data_in_flight_);
      }
      a = rec.method == Method::kPutObject    ? PutObject(rec, session, fault)
          : rec.method == Method::kGetObject  ? GetObject(rec, session, fault)
          : rec.method == Method::kGetObjects ? GetObjects(rec, session, fault)
          : rec.method == Method::kPutObjects ? PutObjects(rec, session, fault)
                                              : UploadPart(rec, session, fault);
      if (a.status.ok() && script_.grant_credits != 0) {
        AppendCredits(&a.body, script_.grant_credits);  // AOBJ-FLO-008
        absl::StrAppend(&a.shown, " [credits ", script_.grant_credits, "]");
      }
      absl::MutexLock l(&mu_);
      --data_in_flight_;
      if (a.status.ok() && script_.grant_credits != 0) {
        first_grant_ = std::min(first_grant_, absl::Now());
      }
      break;
    }
    default:
      return Error(ErrorCode::kInvalidRequest,
                   absl::StrCat(rec.method_name, " is not implemented by the suite's fake server"));
  }
  if (a.status.ok() && fault != nullptr && fault->kind == FaultKind::kPadResponse) {
    a.body = PadMessage(std::move(a.body), fault->pad_to);
    absl::StrAppend(&a.shown, " [padded with an unknown field to ", a.body.size(), " octets]");
  }
  return a;
}

FakeServer::Answer FakeServer::OpenSession(ReceivedRequest& rec) {
  pb::OpenSessionRequest req;
  if (!req.ParseFromString(rec.body)) {
    return Error(ErrorCode::kInvalidArgument, "the request message does not parse");
  }
  // AOBJ-SES-004
  if (!req.has_versions() || req.versions().min() == 0 ||
      req.versions().min() > req.versions().max()) {
    return Error(ErrorCode::kInvalidArgument, "bad version range");
  }
  uint32_t lo = std::max(req.versions().min(), script_.supported_versions.min());
  uint32_t hi = std::min(req.versions().max(), script_.supported_versions.max());
  if (!req.offered_versions().empty()) {  // AOBJ-SES-035: the list wins over the range
    lo = 1;
    hi = 0;
    for (uint32_t v : req.offered_versions()) {
      if (!IsGrease(v) && v >= script_.supported_versions.min() &&
          v <= script_.supported_versions.max()) {
        hi = std::max(hi, v);
      }
    }
  }
  if (script_.refuse_version || lo > hi) {
    Answer a;
    a.status = ToGrpcStatus(MakeError(ErrorCode::kUnsupportedVersion, "no common version"),
                            &a.trailer, &script_.supported_versions);
    a.has_trailer = true;
    return a;
  }
  // AOBJ-SES-039, AOBJ-SES-040: UCX (binding 1) is the only binding here; an empty offer means it.
  bool ucx_offered = req.bindings().empty();
  for (const pb::BindingOffer& b : req.bindings()) ucx_offered = ucx_offered || b.binding() == 1;
  if (!ucx_offered) {
    return Error(ErrorCode::kNegotiationFailed,
                 "UCX (binding 1) is not among the offered bindings");
  }
  if (req.worker_address().empty() || req.worker_address().size() > kMaxWorkerAddress) {
    return Error(ErrorCode::kInvalidArgument, "worker_address empty or above 8192 octets");
  }
  auto ep = worker_->Connect(req.worker_address());
  if (!ep.ok()) {
    return Error(ErrorCode::kDataChannelUnavailable,
                 absl::StrCat("cannot connect to the worker: ", ep.status().message()));
  }
  Session s;
  s.principal = rec.auth.access_key_id;
  s.endpoint = *ep;
  // AOBJ-SES-025: challenges to the client's worker; RMA only after its proof (AOBJ-SES-027).
  const std::string id = RandomBytes(kSessionIdBytes);
  auto challenges = worker_->SendChallenges(*ep, id);
  if (!challenges.ok()) {
    worker_->Disconnect(*ep);
    return Error(ErrorCode::kDataChannelUnavailable,
                 absl::StrCat("cannot challenge the worker: ", challenges.status().message()));
  }
  s.endpoint_proof = EndpointProof(DeriveEndpointKey(signing_key_, id), id, *challenges);
  pb::OpenSessionResponse resp;
  resp.set_version(script_.answer_version != 0 ? script_.answer_version : hi);  // AOBJ-SES-002
  resp.set_binding(script_.answer_binding != 0 ? script_.answer_binding : 1);   // AOBJ-SES-039
  std::set<uint32_t> offered(req.capabilities().begin(), req.capabilities().end());
  for (uint32_t c : script_.capabilities) {
    if (script_.list_all_capabilities || offered.count(c) > 0) {
      s.capabilities.insert(c);
      resp.add_capabilities(c);
    }
  }
  if (script_.grease_capability != 0) {
    resp.add_capabilities(script_.grease_capability);
    // AOBJ-EXT-017: with grease parameters, and a grease field (AOBJ-EXT-016) beside them.
    pb::CapabilityParams* p = resp.add_capability_params();
    p->set_capability(script_.grease_capability);
    p->set_params("\x0a\x1a\x2a\x3a\x4a");
    resp.GetReflection()->MutableUnknownFields(&resp)->AddLengthDelimited(1234, "grease");
  }
  s.limits = script_.limits;
  const pb::Limits& want = req.requested_limits();
  auto lower = [](uint64_t server, uint64_t asked) {
    return asked != 0 && asked < server ? asked : server;
  };
  s.limits.set_max_transfer_bytes(lower(s.limits.max_transfer_bytes(), want.max_transfer_bytes()));
  s.limits.set_max_in_flight(static_cast<uint32_t>(lower(s.limits.max_in_flight(), want.max_in_flight())));
  s.limits.set_inline_threshold(lower(s.limits.inline_threshold(), want.inline_threshold()));
  s.limits.set_max_descriptors(static_cast<uint32_t>(lower(s.limits.max_descriptors(), want.max_descriptors())));
  s.limits.set_max_rkey_bytes(static_cast<uint32_t>(lower(s.limits.max_rkey_bytes(), want.max_rkey_bytes())));
  resp.set_session_id(id);
  resp.set_endpoint_challenges(static_cast<uint32_t>(challenges->size() / kEndpointChallengeBytes));
  resp.set_lease_ms(script_.lease_ms);
  *resp.mutable_limits() = s.limits;
  resp.set_memory_protection(pb::MEMORY_PROTECTION_EMULATED);
  resp.set_server_name("aobj-conformance fake server");
  for (const std::string& g : script_.gateways) resp.add_gateways(g);
  *resp.mutable_supported_versions() = script_.supported_versions;
  {
    absl::MutexLock l(&mu_);
    ++endpoints_;
    session_ids_.push_back(HexEncode(id));
    sessions_[HexEncode(id)] = std::move(s);
  }
  // AOBJ-AUTH-020, unless the script says otherwise.
  Answer a = Ok(resp);
  using RS = FakeScript::ResponseSignature;
  if (script_.response_signature != RS::kAbsent) {
    a.response_signature = SignOpenSessionResponse(signing_key_, rec.auth.signature_hex, a.body);
  }
  if (script_.response_signature == RS::kRewrittenAfterSigning) {
    resp.set_memory_protection(pb::MEMORY_PROTECTION_HARDWARE);
    a.body = resp.SerializeAsString();
    a.shown += " [memory_protection rewritten to HARDWARE after signing]";
  } else if (script_.response_signature == RS::kAbsent) {
    a.shown += " [no aobj-response-signature]";
  }
  return a;
}

namespace {

// Checks a request's descriptors against the session (Section 7.2, in the order a server would)
// and fills `windows`; returns the sum of their lengths.
absl::StatusOr<uint64_t> Windows(const google::protobuf::RepeatedPtrField<pb::MemoryDescriptor>& ds,
                                 const pb::Limits& limits, bool multi,
                                 std::vector<RemoteWindow>* windows) {
  const uint32_t max = multi ? limits.max_descriptors() : 1;
  if (static_cast<uint32_t>(ds.size()) > max) {
    return MakeError(ErrorCode::kInvalidDescriptor,
                     absl::StrCat(ds.size(), " descriptors; the session takes ", max));
  }
  uint64_t total = 0;
  for (const auto& d : ds) {
    if (d.length() == 0 || d.address() + d.length() < d.address()) {
      return MakeError(ErrorCode::kInvalidDescriptor, "empty or wrapping window");
    }
    if (d.memory_type() != pb::MEMORY_TYPE_HOST) {
      return MakeError(ErrorCode::kUnsupportedMemoryType, "only HOST memory");
    }
    if (d.rkey().empty() || d.rkey().size() > limits.max_rkey_bytes()) {
      return MakeError(ErrorCode::kInvalidRkey, "rkey empty or above max_rkey_bytes");
    }
    windows->push_back(RemoteWindow{d.address(), d.length(), d.rkey()});
    total += d.length();
  }
  return total;
}

// Ops that move the first `n` octets of `local` in ordered fill across `windows` (Section 7.3),
// in pieces of at most kMaxOp.
std::vector<RmaOp> OrderedFill(const std::vector<RemoteWindow>& windows, uint8_t* local,
                               uint64_t n) {
  std::vector<RmaOp> ops;
  uint64_t at = 0;
  for (size_t w = 0; w < windows.size() && at < n; ++w) {
    uint64_t in_window = std::min(windows[w].length, n - at);
    for (uint64_t off = 0; off < in_window; off += kMaxOp) {
      const uint64_t len = std::min(kMaxOp, in_window - off);
      ops.push_back(RmaOp{w, windows[w].address + off, local + at + off, static_cast<size_t>(len)});
    }
    at += in_window;
  }
  return ops;
}

}  // namespace

std::optional<FakeServer::Answer> FakeServer::ReceiveBody(
    ReceivedRequest& rec, const Session& s, uint64_t size,
    const google::protobuf::RepeatedPtrField<pb::MemoryDescriptor>& source,
    const std::string& inline_data, std::string* body, pb::TransferPath* path) {
  if (!inline_data.empty()) {
    // AOBJ-DAT-007
    if (s.capabilities.count(1) == 0 || !source.empty() || inline_data.size() != size) {
      return Error(ErrorCode::kInvalidArgument, "inline_data not allowed here (AOBJ-DAT-007)");
    }
    if (size > s.limits.inline_threshold()) {
      return Error(ErrorCode::kEntityTooLarge, "inline body above inline_threshold");
    }
    *body = inline_data;
    *path = pb::TRANSFER_PATH_INLINE;
    return std::nullopt;
  }
  if (size == 0) return std::nullopt;
  if (source.empty()) return Error(ErrorCode::kInvalidDescriptor, "no descriptor");
  std::vector<RemoteWindow> windows;
  if (std::optional<Answer> bad = TakeWindows(rec, s, source, size, &windows)) return bad;
  // AOBJ-MEM-017: read every window whole (remote read access over all of it), unless the
  // windows are far larger than the body.
  const uint64_t total = rec.window_bytes;
  const uint64_t read = total <= size + kMaxExtraWindow ? total : size;
  std::string local(read, '\0');
  if (std::optional<Answer> failed = Move(rec, s, windows, RmaDirection::kRead, local.data(), read)) {
    return failed;
  }
  rec.rma_whole_windows_ok = read == total;
  *body = local.substr(0, size);
  if (script_.reread_put_after > absl::ZeroDuration()) {
    // AOBJ-MEM-011: the window must still hold the body until the reply.
    absl::SleepFor(script_.reread_put_after);
    std::string again(size, '\0');
    if (Move(rec, s, windows, RmaDirection::kRead, again.data(), size)) {
      rec.rma_error = absl::StrCat("second read failed: ", rec.rma_error);
      return Error(ErrorCode::kTransferFailed, rec.rma_error);
    }
    if (again != *body) rec.rma_error = "the window changed before the reply (AOBJ-MEM-011)";
  }
  *path = pb::TRANSFER_PATH_RMA;
  return std::nullopt;
}

std::optional<FakeServer::Answer> FakeServer::TakeWindows(
    ReceivedRequest& rec, const Session& s,
    const google::protobuf::RepeatedPtrField<pb::MemoryDescriptor>& descriptors, uint64_t size,
    std::vector<RemoteWindow>* windows) {
  auto total = Windows(descriptors, s.limits, s.capabilities.count(4) > 0, windows);
  if (!total.ok()) return Error(ErrorCodeOf(total.status()), std::string(total.status().message()));
  rec.window_bytes = *total;
  rec.endpoint = s.endpoint;
  for (const RemoteWindow& w : *windows) rec.windows.emplace_back(w.address, w.length);
  if (*total < size) return Error(ErrorCode::kDescriptorTooSmall, "windows below the size");
  return std::nullopt;
}

std::optional<FakeServer::Answer> FakeServer::Move(ReceivedRequest& rec, const Session& s,
                                                   const std::vector<RemoteWindow>& windows,
                                                   RmaDirection direction, char* local,
                                                   uint64_t n) {
  RmaBatch batch;
  batch.direction = direction;
  batch.windows = windows;
  batch.max_rkey_bytes = s.limits.max_rkey_bytes();
  batch.ops = OrderedFill(windows, reinterpret_cast<uint8_t*>(local), n);
  absl::Status st = worker_->Execute(s.endpoint, batch, absl::Seconds(20));
  rec.rma_end = absl::Now();
  if (st.ok()) return std::nullopt;
  rec.rma_error = std::string(st.message());
  return Error(ErrorCodeOf(st), absl::StrCat("RMA ",
                                             direction == RmaDirection::kRead ? "read" : "write",
                                             " failed: ", st.message()));
}

FakeServer::Answer FakeServer::PutObject(ReceivedRequest& rec, const Session& s,
                                         const Fault* fault) {
  pb::PutObjectRequest req;
  if (!req.ParseFromString(rec.body)) {
    return Error(ErrorCode::kInvalidArgument, "the request message does not parse");
  }
  {
    absl::MutexLock l(&mu_);
    if (buckets_.count(req.bucket()) == 0) return Error(ErrorCode::kNoSuchBucket, "no such bucket");
  }
  const bool crc64 = req.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC64NVME;
  if (!(req.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C && s.capabilities.count(2)) &&
      !(crc64 && s.capabilities.count(3))) {
    return Error(ErrorCode::kInvalidArgument, "checksum algorithm not negotiated (AOBJ-DAT-023)");
  }
  const auto algo = crc64 ? ChecksumAlgorithm::kCrc64Nvme : ChecksumAlgorithm::kCrc32c;
  if (req.size() > s.limits.max_transfer_bytes()) {
    return Error(ErrorCode::kEntityTooLarge, "size above max_transfer_bytes");
  }
  std::string body;
  pb::TransferPath path = pb::TRANSFER_PATH_NONE;
  if (std::optional<Answer> failed =
          ReceiveBody(rec, s, req.size(), req.source(), req.inline_data(), &body, &path)) {
    return *failed;
  }
  const std::string sum = ChecksumOf(algo, body);
  if (sum != req.checksum()) return Error(ErrorCode::kBadDigest, "checksum mismatch");
  StoredObject obj{body, absl::StrCat("\"", Md5Hex(body), "\""), absl::ToUnixMillis(absl::Now())};
  {
    absl::MutexLock l(&mu_);
    objects_[{req.bucket(), req.key()}] = obj;
  }
  pb::PutObjectResponse resp;
  resp.set_bytes_transferred(body.size());
  resp.set_checksum_algorithm(req.checksum_algorithm());
  resp.set_checksum(sum);
  resp.set_path(path);
  auto* m = resp.mutable_metadata();
  m->set_size(body.size());
  m->set_etag(obj.etag);
  m->set_last_modified_ms(obj.last_modified_ms);
  m->set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
  m->set_checksum(ChecksumOf(ChecksumAlgorithm::kCrc32c, body));
  if (fault != nullptr) {
    switch (fault->kind) {
      case FaultKind::kShortTransfer:
        if (body.size() > 0) resp.set_bytes_transferred(body.size() - 1);
        break;
      case FaultKind::kWrongChecksum: {
        std::string c = resp.checksum();
        if (!c.empty()) c[0] = static_cast<char>(c[0] ^ 0x5a);
        resp.set_checksum(c);
        break;
      }
      case FaultKind::kPathUnspecified:
        resp.set_path(pb::TRANSFER_PATH_UNSPECIFIED);
        break;
      default:
        break;
    }
  }
  return Ok(resp);
}

// GetObjects (spec 9.16), whole objects only: each item's octets at the start of its region, one
// RMA batch per item. Faults apply to the first item that moves octets: kShortTransfer (one
// octet less, reported so), kPartialWrite (half written, all reported), kWrongChecksum.
FakeServer::Answer FakeServer::GetObjects(ReceivedRequest& rec, const Session& s,
                                          const Fault* fault) {
  pb::GetObjectsRequest req;
  if (!req.ParseFromString(rec.body)) {
    return Error(ErrorCode::kInvalidArgument, "the request message does not parse");
  }
  if (s.capabilities.count(8) == 0) {
    return Error(ErrorCode::kInvalidArgument, "BATCH_GET not negotiated (AOBJ-OBJ-236)");
  }
  if (req.items_size() == 0 || req.items_size() > 1000) {
    return Error(ErrorCode::kInvalidArgument, "1 to 1000 items (AOBJ-OBJ-237)");
  }
  {
    absl::MutexLock l(&mu_);
    if (buckets_.count(req.bucket()) == 0) return Error(ErrorCode::kNoSuchBucket, "no such bucket");
  }
  std::vector<RemoteWindow> windows;
  if (std::optional<Answer> bad = TakeWindows(rec, s, req.destination(), 0, &windows)) return *bad;
  for (const pb::GetObjectsItem& it : req.items()) {
    if (it.offset() + it.length() > rec.window_bytes || it.offset() + it.length() < it.offset()) {
      return Error(ErrorCode::kDescriptorTooSmall, "a region ends past the windows");
    }
  }
  pb::GetObjectsResponse resp;
  resp.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
  bool faulted = false;
  for (const pb::GetObjectsItem& it : req.items()) {
    pb::GetObjectsResult* r = resp.add_results();
    std::optional<StoredObject> obj;
    {
      absl::MutexLock l(&mu_);
      auto found = objects_.find({req.bucket(), it.key()});
      if (found != objects_.end()) obj = found->second;
    }
    auto fail = [&](ErrorCode code, const std::string& message) {
      const ErrorInfo info = GetErrorInfo(code);
      r->mutable_error()->set_code(static_cast<pb::ErrorCode>(info.code));
      r->mutable_error()->set_name(std::string(info.name));
      r->mutable_error()->set_s3_code(std::string(info.s3_code));
      r->mutable_error()->set_message(message);
    };
    if (!obj) {
      fail(ErrorCode::kNoSuchKey, "no such key");
      continue;
    }
    const uint64_t size = obj->content.size();
    if (size > it.length()) {
      fail(ErrorCode::kDescriptorTooSmall, "the region is smaller than the object");
      continue;
    }
    const bool fault_here = fault != nullptr && !faulted && size > 1;
    faulted = faulted || fault_here;
    uint64_t moved = size, write = size;
    if (fault_here && fault->kind == FaultKind::kShortTransfer) moved = write = size - 1;
    if (fault_here && fault->kind == FaultKind::kPartialWrite) write = size / 2;
    std::string local = obj->content;
    // The RMA writes of region octets [offset, offset + write): ordered fill over the windows
    // from the scatter list's start, clipped to the region.
    std::vector<RmaOp> all = OrderedFill(windows, nullptr, it.offset() + write);
    RmaBatch batch;
    batch.direction = RmaDirection::kWrite;
    batch.windows = windows;
    batch.max_rkey_bytes = s.limits.max_rkey_bytes();
    for (RmaOp op : all) {
      const uint64_t lo = reinterpret_cast<uintptr_t>(op.local);
      const uint64_t hi = lo + op.length;
      if (hi <= it.offset()) continue;
      const uint64_t from = std::max<uint64_t>(lo, it.offset());
      op.remote += from - lo;
      op.length = static_cast<size_t>(hi - from);
      op.local = reinterpret_cast<uint8_t*>(local.data()) + (from - it.offset());
      batch.ops.push_back(op);
    }
    if (!batch.ops.empty()) {
      absl::Status st = worker_->Execute(s.endpoint, batch, absl::Seconds(20));
      rec.rma_end = absl::Now();
      if (!st.ok()) {
        rec.rma_error = std::string(st.message());
        return Error(ErrorCodeOf(st), absl::StrCat("RMA write failed: ", st.message()));
      }
    }
    r->set_bytes_transferred(moved);
    std::string sum = ChecksumOf(ChecksumAlgorithm::kCrc32c, obj->content.substr(0, moved));
    if (fault_here && fault->kind == FaultKind::kWrongChecksum) sum[0] = static_cast<char>(~sum[0]);
    r->set_checksum(sum);
    auto* m = r->mutable_metadata();
    m->set_size(size);
    m->set_etag(obj->etag);
    m->set_last_modified_ms(obj->last_modified_ms);
    m->set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
    m->set_checksum(ChecksumOf(ChecksumAlgorithm::kCrc32c, obj->content));
  }
  return Ok(resp);
}

// PutObjects (spec 9.17), CRC32C only: the whole scatter list is read in one RMA batch, then
// each item stored as a PutObject of its own. Faults apply to the first item of more than one
// octet: kWrongChecksum (stored with its first octet flipped, the checksum of what was stored
// reported), kShortTransfer (stored without its last octet, reported so); kStoreThenFail to
// every item, and then to the whole request.
FakeServer::Answer FakeServer::PutObjects(ReceivedRequest& rec, const Session& s,
                                          const Fault* fault) {
  pb::PutObjectsRequest req;
  if (!req.ParseFromString(rec.body)) {
    return Error(ErrorCode::kInvalidArgument, "the request message does not parse");
  }
  if (s.capabilities.count(9) == 0) {
    return Error(ErrorCode::kInvalidArgument, "BATCH_PUT not negotiated (AOBJ-OBJ-245)");
  }
  if (req.items_size() == 0 || req.items_size() > 1000) {
    return Error(ErrorCode::kInvalidArgument, "1 to 1000 items (AOBJ-OBJ-246)");
  }
  if (req.checksum_algorithm() != pb::CHECKSUM_ALGORITHM_CRC32C) {
    return Error(ErrorCode::kInvalidArgument, "the suite's fake server takes CRC32C batches");
  }
  {
    absl::MutexLock l(&mu_);
    if (buckets_.count(req.bucket()) == 0) return Error(ErrorCode::kNoSuchBucket, "no such bucket");
  }
  uint64_t capacity = 0;
  for (const pb::MemoryDescriptor& d : req.source()) capacity += d.length();
  std::string all;
  pb::TransferPath path = pb::TRANSFER_PATH_NONE;
  if (std::optional<Answer> failed =
          ReceiveBody(rec, s, capacity, req.source(), std::string(), &all, &path)) {
    return *failed;
  }
  pb::PutObjectsResponse resp;
  resp.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
  const bool store_then_fail = fault != nullptr && fault->kind == FaultKind::kStoreThenFail;
  bool faulted = false;
  for (const pb::PutObjectsItem& it : req.items()) {
    pb::PutObjectsResult* r = resp.add_results();
    if (it.offset() + it.length() > all.size() || it.offset() + it.length() < it.offset()) {
      return Error(ErrorCode::kDescriptorTooSmall, "a region ends past the windows");
    }
    std::string body = all.substr(it.offset(), it.length());
    if (ChecksumOf(ChecksumAlgorithm::kCrc32c, body) != it.checksum()) {
      const ErrorInfo info = GetErrorInfo(ErrorCode::kBadDigest);
      r->mutable_error()->set_code(static_cast<pb::ErrorCode>(info.code));
      r->mutable_error()->set_name(std::string(info.name));
      r->mutable_error()->set_s3_code(std::string(info.s3_code));
      r->mutable_error()->set_message("checksum mismatch");
      continue;
    }
    const bool fault_here = fault != nullptr && body.size() > 1 && (store_then_fail || !faulted);
    faulted = faulted || fault_here;
    if (fault_here && (fault->kind == FaultKind::kWrongChecksum || store_then_fail)) {
      body[0] = static_cast<char>(body[0] ^ 0x5a);
    }
    if (fault_here && fault->kind == FaultKind::kShortTransfer) body.pop_back();
    StoredObject obj{body, absl::StrCat("\"", Md5Hex(body), "\""), absl::ToUnixMillis(absl::Now())};
    {
      absl::MutexLock l(&mu_);
      objects_[{req.bucket(), it.key()}] = obj;
    }
    r->set_checksum(ChecksumOf(ChecksumAlgorithm::kCrc32c, body));
    auto* m = r->mutable_metadata();
    m->set_size(body.size());
    m->set_etag(obj.etag);
    m->set_last_modified_ms(obj.last_modified_ms);
    m->set_content_type(it.content_type());
    m->set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
    m->set_checksum(ChecksumOf(ChecksumAlgorithm::kCrc32c, body));
  }
  if (store_then_fail) {
    return Error(ErrorCode::kInternal, "the batch failed after its items were stored");
  }
  return Ok(resp);
}

FakeServer::Answer FakeServer::GetObject(ReceivedRequest& rec, const Session& s,
                                         const Fault* fault) {
  pb::GetObjectRequest req;
  if (!req.ParseFromString(rec.body)) {
    return Error(ErrorCode::kInvalidArgument, "the request message does not parse");
  }
  std::optional<StoredObject> obj;
  {
    absl::MutexLock l(&mu_);
    if (buckets_.count(req.bucket()) == 0) return Error(ErrorCode::kNoSuchBucket, "no such bucket");
    auto it = objects_.find({req.bucket(), req.key()});
    if (it == objects_.end()) return Error(ErrorCode::kNoSuchKey, "no such key");
    obj = it->second;
  }
  // Section 9.9: a range selects the octets moved; metadata stays the whole object's.
  std::optional<ResolvedRange> range;
  if (req.has_range()) {
    auto spec = RangeFromProto(req.range());
    if (!spec.ok()) return Error(ErrorCode::kInvalidArgument, std::string(spec.status().message()));
    auto resolved = ResolveRange(*spec, obj->content.size());
    if (!resolved.ok()) {
      return Error(ErrorCodeOf(resolved.status()), std::string(resolved.status().message()));
    }
    range = *resolved;
  }
  pb::ChecksumAlgorithm wire_algo = req.checksum_algorithm();
  if (wire_algo == pb::CHECKSUM_ALGORITHM_UNSPECIFIED) wire_algo = pb::CHECKSUM_ALGORITHM_CRC32C;
  if (!(wire_algo == pb::CHECKSUM_ALGORITHM_CRC32C && s.capabilities.count(2)) &&
      !(wire_algo == pb::CHECKSUM_ALGORITHM_CRC64NVME && s.capabilities.count(3))) {
    return Error(ErrorCode::kInvalidArgument, "checksum algorithm not negotiated (AOBJ-DAT-023)");
  }
  const auto algo = wire_algo == pb::CHECKSUM_ALGORITHM_CRC64NVME ? ChecksumAlgorithm::kCrc64Nvme
                                                                  : ChecksumAlgorithm::kCrc32c;
  const std::string content =
      range ? obj->content.substr(range->first, range->length) : obj->content;
  const uint64_t size = content.size();  // the octets to move
  if (size > s.limits.max_transfer_bytes()) {
    return Error(ErrorCode::kEntityTooLarge, "object above max_transfer_bytes");
  }
  const FaultKind kind = fault != nullptr ? fault->kind : FaultKind::kPadResponse;
  const bool is_fault = fault != nullptr;
  pb::GetObjectResponse resp;
  uint64_t moved = size;
  if (is_fault && kind == FaultKind::kShortTransfer && size > 0) moved = size - 1;
  if ((is_fault && kind == FaultKind::kPathInline) ||
      (size > 0 && req.accept_inline() && s.capabilities.count(1) > 0 &&
       size <= s.limits.inline_threshold())) {
    resp.set_path(pb::TRANSFER_PATH_INLINE);
    resp.set_inline_data(content.substr(0, moved));
  } else if (size == 0) {
    resp.set_path(pb::TRANSFER_PATH_NONE);
  } else {
    std::vector<RemoteWindow> windows;
    if (std::optional<Answer> bad = TakeWindows(rec, s, req.destination(), size, &windows)) {
      return *bad;
    }
    uint64_t write = moved;
    if (is_fault && kind == FaultKind::kPartialWrite) write = size / 2;
    std::string local = content;
    if (std::optional<Answer> failed =
            Move(rec, s, windows, RmaDirection::kWrite, local.data(), write)) {
      return *failed;
    }
    // AOBJ-MEM-017: the whole window was written when the body fills it.
    rec.rma_whole_windows_ok = write == rec.window_bytes;
    resp.set_path(pb::TRANSFER_PATH_RMA);
  }
  resp.set_bytes_transferred(moved);
  resp.set_checksum_algorithm(wire_algo);
  resp.set_checksum(ChecksumOf(algo, content));
  auto* m = resp.mutable_metadata();
  m->set_size(obj->content.size());
  m->set_etag(obj->etag);
  m->set_last_modified_ms(obj->last_modified_ms);
  m->set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
  m->set_checksum(ChecksumOf(ChecksumAlgorithm::kCrc32c, obj->content));
  if (range) {
    pb::ContentRange* cr = resp.mutable_content_range();
    cr->set_first(range->first);
    cr->set_last(range->last());
    cr->set_complete_length(obj->content.size());
    if (is_fault && kind == FaultKind::kShiftedContentRange) {
      // The same length, one octet later: offsets that are not the resolution of the range.
      cr->set_first(range->first + 1);
      cr->set_last(range->last() + 1);
    }
    if (is_fault && kind == FaultKind::kWrongCompleteLength) {
      cr->set_complete_length(obj->content.size() + 1);
    }
  }
  if (is_fault && kind == FaultKind::kWrongChecksum) {
    std::string c = resp.checksum();
    if (!c.empty()) c[0] = static_cast<char>(c[0] ^ 0x5a);
    resp.set_checksum(c);
  }
  if (is_fault && kind == FaultKind::kPathUnspecified) resp.set_path(pb::TRANSFER_PATH_UNSPECIFIED);
  Answer a = Ok(resp);
  if (resp.inline_data().size() > 64) {
    pb::GetObjectResponse shown = resp;
    shown.set_inline_data(absl::StrCat("<", resp.inline_data().size(), " octets>"));
    a.shown = Clip(shown.ShortDebugString());
  }
  return a;
}

// ---- multipart (Section 9.15) ---------------------------------------------------------------

UploadRecord* FakeServer::FindUpload(const std::string& id, const std::string& bucket,
                                     const std::string& key) {
  for (UploadRecord& u : uploads_) {
    if (u.upload_id == id && u.bucket == bucket && u.key == key && !u.completed && !u.aborted) {
      return &u;
    }
  }
  return nullptr;
}

FakeServer::Answer FakeServer::CreateUpload(ReceivedRequest& rec) {
  pb::CreateMultipartUploadRequest req;
  if (!req.ParseFromString(rec.body)) {
    return Error(ErrorCode::kInvalidArgument, "the request message does not parse");
  }
  absl::MutexLock l(&mu_);
  if (buckets_.count(req.bucket()) == 0) return Error(ErrorCode::kNoSuchBucket, "no such bucket");
  UploadRecord u;
  // AOBJ-OBJ-203's form, and nothing a client could derive from the key or the clock
  // (AOBJ-OBJ-202: the client treats it as opaque).
  u.upload_id = HexEncode(RandomBytes(16));
  u.bucket = req.bucket();
  u.key = req.key();
  uploads_.push_back(u);
  pb::CreateMultipartUploadResponse resp;
  resp.set_bucket(u.bucket);
  resp.set_key(u.key);
  resp.set_upload_id(u.upload_id);
  return Ok(resp);
}

FakeServer::Answer FakeServer::UploadPart(ReceivedRequest& rec, const Session& s,
                                          const Fault* fault) {
  pb::UploadPartRequest req;
  if (!req.ParseFromString(rec.body)) {
    return Error(ErrorCode::kInvalidArgument, "the request message does not parse");
  }
  auto find = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return FindUpload(req.upload_id(), req.bucket(), req.key());
  };
  {
    absl::MutexLock l(&mu_);
    if (find() == nullptr) return Error(ErrorCode::kNoSuchUpload, "no such upload in progress");
  }
  if (req.part_number() < 1 || req.part_number() > 10000) {
    return Error(ErrorCode::kInvalidArgument, "part_number outside 1..10000");
  }
  const bool crc64 = req.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC64NVME;
  if (!(req.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C && s.capabilities.count(2)) &&
      !(crc64 && s.capabilities.count(3))) {
    return Error(ErrorCode::kInvalidArgument, "checksum algorithm not negotiated (AOBJ-DAT-023)");
  }
  if (req.size() > s.limits.max_transfer_bytes()) {
    return Error(ErrorCode::kEntityTooLarge, "size above max_transfer_bytes");
  }
  std::string body;
  pb::TransferPath path = pb::TRANSFER_PATH_NONE;
  if (std::optional<Answer> failed =
          ReceiveBody(rec, s, req.size(), req.source(), req.inline_data(), &body, &path)) {
    return *failed;
  }
  const std::string sum =
      ChecksumOf(crc64 ? ChecksumAlgorithm::kCrc64Nvme : ChecksumAlgorithm::kCrc32c, body);
  if (sum != req.checksum()) return Error(ErrorCode::kBadDigest, "checksum mismatch");
  const std::string etag = absl::StrCat("\"", Md5Hex(body), "\"");
  {
    absl::MutexLock l(&mu_);
    UploadRecord* u = find();
    if (u == nullptr) return Error(ErrorCode::kNoSuchUpload, "the upload ended meanwhile");
    u->parts[req.part_number()] = UploadRecord::Part{body, etag};
  }
  pb::UploadPartResponse resp;
  resp.set_bytes_transferred(body.size());
  resp.set_checksum_algorithm(req.checksum_algorithm());
  resp.set_checksum(sum);
  resp.set_path(path);
  resp.set_etag(etag);
  if (fault != nullptr && fault->kind == FaultKind::kWrongChecksum && !sum.empty()) {
    std::string c = sum;
    c[0] = static_cast<char>(c[0] ^ 0x5a);
    resp.set_checksum(c);
  }
  if (fault != nullptr && fault->kind == FaultKind::kShortTransfer && !body.empty()) {
    resp.set_bytes_transferred(body.size() - 1);
  }
  return Ok(resp);
}

FakeServer::Answer FakeServer::CompleteUpload(ReceivedRequest& rec) {
  pb::CompleteMultipartUploadRequest req;
  if (!req.ParseFromString(rec.body)) {
    return Error(ErrorCode::kInvalidArgument, "the request message does not parse");
  }
  absl::MutexLock l(&mu_);
  UploadRecord* u = FindUpload(req.upload_id(), req.bucket(), req.key());
  if (u == nullptr) return Error(ErrorCode::kNoSuchUpload, "no such upload in progress");
  if (req.parts().empty()) return Error(ErrorCode::kInvalidArgument, "no parts listed");
  std::string content;
  Md5 md5s;
  uint32_t previous = 0;
  for (const pb::CompletedPart& p : req.parts()) {
    if (p.part_number() <= previous) {
      return Error(ErrorCode::kInvalidPartOrder, "part numbers not ascending");
    }
    previous = p.part_number();
    auto it = u->parts.find(p.part_number());
    std::string etag = p.etag();
    if (etag.size() < 2 || etag.front() != '"') etag = absl::StrCat("\"", etag, "\"");
    if (it == u->parts.end() || it->second.etag != etag) {
      return Error(ErrorCode::kInvalidPart,
                   absl::StrCat("part ", p.part_number(), " was not uploaded with that ETag"));
    }
    content += it->second.content;
    std::string raw;
    HexDecode(it->second.etag.substr(1, it->second.etag.size() - 2), &raw);
    md5s.Update(raw.data(), raw.size());
  }
  // AOBJ-OBJ-258, AOBJ-OBJ-259: the client's checksum of the whole, when it sent one.
  if (req.checksum_algorithm() != pb::CHECKSUM_ALGORITHM_UNSPECIFIED || !req.checksum().empty()) {
    if (req.checksum_algorithm() != pb::CHECKSUM_ALGORITHM_CRC32C || req.checksum().size() != 4) {
      return Error(ErrorCode::kInvalidArgument, "a full-object checksum is CRC32C, 4 octets");
    }
    if (req.checksum() != ChecksumOf(ChecksumAlgorithm::kCrc32c, content)) {
      return Error(ErrorCode::kBadDigest,
                   "the parts assemble to content of another CRC32C than the request names");
    }
  }
  u->completed = true;
  const std::string etag =
      absl::StrCat("\"", HexEncode(md5s.Finish()), "-", req.parts_size(), "\"");
  StoredObject obj{content, etag, absl::ToUnixMillis(absl::Now())};
  objects_[{req.bucket(), req.key()}] = obj;
  pb::CompleteMultipartUploadResponse resp;
  auto* m = resp.mutable_metadata();
  m->set_size(content.size());
  m->set_etag(etag);
  m->set_last_modified_ms(obj.last_modified_ms);
  m->set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
  m->set_checksum(ChecksumOf(ChecksumAlgorithm::kCrc32c, content));
  return Ok(resp);
}

FakeServer::Answer FakeServer::AbortUpload(ReceivedRequest& rec) {
  pb::AbortMultipartUploadRequest req;
  if (!req.ParseFromString(rec.body)) {
    return Error(ErrorCode::kInvalidArgument, "the request message does not parse");
  }
  absl::MutexLock l(&mu_);
  UploadRecord* u = FindUpload(req.upload_id(), req.bucket(), req.key());
  if (u == nullptr) return Error(ErrorCode::kNoSuchUpload, "no such upload in progress");
  u->aborted = true;
  return Ok(pb::AbortMultipartUploadResponse());
}

FakeServer::Answer FakeServer::List(ReceivedRequest& rec, const Session& s) {
  pb::ListObjectsV2Request req;
  if (!req.ParseFromString(rec.body)) {
    return Error(ErrorCode::kInvalidArgument, "the request message does not parse");
  }
  absl::MutexLock l(&mu_);
  if (buckets_.count(req.bucket()) == 0) return Error(ErrorCode::kNoSuchBucket, "no such bucket");
  std::string from;  // first key that may be listed
  bool inclusive = false;
  if (!req.continuation_token().empty()) {
    // AOBJ-OBJ-106: the token must come back unchanged, with the same bucket, prefix and
    // delimiter.
    const IssuedToken* found = nullptr;
    for (const auto& t : tokens_) {
      if (t.token == req.continuation_token()) found = &t;
    }
    if (found == nullptr || found->bucket != req.bucket() || found->prefix != req.prefix() ||
        found->delimiter != req.delimiter()) {
      return Error(ErrorCode::kInvalidContinuationToken,
                   "a token this server did not issue for this listing");
    }
    from = found->next_key;
    inclusive = true;
  } else {
    from = req.start_after();
  }
  uint32_t max = req.max_keys() == 0 ? 1000 : std::min<uint32_t>(req.max_keys(), 1000);
  max = std::min(max, script_.list_page);
  pb::ListObjectsV2Response resp;
  uint32_t n = 0;
  std::string last_prefix;
  for (auto it = objects_.lower_bound({req.bucket(), from}); it != objects_.end(); ++it) {
    if (it->first.first != req.bucket()) break;
    const std::string& key = it->first.second;
    if (!inclusive && key == from) continue;
    if (!absl::StartsWith(key, req.prefix())) continue;
    std::string common;
    if (!req.delimiter().empty()) {
      const size_t d = key.find(req.delimiter(), req.prefix().size());
      if (d != std::string::npos) common = key.substr(0, d + req.delimiter().size());
    }
    if (!common.empty() && common == last_prefix) continue;
    if (n == max) {
      IssuedToken t;
      // Opaque octets, not text: a client must send them back as they are.
      t.token = RandomBytes(12) + std::string("\x00\xff", 2);
      t.bucket = req.bucket();
      t.prefix = req.prefix();
      t.delimiter = req.delimiter();
      t.next_key = key;
      tokens_.push_back(t);
      resp.set_is_truncated(true);
      resp.set_next_continuation_token(t.token);
      break;
    }
    ++n;
    if (!common.empty()) {
      last_prefix = common;
      resp.add_common_prefixes(common);
    } else {
      auto* e = resp.add_objects();
      e->set_key(key);
      e->set_size(it->second.content.size());
      e->set_etag(it->second.etag);
      e->set_last_modified_ms(it->second.last_modified_ms);
    }
  }
  return Ok(resp);
}

// ---- the client under test ------------------------------------------------------------------

namespace {

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out.push_back(c);
  }
  return out + "'";
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// NAME of the first line "error: NAME" (leading spaces allowed) of `text`, or "".
std::string ErrorLine(const std::string& text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripLeadingAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&line, "error: ")) continue;
    line = absl::StripLeadingAsciiWhitespace(line);
    const size_t end = line.find_first_of(" \t\r");
    return std::string(line.substr(0, end));
  }
  return "";
}

}  // namespace

ClientRun RunClient(CaseContext& ctx, const FakeServer& server,
                    const std::vector<std::string>& args, absl::Duration limit) {
  ClientRun run;
  run.command = ctx.target().client_exec;
  for (const auto& a : args) absl::StrAppend(&run.command, " ", ShellQuote(a));
  const std::string stem = absl::StrCat(ctx.target().work_dir, "/", ctx.Unique("client"));
  const std::string out_path = stem + ".out", err_path = stem + ".err";
  // The environment of the contract, prepared before fork (the child may only exec).
  std::vector<std::string> env;
  bool has_net_devices = false;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    if (absl::StartsWith(entry, "AOBJ_")) continue;  // nothing of the suite's own settings
    has_net_devices = has_net_devices || absl::StartsWith(entry, "UCX_NET_DEVICES=");
    env.push_back(entry);
  }
  if (!has_net_devices) {  // the loopback rule, or --net-devices
    const std::string& devices = ctx.target().data_channel.net_devices;
    env.push_back("UCX_NET_DEVICES=" + (devices.empty() ? std::string("lo") : devices));
  }
  env.push_back("AOBJ_ENDPOINT=" + server.endpoint());
  if (!server.tls_ca_file().empty()) env.push_back("AOBJ_TLS_CA=" + server.tls_ca_file());
  env.push_back("AOBJ_ACCESS_KEY_ID=" + server.access_key_id());
  env.push_back("AOBJ_SECRET_ACCESS_KEY=" + server.secret());
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string shell_cmd = run.command;
  const absl::Time start = absl::Now();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    const int in = open("/dev/null", O_RDONLY);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) _exit(126);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    char sh[] = "/bin/sh", dash_c[] = "-c";
    char* argv[] = {sh, dash_c, shell_cmd.data(), nullptr};
    execve("/bin/sh", argv, envp.data());
    _exit(127);
  }
  if (pid < 0) {
    ctx.Require(false, "start the client under test", "fork succeeds", std::strerror(errno));
  }
  setpgid(pid, pid);  // either side may win the race; both set the same group
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (absl::Now() - start > limit) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      run.timed_out = true;
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  kill(-pid, SIGKILL);  // anything the driver left behind in its group
  run.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (!run.timed_out && WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  run.out = ReadAll(out_path);
  run.err = ReadAll(err_path);
  run.error_name = ErrorLine(run.out);
  if (run.error_name.empty()) run.error_name = ErrorLine(run.err);
  Exchange ex;
  ex.peer = "suite";
  ex.method = "run client";
  ex.request = run.command;
  ex.outcome = run.timed_out ? absl::StrCat("killed after ", absl::FormatDuration(limit))
                             : absl::StrCat("exit ", run.exit_code,
                                            run.error_name.empty() ? "" : ", error: ",
                                            run.error_name);
  std::string tail = run.err.size() > 400 ? run.err.substr(run.err.size() - 400) : run.err;
  ex.response = Clip(absl::StrCat("stderr: ", tail));
  ctx.Record(std::move(ex));
  return run;
}

}  // namespace aobj::conformance
