// AOBJ_PEER_INPUT: decodes authentication metadata and endpoint challenges (fuzz target in
// fuzz/: auth).
#include "wire/signing.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "wire/crypto.h"

namespace aobj {
namespace {

bool IsLowerHex(absl::string_view s, size_t want_len) {
  if (s.size() != want_len) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

absl::Status Missing(const char* what) {
  return MakeError(ErrorCode::kMissingAuthentication, what);
}

}  // namespace

std::string DeriveSigningKey(absl::string_view secret) {
  Sha256Digest d = HmacSha256(absl::StrCat("AOBJ1", secret), "aobj1_request");
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

std::string CanonicalRequest(absl::string_view method, const RequestAuth& auth,
                             absl::string_view body) {
  return absl::StrCat(kSignatureAlgorithm, "\n", method, "\n", auth.access_key_id, "\n",
                      auth.timestamp, "\n", auth.nonce_hex, "\n", auth.session_hex, "\n",
                      HexEncode(Sha256(body)));
}

std::vector<std::pair<std::string, std::string>> AuthMetadata(const RequestAuth& auth) {
  std::vector<std::pair<std::string, std::string>> md = {
      {kMetaAccessKeyId, auth.access_key_id},
      {kMetaTimestamp, auth.timestamp},
      {kMetaNonce, auth.nonce_hex},
      {kMetaSignature, auth.signature_hex}};
  if (!auth.session_hex.empty()) md.emplace_back(kMetaSessionId, auth.session_hex);
  return md;
}

std::string SignRequest(absl::string_view signing_key, absl::string_view method,
                        const RequestAuth& auth, absl::string_view body) {
  return HexEncode(HmacSha256(signing_key, CanonicalRequest(method, auth, body)));
}

absl::Status CheckAuthSyntax(const RequestAuth& auth, bool needs_session, int64_t* timestamp_ms) {
  // AOBJ-AUTH-001: every field present and well formed.
  if (auth.access_key_id.empty() || auth.access_key_id.size() > kMaxAccessKeyIdBytes) {
    return Missing("aobj-access-key-id is missing or longer than 128 bytes");
  }
  for (char c : auth.access_key_id) {
    if (c <= ' ' || c > '~') return Missing("aobj-access-key-id has a non-printable character");
  }
  int64_t ts = 0;
  // 1*19DIGIT: every octet checked here, since SimpleAtoi also accepts surrounding whitespace.
  if (auth.timestamp.empty() || auth.timestamp.size() > 19 ||
      !std::all_of(auth.timestamp.begin(), auth.timestamp.end(),
                   [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); }) ||
      !absl::SimpleAtoi(auth.timestamp, &ts)) {
    return Missing("aobj-timestamp is missing or not decimal milliseconds");
  }
  if (!IsLowerHex(auth.nonce_hex, 2 * kNonceBytes)) {
    return Missing("aobj-nonce must be 32 lower-case hex characters");
  }
  if (needs_session) {
    if (!IsLowerHex(auth.session_hex, 2 * kSessionIdBytes)) {
      return Missing("aobj-session-id must be 32 lower-case hex characters");
    }
  } else if (!auth.session_hex.empty()) {
    return Missing("OpenSession must not carry aobj-session-id");
  }
  if (!IsLowerHex(auth.signature_hex, 64)) {
    return Missing("aobj-signature must be 64 lower-case hex characters");
  }
  *timestamp_ms = ts;
  return absl::OkStatus();
}

absl::Status VerifySignature(absl::string_view signing_key, absl::string_view method,
                             const RequestAuth& auth, absl::string_view body) {
  const std::string expected = SignRequest(signing_key, method, auth, body);
  if (!ConstantTimeEquals(expected, auth.signature_hex)) {
    return MakeError(ErrorCode::kSignatureDoesNotMatch,
                     "the request signature does not match the one computed by the server");
  }
  return absl::OkStatus();
}

std::string SignOpenSessionResponse(absl::string_view signing_key,
                                    absl::string_view request_signature_hex,
                                    absl::string_view response) {
  const std::string data =
      absl::StrCat("AOBJ1-RESPONSE\n", request_signature_hex, "\n", HexEncode(Sha256(response)));
  return HexEncode(HmacSha256(signing_key, data));
}

absl::Status VerifyOpenSessionResponse(absl::string_view signing_key,
                                       absl::string_view request_signature_hex,
                                       absl::string_view response,
                                       absl::string_view response_signature_hex) {
  if (response_signature_hex.empty()) {
    return MakeError(ErrorCode::kSignatureDoesNotMatch,
                     "the OpenSession response carries no aobj-response-signature "
                     "(AOBJ-AUTH-020); its version, capabilities and limits cannot be trusted");
  }
  const std::string expected =
      SignOpenSessionResponse(signing_key, request_signature_hex, response);
  if (!ConstantTimeEquals(expected, response_signature_hex)) {
    return MakeError(ErrorCode::kSignatureDoesNotMatch,
                     "the OpenSession response's aobj-response-signature does not match: the "
                     "response was altered on its way or the server does not hold this key");
  }
  return absl::OkStatus();
}

std::string DeriveEndpointKey(absl::string_view signing_key, absl::string_view session_id) {
  const Sha256Digest d = HmacSha256(signing_key, absl::StrCat("aobj1_endpoint", session_id));
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

std::string EndpointProof(absl::string_view endpoint_key, absl::string_view session_id,
                          absl::string_view challenges) {
  const Sha256Digest d =
      HmacSha256(endpoint_key, absl::StrCat("aobj1_endpoint_proof", session_id, challenges));
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

bool ParseEndpointChallenge(const void* payload, size_t length, EndpointChallenge* out) {
  if (payload == nullptr || length != kEndpointChallengePayloadBytes) return false;
  const char* p = static_cast<const char*>(payload);
  const size_t index = static_cast<uint8_t>(p[16]);
  if (index >= kMaxEndpointChallenges) return false;
  out->session_id = absl::string_view(p, 16);
  out->index = index;
  out->challenge = absl::string_view(p + 17, kEndpointChallengeBytes);
  return true;
}

}  // namespace aobj
