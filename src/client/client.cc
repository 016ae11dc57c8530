// Client: one AOBJ/1 session over a gRPC channel, with a UCX worker as the RMA target.
#include "aobj/client.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <random>
#include <system_error>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "aobj/device.h"
#include "aobj/status.h"
#include "client/async.h"
#include "client/batch_plan.h"
#include "client/range_spec.h"
#include "control/raw_call.h"
#include "control/rpc.h"
#include "control/tls.h"
#include "session/signer.h"
#include "transport/ucx_context.h"
#include "transport/ucx_memory.h"
#include "transport/ucx_worker.h"
#include "wire/checksum.h"
#include "wire/crypto.h"
#include "wire/etag.h"
#include "wire/fast_frame.h"
#include "wire/protocol.h"
#include "wire/range.h"

#define AOBJ_CLIENT_RETURN_IF_ERROR(expr)     \
  do {                                        \
    if (absl::Status _s = (expr); !_s.ok()) { \
      return _s;                              \
    }                                         \
  } while (0)

namespace aobj {
namespace {

namespace pb = aobj::v1;
using client_internal::AsyncPool;
using client_internal::CancelSender;
using client_internal::OpControl;
using client_internal::OperationImpl;
using client_internal::ScopedDeadline;
using client_internal::tls_deadline;
using client_internal::tls_op;

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

// The pause before busy retry `attempt` (0 first): a random point in the upper half of
// 20 ms * 2^attempt, at most 1 s (AOBJ-FLO-003: exponentially increasing, randomized).
absl::Duration BusyPause(int attempt) {
  thread_local std::minstd_rand rng{std::random_device{}()};
  const int64_t ceiling_us = std::min<int64_t>(int64_t{20000} << std::min(attempt, 10), 1000000);
  std::uniform_int_distribution<int64_t> pick(ceiling_us / 2, ceiling_us);
  return absl::Microseconds(pick(rng));
}

// A Buffer: registered for its whole life, or (ClientOptions::register_per_request, caller
// memory only) just a region that each request registers for itself (RequestRegistrations).
// `issuer` is the Client that issued it: a Client uses only its own buffers (Issued()).
class BufferImpl final : public Buffer {
 public:
  BufferImpl(const void* issuer, std::unique_ptr<RegisteredMemory> mem)
      : issuer_(issuer), mem_(std::move(mem)), data_(mem_->data()), size_(mem_->size()) {}
  BufferImpl(const void* issuer, uint8_t* data, size_t size)
      : issuer_(issuer), data_(data), size_(size) {}
  uint8_t* data() const override { return data_; }
  size_t size() const override { return size_; }
  bool allocated_by_library() const override { return mem_ != nullptr && mem_->allocated_by_ucx(); }
  bool registered() const { return mem_ != nullptr; }
  const std::string& rkey() const { return mem_->packed_rkey(); }
  const void* issuer() const { return issuer_; }

 private:
  const void* const issuer_;
  std::unique_ptr<RegisteredMemory> mem_;  // null: registered per request
  uint8_t* data_;
  size_t size_;
};

// The registrations one request made for windows of per-request buffers; destroying it unmaps
// them (AOBJ-MEM-011: only after the reply, or after the worker is gone, AOBJ-MEM-014).
// What a request registered for itself (unmapped after the reply), and whether any of its
// windows is memory UCX did not allocate, which UCX's software RMA reaches through this side's
// progress (the worker then polls for the length of the call: UcxWorker::spin_counter).
struct RequestRegistrations {
  std::vector<std::unique_ptr<RegisteredMemory>> memory;
  bool emulated_windows = false;
};

ObjectInfo InfoFrom(const pb::ObjectMetadata& m) {
  ObjectInfo info;
  info.size = m.size();
  info.etag = m.etag();
  info.last_modified_ms = m.last_modified_ms();
  info.content_type = m.content_type();
  info.user_metadata.insert(m.user_metadata().begin(), m.user_metadata().end());
  if (m.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C && m.checksum().size() == 4) {
    const auto* c = reinterpret_cast<const uint8_t*>(m.checksum().data());
    info.crc32c = (uint32_t{c[0]} << 24) | (uint32_t{c[1]} << 16) | (uint32_t{c[2]} << 8) | c[3];
  }
  return info;
}

class ClientImpl final : public Client, public CancelSender {
 public:
  ~ClientImpl() override {
    // Queued operations complete CANCELLED, running ones finish (each bounded by its deadline)
    // before the session closes under them.
    if (pool_ != nullptr) pool_->Stop();
    Close().IgnoreError();
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
    control_ = *channel;
    rpc_ = std::make_unique<RawChannel>(std::move(*channel));

    pb::OpenSessionRequest req;
    req.mutable_versions()->set_min(options_.min_version);
    req.mutable_versions()->set_max(options_.max_version);
    // AOBJ-DAT-022: CRC32C always offered. AOBJ-EXT-005: every capability the client may use is
    // offered here, so HasCapability (the server's answer) never enables one it did not offer.
    for (uint32_t c : {kCapInline, kCapCrc32c, kCapCrc64Nvme, kCapMultiDescriptor, kCapCancel}) {
      req.add_capabilities(c);
    }
    if (options_.batch_get) req.add_capabilities(kCapBatchGet);
    if (options_.batch_put) req.add_capabilities(kCapBatchPut);
    if (options_.opaque_etags) req.add_capabilities(kCapOpaqueEtag);
    if (options_.fast_path) req.add_capabilities(kCapFastPath);
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
    info_.limits.min_part_size = resp.limits().min_part_size();
    info_.protection = static_cast<MemoryProtection>(resp.memory_protection());
    info_.lease_ms = static_cast<int64_t>(resp.lease_ms());
    info_.server_name = resp.server_name();
    // AOBJ-SES-033: a hint; entries out of bounds are dropped, not followed.
    for (const std::string& g : resp.gateways()) {
      if (!g.empty() && g.size() <= kMaxGatewayAddressBytes &&
          info_.gateways.size() < kMaxGateways) {
        info_.gateways.push_back(g);
      }
    }
    // AOBJ-SES-026: prove that this worker is the session's, over the challenges the server sent
    // it; until then the server moves no byte by RMA (AOBJ-SES-027). A server that sends none
    // predates endpoint binding.
    if (resp.endpoint_challenges() > 0) {
      auto challenges = worker_->AwaitChallenges(
          resp.session_id(), resp.endpoint_challenges(),
          absl::Milliseconds(std::clamp<int64_t>(options_.timeout_ms, 1000, 10000)));
      absl::Status s = challenges.status();
      if (s.ok()) {
        pb::ConfirmEndpointRequest confirm;
        confirm.set_proof(signer_->EndpointProof(resp.session_id(), *challenges));
        pb::ConfirmEndpointResponse ack;
        s = Call(Method::kConfirmEndpoint, confirm, &ack);
      }
      if (!s.ok()) {
        pb::CloseSessionResponse closed;
        Call(Method::kCloseSession, pb::CloseSessionRequest(), &closed).IgnoreError();
        return s;
      }
    }
    // AOBJ-DAT-163, AOBJ-DAT-164: fast requests only after the endpoint is confirmed, to the
    // address the server gave; without one (or when it cannot be reached) everything stays on
    // gRPC.
    if (HasCapability(kCapFastPath) && !resp.fast_path_address().empty() &&
        resp.fast_path_address().size() <= kMaxWorkerAddressBytes) {
      absl::Status s = worker_->SetMessageHandler(kFastReplyAmId,
                                                  [this](absl::string_view m) { OnFastReply(m); });
      if (s.ok()) {
        // A server side that goes away fails the endpoint: the requests waiting for a reply
        // end at once, and later ones go by gRPC.
        auto ep =
            worker_->ConnectForMessages(resp.fast_path_address(), [this](const absl::Status& why) {
              fast_closed_.store(true);
              FailFastWaiters();
              (void)why;
            });
        if (ep.ok()) {
          fast_ep_ = *ep;
          info_.fast_path_address = resp.fast_path_address();
        }
      }
    }
    {
      absl::MutexLock lock(&mu_);
      open_ = true;
    }
    pool_ = std::make_unique<AsyncPool>(options_.async_threads);
    renewer_ = std::thread([this] { RenewLoop(); });
    return absl::OkStatus();
  }

  const SessionInfo& session() const override { return info_; }

