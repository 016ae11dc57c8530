// The S3-style commands of the aobj CLI (tools/cli_s3.cc) against a real aobj-server, both
// stores: cp in all three directions and --recursive, ls with common prefixes, rm --recursive,
// mb, rb --force, stat, ranged and chunked downloads, and keys that must not escape the target
// directory of a recursive download.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "aobj/client.h"
#include "aobj/status.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
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
  std::unique_ptr<Client> Connect() { return testing::ConnectTo(*server_); }

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
  EXPECT_NE(last_output_.find("BucketAlreadyExists"), std::string::npos) << last_output_;
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
  std::string head_out, stat_out;
  ASSERT_EQ(Cli({"head", "test-bucket/legacy"}, &head_out), 0) << head_out;
  ASSERT_EQ(Cli({"stat", "test-bucket/legacy"}, &stat_out), 0) << stat_out;
  EXPECT_EQ(head_out, stat_out) << "head and stat show the same";
  EXPECT_NE(head_out.find("etag:"), std::string::npos) << head_out;
  ASSERT_EQ(Cli({"rm", "test-bucket/legacy"}), 0);
  EXPECT_EQ(Cli({"head", "test-bucket/legacy"}), 1);
}

// Issue 23: recursive copies move several files at once (--jobs, default the session's
// max_in_flight), multipart uploads among them, and every file arrives whole, in all three
// directions; a summary line counts them.
TEST_P(CliS3Test, RecursiveCopiesRunInParallelAndLoseNothing) {
  const fs::path src = work_ / "many";
  std::map<std::string, std::string> files;
  for (int i = 0; i < 150; ++i) {
    const std::string rel = "d" + std::to_string(i % 7) + "/f" + std::to_string(i);
    files[rel] = Random(1 + (i * 997) % 20000, 100 + i);
  }
  files["big/multipart.bin"] = Random(11 << 20, 7);  // three parts of the part size below
  for (const auto& [rel, data] : files) WriteBytes(src / rel, data);
  ASSERT_EQ(Cli({"cp", "--recursive", "--jobs", "8", "--multipart-threshold", "1048576",
                 "--part-size", "5242880", src.string(), "aobj://test-bucket/many/"}),
            0)
      << last_output_;
  EXPECT_NE(last_output_.find("upload: 151 of 151 files"), std::string::npos) << last_output_;
  // The 150 small files travel in PutObjects batches (spec 9.17), the large one in parts.
  EXPECT_NE(last_output_.find("; 150 small files in "), std::string::npos) << last_output_;
  // --no-batch, and uploads with user metadata (which a batch item cannot carry): one PUT each.
  ASSERT_EQ(
      Cli({"cp", "--recursive", "--no-batch", (src / "d1").string(), "aobj://test-bucket/single/"}),
      0)
      << last_output_;
  EXPECT_EQ(last_output_.find("batched request"), std::string::npos) << last_output_;
  ASSERT_EQ(Cli({"cp", "--recursive", "--metadata", "origin=cli", (src / "d2").string(),
                 "aobj://test-bucket/meta/"}),
            0)
      << last_output_;
  EXPECT_EQ(last_output_.find("batched request"), std::string::npos) << last_output_;
  {
    auto c = Connect();
    auto head = c->Head("test-bucket", "meta/f2");
    ASSERT_TRUE(head.ok()) << head.status();
    EXPECT_EQ(head->user_metadata["origin"], "cli");
    auto single = c->Head("test-bucket", "single/f1");
    ASSERT_TRUE(single.ok()) << single.status();
    EXPECT_EQ(single->size, files["d1/f1"].size());
  }
  const fs::path down = work_ / "many-down";
  ASSERT_EQ(Cli({"cp", "--recursive", "aobj://test-bucket/many/", down.string()}), 0)
      << last_output_;
  EXPECT_NE(last_output_.find("download: 151 of 151 files"), std::string::npos) << last_output_;
  // The 150 small files travel in GetObjects batches (spec 9.16), the large one alone.
  EXPECT_NE(last_output_.find("; 150 small files in "), std::string::npos) << last_output_;
  for (const auto& [rel, data] : files) EXPECT_EQ(ReadBytes(down / rel), data) << rel;
  // --no-batch: one GET per file, the same files.
  const fs::path single = work_ / "many-single";
  ASSERT_EQ(Cli({"cp", "--recursive", "--no-batch", "aobj://test-bucket/many/", single.string()}),
            0)
      << last_output_;
  EXPECT_EQ(last_output_.find("batched request"), std::string::npos) << last_output_;
  for (const auto& [rel, data] : files) EXPECT_EQ(ReadBytes(single / rel), data) << rel;
  ASSERT_EQ(Cli({"cp", "--recursive", "--jobs", "3", "aobj://test-bucket/many/",
                 "aobj://test-bucket/again/"}),
            0)
      << last_output_;
  auto c = Connect();
  for (const char* rel : {"d3/f10", "big/multipart.bin"}) {
    auto head = c->Head("test-bucket", std::string("again/") + rel);
    ASSERT_TRUE(head.ok()) << rel << ": " << head.status();
    EXPECT_EQ(head->size, files[rel].size()) << rel;
  }
  EXPECT_EQ(Cli({"cp", "--jobs", "0x", "aobj://test-bucket/many/d0/f0", "x"}), 2);
  // Nothing to copy is not an error, and nothing happens.
  fs::create_directories(work_ / "empty-dir");
  EXPECT_EQ(Cli({"cp", "--recursive", (work_ / "empty-dir").string(), "aobj://test-bucket/none/"}),
            0)
      << last_output_;
  EXPECT_EQ(
      Cli({"cp", "--recursive", "aobj://test-bucket/nothing-here/", (work_ / "none").string()}), 0)
      << last_output_;
}

