// RadosStore against a real single-host Ceph cluster (scripts/ceph-cluster.sh, started by the
// ctest fixture `rados_cluster`; AOBJ_CEPH_CONF names its ceph.conf). Each test gets its own
// RADOS namespace, so stores of one test share a bucket space and tests share nothing.
//
// Two stores on one namespace stand for two gateways: each has its own cluster connection and
// its own cache, exactly as two aobj-server processes would.
#include "aobj/rados_store.h"

#include <stdlib.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "store/store_test_kit.h"
#include "wire/crypto.h"

namespace aobj {
namespace {

using store_test_kit::Get;
using store_test_kit::InfoFor;
using store_test_kit::Pattern;
using store_test_kit::Put;

const char* CephConf() { return getenv("AOBJ_CEPH_CONF"); }

RadosStoreOptions OptionsFor(const std::string& ns) {
  RadosStoreOptions o;
  o.conf_file = CephConf();
  o.ns = ns;
  o.gc_interval_ms = 0;        // tests call the collector themselves
  o.stripe_bytes = 64 * 1024;  // small stripes: multi-stripe objects stay small
  return o;
}

std::string FreshNamespace() { return absl::StrCat("test-", HexEncode(RandomBytes(8))); }

std::unique_ptr<RadosStore> Open(const RadosStoreOptions& options) {
  absl::StatusOr<std::unique_ptr<RadosStore>> store = OpenRadosStore(options);
  if (!store.ok()) {
    ADD_FAILURE() << store.status();
    return nullptr;
  }
  return *std::move(store);
}

std::unique_ptr<ObjectStore> MakeKitStore() {
  if (CephConf() == nullptr) {
    ADD_FAILURE() << "AOBJ_CEPH_CONF is not set: run through ctest (fixture rados_cluster) or "
                     "start scripts/ceph-cluster.sh and export it";
    return nullptr;
  }
  return Open(OptionsFor(FreshNamespace()));
}

INSTANTIATE_TEST_SUITE_P(Rados, ObjectStoreConformanceTest,
                         ::testing::Values(ObjectStoreFactory{"RadosStore", MakeKitStore}),
                         ObjectStoreFactoryName);

class RadosGatewaysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CephConf() == nullptr) GTEST_SKIP() << "AOBJ_CEPH_CONF is not set";
    options_ = OptionsFor(FreshNamespace());
    a_ = Open(options_);
    b_ = Open(options_);
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
  }

  RadosStoreOptions options_;
  std::unique_ptr<RadosStore> a_, b_;
};

TEST_F(RadosGatewaysTest, WriteThroughOneReadThroughTheOther) {
  AOBJ_KIT_ASSERT_OK(a_->CreateBucket("bucket"));
  AOBJ_KIT_EXPECT_OK(b_->HeadBucket("bucket"));
  const std::string content = Pattern(1, 300 * 1024);  // five stripes
  ASSERT_TRUE(Put(*a_, "bucket", "k", content).ok());
  absl::StatusOr<std::string> got = Get(*b_, "bucket", "k");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(store_test_kit::SameBytes(content, *got));
  absl::StatusOr<std::vector<ObjectSummary>> listed = b_->ListObjects("bucket", "", "", 10);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].size, content.size());
  // An overwrite through B is what A reads next.
  const std::string second = Pattern(2, 1000);
  ASSERT_TRUE(Put(*b_, "bucket", "k", second).ok());
  got = Get(*a_, "bucket", "k");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(store_test_kit::SameBytes(second, *got));
  AOBJ_KIT_ASSERT_OK(b_->Delete("bucket", "k"));
  AOBJ_KIT_EXPECT_CODE(a_->Head("bucket", "k").status(), ErrorCode::kNoSuchKey);
}

