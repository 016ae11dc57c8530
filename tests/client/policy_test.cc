// The client's named policies, apart from any server: the busy-retry policy every call goes
// through (BusyRetryPolicy, session_channel.h) and the plan of a multipart upload (UploadPlan,
// uploader.h).
#include <gtest/gtest.h>

#include "client/session_channel.h"
#include "client/uploader.h"

namespace aobj::client_internal {
namespace {

RawReply ErrorReply(ErrorCode code) {
  RawReply r;
  r.grpc_status = grpc::Status(grpc::StatusCode::UNKNOWN, "refused");
  r.status = MakeError(code, "refused");
  r.error.set_code(static_cast<aobj::v1::ErrorCode>(code));
  return r;
}

// A reply that never came: the connection was refused or closed, no AOBJ error.
RawReply Unavailable() {
  RawReply r;
  r.grpc_status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection closed");
  r.status = MakeError(ErrorCode::kInternal, "connection closed");
  return r;
}

TEST(BusyRetryPolicyTest, RetriesOnlyWhatTheServerDidNotDo) {
  // AOBJ-FLO-003: the server did nothing for SLOW_DOWN or TOO_MANY_TRANSFERS, whatever the
  // method.
  for (Method m : {Method::kPutObject, Method::kGetObject, Method::kCompleteMultipartUpload}) {
    EXPECT_TRUE(BusyRetryPolicy::Retries(m, ErrorReply(ErrorCode::kSlowDown)));
    EXPECT_TRUE(BusyRetryPolicy::Retries(m, ErrorReply(ErrorCode::kTooManyTransfers)));
  }
  // Any other AOBJ error is an answer.
  for (ErrorCode c : {ErrorCode::kNoSuchKey, ErrorCode::kInternal, ErrorCode::kPreconditionFailed,
                      ErrorCode::kSessionExpired}) {
    EXPECT_FALSE(BusyRetryPolicy::Retries(Method::kHeadObject, ErrorReply(c)));
  }
  // AOBJ-ERR-011: an unknown outcome is sent again only for a request that changes nothing.
  EXPECT_TRUE(BusyRetryPolicy::Retries(Method::kHeadObject, Unavailable()));
  EXPECT_TRUE(BusyRetryPolicy::Retries(Method::kListObjectsV2, Unavailable()));
  EXPECT_TRUE(BusyRetryPolicy::Retries(Method::kOpenSession, Unavailable()));
  EXPECT_FALSE(BusyRetryPolicy::Retries(Method::kPutObject, Unavailable()));
  EXPECT_FALSE(BusyRetryPolicy::Retries(Method::kDeleteObject, Unavailable()));
  EXPECT_FALSE(BusyRetryPolicy::Retries(Method::kCompleteMultipartUpload, Unavailable()));
  // A deadline without a reply is not a refusal.
  RawReply late = Unavailable();
  late.grpc_status = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "late");
  EXPECT_FALSE(BusyRetryPolicy::Retries(Method::kHeadObject, late));
}

TEST(BusyRetryPolicyTest, PausesDoubleRandomlyUpToTheCap) {
  for (int attempt = 0; attempt < 40; ++attempt) {
    const int64_t ceiling = std::min<int64_t>(
        BusyRetryPolicy::kFirstPauseUs << std::min(attempt, BusyRetryPolicy::kMaxDoublings),
        BusyRetryPolicy::kMaxPauseUs);
    for (int draw = 0; draw < 20; ++draw) {
      const int64_t us = absl::ToInt64Microseconds(BusyRetryPolicy::Pause(attempt));
      EXPECT_GE(us, ceiling / 2) << "attempt " << attempt;
      EXPECT_LE(us, ceiling) << "attempt " << attempt;
    }
  }
  EXPECT_EQ(BusyRetryPolicy::kFirstPauseUs * 2, 40000);
  // The upper half of the range is drawn from, not one point: 200 draws are not all equal.
  const absl::Duration first = BusyRetryPolicy::Pause(3);
  bool varied = false;
  for (int draw = 0; draw < 200 && !varied; ++draw) varied = BusyRetryPolicy::Pause(3) != first;
  EXPECT_TRUE(varied);
}

TEST(UploadPlanTest, CutsTheObjectIntoParts) {
  auto plan = UploadPlan::Make(/*buffer_size=*/100, /*size=*/25, /*part_size=*/10,
                               /*parallelism=*/0, /*max_in_flight=*/64);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->parts, 3u);
  EXPECT_EQ(plan->lanes, 3u);  // never more lanes than parts
  EXPECT_EQ(plan->offset(0), 0u);
  EXPECT_EQ(plan->length(0), 10u);
  EXPECT_EQ(plan->offset(2), 20u);
  EXPECT_EQ(plan->length(2), 5u);  // the last part is shorter

