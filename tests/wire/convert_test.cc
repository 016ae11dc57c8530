// wire/convert.h against golden wire images written by hand from proto/aobj/v1/aobj.proto (field
// numbers and wire types), and round trips through both sides' functions.
#include "wire/convert.h"

#include <string>

#include "gtest/gtest.h"
#include "wire/crypto.h"

namespace aobj {
namespace {

std::string Serialized(const google::protobuf::MessageLite& m) {
  std::string out;
  EXPECT_TRUE(m.SerializeToString(&out));
  return HexEncode(out);
}

ObjectInfo GoldenInfo() {
  ObjectInfo info;
  info.size = 300;
  info.etag = "\"e\"";
  info.last_modified_ms = 1;
  info.content_type = "t";
  info.crc32c = 0x01020304;
  info.user_metadata = {{"a", "b"}};
  return info;
}

// size=1 varint 300; etag=2 "\"e\""; last_modified_ms=3 1; content_type=4 "t";
// checksum_algorithm=5 CRC32C (1); checksum=6 01 02 03 04 (big endian); user_metadata=7 {a: b}.
constexpr char kGoldenMetadata[] =
    "08ac02"
    "1203226522"
    "1801"
    "220174"
    "2801"
    "320401020304"
    "3a060a0161120162";

TEST(ConvertTest, ObjectMetadataWireImageIsTheProtosAndReadsBack) {
  aobj::v1::ObjectMetadata m;
  ObjectInfoToProto(GoldenInfo(), &m);
  EXPECT_EQ(Serialized(m), kGoldenMetadata);
  const ObjectInfo back = ObjectInfoFromProto(m);
  const ObjectInfo want = GoldenInfo();
  EXPECT_EQ(back.size, want.size);
  EXPECT_EQ(back.etag, want.etag);
  EXPECT_EQ(back.last_modified_ms, want.last_modified_ms);
  EXPECT_EQ(back.content_type, want.content_type);
  EXPECT_EQ(back.crc32c, want.crc32c);
  EXPECT_EQ(back.user_metadata, want.user_metadata);
}

TEST(ConvertTest, AChecksumThatIsNotAFourOctetCrc32cIsNotTakenForOne) {
  aobj::v1::ObjectMetadata m;
  ObjectInfoToProto(GoldenInfo(), &m);
  m.set_checksum_algorithm(aobj::v1::CHECKSUM_ALGORITHM_CRC64NVME);
  EXPECT_EQ(ObjectInfoFromProto(m).crc32c, 0u);
  m.set_checksum_algorithm(aobj::v1::CHECKSUM_ALGORITHM_CRC32C);
  m.set_checksum("\x01\x02\x03");
  EXPECT_EQ(ObjectInfoFromProto(m).crc32c, 0u);
  EXPECT_EQ(BigEndian32(0x01020304), std::string("\x01\x02\x03\x04", 4));
  EXPECT_EQ(FromBigEndian32(std::string("\xfe\xdc\xba\x98", 4)), 0xfedcba98u);
}

TEST(ConvertTest, LimitsCarryTheFiveNegotiatedFieldsBothWays) {
  SessionLimits effective;
  effective.max_transfer_bytes = 1;
  effective.max_in_flight = 2;
  effective.inline_threshold = 3;
  effective.max_descriptors = 4;
  effective.max_rkey_bytes = 5;
  aobj::v1::Limits m;
  LimitsToProto(effective, &m);
  EXPECT_EQ(Serialized(m),
            "0801100218032004"
            "2805");  // fields 1 to 5, varints

  // The client's request of the same values has the same image.
  Limits requested;
  requested.max_transfer_bytes = 1;
  requested.max_in_flight = 2;
  requested.inline_threshold = 3;
  requested.max_descriptors = 4;
  requested.max_rkey_bytes = 5;
  requested.min_part_size = 99;  // announced by servers only: never requested
  aobj::v1::Limits r;
  LimitsToProto(requested, &r);
  EXPECT_EQ(Serialized(r), Serialized(m));

  // What the server reads of a request, and what the client reads of a reply.
  const SessionLimits read = RequestedLimitsFromProto(m);
  EXPECT_EQ(read.max_transfer_bytes, 1u);
  EXPECT_EQ(read.max_in_flight, 2u);
  EXPECT_EQ(read.inline_threshold, 3u);
  EXPECT_EQ(read.max_descriptors, 4u);
  EXPECT_EQ(read.max_rkey_bytes, 5u);
  m.set_min_part_size(5 << 20);
  const Limits announced = AnnouncedLimitsFromProto(m);
  EXPECT_EQ(announced.max_rkey_bytes, 5u);
  EXPECT_EQ(announced.min_part_size, 5u << 20);
}

}  // namespace
}  // namespace aobj
