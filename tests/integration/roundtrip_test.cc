// Client library against a separate aobj-server process over UCX on loopback: objects of many
// sizes round-trip byte for byte through both stores and every transfer path.
#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "aobj/client.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/server_process.h"
#include "wire/etag.h"

namespace aobj {
namespace {

using testing::kAccessKey;
using testing::kSecret;
using testing::ServerProcess;

ClientOptions Options(const ServerProcess& server) {
  ClientOptions o;
  o.endpoint = server.endpoint();
  o.access_key_id = kAccessKey;
  o.secret = kSecret;
  return o;
}

void Fill(uint8_t* p, size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = rng();
    std::memcpy(p + i, &v, 8);
  }
  for (; i < n; ++i) p[i] = static_cast<uint8_t>(rng());
}

class RoundTripTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(testing::TestDir(), GetParam());
    ASSERT_TRUE(server_->Start()) << server_->log();
    auto c = Client::Connect(Options(*server_));
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(*c);
  }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Stop();
  }

  // PUT `size` pseudo-random bytes and GET them back into a fresh buffer; compare every byte.
  void RoundTrip(size_t size, TransferPath expected_path, bool inline_allowed = true) {
    SCOPED_TRACE(size);
    auto src = client_->AllocateBuffer(std::max<size_t>(size, 1));
    ASSERT_TRUE(src.ok()) << src.status();
    Fill((*src)->data(), size, static_cast<uint32_t>(size));
    const std::string key = "obj-" + std::to_string(size);
    auto put = client_->Put("test-bucket", key, **src, size);
    ASSERT_TRUE(put.ok()) << put.status();
    EXPECT_EQ(put->bytes_transferred, size);
    EXPECT_EQ(put->path, expected_path);
    EXPECT_EQ(put->info.size, size);
    EXPECT_EQ(put->info.etag.size(), 34u);  // quoted MD5 hex (AOBJ-OBJ-005)

    auto dst = client_->AllocateBuffer(std::max<size_t>(size, 1) + 4096);
    ASSERT_TRUE(dst.ok()) << dst.status();
    std::memset((*dst)->data(), 0xEE, (*dst)->size());
    auto get = client_->Get("test-bucket", key, **dst);
    ASSERT_TRUE(get.ok()) << get.status();
    EXPECT_EQ(get->bytes_transferred, size);
    EXPECT_EQ(get->path, expected_path);  // AOBJ-DAT-014: inline though descriptors were sent
    EXPECT_EQ(get->info.etag, put->info.etag);
    // AOBJ-DAT-015: exactly the object's octets.
    ASSERT_EQ(0, std::memcmp((*src)->data(), (*dst)->data(), size)) << "content differs";
    // Nothing past the object was written (AOBJ-MEM-009).
    for (size_t i = size; i < (*dst)->size(); ++i) {
      ASSERT_EQ((*dst)->data()[i], 0xEE) << "byte " << i << " past the object was written";
    }
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> client_;
};

TEST_P(RoundTripTest, EmptyObjectMovesNoBytes) { RoundTrip(0, TransferPath::kNone); }
TEST_P(RoundTripTest, OneByteTravelsInline) { RoundTrip(1, TransferPath::kInline); }
TEST_P(RoundTripTest, InlineThresholdIsInline) { RoundTrip(16384, TransferPath::kInline); }
TEST_P(RoundTripTest, JustAboveThresholdUsesRma) { RoundTrip(16385, TransferPath::kRma); }
TEST_P(RoundTripTest, OddSizesUseRma) {
  for (size_t size : {size_t{65537}, size_t{1} << 20 | 3, size_t{8} << 20 | 1, (size_t{8} << 20) * 3 + 7}) {
    RoundTrip(size, TransferPath::kRma);
  }
}
TEST_P(RoundTripTest, SixtyFourMebibytes) { RoundTrip(size_t{64} << 20, TransferPath::kRma); }

TEST_P(RoundTripTest, SmallObjectUsesRmaWhenInlineIsOff) {
  ClientOptions o = Options(*server_);
  o.allow_inline = false;
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status();
  client_ = std::move(*c);
  RoundTrip(100, TransferPath::kRma);
}

TEST_P(RoundTripTest, Crc64NvmeEndToEnd) {
  ClientOptions o = Options(*server_);
  o.checksum = ChecksumAlgorithm::kCrc64Nvme;
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status();
  client_ = std::move(*c);
  RoundTrip((size_t{1} << 20) + 5, TransferPath::kRma);
}

