// Test support: a hand-driven AOBJ/1 session over raw control-channel calls, so tests can send
// tampered, replayed and malformed requests that the client library never sends.
#ifndef AOBJ_TESTS_INTEGRATION_RAW_SESSION_H_
#define AOBJ_TESTS_INTEGRATION_RAW_SESSION_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "aobj/v1/aobj.pb.h"
#include "control/raw_call.h"
#include "control/rpc.h"
#include "session/signer.h"
#include "transport/ucx_context.h"
#include "transport/ucx_memory.h"
#include "transport/ucx_worker.h"
#include "wire/checksum.h"
#include "wire/crypto.h"

namespace aobj::testing {

// Everything a test may change about one request before it is sent.
struct RequestTamper {
  bool flip_signature = false;
  bool omit_signature = false;
  int64_t clock_offset_ms = 0;
  std::string session_hex;  // overrides the session's id when non-empty
  std::string body_suffix;  // appended after signing (the body no longer matches)
};

class RawSession {
 public:
  RawSession(const std::string& endpoint, const std::string& key, const std::string& secret)
      : channel_(endpoint), signer_(key, secret) {
    context_ = std::move(*UcxContext::Create(DataChannelOptions{}));
    worker_ = std::move(*UcxWorker::Create(*context_, "raw-client"));
  }

  using Tamper = RequestTamper;

  RawReply Send(Method method, const std::string& body, const Tamper& t = {}) {
    const std::string session =
        !t.session_hex.empty() ? t.session_hex
                               : (method == Method::kOpenSession ? "" : session_hex_);
    last_auth_ = signer_.Sign(MethodPath(method), session, body,
                              absl::Now() + absl::Milliseconds(t.clock_offset_ms));
    if (t.flip_signature) last_auth_.signature_hex[0] = last_auth_.signature_hex[0] == 'a' ? 'b' : 'a';
    last_body_ = body + t.body_suffix;
    last_method_ = method;
    return Resend(t.omit_signature);
  }

  // Sends the previous request again, byte for byte and with the same metadata (a replay).
  RawReply Resend(bool omit_signature = false) {
    std::vector<std::pair<std::string, std::string>> md = {
        {kMetaAccessKeyId, last_auth_.access_key_id},
        {kMetaTimestamp, last_auth_.timestamp},
        {kMetaNonce, last_auth_.nonce_hex}};
    if (!omit_signature) md.emplace_back(kMetaSignature, last_auth_.signature_hex);
    if (!last_auth_.session_hex.empty()) md.emplace_back(kMetaSessionId, last_auth_.session_hex);
    return channel_.Call(MethodPath(last_method_), last_body_, md, absl::Seconds(30));
  }

  template <class M>
  RawReply Send(Method method, const M& message, const Tamper& t = {}) {
    return Send(method, message.SerializeAsString(), t);
  }

  aobj::v1::OpenSessionRequest DefaultOpen() const {
    aobj::v1::OpenSessionRequest req;
    req.mutable_versions()->set_min(1);
    req.mutable_versions()->set_max(1);
    for (uint32_t c : {1u, 2u, 3u, 4u}) req.add_capabilities(c);
    req.set_worker_address(worker_->address());
    return req;
  }

  // Opens the session; returns the reply (the id is kept on success). With `confirm`, also
  // answers the endpoint challenges (AOBJ-SES-026) and returns ConfirmEndpoint's reply if that
  // fails.
  RawReply Open(const aobj::v1::OpenSessionRequest& req, bool confirm = true) {
    RawReply r = Send(Method::kOpenSession, req);
    if (r.status.ok()) {
      aobj::v1::OpenSessionResponse resp;
      resp.ParseFromString(r.body);
      session_hex_ = HexEncode(resp.session_id());
      session_id_ = resp.session_id();
      challenges_count_ = resp.endpoint_challenges();
      if (confirm) {
        RawReply c = Confirm();
        if (!c.status.ok()) return c;
      }
    }
    return r;
  }
  RawReply Open() { return Open(DefaultOpen()); }

  // AOBJ-AUTH-021: checks `r`, the reply to the last request sent (an OpenSession), against its
  // `aobj-response-signature`.
  absl::Status VerifyResponseSignature(const RawReply& r) const {
    return signer_.VerifyOpenSessionResponse(last_auth_, r.body, r.response_signature);
  }

  // Waits for this worker's endpoint challenges and sends ConfirmEndpoint with their proof
  // (or with `proof` when it is not empty).
  RawReply Confirm(const std::string& proof = "", absl::Duration wait = absl::Seconds(10)) {
    aobj::v1::ConfirmEndpointRequest req;
    if (proof.empty()) {
      auto challenges =
          worker_->AwaitChallenges(session_id_, challenges_count_, wait);
      if (!challenges.ok()) {
        RawReply r;
        r.status = challenges.status();
        return r;
      }
      req.set_proof(signer_.EndpointProof(session_id_, *challenges));
    } else {
      req.set_proof(proof);
    }
    return Send(Method::kConfirmEndpoint, req);
  }

  std::unique_ptr<RegisteredMemory> Allocate(size_t size) {
    return std::move(*RegisteredMemory::Allocate(*context_, size));
  }

  // A PUT of mem[0, size) with a correct CRC32C and one descriptor covering it.
  aobj::v1::PutObjectRequest PutRequest(const std::string& key, const RegisteredMemory& mem,
                                        uint64_t size) const {
    aobj::v1::PutObjectRequest req;
    req.set_bucket("test-bucket");
    req.set_key(key);
    req.set_size(size);
    req.set_checksum_algorithm(aobj::v1::CHECKSUM_ALGORITHM_CRC32C);
    Checksummer sum(ChecksumAlgorithm::kCrc32c);
    sum.Update(mem.data(), size);
    req.set_checksum(sum.Finish());
    auto* d = req.add_source();
    d->set_address(reinterpret_cast<uint64_t>(mem.data()));
    d->set_length(size);
    d->set_rkey(mem.packed_rkey());
    d->set_memory_type(aobj::v1::MEMORY_TYPE_HOST);
    return req;
  }

  aobj::v1::GetObjectRequest GetRequest(const std::string& key, const RegisteredMemory& mem,
                                        uint64_t length) const {
    aobj::v1::GetObjectRequest req;
    req.set_bucket("test-bucket");
    req.set_key(key);
    req.set_checksum_algorithm(aobj::v1::CHECKSUM_ALGORITHM_CRC32C);
    auto* d = req.add_destination();
    d->set_address(reinterpret_cast<uint64_t>(mem.data()));
    d->set_length(length);
    d->set_rkey(mem.packed_rkey());
    d->set_memory_type(aobj::v1::MEMORY_TYPE_HOST);
    return req;
  }

  // Destroys this side's UCX worker (the data channel) while the control channel lives on.
  void DropDataChannel() { worker_.reset(); }

  const std::string& session_hex() const { return session_hex_; }
  UcxWorker& worker() { return *worker_; }

 private:
  RawChannel channel_;
  RequestSigner signer_;
  std::unique_ptr<UcxContext> context_;
  std::unique_ptr<UcxWorker> worker_;
  std::string session_hex_;
  std::string session_id_;  // raw octets
  uint32_t challenges_count_ = 0;
  RequestAuth last_auth_;
  std::string last_body_;
  Method last_method_ = Method::kOpenSession;
};

}  // namespace aobj::testing

#endif  // AOBJ_TESTS_INTEGRATION_RAW_SESSION_H_
