// AOBJ_PEER_INPUT: decodes authentication metadata (fuzz target in fuzz/).
#include "session/authenticator.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "wire/error_detail.h"

namespace aobj {

Authenticator::Authenticator(const std::map<std::string, std::string>& secrets, absl::Duration skew,
                             size_t max_nonces)
    : skew_(skew), max_nonces_(std::max<size_t>(1, max_nonces)) {
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
    // AOBJ-AUTH-023: the server's clock, now that the signature showed the principal asking.
    return WithServerTime(
        MakeError(ErrorCode::kRequestTimeTooSkewed,
                  absl::StrCat("request time ", ts_ms, " differs from the server's ",
                               absl::ToUnixMillis(now),
                               " (Unix ms) by more than the skew "
                               "window of ",
                               absl::ToInt64Milliseconds(skew_), " ms; check this host's clock")),
        absl::ToUnixMillis(now));
  }
  // AOBJ-AUTH-017: nonces of a previous run of the server are forgotten; a request stamped
  // before this run began may be the replay of one it accepted. The client's next request
  // carries a later timestamp, so the refusal costs a clock that lags by that lag, once.
  if (const int64_t start = start_floor_ms_.load(); ts_ms <= start) {
    return WithRetryAfter(
        MakeError(ErrorCode::kSlowDown,
                  absl::StrCat("the server started at ", start,
                               " (Unix ms) and remembers no request from before; this one is "
                               "stamped ",
                               start - ts_ms,
                               " ms earlier, so it may be a replay (AOBJ-AUTH-017); retry as a "
                               "new request")),
        absl::Milliseconds(std::min<int64_t>(start - ts_ms + 1, 60000)));
  }
  // AOBJ-AUTH-008
  std::string nonce_key = absl::StrCat(auth.access_key_id, "/", auth.nonce_hex);
  absl::MutexLock l(&mu_);
  KeyNonces& mine = keys_[auth.access_key_id];
  Sweep(mine, now);
  if (nonces_.contains(nonce_key)) {
    return MakeError(ErrorCode::kRequestReplayed, "this request was already received (replay)");
  }
  // AOBJ-AUTH-017: this key's nonces up to its floor were forgotten; one of them may be this.
  if (ts_ms <= mine.floor_ms) {
    return MakeError(ErrorCode::kSlowDown,
                     "this access key sends requests faster than the replay cache remembers "
                     "them, and this one is stamped before the oldest it holds; retry as a new "
                     "request");
  }
  if (nonces_.size() >= max_nonces_) {
    MakeRoom(now, auth.access_key_id);  // may drop keys_ entries: look up again
  }
  // Remember until no timestamp could make it valid again: ts + skew, at least 2*skew from now.
  const absl::Time forget = std::max(ts + skew_, now) + skew_;
  nonces_.insert(nonce_key);
  keys_[auth.access_key_id].entries.emplace(ts_ms,
                                            KeyNonces::Entry{forget, std::move(nonce_key)});
  return absl::OkStatus();
}

void Authenticator::RememberNothingBefore(absl::Time start) {
  start_floor_ms_.store(absl::ToUnixMillis(start));
}

void Authenticator::Sweep(KeyNonces& k, absl::Time now) {
  while (!k.entries.empty() && k.entries.begin()->second.forget < now) {
    nonces_.erase(k.entries.begin()->second.nonce_key);
    k.entries.erase(k.entries.begin());
  }
}

void Authenticator::MakeRoom(absl::Time now, const std::string& requester) {
  const int64_t oldest_valid_ms = absl::ToUnixMillis(now - skew_);
  for (auto it = keys_.begin(); it != keys_.end();) {
    Sweep(it->second, now);
    // A floor below the skew window refuses nothing the time check would let through.
    if (it->second.entries.empty() && it->second.floor_ms < oldest_valid_ms) {
      keys_.erase(it++);
    } else {
      ++it;
    }
  }
  while (nonces_.size() >= max_nonces_) {
    // Among keys holding equally many, the requester's own pays.
    auto own = keys_.find(requester);
    KeyNonces* most = own == keys_.end() ? nullptr : &own->second;
    for (auto& [id, k] : keys_) {
      if (most == nullptr || k.entries.size() > most->entries.size()) most = &k;
    }
    if (most == nullptr || most->entries.empty()) return;  // cannot happen: nonces_ is not empty
    auto oldest = most->entries.begin();  // the earliest stamped
    most->floor_ms = std::max(most->floor_ms, oldest->first);
    nonces_.erase(oldest->second.nonce_key);
    most->entries.erase(oldest);
  }
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
