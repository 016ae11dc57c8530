#include "client/client_impl.h"

namespace aobj::client_internal {

// Each operation runs on an async thread in the submitter's context plus the operation's own
// cancellation (Submit); the CallOptions of a method that takes them count from when it runs.

std::shared_ptr<Operation<TransferResult>> ClientImpl::PutAsync(
    const CallContext& ctx, const std::string& bucket, const std::string& key, const Buffer& buffer,
    uint64_t size, const PutOptions& options, Operation<TransferResult>::Callback done) {
  const Buffer* b = &buffer;
  return Submit<TransferResult>(
      ctx,
      [this, bucket, key, b, size, options](const CallContext& c) {
        return Put(c, bucket, key, *b, size, options);
      },
      std::move(done));
}

std::shared_ptr<Operation<TransferResult>> ClientImpl::GetAsync(
    const CallContext& ctx, const std::string& bucket, const std::string& key, Buffer& buffer,
    const GetOptions& options, Operation<TransferResult>::Callback done) {
  Buffer* b = &buffer;
  return Submit<TransferResult>(
      ctx,
      [this, bucket, key, b, options](const CallContext& c) {
        return Get(c, bucket, key, *b, options);
      },
      std::move(done));
}

std::shared_ptr<Operation<ObjectInfo>> ClientImpl::HeadAsync(const CallContext& ctx,
                                                             const std::string& bucket,
                                                             const std::string& key,
                                                             const Preconditions& conditions,
                                                             const CallOptions& call,
                                                             Operation<ObjectInfo>::Callback done) {
  return Submit<ObjectInfo>(
      ctx,
      [this, bucket, key, conditions, call](const CallContext& c) {
        return Head(c.Within(call), bucket, key, conditions);
      },
      std::move(done));
}

std::shared_ptr<Operation<std::monostate>> ClientImpl::DeleteAsync(
    const CallContext& ctx, const std::string& bucket, const std::string& key,
    const CallOptions& call, Operation<std::monostate>::Callback done) {
  return Submit<std::monostate>(
      ctx,
      [this, bucket, key, call](const CallContext& c) -> absl::StatusOr<std::monostate> {
        if (absl::Status s = Delete(c.Within(call), bucket, key); !s.ok()) return s;
        return std::monostate();
      },
      std::move(done));
}

std::shared_ptr<Operation<ObjectListing>> ClientImpl::ListObjectsAsync(
    const CallContext& ctx, const std::string& bucket, const ListObjectsOptions& options,
    const CallOptions& call, Operation<ObjectListing>::Callback done) {
  return Submit<ObjectListing>(
      ctx,
      [this, bucket, options, call](const CallContext& c) {
        return ListObjects(c.Within(call), bucket, options);
      },
      std::move(done));
}

std::shared_ptr<Operation<UploadPartResult>> ClientImpl::UploadPartAsync(
    const CallContext& ctx, const std::string& bucket, const std::string& key,
    const std::string& upload_id, uint32_t part_number, const Buffer& buffer, uint64_t offset,
    uint64_t size, const CallOptions& call, Operation<UploadPartResult>::Callback done) {
  const Buffer* b = &buffer;
  return Submit<UploadPartResult>(
      ctx,
      [this, bucket, key, upload_id, part_number, b, offset, size, call](const CallContext& c) {
        return UploadPart(c.Within(call), bucket, key, upload_id, part_number, *b, offset, size);
      },
      std::move(done));
}

std::shared_ptr<Operation<ObjectInfo>> ClientImpl::UploadMultipartAsync(
    const CallContext& ctx, const std::string& bucket, const std::string& key, const Buffer& buffer,
    uint64_t size, uint64_t part_size, const PutOptions& put, const MultipartUploadOptions& options,
    Operation<ObjectInfo>::Callback done) {
  const Buffer* b = &buffer;
  return Submit<ObjectInfo>(
      ctx,
      [this, bucket, key, b, size, part_size, put, options](const CallContext& c) {
        return UploadMultipart(c, bucket, key, *b, size, part_size, put, options);
      },
      std::move(done));
}

}  // namespace aobj::client_internal
