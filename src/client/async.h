// Asynchronous operations and per-call deadlines of the client library (spec sections 3.7 and
// 7.5): what every call of an operation carries (CallContext), an operation's cancellation
// state (OpControl), the async threads (AsyncPool) and Operation<T> itself (OperationImpl).
// Internal to src/client/.
//
// Threading: AsyncPool and OperationImpl are thread-safe; a CallContext is a value, passed
// explicitly from the public method down to every call it makes (nothing is thread-local).
#ifndef AOBJ_CLIENT_ASYNC_H_
#define AOBJ_CLIENT_ASYNC_H_

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "aobj/client.h"
#include "aobj/status.h"

namespace aobj::client_internal {

// The cancellation state of one asynchronous operation, which its calls consult (Call()).
class OpControl {
 public:
  // Called by Call() after signing, before sending: false when the operation was cancelled
  // (then nothing is sent); otherwise records the nonce for Cancel().
  bool Sending(const std::string& nonce) {
    absl::MutexLock l(&mu_);
    if (cancel_requested_) return false;
    nonce_ = nonce;
    return true;
  }
  // True once the operation was cancelled (a call waiting to be sent gives up).
  bool CancelRequested() const {
    absl::MutexLock l(&mu_);
    return cancel_requested_;
  }

 protected:
  mutable absl::Mutex mu_;
  bool cancel_requested_ ABSL_GUARDED_BY(mu_) = false;
  std::string nonce_ ABSL_GUARDED_BY(mu_);  // of the call in flight, empty before the first
};

// What every call of one operation carries, on top of ClientOptions::timeout_ms: the
// operation's deadline (PutOptions::call, GetOptions::call, WithCallOptions, the CallOptions of
// an async method) and, for an asynchronous operation, its cancellation state, which Call()
// consults before it sends (AOBJ-DAT-156). A default context is a call outside any operation.
struct CallContext {
  absl::Time deadline = absl::InfiniteFuture();
  OpControl* op = nullptr;  // null: not an asynchronous operation

  // This context narrowed by `call`, whose timeout counts from now.
  CallContext Within(const CallOptions& call) const {
    CallContext c = *this;
    c.deadline = std::min(c.deadline, call.deadline);
    if (call.timeout > absl::ZeroDuration()) {
      c.deadline = std::min(c.deadline, absl::Now() + call.timeout);
    }
    return c;
  }
};

// A fixed set of threads, started on first use, that run asynchronous operations.
class AsyncPool {
 public:
  explicit AsyncPool(int threads) : max_threads_(std::max(threads, 1)) {}
  ~AsyncPool() { Stop(); }
  // False once stopping.
  bool Submit(std::function<void()> fn) {
    absl::MutexLock l(&mu_);
    if (stopping_) return false;
    queue_.push_back(std::move(fn));
    if (threads_.size() < static_cast<size_t>(max_threads_) && queue_.size() > idle_) {
      threads_.emplace_back([this] { Run(); });
    }
    return true;
  }
  // Runs what is queued (operations not yet started see that they were stopped and complete
  // with CANCELLED at once) and joins the threads.
  void Stop() {
    std::vector<std::thread> threads;
    {
      absl::MutexLock l(&mu_);
      stopping_ = true;
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }
  bool stopping() {
    absl::MutexLock l(&mu_);
    return stopping_;
  }

 private:
  void Run() {
    absl::MutexLock l(&mu_);
    for (;;) {
      ++idle_;
      mu_.Await(absl::Condition(
          +[](AsyncPool* p) ABSL_SHARED_LOCKS_REQUIRED(p->mu_) {
            return p->stopping_ || !p->queue_.empty();
          },
          this));
      --idle_;
      if (queue_.empty()) return;  // stopping and drained
      std::function<void()> fn = std::move(queue_.front());
      queue_.pop_front();
      mu_.Unlock();
      fn();
      mu_.Lock();
    }
  }
  const int max_threads_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  size_t idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

// Sends the cancellation of a running request (implemented by ClientImpl).
class CancelSender {
 public:
  virtual ~CancelSender() = default;
  virtual void SendCancel(const std::string& nonce) = 0;
};

template <class T>
class OperationImpl final : public Operation<T>, public OpControl {
 public:
  using Callback = typename Operation<T>::Callback;
  OperationImpl(CancelSender* client, Callback done) : client_(client), done_cb_(std::move(done)) {}

  void Cancel() override {
    std::string nonce;
    bool started;
    {
      absl::MutexLock l(&mu_);
      if (done_) return;
      cancel_requested_ = true;
      started = started_;
      nonce = nonce_;
    }
    if (!started) {
      // Never sent, and Sending() refuses from now on: nothing to acknowledge.
      CompleteUnlocked(MakeError(ErrorCode::kCancelled, "cancelled before it was sent"));
      return;
    }
    // AOBJ-DAT-156: ask the server to stop; its reply to the request is the acknowledgment
    // (AOBJ-DAT-155). Without a nonce the call was not sent yet and will not be (Sending()).
    if (!nonce.empty()) client_->SendCancel(nonce);
    Wait();
  }
  bool done() const override {
    absl::MutexLock l(&mu_);
    return done_;
  }
  const absl::StatusOr<T>& Wait() override {
    absl::MutexLock l(&mu_);
    mu_.Await(absl::Condition(&done_));
    return result_;
  }
  bool WaitFor(absl::Duration timeout) override {
    absl::MutexLock l(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&done_), timeout);
  }

  // On an async thread: runs `fn` in `ctx` and this operation's cancellation, unless the
  // operation was cancelled first.
  void Run(const std::function<absl::StatusOr<T>(const CallContext&)>& fn, CallContext ctx,
           bool stopping) {
    bool cancelled;
    {
      absl::MutexLock l(&mu_);
      if (done_) return;
      if (stopping) cancel_requested_ = true;
      cancelled = cancel_requested_;
      if (!cancelled) started_ = true;
    }
    if (cancelled) {
      CompleteUnlocked(MakeError(ErrorCode::kCancelled,
                                 stopping ? "the client was destroyed before it was sent"
                                          : "cancelled before it was sent"));
      return;
    }
    ctx.op = this;
    CompleteUnlocked(fn(ctx));
  }

 private:
  // Sets the result once, wakes waiters, then runs the callback (mu_ not held).
  void CompleteUnlocked(absl::StatusOr<T> result) {
    {
      absl::MutexLock l(&mu_);
      if (done_) return;
      result_ = std::move(result);
      done_ = true;
    }
    if (done_cb_) done_cb_(result_);
  }

  CancelSender* client_;
  Callback done_cb_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::StatusOr<T> result_ = absl::UnknownError("not done");  // set once, under mu_
};

}  // namespace aobj::client_internal

#endif  // AOBJ_CLIENT_ASYNC_H_
