// Several aobj-server gateways over one Ceph cluster (issue 20): real server processes with
// --store rados on the cluster of the ctest fixture `rados_cluster` (AOBJ_CEPH_CONF), real
// clients over gRPC and UCX. Each test uses a namespace of its own.
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aobj/client.h"
#include "aobj/rados_store.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/server_process.h"
#include "wire/crypto.h"

namespace aobj {
namespace {

using testing::ConnectTo;
using testing::ServerProcess;
using testing::TestDir;

class GatewaysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* conf = getenv("AOBJ_CEPH_CONF");
    if (conf == nullptr) GTEST_SKIP() << "AOBJ_CEPH_CONF is not set (ctest fixture rados_cluster)";
    conf_ = conf;
    ns_ = absl::StrCat("gw-", HexEncode(RandomBytes(6)));
    dir_ = TestDir();
    ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0) << dir_;
  }

  // A gateway on the test's namespace; `name` keeps the gateways' directories apart.
  std::unique_ptr<ServerProcess> StartGateway(const std::string& name) {
    auto gw = std::make_unique<ServerProcess>(
        dir_ + "/" + name, "rados",
        std::vector<std::string>{"--rados-conf", conf_, "--rados-namespace", ns_,
                                 "--data-isolation", "none"});
    EXPECT_TRUE(gw->Start()) << gw->log();
    return gw;
  }

  std::unique_ptr<RadosStore> OpenStore(int64_t grace_ms) {
    RadosStoreOptions o;
    o.conf_file = conf_;
    o.ns = ns_;
    o.gc_grace_ms = grace_ms;
    o.gc_interval_ms = 0;
    absl::StatusOr<std::unique_ptr<RadosStore>> s = OpenRadosStore(o);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }

  static std::string Pattern(uint64_t seed, size_t n) {
    std::string out(n, '\0');
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      out[i] = static_cast<char>(x);
    }
    return out;
  }

  static absl::StatusOr<TransferResult> PutBytes(Client& c, const std::string& key,
                                                 const std::string& bytes,
                                                 const PutOptions& options = {}) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = c.AllocateBuffer(bytes.size());
    if (!buf.ok()) return buf.status();
    std::memcpy((*buf)->data(), bytes.data(), bytes.size());
    return c.Put("test-bucket", key, **buf, bytes.size(), options);
  }

  static absl::StatusOr<std::string> GetBytes(Client& c, const std::string& key) {
    absl::StatusOr<ObjectInfo> info = c.Head("test-bucket", key);
    if (!info.ok()) return info.status();
    absl::StatusOr<std::unique_ptr<Buffer>> buf = c.AllocateBuffer(info->size + 1);
    if (!buf.ok()) return buf.status();
    absl::StatusOr<TransferResult> got = c.Get("test-bucket", key, **buf);
    if (!got.ok()) return got.status();
    return std::string(reinterpret_cast<const char*>((*buf)->data()), got->bytes_transferred);
  }

  std::string conf_, ns_, dir_;
};

TEST_F(GatewaysTest, WriteThroughOneGatewayReadThroughAnother) {
  auto a = StartGateway("a");
  auto b = StartGateway("b");
  auto ca = ConnectTo(*a);
  auto cb = ConnectTo(*b);
  ASSERT_NE(ca, nullptr);
  ASSERT_NE(cb, nullptr);
  const std::string big = Pattern(1, (9 << 20) + 17);  // three 4 MiB stripes, by RMA
  ASSERT_TRUE(PutBytes(*ca, "big", big).ok());
  absl::StatusOr<std::string> got = GetBytes(*cb, "big");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == big);
  ASSERT_TRUE(PutBytes(*cb, "small", "through b").ok());
  got = GetBytes(*ca, "small");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "through b");
  absl::StatusOr<ObjectListing> listed = ca->ListObjects("test-bucket", ListObjectsOptions{});
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->objects.size(), 2u);
  EXPECT_EQ(listed->objects[0].key, "big");
  EXPECT_EQ(listed->objects[0].size, big.size());
  // A listing begun on A continues on B (the gateways share the token key through RADOS).
  ListObjectsOptions first_page;
  first_page.max_keys = 1;
  absl::StatusOr<ObjectListing> page = ca->ListObjects("test-bucket", first_page);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_TRUE(page->is_truncated);
  ListObjectsOptions next_page;
  next_page.continuation_token = page->next_continuation_token;
  page = cb->ListObjects("test-bucket", next_page);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].key, "small");
  ASSERT_TRUE(cb->Delete("test-bucket", "big").ok());
  EXPECT_EQ(ErrorCodeOf(ca->Head("test-bucket", "big").status()), ErrorCode::kNoSuchKey);
}

