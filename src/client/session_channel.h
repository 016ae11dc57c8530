// The client's session: one AOBJ/1 session over a gRPC channel, with a UCX worker as the RMA
// target. It opens the session (negotiation, endpoint binding, the fast path), renews it, closes
// it, and carries every signed call: signing, the busy-retry policy, the fast path (spec 8.9),
// and what a lost data channel means (AOBJ-MEM-027). It knows nothing of objects; ClientImpl
// (client_impl.h) builds requests on it.
#ifndef AOBJ_CLIENT_SESSION_CHANNEL_H_
#define AOBJ_CLIENT_SESSION_CHANNEL_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "aobj/client.h"
#include "client/async.h"
#include "control/raw_call.h"
#include "control/rpc.h"
#include "google/protobuf/message.h"
#include "google/protobuf/unknown_field_set.h"
#include "session/signer.h"
#include "transport/ucx_context.h"
#include "transport/ucx_worker.h"
#include "wire/fast_frame.h"

namespace aobj::client_internal {

// The client's busy-retry policy (AOBJ-FLO-003: exponentially increasing, randomized): after
// SLOW_DOWN or TOO_MANY_TRANSFERS, or a repeatable request whose outcome is unknown
// (AOBJ-ERR-011), up to ClientOptions::busy_retries more attempts, the pause before attempt
// n + 1 a random point in the upper half of kFirstPauseUs * 2^n, at most kMaxPauseUs, and never
// past the operation's deadline (SessionChannel::Call). Every part of a multipart upload and
// every call of an asynchronous operation goes through it; nothing else in the client retries.
struct BusyRetryPolicy {
  static constexpr int64_t kFirstPauseUs = 20000;
  static constexpr int64_t kMaxPauseUs = 1000000;
  static constexpr int kMaxDoublings = 10;  // 20 ms << 10 is past the cap: no shift overflows

  // Whether a call of `method` that ended with `reply` is sent again (attempts left aside).
  static bool Retries(Method method, const RawReply& reply);
  // The pause before busy retry `attempt` (0 first).
  static absl::Duration Pause(int attempt);
};

class SessionChannel final : public CancelSender {
 public:
  SessionChannel() = default;
  SessionChannel(const SessionChannel&) = delete;
  SessionChannel& operator=(const SessionChannel&) = delete;
  // Closes the session if it is open, stops renewal, then the worker (whose progress thread
  // calls back into this object).
  ~SessionChannel() override;

  // Creates the UCX context and worker, connects, and opens the session (AOBJ-SES-001):
  // negotiation, the endpoint proof (AOBJ-SES-026), the fast path when offered (AOBJ-DAT-163),
  // and renewal every third of the lease (AOBJ-SES-019).
  absl::Status Open(const ClientOptions& options);

  const SessionInfo& info() const { return info_; }
  bool HasCapability(uint32_t c) const;
  // The context the worker and every registration of this client's buffers belong to.
  UcxContext& context() { return *context_; }

  // Signs and sends one request (AOBJ-AUTH-001/002): the signature covers exactly the bytes
  // that travel. `*no_reply`: the call ended without an AOBJ reply (outcome unknown,
  // AOBJ-ERR-006). `extra_md`: metadata beyond the signature's (which keeps a call on gRPC).
  absl::Status Call(const CallContext& ctx, Method method, const google::protobuf::Message& req,
                    google::protobuf::Message* resp, bool* no_reply = nullptr,
                    std::vector<std::pair<std::string, std::string>> extra_md = {});

  // A PUT or GET (a request whose windows the server reaches by RMA). When it ends without a
  // reply the server may still be moving bytes, so the data channel is shut for good:
  // destroying the worker stops every emulated operation aimed at this client (AOBJ-MEM-014).
  // The same after TRANSFER_FAILED or DATA_CHANNEL_UNAVAILABLE: the server has failed the
  // session's data channel (AOBJ-MEM-027); every later data request fails with
  // DATA_CHANNEL_UNAVAILABLE. A reply with an AOBJ error (CANCELLED and DEADLINE_EXCEEDED
  // included) is a reply: the server sends it only after its last RMA for the request
  // (AOBJ-DAT-155), so the channel stays. `spin`: the request's windows need this side's UCX
  // progress (RequestRegistrations::emulated_windows). It is sent only once fewer data requests
  // are outstanding than the latest reply granted (AOBJ-FLO-010; until the deadline).
  absl::Status DataCall(const CallContext& ctx, Method method, const google::protobuf::Message& req,
                        google::protobuf::Message* resp, bool spin = false);

