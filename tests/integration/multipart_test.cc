// Multipart upload through the client library against a separate aobj-server process over UCX
// on loopback, with both stores (spec section 9.15): round trips, every S3 error case, listings,
// abort/complete races, restarts, a server killed during CompleteMultipartUpload, and an object
// above 4 GiB assembled from parts.
#include <signal.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "absl/synchronization/barrier.h"
#include "aobj/client.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/raw_session.h"
#include "integration/server_process.h"
#include "wire/checksum.h"
#include "wire/crypto.h"
#include "wire/etag.h"

namespace aobj {
namespace {

using testing::kAccessKey;
using testing::kSecret;
using testing::RawSession;
using testing::ServerProcess;
namespace pb = aobj::v1;

constexpr char kBucket[] = "test-bucket";
constexpr uint64_t kMinPart = 1024;  // the server runs with --min-part-size 1024

void Fill(uint8_t* p, size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = rng();
    std::memcpy(p + i, &v, 8);
  }
  for (; i < n; ++i) p[i] = static_cast<uint8_t>(rng());
}

std::string Md5Etag(const uint8_t* p, size_t n) {
  Md5 md5;
  md5.Update(p, n);
  return "\"" + HexEncode(md5.Finish()) + "\"";
}

// The multipart ETag of `data` cut into `part_size` pieces, computed here from scratch.
std::string ExpectedEtag(const uint8_t* data, uint64_t size, uint64_t part_size) {
  std::string digests;
  uint64_t count = 0;
  for (uint64_t off = 0; off < size || count == 0; off += part_size) {
    const uint64_t n = std::min(part_size, size - off);
    Md5 md5;
    md5.Update(data + off, n);
    const Md5Digest d = md5.Finish();
    digests.append(reinterpret_cast<const char*>(d.data()), d.size());
    ++count;
    if (size == 0) break;
  }
  Md5 md5;
  md5.Update(digests.data(), digests.size());
  return "\"" + HexEncode(md5.Finish()) + "-" + std::to_string(count) + "\"";
}

class MultipartIntegrationTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(
        testing::TestDir(), GetParam(),
        std::vector<std::string>{"--min-part-size", std::to_string(kMinPart)});
    ASSERT_TRUE(server_->Start()) << server_->log();
    client_ = Connect();
    ASSERT_NE(client_, nullptr);
  }
  void TearDown() override {
    client_.reset();
    if (server_) {
      EXPECT_TRUE(server_->Alive()) << "the server died:\n" << server_->log();
      server_->Stop();
    }
  }
  bool fs() const { return GetParam() == "fs"; }

  // The server stopped and started again on the same store with `flags` added; a new client.
  void RestartWith(const std::vector<std::string>& flags) {
    client_.reset();
    server_->Stop();
    std::vector<std::string> all = {"--min-part-size", std::to_string(kMinPart)};
    all.insert(all.end(), flags.begin(), flags.end());
    server_ = std::make_unique<ServerProcess>(server_->dir(), GetParam(), all);
    ASSERT_TRUE(server_->Start()) << server_->log();
    client_ = Connect();
    ASSERT_NE(client_, nullptr);
  }

  std::unique_ptr<Client> Connect(bool opaque_etags = false) {
    ClientOptions o;
    o.endpoint = server_->endpoint();
    o.access_key_id = kAccessKey;
    o.secret = kSecret;
    o.opaque_etags = opaque_etags;
    auto c = Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status() << "\n" << server_->log();
    return c.ok() ? std::move(*c) : nullptr;
  }

  std::unique_ptr<Buffer> Random(size_t size, uint32_t seed) {
    auto b = client_->AllocateBuffer(std::max<size_t>(size, 1));
    EXPECT_TRUE(b.ok()) << b.status();
    if (!b.ok()) return nullptr;
    Fill((*b)->data(), size, seed);
    return std::move(*b);
  }

  // GETs bucket/key and compares it with data[0, size).
  void ExpectObject(Client& c, const std::string& key, const uint8_t* data, uint64_t size) {
    auto dst = c.AllocateBuffer(std::max<size_t>(size, 1) + 64);
    ASSERT_TRUE(dst.ok());
    auto get = c.Get(kBucket, key, **dst);  // checksum verified end to end
    ASSERT_TRUE(get.ok()) << get.status();
    ASSERT_EQ(get->info.size, size);
    ASSERT_EQ(0, std::memcmp((*dst)->data(), data, size)) << "content differs";
  }

  size_t UploadCount(Client& c) {
    auto page = c.ListMultipartUploads(kBucket);
    EXPECT_TRUE(page.ok()) << page.status();
    return page.ok() ? page->uploads.size() : 0;
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> client_;
};

// AOBJ-OBJ-216, AOBJ-OBJ-217, AOBJ-DAT-152
TEST_P(MultipartIntegrationTest, UploadMultipartRoundTrips) {
  const uint64_t size = (uint64_t{3} << 20) + 17, part = 256 << 10;
  auto src = Random(size, 1);
  ASSERT_NE(src, nullptr);
  PutOptions po;
  po.content_type = "application/octet-stream";
  po.user_metadata = {{"job", "checkpoint-7"}};
  MultipartUploadOptions mo;
  std::atomic<uint64_t> last_progress{0};
  mo.progress = [&](uint64_t done, uint64_t total) {
    EXPECT_EQ(total, size);
    last_progress = done;
  };
  auto info = client_->UploadMultipart(kBucket, "ckpt/shard-0", *src, size, part, po, mo);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(last_progress.load(), size);
  EXPECT_EQ(info->size, size);
  EXPECT_EQ(info->etag, ExpectedEtag(src->data(), size, part));
  EXPECT_EQ(info->etag.substr(info->etag.size() - 4), "-13\"");
  EXPECT_EQ(info->crc32c, Crc32c(0, src->data(), size));
  ExpectObject(*client_, "ckpt/shard-0", src->data(), size);
  auto head = client_->Head(kBucket, "ckpt/shard-0");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->etag, info->etag);
  EXPECT_EQ(head->content_type, "application/octet-stream");
  EXPECT_EQ(head->user_metadata.at("job"), "checkpoint-7");
  EXPECT_EQ(UploadCount(*client_), 0u);
}

