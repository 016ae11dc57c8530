// Server: wires the gRPC control channel, the request scheduler, the UCX data channel and the
// lease reaper around RequestHandler.
#include "aobj/server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/support/byte_buffer.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "aobj/status.h"
#include "aobj/v1/aobj.grpc.pb.h"
#include "control/rpc.h"
#include "control/tls.h"
#include "google/protobuf/descriptor.h"
#include "server/confined_channel.h"
#include "server/data_channel.h"
#include "server/fast_path.h"
#include "server/handler.h"
#include "server/listener.h"
#include "server/metrics.h"
#include "server/metrics_http.h"
#include "server/scheduler.h"
#include "session/authenticator.h"
#include "session/session_table.h"
#include "store/bucket_owners.h"
#include "store/multipart.h"
#include "transport/peer_rma_guard.h"
#include "transport/ucx_context.h"
#include "transport/ucx_worker.h"
#include "wire/protocol.h"

namespace aobj {
namespace {

// The call's deadline; gRPC reports "none" as the largest time_point, which does not convert.
absl::Time DeadlineOf(const grpc::ServerContextBase& ctx) {
  const auto deadline = ctx.deadline();
  const auto now = std::chrono::system_clock::now();
  if (deadline - now > std::chrono::hours(24 * 365)) return absl::InfiniteFuture();
  return absl::Now() + absl::FromChrono(deadline - now);
}

std::string MetadataValue(const std::multimap<grpc::string_ref, grpc::string_ref>& md,
                          const char* key) {
  // AOBJ-AUTH-014: a repeated authentication entry makes the request malformed; the value
  // returned here fails the syntax check (AOBJ-AUTH-001).
  if (md.count(key) > 1) return "\x01repeated";
  auto it = md.find(key);
  if (it == md.end()) return "";
  // Bounded: nothing in AOBJ metadata is longer than 128 bytes (AOBJ-AUTH-001).
  return std::string(it->second.data(), std::min<size_t>(it->second.size(), 256));
}

// aobj.v1.ObjectService with every method taking raw bytes, so that the signature is checked
// over exactly the bytes the client sent (AOBJ-AUTH-002).
//
// Every method is served as a bidirectional stream of one message each way, which is what a
// unary call is on the wire. Unlike gRPC's unary handler, which reads the whole request message
// before the handler runs, this reads the message only after the authentication metadata names a
// known access key (AOBJ-SEC-012): a request without it is answered from its headers, and its
// body is never buffered (third hostile probe of issue 16, F4: a flood of unsigned 7 MiB
// requests pushed gRPC's memory quota into cancelling other tenants' calls and sending GOAWAY
// on their connections).
class Service final : public aobj::v1::ObjectService::Service {
 public:
  // Registers a raw handler for every method of the service, matched by name, so the order of
  // rpcs in the .proto and of the Method enum are independent.
  struct ReadBounds {
    size_t max_total = 1024;
    size_t max_per_key = 128;
    absl::Duration deadline = absl::Seconds(20);
    // Messages read at once (each up to 8 MiB in gRPC's memory quota); the other calls wait
    // with only their flow-control window buffered.
    size_t slots = 8;
  };

  Service(RequestHandler* handler, const Authenticator* auth, RequestScheduler* scheduler,
          ReadBounds read_bounds)
      : handler_(handler), auth_(auth), scheduler_(scheduler), read_bounds_(read_bounds) {
    const google::protobuf::ServiceDescriptor* sd =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
            "aobj.v1.ObjectService");
    for (int i = 0; i < sd->method_count(); ++i) {
      const Method method = MethodFromName(sd->method(i)->name());
      auto handler = [this, method] {
        return new grpc::internal::CallbackBidiHandler<grpc::ByteBuffer, grpc::ByteBuffer>(
            [this, method](grpc::CallbackServerContext* ctx) {
              return new Call(this, method, ctx);
            });
      };
      // MarkMethodStreamed sets the method type, so that gRPC reads no message before the
      // reactor asks; MarkMethodRawCallback the callback API. Each takes ownership of (and
      // frees the previous) handler, so each gets its own.
      MarkMethodStreamed(i, handler());
      MarkMethodRawCallback(i, handler());
    }
  }

  // Requests that succeed mark their connection authenticated there (see ControlListener).
  void set_listener(ControlListener* l) { listener_.store(l, std::memory_order_release); }

  // AOBJ-SEC-019: HTTP/2 Rapid Reset (CVE-2023-44487; gRPC 1.51 predates its mitigation; fifth
  // hostile probe of issue 16, B): a client that resets its streams as fast as it opens them
  // makes gRPC create and queue server calls faster than they are finished, and the server's
  // memory grew by 210 MB/s from one unauthenticated connection. A connection whose calls are
  // mostly cancelled by its client (at least kResetsToCut of them, four times as many as it
  // let finish) is cut.
  void NoteCallEnded(const std::string& peer, bool cancelled) {
    bool cut = false;
    {
      absl::MutexLock l(&churn_mu_);
      Churn& c = churn_[peer];
      c.last = absl::Now();
      ++(cancelled ? c.cancelled : c.completed);
      if (!c.cut && c.cancelled >= kResetsToCut && c.cancelled > 4 * c.completed) {
        c.cut = cut = true;
      }
    }
    if (!cut) return;
    if (ControlListener* l = listener_.load(std::memory_order_acquire)) l->CutConnection(peer);
    handler_->LogEvent(absl::StrCat("event=connection_cut reason=reset_streams peer=", peer,
                               " (its client cancelled at least ", kResetsToCut,
                               " calls, four times as many as it let finish)"));
  }

