// Per-principal bucket authorization with two principals (spec 14.8, AOBJ-SEC-008..011):
// owner-only buckets, read-only and write grants, refused requests without effect, owners kept
// across a restart of the filesystem store.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "aobj/client.h"
#include "aobj/status.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "gtest/gtest.h"
#include "integration/raw_session.h"
#include "integration/server_process.h"

namespace aobj {
namespace {

using testing::kAccessKey;
using testing::kSecret;
using testing::ServerProcess;

constexpr char kSecond[] = "AKTESTSECOND";
constexpr char kSecondSecret[] = "second-secret-for-tests";

class AuthzTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(
        testing::TestDir(), "fs",
        std::vector<std::string>{"--authorization", "owner", "--grant",
                                 std::string(kAccessKey) + ":test-bucket:owner"});
    ASSERT_TRUE(server_->Start()) << server_->log();
    Connect();
  }
  void Connect() {
    a_ = Open(kAccessKey, kSecret);
    b_ = Open(kSecond, kSecondSecret);
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
  }
  std::unique_ptr<Client> Open(const char* key, const char* secret) {
    ClientOptions o;
    o.endpoint = server_->endpoint();
    o.access_key_id = key;
    o.secret = secret;
    auto c = Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }
  static bool Denied(const absl::Status& s) { return ErrorCodeOf(s) == ErrorCode::kAccessDenied; }
  static std::vector<std::string> Names(Client& c) {
    std::vector<std::string> out;
    auto l = c.ListBuckets();
    if (l.ok()) {
      for (const auto& b : *l) out.push_back(b.name);
    }
    return out;
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> a_, b_;
};

TEST_F(AuthzTest, OwnerOnlyBucketsRefuseOtherPrincipals) {
  ASSERT_TRUE(a_->CreateBucket("alpha").ok());
  auto buf = b_->AllocateBuffer(50000);
  ASSERT_TRUE(buf.ok());
  std::memset((*buf)->data(), 'a', 50000);
  auto abuf = a_->AllocateBuffer(50000);
  ASSERT_TRUE(abuf.ok());
  std::memset((*abuf)->data(), 'a', 50000);
  ASSERT_TRUE(a_->Put("alpha", "k", **abuf, 50000).ok());

  // AOBJ-SEC-008: every kind of access by another principal is refused, with no effect.
  EXPECT_TRUE(Denied(b_->HeadBucket("alpha")));
  EXPECT_TRUE(Denied(b_->Head("alpha", "k").status()));
  EXPECT_TRUE(Denied(b_->Get("alpha", "k", **buf).status()));
  EXPECT_TRUE(Denied(b_->Put("alpha", "k", **buf, 10).status()));
  EXPECT_TRUE(Denied(b_->Delete("alpha", "k")));
  EXPECT_TRUE(Denied(b_->ListObjects("alpha", {}).status()));
  EXPECT_TRUE(Denied(b_->DeleteBucket("alpha")));
  // The same answer for a bucket that does not exist: nothing leaks.
  EXPECT_TRUE(Denied(b_->HeadBucket("no-such-bucket")));
  // AOBJ-SEC-010: listings show only readable buckets.
  auto names = Names(*b_);
  EXPECT_EQ(std::count(names.begin(), names.end(), "alpha"), 0);
  names = Names(*a_);
  EXPECT_EQ(std::count(names.begin(), names.end(), "alpha"), 1);
  // The owner's object is untouched.
  auto get = a_->Get("alpha", "k", **abuf);
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_EQ(get->info.size, 50000u);

  // B's own bucket is B's alone.
  ASSERT_TRUE(b_->CreateBucket("beta").ok());
  EXPECT_TRUE(b_->Put("beta", "mine", **buf, 100).ok());
  EXPECT_TRUE(Denied(a_->Get("beta", "mine", **abuf).status()));
  // A copy needs read on the source and write on the destination (AOBJ-SEC-009).
  EXPECT_TRUE(Denied(b_->Copy("alpha", "k", "beta", "stolen", {}).status()));
  EXPECT_TRUE(Denied(a_->Copy("alpha", "k", "beta", "pushed", {}).status()));
  EXPECT_TRUE(a_->Copy("alpha", "k", "alpha", "k2", {}).ok());
}

// Tenth hostile probe, F4: a client name with a newline forged a log line of its own, and a bucket
// name echoed in an ACCESS_DENIED message put a newline into the log too. Every log line now
// keeps a peer's text printable (and a quoted field's quotes escaped): nothing starts a line of
// its own.
TEST_F(AuthzTest, PeerTextCannotForgeALogLine) {
  ClientOptions o;
  o.endpoint = server_->endpoint();
  o.access_key_id = kSecond;
  o.secret = kSecondSecret;
  o.client_name = "cli\nFORGED1 x=\"y";
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(Denied((*c)->HeadBucket("ab\nFORGED2 x")));
  (*c).reset();
  const std::string log = server_->log();
  EXPECT_NE(log.find("client=\"cli\\x0aFORGED1 x=\\x22y\""), std::string::npos) << log;
  EXPECT_NE(log.find("ab\\x0aFORGED2 x"), std::string::npos)
      << "the bad bucket's name is not in the log: nothing was tested\n"
      << log;
  for (const char* forged : {"\nFORGED1", "\nFORGED2"}) {
    EXPECT_EQ(log.find(forged), std::string::npos) << log;
  }
}

// Eleventh hostile probe, N4: a failure before the signature was verified was logged under
// `access_key=` and the key the request only claimed, like a verified principal's failure.
TEST_F(AuthzTest, AFailureBeforeTheSignatureNamesItsKeyAsClaimed) {
  ClientOptions o;
  o.endpoint = server_->endpoint();
  o.access_key_id = kSecond;
  o.secret = "not-the-secret-of-this-key";
  auto c = Client::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(ErrorCodeOf(c.status()), ErrorCode::kSignatureDoesNotMatch) << c.status();
  const std::string log = server_->log();
  EXPECT_NE(
      log.find(absl::StrCat("claimed_access_key=", kSecond, " code=SIGNATURE_DOES_NOT_MATCH")),
      std::string::npos)
      << log;
  EXPECT_EQ(log.find(absl::StrCat(" access_key=", kSecond, " code=SIGNATURE_DOES_NOT_MATCH")),
            std::string::npos)
      << log;
}

// AOBJ-SEC-008, issue 21: authorization reads the typed request the handler serves. Every method
// of aobj.v1.ObjectService is accounted for: one that names a bucket is refused to another
// principal when it names the owner's bucket (in every field whose name ends in "bucket", the rest
// left empty: authorization comes before validation); the session's calls and ListBuckets name
// none, and CreateBucket needs no grant (whoever creates a bucket owns it). A method added to the
// .proto, or a bucket field renamed, fails here.
TEST_F(AuthzTest, EveryMethodThatNamesABucketIsAuthorizedBeforeAnythingElse) {
  ASSERT_TRUE(a_->CreateBucket("alpha").ok());
  testing::RawSession raw(server_->endpoint(), kSecond, kSecondSecret);
  RawReply opened = raw.Open();
  ASSERT_TRUE(opened.status.ok()) << opened.status;
  const std::set<std::string> name_none = {"OpenSession",     "RenewSession", "CloseSession",
                                           "ConfirmEndpoint", "CreateBucket", "ListBuckets"};
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          "aobj.v1.ObjectService");
  ASSERT_NE(service, nullptr);
  int refused = 0;
  for (int i = 0; i < service->method_count(); ++i) {
    const google::protobuf::MethodDescriptor* md = service->method(i);
    const Method method = MethodFromName(md->name());
    ASSERT_NE(method, Method::kCount) << md->name() << " is not in wire/methods.h";
    std::unique_ptr<google::protobuf::Message> req(
        google::protobuf::MessageFactory::generated_factory()
            ->GetPrototype(md->input_type())
            ->New());
    int buckets = 0;
    for (int f = 0; f < md->input_type()->field_count(); ++f) {
      const google::protobuf::FieldDescriptor* fd = md->input_type()->field(f);
      if (fd->type() == google::protobuf::FieldDescriptor::TYPE_STRING && !fd->is_repeated() &&
          absl::EndsWith(fd->name(), "bucket")) {
        req->GetReflection()->SetString(req.get(), fd, "alpha");
        ++buckets;
      }
    }
    if (md->name() == "CreateBucket") continue;  // names one, but whoever creates it owns it
    if (name_none.count(md->name()) != 0) {
      EXPECT_EQ(buckets, 0) << md->name() << " names a bucket now: authorize it";
      continue;
    }
    ASSERT_GT(buckets, 0) << md->name() << " names no bucket: list it among those that name none";
    RawReply r = raw.Send(method, req->SerializeAsString());
    EXPECT_EQ(ErrorCodeOf(r.status), ErrorCode::kAccessDenied) << md->name() << ": " << r.status;
    ++refused;
  }
  EXPECT_EQ(refused + static_cast<int>(name_none.size()), service->method_count());
  EXPECT_GE(refused, 17);
  // A refused request had no effect: the bucket is A's and empty, and no upload was begun.
  auto listed = a_->ListObjects("alpha", {});
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_TRUE(listed->objects.empty());
  auto uploads = a_->ListMultipartUploads("alpha", {});
  ASSERT_TRUE(uploads.ok()) << uploads.status();
  EXPECT_TRUE(uploads->uploads.empty());
}

