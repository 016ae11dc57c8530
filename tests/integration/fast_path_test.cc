// The fast request path (spec section 8.9, capability FAST_PATH) between the client library and
// an aobj-server process, with the data channel confined (the default) and in the server's
// process: requests travel as active messages when both sides offer it and by gRPC otherwise,
// with the same results; what a peer sends there that is not a frame is dropped, and the server
// goes on. The server's counters come from its metrics endpoint.
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "aobj/client.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/raw_http.h"
#include "integration/server_process.h"
#include "transport/ucx_context.h"
#include "transport/ucx_worker.h"
#include "wire/fast_frame.h"

namespace aobj {
namespace {

using testing::kAccessKey;
using testing::kSecret;
using testing::ServerProcess;

constexpr char kBucket[] = "test-bucket";

// "process" or "none" (--data-isolation).
class FastPathTest : public ::testing::TestWithParam<std::string> {
 protected:
  // `mode` (--fast-path): "on" or "off" by `server_fast_path`, unless given.
  void Start(bool server_fast_path, const char* mode = nullptr) {
    if (server_) server_->Stop();
    if (base_.empty()) {
      base_ = testing::TestDir();
      mkdir(base_.c_str(), 0700);
    }
    if (mode == nullptr) mode = server_fast_path ? "on" : "off";
    dir_ = base_ + "/" + mode;
    server_ = std::make_unique<ServerProcess>(
        dir_, "memory",
        std::vector<std::string>{"--data-isolation", GetParam(), "--fast-path", mode,
                                 "--metrics-listen", "127.0.0.1:0", "--metrics-port-file",
                                 dir_ + "/metrics-port"});
    ASSERT_TRUE(server_->Start()) << server_->log();
    metrics_port_ = 0;
    for (int i = 0; i < 200 && metrics_port_ == 0; ++i) {
      const std::string p = testing::ReadFile(dir_ + "/metrics-port");
      if (!p.empty() && p.back() == '\n') metrics_port_ = std::stoi(p);
      if (metrics_port_ == 0) absl::SleepFor(absl::Milliseconds(10));
    }
    ASSERT_NE(metrics_port_, 0) << server_->log();
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  // aobj_fast_requests_total or aobj_fast_dropped_total.
  double Counter(const std::string& name) {
    const std::string resp =
        testing::RawHttp(metrics_port_, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    return testing::Sample(resp.substr(std::min(resp.size(), resp.find("\r\n\r\n") + 4)), name);
  }
  std::unique_ptr<Client> Connect(bool fast_path) {
    ClientOptions o;
    o.endpoint = server_->endpoint();
    o.access_key_id = kAccessKey;
    o.secret = kSecret;
    o.fast_path = fast_path;
    auto c = Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }
  static bool Negotiated(const Client& c) {
    const auto& caps = c.session().capabilities;
    return std::find(caps.begin(), caps.end(), 7u) != caps.end();
  }
  // PUT (inline and by RMA), GET both back, HEAD, DELETE: every one must give what gRPC gives.
  static void Exercise(Client& c, const std::string& prefix) {
    for (size_t size : {size_t{100}, size_t{200000}}) {
      SCOPED_TRACE(size);
      auto buf = c.AllocateBuffer(size);
      ASSERT_TRUE(buf.ok()) << buf.status();
      for (size_t i = 0; i < size; ++i) (*buf)->data()[i] = static_cast<uint8_t>(i * 7 + size);
      const std::string key = prefix + std::to_string(size);
      auto put = c.Put(kBucket, key, **buf, size);
      ASSERT_TRUE(put.ok()) << put.status();
      EXPECT_EQ(put->path, size <= 16384 ? TransferPath::kInline : TransferPath::kRma);
      auto out = c.AllocateBuffer(size);
      ASSERT_TRUE(out.ok());
      auto get = c.Get(kBucket, key, **out);
      ASSERT_TRUE(get.ok()) << get.status();
      EXPECT_EQ(get->info.etag, put->info.etag);
      EXPECT_EQ(0, std::memcmp((*buf)->data(), (*out)->data(), size));
      auto head = c.Head(kBucket, key);
      ASSERT_TRUE(head.ok()) << head.status();
      EXPECT_EQ(head->size, size);
      ASSERT_TRUE(c.Delete(kBucket, key).ok());
      EXPECT_EQ(ErrorCodeOf(c.Head(kBucket, key).status()), ErrorCode::kNoSuchKey);
    }
    // A listing stays on gRPC (AOBJ-DAT-167) and sees the same store.
    auto list = c.ListBuckets();
    ASSERT_TRUE(list.ok()) << list.status();
  }

  std::string base_;
  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
  int metrics_port_ = 0;
};

TEST_P(FastPathTest, RequestsTravelOnTheFastPathWhenBothOfferIt) {
  Start(/*server_fast_path=*/true);
  auto c = Connect(/*fast_path=*/true);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(Negotiated(*c));
  const double before = Counter("aobj_fast_requests_total");
  Exercise(*c, "fast-");
  // Per size: PUT, GET, HEAD, DELETE, HEAD: ten requests, all of them fast.
  EXPECT_EQ(Counter("aobj_fast_requests_total") - before, 10);
  EXPECT_EQ(Counter("aobj_fast_dropped_total"), 0);
}

// A request that waits on nothing (a small GET, PUT or HEAD on the memory store) runs on the
// thread that received it; one that needs RMA, or a DELETE, goes to a request thread. The results
// are Exercise's either way, and `--fast-path queued` runs every one on a request thread.
TEST_P(FastPathTest, WhatWaitsOnNothingRunsWhereItArrivesUnlessQueued) {
  for (const char* mode : {"on", "queued"}) {
    SCOPED_TRACE(mode);
    Start(/*server_fast_path=*/true, mode);
    auto c = Connect(/*fast_path=*/true);
    ASSERT_NE(c, nullptr);
    Exercise(*c, "here-");
    EXPECT_EQ(Counter("aobj_fast_requests_total"), 10);
    // At most six may: 100 octets: PUT, GET, HEAD, HEAD (not the DELETE); 200,000 octets: the
    // two HEADs (the PUT reads by RMA, the GET writes by RMA). A request right after one that ran
    // on a request thread may find that request still counted as running, and then goes to a
    // thread too; the GET and the first HEAD of 100 octets follow one that ran here, so they do.
    const double here = Counter("aobj_fast_served_here_total");
    if (std::string(mode) == "on") {
      EXPECT_GE(here, 2);
      EXPECT_LE(here, 6);
    } else {
      EXPECT_EQ(here, 0);
    }
    EXPECT_EQ(Counter("aobj_fast_dropped_total"), 0);
  }
}

TEST_P(FastPathTest, EitherSideWithoutItKeepsEverythingOnGrpc) {
  Start(/*server_fast_path=*/false);
  auto c = Connect(/*fast_path=*/true);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(Negotiated(*c));
  Exercise(*c, "server-off-");
  EXPECT_EQ(Counter("aobj_fast_requests_total"), 0);
  c.reset();
  Start(/*server_fast_path=*/true);
  c = Connect(/*fast_path=*/false);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(Negotiated(*c));
  Exercise(*c, "client-off-");
  EXPECT_EQ(Counter("aobj_fast_requests_total"), 0);
}

TEST_P(FastPathTest, JunkAtTheFastPathAddressIsDroppedAndTheServerGoesOn) {
  Start(/*server_fast_path=*/true);
  auto c = Connect(/*fast_path=*/true);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(Negotiated(*c));
  // A second process's worth of UCX: a worker that sends what it likes to the same address.
  // The address is the server's own (OpenSessionResponse), learned here through a raw session.
  DataChannelOptions dc;
  dc.net_devices = "lo";
  auto ctx = UcxContext::Create(dc);
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  auto w = UcxWorker::Create(**ctx, "junk");
  ASSERT_TRUE(w.ok()) << w.status();
  const std::string address = c->session().fast_path_address;
  ASSERT_FALSE(address.empty());
  auto ep = (*w)->ConnectForMessages(address);
  ASSERT_TRUE(ep.ok()) << ep.status();
  const double before = Counter("aobj_fast_requests_total");
  FastRequest r;
  r.method = "HeadBucket";
  r.auth.access_key_id = kAccessKey;
  r.auth.session_hex = c->session().session_id;  // a real session, no valid signature
  r.auth.nonce_hex = std::string(32, '0');
  r.auth.timestamp = "1";
  r.auth.signature_hex = std::string(64, 'f');
  const std::string frame = *EncodeFastRequest(r);
  for (const std::string& junk :
       {std::string(), std::string("\x01"), frame.substr(0, frame.size() - 1),
        std::string(10000, '\xff'), frame + "trailing", frame}) {
    ASSERT_TRUE((*w)->SendMessage(*ep, kFastRequestAmId, junk).ok());
  }
  // The junk worker connects first (UCX wireup) and the confined worker forwards each frame: on
  // a busy machine (CI runs tests side by side) that took more than 2 s. Up to 20 s, each frame
  // counted as soon as it arrives.
  for (int i = 0; i < 2000 && Counter("aobj_fast_requests_total") - before < 6; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(Counter("aobj_fast_requests_total") - before, 6);
  // Five do not parse; the last parses, fails its signature and is answered (to the session's
  // own endpoint, where the client drops a reply it does not wait for), not dropped.
  EXPECT_EQ(Counter("aobj_fast_dropped_total"), 5);
  Exercise(*c, "after-junk-");
}

INSTANTIATE_TEST_SUITE_P(Isolation, FastPathTest, ::testing::Values("process", "none"),
                         [](const auto& info) {
                           return info.param == "none" ? std::string("InProcess")
                                                       : std::string("Confined");
                         });

}  // namespace
}  // namespace aobj
