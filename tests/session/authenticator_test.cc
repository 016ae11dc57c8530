#include "session/authenticator.h"

#include <map>
#include <string>

#include "absl/time/time.h"
#include "aobj/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "session/signer.h"
#include "wire/error_detail.h"
#include "wire/signing.h"

namespace aobj {
namespace {

constexpr char kMethod[] = "/aobj.v1.ObjectService/PutObject";
constexpr char kOpenSession[] = "/aobj.v1.ObjectService/OpenSession";
constexpr char kSession[] = "00112233445566778899aabbccddeeff";
constexpr char kBody[] = "\x0a\x06" "bucket";

const absl::Duration kSkew = absl::Seconds(300);

// A fixed, whole-millisecond server clock (timestamps travel in milliseconds).
absl::Time Now() { return absl::FromUnixMillis(1795000000000); }

std::map<std::string, std::string> Secrets() {
  return {{"AKEXAMPLE", "example-secret-do-not-use"}, {"AKOTHER", "other-secret"}};
}

class AuthenticatorTest : public ::testing::Test {
 protected:
  ErrorCode Verify(const RequestAuth& auth, absl::Time now = Now(),
                   absl::string_view body = kBody) {
    return ErrorCodeOf(auth_.Verify(kMethod, auth, body, /*needs_session=*/true, now));
  }
  RequestAuth Sign(absl::Time at = Now()) const { return signer_.Sign(kMethod, kSession, kBody, at); }

