// Conditional requests (AOBJ-OBJ-130, AOBJ-OBJ-131, AOBJ-OBJ-133, AOBJ-OBJ-152): entity tags
// from the peer, and the evaluation order of RFC 9110 section 13.2.2.
#include "wire/conditions.h"

#include <string>

#include "aobj/status.h"
#include "gtest/gtest.h"

namespace aobj {
namespace {

constexpr char kEtag[] = "\"9e107d9d372bb6826bd81d3542a419d6\"";
constexpr char kOther[] = "\"d41d8cd98f00b204e9800998ecf8427e\"";
constexpr int64_t kModified = 1700000000000;

ErrorCode Read(const Conditions& c) {
  return ErrorCodeOf(EvaluateReadConditions(c, kEtag, kModified));
}
ErrorCode Copy(const Conditions& c) {
  return ErrorCodeOf(EvaluateCopySourceConditions(c, kEtag, kModified));
}

TEST(EntityTagMatchesTest, QuotesAreOptionalAndStarMatchesAnything) {
  EXPECT_TRUE(EntityTagMatches(kEtag, kEtag, false));
  EXPECT_TRUE(EntityTagMatches("9e107d9d372bb6826bd81d3542a419d6", kEtag, false));
  EXPECT_TRUE(EntityTagMatches("*", kEtag, false));
  EXPECT_FALSE(EntityTagMatches(kOther, kEtag, false));
  EXPECT_FALSE(EntityTagMatches("\"9E107D9D372BB6826BD81D3542A419D6\"", kEtag, false));
  // Weak tags match only in weak comparison (If-None-Match).
  const std::string weak = std::string("W/") + kEtag;
  EXPECT_FALSE(EntityTagMatches(weak, kEtag, false));
  EXPECT_TRUE(EntityTagMatches(weak, kEtag, true));
}

TEST(ConditionsFromProtoTest, AcceptsTagsStarAndTimes) {
  aobj::v1::Preconditions pb;
  pb.set_if_match(kEtag);
  pb.set_if_none_match("W/\"abc\"");
  pb.set_if_modified_since_ms(0);
  pb.set_if_unmodified_since_ms(-5);
  auto c = ConditionsFromProto(pb);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->if_match, kEtag);
  EXPECT_EQ(c->if_none_match, "W/\"abc\"");
  ASSERT_TRUE(c->if_modified_since_ms.has_value());  // 0 is a time, not "absent"
  EXPECT_EQ(*c->if_modified_since_ms, 0);
  EXPECT_EQ(*c->if_unmodified_since_ms, -5);
  aobj::v1::Preconditions back;
  ConditionsToProto(*c, &back);
  EXPECT_EQ(back.SerializeAsString(), pb.SerializeAsString());
  EXPECT_TRUE(ConditionsFromProto(aobj::v1::Preconditions())->empty());
}

// AOBJ-OBJ-131
TEST(ConditionsFromProtoTest, RejectsMalformedTags) {
  for (const std::string& tag :
       {std::string("\"\""), std::string("\"a\"b\""), std::string("a b"),
        std::string("\"a\", \"b\""), std::string("a,b"), std::string("\"tab\there\""),
        std::string("\x7F"), std::string("\xC3\xA4"), std::string("a\0b", 3), std::string(257, 'a'),
        std::string("W/\"weak-in-if-match\"")}) {
    aobj::v1::Preconditions pb;
    pb.set_if_match(tag);
    EXPECT_EQ(ErrorCodeOf(ConditionsFromProto(pb).status()), ErrorCode::kInvalidArgument) << tag;
  }
  aobj::v1::Preconditions pb;
  pb.set_if_none_match(std::string(300, 'x'));
  EXPECT_EQ(ErrorCodeOf(ConditionsFromProto(pb).status()), ErrorCode::kInvalidArgument);
  pb.set_if_none_match(std::string(256, 'x'));
  EXPECT_TRUE(ConditionsFromProto(pb).ok());
}

// AOBJ-OBJ-130: RFC 9110 section 13.2.2.
TEST(EvaluateReadConditionsTest, EachConditionAlone) {
  Conditions c;
  EXPECT_EQ(Read(c), ErrorCode::kOk);
  c.if_match = kEtag;
  EXPECT_EQ(Read(c), ErrorCode::kOk);
  c.if_match = kOther;
  EXPECT_EQ(Read(c), ErrorCode::kPreconditionFailed);
  c = {};
  c.if_none_match = kEtag;
  EXPECT_EQ(Read(c), ErrorCode::kNotModified);
  c.if_none_match = "*";
  EXPECT_EQ(Read(c), ErrorCode::kNotModified);
  c.if_none_match = kOther;
  EXPECT_EQ(Read(c), ErrorCode::kOk);
  c = {};
  c.if_modified_since_ms = kModified;  // not modified after that instant
  EXPECT_EQ(Read(c), ErrorCode::kNotModified);
  c.if_modified_since_ms = kModified - 1;
  EXPECT_EQ(Read(c), ErrorCode::kOk);
  c = {};
  c.if_unmodified_since_ms = kModified;
  EXPECT_EQ(Read(c), ErrorCode::kOk);
  c.if_unmodified_since_ms = kModified - 1;
  EXPECT_EQ(Read(c), ErrorCode::kPreconditionFailed);
}

TEST(EvaluateReadConditionsTest, IfMatchOverridesIfUnmodifiedSince) {
  // S3: If-Match true and If-Unmodified-Since false -> 200.
  Conditions c;
  c.if_match = kEtag;
  c.if_unmodified_since_ms = kModified - 1;
  EXPECT_EQ(Read(c), ErrorCode::kOk);
  c.if_match = kOther;
  EXPECT_EQ(Read(c), ErrorCode::kPreconditionFailed);
}

TEST(EvaluateReadConditionsTest, IfNoneMatchOverridesIfModifiedSince) {
  // S3: If-None-Match false (the tag matches) and If-Modified-Since true -> 304.
  Conditions c;
  c.if_none_match = kEtag;
  c.if_modified_since_ms = kModified - 1;
  EXPECT_EQ(Read(c), ErrorCode::kNotModified);
  // If-None-Match true (no match): If-Modified-Since is ignored.
  c.if_none_match = kOther;
  c.if_modified_since_ms = kModified;
  EXPECT_EQ(Read(c), ErrorCode::kOk);
}

TEST(EvaluateReadConditionsTest, PreconditionFailedWinsOverNotModified) {
  Conditions c;
  c.if_match = kOther;
  c.if_none_match = kEtag;
  EXPECT_EQ(Read(c), ErrorCode::kPreconditionFailed);
}

// AOBJ-OBJ-152: every copy-source failure is 412.
TEST(EvaluateCopySourceConditionsTest, EveryFailureIsPreconditionFailed) {
  Conditions c;
  c.if_none_match = kEtag;
  EXPECT_EQ(Copy(c), ErrorCode::kPreconditionFailed);
  c = {};
  c.if_modified_since_ms = kModified;
  EXPECT_EQ(Copy(c), ErrorCode::kPreconditionFailed);
  c = {};
  c.if_match = kEtag;
  c.if_modified_since_ms = kModified - 1;
  EXPECT_EQ(Copy(c), ErrorCode::kOk);
}

// AOBJ-OBJ-133
TEST(ValidateWriteConditionsTest, OnlyCreateOnlyAndIfMatch) {
  Conditions c;
  EXPECT_TRUE(ValidateWriteConditions(c).ok());
  c.if_none_match = "*";
  EXPECT_TRUE(ValidateWriteConditions(c).ok());
  c.if_none_match = kEtag;
  EXPECT_EQ(ErrorCodeOf(ValidateWriteConditions(c)), ErrorCode::kInvalidArgument);
  c = {};
  c.if_match = kEtag;
  EXPECT_TRUE(ValidateWriteConditions(c).ok());
  c.if_none_match = "*";
  EXPECT_EQ(ErrorCodeOf(ValidateWriteConditions(c)), ErrorCode::kInvalidArgument);
  c = {};
  c.if_modified_since_ms = 1;
  EXPECT_EQ(ErrorCodeOf(ValidateWriteConditions(c)), ErrorCode::kInvalidArgument);
  c = {};
  c.if_unmodified_since_ms = 1;
  EXPECT_EQ(ErrorCodeOf(ValidateWriteConditions(c)), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace aobj
