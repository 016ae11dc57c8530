// Requests before authentication (issue 16, control-plane probe finding 4): 1,200 unsigned 7 MiB
// PutObject calls used to push the server to 1.8 GB of memory, 1.4 GB of it still held afterwards,
// because every request was copied and queued for a request thread before anyone looked at who
// sent it. A real aobj-server on loopback; its peak resident size (VmHWM) is read from /proc.
#include <fcntl.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "aobj/client.h"
#include "aobj/v1/aobj.pb.h"
#include "control/tls.h"
#include "gtest/gtest.h"
#include "integration/churn.h"
#include "integration/raw_http.h"
#include "integration/raw_session.h"
#include "integration/server_process.h"
#include "integration/still_serves.h"

namespace aobj {
namespace {

// A field of /proc/<pid>/status in KiB ("VmHWM", "VmRSS"); 0 when absent.
uint64_t ProcStatusKiB(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      std::istringstream ss(line.substr(field.size() + 1));
      uint64_t v = 0;
      ss >> v;
      return v;
    }
  }
  return 0;
}

struct FloodResult {
  int done = 0;
  int ok = 0;
  std::map<int, int> by_grpc_code;
  std::map<std::string, int> by_aobj_code;  // the aobj-error trailer's code name
  std::string first_unavailable;            // the message of one UNAVAILABLE, if any
  int shed_by_transport = 0;  // RESOURCE_EXHAUSTED without a trailer: gRPC's quota (SEC-015)
  int shed_by_queue = 0;      // SLOW_DOWN for the request queue's bound (AOBJ-SEC-013)
  double slowest_s = 0;       // the longest call
};

// Sends `count` PutObject calls of `body_bytes` each, `parallel` at a time, over `channels`
// HTTP/2 connections, with the authentication metadata `md` (empty: unsigned). Waits for all.
FloodResult Flood(const std::string& endpoint, int count, int parallel, int channels,
                  size_t body_bytes, const std::vector<std::pair<std::string, std::string>>& md) {
  std::vector<std::shared_ptr<grpc::Channel>> chans;
  for (int i = 0; i < channels; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.aobj_flood_channel", i);  // a distinct connection per channel
    args.SetMaxSendMessageSize(16 << 20);
    chans.push_back(grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args));
  }
  const std::string payload(body_bytes, 'x');
  FloodResult result;
  std::mutex mu;
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < parallel; ++t) {
    threads.emplace_back([&, t] {
      grpc::GenericStub stub(chans[t % chans.size()]);
      for (;;) {
        const int i = next.fetch_add(1);
        if (i >= count) return;
        const auto call_start = std::chrono::steady_clock::now();
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
        for (const auto& [k, v] : md) ctx.AddMetadata(k, v);
        grpc::Slice slice(payload);
        grpc::ByteBuffer req(&slice, 1), resp;
        std::promise<grpc::Status> done;
        stub.UnaryCall(&ctx, "/aobj.v1.ObjectService/PutObject", grpc::StubOptions(), &req, &resp,
                       [&done](grpc::Status s) { done.set_value(s); });
        const grpc::Status s = done.get_future().get();
        std::string aobj_code;
        const auto& trailers = ctx.GetServerTrailingMetadata();
        auto it = trailers.find("aobj-error-bin");
        aobj::v1::Error error;
        if (it != trailers.end() && error.ParseFromArray(it->second.data(), it->second.size())) {
          aobj_code = error.name();
        }
        std::lock_guard<std::mutex> l(mu);
        if (aobj_code == "SLOW_DOWN" &&
            error.message().find("waiting for a request thread") != std::string::npos) {
          ++result.shed_by_queue;
        }
        result.slowest_s = std::max(
            result.slowest_s,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - call_start).count());
        ++result.done;
        if (s.ok()) ++result.ok;
        if (s.error_code() == grpc::StatusCode::UNAVAILABLE && result.first_unavailable.empty()) {
          result.first_unavailable = s.error_message();
        }
        ++result.by_grpc_code[s.error_code()];
        if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED && aobj_code.empty()) {
          ++result.shed_by_transport;
        }
        ++result.by_aobj_code[aobj_code];
      }
    });
  }
  for (auto& th : threads) th.join();
  return result;
}

// A TCP connection to 127.0.0.1:port whose socket option `timeout` (SO_RCVTIMEO or SO_SNDTIMEO)
// is `tv`, or -1.
int ConnectLoopback(int port, int timeout, timeval tv) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  setsockopt(fd, SOL_SOCKET, timeout, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// GET /metrics from the server's metrics endpoint on 127.0.0.1:port; "" when unreachable.
std::string Metrics(int port) {
  const int fd = ConnectLoopback(port, SO_RCVTIMEO, timeval{10, 0});
  if (fd < 0) return "";
  const std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

// The value of the sample line `name`, or -1.
double Sample(const std::string& text, const std::string& name) {
  const size_t pos = text.find("\n" + name + " ");
  return pos == std::string::npos ? -1 : std::stod(text.substr(pos + name.size() + 2));
}

// Well-formed authentication metadata of a known access key with a forged signature: only the
// signature check, on a request thread, can refuse it. `c` fills the nonce.
std::vector<std::pair<std::string, std::string>> ForgedAuth(
    char c, const std::string& key = testing::kAccessKey) {
  return {{"aobj-access-key-id", key},
          {"aobj-timestamp", std::to_string(absl::ToUnixMillis(absl::Now()))},
          {"aobj-nonce", std::string(32, c)},
          {"aobj-session-id", std::string(32, 'b')},
          {"aobj-signature", std::string(64, 'c')}};
}

std::string Describe(const FloodResult& r) {
  std::string s = "done=" + std::to_string(r.done) + " ok=" + std::to_string(r.ok) + " grpc:";
  for (const auto& [c, n] : r.by_grpc_code) s += " " + std::to_string(c) + "x" + std::to_string(n);
  s += " aobj:";
  for (const auto& [c, n] : r.by_aobj_code) s += " [" + c + "]x" + std::to_string(n);
  if (!r.first_unavailable.empty()) s += "; UNAVAILABLE: " + r.first_unavailable;
  s += "; slowest call " + std::to_string(r.slowest_s) + " s";
  return s;
}

class RequestFloodTest : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> flags) {
    server_ =
        std::make_unique<testing::ServerProcess>(testing::TestDir(), "memory", std::move(flags));
    ASSERT_TRUE(server_->Start()) << server_->log();
  }
  // A signed client's session and HeadBucket succeed; the failure names the step and status.
  ::testing::AssertionResult Served() {
    ClientOptions o;
    o.endpoint = server_->endpoint();
    o.access_key_id = testing::kAccessKey;
    o.secret = testing::kSecret;
    o.timeout_ms = 10000;
    auto c = Client::Connect(o);
    if (!c.ok()) return ::testing::AssertionFailure() << "Connect: " << c.status();
    const absl::Status s = (*c)->HeadBucket("test-bucket");
    if (!s.ok()) return ::testing::AssertionFailure() << "HeadBucket: " << s;
    return ::testing::AssertionSuccess();
  }
  int Env(const char* name, int def) {
    const char* v = std::getenv(name);
    return v == nullptr ? def : std::atoi(v);
  }
  // Clients of 127.0.0.1, eight in a row, are served beside a churn of young connections from
  // 127.0.0.1 (two threads holding `held` each) against a server started with `flags`.
  void ExpectServedBesideASameAddressChurn(std::vector<std::string> flags, size_t held);
  // Twelve signed sessions opened during a flood of 7 MiB calls with `md`, all served.
  void ExpectOthersServedDuringFlood(const std::vector<std::pair<std::string, std::string>>& md);
  std::unique_ptr<testing::ServerProcess> server_;
};

// Unsigned 7 MiB PutObjects from many streams at once: each is answered MISSING_AUTH (or
// SLOW_DOWN), the server's peak memory stays far below what the flood sent, and a signed client
// is served afterwards.
TEST_F(RequestFloodTest, UnsignedRequestsDoNotPileUpInMemory) {
  ASSERT_NO_FATAL_FAILURE(StartServer({"--threads", "2"}));
  const uint64_t before_kib = ProcStatusKiB(server_->pid(), "VmHWM");
  const int count = Env("AOBJ_FLOOD_REQUESTS", 600);
  const size_t body = size_t{7} << 20;
  FloodResult r = Flood(server_->endpoint(), count, 100, 10, body, {});
  const uint64_t peak_kib = ProcStatusKiB(server_->pid(), "VmHWM");
  const uint64_t rss_kib = ProcStatusKiB(server_->pid(), "VmRSS");
  std::printf(
      "flood: %d x %zu MiB unsigned: %s; server VmHWM %llu -> %llu MiB, VmRSS after %llu MiB\n",
      count, body >> 20, Describe(r).c_str(), static_cast<unsigned long long>(before_kib >> 10),
      static_cast<unsigned long long>(peak_kib >> 10),
      static_cast<unsigned long long>(rss_kib >> 10));
  EXPECT_EQ(r.done, count);
  EXPECT_EQ(r.ok, 0) << Describe(r);
  // Nothing unsigned is ever accepted: each is refused for its missing authentication, or
  // (when the server sheds load) with a retryable error.
  for (const auto& [code, n] : r.by_aobj_code) {
    EXPECT_TRUE(code.rfind("MISSING", 0) == 0 || code.rfind("SLOW_DOWN", 0) == 0 ||
                code.rfind("INVALID_", 0) == 0 || code.empty())
        << code << " x" << n;
  }
  // The flood moved count * 7 MiB (4.2 GB by default); 100 requests of it were in flight at
  // any time (700 MiB). The server holds at most its pre-authentication budget of them (the
  // server before the bounds: 552 MiB more after 300 requests, 1.8 GB after 1,200).
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer keeps freed memory in quarantine (256 MiB) and adds redzones: the figure
  // says nothing about the server's bounds there (CI measured 712 MiB). Checked in normal builds.
  (void)before_kib;
#else
  EXPECT_LT(peak_kib - before_kib, uint64_t{512} << 10) << Describe(r);
#endif
  EXPECT_TRUE(Served()) << server_->log();
}

