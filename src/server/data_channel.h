// The server's view of the data channel: what request handling needs from UCX, behind an
// interface so that fuzzers and fault tests can substitute a deterministic channel
// (the leveldb `Env` pattern). The production implementation is UcxDataChannel.
//
// Threading: implementations are thread-safe.
#ifndef AOBJ_SERVER_DATA_CHANNEL_H_
#define AOBJ_SERVER_DATA_CHANNEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "transport/peer_rma_guard.h"
#include "transport/ucx_worker.h"

namespace aobj {

class DataChannel {
 public:
  virtual ~DataChannel() = default;
  virtual absl::StatusOr<uint64_t> Connect(absl::string_view peer_address) = 0;
  // Connect() for a session of `principal` (its access key ID): a confined channel runs the
  // endpoint in that principal's data-channel process (NewConfinedDataChannel).
  virtual absl::StatusOr<uint64_t> ConnectFor(absl::string_view peer_address,
                                              absl::string_view principal) {
    (void)principal;
    return Connect(peer_address);
  }
  virtual absl::StatusOr<Protection> GetProtection(uint64_t endpoint) = 0;
  // For spreading one principal's sessions over channels (NewShardedDataChannel): whether this
  // channel already runs a process of `principal`, and whether it runs half the processes it
  // may or more (a new process of a principal that has one elsewhere would then take the room
  // of principals that have none). In-process channels run no processes: both false.
  struct Placement {
    bool holds = false;
    bool crowded = false;
  };
  virtual Placement PlacementFor(absl::string_view principal) {
    (void)principal;
    return {};
  }
  // Endpoint binding (spec 5.6): sends the endpoint's challenges to the peer by active message
  // and returns them concatenated (AOBJ-SES-025); Bind() allows RMA once the proof over them was
  // verified (AOBJ-SES-026). Until then Execute fails ENDPOINT_UNCONFIRMED (AOBJ-SES-027).
  virtual absl::StatusOr<std::string> SendChallenges(uint64_t endpoint,
                                                     absl::string_view session_id) = 0;
  virtual absl::Status Bind(uint64_t endpoint) = 0;
  virtual void Disconnect(uint64_t endpoint) = 0;
  // See UcxWorker::Execute: checks, RMA, flush for writes; returns when UCX no longer touches
  // the local memory named by the batch.
  virtual absl::Status Execute(uint64_t endpoint, const RmaBatch& batch) = 0;
  // The same, with `abandoned` polled while it waits (true once the call's client cancelled or
  // went away): the batch then ends within a short grace, failing the endpoint if it must
  // (AOBJ-DAT-157). Implementations without a bound of their own run Execute().
  virtual absl::Status ExecuteWatched(uint64_t endpoint, const RmaBatch& batch,
                                      const std::function<bool()>& abandoned) {
    (void)abandoned;
    return Execute(endpoint, batch);
  }
  virtual size_t endpoint_count() = 0;
  virtual uint64_t rkeys_outstanding() = 0;
  // Peer-initiated RMA requests refused (AOBJ-SEC-020), in every process of the channel.
  virtual PeerRmaRefusals peer_rma_refused() { return PeerRmaRefused(); }
  // Endpoints failed (Table 4), in every live process of the channel.
  virtual uint64_t data_channels_failed() = 0;
  // Shutting down (AOBJ-OPS-009): batches end within `grace` (UcxWorker::BeginShutdown).
  virtual void BeginShutdown(absl::Duration grace) { (void)grace; }

  // The fast request path (spec section 8.9). Where fast requests go: the frame (borrowed for
  // the call), the access key whose data-channel process delivered it ("" when any principal's
  // endpoint may, in process), and whether more of the stream it came on was already waiting
  // behind it (false where the channel cannot tell). Called on a transport thread; must not block.
  using FastRequestSink =
      std::function<void(absl::string_view frame, absl::string_view principal, bool more_behind)>;
  // Starts the path: from now on fast requests that reach the channel go to `sink`. Once, before
  // sessions open. UNIMPLEMENTED when this channel has no such path.
  virtual absl::Status StartFastPath(FastRequestSink sink) {
    (void)sink;
    return absl::UnimplementedError("this data channel has no fast request path");
  }
  // The worker address a session's client sends its fast requests to: the worker that holds
  // `endpoint` (its shared-memory lane's when it has one). Empty when the path is not started.
  virtual std::string FastPathAddress(uint64_t endpoint) {
    (void)endpoint;
    return "";
  }
  // Queues a reply frame on the session's endpoint without waiting; it is dropped when the
  // endpoint is gone, failed or not confirmed (AOBJ-DAT-168).
  virtual void SendFastReply(uint64_t endpoint, std::string frame) {
    (void)endpoint;
    (void)frame;
  }
  // Fast-path messages the channel dropped rather than deliver (see SendFastReply).
  virtual uint64_t fast_messages_dropped() { return 0; }
};

// How long one batch may wait: `wait_bound` plus its octets at 50 MB/s, the slowest rate a
// working lane is assumed to reach (AOBJ-OPS-008).
absl::Duration BatchWaitBound(absl::Duration wait_bound, const RmaBatch& batch);

// A DataChannel over one UcxWorker; `worker` must outlive it. Each batch may wait at most
// `wait_bound` plus its octets at 50 MB/s, the slowest rate a working lane is assumed to reach
// (AOBJ-OPS-008); past that its endpoint is failed.
std::unique_ptr<DataChannel> NewUcxDataChannel(UcxWorker* worker,
                                               absl::Duration wait_bound = absl::Seconds(10));

// Several channels behind one, so that the server moves data on as many UCX workers (and, when
// confined, processes per principal) as it has cores for (ServerOptions::data_workers). Each
// endpoint lives in the shard that held the fewest live endpoints when it connected, and every
// later call for it goes there (a shard that answers SLOW_DOWN, full, passes it to the next
// emptiest); but a principal's session goes to a shard that runs half its processes or more
// only when that shard already runs the principal's, or no other shard can take it
// (PlacementFor), so that one principal's processes on several shards do not leave the room of
// principals with none; endpoint IDs carry the shard's index in their top 8 bits. The
// fast path starts on every shard, and a session's fast-path address is its shard's. Counters
// are summed, except the peer-RMA refusals of in-process shards, which all read one process-wide
// count (`refusals_process_wide`). 1 to 64 shards; one is returned as it is.
std::unique_ptr<DataChannel> NewShardedDataChannel(std::vector<std::unique_ptr<DataChannel>> shards,
                                                   bool refusals_process_wide);

}  // namespace aobj

#endif  // AOBJ_SERVER_DATA_CHANNEL_H_
