// Client: one AOBJ/1 session over a gRPC channel, with a UCX worker as the RMA target.
#include "aobj/client.h"

#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "aobj/status.h"
#include "control/raw_call.h"
#include "control/rpc.h"
#include "control/tls.h"
#include "session/signer.h"
#include "transport/ucx_context.h"
#include "transport/ucx_memory.h"
#include "transport/ucx_worker.h"
#include "wire/checksum.h"
#include "wire/crypto.h"
#include "wire/protocol.h"

namespace aobj {
namespace {

namespace pb = aobj::v1;

class BufferImpl final : public Buffer {
 public:
  explicit BufferImpl(std::unique_ptr<RegisteredMemory> mem) : mem_(std::move(mem)) {}
  uint8_t* data() const override { return mem_->data(); }
  size_t size() const override { return mem_->size(); }
  bool allocated_by_library() const override { return mem_->allocated_by_ucx(); }
  const std::string& rkey() const { return mem_->packed_rkey(); }

 private:
  std::unique_ptr<RegisteredMemory> mem_;
};

ObjectInfo InfoFrom(const pb::ObjectMetadata& m) {
  ObjectInfo info;
  info.size = m.size();
  info.etag = m.etag();
  info.last_modified_ms = m.last_modified_ms();
  info.content_type = m.content_type();
  if (m.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C && m.checksum().size() == 4) {
    const auto* c = reinterpret_cast<const uint8_t*>(m.checksum().data());
    info.crc32c = (uint32_t{c[0]} << 24) | (uint32_t{c[1]} << 16) | (uint32_t{c[2]} << 8) | c[3];
  }
  return info;
}

class ClientImpl final : public Client {
 public:
  ~ClientImpl() override {
    Close().IgnoreError();
    StopRenewer();
  }

  absl::Status Init(const ClientOptions& options) {
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
    rpc_ = std::make_unique<RawChannel>(std::move(*channel));

    pb::OpenSessionRequest req;
    req.mutable_versions()->set_min(options_.min_version);
    req.mutable_versions()->set_max(options_.max_version);
    for (uint32_t c : {kCapInline, kCapCrc32c, kCapCrc64Nvme, kCapMultiDescriptor}) {
      req.add_capabilities(c);
    }
    if (options_.grease) req.add_capabilities(0x1A2A3A4A);  // AOBJ-EXT-002
    req.set_worker_address(worker_->address());
    auto* l = req.mutable_requested_limits();
    l->set_max_transfer_bytes(options_.requested_limits.max_transfer_bytes);
    l->set_max_in_flight(options_.requested_limits.max_in_flight);
    l->set_inline_threshold(options_.requested_limits.inline_threshold);
    l->set_max_descriptors(options_.requested_limits.max_descriptors);
    l->set_max_rkey_bytes(options_.requested_limits.max_rkey_bytes);
    req.set_client_name(options_.client_name);
    req.set_require_hardware_protection(options_.require_hardware_protection);
    pb::OpenSessionResponse resp;
    if (absl::Status s = Call(Method::kOpenSession, req, &resp); !s.ok()) return s;
    if (resp.session_id().size() != kSessionIdBytes) {
      return MakeError(ErrorCode::kInternal, "server sent a malformed session id");
    }
    info_.session_id = HexEncode(resp.session_id());
    info_.version = resp.version();
    info_.capabilities.assign(resp.capabilities().begin(), resp.capabilities().end());
    info_.limits.max_transfer_bytes = resp.limits().max_transfer_bytes();
    info_.limits.max_in_flight = resp.limits().max_in_flight();
    info_.limits.inline_threshold = resp.limits().inline_threshold();
    info_.limits.max_descriptors = resp.limits().max_descriptors();
    info_.limits.max_rkey_bytes = resp.limits().max_rkey_bytes();
    info_.protection = static_cast<MemoryProtection>(resp.memory_protection());
    info_.lease_ms = static_cast<int64_t>(resp.lease_ms());
    info_.server_name = resp.server_name();
    {
      absl::MutexLock lock(&mu_);
      open_ = true;
    }
    renewer_ = std::thread([this] { RenewLoop(); });
    return absl::OkStatus();
  }

  const SessionInfo& session() const override { return info_; }

  absl::StatusOr<std::unique_ptr<Buffer>> AllocateBuffer(size_t size) override {
    auto mem = RegisteredMemory::Allocate(*context_, size);
    if (!mem.ok()) return mem.status();
    return std::unique_ptr<Buffer>(new BufferImpl(std::move(*mem)));
  }

  absl::StatusOr<std::unique_ptr<Buffer>> RegisterBuffer(void* data, size_t size) override {
    auto mem = RegisteredMemory::Register(*context_, data, size);
    if (!mem.ok()) return mem.status();
    return std::unique_ptr<Buffer>(new BufferImpl(std::move(*mem)));
  }

