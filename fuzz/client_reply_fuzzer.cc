// AOBJ_FUZZ_COVERS: src/client/session_channel.cc
// AOBJ_FUZZ_COVERS: src/client/client_objects.cc
// The client's handling of every server reply (spec 8.7, 11.3): a real aobj::Client talks to an
// in-process fake server whose answers come from the fuzz input (a response body, or a failure
// with arbitrary `aobj-error-bin` bytes). Invariants: the client never reports success for a
// reply that contradicts what it asked for: a PUT is OK only if the server acknowledged exactly
// the bytes and checksum sent, a GET only if the byte count matches the object size, fits the
// buffer and the checksum matches the buffer's content.
#include <fuzzer/FuzzedDataProvider.h>
#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "aobj/client.h"
#include "aobj/status.h"
#include "aobj/v1/aobj.grpc.pb.h"
#include "control/rpc.h"
#include "fuzz_util.h"
#include "google/protobuf/descriptor.h"
#include "wire/checksum.h"
#include "wire/signing.h"

namespace {

namespace pb = aobj::v1;

struct Scripted {
  bool ok = true;
  std::string body;      // response bytes when ok
  int grpc_code = 2;     // when !ok
  std::string trailer;   // `aobj-error-bin` bytes when !ok (may be empty: no trailer)
};

// Answers OpenSession validly and every other call from a script.
class FakeServer final : public pb::ObjectService::Service {
 public:
  FakeServer() {
    const auto* sd = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
        "aobj.v1.ObjectService");
    for (int i = 0; i < sd->method_count(); ++i) {
      const bool open = sd->method(i)->name() == "OpenSession";
      MarkMethodRawCallback(
          i, new grpc::internal::CallbackUnaryHandler<grpc::ByteBuffer, grpc::ByteBuffer>(
                 [this, open](grpc::CallbackServerContext* ctx, const grpc::ByteBuffer*,
                              grpc::ByteBuffer* resp) { return Answer(open, ctx, resp); }));
    }
  }
  void Script(std::deque<Scripted> replies) {
    absl::MutexLock l(&mu_);
    replies_ = std::move(replies);
  }

 private:
  grpc::ServerUnaryReactor* Answer(bool open, grpc::CallbackServerContext* ctx,
                                   grpc::ByteBuffer* resp) {
    auto* reactor = ctx->DefaultReactor();
    Scripted r;
    if (open) {
      pb::OpenSessionResponse o;
      o.set_version(1);
      for (uint32_t c : {1u, 2u, 3u, 4u}) o.add_capabilities(c);
      o.set_session_id(std::string(16, '\x5a'));
      o.set_lease_ms(3600000);
      o.mutable_limits()->set_max_transfer_bytes(1 << 30);
      o.mutable_limits()->set_max_in_flight(16);
      o.mutable_limits()->set_inline_threshold(16384);
      o.mutable_limits()->set_max_descriptors(16);
      o.mutable_limits()->set_max_rkey_bytes(1024);
      r.body = o.SerializeAsString();
      // AOBJ-AUTH-020: signed over the request's signature, as a server must.
      auto sig = ctx->client_metadata().find(aobj::kMetaSignature);
      const std::string request_signature =
          sig == ctx->client_metadata().end() ? ""
                                              : std::string(sig->second.data(), sig->second.size());
      ctx->AddTrailingMetadata(
          aobj::kMetaResponseSignature,
          aobj::SignOpenSessionResponse(aobj::DeriveSigningKey("fuzz"), request_signature, r.body));
    } else {
      absl::MutexLock l(&mu_);
      if (!replies_.empty()) {
        r = std::move(replies_.front());
        replies_.pop_front();
      }
    }
    if (r.ok) {
      grpc::Slice slice(r.body.data(), r.body.size());
      *resp = grpc::ByteBuffer(&slice, 1);
      reactor->Finish(grpc::Status::OK);
    } else {
      if (!r.trailer.empty()) ctx->AddTrailingMetadata(aobj::kErrorTrailer, r.trailer);
      reactor->Finish(grpc::Status(static_cast<grpc::StatusCode>(r.grpc_code), "scripted"));
    }
    return reactor;
  }
  absl::Mutex mu_;
  std::deque<Scripted> replies_ ABSL_GUARDED_BY(mu_);
};

