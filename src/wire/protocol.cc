#include "wire/protocol.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"

namespace aobj {

absl::StatusOr<uint32_t> SelectVersion(uint32_t client_min, uint32_t client_max,
                                       uint32_t server_min, uint32_t server_max) {
  // AOBJ-SES-004: a well-formed range.
  if (client_min == 0 || client_min > client_max) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("offered version range [", client_min, ", ", client_max,
                                  "] is malformed"));
  }
  const uint32_t lo = std::max(client_min, server_min);
  const uint32_t hi = std::min(client_max, server_max);
  // AOBJ-SES-003: empty intersection.
  if (lo > hi) {
    return MakeError(ErrorCode::kUnsupportedVersion,
                     absl::StrCat("offered versions [", client_min, ", ", client_max,
                                  "] do not overlap the server's [", server_min, ", ",
                                  server_max, "]"));
  }
  return hi;  // AOBJ-SES-002: the highest common version.
}

std::vector<uint32_t> IntersectCapabilities(const std::vector<uint32_t>& offered,
                                            const std::vector<uint32_t>& supported) {
  std::vector<uint32_t> out;
  for (uint32_t c : supported) {
    if (std::find(offered.begin(), offered.end(), c) != offered.end()) out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

SessionLimits EffectiveLimits(const SessionLimits& server, const SessionLimits& requested) {
  auto pick = [](auto s, auto r) { return (r != 0 && r < s) ? r : s; };
  SessionLimits out;
  out.max_transfer_bytes = pick(server.max_transfer_bytes, requested.max_transfer_bytes);
  out.max_in_flight = pick(server.max_in_flight, requested.max_in_flight);
  out.inline_threshold = pick(server.inline_threshold, requested.inline_threshold);
  out.max_descriptors = pick(server.max_descriptors, requested.max_descriptors);
  out.max_rkey_bytes = pick(server.max_rkey_bytes, requested.max_rkey_bytes);
  return out;
}

}  // namespace aobj

namespace aobj {

const char* TransferPathName(TransferPath path) {
  switch (path) {
    case TransferPath::kNone:
      return "none";
    case TransferPath::kInline:
      return "inline";
    case TransferPath::kRma:
      return "rma";
    default:
      return "unspecified";
  }
}

}  // namespace aobj
