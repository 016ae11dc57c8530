#include "transport/ucx_worker.h"

#include <sys/epoll.h>
#include <sys/shm.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "aobj/status.h"
#include "transport/address_check.h"
#include "transport/rkey_check.h"
#include "transport/shm_guard.h"

namespace aobj {

struct UcxWorker::Command {
  enum Kind { kConnect, kDisconnect, kExecute, kProtection } kind;
  // Inputs.
  absl::string_view peer_address;
  uint64_t endpoint = 0;
  const RmaBatch* batch = nullptr;
  absl::Time deadline = absl::InfiniteFuture();
  // Outputs, written by the progress thread before `done` is notified.
  absl::Status status;
  uint64_t new_endpoint = 0;
  Protection protection = Protection::kEmulated;
  absl::Notification done;
};

// One Execute() in progress on the progress thread.
struct UcxWorker::Job {
  std::shared_ptr<Command> cmd;
  ucp_ep_h ep = nullptr;
  std::vector<CachedRkey*> rkeys;  // borrowed from the endpoint's cache, one per window
  size_t pending = 0;           // RMA requests not yet completed
  std::vector<void*> requests;  // outstanding UCX requests (for cancellation)
  void* flush_request = nullptr;
  bool flushing = false;
  bool cancelled = false;
  absl::Status status;          // first error seen
};

namespace {

struct RequestContext {
  UcxWorker* worker;
  void* job;  // Job*
};

absl::Status TransferError(absl::string_view what, ucs_status_t st) {
  return MakeError(ErrorCode::kTransferFailed, absl::StrCat(what, ": ", UcxStatusString(st)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<UcxWorker>> UcxWorker::Create(const UcxContext& context,
                                                              std::string name) {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SINGLE;  // only the progress thread touches it
  ucp_worker_h worker = nullptr;
  ucs_status_t st = ucp_worker_create(context.get(), &params, &worker);
  if (st != UCS_OK) {
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("ucp_worker_create: ", UcxStatusString(st)));
  }
  ucp_address_t* addr = nullptr;
  size_t addr_len = 0;
  st = ucp_worker_get_address(worker, &addr, &addr_len);
  if (st != UCS_OK) {
    ucp_worker_destroy(worker);
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("ucp_worker_get_address: ", UcxStatusString(st)));
  }
  std::string address(reinterpret_cast<const char*>(addr), addr_len);
  ucp_worker_release_address(worker, addr);

  int worker_fd = -1;
  st = ucp_worker_get_efd(worker, &worker_fd);
  if (st != UCS_OK) {
    ucp_worker_destroy(worker);
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("ucp_worker_get_efd: ", UcxStatusString(st)));
  }
  int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd < 0 || wake_fd < 0) {
    if (epoll_fd >= 0) close(epoll_fd);
    if (wake_fd >= 0) close(wake_fd);
    ucp_worker_destroy(worker);
    return MakeError(ErrorCode::kInternal, absl::StrCat("epoll/eventfd: ", strerror(errno)));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = worker_fd;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, worker_fd, &ev);
  ev.data.fd = wake_fd;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &ev);

  std::unique_ptr<UcxWorker> w(new UcxWorker(worker, epoll_fd, wake_fd, worker_fd,
                                             std::move(name), std::move(address)));
  w->thread_ = std::thread([p = w.get()] { p->Loop(); });
  return w;
}

UcxWorker::UcxWorker(ucp_worker_h worker, int epoll_fd, int wake_fd, int worker_fd,
                     std::string name, std::string address)
    : worker_(worker), epoll_fd_(epoll_fd), wake_fd_(wake_fd), worker_fd_(worker_fd),
      name_(std::move(name)), address_(std::move(address)) {}

UcxWorker::~UcxWorker() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  Wake();
  thread_.join();
  ucp_worker_destroy(worker_);
  close(epoll_fd_);
  close(wake_fd_);
}

void UcxWorker::Wake() {
  uint64_t one = 1;
  ssize_t r = write(wake_fd_, &one, sizeof(one));
  (void)r;
}

