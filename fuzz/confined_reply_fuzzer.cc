// Replies of a data-channel process (spec AOBJ-SEC-021: once its peer may have taken it over, the
// server reads what it sends as a peer's input): ParseReply never reads past the body, bounds the
// message, and what it accepts re-encodes to the same octets; FrameReader's reads stay inside.
// AOBJ_FUZZ_COVERS: src/transport/confined_ipc.cc
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "transport/confined_ipc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  auto reply = aobj::confined::ParseReply(body);
  if (reply.ok()) {
    AOBJ_FUZZ_CHECK(reply->message.size() <= aobj::confined::kMaxReplyMessage);
    aobj::confined::FrameWriter w;
    w.U32(static_cast<uint32_t>(aobj::confined::Op::kReply));
    w.U64(reply->id);
    w.U32(reply->code);
    w.Bytes(reply->message);
    AOBJ_FUZZ_CHECK(w.body() + reply->results == body);
  }
  // The readers the server uses on a reply's results.
  aobj::confined::FrameReader r(body);
  uint64_t v64;
  uint32_t v32;
  std::string s;
  while (!r.done()) {
    const size_t before = r.rest_size();
    if (!r.U32(&v32) || !r.Bytes(&s, 64) || !r.U64(&v64)) break;
    AOBJ_FUZZ_CHECK(r.rest_size() < before);
  }
  return 0;
}