// The local file's mtime in Unix milliseconds.
int64_t MtimeMs(const fs::path& p) {
  struct stat sb {};
  if (::stat(p.c_str(), &sb) != 0) return -1;
  return static_cast<int64_t>(sb.st_mtim.tv_sec) * 1000 + sb.st_mtim.tv_nsec / 1000000;
}

void Touch(const fs::path& p, std::chrono::seconds ahead) {
  fs::last_write_time(p, fs::file_time_type::clock::now() + ahead);
}

bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// Issue 23: aws s3 sync's decisions (new, size, newer; --size-only, --compare-etag), --delete
// only when asked and never of an excluded name, --dryrun changing nothing, downloads stamped
// with the object's LastModified so that a second sync copies nothing, and prefix to prefix.
TEST_P(CliS3Test, SyncCopiesWhatChangedAndDeletesOnlyWhenAsked) {
  const fs::path src = work_ / "sync-src";
  WriteBytes(src / "a.txt", "alpha\n");
  WriteBytes(src / "b.txt", "bravo\n");
  WriteBytes(src / "sub" / "c.bin", Random(70000, 3));
  WriteBytes(src / "logs" / "x.gz", "log\n");
  const std::string dst = "aobj://test-bucket/s/";
  ASSERT_EQ(Cli({"sync", src.string(), dst}), 0) << last_output_;
  EXPECT_TRUE(Has(last_output_, "sync: 4 of 4 files")) << last_output_;
  ASSERT_EQ(Cli({"sync", src.string(), dst}), 0) << last_output_;
  EXPECT_TRUE(Has(last_output_, "sync: nothing to copy; 4 unchanged")) << last_output_;
  EXPECT_FALSE(Has(last_output_, "upload:")) << last_output_;

  // A new size goes; a same-sized file goes when it is newer than the object.
  WriteBytes(src / "a.txt", "alpha, longer\n");
  WriteBytes(src / "b.txt", "BRAVO\n");
  Touch(src / "b.txt", std::chrono::hours(1));
  ASSERT_EQ(Cli({"sync", src.string(), dst}), 0) << last_output_;
  EXPECT_TRUE(Has(last_output_, "upload: " + (src / "a.txt").string())) << last_output_;
  EXPECT_TRUE(Has(last_output_, "upload: " + (src / "b.txt").string())) << last_output_;
  EXPECT_TRUE(Has(last_output_, "sync: 2 of 2 files")) << last_output_;
  // Same size and newer again: --size-only leaves it; --compare-etag reads it and finds the
  // content unchanged; a changed content of the same size is found by --compare-etag.
  Touch(src / "b.txt", std::chrono::hours(2));
  ASSERT_EQ(Cli({"sync", "--size-only", src.string(), dst}), 0) << last_output_;
  EXPECT_FALSE(Has(last_output_, "upload:")) << last_output_;
  ASSERT_EQ(Cli({"sync", "--compare-etag", src.string(), dst}), 0) << last_output_;
  EXPECT_FALSE(Has(last_output_, "upload:")) << last_output_;
  WriteBytes(src / "b.txt", "bravo!\n");
  Touch(src / "b.txt", std::chrono::hours(-48));  // older than the object: times say "same"
  ASSERT_EQ(Cli({"sync", src.string(), dst}), 0) << last_output_;
  EXPECT_TRUE(Has(last_output_, "upload:")) << last_output_;  // the size changed (7 octets)
  WriteBytes(src / "b.txt", "BRAVO!\n");
  Touch(src / "b.txt", std::chrono::hours(-48));
  ASSERT_EQ(Cli({"sync", src.string(), dst}), 0) << last_output_;
  EXPECT_FALSE(Has(last_output_, "upload:")) << last_output_;
  ASSERT_EQ(Cli({"sync", "--compare-etag", src.string(), dst}), 0) << last_output_;
  EXPECT_TRUE(Has(last_output_, "upload: " + (src / "b.txt").string())) << last_output_;
  auto c = Connect();
  ASSERT_NE(c, nullptr);

  // --delete: a dry run changes nothing; the real one keeps what the filters exclude.
  fs::remove(src / "sub" / "c.bin");
  fs::remove(src / "logs" / "x.gz");
  WriteBytes(src / "a.txt", "alpha, longer!\n");
  ASSERT_EQ(Cli({"sync", "--dryrun", "--delete", src.string(), dst}), 0) << last_output_;
  EXPECT_TRUE(Has(last_output_, "(dryrun) upload: " + (src / "a.txt").string() +
                                    " to aobj://test-bucket/s/a.txt (size differs)"))
      << last_output_;
  WriteBytes(src / "a.txt", "alpha, longer\n");
  EXPECT_TRUE(Has(last_output_, "(dryrun) delete: aobj://test-bucket/s/sub/c.bin")) << last_output_;
  EXPECT_TRUE(c->Head("test-bucket", "s/sub/c.bin").ok());
  ASSERT_EQ(Cli({"sync", src.string(), dst}), 0) << last_output_;  // no --delete: kept
  EXPECT_TRUE(c->Head("test-bucket", "s/sub/c.bin").ok());
  ASSERT_EQ(Cli({"sync", "--delete", "--exclude", "logs/*", src.string(), dst}), 0) << last_output_;
  EXPECT_TRUE(Has(last_output_, "delete: aobj://test-bucket/s/sub/c.bin")) << last_output_;
  EXPECT_EQ(c->Head("test-bucket", "s/sub/c.bin").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(c->Head("test-bucket", "s/logs/x.gz").ok());

  // Down: files stamped with the objects' LastModified, so a second sync copies nothing.
  const fs::path down = work_ / "sync-down";
  ASSERT_EQ(Cli({"sync", dst, down.string()}), 0) << last_output_;
  EXPECT_EQ(ReadBytes(down / "a.txt"), "alpha, longer\n");
  EXPECT_EQ(ReadBytes(down / "b.txt"), "BRAVO!\n");
  EXPECT_EQ(ReadBytes(down / "logs" / "x.gz"), "log\n");
  auto a = c->Head("test-bucket", "s/a.txt");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(MtimeMs(down / "a.txt"), a->last_modified_ms);
  ASSERT_EQ(Cli({"sync", dst, down.string()}), 0) << last_output_;
  EXPECT_TRUE(Has(last_output_, "nothing to copy; 3 unchanged")) << last_output_;
  WriteBytes(down / "extra.txt", "not in the bucket\n");
  ASSERT_EQ(Cli({"sync", "--delete", dst, down.string()}), 0) << last_output_;
  EXPECT_FALSE(fs::exists(down / "extra.txt"));
  EXPECT_TRUE(fs::exists(down / "a.txt"));

  // Prefix to prefix: server-side copies, then nothing.
  ASSERT_EQ(Cli({"sync", dst, "aobj://test-bucket/s2"}), 0) << last_output_;
  EXPECT_TRUE(Has(last_output_, "copy: aobj://test-bucket/s/a.txt to aobj://test-bucket/s2/a.txt"))
      << last_output_;
  ASSERT_EQ(Cli({"sync", dst, "aobj://test-bucket/s2"}), 0) << last_output_;
  EXPECT_TRUE(Has(last_output_, "nothing to copy; 3 unchanged")) << last_output_;

  EXPECT_EQ(Cli({"sync", src.string(), (work_ / "elsewhere").string()}), 2) << last_output_;
  EXPECT_EQ(Cli({"sync", (src / "a.txt").string(), dst}), 2) << last_output_;
}

// Issue 23: mv, wildcards in remote and local sources (a wildcard that matches nothing fails),
// --exclude/--include in the order given, and --dryrun for cp and rm.
TEST_P(CliS3Test, MvWildcardsFiltersAndDryrun) {
  const fs::path w = work_ / "w";
  WriteBytes(w / "1.txt", "one\n");
  WriteBytes(w / "2.txt", "two\n");
  WriteBytes(w / "3.bin", Random(5000, 4));
  WriteBytes(w / "deep" / "4.txt", "four\n");
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  auto exists = [&](const std::string& key) { return c->Head("test-bucket", key).ok(); };

  ASSERT_EQ(Cli({"cp", "--recursive", "--exclude", "*", "--include", "*.txt", w.string(),
                 "aobj://test-bucket/f/"}),
            0)
      << last_output_;
  EXPECT_TRUE(exists("f/1.txt") && exists("f/2.txt") && exists("f/deep/4.txt"));
  EXPECT_FALSE(exists("f/3.bin"));
  ASSERT_EQ(Cli({"cp", "--recursive", "--exclude", "*", "--include", "*.txt", "--exclude", "deep/*",
                 w.string(), "aobj://test-bucket/f2/"}),
            0)
      << last_output_;
  EXPECT_TRUE(exists("f2/1.txt"));
  EXPECT_FALSE(exists("f2/deep/4.txt"));  // the last filter that matches decides

  const fs::path got = work_ / "got";
  ASSERT_EQ(Cli({"cp", "--fsync", "aobj://test-bucket/f/*.txt", got.string() + "/"}), 0)
      << last_output_;
  EXPECT_EQ(ReadBytes(got / "1.txt"), "one\n");
  EXPECT_EQ(ReadBytes(got / "deep" / "4.txt"), "four\n");  // '*' crosses '/', as s5cmd
  EXPECT_EQ(Cli({"cp", "aobj://test-bucket/f/nomatch*", got.string()}), 1) << last_output_;
  EXPECT_TRUE(Has(last_output_, "no object matches the wildcard")) << last_output_;
  // A wildcard the shell left alone (quoted, or matching nothing there).
  ASSERT_EQ(Cli({"cp", (w / "*.bin").string(), "aobj://test-bucket/g/"}), 0) << last_output_;
  EXPECT_TRUE(exists("g/3.bin"));
  EXPECT_EQ(Cli({"cp", (w / "*.none").string(), "aobj://test-bucket/g/"}), 1) << last_output_;
  EXPECT_TRUE(Has(last_output_, "no file matches the wildcard")) << last_output_;

  ASSERT_EQ(Cli({"cp", "--dryrun", "--recursive", w.string(), "aobj://test-bucket/dry/"}), 0)
      << last_output_;
  EXPECT_TRUE(Has(last_output_, "(dryrun) upload: " + (w / "3.bin").string())) << last_output_;
  EXPECT_FALSE(exists("dry/3.bin"));

  // mv: up (the files go), down (the object goes), across.
  ASSERT_EQ(Cli({"mv", "--recursive", w.string(), "aobj://test-bucket/m/"}), 0) << last_output_;
  EXPECT_TRUE(Has(last_output_, "move: " + (w / "1.txt").string())) << last_output_;
  EXPECT_FALSE(fs::exists(w / "1.txt"));
  EXPECT_FALSE(fs::exists(w / "deep" / "4.txt"));
  auto three = c->Head("test-bucket", "m/3.bin");
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ(three->size, 5000u);
  ASSERT_EQ(Cli({"mv", "aobj://test-bucket/m/1.txt", (work_ / "one.txt").string()}), 0)
      << last_output_;
  EXPECT_EQ(ReadBytes(work_ / "one.txt"), "one\n");
  EXPECT_FALSE(exists("m/1.txt"));
  ASSERT_EQ(Cli({"mv", "aobj://test-bucket/m/2.txt", "aobj://test-bucket/n/"}), 0) << last_output_;
  EXPECT_FALSE(exists("m/2.txt"));
  EXPECT_TRUE(exists("n/2.txt"));
  EXPECT_EQ(Cli({"mv", "aobj://test-bucket/n/2.txt", "-"}), 2) << last_output_;
  EXPECT_TRUE(exists("n/2.txt"));

  // rm: a dry run deletes nothing; a wildcard with a filter; a wildcard matching nothing fails.
  ASSERT_EQ(Cli({"rm", "--dryrun", "aobj://test-bucket/f/*.txt"}), 0) << last_output_;
  EXPECT_TRUE(Has(last_output_, "(dryrun) delete: aobj://test-bucket/f/1.txt")) << last_output_;
  EXPECT_TRUE(exists("f/1.txt"));
  ASSERT_EQ(Cli({"rm", "aobj://test-bucket/f/*", "--exclude", "deep/*"}), 0) << last_output_;
  EXPECT_FALSE(exists("f/1.txt"));
  EXPECT_TRUE(exists("f/deep/4.txt"));
  ASSERT_EQ(
      Cli({"rm", "--recursive", "--include", "*", "--exclude", "*.txt", "aobj://test-bucket/m/"}),
      0)
      << last_output_;
  EXPECT_FALSE(exists("m/3.bin"));
  EXPECT_TRUE(exists("m/deep/4.txt"));
  EXPECT_EQ(Cli({"rm", "aobj://test-bucket/zzz*"}), 1) << last_output_;
}

INSTANTIATE_TEST_SUITE_P(Stores, CliS3Test, ::testing::Values("memory", "fs"));

// Issue 23: a server restarted in the middle of a cp. The CLI is frozen (SIGSTOP) once part of
// the work is done, the server is killed and started again on the same port, and the CLI goes
// on: the download resumes after its last whole chunk on a new session and the file is whole;
// a recursive upload retries the file that failed and loses none. With --max-attempts 1 the
// same restart fails the command.
class CliRetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(testing::TestDir(), "fs");
    ASSERT_TRUE(server_->Start()) << server_->log();
    work_ = fs::path(server_->dir()) / "work";
    fs::create_directories(work_);
  }
  pid_t Spawn(std::vector<std::string> args, const std::string& log) {
    std::vector<std::string> argv = {AOBJ_CLI_BINARY, "--endpoint", server_->endpoint(),
                                     "--credentials", server_->credentials_file()};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::Spawn(argv, log);
  }
  std::unique_ptr<Client> Connect() { return testing::ConnectTo(*server_); }
  int Exit(pid_t pid) {
    const int status = testing::WaitFor(pid, std::chrono::seconds(120));
    return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  // Waits (up to 10 s) until every thread of `pid` is stopped, as SIGSTOP leaves them.
  static void WaitStopped(pid_t pid) {
    const std::string task = "/proc/" + std::to_string(pid) + "/task";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      bool all = true, any = false;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(task, ec)) {
        const std::string stat = testing::ReadFile(e.path().string() + "/stat");
        const size_t close = stat.rfind(')');
        if (close == std::string::npos || close + 2 >= stat.size()) continue;
        any = true;
        all &= stat[close + 2] == 'T' || stat[close + 2] == 't';
      }
      if (any && all) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ADD_FAILURE() << "process " << pid << " did not stop";
  }
  // Waits until `ready` holds (polling), then freezes `pid`, restarts the server on its port
  // and lets `pid` go on. False when `ready` never held while `pid` ran.
  bool RestartUnder(pid_t pid, const std::function<bool()>& ready) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!ready()) {
      if (std::chrono::steady_clock::now() > deadline || ::kill(pid, 0) != 0) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    ::kill(pid, SIGSTOP);
    WaitStopped(pid);  // kill() returns before every thread of the CLI has stopped
    const bool restarted = server_->RestartOnSamePort(SIGKILL);
    ::kill(pid, SIGCONT);
    return restarted;
  }
  std::unique_ptr<ServerProcess> server_;
  fs::path work_;
};

