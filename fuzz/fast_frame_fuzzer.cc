// Fast-path frames (spec section 8.9): a FAST_REQUEST as any peer may send it to a server's
// worker, and a FAST_REPLY as a server (or anyone who reached the client's worker) may send it.
// The parsers never read past the frame, refuse what exceeds kMaxFastFrame, and what they accept
// encodes again to exactly the same octets (one encoding per frame: AOBJ-DAT-165, AOBJ-DAT-170).
// AOBJ_FUZZ_COVERS: src/wire/fast_frame.cc
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "wire/fast_frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string frame(reinterpret_cast<const char*>(data), size);
  auto req = aobj::ParseFastRequest(frame);
  if (req.ok()) {
    AOBJ_FUZZ_CHECK(frame.size() <= aobj::kMaxFastFrame);
    auto again = aobj::EncodeFastRequest(*req);
    AOBJ_FUZZ_CHECK(again.ok() && *again == frame);
  }
  auto reply = aobj::ParseFastReply(frame);
  if (reply.ok()) {
    AOBJ_FUZZ_CHECK(!req.ok());  // the kind octet tells them apart
    auto again = aobj::EncodeFastReply(*reply);
    AOBJ_FUZZ_CHECK(again.ok() && *again == frame);
  }
  return 0;
}
