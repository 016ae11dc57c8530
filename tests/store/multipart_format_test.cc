// FileStore's multipart records (src/store/multipart_format.h) against golden images written
// field by field from the format's tables, their CRC32C computed apart from the encoders.
#include "store/multipart_format.h"

#include <string>

#include "aobj/status.h"
#include "gtest/gtest.h"
#include "wire/crypto.h"

namespace aobj::multipart_format {
namespace {

std::string Bytes(const std::string& hex) {
  std::string out;
  EXPECT_TRUE(HexDecode(hex, &out)) << hex;
  return out;
}

// Upload "id" of key "k" in bucket "b", content type "t", metadata a=v, initiator "AK".
UploadInfo GoldenUpload() {
  UploadInfo u;
  u.bucket = "b";
  u.key = "k";
  u.upload_id = "id";
  u.content_type = "t";
  u.user_metadata = {{"a", "v"}};
  u.initiated_ms = 1764000000789;
  u.initiator = "AK";
  return u;
}

std::string GoldenManifest() {
  return Bytes(
      "414f424a4d505531"  // magic "AOBJMPU1"
      "02000000"          // format version 2
      "15eb97b69a010000"  // initiated_ms 1764000000789
      "01000000"          // bucket_len 1
      "01000000"          // key_len 1
      "01000000"          // content_type_len 1
      "02000000"          // upload_id_len 2
      "62"                // bucket "b"
      "6b"                // key "k"
      "74"                // content type "t"
      "6964"              // upload id "id"
      "01000000"          // 1 metadata pair
      "0100000061"        // name "a"
      "0100000076"        // value "v"
      "02000000414b"      // initiator "AK"
      "c20c22db");        // CRC32C db220cc2 of all the above
}

TEST(MultipartFormatGoldenTest, TheManifestIsWrittenFieldByFieldAndReadsBack) {
  EXPECT_EQ(HexEncode(EncodeManifest(GoldenUpload())), HexEncode(GoldenManifest()));
  absl::StatusOr<UploadInfo> u = DecodeManifest(GoldenManifest(), "golden");
  ASSERT_TRUE(u.ok()) << u.status();
  const UploadInfo want = GoldenUpload();
  EXPECT_EQ(u->bucket, want.bucket);
  EXPECT_EQ(u->key, want.key);
  EXPECT_EQ(u->upload_id, want.upload_id);
  EXPECT_EQ(u->content_type, want.content_type);
  EXPECT_EQ(u->user_metadata, want.user_metadata);
  EXPECT_EQ(u->initiated_ms, want.initiated_ms);
  EXPECT_EQ(u->initiator, want.initiator);
  std::string damaged = GoldenManifest();
  damaged[36] ^= 1;  // the bucket's octet: the CRC32C no longer matches
  EXPECT_EQ(ErrorCodeOf(DecodeManifest(damaged, "golden").status()), ErrorCode::kStorageError);
}

TEST(MultipartFormatGoldenTest, ThePartHeaderIsWrittenFieldByFieldAndReadsBack) {
  PartInfo p;
  p.part_number = 3;
  p.size = 5 << 20;
  p.last_modified_ms = 1764000001000;
  p.crc32c = 0x01020304;
  const std::string md5 = Bytes("101112131415161718191a1b1c1d1e1f");
  const std::string golden = Bytes(
      "414f424a50525431"                  // magic "AOBJPRT1"
      "01000000"                          // format version 1
      "03000000"                          // part_number 3
      "0000500000000000"                  // size 5 MiB
      "e8eb97b69a010000"                  // last_modified_ms 1764000001000
      "04030201"                          // CRC32C of the part's bytes 01020304
      "101112131415161718191a1b1c1d1e1f"  // MD5
      "0000000000000000"                  // zero
      "b4edd85c");                        // CRC32C 5cd8edb4 of header bytes [0, 60)
  ASSERT_EQ(golden.size(), kPartHeaderBytes);
  EXPECT_EQ(HexEncode(EncodePartHeader(p, md5)), HexEncode(golden));
  absl::StatusOr<PartInfo> d = DecodePartHeader(golden);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->part_number, 3u);
  EXPECT_EQ(d->size, uint64_t{5} << 20);
  EXPECT_EQ(d->last_modified_ms, 1764000001000);
  EXPECT_EQ(d->crc32c, 0x01020304u);
  EXPECT_EQ(d->etag, "\"101112131415161718191a1b1c1d1e1f\"");
  std::string damaged = golden;
  damaged[12] ^= 1;  // the part number: the header's CRC32C no longer matches
  EXPECT_FALSE(DecodePartHeader(damaged).ok());
}

}  // namespace
}  // namespace aobj::multipart_format
