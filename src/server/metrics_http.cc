// AOBJ_PEER_INPUT: HTTP request line and headers from any local process (metrics endpoint).
#include "server/metrics_http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "aobj/status.h"

namespace aobj {
namespace {

bool IsTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    default: return "Internal Server Error";
  }
}

std::string Format(const HttpResponse& r) {
  std::string out = absl::StrCat("HTTP/1.1 ", r.status, " ", Reason(r.status),
                                 "\r\nContent-Type: ", r.content_type,
                                 "\r\nContent-Length: ", r.body.size(),
                                 "\r\nConnection: close\r\n");
  if (r.status == 405) out += "Allow: GET\r\n";
  out += "\r\n";
  out += r.body;
  return out;
}

}  // namespace

HttpParse ParseHttpRequest(absl::string_view data) {
  HttpParse bad;
  bad.kind = HttpParse::kBadRequest;
  const size_t end = data.find("\r\n\r\n");
  if (end == absl::string_view::npos) {
    // Bounds apply to what is buffered too, so a peer cannot make the server hold more.
    const size_t first_eol = data.find("\r\n");
    if (first_eol == absl::string_view::npos ? data.size() > kMaxRequestLine
                                             : first_eol > kMaxRequestLine) {
      return bad;
    }
    if (data.size() >= kMaxHeaderBytes) return bad;
    return HttpParse{};
  }
  if (end + 4 > kMaxHeaderBytes) return bad;
  const absl::string_view head = data.substr(0, end + 2);  // every line ends in CRLF
  // Request line: METHOD SP TARGET SP HTTP/1.x
  const size_t eol = head.find("\r\n");
  if (eol > kMaxRequestLine) return bad;
  const absl::string_view line = head.substr(0, eol);
  const size_t sp1 = line.find(' ');
  if (sp1 == absl::string_view::npos || sp1 == 0) return bad;
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == absl::string_view::npos || sp2 == sp1 + 1) return bad;
  const absl::string_view method = line.substr(0, sp1);
  const absl::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const absl::string_view version = line.substr(sp2 + 1);
  for (char c : method) {
    if (!IsTokenChar(c)) return bad;
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return bad;
  if (target[0] != '/') return bad;  // origin-form only
  for (char c : target) {
    if (c <= 0x20 || c >= 0x7f) return bad;
  }
  // Headers: name ":" value, no obsolete line folding, bounded in number.
  size_t lines = 0;
  size_t pos = eol + 2;
  while (pos < head.size()) {
    const size_t next = head.find("\r\n", pos);
    const absl::string_view h = head.substr(pos, next - pos);
    if (++lines > kMaxHeaderLines) return bad;
    const size_t colon = h.find(':');
    if (colon == absl::string_view::npos || colon == 0) return bad;
    for (char c : h.substr(0, colon)) {
      if (!IsTokenChar(c)) return bad;
    }
    for (char c : h.substr(colon + 1)) {
      if ((c < 0x20 && c != '\t') || c == 0x7f) return bad;
    }
    pos = next + 2;
  }
  if (method != "GET") {
    HttpParse r;
    r.kind = HttpParse::kMethodNotAllowed;
    return r;
  }
  HttpParse ok;
  ok.kind = HttpParse::kOk;
  ok.path = std::string(target.substr(0, target.find('?')));
  return ok;
}

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
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return MakeError(ErrorCode::kInternal, "metrics: socket() failed");
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 16) != 0) {
    const std::string err = std::strerror(errno);
    close(fd);
    return MakeError(ErrorCode::kInternal,
                     absl::StrCat("metrics: cannot listen on ", listen, ": ", err));
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int wake[2];
  if (pipe2(wake, O_CLOEXEC) != 0) {
    close(fd);
    return MakeError(ErrorCode::kInternal, "metrics: pipe() failed");
  }
  return std::unique_ptr<MetricsHttpServer>(
      new MetricsHttpServer(fd, wake[0], wake[1], ntohs(addr.sin_port), std::move(handler)));
}

MetricsHttpServer::MetricsHttpServer(int listen_fd, int wake_read, int wake_write, int port,
                                     Handler handler)
    : listen_fd_(listen_fd), wake_read_(wake_read), wake_write_(wake_write), port_(port),
      handler_(std::move(handler)) {
  thread_ = std::thread([this] { Run(); });
}

MetricsHttpServer::~MetricsHttpServer() {
  const char b = 1;
  while (write(wake_write_, &b, 1) < 0 && errno == EINTR) {
  }
  thread_.join();
  close(listen_fd_);
  close(wake_read_);
  close(wake_write_);
}

void MetricsHttpServer::Run() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents & POLLIN) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) {
        Serve(fd);
        close(fd);
      }
    }
  }
}

void MetricsHttpServer::Serve(int fd) {
  const absl::Time deadline = absl::Now() + kConnectionDeadline;
  std::string buf;
  HttpParse parsed;
  char chunk[2048];
  while (parsed.kind == HttpParse::kIncomplete) {
    const int64_t left_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left_ms <= 0) return;  // too slow: close without an answer
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    if (poll(fds, 2, static_cast<int>(left_ms)) <= 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;  // shutting down
    const ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return;  // peer closed before a complete request
    buf.append(chunk, static_cast<size_t>(n));
    parsed = ParseHttpRequest(buf);
  }
  HttpResponse resp;
  switch (parsed.kind) {
    case HttpParse::kOk:
      resp = handler_(parsed.path);
      break;
    case HttpParse::kMethodNotAllowed:
      resp.status = 405;
      resp.body = "method not allowed: GET only\n";
      break;
    default:
      resp.status = 400;
      resp.body = "bad request\n";
      break;
  }
  const std::string out = Format(resp);
  size_t off = 0;
  while (off < out.size()) {
    const int64_t left_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left_ms <= 0) return;
    pollfd pfd = {fd, POLLOUT, 0};
    if (poll(&pfd, 1, static_cast<int>(left_ms)) <= 0) return;
    const ssize_t n = send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
}

}  // namespace aobj
