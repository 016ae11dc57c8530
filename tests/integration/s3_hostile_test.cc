// Hostile S3-semantics requests sent as raw control-channel calls (requests the client library
// never sends): every one gets its specific error and the server keeps serving (issue 4; spec
// sections 9.8 to 9.14, 11.2).
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "aobj/client.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/raw_session.h"
#include "integration/server_process.h"

namespace aobj {
namespace {

using testing::kAccessKey;
using testing::kSecret;
using testing::RawSession;
using testing::ServerProcess;
namespace pb = aobj::v1;

class S3HostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(testing::TestDir(), "memory");
    ASSERT_TRUE(server_->Start()) << server_->log();
    raw_ = std::make_unique<RawSession>(server_->endpoint(), kAccessKey, kSecret);
    ASSERT_TRUE(raw_->Open().status.ok());
  }
  void TearDown() override {
    if (server_) {
      EXPECT_TRUE(server_->Alive()) << "the server died:\n" << server_->log();
      ExpectStillServes();
      server_->Stop();
    }
  }
  void ExpectStillServes() {
    ClientOptions o;
    o.endpoint = server_->endpoint();
    o.access_key_id = kAccessKey;
    o.secret = kSecret;
    auto c = Client::Connect(o);
    ASSERT_TRUE(c.ok()) << c.status();
    auto page = (*c)->ListObjects("test-bucket", {});
    EXPECT_TRUE(page.ok()) << page.status();
  }
  static ErrorCode Code(const RawReply& r) { return ErrorCodeOf(r.status); }