// AOBJ-OBJ-263: the filesystem store fsyncs before every reply and says so; the memory store
// promises visibility only.
TEST_P(MultipartIntegrationTest, DurableCommitsFollowTheStore) {
  EXPECT_EQ(client_->session().limits.durable_commits, fs()) << GetParam();
}

// AOBJ-OBJ-259, through the public API: a full-object CRC32C that is not the content's is
// BAD_DIGEST and leaves the upload for the right one.
TEST_P(MultipartIntegrationTest, CompleteChecksTheFullObjectCrc) {
  const uint64_t size = 2 * kMinPart + 5;
  auto src = Random(size, 9);
  ASSERT_NE(src, nullptr);
  auto upload = client_->CreateMultipartUpload(kBucket, "whole-crc");
  ASSERT_TRUE(upload.ok()) << upload.status();
  std::vector<CompletedPart> parts;
  uint32_t whole = 0;
  for (uint64_t off = 0, n = 1; off < size; off += kMinPart, ++n) {
    const uint64_t len = std::min<uint64_t>(kMinPart, size - off);
    auto part = client_->UploadPart(kBucket, "whole-crc", upload->upload_id,
                                    static_cast<uint32_t>(n), *src, off, len);
    ASSERT_TRUE(part.ok()) << part.status();
    EXPECT_EQ(part->crc32c, Crc32c(0, src->data() + off, len));
    parts.push_back({static_cast<uint32_t>(n), part->etag});
    whole = Crc32cCombine(whole, part->crc32c, len);
  }
  EXPECT_EQ(whole, Crc32c(0, src->data(), size));
  EXPECT_EQ(ErrorCodeOf(client_
                            ->CompleteMultipartUpload(kBucket, "whole-crc", upload->upload_id,
                                                      parts, {}, whole ^ 1)
                            .status()),
            ErrorCode::kBadDigest);
  EXPECT_EQ(UploadCount(*client_), 1u);
  auto info =
      client_->CompleteMultipartUpload(kBucket, "whole-crc", upload->upload_id, parts, {}, whole);
  ASSERT_TRUE(info.ok()) << info.status();
  ExpectObject(*client_, "whole-crc", src->data(), size);
}

TEST_P(MultipartIntegrationTest, EmptyAndSinglePartObjects) {
  auto src = Random(5000, 2);
  auto empty = client_->UploadMultipart(kBucket, "empty", *src, 0, 1 << 20);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->size, 0u);
  EXPECT_EQ(empty->etag, ExpectedEtag(src->data(), 0, 1 << 20));  // MD5 of one empty MD5, -1
  ExpectObject(*client_, "empty", src->data(), 0);
  auto one = client_->UploadMultipart(kBucket, "one", *src, 5000, 1 << 20);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->etag, ExpectedEtag(src->data(), 5000, 1 << 20));
  ExpectObject(*client_, "one", src->data(), 5000);
  // Refused before any request: part size 0, a size past the buffer, more than 10000 parts.
  EXPECT_EQ(ErrorCodeOf(client_->UploadMultipart(kBucket, "k", *src, 5000, 0).status()),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(ErrorCodeOf(client_->UploadMultipart(kBucket, "k", *src, 5001, 1000).status()),
            ErrorCode::kInvalidArgument);
  auto wide = Random(20001, 3);
  EXPECT_EQ(ErrorCodeOf(client_->UploadMultipart(kBucket, "k", *wide, 20001, 2).status()),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(UploadCount(*client_), 0u);
}

// Each part moves by its own path: RMA from its own window, inline when small, nothing when
// empty (AOBJ-OBJ-206); the object appears only at Complete (AOBJ-OBJ-204).
TEST_P(MultipartIntegrationTest, ExplicitOperationsAndPaths) {
  auto src = Random(40000 + 1500, 3);
  auto up = client_->CreateMultipartUpload(kBucket, "explicit");
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(up->upload_id.size(), 32u);
  auto p1 = client_->UploadPart(kBucket, "explicit", up->upload_id, 1, *src, 0, 40000);
  ASSERT_TRUE(p1.ok()) << p1.status();
  EXPECT_EQ(p1->path, TransferPath::kRma);
  EXPECT_EQ(p1->etag, Md5Etag(src->data(), 40000));
  auto p2 = client_->UploadPart(kBucket, "explicit", up->upload_id, 2, *src, 40000, 1500);
  ASSERT_TRUE(p2.ok()) << p2.status();
  EXPECT_EQ(p2->path, TransferPath::kInline);
  auto p3 = client_->UploadPart(kBucket, "explicit", up->upload_id, 3, *src, 0, 0);
  ASSERT_TRUE(p3.ok()) << p3.status();
  EXPECT_EQ(p3->path, TransferPath::kNone);
  EXPECT_EQ(ErrorCodeOf(client_->Head(kBucket, "explicit").status()), ErrorCode::kNoSuchKey);

  auto parts = client_->ListParts(kBucket, "explicit", up->upload_id);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->parts.size(), 3u);
  EXPECT_EQ(parts->parts[0].size, 40000u);
  EXPECT_EQ(parts->parts[1].size, 1500u);
  EXPECT_EQ(parts->parts[1].etag, p2->etag);
  EXPECT_EQ(parts->parts[0].crc32c, Crc32c(0, src->data(), 40000));
  EXPECT_GT(parts->upload.initiated_ms, 0);
  auto uploads = client_->ListMultipartUploads(kBucket);
  ASSERT_TRUE(uploads.ok());
  ASSERT_EQ(uploads->uploads.size(), 1u);
  EXPECT_EQ(uploads->uploads[0].key, "explicit");
  EXPECT_EQ(uploads->uploads[0].upload_id, up->upload_id);

  auto info = client_->CompleteMultipartUpload(kBucket, "explicit", up->upload_id,
                                               {{1, p1->etag}, {2, p2->etag}, {3, p3->etag}});
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->size, 41500u);
  auto expected = MultipartEtag({p1->etag, p2->etag, p3->etag});
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(info->etag, *expected);
  ExpectObject(*client_, "explicit", src->data(), 41500);
  EXPECT_EQ(UploadCount(*client_), 0u);
}

