// The data channel under a dead, stalled or crashing peer (spec section 13.7, issue: "The data
// channel under a dead, stalled or hostile peer"): a real client process (aobj-hostile-peer)
// stops progressing its UCX worker, exits or aborts in the middle of a transfer whose RMA needs
// its progress (ordinary heap memory, shared-memory or TCP-only lanes). For each: the request is
// answered within the server's bound, the session's data channel is failed for good, the server
// is idle afterwards (CPU read from /proc), keeps serving a healthy client and stops on SIGTERM
// within 5 s.
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "aobj/client.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/raw_http.h"
#include "integration/raw_session.h"
#include "integration/server_process.h"
#include "integration/still_serves.h"
#include "transport/address_check.h"

namespace aobj {
namespace {

using testing::kAccessKey;
using testing::kSecret;
using testing::ServerProcess;
using testing::Spawn;
using testing::WaitFor;

constexpr int kDataWaitMs = 1500;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// CPU time (user + system) of one process, in clock ticks.
long OwnCpuTicks(pid_t pid) {
  std::string stat = Slurp("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream in(stat.substr(close + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

// The processes a server started (its data-channel processes), from every thread's children.
std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> out;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(task.c_str()), closedir);
  if (!dir) return out;
  while (dirent* e = readdir(dir.get())) {
    if (e->d_name[0] == '.') continue;
    std::istringstream in(Slurp(task + "/" + e->d_name + "/children"));
    for (pid_t child; in >> child;) out.push_back(child);
  }
  return out;
}

// CPU time of a server and of the data-channel processes it runs now: a confined server's UCX
// work happens in those (AOBJ-SEC-021), so an idle server means all of them idle.
long CpuTicks(pid_t pid) {
  long total = OwnCpuTicks(pid);
  if (total < 0) return total;
  for (pid_t child : ChildrenOf(pid)) total += std::max(0L, OwnCpuTicks(child));
  return total;
}

struct PeerRun {
  int status = -1;  // wait status, -1 on timeout
  std::string out;
};

// One reply line of the peer: "reply N code=NAME ms=ELAPSED message=...".
struct PeerReply {
  std::string code;
  long ms = -1;
};

PeerReply ReplyOf(const std::string& out, int n) {
  std::smatch m;
  const std::regex re("reply " + std::to_string(n) + " code=([A-Z_]+) ms=([0-9]+)");
  if (!std::regex_search(out, m, re)) return {};
  return {m[1].str(), std::stol(m[2].str())};
}

// A service on 127.0.0.1 that speaks first in another protocol: every connection it accepts gets
// the SETTINGS frame an HTTP/2 server opens with, and is then held open until the listener goes.
// Read as a UCX tcp header, those octets announce a 266,752-octet message (issue 15's finding).
// The server's own control port spoke first like this when gRPC accepted connections itself; the
// HTTP/2 guard in front of it may now close a peer that sends no HTTP/2 preface before gRPC's
// SETTINGS reach it, which made an attack aimed there a race (stop 47's CI).
class SpeaksFirstListener {
 public:
  SpeaksFirstListener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        listen(fd_, 64) != 0 || getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      return;
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~SpeaksFirstListener() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (int c : accepted_) close(c);
    if (fd_ >= 0) close(fd_);
  }
  int port() const { return port_; }  // 0 when the listener could not be set up
  int accepted() const { return count_.load(); }

 private:
  void Serve() {
    // A SETTINGS frame with three settings (18 octets), as an HTTP/2 server's preface.
    static const unsigned char kSettings[] = {0x00, 0x00, 0x12, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00,
                                              0x00, 0x03, 0x00, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00,
                                              0x00, 0x40, 0x00, 0x00, 0x06, 0x00, 0x00, 0x40, 0x00};
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      (void)send(c, kSettings, sizeof(kSettings), MSG_NOSIGNAL);
      accepted_.push_back(c);
      ++count_;
    }
  }
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> count_{0};
  std::vector<int> accepted_;  // only the serving thread touches it until it is joined
  std::thread thread_;
};

class DeadPeerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TestDir();
    server_ = std::make_unique<ServerProcess>(
        dir_, "memory",
        std::vector<std::string>{"--data-wait-ms", std::to_string(kDataWaitMs), "--lease-ms",
                                 "4000"});
    ASSERT_TRUE(server_->Start()) << server_->log();
  }
  void TearDown() override {
    if (server_) {
      EXPECT_TRUE(server_->Alive()) << "the server died:\n" << server_->log();
      server_->Stop();
    }
  }

  std::vector<std::string> PeerArgs(const std::vector<std::string>& extra) const {
    std::vector<std::string> argv = {AOBJ_HOSTILE_PEER_BINARY, "--endpoint",
                                     server_->endpoint(),      "--access-key",
                                     kAccessKey,               "--secret",
                                     kSecret};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }

  // Runs the peer to its end (it exits by itself in every behaviour).
  // `tls` and `alloc` set the peer's UCX_TLS and UCX_ALLOC_PRIO when not empty.
  // `during`, when given, runs on a thread of its own while the peer runs, with the path of the
  // peer's output.
  PeerRun RunPeer(const std::vector<std::string>& extra, const std::string& tls = "",
                  const std::string& alloc = "",
                  const std::function<void(const std::string&)>& during = nullptr) {
    const std::string out = dir_ + "/peer-" + std::to_string(++runs_) + ".out";
    if (!tls.empty()) setenv("UCX_TLS", tls.c_str(), 1);
    if (!alloc.empty()) setenv("UCX_ALLOC_PRIO", alloc.c_str(), 1);
    const pid_t pid = Spawn(PeerArgs(extra), out);
    if (!tls.empty()) unsetenv("UCX_TLS");
    if (!alloc.empty()) unsetenv("UCX_ALLOC_PRIO");
    PeerRun r;
    if (pid < 0) return r;
    std::thread watcher;
    if (during) watcher = std::thread([&during, out] { during(out); });
    r.status = WaitFor(pid, std::chrono::seconds(40));
    if (watcher.joinable()) watcher.join();
    if (r.status == -1) {
      kill(pid, SIGKILL);
      WaitFor(pid, std::chrono::seconds(5));
    }
    r.out = Slurp(out);
    return r;
  }

  // The object GETs read.
  void PutObject(const std::string& key, size_t size) {
    auto c = Client::Connect(testing::TestClientOptions(*server_));
    ASSERT_TRUE(c.ok()) << c.status();
    auto buf = (*c)->AllocateBuffer(size);
    ASSERT_TRUE(buf.ok());
    memset((*buf)->data(), 0x33, size);
    ASSERT_TRUE((*c)->Put("test-bucket", key, **buf, size).ok());
  }

  // Spec 13.5 (implementation note): an idle server uses no CPU, whatever happened before. Less
  // than a tenth of a core over two seconds (a server spinning on a dead peer uses a whole one).
  void ExpectIdle() {
    const long a = CpuTicks(server_->pid());
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const long b = CpuTicks(server_->pid());
    const long hz = sysconf(_SC_CLK_TCK);
    EXPECT_LT(b - a, hz * 2 / 10) << "the server used " << (b - a) << " ticks in 2 s while idle";
  }

  // AOBJ-OPS-009: SIGTERM stops the server within 5 s.
  void ExpectStopsOnSigterm() {
    ASSERT_TRUE(server_->Alive());
    const auto start = std::chrono::steady_clock::now();
    server_->Kill(SIGTERM);  // waits up to 20 s for the exit
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_LT(took, std::chrono::seconds(5)) << server_->log();
    server_.reset();
  }

  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
  int runs_ = 0;
};

// ---- a peer that stops progressing ------------------------------------------------------------

struct StallCase {
  std::string name;
  std::string op;      // put | get
  std::string tls;     // client's UCX_TLS; empty = every transport
  std::string memory = "heap";  // heap | ucx
  std::string alloc;            // the peer's UCX_ALLOC_PRIO (md:posix: posix segments)
};

// Printed as its name, so that the test's ctest name is stable (it carried the case's bytes,
// heap addresses among them, and ctest's timing history could not follow it from run to run).
void PrintTo(const StallCase& c, std::ostream* os) { *os << c.name; }

class StalledPeerTest : public DeadPeerTest, public ::testing::WithParamInterface<StallCase> {};

// AOBJ-OPS-008, AOBJ-DAT-157, AOBJ-DAT-158: the request fails TRANSFER_FAILED within the bound,
// the session's later data requests get DATA_CHANNEL_UNAVAILABLE at once, and nothing spins.
TEST_P(StalledPeerTest, FailsWithinTheBoundThenTheChannelStaysFailed) {
  const StallCase& c = GetParam();
  if (c.op == "get") {
    ASSERT_NO_FATAL_FAILURE(PutObject("hostile", 64 << 20));
  }
  // Spec 13.5 (implementation note) while the request waits on the stalled peer, not only
  // afterwards: from 300 ms after the peer sends it to 1100 ms (the bound is 1500 ms), the server
  // uses less than a quarter of a core (one spinning on the peer used 65 % of one, issue finding
  // 1).
  long stall_ticks = -1;
  auto measure = [this, &stall_ticks](const std::string& out) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (Slurp(out).find("request 1 sending") == std::string::npos) {
      if (std::chrono::steady_clock::now() > give_up) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const long a = CpuTicks(server_->pid());
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    if (Slurp(out).find("reply 1 ") != std::string::npos) return;  // not a stall throughout
    stall_ticks = CpuTicks(server_->pid()) - a;
  };
  PeerRun r = RunPeer({"--behaviour", "stall", "--memory", c.memory, "--op", c.op, "--second"},
                      c.tls, c.alloc, measure);
  ASSERT_NE(r.status, -1) << "the peer never got its replies:\n" << r.out << server_->log();
  ASSERT_NE(stall_ticks, -1) << "the window did not fall inside the stall:\n" << r.out;
  EXPECT_LT(stall_ticks, sysconf(_SC_CLK_TCK) * 8 / 10 / 4)
      << "the server used " << stall_ticks << " ticks in 0.8 s while it waited on the peer";
  const PeerReply first = ReplyOf(r.out, 1);
  EXPECT_EQ(first.code, "TRANSFER_FAILED") << r.out;
  EXPECT_GE(first.ms, kDataWaitMs - 100) << r.out;
  EXPECT_LT(first.ms, kDataWaitMs + 5000) << r.out;  // the bound plus a busy machine's slack
  const PeerReply second = ReplyOf(r.out, 2);
  EXPECT_EQ(second.code, "DATA_CHANNEL_UNAVAILABLE") << r.out;
  EXPECT_LT(second.ms, 2000) << r.out;
  ExpectIdle();
  testing::ExpectStillServes(*server_, "after-stall", 0x17);
  ExpectStopsOnSigterm();
}