TEST_F(GatewaysTest, TheSameConditionalPutRacedThroughTwoGatewaysHasOneWinner) {
  auto a = StartGateway("a");
  auto b = StartGateway("b");
  auto ca = ConnectTo(*a);
  auto cb = ConnectTo(*b);
  ASSERT_NE(ca, nullptr);
  ASSERT_NE(cb, nullptr);
  for (int round = 0; round < 8; ++round) {
    SCOPED_TRACE(round);
    const std::string key = absl::StrCat("race-", round);
    const std::string va = Pattern(2 * round, 300 * 1024), vb = Pattern(2 * round + 1, 300 * 1024);
    PutOptions create_only;
    create_only.conditions.if_none_match = "*";
    absl::StatusOr<TransferResult> ra = absl::UnknownError("not run"), rb = ra;
    std::thread ta([&] { ra = PutBytes(*ca, key, va, create_only); });
    std::thread tb([&] { rb = PutBytes(*cb, key, vb, create_only); });
    ta.join();
    tb.join();
    ASSERT_NE(ra.ok(), rb.ok()) << ra.status() << " / " << rb.status();
    const absl::Status& loser = ra.ok() ? rb.status() : ra.status();
    EXPECT_EQ(ErrorCodeOf(loser), ErrorCode::kPreconditionFailed) << loser;
    absl::StatusOr<std::string> got = GetBytes(*cb, key);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(*got == (ra.ok() ? va : vb));
  }
}

// A gateway SIGKILLed while PUTs stream into it leaves every key old or new as a whole, and
// nothing behind once the collector has run.
TEST_F(GatewaysTest, AGatewayKilledDuringPutsLeavesNoTornObjectAndNoLeakedData) {
  auto a = StartGateway("a");
  auto b = StartGateway("b");
  auto cb = ConnectTo(*b);
  ASSERT_NE(cb, nullptr);
  const std::string before = Pattern(7, 5 << 20);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(PutBytes(*cb, absl::StrCat("k", i), before).ok());
  std::vector<std::string> after;
  for (int i = 0; i < 4; ++i) after.push_back(Pattern(100 + i, (24 << 20) + i));
  {
    auto ca = ConnectTo(*a);
    ASSERT_NE(ca, nullptr);
    std::atomic<int> finished{0};
    std::vector<std::thread> writers;
    for (int i = 0; i < 4; ++i) {
      writers.emplace_back([&, i] {
        (void)PutBytes(*ca, absl::StrCat("k", i), after[i]);
        ++finished;
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    a->Kill(SIGKILL);
    for (auto& t : writers) t.join();
  }
  int replaced = 0;
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    absl::StatusOr<std::string> got = GetBytes(*cb, absl::StrCat("k", i));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(*got == before || *got == after[i]) << "torn object of " << got->size() << " bytes";
    replaced += *got == after[i];
  }
  std::fprintf(stderr, "%d of 4 PUTs committed before the gateway died\n", replaced);
  // Everything the dead gateway wrote and no key names goes once the grace has passed.
  std::unique_ptr<RadosStore> collector = OpenStore(0);
  ASSERT_NE(collector, nullptr);
  absl::StatusOr<RadosGcReport> report = collector->CollectGarbage();
  ASSERT_TRUE(report.ok()) << report.status();
  uint64_t expected_stripes = 0;
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<ObjectInfo> info = cb->Head("test-bucket", absl::StrCat("k", i));
    ASSERT_TRUE(info.ok());
    expected_stripes += (info->size + (4u << 20) - 1) / (4u << 20);
  }
  absl::StatusOr<uint64_t> stripes = collector->CountObjects("aobj.data.");
  ASSERT_TRUE(stripes.ok()) << stripes.status();
  std::fprintf(stderr, "collector: %llu entries examined, %llu versions deleted\n",
               static_cast<unsigned long long>(report->entries_examined),
               static_cast<unsigned long long>(report->versions_deleted));
  EXPECT_EQ(*stripes, expected_stripes) << "garbage report: examined " << report->entries_examined
                                        << ", deleted " << report->versions_deleted;
  report = collector->CollectGarbage();
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->entries_examined, 0u);
}

TEST_F(GatewaysTest, OwnerAuthorizationIsRefusedUntilOwnersLiveInTheCluster) {
  ServerProcess gw(dir_ + "/owner", "rados",
                   {"--rados-conf", conf_, "--rados-namespace", ns_, "--authorization", "owner"});
  EXPECT_FALSE(gw.Start());
  EXPECT_NE(gw.log().find("--authorization owner is not available with --store rados"),
            std::string::npos)
      << gw.log();
}

}  // namespace
}  // namespace aobj
