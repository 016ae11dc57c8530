// A store that records each bucket's owner with the bucket itself, where every server in front of
// it sees it (RadosStore: in the bucket's registry record, set by the same compare-and-swap that
// creates the bucket and removed by the one that deletes it). The server's authorizer uses it
// instead of its owners file (AOBJ-SEC-009, AOBJ-SEC-016).
#ifndef AOBJ_STORE_BUCKET_OWNERS_H_
#define AOBJ_STORE_BUCKET_OWNERS_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace aobj {

class BucketOwnerStore {
 public:
  virtual ~BucketOwnerStore() = default;
  // The principal that this process's next CreateBucket(bucket) records as the owner; the
  // caller serializes its CreateBucket calls of one name (the server does, under a lock).
  virtual void SetCreator(std::string_view bucket, std::string_view principal) = 0;
  virtual void ClearCreator(std::string_view bucket) = 0;
  // The owner recorded with the bucket; empty when it has none (created without a creator).
  // kNoSuchBucket when there is no such bucket.
  virtual absl::StatusOr<std::string> OwnerOf(std::string_view bucket) = 0;
};

}  // namespace aobj

#endif  // AOBJ_STORE_BUCKET_OWNERS_H_