INSTANTIATE_TEST_SUITE_P(Lanes, StalledPeerTest,
                         ::testing::Values(StallCase{"PutAllLanes", "put", ""},
                                           StallCase{"GetAllLanes", "get", ""},
                                           StallCase{"PutTcpOnly", "put", "tcp"},
                                           StallCase{"GetTcpOnly", "get", "tcp"},
                                           // Posix segments, which the server reaches through the
                                           // peer's progress (interop finding S2's memory kind).
                                           StallCase{"PutPosix", "put", "", "ucx", "md:posix"},
                                           StallCase{"GetPosix", "get", "", "ucx", "md:posix"}),
                         [](const ::testing::TestParamInfo<StallCase>& i) { return i.param.name; });

// ---- a peer that dies mid-transfer ------------------------------------------------------------

struct DeathCase {
  std::string name;
  std::string behaviour;  // exit | stall-exit | crash
  std::string op;
  std::string memory;     // heap | ucx
  std::string alloc;      // the peer's UCX_ALLOC_PRIO (md:posix: posix segments)
};

void PrintTo(const DeathCase& c, std::ostream* os) { *os << c.name; }  // as StallCase

class DyingPeerTest : public DeadPeerTest, public ::testing::WithParamInterface<DeathCase> {};

// The peer is gone before its request ends: the server ends the request within its bound or by
// peer-failure detection, releases the session at its lease, is idle and keeps serving.
TEST_P(DyingPeerTest, ServerEndsTheRequestIsIdleAndKeepsServing) {
  const DeathCase& c = GetParam();
  if (c.op == "get") {
    ASSERT_NO_FATAL_FAILURE(PutObject("hostile", 256 << 20));
  }
  PeerRun r = RunPeer({"--behaviour", c.behaviour, "--memory", c.memory, "--op", c.op, "--size",
                       std::to_string(256 << 20), "--after-ms", "5"},
                      "", c.alloc);
  ASSERT_NE(r.status, -1) << r.out;
  // A peer that exits while its request runs never reads the reply.
  EXPECT_EQ(ReplyOf(r.out, 1).code, "") << "the peer was meant to die first:\n" << r.out;
  // The request ends (answered into the void) and the lease releases the session.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline &&
         server_->log().find("event=endpoint_released") == std::string::npos) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(server_->log().find("event=endpoint_released"), std::string::npos) << server_->log();
  ExpectIdle();
  testing::ExpectStillServes(*server_, "after-death", 0x29);
  ExpectStopsOnSigterm();
}

INSTANTIATE_TEST_SUITE_P(
    Deaths, DyingPeerTest,
    ::testing::Values(DeathCase{"ExitDuringPut", "exit", "put", "heap"},
                      DeathCase{"ExitDuringGet", "exit", "get", "heap"},
                      DeathCase{"StallThenExitDuringPut", "stall-exit", "put", "heap"},
                      DeathCase{"CrashDuringPut", "crash", "put", "heap"},
                      DeathCase{"CrashDuringGet", "crash", "get", "heap"},
                      DeathCase{"ExitDuringSharedMemoryPut", "exit", "put", "ucx"},
                      DeathCase{"ExitDuringPosixPut", "exit", "put", "ucx", "md:posix"},
                      DeathCase{"StallThenExitDuringPosixGet", "stall-exit", "get", "ucx",
                                "md:posix"},
                      DeathCase{"CrashDuringPosixGet", "crash", "get", "ucx", "md:posix"}),
    [](const ::testing::TestParamInfo<DeathCase>& i) { return i.param.name; });

// ---- windows outside what the peer registered ---------------------------------------------------

struct OutsideCase {
  std::string name;
  std::string op;     // put | get
  std::string alloc;  // the peer's UCX_ALLOC_PRIO: where its registered memory comes from
  std::string window = "heap";  // heap: outside the registration; registered: inside it
  std::string want = "DESCRIPTOR_OUT_OF_BOUNDS";
};

void PrintTo(const OutsideCase& c, std::ostream* os) { *os << c.name; }  // as StallCase

class OutsideWindowTest : public DeadPeerTest, public ::testing::WithParamInterface<OutsideCase> {};

// Interop finding S2 (issue 15): a window in heap the peer never registered, described with the
// rkey of memory it did register. With System V memory the server maps the segment and checks the
// window against it; with posix memory (reached by emulation) against the segment the key
// declares. Either way DESCRIPTOR_OUT_OF_BOUNDS before any RMA (AOBJ-MEM-012), nothing written
// into the heap (GET), nothing stored (PUT); the server still serves, is idle and stops on
// SIGTERM. The same memory with the window inside it still moves the object (the check bounds,
// it does not refuse the memory kind).
TEST_P(OutsideWindowTest, WindowOutsideTheRegistrationFailsAndMovesNothing) {
  const OutsideCase& c = GetParam();
  if (c.op == "get") {
    ASSERT_NO_FATAL_FAILURE(PutObject("hostile", 1 << 20));
  }
  PeerRun r = RunPeer({"--behaviour", "healthy", "--memory", "ucx", "--op", c.op, "--size",
                       std::to_string(1 << 20), "--window", c.window},
                      "", c.alloc);
  ASSERT_NE(r.status, -1) << r.out;
  EXPECT_EQ(ReplyOf(r.out, 1).code, c.want) << r.out;
  if (c.want == "OK") {
    // nothing more to check: the reply's checksum covered the octets
  } else if (c.op == "get") {
    EXPECT_NE(r.out.find("outside=untouched"), std::string::npos) << r.out;
  } else {
    auto client = Client::Connect(testing::TestClientOptions(*server_));
    ASSERT_TRUE(client.ok()) << client.status();
    EXPECT_EQ(ErrorCodeOf((*client)->Head("test-bucket", "hostile").status()),
              ErrorCode::kNoSuchKey);
  }
  testing::ExpectStillServes(*server_, "after-outside", 0x31);
  ExpectIdle();
  ExpectStopsOnSigterm();
}

