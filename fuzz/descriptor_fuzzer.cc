// Memory descriptors as a server receives them: a PutObjectRequest (proto bytes), validated and
// laid out. Invariants: every planned piece lies inside its window, pieces are contiguous in the
// body, and together they cover exactly the body (spec 7.2, 7.3).
// AOBJ_FUZZ_COVERS: src/wire/descriptor.cc
#include <algorithm>
#include <cstdint>

#include "aobj/v1/aobj.pb.h"
#include "fuzz_util.h"
#include "wire/descriptor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  aobj::v1::PutObjectRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  aobj::SessionLimits limits;
  limits.max_descriptors = 16;
  if (!aobj::ValidateDescriptors(req.source(), limits).ok()) return 0;
  const uint64_t body = req.size() % (uint64_t{1} << 40);
  // The server plans with 64 MiB pieces; here any piece size, but at least body/4096 so that a
  // plan stays a few thousand pieces (a tiny piece of a 1 TiB body is the harness's own OOM).
  const uint64_t piece = std::max<uint64_t>((req.size() >> 40) % (64 << 20), body / 4096 + 1);
  auto pieces = aobj::PlanTransfer(req.source(), body, piece);
  if (!pieces.ok()) return 0;
  uint64_t offset = 0;
  for (const aobj::TransferPiece& p : *pieces) {
    const auto& d = req.source(static_cast<int>(p.window));
    AOBJ_FUZZ_CHECK(p.length > 0);
    AOBJ_FUZZ_CHECK(p.body_offset == offset);
    AOBJ_FUZZ_CHECK(p.remote >= d.address());
    AOBJ_FUZZ_CHECK(p.remote - d.address() <= d.length() - p.length);
    offset += p.length;
  }
  AOBJ_FUZZ_CHECK(offset == body);
  return 0;
}
