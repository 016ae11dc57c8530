// Batched reads (GetObjects, spec section 9.16; issue 19): how Client::GetObjects cuts items into
// requests, and end to end against a separate aobj-server process over UCX on loopback, both
// stores, by gRPC and on the fast path: per-item results and errors, regions that failed items
// leave untouched, ranges, several buffers, more than one request's worth of items, and the
// fallback to single GETs on a session without BATCH_GET.
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
#include "client/batch_plan.h"
#include "gtest/gtest.h"
#include "integration/server_process.h"
#include "integration/still_serves.h"
#include "wire/protocol.h"

namespace aobj {
namespace {

using client_internal::BatchRequestPlan;
using client_internal::PlanBatchGet;
using testing::ServerProcess;

constexpr char kBucket[] = "test-bucket";

std::string Pattern(uint64_t seed, size_t size) {
  std::string out(size, '\0');
  std::mt19937_64 rng(seed);
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

// Memory that only the planner looks at (it never registers anything).
class PlainBuffer final : public Buffer {
 public:
  explicit PlainBuffer(size_t size) : bytes_(size) {}
  uint8_t* data() const override { return const_cast<uint8_t*>(bytes_.data()); }
  size_t size() const override { return bytes_.size(); }
  bool allocated_by_library() const override { return false; }

 private:
  std::vector<uint8_t> bytes_;
};

bool Negotiated(const Client& c, uint32_t cap) {
  const std::vector<uint32_t>& caps = c.session().capabilities;
  return std::find(caps.begin(), caps.end(), cap) != caps.end();
}

BatchGetItem Item(const Buffer* b, uint64_t offset, uint64_t length, std::string key = "k") {
  return BatchGetItem{std::move(key), std::nullopt, BufferSlice{b, offset, length}};
}

// ---- the planner
// ---------------------------------------------------------------------------------

TEST(BatchPlanTest, OneBufferOneWindowAndRegionOffsetsInIt) {
  PlainBuffer b(1 << 20);
  auto plans =
      PlanBatchGet({Item(&b, 4096, 100), Item(&b, 8192, 4096), Item(&b, 0, 10)}, 1000, 16, 1 << 30);
  ASSERT_TRUE(plans.ok()) << plans.status();
  ASSERT_EQ(plans->size(), 1u);
  const BatchRequestPlan& p = (*plans)[0];
  ASSERT_EQ(p.windows.size(), 1u);
  EXPECT_EQ(p.windows[0].offset, 0u);  // the window covers the regions, gaps included
  EXPECT_EQ(p.windows[0].length, 8192u + 4096u);
  EXPECT_EQ(p.offsets, (std::vector<uint64_t>{4096, 8192, 0}));
}

TEST(BatchPlanTest, SeveralBuffersAreConcatenatedInFirstUseOrder) {
  PlainBuffer a(1 << 16), b(1 << 16);
  auto plans =
      PlanBatchGet({Item(&a, 100, 50), Item(&b, 1000, 10), Item(&a, 200, 5)}, 1000, 16, 1 << 30);
  ASSERT_TRUE(plans.ok()) << plans.status();
  const BatchRequestPlan& p = (*plans)[0];
  ASSERT_EQ(p.windows.size(), 2u);
  EXPECT_EQ(p.windows[0].buffer, &a);
  EXPECT_EQ(p.windows[0].offset, 100u);
  EXPECT_EQ(p.windows[0].length, 105u);
  EXPECT_EQ(p.windows[1].buffer, &b);
  // a's window is 105 octets, so b's region starts the second window at 105.
  EXPECT_EQ(p.offsets, (std::vector<uint64_t>{0, 105, 100}));
}

TEST(BatchPlanTest, CutsAtItemsWindowsAndBytes) {
  PlainBuffer a(1 << 16), b(1 << 16), c(1 << 16);
  std::vector<BatchGetItem> many;
  for (int i = 0; i < 2500; ++i) many.push_back(Item(&a, i * 8, 8));
  auto by_items = PlanBatchGet(many, kMaxBatchGetItems, 16, 1 << 30);
  ASSERT_TRUE(by_items.ok());
  ASSERT_EQ(by_items->size(), 3u);
  EXPECT_EQ((*by_items)[0].items.size(), 1000u);
  EXPECT_EQ((*by_items)[2].items.size(), 500u);
  EXPECT_EQ((*by_items)[1].offsets[0], 0u);  // a new request starts its window at its region
  EXPECT_EQ((*by_items)[1].windows[0].offset, 8000u);

  auto by_windows =
      PlanBatchGet({Item(&a, 0, 8), Item(&b, 0, 8), Item(&c, 0, 8)}, 1000, 2, 1 << 30);
  ASSERT_TRUE(by_windows.ok());
  ASSERT_EQ(by_windows->size(), 2u);
  EXPECT_EQ((*by_windows)[1].items, (std::vector<size_t>{2}));

  // The gap a window would grow over counts against the limit too.
  auto by_bytes = PlanBatchGet({Item(&a, 0, 100), Item(&a, 900, 100)}, 1000, 16, 500);
  ASSERT_TRUE(by_bytes.ok());
  ASSERT_EQ(by_bytes->size(), 2u);
  EXPECT_EQ((*by_bytes)[1].windows[0].offset, 900u);
}

TEST(BatchPlanTest, EmptyRegionsNeedNoWindow) {
  PlainBuffer a(64);
  auto plans = PlanBatchGet({Item(&a, 64, 0), Item(&a, 0, 0)}, 1000, 16, 1 << 30);
  ASSERT_TRUE(plans.ok()) << plans.status();
  ASSERT_EQ(plans->size(), 1u);
  EXPECT_TRUE((*plans)[0].windows.empty());
  EXPECT_EQ((*plans)[0].offsets, (std::vector<uint64_t>{0, 0}));
}

TEST(BatchPlanTest, RefusesBadRegionsBeforeAnythingIsSent) {
  PlainBuffer a(4096), b(4096);
  EXPECT_EQ(ErrorCodeOf(PlanBatchGet({Item(&a, 0, 100), Item(&b, 0, 100), Item(&a, 99, 10)}, 1000,
                                     16, 1 << 30)
                            .status()),
            ErrorCode::kInvalidArgument);  // overlap within a, with b between them
  EXPECT_EQ(ErrorCodeOf(PlanBatchGet({Item(&a, 4000, 97)}, 1000, 16, 1 << 30).status()),
            ErrorCode::kInvalidArgument);  // one octet past the buffer
  EXPECT_EQ(ErrorCodeOf(PlanBatchGet({Item(nullptr, 0, 1)}, 1000, 16, 1 << 30).status()),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(ErrorCodeOf(PlanBatchGet({Item(&a, 0, 101)}, 1000, 16, 100).status()),
            ErrorCode::kInvalidArgument);  // larger than a request may be
  EXPECT_TRUE(PlanBatchGet({Item(&a, 0, 100), Item(&a, 100, 100)}, 1000, 16, 1 << 30).ok());
}

// ---- end to end
// ----------------------------------------------------------------------------------

// (store, fast path, BATCH_GET offered by the server)
class BatchGetTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(testing::TestDir(), std::get<0>(GetParam()));
    ASSERT_TRUE(server_->Start()) << server_->log();
    client_ = Connect(std::get<1>(GetParam()));
    ASSERT_NE(client_, nullptr);
  }
  void TearDown() override {
    client_.reset();
    if (server_) {
      EXPECT_TRUE(server_->Alive()) << "the server died:\n" << server_->log();
      server_->Stop();
    }
  }
  std::unique_ptr<Client> Connect(bool fast_path) {
    ClientOptions o = testing::TestClientOptions(*server_);
    o.fast_path = fast_path;
    auto c = Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }
  void PutString(const std::string& key, const std::string& content) {
    auto buf = client_->AllocateBuffer(std::max<size_t>(content.size(), 1));
    ASSERT_TRUE(buf.ok()) << buf.status();
    if (!content.empty()) std::memcpy((*buf)->data(), content.data(), content.size());
    auto put = client_->Put(kBucket, key, **buf, content.size());
    ASSERT_TRUE(put.ok()) << put.status();
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> client_;
};

TEST_P(BatchGetTest, EachItemGetsItsObjectOrItsOwnError) {
  ASSERT_TRUE(Negotiated(*client_, kCapBatchGet));
  const std::vector<size_t> sizes = {0, 1, 4096, 4097, 100000, 3 << 20};
  std::vector<std::string> contents;
  for (size_t i = 0; i < sizes.size(); ++i) {
    contents.push_back(Pattern(i, sizes[i]));
    ASSERT_NO_FATAL_FAILURE(PutString(absl::StrCat("obj-", i), contents.back()));
  }
  const size_t slot = (3 << 20) + 4096;
  auto buf = client_->AllocateBuffer(slot * 10);
  ASSERT_TRUE(buf.ok()) << buf.status();
  std::memset((*buf)->data(), 0xEE, (*buf)->size());
  std::vector<BatchGetItem> items;
  for (size_t i = 0; i < sizes.size(); ++i) {
    items.push_back({absl::StrCat("obj-", i), std::nullopt, {buf->get(), i * slot, slot}});
  }
  items.push_back({"missing", std::nullopt, {buf->get(), 6 * slot, slot}});
  items.push_back({"obj-4", ByteRange::FirstLast(10, 1009), {buf->get(), 7 * slot, 1000}});
  items.push_back({"obj-2", std::nullopt, {buf->get(), 8 * slot, 4095}});      // one octet short
  items.push_back({"obj-1", ByteRange::From(5), {buf->get(), 9 * slot, 10}});  // unsatisfiable
  auto got = client_->GetObjects(kBucket, items);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), items.size());
  const uint8_t* base = (*buf)->data();
  for (size_t i = 0; i < sizes.size(); ++i) {
    const auto& r = (*got)[i];
    ASSERT_TRUE(r.ok()) << i << ": " << r.status();
    EXPECT_EQ(r->bytes_transferred, sizes[i]);
    EXPECT_EQ(r->info.size, sizes[i]);
    EXPECT_FALSE(r->info.etag.empty());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(base + i * slot), sizes[i]), contents[i]);
    EXPECT_EQ(base[i * slot + sizes[i]], 0xEE) << "octets past the object keep their contents";
  }
  EXPECT_EQ(ErrorCodeOf((*got)[6].status()), ErrorCode::kNoSuchKey);
  ASSERT_TRUE((*got)[7].ok()) << (*got)[7].status();
  ASSERT_TRUE((*got)[7]->range.has_value());
  EXPECT_EQ((*got)[7]->range->first, 10u);
  EXPECT_EQ((*got)[7]->range->complete_length, 100000u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(base + 7 * slot), 1000),
            contents[4].substr(10, 1000));
  EXPECT_EQ(ErrorCodeOf((*got)[8].status()), ErrorCode::kDescriptorTooSmall);
  EXPECT_EQ(ErrorCodeOf((*got)[9].status()), ErrorCode::kInvalidRange);
  // AOBJ-OBJ-239: a failed item's region is untouched.
  for (size_t i : {6, 8, 9}) {
    for (size_t k = 0; k < 4096; ++k) ASSERT_EQ(base[i * slot + k], 0xEE) << i;
  }
}

