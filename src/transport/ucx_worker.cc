#include "transport/ucx_worker.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/shm.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "aobj/status.h"
#include "transport/address_check.h"
#include "transport/peer_rma_guard.h"
#include "transport/rkey_check.h"
#include "transport/shm_guard.h"
#include "wire/crypto.h"
#include "wire/signing.h"

namespace aobj {

struct UcxWorker::Command {
  enum Kind {
    kConnect,
    kDisconnect,
    kExecute,
    kProtection,
    kChallenge,
    kBind,
    kConnectOut,
    kSetHandler,
    kSend,
    kMessageWorker
  } kind;
  // Inputs.
  absl::string_view peer_address;
  absl::string_view session_id;  // kChallenge
  pid_t fifo_creator = 0;        // kConnect
  uint64_t endpoint = 0;
  const RmaBatch* batch = nullptr;
  absl::Time deadline = absl::InfiniteFuture();
  // Execute: lowered by the calling thread when its call is abandoned (absl::ToUnixNanos).
  std::atomic<int64_t> abandon_deadline_ns{INT64_MAX};
  // Outputs, written by the progress thread before `done` is notified.
  absl::Status status;
  uint64_t new_endpoint = 0;
  Protection protection = Protection::kEmulated;
  std::string challenges;  // kChallenge
  uint16_t am_id = 0;      // kSetHandler, kSend
  std::string payload;     // kSend
  MessageHandler handler;  // kSetHandler, kMessageWorker
  FailureHandler on_failure;  // kConnectOut
  absl::Notification done;
};

// One Execute() in progress on the progress thread.
struct UcxWorker::Job {
  std::shared_ptr<Command> cmd;
  uint64_t endpoint = 0;
  std::vector<CachedRkey*> rkeys;  // borrowed from the endpoint's cache, one per window
  size_t pending = 0;           // RMA requests not yet completed
  size_t pending_emu = 0;       // those of them issued on the session's emulation worker
  bool issued = false;          // at least one operation reached UCX
  std::vector<ucp_ep_h> used;   // endpoints it issued operations on (flushed for writes)
  struct Flush {
    ucp_ep_h ep;
    void* request;
  };
  std::vector<Flush> flushes;   // flush requests outstanding
  bool flushing = false;
  bool timed_out = false;
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

namespace {

// Destroys a worker, first unmarking it (AOBJ-SEC-020).
void DestroyWorker(ucp_worker_h worker) {
  ForgetPeerRmaWorker(worker);
  ucp_worker_destroy(worker);
}

// A worker of `context`, its packed address and its event fd. A server context's worker refuses
// peer-initiated RMA before its address exists; `refusal` says whether that could be arranged.
absl::Status MakeWorker(const UcxContext& context, ucp_worker_h* worker, std::string* address,
                        int* efd, absl::Status* refusal) {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SINGLE;  // only the progress thread touches it
  ucs_status_t st = ucp_worker_create(context.get(), &params, worker);
  if (st != UCS_OK) {
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("ucp_worker_create: ", UcxStatusString(st)));
  }
  if (context.serves_peers()) *refusal = RefusePeerRma(*worker);
  ucp_address_t* addr = nullptr;
  size_t addr_len = 0;
  st = ucp_worker_get_address(*worker, &addr, &addr_len);
  if (st == UCS_OK) {
    address->assign(reinterpret_cast<const char*>(addr), addr_len);
    ucp_worker_release_address(*worker, addr);
    st = ucp_worker_get_efd(*worker, efd);
  }
  if (st != UCS_OK) {
    DestroyWorker(*worker);
    *worker = nullptr;
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("ucp_worker_get_address/efd: ", UcxStatusString(st)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<UcxWorker>> UcxWorker::Create(const UcxContext& context,
                                                              std::string name,
                                                              const UcxContext* shm_lane) {
  ucp_worker_h worker = nullptr, shm_worker = nullptr;
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
      DestroyWorker(worker);
      return s;
    }
  }
  int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd < 0 || wake_fd < 0) {
    if (epoll_fd >= 0) close(epoll_fd);
    if (wake_fd >= 0) close(wake_fd);
    DestroyWorker(worker);
    if (shm_worker != nullptr) DestroyWorker(shm_worker);
    return MakeError(ErrorCode::kInternal, absl::StrCat("epoll/eventfd: ", strerror(errno)));
  }
  for (int fd : {worker_fd, shm_fd, wake_fd}) {
    if (fd < 0) continue;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
  // AOBJ-SES-025: endpoint challenges arrive as active messages on the main worker.
  ucp_am_handler_param_t am{};
  am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG;
  am.id = kEndpointChallengeAmId;
  am.cb = &UcxWorker::OnChallenge;
  std::unique_ptr<UcxWorker> w(new UcxWorker(worker, shm_worker,
                                             shm_lane != nullptr ? shm_lane->get() : nullptr,
                                             epoll_fd, wake_fd,
                                             std::move(name), std::move(address),
                                             std::move(shm_address)));
  am.arg = w.get();
  w->context_ = &context;
  w->peer_rma_refusal_ = std::move(refusal);
  const ucs_status_t am_status = ucp_worker_set_am_recv_handler(worker, &am);
  // The thread starts either way: stopping it is what destroys the workers.
  w->thread_ = std::thread([p = w.get()] { p->Loop(); });
  if (am_status != UCS_OK) {
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("ucp_worker_set_am_recv_handler: ", UcxStatusString(am_status)));
  }
  return w;
}

UcxWorker::UcxWorker(ucp_worker_h worker, ucp_worker_h shm_worker, ucp_context_h shm_context,
                     int epoll_fd, int wake_fd, std::string name, std::string address,
                     std::string shm_address)
    : worker_(worker), shm_worker_(shm_worker), shm_context_(shm_context), epoll_fd_(epoll_fd),
      wake_fd_(wake_fd),
      name_(std::move(name)), address_(std::move(address)),
      shm_address_(std::move(shm_address)) {}

UcxWorker::~UcxWorker() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  Wake();
  thread_.join();
  close(epoll_fd_);
  close(wake_fd_);
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
      cmd->status = MakeError(ErrorCode::kDataChannelUnavailable, "data channel is shutting down");
      cmd->done.Notify();
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

absl::StatusOr<std::string> UcxWorker::AwaitChallenges(absl::string_view session_id,
                                                       size_t count, absl::Duration timeout) {
  if (count == 0 || count > kMaxEndpointChallenges) {
    return MakeError(ErrorCode::kInternal,
                     absl::StrCat("the server announced ", count, " endpoint challenges; 1 to ",
                                  kMaxEndpointChallenges, " are allowed"));
  }
  absl::MutexLock l(&challenges_mu_);
  auto find = [&]()
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(challenges_mu_) -> std::deque<Received>::iterator {
    for (auto it = received_.begin(); it != received_.end(); ++it) {
      if (it->session_id != session_id) continue;
      if (it->challenges.size() < count) return received_.end();
      for (size_t i = 0; i < count; ++i) {
        if (it->challenges[i].empty()) return received_.end();
      }
      return it;
    }
    return received_.end();
  };
  auto arrived = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(challenges_mu_) {
    return find() != received_.end();
  };
  challenges_mu_.AwaitWithTimeout(absl::Condition(&arrived), timeout);
  auto it = find();
  if (it == received_.end()) {
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("the server's ", count, " endpoint challenge(s) did not reach "
                                  "this worker within ", absl::FormatDuration(timeout),
                                  " (AOBJ-SES-025)"));
  }
  std::string out;
  for (size_t i = 0; i < count; ++i) out += it->challenges[i];
  received_.erase(it);
  return out;
}

ucs_status_t UcxWorker::OnChallenge(void* arg, const void* header, size_t header_length,
                                    void* data, size_t length, const ucp_am_recv_param_t* param) {
  (void)header;
  (void)header_length;
  // Peer input: only the exact layout, delivered eagerly, is taken; anything else is dropped.
  EndpointChallenge c;
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 ||
      !ParseEndpointChallenge(data, length, &c)) {
    return UCS_OK;
  }
  auto* self = static_cast<UcxWorker*>(arg);
  const absl::string_view id = c.session_id;
  const size_t index = c.index;
  absl::MutexLock l(&self->challenges_mu_);
  auto it = std::find_if(self->received_.begin(), self->received_.end(),
                         [&](const Received& r) { return r.session_id == id; });
  if (it == self->received_.end()) {
    if (self->received_.size() >= kMaxChallengeSessions) self->received_.pop_front();
    self->received_.push_back({std::string(id), {}});
    it = self->received_.end() - 1;
  }
  if (it->challenges.size() <= index) it->challenges.resize(index + 1);
  it->challenges[index] = std::string(c.challenge);
  return UCS_OK;
}

