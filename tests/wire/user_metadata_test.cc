// User metadata from the peer (AOBJ-OBJ-120, AOBJ-OBJ-121, AOBJ-OBJ-123).
#include "wire/user_metadata.h"

#include <string>

#include "aobj/status.h"
#include "gtest/gtest.h"

namespace aobj {
namespace {

ErrorCode Code(const UserMetadata& m) { return ErrorCodeOf(NormalizeUserMetadata(m).status()); }

TEST(UserMetadataTest, NamesAreLowerCasedAndValuesKept) {
  auto m = NormalizeUserMetadata(UserMetadata{
      {"Owner", "Alice"}, {"x-Trace_ID.1", ""}, {"unicode", "gr\xC3\xBC\xC3\x9F\tok"}});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(*m,
            (UserMetadata{
                {"owner", "Alice"}, {"x-trace_id.1", ""}, {"unicode", "gr\xC3\xBC\xC3\x9F\tok"}}));
  EXPECT_TRUE(NormalizeUserMetadata(UserMetadata{})->empty());
}

TEST(UserMetadataTest, ProtoMapRoundTrips) {
  google::protobuf::Map<std::string, std::string> pb;
  pb["A"] = "1";
  pb["b"] = "2";
  auto m = NormalizeUserMetadata(pb);
  ASSERT_TRUE(m.ok()) << m.status();
  google::protobuf::Map<std::string, std::string> back;
  UserMetadataToProto(*m, &back);
  EXPECT_EQ(back.size(), 2u);
  EXPECT_EQ(back.at("a"), "1");
}

// AOBJ-OBJ-121: 2 KiB of names and values.
TEST(UserMetadataTest, TwoKibibytesFitOneMoreByteDoesNot) {
  UserMetadata m{{"k", std::string(2047, 'v')}};
  EXPECT_EQ(Code(m), ErrorCode::kOk);
  m["k"].push_back('v');
  EXPECT_EQ(Code(m), ErrorCode::kMetadataTooLarge);
  UserMetadata many;
  for (int i = 0; i < 1000; ++i) many[std::to_string(100000 + i)] = "";  // 6 bytes each
  EXPECT_EQ(Code(many), ErrorCode::kMetadataTooLarge);
}

TEST(UserMetadataTest, SizeIsCheckedBeforeCharacters) {
  // An oversized map full of bad names is refused for its size.
  UserMetadata m{{"bad name", std::string(4096, '\x01')}};
  EXPECT_EQ(Code(m), ErrorCode::kMetadataTooLarge);
}

// AOBJ-OBJ-120, AOBJ-OBJ-123
TEST(UserMetadataTest, RejectsBadNamesAndValues) {
  for (const std::string& name : {std::string(""), std::string("with space"), std::string("a:b"),
                                  std::string("a/b"), std::string("caf\xC3\xA9"),
                                  std::string("a\0b", 3), std::string("(x)"), std::string("a\"")}) {
    EXPECT_EQ(Code(UserMetadata{{name, "v"}}), ErrorCode::kInvalidArgument) << name;
  }
  for (const std::string& value :
       {std::string("\xC3"), std::string("\xFF"), std::string("a\nb"), std::string("a\rb"),
        std::string("a\0b", 3), std::string("\x7F"), std::string("\xED\xA0\x80")}) {
    EXPECT_EQ(Code(UserMetadata{{"name", value}}), ErrorCode::kInvalidArgument) << value;
  }
}

TEST(UserMetadataTest, NamesDifferingOnlyInCaseAreRefused) {
  EXPECT_EQ(Code(UserMetadata{{"Owner", "a"}, {"owner", "b"}}), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace aobj
