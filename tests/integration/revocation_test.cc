// Revoking registrations (issue 8): what deregistering a window does to a later request that
// reuses its old descriptor, and the client's per-request registration mode
// (ClientOptions::register_per_request). Spec: AOBJ-MEM-011, AOBJ-MEM-024, AOBJ-MEM-025.
#include <sys/mman.h>

#include <cstring>
#include <vector>

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

// UCX-allocated (System V) memory: once the client unmaps it and the server has let go of its
// cached key (AOBJ-MEM-024), a request that reuses the old descriptor fails with INVALID_RKEY in
// both directions instead of reaching any memory.
TEST(RevocationTest, DescriptorOfAnUnmappedBufferFailsWithInvalidRkey) {
  ServerProcess server(testing::TestDir(), "memory");
  ASSERT_TRUE(server.Start()) << server.log();
  RawSession raw(server.endpoint(), kAccessKey, kSecret);
  ASSERT_TRUE(raw.Open().status.ok());
  constexpr size_t kSize = 1 << 20;
  auto mem = raw.Allocate(kSize);
  std::memset(mem->data(), 0x42, kSize);
  const pb::PutObjectRequest put = raw.PutRequest("revoked", *mem, kSize);
  const pb::GetObjectRequest get = raw.GetRequest("revoked", *mem, kSize);
  RawReply first = raw.Send(Method::kPutObject, put);
  ASSERT_TRUE(first.status.ok()) << first.status;
  RawReply read = raw.Send(Method::kGetObject, get);
  ASSERT_TRUE(read.status.ok()) << read.status;

  mem.reset();  // revoked: ucp_mem_unmap detaches and removes the client's segment

  RawReply put_again = raw.Send(Method::kPutObject, put);
  EXPECT_EQ(ErrorCodeOf(put_again.status), ErrorCode::kInvalidRkey) << put_again.status;
  RawReply get_again = raw.Send(Method::kGetObject, get);
  EXPECT_EQ(ErrorCodeOf(get_again.status), ErrorCode::kInvalidRkey) << get_again.status;
  // The session itself is unharmed.
  auto fresh = raw.Allocate(kSize);
  std::memset(fresh->data(), 0x43, kSize);
  RawReply put_fresh = raw.Send(Method::kPutObject, raw.PutRequest("revoked", *fresh, kSize));
  EXPECT_TRUE(put_fresh.status.ok()) << put_fresh.status;
}

// ClientOptions::register_per_request: caller memory is registered per request, window by
// window, and every operation that moves bytes by RMA still works (PUT, whole and ranged GET,
// scatter-gather, multipart part), with the buffer reusable after each reply.
TEST(RevocationTest, PerRequestRegistrationMovesEveryKindOfBody) {
  ServerProcess server(testing::TestDir(), "memory");
  ASSERT_TRUE(server.Start()) << server.log();
  ClientOptions o;
  o.endpoint = server.endpoint();
  o.access_key_id = kAccessKey;
  o.secret = kSecret;
  o.register_per_request = true;
  o.allow_inline = false;  // every body by RMA
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status();

  constexpr size_t kSize = 8 << 20;
  std::vector<uint8_t> src(kSize), dst(kSize, 0);
  for (size_t i = 0; i < kSize; ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  auto in = (*c)->RegisterBuffer(src.data(), kSize);
  ASSERT_TRUE(in.ok()) << in.status();
  auto out = (*c)->RegisterBuffer(dst.data(), kSize);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE((*in)->allocated_by_library());

  auto put = (*c)->Put("test-bucket", "per-request", **in, kSize);
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(put->path, TransferPath::kRma);
  auto got = (*c)->Get("test-bucket", "per-request", **out);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->path, TransferPath::kRma);
  EXPECT_EQ(std::memcmp(src.data(), dst.data(), kSize), 0);

  // A range into the middle of the buffer: only that window is registered and written.
  std::fill(dst.begin(), dst.end(), 0);
  GetOptions ranged;
  ranged.range = ByteRange::FirstLast(1000, 1999);
  auto part = (*c)->Get("test-bucket", "per-request", {{out->get(), 5000, 1000}}, ranged);
  ASSERT_TRUE(part.ok()) << part.status();
  EXPECT_EQ(std::memcmp(dst.data() + 5000, src.data() + 1000, 1000), 0);
  EXPECT_EQ(dst[4999], 0);
  EXPECT_EQ(dst[6000], 0);

  // The same region again, many times: each request maps and unmaps its own registration.
  for (int i = 0; i < 20; ++i) {
    src[0] = static_cast<uint8_t>(i);
    ASSERT_TRUE((*c)->Put("test-bucket", "again", **in, 4096).ok());
    ASSERT_TRUE((*c)->Get("test-bucket", "again", {{out->get(), 0, 4096}}, {}).ok());
    ASSERT_EQ(dst[0], static_cast<uint8_t>(i));
  }

  auto upload = (*c)->CreateMultipartUpload("test-bucket", "mp");
  ASSERT_TRUE(upload.ok()) << upload.status();
  auto p1 = (*c)->UploadPart("test-bucket", "mp", upload->upload_id, 1, **in, 4096, 4096);
  ASSERT_TRUE(p1.ok()) << p1.status();
  auto done =
      (*c)->CompleteMultipartUpload("test-bucket", "mp", upload->upload_id, {{1, p1->etag}});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->size, 4096u);
}

}  // namespace
}  // namespace aobj