// AOBJ-OBJ-016: with OPAQUE_ETAG offered, PUT ETags are opaque and new on every write; the
// bytes, the checksum checks and conditional requests work as with MD5 ETags.
TEST_P(RoundTripTest, OpaqueEtagsIdentifyWritesNotContent) {
  ClientOptions o = Options(*server_);
  o.opaque_etags = true;
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status();
  for (size_t size : {size_t{100}, (size_t{8} << 20) * 3 + 7}) {
    SCOPED_TRACE(size);
    auto src = (*c)->AllocateBuffer(size);
    ASSERT_TRUE(src.ok()) << src.status();
    Fill((*src)->data(), size, 99);
    const std::string key = "opaque-" + std::to_string(size);
    auto first = (*c)->Put("test-bucket", key, **src, size);
    ASSERT_TRUE(first.ok()) << first.status();
    const std::string& e1 = first->info.etag;
    EXPECT_TRUE(IsOpaqueEtag(e1)) << e1;
    auto second = (*c)->Put("test-bucket", key, **src, size);
    ASSERT_TRUE(second.ok()) << second.status();
    EXPECT_TRUE(IsOpaqueEtag(second->info.etag)) << second->info.etag;
    EXPECT_NE(second->info.etag, e1);
    // Another client (MD5 ETags) sees the object's ETag and its bytes.
    auto dst = client_->AllocateBuffer(size);
    ASSERT_TRUE(dst.ok()) << dst.status();
    auto get = client_->Get("test-bucket", key, **dst);
    ASSERT_TRUE(get.ok()) << get.status();
    EXPECT_EQ(get->info.etag, second->info.etag);
    ASSERT_EQ(0, std::memcmp((*src)->data(), (*dst)->data(), size));
    Preconditions stale;
    stale.if_match = e1;
    EXPECT_EQ(ErrorCodeOf(client_->Head("test-bucket", key, stale).status()),
              ErrorCode::kPreconditionFailed);
  }
  // This fixture's client did not offer OPAQUE_ETAG: its PUTs still get MD5 ETags.
  RoundTrip(1000, TransferPath::kInline);
}

TEST_P(RoundTripTest, CallerRegisteredMemoryRoundTrips) {
  const size_t size = (size_t{2} << 20) + 11;
  std::vector<uint8_t> src(size), dst(size + 64, 0);
  Fill(src.data(), size, 7);
  auto sbuf = client_->RegisterBuffer(src.data(), src.size());
  ASSERT_TRUE(sbuf.ok()) << sbuf.status();
  auto put = client_->Put("test-bucket", "caller-owned", **sbuf, size);
  ASSERT_TRUE(put.ok()) << put.status();
  auto dbuf = client_->RegisterBuffer(dst.data(), dst.size());
  ASSERT_TRUE(dbuf.ok()) << dbuf.status();
  auto get = client_->Get("test-bucket", "caller-owned", **dbuf);
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_EQ(get->path, TransferPath::kRma);
  EXPECT_EQ(0, std::memcmp(src.data(), dst.data(), size));
}

// A Client uses only the buffers it issued (include/aobj/client.h, issue 21): a class the caller
// derives from Buffer, or another Client's buffer (registered in another UCX context), is
// refused with INVALID_ARGUMENT before anything is sent, on every path that takes buffers; the
// same memory registered with this Client moves.
TEST_P(RoundTripTest, BuffersOfAnotherClientOrTheCallersOwnClassAreRefused) {
  class CallerBuffer final : public Buffer {
   public:
    explicit CallerBuffer(std::vector<uint8_t>* bytes) : bytes_(bytes) {}
    uint8_t* data() const override { return bytes_->data(); }
    size_t size() const override { return bytes_->size(); }
    bool allocated_by_library() const override { return false; }

   private:
    std::vector<uint8_t>* bytes_;
  };
  std::vector<uint8_t> bytes(size_t{1} << 20, 7);
  CallerBuffer caller(&bytes);
  auto other = Client::Connect(Options(*server_));
  ASSERT_TRUE(other.ok()) << other.status();
  auto foreign = (*other)->AllocateBuffer(bytes.size());
  ASSERT_TRUE(foreign.ok()) << foreign.status();
  for (const Buffer* b :
       {static_cast<const Buffer*>(&caller), static_cast<const Buffer*>(foreign->get())}) {
    for (uint64_t size : {uint64_t{100}, uint64_t{1} << 20}) {  // inline and RMA alike
      SCOPED_TRACE(size);
      EXPECT_EQ(ErrorCodeOf(client_->Put("test-bucket", "refused", *b, size).status()),
                ErrorCode::kInvalidArgument);
      EXPECT_EQ(
          ErrorCodeOf(
              client_->UploadPart("test-bucket", "refused", "no-upload", 1, *b, 0, size).status()),
          ErrorCode::kInvalidArgument);
    }
    EXPECT_EQ(ErrorCodeOf(client_->Get("test-bucket", "refused", *const_cast<Buffer*>(b)).status()),
              ErrorCode::kInvalidArgument);
    auto got = client_->GetObjects("test-bucket",
                                   {BatchGetItem{"refused", std::nullopt, BufferSlice{b, 0, 100}}});
    EXPECT_EQ(ErrorCodeOf(got.status()), ErrorCode::kInvalidArgument);
    BatchPutItem item;
    item.key = "refused";
    item.source = BufferSlice{b, 0, 100};
    auto put = client_->PutObjects("test-bucket", {item});
    EXPECT_EQ(ErrorCodeOf(put.status()), ErrorCode::kInvalidArgument);
  }
  // Nothing was stored, and the other Client's buffer serves the other Client.
  EXPECT_EQ(ErrorCodeOf(client_->Head("test-bucket", "refused").status()), ErrorCode::kNoSuchKey);
  auto own = (*other)->Put("test-bucket", "theirs", **foreign, 100);
  EXPECT_TRUE(own.ok()) << own.status();
  auto mine = client_->RegisterBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(mine.ok()) << mine.status();
  auto moved = client_->Put("test-bucket", "mine", **mine, bytes.size());
  EXPECT_TRUE(moved.ok()) << moved.status();
}

