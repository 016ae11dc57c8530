// The server's gRPC edge: aobj.v1.ObjectService with a raw handler for every method, so that
// the signature is checked over exactly the octets the client sent (AOBJ-AUTH-002). A call's
// message is read only after its authentication metadata names a known access key
// (AOBJ-SEC-012), in one of a few read slots given out in turn between keys (AOBJ-SEC-018); the
// request then goes to the RequestScheduler, and RequestHandler answers it. Connections whose
// streams are mostly reset by their client are cut (AOBJ-SEC-019).
//
// Threading: gRPC's callback threads; the methods below are thread-safe.
#ifndef AOBJ_SERVER_CONTROL_SERVICE_H_
#define AOBJ_SERVER_CONTROL_SERVICE_H_

#include <cstddef>
#include <memory>

#include "absl/time/time.h"
#include "aobj/v1/aobj.grpc.pb.h"

namespace aobj {

class Authenticator;
class ControlListener;
class RequestHandler;
class RequestScheduler;

class ControlService : public aobj::v1::ObjectService::Service {
 public:
  struct ReadBounds {
    size_t max_total = 1024;
    size_t max_per_key = 128;
    // AOBJ-SEC-029: calls the guard marked late that wait for their message without a slot, in
    // all; past it, the oldest of the key with the most is ended. The server sets it above what
    // unverified connections can hold at once. A key's own (proven) ones: at most max_per_key.
    size_t max_late = 2304;
    absl::Duration deadline = absl::Seconds(20);
    // Messages read at once (each up to 8 MiB in gRPC's memory quota); the other calls wait
    // with only their flow-control window buffered.
    size_t slots = 8;
    // Octets of successful replies of one access key that gRPC holds for clients that have not
    // taken them (the call not done); past it, the key's new requests are refused SLOW_DOWN
    // before they run (AOBJ-SEC-025: a client that never opens its flow-control window keeps
    // every reply in the server's memory).
    uint64_t reply_bytes_per_key = 32 << 20;
    // AOBJ-SEC-029: the secret the HTTP/2 guard marks calls whose message it holds whole with
    // (kGuardWholeHeader); such a call is read at once, without waiting for a slot. Empty: no
    // call is believed whole (no guard in front).
    std::string whole_mark;
  };

  // `handler`, `auth` and `scheduler` are borrowed and must outlive the service.
  static std::unique_ptr<ControlService> Create(RequestHandler* handler, const Authenticator* auth,
                                                RequestScheduler* scheduler,
                                                ReadBounds read_bounds);

  // Requests that succeed mark their connection authenticated there (see ControlListener).
  virtual void set_listener(ControlListener* listener) = 0;
  // AOBJ-SEC-018: ends the reads that held a slot past their bound; called periodically.
  virtual void CutSlowReads(absl::Time now) = 0;
  // AOBJ-SEC-029: the message of the call the guard marked late with `token` (kGuardLateHeader)
  // has come: that call is read at once, as a call marked whole is. Any thread.
  virtual void MessageArrived(uint64_t token) = 0;
  // AOBJ-SEC-029: the call marked late with `token` sent so much of its message without its end
  // that the rest waits for the server to read it: it waits for a read slot from now, as an
  // unmarked call does. Any thread.
  virtual void MessageLarge(uint64_t token) = 0;
};

}  // namespace aobj

#endif  // AOBJ_SERVER_CONTROL_SERVICE_H_
