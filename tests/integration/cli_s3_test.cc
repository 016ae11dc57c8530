// The S3-style commands of the aobj CLI (tools/cli_s3.cc) against a real aobj-server, both
// stores: cp in all three directions and --recursive, ls with common prefixes, rm --recursive,
// mb, rb --force, stat, ranged and chunked downloads, and keys that must not escape the target
// directory of a recursive download.
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "aobj/client.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/server_process.h"

namespace aobj {
namespace {

namespace fs = std::filesystem;
using testing::kAccessKey;
using testing::kSecret;
using testing::ServerProcess;

void WriteBytes(const fs::path& path, const std::string& data) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

std::string ReadBytes(const fs::path& path) { return testing::ReadFile(path.string()); }

std::string Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

class CliS3Test : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(testing::TestDir(), GetParam());
    ASSERT_TRUE(server_->Start()) << server_->log();
    work_ = fs::path(server_->dir()) / "work";
    fs::create_directories(work_);
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  // Runs the CLI; returns its exit code; *output gets stdout and stderr together.
  int Cli(std::vector<std::string> args, std::string* output = nullptr) {
    std::vector<std::string> argv = {AOBJ_CLI_BINARY, "--endpoint", server_->endpoint(),
                                     "--credentials", server_->credentials_file()};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string log = server_->dir() + "/cli-" + std::to_string(++runs_) + ".log";
    pid_t pid = testing::Spawn(argv, log);
    int status = testing::WaitFor(pid, std::chrono::seconds(120));
    last_output_ = testing::ReadFile(log);
    if (output) *output = last_output_;
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
  fs::path work_;
  int runs_ = 0;
  std::string last_output_;
};

TEST_P(CliS3Test, CopyUpDownAndAcrossWithRecursion) {
  const fs::path src = work_ / "src";
  WriteBytes(src / "a.bin", Random(100000, 1));
  WriteBytes(src / "sub" / "b.txt", "hello\n");
  WriteBytes(src / "sub" / "deeper" / "c.bin", Random(3 << 20, 2));
  WriteBytes(src / "empty", "");
  ASSERT_EQ(Cli({"cp", "--recursive", src.string(), "aobj://test-bucket/tree/", "--metadata",
                 "owner=me", "--content-type", "x/y"}),
            0)
      << last_output_;
  EXPECT_NE(last_output_.find("upload: "), std::string::npos);
  // Single-file upload to a "directory" key takes the file's name.
  ASSERT_EQ(Cli({"cp", (src / "a.bin").string(), "aobj://test-bucket/single/"}), 0) << last_output_;
  std::string out;
  ASSERT_EQ(Cli({"stat", "aobj://test-bucket/single/a.bin"}, &out), 0) << out;
  EXPECT_NE(out.find("size:          100000"), std::string::npos) << out;
  ASSERT_EQ(Cli({"stat", "test-bucket/tree/sub/b.txt"}, &out), 0) << out;
  EXPECT_NE(out.find("metadata:      owner=me"), std::string::npos) << out;
  EXPECT_NE(out.find("content-type:  x/y"), std::string::npos) << out;

  // Recursive download reproduces the tree byte for byte.
  const fs::path down = work_ / "down";
  ASSERT_EQ(Cli({"cp", "--recursive", "aobj://test-bucket/tree", down.string()}), 0)
      << last_output_;
  for (const char* rel : {"a.bin", "sub/b.txt", "sub/deeper/c.bin", "empty"}) {
    EXPECT_EQ(ReadBytes(down / rel), ReadBytes(src / rel)) << rel;
  }
  // Server-side copy of the whole tree, then of one object with REPLACE.
  ASSERT_EQ(Cli({"cp", "--recursive", "aobj://test-bucket/tree/", "aobj://test-bucket/copy/"}), 0)
      << last_output_;
  EXPECT_NE(last_output_.find("copy: aobj://test-bucket/tree/sub/b.txt to "
                              "aobj://test-bucket/copy/sub/b.txt"),
            std::string::npos)
      << last_output_;
  ASSERT_EQ(Cli({"cp", "aobj://test-bucket/copy/sub/b.txt", "aobj://test-bucket/renamed.txt",
                 "--metadata-directive", "REPLACE", "--metadata", "k=v"}),
            0)
      << last_output_;
  auto c = Connect();
  auto head = c->Head("test-bucket", "renamed.txt");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->user_metadata, (std::map<std::string, std::string>{{"k", "v"}}));
  head = c->Head("test-bucket", "copy/sub/deeper/c.bin");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->size, size_t{3} << 20);
  EXPECT_EQ(head->user_metadata.at("owner"), "me");
  // Download into an existing directory keeps the key's name.
  ASSERT_EQ(Cli({"cp", "aobj://test-bucket/renamed.txt", work_.string()}), 0) << last_output_;
  EXPECT_EQ(ReadBytes(work_ / "renamed.txt"), "hello\n");
}