  // AOBJ-SEC-018: ends the calls whose message has not arrived whole within the deadline (called
  // by the server's reaper, every 200 ms).
  void CutSlowReads(absl::Time now) {
    {
      // Connections idle a minute are forgotten (many connections: those idle a second).
      absl::MutexLock l(&churn_mu_);
      const absl::Duration idle = churn_.size() > 65536 ? absl::Seconds(1) : absl::Minutes(1);
      if (now - churn_swept_ > absl::Seconds(10) || churn_.size() > 65536) {
        churn_swept_ = now;
        absl::erase_if(churn_, [&](const auto& e) { return now - e.second.last > idle; });
      }
    }
    std::vector<Call*> late;
    std::vector<Call*> preempted;
    {
      absl::MutexLock l(&reading_mu_);
      for (auto& [call, r] : reading_) {
        if (now - r.started > read_bounds_.deadline) late.push_back(call);
      }
      for (Call* c : late) Strike(c);
      Admit();
      for (size_t i = 0; i < read_bounds_.slots; ++i) {
        Call* p = Preempt();
        if (p == nullptr) break;
        preempted.push_back(p);
      }
    }
    for (Call* c : preempted) {
      c->Cut(MakeError(ErrorCode::kSlowDown,
                       "the server reads a few messages at once, shared between access keys; "
                       "this one arrived too slowly and was ended for another key's request"));
    }
    for (Call* c : late) {
      c->Cut(MakeError(ErrorCode::kDeadlineExceeded,
                       absl::StrCat("the request message did not arrive within ",
                                    absl::FormatDuration(read_bounds_.deadline),
                                    " of its headers")));
    }
  }

 private:
  class Call;
  struct Reading {
    std::string key;  // the access key the call claims
    absl::Time started;
    std::string peer;       // its connection (grpc::ServerContext::peer())
    bool proven = false;    // that connection carried a verified request of `key` before
    bool reading = false;   // holds a read slot (else it waits for one)
    absl::Time slot_since;  // when it got its slot
  };
  struct Churn {
    uint64_t cancelled = 0;
    uint64_t completed = 0;
    bool cut = false;
    absl::Time last;
  };
  static constexpr uint64_t kResetsToCut = 64;
  // A slot is taken from a call only after it has held it this long: a message that arrives at
  // the speed of the connection is read by then.
  static constexpr absl::Duration kSlowReadAfter = absl::Milliseconds(200);
  // A slot held this long without its message is taken for a waiting call of the same key whose
  // connection is not proven either: a message sent with its headers is whole long before.
  static constexpr absl::Duration kStaleHold = absl::Seconds(1);

  // AOBJ-SEC-018: `call` is about to read its message: it waits for a read slot (Admit). Past a
  // bound in number, the oldest registered call of its key (per-key bound) or of the key with
  // the most (total bound) is ended to make room; when none can be, `call` is refused instead:
  // returns false and the caller answers SLOW_DOWN.
  bool StartReading(Call* call, const std::string& key, const std::string& peer, bool proven) {
    Call* victim = nullptr;
    Call* preempted = nullptr;
    {
      absl::MutexLock l(&reading_mu_);
      size_t& mine = reading_per_key_[key];
      const bool key_full = mine >= read_bounds_.max_per_key;
      const bool all_full = reading_.size() >= read_bounds_.max_total;
      if (key_full || all_full) {
        std::string from = key;
        if (!key_full) {
          for (const auto& [k, n] : reading_per_key_) {
            if (n > reading_per_key_[from]) from = k;
          }
        }
        for (const auto& [c, r] : reading_) {
          if (r.key == from && (victim == nullptr || r.started < reading_.at(victim).started)) {
            victim = c;
          }
        }
        if (victim == nullptr) {
          if (mine == 0) reading_per_key_.erase(key);
          return false;
        }
        Strike(victim);
      }
      reading_[call] = Reading{key, absl::Now(), peer, proven};
      ++reading_per_key_[key];
      std::deque<Call*>& q = waiting_[key];
      q.push_back(call);
      if (q.size() == 1 && in_turn_.insert(key).second) turns_.push_back(key);
      Admit();
      preempted = Preempt();
    }
    if (victim != nullptr) {
      victim->Cut(MakeError(ErrorCode::kSlowDown,
                            "too many requests of this access key (or in all) are still sending "
                            "their message; the oldest was ended"));
    }
    if (preempted != nullptr) {
      preempted->Cut(MakeError(ErrorCode::kSlowDown,
                               "the server reads a few messages at once, shared between access "
                               "keys; this one arrived too slowly and was ended for another "
                               "key's request"));
    }
    return true;
  }