// AOBJ-OBJ-254: a client with ClientOptions::opaque_etags offers OPAQUE_PART_ETAG too, and its
// parts get opaque ETags (the server skips their MD5 pass): the MD5's form, new digits on every
// write, so a Complete that lists a replaced part's earlier ETag fails INVALID_PART; the object's
// ETag is computed from the listed ETags (AOBJ-OBJ-217) and its bytes and CRC are as ever. The
// other client's parts keep their MD5 ETags (AOBJ-OBJ-207).
TEST_P(MultipartIntegrationTest, OpaquePartEtagsAreFreshAndCompleteAsEver) {
  auto opaque = Connect(/*opaque_etags=*/true);
  ASSERT_NE(opaque, nullptr);
  const uint64_t size = (uint64_t{1} << 20) + 300;
  auto src = opaque->AllocateBuffer(size);
  ASSERT_TRUE(src.ok()) << src.status();
  Fill((*src)->data(), size, 11);
  const uint64_t half = size / 2;  // above the test server's minimum part size
  auto up = opaque->CreateMultipartUpload(kBucket, "opaque-parts");
  ASSERT_TRUE(up.ok()) << up.status();
  auto p1 = opaque->UploadPart(kBucket, "opaque-parts", up->upload_id, 1, **src, 0, half);
  ASSERT_TRUE(p1.ok()) << p1.status();
  const std::string md5_1 = Md5Etag((*src)->data(), half);
  EXPECT_EQ(p1->etag.size(), 34u);
  EXPECT_EQ(BareMd5Etag(p1->etag), p1->etag.substr(1, 32)) << p1->etag;
  EXPECT_NE(p1->etag, md5_1);
  auto again = opaque->UploadPart(kBucket, "opaque-parts", up->upload_id, 1, **src, 0, half);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NE(again->etag, p1->etag) << "the same octets written again";
  auto p2 = opaque->UploadPart(kBucket, "opaque-parts", up->upload_id, 2, **src, half, size - half);
  ASSERT_TRUE(p2.ok()) << p2.status();
  EXPECT_EQ(ErrorCodeOf(opaque
                            ->CompleteMultipartUpload(kBucket, "opaque-parts", up->upload_id,
                                                      {{1, p1->etag}, {2, p2->etag}})
                            .status()),
            ErrorCode::kInvalidPart);
  auto info = opaque->CompleteMultipartUpload(kBucket, "opaque-parts", up->upload_id,
                                              {{1, again->etag}, {2, p2->etag}});
  ASSERT_TRUE(info.ok()) << info.status();
  auto expected = MultipartEtag({again->etag, p2->etag});
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(info->etag, *expected);
  EXPECT_NE(info->etag, ExpectedEtag((*src)->data(), size, half));
  EXPECT_EQ(info->crc32c, Crc32c(0, (*src)->data(), size));
  ExpectObject(*client_, "opaque-parts", (*src)->data(), size);

  // UploadMultipart from the same client: fresh ETags, the object whole.
  auto whole = opaque->UploadMultipart(kBucket, "opaque-whole", **src, size, half);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_NE(whole->etag, ExpectedEtag((*src)->data(), size, half));
  EXPECT_EQ(whole->etag.substr(whole->etag.size() - 3), "-2\"");
  ExpectObject(*client_, "opaque-whole", (*src)->data(), size);

  // The fixture's client did not offer it: MD5 part ETags, the S3 multipart ETag.
  auto plain = Random(size, 11);  // the same octets, in a buffer of that client
  ASSERT_NE(plain, nullptr);
  auto md5 = client_->UploadMultipart(kBucket, "md5-whole", *plain, size, half);
  ASSERT_TRUE(md5.ok()) << md5.status();
  EXPECT_EQ(md5->etag, ExpectedEtag((*src)->data(), size, half));
}

