// The client's reading of a failed reply (spec 3.3, AOBJ-ERR-003, AOBJ-EXT-004): any trailer
// bytes and gRPC status yield a failed absl::Status with some AOBJ code, never OK and never a
// crash; unknown codes are not retryable.
// AOBJ_FUZZ_COVERS: src/control/rpc.cc
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <map>
#include <string>

#include "aobj/status.h"
#include "control/rpc.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int code = in.ConsumeIntegralInRange<int>(1, 16);
  const std::string message = in.ConsumeRandomLengthString(256);
  const std::string trailer = in.ConsumeRemainingBytesAsString();
  grpc::Status status(static_cast<grpc::StatusCode>(code), message);
  std::multimap<grpc::string_ref, grpc::string_ref> trailers;
  trailers.emplace(grpc::string_ref(aobj::kErrorTrailer), grpc::string_ref(trailer));
  aobj::v1::Error detail;
  const absl::Status s = aobj::FromGrpcStatus(status, trailers, &detail);
  AOBJ_FUZZ_CHECK(!s.ok());
  const aobj::ErrorCode ec = aobj::ErrorCodeOf(s);
  AOBJ_FUZZ_CHECK(ec != aobj::ErrorCode::kOk);
  const aobj::ErrorInfo info = aobj::GetErrorInfo(ec);
  if (info.name == "UNKNOWN") AOBJ_FUZZ_CHECK(!info.retryable);
  return 0;
}