  // Gives free read slots to waiting calls, one key after another. Each read is started under
  // the lock, so that no cut reaches a call between its admission and its read; StartRead only
  // queues the operation (in a reactor's constructor it is recorded until gRPC binds the
  // reactor), so no reaction runs here.
  void Admit() ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    while (slots_used_ < read_bounds_.slots && !turns_.empty()) {
      const std::string key = std::move(turns_.front());
      turns_.pop_front();
      auto w = waiting_.find(key);
      if (w == waiting_.end() || w->second.empty()) {
        in_turn_.erase(key);
        if (w != waiting_.end()) waiting_.erase(w);
        continue;
      }
      // Within a key, a call on a connection that carried a verified request of the key goes
      // first; then the call whose connection holds the fewest slots (the oldest of those):
      // whoever forges the key's claim cannot keep the key's own clients waiting behind it
      // (fifth hostile probe of issue 16, A).
      auto pick = w->second.begin();
      std::pair<size_t, size_t> fewest{SIZE_MAX, SIZE_MAX};  // (strikes, slots) of its connection
      for (auto it = w->second.begin(); it != w->second.end(); ++it) {
        const Reading& r = reading_.at(*it);
        if (r.proven) {
          pick = it;
          break;
        }
        auto held = slots_per_conn_.find(r.peer);
        auto struck = strikes_.find(r.peer);
        const std::pair<size_t, size_t> n{struck == strikes_.end() ? 0 : struck->second,
                                          held == slots_per_conn_.end() ? 0 : held->second};
        if (n < fewest) {
          fewest = n;
          pick = it;
        }
      }
      Call* call = *pick;
      w->second.erase(pick);
      if (w->second.empty()) {
        waiting_.erase(w);
        in_turn_.erase(key);
      } else {
        turns_.push_back(key);
      }
      Reading& r = reading_.at(call);
      r.reading = true;
      r.slot_since = absl::Now();
      ++slots_used_;
      ++slots_per_key_[key];
      ++slots_per_conn_[r.peer];
      call->BeginRead();
    }
  }

