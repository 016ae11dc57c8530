// The control channel's HTTP/2 guard: a relay between each accepted connection and gRPC that
// reads the HTTP/2 frames before gRPC does (issue 16, HTTP/2 Rapid Reset, AOBJ-SEC-019).
//
// gRPC 1.51 predates the transport-level mitigation of Rapid Reset (CVE-2023-44487): a client
// that opens streams and resets them at once costs a few dozen octets a stream, frees its stream
// limit at once, and makes gRPC create a server call for each, faster than they are finished.
// Cutting the connection from the server's call handlers (once their cancellations are seen)
// came too late: what gRPC had already read was still worked off, and reconnecting attackers
// grew the server by hundreds of megabytes a second. The guard sits in front instead:
//   * it terminates TLS itself (OpenSSL; the same certificate, key and client CA that gRPC was
//     given, ALPN "h2") and hands gRPC the plaintext over a Unix socket pair, so it sees every
//     frame header before gRPC does;
//   * it counts, per connection, the streams the client opened that the server has not finished
//     (its HEADERS or RST_STREAM with END_STREAM, in the other direction), the ones the client
//     reset before the server finished them, and the ones the server finished;
//   * a connection whose client has reset `resets_to_cut` streams prematurely, more than four
//     times as many as the server finished, is closed before the frame that crosses the line
//     reaches gRPC; so gRPC sees at most that many reset streams from one connection;
//   * each such cut halves the budget of the next connections from the same address (down to
//     `min_resets_to_cut`), for a minute after the last cut: reconnecting does not renew it;
//   * a client that keeps more streams open than `max_open_streams` (the server allows 256 at a
//     time; gRPC 1.51 enforces it only once the client acknowledged its SETTINGS, so a client
//     that never does and never reads its answers grew the server by 3.5 GB in 10 s) is closed
//     as well (a strike too: for the next connections that have not acknowledged the
//     server's SETTINGS yet the bound halves, down to 64), and so is one that
//     sends a header block above 64 KiB (an endless run of CONTINUATION frames, which gRPC 1.51
//     keeps in memory) or more than 32 PING or SETTINGS frames without waiting for their
//     acknowledgements (which gRPC queues);
//   * a connection that has not carried a verified request (MarkVerified) has at most 8 calls
//     under way, its address 32 and all such connections 256 (H2Admission; a connection's first
//     call passes the last two): the HEADERS of one more is not passed on (nor the frames of
//     the calls after it; those of the calls under way are) until the server ends one (AOBJ-SEC-026
//     to AOBJ-SEC-028; eleventh hostile probe N1: tiny calls answered at once still kept gRPC's
//     callback threads, shared by every connection, seconds behind); and when such a client goes,
//     the guard half-closes gRPC's end and counts the connection's calls until gRPC has closed its
//     transport;
//   * a TLS handshake not finished within `handshake_timeout` ends the connection, and one whose
//     client has hung up (a FIN, which no TLS client sends before its handshake is done) ends
//     before the server spends its key exchange and signature on it: a flood of ClientHellos
//     sent and closed at once costs the handshake thread next to nothing and holds no slot of
//     the listener's (issue 16: under CI's load such a flood kept a new client out).
// gRPC learns the client's address from the name the guard binds its end of the pair to
// ("unix-abstract:aobj-h2/N/ipv4:ADDR:PORT"), which PeerFromGuardUri() turns back into the
// address.
//
// Threading: Adopt(), Cut() and stats() from any thread. Relay threads (policy.relay_threads)
// move the octets, each connection on one of them; with TLS, one more thread does every
// handshake and then hands the connection to a relay thread, so that a flood of handshakes
// (about a millisecond of signing each) competes with relaying only for the cores, never for a
// thread (issue 16: on one thread, established connections waited behind every handshake). That
// thread works first on the ready connections of the addresses with the fewest handshakes under
// way, 16 at a time, so that a backlog of ClientHellos from some addresses delays another
// address's handshake by about a round, not by the backlog (eighth hostile probe).
#ifndef AOBJ_SERVER_H2_GUARD_H_
#define AOBJ_SERVER_H2_GUARD_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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
#include "absl/time/time.h"
#include "aobj/types.h"

