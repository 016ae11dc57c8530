// RequestScheduler: the server's request threads, shared between principals, behind bounded
// queues (issue 16, control-plane probe findings 4 and 5; spec AOBJ-SEC-013, AOBJ-SEC-014).
//
// Request handling blocks (store I/O, waiting on RMA, whole-object copies), so requests run on a
// fixed set of threads rather than on gRPC's callback threads. Each request is queued under the
// principal (access key id) it claims; the claim is checked against the known keys before it is
// queued, and verified by signature on the request thread.
//
//   * Fairness: the threads serve the principals with waiting requests in turn (round robin), and
//     one principal runs at most `max_running_per_principal` requests at once, so that threads
//     stay free for the others: ten long CopyObjects of one tenant no longer hold every thread
//     while another tenant's listing waits.
//   * Bounds: at most `max_queued` requests and `max_queued_bytes` of their request messages wait
//     in all, at most `max_queued_per_principal` of one principal; beyond, Submit fails with
//     SLOW_DOWN (retryable) and the request is answered at once.
//
// Threading: Submit, stats and Stop from any thread; Stop only once it may block (it runs what
// is queued, then joins the threads), never from a task.
#ifndef AOBJ_SERVER_SCHEDULER_H_
#define AOBJ_SERVER_SCHEDULER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace aobj {

struct SchedulerLimits {
  int threads = 10;
  // 0: threads - 2 (at least 1): two threads always stay for other principals.
  int max_running_per_principal = 0;
  size_t max_queued = 4096;
  size_t max_queued_per_principal = 1024;
  uint64_t max_queued_bytes = uint64_t{256} << 20;
};

struct SchedulerStats {
  uint64_t queued = 0;        // requests waiting now
  uint64_t queued_bytes = 0;  // their request bytes
  uint64_t running = 0;       // requests on a thread now
  uint64_t rejected = 0;      // Submits refused with SLOW_DOWN since start
};

class RequestScheduler {
 public:
  explicit RequestScheduler(const SchedulerLimits& limits);
  ~RequestScheduler();
  RequestScheduler(const RequestScheduler&) = delete;
  RequestScheduler& operator=(const RequestScheduler&) = delete;

  // The limits in effect (max_running_per_principal resolved).
  const SchedulerLimits& limits() const { return limits_; }

  // Queues `task` for `principal`; `bytes` is what the request holds while it waits. SLOW_DOWN
  // when a bound is reached or the scheduler stopped; `task` is then dropped unrun.
  absl::Status Submit(absl::string_view principal, uint64_t bytes, std::function<void()> task);

  // Runs `task` on the calling thread, counted as one of `principal`'s running requests, when
  // the scheduler would start it at once and it would be the principal's only running request:
  // nothing waits, a request thread is idle, the principal runs nothing. Returns false, without
  // running it, otherwise (then Submit it: a principal's concurrent requests run side by side). For
  // a request that cannot wait on anything (spec 8.9: a small fast-path request on the thread that
  // delivered it); the bounds and the fairness of Submit hold for it.
  bool TryRunHere(absl::string_view principal, const std::function<void()>& task);

  // Refuses new tasks, runs every queued one, joins the threads. Idempotent.
  void Stop();

  SchedulerStats stats();

  // How full the queues that `principal`'s next request would wait in are, 0 (empty) to 1 (a
  // Submit would be refused): the fullest of the server's count, its bytes and the principal's
  // own count. The grant of credits follows it (AOBJ-FLO-009).
  double Pressure(absl::string_view principal);

 private:
  struct Item {
    std::function<void()> task;
    uint64_t bytes = 0;
  };
  struct Lane {
    std::deque<Item> waiting;
    int running = 0;
  };

  void Run();
  // Ends one running request of `principal`. Requires mu_.
  void Finished(const std::string& principal) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // True when a waiting request may start now. Requires mu_.
  bool Runnable() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  SchedulerLimits limits_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Lane> lanes_ ABSL_GUARDED_BY(mu_);
  // Principals with waiting requests, in the order they are next served.
  std::deque<std::string> turn_ ABSL_GUARDED_BY(mu_);
  uint64_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t running_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t rejected_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
  absl::Mutex stop_mu_;  // serializes Stop()
};

}  // namespace aobj

#endif  // AOBJ_SERVER_SCHEDULER_H_
