// The framing between aobj-server and its data-channel processes (src/transport/confined_ipc.h)
// against golden images written from its description (tests/golden/confined_frames.h).
#include "transport/confined_ipc.h"

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "golden/confined_frames.h"
#include "golden/corpus.h"
#include "gtest/gtest.h"

namespace aobj::confined {
namespace {

TEST(ConfinedIpcGoldenTest, AnExecuteRequestIsWrittenFieldByField) {
  FrameWriter w;
  w.U32(static_cast<uint32_t>(Op::kExecute));
  w.U64(5);
  w.U64(3);
  w.I64(1500000000);
  w.U32(0);
  w.U64(1024);
  w.U32(1);
  w.U64(0x10000);
  w.U64(4096);
  w.Bytes("RK");
  w.U32(1);
  for (uint64_t v : {uint64_t{0}, uint64_t{0x10000}, uint64_t{2}, uint64_t{0}, uint64_t{4096}}) {
    w.U64(v);
  }
  EXPECT_EQ(w.body(), golden::kGoldenExecuteRequest);
  // And read back with FrameReader, as the process does.
  FrameReader r(golden::kGoldenExecuteRequest);
  uint32_t op = 0, direction = 9, windows = 0;
  uint64_t id = 0, endpoint = 0, max_rkey = 0, address = 0, length = 0;
  int64_t timeout = 0;
  std::string rkey;
  ASSERT_TRUE(r.U32(&op) && r.U64(&id) && r.U64(&endpoint) && r.I64(&timeout) &&
              r.U32(&direction) && r.U64(&max_rkey) && r.U32(&windows) && r.U64(&address) &&
              r.U64(&length) && r.Bytes(&rkey, 1024));
  EXPECT_EQ(static_cast<Op>(op), Op::kExecute);
  EXPECT_EQ(id, 5u);
  EXPECT_EQ(endpoint, 3u);
  EXPECT_EQ(timeout, 1500000000);
  EXPECT_EQ(direction, 0u);
  EXPECT_EQ(max_rkey, 1024u);
  EXPECT_EQ(windows, 1u);
  EXPECT_EQ(address, 0x10000u);
  EXPECT_EQ(length, 4096u);
  EXPECT_EQ(rkey, "RK");
  EXPECT_EQ(r.rest_size(), 4u + 5 * 8);
  std::string too_long;
  // The rkey's string starts after op, id, endpoint, timeout, direction, max rkey bytes, the
  // window count and the window's address and length: 4 + 8 + 8 + 8 + 4 + 8 + 4 + 8 + 8 = 60.
  const std::string from_rkey = golden::kGoldenExecuteRequest.substr(60);  // outlives the reader
  FrameReader bounded(from_rkey);
  EXPECT_FALSE(bounded.Bytes(&too_long, 1)) << "a string longer than its bound is malformed";
}

TEST(ConfinedIpcGoldenTest, RepliesParseToTheirFields) {
  absl::StatusOr<Reply> ok = ParseReply(golden::kGoldenOkReply);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->id, 7u);
  EXPECT_EQ(ok->code, 0u);
  EXPECT_EQ(ok->message, "");
  FrameReader results(ok->results);
  uint64_t endpoint = 0;
  ASSERT_TRUE(results.U64(&endpoint));
  EXPECT_EQ(endpoint, 9u);
  EXPECT_TRUE(results.done());

  absl::StatusOr<Reply> error = ParseReply(golden::kGoldenErrorReply);
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_EQ(error->id, 8u);
  EXPECT_EQ(error->code, 30u);
  EXPECT_EQ(error->message, "busy");
  EXPECT_EQ(error->results, "");

  // Every cut of a reply inside its fixed fields is not a reply.
  for (size_t n = 0; n < 4 + 8 + 4 + 4; ++n) {
    EXPECT_FALSE(ParseReply(golden::kGoldenErrorReply.substr(0, n)).ok()) << n;
  }
  EXPECT_FALSE(ParseReply(golden::kGoldenExecuteRequest).ok()) << "a request is not a reply";
}

TEST(ConfinedIpcGoldenTest, AFrameIsItsLittleEndianLengthThenItsBody) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  ASSERT_TRUE(WriteFrame(fds[0], golden::kGoldenOkReply).ok());
  std::string raw(4 + golden::kGoldenOkReply.size(), '\0');
  size_t got = 0;
  while (got < raw.size()) {
    const ssize_t r = read(fds[1], raw.data() + got, raw.size() - got);
    ASSERT_GT(r, 0);
    got += static_cast<size_t>(r);
  }
  EXPECT_EQ(raw, std::string("\x1c\x00\x00\x00", 4) + golden::kGoldenOkReply);  // 28 octets
  // Read back through ReadFrame.
  ASSERT_TRUE(WriteFrame(fds[0], golden::kGoldenErrorReply).ok());
  int passed = -1;
  absl::StatusOr<std::string> body = ReadFrame(fds[1], kMaxFrame, &passed);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, golden::kGoldenErrorReply);
  EXPECT_EQ(passed, -1);
  // A frame longer than the reader's bound is refused.
  ASSERT_TRUE(WriteFrame(fds[0], golden::kGoldenOkReply).ok());
  EXPECT_FALSE(ReadFrame(fds[1], 8, &passed).ok());
  close(fds[0]);
  close(fds[1]);
}

// The fuzz target confined_reply seeds from the golden replies (fuzz/make_seeds.cc).
TEST(ConfinedIpcGoldenTest, FuzzCorpusHoldsTheGoldenReplies) {
  for (const auto& [name, image] :
       {std::pair<const char*, const std::string*>{"golden-ok", &golden::kGoldenOkReply},
        {"golden-error", &golden::kGoldenErrorReply}}) {
    EXPECT_TRUE(golden::CorpusSeedHolds("confined_reply", name, *image));
  }
}

}  // namespace
}  // namespace aobj::confined