void UcxWorker::Post(std::shared_ptr<Command> cmd) {
  {
    absl::MutexLock l(&mu_);
    if (stopping_) {
      cmd->status = MakeError(ErrorCode::kDataChannelUnavailable, "data channel is shutting down");
      cmd->done.Notify();
      return;
    }
    queue_.push_back(cmd);
  }
  Wake();
  cmd->done.WaitForNotification();
}

absl::StatusOr<uint64_t> UcxWorker::Connect(absl::string_view peer_address) {
  if (absl::Status s = CheckWorkerAddress(peer_address, address_); !s.ok()) return s;
  auto cmd = std::make_shared<Command>();
  cmd->kind = Command::kConnect;
  cmd->peer_address = peer_address;
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

void UcxWorker::Disconnect(uint64_t endpoint, absl::Duration timeout) {
  auto cmd = std::make_shared<Command>();
  cmd->kind = Command::kDisconnect;
  cmd->endpoint = endpoint;
  cmd->deadline = absl::Now() + timeout;
  Post(cmd);
}

absl::Status UcxWorker::Execute(uint64_t endpoint, const RmaBatch& batch, absl::Duration timeout) {
  auto cmd = std::make_shared<Command>();
  cmd->kind = Command::kExecute;
  cmd->endpoint = endpoint;
  cmd->batch = &batch;
  cmd->deadline = absl::Now() + timeout;
  Post(cmd);
  return cmd->status;
}

size_t UcxWorker::endpoint_count() { return endpoint_count_.load(); }
uint64_t UcxWorker::rkeys_outstanding() { return rkeys_outstanding_.load(); }

// ---- progress thread ---------------------------------------------------------------------------

void UcxWorker::StartJob(const std::shared_ptr<Command>& cmd) {
  const RmaBatch& batch = *cmd->batch;
  auto it = endpoints_.find(cmd->endpoint);
  if (it == endpoints_.end()) {
    // AOBJ-DAT-009: no usable data channel is DATA_CHANNEL_UNAVAILABLE, never an inline fallback.
    cmd->status = MakeError(ErrorCode::kDataChannelUnavailable, "no data-channel endpoint");
    cmd->done.Notify();
    return;
  }
  auto job = std::make_unique<Job>();
  job->cmd = cmd;
  job->ep = it->second.ep;

  // AOBJ-MEM-009: every op inside its window, before anything reaches UCX.
  // AOBJ-MEM-021: otherwise nothing is issued and the request fails DESCRIPTOR_OUT_OF_BOUNDS.
  // AOBJ-SEC-001: checked here whatever the memory protection, EMULATED included.
  for (const RmaOp& op : batch.ops) {
    if (op.window >= batch.windows.size()) {
      FinishJob(*job, MakeError(ErrorCode::kInternal, "RMA op names no window"));
      return;
    }
    const RemoteWindow& w = batch.windows[op.window];
    if (op.length == 0 || op.remote < w.address || op.length > w.length ||
        op.remote - w.address > w.length - op.length) {
      FinishJob(*job, MakeError(ErrorCode::kDescriptorOutOfBounds,
                                "RMA operation outside its descriptor window"));
      return;
    }
  }
  // Unpack rkeys (AOBJ-MEM-004) and check shared-memory windows (AOBJ-MEM-012).
  for (const RemoteWindow& w : batch.windows) {
    auto entry = AcquireRkey(it->second, w, batch.max_rkey_bytes);
    if (!entry.ok()) {
      FinishJob(*job, entry.status());
      return;
    }
    job->rkeys.push_back(*entry);
  }
  // Issue every op; completions arrive through the callback.
  for (const RmaOp& op : batch.ops) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.user_data = job.get();
    param.cb.send = [](void* request, ucs_status_t status, void* user_data) {
      auto* j = static_cast<Job*>(user_data);
      if (status != UCS_OK && j->status.ok()) j->status = TransferError("RMA", status);
      --j->pending;
      std::erase(j->requests, request);
      ucp_request_free(request);
    };
    ucp_rkey_h rkey = job->rkeys[op.window]->rkey;
    ucs_status_ptr_t req =
        batch.direction == RmaDirection::kWrite
            ? ucp_put_nbx(job->ep, op.local, op.length, op.remote, rkey, &param)
            : ucp_get_nbx(job->ep, op.local, op.length, op.remote, rkey, &param);
    if (UCS_PTR_IS_ERR(req)) {
      if (job->status.ok()) job->status = TransferError("issue RMA", UCS_PTR_STATUS(req));
      break;
    }
    if (req != nullptr) {
      ++job->pending;
      job->requests.push_back(req);
    }
  }
  jobs_.push_back(std::move(job));
}

