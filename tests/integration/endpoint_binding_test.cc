// Endpoint binding (spec 5.6.1): the server moves no byte by RMA to a worker address until the
// process behind it proves the session's endpoint key, so a session naming someone else's
// address reaches nothing (spec-review D1, interop finding 3).
#include <cstring>
#include <string>

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

constexpr size_t kSize = 1 << 20;

bool All(const RegisteredMemory& mem, size_t n, uint8_t v) {
  for (size_t i = 0; i < n; ++i) {
    if (mem.data()[i] != v) return false;
  }
  return true;
}

class EndpointBindingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start()) << server_.log();
    owner_ = std::make_unique<RawSession>(server_.endpoint(), kAccessKey, kSecret);
    ASSERT_TRUE(owner_->Open().status.ok());
    auto mem = owner_->Allocate(kSize);
    std::memset(mem->data(), 0x42, kSize);
    ASSERT_TRUE(owner_->Send(Method::kPutObject, owner_->PutRequest("obj", *mem, kSize)).status.ok());
  }
  ServerProcess server_{testing::TestDir(), "memory"};
  std::unique_ptr<RawSession> owner_;
};

// AOBJ-SES-027: before ConfirmEndpoint, GET and PUT by RMA fail ENDPOINT_UNCONFIRMED and the
// window is untouched; afterwards the same requests work.
TEST_F(EndpointBindingTest, UnconfirmedEndpointMovesNothing) {
  RawSession raw(server_.endpoint(), kAccessKey, kSecret);
  ASSERT_TRUE(raw.Open(raw.DefaultOpen(), /*confirm=*/false).status.ok());
  auto mem = raw.Allocate(kSize);
  std::memset(mem->data(), 0x5a, kSize);
  RawReply get = raw.Send(Method::kGetObject, raw.GetRequest("obj", *mem, kSize));
  EXPECT_EQ(ErrorCodeOf(get.status), ErrorCode::kEndpointUnconfirmed) << get.status;
  EXPECT_TRUE(All(*mem, kSize, 0x5a)) << "the server wrote into an unconfirmed endpoint";
  RawReply put = raw.Send(Method::kPutObject, raw.PutRequest("other", *mem, kSize));
  EXPECT_EQ(ErrorCodeOf(put.status), ErrorCode::kEndpointUnconfirmed) << put.status;
  // AOBJ-SES-031: a short or wrong proof is refused and changes nothing.
  EXPECT_EQ(ErrorCodeOf(raw.Confirm(std::string(8, 'x')).status), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ErrorCodeOf(raw.Confirm(std::string(32, 'x')).status), ErrorCode::kAccessDenied);
  get = raw.Send(Method::kGetObject, raw.GetRequest("obj", *mem, kSize));
  EXPECT_EQ(ErrorCodeOf(get.status), ErrorCode::kEndpointUnconfirmed) << get.status;
  ASSERT_TRUE(raw.Confirm().status.ok());
  get = raw.Send(Method::kGetObject, raw.GetRequest("obj", *mem, kSize));
  EXPECT_TRUE(get.status.ok()) << get.status;
  EXPECT_TRUE(All(*mem, kSize, 0x42));
}

// The confused deputy: a session that names another client's worker address cannot make the
// server write into, or read from, that client's memory, and the other client is unharmed.
TEST_F(EndpointBindingTest, SessionNamingAnotherWorkerGetsNoRmaIntoIt) {
  RawSession victim(server_.endpoint(), kAccessKey, kSecret);
  ASSERT_TRUE(victim.Open().status.ok());
  auto secret_mem = victim.Allocate(kSize);
  std::memset(secret_mem->data(), 0x11, kSize);

  RawSession attacker(server_.endpoint(), kAccessKey, kSecret);
  pb::OpenSessionRequest open = attacker.DefaultOpen();
  open.set_worker_address(victim.worker().address());
  ASSERT_TRUE(attacker.Open(open, /*confirm=*/false).status.ok());
  // The challenge went to the victim's worker; the attacker never sees it and cannot prove.
  EXPECT_EQ(ErrorCodeOf(attacker.Confirm(std::string(32, '\0')).status), ErrorCode::kAccessDenied);
  // Its own challenges wait at its own worker, for its own sessions only: none came.
  RawReply relay = attacker.Confirm("", absl::Milliseconds(500));
  EXPECT_FALSE(relay.status.ok());
  RawReply get = attacker.Send(Method::kGetObject, attacker.GetRequest("obj", *secret_mem, kSize));
  EXPECT_EQ(ErrorCodeOf(get.status), ErrorCode::kEndpointUnconfirmed) << get.status;
  EXPECT_TRUE(All(*secret_mem, kSize, 0x11)) << "the server wrote into the victim's memory";
  RawReply put =
      attacker.Send(Method::kPutObject, attacker.PutRequest("stolen", *secret_mem, kSize));
  EXPECT_EQ(ErrorCodeOf(put.status), ErrorCode::kEndpointUnconfirmed) << put.status;
  pb::HeadObjectRequest head;
  head.set_bucket("test-bucket");
  head.set_key("stolen");
  EXPECT_EQ(ErrorCodeOf(owner_->Send(Method::kHeadObject, head).status), ErrorCode::kNoSuchKey);
  // The victim's own session works as before.
  RawReply own = victim.Send(Method::kGetObject, victim.GetRequest("obj", *secret_mem, kSize));
  EXPECT_TRUE(own.status.ok()) << own.status;
  EXPECT_TRUE(All(*secret_mem, kSize, 0x42));
  EXPECT_TRUE(server_.Alive());
}

// The client library proves its endpoint on its own before its first data request.
TEST_F(EndpointBindingTest, ClientLibraryConfirmsByItself) {
  ClientOptions o;
  o.endpoint = server_.endpoint();
  o.access_key_id = kAccessKey;
  o.secret = kSecret;
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status();
  auto buf = (*c)->AllocateBuffer(kSize);
  ASSERT_TRUE(buf.ok());
  auto got = (*c)->Get("test-bucket", "obj", **buf);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->info.size, kSize);
  EXPECT_EQ((*buf)->data()[kSize - 1], 0x42);
}

}  // namespace
}  // namespace aobj
