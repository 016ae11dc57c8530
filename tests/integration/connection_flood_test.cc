// The control listener under a connection flood (issue 16, control-plane probe finding 1): with
// its descriptors exhausted by idle TCP connections, gRPC's own listener used to stop accepting
// for good. A real aobj-server with `ulimit -n 256`, 300 idle connections on loopback.
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "aobj/client.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/churn.h"
#include "integration/raw_http.h"
#include "integration/server_process.h"
#include "integration/still_serves.h"

namespace aobj {
namespace {

// The HTTP/2 preface, an empty SETTINGS frame, the HEADERS of a gRPC call (HPACK: POST, http,
// :path and content-type as literals of static names) and a DATA frame whose gRPC prefix
// promises 16 octets that never come: a connection that escapes the handshake and idle timeouts.
std::string HalfSentCall() {
  const std::string path = "/aobj.v1.ObjectService/HeadBucket";
  std::string block = "\x83\x86";
  block += '\x04';
  block += static_cast<char>(path.size());
  block += path;
  block += std::string("\x0f\x10\x10", 3) + "application/grpc";
  std::string out = std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") +
                    std::string("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9);
  out += std::string("\x00\x00", 2) + static_cast<char>(block.size()) +
         std::string("\x01\x04\x00\x00\x00\x01", 6) + block;
  out += std::string("\x00\x00\x05\x00\x00\x00\x00\x00\x01", 9) +
         std::string("\x00\x00\x00\x00\x10", 5);
  return out;
}

// A TCP connection to 127.0.0.1:port, or -1.
int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

class ConnectionFloodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TestDir();
    const std::string creds = dir_ + "/credentials";
    std::filesystem::create_directories(dir_);
    {
      std::ofstream f(creds);
      f << testing::kAccessKey << " " << testing::kSecret << "\n"
        << "AKTESTSECOND second-secret-for-tests\n";
    }
    chmod(creds.c_str(), 0600);
    const std::string port_file = dir_ + "/port";
    pid_ = testing::Spawn(
        {"/bin/sh", "-c",
         "ulimit -n 256 && exec '" + std::string(AOBJ_SERVER_BINARY) +
             "' --listen 127.0.0.1:0 --port-file '" + port_file + "' --credentials '" + creds +
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
      const int fd = ConnectLoopback(port_);
      if (fd < 0) break;
      flood_.push_back(fd);
    }
  }

  bool Served(const char* key = testing::kAccessKey, const char* secret = testing::kSecret) {
    ClientOptions o;
    o.endpoint = "127.0.0.1:" + std::to_string(port_);
    o.access_key_id = key;
    o.secret = secret;
    o.timeout_ms = 5000;
    auto c = Client::Connect(o);
    const absl::Status st = c.ok() ? (*c)->HeadBucket("test-bucket") : c.status();
    if (!st.ok()) last_failure_ = st.ToString();
    return st.ok();
  }

  // Served(), and when not, why, appended to *failures: a churn test's message says what each
  // client that was not served met.
  bool ServedOrNoted(std::string* failures) {
    const auto start = std::chrono::steady_clock::now();
    if (Served()) return true;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    *failures += "not served after " + std::to_string(ms) + " ms: " + last_failure_ + "\n";
    return false;
  }

  std::string dir_;
  std::string last_failure_;  // of Served()
  pid_t pid_ = -1;
  int port_ = 0;
  std::vector<int> flood_;
};

// Hostile probe of issue 16 (N3): connections that open a gRPC call and never finish its message
// escape both the handshake timeout (the preface came) and the idle timeout (a call is open), and
// used to keep every new client out for as long as they were held. Now, with descriptors short, the
// oldest connection that never carried a signed request is cut to make room: a new client is served
// while the flood is still held.
TEST_F(ConnectionFloodTest, ConnectionsThatNeverAuthenticateAreCutForNewClients) {
  ASSERT_TRUE(Served());
  const std::string preface = HalfSentCall();
  ASSERT_NO_FATAL_FAILURE(Flood(300));
  for (int fd : flood_) (void)!send(fd, preface.data(), preface.size(), MSG_NOSIGNAL);
  EXPECT_GE(flood_.size(), 256u) << "the flood did not reach the descriptor limit";
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // older than the grace
  bool served = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  while (!served && std::chrono::steady_clock::now() < deadline) served = Served();
  EXPECT_TRUE(served) << "not served while 300 half-sent calls were held\n"
                      << testing::ReadFile(dir_ + "/server.log");
  // And once the flood is gone, clients are served as before.
  for (int fd : flood_) close(fd);
  flood_.clear();
  EXPECT_TRUE(Served()) << testing::ReadFile(dir_ + "/server.log");
}

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

// Per-address limit (AOBJ-SEC-012; hostile probe of issue 16, N3: connections that open a stream
// and never finish it are not dropped by the handshake or idle timeouts). With
// --max-connections-per-address 20, of 30 connections from one address 10 are closed at once by
// the server and 20 stay open; once they close, the address is served again.
// Hostile probe of issue 16, second round (F1): at its per-address limit the listener used to
// refuse every new connection, so 1024 half-sent calls from 127.0.0.1 (which every local process
// shares) kept every local client out for as long as they were held. At the limit, a connection
// that never authenticated is now cut to make room.
TEST(ConnectionLimitTest, HalfSentCallsAtTheAddressLimitDoNotKeepClientsOut) {
  testing::ServerProcess server(testing::TestDir(), "memory",
                                {"--max-connections-per-address", "20"});
  ASSERT_TRUE(server.Start()) << server.log();
  const int port = std::stoi(server.endpoint().substr(server.endpoint().rfind(':') + 1));
  const std::string call = HalfSentCall();
  std::vector<int> fds;
  for (int i = 0; i < 24; ++i) {
    const int fd = ConnectLoopback(port);
    ASSERT_GE(fd, 0);
    (void)!send(fd, call.data(), call.size(), MSG_NOSIGNAL);
    fds.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // older than the grace
  ClientOptions o;
  o.endpoint = server.endpoint();
  o.access_key_id = testing::kAccessKey;
  o.secret = testing::kSecret;
  o.timeout_ms = 5000;
  bool served = false;
  for (int attempt = 0; attempt < 3 && !served; ++attempt) {
    auto c = Client::Connect(o);
    served = c.ok() && (*c)->HeadBucket("test-bucket").ok();
  }
  EXPECT_TRUE(served) << "not served while 20 half-sent calls held the address's limit\n"
                      << server.log();
  for (int fd : fds) close(fd);
}

TEST(ConnectionLimitTest, OneAddressHoldsAtMostItsLimit) {
  testing::ServerProcess server(testing::TestDir(), "memory",
                                {"--max-connections-per-address", "20"});
  ASSERT_TRUE(server.Start()) << server.log();
  const int port = std::stoi(server.endpoint().substr(server.endpoint().rfind(':') + 1));
  std::vector<int> fds;
  for (int i = 0; i < 30; ++i) {
    const int fd = ConnectLoopback(port);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
    // One at a time, so that the server has taken each before the next: the order is known.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // A connection the server closed reads end-of-file after whatever it was sent (gRPC's SETTINGS,
  // when it was held before it was cut); one it holds has nothing more to read.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the last cuts take effect
  auto closed = [](int fd) {
    char buf[512];
    for (;;) {
      const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n == 0) return true;
      if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;  // a reset closes it too
    }
  };
  // Past the limit a new connection is refused, or an old one that has not authenticated is cut
  // for it (seventh probe F3: however young): either way 20 stay open.
  int closed_count = 0;
  for (int i = 0; i < 30; ++i) closed_count += closed(fds[i]) ? 1 : 0;
  EXPECT_EQ(closed_count, 10) << "the address held more or fewer than its limit";
  for (int fd : fds) close(fd);
  ClientOptions o;
  o.endpoint = server.endpoint();
  o.access_key_id = testing::kAccessKey;
  o.secret = testing::kSecret;
  o.timeout_ms = 10000;
  bool served = false;
  for (int attempt = 0; attempt < 50 && !served; ++attempt) {
    auto c = Client::Connect(o);
    served = c.ok() && (*c)->HeadBucket("test-bucket").ok();
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(served) << server.log();
}

// Twenty-first hostile probe, L1: unverified connections are a queue as long as the bound on
// them (the listener cuts the oldest for a newcomer once it is full), so a client whose first
// request came slower than the bound's worth of a churn's connections was cut before it. The
// bound's default rose from 1,024 to 4,096 (--max-unauthenticated-connections; spec
// AOBJ-SEC-029): with descriptors to spare, a server started without the option holds 1,500
// idle connections (the HTTP/2 preface sent, older than the second of grace) from 8 addresses,
// none of them at its own limit, and cuts none of them for a newcomer. With the bound at 1,024
// (the option given), the connections beyond it cut older ones, and this test fails.
TEST(ConnectionLimitTest, TheDefaultBoundHoldsFourThousandUnverifiedConnections) {
  // The server takes three descriptors a connection (the guard's relay): 4,096 of them need
  // 3 x 4,096 / (3/4) + 64 = 16,448 (listener.cc, Loop), and this process 1,500 more.
  rlimit fds{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &fds), 0);
  fds.rlim_cur = std::min<rlim_t>(fds.rlim_max, 20000);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &fds), 0);
  if (fds.rlim_cur < 17000) {
    GTEST_SKIP() << "the hard descriptor limit (" << fds.rlim_max
                 << ") leaves the server less room than the default bound needs";
  }
  testing::ServerProcess server(testing::TestDir(), "memory", {});
  ASSERT_TRUE(server.Start()) << server.log();
  const int port = std::stoi(server.endpoint().substr(server.endpoint().rfind(':') + 1));
  const std::string preface = std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") +
                              std::string("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9);
  constexpr int kIdle = 1500;
  std::vector<int> idle;
  for (int i = 0; i < kIdle; ++i) {
    const int fd = testing::ConnectLoopback(port, 2 + i % 8);
    ASSERT_GE(fd, 0) << "connection " << i << ": " << std::strerror(errno);
    (void)!send(fd, preface.data(), preface.size(), MSG_NOSIGNAL);
    idle.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // all past their grace
  // Newcomers of another address, each served.
  ClientOptions o = testing::TestClientOptions(server);
  o.timeout_ms = 10000;
  for (int i = 0; i < 3; ++i) {
    auto c = Client::Connect(o);
    const absl::Status st = c.ok() ? (*c)->HeadBucket("test-bucket") : c.status();
    EXPECT_TRUE(st.ok()) << st << "\n" << server.log();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // cuts, had any been made
  int cut = 0;
  for (int fd : idle) {
    char buf[512];
    for (;;) {
      const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) continue;  // gRPC's SETTINGS and its acknowledgement
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) ++cut;
      break;
    }
    close(fd);
  }
  EXPECT_EQ(cut, 0) << "of " << kIdle
                    << " unverified connections, below the default bound of 4,096, some were "
                       "cut";
}

// Seventh hostile probe, F3, with descriptors short: connections opened from several addresses
// and each held for well under the second of grace left nothing the listener would cut for room
// (no address reached its own limit), and 5 or 6 of 8 clients of another address were refused.
// Now a newcomer from a quiet address (less than half of what the busiest other holds) cuts the
// oldest unauthenticated connection of the busiest other address however young, and may use
// more of the reserve: a client from 127.0.0.1 is served beside a churn from 127.0.0.2-5 (8 of
// 8 here).
TEST_F(ConnectionFloodTest, AChurnFromOtherAddressesDoesNotKeepAClientOut) {
  ASSERT_TRUE(Served());
  constexpr int kTries = 8;
  std::string failures;  // each client's that was not served
  const testing::ChurnResult r = testing::ServedBesideAChurn(
      2, 100,
      [&](size_t i, int t) {
        return testing::ConnectLoopback(port_, 2 + static_cast<int>((i + t) % 4));
      },
      [&] { return ServedOrNoted(&failures); }, kTries);
  std::printf("%d of %d clients served beside %d connections churned from 4 other addresses\n%s",
              r.served, kTries, r.opened, failures.c_str());
  EXPECT_GT(r.opened, 300) << "the churn did not happen: nothing was tested";
  EXPECT_GE(r.served, kTries - 1) << testing::ReadFile(dir_ + "/server.log");
  EXPECT_TRUE(Served());
}

// Eighth hostile probe, N1: idle HTTP/2 connections (the preface and an empty SETTINGS, then
// nothing) from many addresses, each below its own limit, took every descriptor but the reserve's
// last half, where every newcomer was refused (30-77 % of a client's attempts failed, and some
// that got in failed OpenSession for want of descriptors). Now unauthenticated connections from
// all addresses together stay within three quarters of what the descriptors leave room for
// (here (256 - 64) / 3 * 3/4 = 48 connections), and a client of another address is served 8
// times of 8. Before: 248-255 descriptors, and 0 of 8 served. The listener lets a newcomer from
// a quiet address take a descriptor of the reserve's third quarter while the connection cut for
// it closes (MakeRoom), and gRPC closes cut connections on its own threads: on a loaded machine
// (CI, two tests at once) the server held up to 228 descriptors, against 193 here alone. What it
// never gives a connection is the reserve's last quarter, kept for its own work.
TEST_F(ConnectionFloodTest, IdleConnectionsFromManyAddressesLeaveTheReserveToClients) {
  ASSERT_TRUE(Served());
  const std::string preface = std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") +
                              std::string("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9);
  std::atomic<int> most_fds{0};
  std::atomic<bool> watching{true};
  std::thread watcher([&] {  // the server's open descriptors, every 10 ms
    while (watching.load()) {
      int n = 0;
      std::error_code ec;
      for (auto it =
               std::filesystem::directory_iterator("/proc/" + std::to_string(pid_) + "/fd", ec);
           !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
        ++n;
      }
      if (n > most_fds.load()) most_fds = n;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  constexpr int kTries = 8;
  std::string failures;  // each client's that was not served
  const testing::ChurnResult r = testing::ServedBesideAChurn(
      2, 300,
      [&](size_t i, int t) {
        const int fd = testing::ConnectLoopback(port_, 2 + static_cast<int>((i + t) % 8));
        if (fd >= 0) (void)!send(fd, preface.data(), preface.size(), MSG_NOSIGNAL);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // each held 1.5 s
        return fd;
      },
      [&] { return ServedOrNoted(&failures); }, kTries, std::chrono::milliseconds(2500));
  watching = false;
  watcher.join();
  std::printf(
      "%d of %d clients served beside %d idle connections from 8 other addresses; the "
      "server held at most %d descriptors\n%s",
      r.served, kTries, r.opened, most_fds.load(), failures.c_str());
  EXPECT_GT(r.opened, 600) << "the flood did not happen: nothing was tested";
  EXPECT_GE(r.served, kTries - 1) << testing::ReadFile(dir_ + "/server.log");
  EXPECT_LT(most_fds.load(), 256 - 64 / 4) << "connections took the reserve's last quarter";
  EXPECT_TRUE(Served()) << last_failure_ << "\n" << testing::ReadFile(dir_ + "/server.log");
}

// Fifth hostile probe of issue 16, C: each session's endpoint holds a descriptor, and under a
// low descriptor limit one principal's sessions, all within its quota (1024), took every one of
// them: other clients' connections were then refused. Now the session limits are cut to what
// the limit leaves beside the connections' reserve (256 - 192 here), one principal to half of
// that: it is refused with SLOW_DOWN there, and another principal connects and is served.
TEST_F(ConnectionFloodTest, OnePrincipalsSessionsLeaveDescriptorsForOthers) {
  std::vector<std::unique_ptr<Client>> held;
  absl::Status refused;
  for (int i = 0; i < 300 && refused.ok(); ++i) {
    ClientOptions o;
    o.endpoint = "127.0.0.1:" + std::to_string(port_);
    o.access_key_id = testing::kAccessKey;
    o.secret = testing::kSecret;
    o.timeout_ms = 5000;
    o.busy_retries = 0;
    auto c = Client::Connect(o);
    if (!c.ok()) {
      refused = c.status();
      break;
    }
    held.push_back(std::move(*c));
  }
  EXPECT_EQ(ErrorCodeOf(refused), ErrorCode::kSlowDown) << refused;
  EXPECT_GE(held.size(), 8u);
  EXPECT_LE(held.size(), 32u) << "one principal took more than half of the session room";
  EXPECT_TRUE(Served("AKTESTSECOND", "second-secret-for-tests"))
      << testing::ReadFile(dir_ + "/server.log");
  EXPECT_NE(testing::ReadFile(dir_ + "/server.log").find("leaves room for"), std::string::npos);
}

}  // namespace
}  // namespace aobj