// Every S3 error of multipart upload, with its AOBJ code and S3 name (AOBJ-ERR-120).
TEST_P(MultipartIntegrationTest, S3ErrorCases) {
  auto src = Random(8192, 4);
  auto up = client_->CreateMultipartUpload(kBucket, "errors");
  ASSERT_TRUE(up.ok());
  const std::string& id = up->upload_id;
  auto p1 = client_->UploadPart(kBucket, "errors", id, 1, *src, 0, 2048);
  auto p2 = client_->UploadPart(kBucket, "errors", id, 2, *src, 2048, 1000);  // below 1024
  auto p3 = client_->UploadPart(kBucket, "errors", id, 3, *src, 4096, 10);
  ASSERT_TRUE(p1.ok() && p2.ok() && p3.ok());
  auto expect = [&](const absl::Status& s, ErrorCode code, const char* s3) {
    EXPECT_EQ(ErrorCodeOf(s), code) << s;
    EXPECT_EQ(GetErrorInfo(ErrorCodeOf(s)).s3_code, s3);
  };
  auto complete = [&](std::vector<CompletedPart> parts, const std::string& key = "errors",
                      const std::string& uid = "") {
    return client_->CompleteMultipartUpload(kBucket, key, uid.empty() ? id : uid, parts).status();
  };
  // AOBJ-OBJ-211
  expect(complete({{2, p2->etag}, {1, p1->etag}}), ErrorCode::kInvalidPartOrder,
         "InvalidPartOrder");
  // AOBJ-OBJ-212
  expect(complete({{1, p1->etag}, {4, p3->etag}}), ErrorCode::kInvalidPart, "InvalidPart");
  expect(complete({{1, p3->etag}, {3, p3->etag}}), ErrorCode::kInvalidPart, "InvalidPart");
  // AOBJ-OBJ-213
  expect(complete({{1, p1->etag}, {2, p2->etag}, {3, p3->etag}}), ErrorCode::kEntityTooSmall,
         "EntityTooSmall");
  // AOBJ-OBJ-201, AOBJ-OBJ-203
  expect(complete({{1, p1->etag}}, "errors", std::string(32, '0')), ErrorCode::kNoSuchUpload,
         "NoSuchUpload");
  expect(complete({{1, p1->etag}}, "errors", "../../etc/passwd"), ErrorCode::kNoSuchUpload,
         "NoSuchUpload");
  expect(complete({{1, p1->etag}}, "other-key"), ErrorCode::kNoSuchUpload, "NoSuchUpload");
  // AOBJ-OBJ-205
  expect(client_->UploadPart(kBucket, "errors", id, 10001, *src, 0, 10).status(),
         ErrorCode::kTooManyParts, "InvalidArgument");
  expect(client_->UploadPart(kBucket, "errors", id, 0, *src, 0, 10).status(),
         ErrorCode::kInvalidArgument, "InvalidArgument");
  // AOBJ-OBJ-210
  std::vector<CompletedPart> many(kMaxPartNumber + 1, CompletedPart{1, p1->etag});
  for (uint32_t i = 0; i < many.size(); ++i) many[i].part_number = i + 1;
  expect(complete(many), ErrorCode::kTooManyParts, "InvalidArgument");
  // AOBJ-OBJ-003
  expect(client_->CreateMultipartUpload("no-such-bucket", "k").status(), ErrorCode::kNoSuchBucket,
         "NoSuchBucket");
  expect(client_->ListMultipartUploads("no-such-bucket").status(), ErrorCode::kNoSuchBucket,
         "NoSuchBucket");
  // Nothing above left an object or removed the upload (AOBJ-OBJ-218).
  EXPECT_EQ(ErrorCodeOf(client_->Head(kBucket, "errors").status()), ErrorCode::kNoSuchKey);
  ASSERT_EQ(UploadCount(*client_), 1u);
  // The small part may be last: complete with parts 1 and 2.
  auto ok = client_->CompleteMultipartUpload(kBucket, "errors", id, {{1, p1->etag}, {2, p2->etag}});
  ASSERT_TRUE(ok.ok()) << ok.status();
  ExpectObject(*client_, "errors", src->data(), 3048);
}

// AOBJ-OBJ-220
TEST_P(MultipartIntegrationTest, AbortThenComplete) {
  auto src = Random(4096, 5);
  auto up = client_->CreateMultipartUpload(kBucket, "aborted");
  ASSERT_TRUE(up.ok());
  auto p1 = client_->UploadPart(kBucket, "aborted", up->upload_id, 1, *src, 0, 4096);
  ASSERT_TRUE(p1.ok());
  ASSERT_TRUE(client_->AbortMultipartUpload(kBucket, "aborted", up->upload_id).ok());
  EXPECT_EQ(ErrorCodeOf(
                client_->CompleteMultipartUpload(kBucket, "aborted", up->upload_id, {{1, p1->etag}})
                    .status()),
            ErrorCode::kNoSuchUpload);
  EXPECT_EQ(ErrorCodeOf(client_->AbortMultipartUpload(kBucket, "aborted", up->upload_id)),
            ErrorCode::kNoSuchUpload);
  EXPECT_EQ(
      ErrorCodeOf(client_->UploadPart(kBucket, "aborted", up->upload_id, 2, *src, 0, 10).status()),
      ErrorCode::kNoSuchUpload);
  EXPECT_EQ(ErrorCodeOf(client_->ListParts(kBucket, "aborted", up->upload_id).status()),
            ErrorCode::kNoSuchUpload);
  EXPECT_EQ(ErrorCodeOf(client_->Head(kBucket, "aborted").status()), ErrorCode::kNoSuchKey);
}