// Control-plane probe finding 2 (AOBJ-OBJ-232): A's upload cannot pass to B through a bucket
// that A deletes and B re-creates. The delete is refused while the upload is in progress; once A
// aborts it and deletes the bucket, B's bucket of the same name starts with no uploads.
TEST_F(AuthzTest, UploadsCannotPassToTheNextHolderOfABucketName) {
  ASSERT_TRUE(a_->CreateBucket("gamma").ok());
  auto up = a_->CreateMultipartUpload("gamma", "secret");
  ASSERT_TRUE(up.ok()) << up.status();
  auto buf = a_->AllocateBuffer(1000);
  ASSERT_TRUE(buf.ok());
  std::memset((*buf)->data(), 's', 1000);
  ASSERT_TRUE(a_->UploadPart("gamma", "secret", up->upload_id, 1, **buf, 0, 1000).ok());
  EXPECT_EQ(ErrorCodeOf(a_->DeleteBucket("gamma")), ErrorCode::kBucketNotEmpty);
  EXPECT_FALSE(b_->CreateBucket("gamma").ok());  // the name is still A's
  EXPECT_TRUE(Denied(b_->ListMultipartUploads("gamma").status()));
  EXPECT_TRUE(Denied(b_->ListParts("gamma", "secret", up->upload_id).status()));
  ASSERT_TRUE(a_->AbortMultipartUpload("gamma", "secret", up->upload_id).ok());
  ASSERT_TRUE(a_->DeleteBucket("gamma").ok());
  ASSERT_TRUE(b_->CreateBucket("gamma").ok());
  auto uploads = b_->ListMultipartUploads("gamma");
  ASSERT_TRUE(uploads.ok()) << uploads.status();
  EXPECT_TRUE(uploads->uploads.empty());
  EXPECT_EQ(ErrorCodeOf(b_->ListParts("gamma", "secret", up->upload_id).status()),
            ErrorCode::kNoSuchUpload);
}

