// Client::WithCallOptions (client/async.h): a forwarding view that narrows the deadline of every
// call made through it.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aobj/client.h"
#include "client/async.h"
#include "client/client_impl.h"

namespace aobj::client_internal {
namespace {

// Client::WithCallOptions: every operation started through the view runs in a context narrowed
// by the view's CallOptions (and those of the views it was made from), each timeout counted
// from the operation's start; everything else is the borrowed Client's.
class CallScopedClient final : public Client {
 public:
  CallScopedClient(ClientImpl* impl, std::vector<CallOptions> calls)
      : impl_(impl), calls_(std::move(calls)) {}

  const SessionInfo& session() const override { return impl_->session(); }
  absl::StatusOr<std::unique_ptr<Buffer>> AllocateBuffer(size_t size) override {
    return impl_->AllocateBuffer(size);
  }
  absl::StatusOr<std::unique_ptr<Buffer>> RegisterBuffer(void* data, size_t size) override {
    return impl_->RegisterBuffer(data, size);
  }
  absl::StatusOr<TransferResult> Put(const std::string& bucket, const std::string& key,
                                     const Buffer& buffer, uint64_t size,
                                     const PutOptions& options) override {
    return impl_->Put(Context(), bucket, key, buffer, size, options);
  }
  absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                     Buffer& buffer) override {
    return impl_->Get(Context(), bucket, key, buffer);
  }
  absl::StatusOr<ObjectInfo> Head(const std::string& bucket, const std::string& key) override {
    return impl_->Head(Context(), bucket, key);
  }
  absl::Status Delete(const std::string& bucket, const std::string& key) override {
    return impl_->Delete(Context(), bucket, key);
  }
  absl::Status CreateBucket(const std::string& bucket) override {
    return impl_->CreateBucket(Context(), bucket);
  }
  absl::Status DeleteBucket(const std::string& bucket) override {
    return impl_->DeleteBucket(Context(), bucket);
  }
  absl::Status HeadBucket(const std::string& bucket) override {
    return impl_->HeadBucket(Context(), bucket);
  }
  absl::StatusOr<TransferResult> Put(const std::string& bucket, const std::string& key,
                                     const std::vector<BufferSlice>& source,
                                     const PutOptions& options) override {
    return impl_->Put(Context(), bucket, key, source, options);
  }
  absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                     Buffer& buffer, const GetOptions& options) override {
    return impl_->Get(Context(), bucket, key, buffer, options);
  }
  absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                     const std::vector<BufferSlice>& destination,
                                     const GetOptions& options) override {
    return impl_->Get(Context(), bucket, key, destination, options);
  }
  absl::StatusOr<ObjectInfo> Head(const std::string& bucket, const std::string& key,
                                  const Preconditions& conditions) override {
    return impl_->Head(Context(), bucket, key, conditions);
  }
  absl::StatusOr<std::vector<BucketSummary>> ListBuckets() override {
    return impl_->ListBuckets(Context());
  }
  absl::StatusOr<ObjectListing> ListObjects(const std::string& bucket,
                                            const ListObjectsOptions& options) override {
    return impl_->ListObjects(Context(), bucket, options);
  }
  absl::StatusOr<DeleteObjectsResult> DeleteObjects(const std::string& bucket,
                                                    const std::vector<std::string>& keys,
                                                    bool quiet) override {
    return impl_->DeleteObjects(Context(), bucket, keys, quiet);
  }
  absl::StatusOr<BatchGetResults> GetObjects(const std::string& bucket,
                                             const std::vector<BatchGetItem>& items,
                                             const CallOptions& call) override {
    return impl_->GetObjects(Context(), bucket, items, call);
  }
  absl::StatusOr<BatchPutResults> PutObjects(const std::string& bucket,
                                             const std::vector<BatchPutItem>& items,
                                             const CallOptions& call) override {
    return impl_->PutObjects(Context(), bucket, items, call);
  }
  absl::StatusOr<ObjectInfo> Copy(const std::string& source_bucket, const std::string& source_key,
                                  const std::string& bucket, const std::string& key,
                                  const CopyOptions& options) override {
    return impl_->Copy(Context(), source_bucket, source_key, bucket, key, options);
  }
  absl::StatusOr<UploadInfo> CreateMultipartUpload(const std::string& bucket,
                                                   const std::string& key,
                                                   const PutOptions& options) override {
    return impl_->CreateMultipartUpload(Context(), bucket, key, options);
  }
  absl::StatusOr<UploadPartResult> UploadPart(const std::string& bucket, const std::string& key,
                                              const std::string& upload_id, uint32_t part_number,
                                              const Buffer& buffer, uint64_t offset,
                                              uint64_t size) override {
    return impl_->UploadPart(Context(), bucket, key, upload_id, part_number, buffer, offset, size);
  }
  absl::StatusOr<ObjectInfo> CompleteMultipartUpload(const std::string& bucket,
                                                     const std::string& key,
                                                     const std::string& upload_id,
                                                     const std::vector<CompletedPart>& parts,
                                                     const Preconditions& conditions,
                                                     std::optional<uint32_t> full_crc32c) override {
    return impl_->CompleteMultipartUpload(Context(), bucket, key, upload_id, parts, conditions,
                                          full_crc32c);
  }
  absl::Status AbortMultipartUpload(const std::string& bucket, const std::string& key,
                                    const std::string& upload_id) override {
    return impl_->AbortMultipartUpload(Context(), bucket, key, upload_id);
  }
  absl::StatusOr<PartsPage> ListParts(const std::string& bucket, const std::string& key,
                                      const std::string& upload_id, uint32_t part_number_marker,
                                      uint32_t max_parts) override {
    return impl_->ListParts(Context(), bucket, key, upload_id, part_number_marker, max_parts);
  }
  absl::StatusOr<UploadsPage> ListMultipartUploads(const std::string& bucket,
                                                   const ListUploadsOptions& options) override {
    return impl_->ListMultipartUploads(Context(), bucket, options);
  }
  absl::StatusOr<ObjectInfo> UploadMultipart(const std::string& bucket, const std::string& key,
                                             const Buffer& buffer, uint64_t size,
                                             uint64_t part_size, const PutOptions& put,
                                             const MultipartUploadOptions& options) override {
    return impl_->UploadMultipart(Context(), bucket, key, buffer, size, part_size, put, options);
  }
  std::unique_ptr<Client> WithCallOptions(const CallOptions& call) override {
    std::vector<CallOptions> calls = calls_;
    calls.push_back(call);
    return std::make_unique<CallScopedClient>(impl_, std::move(calls));
  }
  std::shared_ptr<Operation<TransferResult>> PutAsync(
      const std::string& bucket, const std::string& key, const Buffer& buffer, uint64_t size,
      const PutOptions& options, Operation<TransferResult>::Callback done) override {
    return impl_->PutAsync(Context(), bucket, key, buffer, size, options, std::move(done));
  }
  std::shared_ptr<Operation<TransferResult>> GetAsync(
      const std::string& bucket, const std::string& key, Buffer& buffer,
      const GetOptions& options, Operation<TransferResult>::Callback done) override {
    return impl_->GetAsync(Context(), bucket, key, buffer, options, std::move(done));
  }
  std::shared_ptr<Operation<ObjectInfo>> HeadAsync(const std::string& bucket,
                                                   const std::string& key,
                                                   const Preconditions& conditions,
                                                   const CallOptions& call,
                                                   Operation<ObjectInfo>::Callback done) override {
    return impl_->HeadAsync(Context(), bucket, key, conditions, call, std::move(done));
  }
  std::shared_ptr<Operation<std::monostate>> DeleteAsync(
      const std::string& bucket, const std::string& key, const CallOptions& call,
      Operation<std::monostate>::Callback done) override {
    return impl_->DeleteAsync(Context(), bucket, key, call, std::move(done));
  }
  std::shared_ptr<Operation<ObjectListing>> ListObjectsAsync(
      const std::string& bucket, const ListObjectsOptions& options, const CallOptions& call,
      Operation<ObjectListing>::Callback done) override {
    return impl_->ListObjectsAsync(Context(), bucket, options, call, std::move(done));
  }
  std::shared_ptr<Operation<UploadPartResult>> UploadPartAsync(
      const std::string& bucket, const std::string& key, const std::string& upload_id,
      uint32_t part_number, const Buffer& buffer, uint64_t offset, uint64_t size,
      const CallOptions& call, Operation<UploadPartResult>::Callback done) override {
    return impl_->UploadPartAsync(Context(), bucket, key, upload_id, part_number, buffer, offset,
                                  size, call, std::move(done));
  }
  std::shared_ptr<Operation<ObjectInfo>> UploadMultipartAsync(
      const std::string& bucket, const std::string& key, const Buffer& buffer, uint64_t size,
      uint64_t part_size, const PutOptions& put, const MultipartUploadOptions& options,
      Operation<ObjectInfo>::Callback done) override {
    return impl_->UploadMultipartAsync(Context(), bucket, key, buffer, size, part_size, put,
                                       options, std::move(done));
  }
  absl::Status Renew() override { return impl_->Renew(Context()); }
  absl::Status Close() override { return impl_->Close(Context()); }

 private:
  // The context of an operation that starts now.
  CallContext Context() const {
    CallContext ctx;
    for (const CallOptions& call : calls_) ctx = ctx.Within(call);
    return ctx;
  }

  ClientImpl* impl_;                      // borrowed; outlives this view
  const std::vector<CallOptions> calls_;  // outermost view first
};


}  // namespace

std::unique_ptr<Client> NewCallScopedClient(ClientImpl* impl, const CallOptions& call) {
  return std::make_unique<CallScopedClient>(impl, std::vector<CallOptions>{call});
}

}  // namespace aobj::client_internal
