// Server-side request authentication (spec "Credentials and request authentication").
//
// Verifies one request in the order of AOBJ-AUTH-009: metadata syntax, key lookup, signature,
// clock skew, replay. A nonce is remembered only after the signature verified, so forged
// requests cannot fill the replay cache (AOBJ-AUTH-008).
//
// Threading: thread-safe. The clock is passed in, so tests control time.
#ifndef AOBJ_SESSION_AUTHENTICATOR_H_
#define AOBJ_SESSION_AUTHENTICATOR_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
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
  // SIGNATURE_DOES_NOT_MATCH, REQUEST_TIME_TOO_SKEWED, REQUEST_REPLAYED, SLOW_DOWN (the request
  // is not newer than a nonce of its key that a full cache forgot: AOBJ-AUTH-017).
  //
  // A full cache makes room by forgetting the oldest nonce of the access key that holds the
  // most, and from then on refuses that key's requests stamped no later than the forgotten one
  // (its floor), so a replay of it still fails. One key's flood, or several keys' together,
  // costs only the keys that hold the most, never another key's requests (AOBJ-AUTH-018).
  absl::Status Verify(absl::string_view method, const RequestAuth& auth, absl::string_view body,
                      bool needs_session, absl::Time now);

  // The first two steps of Verify alone (metadata syntax, key lookup), with Verify's errors:
  // no hashing, no state. A request that fails here fails Verify with the same status, so the
  // server can answer it at once instead of queueing its body (issue 16, AOBJ-SEC-012).
  absl::Status CheckClaim(const RequestAuth& auth, bool needs_session) const;

  // AOBJ-AUTH-017 across a restart: this server remembers no nonce from before `start` (its
  // start), so a request stamped at or before it fails SLOW_DOWN: it may be the replay of one a
  // previous run of the server accepted. Called once, before the first Verify.
  void RememberNothingBefore(absl::Time start);

  size_t nonces_remembered();
  // The signing key of `access_key_id` (AOBJ-AUTH-003), or null when it is not known; for the
  // endpoint key of its sessions (AOBJ-SES-026).
  const std::string* SigningKey(absl::string_view access_key_id) const;

 private:
  absl::Status CheckClaim(const RequestAuth& auth, bool needs_session, int64_t* ts_ms) const;

  absl::flat_hash_map<std::string, std::string> signing_keys_;  // immutable after construction
  const absl::Duration skew_;
  const size_t max_nonces_;
  std::atomic<int64_t> start_floor_ms_{INT64_MIN};  // RememberNothingBefore

  // The remembered nonces of one access key, by their requests' timestamps. A request passes
  // the time check only with ts >= arrival - skew, so each is kept until exactly ts + 2 * skew:
  // timestamp order is expiry order, and the oldest stamped goes first when room is needed (a
  // client whose clock runs ahead cannot raise its key's floor above the others' requests).
  struct KeyNonces {
    struct Entry {
      absl::Time forget;  // when AOBJ-AUTH-008 allows it to go
      std::string nonce_key;
    };
    std::multimap<int64_t, Entry> entries;  // aobj-timestamp (ms) -> entry
    // Requests of this key stamped at or before it are refused: a nonce that old was forgotten
    // early to make room (AOBJ-AUTH-017). INT64_MIN: none was.
    int64_t floor_ms = INT64_MIN;
  };
  // Drops the expired entries at the front of `k`'s queue.
  void Sweep(KeyNonces& k, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops expired entries of every key, then, while the cache is still full, forgets the oldest
  // nonce of the key holding the most (`requester`'s on a tie) and raises that key's floor
  // (AOBJ-AUTH-018).
  void MakeRoom(absl::Time now, const std::string& requester) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  // "<access key>/<nonce hex>" of every remembered request.
  absl::flat_hash_set<std::string> nonces_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, KeyNonces> keys_ ABSL_GUARDED_BY(mu_);
};

}  // namespace aobj

#endif  // AOBJ_SESSION_AUTHENTICATOR_H_