// Third hostile probe of issue 16, F4: during a flood of large unsigned requests, gRPC's memory
// quota cancelled other tenants' calls and sent GOAWAY on their connections (17 of 20 new
// sessions failed). Each of 12 signed clients that connect while such a flood runs opens its
// session and is served.
void RequestFloodTest::ExpectOthersServedDuringFlood(
    const std::vector<std::pair<std::string, std::string>>& md) {
  ASSERT_NO_FATAL_FAILURE(StartServer({}));
  std::atomic<bool> stop{false};
  std::atomic<int> flood_calls{0};
  std::thread flood([&] {
    while (!stop) {  // rounds of 300 calls, 100 at a time over 10 connections
      const auto t0 = std::chrono::steady_clock::now();
      FloodResult r = Flood(server_->endpoint(), 300, 100, 10, size_t{7} << 20, md);
      std::printf("round: %s in %.2f s\n", Describe(r).c_str(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      flood_calls += r.done;
      EXPECT_EQ(r.ok, 0) << Describe(r);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the flood is under way
  int served = 0;
  // Under AddressSanitizer (scripts/sanitize.sh) each session takes seconds beside the flood;
  // four show the same paths free of memory errors, and the normal build checks all twelve.
#if defined(__SANITIZE_ADDRESS__)
  constexpr int kSessions = 4;
#else
  constexpr int kSessions = 12;
#endif
  std::string failures;
  for (int i = 0; i < kSessions; ++i) {
    const ::testing::AssertionResult ok = Served();
    served += ok;
    if (!ok) failures += std::string("\n") + ok.message();
  }
  stop = true;
  flood.join();
  std::printf("%d of %d sessions served beside %d flood calls of 7 MiB%s\n", served, kSessions,
              flood_calls.load(), failures.c_str());
  EXPECT_EQ(served, kSessions) << failures;
}

TEST_F(RequestFloodTest, OtherTenantsAreServedDuringAnUnsignedFlood) {
  ExpectOthersServedDuringFlood({});
}

// Fourth hostile probe of issue 16, N1: the same with forged signatures under a known access key
// (key IDs are public), whose messages must be read to be checked: 100 such 7 MiB messages at
// once used to keep gRPC's quota under pressure (60 of 140 of a victim's operations failed with
// GOAWAY). Messages are now read a few at a time, in turn between keys.
TEST_F(RequestFloodTest, OtherTenantsAreServedDuringAForgedFlood) {
  ExpectOthersServedDuringFlood(ForgedAuth('f'));
}

// AOBJ-SEC-017: a call without authentication is answered from its headers: the client sends
// no message and does not half-close, and still gets MISSING_AUTHENTICATION at once (gRPC's
// unary handler, used before, waited for the message until the deadline).
TEST_F(RequestFloodTest, AnUnsignedCallIsAnsweredFromItsHeaders) {
  ASSERT_NO_FATAL_FAILURE(StartServer({}));
  auto channel = grpc::CreateChannel(server_->endpoint(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto call = stub.PrepareCall(&ctx, "/aobj.v1.ObjectService/PutObject", &cq);
  call->StartCall(reinterpret_cast<void*>(1));
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(2));
  void* tag = nullptr;
  bool ok = false;
  bool finished = false;
  while (!finished && cq.Next(&tag, &ok)) finished = tag == reinterpret_cast<void*>(2);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  EXPECT_NE(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
      << "the server waited for a message it did not need";
  const auto& trailers = ctx.GetServerTrailingMetadata();
  auto it = trailers.find("aobj-error-bin");
  ASSERT_NE(it, trailers.end()) << status.error_message();
  aobj::v1::Error error;
  ASSERT_TRUE(error.ParseFromArray(it->second.data(), it->second.size()));
  EXPECT_EQ(error.name(), "MISSING_AUTHENTICATION");
}

// Calls that send only their headers (with `md`) and then nothing: no message, no half-close.
// Finished() collects the statuses the server ends them with. Eight calls a connection: the
// server starts at most that many at a time on a connection with no verified request
// (AOBJ-SEC-026), and these tests count what it does with the calls it started.
class HeldCalls {
 public:
  // `shared`: every call on the connection that a RawSession (or the client library) to
  // `endpoint` uses, which gRPC shares between channels with the same arguments; else 8 calls a
  // connection.
  HeldCalls(const std::string& endpoint, int n,
            const std::vector<std::pair<std::string, std::string>>& md, bool shared = false)
      : calls_(n) {
    for (int i = 0; i < n; ++i) {
      if (shared && i == 0) {
        stubs_.push_back(
            std::make_unique<grpc::GenericStub>(*MakeChannel(endpoint, TlsOptions{}, 16 << 20)));
      } else if (!shared && i % 8 == 0) {
        grpc::ChannelArguments args;
        args.SetInt("grpc.aobj_held_channel", i);  // a connection of its own
        stubs_.push_back(std::make_unique<grpc::GenericStub>(
            grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args)));
      }
      Held& h = calls_[i];
      h.ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      for (const auto& [k, v] : md) h.ctx.AddMetadata(k, v);
      h.call = stubs_.back()->PrepareCall(&h.ctx, "/aobj.v1.ObjectService/PutObject", &cq_);
      h.call->StartCall(Tag(i, false));
      h.call->Finish(&h.status, Tag(i, true));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // distinct start times
    }
  }
  ~HeldCalls() {
    for (Held& h : calls_) h.ctx.TryCancel();
    void* tag;
    bool ok;
    while (finished_ < static_cast<int>(calls_.size()) && cq_.Next(&tag, &ok)) Count(tag);
    cq_.Shutdown();
    while (cq_.Next(&tag, &ok)) {
    }
  }
  // The aobj error names of the calls ended within `wait`, by call index.
  std::map<int, std::string> Finished(std::chrono::milliseconds wait) {
    const auto until = std::chrono::system_clock::now() + wait;
    void* tag;
    bool ok;
    for (;;) {
      const auto r = cq_.AsyncNext(&tag, &ok, until);
      if (r != grpc::CompletionQueue::GOT_EVENT) break;
      Count(tag);
    }
    return ended_;
  }

 private:
  struct Held {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call;
    grpc::Status status;
  };
  static void* Tag(int i, bool finish) {
    return reinterpret_cast<void*>(static_cast<intptr_t>(i * 2 + (finish ? 1 : 0) + 2));
  }
  void Count(void* tag) {
    const intptr_t t = reinterpret_cast<intptr_t>(tag) - 2;
    if (t % 2 == 0) return;  // StartCall
    const int i = static_cast<int>(t / 2);
    ++finished_;
    std::string name = "(gRPC " + std::to_string(calls_[i].status.error_code()) + ")";
    const auto& trailers = calls_[i].ctx.GetServerTrailingMetadata();
    auto it = trailers.find("aobj-error-bin");
    aobj::v1::Error error;
    if (it != trailers.end() && error.ParseFromArray(it->second.data(), it->second.size())) {
      name = error.name();
    }
    ended_[i] = name;
  }
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs_;
  grpc::CompletionQueue cq_;
  std::vector<Held> calls_;
  int finished_ = 0;
  std::map<int, std::string> ended_;
};

// AOBJ-SEC-018 (fourth hostile probe of issue 16, N1/N3): calls that claim a known access key
// and never send their message used to be held without end (76,800 of them took 1.4 GB, and
// with partial messages under the memory quota other tenants' calls were cancelled). At most
// 8 here: 20 such calls claiming the tenant's own key, and 12 of them (the oldest the server saw)
// are ended with SLOW_DOWN at once; the tenant's own signed requests are read, and the rest end
// at the read deadline. This is the server without its HTTP/2 guard, as a server without one
// meets AOBJ-SEC-018: with it, such header-only calls are passed on marked late and wait for their
// message apart (AOBJ-SEC-029; LateCallsThatJoinTheSlotQueueMeetItsBounds below).
TEST_F(RequestFloodTest, HeldMessagesOfAKeyAreBoundedAndEndedAtTheDeadline) {
  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--http2-guard", "off", "--max-reading-requests-per-principal", "8",
                   "--request-read-ms", "3000"}));
  HeldCalls held(server_->endpoint(), 20, ForgedAuth('e'));
  std::map<int, std::string> ended = held.Finished(std::chrono::milliseconds(1000));
  int slow = 0;
  for (const auto& [i, name] : ended) {
    EXPECT_EQ(name, "SLOW_DOWN") << "held call " << i;
    slow += name == "SLOW_DOWN";
  }
  EXPECT_EQ(slow, 12) << "20 held calls at a bound of 8 per key";
  EXPECT_TRUE(Served()) << server_->log();  // the same key, beside 8 held calls
  ended = held.Finished(std::chrono::milliseconds(6000));
  EXPECT_EQ(ended.size(), 20u) << "every held call is ended by the 3 s read deadline";
  int late = 0;
  for (const auto& [i, name] : ended) late += name == "DEADLINE_EXCEEDED";
  EXPECT_GE(late, 1);
  EXPECT_EQ(
      late + static_cast<int>(std::count_if(ended.begin(), ended.end(),
                                            [](const auto& e) { return e.second == "SLOW_DOWN"; })),
      20)
      << "each held call ends with SLOW_DOWN or DEADLINE_EXCEEDED";
}

// Seventeenth hostile probe, N2: calls marked late whose message has not come in 3 s join the
// slot queue, and joined it past AOBJ-SEC-018's bounds (one tenant kept 6,827 registered). Here
// 20 header-only calls: none is ended while they wait apart, 12 when they join the slot queue at
// 3 s (8 per key), and the last 8 at the read deadline.
TEST_F(RequestFloodTest, LateCallsThatJoinTheSlotQueueMeetItsBounds) {
  // 16 read slots (256 MiB / 16 MiB), so that no slot is taken for a waiting call.
  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--max-reading-requests", "16", "--max-reading-requests-per-principal", "8",
                   "--request-read-ms", "8000", "--control-memory", std::to_string(256 << 20)}));
  HeldCalls held(server_->endpoint(), 20, ForgedAuth('d'));
  auto count = [](const std::map<int, std::string>& ended, const std::string& name) {
    return std::count_if(ended.begin(), ended.end(),
                         [&](const auto& e) { return e.second == name; });
  };
  std::map<int, std::string> ended = held.Finished(std::chrono::milliseconds(1500));
  EXPECT_EQ(ended.size(), 0u) << "they wait for their message apart";
  ended = held.Finished(std::chrono::milliseconds(4000));  // 5.5 s from the start
  EXPECT_EQ(ended.size(), 12u) << "8 per key once they wait for a slot";
  EXPECT_EQ(count(ended, "SLOW_DOWN"), 12);
  ended = held.Finished(std::chrono::milliseconds(6000));
  EXPECT_EQ(ended.size(), 20u) << "every held call is ended by the 8 s read deadline";
  EXPECT_EQ(count(ended, "DEADLINE_EXCEEDED"), 8);
  EXPECT_TRUE(Served()) << server_->log();
}

