#include "exec/helpers.h"

#include <deque>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace aobj {

namespace {

// Starts `body` on a new thread; false (and nothing started) when the system has none to give.
bool TryStart(std::thread* thread, std::function<void()> body) {
  try {
    *thread = std::thread(std::move(body));
    return true;
  } catch (const std::system_error&) {
    return false;
  }
}

}  // namespace

void RunInParallel(size_t n, absl::FunctionRef<void(size_t)> fn) {
  std::vector<std::thread> threads(n > 1 ? n - 1 : 0);
  size_t k = 1;
  for (; k < n; ++k) {
    if (!TryStart(&threads[k - 1], [&fn, k] { fn(k); })) break;
  }
  for (size_t rest = k; rest < n; ++rest) fn(rest);  // no thread to be had: this one does them
  if (n > 0) fn(0);
  for (std::thread& t : threads) {
    if (t.joinable()) t.join();
  }
}

bool StartDetached(std::function<void()> work) {
  std::thread thread;
  if (!TryStart(&thread, std::move(work))) return false;
  thread.detach();
  return true;
}

struct ReusedThreads::State {
  explicit State(absl::Duration l) : linger(l) {}
  const absl::Duration linger;
  absl::Mutex mu;
  std::deque<std::function<void()>> work ABSL_GUARDED_BY(mu);
  size_t idle ABSL_GUARDED_BY(mu) = 0;  // threads waiting, less the work queued for them
  bool ending ABSL_GUARDED_BY(mu) = false;
};

ReusedThreads::ReusedThreads(absl::Duration linger) : state_(std::make_shared<State>(linger)) {}

ReusedThreads::~ReusedThreads() {
  absl::MutexLock l(&state_->mu);
  state_->ending = true;  // idle threads end now; queued work still runs
}

size_t ReusedThreads::idle_threads() const {
  absl::MutexLock l(&state_->mu);
  return state_->idle;
}

bool ReusedThreads::Start(std::function<void()> work) {
  {
    absl::MutexLock l(&state_->mu);
    if (state_->idle > 0) {
      --state_->idle;
      state_->work.push_back(std::move(work));
      return true;
    }
  }
  std::shared_ptr<State> state = state_;
  return StartDetached([state, w = std::move(work)]() mutable { Serve(state, std::move(w)); });
}

void ReusedThreads::Serve(const std::shared_ptr<State>& state, std::function<void()> work) {
  for (;;) {
    work();
    work = nullptr;  // what it holds is released before the wait
    absl::MutexLock l(&state->mu);
    ++state->idle;
    auto ready = [&state]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu) {
      return !state->work.empty() || state->ending;
    };
    state->mu.AwaitWithTimeout(absl::Condition(&ready), state->linger);
    if (state->work.empty()) {  // lingered long enough, or the owner is gone
      --state->idle;
      return;
    }
    // Start counted this thread out of `idle` when it queued the work.
    work = std::move(state->work.front());
    state->work.pop_front();
  }
}

void Overlap::Run(std::function<absl::Status()> work) {
  Wait().IgnoreError();
  work_ = std::move(work);
  if (!TryStart(&thread_, [this] { result_ = work_(); })) result_ = work_();
}

absl::Status Overlap::Wait() {
  if (thread_.joinable()) thread_.join();
  return std::exchange(result_, absl::OkStatus());
}

}  // namespace aobj
