// Per-principal bucket authorization (spec section 14.8, AOBJ-SEC-008..011).
//
// Two policies. "open": every authenticated principal may do everything (the default, and what
// a single-tenant deployment wants). "owner": the principal that created a bucket owns it; only
// the owner and principals granted `write` may change its objects, principals granted `read`
// may read and list them, only the owner (or an `owner` grant) may delete the bucket, and
// everyone else is refused with ACCESS_DENIED before the request does anything.
//
// Owners are kept in a small text file beside the store when one is configured (lines
// "BUCKET PRINCIPAL", rewritten with temp+fsync+rename), so they survive restarts. A rewrite
// holds only the writers' lock: Check (every request) never waits on the disk.
// Threading: thread-safe.
#ifndef AOBJ_SERVER_AUTHZ_H_
#define AOBJ_SERVER_AUTHZ_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "aobj/server.h"
#include "server/bucket_scope.h"
#include "store/bucket_owners.h"

namespace aobj {

class BucketAuthorizer {
 public:
  // `state_file` empty: owners live in memory only. `owner_store` (borrowed; may be null): a
  // store that records owners with its buckets, used instead of the map and the file.
  static absl::StatusOr<std::unique_ptr<BucketAuthorizer>> Create(
      AuthorizationPolicy policy, std::vector<BucketGrant> grants, std::string state_file,
      BucketOwnerStore* owner_store = nullptr);

  bool open() const { return policy_ == AuthorizationPolicy::kOpen; }

  // AOBJ-SEC-008: OK when `principal` may do `access` on `bucket`, else ACCESS_DENIED.
  absl::Status Check(absl::string_view principal, absl::string_view bucket,
                     BucketAccess access);

  // AOBJ-SEC-016: a CreateBucket records its owner durably before the bucket is created (and
  // forgets it when the creation fails); a DeleteBucket that succeeded forgets it. A failed
  // RecordOwner changes nothing, in memory or on disk.
  absl::Status RecordOwner(absl::string_view bucket, absl::string_view principal);
  absl::Status ForgetOwner(absl::string_view bucket);
  // At start: forgets the owners of buckets that do not exist (a crash between recording an owner
  // and creating its bucket, or between deleting a bucket and forgetting its owner).
  absl::Status ForgetMissing(const std::function<bool(const std::string&)>& exists);

 private:
  BucketAuthorizer(AuthorizationPolicy policy, std::vector<BucketGrant> grants,
                   std::string state_file, BucketOwnerStore* owner_store)
      : policy_(policy),
        grants_(std::move(grants)),
        state_file_(std::move(state_file)),
        owner_store_(owner_store) {}
  // The owners file's text for the map as it is.
  std::string Snapshot() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Replaces the owners file with `text` (temp file, fsync, rename); the map's lock is not held,
  // so that Check never waits on the disk.
  absl::Status Write(const std::string& text) ABSL_EXCLUSIVE_LOCKS_REQUIRED(save_mu_)
      ABSL_LOCKS_EXCLUDED(mu_);

  const AuthorizationPolicy policy_;
  const std::vector<BucketGrant> grants_;
  const std::string state_file_;
  BucketOwnerStore* const owner_store_;  // borrowed; null: owners_ and state_file_
  absl::Mutex save_mu_ ABSL_ACQUIRED_BEFORE(mu_);  // one writer of the owners file at a time
  absl::Mutex mu_;
  std::map<std::string, std::string> owners_ ABSL_GUARDED_BY(mu_);
};

}  // namespace aobj

#endif  // AOBJ_SERVER_AUTHZ_H_
