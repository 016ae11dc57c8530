#include "transport/ucx_worker.h"

#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "transport/address_check.h"
#include "transport/peer_rma_guard.h"
#include "transport/shm_guard.h"
#include "transport/ucx_worker_internal.h"

namespace aobj {

absl::Status TransferError(absl::string_view what, ucs_status_t st) {
  return MakeError(ErrorCode::kTransferFailed, absl::StrCat(what, ": ", UcxStatusString(st)));
}

absl::Status MakeWorker(const UcxContext& context, WorkerPtr* worker, std::string* address,
                        int* efd, absl::Status* refusal) {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // One thread at a time, under UcxWorker::progress_mu_ (mostly the progress thread).
  params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  ucp_worker_h raw = nullptr;
  ucs_status_t st = ucp_worker_create(context.get(), &params, &raw);
  if (st != UCS_OK) {
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("ucp_worker_create: ", UcxStatusString(st)));
  }
  WorkerPtr w(raw);
  if (context.serves_peers()) *refusal = RefusePeerRma(raw);
  ucp_address_t* addr = nullptr;
  size_t addr_len = 0;
  st = ucp_worker_get_address(raw, &addr, &addr_len);
  if (st == UCS_OK) {
    address->assign(reinterpret_cast<const char*>(addr), addr_len);
    ucp_worker_release_address(raw, addr);
    st = ucp_worker_get_efd(raw, efd);
  }
  if (st != UCS_OK) {
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("ucp_worker_get_address/efd: ", UcxStatusString(st)));
  }
  *worker = std::move(w);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<UcxWorker>> UcxWorker::Create(const UcxContext& context,
                                                              std::string name,
                                                              const UcxContext* shm_lane) {
  WorkerPtr worker, shm_worker;
  std::string address, shm_address;
  int worker_fd = -1, shm_fd = -1;
  absl::Status refusal = context.serves_peers()
                             ? absl::OkStatus()
                             : absl::FailedPreconditionError("not a server context");
  if (absl::Status s = MakeWorker(context, &worker, &address, &worker_fd, &refusal); !s.ok()) {
    return s;
  }
  if (shm_lane != nullptr) {
    if (absl::Status s = MakeWorker(*shm_lane, &shm_worker, &shm_address, &shm_fd, &refusal);
        !s.ok()) {
      return s;
    }
  }
  int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  int stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd < 0 || wake_fd < 0 || stop_fd < 0) {
    for (int fd : {epoll_fd, wake_fd, stop_fd}) {
      if (fd >= 0) close(fd);
    }
    return MakeError(ErrorCode::kInternal, absl::StrCat("epoll/eventfd: ", strerror(errno)));
  }
  for (int fd : {worker_fd, shm_fd, wake_fd}) {
    if (fd < 0) continue;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
  std::unique_ptr<UcxWorker> w(new UcxWorker(
      std::move(worker), std::move(shm_worker), shm_lane != nullptr ? shm_lane->get() : nullptr,
      epoll_fd, wake_fd, std::move(name), std::move(address), std::move(shm_address)));
  w->context_ = &context;
  w->peer_rma_refusal_ = std::move(refusal);
  w->worker_fd_ = worker_fd;
  w->stop_fd_ = stop_fd;
  // A server's worker has more workers beside it to progress (shared memory, messages, the
  // sessions' emulation workers): only the progress thread sleeps on all of them.
  w->drivable_ = !context.serves_peers() && shm_lane == nullptr;
  const absl::Status handler = w->SetChallengeHandler();
  // The thread starts either way: stopping it is what destroys the workers.
  w->thread_ = std::thread([p = w.get()] { p->Loop(); });
  // Seen in top -H and /proc/PID/task/*/comm: "aobj-ucx-server", "aobj-ucx-client", ...
  pthread_setname_np(w->thread_.native_handle(),
                     absl::StrCat("aobj-ucx-", w->name_).substr(0, 15).c_str());
  if (!handler.ok()) return handler;
  return w;
}

UcxWorker::UcxWorker(WorkerPtr worker, WorkerPtr shm_worker, ucp_context_h shm_context,
                     int epoll_fd, int wake_fd, std::string name, std::string address,
                     std::string shm_address)
    : worker_(std::move(worker)),
      shm_worker_(std::move(shm_worker)),
      shm_context_(shm_context),
      epoll_fd_(epoll_fd),
      wake_fd_(wake_fd),
      name_(std::move(name)),
      address_(std::move(address)),
      shm_address_(std::move(shm_address)) {}