namespace aobj {

// Calls of connections that have not carried a verified request yet (AOBJ-SEC-026): counted
// from the HEADERS that opens each until the server ends it or the client resets it, and, for a
// connection whose client has gone, until gRPC has closed its transport.
struct H2AdmissionPolicy {
  int per_connection = 8;
  int per_address = 32;
  int total = 256;
  // A connection's first call may pass the per-address and total bounds (so that a newcomer is
  // not queued behind a flood, whatever its address), unless its address holds this many
  // transports whose clients have gone and that gRPC has not closed yet (a reconnecting flood).
  int first_call_dying_per_address = 16;
};

// The guard's count of those calls, shared by its threads (thread-safe); tests use it alone.
class H2Admission {
 public:
  explicit H2Admission(H2AdmissionPolicy policy) : policy_(policy) {}
  // Whether a connection of `address` that holds `open` such calls and has had `admitted` of
  // them may open one more; when it may, the call is counted until Release.
  bool Open(const std::string& address, int open, int admitted);
  void Release(const std::string& address, int calls);
  // A transport of `address` whose client has gone: +1 when the guard closes the client's end,
  // -1 once gRPC has closed its own.
  void Dying(const std::string& address, int delta);
  int total() const;
  int of(const std::string& address) const;
  int dying(const std::string& address) const;

