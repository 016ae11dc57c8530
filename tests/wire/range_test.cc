// Byte ranges: the "bytes=..." parser (hostile text), the structured wire form, and resolution
// against an object's size (AOBJ-DAT-100, AOBJ-DAT-101, AOBJ-DAT-102).
#include "wire/range.h"

#include <cstdint>
#include <limits>
#include <string>

#include "aobj/status.h"
#include "gtest/gtest.h"

namespace aobj {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

ErrorCode ParseCode(absl::string_view text) { return ErrorCodeOf(ParseHttpRange(text).status()); }

RangeSpec FirstLast(uint64_t first, uint64_t last) {
  return {RangeSpec::Kind::kFirstLast, first, last, 0};
}
RangeSpec From(uint64_t first) { return {RangeSpec::Kind::kFrom, first, 0, 0}; }
RangeSpec Suffix(uint64_t n) { return {RangeSpec::Kind::kSuffix, 0, 0, n}; }

void ExpectSame(const RangeSpec& a, const RangeSpec& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.first, b.first);
  EXPECT_EQ(a.last, b.last);
  EXPECT_EQ(a.suffix_length, b.suffix_length);
}

TEST(ParseHttpRangeTest, ParsesTheThreeForms) {
  auto r = ParseHttpRange("bytes=0-99");
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSame(*r, FirstLast(0, 99));
  r = ParseHttpRange("bytes=100-");
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSame(*r, From(100));
  r = ParseHttpRange("bytes=-500");
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSame(*r, Suffix(500));
  r = ParseHttpRange("bytes=7-7");
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSame(*r, FirstLast(7, 7));
}

TEST(ParseHttpRangeTest, AcceptsCaseInsensitiveUnitBlanksAndLeadingZeros) {
  auto r = ParseHttpRange("  Bytes=0007-0010\t");
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSame(*r, FirstLast(7, 10));
  r = ParseHttpRange("BYTES=-0");  // parses; unsatisfiable on resolution
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSame(*r, Suffix(0));
}

TEST(ParseHttpRangeTest, LargestValuesParse) {
  auto r = ParseHttpRange("bytes=18446744073709551614-18446744073709551615");
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSame(*r, FirstLast(kMax - 1, kMax));
  r = ParseHttpRange("bytes=-18446744073709551615");
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSame(*r, Suffix(kMax));
}

TEST(ParseHttpRangeTest, RejectsNumbersOverflowing64Bits) {
  for (const char* text : {"bytes=18446744073709551616-", "bytes=0-18446744073709551616",
                           "bytes=-18446744073709551616", "bytes=99999999999999999999999-",
                           "bytes=0-184467440737095516150"}) {
    EXPECT_EQ(ParseCode(text), ErrorCode::kInvalidArgument) << text;
  }
}