  absl::StatusOr<std::unique_ptr<Buffer>> AllocateBuffer(size_t size) override {
    auto mem = RegisteredMemory::Allocate(*context_, size);
    if (!mem.ok()) return mem.status();
    return std::unique_ptr<Buffer>(new BufferImpl(this, std::move(*mem)));
  }

  absl::StatusOr<std::unique_ptr<Buffer>> RegisterBuffer(void* data, size_t size) override {
    // AOBJ-MEM-026: UCX without CUDA support would take device memory for host memory.
    const MemoryKind kind = options_.classify_memory ? options_.classify_memory(data, size)
                                                     : ClassifyMemory(data);
    if (kind != MemoryKind::kHost) {
      return MakeError(ErrorCode::kUnsupportedMemoryType,
                       absl::StrCat("the buffer is CUDA ",
                                    kind == MemoryKind::kCudaDevice ? "device" : "managed",
                                    " memory, which this client's UCX cannot register; move it "
                                    "through host memory with aobj::DeviceStager (aobj/device.h)"));
    }
    if (options_.register_per_request) {
      if (data == nullptr || size == 0) {
        return MakeError(ErrorCode::kInvalidArgument, "no memory to register");
      }
      return std::unique_ptr<Buffer>(new BufferImpl(this, static_cast<uint8_t*>(data), size));
    }
    auto mem = RegisteredMemory::Register(*context_, data, size);
    if (!mem.ok()) return mem.status();
    return std::unique_ptr<Buffer>(new BufferImpl(this, std::move(*mem)));
  }

  absl::StatusOr<TransferResult> Put(const std::string& bucket, const std::string& key,
                                     const Buffer& buffer, uint64_t size,
                                     const PutOptions& options) override {
    if (size > buffer.size()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("size ", size, " exceeds the buffer's ", buffer.size()));
    }
    return Put(bucket, key, std::vector<BufferSlice>{{&buffer, 0, size}}, options);
  }

  absl::StatusOr<TransferResult> Put(const std::string& bucket, const std::string& key,
                                     const std::vector<BufferSlice>& source,
                                     const PutOptions& options) override {
    ScopedDeadline scope(options.call);
    absl::StatusOr<uint64_t> total = CheckSlices(source);
    if (!total.ok()) return total.status();
    const uint64_t size = *total;
    const std::string checksum = ChecksumOf(options_.checksum, source, size);
    pb::PutObjectRequest req;
    req.set_bucket(bucket);
    req.set_key(key);
    req.set_size(size);
    req.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(options_.checksum));
    req.set_checksum(checksum);
    req.set_content_type(options.content_type);
    req.mutable_user_metadata()->insert(options.user_metadata.begin(),
                                        options.user_metadata.end());
    SetPreconditions(options.conditions, &req);
    RequestRegistrations registrations;  // unmapped after the reply
    if (size > 0 && UseInline(size)) {
      std::string body;
      body.reserve(size);
      ForEachSpan(source, size,
                  [&](uint8_t* p, size_t n) { body.append(reinterpret_cast<char*>(p), n); });
      req.set_inline_data(std::move(body));
    } else if (size > 0) {
      // Grant exactly the body, nothing more (AOBJ-MEM-010).
      if (absl::Status s = AddWindows(source, req.mutable_source(), &registrations); !s.ok()) {
        return s;
      }
    }
    pb::PutObjectResponse resp;
    if (absl::Status s = DataCall(Method::kPutObject, req, &resp, registrations.emulated_windows);
        !s.ok()) {
      return s;
    }
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
    // AOBJ-DAT-031: the reported path is the one this request used.
    const TransferPath sent = size == 0 ? TransferPath::kNone
                              : req.inline_data().empty() ? TransferPath::kRma
                                                          : TransferPath::kInline;
    if (static_cast<TransferPath>(resp.path()) != sent) {
      return MakeError(ErrorCode::kInternal, "server reported a transfer path this request did not use");
    }
    return TransferResult{InfoFrom(resp.metadata()), resp.bytes_transferred(), sent};
  }

  absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                     Buffer& buffer) override {
    return Get(bucket, key, buffer, GetOptions{});
  }

  absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                     Buffer& buffer, const GetOptions& options) override {
    return Get(bucket, key, std::vector<BufferSlice>{{&buffer, 0, buffer.size()}}, options);
  }

  absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                     const std::vector<BufferSlice>& destination,
                                     const GetOptions& options) override {
    ScopedDeadline scope(options.call);
    absl::StatusOr<uint64_t> capacity = CheckSlices(destination);
    if (!capacity.ok()) return capacity.status();
    pb::GetObjectRequest req;
    req.set_bucket(bucket);
    req.set_key(key);
    req.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(options_.checksum));
    req.set_accept_inline(options_.allow_inline && HasCapability(kCapInline));
    if (options.range.has_value()) RangeToProto(ToSpec(*options.range), req.mutable_range());
    SetPreconditions(options.conditions, &req);
    RequestRegistrations registrations;  // unmapped after the reply
    if (absl::Status s = AddWindows(destination, req.mutable_destination(), &registrations);
        !s.ok()) {
      return s;
    }
    pb::GetObjectResponse resp;
    if (absl::Status s = DataCall(Method::kGetObject, req, &resp, registrations.emulated_windows);
        !s.ok()) {
      return s;
    }
    // The octets the reply claims to have moved: the object, or the range (AOBJ-DAT-105).
    absl::StatusOr<std::optional<ContentRange>> range = CheckContentRange(options.range, resp);
    if (!range.ok()) return range.status();
    const uint64_t size = range->has_value() ? (*range)->last - (*range)->first + 1
                                             : resp.metadata().size();
    const TransferPath path = static_cast<TransferPath>(resp.path());
    // AOBJ-DAT-162: an inline body longer than the windows is what the server would have
    // refused with DESCRIPTOR_TOO_SMALL had it moved by RMA; nothing is copied.
    if (path == TransferPath::kInline && resp.bytes_transferred() == size && size > *capacity) {
      return MakeError(
          ErrorCode::kDescriptorTooSmall,
          absl::StrCat("the object has ", size, " octets; the windows hold ", *capacity));
    }
    // AOBJ-DAT-004
    if (resp.bytes_transferred() != size || size > *capacity) {
      return MakeError(ErrorCode::kIncompleteTransfer,
                       absl::StrCat("server reports ", resp.bytes_transferred(), " bytes of ",
                                    size, " expected, into windows of ", *capacity));
    }
    // AOBJ-DAT-031: the path must be one this request allowed.
    if (path == TransferPath::kInline && !req.accept_inline()) {
      return MakeError(ErrorCode::kInternal, "server answered inline to a request that refused it");
    }
    if (path == TransferPath::kNone && size != 0) {
      return MakeError(ErrorCode::kIncompleteTransfer, "server moved nothing for a non-empty body");
    }
    if (path == TransferPath::kInline) {
      if (resp.inline_data().size() != size) {
        return MakeError(ErrorCode::kIncompleteTransfer, "inline body has the wrong size");
      }
      size_t at = 0;
      ForEachSpan(destination, size, [&](uint8_t* p, size_t n) {
        std::memcpy(p, resp.inline_data().data() + at, n);
        at += n;
      });
    } else if (path != TransferPath::kRma && !(path == TransferPath::kNone && size == 0)) {
      return MakeError(ErrorCode::kInternal, "server reported an unknown transfer path");
    }
    const auto algo = static_cast<ChecksumAlgorithm>(resp.checksum_algorithm());
    if (algo != options_.checksum) {
      return MakeError(ErrorCode::kBadDigest, "server answered with another checksum algorithm");
    }
    if (ChecksumOf(algo, destination, size) != resp.checksum()) {
      return MakeError(ErrorCode::kBadDigest,
                       absl::StrCat(ChecksumName(algo),
                                    " of the received bytes does not match the server's"));
    }
    TransferResult result{InfoFrom(resp.metadata()), size, path};
    result.range = *range;
    return result;
  }

  absl::StatusOr<ObjectInfo> Head(const std::string& bucket, const std::string& key) override {
    return Head(bucket, key, Preconditions{});
  }

  absl::StatusOr<ObjectInfo> Head(const std::string& bucket, const std::string& key,
                                  const Preconditions& conditions) override {
    pb::HeadObjectRequest req;
    req.set_bucket(bucket);
    req.set_key(key);
    SetPreconditions(conditions, &req);
    pb::HeadObjectResponse resp;
    if (absl::Status s = Call(Method::kHeadObject, req, &resp); !s.ok()) return s;
    return InfoFrom(resp.metadata());
  }

  absl::StatusOr<std::vector<BucketSummary>> ListBuckets() override {
    std::vector<BucketSummary> out;
    pb::ListBucketsRequest req;
    for (int page = 0;; ++page) {
      pb::ListBucketsResponse resp;
      if (absl::Status s = Call(Method::kListBuckets, req, &resp); !s.ok()) return s;
      for (const pb::BucketEntry& b : resp.buckets()) {
        out.push_back({b.name(), b.creation_time_ms()});
      }
      if (!resp.is_truncated()) return out;
      // A server that keeps answering "truncated" with nothing new would loop us forever.
      if (resp.buckets_size() == 0 || resp.next_continuation_token().empty() || page > 100000) {
        return MakeError(ErrorCode::kInternal,
                         "server sent a truncated page that does not advance");
      }
      req.set_continuation_token(resp.next_continuation_token());
    }
  }

  absl::StatusOr<ObjectListing> ListObjects(const std::string& bucket,
                                            const ListObjectsOptions& options) override {
    pb::ListObjectsV2Request req;
    req.set_bucket(bucket);
    req.set_prefix(options.prefix);
    req.set_delimiter(options.delimiter);
    req.set_start_after(options.start_after);
    req.set_continuation_token(options.continuation_token);
    req.set_max_keys(options.max_keys);
    pb::ListObjectsV2Response resp;
    if (absl::Status s = Call(Method::kListObjectsV2, req, &resp); !s.ok()) return s;
    ObjectListing out;
    for (const pb::ObjectEntry& e : resp.objects()) {
      out.objects.push_back({e.key(), e.size(), e.etag(), e.last_modified_ms()});
    }
    out.common_prefixes.assign(resp.common_prefixes().begin(), resp.common_prefixes().end());
    out.is_truncated = resp.is_truncated();
    out.next_continuation_token = resp.next_continuation_token();
    if (out.is_truncated && out.next_continuation_token.empty()) {
      return MakeError(ErrorCode::kInternal, "server sent a truncated page without a token");
    }
    return out;
  }

  absl::StatusOr<DeleteObjectsResult> DeleteObjects(const std::string& bucket,
                                                    const std::vector<std::string>& keys,
                                                    bool quiet) override {
    constexpr size_t kBatch = 1000;  // AOBJ-OBJ-140
    DeleteObjectsResult out;
    for (size_t at = 0; at < keys.size(); at += kBatch) {
      pb::DeleteObjectsRequest req;
      req.set_bucket(bucket);
      req.set_quiet(quiet);
      for (size_t i = at; i < std::min(keys.size(), at + kBatch); ++i) req.add_keys(keys[i]);
      pb::DeleteObjectsResponse resp;
      if (absl::Status s = Call(Method::kDeleteObjects, req, &resp); !s.ok()) return s;
      out.deleted.insert(out.deleted.end(), resp.deleted().begin(), resp.deleted().end());
      for (const pb::DeleteObjectsError& e : resp.errors()) {
        ErrorCode code = static_cast<ErrorCode>(e.error().code());
        if (code == ErrorCode::kOk) code = ErrorCode::kInternal;  // AOBJ-ERR-009
        out.errors.emplace_back(e.key(), MakeError(code, e.error().message()));
      }
    }
    return out;
  }

  absl::StatusOr<BatchGetResults> GetObjects(const std::string& bucket,
                                             const std::vector<BatchGetItem>& items,
                                             const CallOptions& call) override {
    ScopedDeadline scope(call);
    for (const BatchGetItem& item : items) {  // every buffer this Client's, before anything moves
      if (item.destination.buffer != nullptr) {
        AOBJ_CLIENT_RETURN_IF_ERROR(Issued(*item.destination.buffer).status());
      }
    }
    const uint32_t max_windows =
        HasCapability(kCapMultiDescriptor) ? info_.limits.max_descriptors : 1;
    auto plans = client_internal::PlanBatchGet(items, kMaxBatchGetItems, max_windows,
                                               info_.limits.max_transfer_bytes);
    if (!plans.ok()) return plans.status();
    BatchGetResults out(items.size(), MakeError(ErrorCode::kInternal, "not sent"));
    if (!HasCapability(kCapBatchGet)) return GetEach(bucket, items, std::move(out));
    for (const client_internal::BatchRequestPlan& plan : *plans) {
      pb::GetObjectsRequest req;
      req.set_bucket(bucket);
      req.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(options_.checksum));
      for (size_t k = 0; k < plan.items.size(); ++k) {
        const BatchGetItem& item = items[plan.items[k]];
        pb::GetObjectsItem* it = req.add_items();
        it->set_key(item.key);
        if (item.range.has_value()) RangeToProto(ToSpec(*item.range), it->mutable_range());
        it->set_offset(plan.offsets[k]);
        it->set_length(item.destination.length);
      }
      RequestRegistrations registrations;  // unmapped after the reply
      AOBJ_CLIENT_RETURN_IF_ERROR(
          AddWindows(plan.windows, req.mutable_destination(), &registrations));
      pb::GetObjectsResponse resp;
      AOBJ_CLIENT_RETURN_IF_ERROR(
          DataCall(Method::kGetObjects, req, &resp, registrations.emulated_windows));
      AOBJ_CLIENT_RETURN_IF_ERROR(CheckBatchReply(resp, req.items_size()));  // AOBJ-OBJ-240
      for (size_t k = 0; k < plan.items.size(); ++k) {
        out[plan.items[k]] = CheckBatchResult(items[plan.items[k]], resp.results(k));
      }
    }
    return out;
  }

  absl::StatusOr<BatchPutResults> PutObjects(const std::string& bucket,
                                             const std::vector<BatchPutItem>& items,
                                             const CallOptions& call) override {
    ScopedDeadline scope(call);
    const uint32_t max_windows =
        HasCapability(kCapMultiDescriptor) ? info_.limits.max_descriptors : 1;
    std::vector<BufferSlice> regions;
    regions.reserve(items.size());
    absl::flat_hash_set<std::string_view> keys;
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].source.buffer != nullptr) {
        AOBJ_CLIENT_RETURN_IF_ERROR(Issued(*items[i].source.buffer).status());
      }
      regions.push_back(items[i].source);
      if (!keys.insert(items[i].key).second) {  // AOBJ-OBJ-247
        return MakeError(ErrorCode::kInvalidArgument,
                         absl::StrCat("item ", i, " names a key an earlier item names"));
      }
    }
    auto plans = client_internal::PlanBatch(regions, kMaxBatchPutItems, max_windows,
                                            info_.limits.max_transfer_bytes,
                                            /*overlap_allowed=*/true);
    if (!plans.ok()) return plans.status();
    BatchPutResults out(items.size(), MakeError(ErrorCode::kInternal, "not sent"));
    if (!HasCapability(kCapBatchPut)) return PutEach(bucket, items, std::move(out));
    for (const client_internal::BatchRequestPlan& plan : *plans) {
      pb::PutObjectsRequest req;
      req.set_bucket(bucket);
      req.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(options_.checksum));
      for (size_t k = 0; k < plan.items.size(); ++k) {
        const BatchPutItem& item = items[plan.items[k]];
        pb::PutObjectsItem* it = req.add_items();
        it->set_key(item.key);
        it->set_offset(plan.offsets[k]);
        it->set_length(item.source.length);
        it->set_checksum(ChecksumOf(options_.checksum, {item.source}, item.source.length));
        it->set_content_type(item.content_type);
      }
      RequestRegistrations registrations;  // unmapped after the reply
      AOBJ_CLIENT_RETURN_IF_ERROR(AddWindows(plan.windows, req.mutable_source(), &registrations));
      pb::PutObjectsResponse resp;
      AOBJ_CLIENT_RETURN_IF_ERROR(
          DataCall(Method::kPutObjects, req, &resp, registrations.emulated_windows));
      AOBJ_CLIENT_RETURN_IF_ERROR(CheckBatchReply(resp, req.items_size()));  // AOBJ-OBJ-249
      for (size_t k = 0; k < plan.items.size(); ++k) {
        out[plan.items[k]] = CheckBatchPutResult(req.items(k), resp.results(k));
      }
    }
    return out;
  }

  absl::StatusOr<ObjectInfo> Copy(const std::string& source_bucket, const std::string& source_key,
                                  const std::string& bucket, const std::string& key,
                                  const CopyOptions& options) override {
    pb::CopyObjectRequest req;
    req.set_source_bucket(source_bucket);
    req.set_source_key(source_key);
    req.set_bucket(bucket);
    req.set_key(key);
    req.set_metadata_directive(options.replace_metadata ? pb::METADATA_DIRECTIVE_REPLACE
                                                        : pb::METADATA_DIRECTIVE_COPY);
    req.set_content_type(options.content_type);
    req.mutable_user_metadata()->insert(options.user_metadata.begin(),
                                        options.user_metadata.end());
    if (!IsEmpty(options.source_conditions)) {
      ToProto(options.source_conditions, req.mutable_source_preconditions());
    }
    SetPreconditions(options.conditions, &req);
    pb::CopyObjectResponse resp;
    if (absl::Status s = Call(Method::kCopyObject, req, &resp); !s.ok()) return s;
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

  absl::StatusOr<UploadInfo> CreateMultipartUpload(const std::string& bucket,
                                                   const std::string& key,
                                                   const PutOptions& options) override {
    pb::CreateMultipartUploadRequest req;
    req.set_bucket(bucket);
    req.set_key(key);
    req.set_content_type(options.content_type);
    for (const auto& [name, value] : options.user_metadata) {
      (*req.mutable_user_metadata())[name] = value;
    }
    pb::CreateMultipartUploadResponse resp;
    if (absl::Status s = Call(Method::kCreateMultipartUpload, req, &resp); !s.ok()) return s;
    if (resp.upload_id().empty()) {
      return MakeError(ErrorCode::kInternal, "server sent an empty upload ID");
    }
    UploadInfo info;
    info.bucket = bucket;
    info.key = key;
    info.upload_id = resp.upload_id();
    info.content_type = options.content_type;
    info.user_metadata = options.user_metadata;
    return info;
  }

  absl::StatusOr<UploadPartResult> UploadPart(const std::string& bucket, const std::string& key,
                                              const std::string& upload_id, uint32_t part_number,
                                              const Buffer& buffer, uint64_t offset,
                                              uint64_t size) override {
    if (offset > buffer.size() || size > buffer.size() - offset) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("part [", offset, ", +", size, ") exceeds the buffer's ",
                                    buffer.size(), " bytes"));
    }
    absl::StatusOr<const BufferImpl*> issued = Issued(buffer);
    if (!issued.ok()) return issued.status();
    const BufferImpl& buf = **issued;
    const uint8_t* data = buf.data() + offset;
    const std::string checksum =
        ChecksumOf(options_.checksum, {{&buffer, offset, size}}, size);
    pb::UploadPartRequest req;
    req.set_bucket(bucket);
    req.set_key(key);
    req.set_upload_id(upload_id);
    req.set_part_number(part_number);
    req.set_size(size);
    req.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(options_.checksum));
    req.set_checksum(checksum);
    RequestRegistrations registrations;  // unmapped after the reply
    if (size > 0 && UseInline(size)) {
      req.set_inline_data(reinterpret_cast<const char*>(data), size);
    } else if (size > 0) {
      // Grant exactly this part's window, nothing more (AOBJ-MEM-010).
      if (absl::Status s = AddWindows({{&buffer, offset, size}}, req.mutable_source(),
                                      &registrations);
          !s.ok()) {
        return s;
      }
    }
    pb::UploadPartResponse resp;
    if (absl::Status s = DataCall(Method::kUploadPart, req, &resp, registrations.emulated_windows);
        !s.ok()) {
      return s;
    }
    // AOBJ-DAT-154: never report success for a short or different transfer.
    if (resp.bytes_transferred() != size) {
      return MakeError(ErrorCode::kIncompleteTransfer,
                       absl::StrCat("server reports ", resp.bytes_transferred(),
                                    " bytes moved of ", size));
    }
    if (resp.checksum() != checksum) {
      return MakeError(ErrorCode::kBadDigest,
                       "the server's checksum of the received part differs from ours");
    }
    return UploadPartResult{resp.etag(), resp.bytes_transferred(),
                            static_cast<TransferPath>(resp.path())};
  }

  absl::StatusOr<ObjectInfo> CompleteMultipartUpload(
      const std::string& bucket, const std::string& key, const std::string& upload_id,
      const std::vector<CompletedPart>& parts, const Preconditions& conditions) override {
    pb::CompleteMultipartUploadRequest req;
    req.set_bucket(bucket);
    req.set_key(key);
    req.set_upload_id(upload_id);
    SetPreconditions(conditions, &req);
    for (const CompletedPart& p : parts) {
      pb::CompletedPart* c = req.add_parts();
      c->set_part_number(p.part_number);
      c->set_etag(p.etag);
    }
    pb::CompleteMultipartUploadResponse resp;
    if (absl::Status s = Call(Method::kCompleteMultipartUpload, req, &resp); !s.ok()) return s;
    return InfoFrom(resp.metadata());
  }

  absl::Status AbortMultipartUpload(const std::string& bucket, const std::string& key,
                                    const std::string& upload_id) override {
    pb::AbortMultipartUploadRequest req;
    req.set_bucket(bucket);
    req.set_key(key);
    req.set_upload_id(upload_id);
    pb::AbortMultipartUploadResponse resp;
    return Call(Method::kAbortMultipartUpload, req, &resp);
  }

  absl::StatusOr<PartsPage> ListParts(const std::string& bucket, const std::string& key,
                                      const std::string& upload_id, uint32_t part_number_marker,
                                      uint32_t max_parts) override {
    pb::ListPartsRequest req;
    req.set_bucket(bucket);
    req.set_key(key);
    req.set_upload_id(upload_id);
    req.set_part_number_marker(part_number_marker);
    req.set_max_parts(max_parts);
    pb::ListPartsResponse resp;
    if (absl::Status s = Call(Method::kListParts, req, &resp); !s.ok()) return s;
    PartsPage page;
    page.upload.bucket = bucket;
    page.upload.key = key;
    page.upload.upload_id = upload_id;
    page.upload.content_type = resp.content_type();
    page.upload.initiated_ms = resp.initiated_ms();
    for (const pb::PartEntry& e : resp.parts()) {
      PartInfo p;
      p.part_number = e.part_number();
      p.size = e.size();
      p.etag = e.etag();
      p.last_modified_ms = e.last_modified_ms();
      if (e.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C && e.checksum().size() == 4) {
        const auto* c = reinterpret_cast<const uint8_t*>(e.checksum().data());
        p.crc32c = (uint32_t{c[0]} << 24) | (uint32_t{c[1]} << 16) | (uint32_t{c[2]} << 8) | c[3];
      }
      page.parts.push_back(std::move(p));
    }
    page.truncated = resp.is_truncated();
    page.next_part_number_marker = resp.next_part_number_marker();
    return page;
  }

  absl::StatusOr<UploadsPage> ListMultipartUploads(const std::string& bucket,
                                                   const ListUploadsOptions& options) override {
    pb::ListMultipartUploadsRequest req;
    req.set_bucket(bucket);
    req.set_prefix(options.prefix);
    req.set_key_marker(options.key_marker);
    req.set_upload_id_marker(options.upload_id_marker);
    req.set_max_uploads(options.max_uploads);
    pb::ListMultipartUploadsResponse resp;
    if (absl::Status s = Call(Method::kListMultipartUploads, req, &resp); !s.ok()) return s;
    UploadsPage page;
    for (const pb::UploadEntry& e : resp.uploads()) {
      UploadInfo u;
      u.bucket = bucket;
      u.key = e.key();
      u.upload_id = e.upload_id();
      u.initiated_ms = e.initiated_ms();
      page.uploads.push_back(std::move(u));
    }
    page.truncated = resp.is_truncated();
    page.next_key_marker = resp.next_key_marker();
    page.next_upload_id_marker = resp.next_upload_id_marker();
    return page;
  }

  absl::StatusOr<ObjectInfo> UploadMultipart(const std::string& bucket, const std::string& key,
                                             const Buffer& buffer, uint64_t size,
                                             uint64_t part_size, const PutOptions& put,
                                             const MultipartUploadOptions& options) override {
    if (part_size == 0) return MakeError(ErrorCode::kInvalidArgument, "part size 0");
    if (size > buffer.size()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("size ", size, " exceeds the buffer's ", buffer.size()));
    }
    // An empty object is one empty part (S3 allows the last part to be of any size).
    const uint64_t count = size == 0 ? 1 : size / part_size + (size % part_size != 0 ? 1 : 0);
    if (count > kMaxPartNumber) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat(size, " bytes in parts of ", part_size, " make ", count,
                                    " parts; at most ", kMaxPartNumber));
    }
    auto upload = CreateMultipartUpload(bucket, key, put);
    if (!upload.ok()) return upload.status();
    const std::string& id = upload->upload_id;

    // AOBJ-FLO-001: no more parts in flight than the session allows.
    uint32_t lanes = options.parallelism != 0 ? options.parallelism
                                               : std::min<uint32_t>(info_.limits.max_in_flight, 16);
    lanes = static_cast<uint32_t>(std::clamp<uint64_t>(
        std::min<uint64_t>(lanes, info_.limits.max_in_flight), 1, count));
    std::vector<std::string> etags(count);
    absl::Mutex mu;
    uint64_t next = 0;            // guarded by mu
    uint64_t done_bytes = 0;      // guarded by mu
    absl::Status first_error;     // guarded by mu
    const absl::Time deadline = tls_deadline;  // the caller's, for every lane
    OpControl* const op = tls_op;  // an UploadMultipartAsync: its cancellation reaches every lane
    auto lane = [&] {
      ScopedDeadline scope(deadline);
      struct RestoreOp {
        OpControl* saved;
        ~RestoreOp() { tls_op = saved; }
      } restore{tls_op};
      tls_op = op;
      for (;;) {
        uint64_t i;
        {
          absl::MutexLock l(&mu);
          if (!first_error.ok() || next == count) return;
          i = next++;
        }
        const uint64_t off = i * part_size;
        const uint64_t len = size == 0 ? 0 : std::min(part_size, size - off);
        // A busy server's refusals are retried by Call (ClientOptions::busy_retries).
        absl::StatusOr<UploadPartResult> r =
            UploadPart(bucket, key, id, static_cast<uint32_t>(i + 1), buffer, off, len);
        absl::MutexLock l(&mu);
        if (!r.ok()) {
          if (first_error.ok()) first_error = r.status();
          return;
        }
        etags[i] = r->etag;
        done_bytes += len;
        if (options.progress) options.progress(done_bytes, size);
      }
    };
    std::vector<std::thread> threads;
    for (uint32_t t = 1; t < lanes; ++t) threads.emplace_back(lane);
    lane();
    for (auto& t : threads) t.join();
    if (!first_error.ok()) {
      AbortOutsideOperation(bucket, key, id).IgnoreError();  // AOBJ-OBJ-229
      return first_error;
    }
    std::vector<CompletedPart> parts(count);
    for (uint64_t i = 0; i < count; ++i) parts[i] = {static_cast<uint32_t>(i + 1), etags[i]};
    // Not repeated: a failed Complete is final here (AOBJ-ERR-122), the upload is aborted.
    auto completed = CompleteMultipartUpload(bucket, key, id, parts, put.conditions);
    if (completed.ok()) return completed;
    // The outcome may be unknown (no reply): an abort that finds no upload means the upload
    // was completed, and the object then carries the ETag we expect (AOBJ-ERR-121).
    absl::Status aborted = AbortOutsideOperation(bucket, key, id);
    if (ErrorCodeOf(aborted) == ErrorCode::kNoSuchUpload) {
      auto expected = MultipartEtag(etags);
      auto head = Head(bucket, key);
      if (expected.ok() && head.ok() && head->etag == *expected) return *head;
    }
    return completed.status();
  }

  std::unique_ptr<Client> WithCallOptions(const CallOptions& call) override;

  // The abort of an upload that failed because its operation was cancelled or ran out of time
  // must still be sent: outside the operation (not refused by its cancellation) and with only
  // ClientOptions::timeout_ms as its deadline.
  absl::Status AbortOutsideOperation(const std::string& bucket, const std::string& key,
                                     const std::string& upload_id) {
    OpControl* const op = tls_op;
    const absl::Time deadline = tls_deadline;
    tls_op = nullptr;
    tls_deadline = absl::InfiniteFuture();
    absl::Status s = AbortMultipartUpload(bucket, key, upload_id);
    tls_op = op;
    tls_deadline = deadline;
    return s;
  }

  std::shared_ptr<Operation<TransferResult>> PutAsync(
      const std::string& bucket, const std::string& key, const Buffer& buffer, uint64_t size,
      const PutOptions& options, Operation<TransferResult>::Callback done) override {
    const Buffer* b = &buffer;
    return Submit<TransferResult>(
        [this, bucket, key, b, size, options] { return Put(bucket, key, *b, size, options); },
        std::move(done));
  }
  std::shared_ptr<Operation<TransferResult>> GetAsync(
      const std::string& bucket, const std::string& key, Buffer& buffer,
      const GetOptions& options, Operation<TransferResult>::Callback done) override {
    Buffer* b = &buffer;
    return Submit<TransferResult>(
        [this, bucket, key, b, options] { return Get(bucket, key, *b, options); },
        std::move(done));
  }
  std::shared_ptr<Operation<ObjectInfo>> HeadAsync(const std::string& bucket,
                                                   const std::string& key,
                                                   const Preconditions& conditions,
                                                   const CallOptions& call,
                                                   Operation<ObjectInfo>::Callback done) override {
    return Submit<ObjectInfo>(
        [this, bucket, key, conditions, call] {
          ScopedDeadline scope(call);
          return Head(bucket, key, conditions);
        },
        std::move(done));
  }
  std::shared_ptr<Operation<std::monostate>> DeleteAsync(
      const std::string& bucket, const std::string& key, const CallOptions& call,
      Operation<std::monostate>::Callback done) override {
    return Submit<std::monostate>(
        [this, bucket, key, call]() -> absl::StatusOr<std::monostate> {
          ScopedDeadline scope(call);
          if (absl::Status s = Delete(bucket, key); !s.ok()) return s;
          return std::monostate();
        },
        std::move(done));
  }

  std::shared_ptr<Operation<ObjectListing>> ListObjectsAsync(
      const std::string& bucket, const ListObjectsOptions& options, const CallOptions& call,
      Operation<ObjectListing>::Callback done) override {
    return Submit<ObjectListing>(
        [this, bucket, options, call] {
          ScopedDeadline scope(call);
          return ListObjects(bucket, options);
        },
        std::move(done));
  }
  std::shared_ptr<Operation<UploadPartResult>> UploadPartAsync(
      const std::string& bucket, const std::string& key, const std::string& upload_id,
      uint32_t part_number, const Buffer& buffer, uint64_t offset, uint64_t size,
      const CallOptions& call, Operation<UploadPartResult>::Callback done) override {
    const Buffer* b = &buffer;
    return Submit<UploadPartResult>(
        [this, bucket, key, upload_id, part_number, b, offset, size, call] {
          ScopedDeadline scope(call);
          return UploadPart(bucket, key, upload_id, part_number, *b, offset, size);
        },
        std::move(done));
  }
  std::shared_ptr<Operation<ObjectInfo>> UploadMultipartAsync(
      const std::string& bucket, const std::string& key, const Buffer& buffer, uint64_t size,
      uint64_t part_size, const PutOptions& put, const MultipartUploadOptions& options,
      Operation<ObjectInfo>::Callback done) override {
    const Buffer* b = &buffer;
    return Submit<ObjectInfo>(
        [this, bucket, key, b, size, part_size, put, options] {
          return UploadMultipart(bucket, key, *b, size, part_size, put, options);
        },
        std::move(done));
  }

  // Names a running request of this session on a RenewSession call: in the signed body when
  // CANCEL was negotiated (AOBJ-DAT-160), else in an `aobj-cancel` entry (AOBJ-DAT-156).
  // Failure is not reported: the operation then ends by its deadline.
  void SendCancel(const std::string& nonce) override {
    OpControl* saved = tls_op;
    tls_op = nullptr;  // this call is not part of the operation being cancelled
    pb::RenewSessionRequest req;
    pb::RenewSessionResponse resp;
    if (HasCapability(kCapCancel)) {
      req.add_cancel(nonce);
      Call(Method::kRenewSession, req, &resp).IgnoreError();
    } else {
      Call(Method::kRenewSession, req, &resp, nullptr, {{kMetaCancel, nonce}}).IgnoreError();
    }
    tls_op = saved;
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
    absl::Status closed = absl::OkStatus();
    if (session_gone_.load() == 0) {  // AOBJ-SES-022: otherwise nothing to close
      pb::CloseSessionRequest req;
      pb::CloseSessionResponse resp;
      closed = Call(Method::kCloseSession, req, &resp);
    }
    // Spec 8.9: the server forgets the session's endpoint once its transfers end, and drops fast
    // requests for it after that; from now on every request goes by gRPC (and learns that the
    // session is gone), and those still waiting for a fast reply end now.
    fast_closed_.store(true);
    FailFastWaiters();
    return closed;
  }

 private:
  // Queues `fn` as an asynchronous operation with this thread's deadline (ScopedDeadline).
  template <class T>
  std::shared_ptr<Operation<T>> Submit(std::function<absl::StatusOr<T>()> fn,
                                       typename Operation<T>::Callback done) {
    auto op = std::make_shared<OperationImpl<T>>(this, std::move(done));
    const absl::Time deadline = tls_deadline;
    AsyncPool* pool = pool_.get();
    if (!pool->Submit([op, fn, deadline, pool] { op->Run(fn, deadline, pool->stopping()); })) {
      op->Run(fn, deadline, /*stopping=*/true);
    }
    return op;
  }

  bool HasCapability(uint32_t c) const {
    return std::find(info_.capabilities.begin(), info_.capabilities.end(), c) !=
           info_.capabilities.end();
  }
  // AOBJ-EXT-007: INLINE (and MULTI_DESCRIPTOR, AddWindows) only once negotiated.
  bool UseInline(uint64_t size) const {
    return options_.allow_inline && HasCapability(kCapInline) &&
           size <= info_.limits.inline_threshold;
  }
  // The library's own view of `buffer`, when this Client issued it (AllocateBuffer,
  // RegisterBuffer); INVALID_ARGUMENT for another Client's buffer (registered in another UCX
  // context, its rkey means nothing to this session's endpoint) or a class the caller derived.
  absl::StatusOr<const BufferImpl*> Issued(const Buffer& buffer) const {
    const auto* impl = dynamic_cast<const BufferImpl*>(&buffer);
    if (impl == nullptr || impl->issuer() != this) {
      return MakeError(ErrorCode::kInvalidArgument,
                       impl == nullptr
                           ? "the buffer is not one the library issued; pass a Buffer from this "
                             "Client's AllocateBuffer or RegisterBuffer"
                           : "the buffer was issued by another Client; each Client uses only the "
                             "buffers of its own AllocateBuffer or RegisterBuffer");
    }
    return impl;
  }
  // A descriptor for exactly the slice's window (checked by CheckSlices). A per-request buffer's
  // window is registered now, exactly, and stays registered while `registrations` lives.
  absl::Status AddWindow(const BufferSlice& s, pb::MemoryDescriptor* d,
                         RequestRegistrations* registrations) {
    absl::StatusOr<const BufferImpl*> issued = Issued(*s.buffer);
    if (!issued.ok()) return issued.status();
    const BufferImpl& buf = **issued;
    d->set_address(reinterpret_cast<uint64_t>(buf.data()) + s.offset);
    d->set_length(s.length);
    d->set_memory_type(pb::MEMORY_TYPE_HOST);
    if (!buf.allocated_by_library()) registrations->emulated_windows = true;
    if (buf.registered()) {
      d->set_rkey(buf.rkey());  // AOBJ-MEM-017: the rkey of the registration of the whole buffer
      return absl::OkStatus();
    }
    // AOBJ-MEM-017, AOBJ-TRN-007: registered for this request only; AOBJ-MEM-025 says what
    // unmapping it afterwards does and does not achieve.
    auto mem = RegisteredMemory::Register(*context_, buf.data() + s.offset, s.length);
    if (!mem.ok()) return mem.status();
    d->set_rkey((*mem)->packed_rkey());
    registrations->memory.push_back(std::move(*mem));
    return absl::OkStatus();
  }
  // The total length of `slices`; INVALID_ARGUMENT for a null buffer or a window past its
  // buffer.
  absl::StatusOr<uint64_t> CheckSlices(const std::vector<BufferSlice>& slices) const {
    uint64_t total = 0;
    for (const BufferSlice& s : slices) {
      if (s.buffer == nullptr) {
        return MakeError(ErrorCode::kInvalidArgument, "slice without buffer");
      }
      if (absl::StatusOr<const BufferImpl*> issued = Issued(*s.buffer); !issued.ok()) {
        return issued.status();
      }
      if (s.offset > s.buffer->size() || s.length > s.buffer->size() - s.offset) {
        return MakeError(ErrorCode::kInvalidArgument,
                         absl::StrCat("slice [", s.offset, ", +", s.length,
                                      ") lies outside its buffer of ", s.buffer->size()));
      }
      total += s.length;
    }
    return total;
  }
  // Descriptors for the non-empty slices; INVALID_ARGUMENT when they are more than the session
  // takes (AOBJ-MEM-005, AOBJ-MEM-015), before anything is sent.
  absl::Status AddWindows(const std::vector<BufferSlice>& slices,
                          google::protobuf::RepeatedPtrField<pb::MemoryDescriptor>* out,
                          RequestRegistrations* registrations) {
    const size_t windows = std::count_if(slices.begin(), slices.end(),
                                         [](const BufferSlice& s) { return s.length > 0; });
    const uint32_t max = HasCapability(kCapMultiDescriptor) ? info_.limits.max_descriptors : 1;
    if (windows > max) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat(windows, " windows; the session allows ", max));
    }
    for (const BufferSlice& s : slices) {
      if (s.length > 0) AOBJ_CLIENT_RETURN_IF_ERROR(AddWindow(s, out->Add(), registrations));
    }
    return absl::OkStatus();
  }
  // Calls fn(pointer, length) over the first `n` octets of the windows, in order.
  template <class Fn>
  static void ForEachSpan(const std::vector<BufferSlice>& slices, uint64_t n, Fn fn) {
    ForEachSpanIn(slices, 0, n, fn);
  }
  // The same for octets [from, from + n) of the slices' concatenation.
  template <class Fn>
  static void ForEachSpanIn(const std::vector<BufferSlice>& slices, uint64_t from, uint64_t n,
                            Fn fn) {
    for (const BufferSlice& s : slices) {
      if (n == 0) break;
      if (from >= s.length) {
        from -= s.length;
        continue;
      }
      const uint64_t take = std::min(n, s.length - from);
      if (take > 0) fn(s.buffer->data() + s.offset + from, static_cast<size_t>(take));
      from = 0;
      n -= take;
    }
  }
  // The end-to-end checksum of the first `size` octets of `slices` (AOBJ-DAT-004). A large body
  // is checksummed in pieces of at least kParallelChecksumPiece on up to four threads, one per
  // core, and the pieces combined (Checksummer::Append): after a GET this pass over the body
  // is most of the client's time (docs/benchmarks.md), and the server is idle by then.
  static constexpr uint64_t kParallelChecksumPiece = uint64_t{8} << 20;
  static std::string ChecksumOf(ChecksumAlgorithm algo, const std::vector<BufferSlice>& slices,
                                uint64_t size) {
    static const uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
    const uint64_t pieces = std::min<uint64_t>({cores, 4, size / kParallelChecksumPiece});
    std::vector<Checksummer> sums(std::max<uint64_t>(pieces, 1), Checksummer(algo));
    auto bound = [&](uint64_t k) { return size / sums.size() * k; };
    auto run = [&](uint64_t k) {
      const uint64_t from = bound(k);
      const uint64_t to = k + 1 == sums.size() ? size : bound(k + 1);
      ForEachSpanIn(slices, from, to - from, [&](uint8_t* p, size_t n) { sums[k].Update(p, n); });
    };
    std::vector<std::thread> threads;
    uint64_t k = 1;
    try {
      for (; k < sums.size(); ++k) threads.emplace_back(run, k);
    } catch (const std::system_error&) {
      for (; k < sums.size(); ++k) run(k);  // no thread to be had: this one does the rest
    }
    run(0);
    for (std::thread& t : threads) t.join();
    for (uint64_t k = 1; k < sums.size(); ++k) {
      const uint64_t to = k + 1 == sums.size() ? size : bound(k + 1);
      sums[0].Append(sums[k], to - bound(k));
    }
    return sums[0].Finish();
  }
  static bool IsEmpty(const Preconditions& c) {
    return c.if_match.empty() && c.if_none_match.empty() && !c.if_modified_since_ms &&
           !c.if_unmodified_since_ms;
  }
  static void ToProto(const Preconditions& c, pb::Preconditions* out) {
    out->set_if_match(c.if_match);
    out->set_if_none_match(c.if_none_match);
    if (c.if_modified_since_ms) out->set_if_modified_since_ms(*c.if_modified_since_ms);
    if (c.if_unmodified_since_ms) out->set_if_unmodified_since_ms(*c.if_unmodified_since_ms);
  }
  // Sets req.preconditions only when there are any, so that requests without conditions keep
  // the bytes they had before conditions existed.
  template <class Req>
  static void SetPreconditions(const Preconditions& c, Req* req) {
    if (!IsEmpty(c)) ToProto(c, req->mutable_preconditions());
  }
  // AOBJ-DAT-105: the reply's content_range is present exactly for a ranged request, is
  // consistent with the object's size, and is the range the request asked for.
  template <class Reply>  // GetObjectResponse, GetObjectsResult
  static absl::StatusOr<std::optional<ContentRange>> CheckContentRange(
      const std::optional<ByteRange>& asked, const Reply& resp) {
    if (!asked.has_value()) {
      if (resp.has_content_range()) {
        return MakeError(ErrorCode::kInternal, "server sent a content range for a whole GET");
      }
      return std::optional<ContentRange>();
    }
    if (!resp.has_content_range()) {
      return MakeError(ErrorCode::kInternal, "server sent no content range for a ranged GET");
    }
    const pb::ContentRange& cr = resp.content_range();
    const uint64_t total = resp.metadata().size();
    auto expected = ResolveRange(ToSpec(*asked), total);
    if (!expected.ok() || cr.complete_length() != total || cr.first() != expected->first ||
        cr.last() != expected->last()) {
      return MakeError(ErrorCode::kInternal,
                       absl::StrCat("server sent content range ", cr.first(), "-", cr.last(), "/",
                                    cr.complete_length(), ", not the range asked for"));
    }
    return std::optional<ContentRange>(ContentRange{cr.first(), cr.last(), total});
  }

  // AOBJ-OBJ-244: one GetObjects result, verified as a GetObject reply is (AOBJ-DAT-004): its
  // error, or its byte count within the region and the checksum of the region's octets.
  absl::StatusOr<TransferResult> CheckBatchResult(const BatchGetItem& item,
                                                  const pb::GetObjectsResult& r) const {
    if (r.has_error()) {
      ErrorCode code = static_cast<ErrorCode>(r.error().code());
      if (code == ErrorCode::kOk) code = ErrorCode::kInternal;  // AOBJ-ERR-009
      return MakeError(code, r.error().message());
    }
    absl::StatusOr<std::optional<ContentRange>> range = CheckContentRange(item.range, r);
    if (!range.ok()) return range.status();
    const uint64_t size =
        range->has_value() ? (*range)->last - (*range)->first + 1 : r.metadata().size();
    if (r.bytes_transferred() != size || size > item.destination.length) {
      return MakeError(ErrorCode::kIncompleteTransfer,
                       absl::StrCat("server reports ", r.bytes_transferred(), " octets of ", size,
                                    " expected, into a region of ", item.destination.length));
    }
    if (ChecksumOf(options_.checksum, {item.destination}, size) != r.checksum()) {
      return MakeError(ErrorCode::kBadDigest,
                       absl::StrCat(ChecksumName(options_.checksum),
                                    " of the received octets does not match the server's"));
    }
    TransferResult result{InfoFrom(r.metadata()), size,
                          size == 0 ? TransferPath::kNone : TransferPath::kRma};
    result.range = *range;
    return result;
  }

  // GetObjects without BATCH_GET: each item as a Get. A failure that is not the item's own (the
  // bucket, the data channel) fails the call, as it would fail a GetObjects request.
  // A GetObjects or PutObjects reply: one result per item, in the items' order, in the
  // request's checksum algorithm (AOBJ-OBJ-240, AOBJ-OBJ-249).
  template <class Resp>
  absl::Status CheckBatchReply(const Resp& resp, int items) const {
    if (resp.results_size() != items) {
      return MakeError(ErrorCode::kInternal, absl::StrCat("server answered ", resp.results_size(),
                                                          " results to ", items, " items"));
    }
    if (static_cast<ChecksumAlgorithm>(resp.checksum_algorithm()) != options_.checksum) {
      return MakeError(ErrorCode::kBadDigest, "server answered with another checksum algorithm");
    }
    return absl::OkStatus();
  }

  // AOBJ-OBJ-252: a stored item's result names exactly the octets sent, as a PutObject reply
  // does (AOBJ-DAT-004); one that does not is that item's failure, not the others'.
  static absl::StatusOr<ObjectInfo> CheckBatchPutResult(const pb::PutObjectsItem& item,
                                                        const pb::PutObjectsResult& r) {
    if (r.has_error()) {
      ErrorCode code = static_cast<ErrorCode>(r.error().code());
      if (code == ErrorCode::kOk) code = ErrorCode::kInternal;  // AOBJ-ERR-009
      return MakeError(code, r.error().message());
    }
    if (r.checksum() != item.checksum()) {
      return MakeError(ErrorCode::kBadDigest,
                       "the server's checksum of the received octets differs from ours");
    }
    if (r.metadata().size() != item.length()) {
      return MakeError(
          ErrorCode::kIncompleteTransfer,
          absl::StrCat("server stored ", r.metadata().size(), " octets of ", item.length()));
    }
    return InfoFrom(r.metadata());
  }

  // PutObjects without BATCH_PUT: each item as a Put. A failure that is not the item's own ends
  // the call, as for GetEach.
  absl::StatusOr<BatchPutResults> PutEach(const std::string& bucket,
                                          const std::vector<BatchPutItem>& items,
                                          BatchPutResults out) {
    for (size_t i = 0; i < items.size(); ++i) {
      PutOptions options;
      options.content_type = items[i].content_type;
      auto put = Put(bucket, items[i].key, std::vector<BufferSlice>{items[i].source}, options);
      out[i] = put.ok() ? absl::StatusOr<ObjectInfo>(put->info) : put.status();
      const ErrorCode code = ErrorCodeOf(out[i].status());
      if (code == ErrorCode::kNoSuchBucket || code == ErrorCode::kDataChannelUnavailable ||
          code == ErrorCode::kTransferFailed || code == ErrorCode::kAccessDenied) {
        return out[i].status();
      }
    }
    return out;
  }

  absl::StatusOr<BatchGetResults> GetEach(const std::string& bucket,
                                          const std::vector<BatchGetItem>& items,
                                          BatchGetResults out) {
    for (size_t i = 0; i < items.size(); ++i) {
      GetOptions options;
      options.range = items[i].range;
      out[i] = Get(bucket, items[i].key, std::vector<BufferSlice>{items[i].destination}, options);
      const ErrorCode code = ErrorCodeOf(out[i].status());
      if (code == ErrorCode::kNoSuchBucket || code == ErrorCode::kDataChannelUnavailable ||
          code == ErrorCode::kTransferFailed || code == ErrorCode::kAccessDenied) {
        return out[i].status();
      }
    }
    return out;
  }

  // A PUT or GET. When it ends without a reply the server may still be moving bytes, so the
  // data channel is shut for good: destroying the worker stops every emulated operation aimed at
  // this client (AOBJ-MEM-014). The same after TRANSFER_FAILED or DATA_CHANNEL_UNAVAILABLE: the
  // server has failed the session's data channel (AOBJ-MEM-027). The caller must not reuse the
  // buffer before destroying the Client on HARDWARE sessions either; every later data request
  // fails with DATA_CHANNEL_UNAVAILABLE.
  // AOBJ-MEM-011: synchronous, so the caller's Buffer (its registration) is held until the reply.
  // A reply with an AOBJ error (CANCELLED and DEADLINE_EXCEEDED included) is a reply: the server
  // sends it only after its last RMA for the request (AOBJ-DAT-155), so the channel stays. That
  // is how Operation::Cancel() gets its acknowledgment. Unmapping the windows instead would not
  // stop the server on EMULATED sessions (AOBJ-MEM-025).
  template <class Req, class Resp>
  // `spin`: the request's windows need this side's UCX progress (RequestRegistrations).
  absl::Status DataCall(Method method, const Req& req, Resp* resp, bool spin = false) {
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
    absl::Status s = Call(method, req, resp, &no_reply);
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

  // AOBJ-SES-019: renews every third of the lease on its own thread, so also while a long data
  // request is in flight.
  void RenewLoop() {
    const absl::Duration period = absl::Milliseconds(std::max<int64_t>(info_.lease_ms / 3, 100));
    absl::MutexLock l(&mu_);
    while (open_) {
      if (mu_.AwaitWithTimeout(absl::Condition(+[](bool* open) { return !*open; }, &open_),
                               period)) {
        break;
      }
      mu_.Unlock();
      const absl::Status renewed = Renew();
      mu_.Lock();
      // AOBJ-SES-022: a session the server no longer knows is not renewed again; other failures
      // (a slow server) surface on the next operation and renewal goes on.
      const ErrorCode code = ErrorCodeOf(renewed);
      if (code == ErrorCode::kSessionExpired || code == ErrorCode::kNoSuchSession) break;
    }
  }

  void StopRenewer() {
    if (renewer_.joinable() && renewer_.get_id() != std::this_thread::get_id()) renewer_.join();
  }

  // Signs and sends one request (AOBJ-AUTH-001/002): the signature covers exactly the bytes
  // that travel.
  template <class Req, class Resp>
  absl::Status Call(Method method, const Req& req, Resp* resp, bool* no_reply = nullptr,
                    std::vector<std::pair<std::string, std::string>> extra_md = {}) {
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
    const absl::Time deadline = std::min(now + absl::Milliseconds(options_.timeout_ms),
                                         tls_deadline);
    if (deadline <= now) {
      // Nothing sent, so nothing to wait for.
      return MakeError(ErrorCode::kDeadlineExceeded, "the operation's deadline passed before "
                                                     "the call was sent");
    }
    RawReply reply;
    for (int attempt = 0;; ++attempt) {
      const absl::Time sent = absl::Now();
      // AOBJ-ERR-007: every attempt is a new request, with its own nonce and timestamp.
      RequestAuth auth = signer_->Sign(MethodPath(method), session, body, sent);
      // An asynchronous operation that was cancelled sends nothing more; otherwise Cancel()
      // can name this call by its nonce (AOBJ-DAT-156).
      if (tls_op != nullptr && !tls_op->Sending(auth.nonce_hex)) {
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
      const bool unknown_outcome =
          reply.error.code() == aobj::v1::ERROR_CODE_UNSPECIFIED &&
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
        return MakeError(ErrorCode::kDeadlineExceeded,
                         absl::StrCat("no reply before the deadline: ",
                                      reply.grpc_status.error_message()));
      }
      if (unknown && reply.grpc_status.error_code() == grpc::StatusCode::CANCELLED) {
        return MakeError(ErrorCode::kCancelled, absl::StrCat("the call was cancelled: ",
                                                             reply.grpc_status.error_message()));
      }
      return reply.status;
    }
    if (!resp->ParseFromString(reply.body)) {
      return MakeError(ErrorCode::kInternal,
                       absl::StrCat("malformed ", resp->GetTypeName(), " from the server"));
    }
    return absl::OkStatus();
  }

  // One fast request waiting for its reply (spec 8.9), by nonce.
  struct FastWaiter {
    absl::Notification done;
    bool lost = false;  // the data channel went before the reply came
    FastReply reply;
  };

  // Sends the signed request on the fast path and waits up to `timeout` for its reply, filling
  // `*reply` as rpc_->Call would. False (nothing sent) when the path does not carry it: not
  // negotiated, not a method it carries (AOBJ-DAT-167), extra metadata, too large for a frame
  // (AOBJ-DAT-171), or the data channel is gone.
  bool FastCall(Method method, const std::string& body, const RequestAuth& auth, bool plain,
                absl::Duration timeout, RawReply* reply) {
    if (fast_ep_ == 0 || fast_closed_.load() || !plain || !FastPathCarries(method)) return false;
    // A control connection that is not up (the server went away, or the channel idled) is what
    // tells this client that the server may have restarted and forgotten the session: such a
    // call goes by gRPC, which connects and gets the server's answer.
    if (control_->GetState(false) != GRPC_CHANNEL_READY) return false;
    FastRequest req;
    // The call's deadline, as gRPC would send it (section 3.7); at least a millisecond.
    req.timeout_ms = static_cast<uint32_t>(
        std::clamp<int64_t>(absl::ToInt64Milliseconds(timeout), 1, UINT32_MAX));
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

  // On the progress thread (UcxWorker::SetMessageHandler): a reply goes to the request waiting
  // for its nonce; anything else (malformed, unknown or late) is dropped (AOBJ-DAT-169).
  void OnFastReply(absl::string_view message) {
    auto parsed = ParseFastReply(message);
    if (!parsed.ok()) return;
    absl::MutexLock l(&fast_mu_);
    auto it = fast_waiters_.find(parsed->nonce_hex);
    if (it == fast_waiters_.end() || it->second->done.HasBeenNotified()) return;
    it->second->reply = std::move(*parsed);
    it->second->done.Notify();
  }

  void FailFastWaiters() {
    absl::MutexLock l(&fast_mu_);
    for (auto& [nonce, w] : fast_waiters_) {
      if (w->done.HasBeenNotified()) continue;
      w->lost = true;
      w->done.Notify();
    }
  }

  ClientOptions options_;
  SessionInfo info_;
  std::unique_ptr<RequestSigner> signer_;
  std::unique_ptr<UcxContext> context_;
  std::unique_ptr<UcxWorker> worker_;
  std::shared_ptr<grpc::Channel> control_;  // rpc_'s, for its connection state
  std::unique_ptr<RawChannel> rpc_;
  // How often a fast request's wait looks at the control connection.
  static constexpr absl::Duration kFastWatchInterval = absl::Milliseconds(50);
  uint64_t fast_ep_ = 0;  // the worker's endpoint to the server for fast requests; 0: none
  std::atomic<bool> fast_closed_{false};  // Close() ran: no more fast requests
  absl::Mutex fast_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<FastWaiter>> fast_waiters_
      ABSL_GUARDED_BY(fast_mu_);
  absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  bool data_channel_lost_ ABSL_GUARDED_BY(mu_) = false;
  // The server answered SESSION_EXPIRED or NO_SUCH_SESSION: no request names the session again.
  std::atomic<uint32_t> session_gone_{0};  // the ErrorCode, 0 while the session lives
  std::thread renewer_;
  std::unique_ptr<AsyncPool> pool_;
};

std::unique_ptr<Client> ClientImpl::WithCallOptions(const CallOptions& call) {
  return client_internal::NewCallScopedClient(this, call);
}

}  // namespace

