// aobj::Gateways (aobj/gateways.h): a library client's sessions over several real aobj-server
// processes. Each server here has its own store, so where an object lands says which gateway
// served the request.
#include <signal.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "aobj/gateways.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/server_process.h"

namespace aobj {
namespace {

using testing::ServerProcess;

ClientOptions Options() {
  ClientOptions o;
  o.access_key_id = testing::kAccessKey;
  o.secret = testing::kSecret;
  o.timeout_ms = 5000;
  return o;
}

// Collects the notices.
struct Notices {
  absl::Mutex mu;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> Sink() {
    return [this](const std::string& line) {
      absl::MutexLock l(&mu);
      lines.push_back(line);
    };
  }
  std::string All() {
    absl::MutexLock l(&mu);
    std::string out;
    for (const std::string& s : lines) out += s + "\n";
    return out;
  }
};

absl::Status PutSmall(Client& c, const std::string& key) {
  auto buf = c.AllocateBuffer(4096);
  if (!buf.ok()) return buf.status();
  std::memset((*buf)->data(), 'g', 4096);
  return c.Put("test-bucket", key, **buf, 4096, {}).status();
}

bool Holds(const ServerProcess& server, const std::string& key) {
  auto c = testing::ConnectTo(server);
  return c != nullptr && c->Head("test-bucket", key).ok();
}

TEST(GatewayPoolTest, SpreadsLanesOverGatewaysAndCountsWhatEachServed) {
  ServerProcess a(testing::TestDir(), "memory");
  ServerProcess b(testing::TestDir(), "memory");
  ASSERT_TRUE(a.Start()) << a.log();
  ASSERT_TRUE(b.Start()) << b.log();
  auto gw = Gateways::Connect(Options(), {a.endpoint(), b.endpoint()});
  ASSERT_TRUE(gw.ok()) << gw.status();
  EXPECT_EQ((*gw)->gateways(), (std::vector<std::string>{a.endpoint(), b.endpoint()}));

  // Lane n works through gateway n % 2.
  for (size_t lane = 0; lane < 4; ++lane) {
    uint64_t generation = 0;
    Client& c = (*gw)->ForLane(lane, &generation);
    EXPECT_EQ((*gw)->GatewayOf(generation), lane % 2 == 0 ? a.endpoint() : b.endpoint());
    ASSERT_TRUE(PutSmall(c, "lane-" + std::to_string(lane)).ok());
    (*gw)->Served(generation);
  }
  // Each object is where its lane's gateway put it, and nowhere else.
  EXPECT_TRUE(Holds(a, "lane-0") && Holds(a, "lane-2"));
  EXPECT_TRUE(Holds(b, "lane-1") && Holds(b, "lane-3"));
  EXPECT_FALSE(Holds(a, "lane-1"));
  EXPECT_FALSE(Holds(b, "lane-0"));
  EXPECT_EQ((*gw)->ServedByGateway(),
            (std::vector<std::pair<std::string, uint64_t>>{{a.endpoint(), 2}, {b.endpoint(), 2}}));
  EXPECT_EQ((*gw)->renewals(), 0u);
}

TEST(GatewayPoolTest, ALostGatewayHandsItsLanesToAnotherAndSaysSo) {
  ServerProcess a(testing::TestDir(), "memory");
  ServerProcess b(testing::TestDir(), "memory");
  ASSERT_TRUE(a.Start()) << a.log();
  ASSERT_TRUE(b.Start()) << b.log();
  Notices notices;
  auto gw = Gateways::Connect(Options(), {a.endpoint(), b.endpoint()}, 8, notices.Sink());
  ASSERT_TRUE(gw.ok()) << gw.status();
  uint64_t generation = 0;
  Client& on_b = (*gw)->ForLane(1, &generation);
  ASSERT_TRUE(PutSmall(on_b, "before").ok());

  b.Kill(SIGKILL);
  const absl::Status lost = PutSmall(on_b, "after");
  ASSERT_FALSE(lost.ok());
  EXPECT_TRUE(SessionLost(lost)) << lost;
  EXPECT_EQ(notices.All(), "");  // nothing moves before the caller says the session is lost

  ASSERT_TRUE((*gw)->Renew(generation).ok());
  EXPECT_NE(notices.All().find("gateway " + b.endpoint() + " was lost"), std::string::npos)
      << notices.All();
  EXPECT_NE(notices.All().find("continue on " + a.endpoint()), std::string::npos) << notices.All();
  EXPECT_EQ((*gw)->renewals(), 1u);
  // A second Renew of the same generation (another thread's) changes nothing more.
  ASSERT_TRUE((*gw)->Renew(generation).ok());
  EXPECT_EQ((*gw)->renewals(), 1u);

  uint64_t moved = 0;
  Client& now = (*gw)->ForLane(1, &moved);
  EXPECT_NE(moved, generation);
  EXPECT_EQ((*gw)->GatewayOf(moved), a.endpoint());
  ASSERT_TRUE(PutSmall(now, "after").ok());
  EXPECT_TRUE(Holds(a, "after"));
}

TEST(GatewayPoolTest, AnUnreachableGatewayIsPassedOverWithANotice) {
  ServerProcess a(testing::TestDir(), "memory");
  ServerProcess gone(testing::TestDir(), "memory");
  ASSERT_TRUE(a.Start()) << a.log();
  ASSERT_TRUE(gone.Start()) << gone.log();
  const std::string dead = gone.endpoint();
  gone.Stop();

  Notices notices;
  auto gw = Gateways::Connect(Options(), {dead, a.endpoint()}, 8, notices.Sink());
  ASSERT_TRUE(gw.ok()) << gw.status();
  EXPECT_NE(notices.All().find("gateway " + dead + " cannot be reached"), std::string::npos)
      << notices.All();
  // The first session is on the gateway that answered; the dead one stays in the list, and its
  // lanes go to the one that answers when they first need a session.
  EXPECT_EQ((*gw)->gateways(), (std::vector<std::string>{a.endpoint(), dead}));
  uint64_t generation = 0;
  Client& c = (*gw)->ForLane(1, &generation);
  EXPECT_EQ((*gw)->GatewayOf(generation), a.endpoint());
  EXPECT_NE(notices.All().find("continue on " + a.endpoint()), std::string::npos) << notices.All();
  EXPECT_TRUE(PutSmall(c, "k").ok());
}

TEST(GatewayPoolTest, ConnectFailsWhenNoGatewayAnswers) {
  EXPECT_EQ(ErrorCodeOf(Gateways::Connect(Options(), {}).status()), ErrorCode::kInvalidArgument);
  ServerProcess gone(testing::TestDir(), "memory");
  ASSERT_TRUE(gone.Start()) << gone.log();
  const std::string dead = gone.endpoint();
  gone.Stop();
  auto gw = Gateways::Connect(Options(), {dead});
  ASSERT_FALSE(gw.ok());
  EXPECT_TRUE(SessionLost(gw.status())) << gw.status();  // the connection's failure, said as such
}

}  // namespace
}  // namespace aobj
