// The control listener under a connection flood (issue 16, control-plane probe finding 1): with
// its descriptors exhausted by idle TCP connections, gRPC's own listener used to stop accepting
// for good. A real aobj-server with `ulimit -n 256`, 300 idle connections on loopback.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "aobj/client.h"
#include "gtest/gtest.h"
#include "integration/server_process.h"

namespace aobj {
namespace {

class ConnectionFloodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TestDir();
    const std::string creds = dir_ + "/credentials";
    std::filesystem::create_directories(dir_);
    {
      std::ofstream f(creds);
      f << testing::kAccessKey << " " << testing::kSecret << "\n";
    }
    chmod(creds.c_str(), 0600);
    const std::string port_file = dir_ + "/port";
    pid_ = testing::Spawn({"/bin/sh", "-c",
                           "ulimit -n 256 && exec '" + std::string(AOBJ_SERVER_BINARY) +
                               "' --listen 127.0.0.1:0 --port-file '" + port_file +
                               "' --credentials '" + creds +
                               "' --store memory --create-bucket test-bucket --plaintext"},
                          dir_ + "/server.log");
    ASSERT_GT(pid_, 0);
    for (int i = 0; i < 100 && port_ == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const std::string p = testing::ReadFile(port_file);
      if (!p.empty()) port_ = std::stoi(p);
    }
    ASSERT_NE(port_, 0) << testing::ReadFile(dir_ + "/server.log");
  }
  void TearDown() override {
    for (int fd : flood_) close(fd);
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      testing::WaitFor(pid_, std::chrono::seconds(20));
    }
  }

  // Opens up to `n` idle TCP connections to the control port (the kernel completes them from
  // the listen backlog whether or not the server accepts).
  void Flood(int n) {
    for (int i = 0; i < n; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      ASSERT_GE(fd, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(port_));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
        close(fd);
        break;
      }
      flood_.push_back(fd);
    }
  }

  bool Served() {
    ClientOptions o;
    o.endpoint = "127.0.0.1:" + std::to_string(port_);
    o.access_key_id = testing::kAccessKey;
    o.secret = testing::kSecret;
    o.timeout_ms = 5000;
    auto c = Client::Connect(o);
    return c.ok() && (*c)->HeadBucket("test-bucket").ok();
  }

  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::vector<int> flood_;
};

// While flooded the server keeps the descriptors it needs; once the flood ends, or its idle
// connections pass the handshake timeout (10 s), a new client is served.
TEST_F(ConnectionFloodTest, ANewClientIsServedAfterDescriptorExhaustion) {
  ASSERT_TRUE(Served());
  ASSERT_NO_FATAL_FAILURE(Flood(300));
  EXPECT_GE(flood_.size(), 256u) << "the flood did not reach the descriptor limit";
  // Still flooding: the unhandshaken connections are dropped by the server's handshake timeout.
  bool served = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(25);
  while (!served && std::chrono::steady_clock::now() < deadline) served = Served();
  EXPECT_TRUE(served) << "not served while 300 idle connections were held\n"
                      << testing::ReadFile(dir_ + "/server.log");
  for (int fd : flood_) close(fd);
  flood_.clear();
  EXPECT_TRUE(Served()) << testing::ReadFile(dir_ + "/server.log");
  // And again, with the flood closed at once (the probe's sequence).
  ASSERT_NO_FATAL_FAILURE(Flood(300));
  for (int fd : flood_) close(fd);
  flood_.clear();
  EXPECT_TRUE(Served()) << testing::ReadFile(dir_ + "/server.log");
}

}  // namespace
}  // namespace aobj
