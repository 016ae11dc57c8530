// A hand-driven AOBJ/1 client for the conformance suite: it signs what it sends (AOBJ-AUTH-002),
// can tamper with any part of a request, owns a UCX worker (the data channel) and registered
// memory, and records every exchange in the case's transcript. It checks the error-trailer rules
// (AOBJ-CTL-002, AOBJ-CTL-008, AOBJ-ERR-001/004/005/009) on every reply it receives.
//
// Threading: one thread at a time per Peer, except SendConcurrently.
#ifndef AOBJ_CONFORMANCE_PEER_H_
#define AOBJ_CONFORMANCE_PEER_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "aobj/v1/aobj.pb.h"
#include "conformance/src/suite.h"
#include "control/raw_call.h"
#include "control/rpc.h"
#include "session/signer.h"
#include "transport/rkey_check.h"
#include "transport/ucx_context.h"
#include "transport/ucx_memory.h"
#include "transport/ucx_worker.h"

namespace aobj::conformance {

namespace pb = aobj::v1;

// Everything a case may change about one request.
struct Tamper {
  bool flip_signature = false;
  int flip_signature_at = -1;          // changes this hex digit of the signature (after signing)
  std::string signed_timestamp;        // signs with this timestamp text instead of the clock's
  bool omit_signature = false;
  bool omit_timestamp = false;
  bool omit_nonce = false;
  bool omit_session = false;
  bool duplicate_nonce_entry = false;  // the nonce entry twice (AOBJ-AUTH-014)
  std::string timestamp;               // replaces the timestamp text (after signing)
  std::string nonce_hex;               // signs with this nonce instead of a fresh one
  int64_t clock_offset_ms = 0;
  std::string session_hex;             // overrides the session id; "-" sends one on OpenSession
  std::string body_suffix;             // appended after signing
  std::string raw_body;                // when non-empty: sent instead of the message, signed
  std::vector<std::pair<std::string, std::string>> extra_metadata;  // e.g. aobj-cancel
  std::string access_key_id;  // claims (and signs with) this access key ID instead of the peer's
  // Rewrites the signature's text after signing (case, length); the edit is named in the report.
  std::function<std::string(const std::string&)> edit_signature;
  std::string edit_signature_what;
};

// Memory the suite registers for windows carries kGuardBytes of guard octets on either side,
// inside the same registration, filled with kGuardFill. Every reply a Peer receives, and the
// memory's release at the latest, checks that they are intact: a target that writes outside every
// window a request described (AOBJ-MEM-009), or into a window's surroundings after its reply,
// fails the case there instead of landing in the suite's other memory.
inline constexpr size_t kGuardBytes = 4096;
inline constexpr uint8_t kGuardFill = 0xc3;
struct GuardWatch;
struct GuardedDeleter {
  std::shared_ptr<GuardWatch> watch;
  void operator()(RegisteredMemory* m) const;
};
using Memory = std::unique_ptr<RegisteredMemory, GuardedDeleter>;
// "" when `m`'s guards are intact, else which octets changed.
std::string BrokenGuard(const RegisteredMemory& m);

class Peer {
 public:
  // `alloc_prio`: UCX's allocator order for Allocate() (e.g. "md:posix"); UCX's default if null.
  Peer(CaseContext& ctx, std::string label, std::string access_key, std::string secret,
       const char* alloc_prio = nullptr);
  ~Peer();

  RawReply Send(Method method, const std::string& body, const Tamper& t = {},
                const std::string& shown = "");
  template <class M>
  RawReply Send(Method method, const M& message, const Tamper& t = {}) {
    return Send(method, t.raw_body.empty() ? message.SerializeAsString() : t.raw_body, t,
                message.ShortDebugString());
  }
  // Sends the previous request again, byte for byte, same metadata (a replay).
  RawReply Resend();

  pb::OpenSessionRequest DefaultOpen() const;
  // Opens the session and, with `confirm`, proves its endpoint (AOBJ-SES-026); a failed
  // confirmation's reply is returned instead of OpenSession's.
  RawReply Open(const pb::OpenSessionRequest& req, bool confirm = true);
  RawReply Open() { return Open(DefaultOpen()); }
  // Waits for the endpoint challenges at the worker the session names and answers them; with
  // `proof` non-empty, sends that instead.
  RawReply Confirm(const std::string& proof = "");
  // The session's endpoint proof (AOBJ-SES-026), computed once from the challenges received.
  const std::string& Proof();
  bool has_session() const { return !session_hex_.empty(); }
  const std::string& session_hex() const { return session_hex_; }
  void set_session_hex(std::string s) { session_hex_ = std::move(s); }
  const pb::OpenSessionResponse& session() const { return open_; }
  bool Negotiated(uint32_t capability) const;
  // AOBJ-AUTH-021: checks `r`, the reply to this peer's last request (an OpenSession), against
  // its `aobj-response-signature`.
  absl::Status VerifyResponseSignature(const RawReply& r) const;

