// AOBJ_PEER_INPUT: decodes authentication metadata (fuzz target in fuzz/).
#include "session/authenticator.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"

namespace aobj {

Authenticator::Authenticator(const std::map<std::string, std::string>& secrets, absl::Duration skew,
                             size_t max_nonces)
    : skew_(skew),
      max_nonces_(max_nonces),
      max_nonces_per_key_(std::max<size_t>(1, max_nonces / 2)) {
  for (const auto& [id, secret] : secrets) signing_keys_[id] = DeriveSigningKey(secret);
}

absl::Status Authenticator::CheckClaim(const RequestAuth& auth, bool needs_session) const {
  int64_t ts_ms = 0;
  return CheckClaim(auth, needs_session, &ts_ms);
}

absl::Status Authenticator::CheckClaim(const RequestAuth& auth, bool needs_session,
                                       int64_t* ts_ms) const {
  if (absl::Status s = CheckAuthSyntax(auth, needs_session, ts_ms); !s.ok()) return s;
  // AOBJ-AUTH-005
  if (!signing_keys_.contains(auth.access_key_id)) {
    return MakeError(ErrorCode::kInvalidAccessKeyId, "the access key id is not known");
  }
  return absl::OkStatus();
}

absl::Status Authenticator::Verify(absl::string_view method, const RequestAuth& auth,
                                   absl::string_view body, bool needs_session, absl::Time now) {
  int64_t ts_ms = 0;
  if (absl::Status s = CheckClaim(auth, needs_session, &ts_ms); !s.ok()) return s;
  auto key = signing_keys_.find(auth.access_key_id);
  // AOBJ-AUTH-006
  if (absl::Status s = VerifySignature(key->second, method, auth, body); !s.ok()) return s;
  // AOBJ-AUTH-007
  const absl::Time ts = absl::FromUnixMillis(ts_ms);
  if (absl::AbsDuration(now - ts) > skew_) {
    return MakeError(ErrorCode::kRequestTimeTooSkewed,
                     absl::StrCat("request time differs from the server's by more than ",
                                  absl::ToInt64Seconds(skew_), " s"));
  }
  // AOBJ-AUTH-008
  std::string nonce_key = absl::StrCat(auth.access_key_id, "/", auth.nonce_hex);
  absl::MutexLock l(&mu_);
  while (!expiry_.empty() && expiry_.front().first < now) {
    if (nonces_.erase(expiry_.front().second) > 0) {
      const std::string& k = expiry_.front().second;  // "<access key>/<32 hex>"
      auto it = per_key_.find(absl::string_view(k).substr(0, k.size() - 2 * kNonceBytes - 1));
      if (it != per_key_.end() && --it->second == 0) per_key_.erase(it);
    }
    expiry_.pop_front();
  }
  if (nonces_.contains(nonce_key)) {
    return MakeError(ErrorCode::kRequestReplayed, "this request was already received (replay)");
  }
  if (nonces_.size() >= max_nonces_) {  // AOBJ-AUTH-017: a full cache answers SLOW_DOWN
    return MakeError(ErrorCode::kSlowDown, "too many requests in the replay window; retry later");
  }
  // AOBJ-AUTH-018: one access key holds at most half of the cache, so that one tenant's flood
  // (16,800 RenewSessions a second filled it in 65 s) cannot refuse everyone else's requests.
  size_t& mine = per_key_[auth.access_key_id];
  if (mine >= max_nonces_per_key_) {
    return MakeError(ErrorCode::kSlowDown,
                     "this access key has sent too many requests in the replay window; retry "
                     "later");
  }
  ++mine;
  // Remember until no timestamp could make it valid again: ts + skew, at least 2*skew from now.
  const absl::Time forget = std::max(ts + skew_, now) + skew_;
  nonces_[nonce_key] = forget;
  // Expiry order is only approximately monotone; the sweep above tolerates that by stopping at
  // the first unexpired entry, and a late entry is swept on a later call.
  expiry_.emplace_back(forget, std::move(nonce_key));
  return absl::OkStatus();
}

size_t Authenticator::nonces_remembered() {
  absl::MutexLock l(&mu_);
  return nonces_.size();
}

const std::string* Authenticator::SigningKey(absl::string_view access_key_id) const {
  auto it = signing_keys_.find(access_key_id);
  return it == signing_keys_.end() ? nullptr : &it->second;
}

}  // namespace aobj