  // Names a running request of this session on a RenewSession call: in the signed body when
  // CANCEL was negotiated (AOBJ-DAT-160), else in an `aobj-cancel` entry (AOBJ-DAT-156).
  // Failure is not reported: the operation then ends by its deadline.
  void SendCancel(const std::string& nonce) override;

  absl::Status Renew(const CallContext& ctx);
  // Ends the session (AOBJ-SES-020) once; later calls answer OK.
  absl::Status Close(const CallContext& ctx);

 private:
  // One fast request waiting for its reply (spec 8.9), by nonce.
  struct FastWaiter {
    absl::Notification done;
    bool lost = false;  // the data channel went before the reply came
    FastReply reply;
  };

  // Binds the worker to the session over the server's challenges (AOBJ-SES-026); on failure
  // the session is closed.
  absl::Status ConfirmEndpoint(const std::string& session_id, uint32_t challenges);
  // AOBJ-DAT-163, AOBJ-DAT-164: connects the fast path to the address the server gave; when
  // that fails, everything stays on gRPC.
  void ConnectFastPath(const std::string& address);

  // Sends the signed request on the fast path and waits up to `timeout` for its reply, filling
  // `*reply` as rpc_->Call would. False (nothing sent) when the path does not carry it: not
  // negotiated, not a method it carries (AOBJ-DAT-167), extra metadata, too large for a frame
  // (AOBJ-DAT-171), or the data channel is gone.
  bool FastCall(Method method, const std::string& body, const RequestAuth& auth, bool plain,
                absl::Duration timeout, RawReply* reply);
  // On the progress thread (UcxWorker::SetMessageHandler): a reply goes to the request waiting
  // for its nonce; anything else (malformed, unknown or late) is dropped (AOBJ-DAT-169).
  void OnFastReply(absl::string_view message);
  // AOBJ-FLO-010: waits (up to the call's deadline) until fewer data requests are outstanding
  // than the latest grant, then counts one more; ReleaseCredit counts it out and takes the grant
  // of `reply` (a successful data reply; null: none).
  absl::Status AcquireCredit(const CallContext& ctx);
  static constexpr absl::Duration kCreditWaitSlice = absl::Milliseconds(50);
  void ReleaseCredit(const google::protobuf::Message* reply);
  void FailFastWaiters();

  // AOBJ-SES-019: renews every third of the lease on its own thread, so also while a long data
  // request is in flight.
  void RenewLoop();
  void StopRenewer();

  ClientOptions options_;
  SessionInfo info_;
  std::unique_ptr<RequestSigner> signer_;
  std::unique_ptr<UcxContext> context_;
  std::unique_ptr<UcxWorker> worker_;
  std::shared_ptr<grpc::Channel> control_;  // rpc_'s, for its connection state
  std::unique_ptr<RawChannel> rpc_;
  // How often a fast request's wait looks at the control connection.
  static constexpr absl::Duration kFastWatchInterval = absl::Milliseconds(50);
  uint64_t fast_ep_ = 0;  // the worker's endpoint to the server for fast requests; 0: none
  std::atomic<bool> fast_closed_{false};  // Close() ran: no more fast requests
  absl::Mutex fast_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<FastWaiter>> fast_waiters_
      ABSL_GUARDED_BY(fast_mu_);
  absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  bool data_channel_lost_ ABSL_GUARDED_BY(mu_) = false;
  // Credits (spec section 10): data requests this client has sent and not yet seen end, and the
  // grant of the latest successful data reply (0: none yet, max_in_flight). AOBJ-FLO-010: a data
  // request waits until fewer than the grant are outstanding.
  absl::Mutex credit_mu_;
  uint32_t outstanding_ ABSL_GUARDED_BY(credit_mu_) = 0;
  uint32_t granted_ ABSL_GUARDED_BY(credit_mu_) = 0;
  // The server answered SESSION_EXPIRED or NO_SUCH_SESSION: no request names the session again.
  std::atomic<uint32_t> session_gone_{0};  // the ErrorCode, 0 while the session lives
  std::thread renewer_;
};

}  // namespace aobj::client_internal

#endif  // AOBJ_CLIENT_SESSION_CHANNEL_H_
