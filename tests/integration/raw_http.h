// Raw HTTP/1.1 over loopback for tests that scrape aobj-server's metrics endpoint.
#ifndef AOBJ_TESTS_INTEGRATION_RAW_HTTP_H_
#define AOBJ_TESTS_INTEGRATION_RAW_HTTP_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace aobj::testing {

// A socket listening on 127.0.0.1 at a port of the kernel's choosing (a relay between a test's
// client and its server), or -1; `*endpoint` is then "127.0.0.1:PORT".
inline int ListenLoopback(std::string* endpoint) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return -1;
  }
  *endpoint = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  return fd;
}

// Every client socket of these tests gives up after this long, so a server that stops answering
// fails the test instead of hanging it. Well below kMetricsHttpIdleTimeout.
inline constexpr auto kClientDeadline = std::chrono::seconds(5);

// A socket connected to 127.0.0.1:port with kClientDeadline on connect, send and receive, or -1;
// from 127.0.0.`source` (every 127/8 address is the loopback's: another peer address for the
// server's per-address accounting) when `source` is not 1.
inline int ConnectLoopback(int port, int source = 1) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (source != 1) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    from.sin_addr.s_addr = htonl(INADDR_LOOPBACK - 1 + static_cast<uint32_t>(source));
    if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0) {
      close(fd);
      return -1;
    }
  }
  timeval tv{};
  tv.tv_sec = std::chrono::duration_cast<std::chrono::seconds>(kClientDeadline).count();
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));  // bounds connect() too
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` to 127.0.0.1:port and returns everything the server answers before it closes
// the connection (or before kClientDeadline passes without a byte).
inline std::string RawHttp(int port, const std::string& request) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  // The server may refuse a long request and close before reading all of it.
  size_t off = 0;
  while (off < request.size()) {
    const ssize_t n = send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

// The value of the sample line `name` (full name with labels), or -1.
inline double Sample(const std::string& text, const std::string& name) {
  const std::string prefix = name + " ";
  size_t pos = 0;
  while ((pos = text.find(prefix, pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') return std::stod(text.substr(pos + prefix.size()));
    pos += prefix.size();
  }
  return -1;
}

}  // namespace aobj::testing

#endif  // AOBJ_TESTS_INTEGRATION_RAW_HTTP_H_
