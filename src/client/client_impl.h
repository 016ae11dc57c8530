// The Client's implementation, internal to the client layer: the operations of aobj/client.h
// built on three parts, each a type of its own:
//
//   SessionChannel       session_channel.h: the session (open, renew, close) and every signed
//                        call on it: signing, the busy-retry policy (BusyRetryPolicy), the fast
//                        path (spec 8.9), what a lost data channel means (AOBJ-MEM-027)
//   BufferRegistry       buffers.h: the buffers the library issues, their origin, the windows
//                        of a request, the checksum of a body in buffer slices
//   AsyncPool            async.h: the asynchronous adapter's threads (Operation)
//
// and the operations in files by concern:
//
//   client.cc            Connect, shutdown, the buffer and session methods of Client
//   client_objects.cc    single-object operations, buckets, listings
//   client_batch.cc      GetObjects and PutObjects (spec 9.16, 9.17)
//   client_multipart.cc  multipart upload; MultipartUploader drives one in parallel
//   client_async.cc      the asynchronous adapter (Operation, async.h)
#ifndef AOBJ_CLIENT_CLIENT_IMPL_H_
#define AOBJ_CLIENT_CLIENT_IMPL_H_

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <optional>
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
#include "client/buffers.h"
#include "client/range_spec.h"
#include "client/session_channel.h"
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

class ClientImpl final : public Client {
 public:
  ~ClientImpl() override;

  absl::Status Init(const ClientOptions& options);

  const SessionInfo& session() const override { return session_.info(); }

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
                                                     const Preconditions& conditions,
                                                     std::optional<uint32_t> full_crc32c) override {
    return CompleteMultipartUpload(CallContext(), bucket, key, upload_id, parts, conditions,
                                   full_crc32c);
  }
  // `full_crc32c`: the CRC32C of the whole content, sent for the server to check (AOBJ-OBJ-259).
  absl::StatusOr<ObjectInfo> CompleteMultipartUpload(
      const CallContext& ctx, const std::string& bucket, const std::string& key,
      const std::string& upload_id, const std::vector<CompletedPart>& parts,
      const Preconditions& conditions, std::optional<uint32_t> full_crc32c = std::nullopt);

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
    auto op = std::make_shared<OperationImpl<T>>(&session_, std::move(done));
    AsyncPool* pool = pool_.get();
    if (!pool->Submit([op, fn, ctx, pool] { op->Run(fn, ctx, pool->stopping()); })) {
      op->Run(fn, ctx, /*stopping=*/true);
    }
    return op;
  }

  // AOBJ-EXT-007: INLINE (and MULTI_DESCRIPTOR, AddWindows) only once negotiated.
  bool UseInline(uint64_t size) const {
    return options_.allow_inline && session_.HasCapability(kCapInline) &&
           size <= session_.info().limits.inline_threshold;
  }
  // AOBJ-MEM-005, AOBJ-MEM-015: more than one window only with MULTI_DESCRIPTOR.
  uint32_t MaxWindows() const {
    return session_.HasCapability(kCapMultiDescriptor) ? session_.info().limits.max_descriptors : 1;
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
                                                  const pb::GetObjectsResult& r) const;

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

  // GetObjects without BATCH_GET: each item as a Get. A failure that is not the item's own (the
  // bucket, the data channel) fails the call, as it would fail a GetObjects request.
  absl::StatusOr<BatchGetResults> GetEach(const CallContext& ctx, const std::string& bucket,
                                          const std::vector<BatchGetItem>& items,
                                          BatchGetResults out);

  // AOBJ-MEM-011: synchronous, so the caller's Buffer (its registration) is held until the
  // reply; SessionChannel::DataCall says what a call that ends without one does to the data
  // channel (unmapping the windows would not stop the server on EMULATED sessions,
  // AOBJ-MEM-025).
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
      AOBJ_RETURN_IF_ERROR(
          buffers_.AddWindows(source, MaxWindows(), req->mutable_source(), &registrations));
    }
    AOBJ_RETURN_IF_ERROR(
        session_.DataCall(ctx, method, *req, resp, registrations.emulated_windows));
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
  ClientOptions options_;
  SessionChannel session_;
  BufferRegistry buffers_;
  std::unique_ptr<AsyncPool> pool_;
};

// Client::WithCallOptions: a view of `impl` (borrowed; must outlive it) whose operations carry
// `call`'s deadline too (call_scoped_client.cc).
std::unique_ptr<Client> NewCallScopedClient(ClientImpl* impl, const CallOptions& call);

}  // namespace aobj::client_internal

#endif  // AOBJ_CLIENT_CLIENT_IMPL_H_
