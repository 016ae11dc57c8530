#include "server/metrics_http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "aobj/status.h"

namespace aobj {
namespace {

// Queues `r` on `connection`. The body is copied, so `r` may go away at once.
MHD_Result Queue(MHD_Connection* connection, const HttpResponse& r, bool allow_header) {
  MHD_Response* response = MHD_create_response_from_buffer(
      r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;  // out of memory: libmicrohttpd closes the connection
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
  // One request per connection: no idle keep-alive connection holds one of the bounded slots.
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
  if (allow_header) MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  const MHD_Result ret = MHD_queue_response(connection, static_cast<unsigned>(r.status), response);
  MHD_destroy_response(response);  // libmicrohttpd holds its own reference until sent
  return ret;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& listen, bool allow_remote, Handler handler) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("metrics address '", listen, "' is not HOST:PORT"));
  }
  std::string host = listen.substr(0, colon);
  if (host == "localhost") host = "127.0.0.1";
  int port = 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (!absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 || port > 65535 ||
      inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("metrics address '", listen, "' is not IPV4:PORT"));
  }
  if (!allow_remote && (ntohl(addr.sin_addr.s_addr) >> 24) != 127) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("metrics address '", listen,
                                  "' is not loopback; the endpoint is unauthenticated"));
  }
  addr.sin_port = htons(static_cast<uint16_t>(port));
  // The socket is bound here rather than by libmicrohttpd so that a failure reports its errno
  // and port 0 resolves to the bound port before the daemon starts.
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return MakeError(ErrorCode::kInternal, "metrics: socket() failed");
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, SOMAXCONN) != 0) {
    const std::string err = std::strerror(errno);
    close(fd);
    return MakeError(ErrorCode::kInternal,
                     absl::StrCat("metrics: cannot listen on ", listen, ": ", err));
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);

  std::unique_ptr<MetricsHttpServer> server(
      new MetricsHttpServer(ntohs(addr.sin_port), std::move(handler)));
  // MHD_AccessHandlerCallback: called once the request line and headers are in, with the path
  // already stripped of its query string.
  auto on_request = [](void* cls, MHD_Connection* connection, const char* url, const char* method,
                       const char* /*version*/, const char* /*upload_data*/,
                       size_t* /*upload_data_size*/, void** /*req_cls*/) -> MHD_Result {
    auto* self = static_cast<MetricsHttpServer*>(cls);
    {
      absl::MutexLock l(&self->conns_mu_);
      auto it = self->conns_.find(connection);
      if (it != self->conns_.end()) it->second.requested = true;  // never cut to make room
    }
    // HEAD is answered like GET; libmicrohttpd leaves the body out.
    if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
        std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
      HttpResponse r;
      r.status = MHD_HTTP_METHOD_NOT_ALLOWED;
      r.body = "method not allowed: GET only\n";
      return Queue(connection, r, /*allow_header=*/true);
    }
    return Queue(connection, self->handler_(url), /*allow_header=*/false);
  };
  // Every connection is tracked from accept to close, so that the deadline sweeper can cut one
  // that has not been answered within kMetricsHttpRequestDeadline (a slow sender resets
  // libmicrohttpd's inactivity timeout with every byte).
  auto on_connection = [](void* cls, MHD_Connection* connection, void** /*socket_context*/,
                          MHD_ConnectionNotificationCode toe) {
    auto* self = static_cast<MetricsHttpServer*>(cls);
    absl::MutexLock l(&self->conns_mu_);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
      const MHD_ConnectionInfo* fd =
          MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
      const MHD_ConnectionInfo* peer =
          MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
      if (fd != nullptr) {
        uint32_t address = 0;
        if (peer != nullptr && peer->client_addr != nullptr &&
            peer->client_addr->sa_family == AF_INET) {
          address = ntohl(reinterpret_cast<const sockaddr_in*>(peer->client_addr)->sin_addr.s_addr);
        }
        self->conns_[connection] = Tracked{fd->connect_fd, address, absl::Now(), false, false};
        self->MakeRoom(connection);
      }
    } else {
      // libmicrohttpd closes the socket after this returns: the sweeper, which holds conns_mu_
      // while it shuts a socket down, never touches a descriptor that was closed or reused.
      self->conns_.erase(connection);
    }
  };
  MHD_OptionItem options[] = {
      {MHD_OPTION_LISTEN_SOCKET, fd, nullptr},
      {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(+on_connection), server.get()},
      // MakeRoom applies the bounds; libmicrohttpd's own limit only leaves room for connections
      // that were cut and are not closed yet.
      {MHD_OPTION_CONNECTION_LIMIT, 2 * kMetricsHttpMaxConnections, nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, absl::ToInt64Seconds(kMetricsHttpIdleTimeout), nullptr},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, kMetricsHttpConnectionMemory, nullptr},
      {MHD_OPTION_END, 0, nullptr},
  };
  // Not MHD_USE_ERROR_LOG: libmicrohttpd's messages are about peers misbehaving, which it answers
  // itself; they would only add text chosen by a peer to the server's stderr.
  server->daemon_ = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC,
                                     0, nullptr, nullptr, on_request, server.get(),
                                     MHD_OPTION_ARRAY, options, MHD_OPTION_END);
  if (server->daemon_ == nullptr) {
    close(fd);
    return MakeError(ErrorCode::kInternal,
                     absl::StrCat("metrics: cannot start the HTTP server on ", listen));
  }
  server->sweeper_ = std::thread([raw = server.get()] { raw->Sweep(); });
  return server;
}

void MetricsHttpServer::MakeRoom(MHD_Connection* fresh) {
  const uint32_t address = conns_.at(fresh).address;
  size_t total = 0;
  absl::flat_hash_map<uint32_t, size_t> per_address;
  for (const auto& [c, t] : conns_) {
    if (t.cut) continue;
    ++total;
    ++per_address[t.address];
  }
  uint32_t victim_address;
  if (per_address[address] > kMetricsHttpMaxConnectionsPerIp) {
    victim_address = address;
  } else if (total > kMetricsHttpMaxConnections) {
    victim_address = address;
    for (const auto& [a, n] : per_address) {
      if (n > per_address[victim_address]) victim_address = a;
    }
  } else {
    return;
  }
  Tracked* victim = nullptr;
  for (auto& [c, t] : conns_) {
    if (c == fresh || t.cut || t.requested || t.address != victim_address) continue;
    if (victim == nullptr || t.accepted < victim->accepted) victim = &t;
  }
  if (victim == nullptr) victim = &conns_.at(fresh);  // all are being answered: not this one
  shutdown(victim->fd, SHUT_RDWR);  // libmicrohttpd sees the error and closes the connection
  victim->cut = true;
}

void MetricsHttpServer::Sweep() {
  absl::MutexLock l(&conns_mu_);
  while (!stopping_) {
    conns_mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Seconds(1));
    const absl::Time too_old = absl::Now() - kMetricsHttpRequestDeadline;
    for (auto& [connection, t] : conns_) {
      if (!t.cut && t.accepted < too_old) {
        shutdown(t.fd, SHUT_RDWR);  // libmicrohttpd sees the error and closes the connection
        t.cut = true;
      }
    }
  }
}

MetricsHttpServer::MetricsHttpServer(int port, Handler handler)
    : port_(port), handler_(std::move(handler)) {}

MetricsHttpServer::~MetricsHttpServer() {
  {
    absl::MutexLock l(&conns_mu_);
    stopping_ = true;
  }
  if (sweeper_.joinable()) sweeper_.join();
  // Joins the polling thread, then closes every connection and the listening socket.
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

}  // namespace aobj
