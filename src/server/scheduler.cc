// RequestScheduler (scheduler.h). One mutex guards the lanes and the turn order; a thread looks
// for work by walking `turn_` from the front to the first principal below its running cap, so
// a principal at its cap never blocks the ones behind it.
#include "server/scheduler.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "wire/error_detail.h"

namespace aobj {

RequestScheduler::RequestScheduler(const SchedulerLimits& limits) : limits_(limits) {
  limits_.threads = std::max(1, limits_.threads);
  if (limits_.max_running_per_principal <= 0) {
    limits_.max_running_per_principal = std::max(1, limits_.threads - 2);
  }
  limits_.max_running_per_principal = std::min(limits_.max_running_per_principal, limits_.threads);
  limits_.max_queued = std::max<size_t>(1, limits_.max_queued);
  limits_.max_queued_per_principal = std::max<size_t>(1, limits_.max_queued_per_principal);
  for (int i = 0; i < limits_.threads; ++i) threads_.emplace_back([this] { Run(); });
}

RequestScheduler::~RequestScheduler() { Stop(); }

absl::Status RequestScheduler::Submit(absl::string_view principal, uint64_t bytes,
                                      std::function<void()> task) {
  absl::MutexLock l(&mu_);
  if (stopping_) return MakeError(ErrorCode::kSlowDown, "the server is shutting down");
  auto it = lanes_.find(principal);
  const size_t mine = it == lanes_.end() ? 0 : it->second.waiting.size();
  // A request larger than the whole byte budget still gets in when nothing waits.
  const bool bytes_full = queued_ > 0 && queued_bytes_ + bytes > limits_.max_queued_bytes;
  if (queued_ >= limits_.max_queued || bytes_full || mine >= limits_.max_queued_per_principal) {
    ++rejected_;
    // AOBJ-FLO-006: the queue drains at request speed; a tenth of a second is the hint.
    return WithRetryAfter(
        MakeError(
            ErrorCode::kSlowDown,
            mine >= limits_.max_queued_per_principal
                ? absl::StrCat("this access key has ", mine,
                               " requests waiting for a request thread, the server's limit; retry "
                               "later")
                : absl::StrCat("the server has ", queued_, " requests (", queued_bytes_ >> 20,
                               " MiB) waiting for a request thread, its limit; retry later")),
        absl::Milliseconds(100));
  }
  if (it == lanes_.end()) it = lanes_.emplace(std::string(principal), Lane{}).first;
  if (it->second.waiting.empty()) turn_.push_back(it->first);
  it->second.waiting.push_back(Item{std::move(task), bytes});
  ++queued_;
  queued_bytes_ += bytes;
  return absl::OkStatus();
}

bool RequestScheduler::Runnable() const {
  for (const std::string& p : turn_) {
    if (lanes_.at(p).running < limits_.max_running_per_principal) return true;
  }
  return false;
}

void RequestScheduler::Run() {
  for (;;) {
    Item item;
    std::string principal;
    {
      absl::MutexLock l(&mu_);
      mu_.Await(absl::Condition(
          +[](RequestScheduler* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
            return s->Runnable() || (s->stopping_ && s->queued_ == 0);
          },
          this));
      auto t = std::find_if(turn_.begin(), turn_.end(),
                            [this](const std::string& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                              return lanes_.at(p).running < limits_.max_running_per_principal;
                            });
      if (t == turn_.end()) return;  // stopping and drained
      principal = std::move(*t);
      turn_.erase(t);
      Lane& lane = lanes_.at(principal);
      item = std::move(lane.waiting.front());
      lane.waiting.pop_front();
      ++lane.running;
      ++running_;
      --queued_;
      queued_bytes_ -= item.bytes;
      if (!lane.waiting.empty()) turn_.push_back(principal);  // its next request waits its turn
    }
    item.task();
    item.task = nullptr;  // whatever it captured goes before the counts say it is done
    absl::MutexLock l(&mu_);
    Finished(principal);
  }
}

void RequestScheduler::Finished(const std::string& principal) {
  auto it = lanes_.find(principal);
  --it->second.running;
  --running_;
  if (it->second.running == 0 && it->second.waiting.empty()) lanes_.erase(it);
}

bool RequestScheduler::TryRunHere(absl::string_view principal, const std::function<void()>& task) {
  std::string key(principal);
  {
    absl::MutexLock l(&mu_);
    // Started here only where a request thread would start it now: nothing waits (so no other
    // request's turn comes first) and a thread is idle.
    if (stopping_ || queued_ > 0 || running_ >= static_cast<uint64_t>(limits_.threads)) {
      return false;
    }
    // And only as the principal's one running request (so below its cap): beside others of its
    // own it goes to a thread, so that a principal's concurrent requests run side by side, not
    // one by one here.
    auto it = lanes_.find(key);
    if (it != lanes_.end() && it->second.running > 0) return false;
    Lane& lane = it != lanes_.end() ? it->second : lanes_[key];
    ++lane.running;
    ++running_;
  }
  task();
  absl::MutexLock l(&mu_);
  Finished(key);
  return true;
}

void RequestScheduler::Stop() {
  absl::MutexLock stop(&stop_mu_);
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
}

SchedulerStats RequestScheduler::stats() {
  absl::MutexLock l(&mu_);
  return SchedulerStats{queued_, queued_bytes_, running_, rejected_};
}

double RequestScheduler::Pressure(absl::string_view principal) {
  absl::MutexLock l(&mu_);
  auto it = lanes_.find(principal);
  const size_t mine = it == lanes_.end() ? 0 : it->second.waiting.size();
  const double count = static_cast<double>(queued_) / static_cast<double>(limits_.max_queued);
  const double bytes =
      limits_.max_queued_bytes == 0
          ? 0.0
          : static_cast<double>(queued_bytes_) / static_cast<double>(limits_.max_queued_bytes);
  const double own =
      static_cast<double>(mine) / static_cast<double>(limits_.max_queued_per_principal);
  return std::min(1.0, std::max({count, bytes, own}));
}

}  // namespace aobj
