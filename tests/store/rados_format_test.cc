// RadosStore's records and key escape (src/store_rados/rados_format.h); no cluster needed.
#include "store_rados/rados_format.h"

#include <string>
#include <vector>

#include "aobj/status.h"
#include "golden/corpus.h"
#include "golden/rados_records.h"
#include "gtest/gtest.h"

namespace aobj::rados_format {
namespace {

Uuid U(uint8_t seed) {
  Uuid u;
  for (size_t i = 0; i < u.size(); ++i) u[i] = static_cast<uint8_t>(seed + i);
  return u;
}

TEST(RadosFormatTest, KeyEscapeRoundTripsEveryOctetAndHasNoNul) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  const std::vector<std::string> keys = {"a", std::string("\0", 1), std::string("\x01\x01", 2),
                                         std::string("a\0b\x01", 4), all};
  // No encoded key holds the upload mark, and every one sorts at or after kFirstObjectEntry.
  for (const std::string& key : keys) {
    EXPECT_EQ(EncodeKey(key).find(kMark), std::string::npos);
    EXPECT_GE(EncodeKey(key), std::string(kFirstObjectEntry));
    EXPECT_LT(UploadEntry(EncodeKey(key), "ffffffffffffffffffffffffffffffff"),
              AfterUploadEntries());
    EXPECT_LT(AfterUploadEntries(), EncodeKey(key));
  }
  for (const std::string& key : keys) {
    const std::string e = EncodeKey(key);
    EXPECT_EQ(e.find('\0'), std::string::npos);
    absl::StatusOr<std::string> d = DecodeKey(e);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(*d, key);
  }
}

TEST(RadosFormatTest, KeyEscapeKeepsByteOrderAndPrefixes) {
  std::vector<std::string> keys = {std::string("\0", 1),
                                   std::string("\0\0", 2),
                                   "\x01",
                                   std::string("\x01\0", 2),
                                   "\x02",
                                   "a",
                                   "a\x01",
                                   "ab",
                                   "\xC3\xBC",
                                   "\xFF"};
  for (size_t i = 0; i < keys.size(); ++i) {
    for (size_t j = 0; j < keys.size(); ++j) {
      SCOPED_TRACE(testing::Message() << i << " vs " << j);
      EXPECT_EQ(keys[i] < keys[j], EncodeKey(keys[i]) < EncodeKey(keys[j]));
      const bool prefix = keys[j].compare(0, keys[i].size(), keys[i]) == 0;
      const std::string ei = EncodeKey(keys[i]), ej = EncodeKey(keys[j]);
      EXPECT_EQ(prefix, ej.compare(0, ei.size(), ei) == 0);
    }
  }
}

TEST(RadosFormatTest, DamagedKeysAreStorageErrors) {
  for (const std::string& bad : {std::string("\x01", 1), std::string("a\x01\x04", 3),
                                 std::string("a\x01\x01", 3), std::string("a\0", 2)}) {
    EXPECT_EQ(ErrorCodeOf(DecodeKey(bad).status()), ErrorCode::kStorageError);
  }
}

TEST(RadosFormatTest, HeadRoundTripsAndRejectsEveryTruncation) {
  HeadRecord h;
  h.segments = {{U(7), 12000, 4 << 20}, {U(8), 345, 64 << 10}};
  h.info.size = 12345;
  h.info.etag = "\"0123456789abcdef0123456789abcdef\"";
  h.info.last_modified_ms = 1764000000123;
  h.info.content_type = "text/plain";
  h.info.crc32c = 0xDEADBEEF;
  h.info.user_metadata = {{"a", "1"}, {"b", std::string(300, 'x')}};
  const std::string e = EncodeHead(h);
  absl::StatusOr<HeadRecord> d = DecodeHead(e);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->segments.size(), 2u);
  EXPECT_EQ(d->segments[0].uuid, h.segments[0].uuid);
  EXPECT_EQ(d->segments[1].size, h.segments[1].size);
  EXPECT_EQ(d->segments[1].stripe_bytes, h.segments[1].stripe_bytes);
  EXPECT_EQ(d->info.size, h.info.size);
  EXPECT_EQ(d->info.etag, h.info.etag);
  EXPECT_EQ(d->info.last_modified_ms, h.info.last_modified_ms);
  EXPECT_EQ(d->info.content_type, h.info.content_type);
  EXPECT_EQ(d->info.crc32c, h.info.crc32c);
  EXPECT_EQ(d->info.user_metadata, h.info.user_metadata);
  for (size_t n = 0; n < e.size(); ++n) {
    EXPECT_EQ(ErrorCodeOf(DecodeHead(e.substr(0, n)).status()), ErrorCode::kStorageError) << n;
  }
  EXPECT_FALSE(DecodeHead(e + "x").ok());
  std::string wrong_format = e;
  wrong_format[0] = 2;
  EXPECT_FALSE(DecodeHead(wrong_format).ok());
  HeadRecord tiny_stripes = h;
  tiny_stripes.segments[0].stripe_bytes = 1;  // would make a reader issue a read per byte
  EXPECT_FALSE(DecodeHead(EncodeHead(tiny_stripes)).ok());
  HeadRecord wrong_sum = h;
  wrong_sum.info.size += 1;  // segments that do not add up: a reader would read past them
  EXPECT_FALSE(DecodeHead(EncodeHead(wrong_sum)).ok());
}

