// AOBJ_PEER_INPUT: decodes authentication metadata (fuzz target in fuzz/).
#include "session/authenticator.h"

#include "absl/strings/str_cat.h"
#include "aobj/status.h"

namespace aobj {

Authenticator::Authenticator(const std::map<std::string, std::string>& secrets,
                             absl::Duration skew, size_t max_nonces)
    : skew_(skew), max_nonces_(max_nonces) {
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
    nonces_.erase(expiry_.front().second);
    expiry_.pop_front();
  }
  if (nonces_.contains(nonce_key)) {
    return MakeError(ErrorCode::kRequestReplayed, "this request was already received (replay)");
  }
  if (nonces_.size() >= max_nonces_) {  // AOBJ-AUTH-017: a full cache answers SLOW_DOWN
    return MakeError(ErrorCode::kSlowDown, "too many requests in the replay window; retry later");
  }
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
