// FileStore's object header (src/store/object_file.h) against a golden image written field by
// field from the format's description, its CRC32C computed apart from the encoder.
#include "store/object_file.h"

#include <string>

#include "gtest/gtest.h"
#include "wire/crypto.h"

namespace aobj::object_file {
namespace {

// The object: key "k", 300 octets, content type "t", CRC32C DEADBEEF, user metadata a=b.
ObjectInfo GoldenInfo() {
  ObjectInfo info;
  info.size = 300;
  info.last_modified_ms = 1764000000123;
  info.crc32c = 0xDEADBEEF;
  info.content_type = "t";
  info.etag = "\"0123456789abcdef0123456789abcdef\"";
  info.user_metadata = {{"a", "b"}};
  return info;
}

// header_len = 48 fixed + 1 key + 1 content type + 256 etag capacity + 14 metadata + 4 CRC.
constexpr uint32_t kGoldenHeaderLen = 324;

// The header as hex, field by field, then its zero padding and its CRC32C.
std::string GoldenHeader() {
  const std::string fields =
      "414f424a4f424a31"  // magic "AOBJOBJ1"
      "02000000"          // format version 2
      "44010000"          // header_len 324
      "2c01000000000000"  // content size 300
      "7be897b69a010000"  // last_modified_ms 1764000000123
      "efbeadde"          // CRC32C of the content DEADBEEF
      "01000000"          // key_len 1
      "01000000"          // content_type_len 1
      "22000000"          // etag_len 34
      "6b"                // key "k"
      "74"                // content type "t"
      "2230313233343536373839616263646566"
      "3031323334353637383961626364656622"  // etag, quoted
      "01000000"                            // 1 metadata pair
      "01000000"
      "61"  // name "a"
      "01000000"
      "62";  // value "b"
  std::string header;
  EXPECT_TRUE(HexDecode(fields, &header));
  header.resize(kGoldenHeaderLen - 4, '\0');           // padding: the etag's unused capacity
  return header + std::string("\x81\xbd\xa4\x8a", 4);  // CRC32C 8aa4bd81 of all the above
}

TEST(ObjectFileGoldenTest, TheHeaderIsWrittenFieldByField) {
  const ObjectInfo info = GoldenInfo();
  ASSERT_EQ(HeaderLength(1, 1, MetadataBlockBytes(info.user_metadata)), kGoldenHeaderLen);
  EXPECT_EQ(HexEncode(EncodeHeader(kGoldenHeaderLen, "k", info)), HexEncode(GoldenHeader()));
}

TEST(ObjectFileGoldenTest, TheGoldenHeaderReadsBack) {
  absl::StatusOr<Header> h = DecodeHeader(GoldenHeader(), "golden");
  ASSERT_TRUE(h.ok()) << h.status();
  const ObjectInfo want = GoldenInfo();
  EXPECT_EQ(h->header_len, kGoldenHeaderLen);
  EXPECT_EQ(h->key, "k");
  EXPECT_EQ(h->info.size, want.size);
  EXPECT_EQ(h->info.last_modified_ms, want.last_modified_ms);
  EXPECT_EQ(h->info.crc32c, want.crc32c);
  EXPECT_EQ(h->info.content_type, want.content_type);
  EXPECT_EQ(h->info.etag, want.etag);
  EXPECT_EQ(h->info.user_metadata, want.user_metadata);
  std::string damaged = GoldenHeader();
  damaged[50] ^= 1;  // the etag's first octet: the header's CRC32C no longer matches
  EXPECT_TRUE(IsCorrupt(DecodeHeader(damaged, "golden").status()));
}

}  // namespace
}  // namespace aobj::object_file