TEST(RadosFormatTest, BucketAndGcRecordsRoundTrip) {
  BucketRecord b{1764000000000, U(3)};
  absl::StatusOr<BucketRecord> bd = DecodeBucket(EncodeBucket(b));
  ASSERT_TRUE(bd.ok()) << bd.status();
  EXPECT_EQ(bd->creation_time_ms, b.creation_time_ms);
  EXPECT_EQ(bd->incarnation, b.incarnation);
  EXPECT_FALSE(DecodeBucket(EncodeBucket(b).substr(1)).ok());

  GcIntent g{GcKind::kReplaced,
             42,
             U(9),
             U(11),
             5 << 20,
             1 << 20,
             EncodeKey("k\0ey"),
             "0123456789abcdef0123456789abcdef",
             17};
  const std::string ge = EncodeGcIntent(g);
  absl::StatusOr<GcIntent> gd = DecodeGcIntent(ge);
  ASSERT_TRUE(gd.ok()) << gd.status();
  EXPECT_EQ(gd->kind, g.kind);
  EXPECT_EQ(gd->time_ms, g.time_ms);
  EXPECT_EQ(gd->uuid, g.uuid);
  EXPECT_EQ(gd->incarnation, g.incarnation);
  EXPECT_EQ(gd->size, g.size);
  EXPECT_EQ(gd->stripe_bytes, g.stripe_bytes);
  EXPECT_EQ(gd->encoded_key, g.encoded_key);
  EXPECT_EQ(gd->upload_id, g.upload_id);
  EXPECT_EQ(gd->part_number, g.part_number);
  std::string bad_kind = ge;
  bad_kind[1] = 9;
  EXPECT_FALSE(DecodeGcIntent(bad_kind).ok());
  for (size_t n = 0; n < ge.size(); ++n) EXPECT_FALSE(DecodeGcIntent(ge.substr(0, n)).ok()) << n;
}

TEST(RadosFormatTest, UploadPartAndStateRecordsRoundTrip) {
  UploadRecord u{"0123456789abcdef0123456789abcdef",
                 std::string("k\0", 2),
                 99,
                 "AKID",
                 "text/x",
                 {{"m", "v"}}};
  absl::StatusOr<UploadRecord> ud = DecodeUpload(EncodeUpload(u));
  ASSERT_TRUE(ud.ok()) << ud.status();
  EXPECT_EQ(ud->upload_id, u.upload_id);
  EXPECT_EQ(ud->key, u.key);
  EXPECT_EQ(ud->initiated_ms, 99);
  EXPECT_EQ(ud->initiator, "AKID");
  EXPECT_EQ(ud->user_metadata, u.user_metadata);
  PartRecord p{7, {U(1), 5 << 20, 1 << 20}, "\"abc\"", 0x1234, 77};
  const std::string pe = EncodePart(p);
  absl::StatusOr<PartRecord> pd = DecodePart(pe);
  ASSERT_TRUE(pd.ok()) << pd.status();
  EXPECT_EQ(pd->part_number, 7u);
  EXPECT_EQ(pd->segment.uuid, p.segment.uuid);
  EXPECT_EQ(pd->etag, p.etag);
  EXPECT_EQ(pd->crc32c, 0x1234u);
  for (size_t n = 0; n < pe.size(); ++n) EXPECT_FALSE(DecodePart(pe.substr(0, n)).ok()) << n;
  UploadStateRecord st{UploadState::kClosing, 5, "12345678"};
  absl::StatusOr<UploadStateRecord> sd = DecodeUploadState(EncodeUploadState(st));
  ASSERT_TRUE(sd.ok());
  EXPECT_EQ(sd->state, UploadState::kClosing);
  EXPECT_EQ(sd->nonce, "12345678");
  std::string bad_state = EncodeUploadState(st);
  bad_state[1] = 3;
  EXPECT_FALSE(DecodeUploadState(bad_state).ok());
  // Part entries sort by number, upload entries by key then ID.
  EXPECT_LT(PartEntry(9), PartEntry(10));
  EXPECT_EQ(PartEntry(10000), "p10000");
  EXPECT_LT(UploadEntry(EncodeKey("a"), "ffff"), UploadEntry(EncodeKey("a\x01"), "0000"));
  EXPECT_LT(UploadEntry(EncodeKey("a"), "ffff"), UploadEntry(EncodeKey("ab"), "0000"));
}