TEST_P(CliS3Test, ChunkedRangedAndStdoutDownloads) {
  const std::string content = Random((5 << 20) + 123, 3);
  WriteBytes(work_ / "big", content);
  ASSERT_EQ(Cli({"cp", (work_ / "big").string(), "aobj://test-bucket/big"}), 0) << last_output_;
  // Chunks of 1 MB: six ranged GETs pinned with If-Match.
  ASSERT_EQ(Cli({"cp", "aobj://test-bucket/big", (work_ / "big.out").string(), "--chunk-size",
                 "1000000"}),
            0)
      << last_output_;
  EXPECT_TRUE(ReadBytes(work_ / "big.out") == content);
  ASSERT_EQ(Cli({"cp", "aobj://test-bucket/big", (work_ / "part").string(), "--range",
                 "bytes=1000-2999999", "--chunk-size", "777777"}),
            0)
      << last_output_;
  EXPECT_TRUE(ReadBytes(work_ / "part") == content.substr(1000, 2999000));
  ASSERT_EQ(
      Cli({"cp", "aobj://test-bucket/big", (work_ / "tail").string(), "--range", "bytes=-10"}), 0);
  EXPECT_EQ(ReadBytes(work_ / "tail"), content.substr(content.size() - 10));
  // Standard output, quiet: exactly the bytes.
  WriteBytes(work_ / "small", "0123456789");
  ASSERT_EQ(Cli({"cp", (work_ / "small").string(), "aobj://test-bucket/small"}), 0);
  std::string out;
  ASSERT_EQ(Cli({"--quiet", "cp", "aobj://test-bucket/small", "-", "--range", "bytes=2-4"}, &out),
            0);
  EXPECT_EQ(out, "234");
  // Bad ranges: usage error before connecting, or the server's InvalidRange.
  EXPECT_EQ(Cli({"cp", "aobj://test-bucket/small", "-", "--range", "bytes=5-4"}), 2);
  EXPECT_EQ(Cli({"cp", "aobj://test-bucket/small", "-", "--range", "bytes=99999999999999999999-"}),
            2);
  EXPECT_EQ(
      Cli({"cp", "aobj://test-bucket/small", (work_ / "x").string(), "--range", "bytes=10-"}, &out),
      1);
  EXPECT_NE(out.find("InvalidRange"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(work_ / "x"));
  EXPECT_FALSE(fs::exists(work_ / "x.aobj-partial"));
}

TEST_P(CliS3Test, LsShowsCommonPrefixesLikeAwsS3) {
  auto c = Connect();
  auto buf = c->AllocateBuffer(16);
  ASSERT_TRUE(buf.ok());
  for (const char* k : {"top.txt", "photos/2023/a.jpg", "photos/2024/b.jpg", "photos/index"}) {
    ASSERT_TRUE(c->Put("test-bucket", k, **buf, 16).ok());
  }
  ASSERT_TRUE(c->CreateBucket("another").ok());
  std::string out;
  ASSERT_EQ(Cli({"ls"}, &out), 0) << out;
  EXPECT_NE(out.find(" another\n"), std::string::npos) << out;
  EXPECT_NE(out.find(" test-bucket\n"), std::string::npos) << out;
  ASSERT_EQ(Cli({"ls", "aobj://test-bucket"}, &out), 0) << out;
  EXPECT_NE(out.find("PRE photos/\n"), std::string::npos) << out;
  EXPECT_NE(out.find("         16 top.txt\n"), std::string::npos) << out;
  ASSERT_EQ(Cli({"ls", "aobj://test-bucket/photos/"}, &out), 0) << out;
  EXPECT_NE(out.find("PRE 2023/\n"), std::string::npos) << out;
  EXPECT_NE(out.find("PRE 2024/\n"), std::string::npos) << out;
  EXPECT_NE(out.find(" index\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("a.jpg"), std::string::npos) << out;
  ASSERT_EQ(Cli({"ls", "--recursive", "--summarize", "test-bucket"}, &out), 0) << out;
  EXPECT_NE(out.find(" photos/2023/a.jpg\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Total Objects: 4"), std::string::npos) << out;
  EXPECT_EQ(Cli({"ls", "aobj://no-such-bucket"}, &out), 1);
  EXPECT_NE(out.find("NoSuchBucket"), std::string::npos) << out;
}

// Issue 16 finding 6: keys chosen by a hostile writer carry terminal escape sequences; the CLI
// prints them escaped (\x1b), never raw, in listings and in its messages.
TEST_P(CliS3Test, HostileKeysArePrintedEscaped) {
  auto c = Connect();
  auto buf = c->AllocateBuffer(16);
  ASSERT_TRUE(buf.ok());
  const std::string key = "evil\x1b]0;owned\x07\x1b[2Jname";
  auto put = c->Put("test-bucket", key, **buf, 16);
  if (!put.ok()) GTEST_SKIP() << "the server refuses control characters in keys: " << put.status();
  std::string out;
  ASSERT_EQ(Cli({"ls", "aobj://test-bucket"}, &out), 0) << out;
  EXPECT_NE(out.find("evil\\x1b]0;owned\\x07\\x1b[2Jname\n"), std::string::npos) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << "a raw ESC reached the terminal";
  EXPECT_EQ(out.find('\x07'), std::string::npos);
  ASSERT_EQ(Cli({"rm", "--recursive", "aobj://test-bucket/evil"}, &out), 0) << out;
  EXPECT_NE(out.find("delete: aobj://test-bucket/evil\\x1b]0;"), std::string::npos) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
}

TEST_P(CliS3Test, RmRecursiveMbAndRbForce) {
  ASSERT_EQ(Cli({"mb", "aobj://scratch"}), 0) << last_output_;
  EXPECT_NE(last_output_.find("make_bucket: scratch"), std::string::npos);
  EXPECT_EQ(Cli({"mb", "aobj://scratch"}), 1);
  EXPECT_NE(last_output_.find("BucketAlreadyOwnedByYou"), std::string::npos) << last_output_;
  auto c = Connect();
  auto buf = c->AllocateBuffer(1);
  ASSERT_TRUE(buf.ok());
  for (int i = 0; i < 1205; ++i) {  // more than one batch delete
    ASSERT_TRUE(c->Put("scratch", "d/" + std::to_string(i), **buf, 1).ok());
  }
  ASSERT_TRUE(c->Put("scratch", "keep", **buf, 1).ok());
  ASSERT_EQ(Cli({"--quiet", "rm", "--recursive", "aobj://scratch/d/"}), 0) << last_output_;
  auto left = c->ListAllObjects("scratch", {});
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->objects.size(), 1u);
  EXPECT_EQ(left->objects[0].key, "keep");
  EXPECT_EQ(Cli({"rb", "aobj://scratch"}), 1);
  EXPECT_NE(last_output_.find("BucketNotEmpty"), std::string::npos) << last_output_;
  ASSERT_EQ(Cli({"rm", "aobj://scratch/keep"}), 0);
  EXPECT_NE(last_output_.find("delete: aobj://scratch/keep"), std::string::npos);
  ASSERT_TRUE(c->Put("scratch", "again", **buf, 1).ok());
  ASSERT_EQ(Cli({"rb", "--force", "scratch"}), 0) << last_output_;
  EXPECT_EQ(ErrorCodeOf(c->HeadBucket("scratch")), ErrorCode::kNoSuchBucket);
}

// A recursive download writes only below its target directory, whatever the keys say.
TEST_P(CliS3Test, RecursiveDownloadNeverEscapesTheTarget) {
  auto c = Connect();
  auto buf = c->AllocateBuffer(4);
  ASSERT_TRUE(buf.ok());
  std::memcpy((*buf)->data(), "evil", 4);
  for (const char* k : {"t/../../escaped", "t/ok", "t/a//b", "t/./dot", "t/sub/../../x"}) {
    ASSERT_TRUE(c->Put("test-bucket", k, **buf, 4).ok()) << k;
  }
  const fs::path target = work_ / "deep" / "target";
  EXPECT_EQ(Cli({"cp", "--recursive", "aobj://test-bucket/t/", target.string()}), 1)
      << last_output_;
  EXPECT_EQ(ReadBytes(target / "ok"), "evil");
  EXPECT_FALSE(fs::exists(work_ / "deep" / "escaped"));
  EXPECT_FALSE(fs::exists(work_ / "escaped"));
  EXPECT_FALSE(fs::exists(work_ / "deep" / "x"));
  EXPECT_NE(last_output_.find("not a safe relative path"), std::string::npos) << last_output_;
}

TEST_P(CliS3Test, ConditionalUploadsAndUsageErrors) {
  WriteBytes(work_ / "f", "v1");
  ASSERT_EQ(Cli({"cp", (work_ / "f").string(), "aobj://test-bucket/f", "--if-none-match", "*"}), 0);
  EXPECT_EQ(Cli({"cp", (work_ / "f").string(), "aobj://test-bucket/f", "--if-none-match", "*"}), 1);
  EXPECT_NE(last_output_.find("PreconditionFailed"), std::string::npos) << last_output_;
  EXPECT_EQ(Cli({"cp", (work_ / "f").string(), (work_ / "g").string()}), 2);  // no aobj:// side
  EXPECT_EQ(Cli({"cp", "aobj://test-bucket/f"}), 2);
  EXPECT_EQ(Cli({"cp", "aobj:///f", "x"}), 2);
  EXPECT_EQ(Cli({"cp", (work_ / "f").string(), "aobj://test-bucket/", "--metadata", "novalue"}), 2);
  EXPECT_EQ(Cli({"cp", (work_ / "missing").string(), "aobj://test-bucket/m"}), 1);
  // The original commands still work.
  ASSERT_EQ(Cli({"put", (work_ / "f").string(), "test-bucket/legacy"}), 0) << last_output_;
  ASSERT_EQ(Cli({"get", "test-bucket/legacy", (work_ / "legacy").string()}), 0) << last_output_;
  EXPECT_EQ(ReadBytes(work_ / "legacy"), "v1");
  ASSERT_EQ(Cli({"head", "test-bucket/legacy"}), 0);
  ASSERT_EQ(Cli({"rm", "test-bucket/legacy"}), 0);
  EXPECT_EQ(Cli({"head", "test-bucket/legacy"}), 1);
}

INSTANTIATE_TEST_SUITE_P(Stores, CliS3Test, ::testing::Values("memory", "fs"));

}  // namespace
}  // namespace aobj
