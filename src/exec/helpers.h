// Helper threads for work that runs beside the caller's, in one place: a fan-out that joins
// (RunInParallel: a large body's checksum in pieces, a multipart upload's lanes), one piece of
// work overlapped with the caller's next step (Overlap: a transfer's store side while its data
// moves), and work that ends on its own (StartDetached: a data-channel process's request, served
// while the process reads the next). Long-lived pools are separate and named for what they run: the
// server's RequestScheduler (requests) and the client's AsyncPool (asynchronous operations).
// ReusedThreads is StartDetached with its threads kept a while for the next work.
//
// No exception crosses these: work reports through its own results or a Status, and a thread
// that cannot be started (std::thread's only way to say so is std::system_error, caught here and
// nowhere else) leaves its work to the calling thread.
//
// Threading: each object is used by one thread; the work runs on helpers and must synchronize
// what it shares with the caller beyond the join.
#ifndef AOBJ_EXEC_HELPERS_H_
#define AOBJ_EXEC_HELPERS_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <thread>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace aobj {

// Runs fn(0) .. fn(n - 1) at once, fn(0) on the calling thread and the others on helper threads,
// and returns when all have returned.
void RunInParallel(size_t n, absl::FunctionRef<void(size_t)> fn);

// Starts `work` on a thread of its own that nobody joins; the work must keep alive what it uses.
// False when no thread can be started: then nothing runs, and the caller answers for the work.
bool StartDetached(std::function<void()> work);

// StartDetached on threads that are kept for the next work: an idle one takes the work when there
// is one, else a new thread starts, and each stays `linger` after its work for more before it
// ends (a process that serves a request per thread, such as aobj-data-worker, then pays a
// thread's start only when more run at once than ever before; a start under its system-call
// filter cost about as much as a small transfer). Thread-safe; the threads outlive the object
// (they hold its state) and end within `linger` of their last work.
class ReusedThreads {
 public:
  explicit ReusedThreads(absl::Duration linger);
  ~ReusedThreads();
  ReusedThreads(const ReusedThreads&) = delete;
  ReusedThreads& operator=(const ReusedThreads&) = delete;

  // As StartDetached: false when no thread is idle and none can be started.
  bool Start(std::function<void()> work);
  // Threads waiting for work now.
  size_t idle_threads() const;

 private:
  struct State;
  static void Serve(const std::shared_ptr<State>& state, std::function<void()> work);
  std::shared_ptr<State> state_;
};

// One piece of work at a time on a helper thread, so that it runs while the caller does the
// next step of a transfer. The work reports a Status, which Wait() returns.
class Overlap {
 public:
  Overlap() = default;
  Overlap(const Overlap&) = delete;
  Overlap& operator=(const Overlap&) = delete;
  ~Overlap() { Wait().IgnoreError(); }  // work nobody waited for is joined; its result dropped

  // Waits for the previous work (its result is dropped: call Wait() first to see it), then
  // starts `work`; runs it on the caller's thread when no thread can be started.
  void Run(std::function<absl::Status()> work);
  // Joins the work and returns its result (OK when there was none).
  absl::Status Wait();

 private:
  std::function<absl::Status()> work_;
  absl::Status result_;  // written by the helper, read after the join
  std::thread thread_;
};

}  // namespace aobj

#endif  // AOBJ_EXEC_HELPERS_H_
