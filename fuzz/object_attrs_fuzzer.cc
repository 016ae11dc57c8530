// Conditions and user metadata of requests (spec 9.8, 9.10): never crash; accepted metadata is
// within S3's 2 KiB, with lower-case token names and UTF-8 values; evaluation of accepted
// conditions answers only OK, PRECONDITION_FAILED or NOT_MODIFIED, and a write never NOT_MODIFIED.
// AOBJ_FUZZ_COVERS: src/wire/conditions.cc
// AOBJ_FUZZ_COVERS: src/wire/user_metadata.cc
#include <cstdint>
#include <string>

#include "aobj/status.h"
#include "fuzz_util.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "wire/conditions.h"
#include "wire/names.h"
#include "wire/user_metadata.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using aobj::ErrorCode;
  FuzzedDataProvider fdp(data, size);
  aobj::v1::Preconditions pb;
  pb.set_if_match(fdp.ConsumeRandomLengthString(300));
  pb.set_if_none_match(fdp.ConsumeRandomLengthString(300));
  if (fdp.ConsumeBool()) pb.set_if_modified_since_ms(fdp.ConsumeIntegral<int64_t>());
  if (fdp.ConsumeBool()) pb.set_if_unmodified_since_ms(fdp.ConsumeIntegral<int64_t>());
  const std::string etag = fdp.ConsumeRandomLengthString(40);
  const int64_t modified = fdp.ConsumeIntegral<int64_t>();
  if (auto c = aobj::ConditionsFromProto(pb); c.ok()) {
    const ErrorCode read = aobj::ErrorCodeOf(aobj::EvaluateReadConditions(*c, etag, modified));
    AOBJ_FUZZ_CHECK(read == ErrorCode::kOk || read == ErrorCode::kPreconditionFailed ||
                    read == ErrorCode::kNotModified);
    const ErrorCode copy =
        aobj::ErrorCodeOf(aobj::EvaluateCopySourceConditions(*c, etag, modified));
    AOBJ_FUZZ_CHECK(copy == ErrorCode::kOk || copy == ErrorCode::kPreconditionFailed);
    AOBJ_FUZZ_CHECK((read == ErrorCode::kOk) == (copy == ErrorCode::kOk));
    if (aobj::ValidateWriteConditions(*c).ok() && !c->if_match.empty()) {
      const std::string canonical = aobj::CanonicalEntityTag(c->if_match);
      AOBJ_FUZZ_CHECK(canonical == "*" || (canonical.size() >= 3 && canonical.front() == '"' &&
                                           canonical.back() == '"'));
    }
  } else {
    AOBJ_FUZZ_CHECK(aobj::ErrorCodeOf(c.status()) == ErrorCode::kInvalidArgument);
  }

  aobj::UserMetadata in;
  const int pairs = fdp.ConsumeIntegralInRange<int>(0, 40);
  for (int i = 0; i < pairs; ++i) {
    in[fdp.ConsumeRandomLengthString(20)] = fdp.ConsumeRandomLengthString(200);
  }
  auto out = aobj::NormalizeUserMetadata(in);
  if (!out.ok()) {
    const ErrorCode code = aobj::ErrorCodeOf(out.status());
    AOBJ_FUZZ_CHECK(code == ErrorCode::kInvalidArgument || code == ErrorCode::kMetadataTooLarge);
    return 0;
  }
  size_t total = 0;
  AOBJ_FUZZ_CHECK(out->size() == in.size());
  for (const auto& [name, value] : *out) {
    total += name.size() + value.size();
    AOBJ_FUZZ_CHECK(!name.empty());
    for (char ch : name) AOBJ_FUZZ_CHECK(ch > 0x20 && ch < 0x7F && !(ch >= 'A' && ch <= 'Z'));
    AOBJ_FUZZ_CHECK(aobj::IsValidUtf8(value));
  }
  AOBJ_FUZZ_CHECK(total <= aobj::kMaxUserMetadataBytes);
  return 0;
}
