#include "transport/ucx_context.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"

namespace aobj {

std::string UcxStatusString(ucs_status_t status) {
  return absl::StrCat(ucs_status_string(status), " (", static_cast<int>(status), ")");
}

absl::StatusOr<std::unique_ptr<UcxContext>> UcxContext::Create(const TransportOptions& options) {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) {
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("ucp_config_read: ", UcxStatusString(st)));
  }
  // The environment wins over our defaults, so operators can still steer UCX.
  // AOBJ-OPS-006: restricted to the configured devices (loopback by default).
  if (std::getenv("UCX_NET_DEVICES") == nullptr && !options.net_devices.empty()) {
    st = ucp_config_modify(config, "NET_DEVICES", options.net_devices.c_str());
    if (st != UCS_OK) {
      ucp_config_release(config);
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("UCX NET_DEVICES=", options.net_devices, ": ",
                                    UcxStatusString(st)));
    }
  }
  if (std::getenv("UCX_TLS") == nullptr && !options.transports.empty()) {
    st = ucp_config_modify(config, "TLS", options.transports.c_str());
    if (st != UCS_OK) {
      ucp_config_release(config);
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("UCX TLS=", options.transports, ": ", UcxStatusString(st)));
    }
  }

  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;  // AOBJ-TRN-006
  params.mt_workers_shared = 0;  // each worker is owned by one progress thread
  ucp_context_h context = nullptr;
  st = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (st != UCS_OK) {
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("ucp_init: ", UcxStatusString(st)));
  }
  return std::unique_ptr<UcxContext>(new UcxContext(context));
}

UcxContext::~UcxContext() { ucp_cleanup(context_); }

}  // namespace aobj