  // When calls wait and every slot is taken, the key holding the most slots gives up the one it
  // has held longest (at least kSlowReadAfter), if it holds more than one more than a waiting
  // key (a slow sender cannot keep other keys' requests from being read). Returns that call,
  // already forgotten, for the caller to end outside the lock; the freed slot is given out here.
  Call* Preempt() ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    if (slots_used_ < read_bounds_.slots || waiting_.empty()) return nullptr;
    if (Call* c = PreemptWithinKey()) return c;
    size_t fewest_waiting = SIZE_MAX;  // slots held by a key that has a waiting call
    for (const auto& [key, q] : waiting_) {
      if (q.empty()) continue;
      auto it = slots_per_key_.find(key);
      fewest_waiting = std::min(fewest_waiting, it == slots_per_key_.end() ? 0 : it->second);
    }
    if (fewest_waiting == SIZE_MAX) return nullptr;
    const std::string* most = nullptr;
    for (const auto& [key, n] : slots_per_key_) {
      if (most == nullptr || n > slots_per_key_.at(*most)) most = &key;
    }
    if (most == nullptr || slots_per_key_.at(*most) <= fewest_waiting + 1) return nullptr;
    const absl::Time slow = absl::Now() - kSlowReadAfter;
    Call* victim = nullptr;
    for (const auto& [c, r] : reading_) {
      if (r.reading && r.key == *most && r.slot_since < slow &&
          (victim == nullptr || r.slot_since < reading_.at(victim).slot_since)) {
        victim = c;
      }
    }
    if (victim == nullptr) return nullptr;
    Strike(victim);
    Admit();
    return victim;
  }

  // Within one claimed key (fifth hostile probe of issue 16, A: eight header-only calls forging a
  // tenant's claim held every slot, and each of the tenant's requests waited 20 s behind them):
  // a waiting call on a proven connection takes the slot of an unproven holder of its key held
  // kSlowReadAfter; any waiting call takes that of an unproven holder of its key held
  // kStaleHold. A proven holder is never taken for this: its message is the key's own.
  Call* PreemptWithinKey() ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    const absl::Time now = absl::Now();
    // One pass over the registered calls (at most ReadBounds::max_total): the longest-held
    // unproven slot of a key that has a waiting call, past that key's threshold.
    absl::flat_hash_map<std::string, absl::Time> before;  // per waiting key, lazily
    Call* victim = nullptr;
    for (const auto& [c, r] : reading_) {
      if (!r.reading || r.proven) continue;
      auto b = before.find(r.key);
      if (b == before.end()) {
        auto w = waiting_.find(r.key);
        if (w == waiting_.end() || w->second.empty()) continue;
        bool proven_waits = false;
        for (Call* q : w->second) proven_waits = proven_waits || reading_.at(q).proven;
        b = before.emplace(r.key, now - (proven_waits ? kSlowReadAfter : kStaleHold)).first;
      }
      if (r.slot_since < b->second &&
          (victim == nullptr || r.slot_since < reading_.at(victim).slot_since)) {
        victim = c;
      }
    }
    if (victim == nullptr) return nullptr;
    Strike(victim);
    Admit();
    return victim;
  }

  // The call's message arrived (or its read failed). False when it was cut meanwhile: the
  // cutter finishes it.
  bool DoneReading(Call* call) {
    absl::MutexLock l(&reading_mu_);
    if (!reading_.contains(call)) return false;
    Forget(call);
    Admit();
    return true;
  }

  // Forgets a call that is ended for being slow or to make room, and counts it against its
  // connection: within a key, calls of connections with fewer such ends are read first.
  void Strike(Call* call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    auto it = reading_.find(call);
    if (it != reading_.end() && !it->second.proven) {
      if (strikes_.size() > 65536) strikes_.clear();  // many connections: start again
      ++strikes_[it->second.peer];
    }
    Forget(call);
  }

  // Drops `call` from every account: its slot, or its place in its key's queue.
  void Forget(Call* call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    auto it = reading_.find(call);
    const std::string& key = it->second.key;
    if (it->second.reading) {
      --slots_used_;
      auto s = slots_per_key_.find(key);
      if (s != slots_per_key_.end() && --s->second == 0) slots_per_key_.erase(s);
      auto c = slots_per_conn_.find(it->second.peer);
      if (c != slots_per_conn_.end() && --c->second == 0) slots_per_conn_.erase(c);
    } else if (auto w = waiting_.find(key); w != waiting_.end()) {
      auto pos = std::find(w->second.begin(), w->second.end(), call);
      if (pos != w->second.end()) w->second.erase(pos);
      if (w->second.empty()) waiting_.erase(w);  // its turn entry is dropped when reached
    }
    auto k = reading_per_key_.find(key);
    if (k != reading_per_key_.end() && --k->second == 0) reading_per_key_.erase(k);
    reading_.erase(it);
  }

  // One call: created when its headers arrive; deletes itself when gRPC is done with it.
  class Call final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
   public:
    Call(Service* service, Method method, grpc::CallbackServerContext* ctx)
        : service_(service), method_(method), ctx_(ctx), peer_(ctx->peer()) {
      if (method == Method::kCount) {
        Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "method not implemented"));
        return;
      }
      const auto& md = ctx->client_metadata();
      auth_.access_key_id = MetadataValue(md, kMetaAccessKeyId);
      auth_.timestamp = MetadataValue(md, kMetaTimestamp);
      auth_.nonce_hex = MetadataValue(md, kMetaNonce);
      auth_.session_hex = MetadataValue(md, kMetaSessionId);
      auth_.signature_hex = MetadataValue(md, kMetaSignature);
      // AOBJ-SEC-012: a request whose claim already fails (no or malformed authentication, an
      // unknown access key) is answered now, without reading its message: verification fails
      // on the claim before it would look at the body (Authenticator::CheckClaim).
      if (!service_->auth_->CheckClaim(auth_, method != Method::kOpenSession).ok()) {
        Run(std::string());
        return;
      }
      // AOBJ-SEC-018: calls still sending their message are bounded in number and time.
      ControlListener* listener = service_->listener_.load(std::memory_order_acquire);
      const bool proven =
          listener != nullptr && listener->IsAuthenticated(peer_, auth_.access_key_id);
      if (!service_->StartReading(this, auth_.access_key_id, peer_, proven)) {
        Fail(service_->handler_->Refuse(
                 method, auth_,
                 MakeError(ErrorCode::kSlowDown,
                           "too many requests are still sending their message; retry later")),
             nullptr);
        return;
      }
    }

    void BeginRead() { StartRead(&request_); }

    // Ends a call whose message is still being read (StartReading, CutSlowReads): the pending
    // read then completes with ok = false, and OnReadDone leaves the call alone.
    void Cut(const absl::Status& why) {
      Fail(service_->handler_->Refuse(method_, auth_, why), nullptr);
    }

    void OnReadDone(bool ok) override {
      if (!service_->DoneReading(this)) return;  // cut meanwhile: already finished
      if (!ok) {  // no message before the client half-closed, or the call was cancelled
        Fail(MakeError(ErrorCode::kInvalidArgument, "the call carried no request message"),
             nullptr);
        return;
      }
      // Copied out and released here, on gRPC's thread: a slice whose last reference goes on a
      // thread of ours returns its memory to gRPC's quota without gRPC's execution context,
      // which crashes gRPC 1.51 (found by the hostile probe of issue 16: forged 7 MiB requests
      // under memory pressure).
      std::string body;
      body.reserve(request_.Length());
      {
        std::vector<grpc::Slice> slices;
        if (request_.Dump(&slices).ok()) {
          for (const auto& s : slices) {
            body.append(reinterpret_cast<const char*>(s.begin()), s.size());
          }
        }
      }
      request_.Clear();
      // AOBJ-DAT-156, AOBJ-DAT-160: a cancellation must not queue behind the data requests it
      // is meant to stop (they may hold every request thread). A RenewSession never blocks, so
      // it runs here (its cancel entries may be in the signed body, unparsed yet); one larger
      // than any valid one (16 cancel entries) is queued like other requests, so that forged
      // ones cannot make gRPC's threads hash megabytes.
      if (method_ == Method::kRenewSession && body.size() <= kMaxInlineRenewBytes) {
        Run(std::move(body));
        return;
      }
      // AOBJ-SEC-013, AOBJ-SEC-014: queued under the principal it claims, within the bounds.
      const size_t size = body.size();
      absl::Status queued = service_->scheduler_->Submit(
          auth_.access_key_id, size, [this, b = std::move(body)]() mutable { Run(std::move(b)); });
      if (!queued.ok()) Fail(service_->handler_->Refuse(method_, auth_, queued), nullptr);
    }

    // The client went away: a call still waiting for its message is finished here (and its
    // place freed) rather than at the read deadline.
    void OnCancel() override {
      counted_ = true;  // counted now rather than when the call is finally done
      service_->NoteCallEnded(peer_, /*cancelled=*/true);
      if (service_->DoneReading(this)) {
        Finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
      }
    }

    void OnDone() override {
      if (!counted_) service_->NoteCallEnded(peer_, ctx_->IsCancelled());
      delete this;
    }

   private:
    // Handles the request and finishes the call; on a request thread, or on gRPC's.
    void Run(std::string body) {
      // Spec section 3.7, AOBJ-DAT-016: the request sees its call's cancellation and deadline.
      auto call = std::make_shared<CallControl>();
      grpc::CallbackServerContext* ctx = ctx_;
      call->cancelled = [ctx] { return ctx->IsCancelled(); };
      call->deadline = DeadlineOf(*ctx);
      if (method_ == Method::kRenewSession) {
        call->cancel_nonce = MetadataValue(ctx->client_metadata(), kMetaCancel);
      }
      aobj::v1::VersionRange supported;
      absl::StatusOr<std::string> out = service_->handler_->Handle(
          method_, auth_, body, absl::Now(), &supported, call.get());
      if (out.ok()) {
        // This connection carries signed requests: never cut to make room (ControlListener).
        if (ControlListener* l = service_->listener_.load(std::memory_order_acquire)) {
          l->MarkAuthenticated(ctx->peer(), auth_.access_key_id);
        }
        grpc::Slice slice(out->data(), out->size());
        response_ = grpc::ByteBuffer(&slice, 1);
        // AOBJ-CTL-008: no error trailer on success.
        StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
        return;
      }
      const bool version_error = ErrorCodeOf(out.status()) == ErrorCode::kUnsupportedVersion;
      Fail(out.status(), version_error ? &supported : nullptr);
    }

    void Fail(const absl::Status& error, const aobj::v1::VersionRange* supported) {
      std::string trailer;
      grpc::Status gs = ToGrpcStatus(error, &trailer, supported);
      ctx_->AddTrailingMetadata(kErrorTrailer, trailer);
      Finish(gs);
    }

    // A RenewSessionRequest with 16 cancel entries (AOBJ-DAT-161) is 16 * 34 octets.
    static constexpr size_t kMaxInlineRenewBytes = 4096;

    Service* const service_;
    const Method method_;
    grpc::CallbackServerContext* const ctx_;
    const std::string peer_;
    bool counted_ = false;  // by OnCancel, for NoteCallEnded
    RequestAuth auth_;
    grpc::ByteBuffer request_;
    grpc::ByteBuffer response_;
  };

  RequestHandler* handler_;
  const Authenticator* auth_;
  RequestScheduler* scheduler_;
  const ReadBounds read_bounds_;
  std::atomic<ControlListener*> listener_{nullptr};  // set once it is bound
  absl::Mutex churn_mu_;
  absl::flat_hash_map<std::string, Churn> churn_ ABSL_GUARDED_BY(churn_mu_);  // by peer
  absl::Time churn_swept_ ABSL_GUARDED_BY(churn_mu_);
  absl::Mutex reading_mu_;
  absl::flat_hash_map<Call*, Reading> reading_ ABSL_GUARDED_BY(reading_mu_);
  absl::flat_hash_map<std::string, size_t> reading_per_key_ ABSL_GUARDED_BY(reading_mu_);
  // Read slots (ReadBounds::slots): taken in all and per key; the waiting calls of each key in
  // arrival order, and the order in which keys with waiting calls get the next slot.
  size_t slots_used_ ABSL_GUARDED_BY(reading_mu_) = 0;
  absl::flat_hash_map<std::string, size_t> slots_per_key_ ABSL_GUARDED_BY(reading_mu_);
  absl::flat_hash_map<std::string, size_t> slots_per_conn_ ABSL_GUARDED_BY(reading_mu_);
  // Unproven calls of each connection ended for being slow or to make room (Strike).
  absl::flat_hash_map<std::string, size_t> strikes_ ABSL_GUARDED_BY(reading_mu_);
  absl::flat_hash_map<std::string, std::deque<Call*>> waiting_ ABSL_GUARDED_BY(reading_mu_);
  std::deque<std::string> turns_ ABSL_GUARDED_BY(reading_mu_);
  absl::flat_hash_set<std::string> in_turn_ ABSL_GUARDED_BY(reading_mu_);
};