absl::StatusOr<ByteRange> ByteRange::Parse(std::string_view text) {
  absl::StatusOr<RangeSpec> spec = ParseHttpRange(absl::string_view(text.data(), text.size()));
  if (!spec.ok()) return spec.status();
  ByteRange out;
  out.kind = spec->kind == RangeSpec::Kind::kFirstLast ? Kind::kFirstLast
             : spec->kind == RangeSpec::Kind::kFrom    ? Kind::kFrom
                                                       : Kind::kSuffix;
  out.first = spec->first;
  out.last = spec->last;
  out.suffix_length = spec->suffix_length;
  return out;
}

std::string ByteRange::ToString() const {
  switch (kind) {
    case Kind::kFirstLast:
      return absl::StrCat("bytes=", first, "-", last);
    case Kind::kFrom:
      return absl::StrCat("bytes=", first, "-");
    case Kind::kSuffix:
      return absl::StrCat("bytes=-", suffix_length);
  }
  return "bytes=?";
}

absl::StatusOr<ObjectListing> Client::ListAllObjects(const std::string& bucket,
                                                     ListObjectsOptions options,
                                                     size_t max_entries) {
  ObjectListing all;
  for (;;) {
    absl::StatusOr<ObjectListing> page = ListObjects(bucket, options);
    if (!page.ok()) return page.status();
    const size_t got = page->objects.size() + page->common_prefixes.size();
    for (ObjectSummary& o : page->objects) all.objects.push_back(std::move(o));
    for (std::string& p : page->common_prefixes) all.common_prefixes.push_back(std::move(p));
    all.is_truncated = page->is_truncated;
    all.next_continuation_token = page->next_continuation_token;
    if (!page->is_truncated || all.objects.size() + all.common_prefixes.size() >= max_entries) {
      return all;
    }
    if (got == 0) {
      return MakeError(ErrorCode::kInternal, "server sent a truncated page that does not advance");
    }
    options.continuation_token = page->next_continuation_token;  // AOBJ-OBJ-106: unchanged
  }
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  auto client = std::make_unique<ClientImpl>();
  if (absl::Status s = client->Init(options); !s.ok()) return s;
  return std::unique_ptr<Client>(std::move(client));
}

}  // namespace aobj