UcxWorker::~UcxWorker() {
  // Drivers first: they see stop_fd_ and leave, their tickets end with their calls, and no new
  // ticket is given; only then may the progress thread tear the workers down.
  stop_requested_.store(true);
  uint64_t one = 1;
  ssize_t r = write(stop_fd_, &one, sizeof(one));
  (void)r;
  {
    absl::MutexLock l(&mu_);
    mu_.Await(absl::Condition(
        +[](size_t* tickets) { return *tickets == 0; }, &drive_tickets_));
    stopping_ = true;
  }
  Wake();
  thread_.join();
  close(epoll_fd_);
  close(wake_fd_);
  close(stop_fd_);
}

UcxWorker::DriveTicket UcxWorker::EnterDrive() {
  if (!drivable_) return DriveTicket();
  absl::MutexLock l(&mu_);
  if (stopping_ || stop_requested_.load()) return DriveTicket();
  ++drive_tickets_;
  return DriveTicket(this);
}

UcxWorker::DriveTicket::~DriveTicket() { Release(); }

void UcxWorker::DriveTicket::Release() {
  if (worker_ == nullptr) return;
  absl::MutexLock l(&worker_->mu_);
  --worker_->drive_tickets_;
  worker_ = nullptr;
}

bool UcxWorker::DriveTicket::Drive(const std::function<bool()>& done, absl::Time until) {
  if (worker_ == nullptr) return done();
  if (worker_->DriveUntil(done, until)) return true;
  // Whatever made it give up (another leader, work for the progress thread, the worker
  // stopping, time), the caller waits as it would have: the ticket goes now, so that a
  // destruction never waits on a caller that is not driving.
  Release();
  return done();
}

bool UcxWorker::DriveUntil(const std::function<bool()>& done, absl::Time until) {
  if (stop_requested_.load() || spin_->load(std::memory_order_relaxed) > 0) return done();
  if (!progress_mu_.TryLock()) return done();  // the progress thread is at work: it delivers
  if (leader_ || worker_ == nullptr) {
    progress_mu_.Unlock();
    return done();
  }
  leader_ = true;
  led_since_sleep_ = true;
  // The progress thread no longer wakes for this worker's events: this thread does.
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, worker_fd_, nullptr);
  bool finished = false;
  for (;;) {
    while (!(finished = done()) && ucp_worker_progress(worker_.get()) != 0) {
    }
    if (finished || (finished = done())) break;
    // A peer's failure and emulated windows (the spin counter) are the progress thread's.
    if (!peer_errors_.empty() || stop_requested_.load() ||
        spin_->load(std::memory_order_relaxed) > 0) {
      break;
    }
    const absl::Duration left = until - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    if (ucp_worker_arm(worker_.get()) == UCS_ERR_BUSY) continue;
    // Asleep on the worker's fd, without the lock: the progress thread runs commands meanwhile
    // (and yields the lead by its wake fd: a queued command may need this worker progressed).
    progress_mu_.Unlock();
    pollfd p[3] = {{worker_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    const int n =
        poll(p, 3,
             static_cast<int>(std::clamp<int64_t>(
                 absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))), 1, 1000)));
    progress_mu_.Lock();
    if (n > 0 && (p[1].revents != 0 || p[2].revents != 0)) {
      while (!(finished = done()) && ucp_worker_progress(worker_.get()) != 0) {
      }
      break;
    }
  }
  // What arrived behind the reply is progressed here, so that the worker can be armed for the
  // progress thread without waking it.
  bool busy = true;
  for (int i = 0; i < 4 && busy; ++i) {
    while (ucp_worker_progress(worker_.get()) != 0) {
    }
    busy = ucp_worker_arm(worker_.get()) == UCS_ERR_BUSY;
  }
  leader_ = false;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = worker_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, worker_fd_, &ev);
  // Armed, or the progress thread looks: nothing that arrives goes unprogressed.
  const bool wake = !peer_errors_.empty() || !challenge_sends_.empty() || busy;
  progress_mu_.Unlock();
  if (wake) Wake();
  return finished;
}

void UcxWorker::BeginShutdown(absl::Duration grace) {
  const int64_t at = absl::ToUnixNanos(absl::Now() + grace);
  int64_t cur = drain_deadline_ns_.load();
  while (at < cur && !drain_deadline_ns_.compare_exchange_weak(cur, at)) {
  }
  Wake();
}