TEST_F(CliRetryTest, DownloadResumesAfterARestartAndUploadsLoseNothing) {
  const std::string data = Random(48 << 20, 9);
  {
    auto c = Connect();
    ASSERT_NE(c, nullptr);
    auto buf = c->AllocateBuffer(data.size());
    ASSERT_TRUE(buf.ok());
    std::memcpy((*buf)->data(), data.data(), data.size());
    ASSERT_TRUE(c->Put("test-bucket", "big.bin", **buf, data.size()).ok());
  }
  const fs::path target = work_ / "big.bin";
  const fs::path partial = work_ / "big.bin.aobj-partial";
  const std::string log = work_.string() + "/download.log";
  pid_t pid =
      Spawn({"cp", "--chunk-size", "1048576", "aobj://test-bucket/big.bin", target.string()}, log);
  ASSERT_TRUE(RestartUnder(pid, [&] {
    std::error_code ec;
    const auto n = fs::file_size(partial, ec);
    return !ec && n >= (4u << 20);
  })) << testing::ReadFile(log);
  ASSERT_EQ(Exit(pid), 0) << testing::ReadFile(log) << server_->log();
  const std::string out = testing::ReadFile(log);
  EXPECT_TRUE(Has(out, "; attempt 2 of 5 in ")) << out;
  EXPECT_TRUE(Has(out, "resuming after ")) << out;
  EXPECT_EQ(ReadBytes(target), data);
  EXPECT_FALSE(fs::exists(partial));

  // A recursive upload, one file at a time: the one in flight at the restart is sent again.
  const fs::path src = work_ / "many";
  std::map<std::string, std::string> files;
  for (int i = 0; i < 300; ++i) files["f" + std::to_string(i)] = Random(2000 + i, 50 + i);
  for (const auto& [rel, bytes] : files) WriteBytes(src / rel, bytes);
  const std::string up_log = work_.string() + "/upload.log";
  pid =
      Spawn({"cp", "--recursive", "--jobs", "1", src.string(), "aobj://test-bucket/many/"}, up_log);
  auto watcher = Connect();
  ASSERT_NE(watcher, nullptr);
  ASSERT_TRUE(RestartUnder(pid, [&] {
    ListObjectsOptions lo;
    lo.prefix = "many/";
    auto page = watcher->ListObjects("test-bucket", lo);
    return page.ok() && page->objects.size() >= 20;
  })) << testing::ReadFile(up_log);
  ASSERT_EQ(Exit(pid), 0) << testing::ReadFile(up_log);
  EXPECT_TRUE(Has(testing::ReadFile(up_log), "upload: 300 of 300 files"))
      << testing::ReadFile(up_log);
  const fs::path back = work_ / "back";
  pid = Spawn({"cp", "--recursive", "aobj://test-bucket/many/", back.string()},
              work_.string() + "/back.log");
  ASSERT_EQ(Exit(pid), 0) << testing::ReadFile(work_.string() + "/back.log");
  for (const auto& [rel, bytes] : files) EXPECT_EQ(ReadBytes(back / rel), bytes) << rel;

  // No retries: the same restart fails the download, and leaves no partial file.
  fs::remove(target);
  const std::string once_log = work_.string() + "/once.log";
  pid = Spawn({"cp", "--max-attempts", "1", "--chunk-size", "1048576", "aobj://test-bucket/big.bin",
               target.string()},
              once_log);
  ASSERT_TRUE(RestartUnder(pid, [&] {
    std::error_code ec;
    const auto n = fs::file_size(partial, ec);
    return !ec && n >= (4u << 20);
  })) << testing::ReadFile(once_log);
  EXPECT_EQ(Exit(pid), 1) << testing::ReadFile(once_log);
  EXPECT_FALSE(fs::exists(target));
  EXPECT_FALSE(fs::exists(partial));
  pid =
      Spawn({"cp", "--max-attempts", "0", "aobj://test-bucket/big.bin", target.string()}, once_log);
  EXPECT_EQ(Exit(pid), 2) << testing::ReadFile(once_log);
}