 private:
  struct Address {
    int calls = 0;
    int dying = 0;
  };
  void Forget(absl::flat_hash_map<std::string, Address>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const H2AdmissionPolicy policy_;
  mutable absl::Mutex mu_;
  int total_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, Address> addresses_ ABSL_GUARDED_BY(mu_);
};

// AOBJ-SEC-029: the header the guard adds to a call whose request message it already holds whole
// (its END_STREAM arrived with its headers or just after): "aobj-guard-whole: <mark>", where
// <mark> is a secret of this server run that only the guard and the server's control service
// know, so a client that sends the header itself is not believed. The server reads such a call
// without making it wait for a read slot (AOBJ-SEC-018): its message costs no waiting.
inline constexpr char kGuardWholeHeader[] = "aobj-guard-whole";
// AOBJ-SEC-029, a message that comes late: the header the guard adds to a call it passes on while
// its message is still coming (past H2GuardPolicy::whole_wait): "aobj-guard-late: <mark>:<token>".
// When that stream ends, the guard reports <token> (H2GuardPolicy::on_message_whole), and the
// server reads the call at once, as it does a call marked whole (fifteenth hostile probe, G1-G3:
// a request split by more than the window met AOBJ-SEC-018's read order unchanged).
inline constexpr char kGuardLateHeader[] = "aobj-guard-late";

// A call to mark late (kGuardLateHeader) and the header's value.
struct LateCall {
  uint32_t stream = 0;
  std::string value;
};

// Copies the first `n` octets of `held` (the client's octets that go on to gRPC now; the first
// `skip` of them end a frame begun before) with, after the header block of each HEADERS frame
// that opens a stream above `*last_opened` and whose stream ends (END_STREAM on the HEADERS, or
// on a DATA frame among the 64 whole frames of `held` that follow it), one more CONTINUATION
// frame carrying kGuardWholeHeader with `mark` (the block's last frame loses its END_HEADERS and
// the new frame has it). A call of `late` whose stream does not end so gets a frame carrying
// kGuardLateHeader with its value instead. Raises `*last_opened` past every opening HEADERS it
// saw. Returns nothing when no call is to be marked (the octets go on as they are). A header block
// not whole within the `n` octets is not marked. `*whole`, when given, is set to the number of
// calls marked whole. Pure; fuzzed by fuzz/h2_ledger_fuzzer.cc.
std::optional<std::string> MarkWholeCalls(absl::string_view held, size_t n, size_t skip,
                                          absl::string_view mark, uint32_t* last_opened,
                                          const std::vector<LateCall>& late = {},
                                          size_t* whole = nullptr);

// Where the message of the stream whose HEADERS frame starts at `at` of `held` stands, from the
// whole frames there: kWhole (its stream ended: END_STREAM on the HEADERS or on a DATA frame
// among the 64 frames after its header block), kNever (reset, trailers, or kWholeWaitOctets of its
// data here without its end: it will not be whole before gRPC reads it), or kComing.
enum class MessageState { kWhole, kComing, kNever };
inline constexpr uint32_t kWholeWaitOctets = 16 << 10;
MessageState MessageStateAt(absl::string_view held, size_t at);

struct H2GuardPolicy {
  // Non-empty: calls whose message the guard holds whole are marked with it (AOBJ-SEC-029), and a
  // call whose message is still coming (MessageState::kComing) is held back up to `whole_wait`
  // for it (a small message sent with its headers can arrive in a later read: a segment
  // boundary, a retransmission, TLS records; fourteenth hostile probe, S1).
  std::string whole_mark;
  absl::Duration whole_wait = absl::Milliseconds(250);
  // Set (with `whole_mark`): a call passed on past `whole_wait` is marked late
  // (kGuardLateHeader), and this is called, on a relay thread, with its token once its stream
  // ends; `on_message_large` instead once kWholeWaitOctets of its message passed without the end
  // (such a message needs the server to read it, whose flow-control window it waits for).
  std::function<void(uint64_t)> on_message_whole;
  std::function<void(uint64_t)> on_message_large;
  int resets_to_cut = 64;     // premature resets (and more than 4x the finished streams)
  int min_resets_to_cut = 4;  // the floor of the halving for an address cut before
  int max_open_streams = 1024;
  H2AdmissionPolicy unverified;
  absl::Duration handshake_timeout = absl::Seconds(10);
  absl::Duration strike_memory = absl::Minutes(1);
  int relay_threads = 0;  // 0: one per 8 cores, at least 1 and at most 4
};

struct H2GuardStats {
  uint64_t relayed = 0;          // connections adopted
  uint64_t calls_held = 0;       // times an unverified connection's next call waited (AOBJ-SEC-026)
  uint64_t calls_whole = 0;      // calls marked whole (AOBJ-SEC-029)
  uint64_t calls_late = 0;       // calls marked late, and of those, whose message then came,
  uint64_t calls_late_whole = 0;  // and whose message was then found large (on_message_large)
  uint64_t calls_late_large = 0;
  uint64_t cut_for_resets = 0;   // closed for resetting their streams
  uint64_t cut_for_streams = 0;  // closed for keeping too many streams open
  uint64_t tls_failed = 0;       // TLS handshakes that failed or timed out
  uint64_t tls_abandoned = 0;    // of those, clients that hung up before the server's part
};

// Turns a gRPC peer string of a guarded connection ("unix-abstract:aobj-h2/7/ipv4:1.2.3.4:5",
// percent-encoded or not) into the client's ("ipv4:1.2.3.4:5"); other strings are returned as
// they are.
std::string PeerFromGuardUri(absl::string_view peer);

// One connection's accounting, apart from its sockets (tests and fuzz/h2_ledger_fuzzer.cc): the
// client's and the server's octets, as they pass, in any pieces.
class H2Ledger {
 public:
  enum class Verdict {
    kGoOn,
    kTooManyResets,    // `budget` premature resets, more than 4x the streams the server ended
    kTooManyOpen,      // more than `max_open` streams opened and not ended
    kHeadersTooLarge,  // a header block (HEADERS + CONTINUATION) above kMaxHeaderBlock octets
                       // or kMaxHeaderFrames frames
    kControlFlood,     // more than kMaxUnanswered PING/SETTINGS sent without their ACKs back
    kNotHttp2,         // the client's preface is not HTTP/2's
    kFrameFlood,       // frames carrying next to no headers or data (below)
  };
  // gRPC's own limit on a request's metadata is 8 KiB by default; aobj's are far smaller.
  static constexpr uint32_t kMaxHeaderBlock = 64 << 10;
  static constexpr uint32_t kMaxHeaderFrames = 64;  // empty CONTINUATIONs cost octets too
  // Answers the server owes: keepalive and BDP pings go one at a time.
  static constexpr uint32_t kMaxUnanswered = 32;
  // Frames that carry no headers or data (empty DATA, unknown types, PRIORITY, WINDOW_UPDATE,
  // SETTINGS and PING acknowledgements, ...) cost the server their parsing and nothing bounds how
  // many a client sends (CVE-2019-9518 and kin; the seventh probe's flood of empty unknown frames
  // took a core): as nginx does, a connection whose octets, frame headers included, pass eight
  // times its header and data payload plus eight times `idle_allowance` is cut.
  static constexpr uint64_t kIdleAllowance = 1 << 20;
  // `max_open_unacked` applies until the client acknowledged the server's SETTINGS, `max_open`
  // after (default: the same).
  H2Ledger(int budget, int max_open, int max_open_unacked = 0,
           uint64_t idle_allowance = kIdleAllowance);
  // The client's octets; once not kGoOn, the verdict stays and nothing more is counted.
  Verdict FromClient(const char* data, size_t n);
  // The guard's form of FromClient: `may_open`, when set, is asked before each HEADERS frame that
  // opens a stream, and a false stops the scan before that frame. Returns how many of the octets
  // may go on to gRPC now; the rest (from that HEADERS frame, or from a frame header not yet
  // whole) was not looked at, and the caller offers it again, with what follows, later.
  // `*verdict` is kGoOn unless the connection must be cut (then nothing of `data` may go on).
  size_t Pass(const char* data, size_t n, const std::function<bool()>& may_open, Verdict* verdict);
  // The server's octets: HEADERS or DATA with END_STREAM end a stream (it counts as finished),
  // RST_STREAM ends it too. Nothing is counted after a verdict.
  void FromServer(const char* data, size_t n);
  uint64_t resets() const { return resets_; }
  uint64_t finished() const { return finished_; }
  size_t open() const { return open_.size(); }
  uint64_t octets() const { return octets_; }    // of the client's frames, headers included
  uint64_t payload() const { return payload_; }  // of its HEADERS, CONTINUATION and DATA
  // Octets the next client octets owe to a frame (or the preface) begun before: where the next
  // Pass's octets reach a frame header.
  size_t in_frame() const { return client_.preface_left + client_.payload_left; }
  // During Pass, when `may_open` is asked: where in Pass's octets that HEADERS frame starts.
  size_t frame_at() const { return client_.frame_at; }
  // AOBJ-SEC-029: watches `stream` (passed on while its message was still coming) for its end;
  // at most kMaxWatched streams at a time (false past that).
  static constexpr size_t kMaxWatched = 64;
  bool Watch(uint32_t stream, uint64_t token);
  // The tokens of watched streams that ended (END_STREAM, on a frame whose payload passed whole)
  // since the last call; a watched stream that is reset is forgotten.
  std::vector<uint64_t> TakeEnded() { return std::exchange(ended_, {}); }
  // The tokens of watched streams that passed kWholeWaitOctets of DATA without their end since
  // the last call (no longer watched): the rest of such a message waits for the server to read.
  std::vector<uint64_t> TakeLarge() { return std::exchange(large_, {}); }

