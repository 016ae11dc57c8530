// Malformed worker addresses in OpenSession against a separate aobj-server (AOBJ-SES-011).
// Regression: 200 random octets made UCX 1.13.1 abort the server inside ucp_ep_create
// ("address.c:1051 Assertion `*addr_version == UCP_OBJECT_VERSION_V2' failed"). Each one must
// now get INVALID_ARGUMENT, and the server must keep serving.
#include <cstring>
#include <random>
#include <string>

#include "aobj/client.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/raw_session.h"
#include "integration/server_process.h"
#include "integration/still_serves.h"

namespace aobj {
namespace {

using testing::kAccessKey;
using testing::kSecret;
using testing::RawSession;
using testing::ServerProcess;

class WorkerAddressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(testing::TestDir(), "memory",
                                              std::vector<std::string>{});
    ASSERT_TRUE(server_->Start()) << server_->log();
    raw_ = std::make_unique<RawSession>(server_->endpoint(), kAccessKey, kSecret);
  }
  void TearDown() override {
    if (server_) {
      EXPECT_TRUE(server_->Alive()) << "the server died:\n" << server_->log();
      server_->Stop();
    }
  }

  ErrorCode OpenWith(const std::string& address) {
    auto req = raw_->DefaultOpen();
    req.set_worker_address(address);
    RawReply r = raw_->Send(Method::kOpenSession, req);
    return ErrorCodeOf(r.status);
  }

  void ExpectStillServes() { testing::ExpectStillServes(*server_, "after-bad-address", 0x5a); }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<RawSession> raw_;
};

TEST_F(WorkerAddressTest, RandomOctetsAreInvalidArgument) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    std::mt19937 rng(seed);
    std::string blob(200, '\0');
    for (char& c : blob) c = static_cast<char>(rng());
    EXPECT_EQ(OpenWith(blob), ErrorCode::kInvalidArgument) << "seed " << seed;
    ASSERT_TRUE(server_->Alive()) << "seed " << seed << "\n" << server_->log();
  }
  ExpectStillServes();
}

TEST_F(WorkerAddressTest, TruncatedRealAddressesAreInvalidArgument) {
  const std::string real = raw_->worker().address();
  ASSERT_GT(real.size(), 20u);
  for (size_t n = 1; n < real.size(); n += (n < 24 ? 1 : 7)) {
    EXPECT_EQ(OpenWith(real.substr(0, n)), ErrorCode::kInvalidArgument) << "cut to " << n;
  }
  ASSERT_TRUE(server_->Alive()) << server_->log();
  ExpectStillServes();
}

TEST_F(WorkerAddressTest, UnknownAddressVersionIsInvalidArgument) {
  std::string bad = raw_->worker().address();
  for (int v : {2, 4, 15}) {
    bad[0] = static_cast<char>((bad[0] & 0xF0) | v);
    EXPECT_EQ(OpenWith(bad), ErrorCode::kInvalidArgument) << "version " << v;
  }
  ExpectStillServes();
}

TEST_F(WorkerAddressTest, RealAddressStillOpens) {
  EXPECT_TRUE(raw_->Open().status.ok());
  ExpectStillServes();
}

}  // namespace
}  // namespace aobj