void UcxWorker::FinishJob(Job& job, absl::Status status) {
  // AOBJ-MEM-023: the request no longer uses its rkeys; they stay cached for the session.
  for (CachedRkey* entry : job.rkeys) --entry->in_use;
  job.rkeys.clear();
  job.cmd->status = std::move(status);
  job.cmd->done.Notify();
}

void UcxWorker::DestroyRkey(std::unique_ptr<CachedRkey>& entry) {
  ucp_rkey_destroy(entry->rkey);
  rkeys_outstanding_.fetch_sub(1);
  entry.reset();
}

absl::StatusOr<UcxWorker::CachedRkey*> UcxWorker::AcquireRkey(EndpointState& state,
                                                               const RemoteWindow& w,
                                                               size_t max_rkey_bytes) {
  // AOBJ-MEM-024: drop entries whose segments the client has released: once it has detached, this
  // cached rkey's own attachment is the only one left (UCX marks its segments for removal right
  // after creating them, so SHM_DEST says nothing). The client will not name them again, and
  // keeping them would keep its memory alive here.
  auto released = [](const CachedRkey& e) {
    for (uint32_t shmid : e.shmids) {
      struct shmid_ds ds {};
      if (shmctl(static_cast<int>(shmid), IPC_STAT, &ds) != 0 || ds.shm_nattch <= 1) return true;
    }
    return false;
  };
  CachedRkey* entry = nullptr;
  for (auto& e : state.rkeys) {
    if (e != nullptr && e->blob == w.rkey) {
      // The key this request names is checked every time: a request must never reach a
      // segment the client has released.
      if (e->in_use == 0 && released(*e)) {
        DestroyRkey(e);
      } else {
        entry = e.get();
      }
      break;
    }
  }
  // The other idle keys: on a miss (the client may have swapped buffers) and otherwise at most
  // every kRkeySweepInterval, so that a hit costs one shmctl per segment, not one per entry.
  const absl::Time now = absl::Now();
  if (entry == nullptr || now - state.last_sweep >= kRkeySweepInterval) {
    state.last_sweep = now;
    for (auto& e : state.rkeys) {
      if (e != nullptr && e.get() != entry && e->in_use == 0 && released(*e)) DestroyRkey(e);
    }
  }
  std::erase(state.rkeys, nullptr);
  if (entry == nullptr) {
    if (absl::Status s = CheckPackedRkey(w.rkey, max_rkey_bytes); !s.ok()) return s;
    auto pins = SysvSegmentPins::Pin(w.rkey);
    if (!pins.ok()) return pins.status();
    ucp_rkey_h rkey = nullptr;
    ucs_status_t st = ucp_ep_rkey_unpack(state.ep, w.rkey.data(), &rkey);
    if (st != UCS_OK) {
      return MakeError(ErrorCode::kInvalidRkey,
                       absl::StrCat("rkey does not unpack: ", UcxStatusString(st)));
    }
    rkeys_outstanding_.fetch_add(1);
    auto fresh = std::make_unique<CachedRkey>();
    fresh->blob = std::string(w.rkey);
    fresh->rkey = rkey;
    for (absl::string_view e : PackedRkeyEntries(w.rkey)) {
      if (e.size() != kSysvPackedRkeySize) continue;
      uint32_t shmid = 0;
      for (int i = 0; i < 4; ++i) shmid |= uint32_t{static_cast<uint8_t>(e[i])} << (8 * i);
      fresh->shmids.push_back(shmid);
    }
    void* local = nullptr;
    if (ucp_rkey_ptr(rkey, w.address, &local) == UCS_OK) {
      auto mapping = FindForeignSharedMapping(reinterpret_cast<uintptr_t>(local));
      if (!mapping.ok()) {
        DestroyRkey(fresh);
        return mapping.status();
      }
      fresh->maps_local = true;
      fresh->lo = mapping->lo;
      fresh->hi = mapping->hi;
    }
    // Evict the least recently used idle entry beyond the cache size.
    if (state.rkeys.size() >= kRkeyCacheEntries) {
      auto victim = state.rkeys.end();
      for (auto e = state.rkeys.begin(); e != state.rkeys.end(); ++e) {
        if ((*e)->in_use == 0 && (victim == state.rkeys.end() || (*e)->last_use < (*victim)->last_use)) {
          victim = e;
        }
      }
      if (victim != state.rkeys.end()) {
        DestroyRkey(*victim);
        state.rkeys.erase(victim);
      }
    }
    entry = fresh.get();
    state.rkeys.push_back(std::move(fresh));
  }
  // AOBJ-MEM-012: where UCX maps the client's memory here, the whole window must lie inside the
  // client's segment, checked for every window (the mapping stays attached while cached).
  if (entry->maps_local) {
    void* local = nullptr;
    if (ucp_rkey_ptr(entry->rkey, w.address, &local) != UCS_OK) {
      return MakeError(ErrorCode::kDescriptorOutOfBounds,
                       "descriptor window does not lie inside memory shared by the peer");
    }
    const uintptr_t lo = reinterpret_cast<uintptr_t>(local);
    if (lo < entry->lo || lo >= entry->hi || w.length > entry->hi - lo) {
      return MakeError(ErrorCode::kDescriptorOutOfBounds,
                       absl::StrCat("descriptor window of ", w.length,
                                    " bytes does not lie inside memory shared by the peer"));
    }
  }
  ++entry->in_use;
  entry->last_use = ++use_clock_;
  return entry;
}

