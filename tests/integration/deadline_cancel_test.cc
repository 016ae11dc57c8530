// Per-operation deadlines (spec section 3.7), asynchronous operations and their cancellation
// (AOBJ-DAT-016, AOBJ-DAT-155, AOBJ-DAT-156) against a real aobj-server over UCX on loopback.
//
// The transfers that must still be running when a deadline passes or a cancellation arrives are
// 256 MiB GETs into memory the server has to fault in (UCX-allocated, never touched) or into
// caller memory (RegisterBuffer), where UCX emulates RMA over active messages: both take far
// longer than the few milliseconds the tests wait before cancelling.
#include <sys/mman.h>

#include <atomic>
#include <functional>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "aobj/client.h"
#include "aobj/status.h"
#include "gtest/gtest.h"
#include "integration/server_process.h"

namespace aobj {
namespace {

using testing::kAccessKey;
using testing::kSecret;
using testing::ServerProcess;

constexpr size_t kBig = size_t{256} << 20;
constexpr uint8_t kObjectByte = 0x5A;
constexpr uint8_t kPattern = 0xEE;

ClientOptions Options(const ServerProcess& server) {
  ClientOptions o;
  o.endpoint = server.endpoint();
  o.access_key_id = kAccessKey;
  o.secret = kSecret;
  o.timeout_ms = 60000;
  return o;
}

// Waits up to `limit` for a line of the server's log that contains every one of `parts`.
bool LogHasLine(const ServerProcess& server, const std::vector<std::string>& parts,
                absl::Duration limit = absl::Seconds(10)) {
  const absl::Time end = absl::Now() + limit;
  do {
    std::istringstream lines(server.log());
    for (std::string line; std::getline(lines, line);) {
      bool all = true;
      for (const std::string& p : parts) all = all && line.find(p) != std::string::npos;
      if (all) return true;
    }
    absl::SleepFor(absl::Milliseconds(50));
  } while (absl::Now() < end);
  return false;
}

// Caller memory (not UCX's): mmap'd, pre-faulted, unmapped on destruction.
class Mapping {
 public:
  explicit Mapping(size_t size) : size_(size) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
    if (data_ != nullptr) std::memset(data_, 0, size_);
  }
  ~Mapping() {
    if (data_ != nullptr) munmap(data_, size_);
  }
  uint8_t* data() const { return data_; }

 private:
  size_t size_;
  uint8_t* data_;
};

bool AllBytesAre(const uint8_t* p, size_t n, uint8_t v) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != v) return false;
  }
  return true;
}

// A Client of its own with an asynchronous GET of the kBig-octet object "big" into caller memory
// (emulated RMA, slow). Members are destroyed operation first, Client last.
struct BigGet {
  std::unique_ptr<Client> client;
  std::unique_ptr<Mapping> memory;
  std::unique_ptr<Buffer> dst;
  std::shared_ptr<Operation<TransferResult>> op;

  // A test that fails early must not free the buffer under a GET still running.
  ~BigGet() {
    if (op && !op->done()) op->Cancel();
  }
  // Fatal failures: call through ASSERT_NO_FATAL_FAILURE.
  void Start(const ClientOptions& o,
             std::function<void(const absl::StatusOr<TransferResult>&)> done = nullptr) {
    auto c = Client::Connect(o);
    ASSERT_TRUE(c.ok()) << c.status();
    client = std::move(*c);
    memory = std::make_unique<Mapping>(kBig);
    ASSERT_NE(memory->data(), nullptr);
    auto d = client->RegisterBuffer(memory->data(), kBig);
    ASSERT_TRUE(d.ok()) << d.status();
    dst = std::move(*d);
    op = client->GetAsync("test-bucket", "big", *dst, {}, std::move(done));
  }
  // Until some octets of the object landed in the buffer (or the GET ended).
  void WaitUntilMoving() {
    const absl::Time until = absl::Now() + absl::Seconds(20);
    while (memory->data()[0] != kObjectByte && !op->done() && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(1));
    }
  }
};

class DeadlineCancelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(testing::TestDir(), "memory");
    ASSERT_TRUE(server_->Start()) << server_->log();
    auto c = Client::Connect(Options(*server_));
    ASSERT_TRUE(c.ok()) << c.status();
    writer_ = std::move(*c);
  }

  // Stores kBig octets of kObjectByte under `key`.
  void PutBig(const std::string& key) {
    auto buf = writer_->AllocateBuffer(kBig);
    ASSERT_TRUE(buf.ok()) << buf.status();
    std::memset((*buf)->data(), kObjectByte, kBig);
    auto put = writer_->Put("test-bucket", key, **buf, kBig);
    ASSERT_TRUE(put.ok()) << put.status();
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> writer_;
};

// Spec section 3.7, AOBJ-CTL-014: a deadline of a few milliseconds on a 256 MiB GET fails with
// DEADLINE_EXCEEDED, the server stops the request (AOBJ-DAT-016) and goes on serving.
TEST_F(DeadlineCancelTest, ShortDeadlineOnLargeGetFailsWithDeadlineCode) {
  PutBig("big");
  auto reader = Client::Connect(Options(*server_));
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto dst = (*reader)->AllocateBuffer(kBig);  // never touched: the server faults it in
  ASSERT_TRUE(dst.ok()) << dst.status();
  GetOptions get;
  get.call.timeout = absl::Milliseconds(5);
  const absl::Time t0 = absl::Now();
  auto got = (*reader)->Get("test-bucket", "big", **dst, get);
  EXPECT_LT(absl::Now() - t0, absl::Seconds(5)) << "the call outlived its deadline";
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(ErrorCodeOf(got.status()), ErrorCode::kDeadlineExceeded) << got.status();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded) << got.status();

  // The server does not go on writing the rest of the body after the deadline (AOBJ-DAT-016):
  // the window's last 16 MiB stay as they were. (The client shut its data channel, AOBJ-MEM-014,
  // so it may look; on shared memory that alone would not stop a server's copies.) Depending on
  // when the call reached the server, the GET stopped before its first step or a few steps in
  // (then the log says DEADLINE_EXCEEDED), or gRPC never handed it to the server.
  const uint8_t* tail = (*dst)->data() + kBig - (16 << 20);
  const absl::Time watch_until = absl::Now() + absl::Seconds(3);
  bool tail_written = false;
  while (!tail_written && absl::Now() < watch_until) {
    tail_written = !AllBytesAre(tail, 16 << 20, 0);
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_FALSE(tail_written) << "the server kept writing after the deadline passed";
  // It goes on serving: this session's control channel and other sessions' data.
  auto head = (*reader)->Head("test-bucket", "big");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->size, kBig);
  auto small = writer_->AllocateBuffer(4096);
  ASSERT_TRUE(small.ok());
  std::memset((*small)->data(), 7, 4096);
  ASSERT_TRUE(writer_->Put("test-bucket", "small", **small, 4096).ok());
  auto again = writer_->Get("test-bucket", "small", **small);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->bytes_transferred, 4096u);
}

// A deadline that has already passed fails every kind of call before anything is sent, through
// the per-call view and the per-operation options alike.
TEST_F(DeadlineCancelTest, PassedDeadlineFailsEveryCallWithoutSendingIt) {
  CallOptions past;
  past.deadline = absl::Now() - absl::Seconds(1);
  auto view = writer_->WithCallOptions(past);
  EXPECT_EQ(ErrorCodeOf(view->Head("test-bucket", "nothing").status()),
            ErrorCode::kDeadlineExceeded);
  EXPECT_EQ(ErrorCodeOf(view->CreateBucket("never-created")), ErrorCode::kDeadlineExceeded);
  EXPECT_EQ(ErrorCodeOf(view->ListBuckets().status()), ErrorCode::kDeadlineExceeded);
  auto buf = writer_->AllocateBuffer(4096);
  ASSERT_TRUE(buf.ok());
  PutOptions put;
  put.call = past;
  EXPECT_EQ(ErrorCodeOf(writer_->Put("test-bucket", "k", **buf, 4096, put).status()),
            ErrorCode::kDeadlineExceeded);
  // Nothing reached the server: the bucket does not exist, the key was not stored, and the
  // client's data channel is intact (no call ended without a reply).
  EXPECT_EQ(ErrorCodeOf(writer_->HeadBucket("never-created")), ErrorCode::kNoSuchBucket);
  EXPECT_EQ(ErrorCodeOf(writer_->Head("test-bucket", "k").status()), ErrorCode::kNoSuchKey);
  EXPECT_TRUE(writer_->Put("test-bucket", "k", **buf, 4096).ok());

  // A generous deadline changes nothing.
  CallOptions ample;
  ample.timeout = absl::Seconds(30);
  auto relaxed = writer_->WithCallOptions(ample);
  EXPECT_TRUE(relaxed->Head("test-bucket", "k").ok());
  // Async operations started through the view carry its deadline too.
  auto head = view->HeadAsync("test-bucket", "k");
  EXPECT_EQ(ErrorCodeOf(head->Wait().status()), ErrorCode::kDeadlineExceeded);
}