void UcxWorker::Wake() {
  uint64_t one = 1;
  ssize_t r = write(wake_fd_, &one, sizeof(one));
  (void)r;
}

void UcxWorker::Post(std::shared_ptr<Command> cmd, const std::function<bool()>& abandoned) {
  {
    absl::MutexLock l(&mu_);
    if (stopping_) {
      cmd->Finish(MakeError(ErrorCode::kDataChannelUnavailable, "data channel is shutting down"));
      return;
    }
    queue_.push_back(cmd);
  }
  Wake();
  if (!abandoned) {
    cmd->done.WaitForNotification();
    return;
  }
  // The calling thread watches its call while the progress thread works: a call whose client
  // cancelled or went away gets kAbandonGrace more, then its endpoint is failed (AOBJ-DAT-157).
  bool lowered = false;
  while (!cmd->done.WaitForNotificationWithTimeout(absl::Milliseconds(20))) {
    if (!lowered && abandoned()) {
      lowered = true;
      cmd->abandon_deadline_ns.store(absl::ToUnixNanos(absl::Now() + kAbandonGrace));
      Wake();
    }
  }
}

absl::StatusOr<uint64_t> UcxWorker::Connect(absl::string_view peer_address) {
  pid_t creator = 0;
  if (absl::Status s = CheckWorkerAddress(peer_address, address_); !s.ok()) return s;
  if (shm_worker_ != nullptr) {
    if (absl::Status s = CheckWorkerAddress(peer_address, shm_address_); !s.ok()) return s;
    // AOBJ-SES-024: the FIFOs the shared-memory lane will attach are the peer's kind of segment.
    if (absl::Status s = CheckPeerFifoSegments(peer_address, shm_address_, &creator); !s.ok()) {
      return s;
    }
  }
  auto cmd = std::make_shared<Command>();
  cmd->kind = Command::kConnect;
  cmd->peer_address = peer_address;
  cmd->fifo_creator = creator;
  Post(cmd);
  if (!cmd->status.ok()) return cmd->status;
  return cmd->new_endpoint;
}

absl::StatusOr<Protection> UcxWorker::GetProtection(uint64_t endpoint) {
  auto cmd = std::make_shared<Command>();
  cmd->kind = Command::kProtection;
  cmd->endpoint = endpoint;
  Post(cmd);
  if (!cmd->status.ok()) return cmd->status;
  return cmd->protection;
}

absl::StatusOr<std::string> UcxWorker::SendChallenges(uint64_t endpoint,
                                                      absl::string_view session_id) {
  auto cmd = std::make_shared<Command>();
  cmd->kind = Command::kChallenge;
  cmd->endpoint = endpoint;
  cmd->session_id = session_id;
  Post(cmd);
  if (!cmd->status.ok()) return cmd->status;
  return std::move(cmd->challenges);
}

absl::Status UcxWorker::Bind(uint64_t endpoint) {
  auto cmd = std::make_shared<Command>();
  cmd->kind = Command::kBind;
  cmd->endpoint = endpoint;
  Post(cmd);
  return cmd->status;
}

void UcxWorker::Disconnect(uint64_t endpoint) {
  auto cmd = std::make_shared<Command>();
  cmd->kind = Command::kDisconnect;
  cmd->endpoint = endpoint;
  Post(cmd);
}

absl::Status UcxWorker::Execute(uint64_t endpoint, const RmaBatch& batch, absl::Duration timeout,
                                const std::function<bool()>& abandoned) {
  auto cmd = std::make_shared<Command>();
  cmd->kind = Command::kExecute;
  cmd->endpoint = endpoint;
  cmd->batch = &batch;
  cmd->deadline = absl::Now() + timeout;
  Post(cmd, abandoned);
  return cmd->status;
}

size_t UcxWorker::endpoint_count() { return endpoint_count_.load(); }
uint64_t UcxWorker::rkeys_outstanding() { return rkeys_outstanding_.load(); }

// ---- progress thread ---------------------------------------------------------------------------