absl::Status UcxWorker::SetMessageHandler(uint16_t am_id, MessageHandler on_message) {
  if (am_id == kEndpointChallengeAmId) {
    return MakeError(ErrorCode::kInternal, "the endpoint challenge's ID is taken");
  }
  auto cmd = std::make_shared<Command>();
  cmd->kind = Command::kSetHandler;
  cmd->am_id = am_id;
  cmd->handler = std::move(on_message);
  Post(cmd);
  return cmd->status;
}

absl::StatusOr<std::string> UcxWorker::StartMessageWorker(uint16_t am_id,
                                                          MessageHandler on_message) {
  auto cmd = std::make_shared<Command>();
  cmd->kind = Command::kMessageWorker;
  cmd->am_id = am_id;
  cmd->handler = std::move(on_message);
  Post(cmd);
  if (!cmd->status.ok()) return cmd->status;
  return std::move(cmd->challenges);  // the new worker's address
}

void UcxWorker::DoMessageWorker(Command& cmd) {
  if (msg_worker_ != nullptr) {
    cmd.status = MakeError(ErrorCode::kInternal, "the message worker is started already");
    cmd.done.Notify();
    return;
  }
  absl::Status refusal = absl::OkStatus();
  int fd = -1;
  ucp_worker_h w = nullptr;
  std::string address;
  cmd.status = MakeWorker(*context_, &w, &address, &fd, &refusal);
  if (cmd.status.ok()) {
    msg_worker_slot_ = std::make_unique<MessageSlot>(MessageSlot{std::move(cmd.handler)});
    ucp_am_handler_param_t am{};
    am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG;
    am.id = cmd.am_id;
    am.cb = &UcxWorker::OnMessage;
    am.arg = msg_worker_slot_.get();
    const ucs_status_t st = ucp_worker_set_am_recv_handler(w, &am);
    if (st != UCS_OK) {
      DestroyWorker(w);
      cmd.status = MakeError(ErrorCode::kDataChannelUnavailable,
                             absl::StrCat("ucp_worker_set_am_recv_handler: ", UcxStatusString(st)));
    } else {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
      msg_worker_ = w;
      cmd.challenges = std::move(address);
    }
  }
  cmd.done.Notify();
}

absl::StatusOr<uint64_t> UcxWorker::ConnectForMessages(absl::string_view peer_address,
                                                       FailureHandler on_failure) {
  if (absl::Status s = CheckWorkerAddress(peer_address, address_); !s.ok()) return s;
  auto cmd = std::make_shared<Command>();
  cmd->kind = Command::kConnectOut;
  cmd->peer_address = peer_address;
  cmd->on_failure = std::move(on_failure);
  Post(cmd);
  if (!cmd->status.ok()) return cmd->status;
  return cmd->new_endpoint;
}

