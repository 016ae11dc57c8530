// Protocol constants and negotiation of AOBJ/1 (spec "Versioning and extension", "Sessions").
// Pure functions; thread-safe.
#ifndef AOBJ_WIRE_PROTOCOL_H_
#define AOBJ_WIRE_PROTOCOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "aobj/types.h"

namespace aobj {

inline constexpr uint32_t kProtocolVersion = 1;  // AOBJ/1

// Capability IDs (spec "Registries").
enum Capability : uint32_t {
  kCapInline = 1,
  kCapCrc32c = 2,
  kCapCrc64Nvme = 3,
  kCapMultiDescriptor = 4,
  kCapOpaqueEtag = 5,
  kCapCancel = 6,
  kCapFastPath = 7,         // spec section 8.9
  kCapBatchGet = 8,         // spec section 9.16
  kCapBatchPut = 9,         // spec section 9.17
  kCapOpaquePartEtag = 10,  // spec section 9.15.2 (AOBJ-OBJ-254)
};

// AOBJ-OBJ-237: items one GetObjects may name.
inline constexpr size_t kMaxBatchGetItems = 1000;
// AOBJ-OBJ-246: items one PutObjects may name.
inline constexpr size_t kMaxBatchPutItems = 1000;

// AOBJ-DAT-161: cancel entries one RenewSession may carry.
inline constexpr size_t kMaxCancelEntries = 16;

// AOBJ-EXT-001 / AOBJ-EXT-004: the grease pattern for capabilities and error codes.
inline constexpr bool IsGrease(uint32_t v) { return (v & 0x0F0F0F0Fu) == 0x0A0A0A0Au; }

// The session limits (spec "Sessions", Limits message).
struct SessionLimits {
  uint64_t max_transfer_bytes = 64ull << 30;
  uint32_t max_in_flight = 16;
  uint64_t inline_threshold = 16384;
  uint32_t max_descriptors = 16;
  uint32_t max_rkey_bytes = 1024;
};

// Hard bounds of the reference server on what a peer may send.
inline constexpr size_t kMaxWorkerAddressBytes = 8192;   // AOBJ-SES-011
inline constexpr size_t kMaxGateways = 64;               // AOBJ-SES-032
inline constexpr size_t kMaxGatewayAddressBytes = 255;   // AOBJ-SES-032
inline constexpr uint64_t kMaxInlineThreshold = 1 << 20; // inline bodies never exceed 1 MiB
inline constexpr size_t kMaxKeyBytes = 1024;             // AOBJ-OBJ-002

// AOBJ-SES-002..004: the highest version in [client_min, client_max] ∩ [server_min, server_max].
// INVALID_ARGUMENT for a malformed range, UNSUPPORTED_VERSION for an empty intersection.
absl::StatusOr<uint32_t> SelectVersion(uint32_t client_min, uint32_t client_max,
                                       uint32_t server_min, uint32_t server_max);

// AOBJ-SES-034..036: at most this many entries in offered_versions and in previous_offer.
inline constexpr size_t kMaxOfferedVersions = 16;

// AOBJ-SES-035: the highest version of `offered` (grease ignored, AOBJ-EXT-011) inside
// [server_min, server_max]. INVALID_ARGUMENT past kMaxOfferedVersions entries,
// UNSUPPORTED_VERSION when none is common.
absl::StatusOr<uint32_t> SelectOfferedVersion(const std::vector<uint32_t>& offered,
                                              uint32_t server_min, uint32_t server_max);

// AOBJ-SES-036: NEGOTIATION_FAILED when the refused first offer `previous` lists a version this
// server supports (so the UNSUPPORTED_VERSION that made the client retry was not its own);
// INVALID_ARGUMENT past kMaxOfferedVersions entries.
absl::Status CheckPreviousOffer(const std::vector<uint32_t>& previous, uint32_t server_min,
                                uint32_t server_max);

// AOBJ-SES-037 (the client's side): NEGOTIATION_FAILED unless `selected` is one of
// `offered_versions` (not grease) and every non-grease ID of `answered` is in `offered_caps`.
absl::Status CheckNegotiated(const std::vector<uint32_t>& offered_versions,
                             const std::vector<uint32_t>& offered_caps, uint32_t selected,
                             const std::vector<uint32_t>& answered);

// Data-channel bindings (section 2.6, registry 12.10). The reference implements UCX only; the
// verbs binding of Appendix D is specified for other implementations.
inline constexpr uint32_t kBindingUcx = 1;
inline constexpr uint32_t kBindingVerbsRc = 2;
inline constexpr size_t kMaxBindingOffers = 16;  // AOBJ-SES-039

// One entry of OpenSessionRequest.bindings, as far as selection needs it.
struct BindingOffer {
  uint32_t binding = 0;
  size_t endpoint_address_bytes = 0;
};

// AOBJ-SES-039, AOBJ-SES-040: the first binding of `offered` (the client's order) that is in
// `implemented`; unknown and grease IDs are skipped (AOBJ-EXT-014). An empty offer means UCX.
// INVALID_ARGUMENT past kMaxBindingOffers entries, for an endpoint address over
// kMaxWorkerAddressBytes, or for a UCX entry that carries one (its address is worker_address);
// NEGOTIATION_FAILED when none is implemented.
absl::StatusOr<uint32_t> SelectBinding(const std::vector<BindingOffer>& offered,
                                       const std::vector<uint32_t>& implemented);

// AOBJ-SES-041 (the client's side): NEGOTIATION_FAILED unless `selected` (0 meaning UCX, from a
// server that predates bindings) is a non-grease ID of `offered`.
absl::Status CheckSelectedBinding(const std::vector<uint32_t>& offered, uint32_t selected);

// AOBJ-EXT-012: a grease capability ID chosen at random.
uint32_t RandomGreaseValue();

// Capability parameters (spec section 4.2): AOBJ-EXT-015's bounds.
inline constexpr size_t kMaxCapabilityParams = 64;
inline constexpr size_t kMaxCapabilityParamBytes = 1024;
// AOBJ-EXT-016: field numbers reserved for grease in every message of aobj.v1.
inline constexpr uint32_t kGreaseFieldFirst = 1000;
inline constexpr uint32_t kGreaseFieldLast = 1999;

// One entry of capability_params, as far as the checks need it.
struct CapabilityParamEntry {
  uint32_t capability = 0;
  size_t params_bytes = 0;
};

// AOBJ-EXT-015: INVALID_ARGUMENT for more than kMaxCapabilityParams entries, params above
// kMaxCapabilityParamBytes, or two entries for one capability. Nothing else is looked at: no
// capability of AOBJ/1 has parameters, so every entry is then ignored (AOBJ-EXT-018).
absl::Status CheckCapabilityParams(const std::vector<CapabilityParamEntry>& entries);

// AOBJ-EXT-017: a grease field number (AOBJ-EXT-016) and 1 to 16 grease octets, at random.
uint32_t RandomGreaseField();
std::string RandomGreaseOctets();

// AOBJ-SES-005: the client's known capabilities that the server also has, ascending, without
// duplicates; grease and unknown values are ignored.
std::vector<uint32_t> IntersectCapabilities(const std::vector<uint32_t>& offered,
                                            const std::vector<uint32_t>& supported);

// AOBJ-SES-006: each effective limit is the server's, or the client's when non-zero and smaller.
SessionLimits EffectiveLimits(const SessionLimits& server, const SessionLimits& requested);

// Credits (spec section 10): every data reply may grant the data requests the session may have
// in progress once it has arrived, in field 15 of each of the five data replies.
inline constexpr uint32_t kCreditsField = 15;

// AOBJ-FLO-008, AOBJ-FLO-009 (the reference server's grant): the whole max_in_flight while the
// requests waiting for a request thread fill at most half of what may wait (`pressure`, 0 to 1:
// the fullest of the server's queue and the principal's), then fewer in proportion, down to 1
// when it is full. Never 0 and never above max_in_flight (at least 1 when that is 0).
uint32_t GrantCredits(uint32_t max_in_flight, double pressure);

// AOBJ-FLO-010 (the client's side): the data requests it may have in progress after a reply
// granting `credits`: max_in_flight for 0 (no grant), else `credits`, at least 1 and at most
// max_in_flight.
uint32_t CreditsFromReply(uint32_t credits, uint32_t max_in_flight);

// Appends `credits` as field kCreditsField to a serialized data reply: the field is the same in
// all five, so the server grants in one place whatever the reply's type.
void AppendCredits(std::string* serialized_reply, uint32_t credits);

}  // namespace aobj

#endif  // AOBJ_WIRE_PROTOCOL_H_