// AOBJ-DAT-157, AOBJ-MEM-010: a reply is a fence. After a GET's OK reply nothing more lands in its
// window: a pattern written over it at once stays. (The PUT before it shows the other side only
// as far as it can be seen: what is stored is what the source held when the reply came; a read
// after the reply could not change an object already committed.) Caller memory, so RMA is
// emulated through this client's worker, which keeps progressing.
TEST_F(DeadlineCancelTest, NothingMovesAfterASuccessfulReply) {
  constexpr size_t kSize = size_t{32} << 20;
  auto c = Client::Connect(Options(*server_));
  ASSERT_TRUE(c.ok()) << c.status();
  Mapping memory(kSize);
  ASSERT_NE(memory.data(), nullptr);
  auto buf = (*c)->RegisterBuffer(memory.data(), kSize);
  ASSERT_TRUE(buf.ok()) << buf.status();
  std::memset(memory.data(), kObjectByte, kSize);
  ASSERT_TRUE((*c)->Put("test-bucket", "fenced", **buf, kSize).ok());
  std::memset(memory.data(), kPattern, kSize);  // the source changes after the reply
  absl::SleepFor(absl::Milliseconds(300));
  auto got = (*c)->Get("test-bucket", "fenced", **buf);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(AllBytesAre(memory.data(), kSize, kObjectByte))
      << "the stored object is not what the source held when the PUT was answered";
  std::memset(memory.data(), kPattern, kSize);  // the window is the caller's again
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_TRUE(AllBytesAre(memory.data(), kSize, kPattern))
      << "the server wrote into the window after the GET's reply";
}

// AOBJ-DAT-016, AOBJ-DAT-157, AOBJ-MEM-014: once a GET has failed with DEADLINE_EXCEEDED, the
// window is the caller's again: a pattern written over all of it afterwards stays. (The reply is
// the server's, after its last RMA, or none, and then the client has destroyed its worker. On a
// machine slow enough that the deadline passes before the request is sent, nothing could land
// and the test shows only that.)
TEST_F(DeadlineCancelTest, NothingLandsAfterADeadlineFailedAGet) {
  PutBig("big");
  auto c = Client::Connect(Options(*server_));
  ASSERT_TRUE(c.ok()) << c.status();
  Mapping memory(kBig);
  ASSERT_NE(memory.data(), nullptr);
  auto buf = (*c)->RegisterBuffer(memory.data(), kBig);
  ASSERT_TRUE(buf.ok()) << buf.status();
  GetOptions get;
  get.call.timeout = absl::Milliseconds(50);
  auto got = (*c)->Get("test-bucket", "big", **buf, get);
  ASSERT_FALSE(got.ok()) << "the 256 MiB GET finished within 50 ms; nothing was tested";
  EXPECT_EQ(ErrorCodeOf(got.status()), ErrorCode::kDeadlineExceeded) << got.status();
  std::memset(memory.data(), kPattern, kBig);
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_TRUE(AllBytesAre(memory.data(), kBig, kPattern))
      << "the server wrote into the window after the deadline's failure was returned";
}

