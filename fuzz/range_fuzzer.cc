// Byte ranges (spec 9.9): the "bytes=..." text parser and the structured form from the wire never
// crash; what the parser accepts formats back to text that parses to the same range; a resolved
// range always lies inside the object and is never empty.
// AOBJ_FUZZ_COVERS: src/wire/range.cc
#include <cstdint>
#include <string>

#include "aobj/status.h"
#include "fuzz_util.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "wire/range.h"

namespace {

void CheckResolved(const aobj::RangeSpec& range, uint64_t size) {
  auto r = aobj::ResolveRange(range, size);
  if (!r.ok()) {
    AOBJ_FUZZ_CHECK(aobj::ErrorCodeOf(r.status()) == aobj::ErrorCode::kInvalidRange);
    return;
  }
  AOBJ_FUZZ_CHECK(size > 0 && r->length >= 1 && r->length <= size);
  AOBJ_FUZZ_CHECK(r->first < size && r->length <= size - r->first);
  if (range.kind == aobj::RangeSpec::Kind::kSuffix) AOBJ_FUZZ_CHECK(r->last() == size - 1);
  if (range.kind != aobj::RangeSpec::Kind::kSuffix) AOBJ_FUZZ_CHECK(r->first == range.first);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  const uint64_t object_size = fdp.ConsumeIntegral<uint64_t>();
  aobj::v1::ByteRange pb;
  pb.set_kind(static_cast<aobj::v1::ByteRange::Kind>(fdp.ConsumeIntegralInRange<int>(-1, 4)));
  pb.set_first(fdp.ConsumeIntegral<uint64_t>());
  pb.set_last(fdp.ConsumeIntegral<uint64_t>());
  pb.set_suffix_length(fdp.ConsumeIntegral<uint64_t>());
  if (auto r = aobj::RangeFromProto(pb); r.ok()) {
    if (r->kind == aobj::RangeSpec::Kind::kFirstLast) AOBJ_FUZZ_CHECK(r->first <= r->last);
    CheckResolved(*r, object_size);
  } else {
    AOBJ_FUZZ_CHECK(aobj::ErrorCodeOf(r.status()) == aobj::ErrorCode::kInvalidArgument);
  }
  const std::string text = fdp.ConsumeRemainingBytesAsString();
  auto parsed = aobj::ParseHttpRange(text);
  if (!parsed.ok()) {
    AOBJ_FUZZ_CHECK(aobj::ErrorCodeOf(parsed.status()) == aobj::ErrorCode::kInvalidArgument);
    return 0;
  }
  AOBJ_FUZZ_CHECK(text.size() <= aobj::kMaxRangeTextBytes);
  if (parsed->kind == aobj::RangeSpec::Kind::kFirstLast) {
    AOBJ_FUZZ_CHECK(parsed->first <= parsed->last);
  }
  auto again = aobj::ParseHttpRange(aobj::FormatHttpRange(*parsed));
  AOBJ_FUZZ_CHECK(again.ok() && again->kind == parsed->kind && again->first == parsed->first &&
                  again->last == parsed->last && again->suffix_length == parsed->suffix_length);
  CheckResolved(*parsed, object_size);
  return 0;
}
