// Errors at the gRPC edge as a client reads them (src/control/rpc.h FromGrpcStatus).
#include <grpcpp/grpcpp.h>

#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "aobj/status.h"
#include "aobj/v1/aobj.pb.h"
#include "control/rpc.h"
#include "gtest/gtest.h"
#include "session/signer.h"
#include "wire/error_detail.h"

namespace aobj {
namespace {

using Trailers = std::multimap<grpc::string_ref, grpc::string_ref>;

// AOBJ-FLO-006: a retry hint travels in the Error, capped at a minute and at least 1 ms; a
// status without one carries 0.
TEST(GrpcStatusTest, RetryAfterTravelsInTheErrorCapped) {
  const absl::Status slow = MakeError(ErrorCode::kSlowDown, "busy");
  EXPECT_EQ(ErrorDetail(WithRetryAfter(slow, absl::Milliseconds(100))).retry_after_ms(), 100u);
  EXPECT_EQ(ErrorDetail(WithRetryAfter(slow, absl::Minutes(5))).retry_after_ms(), 60000u);
  EXPECT_EQ(ErrorDetail(WithRetryAfter(slow, absl::ZeroDuration())).retry_after_ms(), 1u);
  EXPECT_EQ(ErrorDetail(slow).retry_after_ms(), 0u);
}

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

// AOBJ-AUTH-023, AOBJ-AUTH-024: the client says how far the server's clock is, and its signer
// keeps stamping requests with this host's clock.
TEST(GrpcStatusTest, SkewedTimeIsReportedNotApplied) {
  aobj::v1::Error e = ErrorDetail(MakeError(ErrorCode::kRequestTimeTooSkewed, "too skewed"));
  e.set_server_time_ms(static_cast<uint64_t>(absl::ToUnixMillis(absl::Now() + absl::Hours(2))));
  const std::string trailer = e.SerializeAsString();
  Trailers t;
  t.emplace(grpc::string_ref(kErrorTrailer), grpc::string_ref(trailer));
  const absl::Status s =
      FromGrpcStatus(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "skewed"), t, nullptr);
  EXPECT_EQ(ErrorCodeOf(s), ErrorCode::kRequestTimeTooSkewed);
  EXPECT_NE(s.message().find("s ahead of this host's"), std::string::npos) << s;
  EXPECT_TRUE(s.message().find("about 7199 s") != std::string::npos ||
              s.message().find("about 7200 s") != std::string::npos)
      << s;
  const absl::Time before = absl::Now();
  const RequestAuth a = RequestSigner("AKEXAMPLE", "x").Sign("m", "", "", absl::Now());
  int64_t ms = 0;
  ASSERT_TRUE(absl::SimpleAtoi(a.timestamp, &ms));
  EXPECT_LE(std::abs(ms - absl::ToUnixMillis(before)), 5000);
}

}  // namespace
}  // namespace aobj
