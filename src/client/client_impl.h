// The Client's implementation, internal to the client layer: one AOBJ/1 session over a gRPC
// channel, with a UCX worker as the RMA target. One class, its concerns in files of their own:
//
//   client.cc            session lifecycle (Init, renewal, Close) and buffers (registration,
//                        the windows of a request, a buffer's origin)
//   client_call.cc       one signed call: signing, busy retries, the fast path (spec 8.9), what
//                        a lost data channel means (AOBJ-MEM-027)
//   client_objects.cc    single-object operations, buckets, listings, checksums of the body
//   client_batch.cc      GetObjects and PutObjects (spec 9.16, 9.17)
//   client_multipart.cc  multipart upload, and the uploader that drives it in parallel
//   client_async.cc      the asynchronous adapter (Operation, async.h)
#ifndef AOBJ_CLIENT_CLIENT_IMPL_H_
#define AOBJ_CLIENT_CLIENT_IMPL_H_

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
#include "aobj/client.h"
#include "aobj/device.h"
#include "aobj/status.h"
#include "client/async.h"
#include "client/batch_plan.h"
#include "client/range_spec.h"
#include "control/raw_call.h"
#include "control/rpc.h"
#include "control/tls.h"
#include "google/protobuf/message.h"
#include "session/signer.h"
#include "transport/ucx_context.h"
#include "transport/ucx_memory.h"
#include "transport/ucx_worker.h"
#include "wire/checksum.h"
#include "wire/convert.h"
#include "wire/crypto.h"
#include "wire/etag.h"
#include "wire/fast_frame.h"
#include "wire/protocol.h"
#include "wire/range.h"
#include "wire/status_macros.h"

namespace aobj::client_internal {

namespace pb = aobj::v1;

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

class ClientImpl final : public Client, public CancelSender {
 public:
  ~ClientImpl() override;

  absl::Status Init(const ClientOptions& options);

  const SessionInfo& session() const override { return info_; }

  absl::StatusOr<std::unique_ptr<Buffer>> AllocateBuffer(size_t size) override;

  absl::StatusOr<std::unique_ptr<Buffer>> RegisterBuffer(void* data, size_t size) override;

  absl::StatusOr<TransferResult> Put(const std::string& bucket, const std::string& key,
                                     const Buffer& buffer, uint64_t size,
                                     const PutOptions& options) override {
    return Put(CallContext(), bucket, key, buffer, size, options);
  }
  absl::StatusOr<TransferResult> Put(const CallContext& ctx, const std::string& bucket,
                                     const std::string& key, const Buffer& buffer, uint64_t size,
                                     const PutOptions& options);

  absl::StatusOr<TransferResult> Put(const std::string& bucket, const std::string& key,
                                     const std::vector<BufferSlice>& source,
                                     const PutOptions& options) override {
    return Put(CallContext(), bucket, key, source, options);
  }
  absl::StatusOr<TransferResult> Put(const CallContext& ctx, const std::string& bucket,
                                     const std::string& key, const std::vector<BufferSlice>& source,
                                     const PutOptions& options);

  absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                     Buffer& buffer) override {
    return Get(CallContext(), bucket, key, buffer);
  }
  absl::StatusOr<TransferResult> Get(const CallContext& ctx, const std::string& bucket,
                                     const std::string& key, Buffer& buffer);

  absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                     Buffer& buffer, const GetOptions& options) override {
    return Get(CallContext(), bucket, key, buffer, options);
  }
  absl::StatusOr<TransferResult> Get(const CallContext& ctx, const std::string& bucket,
                                     const std::string& key, Buffer& buffer,
                                     const GetOptions& options);

  absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                     const std::vector<BufferSlice>& destination,
                                     const GetOptions& options) override {
    return Get(CallContext(), bucket, key, destination, options);
  }
  absl::StatusOr<TransferResult> Get(const CallContext& ctx, const std::string& bucket,
                                     const std::string& key,
                                     const std::vector<BufferSlice>& destination,
                                     const GetOptions& options);

  absl::StatusOr<ObjectInfo> Head(const std::string& bucket, const std::string& key) override {
    return Head(CallContext(), bucket, key);
  }
  absl::StatusOr<ObjectInfo> Head(const CallContext& ctx, const std::string& bucket,
                                  const std::string& key);

  absl::StatusOr<ObjectInfo> Head(const std::string& bucket, const std::string& key,
                                  const Preconditions& conditions) override {
    return Head(CallContext(), bucket, key, conditions);
  }
  absl::StatusOr<ObjectInfo> Head(const CallContext& ctx, const std::string& bucket,
                                  const std::string& key, const Preconditions& conditions);

  absl::StatusOr<std::vector<BucketSummary>> ListBuckets() override {
    return ListBuckets(CallContext());
  }
  absl::StatusOr<std::vector<BucketSummary>> ListBuckets(const CallContext& ctx);

  absl::StatusOr<ObjectListing> ListObjects(const std::string& bucket,
                                            const ListObjectsOptions& options) override {
    return ListObjects(CallContext(), bucket, options);
  }
  absl::StatusOr<ObjectListing> ListObjects(const CallContext& ctx, const std::string& bucket,
                                            const ListObjectsOptions& options);

  absl::StatusOr<DeleteObjectsResult> DeleteObjects(const std::string& bucket,
                                                    const std::vector<std::string>& keys,
                                                    bool quiet) override {
    return DeleteObjects(CallContext(), bucket, keys, quiet);
  }
  absl::StatusOr<DeleteObjectsResult> DeleteObjects(const CallContext& ctx,
                                                    const std::string& bucket,
                                                    const std::vector<std::string>& keys,
                                                    bool quiet);

  absl::StatusOr<BatchGetResults> GetObjects(const std::string& bucket,
                                             const std::vector<BatchGetItem>& items,
                                             const CallOptions& call) override {
    return GetObjects(CallContext(), bucket, items, call);
  }
  absl::StatusOr<BatchGetResults> GetObjects(const CallContext& ctx, const std::string& bucket,
                                             const std::vector<BatchGetItem>& items,
                                             const CallOptions& call);

  absl::StatusOr<BatchPutResults> PutObjects(const std::string& bucket,
                                             const std::vector<BatchPutItem>& items,
                                             const CallOptions& call) override {
    return PutObjects(CallContext(), bucket, items, call);
  }
  absl::StatusOr<BatchPutResults> PutObjects(const CallContext& ctx, const std::string& bucket,
                                             const std::vector<BatchPutItem>& items,
                                             const CallOptions& call);

  absl::StatusOr<ObjectInfo> Copy(const std::string& source_bucket, const std::string& source_key,
                                  const std::string& bucket, const std::string& key,
                                  const CopyOptions& options) override {
    return Copy(CallContext(), source_bucket, source_key, bucket, key, options);
  }
  absl::StatusOr<ObjectInfo> Copy(const CallContext& ctx, const std::string& source_bucket,
                                  const std::string& source_key, const std::string& bucket,
                                  const std::string& key, const CopyOptions& options);

  absl::Status Delete(const std::string& bucket, const std::string& key) override {
    return Delete(CallContext(), bucket, key);
  }
  absl::Status Delete(const CallContext& ctx, const std::string& bucket, const std::string& key);

  absl::Status CreateBucket(const std::string& bucket) override {
    return CreateBucket(CallContext(), bucket);
  }
  absl::Status CreateBucket(const CallContext& ctx, const std::string& bucket);

  absl::Status DeleteBucket(const std::string& bucket) override {
    return DeleteBucket(CallContext(), bucket);
  }
  absl::Status DeleteBucket(const CallContext& ctx, const std::string& bucket);

  absl::Status HeadBucket(const std::string& bucket) override {
    return HeadBucket(CallContext(), bucket);
  }
  absl::Status HeadBucket(const CallContext& ctx, const std::string& bucket);

  absl::StatusOr<UploadInfo> CreateMultipartUpload(const std::string& bucket,
                                                   const std::string& key,
                                                   const PutOptions& options) override {
    return CreateMultipartUpload(CallContext(), bucket, key, options);
  }
  absl::StatusOr<UploadInfo> CreateMultipartUpload(const CallContext& ctx,
                                                   const std::string& bucket,
                                                   const std::string& key,
                                                   const PutOptions& options);

  absl::StatusOr<UploadPartResult> UploadPart(const std::string& bucket, const std::string& key,
                                              const std::string& upload_id, uint32_t part_number,
                                              const Buffer& buffer, uint64_t offset,
                                              uint64_t size) override {
    return UploadPart(CallContext(), bucket, key, upload_id, part_number, buffer, offset, size);
  }
  absl::StatusOr<UploadPartResult> UploadPart(const CallContext& ctx, const std::string& bucket,
                                              const std::string& key, const std::string& upload_id,
                                              uint32_t part_number, const Buffer& buffer,
                                              uint64_t offset, uint64_t size);

  absl::StatusOr<ObjectInfo> CompleteMultipartUpload(const std::string& bucket,
                                                     const std::string& key,
                                                     const std::string& upload_id,
                                                     const std::vector<CompletedPart>& parts,
                                                     const Preconditions& conditions) override {
    return CompleteMultipartUpload(CallContext(), bucket, key, upload_id, parts, conditions);
  }
  absl::StatusOr<ObjectInfo> CompleteMultipartUpload(const CallContext& ctx,
                                                     const std::string& bucket,
                                                     const std::string& key,
                                                     const std::string& upload_id,
                                                     const std::vector<CompletedPart>& parts,
                                                     const Preconditions& conditions);

  absl::Status AbortMultipartUpload(const std::string& bucket, const std::string& key,
                                    const std::string& upload_id) override {
    return AbortMultipartUpload(CallContext(), bucket, key, upload_id);
  }
  absl::Status AbortMultipartUpload(const CallContext& ctx, const std::string& bucket,
                                    const std::string& key, const std::string& upload_id);

  absl::StatusOr<PartsPage> ListParts(const std::string& bucket, const std::string& key,
                                      const std::string& upload_id, uint32_t part_number_marker,
                                      uint32_t max_parts) override {
    return ListParts(CallContext(), bucket, key, upload_id, part_number_marker, max_parts);
  }
  absl::StatusOr<PartsPage> ListParts(const CallContext& ctx, const std::string& bucket,
                                      const std::string& key, const std::string& upload_id,
                                      uint32_t part_number_marker, uint32_t max_parts);

  absl::StatusOr<UploadsPage> ListMultipartUploads(const std::string& bucket,
                                                   const ListUploadsOptions& options) override {
    return ListMultipartUploads(CallContext(), bucket, options);
  }
  absl::StatusOr<UploadsPage> ListMultipartUploads(const CallContext& ctx,
                                                   const std::string& bucket,
                                                   const ListUploadsOptions& options);

  absl::StatusOr<ObjectInfo> UploadMultipart(const std::string& bucket, const std::string& key,
                                             const Buffer& buffer, uint64_t size,
                                             uint64_t part_size, const PutOptions& put,
                                             const MultipartUploadOptions& options) override {
    return UploadMultipart(CallContext(), bucket, key, buffer, size, part_size, put, options);
  }
  absl::StatusOr<ObjectInfo> UploadMultipart(const CallContext& ctx, const std::string& bucket,
                                             const std::string& key, const Buffer& buffer,
                                             uint64_t size, uint64_t part_size,
                                             const PutOptions& put,
                                             const MultipartUploadOptions& options);

  std::unique_ptr<Client> WithCallOptions(const CallOptions& call) override;

  // The abort of an upload that failed because its operation was cancelled or ran out of time
  // must still be sent: outside the operation (not refused by its cancellation) and with only
  // ClientOptions::timeout_ms as its deadline.
  absl::Status AbortOutsideOperation(const std::string& bucket, const std::string& key,
                                     const std::string& upload_id);

  std::shared_ptr<Operation<TransferResult>> PutAsync(
      const std::string& bucket, const std::string& key, const Buffer& buffer, uint64_t size,
      const PutOptions& options, Operation<TransferResult>::Callback done) override {
    return PutAsync(CallContext(), bucket, key, buffer, size, options, std::move(done));
  }
  std::shared_ptr<Operation<TransferResult>> PutAsync(const CallContext& ctx,
                                                      const std::string& bucket,
                                                      const std::string& key, const Buffer& buffer,
                                                      uint64_t size, const PutOptions& options,
                                                      Operation<TransferResult>::Callback done);
  std::shared_ptr<Operation<TransferResult>> GetAsync(
      const std::string& bucket, const std::string& key, Buffer& buffer, const GetOptions& options,
      Operation<TransferResult>::Callback done) override {
    return GetAsync(CallContext(), bucket, key, buffer, options, std::move(done));
  }
  std::shared_ptr<Operation<TransferResult>> GetAsync(const CallContext& ctx,
                                                      const std::string& bucket,
                                                      const std::string& key, Buffer& buffer,
                                                      const GetOptions& options,
                                                      Operation<TransferResult>::Callback done);
  std::shared_ptr<Operation<ObjectInfo>> HeadAsync(const std::string& bucket,
                                                   const std::string& key,
                                                   const Preconditions& conditions,
                                                   const CallOptions& call,
                                                   Operation<ObjectInfo>::Callback done) override {
    return HeadAsync(CallContext(), bucket, key, conditions, call, std::move(done));
  }
  std::shared_ptr<Operation<ObjectInfo>> HeadAsync(const CallContext& ctx,
                                                   const std::string& bucket,
                                                   const std::string& key,
                                                   const Preconditions& conditions,
                                                   const CallOptions& call,
                                                   Operation<ObjectInfo>::Callback done);
  std::shared_ptr<Operation<std::monostate>> DeleteAsync(
      const std::string& bucket, const std::string& key, const CallOptions& call,
      Operation<std::monostate>::Callback done) override {
    return DeleteAsync(CallContext(), bucket, key, call, std::move(done));
  }
  std::shared_ptr<Operation<std::monostate>> DeleteAsync(const CallContext& ctx,
                                                         const std::string& bucket,
                                                         const std::string& key,
                                                         const CallOptions& call,
                                                         Operation<std::monostate>::Callback done);

  std::shared_ptr<Operation<ObjectListing>> ListObjectsAsync(
      const std::string& bucket, const ListObjectsOptions& options, const CallOptions& call,
      Operation<ObjectListing>::Callback done) override {
    return ListObjectsAsync(CallContext(), bucket, options, call, std::move(done));
  }
  std::shared_ptr<Operation<ObjectListing>> ListObjectsAsync(
      const CallContext& ctx, const std::string& bucket, const ListObjectsOptions& options,
      const CallOptions& call, Operation<ObjectListing>::Callback done);
  std::shared_ptr<Operation<UploadPartResult>> UploadPartAsync(
      const std::string& bucket, const std::string& key, const std::string& upload_id,
      uint32_t part_number, const Buffer& buffer, uint64_t offset, uint64_t size,
      const CallOptions& call, Operation<UploadPartResult>::Callback done) override {
    return UploadPartAsync(CallContext(), bucket, key, upload_id, part_number, buffer, offset, size,
                           call, std::move(done));
  }
  std::shared_ptr<Operation<UploadPartResult>> UploadPartAsync(
      const CallContext& ctx, const std::string& bucket, const std::string& key,
      const std::string& upload_id, uint32_t part_number, const Buffer& buffer, uint64_t offset,
      uint64_t size, const CallOptions& call, Operation<UploadPartResult>::Callback done);
  std::shared_ptr<Operation<ObjectInfo>> UploadMultipartAsync(
      const std::string& bucket, const std::string& key, const Buffer& buffer, uint64_t size,
      uint64_t part_size, const PutOptions& put, const MultipartUploadOptions& options,
      Operation<ObjectInfo>::Callback done) override {
    return UploadMultipartAsync(CallContext(), bucket, key, buffer, size, part_size, put, options,
                                std::move(done));
  }
  std::shared_ptr<Operation<ObjectInfo>> UploadMultipartAsync(
      const CallContext& ctx, const std::string& bucket, const std::string& key,
      const Buffer& buffer, uint64_t size, uint64_t part_size, const PutOptions& put,
      const MultipartUploadOptions& options, Operation<ObjectInfo>::Callback done);

  // Names a running request of this session on a RenewSession call: in the signed body when
  // CANCEL was negotiated (AOBJ-DAT-160), else in an `aobj-cancel` entry (AOBJ-DAT-156).
  // Failure is not reported: the operation then ends by its deadline.
  void SendCancel(const std::string& nonce) override;

  absl::Status Renew() override { return Renew(CallContext()); }
  absl::Status Renew(const CallContext& ctx);

  absl::Status Close() override { return Close(CallContext()); }
  absl::Status Close(const CallContext& ctx);

 private:
  // Queues `fn` as an asynchronous operation in `ctx` (the operation's own cancellation
  // added when it runs).
  template <class T>
  std::shared_ptr<Operation<T>> Submit(const CallContext& ctx,
                                       std::function<absl::StatusOr<T>(const CallContext&)> fn,
                                       typename Operation<T>::Callback done) {
    auto op = std::make_shared<OperationImpl<T>>(this, std::move(done));
    AsyncPool* pool = pool_.get();
    if (!pool->Submit([op, fn, ctx, pool] { op->Run(fn, ctx, pool->stopping()); })) {
      op->Run(fn, ctx, /*stopping=*/true);
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
  absl::StatusOr<const BufferImpl*> Issued(const Buffer& buffer) const;
  // A descriptor for exactly the slice's window (checked by CheckSlices). A per-request buffer's
  // window is registered now, exactly, and stays registered while `registrations` lives.
  absl::Status AddWindow(const BufferSlice& s, pb::MemoryDescriptor* d,
                         RequestRegistrations* registrations);
  // The total length of `slices`; INVALID_ARGUMENT for a null buffer or a window past its
  // buffer.
  absl::StatusOr<uint64_t> CheckSlices(const std::vector<BufferSlice>& slices) const;
  // Descriptors for the non-empty slices; INVALID_ARGUMENT when they are more than the session
  // takes (AOBJ-MEM-005, AOBJ-MEM-015), before anything is sent.
  absl::Status AddWindows(const std::vector<BufferSlice>& slices,
                          google::protobuf::RepeatedPtrField<pb::MemoryDescriptor>* out,
                          RequestRegistrations* registrations);
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
                                uint64_t size);
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
                                                  const pb::GetObjectsResult& r) const;

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
                                                        const pb::PutObjectsResult& r);

  // PutObjects without BATCH_PUT: each item as a Put. A failure that is not the item's own ends
  // the call, as for GetEach.
  absl::StatusOr<BatchPutResults> PutEach(const CallContext& ctx, const std::string& bucket,
                                          const std::vector<BatchPutItem>& items,
                                          BatchPutResults out);

  absl::StatusOr<BatchGetResults> GetEach(const CallContext& ctx, const std::string& bucket,
                                          const std::vector<BatchGetItem>& items,
                                          BatchGetResults out);

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
  // The body of an upload (PutObject, UploadPart): `size` octets of `source`, inline when the
  // session allows it, else windows of exactly the body (AOBJ-MEM-010); the reply must report
  // exactly those octets and their checksum, else the upload failed (AOBJ-DAT-004,
  // AOBJ-DAT-154: never report success for a short or different transfer).
  template <class Req, class Resp>
  absl::Status SendBody(const CallContext& ctx, Method method,
                        const std::vector<BufferSlice>& source, uint64_t size,
                        const std::string& checksum, Req* req, Resp* resp) {
    RequestRegistrations registrations;  // unmapped after the reply
    if (size > 0 && UseInline(size)) {
      std::string body;
      body.reserve(size);
      ForEachSpan(source, size,
                  [&](uint8_t* p, size_t n) { body.append(reinterpret_cast<char*>(p), n); });
      req->set_inline_data(std::move(body));
    } else if (size > 0) {
      AOBJ_RETURN_IF_ERROR(AddWindows(source, req->mutable_source(), &registrations));
    }
    AOBJ_RETURN_IF_ERROR(DataCall(ctx, method, *req, resp, registrations.emulated_windows));
    if (resp->bytes_transferred() != size) {
      return MakeError(
          ErrorCode::kIncompleteTransfer,
          absl::StrCat("server reports ", resp->bytes_transferred(), " bytes moved of ", size));
    }
    if (resp->checksum() != checksum) {
      return MakeError(ErrorCode::kBadDigest,
                       "the server's checksum of the received body differs from ours");
    }
    return absl::OkStatus();
  }
  // `spin`: the request's windows need this side's UCX progress (RequestRegistrations).
  absl::Status DataCall(const CallContext& ctx, Method method, const google::protobuf::Message& req,
                        google::protobuf::Message* resp, bool spin = false);

  // AOBJ-SES-019: renews every third of the lease on its own thread, so also while a long data
  // request is in flight.
  void RenewLoop();

  void StopRenewer();

  // Signs and sends one request (AOBJ-AUTH-001/002): the signature covers exactly the bytes
  // that travel.
  absl::Status Call(const CallContext& ctx, Method method, const google::protobuf::Message& req,
                    google::protobuf::Message* resp, bool* no_reply = nullptr,
                    std::vector<std::pair<std::string, std::string>> extra_md = {});

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
                absl::Duration timeout, RawReply* reply);

  // On the progress thread (UcxWorker::SetMessageHandler): a reply goes to the request waiting
  // for its nonce; anything else (malformed, unknown or late) is dropped (AOBJ-DAT-169).
  void OnFastReply(absl::string_view message);

  void FailFastWaiters();

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

// Client::WithCallOptions: a view of `impl` (borrowed; must outlive it) whose operations carry
// `call`'s deadline too (call_scoped_client.cc).
std::unique_ptr<Client> NewCallScopedClient(ClientImpl* impl, const CallOptions& call);

}  // namespace aobj::client_internal

#endif  // AOBJ_CLIENT_CLIENT_IMPL_H_
