#include "control/rpc.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "aobj/status.h"
#include "wire/error_detail.h"
#include "wire/error_registry.h"

namespace aobj {
namespace {

grpc::StatusCode ToGrpcCode(absl::StatusCode code) {
  // absl and gRPC share the canonical code numbering.
  return static_cast<grpc::StatusCode>(static_cast<int>(code));
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status, std::string* trailer_value,
                          const aobj::v1::VersionRange* supported) {
  trailer_value->clear();
  if (status.ok()) return grpc::Status::OK;
  const ErrorInfo info = GetErrorInfo(ErrorCodeOf(status));
  ErrorDetail(status, supported).SerializeToString(trailer_value);
  // AOBJ-ERR-005: the gRPC code of the registry row (INTERNAL for unknown and private codes).
  return grpc::Status(ToGrpcCode(info.canonical),
                      absl::StrCat(std::string(info.s3_code), ": ", status.message()));
}

namespace {

// What a call that ended without an AOBJ reply says about the transport, in a user's words.
std::string DescribeTransportFailure(const grpc::Status& status) {
  const std::string m = absl::AsciiStrToLower(status.error_message());
  auto has = [&](absl::string_view s) { return absl::StrContains(m, s); };
  if (has("connection refused")) return "connection refused";
  if (has("dns resolution failed") || has("domain name not found") ||
      has("name or service not known")) {
    return "cannot resolve the host name";
  }
  if (has("handshake") || has("ssl") || has("tls") || has("certificate")) {
    return "TLS handshake failed";
  }
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED || has("deadline") ||
      has("timed out") || has("timeout")) {
    return "no answer within the deadline";
  }
  if (has("connection reset") || has("socket closed") || has("broken pipe") || has("goaway") ||
      has("connection closed") || has("eof")) {
    return "the connection was lost";
  }
  if (has("no route") || has("network is unreachable")) return "no route to the host";
  return status.error_message().empty()
             ? absl::StrCat("gRPC code ", static_cast<int>(status.error_code()))
             : status.error_message();
}

}  // namespace

absl::Status FromGrpcStatus(const grpc::Status& status,
                            const std::multimap<grpc::string_ref, grpc::string_ref>& trailers,
                            aobj::v1::Error* detail) {
  if (status.ok()) return absl::OkStatus();
  auto it = trailers.find(kErrorTrailer);
  aobj::v1::Error error;
  if (it != trailers.end() &&
      error.ParseFromArray(it->second.data(), static_cast<int>(it->second.size())) &&
      error.code() != aobj::v1::ERROR_CODE_UNSPECIFIED) {
    if (detail != nullptr) *detail = error;
    // AOBJ-EXT-004: an unknown (or grease) code keeps its number; GetErrorInfo treats it as
    // INTERNAL.
    if (error.code() == aobj::v1::ERROR_CODE_REQUEST_TIME_TOO_SKEWED &&
        error.server_time_ms() != 0) {
      // AOBJ-AUTH-023: said, never applied to this host's timestamps (AOBJ-AUTH-024).
      const int64_t ahead_ms =
          static_cast<int64_t>(error.server_time_ms()) - absl::ToUnixMillis(absl::Now());
      return MakeError(
          static_cast<ErrorCode>(error.code()),
          absl::StrCat(error.message(), " [the server's clock is about ", std::abs(ahead_ms) / 1000,
                       " s ", ahead_ms >= 0 ? "ahead of" : "behind", " this host's]"));
    }
    return MakeError(static_cast<ErrorCode>(error.code()), error.message());
  }
  // AOBJ-SEC-015: a server's transport cancels streams under memory pressure (AOBJ-SEC-012)
  // with RESOURCE_EXHAUSTED and no AOBJ error. The reference client never sends a message above
  // what AOBJ-CTL-005 obliges a server to accept (its inline bodies are at most the negotiated
  // threshold), so such a call had no effect and is retryable.
  if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
    return MakeError(ErrorCode::kSlowDown,
                     absl::StrCat("the server's control channel shed the call under load (",
                                  status.error_message(), "); retry later"));
  }
  absl::Status out =
      MakeError(ErrorCode::kInternal,
                absl::StrCat("control channel: ", status.error_message(), " (gRPC code ",
                             static_cast<int>(status.error_code()), ")"));
  out.SetPayload(kControlChannelPayloadUrl, absl::Cord(DescribeTransportFailure(status)));
  return out;
}

}  // namespace aobj