void UcxWorker::AdvanceJobs() {
  const absl::Time now = absl::Now();
  for (size_t i = 0; i < jobs_.size();) {
    Job& job = *jobs_[i];
    if (job.pending > 0) {
      // AOBJ-OPS-008: RMA is bounded in time and fails TRANSFER_FAILED past the bound.
      if (!job.cancelled && now > job.cmd->deadline) {
        // Cancel what is outstanding; the callbacks still run, so the job ends only when UCX
        // no longer touches local memory.
        job.cancelled = true;
        job.status = MakeError(ErrorCode::kTransferFailed, "RMA timed out");
        for (void* r : std::vector<void*>(job.requests)) ucp_request_cancel(worker_, r);
      }
      ++i;
      continue;
    }
    if (job.flush_request != nullptr) {
      ucs_status_t st = ucp_request_check_status(job.flush_request);
      if (st == UCS_INPROGRESS) {
        ++i;
        continue;
      }
      if (st != UCS_OK && job.status.ok()) job.status = TransferError("flush", st);
      ucp_request_free(job.flush_request);
      job.flush_request = nullptr;
    } else if (!job.flushing && job.status.ok() &&
               job.cmd->batch->direction == RmaDirection::kWrite) {
      // AOBJ-DAT-001: a completed put is not yet remotely visible; flush before replying.
      job.flushing = true;
      ucp_request_param_t param{};
      ucs_status_ptr_t req = ucp_ep_flush_nbx(job.ep, &param);
      if (UCS_PTR_IS_ERR(req)) {
        job.status = TransferError("flush", UCS_PTR_STATUS(req));
      } else if (req != nullptr) {
        job.flush_request = req;
        ++i;
        continue;
      }
    }
    FinishJob(job, job.status);
    jobs_.erase(jobs_.begin() + static_cast<long>(i));
  }
}