// Requests that claim a known access key but carry a forged signature are queued (only the
// signature check, on a request thread, can tell), but the queue is bounded: past it they are
// answered SLOW_DOWN at once, none is accepted, and a real client is served afterwards.
TEST_F(RequestFloodTest, ForgedRequestsMeetABoundedQueue) {
  const std::string port_file = testing::TestDir() + "-metrics-port";
  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--threads", "1", "--max-queued-requests", "2", "--metrics-listen",
                   "127.0.0.1:0", "--metrics-port-file", port_file}));
  const auto md = ForgedAuth('a');
  FloodResult r = Flood(server_->endpoint(), 400, 64, 4, size_t{1} << 20, md);
  std::printf("forged: %s\n", Describe(r).c_str());
  EXPECT_EQ(r.done, 400);
  EXPECT_EQ(r.ok, 0);
  int slow = 0;
  for (const auto& [code, n] : r.by_aobj_code) {
    if (code == "SLOW_DOWN") {
      slow += n;
    } else if (code.empty()) {
      // Under a loaded machine gRPC's memory quota may shed some before the server saw them.
      EXPECT_EQ(n, r.shed_by_transport) << Describe(r);
    } else {
      EXPECT_EQ(code, "SIGNATURE_DOES_NOT_MATCH") << "x" << n;
    }
  }
  EXPECT_GT(slow + r.shed_by_transport, 0)
      << "64 callers and a queue of 2: some must have been refused at once";
  // Each refusal for the queue's bound is counted where an operator looks, and nothing is left
  // queued. (A call whose message came too slowly for its read slot is also ended SLOW_DOWN,
  // AOBJ-SEC-018: behind the calls that wait for room on their connection, AOBJ-SEC-026, a few
  // messages can.)
  const std::string metrics = Metrics(std::stoi(testing::ReadFile(port_file)));
#if !defined(__SANITIZE_ADDRESS__)
  // Instrumented, the messages come slowly enough that the read slots end them all before the
  // queue fills (CI: 336 SLOW_DOWN, none for the queue); the normal build fills it (15-24).
  EXPECT_GT(r.shed_by_queue, 0) << Describe(r);
#endif
  EXPECT_EQ(Sample(metrics, "aobj_requests_shed_total"), r.shed_by_queue) << metrics;
  EXPECT_EQ(Sample(metrics, "aobj_requests_queued"), 0) << metrics;
  EXPECT_EQ(Sample(metrics, "aobj_requests_queued_bytes"), 0) << metrics;
  unlink(port_file.c_str());
  EXPECT_TRUE(Served()) << server_->log();
}

// AOBJ-OPS-010 (hostile probe of issue 16, N5): 30,000 unsigned calls used to write 30,000 log
// lines (5.7 MB in 1.3 s). Now at most 20 a second are logged, and every other one is counted in
// a summary line: logged + summarized = sent, exactly.
TEST_F(RequestFloodTest, UnauthenticatedFailuresAreLoggedInSummary) {
  ASSERT_NO_FATAL_FAILURE(StartServer({}));
  const auto start = std::chrono::steady_clock::now();
  FloodResult r = Flood(server_->endpoint(), 3000, 16, 2, 0, {});
  ASSERT_EQ(r.done, 3000);
  EXPECT_EQ(r.by_aobj_code["MISSING_AUTHENTICATION"], 3000) << Describe(r);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the reaper's summary
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string log = server_->log();
  int lines = 0;
  long summarized = 0;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find("event=request_failed ") != std::string::npos) ++lines;
    const size_t at = line.find("event=request_failed_suppressed count=");
    if (at != std::string::npos) summarized += std::stol(line.substr(at + 38));
  }
  std::printf("3000 unsigned calls in %.1f s: %d logged, %ld summarized\n", seconds, lines,
              summarized);
  EXPECT_LE(lines, 20 * (static_cast<int>(seconds) + 2));
  EXPECT_EQ(lines + summarized, 3000);
}

// Fifth hostile probe, L1: failures after the signature was verified were logged without a
// bound (one tenant, 15 MB of log in 30 s). Now each access key gets 20 lines a second and a
// summary of the rest; every failure is still counted once.
TEST_F(RequestFloodTest, FailuresOfOneTenantAreLoggedInSummary) {
  ASSERT_NO_FATAL_FAILURE(StartServer({}));
  ClientOptions o;
  o.endpoint = server_->endpoint();
  o.access_key_id = testing::kAccessKey;
  o.secret = testing::kSecret;
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status();
  constexpr int kThreads = 4, kEach = 300;
  const auto start = std::chrono::steady_clock::now();
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        if (!(*c)->Head("test-bucket", absl::StrCat("missing-", t, "-", i)).ok()) ++failed;
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(failed.load(), kThreads * kEach);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the reaper's summary
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int lines = 0;
  long summarized = 0;
  std::istringstream in(server_->log());
  for (std::string line; std::getline(in, line);) {
    if (line.find("event=request_failed ") != std::string::npos &&
        line.find("code=NO_SUCH_KEY") != std::string::npos) {
      ++lines;
    }
    const size_t at = line.find("event=request_failed_suppressed count=");
    if (at != std::string::npos && line.find("access_key=") != std::string::npos) {
      summarized += std::stol(line.substr(at + 38));
    }
  }
  std::printf("%d failing HeadObjects in %.1f s: %d logged, %ld summarized\n", kThreads * kEach,
              seconds, lines, summarized);
  EXPECT_LE(lines, 20 * (static_cast<int>(seconds) + 2));
  EXPECT_EQ(lines + summarized, kThreads * kEach);
}

// Found by the hostile probe of issue 16: forged 7 MiB requests under the memory quota's
// pressure crashed the server (SIGSEGV in gRPC) in 3 of 4 runs, because a request thread dropped
// the last reference to a request's message. Now they are answered, and the server lives.
TEST_F(RequestFloodTest, ForgedLargeRequestsUnderMemoryPressureDoNotCrashTheServer) {
  ASSERT_NO_FATAL_FAILURE(StartServer({"--threads", "2"}));
  const auto md = ForgedAuth('d');
  // Two rounds (one under AddressSanitizer, where a round takes 20 s: the same paths).
#if defined(__SANITIZE_ADDRESS__)
  constexpr int kRounds = 1;
#else
  constexpr int kRounds = 2;
#endif
  for (int round = 0; round < kRounds; ++round) {
    FloodResult r = Flood(server_->endpoint(), 300, 100, 10, size_t{7} << 20, md);
    std::printf("forged 7 MiB, round %d: %s\n", round, Describe(r).c_str());
    EXPECT_EQ(r.ok, 0);
    ASSERT_TRUE(server_->Alive()) << "the server died\n" << server_->log();
  }
  EXPECT_TRUE(Served()) << server_->log();
}

}  // namespace
}  // namespace aobj