  // Registered memory of `size` octets with guards (above).
  Memory Allocate(size_t size);
  // Registered memory of exactly `size` octets, no guards (a case that needs the registration's
  // own bounds); a failure is returned (the allocator order may not be available on the suite's
  // transports) rather than failing the case.
  absl::StatusOr<std::unique_ptr<RegisteredMemory>> TryAllocate(size_t size);
  const std::string& worker_address() const { return worker_address_; }
  void DropDataChannel();  // destroys the UCX worker while the control channel lives on
  // A second UCP worker that nothing ever progresses; later DefaultOpen() requests name it, so a
  // transfer whose RMA needs this side's progress (emulated RMA) stalls (spec section 13.7).
  void UseStalledWorker();
  // `size` octets of ordinary heap memory registered without UCP_MEM_MAP_ALLOCATE (UCX reaches
  // it by emulation where no RDMA NIC registers it), filled with `fill`; owned by the Peer.
  std::unique_ptr<RegisteredMemory> RegisterHeap(size_t size, uint8_t fill);

  // Request builders (CRC32C over the body, one descriptor covering it).
  pb::PutObjectRequest PutRequest(const std::string& bucket, const std::string& key,
                                  const RegisteredMemory& mem, uint64_t size) const;
  pb::GetObjectRequest GetRequest(const std::string& bucket, const std::string& key,
                                  const RegisteredMemory& mem, uint64_t length) const;
  static pb::MemoryDescriptor Descriptor(const RegisteredMemory& mem, uint64_t offset,
                                         uint64_t length);

  // Convenience calls that record and return the reply.
  RawReply Put(const std::string& bucket, const std::string& key, const std::string& content);
  RawReply Get(const std::string& bucket, const std::string& key, std::string* content,
               pb::GetObjectResponse* resp = nullptr, uint64_t window = 0);
  RawReply Head(const std::string& bucket, const std::string& key,
                pb::HeadObjectResponse* resp = nullptr);
  RawReply Delete(const std::string& bucket, const std::string& key);
  RawReply CreateBucket(const std::string& bucket);
  RawReply Close();

  std::string label() const { return label_; }

  // The fast request path (spec 8.9). UseFastPath: once the session negotiated FAST_PATH and its
  // endpoint is confirmed, connects to `fast_path_address`; from then on Send() carries every
  // method the path carries (AOBJ-DAT-167) as a fast request, unless the tampering needs gRPC
  // metadata (extra entries, a duplicated nonce). A fast request that gets no reply within the
  // call timeout comes back as DEADLINE_EXCEEDED without an AOBJ error. Unsupported (the case
  // ends so) when FAST_PATH was not negotiated. With `via`, the address is the one `via`'s
  // session was given, whatever this session negotiated: a session without FAST_PATH sends
  // fast requests (AOBJ-DAT-167 says how they are answered).
  void UseFastPath(const Peer* via = nullptr);
  bool fast() const { return fast_ep_ != 0 && fast_on_; }
  void set_fast(bool on) { fast_on_ = on; }
  // Sends `frame` as one FAST_REQUEST active message, exactly these octets, and waits up to
  // `wait` for a reply to `nonce_hex`; `*got` tells whether one came (the reply is returned).
  RawReply SendFastFrame(const std::string& frame, const std::string& nonce_hex,
                         absl::Duration wait, bool* got);
  // Fast replies that arrived for no request this peer waits for (AOBJ-DAT-169).
  size_t stray_fast_replies();

 private:
  struct FastInbox;
  void CloseQuietly();  // CloseSession, reply ignored
  void CheckGuards(Method method);  // fails the case when a guard of live memory changed
  using RuleFn = std::function<void(bool, std::string, std::string, std::string)>;
  void CheckReply(Method method, const RawReply& r, const RuleFn& rule);
  RawReply Finish(Method method, const std::string& shown, const std::string& tampering,
                  RawReply reply);
  CaseContext& ctx_;
  std::string label_;
  RawChannel channel_;
  std::string signing_key_;
  std::unique_ptr<UcxContext> context_;
  std::unique_ptr<UcxWorker> worker_;
  ucp_worker_h stalled_ = nullptr;                  // UseStalledWorker(); never progressed
                                                    // (but by Confirm, for the challenges)
  std::string stalled_challenges_[kMaxEndpointChallenges];
  std::string proof_;  // the session's proof, once computed (challenges arrive once)
  std::vector<std::unique_ptr<uint8_t[]>> heap_;   // RegisterHeap() memory
  std::shared_ptr<GuardWatch> watch_;              // live Allocate() memory
  std::string worker_address_;
  std::string session_hex_;
  pb::OpenSessionResponse open_;
  RequestAuth last_auth_;
  std::vector<std::pair<std::string, std::string>> last_md_;
  std::string last_body_;
  Method last_method_ = Method::kOpenSession;
  std::string last_shown_;
  uint64_t fast_ep_ = 0;
  std::string last_fast_frame_;  // the last request's frame when it went by the fast path
  std::string last_fast_nonce_;
  bool fast_on_ = true;
  std::shared_ptr<FastInbox> fast_inbox_;
};

// What a target can check of a window in `m` (spec Section 14.1): the memory kind its key states.
KeyedMemory MemoryKindOf(const RegisteredMemory& m);
std::string MemoryKindName(KeyedMemory kind);
// The suite's data channel as reports state it: UCX version, transports and devices, the kind of
// memory the suite registers, and the memory protection the target reported for the sessions
// the suite opened so far.
std::string DescribeDataChannel(const TargetOptions& target);

// Short text forms for transcripts and messages.
std::string CodeName(ErrorCode code);
std::string Outcome(const RawReply& r);
std::string Hex(const std::string& bytes);

}  // namespace aobj::conformance

#endif  // AOBJ_CONFORMANCE_PEER_H_