TEST(ParseHttpRangeTest, RejectsFirstAfterLast) {
  EXPECT_EQ(ParseCode("bytes=10-9"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseCode("bytes=18446744073709551615-0"), ErrorCode::kInvalidArgument);
}

TEST(ParseHttpRangeTest, RejectsMalformedText) {
  for (const char* text : {"",
                           "bytes",
                           "bytes=",
                           "bytes=-",
                           "bytes=--5",
                           "bytes=1--5",
                           "bytes=a-b",
                           "bytes=1-b",
                           "bytes=+1-5",
                           "bytes=-+5",
                           "bytes=1 -5",
                           "bytes= 1-5",
                           "bytes=1- 5",
                           "bytes=0x10-",
                           "bytes=1-5,7-9",
                           "bytes=0-0,-1",
                           "items=0-5",
                           "bytes:0-5",
                           "0-5",
                           "=0-5",
                           "bytes=1",
                           "bytes=1e3-",
                           "bytes=\xC2\xB9-",
                           "bytes=0-5\n",
                           "bytes==0-5",
                           "bytes 0-5"}) {
    EXPECT_EQ(ParseCode(text), ErrorCode::kInvalidArgument) << "'" << text << "'";
  }
  // An embedded NUL is not a digit.
  EXPECT_EQ(ParseCode(absl::string_view("bytes=1\0-5", 10)), ErrorCode::kInvalidArgument);
}

TEST(ParseHttpRangeTest, RejectsOverlongTextBeforeLookingAtIt) {
  std::string text = "bytes=" + std::string(200, '0') + "1-";
  EXPECT_EQ(ParseCode(text), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseCode(std::string(1 << 20, 'x')), ErrorCode::kInvalidArgument);
}

TEST(ParseHttpRangeTest, FormatRoundTrips) {
  for (const RangeSpec& r : {FirstLast(0, 0), FirstLast(5, kMax), From(0), From(kMax), Suffix(1),
                             Suffix(kMax), Suffix(0)}) {
    auto back = ParseHttpRange(FormatHttpRange(r));
    ASSERT_TRUE(back.ok()) << FormatHttpRange(r) << ": " << back.status();
    ExpectSame(*back, r);
  }
  EXPECT_EQ(FormatHttpRange(FirstLast(0, 99)), "bytes=0-99");
  EXPECT_EQ(FormatHttpRange(From(100)), "bytes=100-");
  EXPECT_EQ(FormatHttpRange(Suffix(500)), "bytes=-500");
}

// AOBJ-DAT-100
TEST(RangeFromProtoTest, AcceptsWellFormedRanges) {
  for (const RangeSpec& r : {FirstLast(0, 0), FirstLast(3, kMax), From(kMax), Suffix(0)}) {
    aobj::v1::ByteRange pb;
    RangeToProto(r, &pb);
    auto back = RangeFromProto(pb);
    ASSERT_TRUE(back.ok()) << back.status();
    ExpectSame(*back, r);
  }
}

TEST(RangeFromProtoTest, RejectsUnspecifiedUnknownAndInconsistentRanges) {
  aobj::v1::ByteRange pb;
  EXPECT_EQ(ErrorCodeOf(RangeFromProto(pb).status()), ErrorCode::kInvalidArgument);  // UNSPECIFIED
  pb.set_kind(static_cast<aobj::v1::ByteRange::Kind>(17));
  EXPECT_EQ(ErrorCodeOf(RangeFromProto(pb).status()), ErrorCode::kInvalidArgument);
  pb.Clear();
  pb.set_kind(aobj::v1::ByteRange::KIND_FIRST_LAST);
  pb.set_first(10);
  pb.set_last(9);
  EXPECT_EQ(ErrorCodeOf(RangeFromProto(pb).status()), ErrorCode::kInvalidArgument);
  pb.set_last(10);
  pb.set_suffix_length(1);
  EXPECT_EQ(ErrorCodeOf(RangeFromProto(pb).status()), ErrorCode::kInvalidArgument);
  pb.Clear();
  pb.set_kind(aobj::v1::ByteRange::KIND_FROM);
  pb.set_last(5);
  EXPECT_EQ(ErrorCodeOf(RangeFromProto(pb).status()), ErrorCode::kInvalidArgument);
  pb.Clear();
  pb.set_kind(aobj::v1::ByteRange::KIND_SUFFIX);
  pb.set_suffix_length(5);
  pb.set_first(1);
  EXPECT_EQ(ErrorCodeOf(RangeFromProto(pb).status()), ErrorCode::kInvalidArgument);
}

struct Case {
  RangeSpec range;
  uint64_t size;
  uint64_t first;
  uint64_t length;
};

// AOBJ-DAT-101
TEST(ResolveRangeTest, SatisfiableRanges) {
  for (const Case& c : {
           Case{FirstLast(0, 0), 1, 0, 1},
           Case{FirstLast(0, 99), 1000, 0, 100},
           Case{FirstLast(990, 2000), 1000, 990, 10},  // last clamped
           Case{FirstLast(999, kMax), 1000, 999, 1},   // no overflow
           Case{FirstLast(0, kMax), 1000, 0, 1000},
           Case{From(0), 1000, 0, 1000},
           Case{From(999), 1000, 999, 1},
           Case{Suffix(1), 1000, 999, 1},
           Case{Suffix(1000), 1000, 0, 1000},
           Case{Suffix(kMax), 1000, 0, 1000},  // longer than the object: all of it
           Case{From(kMax - 1), kMax, kMax - 1, 1},
           Case{FirstLast(0, kMax), kMax, 0, kMax},
       }) {
    auto r = ResolveRange(c.range, c.size);
    ASSERT_TRUE(r.ok()) << FormatHttpRange(c.range) << " of " << c.size << ": " << r.status();
    EXPECT_EQ(r->first, c.first) << FormatHttpRange(c.range);
    EXPECT_EQ(r->length, c.length) << FormatHttpRange(c.range);
    EXPECT_EQ(r->last(), c.first + c.length - 1);
  }
}

// AOBJ-DAT-102
TEST(ResolveRangeTest, UnsatisfiableRangesAreInvalidRange) {
  for (const auto& [range, size] : std::vector<std::pair<RangeSpec, uint64_t>>{
           {FirstLast(1000, 1000), 1000},
           {FirstLast(1000, kMax), 1000},
           {From(1000), 1000},
           {From(kMax), 1000},
           {Suffix(0), 1000},
           // An empty object has no satisfiable range, of any form.
           {FirstLast(0, 0), 0},
           {From(0), 0},
           {Suffix(1), 0},
           {Suffix(0), 0},
       }) {
    EXPECT_EQ(ErrorCodeOf(ResolveRange(range, size).status()), ErrorCode::kInvalidRange)
        << FormatHttpRange(range) << " of " << size;
  }
}

}  // namespace
}  // namespace aobj
