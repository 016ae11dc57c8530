// Request authentication: the canonical form and HMAC-SHA256 signatures of AOBJ/1
// (spec section "Credentials and request authentication", AOBJ-AUTH-001..003).
//
// Pure: no clocks, no I/O. The caller supplies the timestamp and nonce.
#ifndef AOBJ_WIRE_SIGNING_H_
#define AOBJ_WIRE_SIGNING_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace aobj {

// gRPC metadata keys that carry authentication (AOBJ-AUTH-001).
inline constexpr char kMetaAccessKeyId[] = "aobj-access-key-id";
inline constexpr char kMetaTimestamp[] = "aobj-timestamp";
inline constexpr char kMetaNonce[] = "aobj-nonce";
inline constexpr char kMetaSessionId[] = "aobj-session-id";
inline constexpr char kMetaSignature[] = "aobj-signature";
// Trailing metadata of a successful OpenSession: the server's signature over the response
// (AOBJ-AUTH-020).
inline constexpr char kMetaResponseSignature[] = "aobj-response-signature";
inline constexpr char kSignatureAlgorithm[] = "AOBJ1-HMAC-SHA256";

inline constexpr size_t kNonceBytes = 16;
inline constexpr size_t kSessionIdBytes = 16;
inline constexpr size_t kMaxAccessKeyIdBytes = 128;

// The authentication fields of one request, as they travel (text forms).
struct RequestAuth {
  std::string access_key_id;
  std::string timestamp;   // decimal Unix epoch milliseconds
  std::string nonce_hex;   // 32 lower-case hex chars
  std::string session_hex; // 32 lower-case hex chars, empty for OpenSession
  std::string signature_hex;
};

// The metadata entries that carry `auth` on a call (AOBJ-AUTH-001): access key, timestamp,
// nonce, signature, and the session when `auth.session_hex` is not empty.
std::vector<std::pair<std::string, std::string>> AuthMetadata(const RequestAuth& auth);

// AOBJ-AUTH-003: signing key = HMAC-SHA256("AOBJ1" || secret, "aobj1_request"). The server may
// keep only this key.
std::string DeriveSigningKey(absl::string_view secret);

// AOBJ-AUTH-002: the canonical string of a request. `body` is the exact serialized request.
std::string CanonicalRequest(absl::string_view method, const RequestAuth& auth,
                             absl::string_view body);

// Lower-case hex HMAC-SHA256(signing_key, CanonicalRequest(...)).
std::string SignRequest(absl::string_view signing_key, absl::string_view method,
                        const RequestAuth& auth, absl::string_view body);

// Syntax checks of the metadata fields (AOBJ-AUTH-001), without the key lookup or the time:
// MISSING_AUTHENTICATION on any malformed field. On success `*timestamp_ms` holds the time.
absl::Status CheckAuthSyntax(const RequestAuth& auth, bool needs_session, int64_t* timestamp_ms);

// Constant-time check of auth.signature_hex against the expected signature (AOBJ-AUTH-006).
absl::Status VerifySignature(absl::string_view signing_key, absl::string_view method,
                             const RequestAuth& auth, absl::string_view body);

// AOBJ-AUTH-020: the signature a server sends with a successful OpenSession response, lower-case
// hex HMAC-SHA256(signing key, "AOBJ1-RESPONSE\n" || the request's aobj-signature || "\n" ||
// lower-case hex SHA-256(response)), `response` the exact octets of the response message. It
// binds what the server answered to the offer the client signed.
std::string SignOpenSessionResponse(absl::string_view signing_key,
                                    absl::string_view request_signature_hex,
                                    absl::string_view response);
// AOBJ-AUTH-021: SIGNATURE_DOES_NOT_MATCH unless `response_signature_hex` is that signature
// (constant time); an absent one (empty) fails too.
absl::Status VerifyOpenSessionResponse(absl::string_view signing_key,
                                       absl::string_view request_signature_hex,
                                       absl::string_view response,
                                       absl::string_view response_signature_hex);

// Endpoint binding (spec 5.6, AOBJ-SES-026). The endpoint key is what a session delegates to the
// process behind its worker address: HMAC-SHA256(key = signing key, data = "aobj1_endpoint" ||
// session_id), with the 16 raw octets of the session ID. Holding it lets a process prove the
// endpoint for that one session, and sign nothing.
std::string DeriveEndpointKey(absl::string_view signing_key, absl::string_view session_id);
// The 32-octet proof: HMAC-SHA256(key = endpoint key, data = "aobj1_endpoint_proof" ||
// session_id || the challenges in index order). `challenges` is their concatenation.
std::string EndpointProof(absl::string_view endpoint_key, absl::string_view session_id,
                          absl::string_view challenges);

// Active-message id and payload layout of an endpoint challenge (spec 5.6, 12.9): the 16-octet
// session ID, one octet of challenge index, then the 32-octet challenge.
inline constexpr unsigned kEndpointChallengeAmId = 0x41;
inline constexpr size_t kEndpointChallengeBytes = 32;
inline constexpr size_t kEndpointChallengePayloadBytes = 16 + 1 + kEndpointChallengeBytes;
// At most this many challenges per session (one per endpoint lane the server uses).
inline constexpr size_t kMaxEndpointChallenges = 4;

// One received endpoint challenge (peer input): the exact 49-octet layout with an index below
// kMaxEndpointChallenges, else false. The views point into `payload`.
struct EndpointChallenge {
  absl::string_view session_id;  // 16 octets
  size_t index = 0;
  absl::string_view challenge;   // 32 octets
};
bool ParseEndpointChallenge(const void* payload, size_t length, EndpointChallenge* out);

}  // namespace aobj

#endif  // AOBJ_WIRE_SIGNING_H_