// AOBJ-DAT-155, AOBJ-DAT-156: after Cancel() returns, the server never writes the buffer again;
// the acknowledgment is the server's CANCELLED reply, so the data channel stays usable.
TEST_F(DeadlineCancelTest, CancelledGetNeverTouchesTheBufferAgain) {
  PutBig("big");
  // The GET may still end before the cancel reaches the server (seen with the 2 cores loaded:
  // "running=false", the GET's own OK): then it is tried again, at most three times.
  std::atomic<int> callbacks{0};
  std::unique_ptr<BigGet> started;
  for (int attempt = 0; attempt < 3; ++attempt) {
    callbacks = 0;
    started = std::make_unique<BigGet>();
    ASSERT_NO_FATAL_FAILURE(started->Start(
        Options(*server_), [&](const absl::StatusOr<TransferResult>&) { ++callbacks; }));
    started->WaitUntilMoving();  // let the transfer start
    if (started->op->done()) continue;
    started->op->Cancel();
    ASSERT_TRUE(started->op->done());
    if (!started->op->Wait().ok()) break;
  }
  BigGet& get = *started;
  const auto& op = get.op;
  const Mapping& memory = *get.memory;
  EXPECT_EQ(ErrorCodeOf(op->Wait().status()), ErrorCode::kCancelled)
      << op->Wait().status() << " (three GETs ended before their cancels took effect)";

  // From here on the buffer is the caller's again.
  std::memset(memory.data(), kPattern, kBig);
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_TRUE(AllBytesAre(memory.data(), kBig, kPattern))
      << "the server wrote into the buffer after Cancel() returned";

  EXPECT_TRUE(LogHasLine(*server_, {"event=request_cancel", "running=true"})) << server_->log();
  EXPECT_TRUE(LogHasLine(*server_, {"event=request_failed", "method=GetObject", "code=CANCELLED"}))
      << server_->log();
  // The acknowledgment was a reply, not the AOBJ-MEM-014 fallback: data still moves.
  auto whole = get.client->Get("test-bucket", "big", *get.dst);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_TRUE(AllBytesAre(memory.data(), kBig, kObjectByte));
  const absl::Time cb_until = absl::Now() + absl::Seconds(5);
  while (callbacks.load() == 0 && absl::Now() < cb_until) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(callbacks.load(), 1);
}

// AOBJ-DAT-156: the cancellation does not queue behind the request it cancels, even when that
// request holds the server's only request thread.
TEST(DeadlineCancelSingleThreadTest, CancelReachesARequestHoldingEveryServerThread) {
  ServerProcess server(testing::TestDir(), "memory", {"--threads", "1"});
  ASSERT_TRUE(server.Start()) << server.log();
  auto c = Client::Connect(Options(server));
  ASSERT_TRUE(c.ok()) << c.status();
  {
    auto src = (*c)->AllocateBuffer(kBig);
    ASSERT_TRUE(src.ok());
    std::memset((*src)->data(), kObjectByte, kBig);
    ASSERT_TRUE((*c)->Put("test-bucket", "big", **src, kBig).ok());
  }
  c->reset();
  BigGet get;
  ASSERT_NO_FATAL_FAILURE(get.Start(Options(server)));
  get.WaitUntilMoving();
  const auto& op = get.op;
  const Mapping& memory = *get.memory;
  ASSERT_FALSE(op->done()) << "the GET finished before it could be cancelled";
  op->Cancel();
  EXPECT_EQ(ErrorCodeOf(op->Wait().status()), ErrorCode::kCancelled) << op->Wait().status();
  std::memset(memory.data(), kPattern, kBig);
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_TRUE(AllBytesAre(memory.data(), kBig, kPattern));
}

