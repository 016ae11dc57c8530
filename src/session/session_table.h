// Server sessions: ids, leases, ownership and admission (spec "Sessions", state machine table).
//
// States: OPEN -> (lease expiry) EXPIRED -> (forgotten after the tombstone time) gone;
//         OPEN -> (CloseSession) CLOSED (= gone).
// A session is released (its data-channel endpoint closed by the owner of the table) only when
// no data request of it is in flight (AOBJ-SES-010).
//
// Threading: thread-safe. Time is passed in.
#ifndef AOBJ_SESSION_SESSION_TABLE_H_
#define AOBJ_SESSION_SESSION_TABLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "wire/protocol.h"

namespace aobj {

struct SessionState {
  std::string id_hex;
  std::string access_key_id;
  uint64_t endpoint = 0;        // data-channel endpoint id
  uint32_t version = 0;
  std::vector<uint32_t> capabilities;
  SessionLimits limits;
  // AOBJ-SES-026: the proof ConfirmEndpoint must carry (32 octets).
  std::string endpoint_proof;
  bool HasCapability(uint32_t c) const;
};

// One row of SessionTable::List (the /sessions admin endpoint).
struct SessionRow {
  std::string id_hex;
  std::string access_key_id;
  std::string state;  // "open" or "expired" (expired: endpoint not yet released)
  absl::Time created;
  absl::Time expires;  // lease end
  uint32_t in_flight = 0;
};

// Holds one admitted data request; releasing it (destruction) lowers the in-flight count.
class TransferSlot;

class SessionTable {
 public:
  SessionTable(absl::Duration lease, absl::Duration tombstone);

  absl::Duration lease() const { return lease_; }

  // A fresh session id (AOBJ-SES-007: 16 CSPRNG bytes, lower-case hex) that no remembered
  // session has (AOBJ-SES-020), for a Create() that follows.
  std::string NewId();
  // Registers a new session and returns its id: `state.id_hex` when it is set and still unused
  // (from NewId()), a fresh one otherwise.
  std::string Create(SessionState state, absl::Time now);

  // The open session `id_hex` signed by `access_key_id`, its lease renewed (AOBJ-SES-008).
  // NO_SUCH_SESSION (unknown, closed, or another principal's: AOBJ-AUTH-010), SESSION_EXPIRED.
  absl::StatusOr<std::shared_ptr<const SessionState>> Use(absl::string_view id_hex,
                                                          absl::string_view access_key_id,
                                                          absl::Time now);

  // The session `id_hex` while its endpoint is held (open, expired or closed, not yet
  // released), without authentication and without renewing it; null otherwise. For routing a
  // reply (spec 8.9), which then says why the session cannot be used.
  std::shared_ptr<const SessionState> Peek(absl::string_view id_hex);

  // Admits one data request (AOBJ-SES-012): TOO_MANY_TRANSFERS past max_in_flight.
  absl::StatusOr<std::unique_ptr<TransferSlot>> Admit(absl::string_view id_hex);

  // Closes the session (AOBJ-SES-010). Returns its endpoint once it has nothing in flight;
  // otherwise the endpoint comes back from a later Reap().
  absl::StatusOr<std::vector<uint64_t>> Close(absl::string_view id_hex,
                                              absl::string_view access_key_id);

  // Expires sessions whose lease ended and returns the endpoints that are now free to release:
  // of expired or closed sessions with nothing in flight. Forgets old tombstones.
  std::vector<uint64_t> Reap(absl::Time now);

  // Sessions not yet released (open, and expired ones whose endpoint is still held), ordered
  // by creation time. For observation only: the rows may be stale as soon as it returns.
  std::vector<SessionRow> List();
  // Data requests admitted and not yet finished, across all sessions.
  uint64_t transfers_in_flight();

  size_t open_sessions();
  // Open sessions of one principal (AOBJ-SEC-006).
  size_t open_sessions_of(absl::string_view access_key_id);

 private:
  friend class TransferSlot;
  struct Entry {
    std::shared_ptr<const SessionState> state;
    absl::Time expires;
    absl::Time created;
    enum { kOpen, kExpired, kClosed } phase = kOpen;
    bool released = false;  // endpoint handed back to the owner
    uint32_t in_flight = 0;
    absl::Time forget_at;
  };
  void Release(const std::string& id_hex);

  const absl::Duration lease_;
  const absl::Duration tombstone_;
  absl::Mutex mu_;
  using Sessions = absl::flat_hash_map<std::string, Entry>;
  // AOBJ-AUTH-010: the session `id_hex` if `access_key_id` owns it and it is not closed, else
  // sessions_.end(): another principal's session looks exactly like an unknown one.
  Sessions::iterator FindOwned(absl::string_view id_hex, absl::string_view access_key_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Sessions sessions_ ABSL_GUARDED_BY(mu_);
};

class TransferSlot {
 public:
  ~TransferSlot() { table_->Release(id_hex_); }
  TransferSlot(const TransferSlot&) = delete;
  TransferSlot& operator=(const TransferSlot&) = delete;

 private:
  friend class SessionTable;
  TransferSlot(SessionTable* table, std::string id_hex) : table_(table), id_hex_(std::move(id_hex)) {}
  SessionTable* table_;  // outlives the slot
  std::string id_hex_;
};

}  // namespace aobj

#endif  // AOBJ_SESSION_SESSION_TABLE_H_