// A multipart upload cut by a restart is sent again whole by the retry; the summary counts its
// octets once (the failed attempt's parts are taken back).
TEST_F(CliRetryTest, RetriedMultipartUploadIsCountedOnce) {
  const fs::path src = work_ / "parts";
  // Parts of 1 MiB asked, raised to the server's minimum (5 MiB): 6 parts a file, 4 at once.
  const std::string a = Random(30 << 20, 71), b = Random(30 << 20, 72);
  WriteBytes(src / "a.bin", a);
  WriteBytes(src / "b.bin", b);
  const std::string log = work_.string() + "/parts.log";
  pid_t pid = Spawn({"cp", "--recursive", "--jobs", "1", "--multipart-threshold", "1048576",
                     "--part-size", "1048576", src.string(), "aobj://test-bucket/parts/"},
                    log);
  auto watcher = Connect();
  ASSERT_NE(watcher, nullptr);
  ASSERT_TRUE(RestartUnder(pid, [&] {
    auto uploads = watcher->ListMultipartUploads("test-bucket");
    if (!uploads.ok() || uploads->uploads.empty()) return false;
    const UploadInfo& u = uploads->uploads.front();
    auto parts = watcher->ListParts("test-bucket", u.key, u.upload_id);
    // A fifth part is sent only after a lane counted the part it sent before.
    return parts.ok() && parts->parts.size() >= 5;
  })) << testing::ReadFile(log);
  ASSERT_EQ(Exit(pid), 0) << testing::ReadFile(log);
  const std::string out = testing::ReadFile(log);
  EXPECT_TRUE(Has(out, "; attempt 2 of 5 in ")) << out;
  EXPECT_TRUE(Has(out, "upload: 2 of 2 files, 60.0 MiB in ")) << out;
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  for (const auto& [key, bytes] : {std::pair{"parts/a.bin", &a}, std::pair{"parts/b.bin", &b}}) {
    auto info = c->Head("test-bucket", key);
    ASSERT_TRUE(info.ok()) << key << ": " << info.status();
    EXPECT_EQ(info->size, bytes->size()) << key;
  }
}