absl::Status UcxWorker::SendMessage(uint64_t endpoint, uint16_t am_id, std::string payload) {
  auto cmd = std::make_shared<Command>();
  cmd->kind = Command::kSend;
  cmd->endpoint = endpoint;
  cmd->am_id = am_id;
  cmd->payload = std::move(payload);
  {
    absl::MutexLock l(&mu_);
    if (stopping_) {
      return MakeError(ErrorCode::kDataChannelUnavailable, "data channel is shutting down");
    }
    queue_.push_back(std::move(cmd));
  }
  Wake();
  return absl::OkStatus();
}

ucs_status_t UcxWorker::OnMessage(void* arg, const void* header, size_t header_length, void* data,
                                  size_t length, const ucp_am_recv_param_t* param) {
  (void)header;
  (void)header_length;
  // Peer input: only eagerly delivered data is taken (the sender's flag says so, AOBJ-DAT-164).
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 || data == nullptr) return UCS_OK;
  static_cast<MessageSlot*>(arg)->on_message(
      absl::string_view(static_cast<const char*>(data), length));
  return UCS_OK;
}

void UcxWorker::DoSetHandler(Command& cmd) {
  auto& slot = message_handlers_[cmd.am_id];
  if (slot != nullptr) {
    cmd.status = MakeError(ErrorCode::kInternal, "a handler for this ID is set already");
    cmd.done.Notify();
    return;
  }
  slot = std::make_unique<MessageSlot>(MessageSlot{std::move(cmd.handler)});
  ucp_am_handler_param_t am{};
  am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG;
  am.id = cmd.am_id;
  am.cb = &UcxWorker::OnMessage;
  am.arg = slot.get();
  for (ucp_worker_h w : {worker_, shm_worker_}) {
    if (w == nullptr) continue;
    const ucs_status_t st = ucp_worker_set_am_recv_handler(w, &am);
    if (st != UCS_OK) {
      cmd.status = MakeError(ErrorCode::kDataChannelUnavailable,
                             absl::StrCat("ucp_worker_set_am_recv_handler: ", UcxStatusString(st)));
    }
  }
  cmd.done.Notify();
}

void UcxWorker::DoSend(Command& cmd) {
  auto it = endpoints_.find(cmd.endpoint);
  // AOBJ-DAT-168: nothing goes to an endpoint whose process has not proven the session's key.
  if (it == endpoints_.end() || !it->second.failed.ok() ||
      !(it->second.bound || it->second.outgoing)) {
    messages_dropped_.fetch_add(1);
    return;
  }
  ucp_ep_h ep = it->second.shm_ep != nullptr ? it->second.shm_ep : it->second.net_ep;
  if (ep == nullptr) {
    messages_dropped_.fetch_add(1);
    return;
  }
  auto payload = std::make_unique<std::string>(std::move(cmd.payload));
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_AM_SEND_FLAG_EAGER;
  ucs_status_ptr_t req =
      ucp_am_send_nbx(ep, cmd.am_id, nullptr, 0, payload->data(), payload->size(), &param);
  if (UCS_PTR_IS_ERR(req)) {
    messages_dropped_.fetch_add(1);
    return;
  }
  if (req != nullptr) challenge_sends_.push_back({req, std::move(payload)});
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

void UcxWorker::StartJob(const std::shared_ptr<Command>& cmd) {
  const RmaBatch& batch = *cmd->batch;
  auto it = endpoints_.find(cmd->endpoint);
  if (it == endpoints_.end()) {
    // AOBJ-DAT-009: no usable data channel is DATA_CHANNEL_UNAVAILABLE, never an inline fallback.
    cmd->status = MakeError(ErrorCode::kDataChannelUnavailable, "no data-channel endpoint");
    cmd->done.Notify();
    return;
  }
  EndpointState& state = it->second;
  if (!state.failed.ok()) {
    // AOBJ-DAT-158: a failed data channel stays failed; the client opens a new session.
    cmd->status = state.failed;
    cmd->done.Notify();
    return;
  }
  if (!state.bound) {
    // AOBJ-SES-027: no RMA to an address whose process has not proven the session's key.
    cmd->status = MakeError(ErrorCode::kEndpointUnconfirmed,
                            "the session's data endpoint is not confirmed: answer the endpoint "
                            "challenges with ConfirmEndpoint first (AOBJ-SES-026)");
    cmd->done.Notify();
    return;
  }
  auto job = std::make_unique<Job>();
  job->cmd = cmd;
  job->endpoint = cmd->endpoint;
  ++state.jobs;

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
    auto entry = AcquireRkey(state, w, batch.max_rkey_bytes);
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
    const CachedRkey& key = *job->rkeys[op.window];
    // The low bit marks an operation of the emulation worker: destroying that worker ends it
    // without a callback (DestroyEmulationWorker), while the PEER endpoint's operations still
    // complete through theirs after its forced close.
    const bool emu = key.ep == state.emu_ep && key.ep != nullptr;
    static_assert(alignof(Job) >= 2);
    param.user_data =
        reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(job.get()) | (emu ? 1u : 0u));
    param.cb.send = [](void* request, ucs_status_t status, void* user_data) {
      const auto bits = reinterpret_cast<uintptr_t>(user_data);
      auto* j = reinterpret_cast<Job*>(bits & ~uintptr_t{1});
      if (status != UCS_OK && j->status.ok()) j->status = TransferError("RMA", status);
      --j->pending;
      if ((bits & 1) != 0) --j->pending_emu;
      ucp_request_free(request);
    };
    if (std::find(job->used.begin(), job->used.end(), key.ep) == job->used.end()) {
      job->used.push_back(key.ep);
    }
    job->issued = true;
    ucs_status_ptr_t req =
        batch.direction == RmaDirection::kWrite
            ? ucp_put_nbx(key.ep, op.local, op.length, op.remote, key.rkey, &param)
            : ucp_get_nbx(key.ep, op.local, op.length, op.remote, key.rkey, &param);
    if (UCS_PTR_IS_ERR(req)) {
      if (job->status.ok()) job->status = TransferError("issue RMA", UCS_PTR_STATUS(req));
      break;
    }
    if (req != nullptr) {
      ++job->pending;
      if (emu) ++job->pending_emu;
    }
  }
  jobs_.push_back(std::move(job));
}

