// Client-side request signing (spec "Credentials", AOBJ-AUTH-002/003).
// Threading: thread-safe (immutable after construction; RandomBytes is thread-safe).
#ifndef AOBJ_SESSION_SIGNER_H_
#define AOBJ_SESSION_SIGNER_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "wire/signing.h"

namespace aobj {

class RequestSigner {
 public:
  RequestSigner(std::string access_key_id, absl::string_view secret);
  // Authentication fields for one request: a fresh nonce, `now` as the timestamp, and the
  // signature over `body`, the exact serialized request.
  RequestAuth Sign(absl::string_view method, absl::string_view session_hex,
                   absl::string_view body, absl::Time now) const;
  // AOBJ-SES-026: the ConfirmEndpoint proof for session `session_id` (16 raw octets) over the
  // endpoint challenges received (concatenated in index order).
  std::string EndpointProof(absl::string_view session_id, absl::string_view challenges) const;
  // AOBJ-AUTH-021: checks the server's signature over an OpenSession response (the exact
  // octets) answering the request signed as `request`.
  absl::Status VerifyOpenSessionResponse(const RequestAuth& request, absl::string_view response,
                                         absl::string_view response_signature_hex) const;

 private:
  std::string access_key_id_;
  std::string signing_key_;  // derived; the secret itself is not kept
};

}  // namespace aobj

#endif  // AOBJ_SESSION_SIGNER_H_
