// Batched writes (PutObjects, spec section 9.17; issue 19), end to end against a separate
// aobj-server process over UCX on loopback, both stores, by gRPC and on the fast path: every item
// stored as a Put of its own (sizes from zero to larger than the server's 8 MiB staging buffer,
// so that items share rounds and span them), content types, overlapping regions, replaced
// objects, opaque ETags, more than one request's worth of items over two buffers, whole-request
// failures, and the fallback to single PUTs on a session without BATCH_PUT.
#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aobj/client.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/server_process.h"
#include "integration/still_serves.h"
#include "wire/crypto.h"
#include "wire/etag.h"
#include "wire/protocol.h"

namespace aobj {
namespace {

using testing::ServerProcess;

constexpr char kBucket[] = "test-bucket";

std::string Pattern(uint64_t seed, size_t size) {
  std::string out(size, '\0');
  std::mt19937_64 rng(seed);
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

bool Negotiated(const Client& c, uint32_t cap) {
  const std::vector<uint32_t>& caps = c.session().capabilities;
  return std::find(caps.begin(), caps.end(), cap) != caps.end();
}

std::string Md5Etag(const std::string& s) {
  Md5 md5;
  md5.Update(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  return absl::StrCat("\"", HexEncode(md5.Finish()), "\"");
}

// (store, fast path)
class BatchPutTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(testing::TestDir(), std::get<0>(GetParam()));
    ASSERT_TRUE(server_->Start()) << server_->log();
    client_ = Connect([](ClientOptions&) {});
    ASSERT_NE(client_, nullptr);
  }
  void TearDown() override {
    client_.reset();
    if (server_) {
      EXPECT_TRUE(server_->Alive()) << "the server died:\n" << server_->log();
      server_->Stop();
    }
  }
  template <class Tweak>
  std::unique_ptr<Client> Connect(Tweak tweak) {
    ClientOptions o = testing::TestClientOptions(*server_);
    o.fast_path = std::get<1>(GetParam());
    tweak(o);
    auto c = Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }
  std::string Load(const std::string& key) {
    auto head = client_->Head(kBucket, key);
    if (!head.ok()) return "<" + std::string(head.status().message()) + ">";
    auto buf = client_->AllocateBuffer(std::max<size_t>(head->size, 1));
    EXPECT_TRUE(buf.ok()) << buf.status();
    auto got = client_->Get(kBucket, key, **buf);
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? std::string(reinterpret_cast<char*>((*buf)->data()), got->bytes_transferred)
                    : "";
  }
  // Writes `contents` one after the other into `buffer` from `at`; returns the items.
  static std::vector<BatchPutItem> Lay(const Buffer* buffer, uint64_t at,
                                       const std::vector<std::string>& contents,
                                       const std::string& prefix) {
    std::vector<BatchPutItem> items;
    for (size_t i = 0; i < contents.size(); ++i) {
      std::memcpy(buffer->data() + at, contents[i].data(), contents[i].size());
      items.push_back({absl::StrCat(prefix, i), {buffer, at, contents[i].size()}, ""});
      at += contents[i].size();
    }
    return items;
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> client_;
};

TEST_P(BatchPutTest, EveryItemIsStoredAsAPutOfItsOwn) {
  ASSERT_TRUE(Negotiated(*client_, kCapBatchPut));
  // 0 and 1 octets, small ones sharing a round, 3 MiB (no longer fits the round: a new one) and
  // 9 MiB (larger than the staging buffer: rounds of its own), then small ones again.
  const std::vector<size_t> sizes = {0, 1, 4096, 100000, 3 << 20, 9 << 20, 777, 5};
  std::vector<std::string> contents;
  size_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    contents.push_back(Pattern(i, sizes[i]));
    total += sizes[i];
  }
  auto buf = client_->AllocateBuffer(total);
  ASSERT_TRUE(buf.ok()) << buf.status();
  std::vector<BatchPutItem> items = Lay(buf->get(), 0, contents, "obj-");
  items[2].content_type = "image/png";
  auto got = client_->PutObjects(kBucket, items);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), items.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    const auto& r = (*got)[i];
    ASSERT_TRUE(r.ok()) << i << ": " << r.status();
    EXPECT_EQ(r->size, sizes[i]);
    EXPECT_EQ(r->etag, Md5Etag(contents[i])) << i << ": S3's ETag (AOBJ-OBJ-005)";
    EXPECT_EQ(Load(absl::StrCat("obj-", i)), contents[i]) << i;
  }
  auto head = client_->Head(kBucket, "obj-2");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->content_type, "image/png");
  EXPECT_EQ(head->etag, (*got)[2]->etag);
}

