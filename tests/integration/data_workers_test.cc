// aobj-server --data-workers (ServerOptions::data_workers) in process (--data-isolation none):
// one progress thread per worker, a principal's sessions spread over them, and every session's
// transfers and fast-path requests served by its own worker. The confined form (processes per
// worker) is in confinement_test.cc; the routing itself in sharded_channel_test.cc.
#include <dirent.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "aobj/client.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/server_process.h"

namespace aobj {
namespace {

using testing::ServerProcess;
using testing::TestDir;

// Threads of `pid` whose name is `comm`.
int ThreadsNamed(pid_t pid, const std::string& comm) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(tasks.c_str()), closedir);
  int n = 0;
  if (!dir) return n;
  while (dirent* e = readdir(dir.get())) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(tasks + "/" + e->d_name + "/comm");
    std::string name;
    std::getline(in, name);
    n += name == comm ? 1 : 0;
  }
  return n;
}

TEST(DataWorkersTest, InProcessWorkersEachServeTheirSessions) {
  // One directory per server inside the test's own (which is removed after the test; the
  // servers' directories beside it were left behind in /tmp).
  const std::string dir = TestDir();
  std::filesystem::create_directories(dir);
  for (int workers : {1, 3}) {
    SCOPED_TRACE(workers);
    ServerProcess server(dir + "/workers-" + std::to_string(workers), "memory",
                         {"--data-isolation", "none", "--data-workers", std::to_string(workers)});
    ASSERT_TRUE(server.Start()) << server.log();
    EXPECT_NE(server.log().find("event=data_channel workers=" + std::to_string(workers) +
                                " isolation=none"),
              std::string::npos)
        << server.log();
    EXPECT_EQ(ThreadsNamed(server.pid(), "aobj-ucx-server"), workers);
    std::vector<std::unique_ptr<Client>> clients;
    for (int i = 0; i < 4; ++i) {
      clients.push_back(testing::ConnectTo(server));
      ASSERT_NE(clients.back(), nullptr);
    }
    constexpr size_t kSize = 300 << 10;
    for (int round = 0; round < 2; ++round) {
      for (size_t i = 0; i < clients.size(); ++i) {
        Client& c = *clients[i];
        const std::string key = "w" + std::to_string(i);
        auto buf = c.AllocateBuffer(kSize);
        ASSERT_TRUE(buf.ok()) << buf.status();
        std::memset((*buf)->data(), static_cast<int>(round * 16 + i), kSize);
        auto put = c.Put("test-bucket", key, **buf, kSize);
        ASSERT_TRUE(put.ok()) << "session " << i << ": " << put.status();
        std::memset((*buf)->data(), 0xee, kSize);
        auto get = c.Get("test-bucket", key, **buf);
        ASSERT_TRUE(get.ok()) << "session " << i << ": " << get.status();
        for (size_t k = 0; k < kSize; k += 4096) {
          ASSERT_EQ((*buf)->data()[k], static_cast<uint8_t>(round * 16 + i));
        }
        // A small request: on the fast path of the session's worker (spec 8.9).
        auto head = c.Head("test-bucket", key);
        ASSERT_TRUE(head.ok()) << head.status();
        EXPECT_EQ(head->size, kSize);
        EXPECT_FALSE(c.session().fast_path_address.empty()) << "session " << i;
      }
    }
    // Each session was told the address of its own worker: as many addresses as workers.
    std::set<std::string> addresses;
    for (const auto& c : clients) addresses.insert(c->session().fast_path_address);
    EXPECT_EQ(addresses.size(), static_cast<size_t>(workers));
  }
}

}  // namespace
}  // namespace aobj
