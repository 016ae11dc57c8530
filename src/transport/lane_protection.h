// Memory protection of a UCX endpoint, from the lanes UCX chose for it (spec section 13.4,
// AOBJ-TRN-015; spec review D10). UCX has no call that says whether a lane enforces remote
// keys in hardware, so the classification is an allow-list of transport names: a session is
// HARDWARE only when every lane of its endpoints is an InfiniBand verbs transport (whose RMA the
// RNIC checks against the R_Key) and no RMA is emulated over active messages. Anything else,
// including a transport this list does not know (cuda_ipc, rocm_ipc, a future one), is
// EMULATED: the classification fails closed (AOBJ-SEC-002).
// Pure functions; thread-safe.
#ifndef AOBJ_TRANSPORT_LANE_PROTECTION_H_
#define AOBJ_TRANSPORT_LANE_PROTECTION_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace aobj {

// The transports whose every lane counts as HARDWARE (spec section 13.4, AOBJ-TRN-015): the verbs
// RC and DC transports, and the UD ones, which carry no RMA.
inline constexpr const char* kHardwareTransports[] = {"rc_verbs", "rc_mlx5", "dc_mlx5", "ud_verbs",
                                                      "ud_mlx5"};

// The transport name of every "lane[N]: IDX:TL/DEV ..." line of `ucp_ep_print_info` output, in
// order; a lane line that does not have that form yields an empty name.
std::vector<std::string> LaneTransports(absl::string_view ep_info);

// True when `ep_info` names at least one lane, every lane's transport is in
// kHardwareTransports, and nothing in it says RMA is emulated ("rma_am").
bool LanesEnforceRemoteKeys(absl::string_view ep_info);

}  // namespace aobj

#endif  // AOBJ_TRANSPORT_LANE_PROTECTION_H_
