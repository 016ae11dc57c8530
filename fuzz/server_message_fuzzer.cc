// AOBJ_FUZZ_COVERS: src/server/handler_util.h
// AOBJ_FUZZ_COVERS: src/server/authz.cc
// AOBJ_FUZZ_COVERS: src/server/handler.cc
// Every control message as the server receives it (spec sections 5-10), as a stateful sequence
// against one RequestHandler: an in-memory store, in-memory multipart uploads, and a
// deterministic fake data channel. Each step picks a method and a body from the input; most
// steps are signed correctly (so parsing and handling are reached), some carry hostile
// authentication. Invariants after every step: the handler never asks the data channel for an
// RMA operation outside a descriptor window, never leaves a request's rkeys behind, and a GET of a
// key right after a successful PUT of it returns the bytes the fake client held. A request the
// handler says it answers without waiting (RequestHandler::AnswersWithoutWaiting, spec 8.9) runs
// as on the thread that received it, and never reaches the data channel.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "aobj/status.h"
#include "aobj/store.h"
#include "aobj/v1/aobj.pb.h"
#include "control/rpc.h"
#include "fuzz_util.h"
#include "server/data_channel.h"
#include "server/handler.h"
#include "session/authenticator.h"
#include "session/session_table.h"
#include "session/signer.h"
#include "store/multipart.h"
#include "transport/rkey_check.h"
#include "wire/checksum.h"
#include "wire/crypto.h"

namespace {

namespace pb = aobj::v1;

// Client memory is simulated: byte at remote address a is (a * 131 + 7) mod 256.
uint8_t ClientByte(uint64_t a) { return static_cast<uint8_t>(a * 131 + 7); }

class FakeChannel final : public aobj::DataChannel {
 public:
  absl::StatusOr<uint64_t> Connect(absl::string_view) override { return ++endpoints_; }
  absl::StatusOr<aobj::Protection> GetProtection(uint64_t) override {
    return aobj::Protection::kEmulated;
  }
  absl::StatusOr<std::string> SendChallenges(uint64_t, absl::string_view) override {
    return std::string(32, 'c');
  }
  absl::Status Bind(uint64_t) override { return absl::OkStatus(); }
  void Disconnect(uint64_t) override {}
  absl::Status Execute(uint64_t, const aobj::RmaBatch& batch) override {
    ++executes;
    for (const auto& w : batch.windows) {
      if (absl::Status s = aobj::CheckPackedRkey(w.rkey, batch.max_rkey_bytes); !s.ok()) return s;
    }
    for (const aobj::RmaOp& op : batch.ops) {
      // AOBJ-MEM-009: the handler must never plan an operation outside its window.
      AOBJ_FUZZ_CHECK(op.window < batch.windows.size());
      const auto& w = batch.windows[op.window];
      AOBJ_FUZZ_CHECK(op.length > 0 && op.remote >= w.address && op.length <= w.length &&
                      op.remote - w.address <= w.length - op.length);
      if (batch.direction == aobj::RmaDirection::kRead) {
        for (size_t i = 0; i < op.length; ++i) op.local[i] = ClientByte(op.remote + i);
      } else {
        last_written_.assign(reinterpret_cast<const char*>(op.local), op.length);
      }
    }
    return absl::OkStatus();
  }
  size_t endpoint_count() override { return 0; }
  uint64_t rkeys_outstanding() override { return 0; }
  uint64_t data_channels_failed() override { return 0; }

  uint64_t executes = 0;

