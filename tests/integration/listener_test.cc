// The control listener in front of gRPC (src/server/listener.h): what it hands to gRPC.
#include "server/listener.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace aobj {
namespace {

uint16_t PortOf(int fd, bool peer) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  const int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
                      : getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  if (rc != 0 || a.sin_family != AF_INET) return 0;
  return ntohs(a.sin_port);
}

// The descriptor of this process whose TCP connection runs from local port `local` to peer
// port `peer`, or -1.
int FindConnection(uint16_t local, uint16_t peer) {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  int found = -1;
  while (dirent* e = readdir(d)) {
    const int fd = std::atoi(e->d_name);
    struct stat st {};
    if (fd <= 2 || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (PortOf(fd, false) == local && PortOf(fd, true) == peer) {
      found = fd;
      break;
    }
  }
  closedir(d);
  return found;
}

// gRPC sets TCP_NODELAY on its own listening socket, whose connections inherit it; a connection
// accepted by our listener and handed over must get it too, or a reply written while the one
// before is unacknowledged waits for the peer's delayed ACK (40 ms on Linux): with two calls in
// flight on one connection, one call in a few dozen stalled that long.
TEST(ControlListenerTest, ConnectionsHandedToGrpcHaveNoDelay) {
  auto listener = ControlListener::Bind("127.0.0.1:0", 64);
  ASSERT_TRUE(listener.ok()) << listener.status();
  grpc::ServerBuilder builder;
  auto acceptor = builder.experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
      grpc::InsecureServerCredentials());
  grpc::AsyncGenericService service;  // gRPC starts no server without a service
  builder.RegisterAsyncGenericService(&service);
  std::unique_ptr<grpc::ServerCompletionQueue> cq = builder.AddCompletionQueue();
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  (*listener)->Start(std::move(acceptor));

  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(client, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>((*listener)->port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  const uint16_t client_port = PortOf(client, false);

  int accepted = -1;
  for (int i = 0; i < 200 && accepted < 0; ++i) {
    accepted = FindConnection(static_cast<uint16_t>((*listener)->port()), client_port);
    if (accepted < 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GE(accepted, 0) << "the accepted connection was not found";
  int nodelay = 0;
  socklen_t len = sizeof(nodelay);
  ASSERT_EQ(getsockopt(accepted, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len), 0);
  EXPECT_NE(nodelay, 0) << "TCP_NODELAY is not set on the connection handed to gRPC";

  close(client);
  (*listener)->Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  cq->Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) {
  }
}

sockaddr_storage Peer(int family, const char* text) {
  sockaddr_storage peer{};
  peer.ss_family = static_cast<sa_family_t>(family);
  void* where = family == AF_INET
                    ? static_cast<void*>(&reinterpret_cast<sockaddr_in*>(&peer)->sin_addr)
                    : static_cast<void*>(&reinterpret_cast<sockaddr_in6*>(&peer)->sin6_addr);
  EXPECT_EQ(inet_pton(family, text, where), 1) << text;
  return peer;
}

// Per-address bounds count an IPv6 peer by its /64 (an attacker holding a prefix would otherwise
// look like as many quiet addresses as it likes), an IPv4-mapped one by its IPv4 address (one
// /64 would hold every IPv4 client of a dual-stack listener).
TEST(ControlListenerTest, PeersAreCountedByIpv4AddressOrIpv6Slash64) {
  const std::string a = PeerGroup(Peer(AF_INET6, "2001:db8:1:2:aaaa::1"));
  EXPECT_EQ(a.size(), 8u);
  EXPECT_EQ(a, PeerGroup(Peer(AF_INET6, "2001:db8:1:2:ffff:ffff:ffff:fffe")));
  EXPECT_NE(a, PeerGroup(Peer(AF_INET6, "2001:db8:1:3:aaaa::1")));
  EXPECT_NE(a, PeerGroup(Peer(AF_INET6, "2001:db9:1:2:aaaa::1")));

  const std::string v4 = PeerGroup(Peer(AF_INET, "192.0.2.7"));
  EXPECT_EQ(v4.size(), 4u);
  EXPECT_EQ(v4, PeerGroup(Peer(AF_INET6, "::ffff:192.0.2.7")));
  EXPECT_NE(v4, PeerGroup(Peer(AF_INET6, "::ffff:192.0.2.8")));
  EXPECT_NE(v4, PeerGroup(Peer(AF_INET, "192.0.2.8")));
  EXPECT_NE(PeerGroup(Peer(AF_INET6, "::1")), PeerGroup(Peer(AF_INET6, "::ffff:0.0.0.1")));

  sockaddr_storage unix_peer{};
  unix_peer.ss_family = AF_UNIX;
  EXPECT_EQ(PeerGroup(unix_peer), "");
}

}  // namespace
}  // namespace aobj