void UcxWorker::Sleep(int timeout_ms) {
  // An event fd that stays readable without UCX making progress (seen with a peer that stopped
  // progressing on a TCP lane) would make epoll return at once forever: after a few such
  // wake-ups in a row, wait on our own wake fd only, with a timer, until progress resumes.
  // The same for ucp_worker_arm answering BUSY again and again with nothing to progress (seen
  // after a peer's endpoint failed: a keepalive timer fd that stays readable).
  int fds = spurious_wakeups_ >= 3 ? 0 : 1;
  if (fds != 0) {
    for (ucp_worker_h w :
         {leader_ ? nullptr : worker_.get(), shm_worker_.get(), msg_worker_.get()}) {
      if (w != nullptr && ucp_worker_arm(w) == UCS_ERR_BUSY) {
        awaiting_progress_ = true;
        return;
      }
    }
    for (ucp_worker_h w : emulation_workers_) {
      if (ucp_worker_arm(w) == UCS_ERR_BUSY) {
        awaiting_progress_ = true;
        return;
      }
    }
  } else if (timeout_ms < 0 || timeout_ms > 10) {
    timeout_ms = 10;
  }
  epoll_event events[8];
  led_since_sleep_ = false;
  progress_mu_.Unlock();  // a thread that finds it free may send or drive meanwhile
  int n = fds != 0 ? epoll_wait(epoll_fd_, events, 8, timeout_ms) : 0;
  if (fds == 0) {
    pollfd p{wake_fd_, POLLIN, 0};
    n = poll(&p, 1, timeout_ms);
    if (n > 0) {
      events[0].data.fd = wake_fd_;
    }
  }
  progress_mu_.Lock();
  bool woken_by_ucx = false;
  for (int i = 0; i < n; ++i) {
    if (events[i].data.fd == wake_fd_) {
      uint64_t v;
      ssize_t r = read(wake_fd_, &v, sizeof(v));
      (void)r;
    } else {
      woken_by_ucx = true;
    }
  }
  // A driver that led meanwhile may have progressed what woke this thread: not spurious.
  awaiting_progress_ = woken_by_ucx && !led_since_sleep_;
}

void UcxWorker::Loop() {
  progress_mu_.Lock();
  absl::Time last_progress = absl::Now();
  for (;;) {
    std::deque<std::shared_ptr<Command>> cmds;
    bool stopping;
    {
      absl::MutexLock l(&mu_);
      cmds.swap(queue_);
      stopping = stopping_;
    }
    for (auto& cmd : cmds) {
      switch (cmd->kind) {
        case Command::kConnect:
          DoConnect(*cmd);
          break;
        case Command::kProtection:
          DoProtection(*cmd);
          break;
        case Command::kDisconnect:
          DoDisconnect(*cmd);
          break;
        case Command::kExecute:
          StartJob(cmd);
          break;
        case Command::kChallenge:
          DoChallenge(*cmd);
          break;
        case Command::kBind:
          DoBind(*cmd);
          break;
        case Command::kConnectOut:
          DoConnectOut(*cmd);
          break;
        case Command::kSetHandler:
          DoSetHandler(*cmd);
          break;
        case Command::kSend:
          DoSend(*cmd);
          break;
        case Command::kMessageWorker:
          DoMessageWorker(*cmd);
          break;
      }
    }
    if (stopping) {
      // Jobs end by their bounds (the owner called BeginShutdown); one whose failed endpoint
      // never completed its operations ends with the workers below.
      bool all_stuck = true;
      for (const auto& j : jobs_) {
        auto it = endpoints_.find(j->endpoint);
        if (it != endpoints_.end() && it->second.failed.ok()) all_stuck = false;
      }
      if (jobs_.empty() || (all_stuck && absl::Now() > absl::FromUnixNanos(
                                                           drain_deadline_ns_.load()) +
                                                           absl::Seconds(1))) {
        break;
      }
    }

    // While a thread drives worker_, it alone progresses it (DriveUntil).
    unsigned progressed = leader_ ? 0 : ucp_worker_progress(worker_.get());
    if (shm_worker_ != nullptr) progressed += ucp_worker_progress(shm_worker_.get());
    if (msg_worker_ != nullptr) progressed += ucp_worker_progress(msg_worker_.get());
    for (ucp_worker_h w : emulation_workers_) progressed += ucp_worker_progress(w);
    for (const PeerError& e : std::exchange(peer_errors_, {})) {
      for (auto& [id, state] : endpoints_) {
        if (state.net_ep.get() == e.ep) {
          FailEndpoint(id, state, absl::StrCat("UCX reported the peer failed (",
                                               UcxStatusString(e.status), ")"));
        }
      }
    }
    AdvanceJobs();
    const absl::Time now = absl::Now();
    const bool poll_closes = ReapRequests(now);
    if (progressed != 0) {
      last_progress = now;
      spurious_wakeups_ = 0;
      continue;
    }
    if (std::exchange(awaiting_progress_, false)) ++spurious_wakeups_;
    if (spin_->load(std::memory_order_relaxed) > 0) continue;
    if (!jobs_.empty()) {
      // Operations are outstanding but nothing moved: poll on for a moment (a healthy transfer
      // moves within microseconds), then sleep on the event fds with a short timer so that a
      // stalled peer costs no CPU and deadlines are still seen (spec 13.5, implementation note).
      const absl::Duration idle = now - last_progress;
      if (idle < absl::Microseconds(200)) continue;
      Sleep(idle < absl::Milliseconds(100) ? 1 : 10);
      continue;
    }
    // Idle: sleep on the workers' event fds and our wake fd (spec 13.5, implementation note).
    Sleep(poll_closes ? 10 : -1);
  }
  TearDown();
  progress_mu_.Unlock();
}