TEST_F(RadosGatewaysTest, CreateOnlyCommitsRacedThroughTwoGatewaysHaveOneWinner) {
  AOBJ_KIT_ASSERT_OK(a_->CreateBucket("bucket"));
  for (int round = 0; round < 5; ++round) {
    SCOPED_TRACE(round);
    const std::string key = absl::StrCat("race-", round);
    WriteOptions create_only;
    create_only.if_none_match_star = true;
    std::vector<std::unique_ptr<ObjectWriter>> writers;
    std::vector<std::string> contents;
    for (int i = 0; i < 4; ++i) {
      contents.push_back(Pattern(100 * round + i, 70 * 1024));
      RadosStore& gateway = (i % 2 == 0) ? *a_ : *b_;
      auto w = gateway.BeginPut("bucket", key, contents.back().size(), create_only);
      ASSERT_TRUE(w.ok()) << w.status();
      AOBJ_KIT_ASSERT_OK((*w)->Append(absl::MakeSpan(
          reinterpret_cast<const uint8_t*>(contents.back().data()), contents.back().size())));
      writers.push_back(*std::move(w));
    }
    std::atomic<int> wins{0}, refused{0};
    std::vector<int> winner(4, 0);
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&, i] {
        absl::StatusOr<ObjectInfo> c = writers[i]->Commit(InfoFor(contents[i]));
        if (c.ok()) {
          ++wins;
          winner[i] = 1;
        } else if (ErrorCodeOf(c.status()) == ErrorCode::kPreconditionFailed) {
          ++refused;
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(wins.load(), 1);
    EXPECT_EQ(refused.load(), 3);
    writers.clear();
    for (int i = 0; i < 4; ++i) {
      if (winner[i] == 0) continue;
      absl::StatusOr<std::string> got = Get(*b_, "bucket", key);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE(store_test_kit::SameBytes(contents[i], *got));
    }
  }
}

TEST_F(RadosGatewaysTest, ABucketDeletedThroughOneGatewayIsGoneForTheOthersWriters) {
  AOBJ_KIT_ASSERT_OK(a_->CreateBucket("bucket"));
  ASSERT_TRUE(Put(*b_, "bucket", "warm", "x").ok());  // B caches the bucket
  AOBJ_KIT_ASSERT_OK(b_->Delete("bucket", "warm"));
  const std::string content = Pattern(5, 2000);
  auto w = b_->BeginPut("bucket", "k", content.size(), "");
  ASSERT_TRUE(w.ok()) << w.status();
  AOBJ_KIT_ASSERT_OK((*w)->Append(
      absl::MakeSpan(reinterpret_cast<const uint8_t*>(content.data()), content.size())));
  AOBJ_KIT_ASSERT_OK(a_->DeleteBucket("bucket"));
  AOBJ_KIT_ASSERT_OK(a_->CreateBucket("bucket"));  // same name, new bucket
  AOBJ_KIT_EXPECT_CODE((*w)->Commit(InfoFor(content)).status(), ErrorCode::kNoSuchBucket);
  AOBJ_KIT_EXPECT_CODE(b_->Head("bucket", "k").status(), ErrorCode::kNoSuchKey);
  // B's stale cache does not keep it from writing into the new bucket.
  ASSERT_TRUE(Put(*b_, "bucket", "k2", "y").ok());
  EXPECT_TRUE(a_->Head("bucket", "k2").ok());
  AOBJ_KIT_EXPECT_CODE(b_->CreateBucket("bucket"), ErrorCode::kBucketAlreadyExists);
}

TEST_F(RadosGatewaysTest, ConcurrentBucketCreationThroughTwoGatewaysHasOneWinner) {
  for (int round = 0; round < 5; ++round) {
    const std::string name = absl::StrCat("b", round);
    absl::Status sa, sb;
    std::thread ta([&] { sa = a_->CreateBucket(name); });
    std::thread tb([&] { sb = b_->CreateBucket(name); });
    ta.join();
    tb.join();
    EXPECT_NE(sa.ok(), sb.ok()) << sa << " / " << sb;
    const absl::Status& loser = sa.ok() ? sb : sa;
    AOBJ_KIT_EXPECT_CODE(loser, ErrorCode::kBucketAlreadyExists);
  }
  absl::StatusOr<std::vector<BucketSummary>> listed = b_->ListBuckets();
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->size(), 5u);
}

