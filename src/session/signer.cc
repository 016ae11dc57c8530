#include "session/signer.h"

#include "absl/strings/str_cat.h"
#include "wire/crypto.h"

namespace aobj {

RequestSigner::RequestSigner(std::string access_key_id, absl::string_view secret)
    : access_key_id_(std::move(access_key_id)), signing_key_(DeriveSigningKey(secret)) {}

RequestAuth RequestSigner::Sign(absl::string_view method, absl::string_view session_hex,
                                absl::string_view body, absl::Time now) const {
  RequestAuth auth;
  auth.access_key_id = access_key_id_;
  auth.timestamp = absl::StrCat(absl::ToUnixMillis(now));
  auth.nonce_hex = HexEncode(RandomBytes(kNonceBytes));  // AOBJ-AUTH-011: CSPRNG, per request
  auth.session_hex = std::string(session_hex);
  auth.signature_hex = SignRequest(signing_key_, method, auth, body);
  return auth;
}

std::string RequestSigner::EndpointProof(absl::string_view session_id,
                                         absl::string_view challenges) const {
  return aobj::EndpointProof(DeriveEndpointKey(signing_key_, session_id), session_id, challenges);
}

absl::Status RequestSigner::VerifyOpenSessionResponse(
    const RequestAuth& request, absl::string_view response,
    absl::string_view response_signature_hex) const {
  return aobj::VerifyOpenSessionResponse(signing_key_, request.signature_hex, response,
                                         response_signature_hex);
}

}  // namespace aobj