  absl::StatusOr<TransferResult> Put(const std::string& bucket, const std::string& key,
                                     const Buffer& buffer, uint64_t size,
                                     const PutOptions& options) override {
    if (size > buffer.size()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("size ", size, " exceeds the buffer's ", buffer.size()));
    }
    const auto& buf = static_cast<const BufferImpl&>(buffer);
    Checksummer sum(options_.checksum);
    sum.Update(buf.data(), size);
    const std::string checksum = sum.Finish();
    pb::PutObjectRequest req;
    req.set_bucket(bucket);
    req.set_key(key);
    req.set_size(size);
    req.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(options_.checksum));
    req.set_checksum(checksum);
    req.set_content_type(options.content_type);
    if (size > 0 && UseInline(size)) {
      req.set_inline_data(reinterpret_cast<const char*>(buf.data()), size);
    } else if (size > 0) {
      // Grant exactly the body, nothing more (AOBJ-MEM-010).
      AddDescriptor(buf, size, req.add_source());
    }
    pb::PutObjectResponse resp;
    if (absl::Status s = DataCall(Method::kPutObject, req, &resp); !s.ok()) return s;
    // AOBJ-DAT-004: never report success for a short or different transfer.
    if (resp.bytes_transferred() != size) {
      return MakeError(ErrorCode::kIncompleteTransfer,
                       absl::StrCat("server reports ", resp.bytes_transferred(),
                                    " bytes moved of ", size));
    }
    if (resp.checksum() != checksum) {
      return MakeError(ErrorCode::kBadDigest,
                       "the server's checksum of the received body differs from ours");
    }
    return TransferResult{InfoFrom(resp.metadata()), resp.bytes_transferred(),
                          static_cast<TransferPath>(resp.path())};
  }

  absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                     Buffer& buffer) override {
    const auto& buf = static_cast<const BufferImpl&>(buffer);
    pb::GetObjectRequest req;
    req.set_bucket(bucket);
    req.set_key(key);
    req.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(options_.checksum));
    req.set_accept_inline(options_.allow_inline && HasCapability(kCapInline));
    AddDescriptor(buf, buf.size(), req.add_destination());
    pb::GetObjectResponse resp;
    if (absl::Status s = DataCall(Method::kGetObject, req, &resp); !s.ok()) return s;
    const uint64_t size = resp.metadata().size();
    // AOBJ-DAT-004
    if (resp.bytes_transferred() != size || size > buf.size()) {
      return MakeError(ErrorCode::kIncompleteTransfer,
                       absl::StrCat("server reports ", resp.bytes_transferred(), " bytes of a ",
                                    size, "-byte object"));
    }
    const TransferPath path = static_cast<TransferPath>(resp.path());
    if (path == TransferPath::kInline) {
      if (resp.inline_data().size() != size) {
        return MakeError(ErrorCode::kIncompleteTransfer, "inline body has the wrong size");
      }
      std::memcpy(buf.data(), resp.inline_data().data(), size);
    } else if (path != TransferPath::kRma && !(path == TransferPath::kNone && size == 0)) {
      return MakeError(ErrorCode::kInternal, "server reported an unknown transfer path");
    }
    const auto algo = static_cast<ChecksumAlgorithm>(resp.checksum_algorithm());
    if (algo != options_.checksum) {
      return MakeError(ErrorCode::kBadDigest, "server answered with another checksum algorithm");
    }
    Checksummer sum(algo);
    sum.Update(buf.data(), size);
    if (sum.Finish() != resp.checksum()) {
      return MakeError(ErrorCode::kBadDigest,
                       absl::StrCat(ChecksumName(algo),
                                    " of the received bytes does not match the server's"));
    }
    return TransferResult{InfoFrom(resp.metadata()), size, path};
  }

  absl::StatusOr<ObjectInfo> Head(const std::string& bucket, const std::string& key) override {
    pb::HeadObjectRequest req;
    req.set_bucket(bucket);
    req.set_key(key);
    pb::HeadObjectResponse resp;
    if (absl::Status s = Call(Method::kHeadObject, req, &resp); !s.ok()) return s;
    return InfoFrom(resp.metadata());
  }

  absl::Status Delete(const std::string& bucket, const std::string& key) override {
    pb::DeleteObjectRequest req;
    req.set_bucket(bucket);
    req.set_key(key);
    pb::DeleteObjectResponse resp;
    return Call(Method::kDeleteObject, req, &resp);
  }

  absl::Status CreateBucket(const std::string& bucket) override {
    pb::CreateBucketRequest req;
    req.set_bucket(bucket);
    pb::CreateBucketResponse resp;
    return Call(Method::kCreateBucket, req, &resp);
  }

  absl::Status DeleteBucket(const std::string& bucket) override {
    pb::DeleteBucketRequest req;
    req.set_bucket(bucket);
    pb::DeleteBucketResponse resp;
    return Call(Method::kDeleteBucket, req, &resp);
  }

  absl::Status HeadBucket(const std::string& bucket) override {
    pb::HeadBucketRequest req;
    req.set_bucket(bucket);
    pb::HeadBucketResponse resp;
    return Call(Method::kHeadBucket, req, &resp);
  }

  absl::Status Renew() override {
    pb::RenewSessionRequest req;
    pb::RenewSessionResponse resp;
    return Call(Method::kRenewSession, req, &resp);
  }

  absl::Status Close() override {
    {
      absl::MutexLock l(&mu_);
      if (!open_) return absl::OkStatus();
      open_ = false;
    }
    StopRenewer();
    pb::CloseSessionRequest req;
    pb::CloseSessionResponse resp;
    return Call(Method::kCloseSession, req, &resp);
  }

 private:
  bool HasCapability(uint32_t c) const {
    return std::find(info_.capabilities.begin(), info_.capabilities.end(), c) !=
           info_.capabilities.end();
  }
  bool UseInline(uint64_t size) const {
    return options_.allow_inline && HasCapability(kCapInline) &&
           size <= info_.limits.inline_threshold;
  }
  static void AddDescriptor(const BufferImpl& buf, uint64_t length, pb::MemoryDescriptor* d) {
    d->set_address(reinterpret_cast<uint64_t>(buf.data()));
    d->set_length(length);
    d->set_rkey(buf.rkey());
    d->set_memory_type(pb::MEMORY_TYPE_HOST);
  }

  // A PUT or GET. When it ends without a reply the server may still be moving bytes, so the
  // data channel is shut for good: destroying the worker stops every emulated operation aimed at
  // this client (AOBJ-MEM-014). The caller must not reuse the buffer before destroying the Client
  // on HARDWARE sessions either; every later data request fails with DATA_CHANNEL_UNAVAILABLE.
  template <class Req, class Resp>
  absl::Status DataCall(Method method, const Req& req, Resp* resp) {
    {
      absl::MutexLock l(&mu_);
      if (data_channel_lost_) {
        return MakeError(ErrorCode::kDataChannelUnavailable,
                         "the data channel was shut after a request ended without a reply "
                         "(AOBJ-MEM-014); connect a new client");
      }
    }
    bool no_reply = false;
    absl::Status s = Call(method, req, resp, &no_reply);
    if (no_reply) {
      std::unique_ptr<UcxWorker> doomed;
      {
        absl::MutexLock l(&mu_);
        data_channel_lost_ = true;
        doomed = std::move(worker_);
      }
      doomed.reset();
    }
    return s;
  }

  void RenewLoop() {
    const absl::Duration period = absl::Milliseconds(std::max<int64_t>(info_.lease_ms / 3, 100));
    absl::MutexLock l(&mu_);
    while (open_) {
      if (mu_.AwaitWithTimeout(absl::Condition(+[](bool* open) { return !*open; }, &open_),
                               period)) {
        break;
      }
      mu_.Unlock();
      Renew().IgnoreError();  // a failed renewal surfaces on the next operation
      mu_.Lock();
    }
  }

  void StopRenewer() {
    if (renewer_.joinable() && renewer_.get_id() != std::this_thread::get_id()) renewer_.join();
  }

  // Signs and sends one request (AOBJ-AUTH-001/002): the signature covers exactly the bytes
  // that travel.
  template <class Req, class Resp>
  absl::Status Call(Method method, const Req& req, Resp* resp, bool* no_reply = nullptr) {
    std::string body;
    req.SerializeToString(&body);
    const std::string session = method == Method::kOpenSession ? "" : info_.session_id;
    RequestAuth auth = signer_->Sign(MethodPath(method), session, body, absl::Now());
    std::vector<std::pair<std::string, std::string>> md = {
        {kMetaAccessKeyId, auth.access_key_id},
        {kMetaTimestamp, auth.timestamp},
        {kMetaNonce, auth.nonce_hex},
        {kMetaSignature, auth.signature_hex}};
    if (!session.empty()) md.emplace_back(kMetaSessionId, session);
    RawReply reply = rpc_->Call(MethodPath(method), body, md,
                                absl::Milliseconds(options_.timeout_ms));
    if (!reply.status.ok()) {
      // AOBJ-ERR-006: without an AOBJ error the outcome is unknown.
      if (no_reply != nullptr) *no_reply = reply.error.code() == aobj::v1::ERROR_CODE_UNSPECIFIED;
      return reply.status;
    }
    if (!resp->ParseFromString(reply.body)) {
      return MakeError(ErrorCode::kInternal,
                       absl::StrCat("malformed ", resp->GetTypeName(), " from the server"));
    }
    return absl::OkStatus();
  }

  ClientOptions options_;
  SessionInfo info_;
  std::unique_ptr<RequestSigner> signer_;
  std::unique_ptr<UcxContext> context_;
  std::unique_ptr<UcxWorker> worker_;
  std::unique_ptr<RawChannel> rpc_;
  absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  bool data_channel_lost_ ABSL_GUARDED_BY(mu_) = false;
  std::thread renewer_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  auto client = std::make_unique<ClientImpl>();
  if (absl::Status s = client->Init(options); !s.ok()) return s;
  return std::unique_ptr<Client>(std::move(client));
}

}  // namespace aobj