// AOBJ-DAT-150: a part whose checksum does not match is refused and not stored; the earlier
// part of that number stays.
TEST_P(MultipartIntegrationTest, PartWithWrongChecksumIsNotStored) {
  auto src = Random(70000, 6);
  auto up = client_->CreateMultipartUpload(kBucket, "digest");
  ASSERT_TRUE(up.ok());
  auto good = client_->UploadPart(kBucket, "digest", up->upload_id, 1, *src, 0, 70000);
  ASSERT_TRUE(good.ok());
  RawSession raw(server_->endpoint(), kAccessKey, kSecret);
  ASSERT_TRUE(raw.Open().status.ok());
  auto mem = raw.Allocate(70000);
  std::memcpy(mem->data(), src->data(), 70000);
  mem->data()[12345] ^= 1;  // the checksum below is of the original bytes
  pb::UploadPartRequest req;
  req.set_bucket(kBucket);
  req.set_key("digest");
  req.set_upload_id(up->upload_id);
  req.set_part_number(1);
  req.set_size(70000);
  req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
  Checksummer sum(ChecksumAlgorithm::kCrc32c);
  sum.Update(src->data(), 70000);
  req.set_checksum(sum.Finish());
  auto* d = req.add_source();
  d->set_address(reinterpret_cast<uint64_t>(mem->data()));
  d->set_length(70000);
  d->set_rkey(mem->packed_rkey());
  d->set_memory_type(pb::MEMORY_TYPE_HOST);
  EXPECT_EQ(ErrorCodeOf(raw.Send(Method::kUploadPart, req).status), ErrorCode::kBadDigest);
  auto parts = client_->ListParts(kBucket, "digest", up->upload_id);
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->parts.size(), 1u);
  EXPECT_EQ(parts->parts[0].etag, good->etag);
  // Malformed IDs and part numbers never reach the data channel.
  req.set_upload_id("not-an-id");
  EXPECT_EQ(ErrorCodeOf(raw.Send(Method::kUploadPart, req).status), ErrorCode::kNoSuchUpload);
}

// AOBJ-OBJ-221, AOBJ-OBJ-223, AOBJ-OBJ-224
TEST_P(MultipartIntegrationTest, ListingsPaginate) {
  auto src = Random(1, 7);
  std::vector<std::string> ids;
  for (const char* key : {"logs/b", "logs/a", "data/x", "logs/a"}) {
    auto up = client_->CreateMultipartUpload(kBucket, key);
    ASSERT_TRUE(up.ok());
    ids.push_back(up->upload_id);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ListUploadsOptions lo;
  lo.prefix = "logs/";
  lo.max_uploads = 2;
  std::vector<std::string> seen;
  for (int page_no = 0; page_no < 5; ++page_no) {
    auto page = client_->ListMultipartUploads(kBucket, lo);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const UploadInfo& u : page->uploads) seen.push_back(u.key + "#" + u.upload_id);
    if (!page->truncated) break;
    lo.key_marker = page->next_key_marker;
    lo.upload_id_marker = page->next_upload_id_marker;
  }
  EXPECT_EQ(seen,
            (std::vector<std::string>{"logs/a#" + ids[1], "logs/a#" + ids[3], "logs/b#" + ids[0]}));
  for (uint32_t n = 1; n <= 7; ++n) {
    ASSERT_TRUE(client_->UploadPart(kBucket, "data/x", ids[2], n * 10, *src, 0, 1).ok());
  }
  auto first = client_->ListParts(kBucket, "data/x", ids[2], 0, 4);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->parts.size(), 4u);
  EXPECT_TRUE(first->truncated);
  EXPECT_EQ(first->next_part_number_marker, 40u);
  auto second = client_->ListParts(kBucket, "data/x", ids[2], first->next_part_number_marker, 4);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->parts.size(), 3u);
  EXPECT_FALSE(second->truncated);
  EXPECT_EQ(second->parts[0].part_number, 50u);
}

// AOBJ-OBJ-225: two clients complete and abort the same upload at once; exactly one wins.
TEST_P(MultipartIntegrationTest, ConcurrentCompleteAndAbortFromTwoClients) {
  auto other = Connect();
  ASSERT_NE(other, nullptr);
  auto src = Random(2 << 20, 8);
  for (int round = 0; round < 6; ++round) {
    const std::string key = "race-" + std::to_string(round);
    auto up = client_->CreateMultipartUpload(kBucket, key);
    ASSERT_TRUE(up.ok());
    auto p1 = client_->UploadPart(kBucket, key, up->upload_id, 1, *src, 0, 2 << 20);
    ASSERT_TRUE(p1.ok());
    absl::StatusOr<ObjectInfo> completed;
    absl::Status aborted;
    auto* start = new absl::Barrier(2);
    std::thread a([&] {
      if (start->Block()) delete start;
      completed = client_->CompleteMultipartUpload(kBucket, key, up->upload_id, {{1, p1->etag}});
    });
    std::thread b([&] {
      if (start->Block()) delete start;
      aborted = other->AbortMultipartUpload(kBucket, key, up->upload_id);
    });
    a.join();
    b.join();
    ASSERT_NE(completed.ok(), aborted.ok()) << completed.status() << " / " << aborted;
    if (completed.ok()) {
      EXPECT_EQ(ErrorCodeOf(aborted), ErrorCode::kNoSuchUpload);
      ExpectObject(*other, key, src->data(), 2 << 20);
    } else {
      EXPECT_EQ(ErrorCodeOf(completed.status()), ErrorCode::kNoSuchUpload);
      EXPECT_EQ(ErrorCodeOf(other->Head(kBucket, key).status()), ErrorCode::kNoSuchKey);
    }
  }
  EXPECT_EQ(UploadCount(*client_), 0u);
}