TEST_F(AuthzTest, GrantsOpenBucketsReadOnlyOrReadWrite) {
  server_->Stop();
  server_ = std::make_unique<ServerProcess>(
      testing::TestDir(), "fs",
      std::vector<std::string>{"--authorization", "owner", "--grant",
                               std::string(kAccessKey) + ":test-bucket:owner", "--grant",
                               std::string(kSecond) + ":test-bucket:read", "--grant",
                               std::string(kSecond) + ":writable:write"});
  ASSERT_TRUE(server_->Start()) << server_->log();
  Connect();
  auto abuf = a_->AllocateBuffer(1000);
  auto bbuf = b_->AllocateBuffer(1000);
  ASSERT_TRUE(abuf.ok() && bbuf.ok());
  std::memset((*abuf)->data(), 'r', 1000);
  ASSERT_TRUE(a_->Put("test-bucket", "shared", **abuf, 1000).ok());
  // Read grant: reads and lists, nothing else.
  auto get = b_->Get("test-bucket", "shared", **bbuf);
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_EQ((*bbuf)->data()[999], 'r');
  EXPECT_TRUE(b_->ListObjects("test-bucket", {}).ok());
  EXPECT_TRUE(b_->Head("test-bucket", "shared").ok());
  EXPECT_TRUE(Denied(b_->Put("test-bucket", "shared", **bbuf, 10).status()));
  EXPECT_TRUE(Denied(b_->Delete("test-bucket", "shared")));
  EXPECT_TRUE(Denied(b_->DeleteBucket("test-bucket")));
  // Write grant on a bucket A owns: objects yes, deleting the bucket no.
  ASSERT_TRUE(a_->CreateBucket("writable").ok());
  EXPECT_TRUE(b_->Put("writable", "x", **bbuf, 10).ok());
  EXPECT_TRUE(b_->Delete("writable", "x").ok());
  EXPECT_TRUE(Denied(b_->DeleteBucket("writable")));
  EXPECT_TRUE(a_->DeleteBucket("writable").ok());
}

TEST_F(AuthzTest, OwnersSurviveARestart) {
  ASSERT_TRUE(a_->CreateBucket("kept").ok());
  a_.reset();
  b_.reset();
  ASSERT_TRUE(server_->Restart()) << server_->log();
  Connect();
  EXPECT_TRUE(a_->HeadBucket("kept").ok());  // AOBJ-SEC-011
  EXPECT_TRUE(Denied(b_->HeadBucket("kept")));
}

