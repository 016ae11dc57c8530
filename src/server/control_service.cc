// The server's gRPC edge (control_service.h).
#include "server/control_service.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/support/byte_buffer.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "aobj/status.h"
#include "control/rpc.h"
#include "google/protobuf/descriptor.h"
#include "server/h2_guard.h"
#include "server/handler.h"
#include "server/listener.h"
#include "server/scheduler.h"
#include "session/authenticator.h"
#include "wire/signing.h"

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
class ServiceImpl final : public ControlService {
 public:
  // Registers a raw handler for every method of the service, matched by name, so the order of
  // rpcs in the .proto and of the Method enum are independent.
  ServiceImpl(RequestHandler* handler, const Authenticator* auth, RequestScheduler* scheduler,
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
  void set_listener(ControlListener* l) override { listener_.store(l, std::memory_order_release); }

  // AOBJ-SEC-019: HTTP/2 Rapid Reset (CVE-2023-44487; gRPC 1.51 predates its mitigation; fifth
  // hostile probe of issue 16, B): a client that resets its streams as fast as it opens them
  // makes gRPC create and queue server calls faster than they are finished, and the server's
  // memory grew by 210 MB/s from one unauthenticated connection. A connection whose calls are
  // mostly cancelled by its client (at least kResetsToCut of them, four times as many as it
  // let finish) is cut.
  void NoteCallEnded(const std::string& peer, bool cancelled) {
    bool cut = false;
    bool log = false;
    uint64_t unlogged = 0;
    {
      absl::MutexLock l(&churn_mu_);
      const absl::Time now = absl::Now();
      Churn& c = churn_[peer];
      c.last = now;
      ++(cancelled ? c.cancelled : c.completed);
      if (!c.cut && c.cancelled >= kResetsToCut && c.cancelled > 4 * c.completed) {
        c.cut = cut = true;
        // At most one line a second: reconnecting attackers are cut thousands of times.
        if (now - last_cut_logged_ >= absl::Seconds(1)) {
          last_cut_logged_ = now;
          log = true;
          unlogged = std::exchange(cuts_unlogged_, 0);
        } else {
          ++cuts_unlogged_;
        }
      }
    }
    if (!cut) return;
    if (ControlListener* l = listener_.load(std::memory_order_acquire)) l->CutConnection(peer);
    if (!log) return;
    handler_->LogEvent(absl::StrCat(
        "event=connection_cut reason=reset_streams peer=", peer, " (its client cancelled at least ",
        kResetsToCut, " calls, four times as many as it let finish)",
        unlogged == 0 ? ""
                      : absl::StrCat(" unlogged_before=", unlogged,
                                     " (connections cut since the last line)")));
  }

  // AOBJ-SEC-018: ends the calls whose message has not arrived whole within the deadline (called
  // by the server's reaper, every 200 ms).
  void CutSlowReads(absl::Time now) override {
    {
      // Connections idle a minute are forgotten (many connections: those idle a second).
      absl::MutexLock l(&churn_mu_);
      const absl::Duration idle = churn_.size() > 65536 ? absl::Seconds(1) : absl::Minutes(1);
      if (now - churn_swept_ > absl::Seconds(10) || churn_.size() > 65536) {
        churn_swept_ = now;
        absl::erase_if(churn_, [&](const auto& e) { return now - e.second.last > idle; });
      }
    }
    std::vector<Call*> late;      // read, or awaited (AOBJ-SEC-029), past the deadline
    std::vector<Call*> unseated;  // calls that waited for a slot until the deadline
    std::vector<Preempted> preempted;
    std::vector<Call*> for_room;  // ended to keep a bound in number
    {
      absl::MutexLock l(&reading_mu_);
      std::vector<Call*> overdue;  // awaited (AOBJ-SEC-029) past kAwaitLate
      for (auto& [call, r] : reading_) {
        if (now - r.started > read_bounds_.deadline) {
          (r.reading || r.late ? late : unseated).push_back(call);
        } else if (r.late && !r.whole && now - r.started > kAwaitLate) {
          overdue.push_back(call);
        }
      }
      for (Call* c : unseated) Strike(c);
      for (Call* c : late) Strike(c, /*slow=*/true);
      for (Call* c : overdue) {
        if (!reading_.contains(c)) continue;  // ended for room by an earlier one's move
        if (Call* v = ToSlotQueue(c)) for_room.push_back(v);
      }
      Admit();
      for (size_t i = 0; i < read_bounds_.slots; ++i) {
        Preempted p = Preempt();
        if (p.call == nullptr) break;
        preempted.push_back(p);
      }
    }
    for (const Preempted& p : preempted) EndPreempted(p);
    for (Call* c : for_room) EndForRoom(c);
    for (Call* c : unseated) {
      c->Cut(MakeError(ErrorCode::kSlowDown,
                       absl::StrCat("the server did not get to read the request message within ",
                                    absl::FormatDuration(read_bounds_.deadline),
                                    " of its headers (too many requests sending theirs); retry")));
    }
    for (Call* c : late) {
      c->Cut(
          MakeError(ErrorCode::kDeadlineExceeded,
                    absl::StrCat("the request message did not arrive within ",
                                 absl::FormatDuration(read_bounds_.deadline), " of its headers")));
    }
  }

 private:
  class Call;
  struct Reading {
    std::string key;  // the access key the call claims
    absl::Time started;
    std::string peer;       // its connection (grpc::ServerContext::peer())
    bool proven = false;    // that connection carried a verified request of `key` before
    // The principal whose verified request its connection carried (AOBJ-SEC-029: its late calls
    // count against that principal, whatever key they claim); empty: none.
    std::string charged;
    bool whole = false;     // its message arrived whole with its headers (AOBJ-SEC-029)
    bool reading = false;   // holds a read slot (else it waits for one)
    absl::Time slot_since;  // when it got its slot
    uint64_t token = 0;     // marked late by the guard with it (AOBJ-SEC-029); 0: not
    // Marked late and not whole when it came: it waits for the guard's report (MessageArrived)
    // without a slot, and counts against the bounds on such calls (late_per_key_, late_total_,
    // and, on a verified connection, charged_late_ and charged_late_total_).
    bool late = false;
  };
  static Reading NewReading(const std::string& key, const std::string& peer, bool proven) {
    Reading r;
    r.key = key;
    r.started = absl::Now();
    r.peer = peer;
    r.proven = proven;
    return r;
  }
  // A slot holder ended for a waiting call (Preempt), and whether for one of its own key.
  struct Preempted {
    Call* call = nullptr;
    bool within_key = false;
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
  // AOBJ-SEC-029: a call marked late whose message has not come this long after its headers
  // waits for a slot as unmarked calls do (ToSlotQueue): a message that is delayed, not lost,
  // comes by then; one that waits for the server's flow-control window (under gRPC's memory
  // quota the window can be smaller than the guard's kWholeWaitOctets) then gets it; and a
  // filler's calls do not stay among the late ones, so their bound fills only at more than
  // ReadBounds::max_late / kAwaitLate of them a second (341 by default).
  static constexpr absl::Duration kAwaitLate = absl::Seconds(3);

  // AOBJ-SEC-018: `call` is about to read its message: it waits for a read slot (Admit). Past a
  // bound in number, the oldest registered call of its key (per-key bound) or of the key with
  // the most (total bound) is ended to make room; when none can be, `call` is refused instead:
  // returns false and the caller answers SLOW_DOWN.
  // AOBJ-SEC-029: a call whose message the guard holds whole (`whole`) is read at once, beside
  // the slots' holders, and is ended for room only when nothing else is left.
  // A call marked late (`token`, AOBJ-SEC-029) whose message came already counts as whole; until
  // it comes, the call takes no slot (AwaitMessage).
  bool StartReading(Call* call, const std::string& key, const std::string& peer,
                    const std::string& verified_as, bool whole, uint64_t token) {
    const bool proven = !verified_as.empty() && verified_as == key;
    Call* victim = nullptr;
    Preempted preempted;
    {
      absl::MutexLock l(&reading_mu_);
      bool large = false;  // the guard found its message large before gRPC made the call
      if (auto a = arrived_.find(token); token != 0 && a != arrived_.end()) {
        (a->second ? whole : large) = true;
        arrived_.erase(a);
      }
      const bool registered = token != 0 && !whole && !large
                                  ? AwaitMessage(call, key, peer, verified_as, token, &victim)
                                  : Register(call, key, peer, proven, whole, &victim);
      if (!registered) return false;
      preempted = Preempt();
    }
    if (victim != nullptr) EndForRoom(victim);
    EndPreempted(preempted);
    return true;
  }

  // StartReading's part for a call that waits for a slot, or is read at once (`whole`).
  bool Register(Call* call, const std::string& key, const std::string& peer, bool proven,
                bool whole, Call** victim_out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    Call*& victim = *victim_out;
    size_t& mine = reading_per_key_[key];
    const bool key_full = mine >= read_bounds_.max_per_key;
    const bool all_full = reading_.size() - late_total_ >= read_bounds_.max_total;
    if (key_full || all_full) {
      victim = RoomVictim(key_full ? key : FullestKey(key));
      if (victim == nullptr) {
        if (mine == 0) reading_per_key_.erase(key);
        return false;
      }
      Strike(victim);
    }
    Reading& r = reading_[call] = NewReading(key, peer, proven);
    r.whole = whole;
    ++reading_per_key_[key];
    Registered(peer);
    if (whole) {
      Seat(call);
    } else {
      Enqueue(call, key);
      Admit();
    }
    return true;
  }

  // The key with the most calls waiting for or holding a slot (`key` among equals).
  std::string FullestKey(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    std::string from = key;
    for (const auto& [k, n] : reading_per_key_) {
      if (n > CountOf(reading_per_key_, from)) from = k;
    }
    return from;
  }

  // AOBJ-SEC-018's bounds in number: of `key`'s calls that wait for or hold a slot, the oldest of
  // the connection ranking last (RankOf; a proven one, or one whose message is whole, only when
  // there is nothing else): a filler that keeps opening calls loses its own before a new
  // client's single call (twelfth hostile probe, F1; before, the oldest of the key went,
  // whoever's it was). Null when the key has none.
  Call* RoomVictim(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    auto rank = [&](const Reading& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
      return std::make_tuple(!(r.proven || r.whole), RankOf(r.peer), -absl::ToUnixNanos(r.started));
    };
    Call* victim = nullptr;
    for (const auto& [c, r] : reading_) {
      if (r.key == key && !r.late && (victim == nullptr || rank(r) > rank(reading_.at(victim)))) {
        victim = c;
      }
    }
    return victim;
  }

  // AOBJ-SEC-029: a call marked late whose message has not come yet waits for the guard's report
  // (MessageArrived) without taking a read slot: a slot given to it would be held, or taken back
  // after kSlowReadAfter, while its message was still coming (sixteenth hostile probe, L1). Such
  // calls have a bound of their own (ReadBounds::max_late), set above what unverified connections
  // can hold at once, so that a filler of them never fills it (sixteenth hostile probe, M1:
  // among the slot queue's 128 per key, a filler's calls at 200 a second ended a new client's
  // call split by 1 s before its message came; eighteenth, A1: ended oldest of equals when full,
  // a client's call lived max_late / R s beside R filler calls a second from many addresses).
  // What could fill it is calls on verified connections. Each of those counts against the
  // principal whose verified request its connection carried, whatever key it claims, bounded per
  // principal (max_per_key) and in all (max_total): a tenant cannot shield calls of its own
  // behind others' (seventeenth hostile probe, N1: header-only calls on the attacker's verified
  // connections, never ended, filled the bound beside a filler), several tenants cannot fill it
  // together (nineteenth, B1: sixteen keys' 128 each), and neither can one tenant's calls claiming
  // other tenants' key IDs, which no bound of a claimed key counted (twentieth, S1: one
  // credential, 32 or even 3 claimed IDs, and 9-13 of 13 new clients split by 1.5 s were ended).
  // Past a principal's bound, the call of that principal (or, past the bound in all, of the
  // principal with the most) that ranks last goes: its calls claiming other keys before its
  // own. Should the bound on all late calls still fill (calls registered before their
  // connection verified count as unverified ones until they end), the late call that ranks last
  // of all goes, before any of a key's with fewer late calls among equals, the oldest of
  // equals: a new client's first call ranks before every call of a connection that carried
  // more. A call whose report never comes is ended at the read deadline with DEADLINE_EXCEEDED
  // (CutSlowReads).
  bool AwaitMessage(Call* call, const std::string& key, const std::string& peer,
                    const std::string& charged, uint64_t token, Call** victim_out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    Call*& victim = *victim_out;
    const bool proven = !charged.empty() && charged == key;
    const bool principal_full =
        !charged.empty() && CountOf(charged_late_, charged) >= read_bounds_.max_per_key;
    const bool charged_full =
        !charged.empty() && (principal_full || charged_late_total_ >= read_bounds_.max_total);
    if (charged_full || late_total_ >= read_bounds_.max_late) {
      std::string from = charged;  // charged_full: the principal whose call goes
      if (charged_full && !principal_full) {
        for (const auto& [k, n] : charged_late_) {
          if (n > CountOf(charged_late_, from)) from = k;
        }
      }
      auto rank = [&](const Reading& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
        return std::make_tuple(!r.proven, RankOf(r.peer), CountOf(late_per_key_, r.key),
                               -absl::ToUnixNanos(r.started));
      };
      for (const auto& [c, r] : reading_) {
        if (r.late && !r.whole && (!charged_full || r.charged == from) &&
            (victim == nullptr || rank(r) > rank(reading_.at(victim)))) {
          victim = c;
        }
      }
      if (victim == nullptr) return false;  // every one of them is being read
      Strike(victim);
    }
    Reading& r = reading_[call] = NewReading(key, peer, proven);
    r.token = token;
    r.late = true;
    r.charged = charged;
    by_token_[token] = call;
    ++late_per_key_[key];
    if (!charged.empty()) {
      ++charged_late_[charged];
      ++charged_late_total_;
    }
    ++late_total_;
    Registered(peer);
    return true;
  }

  // `key`'s entry in a count per key; 0 when it has none.
  static size_t CountOf(const absl::flat_hash_map<std::string, size_t>& counts,
                        const std::string& key) {
    auto it = counts.find(key);
    return it == counts.end() ? 0 : it->second;
  }

  // Counts a call registered on `peer` (RankOf).
  void Registered(const std::string& peer) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    ++calls_per_conn_[peer];
    if (calls_ever_.size() > 65536) calls_ever_.clear();  // many connections: start again
    ++calls_ever_[peer];
  }

  static void EndForRoom(Call* victim) {
    victim->Cut(MakeError(ErrorCode::kSlowDown,
                          "too many requests of this access key (or in all) are still sending "
                          "their message; the oldest was ended"));
  }

  static void EndPreempted(const Preempted& p) {
    if (p.call == nullptr) return;
    p.call->Cut(MakeError(
        ErrorCode::kSlowDown,
        p.within_key ? "the server reads a few messages at once; this one arrived too slowly and "
                       "was ended for another request of the same access key"
                     : "the server reads a few messages at once, shared between access keys; "
                       "this one arrived too slowly and was ended for another key's request"));
  }

  // `call` waits in its key's queue for a read slot (Admit gives them out).
  void Enqueue(Call* call, const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    std::deque<Call*>& q = waiting_[key];
    q.push_back(call);
    if (q.size() == 1 && in_turn_.insert(key).second) turns_.push_back(key);
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
      // Then by RankOf, then the fewest slots, then the latest (twelfth hostile probe, F1: by
      // strikes and slots alone, at a filler's start no connection had either, and a new client
      // waited 3-10 s behind the forged calls of its key; a filler's first calls, let in on new
      // connections, rank as a new client's does, but came before it).
      auto pick = w->second.begin();
      std::pair<Rank, size_t> fewest{{SIZE_MAX, SIZE_MAX, SIZE_MAX}, SIZE_MAX};  // and slots
      for (auto it = w->second.begin(); it != w->second.end(); ++it) {
        const Reading& r = reading_.at(*it);
        if (r.proven) {
          pick = it;
          break;
        }
        auto held = slots_per_conn_.find(r.peer);
        const std::pair<Rank, size_t> n{RankOf(r.peer),
                                        held == slots_per_conn_.end() ? 0 : held->second};
        if (n <= fewest) {  // of equals the latest: the fillers' came first
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
      Seat(call);
    }
  }

  // `call` holds a slot from now and starts reading its message.
  void Seat(Call* call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    Reading& r = reading_.at(call);
    r.reading = true;
    r.slot_since = absl::Now();
    ++slots_used_;
    ++slots_per_key_[r.key];
    ++slots_per_conn_[r.peer];
    call->BeginRead();
  }

  // When calls wait and every slot is taken, the key holding the most slots gives up the one it
  // has held longest (at least kSlowReadAfter), if it holds more than one more than a waiting
  // key (a slow sender cannot keep other keys' requests from being read). Returns that call,
  // already forgotten, for the caller to end outside the lock; the freed slot is given out here.
  Preempted Preempt() ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    if (slots_used_ < read_bounds_.slots || waiting_.empty()) return {};
    if (Call* c = PreemptWithinKey()) return {c, /*within_key=*/true};
    size_t fewest_waiting = SIZE_MAX;  // slots held by a key that has a waiting call
    for (const auto& [key, q] : waiting_) {
      if (q.empty()) continue;
      auto it = slots_per_key_.find(key);
      fewest_waiting = std::min(fewest_waiting, it == slots_per_key_.end() ? 0 : it->second);
    }
    if (fewest_waiting == SIZE_MAX) return {};
    const std::string* most = nullptr;
    for (const auto& [key, n] : slots_per_key_) {
      if (most == nullptr || n > slots_per_key_.at(*most)) most = &key;
    }
    if (most == nullptr || slots_per_key_.at(*most) <= fewest_waiting + 1) return {};
    const absl::Time slow = absl::Now() - kSlowReadAfter;
    // A call whose message is whole is never taken: it is being read at once (AOBJ-SEC-029).
    return {TakeSlotOf(LongestHolder(
        [&](const Reading& r) { return r.key == *most && !r.whole && r.slot_since < slow; }))};
  }

  // Of the calls holding a read slot that `eligible` accepts, the one that has held it longest;
  // null when none.
  template <class Eligible>
  Call* LongestHolder(Eligible eligible) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    Call* victim = nullptr;
    for (const auto& [c, r] : reading_) {
      if (r.reading && eligible(r) &&
          (victim == nullptr || r.slot_since < reading_.at(victim).slot_since)) {
        victim = c;
      }
    }
    return victim;
  }