void UcxWorker::FinishJob(Job& job, absl::Status status) {
  // AOBJ-MEM-023: the request no longer uses its rkeys; they stay cached for the session.
  for (CachedRkey* entry : job.rkeys) --entry->in_use;
  job.rkeys.clear();
  if (auto it = endpoints_.find(job.endpoint); it != endpoints_.end()) --it->second.jobs;
  job.cmd->status = std::move(status);
  job.cmd->done.Notify();
}

void UcxWorker::DestroyRkey(std::unique_ptr<CachedRkey>& entry) {
  if (entry->rkey != nullptr) {  // null: released with its emulation worker
    ucp_rkey_destroy(entry->rkey);
    rkeys_outstanding_.fetch_sub(1);
  }
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
    auto pins = SysvSegmentPins::Pin(w.rkey, state.fifo_creator);
    if (!pins.ok()) return pins.status();
    ucp_rkey_h rkey = nullptr;
    ucp_ep_h ep = nullptr;
    ucs_status_t st = UCS_ERR_UNREACHABLE;
    bool unpacked_unmapped = false;  // a valid key for memory the shared-memory lane cannot map
    // AOBJ-TRN-003: the shared-memory lane (mode NONE) takes only windows UCX maps into this
    // process, whose RMA is a memcpy that cannot wait on the peer; emulated windows go to the
    // session's own worker, and everything else to the PEER endpoint, which a bound can
    // force-close.
    if (state.shm_ep != nullptr) {
      st = ucp_ep_rkey_unpack(state.shm_ep, w.rkey.data(), &rkey);
      void* mapped = nullptr;
      if (st == UCS_OK && ucp_rkey_ptr(rkey, w.address, &mapped) == UCS_OK) {
        ep = state.shm_ep;
      } else if (st == UCS_OK) {
        ucp_rkey_destroy(rkey);
        rkey = nullptr;
        unpacked_unmapped = true;
      }
    }
    // AOBJ-TRN-010: emulated windows at shared-memory speed on the session's own worker, which
    // a bound can destroy (DestroyEmulationWorker) where it cannot force-close a NONE endpoint.
    if (ep == nullptr && unpacked_unmapped) {
      if (ucp_ep_h emu = EmulationEp(state); emu != nullptr) {
        st = ucp_ep_rkey_unpack(emu, w.rkey.data(), &rkey);
        if (st == UCS_OK) ep = emu;
      }
    }
    if (ep == nullptr && state.net_ep != nullptr) {
      st = ucp_ep_rkey_unpack(state.net_ep, w.rkey.data(), &rkey);
      if (st == UCS_OK) ep = state.net_ep;
    }
    if (ep == nullptr) {
      if (state.net_ep == nullptr && unpacked_unmapped) {
        return MakeError(ErrorCode::kDataChannelUnavailable,
                         "the window is not in shared memory this server maps, and the session "
                         "has no endpoint with peer-failure detection to reach it");
      }
      return MakeError(ErrorCode::kInvalidRkey,
                       absl::StrCat("rkey does not unpack: ", UcxStatusString(st)));
    }
    rkeys_outstanding_.fetch_add(1);
    auto fresh = std::make_unique<CachedRkey>();
    fresh->blob = std::string(w.rkey);
    fresh->rkey = rkey;
    fresh->ep = ep;
    for (absl::string_view e : PackedRkeyEntries(w.rkey)) {
      if (e.size() != kSysvPackedRkeySize) continue;
      uint32_t shmid = 0;
      for (int i = 0; i < 4; ++i) shmid |= uint32_t{static_cast<uint8_t>(e[i])} << (8 * i);
      fresh->shmids.push_back(shmid);
    }
    void* local = nullptr;
    if (ucp_rkey_ptr(rkey, w.address, &local) == UCS_OK) {
      // AOBJ-MEM-012: the segment this key names, not merely any segment another process made.
      auto mapping = FindForeignSharedMapping(reinterpret_cast<uintptr_t>(local), fresh->shmids);
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
  // AOBJ-MEM-029 for windows reached by emulation: inside the posix segment the key declares
  // (the client's own memory; a key of ordinary memory declares none and is not bounded here).
  if (!entry->maps_local) {
    if (absl::Status s = CheckWindowInDeclaredSegments(entry->blob, w.address, w.length);
        !s.ok()) {
      return s;
    }
  }
  ++entry->in_use;
  entry->last_use = ++use_clock_;
  return entry;
}

void UcxWorker::AdvanceJobs() {
  const absl::Time now = absl::Now();
  const absl::Time drain = absl::FromUnixNanos(drain_deadline_ns_.load());
  for (size_t i = 0; i < jobs_.size();) {
    Job& job = *jobs_[i];
    auto ep_it = endpoints_.find(job.endpoint);
    EndpointState* state = ep_it == endpoints_.end() ? nullptr : &ep_it->second;
    const bool usable = state != nullptr && state->failed.ok();
    for (size_t f = 0; f < job.flushes.size();) {
      ucs_status_t st = ucp_request_check_status(job.flushes[f].request);
      if (st == UCS_INPROGRESS) {
        ++f;
        continue;
      }
      if (st != UCS_OK && job.status.ok()) job.status = TransferError("flush", st);
      ucp_request_free(job.flushes[f].request);
      job.flushes.erase(job.flushes.begin() + static_cast<long>(f));
    }
    // AOBJ-DAT-157: once an operation of the request failed, what it issued earlier may still
    // land (puts complete locally before they are remotely visible) and what is outstanding may
    // never end: the endpoint is failed, which ends it all, before the request is answered.
    if (!job.status.ok() && job.issued && usable) {
      FailEndpoint(job.endpoint, *state, absl::StrCat("an RMA operation failed (",
                                                      job.status.message(), ")"));
    }
    if (job.pending > 0 || !job.flushes.empty()) {
      // AOBJ-OPS-008: every wait is bounded; past the bound the endpoint is failed: its PEER
      // endpoint force-closed (the operations complete with an error) and its own worker
      // destroyed (nothing of it runs again), so the job ends only when UCX no longer touches
      // its local memory.
      const absl::Time deadline =
          std::min({job.cmd->deadline,
                    absl::FromUnixNanos(job.cmd->abandon_deadline_ns.load()), drain});
      if (!job.timed_out && now > deadline) {
        job.timed_out = true;
        const std::string why =
            deadline == drain ? "the server is shutting down"
            : deadline == job.cmd->deadline
                ? "RMA did not complete within the server's bound (the peer stopped "
                  "progressing or is gone)"
                : "the call was abandoned and its RMA did not complete within the grace period";
        if (job.status.ok()) job.status = MakeError(ErrorCode::kTransferFailed, why);
        if (state != nullptr && state->failed.ok()) FailEndpoint(job.endpoint, *state, why);
      }
      ++i;
      continue;
    }
    if (!job.flushing && job.status.ok() && usable &&
        job.cmd->batch->direction == RmaDirection::kWrite) {
      // AOBJ-DAT-001: a completed put is not yet remotely visible; flush before replying.
      job.flushing = true;
      for (ucp_ep_h ep : job.used) {
        ucp_request_param_t param{};
        ucs_status_ptr_t req = ucp_ep_flush_nbx(ep, &param);
        if (UCS_PTR_IS_ERR(req)) {
          job.status = TransferError("flush", UCS_PTR_STATUS(req));
        } else if (req != nullptr) {
          job.flushes.push_back({ep, req});
        }
      }
      continue;  // the same job again: its flushes, or its failure
    }
    if (job.status.ok() && !usable) {
      job.status = state != nullptr ? state->failed
                                    : MakeError(ErrorCode::kDataChannelUnavailable,
                                                "the data-channel endpoint was closed");
    }
    FinishJob(job, job.status);
    jobs_.erase(jobs_.begin() + static_cast<long>(i));
  }
  ReleaseFailedRkeys();
}

void UcxWorker::CloseEp(ucp_ep_h ep, bool force) {
  ucp_request_param_t param{};
  if (force) {
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  }
  ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &param);
  if (req != nullptr && !UCS_PTR_IS_ERR(req)) {
    closing_.push_back({req, absl::Now() + absl::Seconds(2)});
  }
}