// AOBJ-SEC-016 (issue 16, finding 6): a CreateBucket whose owner cannot be recorded (here the
// owners file cannot be rewritten: a directory sits where its temporary file goes; on the probe,
// a full disk) used to create the bucket anyway, with no owner: after a restart its creator was
// refused and the name was taken. Now the bucket is not created, and once the store can record
// owners again, the creator creates and owns it.
TEST_F(AuthzTest, ABucketNeverExistsWithoutItsOwner) {
  const std::string blocker = server_->dir() + "/data/.aobj-owners.tmp";
  ASSERT_EQ(mkdir(blocker.c_str(), 0700), 0);
  const absl::Status failed = a_->CreateBucket("unowned");
  EXPECT_EQ(ErrorCodeOf(failed), ErrorCode::kStorageError) << failed;
  struct stat st;
  EXPECT_NE(stat((server_->dir() + "/data/unowned").c_str(), &st), 0)
      << "the bucket was created without its owner";
  ASSERT_EQ(rmdir(blocker.c_str()), 0);
  a_.reset();
  b_.reset();
  ASSERT_TRUE(server_->Restart()) << server_->log();
  Connect();
  ASSERT_TRUE(a_->CreateBucket("unowned").ok());
  EXPECT_TRUE(a_->HeadBucket("unowned").ok());
  EXPECT_TRUE(Denied(b_->HeadBucket("unowned")));
}

