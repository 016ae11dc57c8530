// The `aobj` CLI against aobj-server, and clients killed with SIGKILL in the middle of transfers:
// the server keeps serving and nothing half-written becomes visible (issue: first end-to-end
// path, "Done when").
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "aobj/client.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/server_process.h"
#include "wire/crypto.h"

namespace aobj {
namespace {

using testing::kAccessKey;
using testing::kSecret;
using testing::ServerProcess;
using testing::Spawn;
using testing::WaitFor;

void WriteRandomFile(const std::string& path, size_t size, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> block(1 << 17);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  for (size_t off = 0; off < size;) {
    for (auto& v : block) v = rng();
    const size_t n = std::min(size - off, block.size() * 8);
    ASSERT_EQ(write(fd, block.data(), n), static_cast<ssize_t>(n));
    off += n;
  }
  close(fd);
}

std::string Md5Of(const std::string& path) {
  Md5 md5;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  std::vector<char> buf(1 << 20);
  ssize_t r;
  while ((r = read(fd, buf.data(), buf.size())) > 0) md5.Update(buf.data(), static_cast<size_t>(r));
  close(fd);
  return "\"" + HexEncode(md5.Finish()) + "\"";
}

class CliTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(testing::TestDir(), GetParam());
    ASSERT_TRUE(server_->Start()) << server_->log();
  }
  void TearDown() override {
    if (server_) {
      EXPECT_TRUE(server_->Alive()) << server_->log();
      server_->Stop();
    }
  }
  // Runs the CLI to completion; returns its exit code.
  int Cli(std::vector<std::string> args) {
    std::vector<std::string> argv = {AOBJ_CLI_BINARY, "--endpoint", server_->endpoint(),
                                     "--credentials", server_->credentials_file()};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_t pid = Spawn(argv, server_->dir() + "/cli.log");
    int status = WaitFor(pid, std::chrono::seconds(120));
    return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::unique_ptr<Client> Connect() {
    ClientOptions o;
    o.endpoint = server_->endpoint();
    o.access_key_id = kAccessKey;
    o.secret = kSecret;
    auto c = Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }
  std::unique_ptr<ServerProcess> server_;
};

TEST_P(CliTest, PutThenGet256MiBRoundTripsByteForByte) {
  const std::string in = server_->dir() + "/in.bin", out = server_->dir() + "/out.bin";
  WriteRandomFile(in, size_t{256} << 20, 1);
  ASSERT_EQ(Cli({"put", in, "test-bucket/big/file.bin"}), 0) << testing::ReadFile(server_->dir() + "/cli.log");
  ASSERT_EQ(Cli({"get", "test-bucket/big/file.bin", out}), 0) << testing::ReadFile(server_->dir() + "/cli.log");
  EXPECT_EQ(std::system(("cmp -s '" + in + "' '" + out + "'").c_str()), 0) << "files differ";
  const std::string log = testing::ReadFile(server_->dir() + "/cli.log");
  EXPECT_NE(log.find("path=rma"), std::string::npos) << log;
  EXPECT_NE(log.find(Md5Of(in)), std::string::npos) << "ETag is not the MD5 of the content";
}

TEST_P(CliTest, ErrorsAreNamedAndExitNonZero) {
  EXPECT_EQ(Cli({"head", "test-bucket/nothing-here"}), 1);
  const std::string log = testing::ReadFile(server_->dir() + "/cli.log");
  EXPECT_NE(log.find("NO_SUCH_KEY (NoSuchKey)"), std::string::npos) << log;
  EXPECT_EQ(Cli({"frobnicate"}), 2);
}

TEST_P(CliTest, ClientKilledMidTransferLeavesNothingHalfWritten) {
  const std::string in = server_->dir() + "/in.bin";
  WriteRandomFile(in, size_t{128} << 20, 2);
  const std::string expected_etag = Md5Of(in);
  // Kill PUTs and GETs at several points of their life, repeatedly.
  int attempt = 0;
  for (int delay_ms : {30, 80, 150, 250, 400}) {
    for (const char* op : {"put", "get"}) {
      ++attempt;
      std::vector<std::string> argv = {AOBJ_CLI_BINARY, "--endpoint", server_->endpoint(),
                                       "--credentials", server_->credentials_file(), "--quiet"};
      if (std::string(op) == "put") {
        argv.insert(argv.end(), {"put", in, "test-bucket/victim"});
      } else {
        argv.insert(argv.end(), {"get", "test-bucket/victim", server_->dir() + "/got.bin"});
      }
      pid_t pid = Spawn(argv, server_->dir() + "/killed.log");
      ASSERT_GT(pid, 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      kill(pid, SIGKILL);
      WaitFor(pid, std::chrono::seconds(20));
      ASSERT_TRUE(server_->Alive()) << "server died after kill " << attempt << "\n"
                                    << server_->log();
      // The key holds nothing or the complete object: never a torn one.
      auto c = Connect();
      ASSERT_NE(c, nullptr);
      auto head = c->Head("test-bucket", "victim");
      if (head.ok()) {
        EXPECT_EQ(head->size, size_t{128} << 20);
        EXPECT_EQ(head->etag, expected_etag);
        auto buf = c->AllocateBuffer(head->size);
        ASSERT_TRUE(buf.ok());
        auto get = c->Get("test-bucket", "victim", **buf);  // checksum verified end to end
        ASSERT_TRUE(get.ok()) << get.status();
      } else {
        EXPECT_EQ(ErrorCodeOf(head.status()), ErrorCode::kNoSuchKey) << head.status();
      }
      // Other clients are served normally.
      auto small = c->AllocateBuffer(70000);
      ASSERT_TRUE(small.ok());
      ASSERT_TRUE(c->Put("test-bucket", "bystander", **small, 70000).ok());
    }
  }
  // The file store has no temporary files left once the killed sessions' transfers ended.
  if (GetParam() == "fs") {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const std::string tmp = server_->dir() + "/data/test-bucket/tmp";
    std::string cmd = "test -z \"$(ls -A '" + tmp + "')\"";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << "temporary files remain in " << tmp;
  }
}

TEST_P(CliTest, ClientKilledDuringMultipartUploadLeavesNoPartialObject) {
  const std::string in = server_->dir() + "/mp.bin";
  WriteRandomFile(in, size_t{96} << 20, 3);
  for (int delay_ms : {40, 120, 250, 400}) {
    std::vector<std::string> argv = {AOBJ_CLI_BINARY, "--endpoint", server_->endpoint(),
                                     "--credentials", server_->credentials_file(), "--quiet",
                                     "cp", "--multipart-threshold", "8388608", "--part-size",
                                     "8388608", in, "aobj://test-bucket/mp-victim"};
    pid_t pid = Spawn(argv, server_->dir() + "/killed-mp.log");
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(pid, SIGKILL);
    WaitFor(pid, std::chrono::seconds(20));
    ASSERT_TRUE(server_->Alive()) << server_->log();
    auto c = Connect();
    ASSERT_NE(c, nullptr);
    // The key holds nothing or the whole multipart object (12 parts of 8 MiB).
    auto head = c->Head("test-bucket", "mp-victim");
    if (head.ok()) {
      EXPECT_EQ(head->size, size_t{96} << 20);
      EXPECT_NE(head->etag.find("-12\""), std::string::npos) << head->etag;
    } else {
      EXPECT_EQ(ErrorCodeOf(head.status()), ErrorCode::kNoSuchKey) << head.status();
    }
    // Uploads the dead client left behind are listed and can be aborted. A Complete the client
    // sent just before it died may still finish on the server meanwhile: then the upload is gone
    // (NO_SUCH_UPLOAD) and the object is whole.
    auto uploads = c->ListMultipartUploads("test-bucket");
    ASSERT_TRUE(uploads.ok()) << uploads.status();
    for (const auto& u : uploads->uploads) {
      absl::Status aborted = c->AbortMultipartUpload("test-bucket", u.key, u.upload_id);
      EXPECT_TRUE(aborted.ok() || ErrorCodeOf(aborted) == ErrorCode::kNoSuchUpload) << aborted;
    }
    auto after = c->Head("test-bucket", "mp-victim");
    if (after.ok()) {
      EXPECT_EQ(after->size, size_t{96} << 20);
    } else {
      EXPECT_EQ(ErrorCodeOf(after.status()), ErrorCode::kNoSuchKey) << after.status();
    }
    c->Delete("test-bucket", "mp-victim").IgnoreError();
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, CliTest, ::testing::Values("memory", "fs"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace aobj