TEST(RadosFormatTest, NamesAndStripeCounts) {
  EXPECT_EQ(IndexObject(U(0)), "aobj.index.000102030405060708090a0b0c0d0e0f");
  EXPECT_EQ(DataObject(U(0), 12), "aobj.data.000102030405060708090a0b0c0d0e0f.12");
  EXPECT_EQ(GcObject(U(13)), "aobj.gc.5");
  EXPECT_EQ(GcEntryName(0x1234, U(0), GcKind::kWriting),
            "0000000000001234.000102030405060708090a0b0c0d0e0f.w");
  EXPECT_EQ(GcEntryTime(GcEntryName(1764000000123, U(1), GcKind::kReplaced)), 1764000000123);
  EXPECT_LT(GcEntryName(999, U(9), GcKind::kReplaced), GcEntryName(1000, U(0), GcKind::kWriting));
  EXPECT_EQ(GcEntryTime("nonsense"), -1);
  EXPECT_EQ(GcEntryTime(GcUploadEntryName(77, "ab")), 77);
  EXPECT_EQ(StripeCount(0, 4096), 0u);
  EXPECT_EQ(StripeCount(1, 4096), 1u);
  EXPECT_EQ(StripeCount(4096, 4096), 1u);
  EXPECT_EQ(StripeCount(4097, 4096), 2u);
}

// Golden images (tests/golden/rados_records.h, written from the format's description): each
// record encodes to exactly its image, and the image decodes to exactly the record.
TEST(RadosFormatGoldenTest, BucketRecord) {
  const BucketRecord b{1764000000000, U(0), "AKOWNER"};
  EXPECT_EQ(EncodeBucket(b), golden::kGoldenBucket);
  absl::StatusOr<BucketRecord> d = DecodeBucket(golden::kGoldenBucket);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->creation_time_ms, b.creation_time_ms);
  EXPECT_EQ(d->incarnation, b.incarnation);
  EXPECT_EQ(d->owner, b.owner);
}

TEST(RadosFormatGoldenTest, HeadRecord) {
  HeadRecord h;
  h.segments = {{U(0x10), 100000, 4 << 20}, {U(0x20), 2345, 64 << 10}};
  h.info.size = 102345;
  h.info.last_modified_ms = 1764000000123;
  h.info.crc32c = 0xDEADBEEF;
  h.info.etag = "\"0123456789abcdef0123456789abcdef-2\"";
  h.info.content_type = "text/plain";
  h.info.user_metadata = {{"a", "1"}, {"b", "two"}};
  EXPECT_EQ(EncodeHead(h), golden::kGoldenHead);
  absl::StatusOr<HeadRecord> d = DecodeHead(golden::kGoldenHead);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->segments.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(d->segments[i].uuid, h.segments[i].uuid) << i;
    EXPECT_EQ(d->segments[i].size, h.segments[i].size) << i;
    EXPECT_EQ(d->segments[i].stripe_bytes, h.segments[i].stripe_bytes) << i;
  }
  EXPECT_EQ(d->info.size, h.info.size);
  EXPECT_EQ(d->info.last_modified_ms, h.info.last_modified_ms);
  EXPECT_EQ(d->info.crc32c, h.info.crc32c);
  EXPECT_EQ(d->info.etag, h.info.etag);
  EXPECT_EQ(d->info.content_type, h.info.content_type);
  EXPECT_EQ(d->info.user_metadata, h.info.user_metadata);
}