// AOBJ-OBJ-227: uploads in progress survive a server restart on the filesystem store.
TEST_P(MultipartIntegrationTest, UploadsSurviveServerRestart) {
  if (!fs()) GTEST_SKIP() << "the memory store forgets everything at exit by design";
  auto src = Random(300000, 9);
  auto up = client_->CreateMultipartUpload(kBucket, "restart");
  ASSERT_TRUE(up.ok());
  auto p1 = client_->UploadPart(kBucket, "restart", up->upload_id, 1, *src, 0, 200000);
  ASSERT_TRUE(p1.ok());
  src.reset();  // buffers go before the client that made them
  client_.reset();
  ASSERT_TRUE(server_->Restart(SIGKILL)) << server_->log();
  client_ = Connect();
  ASSERT_NE(client_, nullptr);
  src = Random(300000, 9);
  auto uploads = client_->ListMultipartUploads(kBucket);
  ASSERT_TRUE(uploads.ok());
  ASSERT_EQ(uploads->uploads.size(), 1u);
  EXPECT_EQ(uploads->uploads[0].upload_id, up->upload_id);
  auto p2 = client_->UploadPart(kBucket, "restart", up->upload_id, 2, *src, 200000, 100000);
  ASSERT_TRUE(p2.ok()) << p2.status();
  auto info = client_->CompleteMultipartUpload(kBucket, "restart", up->upload_id,
                                               {{1, p1->etag}, {2, p2->etag}});
  ASSERT_TRUE(info.ok()) << info.status();
  ExpectObject(*client_, "restart", src->data(), 300000);
}

// AOBJ-OBJ-233 (issue 16, finding 3): one principal used to take all 10,000 upload slots in 20 s,
// after which another principal's CreateMultipartUpload in its own bucket failed.
TEST_P(MultipartIntegrationTest, OnePrincipalCannotTakeAnothersUploadSlots) {
  ASSERT_NO_FATAL_FAILURE(RestartWith({"--max-uploads-per-principal", "3"}));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client_->CreateMultipartUpload(kBucket, "mine-" + std::to_string(i)).ok());
  }
  auto refused = client_->CreateMultipartUpload(kBucket, "mine-3");
  EXPECT_EQ(ErrorCodeOf(refused.status()), ErrorCode::kTooManyUploads) << refused.status();
  ClientOptions o;
  o.endpoint = server_->endpoint();
  o.access_key_id = "AKTESTSECOND";
  o.secret = "second-secret-for-tests";
  auto other = Client::Connect(o);
  ASSERT_TRUE(other.ok()) << other.status();
  auto theirs = (*other)->CreateMultipartUpload(kBucket, "theirs");
  EXPECT_TRUE(theirs.ok()) << theirs.status();
}

