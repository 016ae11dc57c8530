#include "session/session_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "wire/crypto.h"
#include "wire/signing.h"

namespace aobj {

bool SessionState::HasCapability(uint32_t c) const {
  return std::find(capabilities.begin(), capabilities.end(), c) != capabilities.end();
}

SessionTable::SessionTable(absl::Duration lease, absl::Duration tombstone)
    : lease_(lease), tombstone_(tombstone) {}

std::string SessionTable::NewId() {
  absl::MutexLock l(&mu_);
  std::string id;
  do {
    id = HexEncode(RandomBytes(kSessionIdBytes));  // AOBJ-SES-007
  } while (sessions_.contains(id));
  return id;
}

std::string SessionTable::Create(SessionState state, absl::Time now) {
  absl::MutexLock l(&mu_);
  std::string id = state.id_hex;
  while (id.empty() || sessions_.contains(id)) {
    id = HexEncode(RandomBytes(kSessionIdBytes));  // AOBJ-SES-007
  }
  state.id_hex = id;
  Entry e;
  e.state = std::make_shared<const SessionState>(std::move(state));
  e.expires = now + lease_;
  e.created = now;
  sessions_.emplace(id, std::move(e));
  return id;
}

SessionTable::Sessions::iterator SessionTable::FindOwned(absl::string_view id_hex,
                                                         absl::string_view access_key_id) {
  auto it = sessions_.find(id_hex);
  if (it == sessions_.end() || it->second.state->access_key_id != access_key_id ||
      it->second.phase == Entry::kClosed) {
    return sessions_.end();
  }
  return it;
}

absl::StatusOr<std::shared_ptr<const SessionState>> SessionTable::Use(
    absl::string_view id_hex, absl::string_view access_key_id, absl::Time now) {
  absl::MutexLock l(&mu_);
  auto it = FindOwned(id_hex, access_key_id);
  if (it == sessions_.end()) return MakeError(ErrorCode::kNoSuchSession, "no such session");
  Entry& e = it->second;
  if (e.phase == Entry::kOpen && now >= e.expires) {
    e.phase = Entry::kExpired;
    e.forget_at = now + tombstone_;
  }
  if (e.phase == Entry::kExpired) {
    return MakeError(ErrorCode::kSessionExpired,
                     "the session's lease expired; open a new session");  // AOBJ-SES-009
  }
  e.expires = now + lease_;  // AOBJ-SES-008: every authenticated request renews the lease
  return e.state;
}

std::shared_ptr<const SessionState> SessionTable::Peek(absl::string_view id_hex) {
  absl::MutexLock l(&mu_);
  auto it = sessions_.find(id_hex);
  if (it == sessions_.end() || it->second.released) return nullptr;
  return it->second.state;
}

absl::StatusOr<std::unique_ptr<TransferSlot>> SessionTable::Admit(absl::string_view id_hex) {
  absl::MutexLock l(&mu_);
  auto it = sessions_.find(id_hex);
  if (it == sessions_.end() || it->second.phase != Entry::kOpen) {
    return MakeError(ErrorCode::kNoSuchSession, "no such session");
  }
  Entry& e = it->second;
  if (e.in_flight >= e.state->limits.max_in_flight) {
    return MakeError(ErrorCode::kTooManyTransfers,
                     absl::StrCat("the session already has ", e.in_flight,
                                  " transfers in flight (limit ", e.state->limits.max_in_flight,
                                  "); retry when one completes"));
  }
  ++e.in_flight;
  return std::unique_ptr<TransferSlot>(new TransferSlot(this, std::string(id_hex)));
}

void SessionTable::Release(const std::string& id_hex) {
  absl::MutexLock l(&mu_);
  auto it = sessions_.find(id_hex);
  if (it != sessions_.end() && it->second.in_flight > 0) --it->second.in_flight;
}

absl::StatusOr<std::vector<uint64_t>> SessionTable::Close(absl::string_view id_hex,
                                                          absl::string_view access_key_id) {
  absl::MutexLock l(&mu_);
  auto it = FindOwned(id_hex, access_key_id);
  if (it == sessions_.end()) return MakeError(ErrorCode::kNoSuchSession, "no such session");
  Entry& e = it->second;
  if (e.phase == Entry::kExpired) {
    return MakeError(ErrorCode::kSessionExpired, "the session's lease expired");  // Table 1
  }
  e.phase = Entry::kClosed;
  std::vector<uint64_t> out;
  if (e.in_flight == 0 && !e.released) {
    e.released = true;
    out.push_back(e.state->endpoint);
    sessions_.erase(it);
  }
  return out;
}

std::vector<uint64_t> SessionTable::Reap(absl::Time now) {
  absl::MutexLock l(&mu_);
  std::vector<uint64_t> out;
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    Entry& e = it->second;
    if (e.phase == Entry::kOpen && now >= e.expires) {
      e.phase = Entry::kExpired;
      e.forget_at = now + tombstone_;
    }
    if (e.phase != Entry::kOpen && e.in_flight == 0 && !e.released) {
      e.released = true;
      out.push_back(e.state->endpoint);
    }
    const bool forget = e.released && (e.phase == Entry::kClosed || now >= e.forget_at);
    if (forget) {
      sessions_.erase(it++);
    } else {
      ++it;
    }
  }
  return out;
}

size_t SessionTable::open_sessions_of(absl::string_view access_key_id) {
  absl::MutexLock l(&mu_);
  size_t n = 0;
  for (const auto& [id, e] : sessions_) {
    n += e.phase == Entry::kOpen && e.state->access_key_id == access_key_id;
  }
  return n;
}

size_t SessionTable::open_sessions() {
  absl::MutexLock l(&mu_);
  size_t n = 0;
  for (const auto& [id, e] : sessions_) n += e.phase == Entry::kOpen;
  return n;
}

std::vector<SessionRow> SessionTable::List() {
  std::vector<SessionRow> out;
  absl::MutexLock l(&mu_);
  for (const auto& [id, e] : sessions_) {
    if (e.released || e.phase == Entry::kClosed) continue;
    out.push_back(SessionRow{id, e.state->access_key_id,
                              e.phase == Entry::kOpen ? "open" : "expired", e.created, e.expires,
                              e.in_flight});
  }
  std::sort(out.begin(), out.end(),
            [](const SessionRow& a, const SessionRow& b) { return a.created < b.created; });
  return out;
}

uint64_t SessionTable::transfers_in_flight() {
  uint64_t n = 0;
  absl::MutexLock l(&mu_);
  for (const auto& [id, e] : sessions_) n += e.in_flight;
  return n;
}

}  // namespace aobj