  auto exact = UploadPlan::Make(100, 30, 10, 0, 64);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->parts, 3u);
  EXPECT_EQ(exact->length(2), 10u);

  // An empty object is one empty part.
  auto empty = UploadPlan::Make(100, 0, 10, 0, 64);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->parts, 1u);
  EXPECT_EQ(empty->length(0), 0u);
  EXPECT_EQ(empty->lanes, 1u);
}

TEST(UploadPlanTest, LanesStayWithinTheSession) {
  // parallelism 0: the session's max_in_flight, at most 16.
  EXPECT_EQ(UploadPlan::Make(1000, 1000, 1, 0, 64)->lanes, 16u);
  EXPECT_EQ(UploadPlan::Make(1000, 1000, 1, 0, 4)->lanes, 4u);
  // AOBJ-FLO-001: an explicit parallelism never passes max_in_flight.
  EXPECT_EQ(UploadPlan::Make(1000, 1000, 1, 32, 8)->lanes, 8u);
  EXPECT_EQ(UploadPlan::Make(1000, 1000, 1, 3, 8)->lanes, 3u);
  // A session that allows nothing in flight still sends one part at a time.
  EXPECT_EQ(UploadPlan::Make(1000, 1000, 1, 0, 0)->lanes, 1u);
}

// AOBJ-OBJ-235, AOBJ-OBJ-256: a plan the server announced it would refuse fails before any
// request, with the code the server would give; bounds not announced (0) check nothing.
TEST(UploadPlanTest, AnnouncedBoundsAreCheckedBeforeAnythingIsSent) {
  Limits l;
  l.min_part_size = 10;
  l.max_part_size = 20;
  l.max_object_size = 100;
  EXPECT_TRUE(UploadPlan::Make(1000, 100, 20, 0, 8)->CheckAgainst(l).ok());
  EXPECT_TRUE(UploadPlan::Make(1000, 95, 10, 0, 8)->CheckAgainst(l).ok());  // last part 5
  EXPECT_TRUE(UploadPlan::Make(1000, 5, 30, 0, 8)->CheckAgainst(l).ok());   // one part of 5
  EXPECT_EQ(ErrorCodeOf(UploadPlan::Make(1000, 100, 21, 0, 8)->CheckAgainst(l)),
            ErrorCode::kEntityTooLarge);  // parts above max_part_size
  EXPECT_EQ(ErrorCodeOf(UploadPlan::Make(1000, 21, 30, 0, 8)->CheckAgainst(l)),
            ErrorCode::kEntityTooLarge);  // its one part above max_part_size
  EXPECT_EQ(ErrorCodeOf(UploadPlan::Make(1000, 100, 9, 0, 8)->CheckAgainst(l)),
            ErrorCode::kEntityTooSmall);  // parts below min_part_size
  EXPECT_EQ(ErrorCodeOf(UploadPlan::Make(1000, 101, 20, 0, 8)->CheckAgainst(l)),
            ErrorCode::kEntityTooLarge);  // the object above max_object_size
  EXPECT_TRUE(UploadPlan::Make(1000, 1000, 1, 0, 8)->CheckAgainst(Limits{}).ok());
}

TEST(UploadPlanTest, RefusesWhatCannotBeUploaded) {
  EXPECT_EQ(ErrorCodeOf(UploadPlan::Make(100, 10, 0, 0, 8).status()), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ErrorCodeOf(UploadPlan::Make(100, 101, 10, 0, 8).status()),
            ErrorCode::kInvalidArgument);
  const uint64_t too_many = (uint64_t{kMaxPartNumber} + 1) * 10;
  EXPECT_EQ(ErrorCodeOf(UploadPlan::Make(too_many, too_many, 10, 0, 8).status()),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(UploadPlan::Make(too_many, too_many - 10, 10, 0, 8).ok());
}

}  // namespace
}  // namespace aobj::client_internal
