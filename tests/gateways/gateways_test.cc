// Several aobj-server gateways over one Ceph cluster (issue 20): real server processes with
// --store rados on the cluster of the ctest fixture `rados_cluster` (AOBJ_CEPH_CONF), real
// clients over gRPC and UCX. Each test uses a namespace of its own.
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
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

  // A gateway on the test's namespace; `name` keeps the gateways' directories apart. With
  // `advertise`, it registers in the cluster, and the others list it (spec 5.11).
  std::unique_ptr<ServerProcess> StartGateway(const std::string& name, bool advertise = false) {
    std::vector<std::string> flags = {"--rados-conf",     conf_, "--rados-namespace", ns_,
                                      "--data-isolation", "none"};
    if (advertise) {
      flags.push_back("--advertise");
      flags.push_back("127.0.0.1:0");
    }
    auto gw = std::make_unique<ServerProcess>(dir_ + "/" + name, "rados", flags);
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

// The client spreads one upload's parts over three gateways and completes it through a fourth.
TEST_F(GatewaysTest, MultipartPartsThroughThreeGatewaysCompletedThroughAFourth) {
  std::vector<std::unique_ptr<ServerProcess>> gws;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 4; ++i) {
    gws.push_back(StartGateway(absl::StrCat("g", i)));
    clients.push_back(ConnectTo(*gws.back()));
    ASSERT_NE(clients.back(), nullptr);
  }
  absl::StatusOr<UploadInfo> u = clients[0]->CreateMultipartUpload("test-bucket", "mp");
  ASSERT_TRUE(u.ok()) << u.status();
  const size_t part_bytes = 5 << 20;  // S3's smallest part
  const std::string whole = Pattern(21, 3 * part_bytes - 12345);
  std::vector<CompletedPart> list(3);
  std::vector<std::thread> senders;
  std::vector<absl::Status> sent(3);
  for (uint32_t i = 0; i < 3; ++i) {
    senders.emplace_back([&, i] {
      const size_t at = i * part_bytes, n = std::min(part_bytes, whole.size() - at);
      absl::StatusOr<std::unique_ptr<Buffer>> buf = clients[i]->AllocateBuffer(n);
      if (!buf.ok()) {
        sent[i] = buf.status();
        return;
      }
      std::memcpy((*buf)->data(), whole.data() + at, n);
      absl::StatusOr<UploadPartResult> r =
          clients[i]->UploadPart("test-bucket", "mp", u->upload_id, i + 1, **buf, 0, n);
      sent[i] = r.status();
      if (r.ok()) list[i] = {i + 1, r->etag};
    });
  }
  for (auto& t : senders) t.join();
  for (const absl::Status& s : sent) ASSERT_TRUE(s.ok()) << s;
  absl::StatusOr<ObjectInfo> done =
      clients[3]->CompleteMultipartUpload("test-bucket", "mp", u->upload_id, list);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->size, whole.size());
  EXPECT_NE(done->etag.find("-3\""), std::string::npos) << done->etag;
  absl::StatusOr<std::string> got = GetBytes(*clients[1], "mp");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == whole);
  EXPECT_EQ(ErrorCodeOf(clients[2]->AbortMultipartUpload("test-bucket", "mp", u->upload_id)),
            ErrorCode::kNoSuchUpload);
}

