// Memory protection from a UCX endpoint's lanes (lane_protection.h).
#include "transport/lane_protection.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/match.h"

namespace aobj {

std::vector<std::string> LaneTransports(absl::string_view ep_info) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = ep_info.find("lane[", at)) != absl::string_view::npos) {
    at += 5;
    std::string name;
    // "lane[N]: IDX:TL/DEV": past "]:", spaces, the resource index and its ':'.
    size_t p = ep_info.find("]:", at);
    const size_t line_end = std::min(ep_info.find('\n', at), ep_info.size());
    if (p != absl::string_view::npos && p < line_end) {
      p += 2;
      while (p < line_end && ep_info[p] == ' ') ++p;
      const size_t digits = p;
      while (p < line_end && std::isdigit(static_cast<unsigned char>(ep_info[p]))) ++p;
      if (p > digits && p < line_end && ep_info[p] == ':') {
        const size_t slash = ep_info.find('/', p + 1);
        if (slash != absl::string_view::npos && slash < line_end && slash > p + 1) {
          name = std::string(ep_info.substr(p + 1, slash - p - 1));
        }
      }
    }
    out.push_back(std::move(name));
  }
  return out;
}

bool LanesEnforceRemoteKeys(absl::string_view ep_info) {
  if (absl::StrContains(ep_info, "rma_am")) return false;  // RMA emulated over active messages
  const std::vector<std::string> lanes = LaneTransports(ep_info);
  if (lanes.empty()) return false;
  for (const std::string& tl : lanes) {
    const bool listed = std::any_of(std::begin(kHardwareTransports), std::end(kHardwareTransports),
                                    [&](const char* h) { return tl == h; });
    if (!listed) return false;  // unknown or software: fail closed (AOBJ-SEC-002)
  }
  return true;
}

}  // namespace aobj
