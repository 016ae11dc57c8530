// The buckets a request names and the access each needs (spec 14.8, AOBJ-SEC-008, AOBJ-SEC-009),
// read from the typed request that the handler goes on to serve: the request is parsed once, and
// what is authorized is what is served.
//
// Every request type has its own overload below; the deleted template leaves a type without one
// uncompiled, so a method added to the .proto, or a bucket field renamed, cannot pass
// authorization unseen. The session's own calls, CreateBucket (whoever creates a bucket owns
// it) and ListBuckets (filtered per bucket, AOBJ-SEC-010) name none.
#ifndef AOBJ_SERVER_BUCKET_SCOPE_H_
#define AOBJ_SERVER_BUCKET_SCOPE_H_

#include <cstddef>

#include "absl/strings/string_view.h"
#include "aobj/v1/aobj.pb.h"

namespace aobj {

enum class BucketAccess { kRead, kWrite, kOwner };

struct BucketNeed {
  absl::string_view bucket;  // borrowed from the request
  BucketAccess access;
};

// At most two: a copy reads its source and writes its destination.
class BucketNeeds {
 public:
  BucketNeeds() = default;
  BucketNeeds(absl::string_view bucket, BucketAccess access) { Add(bucket, access); }
  void Add(absl::string_view bucket, BucketAccess access) { items_[size_++] = {bucket, access}; }
  const BucketNeed* begin() const { return items_; }
  const BucketNeed* end() const { return items_ + size_; }
  size_t size() const { return size_; }

 private:
  BucketNeed items_[2] = {};
  size_t size_ = 0;
};

template <typename Request>
BucketNeeds BucketsNamed(const Request&) = delete;

inline BucketNeeds BucketsNamed(const v1::OpenSessionRequest&) { return {}; }
inline BucketNeeds BucketsNamed(const v1::ConfirmEndpointRequest&) { return {}; }
inline BucketNeeds BucketsNamed(const v1::RenewSessionRequest&) { return {}; }
inline BucketNeeds BucketsNamed(const v1::CloseSessionRequest&) { return {}; }
inline BucketNeeds BucketsNamed(const v1::CreateBucketRequest&) { return {}; }
inline BucketNeeds BucketsNamed(const v1::ListBucketsRequest&) { return {}; }

inline BucketNeeds BucketsNamed(const v1::DeleteBucketRequest& r) {
  return {r.bucket(), BucketAccess::kOwner};
}
inline BucketNeeds BucketsNamed(const v1::HeadBucketRequest& r) {
  return {r.bucket(), BucketAccess::kRead};
}
inline BucketNeeds BucketsNamed(const v1::PutObjectRequest& r) {
  return {r.bucket(), BucketAccess::kWrite};
}
inline BucketNeeds BucketsNamed(const v1::GetObjectRequest& r) {
  return {r.bucket(), BucketAccess::kRead};
}
inline BucketNeeds BucketsNamed(const v1::HeadObjectRequest& r) {
  return {r.bucket(), BucketAccess::kRead};
}
inline BucketNeeds BucketsNamed(const v1::DeleteObjectRequest& r) {
  return {r.bucket(), BucketAccess::kWrite};
}
inline BucketNeeds BucketsNamed(const v1::ListObjectsV2Request& r) {
  return {r.bucket(), BucketAccess::kRead};
}
inline BucketNeeds BucketsNamed(const v1::DeleteObjectsRequest& r) {
  return {r.bucket(), BucketAccess::kWrite};
}
inline BucketNeeds BucketsNamed(const v1::GetObjectsRequest& r) {
  return {r.bucket(), BucketAccess::kRead};
}
inline BucketNeeds BucketsNamed(const v1::PutObjectsRequest& r) {
  return {r.bucket(), BucketAccess::kWrite};
}
inline BucketNeeds BucketsNamed(const v1::CopyObjectRequest& r) {
  BucketNeeds n(r.bucket(), BucketAccess::kWrite);
  n.Add(r.source_bucket(), BucketAccess::kRead);
  return n;
}
inline BucketNeeds BucketsNamed(const v1::CreateMultipartUploadRequest& r) {
  return {r.bucket(), BucketAccess::kWrite};
}
inline BucketNeeds BucketsNamed(const v1::UploadPartRequest& r) {
  return {r.bucket(), BucketAccess::kWrite};
}
inline BucketNeeds BucketsNamed(const v1::CompleteMultipartUploadRequest& r) {
  return {r.bucket(), BucketAccess::kWrite};
}
inline BucketNeeds BucketsNamed(const v1::AbortMultipartUploadRequest& r) {
  return {r.bucket(), BucketAccess::kWrite};
}
inline BucketNeeds BucketsNamed(const v1::ListPartsRequest& r) {
  return {r.bucket(), BucketAccess::kRead};
}
inline BucketNeeds BucketsNamed(const v1::ListMultipartUploadsRequest& r) {
  return {r.bucket(), BucketAccess::kRead};
}

}  // namespace aobj

#endif  // AOBJ_SERVER_BUCKET_SCOPE_H_
