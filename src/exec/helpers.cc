#include "exec/helpers.h"

#include <system_error>
#include <utility>
#include <vector>

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
