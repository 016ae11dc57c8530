#include "wire/protocol.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "aobj/status.h"
#include "wire/crypto.h"

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

absl::StatusOr<uint32_t> SelectOfferedVersion(const std::vector<uint32_t>& offered,
                                              uint32_t server_min, uint32_t server_max) {
  if (offered.size() > kMaxOfferedVersions) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("offered_versions has ", offered.size(), " entries; at most ",
                                  kMaxOfferedVersions, " are allowed"));
  }
  uint32_t best = 0;
  for (uint32_t v : offered) {
    // AOBJ-EXT-011: a grease version is never selected, whatever the server supports.
    if (v == 0 || IsGrease(v) || v < server_min || v > server_max) continue;
    best = std::max(best, v);
  }
  if (best == 0) {
    return MakeError(ErrorCode::kUnsupportedVersion,
                     absl::StrCat("none of the offered versions {", absl::StrJoin(offered, ", "),
                                  "} is in the server's [", server_min, ", ", server_max, "]"));
  }
  return best;
}

absl::Status CheckPreviousOffer(const std::vector<uint32_t>& previous, uint32_t server_min,
                                uint32_t server_max) {
  if (previous.size() > kMaxOfferedVersions) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("previous_offer has ", previous.size(), " entries; at most ",
                                  kMaxOfferedVersions, " are allowed"));
  }
  for (uint32_t v : previous) {
    if (v != 0 && !IsGrease(v) && v >= server_min && v <= server_max) {
      return MakeError(ErrorCode::kNegotiationFailed,
                       absl::StrCat("previous_offer lists version ", v,
                                    ", which this server supports: the UNSUPPORTED_VERSION that "
                                    "made the client retry did not come from this server"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckNegotiated(const std::vector<uint32_t>& offered_versions,
                             const std::vector<uint32_t>& offered_caps, uint32_t selected,
                             const std::vector<uint32_t>& answered) {
  if (selected == 0 || IsGrease(selected) ||
      std::find(offered_versions.begin(), offered_versions.end(), selected) ==
          offered_versions.end()) {
    return MakeError(ErrorCode::kNegotiationFailed,
                     absl::StrCat("the server selected version ", selected,
                                  ", which this client did not offer"));
  }
  for (uint32_t c : answered) {
    if (IsGrease(c)) continue;  // AOBJ-EXT-001, AOBJ-EXT-012
    if (std::find(offered_caps.begin(), offered_caps.end(), c) == offered_caps.end()) {
      return MakeError(
          ErrorCode::kNegotiationFailed,
          absl::StrCat("the server answered capability ", c, ", which this client did not offer"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> SelectBinding(const std::vector<BindingOffer>& offered,
                                       const std::vector<uint32_t>& implemented) {
  auto is_implemented = [&](uint32_t b) {
    return std::find(implemented.begin(), implemented.end(), b) != implemented.end();
  };
  if (offered.empty()) {
    if (is_implemented(kBindingUcx)) return kBindingUcx;
    return MakeError(ErrorCode::kNegotiationFailed,
                     "the client offers no binding, which means UCX (binding 1), and this server "
                     "does not implement it");
  }
  if (offered.size() > kMaxBindingOffers) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("bindings has ", offered.size(), " entries; at most ",
                                  kMaxBindingOffers, " are allowed"));
  }
  std::vector<uint32_t> ids;
  for (const BindingOffer& o : offered) {
    if (o.endpoint_address_bytes > kMaxWorkerAddressBytes) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("the endpoint address offered for binding ", o.binding, " is ",
                                    o.endpoint_address_bytes, " octets; at most ",
                                    kMaxWorkerAddressBytes, " are allowed"));
    }
    if (o.binding == kBindingUcx && o.endpoint_address_bytes != 0) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "the bindings entry for UCX (binding 1) carries an endpoint address; its "
                       "address is worker_address, and the entry's must be empty");
    }
    ids.push_back(o.binding);
  }
  for (uint32_t b : ids) {
    if (b != 0 && !IsGrease(b) && is_implemented(b)) return b;
  }
  std::vector<uint32_t> mine(implemented);
  std::sort(mine.begin(), mine.end());
  return MakeError(
      ErrorCode::kNegotiationFailed,
      absl::StrCat("none of the offered data-channel bindings {", absl::StrJoin(ids, ", "),
                   "} is implemented by this server; it "
                   "implements {",
                   absl::StrJoin(mine, ", "), "} (1 is UCX)"));
}

absl::Status CheckSelectedBinding(const std::vector<uint32_t>& offered, uint32_t selected) {
  const uint32_t b = selected == 0 ? kBindingUcx : selected;
  if (IsGrease(b) || std::find(offered.begin(), offered.end(), b) == offered.end()) {
    return MakeError(ErrorCode::kNegotiationFailed,
                     absl::StrCat("the server selected data-channel binding ", selected,
                                  ", which this client did not offer"));
  }
  return absl::OkStatus();
}

uint32_t RandomGreaseValue() {
  const std::string r = RandomBytes(4);
  uint32_t v = 0;
  for (char c : r) v = (v << 8) | static_cast<uint8_t>(c);
  return (v & 0xF0F0F0F0u) | 0x0A0A0A0Au;
}

absl::Status CheckCapabilityParams(const std::vector<CapabilityParamEntry>& entries) {
  if (entries.size() > kMaxCapabilityParams) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("capability_params has ", entries.size(), " entries; at most ",
                                  kMaxCapabilityParams));
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].params_bytes > kMaxCapabilityParamBytes) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("capability_params entry ", i, " (capability ",
                                    entries[i].capability, ") has ", entries[i].params_bytes,
                                    " octets of params; at most ", kMaxCapabilityParamBytes));
    }
    for (size_t j = 0; j < i; ++j) {
      if (entries[j].capability == entries[i].capability) {
        return MakeError(ErrorCode::kInvalidArgument,
                         absl::StrCat("capability_params entries ", j, " and ", i,
                                      " both name capability ", entries[i].capability));
      }
    }
  }
  return absl::OkStatus();
}

