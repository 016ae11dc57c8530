// Control-channel credentials: TLS, mutual TLS, or explicitly requested plaintext
// (spec section 3.6, AOBJ-CTL-009, AOBJ-CTL-011, AOBJ-CTL-012).
#ifndef AOBJ_CONTROL_TLS_H_
#define AOBJ_CONTROL_TLS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "aobj/types.h"
#include <grpcpp/grpcpp.h>

namespace aobj {

// Server credentials from `tls`. Without TLS, plaintext only when `allow_plaintext`
// (AOBJ-CTL-011); otherwise INVALID_ARGUMENT naming the missing setting.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsOptions& tls, bool allow_plaintext);

// A channel to `endpoint`: TLS when tls.enabled (verifying the server certificate against
// tls.ca_file or the system roots, presenting tls.cert_file/key_file when set), plaintext
// otherwise. `max_send_bytes` bounds outgoing messages.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& endpoint,
                                                           const TlsOptions& tls,
                                                           int max_send_bytes = 8 << 20);

}  // namespace aobj

#endif  // AOBJ_CONTROL_TLS_H_
