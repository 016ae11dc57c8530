// The messages between aobj-server and its data-channel processes (spec section 14.3,
// docs/security.md "Data channel confinement").
//
// A confined server runs every UCP worker that peers' bytes reach in a process of its own
// (aobj-data-worker, one per access key), so that what UCX 1.13.1 does with a hostile peer's
// octets (writes where a tcp put request points, asserts on a header length) costs that process
// and its tenant, never the server, its store, its credentials or other tenants. The server
// drives the process over a Unix stream socket with the framing below; the bytes the process
// moves live in shared-memory buffers (memfd) the server hands it, one buffer per transfer in
// progress.
//
// Framing: each message is a little-endian u32 length (of what follows, at most kMaxFrame) and a
// body written with FrameWriter: u32 op, u64 request id, then the op's fields. A reply
// (Op::kReply) carries the request id it answers, a u32 error code (AOBJ registry), the message
// and the op's results. Both sides parse with FrameReader, whose every read is bounded; the
// server treats what the process sends as a peer's input (the process may have been taken over).
//
// Threading: the functions are thread-safe on distinct descriptors; a caller that shares a
// descriptor between threads serializes WriteFrame itself.
#ifndef AOBJ_TRANSPORT_CONFINED_IPC_H_
#define AOBJ_TRANSPORT_CONFINED_IPC_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "wire/le_codec.h"

namespace aobj::confined {

enum class Op : uint32_t {
  // process -> server, request id 0: u64 pid, string peer-RMA refusal ("" = ok), string the
  // worker address fast requests are sent to (spec 8.9)
  kHello = 1,
  kAddBuffer = 2,   // u64 buffer id, u64 size; the memfd travels with the frame (SCM_RIGHTS)
  kDropBuffer = 3,  // u64 buffer id
  kConnect = 4,     // string peer address -> u64 endpoint
  kProtection = 5,  // u64 endpoint -> u32 (0 hardware, 1 emulated)
  kChallenge = 6,   // u64 endpoint, string session id -> string challenges
  kBind = 7,        // u64 endpoint
  kDisconnect = 8,  // u64 endpoint
  // u64 endpoint, i64 timeout ns, u32 direction (0 write, 1 read), u64 max rkey bytes,
  // u32 windows, each {u64 address, u64 length, string rkey}, u32 ops, each
  // {u64 window, u64 remote, u64 buffer id, u64 offset, u64 length}
  kExecute = 9,
  kAbandon = 10,   // u64 request id of a kExecute: its call was abandoned (kAbandonGrace)
  kStats = 11,     // -> u64 endpoints, u64 rkeys, u64 endpoints failed, u64 refused puts,
                   //    u64 refused gets, u64 refused atomics
  kShutdown = 12,  // i64 grace ns (UcxWorker::BeginShutdown); no reply
  // process -> server, request id 0, unsolicited: string a fast request frame as a peer sent it
  // (peer input, at most kMaxFastFrame octets)
  kFastRequest = 13,
  kFastReply = 14,  // u64 endpoint, string a fast reply frame to send there; no reply
  kReply = 100,     // u64 request id, u32 code, string message, results
};

// Largest frame either side accepts. Requests carry at most max_descriptors rkeys of
// max_rkey_bytes each and their operations; replies are small.
constexpr size_t kMaxFrame = 8 << 20;
// Longest error message a reply may carry (longer ones are cut).
constexpr size_t kMaxReplyMessage = 1024;

// A body in the framing's vocabulary, on the one little-endian codec (wire/le_codec.h).
class FrameWriter {
 public:
  void U32(uint32_t v) { w_.U32(v); }
  void U64(uint64_t v) { w_.U64(v); }
  void I64(int64_t v) { w_.U64(static_cast<uint64_t>(v)); }
  void Bytes(absl::string_view s) { w_.String32(std::string_view(s.data(), s.size())); }
  const std::string& body() const { return body_; }

 private:
  std::string body_;
  LeWriter w_{&body_};
};

// Reads a body; every read fails (returns false) rather than run past the end.
class FrameReader {
 public:
  explicit FrameReader(absl::string_view body) : r_(std::string_view(body.data(), body.size())) {}
  bool U32(uint32_t* v) { return r_.U32(v); }
  bool U64(uint64_t* v) { return r_.U64(v); }
  bool I64(int64_t* v) {
    uint64_t u;
    if (!r_.U64(&u)) return false;
    *v = static_cast<int64_t>(u);
    return true;
  }
  // At most `max` octets; longer is malformed.
  bool Bytes(std::string* s, size_t max) {
    std::string_view b;
    if (!r_.String32(max, &b)) return false;
    s->assign(b);
    return true;
  }
  bool done() const { return r_.remaining() == 0; }
  size_t rest_size() const { return r_.remaining(); }

 private:
  LeReader r_;
};

// A reply as the server reads it from a data-channel process (which it no longer trusts once a
// peer may have taken it over): op kReply, the request id, a code, a message of at most
// kMaxReplyMessage octets; `results` is the rest of the body, for the op's own reader.
struct Reply {
  uint64_t id = 0;
  uint32_t code = 0;
  std::string message;
  std::string results;
};
// DataLoss when `body` is not such a reply.
absl::StatusOr<Reply> ParseReply(absl::string_view body);

// Writes one frame (length + body), with `pass_fd` (>= 0) attached by SCM_RIGHTS.
absl::Status WriteFrame(int fd, absl::string_view body, int pass_fd = -1);
// Reads one frame's body (at most `max` octets); a descriptor that came with it is stored in
// `*received_fd` (-1 when none; the caller owns it). NotFound at a clean end of stream,
// DataLoss for a short or oversized frame.
absl::StatusOr<std::string> ReadFrame(int fd, size_t max, int* received_fd);

}  // namespace aobj::confined

#endif  // AOBJ_TRANSPORT_CONFINED_IPC_H_