void UcxWorker::Loop() {
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
        case Command::kConnect: {
          ucp_ep_params_t params{};
          params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                              UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
          params.address = reinterpret_cast<const ucp_address_t*>(cmd->peer_address.data());
          // AOBJ-TRN-003: mode NONE keeps UCX's shared-memory RMA lanes (PEER excludes them in
          // UCX 1.13.1); peer failure is detected by the session lease.
          params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
          ucp_ep_h ep = nullptr;
          ucs_status_t st = ucp_ep_create(worker_, &params, &ep);
          if (st != UCS_OK) {
            cmd->status = MakeError(ErrorCode::kDataChannelUnavailable,
                                    absl::StrCat("cannot reach the client's UCX worker: ",
                                                 UcxStatusString(st)));
          } else {
            cmd->new_endpoint = next_endpoint_++;
            endpoints_[cmd->new_endpoint].ep = ep;
            endpoint_count_.fetch_add(1);
          }
          cmd->done.Notify();
          break;
        }
        case Command::kProtection: {
          auto it = endpoints_.find(cmd->endpoint);
          if (it == endpoints_.end()) {
            cmd->status = MakeError(ErrorCode::kDataChannelUnavailable, "no endpoint");
          } else {
            char* text = nullptr;
            size_t size = 0;
            FILE* f = open_memstream(&text, &size);
            ucp_ep_print_info(it->second.ep, f);
            fclose(f);
            std::string info(text, size);
            free(text);
            // Software RMA: UCX's tcp, shared memory and self transports (shared/FACTS.md).
            bool emulated = false;
            for (const char* tl : {"tcp/", "sysv/", "posix/", "cma/", "self/", "xpmem/", "knem/",
                                   "rma_am"}) {
              if (absl::StrContains(info, tl)) emulated = true;
            }
            cmd->protection = emulated ? Protection::kEmulated : Protection::kHardware;
          }
          cmd->done.Notify();
          break;
        }
        case Command::kDisconnect: {
          auto it = endpoints_.find(cmd->endpoint);
          if (it != endpoints_.end()) {
            ucp_ep_h ep = it->second.ep;
            // AOBJ-MEM-023: the session is over: its cached rkeys go before the endpoint (no job of a
            // closed session is in flight; the session table waits for them).
            for (auto& entry : it->second.rkeys) DestroyRkey(entry);
            endpoints_.erase(it);
            endpoint_count_.fetch_sub(1);
            ucp_request_param_t param{};
            ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &param);
            if (req != nullptr && !UCS_PTR_IS_ERR(req)) {
              // Progress the close for a bounded time; a close that does not finish is left to
              // UCX (the endpoint is already out of our table, so nothing can use it).
              while (ucp_request_check_status(req) == UCS_INPROGRESS &&
                     absl::Now() < cmd->deadline) {
                ucp_worker_progress(worker_);
              }
              if (ucp_request_check_status(req) != UCS_INPROGRESS) {
                ucp_request_free(req);
              } else {
                closing_.push_back(req);
              }
            }
          }
          cmd->done.Notify();
          break;
        }
        case Command::kExecute:
          StartJob(cmd);
          break;
      }
    }
    if (stopping && jobs_.empty()) break;

    unsigned progressed = ucp_worker_progress(worker_);
    AdvanceJobs();
    for (size_t i = 0; i < closing_.size();) {
      if (ucp_request_check_status(closing_[i]) != UCS_INPROGRESS) {
        ucp_request_free(closing_[i]);
        closing_.erase(closing_.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
    if (progressed != 0 || !jobs_.empty() || spin_->load(std::memory_order_relaxed) > 0) continue;

    // Idle: sleep on the worker's event fd and our wake fd (AOBJ-TRN-004).
    ucs_status_t st = ucp_worker_arm(worker_);
    if (st == UCS_ERR_BUSY) continue;
    epoll_event events[2];
    const int timeout_ms = closing_.empty() ? -1 : 10;
    int n = epoll_wait(epoll_fd_, events, 2, timeout_ms);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == wake_fd_) {
        uint64_t v;
        ssize_t r = read(wake_fd_, &v, sizeof(v));
        (void)r;
      }
    }
  }
  // Shutting down: close the remaining endpoints without waiting on peers.
  for (auto& [id, state] : endpoints_) {
    for (auto& entry : state.rkeys) {
      if (entry != nullptr) DestroyRkey(entry);
    }
    ucp_ep_h ep = state.ep;
    ucp_request_param_t param{};
    ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &param);
    const absl::Time deadline = absl::Now() + absl::Milliseconds(500);
    while (req != nullptr && !UCS_PTR_IS_ERR(req) &&
           ucp_request_check_status(req) == UCS_INPROGRESS && absl::Now() < deadline) {
      ucp_worker_progress(worker_);
    }
    if (req != nullptr && !UCS_PTR_IS_ERR(req) &&
        ucp_request_check_status(req) != UCS_INPROGRESS) {
      ucp_request_free(req);
    }
  }
  endpoints_.clear();
  endpoint_count_.store(0);
}

}  // namespace aobj
