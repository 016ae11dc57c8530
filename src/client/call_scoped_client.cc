// Client::WithCallOptions (client/async.h): a forwarding view that narrows the deadline of every
// call made through it.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aobj/client.h"
#include "client/async.h"

namespace aobj::client_internal {
namespace {

// Client::WithCallOptions: every call made through the view runs with the view's deadline on
// top of the caller's (ScopedDeadline); everything else is the borrowed Client's.
class CallScopedClient final : public Client {
 public:
  CallScopedClient(Client* base, const CallOptions& call) : base_(base), call_(call) {}

  const SessionInfo& session() const override { return base_->session(); }
  absl::StatusOr<std::unique_ptr<Buffer>> AllocateBuffer(size_t size) override {
    return base_->AllocateBuffer(size);
  }
  absl::StatusOr<std::unique_ptr<Buffer>> RegisterBuffer(void* data, size_t size) override {
    return base_->RegisterBuffer(data, size);
  }
  absl::StatusOr<TransferResult> Put(const std::string& bucket, const std::string& key,
                                     const Buffer& buffer, uint64_t size,
                                     const PutOptions& options) override {
    ScopedDeadline scope(call_);
    return base_->Put(bucket, key, buffer, size, options);
  }
  absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                     Buffer& buffer) override {
    ScopedDeadline scope(call_);
    return base_->Get(bucket, key, buffer);
  }
  absl::StatusOr<ObjectInfo> Head(const std::string& bucket, const std::string& key) override {
    ScopedDeadline scope(call_);
    return base_->Head(bucket, key);
  }
  absl::Status Delete(const std::string& bucket, const std::string& key) override {
    ScopedDeadline scope(call_);
    return base_->Delete(bucket, key);
  }
  absl::Status CreateBucket(const std::string& bucket) override {
    ScopedDeadline scope(call_);
    return base_->CreateBucket(bucket);
  }
  absl::Status DeleteBucket(const std::string& bucket) override {
    ScopedDeadline scope(call_);
    return base_->DeleteBucket(bucket);
  }
  absl::Status HeadBucket(const std::string& bucket) override {
    ScopedDeadline scope(call_);
    return base_->HeadBucket(bucket);
  }
  absl::StatusOr<TransferResult> Put(const std::string& bucket, const std::string& key,
                                     const std::vector<BufferSlice>& source,
                                     const PutOptions& options) override {
    ScopedDeadline scope(call_);
    return base_->Put(bucket, key, source, options);
  }
  absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                     Buffer& buffer, const GetOptions& options) override {
    ScopedDeadline scope(call_);
    return base_->Get(bucket, key, buffer, options);
  }
  absl::StatusOr<TransferResult> Get(const std::string& bucket, const std::string& key,
                                     const std::vector<BufferSlice>& destination,
                                     const GetOptions& options) override {
    ScopedDeadline scope(call_);
    return base_->Get(bucket, key, destination, options);
  }
  absl::StatusOr<ObjectInfo> Head(const std::string& bucket, const std::string& key,
                                  const Preconditions& conditions) override {
    ScopedDeadline scope(call_);
    return base_->Head(bucket, key, conditions);
  }
  absl::StatusOr<std::vector<BucketSummary>> ListBuckets() override {
    ScopedDeadline scope(call_);
    return base_->ListBuckets();
  }
  absl::StatusOr<ObjectListing> ListObjects(const std::string& bucket,
                                            const ListObjectsOptions& options) override {
    ScopedDeadline scope(call_);
    return base_->ListObjects(bucket, options);
  }
  absl::StatusOr<DeleteObjectsResult> DeleteObjects(const std::string& bucket,
                                                    const std::vector<std::string>& keys,
                                                    bool quiet) override {
    ScopedDeadline scope(call_);
    return base_->DeleteObjects(bucket, keys, quiet);
  }
  absl::StatusOr<BatchGetResults> GetObjects(const std::string& bucket,
                                             const std::vector<BatchGetItem>& items,
                                             const CallOptions& call) override {
    ScopedDeadline scope(call_);
    return base_->GetObjects(bucket, items, call);
  }
  absl::StatusOr<BatchPutResults> PutObjects(const std::string& bucket,
                                             const std::vector<BatchPutItem>& items,
                                             const CallOptions& call) override {
    ScopedDeadline scope(call_);
    return base_->PutObjects(bucket, items, call);
  }
  absl::StatusOr<ObjectInfo> Copy(const std::string& source_bucket, const std::string& source_key,
                                  const std::string& bucket, const std::string& key,
                                  const CopyOptions& options) override {
    ScopedDeadline scope(call_);
    return base_->Copy(source_bucket, source_key, bucket, key, options);
  }
  absl::StatusOr<UploadInfo> CreateMultipartUpload(const std::string& bucket,
                                                   const std::string& key,
                                                   const PutOptions& options) override {
    ScopedDeadline scope(call_);
    return base_->CreateMultipartUpload(bucket, key, options);
  }
  absl::StatusOr<UploadPartResult> UploadPart(const std::string& bucket, const std::string& key,
                                              const std::string& upload_id, uint32_t part_number,
                                              const Buffer& buffer, uint64_t offset,
                                              uint64_t size) override {
    ScopedDeadline scope(call_);
    return base_->UploadPart(bucket, key, upload_id, part_number, buffer, offset, size);
  }
  absl::StatusOr<ObjectInfo> CompleteMultipartUpload(const std::string& bucket,
                                                     const std::string& key,
                                                     const std::string& upload_id,
                                                     const std::vector<CompletedPart>& parts,
                                                     const Preconditions& conditions) override {
    ScopedDeadline scope(call_);
    return base_->CompleteMultipartUpload(bucket, key, upload_id, parts, conditions);
  }
  absl::Status AbortMultipartUpload(const std::string& bucket, const std::string& key,
                                    const std::string& upload_id) override {
    ScopedDeadline scope(call_);
    return base_->AbortMultipartUpload(bucket, key, upload_id);
  }
  absl::StatusOr<PartsPage> ListParts(const std::string& bucket, const std::string& key,
                                      const std::string& upload_id, uint32_t part_number_marker,
                                      uint32_t max_parts) override {
    ScopedDeadline scope(call_);
    return base_->ListParts(bucket, key, upload_id, part_number_marker, max_parts);
  }
  absl::StatusOr<UploadsPage> ListMultipartUploads(const std::string& bucket,
                                                   const ListUploadsOptions& options) override {
    ScopedDeadline scope(call_);
    return base_->ListMultipartUploads(bucket, options);
  }
  absl::StatusOr<ObjectInfo> UploadMultipart(const std::string& bucket, const std::string& key,
                                             const Buffer& buffer, uint64_t size,
                                             uint64_t part_size, const PutOptions& put,
                                             const MultipartUploadOptions& options) override {
    ScopedDeadline scope(call_);
    return base_->UploadMultipart(bucket, key, buffer, size, part_size, put, options);
  }
  std::unique_ptr<Client> WithCallOptions(const CallOptions& call) override {
    return std::make_unique<CallScopedClient>(this, call);
  }
  std::shared_ptr<Operation<TransferResult>> PutAsync(
      const std::string& bucket, const std::string& key, const Buffer& buffer, uint64_t size,
      const PutOptions& options, Operation<TransferResult>::Callback done) override {
    ScopedDeadline scope(call_);
    return base_->PutAsync(bucket, key, buffer, size, options, std::move(done));
  }
  std::shared_ptr<Operation<TransferResult>> GetAsync(
      const std::string& bucket, const std::string& key, Buffer& buffer,
      const GetOptions& options, Operation<TransferResult>::Callback done) override {
    ScopedDeadline scope(call_);
    return base_->GetAsync(bucket, key, buffer, options, std::move(done));
  }
  std::shared_ptr<Operation<ObjectInfo>> HeadAsync(const std::string& bucket,
                                                   const std::string& key,
                                                   const Preconditions& conditions,
                                                   const CallOptions& call,
                                                   Operation<ObjectInfo>::Callback done) override {
    ScopedDeadline scope(call_);
    return base_->HeadAsync(bucket, key, conditions, call, std::move(done));
  }
  std::shared_ptr<Operation<std::monostate>> DeleteAsync(
      const std::string& bucket, const std::string& key, const CallOptions& call,
      Operation<std::monostate>::Callback done) override {
    ScopedDeadline scope(call_);
    return base_->DeleteAsync(bucket, key, call, std::move(done));
  }
  std::shared_ptr<Operation<ObjectListing>> ListObjectsAsync(
      const std::string& bucket, const ListObjectsOptions& options, const CallOptions& call,
      Operation<ObjectListing>::Callback done) override {
    ScopedDeadline scope(call_);
    return base_->ListObjectsAsync(bucket, options, call, std::move(done));
  }
  std::shared_ptr<Operation<UploadPartResult>> UploadPartAsync(
      const std::string& bucket, const std::string& key, const std::string& upload_id,
      uint32_t part_number, const Buffer& buffer, uint64_t offset, uint64_t size,
      const CallOptions& call, Operation<UploadPartResult>::Callback done) override {
    ScopedDeadline scope(call_);
    return base_->UploadPartAsync(bucket, key, upload_id, part_number, buffer, offset, size,
                                  call, std::move(done));
  }
  std::shared_ptr<Operation<ObjectInfo>> UploadMultipartAsync(
      const std::string& bucket, const std::string& key, const Buffer& buffer, uint64_t size,
      uint64_t part_size, const PutOptions& put, const MultipartUploadOptions& options,
      Operation<ObjectInfo>::Callback done) override {
    ScopedDeadline scope(call_);
    return base_->UploadMultipartAsync(bucket, key, buffer, size, part_size, put, options,
                                       std::move(done));
  }
  absl::Status Renew() override {
    ScopedDeadline scope(call_);
    return base_->Renew();
  }
  absl::Status Close() override {
    ScopedDeadline scope(call_);
    return base_->Close();
  }

 private:
  Client* base_;  // borrowed; outlives this view
  const CallOptions call_;
};


}  // namespace

thread_local absl::Time tls_deadline = absl::InfiniteFuture();
thread_local OpControl* tls_op = nullptr;

std::unique_ptr<Client> NewCallScopedClient(Client* base, const CallOptions& call) {
  return std::make_unique<CallScopedClient>(base, call);
}

}  // namespace aobj::client_internal
