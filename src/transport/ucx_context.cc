#include "transport/ucx_context.h"

#include <cstdlib>
#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "aobj/status.h"
#include "transport/peer_rma_guard.h"

namespace aobj {

std::string UcxStatusString(ucs_status_t status) {
  return absl::StrCat(ucs_status_string(status), " (", static_cast<int>(status), ")");
}

namespace {

// Whether the transport list in force (UCX_TLS, else the configured list) admits a transport
// named by one of `names`: a comma list, "^" excludes, "all" (or an empty list) includes all.
bool Admits(const TransportOptions& options, std::initializer_list<absl::string_view> names) {
  const char* env = std::getenv("UCX_TLS");
  const std::string tls = env != nullptr ? env : options.transports;
  if (tls.empty()) return true;
  const bool exclude = tls[0] == '^';
  bool named = false;
  for (absl::string_view t : absl::StrSplit(exclude ? tls.substr(1) : tls, ',')) {
    if (t == "all") named = true;
    for (absl::string_view n : names) named = named || t == n;
  }
  return exclude != named;
}

}  // namespace

absl::StatusOr<std::unique_ptr<UcxContext>> UcxContext::Create(const TransportOptions& options,
                                                               const char* alloc_prio) {
  return Make(options, nullptr, alloc_prio, false);
}

absl::StatusOr<std::unique_ptr<UcxContext>> UcxContext::CreateForServer(
    const TransportOptions& options) {
  return Make(options, nullptr, nullptr, true);
}

absl::StatusOr<std::unique_ptr<UcxContext>> UcxContext::CreateSharedMemoryLane(
    const TransportOptions& options) {
  // The lane exists only where the operator's transport list admits System V shared memory.
  if (!Admits(options, {"sysv", "shm", "sm"})) return std::unique_ptr<UcxContext>();
  return Make(options, "sysv", nullptr, true);
}

absl::StatusOr<std::unique_ptr<UcxContext>> UcxContext::Make(const TransportOptions& options,
                                                             const char* forced_tls,
                                                             const char* alloc_prio,
                                                             bool serves_peers) {
  // The handlers a server worker replaces are read when a worker is created, so the replacement
  // precedes the first worker of any context of this process (transport/peer_rma_guard.h).
  // Where it cannot be done, server workers say so when they are created.
  RefusePeerRma(nullptr).IgnoreError();
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
  const std::string tls = forced_tls != nullptr ? forced_tls
                         : std::getenv("UCX_TLS") == nullptr ? options.transports : "";
  if (!tls.empty()) {
    st = ucp_config_modify(config, "TLS", tls.c_str());
    if (st != UCS_OK) {
      ucp_config_release(config);
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("UCX TLS=", tls, ": ", UcxStatusString(st)));
    }
  }
  // AOBJ-SEC-020: the tcp transport's put request copies to whatever address it names and
  // cannot be refused; without the capability a peer's UCP sends its puts as software RMA.
  if (serves_peers && forced_tls == nullptr && std::getenv("UCX_TCP_PUT_ENABLE") == nullptr &&
      Admits(options, {"tcp"})) {
    st = ucp_config_modify(config, "PUT_ENABLE", "n");
    if (st != UCS_OK) {
      ucp_config_release(config);
      return MakeError(ErrorCode::kDataChannelUnavailable,
                       absl::StrCat("UCX TCP_PUT_ENABLE=n: ", UcxStatusString(st)));
    }
  }
  if (alloc_prio != nullptr && std::getenv("UCX_ALLOC_PRIO") == nullptr) {
    st = ucp_config_modify(config, "ALLOC_PRIO", alloc_prio);
    if (st != UCS_OK) {
      ucp_config_release(config);
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("UCX ALLOC_PRIO=", alloc_prio, ": ", UcxStatusString(st)));
    }
  }
  // UCX_PROTO_INDIRECT_ID stays "auto": endpoints in mode PEER (the ones a bound force-closes)
  // get request ids that index a table, so a reply that arrives after its request ended is
  // dropped; mode-NONE requests stay untracked, which UcxWorker relies on when it destroys an
  // emulation worker with requests outstanding (UCX 1.13.1 asserts on tracked ones).
  // AOBJ-TRN-011: a dead peer on a network lane is found by keepalive within this interval.
  if (std::getenv("UCX_KEEPALIVE_INTERVAL") == nullptr && options.keepalive_ms > 0) {
    const std::string v = absl::StrCat(options.keepalive_ms, "ms");
    (void)ucp_config_modify(config, "KEEPALIVE_INTERVAL", v.c_str());
  }

  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  // spec 13.1 (implementation note); active messages carry the endpoint challenge (AOBJ-SES-025).
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;  // each worker is owned by one progress thread
  ucp_context_h context = nullptr;
  st = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (st != UCS_OK) {
    return MakeError(ErrorCode::kDataChannelUnavailable,
                     absl::StrCat("ucp_init: ", UcxStatusString(st)));
  }
  return std::unique_ptr<UcxContext>(new UcxContext(context, serves_peers));
}

UcxContext::~UcxContext() { ucp_cleanup(context_); }

}  // namespace aobj
