// One channel lost while the other lives: the operation fails with a specific error within a
// deadline, nothing hangs, and a retry on a new session works.
#include <cstring>
#include <thread>

#include "absl/time/clock.h"
#include "aobj/client.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/raw_session.h"
#include "integration/server_process.h"

namespace aobj {
namespace {

using testing::kAccessKey;
using testing::kSecret;
using testing::RawSession;
using testing::ServerProcess;
namespace pb = aobj::v1;

ClientOptions Options(const ServerProcess& server, int64_t timeout_ms) {
  ClientOptions o;
  o.endpoint = server.endpoint();
  o.access_key_id = kAccessKey;
  o.secret = kSecret;
  o.timeout_ms = timeout_ms;
  return o;
}

TEST(ChannelLossTest, ControlDeadlineDuringTransferShutsTheDataChannel) {
  ServerProcess server(testing::TestDir(), "memory");
  ASSERT_TRUE(server.Start()) << server.log();
  // The deadline lets OpenSession through (even under sanitizers) but not the PUT: the server's
  // MD5 of 512 MiB alone takes most of a second.
  constexpr size_t kSize = size_t{512} << 20;
  auto c = Client::Connect(Options(server, 400));
  ASSERT_TRUE(c.ok()) << c.status();
  auto buf = (*c)->AllocateBuffer(kSize);
  ASSERT_TRUE(buf.ok());
  std::memset((*buf)->data(), 0x33, kSize);
  const absl::Time t0 = absl::Now();
  auto put = (*c)->Put("test-bucket", "late", **buf, kSize);
  EXPECT_LT(absl::Now() - t0, absl::Seconds(5)) << "the client waited past its deadline";
  ASSERT_FALSE(put.ok());
  // AOBJ-MEM-014: the outcome is unknown, so the client's data channel is gone for good.
  auto again = (*c)->Put("test-bucket", "late2", **buf, 1000);
  EXPECT_EQ(ErrorCodeOf(again.status()), ErrorCode::kDataChannelUnavailable) << again.status();

  // A new client is served; the interrupted key holds nothing or the whole object.
  auto fresh = Client::Connect(Options(server, 60000));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  std::this_thread::sleep_for(std::chrono::seconds(3));  // let the interrupted PUT finish
  auto out = (*fresh)->AllocateBuffer(kSize);
  ASSERT_TRUE(out.ok());
  auto get = (*fresh)->Get("test-bucket", "late", **out);
  if (get.ok()) {
    EXPECT_EQ(get->info.size, kSize);
    EXPECT_EQ((*out)->data()[kSize - 1], 0x33);
  } else {
    EXPECT_EQ(ErrorCodeOf(get.status()), ErrorCode::kNoSuchKey) << get.status();
  }
  EXPECT_TRUE(server.Alive());
}

TEST(ChannelLossTest, DataChannelGoneWhileControlLivesFailsFast) {
  ServerProcess server(testing::TestDir(), "memory");
  ASSERT_TRUE(server.Start()) << server.log();
  RawSession raw(server.endpoint(), kAccessKey, kSecret);
  ASSERT_TRUE(raw.Open().status.ok());
  auto mem = raw.Allocate(1 << 20);
  ASSERT_TRUE(raw.Send(Method::kPutObject, raw.PutRequest("obj", *mem, 1 << 20)).status.ok());
  pb::GetObjectRequest get = raw.GetRequest("obj", *mem, 1 << 20);
  // The client's memory and worker disappear; its control channel still works.
  mem.reset();
  raw.DropDataChannel();
  const absl::Time t0 = absl::Now();
  RawReply r = raw.Send(Method::kGetObject, get);
  EXPECT_LT(absl::Now() - t0, absl::Seconds(10)) << "the server hung on a dead data channel";
  EXPECT_FALSE(r.status.ok());
  const ErrorCode code = ErrorCodeOf(r.status);
  EXPECT_TRUE(code == ErrorCode::kInvalidRkey || code == ErrorCode::kDescriptorOutOfBounds ||
              code == ErrorCode::kDataChannelUnavailable || code == ErrorCode::kTransferFailed)
      << r.status;
  // AOBJ-DAT-009: a failure with an AOBJ code, not a hang or a silent fallback.
  EXPECT_TRUE(r.error.code() != pb::ERROR_CODE_UNSPECIFIED) << "no AOBJ error code";
  // Control still works on that session, and a new session is served in full.
  pb::HeadObjectRequest head;
  head.set_bucket("test-bucket");
  head.set_key("obj");
  EXPECT_TRUE(raw.Send(Method::kHeadObject, head).status.ok());
  auto c = Client::Connect(Options(server, 60000));
  ASSERT_TRUE(c.ok()) << c.status();
  auto out = (*c)->AllocateBuffer(1 << 20);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE((*c)->Get("test-bucket", "obj", **out).ok());
}

}  // namespace
}  // namespace aobj