// A listing cut by a restart is asked for again through a new session, after the last key it
// delivered (the restarted server's continuation tokens differ): every key exactly once. The
// CLI's standard output is a pipe of one page that the test does not read until the server has
// restarted, so the CLI is held inside its first page of output when that happens.
TEST_F(CliRetryTest, ListingResumesAfterARestart) {
  constexpr int kKeys = 2500;  // three pages of at most 1000
  {
    auto c = Connect();
    ASSERT_NE(c, nullptr);
    auto buf = c->AllocateBuffer(16);
    ASSERT_TRUE(buf.ok());
    std::memset((*buf)->data(), 'x', 16);
    std::vector<BatchPutItem> items;
    for (int i = 0; i < kKeys; ++i) {
      char key[32];
      std::snprintf(key, sizeof key, "l/k%05d", i);
      items.push_back({key, {buf->get(), 0, 16}, ""});
    }
    auto put = c->PutObjects("test-bucket", items);
    ASSERT_TRUE(put.ok()) << put.status();
    for (const auto& r : *put) ASSERT_TRUE(r.ok()) << r.status();
  }
  int out[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  ASSERT_GE(::fcntl(out[1], F_SETPIPE_SZ, 4096), 4096);
  const std::string err_log = work_.string() + "/ls.err";
  const int err = ::open(err_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(err, 0);
  std::vector<std::string> args = {AOBJ_CLI_BINARY,
                                   "--endpoint",
                                   server_->endpoint(),
                                   "--credentials",
                                   server_->credentials_file(),
                                   "ls",
                                   "--recursive",
                                   "aobj://test-bucket/l/"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err, 2);
  pid_t pid = -1;
  ASSERT_EQ(::posix_spawn(&pid, AOBJ_CLI_BINARY, &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  ::close(err);
  // The pipe full: the CLI waits to write its first page.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int queued = 0; queued < 4096;) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << testing::ReadFile(err_log);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_EQ(::ioctl(out[0], FIONREAD, &queued), 0);
  }
  ASSERT_TRUE(server_->RestartOnSamePort(SIGKILL)) << server_->log();
  std::string listed;
  char chunk[65536];
  for (ssize_t n; (n = ::read(out[0], chunk, sizeof chunk)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    ASSERT_GT(n, 0) << std::strerror(errno);
    listed.append(chunk, static_cast<size_t>(n));
  }
  ::close(out[0]);
  ASSERT_EQ(Exit(pid), 0) << testing::ReadFile(err_log) << server_->log();
  const std::string errors = testing::ReadFile(err_log);
  EXPECT_TRUE(Has(errors, "; attempt 2 of 5 in ")) << errors;
  std::map<std::string, int> seen;
  for (absl::string_view line : absl::StrSplit(listed, '\n', absl::SkipEmpty())) {
    seen[std::string(line.substr(line.rfind(' ') + 1))]++;
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kKeys));
  for (const auto& [key, n] : seen) EXPECT_EQ(n, 1) << key;
  EXPECT_EQ(seen.begin()->first, "l/k00000");
  EXPECT_EQ(seen.rbegin()->first, "l/k02499");
}

// Issue 23, first slice: what a newcomer meets first. --version and per-command help work
// without a server; an unreachable server, a URL as endpoint, a download into a directory that
// does not exist yet, a profile written with the AWS key names, and a credentials file others
// can read each get the behaviour an `aws s3` user expects.
class CliFirstStepsTest : public ::testing::Test {
 protected:
  // Runs the CLI with exactly `args` (no --endpoint or --credentials of its own) and, for the
  // run, the environment entries `env` (empty value: unset).
  int Run(std::vector<std::string> args, const std::map<std::string, std::string>& env = {},
          std::string* output = nullptr) {
    std::vector<std::string> argv = {AOBJ_CLI_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    std::map<std::string, std::optional<std::string>> saved;
    for (const auto& [k, v] : env) {
      const char* old = std::getenv(k.c_str());
      saved[k] = old ? std::optional<std::string>(old) : std::nullopt;
      if (v.empty())
        unsetenv(k.c_str());
      else
        setenv(k.c_str(), v.c_str(), 1);
    }
    const std::string log = dir_ + "/run-" + std::to_string(++runs_) + ".log";
    pid_t pid = testing::Spawn(argv, log);
    for (const auto& [k, v] : saved) {
      if (v)
        setenv(k.c_str(), v->c_str(), 1);
      else
        unsetenv(k.c_str());
    }
    int status = testing::WaitFor(pid, std::chrono::seconds(60));
    last_ = testing::ReadFile(log);
    if (output) *output = last_;
    return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  // No AOBJ_* settings of the environment this test runs in leak into the CLI.
  std::map<std::string, std::string> Clean() const {
    return {{"AOBJ_ACCESS_KEY_ID", ""},
            {"AOBJ_SECRET_ACCESS_KEY", ""},
            {"AOBJ_CREDENTIALS_FILE", ""},
            {"AOBJ_PROFILE", ""},
            {"AOBJ_ENDPOINT", ""},
            {"AOBJ_SHARED_CREDENTIALS_FILE", dir_ + "/no-credentials"},
            {"AOBJ_CONFIG_FILE", dir_ + "/no-config"}};
  }
  std::string dir_ = testing::TestDir();
  int runs_ = 0;
  std::string last_;
};

TEST_F(CliFirstStepsTest, VersionAndPerCommandHelpNeedNoServer) {
  mkdir(dir_.c_str(), 0700);
  ASSERT_EQ(Run({"--version"}, Clean()), 0) << last_;
  EXPECT_NE(last_.find("aobj 0."), std::string::npos) << last_;
  EXPECT_NE(last_.find("AOBJ/1"), std::string::npos) << last_;
  for (const std::vector<std::string>& form :
       {std::vector<std::string>{"help", "cp"}, std::vector<std::string>{"cp", "--help"},
        std::vector<std::string>{"--endpoint", "h:1", "cp", "--help"}}) {
    ASSERT_EQ(Run(form, Clean()), 0) << last_;
    EXPECT_NE(last_.find("Usage: aobj [flags] cp"), std::string::npos) << last_;
    EXPECT_NE(last_.find("--recursive"), std::string::npos) << last_;
    EXPECT_EQ(last_.find("mpu abort"), std::string::npos) << "the whole page, not cp's: " << last_;
  }
  // Completion scripts come from the same text as --help, and the shell can read them.
  ASSERT_EQ(Run({"completion", "bash"}, Clean()), 0) << last_;
  EXPECT_NE(last_.find("--recursive"), std::string::npos) << last_;
  EXPECT_NE(last_.find("commands=\"cp mv sync ls "), std::string::npos) << last_;
  EXPECT_NE(last_.find("complete -o default -F _aobj aobj"), std::string::npos) << last_;
  const std::string script = dir_ + "/aobj.bash";
  std::ofstream(script) << last_;
  EXPECT_EQ(std::system(("bash -n '" + script + "'").c_str()), 0) << last_;
  EXPECT_EQ(Run({"completion", "fish"}, Clean()), 2) << last_;
  EXPECT_EQ(Run({"help", "frobnicate"}, Clean()), 2) << last_;
  EXPECT_NE(last_.find("not a command"), std::string::npos) << last_;

  // The manual page comes from the same text: every command and flag of --help is in it, as
  // roff (hyphens escaped), and groff reads it without a warning.
  ASSERT_EQ(Run({"--help"}, Clean()), 0) << last_;
  const std::string help = last_;
  ASSERT_EQ(Run({"man"}, Clean()), 0) << last_;
  const std::string page = last_;
  EXPECT_EQ(page.rfind(".TH AOBJ 1 ", 0), 0u) << page;
  for (const char* section : {".SH SYNOPSIS", ".SH COMMANDS", ".SH OPTIONS", ".SH EXIT STATUS"}) {
    EXPECT_NE(page.find(section), std::string::npos) << section;
  }
  size_t flags = 0;
  for (size_t at = help.find("\n  --"); at != std::string::npos; at = help.find("\n  --", at + 1)) {
    const std::string name = help.substr(at + 3, help.find_first_of(" \n", at + 3) - at - 3);
    std::string roff;
    for (char ch : name) roff += ch == '-' ? std::string("\\-") : std::string(1, ch);
    EXPECT_NE(page.find(".B " + roff), std::string::npos) << name;
    ++flags;
  }
  EXPECT_GT(flags, 30u);
  for (const char* cmd : {"cp SRC DST", "mv SRC DST", "sync SRC DST", "completion bash|zsh"}) {
    EXPECT_NE(page.find(std::string(".B ") + cmd), std::string::npos) << cmd;
  }
  if (std::system("command -v groff >/dev/null 2>&1") == 0) {
    const std::string man = dir_ + "/aobj.1";
    std::ofstream(man) << page;
    const std::string warnings = dir_ + "/groff.log";
    EXPECT_EQ(std::system(("groff -man -Tutf8 -ww -z '" + man + "' 2>'" + warnings + "'").c_str()),
              0);
    EXPECT_EQ(testing::ReadFile(warnings), "");
  }
}

TEST_F(CliFirstStepsTest, AnUnreachableServerOrAUrlIsExplained) {
  mkdir(dir_.c_str(), 0700);
  // A port nobody listens on: bound and closed again.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string endpoint = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  close(fd);
  auto env = Clean();
  env["AOBJ_ACCESS_KEY_ID"] = "AKANY";
  env["AOBJ_SECRET_ACCESS_KEY"] = "secret";
  EXPECT_EQ(Run({"--endpoint", endpoint, "--timeout", "5", "ls"}, env), 1) << last_;
  EXPECT_NE(last_.find("cannot reach " + endpoint + ": connection refused"), std::string::npos)
      << last_;
  EXPECT_NE(last_.find("is aobj-server running there?"), std::string::npos) << last_;
  EXPECT_EQ(last_.find("gRPC code"), std::string::npos) << last_;
  EXPECT_EQ(Run({"--endpoint", "http://" + endpoint + "/", "ls"}, env), 2) << last_;
  EXPECT_NE(last_.find("not a URL"), std::string::npos) << last_;
  EXPECT_NE(last_.find("use --endpoint " + endpoint), std::string::npos) << last_;
  EXPECT_EQ(Run({"--endpoint", "localhost", "ls"}, env), 2) << last_;
  EXPECT_NE(last_.find("HOST:PORT"), std::string::npos) << last_;
}

TEST_F(CliFirstStepsTest, AwsStyleProfileDirectoryDownloadAndLooseFileWarning) {
  ServerProcess server(dir_, "memory");
  ASSERT_TRUE(server.Start()) << server.log();
  const std::string creds = dir_ + "/aws-credentials";
  {
    std::ofstream out(creds);
    out << "[default]\naws_access_key_id = NOPE\naws_secret_access_key = nope\n"
        << "[lab]\naws_access_key_id = " << kAccessKey << "\naws_secret_access_key = " << kSecret
        << "\n";
  }
  chmod(creds.c_str(), 0600);
  auto env = Clean();
  env["AOBJ_SHARED_CREDENTIALS_FILE"] = creds;
  env["AOBJ_ENDPOINT"] = server.endpoint();
  ASSERT_EQ(Run({"--profile", "lab", "mb", "aobj://first-steps"}, env), 0) << last_;
  EXPECT_EQ(last_.find("warning"), std::string::npos) << last_;
  // Capabilities by name, not number.
  ASSERT_EQ(Run({"--profile", "lab", "session"}, env), 0) << last_;
  EXPECT_NE(last_.find("CRC32C(2)"), std::string::npos) << last_;
  const std::string file = dir_ + "/r.txt";
  std::ofstream(file) << "downloaded into a new directory\n";
  ASSERT_EQ(Run({"--profile", "lab", "cp", file, "aobj://first-steps/r.txt"}, env), 0) << last_;
  // --json: one object per line that a JSON parser reads back, with the values the record holds.
  auto parse = [&](const std::string& line) {
    google::protobuf::Struct record;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &record).ok()) << line;
    return record;
  };
  ASSERT_EQ(Run({"--profile", "lab", "--json", "ls", "aobj://first-steps/"}, env), 0) << last_;
  {
    const auto record = parse(last_.substr(0, last_.find('\n')));
    EXPECT_EQ(record.fields().at("type").string_value(), "object") << last_;
    EXPECT_EQ(record.fields().at("key").string_value(), "r.txt") << last_;
    EXPECT_EQ(record.fields().at("size").number_value(), 32) << last_;
  }
  ASSERT_EQ(Run({"--profile", "lab", "stat", "--json", "first-steps/r.txt"}, env), 0) << last_;
  EXPECT_EQ(parse(last_).fields().at("size").number_value(), 32) << last_;
  ASSERT_EQ(Run({"--profile", "lab", "session", "--json"}, env), 0) << last_;
  {
    const auto record = parse(last_);
    EXPECT_EQ(record.fields().at("version").number_value(), 1) << last_;
    bool crc32c = false;
    for (const auto& v : record.fields().at("capabilities").list_value().values()) {
      crc32c |= v.string_value() == "CRC32C";
    }
    EXPECT_TRUE(crc32c) << last_;
    // Spec 8.9: the reference server offers the fast path, and the CLI takes it.
    EXPECT_EQ(record.fields().at("request_path").string_value(), "fast") << last_;
    EXPECT_GT(
        record.fields().at("limits").struct_value().fields().at("max_in_flight").number_value(), 0)
        << last_;
  }
  // --etag opaque: the server's version tag instead of the MD5 (AOBJ-OBJ-016).
  ASSERT_EQ(
      Run({"--profile", "lab", "--etag", "opaque", "cp", file, "aobj://first-steps/o.txt"}, env), 0)
      << last_;
  ASSERT_EQ(Run({"--profile", "lab", "stat", "aobj://first-steps/o.txt"}, env), 0) << last_;
  EXPECT_NE(last_.find("-0\""), std::string::npos) << last_;
  EXPECT_EQ(Run({"--profile", "lab", "--etag", "sha1", "ls"}, env), 2) << last_;
  // `aws s3 cp s3://b/k ./newdir/` creates newdir.
  const std::string newdir = dir_ + "/newdir/deeper/";
  ASSERT_EQ(Run({"--profile", "lab", "cp", "aobj://first-steps/r.txt", newdir}, env), 0) << last_;
  EXPECT_EQ(testing::ReadFile(newdir + "r.txt"), "downloaded into a new directory\n");
  // The default profile's key is unknown to the server; a profile that is nowhere is named.
  EXPECT_EQ(Run({"ls"}, env), 1) << last_;
  EXPECT_NE(last_.find("INVALID_ACCESS_KEY_ID"), std::string::npos) << last_;
  EXPECT_EQ(Run({"--profile", "nowhere", "ls"}, env), 2) << last_;
  EXPECT_NE(last_.find("--profile names profile 'nowhere'"), std::string::npos) << last_;
  // A file others can read still works, with a warning that says what to do.
  chmod(creds.c_str(), 0644);
  ASSERT_EQ(Run({"--profile", "lab", "ls"}, env), 0) << last_;
  EXPECT_NE(last_.find("warning: credentials file " + creds), std::string::npos) << last_;
  EXPECT_NE(last_.find("chmod 600"), std::string::npos) << last_;
}

}  // namespace
}  // namespace aobj