TEST_P(BatchGetTest, ManyItemsAcrossRequestsAndBuffers) {
  constexpr int kObjects = 1200;  // more than one request may name
  for (int i = 0; i < kObjects; ++i) {
    ASSERT_NO_FATAL_FAILURE(PutString(absl::StrCat("tile/", i), Pattern(1000 + i, 64 + i % 7)));
  }
  auto a = client_->AllocateBuffer(kObjects * 128);
  auto b = client_->AllocateBuffer(kObjects * 128);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<BatchGetItem> items;
  for (int i = 0; i < kObjects; ++i) {
    const Buffer* to = i % 2 == 0 ? a->get() : b->get();
    items.push_back(
        {absl::StrCat("tile/", i), std::nullopt, {to, static_cast<uint64_t>(i / 2) * 128, 128}});
  }
  auto got = client_->GetObjects(kBucket, items);
  ASSERT_TRUE(got.ok()) << got.status();
  for (int i = 0; i < kObjects; ++i) {
    ASSERT_TRUE((*got)[i].ok()) << i << ": " << (*got)[i].status();
    const uint8_t* at = (i % 2 == 0 ? (*a)->data() : (*b)->data()) + (i / 2) * 128;
    ASSERT_EQ(std::string(reinterpret_cast<const char*>(at), 64 + i % 7),
              Pattern(1000 + i, 64 + i % 7))
        << i;
  }
}