struct World {
  FakeServer service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::unique_ptr<aobj::Client> client;
  std::unique_ptr<aobj::Buffer> buffer;

  World() {
    setenv("UCX_NET_DEVICES", "lo", 0);
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(&service);
    server = b.BuildAndStart();
    Reconnect();
  }
  void Reconnect() {
    buffer.reset();
    client.reset();
    aobj::ClientOptions o;
    o.endpoint = "127.0.0.1:" + std::to_string(port);
    o.access_key_id = "AKFUZZ";
    o.secret = "fuzz";
    o.timeout_ms = 5000;
    // One scripted reply per request: a busy refusal is the client's answer, not a retry that
    // would meet the fake server's default success (and sleep).
    o.busy_retries = 0;
    auto c = aobj::Client::Connect(o);
    if (!c.ok()) std::abort();
    client = std::move(*c);
    buffer = std::move(*client->AllocateBuffer(1 << 16));
  }
};

World& GetWorld() {
  static World* w = new World();
  return *w;
}

std::string Crc32c(const uint8_t* p, size_t n) {
  aobj::Checksummer s(aobj::ChecksumAlgorithm::kCrc32c);
  s.Update(p, n);
  return s.Finish();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  World& w = GetWorld();
  FuzzedDataProvider in(data, size);
  const int op = in.ConsumeIntegralInRange<int>(0, 3);
  Scripted reply;
  reply.ok = in.ConsumeBool();
  reply.grpc_code = in.ConsumeIntegralInRange<int>(1, 16);
  const uint64_t put_size = in.ConsumeIntegralInRange<uint64_t>(0, w.buffer->size());
  std::memset(w.buffer->data(), in.ConsumeIntegral<uint8_t>(), w.buffer->size());
  if (reply.ok) {
    reply.body = in.ConsumeRemainingBytesAsString();
  } else {
    reply.trailer = in.ConsumeRemainingBytesAsString();
  }
  const std::string body = reply.body;
  w.service.Script({reply});

  if (op == 0) {
    const std::string sent = Crc32c(w.buffer->data(), put_size);
    auto r = w.client->Put("bucket", "key", *w.buffer, put_size);
    if (r.ok()) {
      pb::PutObjectResponse resp;
      AOBJ_FUZZ_CHECK(resp.ParseFromString(body));
      AOBJ_FUZZ_CHECK(resp.bytes_transferred() == put_size);  // AOBJ-DAT-004
      AOBJ_FUZZ_CHECK(resp.checksum() == sent);
      AOBJ_FUZZ_CHECK(r->bytes_transferred == put_size);
    }
  } else if (op == 1) {
    auto r = w.client->Get("bucket", "key", *w.buffer);
    if (r.ok()) {
      pb::GetObjectResponse resp;
      AOBJ_FUZZ_CHECK(resp.ParseFromString(body));
      AOBJ_FUZZ_CHECK(resp.bytes_transferred() == resp.metadata().size());  // AOBJ-DAT-004
      AOBJ_FUZZ_CHECK(r->bytes_transferred <= w.buffer->size());
      AOBJ_FUZZ_CHECK(Crc32c(w.buffer->data(), r->bytes_transferred) == resp.checksum());
    }
  } else if (op == 2) {
    auto r = w.client->Head("bucket", "key");
    if (r.ok()) {
      pb::HeadObjectResponse resp;
      AOBJ_FUZZ_CHECK(resp.ParseFromString(body));
    }
  } else {
    absl::Status s = w.client->Delete("bucket", "key");
    if (s.ok()) AOBJ_FUZZ_CHECK(reply.ok);
  }
  // A data request without a reply shuts the client's data channel (AOBJ-MEM-014); start over.
  if (!reply.ok && reply.trailer.empty() && (op == 0 || op == 1)) w.Reconnect();
  return 0;
}
