#include "client/client_impl.h"

namespace aobj::client_internal {

std::shared_ptr<Operation<TransferResult>> ClientImpl::PutAsync(
    const std::string& bucket, const std::string& key, const Buffer& buffer, uint64_t size,
    const PutOptions& options, Operation<TransferResult>::Callback done) {
  const Buffer* b = &buffer;
  return Submit<TransferResult>(
      [this, bucket, key, b, size, options] { return Put(bucket, key, *b, size, options); },
      std::move(done));
}

std::shared_ptr<Operation<TransferResult>> ClientImpl::GetAsync(
    const std::string& bucket, const std::string& key, Buffer& buffer, const GetOptions& options,
    Operation<TransferResult>::Callback done) {
  Buffer* b = &buffer;
  return Submit<TransferResult>(
      [this, bucket, key, b, options] { return Get(bucket, key, *b, options); }, std::move(done));
}

std::shared_ptr<Operation<ObjectInfo>> ClientImpl::HeadAsync(const std::string& bucket,
                                                             const std::string& key,
                                                             const Preconditions& conditions,
                                                             const CallOptions& call,
                                                             Operation<ObjectInfo>::Callback done) {
  return Submit<ObjectInfo>(
      [this, bucket, key, conditions, call] {
        ScopedDeadline scope(call);
        return Head(bucket, key, conditions);
      },
      std::move(done));
}

std::shared_ptr<Operation<std::monostate>> ClientImpl::DeleteAsync(
    const std::string& bucket, const std::string& key, const CallOptions& call,
    Operation<std::monostate>::Callback done) {
  return Submit<std::monostate>(
      [this, bucket, key, call]() -> absl::StatusOr<std::monostate> {
        ScopedDeadline scope(call);
        if (absl::Status s = Delete(bucket, key); !s.ok()) return s;
        return std::monostate();
      },
      std::move(done));
}

std::shared_ptr<Operation<ObjectListing>> ClientImpl::ListObjectsAsync(
    const std::string& bucket, const ListObjectsOptions& options, const CallOptions& call,
    Operation<ObjectListing>::Callback done) {
  return Submit<ObjectListing>(
      [this, bucket, options, call] {
        ScopedDeadline scope(call);
        return ListObjects(bucket, options);
      },
      std::move(done));
}

std::shared_ptr<Operation<UploadPartResult>> ClientImpl::UploadPartAsync(
    const std::string& bucket, const std::string& key, const std::string& upload_id,
    uint32_t part_number, const Buffer& buffer, uint64_t offset, uint64_t size,
    const CallOptions& call, Operation<UploadPartResult>::Callback done) {
  const Buffer* b = &buffer;
  return Submit<UploadPartResult>(
      [this, bucket, key, upload_id, part_number, b, offset, size, call] {
        ScopedDeadline scope(call);
        return UploadPart(bucket, key, upload_id, part_number, *b, offset, size);
      },
      std::move(done));
}

std::shared_ptr<Operation<ObjectInfo>> ClientImpl::UploadMultipartAsync(
    const std::string& bucket, const std::string& key, const Buffer& buffer, uint64_t size,
    uint64_t part_size, const PutOptions& put, const MultipartUploadOptions& options,
    Operation<ObjectInfo>::Callback done) {
  const Buffer* b = &buffer;
  return Submit<ObjectInfo>(
      [this, bucket, key, b, size, part_size, put, options] {
        return UploadMultipart(bucket, key, *b, size, part_size, put, options);
      },
      std::move(done));
}

}  // namespace aobj::client_internal
