// The HTTP server behind the local metrics and admin endpoints (docs/observability.md), built on
// GNU libmicrohttpd (Debian 12: libmicrohttpd 0.9.75).
//
// Why a library: this is the peer-input surface of the server, the one place where it parses a
// text protocol from any local process. The hand-written server it replaces served one
// connection at a time, so 20 idle TCP connections made a Prometheus scrape time out (security
// finding issue 16, finding 6). libmicrohttpd is a mature, widely deployed HTTP/1.1 server; it
// multiplexes every connection on one thread, so idle or slow peers do not delay a scrape. What
// is left here is policy: which address, which methods, what the handler answers.
//
// Bounds on peer input (kMetricsHttp* below): at most kMetricsHttpMaxConnections connections at
// once and kMetricsHttpMaxConnectionsPerIp from one address. A connection past either bound makes
// room by cutting the oldest connection that has not sent a whole request, of its own address
// (per-address bound) or of the address holding the most (total bound); only when every such
// connection has sent its request (it is being answered) is the new one closed. So a process that
// reconnects as fast as it is cut, from one address or many (all of 127/8 is local), displaces
// its own connections, and a scraper, which sends its request at once, is answered. A
// connection without traffic for kMetricsHttpIdleTimeout is closed; a connection's
// request line, headers and buffers live in a pool of kMetricsHttpConnectionMemory bytes, so a
// longer header block is refused by libmicrohttpd (431; 414 for a long target) and memory does
// not grow. GET and HEAD only (405 with `Allow: GET, HEAD` otherwise; a request body is never
// read). A malformed request never reaches the handler: libmicrohttpd answers 400 (0.9.75 closes
// a one-word request line unanswered). An unknown path is the handler's 404. Every response
// closes its connection (`Connection: close`), so no keep-alive holds a slot.
//
// A connection not answered within kMetricsHttpRequestDeadline of its accept is cut (shutdown),
// however slowly it keeps sending, since every response closes its connection anyway.
//
// Threading: libmicrohttpd runs one internal thread that polls (epoll) all connections; the
// handler runs on that thread, one request at a time, and must not block. A sweeper thread
// wakes once a second to cut connections past their deadline.
#ifndef AOBJ_SERVER_METRICS_HTTP_H_
#define AOBJ_SERVER_METRICS_HTTP_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

struct MHD_Connection;
struct MHD_Daemon;

namespace aobj {

inline constexpr unsigned kMetricsHttpMaxConnections = 256;
// Local clients normally all come from 127.0.0.1, so this bounds one remote host when
// `allow_remote` is set and does little locally; it stays well above what scrapers need (the test
// of finding 6 scrapes beside 40 idle connections from 127.0.0.1).
inline constexpr unsigned kMetricsHttpMaxConnectionsPerIp = 64;
inline constexpr absl::Duration kMetricsHttpIdleTimeout = absl::Seconds(10);
inline constexpr size_t kMetricsHttpConnectionMemory = 16 * 1024;
// A connection not answered this long after it was accepted is closed, however slowly it keeps
// sending (hostile probe of issue 16, N4: 64 connections sending a header line every 5 s blinded
// the endpoint).
inline constexpr absl::Duration kMetricsHttpRequestDeadline = absl::Seconds(10);

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class MetricsHttpServer {
 public:
  // Called with the request's path (no query string) for every GET or HEAD.
  using Handler = std::function<HttpResponse(const std::string& path)>;

  // Listens on `listen` ("IPV4:PORT" or "localhost:PORT"; port 0 picks one). Refuses an address
  // outside 127.0.0.0/8 unless `allow_remote`: the endpoints are unauthenticated.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const std::string& listen,
                                                                  bool allow_remote,
                                                                  Handler handler);
  // Stops the thread and closes the listening socket and every connection; a response being
  // sent is cut short. Must not be called from the handler.
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  int port() const { return port_; }

 private:
  MetricsHttpServer(int port, Handler handler);

  void Sweep();  // the deadline sweeper's loop

  const int port_;
  const Handler handler_;
  MHD_Daemon* daemon_ = nullptr;  // owned; stopped by the destructor
  // Open connections (libmicrohttpd's thread adds and removes them; the sweeper cuts the old).
  struct Tracked {
    int fd;
    uint32_t address;  // IPv4, host order
    absl::Time accepted;
    bool cut;        // shut down; libmicrohttpd closes it on its next poll
    bool requested;  // its request line and headers are in: it is being answered
  };
  // Called for a new connection: applies the bounds above, cutting one connection (perhaps
  // `fresh` itself) when they are exceeded.
  void MakeRoom(MHD_Connection* fresh) ABSL_EXCLUSIVE_LOCKS_REQUIRED(conns_mu_);
  absl::Mutex conns_mu_;
  absl::flat_hash_map<MHD_Connection*, Tracked> conns_ ABSL_GUARDED_BY(conns_mu_);
  bool stopping_ ABSL_GUARDED_BY(conns_mu_) = false;
  std::thread sweeper_;
};

}  // namespace aobj

#endif  // AOBJ_SERVER_METRICS_HTTP_H_