  Authenticator auth_{Secrets(), kSkew};
  RequestSigner signer_{"AKEXAMPLE", "example-secret-do-not-use"};
};

TEST_F(AuthenticatorTest, AcceptsGoodRequestAndRemembersNonce) {
  // AOBJ-AUTH-009, AOBJ-AUTH-008
  EXPECT_EQ(Verify(Sign()), ErrorCode::kOk);
  EXPECT_EQ(auth_.nonces_remembered(), 1u);
}

// AOBJ-AUTH-017 across a restart: a run remembers no nonce from before its start, so a request
// stamped at or before it fails SLOW_DOWN, with a hint of how much earlier it was stamped; one
// stamped later passes, and the refusal recorded nothing.
TEST_F(AuthenticatorTest, NothingStampedBeforeTheStartOfThisRunIsServed) {
  auth_.RememberNothingBefore(Now());
  const RequestAuth old = Sign(Now() - absl::Milliseconds(1500));
  const absl::Status refused = auth_.Verify(kMethod, old, kBody, true, Now() + absl::Seconds(1));
  EXPECT_EQ(ErrorCodeOf(refused), ErrorCode::kSlowDown);
  EXPECT_THAT(std::string(refused.message()), ::testing::HasSubstr("AOBJ-AUTH-017"));
  EXPECT_EQ(Verify(Sign(Now()), Now() + absl::Seconds(1)), ErrorCode::kSlowDown);  // at: refused
  EXPECT_EQ(Verify(Sign(Now() + absl::Milliseconds(1)), Now() + absl::Seconds(1)), ErrorCode::kOk);
  EXPECT_EQ(auth_.nonces_remembered(), 1u);
}

TEST_F(AuthenticatorTest, AcceptsOpenSessionWithoutSession) {
  // AOBJ-AUTH-001: OpenSession carries no session id.
  RequestAuth a = signer_.Sign(kOpenSession, "", "", Now());
  EXPECT_TRUE(auth_.Verify(kOpenSession, a, "", /*needs_session=*/false, Now()).ok());
}

TEST_F(AuthenticatorTest, AcceptsEveryConfiguredPrincipal) {
  // AOBJ-AUTH-005
  RequestSigner other("AKOTHER", "other-secret");
  EXPECT_EQ(Verify(other.Sign(kMethod, kSession, kBody, Now())), ErrorCode::kOk);
}

// AOBJ-SEC-012: the claim check answers exactly what Verify would for a request that fails its
// first steps, and lets through (for queueing) a known key whatever its signature; it records
// nothing.
TEST_F(AuthenticatorTest, CheckClaimAgreesWithVerifyOnItsSteps) {
  RequestAuth good = Sign();
  EXPECT_TRUE(auth_.CheckClaim(good, true).ok());
  RequestAuth forged = good;
  forged.signature_hex = std::string(64, 'c');
  EXPECT_TRUE(auth_.CheckClaim(forged, true).ok()) << "only the signature check can tell";
  EXPECT_EQ(Verify(forged), ErrorCode::kSignatureDoesNotMatch);
  RequestAuth unknown = good;
  unknown.access_key_id = "AKNOBODY";
  EXPECT_EQ(ErrorCodeOf(auth_.CheckClaim(unknown, true)), ErrorCode::kInvalidAccessKeyId);
  EXPECT_EQ(Verify(unknown), ErrorCode::kInvalidAccessKeyId);
  RequestAuth unsigned_request;
  EXPECT_EQ(ErrorCodeOf(auth_.CheckClaim(unsigned_request, true)),
            ErrorCode::kMissingAuthentication);
  EXPECT_EQ(Verify(unsigned_request), ErrorCode::kMissingAuthentication);
  RequestAuth no_session = good;
  no_session.session_hex.clear();
  EXPECT_FALSE(auth_.CheckClaim(no_session, true).ok());
  EXPECT_EQ(auth_.nonces_remembered(), 0u);
}

TEST_F(AuthenticatorTest, RejectsMalformedMetadata) {
  // AOBJ-AUTH-001
  RequestAuth a = Sign();
  a.nonce_hex = "short";
  EXPECT_EQ(Verify(a), ErrorCode::kMissingAuthentication);
  EXPECT_EQ(auth_.nonces_remembered(), 0u);
}

TEST_F(AuthenticatorTest, RejectsUnknownAccessKey) {
  // AOBJ-AUTH-005
  RequestSigner stranger("AKUNKNOWN", "example-secret-do-not-use");
  EXPECT_EQ(Verify(stranger.Sign(kMethod, kSession, kBody, Now())),
            ErrorCode::kInvalidAccessKeyId);
  EXPECT_EQ(auth_.nonces_remembered(), 0u);
}

TEST_F(AuthenticatorTest, RejectsWrongSecret) {
  // AOBJ-AUTH-006
  RequestSigner forger("AKEXAMPLE", "not-the-secret");
  EXPECT_EQ(Verify(forger.Sign(kMethod, kSession, kBody, Now())),
            ErrorCode::kSignatureDoesNotMatch);
}

TEST_F(AuthenticatorTest, RejectsOtherPrincipalsSignatureUnderThisKeyId) {
  // AOBJ-AUTH-006: a signature is bound to the key id's own secret.
  RequestSigner other("AKOTHER", "other-secret");
  RequestAuth a = other.Sign(kMethod, kSession, kBody, Now());
  a.access_key_id = "AKEXAMPLE";
  EXPECT_EQ(Verify(a), ErrorCode::kSignatureDoesNotMatch);
}

TEST_F(AuthenticatorTest, RejectsChangedBody) {
  // AOBJ-AUTH-006, AOBJ-AUTH-012
  EXPECT_EQ(Verify(Sign(), Now(), "\x0a\x06" "buckez"), ErrorCode::kSignatureDoesNotMatch);
}

TEST_F(AuthenticatorTest, BadSignatureDoesNotRecordNonce) {
  // AOBJ-AUTH-008: a request that failed the signature check records nothing, so the same
  // nonce with the right signature is accepted afterwards.
  RequestAuth good = Sign();
  RequestAuth forged = good;
  forged.signature_hex[10] = forged.signature_hex[10] == '0' ? '1' : '0';
  EXPECT_EQ(Verify(forged), ErrorCode::kSignatureDoesNotMatch);
  EXPECT_EQ(auth_.nonces_remembered(), 0u);
  EXPECT_EQ(Verify(good), ErrorCode::kOk);
  EXPECT_EQ(auth_.nonces_remembered(), 1u);
}

TEST_F(AuthenticatorTest, RejectsReplayOfAcceptedRequest) {
  // AOBJ-AUTH-008
  RequestAuth a = Sign();
  ASSERT_EQ(Verify(a), ErrorCode::kOk);
  EXPECT_EQ(Verify(a), ErrorCode::kRequestReplayed);
  EXPECT_EQ(Verify(a, Now() + absl::Seconds(299)), ErrorCode::kRequestReplayed);
  EXPECT_EQ(auth_.nonces_remembered(), 1u);
}

TEST_F(AuthenticatorTest, NoncesAreScopedByAccessKey) {
  // AOBJ-AUTH-008: the (access key ID, nonce) pair is remembered.
  RequestAuth a = Sign();
  ASSERT_EQ(Verify(a), ErrorCode::kOk);
  RequestSigner other("AKOTHER", "other-secret");
  RequestAuth b = other.Sign(kMethod, kSession, kBody, Now());
  b.nonce_hex = a.nonce_hex;
  b.signature_hex = SignRequest(DeriveSigningKey("other-secret"), kMethod, b, kBody);
  EXPECT_EQ(Verify(b), ErrorCode::kOk);
}

TEST_F(AuthenticatorTest, RejectsTimestampTooFarInThePast) {
  // AOBJ-AUTH-007
  EXPECT_EQ(Verify(Sign(Now() - kSkew - absl::Milliseconds(1))),
            ErrorCode::kRequestTimeTooSkewed);
  EXPECT_EQ(auth_.nonces_remembered(), 0u);
}

TEST_F(AuthenticatorTest, SkewedRequestsAreToldTheServersClock) {
  // AOBJ-AUTH-023: the server's clock in the Error, to the millisecond.
  const absl::Status s =
      auth_.Verify(kMethod, Sign(Now() - absl::Hours(1)), kBody, /*needs_session=*/true, Now());
  ASSERT_EQ(ErrorCodeOf(s), ErrorCode::kRequestTimeTooSkewed);
  EXPECT_EQ(ErrorDetail(s).server_time_ms(), 1795000000000u);
  // AOBJ-AUTH-009: a bad signature fails first and says nothing of the clock.
  RequestAuth bad = Sign(Now() - absl::Hours(1));
  bad.signature_hex[0] = bad.signature_hex[0] == 'a' ? 'b' : 'a';
  const absl::Status b = auth_.Verify(kMethod, bad, kBody, /*needs_session=*/true, Now());
  ASSERT_EQ(ErrorCodeOf(b), ErrorCode::kSignatureDoesNotMatch);
  EXPECT_EQ(ErrorDetail(b).server_time_ms(), 0u);
}

TEST_F(AuthenticatorTest, RejectsTimestampTooFarInTheFuture) {
  // AOBJ-AUTH-007
  EXPECT_EQ(Verify(Sign(Now() + kSkew + absl::Milliseconds(1))),
            ErrorCode::kRequestTimeTooSkewed);
  EXPECT_EQ(auth_.nonces_remembered(), 0u);
}

TEST_F(AuthenticatorTest, AcceptsTimestampsAtTheSkewBoundary) {
  // AOBJ-AUTH-007: only a difference that exceeds the window fails.
  EXPECT_EQ(Verify(Sign(Now() - kSkew)), ErrorCode::kOk);
  EXPECT_EQ(Verify(Sign(Now() + kSkew)), ErrorCode::kOk);
}

TEST_F(AuthenticatorTest, SkewedRequestDoesNotRecordNonce) {
  // AOBJ-AUTH-008: a request that failed the time check records nothing.
  RequestAuth a = Sign(Now());
  EXPECT_EQ(Verify(a, Now() + kSkew + absl::Seconds(1)), ErrorCode::kRequestTimeTooSkewed);
  EXPECT_EQ(Verify(a, Now()), ErrorCode::kOk);
}

TEST_F(AuthenticatorTest, RemembersNonceForTwiceTheSkewWindow) {
  // AOBJ-AUTH-008: remembered while any replay could still pass the time check.
  RequestAuth a = Sign(Now() + kSkew);  // accepted at the earliest moment, ts - W
  ASSERT_EQ(Verify(a, Now()), ErrorCode::kOk);
  // The latest moment a replay passes the time check: ts + W = Now() + 2W.
  EXPECT_EQ(Verify(a, Now() + 2 * kSkew), ErrorCode::kRequestReplayed);
}

TEST_F(AuthenticatorTest, ForgetsNoncesAfterTheWindowAndShrinksCache) {
  // AOBJ-AUTH-008: the cache is bounded by the skew window.
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Verify(Sign()), ErrorCode::kOk);
  EXPECT_EQ(auth_.nonces_remembered(), 5u);
  // Past 2W, the old nonces are swept when the next request arrives.
  const absl::Time later = Now() + 2 * kSkew + absl::Seconds(1);
  EXPECT_EQ(Verify(Sign(later), later), ErrorCode::kOk);
  EXPECT_EQ(auth_.nonces_remembered(), 1u);
}

TEST_F(AuthenticatorTest, ForgottenNonceCannotBeReplayedBecauseItIsSkewed) {
  // AOBJ-AUTH-007 / AOBJ-AUTH-008: once forgotten, the old request fails on time instead.
  RequestAuth a = Sign();
  ASSERT_EQ(Verify(a), ErrorCode::kOk);
  const absl::Time later = Now() + 2 * kSkew + absl::Seconds(1);
  EXPECT_EQ(Verify(a, later), ErrorCode::kRequestTimeTooSkewed);
}

RequestAuth SignAt(RequestSigner& s, absl::Time t) { return s.Sign(kMethod, kSession, kBody, t); }

absl::Status VerifyAt(Authenticator& auth, const RequestAuth& a, absl::Time now) {
  return auth.Verify(kMethod, a, kBody, true, now);
}

// AOBJ-AUTH-017: a full cache forgets the oldest nonce of the key holding the most, and refuses
// that key's requests stamped no later than it with SLOW_DOWN, so that a replay of a forgotten
// nonce still fails; a new request of the same key is accepted.
TEST(AuthenticatorCacheTest, AForgottenNonceIsRefusedByItsKeysFloor) {
  Authenticator auth(Secrets(), kSkew, /*max_nonces=*/4);
  RequestSigner signer("AKEXAMPLE", "example-secret-do-not-use");
  const absl::Time t0 = Now();
  std::vector<RequestAuth> sent;
  for (int i = 0; i < 6; ++i) {  // 6 into a cache of 4: the first two are forgotten
    sent.push_back(SignAt(signer, t0 + absl::Milliseconds(10 * i)));
    ASSERT_TRUE(VerifyAt(auth, sent.back(), t0 + absl::Milliseconds(10 * i)).ok()) << i;
  }
  EXPECT_EQ(auth.nonces_remembered(), 4u);
  const absl::Time now = t0 + absl::Seconds(1);
  for (int i = 0; i < 2; ++i) {
    const absl::Status s = VerifyAt(auth, sent[i], now);
    EXPECT_EQ(ErrorCodeOf(s), ErrorCode::kSlowDown) << "forgotten nonce " << i << ": " << s;
  }
  for (int i = 2; i < 6; ++i) {
    EXPECT_EQ(ErrorCodeOf(VerifyAt(auth, sent[i], now)), ErrorCode::kRequestReplayed) << i;
  }
  // A request stamped at the floor is refused even though its nonce is new ...
  EXPECT_EQ(ErrorCodeOf(VerifyAt(auth, SignAt(signer, t0 + absl::Milliseconds(10)), now)),
            ErrorCode::kSlowDown);
  // ... and a new request of the key is served.
  EXPECT_TRUE(VerifyAt(auth, SignAt(signer, now), now).ok());
  // Once the window has passed, the floor refuses nothing the time check would let through.
  const absl::Time later = now + 2 * kSkew + absl::Seconds(1);
  EXPECT_TRUE(VerifyAt(auth, SignAt(signer, later), later).ok());
  EXPECT_EQ(auth.nonces_remembered(), 1u);
}

// AOBJ-AUTH-018 (hostile probes of issue 16, N2 and F5): one access key used to fill the whole
// cache (16,800 RenewSessions a second for 65 s), after which every other principal got
// SLOW_DOWN for up to ten minutes; then half per key left a tenant with two keys able to fill it.
// Now the keys that hold the most pay for room, and no other key's request is refused.
TEST(AuthenticatorCacheTest, NoSetOfKeysCanFillTheCacheForAnother) {
  std::map<std::string, std::string> secrets = Secrets();
  secrets["AKTHIRD"] = "third-secret";
  Authenticator auth(secrets, kSkew, /*max_nonces=*/8);
  RequestSigner a("AKEXAMPLE", "example-secret-do-not-use");
  RequestSigner b("AKOTHER", "other-secret");
  RequestSigner quiet("AKTHIRD", "third-secret");
  const absl::Time t0 = Now();
  const RequestAuth quiet_first = SignAt(quiet, t0);
  ASSERT_TRUE(VerifyAt(auth, quiet_first, t0).ok());
  absl::Time t = t0;
  for (int i = 0; i < 50; ++i) {  // two flooding keys, alternating
    t += absl::Milliseconds(1);
    for (RequestSigner* s : {&a, &b}) {
      const absl::Status st = VerifyAt(auth, SignAt(*s, t), t);
      EXPECT_TRUE(st.ok()) << i << ": " << st;  // a key's new requests are never refused
    }
  }
  EXPECT_EQ(auth.nonces_remembered(), 8u);
  // Two more of the quiet key (it then holds 3 of 8, no more than either flooder).
  for (int i = 0; i < 2; ++i) {
    t += absl::Milliseconds(1);
    EXPECT_TRUE(VerifyAt(auth, SignAt(quiet, t), t).ok()) << "the quiet key, request " << i;
  }
  // The quiet key's first nonce was never forgotten (a replay is still a replay, not refused by
  // a floor): the flooders paid for the room. (Once the quiet key holds as many as the most, it
  // pays for its own requests: the requester's key is chosen on a tie.)
  EXPECT_EQ(ErrorCodeOf(VerifyAt(auth, quiet_first, t)), ErrorCode::kRequestReplayed);
  EXPECT_EQ(auth.nonces_remembered(), 8u);
}

// Fourth hostile probe of issue 16, N4: the floor came from the oldest nonce by arrival, whose
// timestamp a client chose; one client of a key running 200 s ahead then had its key's other
// clients refused for 200 s once its entry was forgotten. The earliest stamped goes first now.
TEST(AuthenticatorCacheTest, AClientAheadOfTimeDoesNotRaiseItsKeysFloor) {
  Authenticator auth(Secrets(), kSkew, /*max_nonces=*/4);
  RequestSigner signer("AKEXAMPLE", "example-secret-do-not-use");
  const absl::Time t0 = Now();
  ASSERT_TRUE(VerifyAt(auth, SignAt(signer, t0 + absl::Seconds(200)), t0).ok());
  for (int i = 1; i <= 10; ++i) {
    const absl::Time t = t0 + absl::Milliseconds(i);
    const absl::Status s = VerifyAt(auth, SignAt(signer, t), t);
    EXPECT_TRUE(s.ok()) << "request " << i << " of a client with a right clock: " << s;
  }
  EXPECT_EQ(auth.nonces_remembered(), 4u);
}

TEST(AuthenticatorCacheTest, ReplayIsReportedEvenWhenCacheIsFull) {
  // AOBJ-AUTH-008: a remembered pair is a replay, whatever the cache fill.
  Authenticator auth(Secrets(), kSkew, /*max_nonces=*/1);
  RequestSigner signer("AKEXAMPLE", "example-secret-do-not-use");
  RequestAuth a = signer.Sign(kMethod, kSession, kBody, Now());
  ASSERT_TRUE(auth.Verify(kMethod, a, kBody, true, Now()).ok());
  EXPECT_EQ(ErrorCodeOf(auth.Verify(kMethod, a, kBody, true, Now())),
            ErrorCode::kRequestReplayed);
}

// --- Verification order (AOBJ-AUTH-009) ---

TEST_F(AuthenticatorTest, MalformedMetadataIsReportedBeforeUnknownKey) {
  // AOBJ-AUTH-009: syntax first.
  RequestSigner stranger("AKUNKNOWN", "x");
  RequestAuth a = stranger.Sign(kMethod, kSession, kBody, Now());
  a.timestamp = "soon";
  EXPECT_EQ(Verify(a), ErrorCode::kMissingAuthentication);
}

TEST_F(AuthenticatorTest, UnknownKeyIsReportedBeforeBadSignatureAndTime) {
  // AOBJ-AUTH-009: key lookup before signature and timestamp.
  RequestSigner stranger("AKUNKNOWN", "x");
  RequestAuth a = stranger.Sign(kMethod, kSession, kBody, Now() - 10 * kSkew);
  a.signature_hex[0] = a.signature_hex[0] == 'a' ? 'b' : 'a';
  EXPECT_EQ(Verify(a), ErrorCode::kInvalidAccessKeyId);
}

TEST_F(AuthenticatorTest, BadSignatureIsReportedBeforeBadTime) {
  // AOBJ-AUTH-009: signature before time, so an unauthenticated peer learns nothing of the clock.
  RequestAuth a = Sign(Now() + 10 * kSkew);
  a.signature_hex[0] = a.signature_hex[0] == 'a' ? 'b' : 'a';
  EXPECT_EQ(Verify(a), ErrorCode::kSignatureDoesNotMatch);
}

TEST_F(AuthenticatorTest, BadTimeIsReportedBeforeReplay) {
  // AOBJ-AUTH-009: timestamp before nonce.
  RequestAuth a = Sign();
  ASSERT_EQ(Verify(a), ErrorCode::kOk);
  EXPECT_EQ(Verify(a, Now() + kSkew + absl::Seconds(1)), ErrorCode::kRequestTimeTooSkewed);
}

}  // namespace
}  // namespace aobj
