// A unary call with raw bytes on the control channel: the client signs exactly the bytes it
// sends (AOBJ-AUTH-002). Used by the client library, the conformance suite and tests (which
// also send malformed bytes and tampered metadata through it).
//
// Threading: RawChannel is thread-safe; each Call is independent.
#ifndef AOBJ_CONTROL_RAW_CALL_H_
#define AOBJ_CONTROL_RAW_CALL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "aobj/v1/aobj.pb.h"
#include <grpcpp/grpcpp.h>
#include <grpcpp/generic/generic_stub.h>

namespace aobj {

struct RawReply {
  grpc::Status grpc_status;
  std::string body;            // response message bytes (when OK)
  absl::Status status;         // grpc_status with the AOBJ code from the trailer
  aobj::v1::Error error;       // the parsed `aobj-error-bin` trailer, if any
  int error_trailers = 0;      // how many `aobj-error-bin` entries the reply carried
  std::string error_trailer;   // the first one's raw bytes
  std::string response_signature;  // `aobj-response-signature` (AOBJ-AUTH-020), if any
};

class RawChannel {
 public:
  // Plaintext channel to `endpoint` ("127.0.0.1:port").
  explicit RawChannel(const std::string& endpoint);
  // Over an existing channel (TLS or not, see control/tls.h).
  explicit RawChannel(std::shared_ptr<grpc::Channel> channel);

  // Sends `body` to `method_path` with `metadata` (key, value) pairs; waits up to `timeout`.
  RawReply Call(const std::string& method_path, const std::string& body,
                const std::vector<std::pair<std::string, std::string>>& metadata,
                absl::Duration timeout) const;

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<grpc::GenericStub> stub_;
};

}  // namespace aobj

#endif  // AOBJ_CONTROL_RAW_CALL_H_
