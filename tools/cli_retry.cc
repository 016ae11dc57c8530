#include "cli_retry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "wire/error_registry.h"

namespace aobj::cli {

absl::Duration RetryPolicy::Pause(int attempt, absl::BitGen& rng) const {
  absl::Duration d = base;
  for (int i = 1; i < attempt && d < cap; ++i) d *= 2;
  d = std::min(d, cap);
  const double half = absl::ToDoubleSeconds(d) / 2;
  return absl::Seconds(half + absl::Uniform(rng, 0.0, half));
}

bool UnknownOutcome(const absl::Status& status) {
  if (!ControlChannelFailure(status).empty()) return true;
  const ErrorCode code = ErrorCodeOf(status);
  return code == ErrorCode::kDeadlineExceeded || code == ErrorCode::kCancelled;
}

bool Retryable(const absl::Status& status) {
  if (status.ok()) return false;
  if (SessionLost(status)) return true;
  if (!status.GetPayload(kErrorCodePayloadUrl).has_value()) return false;  // not the server's
  return GetErrorInfo(ErrorCodeOf(status)).retryable;
}

absl::Status RetryRepeatable(
    const RetryPolicy& policy, Sessions* sessions, Client& fallback,
    const std::function<absl::Status(Client&)>& call,
    const std::function<void(const absl::Status&, int, absl::Duration)>& before_retry) {
  absl::BitGen rng;
  for (int attempt = 1;; ++attempt) {
    uint64_t generation = 0;
    Client& c = sessions != nullptr ? sessions->Current(&generation) : fallback;
    const absl::Status st = call(c);
    if (st.ok() || attempt >= policy.max_attempts || !Retryable(st)) return st;
    const absl::Duration pause = policy.Pause(attempt, rng);
    if (before_retry) before_retry(st, attempt + 1, pause);
    absl::SleepFor(pause);
    if (sessions != nullptr && SessionLost(st)) {
      sessions->Renew(generation).IgnoreError();  // the next attempt says why
    }
  }
}

}  // namespace aobj::cli