uint32_t RandomGreaseField() {
  const std::string r = RandomBytes(2);
  const uint32_t v = (static_cast<uint8_t>(r[0]) << 8) | static_cast<uint8_t>(r[1]);
  return kGreaseFieldFirst + v % (kGreaseFieldLast - kGreaseFieldFirst + 1);
}

std::string RandomGreaseOctets() {
  const std::string n = RandomBytes(1);
  return RandomBytes(1 + static_cast<uint8_t>(n[0]) % 16);
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

uint32_t GrantCredits(uint32_t max_in_flight, double pressure) {
  const uint32_t most = std::max<uint32_t>(max_in_flight, 1);
  if (!(pressure > 0.5)) return most;  // NaN too
  if (pressure >= 1.0) return 1;
  const double share = (1.0 - pressure) * 2.0;  // 1 at half full, 0 when full
  return std::clamp<uint32_t>(static_cast<uint32_t>(most * share), 1, most);
}

uint32_t CreditsFromReply(uint32_t credits, uint32_t max_in_flight) {
  const uint32_t most = std::max<uint32_t>(max_in_flight, 1);
  return credits == 0 ? most : std::min(credits, most);
}

void AppendCredits(std::string* serialized_reply, uint32_t credits) {
  // Tag (field 15, varint) then the value as a base-128 varint; a parser takes the last
  // occurrence of a scalar field, so this also replaces any value set before.
  serialized_reply->push_back(static_cast<char>(kCreditsField << 3));
  uint32_t v = credits;
  while (v >= 0x80) {
    serialized_reply->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  serialized_reply->push_back(static_cast<char>(v));
}

}  // namespace aobj
