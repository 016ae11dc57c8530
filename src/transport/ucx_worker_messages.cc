// UcxWorker: active messages: endpoint challenges (spec 5.6) and the fast request path's
// frames (spec 8.9).
#include <sys/epoll.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "transport/address_check.h"
#include "transport/ucx_worker.h"
#include "transport/ucx_worker_internal.h"
#include "wire/signing.h"

namespace aobj {

namespace {

// Registers `cb` with `arg` for active-message ID `id` on `worker`.
absl::Status SetAmHandler(ucp_worker_h worker, unsigned id, ucp_am_recv_callback_t cb, void* arg) {
  ucp_am_handler_param_t am{};
  am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG;
  am.id = id;
  am.cb = cb;
  am.arg = arg;
  const ucs_status_t st = ucp_worker_set_am_recv_handler(worker, &am);
  if (st == UCS_OK) return absl::OkStatus();
  return MakeError(ErrorCode::kDataChannelUnavailable,
                   absl::StrCat("ucp_worker_set_am_recv_handler: ", UcxStatusString(st)));
}

}  // namespace

absl::Status UcxWorker::SetChallengeHandler() {
  // AOBJ-SES-025: endpoint challenges arrive as active messages on the main worker.
  return SetAmHandler(worker_.get(), kEndpointChallengeAmId, &UcxWorker::OnChallenge, this);
}

absl::StatusOr<std::string> UcxWorker::AwaitChallenges(absl::string_view session_id, size_t count,
                                                       absl::Duration timeout) {
  return inbox_.Await(session_id, count, timeout);
}

ucs_status_t UcxWorker::OnChallenge(void* arg, const void* header, size_t header_length, void* data,
                                    size_t length, const ucp_am_recv_param_t* param) {
  (void)header;
  (void)header_length;
  // Peer input: only the exact layout, delivered eagerly, is taken; anything else is dropped.
  EndpointChallenge c;
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 ||
      !ParseEndpointChallenge(data, length, &c)) {
    return UCS_OK;
  }
  static_cast<UcxWorker*>(arg)->inbox_.Add(c);
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
    cmd.Finish(MakeError(ErrorCode::kInternal, "the message worker is started already"));
    return;
  }
  absl::Status refusal = absl::OkStatus();
  int fd = -1;
  WorkerPtr w;
  std::string address;
  if (absl::Status s = MakeWorker(*context_, &w, &address, &fd, &refusal); !s.ok()) {
    cmd.Finish(std::move(s));
    return;
  }
  auto slot = std::make_unique<MessageSlot>(MessageSlot{std::move(cmd.handler)});
  if (absl::Status s = SetAmHandler(w.get(), cmd.am_id, &UcxWorker::OnMessage, slot.get());
      !s.ok()) {
    cmd.Finish(std::move(s));
    return;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  msg_worker_slot_ = std::move(slot);
  msg_worker_ = std::move(w);
  cmd.challenges = std::move(address);
  cmd.Finish();
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
  // The progress thread asleep (the lock free) and nothing queued before this message: sent from
  // here, which spares the progress thread a wake-up (and keeps the queue's order).
  if (progress_mu_.TryLock()) {
    bool direct = false;
    {
      absl::MutexLock l(&mu_);
      if (stopping_) {
        progress_mu_.Unlock();
        return MakeError(ErrorCode::kDataChannelUnavailable, "data channel is shutting down");
      }
      direct = queue_.empty();
    }
    bool in_flight = false;
    if (direct) {
      Command cmd;
      cmd.kind = Command::kSend;
      cmd.endpoint = endpoint;
      cmd.am_id = am_id;
      cmd.payload = std::move(payload);
      DoSend(cmd);
      in_flight = !challenge_sends_.empty();  // still leaving: the progress thread reaps it
    }
    progress_mu_.Unlock();
    if (direct) {
      if (in_flight) Wake();
      return absl::OkStatus();
    }
  }
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
    cmd.Finish(MakeError(ErrorCode::kInternal, "a handler for this ID is set already"));
    return;
  }
  slot = std::make_unique<MessageSlot>(MessageSlot{std::move(cmd.handler)});
  absl::Status status;
  for (ucp_worker_h w : {worker_.get(), shm_worker_.get()}) {
    if (w == nullptr) continue;
    if (absl::Status s = SetAmHandler(w, cmd.am_id, &UcxWorker::OnMessage, slot.get()); !s.ok()) {
      status = std::move(s);
    }
  }
  cmd.Finish(std::move(status));
}

void UcxWorker::DoSend(Command& cmd) {
  auto it = endpoints_.find(cmd.endpoint);
  // AOBJ-DAT-168: nothing goes to an endpoint whose process has not proven the session's key.
  if (it == endpoints_.end() || !it->second.failed.ok() ||
      !(it->second.bound || it->second.outgoing)) {
    messages_dropped_.fetch_add(1);
    return;
  }
  const UcxEndpoint& ep = it->second.shm_ep ? it->second.shm_ep : it->second.net_ep;
  if (!ep) {
    messages_dropped_.fetch_add(1);
    return;
  }
  auto payload = std::make_unique<std::string>(std::move(cmd.payload));
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_AM_SEND_FLAG_EAGER;
  UcxRequest send(
      ucp_am_send_nbx(ep.get(), cmd.am_id, nullptr, 0, payload->data(), payload->size(), &param));
  const ucs_status_t st = send.status();
  if (st == UCS_INPROGRESS) {
    challenge_sends_.push_back({std::move(send), std::move(payload)});
  } else if (st != UCS_OK) {
    messages_dropped_.fetch_add(1);
  }
}

}  // namespace aobj