TEST_P(BatchGetTest, WholeRequestFailures) {
  auto buf = client_->AllocateBuffer(4096);
  ASSERT_TRUE(buf.ok());
  EXPECT_EQ(ErrorCodeOf(
                client_->GetObjects("no-such-bucket", {{"k", std::nullopt, {buf->get(), 0, 4096}}})
                    .status()),
            ErrorCode::kNoSuchBucket);
  EXPECT_EQ(ErrorCodeOf(client_
                            ->GetObjects(kBucket, {{"a", std::nullopt, {buf->get(), 0, 100}},
                                                   {"b", std::nullopt, {buf->get(), 50, 100}}})
                            .status()),
            ErrorCode::kInvalidArgument);
  auto none = client_->GetObjects(kBucket, {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_P(BatchGetTest, SessionWithoutBatchGetFallsBackToSingleGets) {
  // A client that does not offer the capability leaves it out of the session, as an older server
  // would; the call still answers per item.
  ASSERT_NO_FATAL_FAILURE(PutString("one", "first"));
  ASSERT_NO_FATAL_FAILURE(PutString("two", "second"));
  ClientOptions o = testing::TestClientOptions(*server_);
  o.fast_path = std::get<1>(GetParam());
  o.batch_get = false;
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(Negotiated(**c, kCapBatchGet));
  auto buf = (*c)->AllocateBuffer(64);
  ASSERT_TRUE(buf.ok());
  auto got = (*c)->GetObjects(kBucket, {{"one", std::nullopt, {buf->get(), 0, 32}},
                                        {"nope", std::nullopt, {buf->get(), 32, 16}},
                                        {"two", std::nullopt, {buf->get(), 48, 16}}});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE((*got)[0].ok());
  EXPECT_EQ(ErrorCodeOf((*got)[1].status()), ErrorCode::kNoSuchKey);
  ASSERT_TRUE((*got)[2].ok());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*buf)->data()), 5), "first");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*buf)->data() + 48), 6), "second");
}

INSTANTIATE_TEST_SUITE_P(Stores, BatchGetTest,
                         ::testing::Combine(::testing::Values("memory", "fs"), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, bool>>& i) {
                           return std::get<0>(i.param) + (std::get<1>(i.param) ? "Fast" : "Grpc");
                         });

}  // namespace
}  // namespace aobj
