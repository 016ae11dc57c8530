#include "session/session_table.h"

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "aobj/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace aobj {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

const absl::Duration kLease = absl::Seconds(30);
const absl::Duration kTombstone = absl::Minutes(10);

absl::Time T0() { return absl::FromUnixSeconds(1795000000); }

SessionState State(uint64_t endpoint, std::string key = "AKEXAMPLE", uint32_t max_in_flight = 2) {
  SessionState s;
  s.access_key_id = std::move(key);
  s.endpoint = endpoint;
  s.version = 1;
  s.limits.max_in_flight = max_in_flight;
  return s;
}

bool IsLowerHex32(const std::string& s) {
  if (s.size() != 32) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

ErrorCode UseCode(SessionTable& t, const std::string& id, absl::Time now,
                  const std::string& key = "AKEXAMPLE") {
  return ErrorCodeOf(t.Use(id, key, now).status());
}

class SessionTableTest : public ::testing::Test {
 protected:
  SessionTable table_{kLease, kTombstone};
};

TEST_F(SessionTableTest, CreateGives32LowerHexIds) {
  // AOBJ-SES-007
  const std::string id = table_.Create(State(7), T0());
  EXPECT_TRUE(IsLowerHex32(id)) << id;
  EXPECT_EQ(table_.open_sessions(), 1u);
}

TEST_F(SessionTableTest, CreateGivesDistinctIds) {
  // AOBJ-SES-007, AOBJ-SES-020
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) ids.insert(table_.Create(State(i), T0()));
  EXPECT_EQ(ids.size(), 1000u);
  EXPECT_EQ(table_.open_sessions(), 1000u);
}

TEST_F(SessionTableTest, UseReturnsTheStoredState) {
  // AOBJ-SES-008
  const std::string id = table_.Create(State(42), T0());
  auto s = table_.Use(id, "AKEXAMPLE", T0());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->id_hex, id);
  EXPECT_EQ((*s)->endpoint, 42u);
  EXPECT_EQ((*s)->access_key_id, "AKEXAMPLE");
}

TEST_F(SessionTableTest, UseBeforeLeaseEndSucceeds) {
  // AOBJ-SES-018: not expired earlier than lease_ms after the last renewal.
  const std::string id = table_.Create(State(1), T0());
  EXPECT_EQ(UseCode(table_, id, T0() + kLease - absl::Milliseconds(1)), ErrorCode::kOk);
}

TEST_F(SessionTableTest, UseRenewsTheLease) {
  // AOBJ-SES-008: every use renews the lease to a full lease_ms, so uses just before expiry
  // keep the session alive well past several lease lengths.
  const std::string id = table_.Create(State(1), T0());
  absl::Time t = T0();
  for (int i = 0; i < 10; ++i) {
    t += kLease - absl::Milliseconds(1);
    ASSERT_EQ(UseCode(table_, id, t), ErrorCode::kOk) << "use " << i;
  }
  EXPECT_GT(t - T0(), 9 * kLease);
  EXPECT_THAT(table_.Reap(t + kLease - absl::Milliseconds(1)), IsEmpty());
  EXPECT_EQ(table_.open_sessions(), 1u);
}

TEST_F(SessionTableTest, UnknownIdIsNoSuchSession) {
  // AOBJ-SES-010 / AOBJ-AUTH-010
  table_.Create(State(1), T0());
  EXPECT_EQ(UseCode(table_, "00000000000000000000000000000000", T0()),
            ErrorCode::kNoSuchSession);
}

TEST_F(SessionTableTest, OtherPrincipalsSessionIsNoSuchSession) {
  // AOBJ-AUTH-010: another principal's session looks like an unknown one, in every state.
  const std::string id = table_.Create(State(1, "AKOWNER"), T0());
  EXPECT_EQ(UseCode(table_, id, T0(), "AKEXAMPLE"), ErrorCode::kNoSuchSession);
  EXPECT_EQ(ErrorCodeOf(table_.Close(id, "AKEXAMPLE").status()), ErrorCode::kNoSuchSession);
  // Expired: the owner sees SESSION_EXPIRED, the other principal still NO_SUCH_SESSION.
  EXPECT_EQ(UseCode(table_, id, T0() + kLease, "AKOWNER"), ErrorCode::kSessionExpired);
  EXPECT_EQ(UseCode(table_, id, T0() + kLease, "AKEXAMPLE"), ErrorCode::kNoSuchSession);
}