TEST(RadosFormatGoldenTest, GcIntent) {
  GcIntent g;
  g.kind = GcKind::kReplaced;
  g.time_ms = 1764000000456;
  g.uuid = U(0x30);
  g.incarnation = U(0);
  g.size = 70000;
  g.stripe_bytes = 65536;
  g.encoded_key = "photos/cat.jpg";
  EXPECT_EQ(EncodeGcIntent(g), golden::kGoldenGcIntent);
  absl::StatusOr<GcIntent> d = DecodeGcIntent(golden::kGoldenGcIntent);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->kind, g.kind);
  EXPECT_EQ(d->time_ms, g.time_ms);
  EXPECT_EQ(d->uuid, g.uuid);
  EXPECT_EQ(d->incarnation, g.incarnation);
  EXPECT_EQ(d->size, g.size);
  EXPECT_EQ(d->stripe_bytes, g.stripe_bytes);
  EXPECT_EQ(d->encoded_key, g.encoded_key);
  EXPECT_EQ(d->upload_id, "");
  EXPECT_EQ(d->part_number, 0u);
}

TEST(RadosFormatGoldenTest, UploadRecord) {
  UploadRecord u;
  u.upload_id = "0123456789abcdef0123456789abcdef";
  u.key = "big/object";
  u.initiated_ms = 1764000000789;
  u.initiator = "AKOWNER";
  u.content_type = "application/octet-stream";
  u.user_metadata = {{"origin", "golden"}};
  EXPECT_EQ(EncodeUpload(u), golden::kGoldenUpload);
  absl::StatusOr<UploadRecord> d = DecodeUpload(golden::kGoldenUpload);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->upload_id, u.upload_id);
  EXPECT_EQ(d->key, u.key);
  EXPECT_EQ(d->initiated_ms, u.initiated_ms);
  EXPECT_EQ(d->initiator, u.initiator);
  EXPECT_EQ(d->content_type, u.content_type);
  EXPECT_EQ(d->user_metadata, u.user_metadata);
}

TEST(RadosFormatGoldenTest, PartRecord) {
  PartRecord p;
  p.part_number = 3;
  p.segment = {U(0x40), 5 << 20, 4 << 20};
  p.etag = "\"00112233445566778899aabbccddeeff\"";
  p.crc32c = 0x01020304;
  p.last_modified_ms = 1764000001000;
  EXPECT_EQ(EncodePart(p), golden::kGoldenPart);
  absl::StatusOr<PartRecord> d = DecodePart(golden::kGoldenPart);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->part_number, p.part_number);
  EXPECT_EQ(d->segment.uuid, p.segment.uuid);
  EXPECT_EQ(d->segment.size, p.segment.size);
  EXPECT_EQ(d->segment.stripe_bytes, p.segment.stripe_bytes);
  EXPECT_EQ(d->etag, p.etag);
  EXPECT_EQ(d->crc32c, p.crc32c);
  EXPECT_EQ(d->last_modified_ms, p.last_modified_ms);
}

TEST(RadosFormatGoldenTest, UploadStateAndKey) {
  const UploadStateRecord st{UploadState::kClosing, 1764000002000,
                             std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8)};
  EXPECT_EQ(EncodeUploadState(st), golden::kGoldenUploadState);
  absl::StatusOr<UploadStateRecord> d = DecodeUploadState(golden::kGoldenUploadState);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->state, st.state);
  EXPECT_EQ(d->since_ms, st.since_ms);
  EXPECT_EQ(d->nonce, st.nonce);
  const std::string key(
      "a\0b\x01"
      "c",
      5);
  EXPECT_EQ(EncodeKey(key), golden::kGoldenKey);
  absl::StatusOr<std::string> k = DecodeKey(golden::kGoldenKey);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(*k, key);
}

// The fuzz target seeds from the golden images: corpus/rados_record/golden-<name> is the
// target's selector octet, then the image (fuzz/make_seeds.cc writes them).
TEST(RadosFormatGoldenTest, FuzzCorpusHoldsEveryImage) {
  for (const golden::GoldenRadosRecord& g : golden::kGoldenRadosRecords) {
    EXPECT_TRUE(golden::CorpusSeedHolds("rados_record", std::string("golden-") + g.name,
                                        std::string(1, g.selector) + *g.image));
  }
}

}  // namespace
}  // namespace aobj::rados_format