INSTANTIATE_TEST_SUITE_P(
    Allocators, OutsideWindowTest,
    ::testing::Values(OutsideCase{"PosixGet", "get", "md:posix"},
                      OutsideCase{"PosixPut", "put", "md:posix"},
                      OutsideCase{"SysvGet", "get", "md:sysv"},
                      OutsideCase{"SysvPut", "put", "md:sysv"},
                      OutsideCase{"PosixInsideGet", "get", "md:posix", "registered", "OK"},
                      OutsideCase{"PosixInsidePut", "put", "md:posix", "registered", "OK"}),
    [](const ::testing::TestParamInfo<OutsideCase>& i) { return i.param.name; });

// ---- the randomized kill run -------------------------------------------------------------------

int CountOf(const std::string& log, const std::string& what) {
  int n = 0;
  for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
  return n;
}

// Issue 15: a client SIGKILLed at a random point of a GET, PUT, ranged GET or multipart upload,
// from System V, posix or ordinary memory, over every lane or TCP only. Afterwards every session
// has been released by its lease, the server is idle, every object written is whole or absent,
// it still serves and it stops on SIGTERM within 5 s. CI runs 8 iterations; the documented run
// (docs/security.md) is AOBJ_KILL_ITERATIONS=100, and AOBJ_KILL_SEED repeats a run.
TEST_F(DeadPeerTest, RandomKillsLeaveNothingTornAndTheServerHealthy) {
  const char* n_env = std::getenv("AOBJ_KILL_ITERATIONS");
  const char* seed_env = std::getenv("AOBJ_KILL_SEED");
  const int iterations = n_env != nullptr ? std::atoi(n_env) : 8;
  const unsigned seed = seed_env != nullptr ? static_cast<unsigned>(std::strtoul(seed_env, nullptr, 10))
                                            : std::random_device{}();
  RecordProperty("seed", std::to_string(seed));
  constexpr uint64_t kSize = 32 << 20;
  ASSERT_NO_FATAL_FAILURE(PutObject("kill-source", kSize));
  struct Memory {
    const char* kind;   // --memory
    const char* alloc;  // UCX_ALLOC_PRIO ("" = UCX's default, System V here)
  };
  const std::vector<std::string> ops = {"put", "get", "range", "multipart"};
  const std::vector<Memory> memories = {{"ucx", ""}, {"ucx", "md:posix"}, {"heap", ""}};
  const std::vector<std::string> lanes = {"", "tcp"};
  std::mt19937 rng(seed);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  std::vector<std::string> written;  // keys a killed PUT or upload may have left
  int finished = 0, mid_request = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) {
    const std::string op = ops[pick(ops.size())];
    const Memory mem = memories[pick(memories.size())];
    const std::string tls = lanes[pick(lanes.size())];
    const int delay_ms = std::uniform_int_distribution<int>(40, 280)(rng);
    const bool writes = op == "put" || op == "multipart";
    const std::string key = writes ? "kill-" + std::to_string(i) : "kill-source";
    if (writes) written.push_back(key);
    const std::string out = dir_ + "/kill-" + std::to_string(i) + ".out";
    if (!tls.empty()) setenv("UCX_TLS", tls.c_str(), 1);
    if (*mem.alloc != '\0') setenv("UCX_ALLOC_PRIO", mem.alloc, 1);
    const pid_t pid = Spawn(PeerArgs({"--behaviour", "healthy", "--memory", mem.kind, "--op", op,
                                      "--size", std::to_string(kSize), "--key", key}),
                            out);
    unsetenv("UCX_TLS");
    unsetenv("UCX_ALLOC_PRIO");
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(pid, SIGKILL);
    ASSERT_NE(WaitFor(pid, std::chrono::seconds(10)), -1);
    const std::string said = Slurp(out);
    if (!ReplyOf(said, 1).code.empty()) {
      ++finished;
    } else if (said.find("opened session=") != std::string::npos) {
      ++mid_request;  // the session was open: killed during the request (or its confirmation)
    }
    ASSERT_TRUE(server_->Alive()) << "iteration " << i << " (" << op << ", " << mem.kind << " "
                                  << mem.alloc << ", lanes " << (tls.empty() ? "all" : tls)
                                  << ", kill after " << delay_ms << " ms, seed " << seed
                                  << ") killed the server:\n"
                                  << server_->log();
  }
  // Every session a killed peer left ends by its lease (4 s here) and releases its endpoint.
  auto open_sessions = [&] {
    const std::string log = server_->log();
    return CountOf(log, "event=session_opened") - CountOf(log, "event=session_closed") -
           CountOf(log, "event=endpoint_released");
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (open_sessions() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double released_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(open_sessions(), 0) << server_->log();
  ExpectIdle();
  // A PUT or an upload is whole or absent (AOBJ-OBJ-011): never a prefix, never a mix.
  auto c = Client::Connect(testing::TestClientOptions(*server_));
  ASSERT_TRUE(c.ok()) << c.status();
  auto buf = (*c)->AllocateBuffer(kSize);
  ASSERT_TRUE(buf.ok());
  int whole = 0;
  for (const std::string& key : written) {
    auto head = (*c)->Head("test-bucket", key);
    if (!head.ok()) {
      EXPECT_EQ(ErrorCodeOf(head.status()), ErrorCode::kNoSuchKey) << key << ": " << head.status();
      continue;
    }
    ASSERT_EQ(head->size, kSize) << key;
    std::memset((*buf)->data(), 0, kSize);
    ASSERT_TRUE((*c)->Get("test-bucket", key, **buf).ok()) << key;
    const uint8_t* d = static_cast<const uint8_t*>((*buf)->data());
    EXPECT_TRUE(std::all_of(d, d + kSize, [](uint8_t b) { return b == 0x5a; })) << key;
    ++whole;
  }
  std::cout << "kill run: seed " << seed << ", " << iterations << " kills: " << mid_request
            << " with the session open and no reply yet, " << finished << " after the reply, " << whole << " of " << written.size()
            << " written keys whole (the rest absent), every session released "
            << released_s << " s after the first kill\n";
  testing::ExpectStillServes(*server_, "after-kills", 0x41);
  ExpectStopsOnSigterm();
}

// ---- a healthy client beside stalled ones -------------------------------------------------------

// The bar: a healthy client beside hostile peers keeps at least half its undisturbed
// throughput (before the bounds, the server's progress thread spun on a dead transfer and took
// one of this machine's two cores). Counted as 1 MiB GETs in a fixed window, best of three tries
// (the machine is shared and noisy); not a speed target, a check that nothing spins or blocks.
// Each case starts two peers of one behaviour and measures while they misbehave.
struct BesideCase {
  std::string name;
  std::vector<std::string> args;  // the peers' arguments (each gets its own --key)
  std::string tls;                // the peers' UCX_TLS; empty = every transport
  bool needs_object = false;      // GET peers read an object of 64 MiB
  std::string alloc;              // the peers' UCX_ALLOC_PRIO (md:posix: posix segments)
};

// Printed as its name, so that the test's ctest name is stable (tests/serial_tests.cmake names it).
void PrintTo(const BesideCase& c, std::ostream* os) { *os << c.name; }

class BesidePeersTest : public DeadPeerTest, public ::testing::WithParamInterface<BesideCase> {};

TEST_P(BesidePeersTest, HealthyClientKeepsHalfItsThroughput) {
  const BesideCase& bc = GetParam();
  server_->Stop();
  server_ = std::make_unique<ServerProcess>(dir_, "memory");  // the default 10 s bound
  ASSERT_TRUE(server_->Start()) << server_->log();
  constexpr size_t kPeerObject = 64 << 20;
  if (bc.needs_object) {
    for (int i = 0; i < 2; ++i) {
      ASSERT_NO_FATAL_FAILURE(PutObject("hostile-" + std::to_string(i), kPeerObject));
    }
  }
  auto c = Client::Connect(testing::TestClientOptions(*server_));
  ASSERT_TRUE(c.ok()) << c.status();
  constexpr size_t kSize = 1 << 20;
  auto buf = (*c)->AllocateBuffer(kSize);
  ASSERT_TRUE(buf.ok());
  memset((*buf)->data(), 0x61, kSize);
  ASSERT_TRUE((*c)->Put("test-bucket", "healthy", **buf, kSize).ok());
  auto gets_in = [&](std::chrono::milliseconds window) {
    int n = 0;
    const auto end = std::chrono::steady_clock::now() + window;
    while (std::chrono::steady_clock::now() < end) {
      if (!(*c)->Get("test-bucket", "healthy", **buf).ok()) return -1;
      ++n;
    }
    return n;
  };
  double best = 0;
  for (int attempt = 0; attempt < 3 && best < 0.5; ++attempt) {
    const int alone = gets_in(std::chrono::milliseconds(700));
    ASSERT_GT(alone, 0);
    std::vector<pid_t> peers;
    std::vector<std::string> outs;
    if (!bc.tls.empty()) setenv("UCX_TLS", bc.tls.c_str(), 1);
    if (!bc.alloc.empty()) setenv("UCX_ALLOC_PRIO", bc.alloc.c_str(), 1);
    for (int i = 0; i < 2; ++i) {
      outs.push_back(dir_ + "/beside-" + std::to_string(attempt) + "-" + std::to_string(i));
      std::vector<std::string> args = bc.args;

      args.insert(args.end(), {"--key", "hostile-" + std::to_string(i), "--size",
                               std::to_string(kPeerObject)});
      peers.push_back(Spawn(PeerArgs(args), outs.back()));
    }
    if (!bc.tls.empty()) unsetenv("UCX_TLS");
    if (!bc.alloc.empty()) unsetenv("UCX_ALLOC_PRIO");
    for (const std::string& out : outs) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (std::chrono::steady_clock::now() < until &&
             Slurp(out).find("opened") == std::string::npos) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // their requests are under way
    const int beside = gets_in(std::chrono::milliseconds(700));
    ASSERT_GE(beside, 0) << "a healthy GET failed beside the hostile peers";
    for (pid_t p : peers) {
      kill(p, SIGKILL);
      WaitFor(p, std::chrono::seconds(5));
    }
    best = std::max(best, static_cast<double>(beside) / alone);
    std::printf("%s: %d 1 MiB GETs alone, %d beside the peers in 700 ms\n", bc.name.c_str(),
                alone, beside);
  }
  RecordProperty("throughput_ratio_beside_hostile_peers", std::to_string(best));
  EXPECT_GE(best, 0.5) << "healthy GETs beside two hostile peers (" << bc.name
                       << ") fell below half";
}

INSTANTIATE_TEST_SUITE_P(
    Behaviours, BesidePeersTest,
    ::testing::Values(
        BesideCase{"StalledHeapPuts", {"--behaviour", "stall", "--memory", "heap", "--op", "put"}},
        BesideCase{"StalledTcpGets", {"--behaviour", "stall", "--op", "get"}, "tcp", true},
        BesideCase{"CrashingPuts",
                   {"--behaviour", "crash", "--memory", "heap", "--op", "put", "--after-ms", "50"}},
        BesideCase{"ExitingGets",
                   {"--behaviour", "exit", "--memory", "heap", "--op", "get", "--after-ms", "50"},
                   "",
                   true},
        BesideCase{"OutsideWindowGets", {"--window", "heap", "--op", "get"}, "", true},
        BesideCase{
            "StalledTcpPuts", {"--behaviour", "stall", "--memory", "heap", "--op", "put"}, "tcp"},
        BesideCase{"StalledPosixGets",
                   {"--behaviour", "stall", "--memory", "ucx", "--op", "get"},
                   "",
                   true,
                   "md:posix"}),
    [](const ::testing::TestParamInfo<BesideCase>& i) { return i.param.name; });

// ---- fairness between principals (issue 16, control-plane probe finding 5) ---------------------

// ---- a peer that writes UCX's wire format against the server (AOBJ-SEC-021) ---------------------

// Issue 15's critical finding: UCX 1.13.1 asserts on a tcp header longer than its receive segment
// and aborts the process. A client whose worker address names, as its tcp port, a service that
// speaks first in another protocol (it was the server's own gRPC port; here a SpeaksFirstListener)
// made the server's worker read HTTP/2 octets as a UCX header and aborted aobj-server for every
// tenant. Confined, the abort ends
// only the attacker's data-channel process: the attacker's request fails, another principal's
// session opened before the attack keeps moving data, the server keeps serving, and the
// attacker's next session gets a fresh process.
TEST_F(DeadPeerTest, APeerThatAbortsItsDataChannelProcessHarmsNoOneElse) {
  ASSERT_NO_FATAL_FAILURE(PutObject("shared", 1 << 20));
  ClientOptions o = testing::TestClientOptions(*server_);
  o.access_key_id = "AKTESTSECOND";
  o.secret = "second-secret-for-tests";
  auto other = Client::Connect(o);
  ASSERT_TRUE(other.ok()) << other.status();
  auto buf = (*other)->AllocateBuffer(1 << 20);
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE((*other)->Get("test-bucket", "shared", **buf).ok());
  SpeaksFirstListener foreign;
  ASSERT_NE(foreign.port(), 0) << "no loopback listener for the foreign service";
  const std::string foreign_port = std::to_string(foreign.port());
  PeerRun attack = RunPeer({"--op", "get", "--key", "shared", "--size", std::to_string(1 << 20),
                            "--behaviour", "healthy", "--tcp-port", foreign_port},
                           "tcp");
  ASSERT_NE(attack.status, -1) << attack.out << server_->log();
  EXPECT_NE(attack.out.find("now name port " + foreign_port), std::string::npos) << attack.out;
  // The process aborts when the foreign octets arrive, which may be after the attacker's
  // requests were answered; the server logs the end when it happens.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (server_->log().find("event=data_channel_process_ended") == std::string::npos &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(server_->Alive()) << "the attacker aborted the server:\n" << server_->log();
  EXPECT_NE(server_->log().find("killed by signal 6 (SIGABRT)"), std::string::npos)
      << "the attack did not reach UCX's assertion (nothing was tested; the foreign service "
      << "accepted " << foreign.accepted() << " connections):\n"
      << attack.out << server_->log();
  EXPECT_EQ(attack.out.find("code=OK"), std::string::npos) << attack.out;
  // The other tenant's session, opened before, in a process the attack never reached.
  std::memset((*buf)->data(), 0, 1 << 20);
  auto get = (*other)->Get("test-bucket", "shared", **buf);
  ASSERT_TRUE(get.ok()) << get.status() << server_->log();
  EXPECT_EQ((*buf)->data()[(1 << 20) - 1], 0x33);
  // The attacker's principal is served again, by a fresh process.
  PeerRun again = RunPeer({"--op", "get", "--key", "shared", "--size", std::to_string(1 << 20),
                           "--behaviour", "healthy"});
  EXPECT_EQ(ReplyOf(again.out, 1).code, "OK") << again.out << server_->log();
  testing::ExpectStillServes(*server_, "after-abort", 0x61);
  ExpectIdle();
  ExpectStopsOnSigterm();
}

// AOBJ-TRN-003, AOBJ-TRN-011 (issue 15: error mode NONE everywhere meant a dead peer was never
// noticed): a client that dies while idle, its session open, is found over its mode-PEER lanes
// (here its TCP connections closing) long before the session's lease would end, and the
// session's data channel is failed at once (Table 4; aobj_data_channels_failed_total). A peer
// that vanishes without closing its connections is found by keepalive instead (every 5 s,
// --keepalive-ms), which a loopback test cannot stage.
TEST_F(DeadPeerTest, AnIdlePeerThatDiesIsFoundLongBeforeItsLeaseEnds) {
  server_->Stop();
  dir_ = testing::TestDir();
  server_ = std::make_unique<ServerProcess>(
      dir_, "memory",
      std::vector<std::string>{"--lease-ms", "120000", "--metrics-listen", "127.0.0.1:0",
                               "--metrics-port-file", dir_ + "/metrics-port"});
  ASSERT_TRUE(server_->Start()) << server_->log();
  int metrics_port = 0;
  for (int i = 0; i < 200 && metrics_port == 0; ++i) {
    const std::string p = testing::ReadFile(dir_ + "/metrics-port");
    if (!p.empty() && p.back() == '\n')
      metrics_port = std::stoi(p);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_NE(metrics_port, 0) << server_->log();
  auto metric = [&](const std::string& name) -> long {
    const std::string page = testing::RawHttp(metrics_port, "GET /metrics HTTP/1.0\r\n\r\n");
    std::smatch m;
    if (!std::regex_search(page, m, std::regex("\n" + name + " ([0-9]+)"))) return -1;
    return std::stol(m[1].str());
  };
  ASSERT_EQ(metric("aobj_data_channels_failed_total"), 0);
  ASSERT_NO_FATAL_FAILURE(PutObject("idle", 1 << 20));
  PeerRun r = RunPeer({"--behaviour", "healthy", "--memory", "ucx", "--op", "get", "--key", "idle",
                       "--size", std::to_string(1 << 20)},
                      "tcp");
  ASSERT_NE(r.status, -1) << r.out;
  ASSERT_EQ(ReplyOf(r.out, 1).code, "OK") << r.out;
  // The peer exited after its reply without closing its session.
  const auto died = std::chrono::steady_clock::now();
  long failed = 0;  // the value read, not a second scrape (a slow process counts nothing in one)
  while ((failed = metric("aobj_data_channels_failed_total")) < 1 &&
         std::chrono::steady_clock::now() - died < std::chrono::seconds(15)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const auto found = std::chrono::steady_clock::now() - died;
  EXPECT_EQ(failed, 1) << server_->log();
  EXPECT_LT(found, std::chrono::seconds(15)) << "the dead peer was not found (the lease is 120 s)";
  // Found, not expired: the session itself waits for its lease.
  EXPECT_EQ(metric("aobj_sessions_open"), 1);
  ExpectIdle();
  ExpectStopsOnSigterm();
}

// A peer process whose worker address names, in part or whole, another live client (here a
// session of another principal in this test process): the server's challenges land in the other
// client, which ignores a session it did not open, so the peer cannot prove its endpoint and no
// byte moves by RMA. The other client goes on moving data, and the server stays healthy, idle
// and stoppable. `naming` gives the peer's arguments that name the other client.
class NamingPeerTest : public DeadPeerTest {
 protected:
  void Run(const std::function<std::vector<std::string>(testing::RawSession&)>& naming) {
    constexpr size_t kSize = 1 << 20;
    ASSERT_NO_FATAL_FAILURE(PutObject("shared", kSize));
    testing::RawSession victim(server_->endpoint(), "AKTESTSECOND", "second-secret-for-tests");
    ASSERT_TRUE(victim.Open().status.ok());
    std::vector<std::string> names = naming(victim);
    if (names.empty()) GTEST_SKIP() << "nothing to name on this machine's transports";
    auto mem = victim.Allocate(kSize);
    std::memset(mem->data(), 0x11, kSize);

    std::vector<std::string> args = {
        "--op",        "get",     "--key",    "shared", "--size", std::to_string(kSize),
        "--behaviour", "healthy", "--memory", "ucx"};
    args.insert(args.end(), names.begin(), names.end());
    PeerRun attack = RunPeer(args);
    ASSERT_NE(attack.status, -1) << attack.out << server_->log();
    ASSERT_NE(attack.out.find("opened session="), std::string::npos)
        << "the server refused the address (nothing was tested):\n"
        << attack.out;
    EXPECT_NE(attack.out.find("unconfirmed:"), std::string::npos)
        << "every challenge reached the attacker, so the server never used what it named:\n"
        << attack.out;
    EXPECT_EQ(ReplyOf(attack.out, 1).code, "ENDPOINT_UNCONFIRMED") << attack.out;
    // Nothing reached the other client's memory, and its session serves as before.
    for (size_t i = 0; i < kSize; ++i) {
      ASSERT_EQ(mem->data()[i], 0x11) << "octet " << i << " of the other client changed";
    }
    RawReply get = victim.Send(Method::kGetObject, victim.GetRequest("shared", *mem, kSize));
    ASSERT_TRUE(get.status.ok()) << get.status << server_->log();
    EXPECT_EQ(mem->data()[kSize - 1], 0x33);
    RawReply put = victim.Send(Method::kPutObject, victim.PutRequest("victim-after", *mem, kSize));
    EXPECT_TRUE(put.status.ok()) << put.status;
    testing::ExpectStillServes(*server_, "after-naming", 0x62);
    ExpectIdle();
    ExpectStopsOnSigterm();
  }
};

// Issue 15 finding 6 (AOBJ-SES-024): the other client's System V receive FIFO, named as the
// peer's own. It has the right size and the server's user, so the segment check cannot tell it
// from the peer's; the challenge on that endpoint is what fails.
TEST_F(NamingPeerTest, AnotherClientsFifoIsReachedByNothing) {
  Run([](testing::RawSession& victim) -> std::vector<std::string> {
    absl::StatusOr<uint64_t> fifo = SysvFifoSegment(victim.worker().address());
    if (!fifo.ok()) return {};
    return {"--sysv-fifo", std::to_string(*fifo)};
  });
}

// Interop finding 3, spec review D1 (the confused deputy), from a real process: the other
// client's whole worker address in a properly signed OpenSession.
TEST_F(NamingPeerTest, AnotherClientsWorkerAddressIsReachedByNothing) {
  Run([](testing::RawSession& victim) -> std::vector<std::string> {
    return {"--worker-address", HexEncode(victim.worker().address())};
  });
}

// Requests of one principal that hold their threads (here: PUTs from four stalled peers, each
// stuck until the data wait passes) used to take every request thread, so another principal's
// listing waited for them (10 parallel CopyObjects made a listing take 19.9 s). Each principal
// now runs at most threads - 2 requests at once (AOBJ-SEC-014): the other principal's listing is
// answered while all four stalled PUTs are still waiting.
TEST_F(DeadPeerTest, StalledRequestsOfOnePrincipalLeaveThreadsForAnother) {
  server_->Stop();
  server_ = std::make_unique<ServerProcess>(
      dir_, "memory", std::vector<std::string>{"--threads", "4", "--data-wait-ms", "8000"});
  ASSERT_TRUE(server_->Start()) << server_->log();
  std::vector<pid_t> peers;
  std::vector<std::string> outs;
  for (int i = 0; i < 4; ++i) {
    outs.push_back(dir_ + "/heavy-" + std::to_string(i));
    peers.push_back(Spawn(PeerArgs({"--behaviour", "stall", "--memory", "heap", "--op", "put",
                                    "--key", "heavy-" + std::to_string(i)}),
                          outs.back()));
  }
  // At least two PUTs stuck. (The old server opened all four sessions and let their PUTs take
  // all four threads; this one runs two of the principal's requests at once, so the other two
  // peers' OpenSession calls wait behind them.)
  auto opened = [&] {
    int n = 0;
    for (const std::string& out : outs) n += Slurp(out).find("opened") != std::string::npos;
    return n;
  };
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until && opened() < 2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GE(opened(), 2) << server_->log();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // their PUTs are stuck by now
  ClientOptions o = testing::TestClientOptions(*server_);
  o.access_key_id = "AKTESTSECOND";
  o.secret = "second-secret-for-tests";
  auto other = Client::Connect(o);
  ASSERT_TRUE(other.ok()) << other.status();
  auto listing = (*other)->ListObjects("test-bucket", ListObjectsOptions{});
  ASSERT_TRUE(listing.ok()) << listing.status();
  // Ordering, not timing: no stalled PUT had been answered when the listing was.
  int answered = 0;
  for (const std::string& out : outs) answered += ReplyOf(Slurp(out), 1).code.empty() ? 0 : 1;
  EXPECT_EQ(answered, 0) << "the listing waited for the stalled requests of another principal";
  for (pid_t p : peers) {
    kill(p, SIGKILL);
    WaitFor(p, std::chrono::seconds(5));
  }
  testing::ExpectStillServes(*server_, "after-heavy", 0x52);
}

// Second hostile probe of issue 16 (F2): connections of one principal that each carried a signed
// request and then hold a call were never cut to make room, so one tenant could hold every slot of
// an address (or every descriptor). Now, with no unauthenticated connection to cut, the oldest of
// the principal holding the most connections goes: six stalled peers of one principal fill an
// address limit of six, and another principal's client is still served.
TEST_F(DeadPeerTest, OneTenantsHeldConnectionsMakeRoomForAnother) {
  server_->Stop();
  server_ = std::make_unique<ServerProcess>(
      dir_, "memory",
      std::vector<std::string>{"--max-connections-per-address", "6", "--data-wait-ms", "20000"});
  ASSERT_TRUE(server_->Start()) << server_->log();
  std::vector<pid_t> peers;
  std::vector<std::string> outs;
  for (int i = 0; i < 6; ++i) {
    outs.push_back(dir_ + "/holder-" + std::to_string(i));
    peers.push_back(Spawn(PeerArgs({"--behaviour", "stall", "--memory", "heap", "--op", "put",
                                    "--key", "held-" + std::to_string(i)}),
                          outs.back()));
    // One at a time: each opens its session (signed) before the next connects.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < until &&
           Slurp(outs.back()).find("opened") == std::string::npos) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // past the grace
  ClientOptions o = testing::TestClientOptions(*server_);
  o.access_key_id = "AKTESTSECOND";
  o.secret = "second-secret-for-tests";
  o.timeout_ms = 5000;
  bool served = false;
  for (int attempt = 0; attempt < 3 && !served; ++attempt) {
    auto other = Client::Connect(o);
    served = other.ok() && (*other)->HeadBucket("test-bucket").ok();
  }
  EXPECT_TRUE(served) << "one principal's held connections kept another out\n" << server_->log();
  for (pid_t p : peers) {
    kill(p, SIGKILL);
    WaitFor(p, std::chrono::seconds(5));
  }
}

// ---- shutdown -----------------------------------------------------------------------------------

// AOBJ-OPS-009: a transfer that can never complete does not hold the server past SIGTERM's bound,
// and its client is answered.
TEST_F(DeadPeerTest, SigtermDuringAStalledTransferStopsWithinFiveSeconds) {
  server_->Stop();
  server_ = std::make_unique<ServerProcess>(dir_, "memory");  // the default 10 s bound
  ASSERT_TRUE(server_->Start()) << server_->log();
  const std::string out = dir_ + "/stalled.out";
  const pid_t peer = Spawn(PeerArgs({"--behaviour", "stall", "--memory", "heap"}), out);
  ASSERT_GT(peer, 0);
  const auto opened = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < opened &&
         Slurp(out).find("opened") == std::string::npos) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the PUT is on its way
  ExpectStopsOnSigterm();
  EXPECT_NE(WaitFor(peer, std::chrono::seconds(10)), -1);
  const PeerReply reply = ReplyOf(Slurp(out), 1);
  EXPECT_EQ(reply.code, "TRANSFER_FAILED") << Slurp(out);
}

}  // namespace
}  // namespace aobj