// AOBJ-OBJ-234 (issue 16, finding 3): uploads nobody completes or aborts used to stay forever,
// parts and all. With a short expiry the server aborts them by itself while it serves.
TEST_P(MultipartIntegrationTest, AbandonedUploadsExpire) {
  ASSERT_NO_FATAL_FAILURE(RestartWith({"--upload-expiry-ms", "1000"}));
  auto src = Random(100000, 12);
  auto up = client_->CreateMultipartUpload(kBucket, "abandoned");
  ASSERT_TRUE(up.ok()) << up.status();
  ASSERT_TRUE(client_->UploadPart(kBucket, "abandoned", up->upload_id, 1, *src, 0, 100000).ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (UploadCount(*client_) != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(UploadCount(*client_), 0u) << "the upload did not expire\n" << server_->log();
  auto late = client_->UploadPart(kBucket, "abandoned", up->upload_id, 2, *src, 0, 100000);
  EXPECT_EQ(ErrorCodeOf(late.status()), ErrorCode::kNoSuchUpload) << late.status();
  if (fs()) {
    const std::string uploads = server_->dir() + "/data/.multipart/uploads/" + kBucket;
    size_t left = 0;
    if (std::filesystem::exists(uploads)) {
      for (const auto& e : std::filesystem::directory_iterator(uploads)) {
        (void)e;
        ++left;
      }
    }
    EXPECT_EQ(left, 0u) << "the expired upload's parts are still on disk";
  }
}

// AOBJ-OBJ-226: a server killed with SIGKILL during CompleteMultipartUpload and restarted on the
// same store: the key holds the old object or the whole new one, and the upload is still listed
// (and can then be completed or aborted) or gone with the new object in place.
TEST_P(MultipartIntegrationTest, ServerKilledDuringCompleteLeavesOldOrNewObject) {
  if (!fs()) GTEST_SKIP() << "the memory store keeps nothing across a kill";
  const uint64_t part = 8 << 20, count = 12, size = part * count;
  auto src = Random(size, 10);
  auto old_body = Random(100000, 11);
  const std::string new_etag = ExpectedEtag(src->data(), size, part);
  int outcomes[4] = {0, 0, 0, 0};  // old+listed, new+listed, new+gone, old+gone(never)
  int round = 0;
  for (int delay_ms : {0, 15, 40, 80, 150, 300, 600}) {
    SCOPED_TRACE(delay_ms);
    const std::string key = "killed-" + std::to_string(round++);
    auto old_put = client_->Put(kBucket, key, *old_body, 100000);
    ASSERT_TRUE(old_put.ok()) << old_put.status();
    auto up = client_->CreateMultipartUpload(kBucket, key);
    ASSERT_TRUE(up.ok());
    std::vector<CompletedPart> parts;
    for (uint64_t i = 0; i < count; ++i) {
      auto r = client_->UploadPart(kBucket, key, up->upload_id, static_cast<uint32_t>(i + 1), *src,
                                   i * part, part);
      ASSERT_TRUE(r.ok()) << r.status();
      parts.push_back({static_cast<uint32_t>(i + 1), r->etag});
    }
    std::thread completer([&] {
      // Fails when the kill comes first; its outcome is then unknown to this client.
      client_->CompleteMultipartUpload(kBucket, key, up->upload_id, parts).IgnoreError();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    server_->Kill(SIGKILL);
    completer.join();
    src.reset();  // buffers go before the client that made them
    old_body.reset();
    client_.reset();
    ASSERT_TRUE(server_->Start()) << server_->log();
    client_ = Connect();
    ASSERT_NE(client_, nullptr);
    src = Random(size, 10);
    old_body = Random(100000, 11);

    auto head = client_->Head(kBucket, key);
    ASSERT_TRUE(head.ok()) << head.status();
    const bool is_new = head->etag == new_etag;
    if (is_new) {
      ExpectObject(*client_, key, src->data(), size);
    } else {
      EXPECT_EQ(head->etag, old_put->info.etag) << "neither the old nor the new object";
      ExpectObject(*client_, key, old_body->data(), 100000);
    }
    auto uploads = client_->ListMultipartUploads(kBucket);
    ASSERT_TRUE(uploads.ok());
    const bool listed = !uploads->uploads.empty();
    outcomes[(is_new ? 1 : 0) + (listed ? 0 : 2)]++;
    EXPECT_TRUE(is_new || listed) << "the upload vanished without its object";
    if (listed) {
      ASSERT_EQ(uploads->uploads.size(), 1u);
      auto listed_parts = client_->ListParts(kBucket, key, up->upload_id);
      ASSERT_TRUE(listed_parts.ok()) << listed_parts.status();
      EXPECT_EQ(listed_parts->parts.size(), count) << "a part went missing";
      if (round % 2 == 0) {
        auto done = client_->CompleteMultipartUpload(kBucket, key, up->upload_id, parts);
        ASSERT_TRUE(done.ok()) << done.status();
        EXPECT_EQ(done->etag, new_etag);
        ExpectObject(*client_, key, src->data(), size);
      } else {
        ASSERT_TRUE(client_->AbortMultipartUpload(kBucket, key, up->upload_id).ok());
      }
    }
    EXPECT_EQ(UploadCount(*client_), 0u);
  }
  std::cout << "[ outcomes ] old+listed=" << outcomes[0] << " new+listed=" << outcomes[1]
            << " new+gone=" << outcomes[3] << "\n";
}

// AOBJ-OBJ-230: an object above 4 GiB assembled from five 1 GiB parts, all read from one
// registered buffer, checked by size, ETag, full-object CRC32C and ranged GETs around 2^32.
TEST_P(MultipartIntegrationTest, ObjectAboveFourGiBFromOneGiBParts) {
  if (!fs()) GTEST_SKIP() << "5 GiB of parts plus a 5 GiB object would live in memory";
  struct statvfs vfs;
  ASSERT_EQ(statvfs(server_->dir().c_str(), &vfs), 0);
  if (static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize < (uint64_t{14} << 30)) {
    GTEST_SKIP() << "needs 14 GiB of free disk for 5 GiB of parts and the 5 GiB object";
  }
  const uint64_t part = uint64_t{1} << 30, count = 5, size = part * count;
  auto src = Random(part, 12);
  ASSERT_NE(src, nullptr);
  auto up = client_->CreateMultipartUpload(kBucket, "huge");
  ASSERT_TRUE(up.ok());
  std::vector<CompletedPart> parts;
  for (uint32_t n = 1; n <= count; ++n) {
    auto r = client_->UploadPart(kBucket, "huge", up->upload_id, n, *src, 0, part);
    ASSERT_TRUE(r.ok()) << r.status();
    parts.push_back({n, r->etag});
  }
  auto listed = client_->ListParts(kBucket, "huge", up->upload_id);
  ASSERT_TRUE(listed.ok());
  uint64_t sum = 0;
  for (const PartInfo& p : listed->parts) sum += p.size;
  EXPECT_EQ(sum, size);
  auto info = client_->CompleteMultipartUpload(kBucket, "huge", up->upload_id, parts);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->size, size);
  uint32_t crc = 0;
  for (uint64_t i = 0; i < count; ++i) crc = Crc32c(crc, src->data(), part);
  EXPECT_EQ(info->crc32c, crc);
  const std::string one = Md5Etag(src->data(), part);
  auto expected = MultipartEtag({one, one, one, one, one});
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(info->etag, *expected);
  auto head = client_->Head(kBucket, "huge");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->size, size);
  // Ranged GETs across 2^32 and at the very end: the bytes of parts 4 and 5, and of part 5.
  auto dst = client_->AllocateBuffer(4096);
  ASSERT_TRUE(dst.ok());
  const uint64_t four_gib = uint64_t{1} << 32;
  GetOptions go;
  go.range = ByteRange::FirstLast(four_gib - 100, four_gib + 99);
  auto across = client_->Get(kBucket, "huge", **dst, go);
  ASSERT_TRUE(across.ok()) << across.status();
  EXPECT_EQ(across->bytes_transferred, 200u);
  EXPECT_EQ(0, std::memcmp((*dst)->data(), src->data() + part - 100, 100));
  EXPECT_EQ(0, std::memcmp((*dst)->data() + 100, src->data(), 100));
  go.range = ByteRange::Suffix(1000);
  auto tail = client_->Get(kBucket, "huge", **dst, go);
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_EQ(0, std::memcmp((*dst)->data(), src->data() + part - 1000, 1000));
  ASSERT_TRUE(client_->Delete(kBucket, "huge").ok());
}

// AOBJ-OBJ-231: a create-only CompleteMultipartUpload, through UploadMultipart too.
TEST_P(MultipartIntegrationTest, ConditionalComplete) {
  auto src = Random(3000, 13);
  PutOptions create_only;
  create_only.conditions.if_none_match = "*";
  auto first = client_->UploadMultipart(kBucket, "once", *src, 3000, 1024, create_only);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = client_->UploadMultipart(kBucket, "once", *src, 2000, 1024, create_only);
  EXPECT_EQ(ErrorCodeOf(second.status()), ErrorCode::kPreconditionFailed) << second.status();
  EXPECT_EQ(UploadCount(*client_), 0u) << "the failed upload was not aborted";
  auto up = client_->CreateMultipartUpload(kBucket, "once");
  ASSERT_TRUE(up.ok());
  auto p1 = client_->UploadPart(kBucket, "once", up->upload_id, 1, *src, 0, 100);
  ASSERT_TRUE(p1.ok());
  Preconditions stale;
  stale.if_match = "\"00000000000000000000000000000000\"";
  EXPECT_EQ(
      ErrorCodeOf(
          client_->CompleteMultipartUpload(kBucket, "once", up->upload_id, {{1, p1->etag}}, stale)
              .status()),
      ErrorCode::kPreconditionFailed);
  EXPECT_EQ(UploadCount(*client_), 1u) << "a failed condition must leave the upload";
  Preconditions current;
  current.if_match = first->etag;
  auto done =
      client_->CompleteMultipartUpload(kBucket, "once", up->upload_id, {{1, p1->etag}}, current);
  ASSERT_TRUE(done.ok()) << done.status();
  ExpectObject(*client_, "once", src->data(), 100);
}

// `aobj mpu ls` and `aobj mpu abort`.
TEST_P(MultipartIntegrationTest, CliListsAndAbortsUploads) {
  auto up = client_->CreateMultipartUpload(kBucket, "cli/big file.bin");
  ASSERT_TRUE(up.ok());
  auto other = client_->CreateMultipartUpload(kBucket, "elsewhere");
  ASSERT_TRUE(other.ok());
  const std::string log = server_->dir() + "/cli.log";
  auto cli = [&](std::vector<std::string> args) {
    unlink(log.c_str());
    std::vector<std::string> argv = {AOBJ_CLI_BINARY, "--endpoint", server_->endpoint(),
                                     "--credentials", server_->credentials_file()};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_t pid = testing::Spawn(argv, log);
    int status = testing::WaitFor(pid, std::chrono::seconds(60));
    return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  ASSERT_EQ(cli({"mpu", "ls", "test-bucket/cli/"}), 0) << testing::ReadFile(log);
  std::string out = testing::ReadFile(log);
  EXPECT_NE(out.find(up->upload_id + "  cli/big file.bin"), std::string::npos) << out;
  EXPECT_EQ(out.find(other->upload_id), std::string::npos) << "the prefix was ignored:\n" << out;
  ASSERT_EQ(cli({"mpu", "abort", "test-bucket/cli/big file.bin", up->upload_id}), 0)
      << testing::ReadFile(log);
  EXPECT_EQ(UploadCount(*client_), 1u);
  EXPECT_EQ(cli({"mpu", "abort", "test-bucket/cli/big file.bin", up->upload_id}), 1);
  EXPECT_NE(testing::ReadFile(log).find("NO_SUCH_UPLOAD (NoSuchUpload)"), std::string::npos)
      << testing::ReadFile(log);
  EXPECT_EQ(cli({"mpu", "frobnicate"}), 2);
  ASSERT_EQ(cli({"mpu", "ls", "test-bucket"}), 0);
  EXPECT_NE(testing::ReadFile(log).find(other->upload_id), std::string::npos);
}

// `aobj cp` switches to multipart uploads from --multipart-threshold on.
TEST_P(MultipartIntegrationTest, CliCpUsesMultipartAboveThreshold) {
  const uint64_t size = (uint64_t{5} << 20) + 123;
  auto src = Random(size, 14);
  const std::string file = server_->dir() + "/big.bin";
  {
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(src->data()), static_cast<std::streamsize>(size));
  }
  const std::string log = server_->dir() + "/cp.log";
  auto cli = [&](std::vector<std::string> args) {
    unlink(log.c_str());
    std::vector<std::string> argv = {AOBJ_CLI_BINARY, "--endpoint", server_->endpoint(),
                                     "--credentials", server_->credentials_file()};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_t pid = testing::Spawn(argv, log);
    int status = testing::WaitFor(pid, std::chrono::seconds(120));
    return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  ASSERT_EQ(cli({"--multipart-threshold", "1048576", "--part-size", "1048576", "--metadata",
                 "origin=cli", "cp", file, "aobj://test-bucket/cp/big.bin"}),
            0)
      << testing::ReadFile(log);
  auto head = client_->Head(kBucket, "cp/big.bin");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->etag, ExpectedEtag(src->data(), size, 1 << 20));  // "-6"
  EXPECT_EQ(head->user_metadata.at("origin"), "cli");
  ExpectObject(*client_, "cp/big.bin", src->data(), size);
  // Below the threshold (the default 64 MiB): one PutObject, a plain MD5 ETag.
  ASSERT_EQ(cli({"cp", file, "aobj://test-bucket/cp/single.bin"}), 0) << testing::ReadFile(log);
  EXPECT_EQ(client_->Head(kBucket, "cp/single.bin")->etag, Md5Etag(src->data(), size));
  // A create-only multipart cp onto an existing key fails and leaves no upload behind.
  EXPECT_EQ(cli({"--multipart-threshold", "1048576", "--part-size", "1048576", "--if-none-match",
                 "*", "cp", file, "aobj://test-bucket/cp/big.bin"}),
            1);
  EXPECT_NE(testing::ReadFile(log).find("PreconditionFailed"), std::string::npos)
      << testing::ReadFile(log);
  EXPECT_EQ(UploadCount(*client_), 0u);
}

INSTANTIATE_TEST_SUITE_P(Stores, MultipartIntegrationTest, ::testing::Values("memory", "fs"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace aobj