TEST_P(BatchPutTest, OverlappingRegionsReplacedObjectsAndOpaqueEtags) {
  auto opaque = Connect([](ClientOptions& o) { o.opaque_etags = true; });
  ASSERT_NE(opaque, nullptr);
  auto buf = opaque->AllocateBuffer(8192);
  ASSERT_TRUE(buf.ok()) << buf.status();
  const std::string old_content = "the old object";
  std::memcpy((*buf)->data(), old_content.data(), old_content.size());
  ASSERT_TRUE(opaque->Put(kBucket, "replaced", **buf, old_content.size()).ok());
  const std::string content = Pattern(7, 8192);
  std::memcpy((*buf)->data(), content.data(), content.size());
  // Two items read the same octets, a third a part of them.
  auto got = opaque->PutObjects(kBucket, {{"replaced", {buf->get(), 0, 8192}, ""},
                                          {"copy", {buf->get(), 0, 8192}, ""},
                                          {"middle", {buf->get(), 1000, 10}, "text/plain"}});
  ASSERT_TRUE(got.ok()) << got.status();
  for (const auto& r : *got) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(IsOpaqueEtag(r->etag)) << r->etag << " (AOBJ-OBJ-016)";
  }
  EXPECT_NE((*got)[0]->etag, (*got)[1]->etag);
  EXPECT_EQ(Load("replaced"), content);
  EXPECT_EQ(Load("copy"), content);
  EXPECT_EQ(Load("middle"), content.substr(1000, 10));
}

TEST_P(BatchPutTest, ManyItemsAcrossRequestsAndBuffers) {
  constexpr int kObjects = 1200;  // more than one request may name
  auto a = client_->AllocateBuffer(kObjects * 128);
  auto b = client_->AllocateBuffer(kObjects * 128);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<BatchPutItem> items;
  for (int i = 0; i < kObjects; ++i) {
    const Buffer* from = i % 2 == 0 ? a->get() : b->get();
    const std::string content = Pattern(1000 + i, 64 + i % 7);
    const uint64_t at = static_cast<uint64_t>(i / 2) * 128;
    std::memcpy(from->data() + at, content.data(), content.size());
    items.push_back({absl::StrCat("tile/", i), {from, at, content.size()}, ""});
  }
  auto got = client_->PutObjects(kBucket, items);
  ASSERT_TRUE(got.ok()) << got.status();
  for (int i = 0; i < kObjects; ++i) ASSERT_TRUE((*got)[i].ok()) << i << ": " << (*got)[i].status();
  // Read back in one batch.
  auto into = client_->AllocateBuffer(kObjects * 128);
  ASSERT_TRUE(into.ok());
  std::vector<BatchGetItem> reads;
  for (int i = 0; i < kObjects; ++i) {
    reads.push_back({absl::StrCat("tile/", i),
                     std::nullopt,
                     {into->get(), static_cast<uint64_t>(i) * 128, 128}});
  }
  auto back = client_->GetObjects(kBucket, reads);
  ASSERT_TRUE(back.ok()) << back.status();
  for (int i = 0; i < kObjects; ++i) {
    ASSERT_TRUE((*back)[i].ok()) << i << ": " << (*back)[i].status();
    ASSERT_EQ(std::string(reinterpret_cast<const char*>((*into)->data() + i * 128), 64 + i % 7),
              Pattern(1000 + i, 64 + i % 7))
        << i;
  }
}

TEST_P(BatchPutTest, WholeRequestFailures) {
  auto buf = client_->AllocateBuffer(4096);
  ASSERT_TRUE(buf.ok());
  EXPECT_EQ(
      ErrorCodeOf(client_->PutObjects("no-such-bucket", {{"k", {buf->get(), 0, 10}, ""}}).status()),
      ErrorCode::kNoSuchBucket);
  EXPECT_EQ(ErrorCodeOf(client_
                            ->PutObjects(kBucket, {{"same", {buf->get(), 0, 10}, ""},
                                                   {"same", {buf->get(), 10, 10}, ""}})
                            .status()),
            ErrorCode::kInvalidArgument)
      << "two items of one key";
  EXPECT_EQ(
      ErrorCodeOf(client_->PutObjects(kBucket, {{"out", {buf->get(), 4000, 100}, ""}}).status()),
      ErrorCode::kInvalidArgument)
      << "a region outside its buffer";
  EXPECT_EQ(ErrorCodeOf(client_->Head(kBucket, "same").status()), ErrorCode::kNoSuchKey);
  auto none = client_->PutObjects(kBucket, {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_P(BatchPutTest, SessionWithoutBatchPutFallsBackToSinglePuts) {
  auto c = Connect([](ClientOptions& o) { o.batch_put = false; });
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(Negotiated(*c, kCapBatchPut));
  auto buf = c->AllocateBuffer(64);
  ASSERT_TRUE(buf.ok());
  std::memcpy((*buf)->data(), "firstsecond", 11);
  auto got = c->PutObjects(
      kBucket, {{"one", {buf->get(), 0, 5}, "text/plain"}, {"two", {buf->get(), 5, 6}, ""}});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE((*got)[0].ok() && (*got)[1].ok());
  EXPECT_EQ(Load("one"), "first");
  EXPECT_EQ(Load("two"), "second");
  auto head = client_->Head(kBucket, "one");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->content_type, "text/plain");
}

INSTANTIATE_TEST_SUITE_P(Stores, BatchPutTest,
                         ::testing::Combine(::testing::Values("memory", "fs"), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, bool>>& i) {
                           return std::get<0>(i.param) + (std::get<1>(i.param) ? "Fast" : "Grpc");
                         });

}  // namespace
}  // namespace aobj
