// Load: many concurrent clients with mixed operations against one server, bounded in time
// (AOBJ_SOAK_SECONDS, default 12; AOBJ_SOAK_CLIENTS, default 64). Zero unexpected errors, every
// object read back equal to what was written, server memory flat after warm-up, and no leaked
// file descriptors, endpoints or registrations.
#include <dirent.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "aobj/client.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/server_process.h"

namespace aobj {
namespace {

using testing::kAccessKey;
using testing::kSecret;
using testing::ServerProcess;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

int64_t RssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  }
  return -1;
}

int FdCount(pid_t pid) {
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n - 2;
}

void Fill(uint8_t* p, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(rng() >> 56);
}

class SoakTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SoakTest, MixedLoadFromManyClients) {
  const int clients = EnvInt("AOBJ_SOAK_CLIENTS", 64);
  const int seconds = EnvInt("AOBJ_SOAK_SECONDS", 12);
  ServerProcess server(testing::TestDir(), GetParam(), {"--threads", "8"});
  ASSERT_TRUE(server.Start()) << server.log();
  const pid_t pid = server.pid();
  const int fds_before = FdCount(pid);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> ops{0}, unexpected{0}, mismatches{0};
  std::mutex err_mu;
  std::string first_error;
  auto note = [&](const std::string& what) {
    ++unexpected;
    std::lock_guard<std::mutex> l(err_mu);
    if (first_error.empty()) first_error = what;
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      ClientOptions o;
      o.endpoint = server.endpoint();
      o.access_key_id = kAccessKey;
      o.secret = kSecret;
      o.timeout_ms = 60000;
      auto c = Client::Connect(o);
      if (!c.ok()) return note("connect: " + std::string(c.status().message()));
      constexpr size_t kMax = 256 << 10;
      auto src = (*c)->AllocateBuffer(kMax), dst = (*c)->AllocateBuffer(kMax);
      if (!src.ok() || !dst.ok()) return note("allocate");
      std::mt19937 rng(static_cast<uint32_t>(t));
      std::map<std::string, std::pair<size_t, uint64_t>> mine;  // key -> (size, seed)
      uint64_t seq = 0;
      while (!stop.load()) {
        const int op = static_cast<int>(rng() % 10);
        const std::string key = "c" + std::to_string(t) + "/k" + std::to_string(rng() % 8);
        if (op < 4) {  // put
          const size_t size = rng() % 3 == 0 ? rng() % 20000 : rng() % kMax;
          const uint64_t seed = (static_cast<uint64_t>(t) << 32) | ++seq;
          Fill((*src)->data(), size, seed);
          auto r = (*c)->Put("test-bucket", key, **src, size);
          if (!r.ok()) note("put: " + std::string(r.status().message()));
          else mine[key] = {size, seed};
        } else if (op < 8) {  // get and verify
          auto r = (*c)->Get("test-bucket", key, **dst);
          auto it = mine.find(key);
          if (it == mine.end()) {
            if (r.ok() || ErrorCodeOf(r.status()) != ErrorCode::kNoSuchKey) note("get of unwritten key");
          } else if (!r.ok()) {
            note("get: " + std::string(r.status().message()));
          } else {
            Fill((*src)->data(), it->second.first, it->second.second);
            if (r->info.size != it->second.first ||
                std::memcmp((*src)->data(), (*dst)->data(), it->second.first) != 0) {
              ++mismatches;
            }
          }
        } else if (op == 8) {  // head
          auto r = (*c)->Head("test-bucket", key);
          if (!r.ok() && ErrorCodeOf(r.status()) != ErrorCode::kNoSuchKey) note("head");
        } else {  // delete
          if (!(*c)->Delete("test-bucket", key).ok()) note("delete");
          mine.erase(key);
        }
        ++ops;
      }
      if (!(*c)->Close().ok()) note("close");
    });
  }

  // Sample the server's memory each second; compare the last third with the middle third.
  std::vector<int64_t> rss;
  for (int s = 0; s < seconds; ++s) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    rss.push_back(RssKiB(pid));
  }
  stop = true;
  for (auto& th : threads) th.join();

  EXPECT_EQ(unexpected.load(), 0u) << first_error;
  EXPECT_EQ(mismatches.load(), 0u) << "objects read back differ from what was written";
  EXPECT_GT(ops.load(), static_cast<uint64_t>(clients));
  const size_t third = rss.size() / 3;
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer keeps freed memory in quarantine, so resident memory is not meaningful.
  constexpr bool kMeasureMemory = false;
#else
  constexpr bool kMeasureMemory = true;
#endif
  if (kMeasureMemory && third > 0) {
    const int64_t middle = *std::max_element(rss.begin() + third, rss.begin() + 2 * third);
    const int64_t last = *std::max_element(rss.begin() + 2 * third, rss.end());
    EXPECT_LE(last, middle + middle / 5 + 32 * 1024)
        << "server memory still growing after warm-up: " << middle << " KiB -> " << last << " KiB";
  }
  // Sessions closed: after the reaper ran, the server holds what it held before the load.
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  EXPECT_LE(FdCount(pid), fds_before + 2) << "file descriptors leaked";
  server.Stop();
  const std::string log = server.log();
  // AOBJ-MEM-023: every kept rkey is released with its session.
  EXPECT_NE(log.find("open_sessions=0 endpoints=0 rkeys_outstanding=0"), std::string::npos)
      << log.substr(log.size() > 2000 ? log.size() - 2000 : 0);
  std::cout << "[ soak ] " << clients << " clients, " << seconds << " s, " << ops.load()
            << " operations, server RSS " << (rss.empty() ? 0 : rss.back()) << " KiB\n";
}

INSTANTIATE_TEST_SUITE_P(Stores, SoakTest, ::testing::Values("memory", "fs"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace aobj