  // A small PUT (inline) with a correct CRC32C.
  pb::PutObjectRequest InlinePut(const std::string& key, const std::string& body) {
    pb::PutObjectRequest req;
    req.set_bucket("test-bucket");
    req.set_key(key);
    req.set_size(body.size());
    req.set_inline_data(body);
    req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
    Checksummer sum(ChecksumAlgorithm::kCrc32c);
    sum.Update(body.data(), body.size());
    req.set_checksum(sum.Finish());
    return req;
  }
  pb::GetObjectRequest InlineGet(const std::string& key) {
    pb::GetObjectRequest req;
    req.set_bucket("test-bucket");
    req.set_key(key);
    req.set_accept_inline(true);
    return req;
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<RawSession> raw_;
};

// AOBJ-OBJ-104
TEST_F(S3HostileTest, MaxKeysZeroIsTheDefaultAndAboveAThousandIsRefused) {
  pb::ListObjectsV2Request req;
  req.set_bucket("test-bucket");
  req.set_max_keys(0);
  EXPECT_TRUE(raw_->Send(Method::kListObjectsV2, req).status.ok());
  for (uint32_t bad : {1001u, 65536u, 0xFFFFFFFFu}) {
    req.set_max_keys(bad);
    RawReply r = raw_->Send(Method::kListObjectsV2, req);
    EXPECT_EQ(Code(r), ErrorCode::kInvalidArgument) << bad;
    EXPECT_EQ(r.error.s3_code(), "InvalidArgument");
  }
  pb::ListBucketsRequest lb;
  lb.set_max_buckets(10001);
  EXPECT_EQ(Code(raw_->Send(Method::kListBuckets, lb)), ErrorCode::kInvalidArgument);
}

// AOBJ-OBJ-107
TEST_F(S3HostileTest, ForgedContinuationTokensAreRefused) {
  pb::ListObjectsV2Request req;
  req.set_bucket("test-bucket");
  for (const std::string& token : {std::string("\x01\x00\x01\x00"
                                               "a"
                                               "0123456789abcdef",
                                               21),  // right shape, bad tag
                                   std::string("\x01\x00\xff\xff", 4), std::string(1 << 16, '\x01'),
                                   std::string("\x02\x00\x00\x00"
                                               "0123456789abcdef",
                                               20)}) {
    req.set_continuation_token(token);
    RawReply r = raw_->Send(Method::kListObjectsV2, req);
    EXPECT_EQ(Code(r), ErrorCode::kInvalidContinuationToken);
    EXPECT_EQ(r.error.s3_code(), "InvalidArgument");
    EXPECT_EQ(r.grpc_status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  pb::ListBucketsRequest lb;
  lb.set_continuation_token("garbage");
  EXPECT_EQ(Code(raw_->Send(Method::kListBuckets, lb)), ErrorCode::kInvalidContinuationToken);
}

// A token issued for one listing cannot steer another, even a ListBuckets one.
TEST_F(S3HostileTest, TokensDoNotCrossListings) {
  for (const char* k : {"a", "b", "c"}) {
    ASSERT_TRUE(raw_->Send(Method::kPutObject, InlinePut(k, k)).status.ok());
  }
  pb::ListObjectsV2Request req;
  req.set_bucket("test-bucket");
  req.set_max_keys(1);
  RawReply r = raw_->Send(Method::kListObjectsV2, req);
  ASSERT_TRUE(r.status.ok()) << r.status;
  pb::ListObjectsV2Response resp;
  ASSERT_TRUE(resp.ParseFromString(r.body));
  ASSERT_TRUE(resp.is_truncated());
  pb::ListBucketsRequest lb;
  lb.set_continuation_token(resp.next_continuation_token());
  EXPECT_EQ(Code(raw_->Send(Method::kListBuckets, lb)), ErrorCode::kInvalidContinuationToken);
  req.set_delimiter("/");
  req.set_continuation_token(resp.next_continuation_token());
  EXPECT_EQ(Code(raw_->Send(Method::kListObjectsV2, req)), ErrorCode::kInvalidContinuationToken);
}

// AOBJ-OBJ-140
TEST_F(S3HostileTest, DeleteObjectsKeyCountIsBounded) {
  pb::DeleteObjectsRequest req;
  req.set_bucket("test-bucket");
  EXPECT_EQ(Code(raw_->Send(Method::kDeleteObjects, req)), ErrorCode::kInvalidArgument);
  for (int i = 0; i < 1001; ++i) req.add_keys(absl::StrCat("k", i));
  EXPECT_EQ(Code(raw_->Send(Method::kDeleteObjects, req)), ErrorCode::kInvalidArgument);
  req.mutable_keys()->RemoveLast();
  RawReply r = raw_->Send(Method::kDeleteObjects, req);
  ASSERT_TRUE(r.status.ok()) << r.status;
  pb::DeleteObjectsResponse resp;
  ASSERT_TRUE(resp.ParseFromString(r.body));
  EXPECT_EQ(resp.deleted_size(), 1000);
  // A thousand keys too long to be keys: each refused, each echoed at most 1024 octets.
  pb::DeleteObjectsRequest big;
  big.set_bucket("test-bucket");
  for (int i = 0; i < 1000; ++i) big.add_keys(std::string(5000, 'x'));
  r = raw_->Send(Method::kDeleteObjects, big);
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_TRUE(resp.ParseFromString(r.body));
  ASSERT_EQ(resp.errors_size(), 1000);
  EXPECT_EQ(resp.errors(0).key().size(), 1024u);
  EXPECT_EQ(resp.errors(0).error().name(), "KEY_TOO_LONG");
  EXPECT_EQ(resp.errors(0).error().s3_code(), "KeyTooLongError");
}

// AOBJ-DAT-100, AOBJ-DAT-102
TEST_F(S3HostileTest, MalformedAndExtremeRanges) {
  ASSERT_TRUE(raw_->Send(Method::kPutObject, InlinePut("obj", "0123456789")).status.ok());
  pb::GetObjectRequest req = InlineGet("obj");
  auto* range = req.mutable_range();  // present but UNSPECIFIED
  EXPECT_EQ(Code(raw_->Send(Method::kGetObject, req)), ErrorCode::kInvalidArgument);
  range->set_kind(static_cast<pb::ByteRange::Kind>(99));
  EXPECT_EQ(Code(raw_->Send(Method::kGetObject, req)), ErrorCode::kInvalidArgument);
  range->set_kind(pb::ByteRange::KIND_FIRST_LAST);
  range->set_first(5);
  range->set_last(4);
  EXPECT_EQ(Code(raw_->Send(Method::kGetObject, req)), ErrorCode::kInvalidArgument);
  range->set_first(UINT64_MAX);
  range->set_last(UINT64_MAX);
  RawReply r = raw_->Send(Method::kGetObject, req);
  EXPECT_EQ(Code(r), ErrorCode::kInvalidRange);
  EXPECT_EQ(r.error.s3_code(), "InvalidRange");
  EXPECT_EQ(r.grpc_status.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  range->set_first(9);
  range->set_last(UINT64_MAX);  // clamped to the last octet
  r = raw_->Send(Method::kGetObject, req);
  ASSERT_TRUE(r.status.ok()) << r.status;
  pb::GetObjectResponse resp;
  ASSERT_TRUE(resp.ParseFromString(r.body));
  EXPECT_EQ(resp.inline_data(), "9");
  EXPECT_EQ(resp.bytes_transferred(), 1u);
  EXPECT_EQ(resp.content_range().first(), 9u);
  EXPECT_EQ(resp.content_range().last(), 9u);
  EXPECT_EQ(resp.content_range().complete_length(), 10u);
  range->Clear();
  range->set_kind(pb::ByteRange::KIND_SUFFIX);
  range->set_suffix_length(3);
  range->set_first(1);  // a field the kind does not use
  EXPECT_EQ(Code(raw_->Send(Method::kGetObject, req)), ErrorCode::kInvalidArgument);
}

// AOBJ-OBJ-121, AOBJ-OBJ-131, AOBJ-OBJ-133
TEST_F(S3HostileTest, OversizedMetadataAndBadConditionsStoreNothing) {
  pb::PutObjectRequest req = InlinePut("k", "v");
  (*req.mutable_user_metadata())["big"] = std::string(100000, 'm');
  RawReply r = raw_->Send(Method::kPutObject, req);
  EXPECT_EQ(Code(r), ErrorCode::kMetadataTooLarge);
  EXPECT_EQ(r.error.s3_code(), "MetadataTooLarge");
  req = InlinePut("k", "v");
  for (int i = 0; i < 3000; ++i) (*req.mutable_user_metadata())[absl::StrCat("n", i)] = "";
  EXPECT_EQ(Code(raw_->Send(Method::kPutObject, req)), ErrorCode::kMetadataTooLarge);
  req = InlinePut("k", "v");
  req.mutable_preconditions()->set_if_match(std::string(10000, 'e'));
  EXPECT_EQ(Code(raw_->Send(Method::kPutObject, req)), ErrorCode::kInvalidArgument);
  req = InlinePut("k", "v");
  req.mutable_preconditions()->set_if_unmodified_since_ms(INT64_MIN);
  EXPECT_EQ(Code(raw_->Send(Method::kPutObject, req)), ErrorCode::kInvalidArgument);
  pb::HeadObjectRequest head;
  head.set_bucket("test-bucket");
  head.set_key("k");
  EXPECT_EQ(Code(raw_->Send(Method::kHeadObject, head)), ErrorCode::kNoSuchKey);
  // Extreme times are just times.
  ASSERT_TRUE(raw_->Send(Method::kPutObject, InlinePut("k", "v")).status.ok());
  head.mutable_preconditions()->set_if_modified_since_ms(INT64_MIN);
  EXPECT_TRUE(raw_->Send(Method::kHeadObject, head).status.ok());
  head.mutable_preconditions()->set_if_modified_since_ms(INT64_MAX);
  r = raw_->Send(Method::kHeadObject, head);
  EXPECT_EQ(Code(r), ErrorCode::kNotModified);
  EXPECT_EQ(r.error.s3_code(), "NotModified");
}

// AOBJ-OBJ-154 and unknown directives.
TEST_F(S3HostileTest, CopyWithUnknownDirectiveOrStrayAttributes) {
  ASSERT_TRUE(raw_->Send(Method::kPutObject, InlinePut("src", "data")).status.ok());
  pb::CopyObjectRequest req;
  req.set_source_bucket("test-bucket");
  req.set_source_key("src");
  req.set_bucket("test-bucket");
  req.set_key("dst");
  req.set_metadata_directive(static_cast<pb::MetadataDirective>(7));
  EXPECT_EQ(Code(raw_->Send(Method::kCopyObject, req)), ErrorCode::kInvalidArgument);
  req.set_metadata_directive(pb::METADATA_DIRECTIVE_COPY);
  (*req.mutable_user_metadata())["a"] = "b";
  EXPECT_EQ(Code(raw_->Send(Method::kCopyObject, req)), ErrorCode::kInvalidArgument);
  req.clear_user_metadata();
  req.set_source_key(std::string(2000, 'k'));
  EXPECT_EQ(Code(raw_->Send(Method::kCopyObject, req)), ErrorCode::kKeyTooLong);
  req.set_source_key("src");
  req.set_bucket("Bad_Bucket");
  EXPECT_EQ(Code(raw_->Send(Method::kCopyObject, req)), ErrorCode::kInvalidBucketName);
  req.set_bucket("test-bucket");
  req.set_key("src");
  RawReply r = raw_->Send(Method::kCopyObject, req);
  EXPECT_EQ(Code(r), ErrorCode::kInvalidRequest);
  EXPECT_EQ(r.error.s3_code(), "InvalidRequest");
}

}  // namespace
}  // namespace aobj