TEST_F(SessionTableTest, OtherPrincipalsUseDoesNotRenewLease) {
  // AOBJ-AUTH-010 / AOBJ-AUTH-009: a refused request has no effect.
  const std::string id = table_.Create(State(1, "AKOWNER"), T0());
  EXPECT_EQ(UseCode(table_, id, T0() + kLease - absl::Seconds(1), "AKEXAMPLE"),
            ErrorCode::kNoSuchSession);
  EXPECT_EQ(UseCode(table_, id, T0() + kLease, "AKOWNER"), ErrorCode::kSessionExpired);
}

TEST_F(SessionTableTest, ExpiredThenForgottenAfterTombstone) {
  // AOBJ-SES-009: SESSION_EXPIRED while the id is remembered, NO_SUCH_SESSION afterwards.
  const std::string id = table_.Create(State(5), T0());
  const absl::Time expired = T0() + kLease;
  EXPECT_EQ(UseCode(table_, id, expired), ErrorCode::kSessionExpired);
  EXPECT_EQ(table_.open_sessions(), 0u);
  // The endpoint is released once; the id stays as a tombstone.
  EXPECT_THAT(table_.Reap(expired), ElementsAre(5u));
  EXPECT_EQ(UseCode(table_, id, expired + kTombstone - absl::Seconds(1)),
            ErrorCode::kSessionExpired);
  EXPECT_THAT(table_.Reap(expired + kTombstone - absl::Seconds(1)), IsEmpty());
  EXPECT_EQ(UseCode(table_, id, expired + kTombstone - absl::Seconds(1)),
            ErrorCode::kSessionExpired);
  // After the tombstone time the id is forgotten.
  EXPECT_THAT(table_.Reap(expired + kTombstone), IsEmpty());
  EXPECT_EQ(UseCode(table_, id, expired + kTombstone), ErrorCode::kNoSuchSession);
}

TEST_F(SessionTableTest, ExpiredSessionIsNotRenewedByUse) {
  // AOBJ-SES-009: once expired, a use does not bring the session back.
  const std::string id = table_.Create(State(5), T0());
  ASSERT_EQ(UseCode(table_, id, T0() + kLease), ErrorCode::kSessionExpired);
  EXPECT_EQ(UseCode(table_, id, T0() + kLease + absl::Seconds(1)), ErrorCode::kSessionExpired);
}

TEST_F(SessionTableTest, ReapExpiresSessionsWithoutAUse) {
  // AOBJ-SES-009: the lease ends by itself; Reap releases the endpoint.
  const std::string a = table_.Create(State(1), T0());
  const std::string b = table_.Create(State(2), T0() + absl::Seconds(10));
  EXPECT_THAT(table_.Reap(T0() + kLease - absl::Milliseconds(1)), IsEmpty());
  EXPECT_THAT(table_.Reap(T0() + kLease), ElementsAre(1u));
  EXPECT_EQ(table_.open_sessions(), 1u);
  EXPECT_EQ(UseCode(table_, a, T0() + kLease), ErrorCode::kSessionExpired);
  EXPECT_EQ(UseCode(table_, b, T0() + kLease), ErrorCode::kOk);
}

TEST_F(SessionTableTest, AdmitHonoursMaxInFlight) {
  // AOBJ-SES-012
  const std::string id = table_.Create(State(1, "AKEXAMPLE", /*max_in_flight=*/2), T0());
  auto s1 = table_.Admit(id);
  auto s2 = table_.Admit(id);
  ASSERT_TRUE(s1.ok()) << s1.status();
  ASSERT_TRUE(s2.ok()) << s2.status();
  EXPECT_EQ(ErrorCodeOf(table_.Admit(id).status()), ErrorCode::kTooManyTransfers);
}

TEST_F(SessionTableTest, SlotIsReleasedOnDestruction) {
  // AOBJ-SES-012 / AOBJ-FLO-005: a finished request no longer counts.
  const std::string id = table_.Create(State(1, "AKEXAMPLE", /*max_in_flight=*/1), T0());
  {
    auto slot = table_.Admit(id);
    ASSERT_TRUE(slot.ok()) << slot.status();
    EXPECT_EQ(ErrorCodeOf(table_.Admit(id).status()), ErrorCode::kTooManyTransfers);
  }
  auto again = table_.Admit(id);
  EXPECT_TRUE(again.ok()) << again.status();
}

TEST_F(SessionTableTest, RejectedAdmitDoesNotTakeASlot) {
  // AOBJ-FLO-005: a rejected request is not counted.
  const std::string id = table_.Create(State(1, "AKEXAMPLE", /*max_in_flight=*/1), T0());
  auto slot = table_.Admit(id);
  ASSERT_TRUE(slot.ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ErrorCodeOf(table_.Admit(id).status()), ErrorCode::kTooManyTransfers);
  }
  slot->reset();
  EXPECT_TRUE(table_.Admit(id).ok());
}