bool UcxWorker::ReapRequests(absl::Time now) {
  bool poll_closes = false;
  std::erase_if(closing_, [&](const Closing& c) {
    if (c.request.pending()) {
      if (now < c.poll_until) poll_closes = true;
      return false;
    }
    return true;
  });
  std::erase_if(challenge_sends_, [](const ChallengeSend& c) { return !c.request.pending(); });
  // A message still being sent (a fast-path request or reply, a challenge) is no job, but it may
  // need progress that no event fd announces: the loop looks again within 10 ms rather than
  // sleeping until something else happens (under ASan, a new client's fast-path requests after a
  // killed client's sat unsent for good, each failing at its 120 s deadline, the request still
  // held at teardown: "object was not returned to mpool ucp_requests").
  return poll_closes || !challenge_sends_.empty();
}

void UcxWorker::TearDown() {
  // Close the remaining endpoints without waiting on peers, then destroy the workers here, on
  // the thread that owns them: that ends whatever they still had in flight.
  for (auto& [id, state] : endpoints_) {
    if (state.jobs == 0) state.rkeys.Clear();
    CloseEp(state.net_ep, /*force=*/true);
    CloseEp(state.shm_ep, /*force=*/false);
    DestroyEmulationWorker(id, state);
  }
  const absl::Time deadline = absl::Now() + absl::Milliseconds(500);
  while (!closing_.empty() && absl::Now() < deadline) {
    ucp_worker_progress(worker_.get());
    if (shm_worker_ != nullptr) ucp_worker_progress(shm_worker_.get());
    std::erase_if(closing_, [](const Closing& c) { return !c.request.pending(); });
  }
  // Wireup messages that UCX queued on endpoints it made itself must leave before the worker
  // goes: a client's reply to the server's wireup request travels on one, and UCX 1.13.1 asserts
  // when ucp_worker_destroy purges a pending reply (ucp_request.c:684; seen in CI when the
  // conformance suite closed a session 3 ms after opening it). A flush of the whole worker lets
  // them go, bounded like the closes above.
  if (jobs_.empty()) {
    ucp_request_param_t param{};
    UcxRequest flush(ucp_worker_flush_nbx(worker_.get(), &param));
    const absl::Time flush_deadline = absl::Now() + absl::Milliseconds(500);
    while (flush.pending() && absl::Now() < flush_deadline) ucp_worker_progress(worker_.get());
  }
  // A close still in progress is handed back to UCX (it completes it internally); the worker
  // must not be destroyed with requests the application still holds.
  closing_.clear();
  // Send payloads go only after the workers (UCX may read them until then).
  for (ChallengeSend& c : challenge_sends_) c.request.reset();
  for (auto& job : jobs_) {
    job->flushes.clear();
    job->rkeys.clear();
  }
  // Rkeys of endpoints with batches still outstanding die with the workers.
  for (auto& [id, state] : endpoints_) state.rkeys.ForgetAll();
  worker_.reset();
  shm_worker_.reset();
  msg_worker_.reset();
  challenge_sends_.clear();
  for (auto& job : jobs_) {
    job->cmd->Finish(MakeError(ErrorCode::kTransferFailed,
                               "the server shut down while the transfer was outstanding"));
  }
  jobs_.clear();
  endpoints_.clear();
  endpoint_count_.store(0);
}

}  // namespace aobj