// Replaced, deleted and abandoned versions are deleted by the collector once the grace has
// passed and never while a key names them.
TEST_F(RadosGatewaysTest, TheCollectorDeletesWhatNoKeyNamesAndNothingElse) {
  AOBJ_KIT_ASSERT_OK(a_->CreateBucket("bucket"));
  const std::string big = Pattern(7, 200 * 1024);  // four stripes
  ASSERT_TRUE(Put(*a_, "bucket", "kept", big).ok());
  ASSERT_TRUE(Put(*a_, "bucket", "replaced", big).ok());
  ASSERT_TRUE(Put(*b_, "bucket", "replaced", Pattern(8, 10)).ok());  // one stripe now
  ASSERT_TRUE(Put(*a_, "bucket", "deleted", big).ok());
  AOBJ_KIT_ASSERT_OK(b_->Delete("bucket", "deleted"));
  {
    auto w = a_->BeginPut("bucket", "aborted", big.size(), "");
    ASSERT_TRUE(w.ok());
    AOBJ_KIT_ASSERT_OK(
        (*w)->Append(absl::MakeSpan(reinterpret_cast<const uint8_t*>(big.data()), big.size() / 2)));
  }  // an aborted writer removes its own stripes
  // Within the grace nothing goes, and the reader of a replaced version still reads it.
  absl::StatusOr<std::unique_ptr<ObjectReader>> old_reader = a_->OpenRead("bucket", "kept");
  ASSERT_TRUE(old_reader.ok());
  ASSERT_TRUE(Put(*b_, "bucket", "kept", Pattern(9, 100)).ok());
  absl::StatusOr<RadosGcReport> waiting = a_->CollectGarbage();
  ASSERT_TRUE(waiting.ok()) << waiting.status();
  EXPECT_EQ(waiting->versions_deleted, 0u);
  EXPECT_GE(waiting->entries_waiting, 1u);  // the replaced versions of kept, replaced, deleted
  std::string first(1000, '\0');
  absl::StatusOr<size_t> n =
      (*old_reader)
          ->ReadAt(0, absl::MakeSpan(reinterpret_cast<uint8_t*>(first.data()), first.size()));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(first, big.substr(0, 1000));
  // The stripes of three replaced four-stripe versions, plus one stripe each for "replaced"'s
  // and "kept"'s current versions.
  absl::StatusOr<uint64_t> before = a_->CountObjects("aobj.data.");
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(*before, 3u * 4 + 2);

  RadosStoreOptions no_grace = options_;
  no_grace.gc_grace_ms = 0;
  std::unique_ptr<RadosStore> collector = Open(no_grace);
  ASSERT_NE(collector, nullptr);
  absl::StatusOr<RadosGcReport> report = collector->CollectGarbage();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->versions_deleted, 3u);
  absl::StatusOr<uint64_t> after = a_->CountObjects("aobj.data.");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, 2u);
  // Every entry is settled: a second pass finds nothing.
  report = collector->CollectGarbage();
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->entries_examined, 0u);
  // The reader of a collected version gets an error, never other bytes.
  n = (*old_reader)
          ->ReadAt(0, absl::MakeSpan(reinterpret_cast<uint8_t*>(first.data()), first.size()));
  AOBJ_KIT_EXPECT_CODE(n.status(), ErrorCode::kStorageError);
  // What is current reads as ever, through either gateway.
  absl::StatusOr<std::string> got = Get(*b_, "bucket", "replaced");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, Pattern(8, 10));
}

