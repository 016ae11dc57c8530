// The whole AOBJ/1 error registry (spec section "Error registry"), for tools and tests that list
// it. Lookups of single codes go through GetErrorInfo() in include/aobj/status.h.
#ifndef AOBJ_WIRE_ERROR_REGISTRY_H_
#define AOBJ_WIRE_ERROR_REGISTRY_H_

#include <vector>

#include "aobj/status.h"

namespace aobj {

// The type URL of the status payload that carries the numeric error code as decimal text.
inline constexpr char kErrorCodePayloadUrl[] = "type.aobj.dev/aobj.v1.ErrorCode";
// On a status made for a call that failed in the control channel (no AOBJ reply): why, in words
// (ControlChannelFailure).
inline constexpr char kControlChannelPayloadUrl[] = "type.aobj.dev/control-channel-failure";

// Every registry row, kOk first, in ascending code order. The string_views point at static
// storage. Thread-safe.
std::vector<ErrorInfo> AllErrorInfos();

}  // namespace aobj

#endif  // AOBJ_WIRE_ERROR_REGISTRY_H_
