// The CLI's retry policy (tools/cli_retry.cc): what is tried again, what needs a new session,
// and the pauses between tries.
#include "cli_retry.h"

#include "absl/strings/cord.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "wire/error_registry.h"

namespace aobj::cli {
namespace {

absl::Status ConnectionLost() {
  absl::Status st = absl::InternalError("no reply from the server");
  st.SetPayload(kControlChannelPayloadUrl, absl::Cord("the connection was lost"));
  return st;
}

TEST(RetryTest, WhatMayPassIsRetriedAndALostSessionRenewed) {
  EXPECT_TRUE(Retryable(ConnectionLost()));
  EXPECT_TRUE(SessionLost(ConnectionLost()));
  for (ErrorCode code : {ErrorCode::kNoSuchSession, ErrorCode::kSessionExpired,
                         ErrorCode::kDataChannelUnavailable, ErrorCode::kDeadlineExceeded}) {
    EXPECT_TRUE(Retryable(MakeError(code, "x"))) << static_cast<int>(code);
    EXPECT_TRUE(SessionLost(MakeError(code, "x"))) << static_cast<int>(code);
  }
  // Busy: tried again on the same session.
  EXPECT_TRUE(Retryable(MakeError(ErrorCode::kSlowDown, "x")));
  EXPECT_FALSE(SessionLost(MakeError(ErrorCode::kSlowDown, "x")));
  EXPECT_TRUE(Retryable(MakeError(ErrorCode::kStorageError, "x")));
  // What the request says, or this machine's files: never.
  for (ErrorCode code : {ErrorCode::kNoSuchKey, ErrorCode::kAccessDenied,
                         ErrorCode::kPreconditionFailed, ErrorCode::kSignatureDoesNotMatch}) {
    EXPECT_FALSE(Retryable(MakeError(code, "x"))) << static_cast<int>(code);
  }
  EXPECT_FALSE(Retryable(absl::FailedPreconditionError("write ./x: No space left on device")));
  EXPECT_FALSE(SessionLost(absl::FailedPreconditionError("x")));
  EXPECT_FALSE(Retryable(absl::OkStatus()));
}

TEST(RetryTest, WithoutAReplyTheOutcomeIsUnknown) {
  EXPECT_TRUE(UnknownOutcome(ConnectionLost()));
  EXPECT_TRUE(UnknownOutcome(MakeError(ErrorCode::kDeadlineExceeded, "x")));
  EXPECT_TRUE(UnknownOutcome(MakeError(ErrorCode::kCancelled, "x")));
  // A reply, even a failing one, tells the outcome.
  EXPECT_FALSE(UnknownOutcome(MakeError(ErrorCode::kSlowDown, "x")));
  EXPECT_FALSE(UnknownOutcome(MakeError(ErrorCode::kNoSuchSession, "x")));
  EXPECT_FALSE(UnknownOutcome(MakeError(ErrorCode::kDataChannelUnavailable, "x")));
  EXPECT_FALSE(UnknownOutcome(absl::FailedPreconditionError("local")));
}

TEST(RetryTest, PausesDoubleWithJitterUpToTheCap) {
  RetryPolicy p;
  absl::BitGen rng;
  for (int i = 0; i < 200; ++i) {
    const absl::Duration first = p.Pause(1, rng);
    EXPECT_GE(first, absl::Milliseconds(250));
    EXPECT_LE(first, absl::Milliseconds(500));
    const absl::Duration third = p.Pause(3, rng);
    EXPECT_GE(third, absl::Seconds(1));
    EXPECT_LE(third, absl::Seconds(2));
    const absl::Duration late = p.Pause(30, rng);
    EXPECT_GE(late, absl::Seconds(10));
    EXPECT_LE(late, absl::Seconds(20));
  }
}

TEST(GatewayListTest, ConfiguredFirstThenListedWithoutRepeatsUpToTheLimit) {
  EXPECT_EQ(GatewayList({"a:1", "b:2"}, {"b:2", "c:3", "", "a:1", "d:4"}, 64),
            (std::vector<std::string>{"a:1", "b:2", "c:3", "d:4"}));
  EXPECT_EQ(GatewayList({"a:1"}, {"b:2", "c:3"}, 2), (std::vector<std::string>{"a:1", "b:2"}));
  EXPECT_EQ(GatewayList({"a:1", "a:1"}, {}, 64), (std::vector<std::string>{"a:1"}));
}

}  // namespace
}  // namespace aobj::cli