// A write whose stripes the collector took (it ran longer than the grace) fails at commit and
// leaves the key as it was.
TEST_F(RadosGatewaysTest, AWriteThatOutlivesTheGraceFailsInsteadOfNamingCollectedData) {
  AOBJ_KIT_ASSERT_OK(a_->CreateBucket("bucket"));
  ASSERT_TRUE(Put(*a_, "bucket", "k", "before").ok());
  const std::string content = Pattern(11, 100 * 1024);
  auto w = a_->BeginPut("bucket", "k", content.size(), "");
  ASSERT_TRUE(w.ok());
  AOBJ_KIT_ASSERT_OK((*w)->Append(
      absl::MakeSpan(reinterpret_cast<const uint8_t*>(content.data()), content.size())));
  RadosStoreOptions no_grace = options_;
  no_grace.gc_grace_ms = 0;
  std::unique_ptr<RadosStore> collector = Open(no_grace);
  ASSERT_NE(collector, nullptr);
  absl::StatusOr<RadosGcReport> report = collector->CollectGarbage();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->versions_deleted, 1u);
  absl::StatusOr<ObjectInfo> committed = (*w)->Commit(InfoFor(content));
  AOBJ_KIT_EXPECT_CODE(committed.status(), ErrorCode::kStorageError);
  EXPECT_NE(committed.status().message().find("garbage-collection grace"), std::string::npos)
      << committed.status();
  absl::StatusOr<std::string> got = Get(*b_, "bucket", "k");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "before");
  w->reset();
  EXPECT_EQ(*a_->CountObjects("aobj.data."), 1u);
}

TEST_F(RadosGatewaysTest, KeysWithNulAndEscapeOctetsListInByteOrder) {
  AOBJ_KIT_ASSERT_OK(a_->CreateBucket("bucket"));
  const std::vector<std::string> keys = {std::string("p\0", 2), std::string("p\0\0", 3), "p\x01",
                                         "p\x02", "pa"};
  for (size_t i = keys.size(); i-- > 0;) ASSERT_TRUE(Put(*a_, "bucket", keys[i], "v").ok());
  absl::StatusOr<std::vector<ObjectSummary>> listed = b_->ListObjects("bucket", "p", "", 100);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ((*listed)[i].key, keys[i]);
  listed = b_->ListObjects("bucket", std::string("p\0", 2), std::string("p\0", 2), 100);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].key, keys[1]);
}

TEST(RadosStoreOpenTest, AMissingPoolIsNamedWithTheCommandThatCreatesIt) {
  if (CephConf() == nullptr) GTEST_SKIP() << "AOBJ_CEPH_CONF is not set";
  RadosStoreOptions o = OptionsFor("x");
  o.pool = "no-such-pool";
  absl::StatusOr<std::unique_ptr<RadosStore>> store = OpenRadosStore(o);
  AOBJ_KIT_EXPECT_CODE(store.status(), ErrorCode::kStorageError);
  EXPECT_NE(store.status().message().find("ceph osd pool create no-such-pool"), std::string::npos)
      << store.status();
}

}  // namespace
}  // namespace aobj

namespace aobj {
namespace {

TEST_F(RadosGatewaysTest, SharedSecretsAreOnePerNameAndNamespace) {
  absl::StatusOr<std::string> a1 = a_->SharedSecret("list-token-key");
  absl::StatusOr<std::string> b1 = b_->SharedSecret("list-token-key");
  absl::StatusOr<std::string> a2 = a_->SharedSecret("other");
  ASSERT_TRUE(a1.ok() && b1.ok() && a2.ok()) << a1.status() << b1.status() << a2.status();
  EXPECT_EQ(a1->size(), 32u);
  EXPECT_EQ(*a1, *b1);
  EXPECT_NE(*a1, *a2);
  std::unique_ptr<RadosStore> elsewhere = Open(OptionsFor(FreshNamespace()));
  ASSERT_NE(elsewhere, nullptr);
  absl::StatusOr<std::string> c1 = elsewhere->SharedSecret("list-token-key");
  ASSERT_TRUE(c1.ok());
  EXPECT_NE(*a1, *c1);
}

}  // namespace
}  // namespace aobj