namespace aobj {
namespace {

// HTTP/2 Rapid Reset (CVE-2023-44487; fifth hostile probe of issue 16, B): a client that opens
// streams and resets them at once made gRPC 1.51 queue server calls faster than they were
// finished: one unauthenticated connection grew the server by about 210 MB/s, and the backlog
// outlived the attacker. Now a connection whose client cancels most of its calls is cut
// (AOBJ-SEC-019) and a signed client is served. What gRPC read before the cut is still worked
// off, so the memory it takes is printed, not bounded here (docs/security.md).
TEST_F(RequestFloodTest, AConnectionThatResetsItsStreamsIsCut) {
  ASSERT_NO_FATAL_FAILURE(StartServer({}));
  const uint64_t before_kib = ProcStatusKiB(server_->pid(), "VmHWM");
  auto channel = grpc::CreateChannel(server_->endpoint(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  // A claim that passes the header checks (its message is then waited for), so that each call
  // is still open when its client resets it.
  const auto md = ForgedAuth('d');
  int reset = 0;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::GenericClientAsyncReaderWriter>> calls;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (std::chrono::steady_clock::now() < until && reset < 3000) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    for (const auto& [k, v] : md) ctx->AddMetadata(k, v);
    auto call = stub.PrepareCall(ctx.get(), "/aobj.v1.ObjectService/ListObjectsV2", &cq);
    call->StartCall(reinterpret_cast<void*>(1));
    // Once the HEADERS are out (the start completes), RST_STREAM.
    void* tag;
    bool ok;
    bool started = false;
    while (!started &&
           cq.AsyncNext(&tag, &ok,
                        std::chrono::system_clock::now() + std::chrono::milliseconds(500)) ==
               grpc::CompletionQueue::GOT_EVENT) {
      started = tag == reinterpret_cast<void*>(1);
    }
    if (!started || !ok) break;  // the connection is gone (cut)
    ctx->TryCancel();
    ++reset;
    contexts.push_back(std::move(ctx));
    calls.push_back(std::move(call));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const uint64_t peak_kib = ProcStatusKiB(server_->pid(), "VmHWM");
  std::printf("rapid reset: %d streams reset; server VmHWM %llu -> %llu MiB\n", reset,
              static_cast<unsigned long long>(before_kib >> 10),
              static_cast<unsigned long long>(peak_kib >> 10));
  const std::string log = server_->log();
  EXPECT_NE(log.find("event=connection_cut reason=reset_streams"), std::string::npos)
      << "the connection was not cut after " << reset << " resets";
  EXPECT_TRUE(Served()) << log;
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
}

}  // namespace
}  // namespace aobj

namespace aobj {
namespace {

// The HTTP/2 preface, an empty SETTINGS frame, then `count` streams from `first` on, each a gRPC
// call's HEADERS (HPACK: POST, http, :path, content-type and :authority as literals of static
// names, te and the claim of ForgedAuth as literals of new names, so that the server waits for each
// call's message) reset at once by RST_STREAM (CANCEL): HTTP/2 Rapid Reset, as the attacker's
// octets on the wire.
// The HPACK block of a gRPC call of `path` carrying `md` (names and values under 128 octets).
std::string GrpcHeaderBlock(const std::string& path,
                            const std::vector<std::pair<std::string, std::string>>& md) {
  std::string block = "\x83\x86";
  block += '\x04';
  block += static_cast<char>(path.size());
  block += path;
  block += std::string("\x0f\x10\x10", 3) + "application/grpc";
  block += std::string("\x00\x02te\x08trailers\x01\x09localhost", 24);  // gRPC needs both
  for (const auto& [name, value] : md) {
    block += '\x00';
    block += static_cast<char>(name.size());
    block += name;
    block += static_cast<char>(value.size());
    block += value;
  }
  return block;
}

std::string RapidResetOctets(uint32_t first, int count, bool preface) {
  const std::string block =
      GrpcHeaderBlock("/aobj.v1.ObjectService/ListObjectsV2", ForgedAuth('r'));
  std::string out;
  if (preface) {
    out = std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") +
          std::string("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9);
  }
  for (int i = 0; i < count; ++i) {
    const uint32_t s = first + 2 * static_cast<uint32_t>(i);
    const std::string id = {static_cast<char>((s >> 24) & 0x7f), static_cast<char>(s >> 16),
                            static_cast<char>(s >> 8), static_cast<char>(s)};
    const size_t len = block.size();  // HEADERS, END_HEADERS
    out += {static_cast<char>(len >> 16), static_cast<char>(len >> 8), static_cast<char>(len),
            '\x01', '\x04'};
    out += id + block;
    out += std::string("\x00\x00\x04\x03\x00", 5) + id + std::string("\x00\x00\x00\x08", 4);
  }
  return out;
}

// Raw HTTP/2 attackers: `threads` of them, each connecting to 127.0.0.1:port and writing the
// octets `next(i)` gives for the i-th write of its connection as fast as the socket takes them,
// until the server closes the connection (then it reconnects), for `seconds`. Never reads.
struct RawFlood {
  int64_t connections = 0;
  int64_t writes = 0;
};
// `threads` attackers, each reconnecting whenever its connection fails, for `seconds`; when
// `until_cut` is set, on past that (up to four times as long) until some connection has failed,
// so that a slow machine, whose attackers send less in the time, still reaches the guard's bound.
RawFlood FloodRaw(int port, int threads, int seconds,
                  const std::function<std::string(int64_t)>& next, bool until_cut = false) {
  std::atomic<int64_t> connections{0}, writes{0};
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + std::chrono::seconds(seconds);
  const auto hard_until = start + std::chrono::seconds(until_cut ? 4 * seconds : seconds);
  const auto going = [&] {
    const auto now = std::chrono::steady_clock::now();
    return now < until || (now < hard_until && connections.load() <= threads);
  };
  std::vector<std::thread> attackers;
  for (int t = 0; t < threads; ++t) {
    attackers.emplace_back([&] {
      while (going()) {
        const int fd = ConnectLoopback(port, SO_SNDTIMEO, timeval{0, 200000});
        if (fd < 0) continue;
        connections.fetch_add(1);
        // Each write whole, or the frames after a partial one would be cut mid-header and read
        // as other frames: a send that timed out (a slow server, not a cut) is tried again.
        bool open = true;
        for (int64_t i = 0; open && going(); ++i) {
          const std::string out = next(i);
          for (size_t sent = 0; open && sent < out.size();) {
            const ssize_t n = send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
            if (n > 0) {
              sent += static_cast<size_t>(n);
            } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
              open = going();
            } else {
              open = false;
            }
          }
          if (open) writes.fetch_add(1);
        }
        close(fd);
      }
    });
  }
  for (auto& th : attackers) th.join();
  return {connections.load(), writes.load()};
}

// One HTTP/2 frame.
std::string H2Frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string f = {static_cast<char>(payload.size() >> 16),
                   static_cast<char>(payload.size() >> 8),
                   static_cast<char>(payload.size()),
                   static_cast<char>(type),
                   static_cast<char>(flags),
                   static_cast<char>((stream >> 24) & 0x7f),
                   static_cast<char>(stream >> 16),
                   static_cast<char>(stream >> 8),
                   static_cast<char>(stream)};
  return f + payload;
}

class RawFloodTest : public RequestFloodTest {
 protected:
  // Runs the flood against a fresh server and checks that it was cut for `reason`, that the
  // server's peak memory grew by less than 256 MiB (`before` names what it grew by without the
  // guard) and that a signed client is served afterwards.
  void ExpectBounded(const char* what, const std::string& reason, const char* before,
                     const std::function<std::string(int64_t)>& next) {
    ASSERT_NO_FATAL_FAILURE(StartServer({}));
    const uint64_t before_kib = ProcStatusKiB(server_->pid(), "VmHWM");
    const int port = std::stoi(server_->endpoint().substr(server_->endpoint().rfind(':') + 1));
    const RawFlood f = FloodRaw(port, 4, 3, next, !reason.empty());
    // The guard may still be reading what the attackers wrote (slowly, instrumented): the cut is
    // waited for, up to 10 s, and then a second for the server to settle.
    const std::string cut = "event=connection_cut reason=" + reason;
    for (int i = 0; !reason.empty() && i < 100 && server_->log().find(cut) == std::string::npos;
         ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    const uint64_t peak_kib = ProcStatusKiB(server_->pid(), "VmHWM");
    std::printf("%s: %lld connections, %lld writes; server VmHWM %llu -> %llu MiB\n", what,
                static_cast<long long>(f.connections), static_cast<long long>(f.writes),
                static_cast<unsigned long long>(before_kib >> 10),
                static_cast<unsigned long long>(peak_kib >> 10));
    const std::string log = server_->log();
    if (!reason.empty()) {
      EXPECT_NE(log.find(cut), std::string::npos) << log;
      EXPECT_GT(f.connections, 4) << "the attackers were never cut, so never reconnected";
    }
    EXPECT_TRUE(Served()) << log;
#if !defined(__SANITIZE_ADDRESS__)
    EXPECT_LT(peak_kib - before_kib, uint64_t{256} << 10)
        << "the server grew by " << ((peak_kib - before_kib) >> 10) << " MiB (" << before
        << " without the guard)";
#else
    (void)before;
#endif
  }
};

// HTTP/2 Rapid Reset from connections that reconnect as soon as they are cut (fifth hostile
// probe of issue 16, B, second round: four attackers with two connections each took the server
// to 2.2 GB in 8 s, because gRPC had read, and made calls of, far more streams than the cut
// counted). The guard reads each frame header before gRPC does: a connection is closed before
// gRPC sees its 65th reset stream, the next ones from the address after fewer (AOBJ-SEC-019,
// AOBJ-SEC-023). Bounded: 4 threads, 3 seconds, loopback.
TEST_F(RawFloodTest, RapidResetFromReconnectingConnectionsIsBounded) {
  ExpectBounded("rapid reset, reconnecting", "reset_streams", "602 MiB in 3 s", [](int64_t i) {
    return RapidResetOctets(1 + 512 * static_cast<uint32_t>(i), 256, i == 0);
  });
}

// The sixth probe (after the guard's first version): gRPC 1.51 keeps an endless header block
// (HEADERS without END_HEADERS, then CONTINUATION after CONTINUATION) in memory, 682 MB from
// four attackers in 4 s; the guard bounds a block to 64 KiB (AOBJ-SEC-024).
TEST_F(RawFloodTest, AnEndlessHeaderBlockIsCut) {
  ExpectBounded("endless header block", "header_block", "943 MiB in this test", [](int64_t i) {
    std::string out;
    if (i == 0) {
      out = RapidResetOctets(1, 0, true) + H2Frame(1, 0, 1, std::string(100, '\x40'));
    }
    for (int k = 0; k < 64; ++k) out += H2Frame(9, 0, 1, std::string(1000, '\x40'));
    return out;
  });
}

// The sixth probe: PINGs (and SETTINGS) whose answers the client never reads made gRPC queue the
// answers, 760 MB in 4 s; the guard allows 32 unanswered (AOBJ-SEC-024).
TEST_F(RawFloodTest, PingsWithoutReadingTheAnswersAreCut) {
  ExpectBounded("unanswered pings", "unanswered_pings", "128 MiB in this test, and never cut",
                [](int64_t i) {
                  std::string out = i == 0 ? RapidResetOctets(1, 0, true) : "";
                  for (int k = 0; k < 1000; ++k) out += H2Frame(6, 0, 0, "12345678");
                  return out;
                });
}

// The sixth probe: gRPC 1.51 enforces its stream limit (256) only once the client acknowledged
// its SETTINGS; a client that never does, opens calls and never reads the answers took the server
// to 3.5 GB in 10 s. The guard closes a connection holding more than 1,024 open, halving that
// for the address's next connections (AOBJ-SEC-024, h2_guard_test.cc); a connection that has not
// carried a verified request, as here, gets no further than 8 open calls: the next one waits, and
// its client is not read (AOBJ-SEC-026).
TEST_F(RawFloodTest, StreamsOpenedWithoutReadingTheAnswersAreBounded) {
  ExpectBounded("streams held open", "", "1,051 MiB in this test", [](int64_t i) {
    // The HEADERS of RapidResetOctets without their RST_STREAM: 200 new streams a write.
    std::string out = i == 0 ? RapidResetOctets(1, 0, true) : "";
    const std::string pairs = RapidResetOctets(1 + 400 * static_cast<uint32_t>(i), 200, false);
    for (size_t at = 0; at < pairs.size();) {  // keep the HEADERS frames, drop the resets
      const size_t len = (static_cast<uint8_t>(pairs[at]) << 16) |
                         (static_cast<uint8_t>(pairs[at + 1]) << 8) |
                         static_cast<uint8_t>(pairs[at + 2]);
      if (pairs[at + 3] == 1) out += pairs.substr(at, 9 + len);
      at += 9 + len;
    }
    return out;
  });
}

// Eleventh hostile probe, N1: twenty connections from twenty addresses, each opening ten small
// calls at a time that claim an access key nobody has (each is answered at once, from its
// headers) and reconnecting whenever the server stopped reading them, kept gRPC's callback
// threads (two on this host, one queue for every connection) seconds behind: a new client's
// session took 5-23 s and 40-67 % failed at a 5 s deadline, while gRPC held thousands of
// transports of connections that had already gone (2,000-4,100 descriptors). The guard now lets a
// connection with no verified request open at most 8 calls at a time, an address 32 and all such
// connections 256 (a connection's first call excepted), and keeps counting a gone connection's
// calls until gRPC has closed its transport (AOBJ-SEC-026). Here a new signed client connects
// every 200 ms beside such a flood, for six seconds; each must be served within 5 s.
TEST_F(RawFloodTest, TinyUnverifiedCallsFromManyAddressesDoNotStallNewClients) {
  ASSERT_NO_FATAL_FAILURE(StartServer({}));
  const int port = std::stoi(server_->endpoint().substr(server_->endpoint().rfind(':') + 1));
  const std::string path = "/aobj.v1.ObjectService/OpenSession";
  std::atomic<bool> stop{false};
  std::atomic<int64_t> calls{0}, connections{0};
  std::vector<std::thread> attackers;
  for (int t = 0; t < 4; ++t) {
    attackers.emplace_back([&, t] {
      struct Conn {
        int fd = -1;
        uint32_t next = 1;
        int source = 0;
      };
      std::vector<Conn> conns(5);
      auto connect = [&](Conn& c) {
        if (c.fd >= 0) close(c.fd);
        c.fd = testing::ConnectLoopback(port, c.source);
        c.next = 1;
        if (c.fd < 0) return;
        connections.fetch_add(1);
        const std::string preface = RapidResetOctets(1, 0, true);
        (void)!send(c.fd, preface.data(), preface.size(), MSG_NOSIGNAL);
        fcntl(c.fd, F_SETFL, O_NONBLOCK);
      };
      for (size_t i = 0; i < conns.size(); ++i) {
        conns[i].source = 2 + t * 5 + static_cast<int>(i);  // 127.0.0.2-21
        connect(conns[i]);
      }
      char sink[65536];
      while (!stop.load()) {
        for (Conn& c : conns) {
          if (c.fd < 0) {
            connect(c);
            continue;
          }
          ssize_t got;
          while ((got = recv(c.fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0) {
          }
          if (got == 0) {  // the server closed it: a fresh one
            connect(c);
            continue;
          }
          std::string out;
          for (int k = 0; k < 10; ++k, c.next += 2) {
            const std::string md_key = "AKNOBODYATALL";
            out += H2Frame(1, 4, c.next,
                           GrpcHeaderBlock(path, {{"aobj-access-key-id", md_key},
                                                  {"aobj-nonce", std::string(32, 'n')},
                                                  {"aobj-signature", std::string(64, '0')}}));
            out += H2Frame(0, 0, c.next, std::string("\0\0\0\x10\0\x08", 6));
          }
          // As the probe's script did, a part sent is not made up for (what follows is no
          // longer HTTP/2, which gRPC answers by closing the connection); nothing sent at all
          // means the server stopped reading it (or cut it): a fresh one.
          const ssize_t n = send(c.fd, out.data(), out.size(), MSG_NOSIGNAL);
          if (n > 0) {
            calls.fetch_add(10);
          } else {
            connect(c);
          }
        }
        // The next round as soon as an answer comes, or after 50 ms.
        std::vector<pollfd> ready;
        for (const Conn& c : conns) {
          if (c.fd >= 0) ready.push_back(pollfd{c.fd, POLLIN, 0});
        }
        (void)poll(ready.data(), ready.size(), 50);
      }
      for (Conn& c : conns) {
        if (c.fd >= 0) close(c.fd);
      }
    });
  }
  const uint64_t before_kib = ProcStatusKiB(server_->pid(), "VmHWM");
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // the flood is under way
  int served = 0, tried = 0;
  double slowest = 0;
  std::string failures;
  size_t most_descriptors = 0;
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::seconds(Env("AOBJ_FLOOD_SECONDS", 6));
  while (std::chrono::steady_clock::now() < until) {
    ClientOptions o;
    o.endpoint = server_->endpoint();
    o.access_key_id = testing::kAccessKey;
    o.secret = testing::kSecret;
#if defined(__SANITIZE_ADDRESS__)
    o.timeout_ms = 15000;  // instrumented, a session beside the flood took up to 3.5 s alone
#else
    o.timeout_ms = 5000;
#endif
    const auto start = std::chrono::steady_clock::now();
    auto c = Client::Connect(o);
    absl::Status s = c.ok() ? (*c)->HeadBucket("test-bucket") : c.status();
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++tried;
    slowest = std::max(slowest, took);
    if (s.ok()) {
      ++served;
    } else {
      failures += "\n" + s.ToString();
    }
    size_t fds = 0;
    for ([[maybe_unused]] const auto& e :
         std::filesystem::directory_iterator("/proc/" + std::to_string(server_->pid()) + "/fd")) {
      ++fds;
    }
    most_descriptors = std::max(most_descriptors, fds);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  stop = true;
  for (auto& th : attackers) th.join();
  const uint64_t peak_kib = ProcStatusKiB(server_->pid(), "VmHWM");
  std::printf(
      "%d of %d new clients served beside %lld tiny unverified calls over %lld connections; "
      "slowest %.3f s; the server held at most %zu descriptors, VmHWM %llu -> %llu MiB%s\n",
      served, tried, static_cast<long long>(calls.load()),
      static_cast<long long>(connections.load()), slowest, most_descriptors,
      static_cast<unsigned long long>(before_kib >> 10),
      static_cast<unsigned long long>(peak_kib >> 10), failures.c_str());
  EXPECT_GT(calls.load(), 2000) << "the flood did not happen: nothing was tested";
  EXPECT_EQ(served, tried) << failures;
  // 3 descriptors a live connection, about 80 in all with the guard's bounds; before them, the
  // transports of gone connections that gRPC still held took this to 547-715 on some runs (the
  // probe's 20-second runs: 2,000-4,100).
  EXPECT_LT(most_descriptors, 300u);
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(peak_kib - before_kib, uint64_t{200} << 10);  // 481 MiB before, on one run of two
#endif
  EXPECT_TRUE(Served()) << server_->log();
}

// The seventh probe: zero-length frames of a type HTTP/2 says to ignore, as fast as loopback
// takes them (28 million a second from two connections), took a core of the server and were
// never cut. The guard cuts a connection whose frames pass eight times their header and data
// payload and an allowance of 1 MiB, halved (down to 64 KiB) after each cut of the address
// (AOBJ-SEC-024).
TEST_F(RawFloodTest, FramesCarryingNothingAreCut) {
  ExpectBounded("empty frames", "frame_flood", "little, but a core, and never cut", [](int64_t i) {
    std::string out = i == 0 ? RapidResetOctets(1, 0, true) : "";
    for (int k = 0; k < 4096; ++k) out += H2Frame(0x2a, 0, 0, "");
    return out;
  });
}

// The seventh probe ("hoard"): a tenant's connections that set their flow-control window to 0
// (the server may send no DATA) and sent 250 ListObjectsV2 calls of 1,000 keys each: gRPC kept
// every reply, 800 MiB for three connections and 2.2 GB for twelve. Now the replies of one access
// key that its clients have not taken hold at most 32 MiB of reply octets; the key's further
// requests are refused SLOW_DOWN before they run (AOBJ-SEC-025), other keys are served, and the
// key is served again once its connections close.
TEST_F(RawFloodTest, RepliesLeftUnreadAreBoundedPerKey) {
  ASSERT_NO_FATAL_FAILURE(StartServer({}));
  {
    ClientOptions o = testing::TestClientOptions(*server_);
    auto c = Client::Connect(o);
    ASSERT_TRUE(c.ok()) << c.status();
    auto buf = (*c)->AllocateBuffer(64);
    ASSERT_TRUE(buf.ok());
    std::memset((*buf)->data(), 'x', 64);
    for (int i = 0; i < 1000; ++i) {
      // Long names: each listing reply is about 250 KB.
      ASSERT_TRUE((*c)->Put("test-bucket", "listing/" + std::string(200, 'k') + std::to_string(i),
                            **buf, 64)
                      .ok());
    }
  }
  const std::string key = "AKTESTSECOND", secret = "second-secret-for-tests";
  testing::RawSession session(server_->endpoint(), key, secret);
  ASSERT_TRUE(session.Open().status.ok());
  RequestSigner signer(key, secret);
  aobj::v1::ListObjectsV2Request list;
  list.set_bucket("test-bucket");
  list.set_max_keys(1000);
  const std::string body = list.SerializeAsString();
  const std::string path = "/aobj.v1.ObjectService/ListObjectsV2";
  std::string message = {'\0', static_cast<char>(body.size() >> 24),
                         static_cast<char>(body.size() >> 16), static_cast<char>(body.size() >> 8),
                         static_cast<char>(body.size())};
  message += body;
  const int port = std::stoi(server_->endpoint().substr(server_->endpoint().rfind(':') + 1));
  const uint64_t before_kib = ProcStatusKiB(server_->pid(), "VmHWM");
  // Sixteen connections of 64 calls each, signed first and then sent one after another at once:
  // many are queued before the first reply is written (eighth hostile probe).
  std::vector<int> fds;
  std::vector<std::string> outs;
  for (int conn = 0; conn < 16; ++conn) {
    const int fd = ConnectLoopback(port, SO_SNDTIMEO, timeval{5, 0});
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
    // SETTINGS_INITIAL_WINDOW_SIZE = 0, and the acknowledgement of the server's SETTINGS.
    std::string out = std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") +
                      H2Frame(4, 0, 0, std::string("\x00\x04\x00\x00\x00\x00", 6)) +
                      H2Frame(4, 1, 0, "");
    for (uint32_t i = 0; i < 64; ++i) {
      const RequestAuth a = signer.Sign(path, session.session_hex(), body, absl::Now());
      const std::vector<std::pair<std::string, std::string>> md = AuthMetadata(a);
      out +=
          H2Frame(1, 4, 2 * i + 1, GrpcHeaderBlock(path, md)) + H2Frame(0, 1, 2 * i + 1, message);
    }
    outs.push_back(std::move(out));
  }
  for (size_t conn = 0; conn < fds.size(); ++conn) {
    ASSERT_EQ(send(fds[conn], outs[conn].data(), outs[conn].size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(outs[conn].size()));
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));  // every call answered or refused
  const uint64_t peak_kib = ProcStatusKiB(server_->pid(), "VmHWM");
  std::printf("1024 listings never read: server VmHWM %llu -> %llu MiB\n",
              static_cast<unsigned long long>(before_kib >> 10),
              static_cast<unsigned long long>(peak_kib >> 10));
  const std::string log = server_->log();
  // The key's next request is refused for its untaken replies (asked on a connection of its
  // own; the log is no witness: its 20 lines a second may go to other refusals).
  std::string refusal;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < until) {
    aobj::v1::HeadBucketRequest head;
    head.set_bucket("test-bucket");
    const RawReply r = session.Send(Method::kHeadBucket, head);
    refusal = std::string(r.status.message());
    if (refusal.find("replies of this access key that its clients have not read") !=
        std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_NE(refusal.find("replies of this access key that its clients have not read"),
            std::string::npos)
      << "the key's requests were not refused: " << refusal << "\n"
      << log;
  // What the key's replies hold: the bound, and at most the replies of the requests that were
  // running when it was reached (eighth hostile probe: calls queued before the bound was reached
  // all ran, and held 472 MB against the 32 MiB; here 171 MB before the change, 34 MB after).
  const size_t at = refusal.find(" hold ");
  uint64_t held = 0;
  ASSERT_NE(at, std::string::npos) << refusal;
  ASSERT_TRUE(absl::SimpleAtoi(refusal.substr(at + 6, refusal.find(' ', at + 6) - (at + 6)), &held))
      << refusal;
  std::printf("the key's unread replies hold %llu octets\n", static_cast<unsigned long long>(held));
  EXPECT_LT(held, uint64_t{48} << 20) << "past the 32 MiB bound by more than the running requests";
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(peak_kib - before_kib, uint64_t{160} << 10)
      << "the server grew by " << ((peak_kib - before_kib) >> 10)
      << " MiB (measured here: 64 MiB with the bound, 279 MiB without)";
#endif
  EXPECT_TRUE(Served()) << "another access key was not served:\n" << log;
  for (int fd : fds) close(fd);
  // The key's replies go with its connections, and it is served again.
  ClientOptions o = testing::TestClientOptions(*server_);
  o.access_key_id = key;
  o.secret = secret;
  bool served = false;
  for (int attempt = 0; attempt < 50 && !served; ++attempt) {
    auto c = Client::Connect(o);
    served = c.ok() && (*c)->HeadBucket("test-bucket").ok();
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(served) << "the key was still refused after its connections closed";
}

void RequestFloodTest::ExpectServedBesideASameAddressChurn(std::vector<std::string> flags,
                                                           size_t held) {
  ASSERT_NO_FATAL_FAILURE(StartServer(std::move(flags)));
  const std::string endpoint = server_->endpoint();
  const int port = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
  ASSERT_TRUE(Served());
  constexpr int kTries = 8;
  const testing::ChurnResult r = testing::ServedBesideAChurn(
      2, held,
      [&](size_t, int) {
        return ConnectLoopback(port, SO_SNDTIMEO, timeval{1, 0});
      },
      [&] { return static_cast<bool>(Served()); }, kTries);
  std::printf("%d of %d clients served beside %d churned connections\n", r.served, kTries,
              r.opened);
  EXPECT_GT(r.opened, 300) << "the churn did not happen: nothing was tested";
  EXPECT_GE(r.served, kTries - 1) << server_->log();
  EXPECT_TRUE(Served());
}

// Seventh hostile probe, F3: connections opened and closed about a thousand times a second, each
// younger than the second a new connection has to authenticate, kept 127.0.0.1 at its limit with
// nothing the listener would cut, and 17 of 33 attempts of a local client were refused. Now the
// oldest unauthenticated connection of an address at its limit is cut however young, and a
// newcomer gets in (here with a limit of 256 per address and 300 churning connections).
TEST_F(RequestFloodTest, AChurnOfYoungConnectionsDoesNotKeepNewClientsOut) {
  ExpectServedBesideASameAddressChurn({"--max-connections-per-address", "256"}, 150);
}

// Ninth hostile probe, P3: at the bound on unauthenticated connections from all addresses, a
// churn of about 1,000 a second from one address kept every one of them within its grace, and
// a newcomer of that address was refused (6 of 32). The oldest of all is now cut however young:
// the bound is a queue, and a newcomer has until a bound's worth of newer connections has come
// to authenticate. Here the bound is 64 and the churn holds 200, all from 127.0.0.1.
TEST_F(RequestFloodTest, AChurnAtTheBoundOnUnauthenticatedConnectionsDoesNotKeepNewClientsOut) {
  ExpectServedBesideASameAddressChurn({"--max-unauthenticated-connections", "64"}, 100);
}

// Opens `n` connections that each carry one signed HeadBucket of `key` (raw HTTP/2, so that
// each is a connection of its own), and leaves them open in `*fds`.
void OpenSignedConnections(int port, const std::string& key, const std::string& secret, int n,
                           std::vector<int>* fds, const std::string& endpoint) {
  testing::RawSession session(endpoint, key, secret);
  ASSERT_TRUE(session.Open().status.ok());
  RequestSigner signer(key, secret);
  aobj::v1::HeadBucketRequest head;
  head.set_bucket("test-bucket");
  const std::string body = head.SerializeAsString();
  const std::string path = "/aobj.v1.ObjectService/HeadBucket";
  std::string message = {'\0', 0, 0, 0, static_cast<char>(body.size())};
  message += body;
  for (int i = 0; i < n; ++i) {
    const int fd = ConnectLoopback(port, SO_RCVTIMEO, timeval{10, 0});
    ASSERT_GE(fd, 0);
    fds->push_back(fd);
    const RequestAuth a = signer.Sign(path, session.session_hex(), body, absl::Now());
    const std::vector<std::pair<std::string, std::string>> md = AuthMetadata(a);
    const std::string out = std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + H2Frame(4, 0, 0, "") +
                            H2Frame(4, 1, 0, "") + H2Frame(1, 4, 1, GrpcHeaderBlock(path, md)) +
                            H2Frame(0, 1, 1, message);
    ASSERT_EQ(send(fd, out.data(), out.size(), MSG_NOSIGNAL), static_cast<ssize_t>(out.size()));
    // One at a time, answered before the next: the server's order of them is known.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
}

// Whether the server closed `fd` (an end of file after whatever it sent, or a reset); reads it.
bool ClosedByServer(int fd) {
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
  }
  return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

// Ninth hostile probe: a newcomer from a quiet address may cut a young unauthenticated connection
// of the busiest other address, and "busiest" counted every connection, so an address busy with
// signed clients (127.0.0.1 here, holding 24 of them) was the busiest, and a churn from other
// addresses cut its newcomers before they authenticated (19 of 34 of the probe's attempts
// failed). Only unauthenticated connections count now: the churn's addresses are the busy ones.
// Here the bound on unauthenticated connections is 32, and 127.0.0.2-9 churn connections that
// send nothing.
TEST_F(RequestFloodTest, ANewcomerOfAnAddressBusyWithSignedClientsIsNotCutForAChurn) {
  ASSERT_NO_FATAL_FAILURE(StartServer({"--max-unauthenticated-connections", "32"}));
  const int port = std::stoi(server_->endpoint().substr(server_->endpoint().rfind(':') + 1));
  // 24 connections of 127.0.0.1 that each carried a signed HeadBucket (raw HTTP/2: a client
  // library's channels share one connection), held open.
  std::vector<int> signed_fds;
  ASSERT_NO_FATAL_FAILURE(OpenSignedConnections(port, testing::kAccessKey, testing::kSecret, 24,
                                                &signed_fds, server_->endpoint()));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // every HeadBucket answered
  constexpr int kTries = 8;
  const testing::ChurnResult r = testing::ServedBesideAChurn(
      2, 100,
      [&](size_t i, int t) {
        return testing::ConnectLoopback(port, 2 + static_cast<int>((i + t) % 8));
      },
      [&] { return static_cast<bool>(Served()); }, kTries);
  std::printf(
      "%d of %d clients of 127.0.0.1 (beside 24 signed ones) served beside %d "
      "connections churned from 8 other addresses\n",
      r.served, kTries, r.opened);
  EXPECT_GT(r.opened, 300) << "the churn did not happen: nothing was tested";
  EXPECT_GE(r.served, kTries - 1) << server_->log();
  int held = 0;  // the signed connections are never cut for the churn
  for (int fd : signed_fds) {
    held += ClosedByServer(fd) ? 0 : 1;
    close(fd);
  }
  EXPECT_EQ(held, 24) << "signed connections were cut";
}

// Ninth hostile probe, P1: one tenant's signed connections (about 6,700 from 7 addresses, each
// address below its limit) took every descriptor, and every OpenSession of another tenant then
// failed SLOW_DOWN for want of them. A principal's authenticated connections are now bounded
// (here 8): past it its oldest go. Another principal is served meanwhile.
TEST_F(RequestFloodTest, OnePrincipalsSignedConnectionsAreBounded) {
  ASSERT_NO_FATAL_FAILURE(StartServer({"--max-connections-per-principal", "8"}));
  const int port = std::stoi(server_->endpoint().substr(server_->endpoint().rfind(':') + 1));
  std::vector<int> fds;
  ASSERT_NO_FATAL_FAILURE(OpenSignedConnections(port, "AKTESTSECOND", "second-secret-for-tests", 12,
                                                &fds, server_->endpoint()));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the cuts take effect
  std::vector<bool> closed;
  for (int fd : fds) closed.push_back(ClosedByServer(fd));
  int open = 0, oldest_closed = 0;
  for (size_t i = 0; i < closed.size(); ++i) {
    open += closed[i] ? 0 : 1;
    oldest_closed += closed[i] && i < 4 ? 1 : 0;
  }
  // The raw session's own connection counts too: 8 of the 13 stay, the oldest cut.
  EXPECT_LE(open, 8) << "the principal held more signed connections than its bound";
  EXPECT_GE(open, 7);
  EXPECT_EQ(oldest_closed, 4) << "not the oldest were cut";
  EXPECT_TRUE(Served()) << "another principal was not served";
  for (int fd : fds) close(fd);
}

// Fifth hostile probe of issue 16, A: calls that forge a tenant's claim (its access key ID is
// not secret) and never send their message held every read slot of that key, and each of the
// tenant's own requests waited about 20 s behind them, some cut at the read deadline. Now a call
// of a connection that carried the key's verified requests is read first, and an unproven
// holder gives its slot to a waiting call of its key after a second (AOBJ-SEC-018): with 16 such
// calls held over 4 connections, new signed clients of the same key are served at once, six in
// a row, each within 5 s (20 s before).
TEST_F(RequestFloodTest, ForgedClaimsOfATenantsKeyDoNotKeepItWaiting) {
  ASSERT_NO_FATAL_FAILURE(StartServer({}));
  std::vector<std::unique_ptr<HeldCalls>> held;
  for (int c = 0; c < 4; ++c) {
    held.push_back(std::make_unique<HeldCalls>(server_->endpoint(), 4, ForgedAuth('f')));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int i = 0; i < 6; ++i) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(Served()) << server_->log();
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_LT(took, std::chrono::seconds(5)) << "client " << i;
  }
}

// Twelfth hostile probe, F1: 80 connections from 127.0.0.2-21, each opening 8 calls that forge
// the claim of a tenant's key (or of another key) and send one octet of a 4 KiB message, then one
// more every half second, made the tenant's new clients wait 3-9 s each time they started (4 of
// 140 failed at a 5 s deadline): the read slots of a key went, in arrival order, to the waiting
// call whose connection had the fewest strikes and slots, and at the start no connection had
// any. Now a connection also ranks by its calls registered and ever registered (a filler's
// keep coming, a new client has one), equals go latest first, and a slot held 200 ms without
// its message goes to a waiting call that ranks no worse (AOBJ-SEC-018). Three rounds: a filler
// starts and new clients of the key open sessions beside it, each within 2.5 s (the first took
// 10.2 s before, on this host; 0.4 s after).
// One slow call: its headers claim `key` with a forged signature; its message announces 4 KiB
// and sends one octet.
std::string SlowCall(const std::string& key, uint32_t stream) {
  return H2Frame(
             1, 4, stream,
             GrpcHeaderBlock("/aobj.v1.ObjectService/OpenSession",
                             {{"aobj-access-key-id", key},
                              {"aobj-timestamp", std::to_string(absl::ToUnixMillis(absl::Now()))},
                              {"aobj-nonce", std::string(32, static_cast<char>('a' + stream % 26))},
                              {"aobj-signature", std::string(64, '0')}})) +
         H2Frame(0, 0, stream, std::string("\0\0\0\x10\0\x08", 6));
}

// New sessions of the tenant's key opened one after another, 250 ms apart, each on a fresh
// connection, as a tenant's new clients would beside a filler: how long each took, which failed.
struct NewSessions {
  std::string seen;  // " 0.031 0.029!SLOW_DOWN: ..."
  double slowest = 0;
  int failed = 0;
};
NewSessions OpenNewSessions(const std::string& endpoint, int count) {
  NewSessions out;
  for (int i = 0; i < count; ++i) {
    const auto start = std::chrono::steady_clock::now();
    testing::RawSession session(endpoint, testing::kAccessKey, testing::kSecret);
    const RawReply r = session.Send(Method::kOpenSession, session.DefaultOpen());
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out.slowest = std::max(out.slowest, took);
    out.failed += r.status.ok() ? 0 : 1;
    out.seen += " " + std::to_string(took).substr(0, 5) +
                (r.status.ok() ? "" : "!" + r.status.ToString());
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return out;
}

// Every new session was opened, each within 2.5 s (10 s instrumented).
void ExpectServedPromptly(const NewSessions& n) {
  EXPECT_EQ(n.failed, 0) << n.seen;
#if defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(n.slowest, 10.0) << n.seen;  // instrumented: everything is several times slower
#else
  EXPECT_LT(n.slowest, 2.5) << n.seen;
#endif
}

TEST_F(RequestFloodTest, AFillerOfSlowCallsFromManyConnectionsDoesNotKeepANewClientWaiting) {
  ASSERT_NO_FATAL_FAILURE(StartServer({}));
  const int port = std::stoi(server_->endpoint().substr(server_->endpoint().rfind(':') + 1));
  auto slow_call = SlowCall;
  for (int round = 0; round < 3; ++round) {
    std::atomic<bool> stop{false};
    std::atomic<int> connected{0};
    // 80 connections, four from each of 127.0.0.2-21, alternately claiming the tenant's key and
    // another; 8 slow calls each at once, then one more each every half second.
    std::thread filler([&] {
      std::vector<std::pair<int, uint32_t>> conns;
      for (int i = 0; i < 80; ++i) {
        const int fd = testing::ConnectLoopback(port, 2 + i / 4);
        if (fd < 0) continue;
        std::string out = RapidResetOctets(1, 0, true);
        const std::string key = i % 2 == 0 ? testing::kAccessKey : "AKTESTSECOND";
        uint32_t s = 1;
        for (; s < 17; s += 2) out += slow_call(key, s);
        (void)!send(fd, out.data(), out.size(), MSG_NOSIGNAL);
        fcntl(fd, F_SETFL, O_NONBLOCK);
        conns.emplace_back(fd, s);
        ++connected;
      }
      char sink[65536];
      for (int tick = 0; !stop.load(); ++tick) {
        for (size_t i = 0; i < conns.size(); ++i) {
          auto& [fd, next] = conns[i];
          while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0) {
          }
          if (tick % 5 == 0) {
            const std::string more =
                slow_call(i % 2 == 0 ? testing::kAccessKey : "AKTESTSECOND", next);
            next += 2;
            (void)!send(fd, more.data(), more.size(), MSG_NOSIGNAL);
          }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      for (auto& [fd, next] : conns) close(fd);
    });
    while (connected.load() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const NewSessions n = OpenNewSessions(server_->endpoint(), 8);
    stop = true;
    filler.join();
    std::printf("round %d: new sessions of the key beside the filler:%s\n", round, n.seen.c_str());
    ExpectServedPromptly(n);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

// A filler that opens a fresh connection for every slow call, one every `every` (10 ms), from
// 127.0.0.2-250, each claiming the tenant's key and never finishing its message; the newest
// `keep` (200) stay open (thirteenth hostile probe, N1).
class FreshConnectionFiller {
 public:
  explicit FreshConnectionFiller(int port,
                                 std::chrono::microseconds every = std::chrono::milliseconds(10),
                                 size_t keep = 200) {
    thread_ = std::thread([this, port, every, keep] {
      std::deque<int> open;
      char sink[4096];
      for (int i = 0; !stop_.load(); ++i) {
        const int fd = testing::ConnectLoopback(port, 2 + i % 249);
        if (fd >= 0) {
          const std::string out = RapidResetOctets(1, 0, true) + SlowCall(testing::kAccessKey, 1);
          (void)!send(fd, out.data(), out.size(), MSG_NOSIGNAL);
          fcntl(fd, F_SETFL, O_NONBLOCK);
          open.push_back(fd);
          ++opened_;
        }
        for (int o : open) {
          while (recv(o, sink, sizeof(sink), MSG_DONTWAIT) > 0) {
          }
        }
        while (open.size() > keep) {
          close(open.front());
          open.pop_front();
        }
        std::this_thread::sleep_for(every);
      }
      for (int o : open) close(o);
    });
  }
  ~FreshConnectionFiller() { Stop(); }
  int Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return opened_.load();
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> opened_{0};
  std::thread thread_;
};

// Thirteenth hostile probe, N1: with the filler above (2 to 24 of 28 new clients failed at 50-200
// calls a second) a fresh connection with one call looked exactly like a new client, read slots
// took the latest of equals first, and once the key held 128 such calls the client's call, the
// oldest, was ended for room, and its retry, struck for it, ranked last. The guard sees that the
// client's message arrived whole and says so; such a call is read at once (AOBJ-SEC-029).
TEST_F(RequestFloodTest, AFreshConnectionForEverySlowCallDoesNotKeepANewClientOut) {
  ASSERT_NO_FATAL_FAILURE(StartServer({}));
  const int port = std::stoi(server_->endpoint().substr(server_->endpoint().rfind(':') + 1));
  FreshConnectionFiller filler(port);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // 128 calls of the key and more
  const NewSessions n = OpenNewSessions(server_->endpoint(), 10);
  const int opened = filler.Stop();
  std::printf("%d filler connections; new sessions of the key beside them:%s\n", opened,
              n.seen.c_str());
  EXPECT_GT(opened, 200) << "the filler did not happen: nothing was tested";
  ExpectServedPromptly(n);
  EXPECT_TRUE(Served()) << server_->log();
}

// A relay on 127.0.0.1 that hands each write of its clients to `port` in two halves, 20 ms
// apart, as a network may deliver a request in two reads (a segment boundary, a retransmission);
// the server's answers go back as they come.
class SplittingRelay {
 public:
  // kWrites: each write from the client reaches the server in two halves `gap` apart.
  // kMessageEnds: the client's octets go on as they come but for the last four of each DATA
  // frame that ends its stream (a request's message), which come `gap` later.
  // kMessageStarts: they go on as they come, but each stream's first DATA frame `gap` later.
  enum class Split { kWrites, kMessageEnds, kMessageStarts };
  explicit SplittingRelay(int port, std::chrono::milliseconds gap = std::chrono::milliseconds(20),
                          Split split = Split::kWrites)
      : port_(port), gap_(gap), split_(split) {
    listener_ = testing::ListenLoopback(&endpoint_);
    if (listener_ < 0) return;
    acceptor_ = std::thread([this] {
      while (!stop_.load()) {
        pollfd p{listener_, POLLIN, 0};
        if (poll(&p, 1, 50) != 1) continue;
        const int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client < 0) continue;
        relays_.emplace_back([this, client] { Relay(client); });
      }
    });
  }
  ~SplittingRelay() {
    stop_ = true;
    if (acceptor_.joinable()) acceptor_.join();
    for (auto& t : relays_) t.join();
    close(listener_);
  }
  const std::string& endpoint() const { return endpoint_; }

 private:
  // Where the client's octets stand in its HTTP/2 frames.
  struct Frames {
    size_t preface_left = 24;
    std::string header;  // of the frame begun, until whole
    uint32_t left = 0;   // of its payload
    bool ends_message = false;
    absl::flat_hash_set<uint32_t>
        data_seen;  // streams whose first DATA frame came (kMessageStarts)
  };
  bool SplitMessages(int server, const char* data, size_t n, Frames* f) {
    std::string out;
    auto flush = [&] {
      const bool ok = out.empty() || send(server, out.data(), out.size(), MSG_NOSIGNAL) ==
                                         static_cast<ssize_t>(out.size());
      out.clear();
      return ok;
    };
    for (size_t i = 0; i < n;) {
      if (f->preface_left > 0) {
        const size_t k = std::min(f->preface_left, n - i);
        out.append(data + i, k);
        f->preface_left -= k;
        i += k;
      } else if (f->header.size() < 9) {
        // A frame header goes on once whole (a part of one waits for the next read).
        f->header.push_back(data[i++]);
        if (f->header.size() < 9) continue;
        const auto* h = reinterpret_cast<const uint8_t*>(f->header.data());
        const uint32_t stream =
            ((uint32_t{h[5]} << 24) | (uint32_t{h[6]} << 16) | (uint32_t{h[7]} << 8) | h[8]) &
            0x7fffffffu;
        if (split_ == Split::kMessageStarts && h[3] == 0 && f->data_seen.insert(stream).second) {
          if (!flush()) return false;  // everything before this stream's first DATA goes now
          std::this_thread::sleep_for(gap_);
        }
        out += f->header;
        f->left = (uint32_t{h[0]} << 16) | (uint32_t{h[1]} << 8) | h[2];
        f->ends_message = split_ == Split::kMessageEnds && h[3] == 0 && (h[4] & 1) != 0;
        if (f->left == 0) f->header.clear();
      } else {
        size_t k = std::min<size_t>(f->left, n - i);
        if (f->ends_message && f->left > 4 && k > f->left - 4) {
          k = f->left - 4;  // up to the last four octets; those come later
          out.append(data + i, k);
          i += k;
          f->left -= static_cast<uint32_t>(k);
          if (!flush()) return false;
          std::this_thread::sleep_for(gap_);
          continue;
        }
        out.append(data + i, k);
        i += k;
        f->left -= static_cast<uint32_t>(k);
        if (f->left == 0) f->header.clear();
      }
    }
    return flush();
  }

  void Relay(int client) {
    const int server = testing::ConnectLoopback(port_);
    Frames frames;
    char buf[65536];
    while (server >= 0 && !stop_.load()) {
      pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (poll(p, 2, 50) <= 0) continue;
      if (p[1].revents != 0) {
        const ssize_t n = recv(server, buf, sizeof(buf), MSG_DONTWAIT);
        if (n <= 0 || send(client, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) break;
      }
      if (p[0].revents != 0) {
        const ssize_t n = recv(client, buf, sizeof(buf), MSG_DONTWAIT);
        if (n <= 0) break;
        if (split_ != Split::kWrites) {
          if (!SplitMessages(server, buf, static_cast<size_t>(n), &frames)) break;
          continue;
        }
        const ssize_t half = n / 2;
        if (send(server, buf, static_cast<size_t>(half), MSG_NOSIGNAL) != half) break;
        std::this_thread::sleep_for(gap_);
        if (send(server, buf + half, static_cast<size_t>(n - half), MSG_NOSIGNAL) != n - half) {
          break;
        }
      }
    }
    if (server >= 0) close(server);
    close(client);
  }
  const int port_;
  const std::chrono::milliseconds gap_;
  const Split split_;
  int listener_ = -1;
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> relays_;  // the acceptor's alone until it is joined
};

// Ten new sessions through `relay`, beside the one-call filler (begun 1.5 s before them).
NewSessions ThroughTheRelayBesideTheFiller(
    int port, const SplittingRelay& relay,
    std::chrono::microseconds every = std::chrono::milliseconds(10), size_t keep = 200,
    int sessions = 10) {
  FreshConnectionFiller filler(port, every, keep);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  NewSessions n = OpenNewSessions(relay.endpoint(), sessions);
  const int opened = filler.Stop();
  std::printf("%d filler connections; new sessions through the relay:%s\n", opened, n.seen.c_str());
  EXPECT_GT(opened, 200) << "the filler did not happen: nothing was tested";
  return n;
}

// Fourteenth hostile probe, S1-S3: the guard decided whether a call was whole from the octets of
// one read, so a new client whose request reached it in two reads (through a relay that splits
// each write, 5 ms apart) was not marked, and beside the filler above 12 to 18 of 28 failed. The
// guard now holds such a call back, up to 250 ms, for the rest of its message.
TEST_F(RequestFloodTest, ANewClientsRequestSplitOverTwoReadsIsStillReadFirst) {
  ASSERT_NO_FATAL_FAILURE(StartServer({}));
  const int port = std::stoi(server_->endpoint().substr(server_->endpoint().rfind(':') + 1));
  SplittingRelay relay(port);
  ASSERT_FALSE(relay.endpoint().empty());
  ExpectServedPromptly(ThroughTheRelayBesideTheFiller(port, relay));
}

// Fifteenth hostile probe, G1-G3: a request split by more than the guard's 250 ms went on
// unmarked and met AOBJ-SEC-018's read order as if its message would never come: beside the
// filler, 15 to 17 of 28 such clients failed with a 300 ms gap. The guard now marks such a call
// late and tells the server when its stream ends; the server then reads it at once.
TEST_F(RequestFloodTest, ANewClientsRequestSplitBeyondTheGuardsWaitIsReadOnceItCame) {
  const std::string port_file = testing::TestDir() + "-metrics-port";
  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--metrics-listen", "127.0.0.1:0", "--metrics-port-file", port_file}));
  const int port = std::stoi(server_->endpoint().substr(server_->endpoint().rfind(':') + 1));
  // The last four octets of each request's message come 400 ms after the rest.
  SplittingRelay relay(port, std::chrono::milliseconds(400), SplittingRelay::Split::kMessageEnds);
  ASSERT_FALSE(relay.endpoint().empty());
  const NewSessions n = ThroughTheRelayBesideTheFiller(port, relay);
  EXPECT_EQ(n.failed, 0) << n.seen;
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(n.slowest, 3.0) << n.seen;  // the 400 ms gap, and the server's answer
#endif
  // Each session's request went on marked late, and its message was then read.
  const std::string metrics = Metrics(std::stoi(testing::ReadFile(port_file)));
  unlink(port_file.c_str());
  EXPECT_GE(Sample(metrics, "aobj_http2_calls_late_whole_total"), 10) << metrics;
}

// Sixteenth hostile probe, M1: a call marked late waited for a read slot among the filler's calls,
// and once the key held 128 of them the oldest of equals was ended for room: at a filler rate R
// a late call lived about 128/R s (a 1 s split beside 200 calls a second: 16 of 18 failed). Such
// a call now waits for its message without a slot, among a bound of its own (1024 by default),
// so the same filler, keeping its newest 400, ends none of them.
TEST_F(RequestFloodTest, ANewClientsRequestSplitBySecondsOutlivesAFasterFiller) {
  ASSERT_NO_FATAL_FAILURE(StartServer({}));
  const int port = std::stoi(server_->endpoint().substr(server_->endpoint().rfind(':') + 1));
  SplittingRelay relay(port, std::chrono::milliseconds(1200), SplittingRelay::Split::kMessageEnds);
  ASSERT_FALSE(relay.endpoint().empty());
  const NewSessions n =
      ThroughTheRelayBesideTheFiller(port, relay, std::chrono::milliseconds(3), 400, 5);
  EXPECT_EQ(n.failed, 0) << n.seen;
}

// Seventeenth hostile probe, N1: header-only calls of a tenant's own key on a connection it had
// verified were never chosen to be ended (ranked last, as proven) and, beside a filler, filled the
// late calls' bound. A key's own late calls are now bounded per key, and (nineteenth probe, B1:
// sixteen keys' 128 each filled it again) in all: with a bound of 8, of 20 such calls on the
// tenant's verified connection 12 are ended at once. Twentieth probe, S1: calls on the tenant's
// verified connections that claimed other tenants' key IDs counted against no bound but the one
// on all late calls, and beside a filler filled it with one credential; they now count against
// the tenant that verified the connection, whatever key they claim.
class OwnLateCallsTest : public RequestFloodTest {
 protected:
  void ExpectBounded(const std::vector<std::string>& args,
                     const std::string& claimed = testing::kAccessKey) {
    ASSERT_NO_FATAL_FAILURE(StartServer(args));
    testing::RawSession session(server_->endpoint(), testing::kAccessKey, testing::kSecret);
    ASSERT_TRUE(session.Open().status.ok());  // the connection now carried a verified request
    HeldCalls held(server_->endpoint(), 20, ForgedAuth('f', claimed), /*shared=*/true);
    std::map<int, std::string> ended = held.Finished(std::chrono::milliseconds(2000));
    std::string names;
    for (const auto& [i, name] : ended) names += " " + std::to_string(i) + ":" + name;
    EXPECT_EQ(ended.size(), 12u) << "20 of the key's own late calls at a bound of 8:" << names;
    EXPECT_EQ(std::count_if(ended.begin(), ended.end(),
                            [](const auto& e) { return e.second == "SLOW_DOWN"; }),
              12);
    EXPECT_TRUE(Served()) << server_->log();
  }
};

TEST_F(OwnLateCallsTest, AKeysOwnAreBoundedPerKey) {
  ExpectBounded({"--max-reading-requests-per-principal", "8"});
}

TEST_F(OwnLateCallsTest, AllKeysOwnAreBoundedInAll) {
  ExpectBounded({"--max-reading-requests", "8", "--max-reading-requests-per-principal", "100"});
}

TEST_F(OwnLateCallsTest, CallsClaimingAnotherKeyCountAgainstTheVerifiedTenant) {
  ExpectBounded({"--max-reading-requests-per-principal", "8"}, "AKTESTSECOND");
}

TEST_F(OwnLateCallsTest, CallsClaimingAnotherKeyCountAgainstAllTenantsBound) {
  ExpectBounded({"--max-reading-requests", "8", "--max-reading-requests-per-principal", "100"},
                "AKTESTSECOND");
}

// Sixteenth hostile probe, L1: a call marked late that got a read slot held it while its message
// was still coming, and a waiting call of the same key took it after 200 ms and ended it
// SLOW_DOWN (8 of 30 real late calls, with no filler), with a text naming another key. Calls
// marked late now take no slot until their message has come.
TEST_F(RequestFloodTest, LateCallsOfOneKeyTogetherAreAllRead) {
  ASSERT_NO_FATAL_FAILURE(StartServer({}));
  const int port = std::stoi(server_->endpoint().substr(server_->endpoint().rfind(':') + 1));
  // More clients at once than the server has read slots (8), each request's message 700 ms late;
  // a relay each, so that each has a connection of its own (gRPC shares one between channels to
  // the same address with the same arguments).
  std::vector<std::unique_ptr<SplittingRelay>> relays;
  std::vector<std::future<NewSessions>> clients;
  for (int i = 0; i < 16; ++i) {
    relays.push_back(std::make_unique<SplittingRelay>(port, std::chrono::milliseconds(700),
                                                      SplittingRelay::Split::kMessageEnds));
    ASSERT_FALSE(relays.back()->endpoint().empty());
    clients.push_back(std::async(std::launch::async, [endpoint = relays.back()->endpoint()] {
      return OpenNewSessions(endpoint, 2);
    }));
  }
  int failed = 0;
  std::string seen;
  for (auto& c : clients) {
    const NewSessions n = c.get();
    failed += n.failed;
    seen += n.seen;
  }
  std::printf("late sessions, 16 at once:%s\n", seen.c_str());
  EXPECT_EQ(failed, 0) << seen;
}

// AOBJ-SEC-029: a call marked late whose message is large (more than the server's flow-control
// window) comes only once the server reads it; waiting for its end without a slot, such a call
// was never read and ended DEADLINE_EXCEEDED (found when calls marked late stopped taking slots).
// The guard reports a late stream that passed 16 KiB of its message without the end, and the
// server gives it a slot: 1 MiB messages whose data came 400 ms after their headers are read
// (and, forged, refused for their signature).
TEST_F(RequestFloodTest, ALateCallWithALargeMessageIsRead) {
  const std::string port_file = testing::TestDir() + "-metrics-port";
  ASSERT_NO_FATAL_FAILURE(
      StartServer({"--metrics-listen", "127.0.0.1:0", "--metrics-port-file", port_file}));
  const int port = std::stoi(server_->endpoint().substr(server_->endpoint().rfind(':') + 1));
  SplittingRelay relay(port, std::chrono::milliseconds(400), SplittingRelay::Split::kMessageStarts);
  ASSERT_FALSE(relay.endpoint().empty());
  const FloodResult r = Flood(relay.endpoint(), 4, 1, 1, size_t{1} << 20, ForgedAuth('b'));
  std::printf("late large messages: %s\n", Describe(r).c_str());
  EXPECT_EQ(r.done, 4);
  EXPECT_EQ(r.by_aobj_code.at("SIGNATURE_DOES_NOT_MATCH"), 4) << Describe(r);
#if !defined(__SANITIZE_ADDRESS__)
  // Each within the 400 ms and the read (0.43 s here); without the guard's report, the server
  // gives such a call a slot only 3 s after its headers (kAwaitLate: 3.4 s here).
  EXPECT_LT(r.slowest_s, 2.5) << Describe(r);
#endif
  const std::string metrics = Metrics(std::stoi(testing::ReadFile(port_file)));
  unlink(port_file.c_str());
  EXPECT_GE(Sample(metrics, "aobj_http2_calls_late_large_total"), 4) << metrics;
}

}  // namespace
}  // namespace aobj
