// Sessions over several aobj-server gateways of one store (spec 5.11, AOBJ-SES-033): one
// session per gateway, requests spread over them by lane, and an explicit failover when a
// gateway cannot be reached or is lost: the lanes of that gateway move to the next one that
// answers, and `notice` says so in a line (never silently). Which gateway served how many
// transfers is counted (ServedByGateway). The `aobj` CLI spreads cp, mv and sync this way.
//
//   aobj::ClientOptions o = ...;
//   auto gw = aobj::Gateways::Connect(o, {"10.0.0.1:7070", "10.0.0.2:7070"}, 8,
//                                     [](const std::string& line) { std::cerr << line << "\n"; });
//   uint64_t generation;
//   aobj::Client& c = (*gw)->ForLane(worker_index, &generation);
//   absl::StatusOr<aobj::TransferResult> r = c.Get(bucket, key, *buffer);
//   if (!r.ok() && aobj::SessionLost(r.status())) (*gw)->Renew(generation);  // then try again
//
// Buffers belong to one session (Client::AllocateBuffer): a worker that moves to another
// gateway allocates or registers its buffers again with the new Client.
#ifndef AOBJ_GATEWAYS_H_
#define AOBJ_GATEWAYS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "aobj/client.h"

namespace aobj {

// Whether a failure lost the session itself, so that a new one is needed before trying again:
// the control connection failed, the server forgot or expired the session, or its data channel
// is shut (spec 7.5: after a deadline or a failed transfer the session's later data requests
// fail). An error the server answered about the request itself (NoSuchKey, AccessDenied,
// SlowDown ...) is not.
bool SessionLost(const absl::Status& status);

// The gateways to spread over: `configured` in order, then those a server listed
// (SessionInfo::gateways) that are not among them; empty entries dropped; at most `limit`.
std::vector<std::string> GatewayList(const std::vector<std::string>& configured,
                                     const std::vector<std::string>& listed, size_t limit);

class Gateways {
 public:
  // Opens a session on the first of `endpoints` that answers (`options.endpoint` is not used),
  // then spreads over `endpoints` and the gateways that server lists, at most `max_gateways`
  // (GatewayList). An endpoint passed over is reported through `notice`. Fails with the last
  // endpoint's error when none answers, or INVALID_ARGUMENT for an empty list.
  static absl::StatusOr<std::unique_ptr<Gateways>> Connect(
      const ClientOptions& options, const std::vector<std::string>& endpoints,
      size_t max_gateways = 64, std::function<void(const std::string&)> notice = nullptr);

  // `first` is open on gateways[0] (options.endpoint when `gateways` is empty). `notice` gets
  // one line per change of gateway, on the thread that caused it, with no lock of this object
  // held (it may call back into it); it may be empty. Opening a session on a gateway that does
  // not answer takes up to ClientOptions::timeout_ms, during which other lanes wait to be
  // placed.
  Gateways(ClientOptions options, std::unique_ptr<Client> first,
           std::vector<std::string> gateways = {},
           std::function<void(const std::string&)> notice = nullptr);
  ~Gateways();
  Gateways(const Gateways&) = delete;
  Gateways& operator=(const Gateways&) = delete;

  // The gateways spread over, in order.
  const std::vector<std::string>& gateways() const;

  // The current session of lane 0; *generation (may be null) tells it from its successors.
  Client& Current(uint64_t* generation) { return ForLane(0, generation); }
  // The current session of worker `lane`, on gateway lane % gateways().size() (opened on first
  // use). A gateway that cannot be reached hands its lanes to the next one that answers, with a
  // notice; when none answers, the lane shares lane 0's session, whose failures then say why.
  Client& ForLane(size_t lane, uint64_t* generation);
  // Opens a new session in place of generation `seen` (on its gateway, else on the next one
  // that answers, with a notice), unless another thread already replaced it. Returns why none
  // could be opened. Call it after a failure for which SessionLost() holds.
  absl::Status Renew(uint64_t seen);
  // The session of `generation` (which may have been replaced since). Every session stays open
  // until this object goes, for the threads still using it.
  Client& At(uint64_t generation);
  // The gateway the session of `generation` is on.
  std::string GatewayOf(uint64_t generation) const;
  // How many sessions Renew replaced.
  uint64_t renewals() const;
  // Counts a transfer done through the session of `generation`.
  void Served(uint64_t generation);
  // Transfers done through each gateway that did any, in the order of gateways().
  std::vector<std::pair<std::string, uint64_t>> ServedByGateway() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace aobj

#endif  // AOBJ_GATEWAYS_H_
