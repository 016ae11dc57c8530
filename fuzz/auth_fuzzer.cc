// Request authentication with hostile metadata and bodies (spec section 6). The input drives
// every metadata field, the method, the body and the clock. Invariants: a request the fuzzer
// signed correctly verifies exactly once (the replay is refused); any tampered field is refused.
// AOBJ_FUZZ_COVERS: src/session/authenticator.cc
// AOBJ_FUZZ_COVERS: src/wire/signing.cc
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "aobj/status.h"
#include "fuzz_util.h"
#include "session/authenticator.h"
#include "session/signer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const absl::Time now = absl::FromUnixMillis(1795000000000);
  aobj::Authenticator auth({{"AKFUZZ", "fuzz-secret"}}, absl::Seconds(300), 64);
  const std::string method = in.ConsumeRandomLengthString(64);
  const bool with_session = in.ConsumeBool();

  // 1. Arbitrary metadata: must never crash; may or may not verify (it should not).
  aobj::RequestAuth raw;
  raw.access_key_id = in.ConsumeRandomLengthString(140);
  raw.timestamp = in.ConsumeRandomLengthString(24);
  raw.nonce_hex = in.ConsumeRandomLengthString(40);
  raw.session_hex = in.ConsumeRandomLengthString(40);
  raw.signature_hex = in.ConsumeRandomLengthString(70);
  const std::string body = in.ConsumeRandomLengthString(4096);
  (void)auth.Verify(method, raw, body, with_session, now);

  // 1b. An endpoint challenge as it arrives by active message (AOBJ-SES-029): only the exact
  // layout parses, and the views stay inside it.
  aobj::EndpointChallenge challenge;
  if (aobj::ParseEndpointChallenge(body.data(), body.size(), &challenge)) {
    AOBJ_FUZZ_CHECK(body.size() == aobj::kEndpointChallengePayloadBytes);
    AOBJ_FUZZ_CHECK(challenge.index < aobj::kMaxEndpointChallenges);
    AOBJ_FUZZ_CHECK(challenge.session_id.data() == body.data() &&
                    challenge.challenge.data() + challenge.challenge.size() ==
                        body.data() + body.size());
  } else {
    AOBJ_FUZZ_CHECK(body.size() != aobj::kEndpointChallengePayloadBytes ||
                    static_cast<uint8_t>(body[16]) >= aobj::kMaxEndpointChallenges);
  }

  // 2. A correctly signed request at a fuzzed clock offset.
  const int64_t skew_ms = in.ConsumeIntegralInRange<int64_t>(-600000, 600000);
  aobj::RequestSigner signer("AKFUZZ", "fuzz-secret");
  const std::string session = with_session ? std::string(32, 'a') : "";
  aobj::RequestAuth good =
      signer.Sign(method, session, body, now + absl::Milliseconds(skew_ms));
  absl::Status first = auth.Verify(method, good, body, with_session, now);
  if (std::abs(skew_ms) <= 300000) {
    AOBJ_FUZZ_CHECK(first.ok());
    AOBJ_FUZZ_CHECK(aobj::ErrorCodeOf(auth.Verify(method, good, body, with_session, now)) ==
                    aobj::ErrorCode::kRequestReplayed);
  } else {
    AOBJ_FUZZ_CHECK(aobj::ErrorCodeOf(first) == aobj::ErrorCode::kRequestTimeTooSkewed);
  }

  // 3. One tampered byte of the body must break the signature.
  if (!body.empty()) {
    std::string tampered = body;
    const size_t at = in.ConsumeIntegralInRange<size_t>(0, tampered.size() - 1);
    tampered[at] = static_cast<char>(tampered[at] ^ (1 + in.ConsumeIntegralInRange<int>(0, 254)));
    aobj::RequestAuth again = signer.Sign(method, session, body, now);
    AOBJ_FUZZ_CHECK(aobj::ErrorCodeOf(auth.Verify(method, again, tampered, with_session, now)) ==
                    aobj::ErrorCode::kSignatureDoesNotMatch);
  }
  return 0;
}