// Several operations of one Client are in flight at once: small ones complete while a large GET
// is still moving, and every result is right.
TEST_F(DeadlineCancelTest, OperationsRunConcurrentlyOnOneClient) {
  PutBig("big");
  ClientOptions o = Options(*server_);
  o.async_threads = 4;
  BigGet get;
  ASSERT_NO_FATAL_FAILURE(get.Start(o));
  Client* c = get.client.get();
  const auto& big = get.op;
  const Mapping& memory = *get.memory;

  constexpr int kSmall = 3;
  constexpr size_t kSize = 64 << 10;
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<std::shared_ptr<Operation<TransferResult>>> puts;
  for (int i = 0; i < kSmall; ++i) {
    auto b = c->AllocateBuffer(kSize);
    ASSERT_TRUE(b.ok());
    std::memset((*b)->data(), 'a' + i, kSize);
    puts.push_back(c->PutAsync("test-bucket", "small-" + std::to_string(i), **b, kSize));
    bufs.push_back(std::move(*b));
  }
  for (auto& p : puts) ASSERT_TRUE(p->Wait().ok()) << p->Wait().status();
  std::atomic<bool> head_cb{false};
  auto head = c->HeadAsync("test-bucket", "small-1", {}, {},
                              [&](const absl::StatusOr<ObjectInfo>& r) { head_cb = r.ok(); });
  ASSERT_TRUE(head->Wait().ok()) << head->Wait().status();
  EXPECT_EQ(head->Wait()->size, kSize);
  // The small operations overtook the large GET: they did not wait for it.
  EXPECT_FALSE(big->done()) << "the 256 MiB GET ended before three PUTs and a HEAD";
  auto del = c->DeleteAsync("test-bucket", "small-2");
  ASSERT_TRUE(del->Wait().ok()) << del->Wait().status();
  EXPECT_EQ(ErrorCodeOf(c->Head("test-bucket", "small-2").status()), ErrorCode::kNoSuchKey);

  ASSERT_TRUE(big->WaitFor(absl::Seconds(120)));
  ASSERT_TRUE(big->Wait().ok()) << big->Wait().status();
  EXPECT_EQ(big->Wait()->bytes_transferred, kBig);
  EXPECT_TRUE(AllBytesAre(memory.data(), kBig, kObjectByte));
  for (int i = 0; i < kSmall; ++i) {
    auto got = c->Get("test-bucket", "small-" + std::to_string(i), *bufs[i]);
    if (i == 2) {
      EXPECT_EQ(ErrorCodeOf(got.status()), ErrorCode::kNoSuchKey);
    } else {
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE(AllBytesAre(bufs[i]->data(), kSize, 'a' + i));
    }
  }
  const absl::Time cb_until = absl::Now() + absl::Seconds(5);
  while (!head_cb.load() && absl::Now() < cb_until) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_TRUE(head_cb.load());
}

// An operation still queued behind busy async threads is cancelled without being sent.
TEST_F(DeadlineCancelTest, QueuedOperationIsCancelledWithoutBeingSent) {
  PutBig("big");
  ClientOptions o = Options(*server_);
  o.async_threads = 1;
  BigGet get;
  ASSERT_NO_FATAL_FAILURE(get.Start(o));  // the GET holds the only async thread
  Client* c = get.client.get();
  const auto& big = get.op;
  auto small = c->AllocateBuffer(4096);
  ASSERT_TRUE(small.ok());
  auto queued = c->PutAsync("test-bucket", "never-stored", **small, 4096);
  queued->Cancel();
  ASSERT_TRUE(queued->done());
  EXPECT_EQ(ErrorCodeOf(queued->Wait().status()), ErrorCode::kCancelled);
  big->Cancel();
  ASSERT_TRUE(big->done());
  EXPECT_EQ(ErrorCodeOf(c->Head("test-bucket", "never-stored").status()), ErrorCode::kNoSuchKey);
}

// Destroying a Client completes its queued operations with CANCELLED and waits for the running
// one; every handle is done afterwards.
// The asynchronous listing and multipart calls: results equal to the blocking ones, several
// parts in flight at once, and callbacks.
TEST_F(DeadlineCancelTest, ListingAndMultipartRunAsynchronously) {
  ClientOptions o = Options(*server_);
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status();
  constexpr size_t kPart = 5 << 20;  // the server's default minimum part size
  auto buf = (*c)->AllocateBuffer(3 * kPart + 7);
  ASSERT_TRUE(buf.ok()) << buf.status();
  for (size_t i = 0; i < 3 * kPart + 7; ++i) (*buf)->data()[i] = static_cast<uint8_t>(i * 13);

  // Parts of one upload in flight together.
  auto upload = (*c)->CreateMultipartUpload("test-bucket", "async-parts");
  ASSERT_TRUE(upload.ok()) << upload.status();
  std::vector<std::shared_ptr<Operation<UploadPartResult>>> parts;
  for (uint32_t i = 0; i < 4; ++i) {  // as UploadMultipart will cut it: 3 x 5 MiB and 7 octets
    const uint64_t len = i < 3 ? kPart : 7;
    parts.push_back((*c)->UploadPartAsync("test-bucket", "async-parts", upload->upload_id, i + 1,
                                          **buf, i * kPart, len));
  }
  std::vector<CompletedPart> done;
  for (uint32_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(parts[i]->Wait().ok()) << parts[i]->Wait().status();
    done.push_back({i + 1, parts[i]->Wait()->etag});
  }
  auto completed =
      (*c)->CompleteMultipartUpload("test-bucket", "async-parts", upload->upload_id, done);
  ASSERT_TRUE(completed.ok()) << completed.status();
  EXPECT_EQ(completed->size, 3 * kPart + 7);

  // The whole upload in the background, with a callback.
  std::atomic<int> callbacks{0};
  auto whole = (*c)->UploadMultipartAsync(
      "test-bucket", "async-whole", **buf, 3 * kPart + 7, kPart, {}, {},
      [&](const absl::StatusOr<ObjectInfo>& r) { callbacks += r.ok() ? 1 : 100; });
  ASSERT_TRUE(whole->Wait().ok()) << whole->Wait().status();
  EXPECT_EQ(whole->Wait()->etag, completed->etag) << "same content, same parts: same ETag";

  // A listing page.
  ListObjectsOptions lo;
  lo.prefix = "async-";
  auto page = (*c)->ListObjectsAsync("test-bucket", lo);
  ASSERT_TRUE(page->Wait().ok()) << page->Wait().status();
  ASSERT_EQ(page->Wait()->objects.size(), 2u);
  EXPECT_EQ(page->Wait()->objects[0].key, "async-parts");
  EXPECT_EQ(page->Wait()->objects[1].key, "async-whole");
  const absl::Time until = absl::Now() + absl::Seconds(5);
  while (callbacks.load() == 0 && absl::Now() < until) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(callbacks.load(), 1);
}