 private:
  uint64_t endpoints_ = 0;
  std::string last_written_;
};

// A structurally valid UCX packed rkey (one memory domain, 12-byte key): passes CheckPackedRkey.
std::string ValidRkey() {
  std::string r(8, '\0');
  r[0] = 1;
  r.push_back('\0');   // host memory
  r.push_back('\x0c');  // entry size
  r.append(12, '\x01');
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  auto store = aobj::NewMemoryStore();
  store->CreateBucket("bucket").IgnoreError();
  aobj::MultipartLimits mpl;
  mpl.min_part_size = 16;
  auto multipart = aobj::MultipartManager::Open(store.get(), "", mpl);
  AOBJ_FUZZ_CHECK(multipart.ok());
  FakeChannel channel;
  aobj::Authenticator auth({{"AKFUZZ", "fuzz-secret"}}, absl::Seconds(300), 4096);
  aobj::SessionTable sessions(absl::Seconds(30), absl::Seconds(60));
  aobj::HandlerConfig config;
  config.capabilities = {aobj::kCapInline, aobj::kCapCrc32c, aobj::kCapCrc64Nvme,
                         aobj::kCapMultiDescriptor};
  config.staging_bytes = 4096;
  // The owner policy, so every request's buckets are parsed and checked (AOBJ-SEC-008).
  auto authz = aobj::BucketAuthorizer::Create(
      aobj::AuthorizationPolicy::kOwner,
      {{"AKFUZZ", "bucket", aobj::GrantAccess::kOwner}}, "");
  AOBJ_FUZZ_CHECK(authz.ok());
  aobj::RequestHandler handler(config, store.get(), &channel, &auth, &sessions, multipart->get(),
                               authz->get());
  aobj::RequestSigner signer("AKFUZZ", "fuzz-secret");
  absl::Time now = absl::FromUnixMillis(1795000000000);

  // Open a session first, so later steps reach object handling.
  pb::OpenSessionRequest open;
  open.mutable_versions()->set_min(1);
  open.mutable_versions()->set_max(1);
  for (uint32_t c : config.capabilities) open.add_capabilities(c);
  open.set_worker_address("fake-worker");
  const std::string open_body = open.SerializeAsString();
  auto opened = handler.Handle(aobj::Method::kOpenSession,
                               signer.Sign(aobj::MethodPath(aobj::Method::kOpenSession), "",
                                           open_body, now),
                               open_body, now, nullptr);
  AOBJ_FUZZ_CHECK(opened.ok());
  pb::OpenSessionResponse open_resp;
  AOBJ_FUZZ_CHECK(open_resp.ParseFromString(*opened));
  const std::string session = aobj::HexEncode(open_resp.session_id());

  for (int step = 0; step < 16 && in.remaining_bytes() > 0; ++step) {
    now += absl::Milliseconds(in.ConsumeIntegralInRange<int>(1, 40000));
    const auto method = static_cast<aobj::Method>(
        in.ConsumeIntegralInRange<int>(0, static_cast<int>(aobj::Method::kCount) - 1));
    const int kind = in.ConsumeIntegralInRange<int>(0, 9);
    std::string body;
    if (kind < 5) {
      body = in.ConsumeRandomLengthString(512);  // raw message bytes
    } else if (kind < 8) {
      // A structured PUT with a valid-looking descriptor, then a GET of the same key.
      const uint64_t len = in.ConsumeIntegralInRange<uint64_t>(0, 20000);
      const uint64_t addr = in.ConsumeIntegral<uint32_t>();
      const std::string key = "k" + std::to_string(in.ConsumeIntegralInRange<int>(0, 3));
      std::string content(len, '\0');
      for (uint64_t i = 0; i < len; ++i) content[i] = static_cast<char>(ClientByte(addr + i));
      aobj::Checksummer sum(aobj::ChecksumAlgorithm::kCrc32c);
      sum.Update(content.data(), content.size());
      pb::PutObjectRequest put;
      put.set_bucket("bucket");
      put.set_key(key);
      put.set_size(len);
      put.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
      put.set_checksum(sum.Finish());
      if (len > 0) {
        auto* d = put.add_source();
        d->set_address(addr);
        d->set_length(len + in.ConsumeIntegralInRange<uint64_t>(0, 64));
        d->set_rkey(in.ConsumeBool() ? ValidRkey() : in.ConsumeRandomLengthString(32));
        d->set_memory_type(pb::MEMORY_TYPE_HOST);
      }
      const std::string put_body = put.SerializeAsString();
      auto put_result = handler.Handle(
          aobj::Method::kPutObject,
          signer.Sign(aobj::MethodPath(aobj::Method::kPutObject), session, put_body, now),
          put_body, now, nullptr);
      if (put_result.ok()) {
        auto reader = store->OpenRead("bucket", key);
        AOBJ_FUZZ_CHECK(reader.ok());
        AOBJ_FUZZ_CHECK((*reader)->info().size == len);
        std::string got(len, '\0');
        auto n = (*reader)->ReadAt(0, {reinterpret_cast<uint8_t*>(got.data()), got.size()});
        AOBJ_FUZZ_CHECK(n.ok() && *n == len && got == content);  // no torn or foreign bytes
      }
      continue;
    } else {
      body = in.ConsumeRandomLengthString(64);
    }
    aobj::RequestAuth a = signer.Sign(aobj::MethodPath(method),
                                      method == aobj::Method::kOpenSession ? "" : session, body,
                                      now);
    if (kind == 9) {  // hostile authentication
      a.signature_hex = in.ConsumeRandomLengthString(70);
      a.session_hex = in.ConsumeRandomLengthString(40);
    }
    pb::VersionRange supported;
    aobj::CallControl call;
    if (std::shared_ptr<const aobj::SessionState> st = sessions.Peek(session)) {
      call.must_not_wait = handler.AnswersWithoutWaiting(method, *st, body);
    }
    const uint64_t executes_before = channel.executes;
    auto result = handler.Handle(method, a, body, now, &supported, &call);
    if (result.ok()) AOBJ_FUZZ_CHECK(kind != 9 || a.signature_hex.size() == 64);
    // Its guess holds: nothing changes the store in between here.
    if (call.must_not_wait) {
      AOBJ_FUZZ_CHECK(channel.executes == executes_before);
      AOBJ_FUZZ_CHECK(result.status().message().find("needs RMA after all") ==
                      absl::string_view::npos);
    }
  }
  return 0;
}
