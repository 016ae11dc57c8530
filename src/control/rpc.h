// The control channel's gRPC edge: method names, errors in trailers, and the client call helper
// (spec "Control channel", AOBJ-CTL-001, AOBJ-CTL-002).
//
// Errors travel as a non-OK grpc::Status plus the binary trailer `aobj-error-bin` holding an
// aobj.v1.Error; this file is the only place that converts between absl::Status and grpc::Status.
#ifndef AOBJ_CONTROL_RPC_H_
#define AOBJ_CONTROL_RPC_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "aobj/v1/aobj.pb.h"
#include "wire/methods.h"

namespace aobj {

inline constexpr char kErrorTrailer[] = "aobj-error-bin";
// RenewSession metadata naming a running data request of the session to stop, by its
// `aobj-nonce` (32 lower-case hex characters; AOBJ-DAT-156). Outside the signature.
inline constexpr char kMetaCancel[] = "aobj-cancel";

// Server edge: the grpc::Status for `status`, with the Error detail serialized into
// `*trailer_value` (to be sent as the kErrorTrailer trailing metadata). `supported` is set for
// UNSUPPORTED_VERSION (AOBJ-SES-003).
grpc::Status ToGrpcStatus(const absl::Status& status, std::string* trailer_value,
                          const aobj::v1::VersionRange* supported = nullptr);

// Client edge: the absl::Status of a finished call. Uses the AOBJ code from the trailer
// (AOBJ-ERR-003); a call that failed without one (the channel broke) is INTERNAL, retryable,
// with gRPC's message. `detail` (optional) receives the parsed Error.
absl::Status FromGrpcStatus(const grpc::Status& status,
                            const std::multimap<grpc::string_ref, grpc::string_ref>& trailers,
                            aobj::v1::Error* detail = nullptr);

}  // namespace aobj

#endif  // AOBJ_CONTROL_RPC_H_
