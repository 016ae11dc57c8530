// The control channel's TCP listener, in front of gRPC (issue 16, control-plane probe finding 1).
//
// gRPC 1.51's own listener stops accepting for good once accept4() fails with EMFILE: anyone who
// could open enough idle connections killed the control channel until a restart. This listener
// accepts on its own thread and hands each connection to gRPC through an
// ExternalConnectionAcceptor, so that:
//   * a connection that would leave fewer than `reserve_fds` descriptors free is closed at once
//     (the descriptors the server needs for its store, sessions and transports stay available);
//   * when accept4() fails with EMFILE or ENFILE anyway, a spare descriptor is released to
//     accept and close the pending connection, and accepting goes on;
//   * one peer address holds at most `max_per_address` connections (0: no limit); further ones
//     from it are closed at once (AOBJ-SEC-012). On one host every local process shares an
//     address, so this bounds remote peers, not local ones. An "address" is an IPv4 address
//     (an IPv4-mapped IPv6 one included) or an IPv6 /64 (PeerGroup);
//   * when descriptors run short, or an address is at its limit, a connection is cut (through the
//     guard, which owns it, or by shutdown()) to make room: the oldest that has not carried a
//     request whose signature verified (MarkAuthenticated) within a second of its accept (with
//     TLS, of the end of its handshake), else (for an address at its limit) the oldest
//     unauthenticated one of the address however young, else the oldest of the principal that
//     holds the most connections; so that neither a flood of connections that never
//     authenticate (idle after the HTTP/2 preface, or holding a call they never finish: hostile
//     probe N3; opened and held for less than the second: seventh probe F3) nor one tenant's
//     held connections can keep new clients out. A connection whose ClientHello waits for the
//     guard's handshake thread waits for the server, not its client, and is never cut for
//     room (the guard's handshake timeout bounds it);
//   * connections that have not carried a verified request, from all addresses together, are
//     at most `max_unauthenticated` and three quarters of what the descriptors leave room for;
//     past that one of them is cut for a new connection as above (never an authenticated one),
//     the oldest of all however young when none is past its grace and no address is busy
//     enough to be the one to lose it, else the new one is closed (eighth hostile probe N1: idle
//     connections from 59 addresses, each below its own limit, took every descriptor and refused
//     clients of any address);
//   * one principal's authenticated connections are at most `max_per_principal` and a quarter of
//     what the descriptors leave room for; past that its oldest is cut (ninth hostile probe P1:
//     one tenant's 6,700 signed connections from 7 addresses took every descriptor, and every
//     other tenant's OpenSession failed for want of them);
//   * it never stops accepting while it runs.
// gRPC's handshake and idle timeouts (set by the server) end connections that never become, or
// stop being, useful.
//
// Threading: Create() and Stop() from one thread; the accept loop runs on its own thread.
// Ownership: `acceptor` is owned; the gRPC server it belongs to must outlive Stop().
#ifndef AOBJ_SERVER_LISTENER_H_
#define AOBJ_SERVER_LISTENER_H_

#include <sys/socket.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/server_builder.h"

namespace aobj {

class H2Guard;

struct ListenerStats {
  uint64_t accepted = 0;
  uint64_t refused = 0;  // closed at once: descriptors short (EMFILE, ENFILE or the reserve)
                         // or the address at its limit
  uint64_t refused_per_address = 0;  // of those, for the address's limit
  uint64_t refused_unauthenticated = 0;  // of those, for the bound on unauthenticated ones
  uint64_t evicted = 0;              // unauthenticated connections cut to make room
  uint64_t cut_for_abuse = 0;        // connections cut on request (CutConnection)
  uint64_t cut_for_principal = 0;    // a principal's oldest, past its bound
};

// What the listener counts a peer's connections under, as raw octets: an IPv4 address (an
// IPv4-mapped IPv6 one as that IPv4 address), else an IPv6 address's /64; "" for other families.
std::string PeerGroup(const sockaddr_storage& peer);

class ControlListener {
 public:
  // Binds and listens on `address` ("HOST:PORT", port 0 for any; IPv6 hosts in brackets).
  // Accepting starts with Start().
  static absl::StatusOr<std::unique_ptr<ControlListener>> Bind(absl::string_view address,
                                                               int reserve_fds,
                                                               size_t max_per_address = 0,
                                                               size_t max_unauthenticated = 0,
                                                               size_t max_per_principal = 0);
  ~ControlListener();
  ControlListener(const ControlListener&) = delete;
  ControlListener& operator=(const ControlListener&) = delete;

  int port() const { return port_; }
  // Hands every accepted connection to `acceptor` (after grpc::Server started), through
  // `guard` when there is one (which then owns the connection and gives gRPC its relay).
  void Start(std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor,
             H2Guard* guard = nullptr);
  // Stops accepting and closes the listening socket; connections already handed over stay
  // gRPC's.
  void Stop();
  ListenerStats stats() const {
    return {accepted_.load(),
            refused_.load(),
            per_address_refused_.load(),
            unauthenticated_refused_.load(),
            evicted_.load(),
            cut_for_abuse_.load(),
            cut_for_principal_.load()};
  }
  // The connection of `peer` (grpc::ServerContext::peer(): "ipv4:ADDR:PORT", "ipv6:[ADDR]:PORT")
  // carried a request of `principal` whose signature verified: it is cut to make room only
  // after every unauthenticated one, and only if that principal holds the most. Thread-safe.
  void MarkAuthenticated(const std::string& peer, const std::string& principal);
  // The principal whose verified request the connection of `peer` carried last; empty when none.
  std::string AuthenticatedAs(const std::string& peer);
  // Cuts the connection of `peer` (as above) soon, on the accept thread: for a connection that
  // abuses HTTP/2 (streams reset as fast as they are opened, Service). Thread-safe.
  void CutConnection(const std::string& peer);

