// Server-side request authentication (spec "Credentials and request authentication").
//
// Verifies one request in the order of AOBJ-AUTH-009: metadata syntax, key lookup, signature,
// clock skew, replay. A nonce is remembered only after the signature verified, so forged
// requests cannot fill the replay cache (AOBJ-AUTH-008).
//
// Threading: thread-safe. The clock is passed in, so tests control time.
#ifndef AOBJ_SESSION_AUTHENTICATOR_H_
#define AOBJ_SESSION_AUTHENTICATOR_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "wire/signing.h"

namespace aobj {

class Authenticator {
 public:
  // `secrets`: access key id -> secret. Only derived signing keys are kept.
  Authenticator(const std::map<std::string, std::string>& secrets, absl::Duration skew,
                size_t max_nonces = 1 << 20);

  // Verifies `auth` for `method` over `body` (the exact request bytes) at time `now`.
  // On success the nonce is recorded. Errors: MISSING_AUTHENTICATION, INVALID_ACCESS_KEY_ID,
  // SIGNATURE_DOES_NOT_MATCH, REQUEST_TIME_TOO_SKEWED, REQUEST_REPLAYED, SLOW_DOWN (replay cache
  // full, or this access key holds half of it).
  absl::Status Verify(absl::string_view method, const RequestAuth& auth, absl::string_view body,
                      bool needs_session, absl::Time now);

  // The first two steps of Verify alone (metadata syntax, key lookup), with Verify's errors:
  // no hashing, no state. A request that fails here fails Verify with the same status, so the
  // server can answer it at once instead of queueing its body (issue 16, AOBJ-SEC-012).
  absl::Status CheckClaim(const RequestAuth& auth, bool needs_session) const;

  size_t nonces_remembered();
  // The signing key of `access_key_id` (AOBJ-AUTH-003), or null when it is not known; for the
  // endpoint key of its sessions (AOBJ-SES-026).
  const std::string* SigningKey(absl::string_view access_key_id) const;

 private:
  absl::Status CheckClaim(const RequestAuth& auth, bool needs_session, int64_t* ts_ms) const;

  absl::flat_hash_map<std::string, std::string> signing_keys_;  // immutable after construction
  const absl::Duration skew_;
  const size_t max_nonces_;
  const size_t max_nonces_per_key_;  // half the cache (AOBJ-AUTH-018)

  absl::Mutex mu_;
  // (access key, nonce) -> time after which it may be forgotten.
  absl::flat_hash_map<std::string, absl::Time> nonces_ ABSL_GUARDED_BY(mu_);
  std::deque<std::pair<absl::Time, std::string>> expiry_ ABSL_GUARDED_BY(mu_);
  // Entries of nonces_ per access key.
  absl::flat_hash_map<std::string, size_t> per_key_ ABSL_GUARDED_BY(mu_);
};

}  // namespace aobj

#endif  // AOBJ_SESSION_AUTHENTICATOR_H_
