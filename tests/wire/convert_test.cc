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

// The entries of listings. ObjectEntry: key=1 "k"; size=2 varint 300; etag=3 "\"e\"";
// last_modified_ms=4 1.
constexpr char kGoldenObjectEntry[] =
    "0a016b"
    "10ac02"
    "1a03226522"
    "2001";
// PartEntry: part_number=1 2; size=2 5; etag=3 "\"e\""; last_modified_ms=4 1;
// checksum_algorithm=5 CRC32C (1); checksum=6 01 02 03 04 (big endian).
constexpr char kGoldenPartEntry[] =
    "0802"
    "1005"
    "1a03226522"
    "2001"
    "2801"
    "320401020304";
// UploadEntry: key=1 "k"; upload_id=2 "u"; initiated_ms=3 7.
constexpr char kGoldenUploadEntry[] =
    "0a016b"
    "120175"
    "1807";

TEST(ConvertTest, ListingEntriesWireImagesAreTheProtosAndReadBack) {
  aobj::v1::ObjectEntry oe;
  ObjectEntryToProto(ObjectSummary{"k", 300, "\"e\"", 1}, &oe);
  EXPECT_EQ(Serialized(oe), kGoldenObjectEntry);
  const ObjectSummary o = ObjectEntryFromProto(oe);
  EXPECT_EQ(o.key, "k");
  EXPECT_EQ(o.size, 300u);
  EXPECT_EQ(o.etag, "\"e\"");
  EXPECT_EQ(o.last_modified_ms, 1);

  PartInfo part;
  part.part_number = 2;
  part.size = 5;
  part.etag = "\"e\"";
  part.last_modified_ms = 1;
  part.crc32c = 0x01020304;
  aobj::v1::PartEntry pe;
  PartEntryToProto(part, &pe);
  EXPECT_EQ(Serialized(pe), kGoldenPartEntry);
  const PartInfo p = PartEntryFromProto(pe);
  EXPECT_EQ(p.part_number, 2u);
  EXPECT_EQ(p.size, 5u);
  EXPECT_EQ(p.etag, "\"e\"");
  EXPECT_EQ(p.last_modified_ms, 1);
  EXPECT_EQ(p.crc32c, 0x01020304u);
  pe.set_checksum_algorithm(aobj::v1::CHECKSUM_ALGORITHM_CRC64NVME);
  EXPECT_EQ(PartEntryFromProto(pe).crc32c, 0u) << "a CRC-64 is not taken for a CRC32C";

  UploadInfo upload;
  upload.bucket = "not-on-the-wire";
  upload.key = "k";
  upload.upload_id = "u";
  upload.initiated_ms = 7;
  upload.content_type = "not on the wire either";
  aobj::v1::UploadEntry ue;
  UploadEntryToProto(upload, &ue);
  EXPECT_EQ(Serialized(ue), kGoldenUploadEntry);
  const UploadInfo u = UploadEntryFromProto(ue, "b");
  EXPECT_EQ(u.bucket, "b");
  EXPECT_EQ(u.key, "k");
  EXPECT_EQ(u.upload_id, "u");
  EXPECT_EQ(u.initiated_ms, 7);
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