 private:
  ControlListener(int fd, int port, int reserve_fds, size_t max_per_address,
                  size_t max_unauthenticated, size_t max_per_principal);
  void Loop();
  void Refuse(int fd);
  // Records `conn` for `address` unless the address holds max_per_address_ connections and
  // none of them can be cut.
  bool Admit(const std::string& address, int conn);
  // Cuts one connection to make room (see above), among those of the address `group`
  // (PeerGroup(); "" = all), unauthenticated ones within their grace too if `young_too`, and the
  // heaviest principal's authenticated ones if `principals_too`; false when none may be cut.
  bool EvictOne(const std::string& group = "", bool young_too = false, bool principals_too = true);
  // With descriptors short (the new connection's highest descriptor is `highest`, the limit
  // `limit`): whether the connection from the address `group` may stay, having cut another to make
  // room (EvictOne(), else the oldest unauthenticated connection, however young, of the address
  // other than its own that holds the most), so that a churn from other addresses cannot keep a
  // client out. Loop thread.
  bool MakeRoom(const std::string& group, int highest, long limit);
  struct Conn;
  // Whether `conn` waits for the server (its ClientHello unread by the guard's handshake
  // thread) rather than its client; `*client_since`: since when its client has had its turn
  // (its accept, or with TLS the end of its handshake). Loop thread.
  bool AwaitsServer(const Conn& conn, int64_t* client_since);
  // Drops the mark of `peer`. Requires auth_mu_.
  void Forget(const std::string& peer) ABSL_EXCLUSIVE_LOCKS_REQUIRED(auth_mu_);
  // Forgets connections that gRPC closed (and their authenticated marks).
  void PruneAll();
  // Loop thread: carries out CutConnection requests.
  void CutRequested();

  const int fd_;
  const int port_;
  const int reserve_fds_;
  const size_t max_per_address_;
  const size_t max_unauthenticated_;  // 0: three quarters of the descriptors' room only
  const size_t max_per_principal_;    // 0: a quarter of the descriptors' room only
  // The bound in force on one principal's connections (set when the loop starts; 0 until).
  std::atomic<size_t> principal_cap_{0};

  // With unauthenticated connections at their bound: cuts one of them (the oldest past its
  // grace, else, for a newcomer from a quiet address, the busiest other address's oldest, else
  // the oldest of all) for a connection from the address `group`; false when none may be cut.
  // Loop thread.
  bool MakeRoomForUnauthenticated(const std::string& group);
  // Unauthenticated connections held (conns_ without a mark), after a prune at most every 50 ms
  // if `prune`.
  size_t Unauthenticated(bool prune = true);
  // The address other than `own` that holds the most unauthenticated connections (group and
  // count; "" when none), and whether `own` is quiet beside it (holds less than half as many,
  // and the other at least kMinBusy).
  static constexpr int kMinBusy = 8;
  std::pair<std::string, int> BusiestOther(const std::string& own, bool* quiet);
  // Loop thread only: per peer address, the connections handed to gRPC and not yet seen closed.
  struct Held {
    int fd;
    std::pair<dev_t, ino_t> file;  // the socket's device and inode
  };
  absl::flat_hash_map<std::string, std::vector<Held>> by_address_;
  // Loop thread only: every connection handed over, in acceptance order, with its peer key
  // ("ADDR|PORT") and address group; closed ones are dropped lazily.
  struct Conn {
    int fd;
    std::pair<dev_t, ino_t> file;
    std::string peer;
    std::string group;  // PeerGroup()
    int64_t accepted_ms;
    uint64_t token = 0;  // the guard's, when it relays the connection
  };
  // Ends `conn` (gRPC sees its end and closes it): through the guard when it holds the client's
  // descriptor, else by shutdown(). Loop thread.
  void Shut(const Conn& conn);
  std::deque<Conn> conns_;
  // Loop thread: the unauthenticated connections of conns_ per address (PeerGroup), and
  // the two addresses that held the most, when last counted (BusiestOther).
  absl::flat_hash_map<std::string, int> unauthenticated_per_group_;
  std::pair<std::string, int> busiest_[2];
  int64_t busiest_at_ms_ = 0;
  int64_t counted_at_ms_ = 0;  // when Unauthenticated() last pruned
  uint64_t since_prune_ = 0;
  absl::Mutex auth_mu_;
  // Peer key -> the principal whose signed request it carried; connections per principal.
  absl::flat_hash_map<std::string, std::string> authenticated_ ABSL_GUARDED_BY(auth_mu_);
  absl::flat_hash_map<std::string, int> per_principal_ ABSL_GUARDED_BY(auth_mu_);
  absl::Mutex cut_mu_;
  std::vector<std::string> cut_requests_ ABSL_GUARDED_BY(cut_mu_);  // peer keys
  // Principals past principal_cap_, for the loop thread to cut their oldest (CutRequested).
  std::vector<std::string> principals_over_ ABSL_GUARDED_BY(cut_mu_);
  int spare_fd_ = -1;  // released to accept-and-close when descriptors run out
  int wake_[2] = {-1, -1};
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
  H2Guard* guard_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> accepted_{0}, refused_{0}, per_address_refused_{0},
      unauthenticated_refused_{0}, evicted_{0}, cut_for_abuse_{0}, cut_for_principal_{0};
};

}  // namespace aobj

#endif  // AOBJ_SERVER_LISTENER_H_