void UcxWorker::FailEndpoint(uint64_t id, EndpointState& state, absl::string_view why) {
  if (!state.failed.ok()) return;
  state.failed = MakeError(
      ErrorCode::kDataChannelUnavailable,
      absl::StrCat("the session's data channel failed: ", why,
                   "; open a new session (AOBJ-DAT-158)"));
  endpoints_failed_.fetch_add(1);
  if (state.on_failure) std::exchange(state.on_failure, nullptr)(state.failed);
  // Force: UCX completes every operation still outstanding on it with UCS_ERR_CANCELED, now.
  if (state.net_ep != nullptr) CloseEp(std::exchange(state.net_ep, nullptr), /*force=*/true);
  // Mode NONE cannot be forced (UCX 1.13.1 refuses), and needs not be: its operations are
  // memcpys into mapped memory that completed when they were issued.
  if (state.shm_ep != nullptr) CloseEp(std::exchange(state.shm_ep, nullptr), /*force=*/false);
  DestroyEmulationWorker(id, state);
}

ucp_ep_h UcxWorker::EmulationEp(EndpointState& state) {
  if (state.emu_ep != nullptr) return state.emu_ep;
  if (shm_context_ == nullptr || state.emu_fd == -2 || state.shm_ep == nullptr ||
      emulation_workers_.size() >= kMaxEmulationWorkers) {
    return nullptr;
  }
  // The FIFO this worker will reach must still be the one the session's proof went through
  // (AOBJ-SES-025): the same creator, never a segment made since by someone else.
  pid_t creator = 0;
  if (!CheckPeerFifoSegments(state.peer_address, shm_address_, &creator).ok() ||
      creator == 0 || creator != state.fifo_creator) {
    state.emu_fd = -2;
    return nullptr;
  }
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h w = nullptr;
  int fd = -1;
  if (ucp_worker_create(shm_context_, &wp, &w) != UCS_OK) {
    state.emu_fd = -2;  // do not try again for this session
    return nullptr;
  }
  // Its address reaches the peer through the wireup like any other (AOBJ-SEC-020).
  if (peer_rma_refusal_.ok() && !RefusePeerRma(w).ok()) {
    DestroyWorker(w);
    state.emu_fd = -2;
    return nullptr;
  }
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(state.peer_address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  ucp_ep_h ep = nullptr;
  if (ucp_worker_get_efd(w, &fd) != UCS_OK || ucp_ep_create(w, &params, &ep) != UCS_OK) {
    DestroyWorker(w);
    state.emu_fd = -2;
    return nullptr;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  state.emu_worker = w;
  state.emu_ep = ep;
  state.emu_fd = fd;
  emulation_workers_.push_back(w);
  return ep;
}

void UcxWorker::DestroyEmulationWorker(uint64_t id, EndpointState& state) {
  if (state.emu_worker == nullptr) return;
  // Rkeys come from the worker's pool: they go first (nothing progresses in between, so the
  // operations that named them never run again).
  for (auto& entry : state.rkeys) {
    if (entry != nullptr && entry->ep == state.emu_ep && entry->rkey != nullptr) {
      ucp_rkey_destroy(std::exchange(entry->rkey, nullptr));
      rkeys_outstanding_.fetch_sub(1);
    }
  }
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, state.emu_fd, nullptr);
  // Ends every operation it had in flight: pending ones complete with UCS_ERR_CANCELED, and
  // nothing of the worker runs afterwards, so no operation touches local memory again.
  std::erase(emulation_workers_, state.emu_worker);
  DestroyWorker(std::exchange(state.emu_worker, nullptr));
  const ucp_ep_h gone = std::exchange(state.emu_ep, nullptr);
  state.emu_fd = -2;
  for (auto& job : jobs_) {
    if (job->endpoint != id) continue;
    std::erase_if(job->flushes, [gone](const Job::Flush& f) { return f.ep == gone; });
    // Whatever ran on the destroyed worker is over (its callbacks, if the destruction ran them,
    // already counted themselves out). Operations on the PEER endpoint are not: its forced
    // close completes them through their callbacks, which may come on a later progress call,
    // and the job (their user data) must outlive them.
    job->pending -= job->pending_emu;
    job->pending_emu = 0;
    if (job->status.ok()) {
      job->status = MakeError(ErrorCode::kTransferFailed, "the session's data channel failed");
    }
  }
}

void UcxWorker::ReleaseFailedRkeys() {
  for (auto it = endpoints_.begin(); it != endpoints_.end();) {
    EndpointState& state = it->second;
    if (state.failed.ok() || state.jobs != 0) {
      ++it;
      continue;
    }
    for (auto& entry : state.rkeys) DestroyRkey(entry);
    state.rkeys.clear();
    if (state.disconnected) {
      endpoints_.erase(it++);
      endpoint_count_.fetch_sub(1);
    } else {
      ++it;
    }
  }
}

void UcxWorker::OnPeerError(void* arg, ucp_ep_h ep, ucs_status_t status) {
  // Called from ucp_worker_progress on the progress thread; the endpoint is failed right after
  // progress returns (closing it inside UCX's own callback is not allowed).
  auto* self = static_cast<UcxWorker*>(arg);
  self->peer_errors_.push_back({ep, status});
}

void UcxWorker::DoConnect(Command& cmd) {
  EndpointState state;
  std::string why;
  // AOBJ-TRN-003: network lanes in error mode PEER (keepalive; a bound can force-close them).
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_USER_DATA;
  params.address = reinterpret_cast<const ucp_address_t*>(cmd.peer_address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &UcxWorker::OnPeerError;
  params.err_handler.arg = nullptr;
  params.user_data = this;
  ucs_status_t st = ucp_ep_create(worker_, &params, &state.net_ep);
  if (st != UCS_OK) {
    state.net_ep = nullptr;
    why = absl::StrCat("network lane: ", UcxStatusString(st));
  }
  // The shared-memory lane in mode NONE (PEER would exclude shared memory in UCX 1.13.1).
  if (shm_worker_ != nullptr) {
    ucp_ep_params_t shm{};
    shm.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    shm.address = params.address;
    shm.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    st = ucp_ep_create(shm_worker_, &shm, &state.shm_ep);
    if (st != UCS_OK) {
      state.shm_ep = nullptr;
      absl::StrAppend(&why, why.empty() ? "" : "; ", "shared-memory lane: ", UcxStatusString(st));
    }
  }
  if (state.net_ep == nullptr && state.shm_ep == nullptr) {
    cmd.status = MakeError(ErrorCode::kDataChannelUnavailable,
                           absl::StrCat("cannot reach the client's UCX worker: ", why));
  } else {
    state.peer_address = std::string(cmd.peer_address);
    state.fifo_creator = cmd.fifo_creator;
    cmd.new_endpoint = next_endpoint_++;
    endpoints_.emplace(cmd.new_endpoint, std::move(state));
    endpoint_count_.fetch_add(1);
  }
  cmd.done.Notify();
}

void UcxWorker::DoConnectOut(Command& cmd) {
  EndpointState state;
  // Messages go on an endpoint in mode NONE, which may use shared memory (PEER would exclude it
  // in UCX 1.13.1). A second endpoint in mode PEER carries nothing: it is there so that a server
  // side that goes away (its process died, the server restarted) fails the pair (a reset
  // connection, keepalive) instead of leaving requests to their deadlines.
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(cmd.peer_address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  ucs_status_t st = ucp_ep_create(worker_, &params, &state.shm_ep);
  if (st != UCS_OK) {
    cmd.status =
        MakeError(ErrorCode::kDataChannelUnavailable,
                  absl::StrCat("cannot reach the server's UCX worker: ", UcxStatusString(st)));
    cmd.done.Notify();
    return;
  }
  ucp_ep_params_t watch{};
  watch.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                     UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_USER_DATA;
  watch.address = params.address;
  watch.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  watch.err_handler.cb = &UcxWorker::OnPeerError;
  watch.err_handler.arg = nullptr;
  watch.user_data = this;
  if (ucp_ep_create(worker_, &watch, &state.net_ep) != UCS_OK) state.net_ep = nullptr;
  state.outgoing = true;
  state.on_failure = std::move(cmd.on_failure);
  state.peer_address = std::string(cmd.peer_address);
  cmd.new_endpoint = next_endpoint_++;
  endpoints_.emplace(cmd.new_endpoint, std::move(state));
  endpoint_count_.fetch_add(1);
  cmd.done.Notify();
}

void UcxWorker::DoChallenge(Command& cmd) {
  auto it = endpoints_.find(cmd.endpoint);
  if (it == endpoints_.end() || !it->second.failed.ok()) {
    cmd.status = MakeError(ErrorCode::kDataChannelUnavailable, "no endpoint");
    cmd.done.Notify();
    return;
  }
  // One challenge per lane that can carry RMA: an address may name different processes on
  // different transports, and each must prove itself (AOBJ-SES-025).
  uint8_t index = 0;
  for (ucp_ep_h ep : {it->second.net_ep, it->second.shm_ep}) {
    if (ep == nullptr) continue;
    std::string challenge = RandomBytes(kEndpointChallengeBytes);
    auto payload = std::make_unique<std::string>(std::string(cmd.session_id));
    payload->push_back(static_cast<char>(index));
    payload->append(challenge);
    ucp_request_param_t param{};
    ucs_status_ptr_t req =
        ucp_am_send_nbx(ep, kEndpointChallengeAmId, nullptr, 0, payload->data(), payload->size(),
                        &param);
    if (UCS_PTR_IS_ERR(req)) {
      cmd.status = MakeError(ErrorCode::kDataChannelUnavailable,
                             absl::StrCat("cannot send the endpoint challenge: ",
                                          UcxStatusString(UCS_PTR_STATUS(req))));
      cmd.done.Notify();
      return;
    }
    if (req != nullptr) challenge_sends_.push_back({req, std::move(payload)});
    cmd.challenges += challenge;
    ++index;
  }
  cmd.done.Notify();
}

void UcxWorker::DoBind(Command& cmd) {
  auto it = endpoints_.find(cmd.endpoint);
  if (it == endpoints_.end() || !it->second.failed.ok()) {
    cmd.status = MakeError(ErrorCode::kDataChannelUnavailable, "no endpoint");
  } else {
    it->second.bound = true;
  }
  cmd.done.Notify();
}

void UcxWorker::DoProtection(Command& cmd) {
  auto it = endpoints_.find(cmd.endpoint);
  if (it == endpoints_.end() || !it->second.failed.ok()) {
    cmd.status = MakeError(ErrorCode::kDataChannelUnavailable, "no endpoint");
    cmd.done.Notify();
    return;
  }
  std::string info;
  for (ucp_ep_h ep : {it->second.net_ep, it->second.shm_ep}) {
    if (ep == nullptr) continue;
    char* text = nullptr;
    size_t size = 0;
    FILE* f = open_memstream(&text, &size);
    ucp_ep_print_info(ep, f);
    fclose(f);
    info.append(text, size);
    free(text);
  }
  // Software RMA: UCX's tcp, shared memory and self transports (shared/FACTS.md).
  bool emulated = false;
  for (const char* tl : {"tcp/", "sysv/", "posix/", "cma/", "self/", "xpmem/", "knem/",
                         "rma_am"}) {
    if (absl::StrContains(info, tl)) emulated = true;
  }
  cmd.protection = emulated ? Protection::kEmulated : Protection::kHardware;
  cmd.done.Notify();
}

void UcxWorker::DoDisconnect(Command& cmd) {
  auto it = endpoints_.find(cmd.endpoint);
  if (it != endpoints_.end() && it->second.jobs > 0) {
    // A batch still runs (its session was closed under it): fail the endpoint, which ends the
    // batch; the state goes when its last batch has (ReleaseFailedRkeys).
    FailEndpoint(it->first, it->second, "the session was closed");
    it->second.disconnected = true;
  } else if (it != endpoints_.end()) {
    // AOBJ-MEM-023: the session is over: its cached rkeys go before the endpoints (no job of a
    // closed session is in flight; the session table waits for them).
    for (auto& entry : it->second.rkeys) DestroyRkey(entry);
    // Nothing is in flight, so a flushing close of the PEER endpoint has nothing to wait for
    // and finishes in the background (closing_), like the NONE endpoint's. Not forced: UCX
    // 1.13.1's TCP transport aborts the process (tcp_ep.c:478, uct_tcp_ep_destroy_progress)
    // when a forced close meets a client that is tearing down its worker at the same moment,
    // which every session that closes and exits at once risks since the endpoint challenge
    // travels on this lane (seen in CI and by conformance mem/7.4/3 under load: 7 of 40 runs
    // forced, 0 of 100 flushed). Failures still force (FailEndpoint): they must end operations.
    if (it->second.net_ep != nullptr) CloseEp(it->second.net_ep, /*force=*/false);
    if (it->second.shm_ep != nullptr) CloseEp(it->second.shm_ep, /*force=*/false);
    DestroyEmulationWorker(it->first, it->second);
    endpoints_.erase(it);
    endpoint_count_.fetch_sub(1);
  }
  cmd.done.Notify();
}

void UcxWorker::Sleep(int timeout_ms) {
  // An event fd that stays readable without UCX making progress (seen with a peer that stopped
  // progressing on a TCP lane) would make epoll return at once forever: after a few such
  // wake-ups in a row, wait on our own wake fd only, with a timer, until progress resumes.
  // The same for ucp_worker_arm answering BUSY again and again with nothing to progress (seen
  // after a peer's endpoint failed: a keepalive timer fd that stays readable).
  int fds = spurious_wakeups_ >= 3 ? 0 : 1;
  if (fds != 0) {
    for (ucp_worker_h w : {worker_, shm_worker_, msg_worker_}) {
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
  int n = fds != 0 ? epoll_wait(epoll_fd_, events, 8, timeout_ms) : 0;
  if (fds == 0) {
    pollfd p{wake_fd_, POLLIN, 0};
    n = poll(&p, 1, timeout_ms);
    if (n > 0) {
      events[0].data.fd = wake_fd_;
    }
  }
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
  awaiting_progress_ = woken_by_ucx;
}

void UcxWorker::Loop() {
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

    unsigned progressed = ucp_worker_progress(worker_);
    if (shm_worker_ != nullptr) progressed += ucp_worker_progress(shm_worker_);
    if (msg_worker_ != nullptr) progressed += ucp_worker_progress(msg_worker_);
    for (ucp_worker_h w : emulation_workers_) progressed += ucp_worker_progress(w);
    for (const PeerError& e : std::exchange(peer_errors_, {})) {
      for (auto& [id, state] : endpoints_) {
        if (state.net_ep == e.ep) {
          FailEndpoint(id, state, absl::StrCat("UCX reported the peer failed (",
                                               UcxStatusString(e.status), ")"));
        }
      }
    }
    AdvanceJobs();
    const absl::Time now = absl::Now();
    bool poll_closes = false;
    for (size_t i = 0; i < closing_.size();) {
      if (ucp_request_check_status(closing_[i].request) != UCS_INPROGRESS) {
        ucp_request_free(closing_[i].request);
        closing_.erase(closing_.begin() + static_cast<long>(i));
      } else {
        if (now < closing_[i].poll_until) poll_closes = true;
        ++i;
      }
    }
    for (size_t i = 0; i < challenge_sends_.size();) {
      if (ucp_request_check_status(challenge_sends_[i].request) != UCS_INPROGRESS) {
        ucp_request_free(challenge_sends_[i].request);
        challenge_sends_.erase(challenge_sends_.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
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
      // stalled peer costs no CPU and deadlines are still seen (AOBJ-TRN-004).
      const absl::Duration idle = now - last_progress;
      if (idle < absl::Microseconds(200)) continue;
      Sleep(idle < absl::Milliseconds(100) ? 1 : 10);
      continue;
    }
    // Idle: sleep on the workers' event fds and our wake fd (AOBJ-TRN-004).
    Sleep(poll_closes ? 10 : -1);
  }
  // Shutting down: close the remaining endpoints without waiting on peers, then destroy the
  // workers here, on the thread that owns them: that ends whatever they still had in flight.
  for (auto& [id, state] : endpoints_) {
    if (state.jobs == 0) {
      for (auto& entry : state.rkeys) {
        if (entry != nullptr) DestroyRkey(entry);
      }
    }
    if (state.net_ep != nullptr) CloseEp(state.net_ep, /*force=*/true);
    if (state.shm_ep != nullptr) CloseEp(state.shm_ep, /*force=*/false);
    DestroyEmulationWorker(id, state);
  }
  const absl::Time deadline = absl::Now() + absl::Milliseconds(500);
  while (!closing_.empty() && absl::Now() < deadline) {
    ucp_worker_progress(worker_);
    if (shm_worker_ != nullptr) ucp_worker_progress(shm_worker_);
    for (size_t i = 0; i < closing_.size();) {
      if (ucp_request_check_status(closing_[i].request) != UCS_INPROGRESS) {
        ucp_request_free(closing_[i].request);
        closing_.erase(closing_.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
  }
  // Wireup messages that UCX queued on endpoints it made itself must leave before the worker
  // goes: a client's reply to the server's wireup request travels on one, and UCX 1.13.1 asserts
  // when ucp_worker_destroy purges a pending reply (ucp_request.c:684; seen in CI when the
  // conformance suite closed a session 3 ms after opening it). A flush of the whole worker lets
  // them go, bounded like the closes above.
  if (jobs_.empty()) {
    ucp_request_param_t flush{};
    ucs_status_ptr_t req = ucp_worker_flush_nbx(worker_, &flush);
    if (req != nullptr && !UCS_PTR_IS_ERR(req)) {
      const absl::Time flush_deadline = absl::Now() + absl::Milliseconds(500);
      while (ucp_request_check_status(req) == UCS_INPROGRESS && absl::Now() < flush_deadline) {
        ucp_worker_progress(worker_);
      }
      ucp_request_free(req);
    }
  }
  // A close still in progress is handed back to UCX (it completes it internally); the worker
  // must not be destroyed with requests the application still holds.
  for (const Closing& c : closing_) ucp_request_free(c.request);
  closing_.clear();
  // Their payloads go only after the workers (UCX may read them until then).
  for (ChallengeSend& c : challenge_sends_) ucp_request_free(c.request);
  for (auto& job : jobs_) {
    for (const Job::Flush& f : job->flushes) ucp_request_free(f.request);
    job->flushes.clear();
    job->rkeys.clear();  // their rkeys die with the workers
  }
  DestroyWorker(worker_);
  if (shm_worker_ != nullptr) DestroyWorker(shm_worker_);
  if (msg_worker_ != nullptr) DestroyWorker(msg_worker_);
  worker_ = shm_worker_ = msg_worker_ = nullptr;
  challenge_sends_.clear();
  for (auto& job : jobs_) {
    job->cmd->status = MakeError(ErrorCode::kTransferFailed,
                                 "the server shut down while the transfer was outstanding");
    job->cmd->done.Notify();
  }
  jobs_.clear();
  endpoints_.clear();
  endpoint_count_.store(0);
}

}  // namespace aobj
