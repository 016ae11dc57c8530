// Client side of endpoint binding (spec 5.6): the endpoint challenges a server sent to this
// worker, kept until the session that expects them collects them.
//
// Peer input: Add() takes only what ParseEndpointChallenge accepted; at most kMaxSessions
// sessions are kept (the oldest is dropped), each with at most kMaxEndpointChallenges entries,
// so a peer that sends challenges nobody asked for cannot grow it.
//
// Threading: thread-safe. Add() runs on the progress thread (inside the active-message
// handler), Await() on the caller's.
#ifndef AOBJ_TRANSPORT_CHALLENGE_INBOX_H_
#define AOBJ_TRANSPORT_CHALLENGE_INBOX_H_

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "wire/signing.h"

namespace aobj {

class ChallengeInbox {
 public:
  static constexpr size_t kMaxSessions = 16;

  void Add(const EndpointChallenge& challenge);
  // Waits up to `timeout` until `count` challenges for `session_id` have arrived and returns them
  // concatenated in index order (and forgets them). DATA_CHANNEL_UNAVAILABLE when they do not all
  // arrive in time; INTERNAL for a count outside 1 to kMaxEndpointChallenges.
  absl::StatusOr<std::string> Await(absl::string_view session_id, size_t count,
                                    absl::Duration timeout);

 private:
  struct Received {
    std::string session_id;
    std::vector<std::string> challenges;  // empty string: not yet received
  };
  // The session's entry once all `count` challenges are there; received_.end() otherwise.
  std::deque<Received>::iterator Complete(absl::string_view session_id, size_t count)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::deque<Received> received_ ABSL_GUARDED_BY(mu_);
};

}  // namespace aobj

#endif  // AOBJ_TRANSPORT_CHALLENGE_INBOX_H_