// The owners file's temporary file is always created new: a FIFO at its name (left there by
// anyone who can write the directory) hung the rewrite in open() while it held the authorizer's
// lock, so every request of every principal waited behind it; a link there was followed. Now the
// leftover is removed, the file created exclusively, and the rewrite holds only the writers' lock
// (so a slow disk never holds up Check either).
TEST_F(AuthzTest, WhateverSitsAtTheOwnersFilesTemporaryNameNeitherHangsNorRedirectsIt) {
  const std::string tmp = server_->dir() + "/data/.aobj-owners.tmp";
  const std::string victim = server_->dir() + "/victim";
  {
    std::ofstream f(victim);
    f << "not the owners file\n";
  }
  ASSERT_EQ(mkfifo(tmp.c_str(), 0600), 0);
  // With the old code the CreateBucket would wait forever: the call runs beside, and a reader
  // of the FIFO ends that wait if it is still there after the bound.
  std::promise<absl::Status> created;
  auto done = created.get_future();
  std::thread creator([&] { created.set_value(a_->CreateBucket("after-fifo")); });
  const bool in_time = done.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!in_time) {
    const int unblock = open(tmp.c_str(), O_RDONLY | O_NONBLOCK);
    if (unblock >= 0) close(unblock);
  }
  creator.join();
  ASSERT_TRUE(in_time) << "CreateBucket waited on a FIFO at the owners file's temporary name";
  EXPECT_TRUE(done.get().ok());
  EXPECT_TRUE(a_->HeadBucket("after-fifo").ok());
  EXPECT_TRUE(Denied(b_->HeadBucket("after-fifo")));

  ASSERT_EQ(symlink(victim.c_str(), tmp.c_str()), 0);
  ASSERT_TRUE(b_->CreateBucket("after-link").ok());
  EXPECT_EQ(testing::ReadFile(victim), "not the owners file\n") << "the rewrite followed a link";
  struct stat st;
  ASSERT_EQ(lstat((server_->dir() + "/data/.aobj-owners").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  const std::string owners = testing::ReadFile(server_->dir() + "/data/.aobj-owners");
  EXPECT_TRUE(absl::StrContains(owners, "after-fifo " + std::string(kAccessKey))) << owners;
  EXPECT_TRUE(absl::StrContains(owners, "after-link " + std::string(kSecond))) << owners;
  // What the file says holds after a restart.
  a_.reset();
  b_.reset();
  ASSERT_TRUE(server_->Restart()) << server_->log();
  Connect();
  EXPECT_TRUE(b_->HeadBucket("after-link").ok());
  EXPECT_TRUE(Denied(a_->HeadBucket("after-link")));
  EXPECT_TRUE(Denied(b_->HeadBucket("after-fifo")));
}

// AOBJ-SEC-016: an owner recorded for a bucket that does not exist (what a crash between the
// owner's record and the bucket's creation leaves) is forgotten at start, so it keeps nobody from
// the name.
TEST_F(AuthzTest, AnOwnerWithoutItsBucketIsForgottenAtStart) {
  a_.reset();
  b_.reset();
  server_->Stop();
  {
    std::ofstream f(server_->dir() + "/data/.aobj-owners", std::ios::app);
    f << "ghost " << kAccessKey << "\n";
  }
  ASSERT_TRUE(server_->Start()) << server_->log();
  Connect();
  ASSERT_TRUE(b_->CreateBucket("ghost").ok());
  EXPECT_TRUE(b_->HeadBucket("ghost").ok());
  EXPECT_TRUE(Denied(a_->HeadBucket("ghost"))) << "the stale owner took the new bucket";
  EXPECT_EQ(testing::ReadFile(server_->dir() + "/data/.aobj-owners").find("ghost " +
                                                                           std::string(kAccessKey)),
            std::string::npos);
}

// Issue 16 finding 6: a bad grant or a malformed owners file is reported at start with the
// reason and exit status 1, not a crash.
TEST(AuthzStartTest, BadGrantOrOwnersFileIsReportedNotACrash) {
  const std::string dir = testing::TestDir();
  const std::string creds = dir + "/creds";
  std::system(("mkdir -p '" + dir + "/root'").c_str());  // before the credentials go in it
  {
    std::ofstream f(creds);
    f << kAccessKey << " " << kSecret << "\n";
  }
  chmod(creds.c_str(), 0600);
  {
    std::ofstream f(dir + "/root/.aobj-owners");
    f << "this is \x01 not an owners file\n\n\n";
  }
  // Seventh hostile probe, F5: an owners file that is a FIFO hung the start in open().
  std::system(("mkdir -p '" + dir + "/root3'").c_str());
  ASSERT_EQ(mkfifo((dir + "/root3/.aobj-owners").c_str(), 0600), 0);
  // Tenth hostile probe (INFO): a bucket named twice, with two owners, was taken by the last.
  std::system(("mkdir -p '" + dir + "/root4/vbkt'").c_str());
  {
    std::ofstream f(dir + "/root4/.aobj-owners");
    f << "vbkt " << kAccessKey << "\nvbkt AKOTHER\n";
  }
  const std::vector<std::vector<std::string>> cases = {
      {"--store", "memory", "--grant", std::string(kAccessKey) + ":BAD_Bucket!:read"},
      {"--store", "fs", "--root", dir + "/root"},
      // Hostile probe of issue 16 (N6): a bucket name no request can reach used to be created.
      {"--store", "fs", "--root", dir + "/root2", "--create-bucket", "Not_A_Bucket"},
      {"--store", "fs", "--root", dir + "/root3"},
      {"--store", "fs", "--root", dir + "/root4"}};
  int n = 0;
  for (const auto& extra : cases) {
    std::vector<std::string> argv = {AOBJ_SERVER_BINARY, "--listen", "127.0.0.1:0",
                                     "--credentials", creds, "--plaintext", "--authorization",
                                     "owner"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const std::string log = dir + "/start-" + std::to_string(++n) + ".log";
    const pid_t pid = testing::Spawn(argv, log);
    const int status = testing::WaitFor(pid, std::chrono::seconds(20));
    if (status < 0) {
      kill(pid, SIGKILL);
      testing::WaitFor(pid, std::chrono::seconds(5));
    }
    ASSERT_GE(status, 0) << "the start hangs:\n" << testing::ReadFile(log);
    EXPECT_TRUE(WIFEXITED(status)) << "killed by a signal:\n" << testing::ReadFile(log);
    EXPECT_NE(WEXITSTATUS(status), 0) << testing::ReadFile(log);
    EXPECT_EQ(testing::ReadFile(log).find("Segmentation"), std::string::npos)
        << testing::ReadFile(log);
    // Refused for the reason under test, not for want of credentials.
    EXPECT_EQ(testing::ReadFile(log).find("credentials"), std::string::npos)
        << testing::ReadFile(log);
  }
  EXPECT_NE(testing::ReadFile(dir + "/start-3.log").find("--create-bucket Not_A_Bucket"),
            std::string::npos)
      << testing::ReadFile(dir + "/start-3.log");
  EXPECT_NE(testing::ReadFile(dir + "/start-4.log").find("not a regular file"), std::string::npos)
      << testing::ReadFile(dir + "/start-4.log");
  EXPECT_NE(testing::ReadFile(dir + "/start-5.log").find(":2: bucket vbkt has another owner"),
            std::string::npos)
      << testing::ReadFile(dir + "/start-5.log");
  struct stat st;
  EXPECT_NE(stat((dir + "/root2/Not_A_Bucket").c_str(), &st), 0) << "the directory was made";
}

}  // namespace
}  // namespace aobj
