// A small, strict HTTP/1.x server for the local metrics and admin endpoints
// (docs/observability.md). It answers GET only, one request per connection, then closes.
//
// Peer input: the request line and headers are bounded (kMaxRequestLine, kMaxHeaderBytes,
// kMaxHeaderLines); anything else is 400, a method other than GET 405, an unknown path 404
// (from the handler). The body of a request is never read.
//
// Threading: MetricsHttpServer runs one thread that accepts and serves connections one at a
// time, each bounded by kConnectionDeadline; the handler runs on that thread. ParseHttpRequest
// is pure.
#ifndef AOBJ_SERVER_METRICS_HTTP_H_
#define AOBJ_SERVER_METRICS_HTTP_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace aobj {

inline constexpr size_t kMaxRequestLine = 1024;
inline constexpr size_t kMaxHeaderBytes = 8192;  // request line and headers together
inline constexpr size_t kMaxHeaderLines = 64;
inline constexpr absl::Duration kConnectionDeadline = absl::Seconds(2);

struct HttpParse {
  enum Kind {
    kIncomplete,        // no end of headers yet and within bounds: read more
    kOk,                // a well-formed GET; `path` set
    kBadRequest,        // malformed or past a bound: 400
    kMethodNotAllowed,  // well-formed but not GET: 405
  };
  Kind kind = kIncomplete;
  std::string path;  // the target without its query string; starts with '/'
};

// Parses the bytes received so far on a connection. Bytes after the end of the headers are
// ignored.
HttpParse ParseHttpRequest(absl::string_view data);

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class MetricsHttpServer {
 public:
  using Handler = std::function<HttpResponse(const std::string& path)>;

  // Listens on `listen` ("IPV4:PORT" or "localhost:PORT"; port 0 picks one). Refuses an address
  // outside 127.0.0.0/8 unless `allow_remote`: the endpoints are unauthenticated.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const std::string& listen,
                                                                  bool allow_remote,
                                                                  Handler handler);
  // Stops the thread and closes the socket; a connection being served is cut short.
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  int port() const { return port_; }

 private:
  MetricsHttpServer(int listen_fd, int wake_read, int wake_write, int port, Handler handler);
  void Run();
  void Serve(int fd);

  const int listen_fd_;
  const int wake_read_;   // readable once the destructor asks the thread to stop
  const int wake_write_;
  const int port_;
  const Handler handler_;
  std::thread thread_;
};

}  // namespace aobj

#endif  // AOBJ_SERVER_METRICS_HTTP_H_
