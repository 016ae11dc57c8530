#include "transport/challenge_inbox.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"

namespace aobj {

void ChallengeInbox::Add(const EndpointChallenge& c) {
  if (c.index >= kMaxEndpointChallenges) return;  // ParseEndpointChallenge refuses these too
  absl::MutexLock l(&mu_);
  auto it = std::find_if(received_.begin(), received_.end(),
                         [&](const Received& r) { return r.session_id == c.session_id; });
  if (it == received_.end()) {
    if (received_.size() >= kMaxSessions) received_.pop_front();
    received_.push_back({std::string(c.session_id), {}});
    it = received_.end() - 1;
  }
  if (it->challenges.size() <= c.index) it->challenges.resize(c.index + 1);
  it->challenges[c.index] = std::string(c.challenge);
}

std::deque<ChallengeInbox::Received>::iterator ChallengeInbox::Complete(
    absl::string_view session_id, size_t count) {
  for (auto it = received_.begin(); it != received_.end(); ++it) {
    if (it->session_id != session_id) continue;
    if (it->challenges.size() < count) return received_.end();
    for (size_t i = 0; i < count; ++i) {
      if (it->challenges[i].empty()) return received_.end();
    }
    return it;
  }
  return received_.end();
}

absl::StatusOr<std::string> ChallengeInbox::Await(absl::string_view session_id, size_t count,
                                                  absl::Duration timeout) {
  if (count == 0 || count > kMaxEndpointChallenges) {
    return MakeError(ErrorCode::kInternal,
                     absl::StrCat("the server announced ", count, " endpoint challenges; 1 to ",
                                  kMaxEndpointChallenges, " are allowed"));
  }
  absl::MutexLock l(&mu_);
  auto arrived = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return Complete(session_id, count) != received_.end();
  };
  mu_.AwaitWithTimeout(absl::Condition(&arrived), timeout);
  auto it = Complete(session_id, count);
  if (it == received_.end()) {
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("the server's ", count,
                                  " endpoint challenge(s) did not reach "
                                  "this worker within ",
                                  absl::FormatDuration(timeout), " (AOBJ-SES-025)"));
  }
  std::string out;
  for (size_t i = 0; i < count; ++i) out += it->challenges[i];
  received_.erase(it);
  return out;
}

}  // namespace aobj