 private:
  enum class Step { kGo, kStop, kHold };
  struct Scanner {  // walks frames as octets arrive, reporting each whole frame header
    // (type, flags, stream, payload length): kStop ends the walk (a verdict), kHold leaves the
    // frame, its header included, unread. Returns the octets read; a frame header that is not
    // whole yet is left unread too.
    using Callback = std::function<Step(uint8_t, uint8_t, uint32_t, uint32_t)>;
    size_t preface_left = 0;
    uint32_t payload_left = 0;
    size_t frame_at = 0;  // in the octets of the last Feed: where the frame reported starts
    size_t Feed(const char* data, size_t n, const Callback& on_frame, bool* stopped);
  };
  Step OnClientFrame(uint8_t type, uint8_t flags, uint32_t stream, uint32_t len,
                     const std::function<bool()>& may_open);
  const int budget_;
  const int max_open_;
  const int max_open_unacked_;
  const uint64_t idle_allowance_;
  uint64_t octets_ = 0, payload_ = 0;
  bool settings_acked_ = false;  // the client acknowledged the server's SETTINGS
  Scanner client_, server_;
  std::string client_rest_, server_rest_;  // FromClient's and FromServer's partial frame headers
  absl::flat_hash_set<uint32_t> open_;  // opened by the client, not yet ended
  uint32_t last_opened_ = 0;
  uint64_t resets_ = 0, finished_ = 0;
  uint64_t header_block_ = 0;   // octets of the header block being received
  uint32_t header_frames_ = 0;  // and its frames
  bool in_header_block_ = false;
  uint32_t unanswered_ = 0;  // PING and SETTINGS of the client not yet acknowledged
  struct Watched {
    uint64_t token = 0;
    uint64_t data = 0;  // octets of DATA passed
  };
  absl::flat_hash_map<uint32_t, Watched> watched_;  // by stream (Watch)
  uint64_t ending_ = 0;  // the token of the frame passing now, which ends its watched stream
  std::vector<uint64_t> ended_, large_;
  Verdict verdict_ = Verdict::kGoOn;
};

class H2Guard {
 public:
  // `tls.enabled`: the guard terminates TLS with tls's files (errors name the file); otherwise
  // it relays plaintext. `log` receives one line per cut connection.
  static absl::StatusOr<std::unique_ptr<H2Guard>> Create(
      const TlsOptions& tls, H2GuardPolicy policy, std::function<void(const std::string&)> log);
  ~H2Guard();
  H2Guard(const H2Guard&) = delete;
  H2Guard& operator=(const H2Guard&) = delete;

