// Faults on the server side: SIGKILL during PUT with a restart on the same store, a full disk,
// and a store that turns read-only. Nothing stored is ever torn, and errors are specific.
#include <sys/mount.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
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

std::unique_ptr<Client> Connect(const ServerProcess& server) {
  ClientOptions o;
  o.endpoint = server.endpoint();
  o.access_key_id = kAccessKey;
  o.secret = kSecret;
  o.timeout_ms = 20000;
  auto c = Client::Connect(o);
  return c.ok() ? std::move(*c) : nullptr;
}

// Fills with a pattern that identifies the version in every 8-byte word.
void FillVersion(uint8_t* p, size_t n, uint64_t version) {
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t v = version * 0x9E3779B97F4A7C15ull ^ i;
    std::memcpy(p + i, &v, 8);
  }
}

// The version the buffer holds as a whole, or -1 if it is torn or mixed.
int64_t VersionOf(const uint8_t* p, size_t n, uint64_t max_version) {
  for (uint64_t version = 0; version <= max_version; ++version) {
    uint64_t first = version * 0x9E3779B97F4A7C15ull ^ 0;
    uint64_t got;
    std::memcpy(&got, p, 8);
    if (got != first) continue;
    for (size_t i = 0; i + 8 <= n; i += 8) {
      uint64_t v = version * 0x9E3779B97F4A7C15ull ^ i;
      std::memcpy(&got, p + i, 8);
      if (got != v) return -1;
    }
    return static_cast<int64_t>(version);
  }
  return -1;
}

TEST(ServerCrashTest, KilledDuringPutLeavesOldOrNewObjectAfterRestart) {
  ServerProcess server(testing::TestDir(), "fs");
  ASSERT_TRUE(server.Start()) << server.log();
  constexpr size_t kSize = size_t{48} << 20;
  {
    auto c = Connect(server);
    ASSERT_NE(c, nullptr);
    auto buf = c->AllocateBuffer(kSize);
    ASSERT_TRUE(buf.ok());
    FillVersion((*buf)->data(), kSize, 0);
    ASSERT_TRUE(c->Put("test-bucket", "crashy", **buf, kSize).ok());
  }
  std::mt19937 rng(42);
  uint64_t max_version = 0;
  for (int round = 1; round <= 6; ++round) {
    auto c = Connect(server);
    ASSERT_NE(c, nullptr) << server.log();
    auto buf = c->AllocateBuffer(kSize);
    ASSERT_TRUE(buf.ok());
    FillVersion((*buf)->data(), kSize, static_cast<uint64_t>(round));
    max_version = static_cast<uint64_t>(round);
    std::atomic<bool> done{false};
    std::thread writer([&] {
      c->Put("test-bucket", "crashy", **buf, kSize).IgnoreError();
      done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 120));
    server.Kill(SIGKILL);
    writer.join();  // the call fails (or finished just before the kill)
    buf->reset();
    c.reset();
    ASSERT_TRUE(server.Start()) << "restart failed in round " << round << "\n" << server.log();

    auto r = Connect(server);
    ASSERT_NE(r, nullptr);
    auto out = r->AllocateBuffer(kSize);
    ASSERT_TRUE(out.ok());
    auto get = r->Get("test-bucket", "crashy", **out);  // checksum verified end to end
    ASSERT_TRUE(get.ok()) << "round " << round << ": " << get.status();
    ASSERT_EQ(get->info.size, kSize);
    const int64_t version = VersionOf((*out)->data(), kSize, max_version);
    EXPECT_GE(version, 0) << "round " << round << ": the object is torn";  // AOBJ-OBJ-011
  }
  // No temporary files survive a restart.
  std::string cmd = "test -z \"$(ls -A '" + server.dir() + "/data/test-bucket/tmp')\"";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

// A tmpfs of a few MiB as the store root (needs root for mount; skipped otherwise).
class SmallDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TestDir();
    ASSERT_EQ(std::system(("mkdir -p '" + dir_ + "/data'").c_str()), 0);
    if (mount("tmpfs", (dir_ + "/data").c_str(), "tmpfs", 0, "size=12m") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno) << ")";
    }
    mounted_ = true;
    server_ = std::make_unique<ServerProcess>(dir_, "fs");
    ASSERT_TRUE(server_->Start()) << server_->log();
  }
  void TearDown() override {
    if (server_) {
      EXPECT_TRUE(server_->Alive()) << server_->log();
      server_->Stop();
    }
    if (bucket_bound_) umount2((dir_ + "/data/test-bucket").c_str(), MNT_DETACH);
    if (mounted_) umount2((dir_ + "/data").c_str(), MNT_DETACH);
  }
  std::string dir_;
  bool mounted_ = false;
  bool bucket_bound_ = false;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(SmallDiskTest, FullDiskGivesStorageErrorAndCorruptsNothing) {
  auto c = Connect(*server_);
  ASSERT_NE(c, nullptr);
  auto buf = c->AllocateBuffer(size_t{16} << 20);
  ASSERT_TRUE(buf.ok());
  FillVersion((*buf)->data(), size_t{4} << 20, 1);
  ASSERT_TRUE(c->Put("test-bucket", "kept", **buf, size_t{4} << 20).ok());
  FillVersion((*buf)->data(), size_t{16} << 20, 2);
  auto big = c->Put("test-bucket", "kept", **buf, size_t{16} << 20);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(ErrorCodeOf(big.status()), ErrorCode::kStorageError) << big.status();
  EXPECT_NE(std::string(big.status().message()).find("no space left"), std::string::npos)
      << big.status();
  // The old object is intact and readable; the server serves on.
  auto out = c->AllocateBuffer(size_t{16} << 20);
  ASSERT_TRUE(out.ok());
  auto get = c->Get("test-bucket", "kept", **out);
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_EQ(get->info.size, size_t{4} << 20);
  EXPECT_EQ(VersionOf((*out)->data(), size_t{4} << 20, 2), 1);
  // Space freed: writes work again.
  ASSERT_TRUE(c->Delete("test-bucket", "kept").ok());
  EXPECT_TRUE(c->Put("test-bucket", "after", **buf, size_t{8} << 20).ok());
}

TEST_F(SmallDiskTest, ReadOnlyStoreRefusesWritesCleanly) {
  auto c = Connect(*server_);
  ASSERT_NE(c, nullptr);
  auto buf = c->AllocateBuffer(1 << 20);
  ASSERT_TRUE(buf.ok());
  FillVersion((*buf)->data(), 1 << 20, 3);
  ASSERT_TRUE(c->Put("test-bucket", "ro", **buf, 1 << 20).ok());
  // The bucket's directory becomes read-only under the running server (a bind mount of itself,
  // remounted read-only: root ignores permission bits, so chmod would not do).
  const std::string bucket = dir_ + "/data/test-bucket";
  ASSERT_EQ(mount(bucket.c_str(), bucket.c_str(), nullptr, MS_BIND, nullptr), 0)
      << std::strerror(errno);
  ASSERT_EQ(mount(nullptr, bucket.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr), 0)
      << std::strerror(errno);
  bucket_bound_ = true;
  auto put = c->Put("test-bucket", "ro2", **buf, 1 << 20);
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(ErrorCodeOf(put.status()), ErrorCode::kStorageError) << put.status();
  auto get = c->Get("test-bucket", "ro", **buf);
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_EQ(VersionOf((*buf)->data(), 1 << 20, 3), 3);
}

}  // namespace
}  // namespace aobj