TEST_F(SessionTableTest, AdmitForUnknownSessionIsNoSuchSession) {
  // AOBJ-SES-010
  EXPECT_EQ(ErrorCodeOf(table_.Admit("ffffffffffffffffffffffffffffffff").status()),
            ErrorCode::kNoSuchSession);
}

TEST_F(SessionTableTest, CloseReturnsEndpointWhenIdle) {
  // AOBJ-SES-010: nothing in flight, the endpoint is released at once.
  const std::string id = table_.Create(State(9), T0());
  auto eps = table_.Close(id, "AKEXAMPLE");
  ASSERT_TRUE(eps.ok()) << eps.status();
  EXPECT_THAT(*eps, ElementsAre(9u));
  EXPECT_EQ(table_.open_sessions(), 0u);
  EXPECT_THAT(table_.Reap(T0()), IsEmpty());  // not handed back twice
}

TEST_F(SessionTableTest, CloseWithSlotHeldDefersEndpointToReap) {
  // AOBJ-SES-010: requests in flight at close complete before the release.
  const std::string id = table_.Create(State(9), T0());
  auto slot = table_.Admit(id);
  ASSERT_TRUE(slot.ok());
  auto eps = table_.Close(id, "AKEXAMPLE");
  ASSERT_TRUE(eps.ok()) << eps.status();
  EXPECT_THAT(*eps, IsEmpty());
  EXPECT_THAT(table_.Reap(T0()), IsEmpty());  // still in flight
  // Later requests already see the session as gone.
  EXPECT_EQ(UseCode(table_, id, T0()), ErrorCode::kNoSuchSession);
  EXPECT_EQ(ErrorCodeOf(table_.Admit(id).status()), ErrorCode::kNoSuchSession);
  slot->reset();
  EXPECT_THAT(table_.Reap(T0()), ElementsAre(9u));
  EXPECT_THAT(table_.Reap(T0() + kTombstone * 2), IsEmpty());
}

TEST_F(SessionTableTest, ExpiredSessionWithSlotHeldReleasesEndpointAfterSlot) {
  // AOBJ-SES-009: release after requests in flight complete, as in AOBJ-SES-010.
  const std::string id = table_.Create(State(3), T0());
  auto slot = table_.Admit(id);
  ASSERT_TRUE(slot.ok());
  EXPECT_THAT(table_.Reap(T0() + kLease), IsEmpty());
  slot->reset();
  EXPECT_THAT(table_.Reap(T0() + kLease), ElementsAre(3u));
}

TEST_F(SessionTableTest, ReapReturnsEachEndpointExactlyOnce) {
  // AOBJ-SES-009 / AOBJ-SES-010: every endpoint is released once, none twice.
  table_.Create(State(1), T0());
  const std::string b = table_.Create(State(2), T0());
  table_.Create(State(3), T0() + absl::Hours(1));
  auto slot = table_.Admit(b);
  ASSERT_TRUE(slot.ok());
  ASSERT_TRUE(table_.Close(b, "AKEXAMPLE").ok());

  std::vector<uint64_t> all;
  absl::Time t = T0();
  for (int step = 0; step < 40; ++step) {
    if (step == 5) slot->reset();
    for (uint64_t ep : table_.Reap(t)) all.push_back(ep);
    t += absl::Minutes(1);
  }
  // Endpoint 1 expired at T0 + 30 s, 2 was released when its slot went; 3 expires later.
  EXPECT_THAT(all, UnorderedElementsAre(1u, 2u));
  for (uint64_t ep : table_.Reap(T0() + absl::Hours(1) + kLease)) all.push_back(ep);
  EXPECT_THAT(all, UnorderedElementsAre(1u, 2u, 3u));
  EXPECT_THAT(table_.Reap(T0() + absl::Hours(3)), IsEmpty());
}

TEST_F(SessionTableTest, ClosedSessionIsNoSuchSession) {
  // AOBJ-SES-010
  const std::string id = table_.Create(State(1), T0());
  ASSERT_TRUE(table_.Close(id, "AKEXAMPLE").ok());
  EXPECT_EQ(UseCode(table_, id, T0()), ErrorCode::kNoSuchSession);
  EXPECT_EQ(ErrorCodeOf(table_.Close(id, "AKEXAMPLE").status()), ErrorCode::kNoSuchSession);
  EXPECT_EQ(ErrorCodeOf(table_.Admit(id).status()), ErrorCode::kNoSuchSession);
}

}  // namespace
}  // namespace aobj
