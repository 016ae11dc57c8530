// Errors at the gRPC edge as a client reads them (src/control/rpc.h FromGrpcStatus).
#include <grpcpp/grpcpp.h>

#include <map>
#include <string>

#include "aobj/status.h"
#include "aobj/v1/aobj.pb.h"
#include "control/rpc.h"
#include "gtest/gtest.h"

namespace aobj {
namespace {

using Trailers = std::multimap<grpc::string_ref, grpc::string_ref>;

// AOBJ-SEC-015: a stream the server's transport cancelled under memory pressure (gRPC
// RESOURCE_EXHAUSTED, no AOBJ error) is SLOW_DOWN, which is retryable; before, it was INTERNAL
// and nothing retried it.
TEST(GrpcStatusTest, TransportResourceExhaustedIsRetryableSlowDown) {
  const Trailers none;
  const absl::Status s = FromGrpcStatus(
      grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "Buffers full"), none, nullptr);
  EXPECT_EQ(ErrorCodeOf(s), ErrorCode::kSlowDown);
  EXPECT_TRUE(GetErrorInfo(ErrorCodeOf(s)).retryable);
  EXPECT_NE(s.message().find("Buffers full"), std::string::npos) << s;
  // Other transport failures without an AOBJ error stay INTERNAL.
  EXPECT_EQ(ErrorCodeOf(
                FromGrpcStatus(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "x"), none, nullptr)),
            ErrorCode::kInternal);
}

// An AOBJ error in the trailer always wins, RESOURCE_EXHAUSTED included (TOO_MANY_UPLOADS
// travels as RESOURCE_EXHAUSTED and is not SLOW_DOWN).
TEST(GrpcStatusTest, TheErrorTrailerWins) {
  std::string trailer;
  const grpc::Status gs =
      ToGrpcStatus(MakeError(ErrorCode::kTooManyUploads, "full"), &trailer, nullptr);
  EXPECT_EQ(gs.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  Trailers t;
  t.emplace(grpc::string_ref(kErrorTrailer), grpc::string_ref(trailer));
  EXPECT_EQ(ErrorCodeOf(FromGrpcStatus(gs, t, nullptr)), ErrorCode::kTooManyUploads);
}

}  // namespace
}  // namespace aobj