  // Takes the accepted, non-blocking `client` (from `peer_uri`, gRPC's form "ipv4:ADDR:PORT";
  // `address` the key the per-address budget is kept under) and returns the descriptor to give
  // gRPC, with the connection's token for Cut() in `*token`; on failure (descriptors short)
  // closes `client` and returns -1.
  int Adopt(int client, const std::string& peer_uri, const std::string& address,
            uint64_t* token = nullptr);
  // Closes the connection of `token` soon, on the thread that holds it; gRPC then sees its end
  // close. Nothing happens once it has closed. The guard owns the client's descriptor, so this is
  // the only safe way to cut a guarded connection: shutdown() by number could hit a descriptor
  // that was closed and given to another file in between.
  void Cut(uint64_t token);
  // Where the connection of `token` stands with its TLS handshake: under way, or done at
  // `done_ms` (Unix milliseconds; 0 for plaintext and for connections closed already).
  // Thread-safe; the listener asks, to tell connections that wait for the server's handshake
  // thread from those that wait for their client, and to count a connection's grace from the
  // end of its handshake.
  struct HandshakeState {
    bool under_way = false;
    int64_t done_ms = 0;
  };
  HandshakeState Handshake(uint64_t token);
  // The connection that gRPC names `peer` (its unix-abstract name) carried a request whose
  // signature verified: its calls are no longer counted against AOBJ-SEC-026's bounds. Any thread.
  void MarkVerified(absl::string_view peer);
  H2GuardStats stats() const {
    H2GuardStats s;
    s.relayed = relayed_.load();
    s.calls_held = calls_held_.load();
    s.calls_whole = calls_whole_.load();
    s.calls_late = calls_late_.load();
    s.calls_late_whole = calls_late_whole_.load();
    s.calls_late_large = calls_late_large_.load();
    s.cut_for_resets = cut_for_resets_.load();
    s.cut_for_streams = cut_for_streams_.load();
    s.tls_failed = tls_failed_.load();
    s.tls_abandoned = tls_abandoned_.load();
    return s;
  }
  const H2Admission& admission() const { return admission_; }
  size_t threads() const { return relays_.size(); }  // with TLS, the handshake thread included
  void Stop();