// A gateway SIGKILLed while it completes uploads leaves each key old or whole-new, each upload
// either in progress (and completable elsewhere) or gone, and nothing after the collector.
TEST_F(GatewaysTest, AGatewayKilledDuringCompleteLeavesNoTornObjectAndNoLeakedData) {
  auto a = StartGateway("a");
  auto b = StartGateway("b");
  auto cb = ConnectTo(*b);
  ASSERT_NE(cb, nullptr);
  const size_t part_bytes = 5 << 20;
  const int kUploads = 6;
  std::vector<std::string> ids;
  std::vector<std::vector<CompletedPart>> lists(kUploads);
  std::vector<std::string> wholes;
  for (int k = 0; k < kUploads; ++k) {
    const std::string key = absl::StrCat("c", k);
    ASSERT_TRUE(PutBytes(*cb, key, "before").ok());
    absl::StatusOr<UploadInfo> u = cb->CreateMultipartUpload("test-bucket", key);
    ASSERT_TRUE(u.ok()) << u.status();
    ids.push_back(u->upload_id);
    wholes.push_back(Pattern(300 + k, 2 * part_bytes));
    absl::StatusOr<std::unique_ptr<Buffer>> buf = cb->AllocateBuffer(wholes.back().size());
    ASSERT_TRUE(buf.ok());
    std::memcpy((*buf)->data(), wholes.back().data(), wholes.back().size());
    for (uint32_t n = 1; n <= 2; ++n) {
      absl::StatusOr<UploadPartResult> r = cb->UploadPart("test-bucket", key, u->upload_id, n,
                                                          **buf, (n - 1) * part_bytes, part_bytes);
      ASSERT_TRUE(r.ok()) << r.status();
      lists[k].push_back({n, r->etag});
    }
  }
  {
    auto ca = ConnectTo(*a);
    ASSERT_NE(ca, nullptr);
    std::vector<std::thread> completers;
    for (int k = 0; k < kUploads; ++k) {
      completers.emplace_back([&, k] {
        (void)ca->CompleteMultipartUpload("test-bucket", absl::StrCat("c", k), ids[k], lists[k]);
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    a->Kill(SIGKILL);
    for (auto& t : completers) t.join();
  }
  int completed = 0;
  for (int k = 0; k < kUploads; ++k) {
    SCOPED_TRACE(k);
    const std::string key = absl::StrCat("c", k);
    absl::StatusOr<std::string> got = GetBytes(*cb, key);
    ASSERT_TRUE(got.ok()) << got.status();
    const bool is_new = *got == wholes[k];
    EXPECT_TRUE(is_new || *got == "before") << "torn object of " << got->size() << " bytes";
    // What the dead gateway did not finish, another finishes.
    if (!is_new) {
      absl::StatusOr<ObjectInfo> done =
          cb->CompleteMultipartUpload("test-bucket", key, ids[k], lists[k]);
      ASSERT_TRUE(done.ok()) << done.status();
      got = GetBytes(*cb, key);
      ASSERT_TRUE(got.ok());
      EXPECT_TRUE(*got == wholes[k]);
    } else {
      ++completed;
      EXPECT_EQ(ErrorCodeOf(cb->AbortMultipartUpload("test-bucket", key, ids[k])),
                ErrorCode::kNoSuchUpload);
    }
  }
  std::fprintf(stderr, "%d of %d completes finished before the gateway died\n", completed,
               kUploads);
  std::unique_ptr<RadosStore> collector = OpenStore(0);
  ASSERT_NE(collector, nullptr);
  absl::StatusOr<RadosGcReport> report = collector->CollectGarbage();
  ASSERT_TRUE(report.ok()) << report.status();
  // Each key names its two 5 MiB parts: a 4 MiB stripe and a 1 MiB one each; the "before"
  // versions, the uploads' objects and their records are gone.
  absl::StatusOr<uint64_t> stripes = collector->CountObjects("aobj.data.");
  ASSERT_TRUE(stripes.ok());
  EXPECT_EQ(*stripes, 4u * kUploads);
  EXPECT_EQ(*collector->CountObjects("aobj.upload."), 0u);
}

// Runs the CLI with the primary principal's credentials; returns its exit code, stdout+stderr.
int RunCli(const std::vector<std::string>& args, std::string* out, const std::string& log) {
  std::string cmd =
      absl::StrCat("AOBJ_ACCESS_KEY_ID=", testing::kAccessKey,
                   " AOBJ_SECRET_ACCESS_KEY=", testing::kSecret, " ", AOBJ_CLI_BINARY);
  for (const std::string& a : args) absl::StrAppend(&cmd, " '", a, "'");
  absl::StrAppend(&cmd, " > '", log, "' 2>&1");
  const int rc = std::system(cmd.c_str());
  *out = testing::ReadFile(log);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// The CLI given one gateway learns the others from it (registered in the cluster), spreads a
// recursive copy over all three, says which served what, and when one dies mid-copy moves its
// transfers to another and says so; every file arrives whole.
TEST_F(GatewaysTest, TheCliSpreadsOverListedGatewaysAndMovesOffALostOne) {
  auto a = StartGateway("a", true);
  auto b = StartGateway("b", true);
  auto c = StartGateway("c", true);
  auto ca = ConnectTo(*a);
  ASSERT_NE(ca, nullptr);
  EXPECT_EQ(ca->session().gateways.size(), 2u) << "A lists B and C, not itself";
  const std::string src = dir_ + "/src";
  ASSERT_EQ(mkdir(src.c_str(), 0700), 0);
  std::vector<std::string> files;
  for (int i = 0; i < 30; ++i) {
    files.push_back(Pattern(400 + i, (2 << 20) + i));
    std::ofstream(absl::StrCat(src, "/f", i), std::ios::binary) << files.back();
  }
  std::string out;
  ASSERT_EQ(
      RunCli({"--endpoint", a->endpoint(), "cp", "--recursive", src, "aobj://test-bucket/one/"},
             &out, dir_ + "/cli1.log"),
      0)
      << out;
  EXPECT_NE(out.find("gateways: "), std::string::npos) << out;
  for (const ServerProcess* g : {a.get(), b.get(), c.get()}) {
    EXPECT_NE(out.find(g->endpoint()), std::string::npos)
        << g->endpoint() << " served nothing: " << out;
  }
  // B dies while the next copy runs.
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    b->Kill(SIGKILL);
  });
  const int rc =
      RunCli({"--endpoint", a->endpoint(), "cp", "--recursive", src, "aobj://test-bucket/two/"},
             &out, dir_ + "/cli2.log");
  killer.join();
  ASSERT_EQ(rc, 0) << out;
  for (int i = 0; i < 30; ++i) {
    absl::StatusOr<std::string> got = GetBytes(*ca, absl::StrCat("two/f", i));
    ASSERT_TRUE(got.ok()) << i << ": " << got.status();
    EXPECT_TRUE(*got == files[i]) << i;
  }
  // Either the copy was past B's share when it died, or the CLI said it moved off B.
  if (out.find("gateway " + b->endpoint()) != std::string::npos) {
    EXPECT_NE(out.find("continue on"), std::string::npos) << out;
  }
  std::fprintf(
      stderr, "%s\n",
      out.substr(out.find("gateways:") == std::string::npos ? 0 : out.find("gateways:")).c_str());
}

// Bucket owners live with the buckets in the cluster: every gateway agrees on who owns what,
// including after the name was deleted through one gateway and re-created through another.
TEST_F(GatewaysTest, OwnersAreTheSameOnEveryGateway) {
  std::unique_ptr<ServerProcess> gw[2];
  for (int i = 0; i < 2; ++i) {
    gw[i] = std::make_unique<ServerProcess>(
        dir_ + "/owner" + std::to_string(i), "rados",
        std::vector<std::string>{"--rados-conf", conf_, "--rados-namespace", ns_,
                                 "--data-isolation", "none", "--authorization", "owner"});
    ASSERT_TRUE(gw[i]->Start()) << gw[i]->log();
  }
  auto connect = [&](int g, const char* key, const char* secret) {
    ClientOptions o;
    o.endpoint = gw[g]->endpoint();
    o.access_key_id = key;
    o.secret = secret;
    absl::StatusOr<std::unique_ptr<Client>> c = Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  };
  auto one_a = connect(0, testing::kAccessKey, testing::kSecret);
  auto one_b = connect(1, testing::kAccessKey, testing::kSecret);
  auto two_a = connect(0, "AKTESTSECOND", "second-secret-for-tests");
  auto two_b = connect(1, "AKTESTSECOND", "second-secret-for-tests");
  ASSERT_TRUE(one_a && one_b && two_a && two_b);
  auto put = [&](Client& c, const std::string& bucket) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = c.AllocateBuffer(4);
    if (!buf.ok()) return buf.status();
    std::memcpy((*buf)->data(), "data", 4);
    return c.Put(bucket, "k", **buf, 4).status();
  };
  ASSERT_TRUE(one_a->CreateBucket("owned").ok());
  EXPECT_TRUE(put(*one_b, "owned").ok());
  EXPECT_EQ(ErrorCodeOf(put(*two_b, "owned")), ErrorCode::kAccessDenied);
  EXPECT_EQ(ErrorCodeOf(two_a->Head("owned", "k").status()), ErrorCode::kAccessDenied);
  EXPECT_EQ(ErrorCodeOf(two_b->CreateBucket("owned")), ErrorCode::kBucketAlreadyExists);
  // One deletes it through B; two takes the name through A and owns it everywhere.
  ASSERT_TRUE(one_b->Delete("owned", "k").ok());
  ASSERT_TRUE(one_b->DeleteBucket("owned").ok());
  ASSERT_TRUE(two_a->CreateBucket("owned").ok());
  EXPECT_TRUE(put(*two_b, "owned").ok());
  EXPECT_EQ(ErrorCodeOf(put(*one_a, "owned")), ErrorCode::kAccessDenied);
  EXPECT_EQ(ErrorCodeOf(one_b->DeleteBucket("owned")), ErrorCode::kAccessDenied);
}

}  // namespace
}  // namespace aobj