// Cancelling a background multipart upload: it ends CANCELLED, the upload is aborted (nothing
// left in progress, no object), and the buffer is the caller's again when Cancel() returns.
TEST_F(DeadlineCancelTest, CancelledMultipartUploadIsAborted) {
  auto c = Client::Connect(Options(*server_));
  ASSERT_TRUE(c.ok()) << c.status();
  constexpr size_t kPart = 8 << 20;
  constexpr size_t kSize = 40 * kPart;  // 320 MiB: still running when cancelled
  auto buf = (*c)->AllocateBuffer(kSize);
  ASSERT_TRUE(buf.ok()) << buf.status();
  std::memset((*buf)->data(), 0x33, kSize);
  std::atomic<uint64_t> progress{0};
  MultipartUploadOptions mo;
  mo.progress = [&](uint64_t done, uint64_t) { progress = done; };
  auto op = (*c)->UploadMultipartAsync("test-bucket", "cancelled-mpu", **buf, kSize, kPart, {}, mo);
  const absl::Time until = absl::Now() + absl::Seconds(30);
  while (progress.load() == 0 && !op->done() && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_FALSE(op->done()) << "the upload finished before it could be cancelled";
  op->Cancel();
  ASSERT_TRUE(op->done());
  EXPECT_EQ(ErrorCodeOf(op->Wait().status()), ErrorCode::kCancelled) << op->Wait().status();
  EXPECT_LT(progress.load(), kSize);
  auto uploads = (*c)->ListMultipartUploads("test-bucket");
  ASSERT_TRUE(uploads.ok()) << uploads.status();
  EXPECT_TRUE(uploads->uploads.empty()) << "the cancelled upload was left in progress";
  EXPECT_EQ(ErrorCodeOf((*c)->Head("test-bucket", "cancelled-mpu").status()),
            ErrorCode::kNoSuchKey);
}

TEST_F(DeadlineCancelTest, DestroyingTheClientCompletesEveryOperation) {
  ClientOptions o = Options(*server_);
  o.async_threads = 1;
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<std::shared_ptr<Operation<ObjectInfo>>> ops;
  for (int i = 0; i < 200; ++i) ops.push_back((*c)->HeadAsync("test-bucket", "absent"));
  c->reset();
  int cancelled = 0;
  for (auto& op : ops) {
    ASSERT_TRUE(op->done());
    const ErrorCode code = ErrorCodeOf(op->Wait().status());
    EXPECT_TRUE(code == ErrorCode::kNoSuchKey || code == ErrorCode::kCancelled)
        << op->Wait().status();
    cancelled += code == ErrorCode::kCancelled;
  }
  EXPECT_GT(cancelled, 0) << "200 queued HEADs all ran before the client was destroyed";
}

}  // namespace
}  // namespace aobj