  struct Conn;   // one relayed connection (h2_guard.cc)
  struct Relay;  // one thread and its connections (h2_guard.cc)

 private:
  H2Guard(void* ssl_ctx, H2GuardPolicy policy, std::function<void(const std::string&)> log);
  void Loop(Relay* r);
  void Give(Relay* r, std::unique_ptr<Conn> c);  // any thread: r takes c on its thread
  void Take(Relay* r, std::unique_ptr<Conn> c);  // r's thread
  void Pump(Relay* r, Conn* c);
  void StartDraining(Relay* r, Conn* c);
  void Close(Relay* r, Conn* c);
  void Bury(Relay* r, Conn* c);    // a dying connection's transport has ended: its end closes
  bool PassUp(Relay* r, Conn* c);  // the held client octets that may go to gRPC; false: cut
  bool PassHeld(Relay* r, Conn* c);
  bool MayHoldMore(const Conn* c) const;  // may the client be read further
  void CountHeld(Conn* c);                // held_bytes_ follows c->held
  void Settle(Conn* c);                   // its calls that ended stop counting
  void Watch(Relay* r, Conn* c);
  void HandOff(Relay* r, Conn* c);  // the handshake thread: c goes to a relay thread
  Relay* NextRelay();
  int StrikesOf(const std::string& address) ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared_mu_);
  void Strike(const std::string& address);
  void Log(const std::string& line);

  struct Strikes {
    int count = 0;
    absl::Time last;
  };
  absl::Mutex shared_mu_;  // what the threads share about addresses and the log
  absl::flat_hash_map<std::string, Strikes> strikes_ ABSL_GUARDED_BY(shared_mu_);
  absl::Time last_log_ ABSL_GUARDED_BY(shared_mu_) = absl::InfinitePast();
  uint64_t unlogged_ ABSL_GUARDED_BY(shared_mu_) = 0;
  absl::Mutex registry_mu_;  // token -> connection, for Cut()
  absl::flat_hash_map<uint64_t, Conn*> registry_ ABSL_GUARDED_BY(registry_mu_);
  std::atomic<uint64_t> cut_epoch_{0};  // bumped by each Cut(); each thread then looks

  void* const ssl_ctx_;  // SSL_CTX*, null for plaintext
  const H2GuardPolicy policy_;
  const std::function<void(const std::string&)> log_;
  std::vector<std::unique_ptr<Relay>> relays_;  // with TLS, [0] does the handshakes
  size_t first_relay_ = 0;                      // the first that relays
  std::atomic<uint64_t> next_relay_{0};
  std::atomic<uint64_t> next_id_{0};
  std::atomic<bool> stop_{false};
  H2Admission admission_;
  std::atomic<size_t> held_bytes_{0};  // octets held back for AOBJ-SEC-026, of all connections
  std::atomic<uint64_t> relayed_{0}, calls_held_{0}, calls_whole_{0}, calls_late_{0},
      calls_late_whole_{0}, calls_late_large_{0}, cut_for_resets_{0}, cut_for_streams_{0},
      tls_failed_{0}, tls_abandoned_{0};
  std::atomic<uint64_t> next_token_{1};  // of the calls marked late
};

}  // namespace aobj

#endif  // AOBJ_SERVER_H2_GUARD_H_
