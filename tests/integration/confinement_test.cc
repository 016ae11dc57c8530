// The confined data channel of an embedded server (spec AOBJ-SEC-021, AOBJ-SEC-022;
// ServerOptions::data_isolation): each access key's endpoints live in an aobj-data-worker process
// of their own, and the death of one such process fails only its principal's data channel.
// The attack that motivated it (a peer whose octets abort UCX) is in dead_peer_test.cc.
#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "aobj/client.h"
#include "aobj/server.h"
#include "aobj/status.h"
#include "aobj/store.h"
#include "gtest/gtest.h"

namespace aobj {
namespace {

constexpr char kFirst[] = "AKCONFINEDFIRST";
constexpr char kSecond[] = "AKCONFINEDSECOND";
constexpr size_t kSize = 256 << 10;

// This process's children (the server runs in it), from every thread's list.
std::vector<pid_t> Children() {
  std::vector<pid_t> out;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir("/proc/self/task"), closedir);
  if (!dir) return out;
  while (dirent* e = readdir(dir.get())) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/children");
    for (pid_t child; in >> child;) out.push_back(child);
  }
  return out;
}

std::string CommandOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string s;
  std::getline(in, s);
  return s;
}

std::vector<pid_t> DataWorkers() {
  std::vector<pid_t> out;
  for (pid_t p : Children()) {
    if (CommandOf(p) == "aobj-data-worke") out.push_back(p);  // comm is cut to 15 characters
  }
  return out;
}

class ConfinedServerTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(1); }
  // A server with `workers` data workers (ServerOptions::data_workers), each with processes of
  // its own; the tests above count processes of one.
  void Start(int workers, ServerOptions::DataIsolation isolation =
                              ServerOptions::DataIsolation::kProcessPerPrincipal) {
    if (server_) server_->Shutdown();
    server_.reset();
    ServerOptions o;
    o.data_workers = workers;
    o.listen_address = "127.0.0.1:0";
    o.allow_plaintext = true;
    o.credentials[kFirst] = "first-secret";
    o.credentials[kSecond] = "second-secret";
    for (int i = 0; i < 7; ++i) o.credentials["AKIDLE" + std::to_string(i)] = "idle-secret";
    o.data_isolation = isolation;
    o.data_channel.net_devices = "lo";
    o.data_wait_ms = 2000;
    auto store = NewMemoryStore();
    ASSERT_TRUE(store->CreateBucket("confined").ok());
    auto s = Server::Start(o, std::move(store));
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  std::unique_ptr<Client> Connect(const char* key, const char* secret) {
    ClientOptions o;
    o.endpoint = "127.0.0.1:" + std::to_string(server_->port());
    o.access_key_id = key;
    o.secret = secret;
    auto c = Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // PUT of `fill` octets to `key`, then a GET that must return them.
  static absl::Status RoundTrip(Client& c, const std::string& key, uint8_t fill) {
    auto buf = c.AllocateBuffer(kSize);
    if (!buf.ok()) return buf.status();
    std::memset((*buf)->data(), fill, kSize);
    if (auto put = c.Put("confined", key, **buf, kSize); !put.ok()) return put.status();
    std::memset((*buf)->data(), 0, kSize);
    auto get = c.Get("confined", key, **buf);
    if (!get.ok()) return get.status();
    for (size_t i = 0; i < kSize; ++i) {
      if ((*buf)->data()[i] != fill) return absl::DataLossError("the GET returned other octets");
    }
    return absl::OkStatus();
  }

  std::unique_ptr<Server> server_;
};

// One process per access key with sessions (the first taken from the one started with the
// server); each principal's transfers work through its own.
TEST_F(ConfinedServerTest, EachPrincipalsDataChannelRunsInAProcessOfItsOwn) {
  auto a = Connect(kFirst, "first-secret");
  auto b = Connect(kSecond, "second-secret");
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(RoundTrip(*a, "a", 0x1a).ok());
  ASSERT_TRUE(RoundTrip(*b, "b", 0x2b).ok());
  EXPECT_EQ(DataWorkers().size(), 2u);
  // A second session of a principal shares its process.
  auto a2 = Connect(kFirst, "first-secret");
  ASSERT_TRUE(a2);
  ASSERT_TRUE(RoundTrip(*a2, "a2", 0x3c).ok());
  EXPECT_EQ(DataWorkers().size(), 2u);
  EXPECT_EQ(server_->stats().endpoints, 3u);
  EXPECT_EQ(server_->stats().peer_rma_refused, 0u);
}

// ServerOptions::data_workers: with three, each worker starts a process of its own, one
// principal's sessions spread over them (one each: the worker with the fewest endpoints takes
// the next), and the death of one of those processes fails only the session it held.
TEST_F(ConfinedServerTest, OnePrincipalsSessionsSpreadOverTheDataWorkers) {
  Start(3);
  ASSERT_EQ(DataWorkers().size(), 3u);
  std::vector<std::unique_ptr<Client>> a;
  for (int i = 0; i < 3; ++i) {
    a.push_back(Connect(kFirst, "first-secret"));
    ASSERT_TRUE(a.back());
    ASSERT_TRUE(RoundTrip(*a.back(), "a" + std::to_string(i), static_cast<uint8_t>(0x10 + i)).ok());
  }
  const std::vector<pid_t> first = DataWorkers();  // each holds one of the sessions above
  EXPECT_EQ(first.size(), 3u) << "the three processes started with the server";
  auto b = Connect(kSecond, "second-secret");
  ASSERT_TRUE(b);
  ASSERT_TRUE(RoundTrip(*b, "b", 0x2b).ok());
  ASSERT_EQ(DataWorkers().size(), 4u) << "another principal's process beside the first's";
  EXPECT_EQ(server_->stats().endpoints, 4u);

  // Kill one process of the first principal.
  ASSERT_FALSE(first.empty());
  ASSERT_EQ(kill(first[0], SIGKILL), 0);
  // Reaped by the server (its reader thread), not by us.
  for (int i = 0; i < 200 && kill(first[0], 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int failed = 0, served = 0;
  for (int i = 0; i < 3; ++i) {
    absl::Status st = RoundTrip(*a[i], "after" + std::to_string(i), 0x40);
    if (st.ok()) {
      ++served;
    } else {
      ++failed;
      const ErrorCode code = ErrorCodeOf(st);
      EXPECT_TRUE(code == ErrorCode::kDataChannelUnavailable || code == ErrorCode::kTransferFailed)
          << st;
    }
  }
  EXPECT_EQ(failed, 1) << "only the session of the killed process";
  EXPECT_EQ(served, 2);
  EXPECT_TRUE(RoundTrip(*b, "b-after", 0x2c).ok());
  // The principal's next session is served (by a live process or a fresh one).
  auto again = Connect(kFirst, "first-secret");
  ASSERT_TRUE(again);
  EXPECT_TRUE(RoundTrip(*again, "again", 0x50).ok());
  EXPECT_LT(std::chrono::steady_clock::now(), deadline);
}

// AOBJ-SEC-022: a principal's process that dies fails that principal's data requests
// (DATA_CHANNEL_UNAVAILABLE: it was idle), leaves the other principal's session working, and the
// principal's next session gets a fresh process. The server logs the death.
TEST_F(ConfinedServerTest, ADeadProcessFailsOnlyItsPrincipal) {
  auto a = Connect(kFirst, "first-secret");
  ASSERT_TRUE(a);
  ASSERT_TRUE(RoundTrip(*a, "a", 0x1a).ok());
  const std::vector<pid_t> before = DataWorkers();
  ASSERT_EQ(before.size(), 1u);
  const pid_t a_process = before[0];
  auto b = Connect(kSecond, "second-secret");
  ASSERT_TRUE(b);
  ASSERT_TRUE(RoundTrip(*b, "b", 0x2b).ok());
  ASSERT_EQ(kill(a_process, SIGKILL), 0);
  // Reaped by the server (its reader thread), not by us.
  for (int i = 0; i < 200 && kill(a_process, 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto buf = a->AllocateBuffer(kSize);
  ASSERT_TRUE(buf.ok());
  auto get = a->Get("confined", "a", **buf);
  ASSERT_FALSE(get.ok());
  const ErrorCode code = ErrorCodeOf(get.status());
  EXPECT_TRUE(code == ErrorCode::kDataChannelUnavailable || code == ErrorCode::kTransferFailed)
      << get.status();
  // By gRPC the server says why; on the fast path the client learns it from its endpoint to the
  // dead process, which fails (spec 8.9).
  const std::string why(get.status().message());
  EXPECT_TRUE(why.find("data-channel process ended") != std::string::npos ||
              why.find("data channel failed before the fast-path reply") != std::string::npos)
      << get.status();
  EXPECT_TRUE(RoundTrip(*b, "b2", 0x4d).ok()) << "the other principal lost its data channel";
  auto fresh = Connect(kFirst, "first-secret");
  ASSERT_TRUE(fresh);
  EXPECT_TRUE(RoundTrip(*fresh, "a3", 0x5e).ok());
  const std::vector<pid_t> after = DataWorkers();
  EXPECT_EQ(after.size(), 2u);
  for (pid_t p : after) EXPECT_NE(p, a_process);
}

// Idle principals do not keep the server's memory: a process whose sessions all closed keeps no
// transfer buffer, and at most four such processes stay (issue 15). Seven principals in turn,
// each with one session that moves 2 MiB and closes.
TEST_F(ConfinedServerTest, IdleProcessesAreBounded) {
  for (int i = 0; i < 7; ++i) {
    const std::string key = "AKIDLE" + std::to_string(i);
    auto c = Connect(key.c_str(), "idle-secret");
    ASSERT_TRUE(c);
    ASSERT_TRUE(RoundTrip(*c, key, static_cast<uint8_t>(0x10 + i)).ok());
  }  // each session closed here
  EXPECT_LE(DataWorkers().size(), 4u);
  EXPECT_EQ(server_->stats().endpoints, 0u);
  // A principal whose process ended is served by a new one.
  auto again = Connect("AKIDLE0", "idle-secret");
  ASSERT_TRUE(again);
  EXPECT_TRUE(RoundTrip(*again, "again", 0x77).ok());
}

// What a data-channel process may not do to the server (AOBJ-SEC-021): the server is not
// dumpable (so a process without CAP_SYS_PTRACE cannot ptrace it or use process_vm_writev on
// it), and the process holds no capability and no environment of the server's.
TEST_F(ConfinedServerTest, TheProcessesHoldNothingOfTheServers) {
  auto a = Connect(kFirst, "first-secret");
  ASSERT_TRUE(a);
  ASSERT_TRUE(RoundTrip(*a, "a", 0x1a).ok());
  EXPECT_EQ(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
  const std::vector<pid_t> workers = DataWorkers();
  ASSERT_EQ(workers.size(), 1u);
  std::ifstream status("/proc/" + std::to_string(workers[0]) + "/status");
  std::string line;
  int caps_checked = 0;
  bool no_new_privs = false;
  bool filtered = false;
  while (std::getline(status, line)) {
    // Mode 2: a seccomp filter (no processes, no tracing, no signals but to itself).
    if (line.rfind("Seccomp:", 0) == 0) filtered = line.find('2') != std::string::npos;
    if (line.rfind("CapEff:", 0) == 0 || line.rfind("CapPrm:", 0) == 0) {
      EXPECT_NE(line.find("0000000000000000"), std::string::npos) << line;
      ++caps_checked;
    }
    if (line.rfind("NoNewPrivs:", 0) == 0) no_new_privs = line.find('1') != std::string::npos;
  }
  EXPECT_EQ(caps_checked, 2);
  EXPECT_TRUE(no_new_privs);
  EXPECT_TRUE(filtered);
  // Its environment: only UCX's, the sanitizers' and the loader's variables.
  std::ifstream env_file("/proc/" + std::to_string(workers[0]) + "/environ");
  std::stringstream env;
  env << env_file.rdbuf();
  for (const std::string& var :
       {std::string("HOME="), std::string("AOBJ_"), std::string("GTEST_")}) {
    EXPECT_EQ(env.str().find(var), std::string::npos) << var;
  }
  // Its descriptors: the standard three and its stream to the server, plus what UCX opened.
  std::unique_ptr<DIR, int (*)(DIR*)> fds(
      opendir(("/proc/" + std::to_string(workers[0]) + "/fd").c_str()), closedir);
  ASSERT_TRUE(fds);
  while (dirent* e = readdir(fds.get())) {
    if (e->d_name[0] == '.') continue;
    char target[256] = {};
    const std::string link = "/proc/" + std::to_string(workers[0]) + "/fd/" + e->d_name;
    const ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
    ASSERT_GT(n, 0);
    // Nothing of the server's: no store file, no TCP socket of the control channel.
    EXPECT_EQ(std::string(target).find("/tmp/aobj"), std::string::npos) << target;
  }
}

}  // namespace
}  // namespace aobj