  // Takes `victim`'s slot (null: none to take) and gives it out; returns the victim, for the
  // caller to end outside the lock.
  Call* TakeSlotOf(Call* victim) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
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
    // unproven slot of a key that has a waiting call, past that key's threshold. A waiting call
    // whose connection ranks no worse than the holder's (RankOf) also needs only
    // kSlowReadAfter: one call, ever, is what a new client looks like; many, still sending their
    // messages, what a filler looks like; and a filler's first calls look like a new client's,
    // so among equals each gets kSlowReadAfter, the latest first (twelfth hostile probe, F1).
    struct Waiting {
      bool proven = false;
      Rank best{SIZE_MAX, SIZE_MAX, SIZE_MAX};
    };
    absl::flat_hash_map<std::string, Waiting> waits;  // per waiting key, lazily
    return TakeSlotOf(
        LongestHolder([&](const Reading& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
          if (r.proven || r.whole) return false;
          auto b = waits.find(r.key);
          if (b == waits.end()) {
            auto w = waiting_.find(r.key);
            if (w == waiting_.end() || w->second.empty()) return false;
            Waiting found;
            for (Call* q : w->second) {
              const Reading& qr = reading_.at(q);
              found.proven = found.proven || qr.proven;
              found.best = std::min(found.best, RankOf(qr.peer));
            }
            b = waits.emplace(r.key, found).first;
          }
          const bool soon = b->second.proven || b->second.best <= RankOf(r.peer);
          return r.slot_since < now - (soon ? kSlowReadAfter : kStaleHold);
        }));
  }

  size_t CallsOf(const std::string& peer) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    auto it = calls_per_conn_.find(peer);
    return it == calls_per_conn_.end() ? 0 : it->second;
  }

  // How a connection's unproven calls rank for a read slot, lowest first: its calls ended for
  // being slow or for room, its calls registered now, all it ever registered. A new client's
  // connection has none, one and one; a filler's connections, which keep sending calls whose
  // messages do not come, lose to it on one of them (twelfth hostile probe, F1).
  using Rank = std::tuple<size_t, size_t, size_t>;
  Rank RankOf(const std::string& peer) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    auto struck = strikes_.find(peer);
    auto ever = calls_ever_.find(peer);
    return {struck == strikes_.end() ? 0 : struck->second, CallsOf(peer),
            ever == calls_ever_.end() ? 0 : ever->second};
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
  // Only a call that held a slot, or whose message was awaited until the deadline (`slow`), was
  // slow itself (thirteenth hostile probe: a new client's call ended for room while it waited was
  // struck too, and its retry then ranked behind every filler connection and was ended next).
  // A call that was not is not counted among its connection's calls ever either (sixteenth
  // hostile probe, M1: the retry of a call ended for room ranked behind a fresh connection's).
  void Strike(Call* call, bool slow = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    auto it = reading_.find(call);
    if (it != reading_.end() && !it->second.proven && (slow || it->second.reading)) {
      if (strikes_.size() > 65536) strikes_.clear();  // many connections: start again
      ++strikes_[it->second.peer];
    } else if (it != reading_.end()) {
      auto ever = calls_ever_.find(it->second.peer);
      if (ever != calls_ever_.end() && ever->second > 0) --ever->second;
    }
    Forget(call);
  }

  // AOBJ-SEC-029: a call marked late whose message has come leaves its key's queue and is read
  // now; a token not yet registered (gRPC has not made its call yet) is kept for StartReading.
  void MessageArrived(uint64_t token) override {
    absl::MutexLock l(&reading_mu_);
    auto t = by_token_.find(token);
    if (t == by_token_.end()) {
      if (arrived_.size() >= kMaxArrived) arrived_.clear();  // calls that never came: forget
      arrived_[token] = true;
      return;
    }
    Call* call = t->second;
    by_token_.erase(t);
    Reading& r = reading_.at(call);
    r.whole = true;
    if (r.reading) return;  // it got a slot meanwhile
    LeaveQueue(call, r.key);
    Seat(call);
  }

  void MessageLarge(uint64_t token) override {
    Preempted preempted;
    Call* victim = nullptr;
    {
      absl::MutexLock l(&reading_mu_);
      auto t = by_token_.find(token);
      if (t == by_token_.end()) {
        if (arrived_.size() >= kMaxArrived) arrived_.clear();
        arrived_[token] = false;
        return;
      }
      Call* call = t->second;
      by_token_.erase(t);  // no longer watched: no report follows
      reading_.at(call).token = 0;
      victim = ToSlotQueue(call);
      preempted = Preempt();
    }
    if (victim != nullptr) EndForRoom(victim);
    EndPreempted(preempted);
  }

  // A call that waited for its message without a slot (AwaitMessage) waits for a slot from now,
  // among the calls that are not marked: its message is large (MessageLarge), or has not come
  // within kAwaitLate (then its report, should it still come, seats it at once: MessageArrived).
  // AOBJ-SEC-018's bounds hold for it as for a new call (seventeenth hostile probe, N2: without
  // them one tenant's header-only calls, moved here every 3 s, kept 6,827 registered, 169 MB):
  // past one, the call that ranks last for room (RoomVictim; often this one, the oldest) is
  // ended, and returned for the caller to end outside the lock.
  Call* ToSlotQueue(Call* call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    Reading& r = reading_.at(call);
    if (!r.late || r.whole) return nullptr;
    NoLongerLate(r);
    const std::string key = r.key;
    ++reading_per_key_[key];
    Call* victim = nullptr;
    if (CountOf(reading_per_key_, key) > read_bounds_.max_per_key) {
      victim = RoomVictim(key);
    } else if (reading_.size() - late_total_ > read_bounds_.max_total) {
      victim = RoomVictim(FullestKey(key));
    }
    if (victim != nullptr) Strike(victim);
    if (victim != call) {
      Enqueue(call, key);
    }
    Admit();
    return victim;
  }

  // Takes a late call out of the late calls' counts.
  void NoLongerLate(Reading& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    r.late = false;
    auto k = late_per_key_.find(r.key);
    if (k != late_per_key_.end() && --k->second == 0) late_per_key_.erase(k);
    if (!r.charged.empty()) {
      auto p = charged_late_.find(r.charged);
      if (p != charged_late_.end() && --p->second == 0) charged_late_.erase(p);
      --charged_late_total_;
    }
    --late_total_;
  }

  // Takes `call` out of its key's queue of calls waiting for a slot.
  void LeaveQueue(Call* call, const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    auto w = waiting_.find(key);
    if (w == waiting_.end()) return;
    auto pos = std::find(w->second.begin(), w->second.end(), call);
    if (pos != w->second.end()) w->second.erase(pos);
    if (w->second.empty()) waiting_.erase(w);  // its turn entry is dropped when reached
  }

  // Drops `call` from every account: its slot, or its place in its key's queue.
  void Forget(Call* call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reading_mu_) {
    auto it = reading_.find(call);
    if (it->second.token != 0) by_token_.erase(it->second.token);
    const std::string& key = it->second.key;
    if (it->second.reading) {
      --slots_used_;
      auto s = slots_per_key_.find(key);
      if (s != slots_per_key_.end() && --s->second == 0) slots_per_key_.erase(s);
      auto c = slots_per_conn_.find(it->second.peer);
      if (c != slots_per_conn_.end() && --c->second == 0) slots_per_conn_.erase(c);
    } else {
      LeaveQueue(call, key);
    }
    if (it->second.late) {
      NoLongerLate(it->second);
    } else {
      auto k = reading_per_key_.find(key);
      if (k != reading_per_key_.end() && --k->second == 0) reading_per_key_.erase(k);
    }
    auto n = calls_per_conn_.find(it->second.peer);
    if (n != calls_per_conn_.end() && --n->second == 0) calls_per_conn_.erase(n);
    reading_.erase(it);
  }

  // One call: created when its headers arrive; deletes itself when gRPC is done with it.
  class Call final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
   public:
    Call(ServiceImpl* service, Method method, grpc::CallbackServerContext* ctx)
        : service_(service), method_(method), ctx_(ctx), peer_(PeerFromGuardUri(ctx->peer())) {
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
      const std::string verified_as =
          listener != nullptr ? listener->AuthenticatedAs(peer_) : std::string();
      if (!service_->StartReading(this, auth_.access_key_id, peer_, verified_as, MarkedWhole(md),
                                  MarkedLate(md))) {
        Fail(service_->handler_->Refuse(
                 method, auth_,
                 MakeError(ErrorCode::kSlowDown,
                           "too many requests are still sending their message; retry later")),
             nullptr);
        return;
      }
    }

    void BeginRead() { StartRead(&request_); }

    // AOBJ-SEC-029: the guard says the message is here whole (with this run's secret; a client
    // that sends the header itself does not know it).
    bool MarkedWhole(const std::multimap<grpc::string_ref, grpc::string_ref>& md) const {
      const std::string& mark = service_->read_bounds_.whole_mark;
      if (mark.empty()) return false;
      auto [from, to] = md.equal_range(kGuardWholeHeader);
      for (auto it = from; it != to; ++it) {
        if (absl::string_view(it->second.data(), it->second.size()) == mark) return true;
      }
      return false;
    }

    // AOBJ-SEC-029: the token the guard marked the call late with ("<mark>:<token>"); 0: none.
    uint64_t MarkedLate(const std::multimap<grpc::string_ref, grpc::string_ref>& md) const {
      const std::string& mark = service_->read_bounds_.whole_mark;
      if (mark.empty()) return 0;
      auto [from, to] = md.equal_range(kGuardLateHeader);
      for (auto it = from; it != to; ++it) {
        absl::string_view v(it->second.data(), it->second.size());
        uint64_t token = 0;
        if (absl::ConsumePrefix(&v, mark) && absl::ConsumePrefix(&v, ":") &&
            absl::SimpleAtoi(v, &token)) {
          return token;
        }
      }
      return 0;
    }

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
      if (RefusedForUnreadReplies()) return;
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
      if (reply_bytes_ > 0) service_->ReplyTaken(auth_.access_key_id, reply_bytes_);
      delete this;
    }

   private:
    // AOBJ-SEC-025: a key whose clients leave its replies untaken gets no more until they do.
    // Asked before the request is queued and again before it runs (eighth hostile probe: asked
    // only before, the requests already queued, up to 1,024 of the key, all ran and held 472 MB
    // of replies against the 32 MiB bound). Answered SLOW_DOWN when the bound is reached.
    bool RefusedForUnreadReplies() {
      const uint64_t held = service_->ReplyBytes(auth_.access_key_id);
      if (held < service_->read_bounds_.reply_bytes_per_key) return false;
      Fail(service_->handler_->Refuse(
               method_, auth_,
               MakeError(ErrorCode::kSlowDown,
                         absl::StrCat("replies of this access key that its clients have not "
                                      "read hold ",
                                      held, " octets of the server's memory (at most ",
                                      service_->read_bounds_.reply_bytes_per_key,
                                      "); read them, then retry"))),
           nullptr);
      return true;
    }

    // Handles the request and finishes the call; on a request thread, or on gRPC's.
    void Run(std::string body) {
      // A RenewSession's reply is a few octets, and it keeps the key's own sessions alive.
      if (method_ != Method::kRenewSession && RefusedForUnreadReplies()) return;
      // Spec section 3.7, AOBJ-DAT-016: the request sees its call's cancellation and deadline.
      auto call = std::make_shared<CallControl>();
      grpc::CallbackServerContext* ctx = ctx_;
      call->cancelled = [ctx] { return ctx->IsCancelled(); };
      call->deadline = DeadlineOf(*ctx);
      if (method_ == Method::kRenewSession) {
        call->cancel_nonce = MetadataValue(ctx->client_metadata(), kMetaCancel);
      }
      aobj::v1::VersionRange supported;
      absl::StatusOr<std::string> out =
          service_->handler_->Handle(method_, auth_, body, absl::Now(), &supported, call.get());
      // This connection carries signed requests (a failure after the signature verified, a
      // missing key say, counts too): never cut to make room for unauthenticated ones, and not
      // counted among them (ControlListener).
      if (out.ok() || call->signature_verified) {
        if (ControlListener* l = service_->listener_.load(std::memory_order_acquire)) {
          l->MarkAuthenticated(ctx->peer(), auth_.access_key_id);
        }
      }
      if (out.ok()) {
        // AOBJ-AUTH-020: the negotiation is signed, over the octets that go out.
        if (method_ == Method::kOpenSession) {
          if (const std::string* key = service_->auth_->SigningKey(auth_.access_key_id)) {
            ctx->AddTrailingMetadata(kMetaResponseSignature,
                                     SignOpenSessionResponse(*key, auth_.signature_hex, *out));
          }
        }
        // Held until the client takes it (OnDone), within the key's bound (AOBJ-SEC-025).
        reply_bytes_ = out->size();
        if (reply_bytes_ > 0) service_->ReplyHeld(auth_.access_key_id, reply_bytes_);
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

    ServiceImpl* const service_;
    const Method method_;
    grpc::CallbackServerContext* const ctx_;
    const std::string peer_;
    bool counted_ = false;      // by OnCancel, for NoteCallEnded
    uint64_t reply_bytes_ = 0;  // of the successful reply written (ReplyHeld)
    RequestAuth auth_;
    grpc::ByteBuffer request_;
    grpc::ByteBuffer response_;
  };

  // AOBJ-SEC-025 (seventh hostile probe: a tenant's connections that set their flow-control
  // window to 0 and sent 3,000 ListObjectsV2 calls took the server to 2.2 GB): the octets of
  // each key's successful replies that gRPC holds until their clients take them.
  uint64_t ReplyBytes(const std::string& key) {
    absl::MutexLock l(&replies_mu_);
    auto it = reply_bytes_.find(key);
    return it == reply_bytes_.end() ? 0 : it->second;
  }
  void ReplyHeld(const std::string& key, uint64_t n) {
    absl::MutexLock l(&replies_mu_);
    reply_bytes_[key] += n;
  }
  void ReplyTaken(const std::string& key, uint64_t n) {
    absl::MutexLock l(&replies_mu_);
    auto it = reply_bytes_.find(key);
    if (it == reply_bytes_.end()) return;
    it->second -= std::min(it->second, n);
    if (it->second == 0) reply_bytes_.erase(it);
  }

  RequestHandler* handler_;
  const Authenticator* auth_;
  RequestScheduler* scheduler_;
  const ReadBounds read_bounds_;
  absl::Mutex replies_mu_;
  absl::flat_hash_map<std::string, uint64_t> reply_bytes_ ABSL_GUARDED_BY(replies_mu_);
  std::atomic<ControlListener*> listener_{nullptr};  // set once it is bound
  absl::Mutex churn_mu_;
  absl::flat_hash_map<std::string, Churn> churn_ ABSL_GUARDED_BY(churn_mu_);  // by peer
  absl::Time churn_swept_ ABSL_GUARDED_BY(churn_mu_);
  absl::Time last_cut_logged_ ABSL_GUARDED_BY(churn_mu_) = absl::InfinitePast();
  uint64_t cuts_unlogged_ ABSL_GUARDED_BY(churn_mu_) = 0;
  absl::Mutex reading_mu_;
  absl::flat_hash_map<Call*, Reading> reading_ ABSL_GUARDED_BY(reading_mu_);
  absl::flat_hash_map<std::string, size_t> reading_per_key_ ABSL_GUARDED_BY(reading_mu_);
  // AOBJ-SEC-029: registered calls marked late (AwaitMessage), per key and in all.
  absl::flat_hash_map<std::string, size_t> late_per_key_ ABSL_GUARDED_BY(reading_mu_);
  // Those on verified connections, per principal charged (Reading::charged) and in all.
  absl::flat_hash_map<std::string, size_t> charged_late_ ABSL_GUARDED_BY(reading_mu_);
  size_t charged_late_total_ ABSL_GUARDED_BY(reading_mu_) = 0;
  size_t late_total_ ABSL_GUARDED_BY(reading_mu_) = 0;
  // Read slots (ReadBounds::slots): taken in all and per key; the waiting calls of each key in
  // arrival order, and the order in which keys with waiting calls get the next slot.
  size_t slots_used_ ABSL_GUARDED_BY(reading_mu_) = 0;
  absl::flat_hash_map<std::string, size_t> slots_per_key_ ABSL_GUARDED_BY(reading_mu_);
  absl::flat_hash_map<std::string, size_t> slots_per_conn_ ABSL_GUARDED_BY(reading_mu_);
  // Calls of each connection registered here (waiting for a slot or reading), and all it ever
  // registered (forgotten, like strikes_, when many connections have come and gone).
  absl::flat_hash_map<std::string, size_t> calls_per_conn_ ABSL_GUARDED_BY(reading_mu_);
  absl::flat_hash_map<std::string, size_t> calls_ever_ ABSL_GUARDED_BY(reading_mu_);
  // Unproven calls of each connection ended for being slow or to make room (Strike).
  absl::flat_hash_map<std::string, size_t> strikes_ ABSL_GUARDED_BY(reading_mu_);
  // AOBJ-SEC-029: calls marked late that wait for their message, by token; and the tokens whose
  // message came
  static constexpr size_t kMaxArrived = 4096;
  absl::flat_hash_map<uint64_t, Call*> by_token_ ABSL_GUARDED_BY(reading_mu_);
  // (true) or found large (false) before gRPC made their call (at most kMaxArrived).
  absl::flat_hash_map<uint64_t, bool> arrived_ ABSL_GUARDED_BY(reading_mu_);
  absl::flat_hash_map<std::string, std::deque<Call*>> waiting_ ABSL_GUARDED_BY(reading_mu_);
  std::deque<std::string> turns_ ABSL_GUARDED_BY(reading_mu_);
  absl::flat_hash_set<std::string> in_turn_ ABSL_GUARDED_BY(reading_mu_);
};

}  // namespace

std::unique_ptr<ControlService> ControlService::Create(RequestHandler* handler,
                                                       const Authenticator* auth,
                                                       RequestScheduler* scheduler,
                                                       ReadBounds read_bounds) {
  return std::make_unique<ServiceImpl>(handler, auth, scheduler, read_bounds);
}

}  // namespace aobj