class ServerImpl final : public Server {
 public:
  ~ServerImpl() override { Shutdown(); }

  absl::Status Init(ServerOptions options, std::unique_ptr<ObjectStore> store) {
    options_ = std::move(options);
    store_ = std::move(store);
    // Multipart uploads live beside the store: in memory, or in multipart_root (spec 9.15).
    MultipartLimits mpl;
    if (options_.multipart_min_part_size) mpl.min_part_size = options_.multipart_min_part_size;
    mpl.max_uploads_per_initiator = std::max<size_t>(options_.max_uploads_per_principal, 1);
    mpl.max_parts_per_initiator =
        std::max<uint64_t>(options_.max_upload_parts_per_principal, 1);
    if (options_.upload_expiry_ms > 0) {
      mpl.upload_expiry = absl::Milliseconds(options_.upload_expiry_ms);
    }
    // A store that keeps uploads itself (RadosStore, shared by gateways) provides the manager.
    auto* provider = dynamic_cast<MultipartProvider*>(store_.get());
    auto mp = provider != nullptr
                  ? provider->OpenMultipart(mpl)
                  : MultipartManager::Open(store_.get(), options_.multipart_root, mpl);
    if (!mp.ok()) return mp.status();
    multipart_ = std::move(*mp);
    // Without an explicit choice the server leaves out UCX's posix shared-memory transport:
    // unpacking a posix rkey opens a path the client names and can fail in ways that cannot be
    // checked beforehand, and a failed unpack crashes UCX 1.13.1 (see SysvSegmentPins).
    auto authz =
        BucketAuthorizer::Create(options_.authorization, options_.grants, options_.owners_file,
                                 dynamic_cast<BucketOwnerStore*>(store_.get()));
    if (!authz.ok()) return authz.status();
    authz_ = std::move(*authz);
    // AOBJ-SEC-016: an owner recorded for a bucket that was never created (or whose deletion
    // was not followed by forgetting it) does not outlive a restart.
    authz_->ForgetMissing([this](const std::string& bucket) {
      return ErrorCodeOf(store_->HeadBucket(bucket)) != ErrorCode::kNoSuchBucket;
    }).IgnoreError();
    DataChannelOptions data_channel = options_.data_channel;
    if (data_channel.transports.empty()) data_channel.transports = "^posix";
    const absl::Duration wait_bound =
        absl::Milliseconds(std::max<int64_t>(options_.data_wait_ms, 1));
    if (options_.data_isolation == ServerOptions::DataIsolation::kProcessPerPrincipal) {
      // AOBJ-SEC-021: peers' octets reach only the data-channel processes; none of them may
      // ptrace this one (without CAP_SYS_PTRACE, which they drop, an undumpable process is out
      // of reach of its own user too).
      prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
      ConfinedChannelOptions co;
      co.worker_path = options_.data_worker_path;
      co.transport = data_channel;
      co.wait_bound = wait_bound;
      co.log = options_.log;
      auto channel = NewConfinedDataChannel(co);
      if (!channel.ok()) return channel.status();
      channel_ = std::move(*channel);
    } else {
      auto ctx = UcxContext::CreateForServer(data_channel);
      if (!ctx.ok()) return ctx.status();
      context_ = std::move(*ctx);
      // AOBJ-TRN-003: the shared-memory lane (mode NONE) beside the network lanes (mode PEER).
      auto shm = UcxContext::CreateSharedMemoryLane(data_channel);
      if (!shm.ok()) return shm.status();
      shm_context_ = std::move(*shm);
      auto worker = UcxWorker::Create(*context_, "server", shm_context_.get());
      if (!worker.ok()) return worker.status();
      worker_ = std::move(*worker);
      if (!worker_->peer_rma_refusal().ok() && options_.log) {
        options_.log(
            absl::StrCat("event=warning message=\"data-channel peers can read and write "
                         "this process's memory (AOBJ-SEC-020): ",
                         worker_->peer_rma_refusal().message(), "\""));
      }
      channel_ = NewUcxDataChannel(worker_.get(), wait_bound);
    }
    // Spec 8.9: the fast request path, offered (FAST_PATH) only when the channel starts it.
    if (options_.fast_path) {
      fast_path_ = std::make_unique<FastPathServer>();
      if (!channel_
               ->StartFastPath(
                   [fp = fast_path_.get()](absl::string_view frame, absl::string_view principal) {
                     fp->OnFrame(frame, principal);
                   })
               .ok()) {
        fast_path_.reset();
      }
    }
    auth_ = std::make_unique<Authenticator>(options_.credentials,
                                            absl::Milliseconds(options_.clock_skew_ms));
    sessions_ = std::make_unique<SessionTable>(absl::Milliseconds(options_.lease_ms),
                                               absl::Milliseconds(options_.session_tombstone_ms));
    HandlerConfig hc;
    const Limits& l = options_.limits;
    if (l.max_transfer_bytes) hc.limits.max_transfer_bytes = l.max_transfer_bytes;
    if (l.max_in_flight) hc.limits.max_in_flight = l.max_in_flight;
    if (l.inline_threshold) {
      hc.limits.inline_threshold = std::min<uint64_t>(l.inline_threshold, kMaxInlineThreshold);
    }
    if (l.max_descriptors) hc.limits.max_descriptors = l.max_descriptors;
    if (l.max_rkey_bytes) hc.limits.max_rkey_bytes = l.max_rkey_bytes;
    // AOBJ-DAT-022: CRC32C is always supported.
    hc.capabilities = {kCapInline,     kCapCrc32c, kCapCrc64Nvme, kCapMultiDescriptor,
                       kCapOpaqueEtag, kCapCancel, kCapBatchGet,  kCapBatchPut};
    if (fast_path_ != nullptr) hc.capabilities.push_back(kCapFastPath);
    hc.server_name = options_.server_name;
    hc.list_token_key = options_.list_token_key;
    hc.gateways = options_.gateways;
    hc.max_sessions = options_.max_sessions;
    hc.max_sessions_per_principal = options_.max_sessions_per_principal;
    // Fifth hostile probe of issue 16, C: each session's endpoint holds a descriptor, so under a
    // low descriptor limit one principal's sessions, within its own quota, took every descriptor
    // and new connections of everyone were refused. The session limits are cut to what the
    // limit leaves beside the connections' reserve, and one principal to half of that.
    if (rlimit rl{}; getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
      const long room =
          std::max<long>(2, static_cast<long>(rl.rlim_cur) - 3 * kReservedDescriptors);
      if (static_cast<long>(hc.max_sessions) > room) {
        hc.max_sessions = static_cast<size_t>(room);
        hc.max_sessions_per_principal =
            std::min(hc.max_sessions_per_principal, std::max<size_t>(1, hc.max_sessions / 2));
        if (options_.log) {
          options_.log(absl::StrCat(
              "event=warning message=\"the descriptor limit (", rl.rlim_cur, ") leaves room for ",
              hc.max_sessions, " sessions (", hc.max_sessions_per_principal,
              " per access key), fewer than --max-sessions ", options_.max_sessions,
              "; raise the limit (ulimit -n) for more\""));
        }
      }
    }
    hc.max_key_bytes = std::min<size_t>(options_.max_key_bytes, kMaxKeyBytes);
    hc.max_list_page = std::min<uint32_t>(options_.max_list_page, 1000);
    hc.data_wait_ms = static_cast<uint32_t>(
        std::clamp<int64_t>(options_.data_wait_ms, 1, std::numeric_limits<uint32_t>::max()));
    hc.session_reserve_fds = kReservedDescriptors / 2;  // a backstop to the session limits above
    hc.skew_window_ms = static_cast<uint32_t>(
        std::clamp<int64_t>(options_.clock_skew_ms, 0, std::numeric_limits<uint32_t>::max()));
    hc.min_part_size = mpl.min_part_size;  // what multipart_ enforces, announced
    hc.log = options_.log;
    handler_ = std::make_unique<RequestHandler>(std::move(hc), store_.get(), channel_.get(),
                                                auth_.get(), sessions_.get(), multipart_.get(),
                                                authz_.get());
    SchedulerLimits sl;
    sl.threads = std::max(1, options_.request_threads);
    sl.max_running_per_principal = options_.max_requests_per_principal;
    sl.max_queued = options_.max_queued_requests;
    sl.max_queued_per_principal = options_.max_queued_requests_per_principal;
    sl.max_queued_bytes = options_.max_queued_request_bytes;
    scheduler_ = std::make_unique<RequestScheduler>(sl);
    Service::ReadBounds read_bounds;
    read_bounds.max_total = std::max<size_t>(options_.max_reading_requests, 1);
    read_bounds.max_per_key = std::max<size_t>(options_.max_reading_requests_per_principal, 1);
    read_bounds.deadline =
        absl::Milliseconds(std::clamp<int64_t>(options_.request_read_ms, 1, 30000));
    // Half the quota for messages being read, at 8 MiB each (AOBJ-CTL-005's largest), so that
    // reading never puts gRPC under the memory pressure that makes it close other connections.
    read_bounds.slots = std::max<size_t>(
        4, std::max<uint64_t>(options_.control_memory_bytes, 16 << 20) / (16 << 20));
    service_ = std::make_unique<Service>(handler_.get(), auth_.get(), scheduler_.get(),
                                         read_bounds);
    if (fast_path_ != nullptr) {
      fast_path_->Attach(
          handler_.get(), auth_.get(),
          [sched = scheduler_.get()](absl::string_view principal, uint64_t bytes,
                                     std::function<void()> task) {
            return sched->Submit(principal, bytes, std::move(task));
          },
          sessions_.get(), channel_.get());
    }

    auto creds = MakeServerCredentials(options_.tls, options_.allow_plaintext);
    if (!creds.ok()) return creds.status();
    // Issue 16: our own listener in front of gRPC, which survives descriptor exhaustion.
    auto listener = ControlListener::Bind(options_.listen_address, kReservedDescriptors,
                                          options_.max_connections_per_address);
    if (!listener.ok()) return listener.status();
    listener_ = std::move(*listener);
    port_ = listener_->port();
    service_->set_listener(listener_.get());
    grpc::ServerBuilder builder;
    auto acceptor = builder.experimental().AddExternalConnectionAcceptor(
        grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, *creds);
    // Connections that never finish their handshake, or stay idle, give their descriptor back.
    builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, kHandshakeTimeoutMs);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, kConnectionIdleMs);
    builder.RegisterService(service_.get());
    // AOBJ-SEC-012: what gRPC itself buffers of requests not yet handed over (their messages,
    // before anyone knows who sent them) is bounded by a memory quota; under it gRPC shrinks
    // its flow-control windows, and past it cancels streams.
    grpc::ResourceQuota quota("aobj-control");
    quota.Resize(static_cast<size_t>(std::max<uint64_t>(options_.control_memory_bytes, 16 << 20)));
    builder.SetResourceQuota(quota);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxStreamsPerConnection);
    // Flow-control windows stay at their initial size (no bandwidth-delay probing, which grows
    // them to megabytes): what a stream can push before the server reads it stays small, so
    // calls waiting for a read slot (AOBJ-SEC-018) hold little of the quota.
    builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    // AOBJ-CTL-005: requests are small except inline bodies.
    builder.SetMaxReceiveMessageSize(8 << 20);
    builder.SetMaxSendMessageSize(8 << 20);
    grpc_ = builder.BuildAndStart();
    if (grpc_ == nullptr || port_ == 0) {
      return MakeError(ErrorCode::kInternal,
                       absl::StrCat("cannot listen on ", options_.listen_address));
    }
    listener_->Start(std::move(acceptor));
    reaper_ = std::thread([this] { Reap(); });
    if (!options_.metrics_listen.empty()) {
      auto http = MetricsHttpServer::Start(options_.metrics_listen, options_.metrics_allow_remote,
                                           [this](const std::string& path) { return Observe(path); });
      if (!http.ok()) return http.status();
      metrics_http_ = std::move(*http);
    }
    return absl::OkStatus();
  }

  int port() const override { return port_; }
  int metrics_port() const override { return metrics_http_ ? metrics_http_->port() : 0; }

  void Shutdown() override {
    {
      absl::MutexLock l(&mu_);
      if (shut_down_) return;
      shut_down_ = true;
    }
    metrics_http_.reset();  // its handler reads everything below
    if (listener_) listener_->Stop();  // no new connections from here on
    // AOBJ-OPS-009: transfers end within the grace whatever their peers do; gRPC then cancels
    // what is left of the calls a little later, and the request threads drain.
    const int64_t grace_ms = std::max<int64_t>(options_.shutdown_grace_ms, 0);
    if (channel_) channel_->BeginShutdown(absl::Milliseconds(grace_ms));
    if (grpc_) {
      grpc_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(grace_ms + 1000));
    }
    if (scheduler_) scheduler_->Stop();
    if (fast_path_) fast_path_->Stop();  // no fast request reaches the channel from here on
    if (reaper_.joinable()) reaper_.join();
    // Endpoints still open at shutdown (sessions that never closed) are counted, then closed with
    // the worker; stats() after Shutdown() reports this final picture.
    final_stats_ = stats();
    stopped_ = true;
    channel_.reset();  // closes every endpoint (a confined channel's processes end)
    worker_.reset();
    done_.Notify();
  }

  void Wait() override { done_.WaitForNotification(); }

  ServerStats stats() override {
    // Also the destructor's Shutdown() after an Init() that failed half-way (a bad --grant or
    // owners file): nothing below may exist yet (issue 16: that used to crash at start).
    if (stopped_ || sessions_ == nullptr || channel_ == nullptr || handler_ == nullptr) {
      return final_stats_;
    }
    ServerStats s;
    s.open_sessions = sessions_->open_sessions();
    s.endpoints = channel_->endpoint_count();
    s.rkeys_outstanding = channel_->rkeys_outstanding();
    s.requests = handler_->counters().requests.load();
    s.errors = handler_->counters().errors.load();
    s.bytes_in = handler_->counters().bytes_in.load();
    s.bytes_out = handler_->counters().bytes_out.load();
    const PeerRmaRefusals refused = channel_->peer_rma_refused();
    s.peer_rma_refused = refused.puts + refused.gets + refused.atomics;
    if (fast_path_ != nullptr) {
      const FastPathStats f = fast_path_->stats();
      s.fast_requests = f.received;
      s.fast_dropped = f.malformed + f.unroutable + channel_->fast_messages_dropped();
    }
    return s;
  }

 private:
  // Answers the metrics endpoint (on its thread).
  HttpResponse Observe(const std::string& path) {
    HttpResponse r;
    if (path == "/metrics") {
      MetricsView view;
      view.server_name = options_.server_name;
      view.stats = stats();
      view.transfers_in_flight = sessions_->transfers_in_flight();
      view.scheduler = scheduler_->stats();
      view.methods = &handler_->counters().methods;
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = RenderPrometheus(view);
    } else if (path == "/sessions") {
      r.content_type = "application/json";
      r.body = RenderSessionsJson(sessions_->List(), absl::Now());
    } else {
      r.status = 404;
      r.body = "not found: /metrics or /sessions\n";
    }
    return r;
  }

  // Releases the endpoints of expired and closed sessions (AOBJ-SES-009, AOBJ-SES-010), and
  // aborts expired multipart uploads (AOBJ-OBJ-234) a few times per expiry period.
  void Reap() {
    const absl::Duration expiry = multipart_->limits().upload_expiry;
    const absl::Duration sweep_every =
        std::clamp(expiry / 4, absl::Milliseconds(200), absl::Seconds(60));
    absl::Time next_sweep = absl::Now() + sweep_every;
    for (;;) {
      {
        absl::MutexLock l(&mu_);
        if (mu_.AwaitWithTimeout(absl::Condition(&shut_down_), absl::Milliseconds(200))) return;
      }
      if (expiry != absl::InfiniteDuration() && absl::Now() >= next_sweep) {
        const size_t n = multipart_->ExpireUploads(absl::Now());
        if (n > 0 && options_.log) {
          options_.log(absl::StrCat("event=uploads_expired count=", n));
        }
        next_sweep = absl::Now() + sweep_every;
      }
      handler_->FlushLogSummary();  // AOBJ-OPS-010
      service_->CutSlowReads(absl::Now());  // AOBJ-SEC-018
      for (uint64_t ep : sessions_->Reap(absl::Now())) {
        channel_->Disconnect(ep);
        if (options_.log) options_.log(absl::StrCat("event=endpoint_released endpoint=", ep));
      }
    }
  }

  ServerOptions options_;
  std::unique_ptr<ObjectStore> store_;
  std::unique_ptr<MultipartManager> multipart_;  // borrows store_
  std::unique_ptr<BucketAuthorizer> authz_;
  std::unique_ptr<UcxContext> context_;
  std::unique_ptr<UcxContext> shm_context_;  // null without a shared-memory lane
  std::unique_ptr<UcxWorker> worker_;
  std::unique_ptr<DataChannel> channel_;
  std::unique_ptr<FastPathServer> fast_path_;  // null: not offered
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<SessionTable> sessions_;
  std::unique_ptr<RequestHandler> handler_;
  std::unique_ptr<RequestScheduler> scheduler_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<MetricsHttpServer> metrics_http_;  // borrows everything above
  int port_ = 0;
  // Descriptors kept for the server's own work when connections pile up (issue 16), and the
  // timeouts that give a connection's descriptor back.
  static constexpr int kReservedDescriptors = 64;
  static constexpr int kHandshakeTimeoutMs = 10000;
  static constexpr int kConnectionIdleMs = 120000;
  static constexpr int kMaxStreamsPerConnection = 256;
  std::unique_ptr<ControlListener> listener_;
  std::thread reaper_;
  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::Notification done_;
  std::atomic<bool> stopped_{false};
  ServerStats final_stats_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(ServerOptions options,
                                                      std::unique_ptr<ObjectStore> store) {
  if (store == nullptr) return MakeError(ErrorCode::kInvalidArgument, "no object store");
  if (!options.list_token_key.empty() && options.list_token_key.size() < 16) {
    return MakeError(ErrorCode::kInvalidArgument, "list_token_key must be at least 16 octets");
  }
  if (options.credentials.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "no credentials configured");
  }
  auto server = std::make_unique<ServerImpl>();
  if (absl::Status s = server->Init(std::move(options), std::move(store)); !s.ok()) return s;
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace aobj