TEST_P(RoundTripTest, OverwriteReplacesWholeObject) {
  auto a = client_->AllocateBuffer(300000);
  ASSERT_TRUE(a.ok());
  std::memset((*a)->data(), 'a', 300000);
  ASSERT_TRUE(client_->Put("test-bucket", "k", **a, 300000).ok());
  std::memset((*a)->data(), 'b', 200000);
  ASSERT_TRUE(client_->Put("test-bucket", "k", **a, 200000).ok());
  auto d = client_->AllocateBuffer(300000);
  ASSERT_TRUE(d.ok());
  auto get = client_->Get("test-bucket", "k", **d);
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_EQ(get->info.size, 200000u);
  for (size_t i = 0; i < 200000; ++i) ASSERT_EQ((*d)->data()[i], 'b');
}

TEST_P(RoundTripTest, HeadDeleteAndBucketLifecycle) {
  EXPECT_EQ(ErrorCodeOf(client_->CreateBucket("test-bucket")), ErrorCode::kBucketAlreadyExists);
  ASSERT_TRUE(client_->CreateBucket("second-bucket").ok());
  ASSERT_TRUE(client_->HeadBucket("second-bucket").ok());
  auto b = client_->AllocateBuffer(5000);
  ASSERT_TRUE(b.ok());
  PutOptions po;
  po.content_type = "text/plain";
  ASSERT_TRUE(client_->Put("second-bucket", "dir/file.txt", **b, 5000, po).ok());
  auto head = client_->Head("second-bucket", "dir/file.txt");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->size, 5000u);
  EXPECT_EQ(head->content_type, "text/plain");
  EXPECT_GT(head->last_modified_ms, 0);
  EXPECT_EQ(ErrorCodeOf(client_->DeleteBucket("second-bucket")), ErrorCode::kBucketNotEmpty);
  ASSERT_TRUE(client_->Delete("second-bucket", "dir/file.txt").ok());
  ASSERT_TRUE(client_->Delete("second-bucket", "dir/file.txt").ok());  // AOBJ-OBJ-004
  EXPECT_EQ(ErrorCodeOf(client_->Head("second-bucket", "dir/file.txt").status()),
            ErrorCode::kNoSuchKey);
  ASSERT_TRUE(client_->DeleteBucket("second-bucket").ok());
  EXPECT_EQ(ErrorCodeOf(client_->HeadBucket("second-bucket")), ErrorCode::kNoSuchBucket);
  EXPECT_EQ(ErrorCodeOf(client_->Get("no-such-bucket", "k", **b).status()),
            ErrorCode::kNoSuchBucket);
  EXPECT_EQ(ErrorCodeOf(client_->Get("test-bucket", "missing", **b).status()),
            ErrorCode::kNoSuchKey);
  EXPECT_EQ(ErrorCodeOf(client_->CreateBucket("Bad_Name")), ErrorCode::kInvalidBucketName);
}

TEST_P(RoundTripTest, BufferTooSmallIsRefusedWithoutWriting) {
  auto src = client_->AllocateBuffer(100000);
  ASSERT_TRUE(src.ok());
  ASSERT_TRUE(client_->Put("test-bucket", "big", **src, 100000).ok());
  auto small = client_->AllocateBuffer(50000);
  ASSERT_TRUE(small.ok());
  std::memset((*small)->data(), 0x5A, 50000);
  auto get = client_->Get("test-bucket", "big", **small);
  EXPECT_EQ(ErrorCodeOf(get.status()), ErrorCode::kDescriptorTooSmall) << get.status();
  for (size_t i = 0; i < 50000; ++i) ASSERT_EQ((*small)->data()[i], 0x5A);  // AOBJ-MEM-007
}

TEST_P(RoundTripTest, ConcurrentClientsAndOperations) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto c = Client::Connect(Options(*server_));
      if (!c.ok()) {
        ++failures;
        return;
      }
      auto buf = (*c)->AllocateBuffer(1 << 20);
      auto out = (*c)->AllocateBuffer(1 << 20);
      if (!buf.ok() || !out.ok()) {
        ++failures;
        return;
      }
      for (int i = 0; i < 10; ++i) {
        const size_t size = 100000 + static_cast<size_t>(t * 1000 + i);
        Fill((*buf)->data(), size, static_cast<uint32_t>(t * 100 + i));
        const std::string key = "c" + std::to_string(t) + "-" + std::to_string(i);
        if (!(*c)->Put("test-bucket", key, **buf, size).ok()) ++failures;
        auto g = (*c)->Get("test-bucket", key, **out);
        if (!g.ok() || std::memcmp((*buf)->data(), (*out)->data(), size) != 0) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Stores, RoundTripTest, ::testing::Values("memory", "fs"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace aobj
