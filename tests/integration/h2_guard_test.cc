// The HTTP/2 guard's accounting (AOBJ-SEC-023) apart from sockets, the peer names it gives
// gRPC, and the guard itself between socket pairs (relay threads, Cut). The guard in front of a
// real server is tested by request_flood_test.cc (RapidResetFromReconnectingConnectionsIsBounded),
// tls_test.cc and connection_flood_test.cc.
#include "server/h2_guard.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace aobj {
namespace {

std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload = "") {
  std::string f = {static_cast<char>(payload.size() >> 16),
                   static_cast<char>(payload.size() >> 8),
                   static_cast<char>(payload.size()),
                   static_cast<char>(type),
                   static_cast<char>(flags),
                   static_cast<char>(stream >> 24),
                   static_cast<char>(stream >> 16),
                   static_cast<char>(stream >> 8),
                   static_cast<char>(stream)};
  return f + payload;
}

const std::string kPreface = std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + Frame(4, 0, 0);
std::string Headers(uint32_t s) { return Frame(1, 4, s, std::string(40, 'h')); }
std::string Reset(uint32_t s) { return Frame(3, 0, s, std::string("\0\0\0\x08", 4)); }
std::string Trailers(uint32_t s) { return Frame(1, 5, s, std::string(20, 't')); }

TEST(H2LedgerTest, ACutComesAtTheBudgetOfPrematureResets) {
  H2Ledger l(64, 1024);
  ASSERT_EQ(l.FromClient(kPreface.data(), kPreface.size()), H2Ledger::Verdict::kGoOn);
  for (uint32_t i = 0; i < 63; ++i) {
    const std::string out = Headers(2 * i + 1) + Reset(2 * i + 1);
    ASSERT_EQ(l.FromClient(out.data(), out.size()), H2Ledger::Verdict::kGoOn) << i;
  }
  EXPECT_EQ(l.resets(), 63u);
  const std::string last = Headers(127) + Reset(127);
  EXPECT_EQ(l.FromClient(last.data(), last.size()), H2Ledger::Verdict::kTooManyResets);
  // The verdict stays, whatever follows.
  const std::string more = Headers(129);
  EXPECT_EQ(l.FromClient(more.data(), more.size()), H2Ledger::Verdict::kTooManyResets);
}

TEST(H2LedgerTest, StreamsTheServerEndedAreNotResetsAndRaiseTheBar) {
  H2Ledger l(8, 1024);
  ASSERT_EQ(l.FromClient(kPreface.data(), kPreface.size()), H2Ledger::Verdict::kGoOn);
  uint32_t s = 1;
  // Four calls answered, then a reset that comes after the answer: no premature reset.
  for (int i = 0; i < 4; ++i, s += 2) {
    const std::string h = Headers(s);
    ASSERT_EQ(l.FromClient(h.data(), h.size()), H2Ledger::Verdict::kGoOn);
    const std::string t = Trailers(s);
    l.FromServer(t.data(), t.size());
    const std::string r = Reset(s);
    ASSERT_EQ(l.FromClient(r.data(), r.size()), H2Ledger::Verdict::kGoOn);
  }
  EXPECT_EQ(l.finished(), 4u);
  EXPECT_EQ(l.resets(), 0u);
  EXPECT_EQ(l.open(), 0u);
  // With 4 ended, up to 16 premature resets are tolerated (more than four times is the line).
  for (int i = 0; i < 16; ++i, s += 2) {
    const std::string out = Headers(s) + Reset(s);
    ASSERT_EQ(l.FromClient(out.data(), out.size()), H2Ledger::Verdict::kGoOn) << i;
  }
  const std::string out = Headers(s) + Reset(s);
  EXPECT_EQ(l.FromClient(out.data(), out.size()), H2Ledger::Verdict::kTooManyResets);
}

TEST(H2LedgerTest, OctetsInAnyPiecesCountTheSame) {
  std::string all = kPreface;
  for (uint32_t s = 1; s < 40; s += 2) all += Headers(s) + Frame(0, 1, s, "body") + Reset(s);
  for (size_t piece : {1, 2, 7, 9, 10, 64, 4096}) {
    H2Ledger l(1000, 1024);
    for (size_t at = 0; at < all.size(); at += piece) {
      ASSERT_EQ(l.FromClient(all.data() + at, std::min(piece, all.size() - at)),
                H2Ledger::Verdict::kGoOn);
    }
    EXPECT_EQ(l.resets(), 20u) << piece;
    EXPECT_EQ(l.open(), 0u) << piece;
  }
}

TEST(H2LedgerTest, TooManyOpenStreamsAndANonHttp2PrefaceAreRefused) {
  H2Ledger l(64, 4);
  std::string out = kPreface;
  for (uint32_t s = 1; s <= 9; s += 2) out += Headers(s);
  EXPECT_EQ(l.FromClient(out.data(), out.size()), H2Ledger::Verdict::kTooManyOpen);
  H2Ledger bad(64, 4);
  const std::string get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  EXPECT_EQ(bad.FromClient(get.data(), get.size()), H2Ledger::Verdict::kNotHttp2);
}

// gRPC 1.51 kept an endless run of CONTINUATION frames in memory (682 MB from 8 connections in
// 4 s in the sixth probe), and queued the answers to PINGs that its client never read (760 MB).
TEST(H2LedgerTest, AnEndlessHeaderBlockAndUnansweredPingsAreRefused) {
  H2Ledger l(64, 1024);
  std::string out = kPreface + Frame(1, 0, 1, std::string(1000, 'h'));  // no END_HEADERS
  ASSERT_EQ(l.FromClient(out.data(), out.size()), H2Ledger::Verdict::kGoOn);
  const std::string more = Frame(9, 0, 1, std::string(16000, 'c'));
  int sent = 0;
  H2Ledger::Verdict v = H2Ledger::Verdict::kGoOn;
  while (v == H2Ledger::Verdict::kGoOn && sent < 100) {
    v = l.FromClient(more.data(), more.size());
    ++sent;
  }
  EXPECT_EQ(v, H2Ledger::Verdict::kHeadersTooLarge);
  EXPECT_EQ(sent, 5) << "1000 + 5 x 16000 octets pass 64 KiB; 1000 + 4 x 16000 do not";
  // A block that ends (END_HEADERS) starts the count again.
  H2Ledger ok(64, 1024);
  std::string blocks = kPreface;
  for (uint32_t s = 1; s < 40; s += 2)
    blocks += Frame(1, 0, s, std::string(30000, 'h')) + Frame(9, 4, s, std::string(30000, 'c'));
  EXPECT_EQ(ok.FromClient(blocks.data(), blocks.size()), H2Ledger::Verdict::kGoOn);

  H2Ledger pings(64, 1024);
  ASSERT_EQ(pings.FromClient(kPreface.data(), kPreface.size()), H2Ledger::Verdict::kGoOn);
  const std::string ping = Frame(6, 0, 0, "12345678");
  const std::string ack = Frame(6, 1, 0, "12345678");
  // One at a time, each answered: any number.
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(pings.FromClient(ping.data(), ping.size()), H2Ledger::Verdict::kGoOn) << i;
    pings.FromServer(ack.data(), ack.size());
  }
  // The SETTINGS of the preface is still unanswered: 31 more pings are the most.
  for (int i = 0; i < 31; ++i) {
    ASSERT_EQ(pings.FromClient(ping.data(), ping.size()), H2Ledger::Verdict::kGoOn) << i;
  }
  EXPECT_EQ(pings.FromClient(ping.data(), ping.size()), H2Ledger::Verdict::kControlFlood);
}

// The seventh probe: zero-length frames of an unknown type, 28 million a second from two
// connections, took a core of the server (gRPC parses and ignores each) and were never cut.
// Frames that carry no headers or data may add up to eight times their payload and the
// allowance; past that the connection is cut, whatever the frames are.
TEST(H2LedgerTest, FramesCarryingNothingAreBoundedByWhatTheOthersCarry) {
  for (uint8_t type :
       {uint8_t{0x2a}, uint8_t{0} /* empty DATA */, uint8_t{8} /* WINDOW_UPDATE */}) {
    H2Ledger l(64, 1024, 0, /*idle_allowance=*/1024);
    ASSERT_EQ(l.FromClient(kPreface.data(), kPreface.size()), H2Ledger::Verdict::kGoOn);
    const std::string empty = Frame(type, 0, type == 0 ? 1 : 0, type == 8 ? "\0\0\0\1" : "");
    int sent = 0;
    H2Ledger::Verdict v = H2Ledger::Verdict::kGoOn;
    while (v == H2Ledger::Verdict::kGoOn && sent < 100000) {
      v = l.FromClient(empty.data(), empty.size());
      ++sent;
    }
    EXPECT_EQ(v, H2Ledger::Verdict::kFrameFlood) << "type " << int{type};
    // Cut at the frame that passes the line (the preface's SETTINGS frame counts too).
    EXPECT_GT(l.octets() / 8, 1024u) << "type " << int{type};
    EXPECT_LE(l.octets(), 8u * 1025 + empty.size()) << "type " << int{type};
    EXPECT_LT(sent, 1000) << "type " << int{type};
  }
  // A client whose frames carry requests (headers, a message, a window update for each answer,
  // now and then a PING) is never cut, however long it goes on.
  H2Ledger busy(64, 1024, 0, 1024);
  ASSERT_EQ(busy.FromClient(kPreface.data(), kPreface.size()), H2Ledger::Verdict::kGoOn);
  for (uint32_t s = 1; s < 40000; s += 2) {
    std::string out = Frame(1, 4, s, std::string(120, 'h')) + Frame(0, 1, s, std::string(30, 'd')) +
                      Frame(8, 0, 0, std::string("\0\0\x10\0", 4));
    if (s % 101 == 0) out += Frame(6, 0, 0, "12345678");
    ASSERT_EQ(busy.FromClient(out.data(), out.size()), H2Ledger::Verdict::kGoOn) << s;
    std::string answer = Trailers(s);  // the call ends
    if (s % 101 == 0) answer += Frame(6, 1, 0, "12345678");
    busy.FromServer(answer.data(), answer.size());
  }
  EXPECT_GT(busy.payload(), 2'000'000u);
}

// gRPC 1.51 enforces its stream limit only once the client acknowledged its SETTINGS: until
// then the guard's (lower, after strikes) bound applies; after, the advertised one and some slack.
TEST(H2LedgerTest, TheOpenStreamBoundBeforeAndAfterSettingsAreAcknowledged) {
  auto open_until_refused = [](bool ack) {
    H2Ledger l(64, 320, 64);
    std::string out = kPreface + (ack ? Frame(4, 1, 0) : "");
    EXPECT_EQ(l.FromClient(out.data(), out.size()), H2Ledger::Verdict::kGoOn);
    for (uint32_t s = 1;; s += 2) {
      const std::string h = Headers(s);
      if (l.FromClient(h.data(), h.size()) != H2Ledger::Verdict::kGoOn) {
        return static_cast<int>(l.open());
      }
    }
  };
  EXPECT_EQ(open_until_refused(false), 65);
  EXPECT_EQ(open_until_refused(true), 321);
}

// What arrives on `fd` within `ms`: the octets read, or "EOF" once the other end closed, or ""
// when nothing came.
std::string ReadWithin(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, ms) <= 0) return "";
  char buf[4096];
  const ssize_t n = read(fd, buf, sizeof(buf));
  if (n == 0) return "EOF";
  return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
}

std::string ReadWithin5s(int fd) { return ReadWithin(fd, 5000); }

// Reads until `want` octets arrived (or 5 s passed without any).
std::string ReadAll(int fd, size_t want) {
  std::string got;
  while (got.size() < want) {
    const std::string more = ReadWithin5s(fd);
    if (more.empty() || more == "EOF") break;
    got += more;
  }
  return got;
}

// Connections are spread over the relay threads, each relays both ways, and Cut() ends exactly
// the connection of its token (gRPC's end and the client's), once; unknown tokens change
// nothing. The listener cuts guarded connections only this way: the guard owns their
// descriptors (a shutdown() by number could hit one closed and reused in between).
TEST(H2GuardTest, ConnectionsOnSeveralRelayThreadsAndCutByToken) {
  H2GuardPolicy policy;
  policy.relay_threads = 3;
  auto guard = H2Guard::Create(TlsOptions{}, policy, nullptr);
  ASSERT_TRUE(guard.ok()) << guard.status();
  EXPECT_EQ((*guard)->threads(), 3u);  // plaintext: no handshake thread
  constexpr int kConns = 6;
  std::vector<int> clients, inners;
  std::vector<uint64_t> tokens;
  for (int i = 0; i < kConns; ++i) {
    int pair[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    fcntl(pair[1], F_SETFL, fcntl(pair[1], F_GETFL) | O_NONBLOCK);  // as the listener's are
    uint64_t token = 0;
    const int inner = (*guard)->Adopt(pair[1], "ipv4:127.0.0.1:" + std::to_string(40000 + i),
                                      "127.0.0.1", &token);
    ASSERT_GE(inner, 0);
    clients.push_back(pair[0]);
    inners.push_back(inner);
    tokens.push_back(token);
  }
  for (size_t i = 1; i < tokens.size(); ++i) EXPECT_NE(tokens[i], tokens[0]);
  const std::string settings = Frame(4, 0, 0, std::string(6, '\0'));
  for (int i = 0; i < kConns; ++i) {
    ASSERT_EQ(write(clients[i], kPreface.data(), kPreface.size()),
              static_cast<ssize_t>(kPreface.size()));
    EXPECT_EQ(ReadAll(inners[i], kPreface.size()), kPreface) << "connection " << i;
    ASSERT_EQ(write(inners[i], settings.data(), settings.size()),
              static_cast<ssize_t>(settings.size()));
    EXPECT_EQ(ReadAll(clients[i], settings.size()), settings) << "connection " << i;
  }
  (*guard)->Cut(tokens[2]);
  EXPECT_EQ(ReadWithin5s(clients[2]), "EOF") << "the cut connection's client end stayed open";
  EXPECT_EQ(ReadWithin5s(inners[2]), "EOF") << "gRPC's end of the cut connection stayed open";
  (*guard)->Cut(tokens[2]);         // closed already: nothing
  (*guard)->Cut(tokens[0] - 1000);  // no such connection
  for (int i = 0; i < kConns; ++i) {
    if (i == 2) continue;
    const std::string ping = Frame(6, 0, 0, "12345678");
    ASSERT_EQ(write(clients[i], ping.data(), ping.size()), static_cast<ssize_t>(ping.size()));
    EXPECT_EQ(ReadAll(inners[i], ping.size()), ping) << "connection " << i << " after the cut";
  }
  EXPECT_EQ((*guard)->stats().relayed, static_cast<uint64_t>(kConns));
  (*guard)->Stop();
  for (int i = 0; i < kConns; ++i) {
    if (i != 2) {
      EXPECT_EQ(ReadWithin5s(clients[i]), "EOF") << "Stop() left connection " << i;
    }
    close(clients[i]);
    close(inners[i]);
  }
}

// AOBJ-SEC-026's counts: a connection's own bound always holds; its first call passes the
// address's and the total bound unless the address has many transports dying; Release gives
// the room back.
TEST(H2AdmissionTest, BoundsPerConnectionAddressAndAllWithTheFirstCallExcepted) {
  H2AdmissionPolicy p;
  p.per_connection = 2;
  p.per_address = 3;
  p.total = 4;
  p.first_call_dying_per_address = 2;
  H2Admission a(p);
  EXPECT_TRUE(a.Open("A", 0, 1));
  EXPECT_TRUE(a.Open("A", 1, 2));
  EXPECT_FALSE(a.Open("A", 2, 3)) << "the connection's own bound";
  EXPECT_TRUE(a.Open("A", 0, 1));
  EXPECT_FALSE(a.Open("A", 1, 2)) << "the address's bound";
  EXPECT_TRUE(a.Open("A", 0, 0)) << "a new connection's first call";
  EXPECT_EQ(a.of("A"), 4);
  EXPECT_FALSE(a.Open("B", 0, 1)) << "the total bound";
  EXPECT_TRUE(a.Open("B", 0, 0)) << "a new connection's first call, another address";
  EXPECT_EQ(a.total(), 5);
  a.Dying("A", 1);
  a.Dying("A", 1);
  EXPECT_FALSE(a.Open("A", 0, 0)) << "an address with transports dying gets no exception";
  EXPECT_FALSE(a.Open("C", 2, 0)) << "nor does a connection at its own bound";
  a.Release("A", 4);
  a.Release("B", 1);
  EXPECT_EQ(a.total(), 0);
  EXPECT_TRUE(a.Open("A", 0, 5));
  a.Release("A", 1);
  a.Dying("A", -1);
  a.Dying("A", -1);
  EXPECT_EQ(a.dying("A"), 0);
  EXPECT_EQ(a.of("A"), 0);
}

// The guard's form of the ledger stops before the HEADERS that may not open its stream (nothing
// of it counted), and takes it up when it is offered again; a frame header not yet whole waits.
TEST(H2LedgerTest, PassStopsBeforeAStreamThatMustWait) {
  H2Ledger l(64, 1024);
  const std::string all = kPreface + Headers(1) + Frame(0, 1, 1, "abc") + Headers(3) + Headers(5);
  bool room = true;
  int asked = 0;
  auto may_open = [&] {
    ++asked;
    return room;
  };
  H2Ledger::Verdict v;
  // Offered up to the fifth octet of Headers(5)'s frame header.
  size_t n = l.Pass(all.data(), all.size() - Headers(5).size() + 5, may_open, &v);
  EXPECT_EQ(v, H2Ledger::Verdict::kGoOn);
  EXPECT_EQ(n, all.size() - Headers(5).size()) << "only whole frame headers are read";
  EXPECT_EQ(l.open(), 2u);  // streams 1 and 3 (1 ended by the client's END_STREAM is still open)
  room = false;
  const std::string rest = all.substr(n);
  n = l.Pass(rest.data(), rest.size(), may_open, &v);
  EXPECT_EQ(n, 0u) << "the HEADERS of stream 5 waits";
  EXPECT_EQ(l.open(), 2u);
  room = true;
  n = l.Pass(rest.data(), rest.size(), may_open, &v);
  EXPECT_EQ(n, rest.size());
  EXPECT_EQ(l.open(), 3u);
  EXPECT_EQ(asked, 4);  // streams 1, 3, 5 (twice); never for the DATA
}

// A connection with no verified request gets 8 calls at a time by default (AOBJ-SEC-026): the
// ninth HEADERS waits (gRPC does not see it) until the server ends a call; once the connection
// is marked verified, nothing waits. A connection whose client has gone keeps its calls counted
// until gRPC closes its end.
TEST(H2GuardTest, AnUnverifiedConnectionsCallsWaitForRoom) {
  H2GuardPolicy policy;
  policy.relay_threads = 1;
  auto guard = H2Guard::Create(TlsOptions{}, policy, nullptr);
  ASSERT_TRUE(guard.ok()) << guard.status();
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  fcntl(pair[1], F_SETFL, fcntl(pair[1], F_GETFL) | O_NONBLOCK);
  uint64_t token = 0;
  const int inner = (*guard)->Adopt(pair[1], "ipv4:127.0.0.9:4000", "127.0.0.9", &token);
  ASSERT_GE(inner, 0);
  const int client = pair[0];
  std::string calls = kPreface;
  for (uint32_t s = 1; s <= 19; s += 2) calls += Headers(s);  // ten calls
  ASSERT_EQ(write(client, calls.data(), calls.size()), static_cast<ssize_t>(calls.size()));
  const size_t eight = kPreface.size() + 8 * Headers(1).size();
  EXPECT_EQ(ReadAll(inner, eight), calls.substr(0, eight));
  EXPECT_EQ(ReadWithin(inner, 300), "") << "a ninth call reached gRPC";
  EXPECT_EQ((*guard)->admission().of("127.0.0.9"), 8);
  EXPECT_GE((*guard)->stats().calls_held, 1u);
  const std::string end = Trailers(1);  // the server ends call 1: the ninth goes
  ASSERT_EQ(write(inner, end.data(), end.size()), static_cast<ssize_t>(end.size()));
  EXPECT_EQ(ReadAll(client, end.size()), end);
  EXPECT_EQ(ReadAll(inner, Headers(17).size()), Headers(17));
  EXPECT_EQ(ReadWithin(inner, 300), "") << "a tenth call reached gRPC";
  (*guard)->MarkVerified("unix-abstract:aobj-h2/" + std::to_string(token) + "/ipv4:127.0.0.9:4000");
  EXPECT_EQ(ReadAll(inner, Headers(19).size()), Headers(19)) << "verified: nothing waits";
  for (int i = 0; i < 500 && (*guard)->admission().of("127.0.0.9") != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ((*guard)->admission().of("127.0.0.9"), 0) << "a verified connection's calls count";

  // A second connection, unverified, opens two calls and its client goes: gRPC's end reads the
  // end, and the calls count until gRPC closes it.
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  fcntl(pair[1], F_SETFL, fcntl(pair[1], F_GETFL) | O_NONBLOCK);
  const int inner2 = (*guard)->Adopt(pair[1], "ipv4:127.0.0.9:4001", "127.0.0.9", nullptr);
  ASSERT_GE(inner2, 0);
  const std::string two = kPreface + Headers(1) + Headers(3);
  ASSERT_EQ(write(pair[0], two.data(), two.size()), static_cast<ssize_t>(two.size()));
  EXPECT_EQ(ReadAll(inner2, two.size()), two);
  close(pair[0]);
  EXPECT_EQ(ReadWithin5s(inner2), "EOF");
  // The guard's thread counts it dying just after it half-closes (under AddressSanitizer the
  // read above can come first).
  for (int i = 0; i < 500 && (*guard)->admission().dying("127.0.0.9") != 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ((*guard)->admission().dying("127.0.0.9"), 1);
  EXPECT_EQ((*guard)->admission().of("127.0.0.9"), 2) << "the gone client's calls stopped counting";
  close(inner2);  // gRPC closes its transport
  for (int i = 0; i < 500 && ((*guard)->admission().dying("127.0.0.9") != 0 ||
                              (*guard)->admission().of("127.0.0.9") != 0);
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ((*guard)->admission().dying("127.0.0.9"), 0);
  EXPECT_EQ((*guard)->admission().of("127.0.0.9"), 0);
  (*guard)->Stop();
  close(client);
  close(inner);
}

// AOBJ-SEC-029 (thirteenth hostile probe, N1): a call whose message the guard already holds whole
// gets one more header, in a CONTINUATION frame after its header block, naming the run's secret;
// a call whose message is still coming does not.
TEST(MarkWholeCallsTest, OnlyCallsWhoseStreamEndedAreMarked) {
  const std::string mark(32, 'k');
  const std::string field = std::string("\0\x10", 2) + kGuardWholeHeader + "\x20" + mark;
  const std::string added = Frame(9, 4, 1, field);
  auto data = [](uint32_t s, bool end) { return Frame(0, end ? 1 : 0, s, "\0\0\0\0\x01x"); };
  const std::string window = Frame(8, 0, 1, std::string("\0\0\x10\0", 4));

  // HEADERS, a WINDOW_UPDATE of its stream, then its DATA with END_STREAM: marked after the
  // HEADERS, which gives its END_HEADERS to the new frame.
  std::string in = kPreface + Headers(1) + window + data(1, true);
  uint32_t last = 0;
  std::optional<std::string> out = MarkWholeCalls(in, in.size(), 24, mark, &last);
  ASSERT_TRUE(out.has_value());
  std::string headers_without_end = Headers(1);
  headers_without_end[4] = 0;
  EXPECT_EQ(*out, kPreface + headers_without_end + added + window + data(1, true));
  EXPECT_EQ(last, 1u);
  // Looked at once: the same stream again is not marked twice.
  EXPECT_FALSE(MarkWholeCalls(in, in.size(), 24, mark, &last).has_value());

  // The message is still coming (no END_STREAM), or the stream is reset: not marked.
  last = 0;
  in = kPreface + Headers(1) + data(1, false);
  EXPECT_FALSE(MarkWholeCalls(in, in.size(), 24, mark, &last).has_value());
  last = 0;
  in = kPreface + Headers(1) + Reset(1) + data(1, true);
  EXPECT_FALSE(MarkWholeCalls(in, in.size(), 24, mark, &last).has_value());

  // The END_STREAM may lie beyond the octets passed now (it is in the guard's hands), but the
  // header block must be within them: the mark goes after its last frame.
  last = 0;
  in = kPreface + Headers(1) + data(1, true);
  const size_t through_headers = kPreface.size() + Headers(1).size();
  out = MarkWholeCalls(in, through_headers, 24, mark, &last);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(*out, kPreface + headers_without_end + added);
  last = 0;
  EXPECT_FALSE(MarkWholeCalls(in, through_headers - 1, 24, mark, &last).has_value());

  // A header block in two frames: the mark follows the CONTINUATION that ends it. Two calls,
  // the second of them whole, the first not.
  last = 0;
  const std::string first_part = Frame(1, 0, 3, std::string(20, 'h'));
  const std::string second_part = Frame(9, 4, 3, std::string(20, 'c'));
  std::string second_without_end = second_part;
  second_without_end[4] = 0;
  in = Headers(1) + first_part + second_part + data(1, false) + data(3, true);
  out = MarkWholeCalls(in, in.size(), 0, mark, &last);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(*out, Headers(1) + first_part + second_without_end + Frame(9, 4, 3, field) +
                      data(1, false) + data(3, true));
  EXPECT_EQ(last, 3u);

  // A frame begun before (`skip`): its rest is passed as it is, the frames after it are read.
  last = 0;
  const std::string tail = "\0\0\0\0\x01x";
  in = tail + Headers(5) + data(5, true);
  out = MarkWholeCalls(in, in.size(), tail.size(), mark, &last);
  ASSERT_TRUE(out.has_value());
  std::string headers5 = Headers(5);
  headers5[4] = 0;
  EXPECT_EQ(*out, tail + headers5 + Frame(9, 4, 5, field) + data(5, true));
}

// Fourteenth hostile probe, S1: whether a call's message is whole, still coming (the guard holds
// the call back a little for it), or will not be whole before gRPC reads it.
TEST(MarkWholeCallsTest, AMessageIsWholeComingOrNeverWhole) {
  auto data = [](uint32_t s, bool end, size_t n = 6) {
    return Frame(0, end ? 1 : 0, s, std::string(n, 'd'));
  };
  EXPECT_EQ(MessageStateAt(Headers(1) + data(1, true), 0), MessageState::kWhole);
  EXPECT_EQ(MessageStateAt(Frame(1, 5, 1, std::string(40, 'h')), 0), MessageState::kWhole);
  EXPECT_EQ(MessageStateAt(Headers(1), 0), MessageState::kComing);
  EXPECT_EQ(MessageStateAt(Headers(1) + data(1, false), 0), MessageState::kComing);
  EXPECT_EQ(MessageStateAt(Headers(1) + data(3, true), 0), MessageState::kComing);  // another's
  // Half a frame is not looked at yet.
  const std::string whole = Headers(1) + data(1, true);
  EXPECT_EQ(MessageStateAt(whole.substr(0, whole.size() - 1), 0), MessageState::kComing);
  EXPECT_EQ(MessageStateAt(Frame(1, 0, 1, "h"), 0), MessageState::kComing);  // block goes on
  EXPECT_EQ(MessageStateAt(Frame(1, 0, 1, "h") + Frame(9, 4, 1, "c") + data(1, true), 0),
            MessageState::kWhole);
  // Reset, trailers, a block broken off, or 16 KiB of its data without the end.
  EXPECT_EQ(MessageStateAt(Headers(1) + Reset(1) + data(1, true), 0), MessageState::kNever);
  EXPECT_EQ(MessageStateAt(Headers(1) + Trailers(1), 0), MessageState::kNever);
  EXPECT_EQ(MessageStateAt(Frame(1, 0, 1, "h") + Headers(3), 0), MessageState::kNever);
  EXPECT_EQ(MessageStateAt(Headers(1) + data(1, false, kWholeWaitOctets), 0), MessageState::kNever);
  EXPECT_EQ(MessageStateAt(Headers(1) + data(1, false, kWholeWaitOctets - 1), 0),
            MessageState::kComing);
  // Looked for among the 64 frames after the block only.
  std::string far = Headers(1);
  for (int i = 0; i < 64; ++i) far += Frame(8, 0, 0, std::string(4, '\0'));
  EXPECT_EQ(MessageStateAt(far + data(1, true), 0), MessageState::kNever);
}

// Fifteenth hostile probe, G1-G3: a call passed on while its message is still coming is marked
// late (its own value), and a whole one beside it is still marked whole.
TEST(MarkWholeCallsTest, ACallPassedOnWithoutItsMessageIsMarkedLate) {
  const std::string mark(32, 'k');
  auto data = [](uint32_t s, bool end) { return Frame(0, end ? 1 : 0, s, "\0\0\0\0\x01x"); };
  const std::string late_value = mark + ":7";
  const std::string late_field = std::string("\0\x0f", 2) + kGuardLateHeader +
                                 static_cast<char>(late_value.size()) + late_value;
  const std::string whole_field = std::string("\0\x10", 2) + kGuardWholeHeader + "\x20" + mark;
  std::string h1 = Headers(1), h3 = Headers(3);
  h1[4] = 0;
  h3[4] = 0;
  uint32_t last = 0;
  size_t whole = 99;
  std::string in = Headers(1) + data(1, false) + Headers(3) + data(3, true);
  std::optional<std::string> out =
      MarkWholeCalls(in, in.size(), 0, mark, &last, {{1, late_value}, {5, "unused"}}, &whole);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(*out, h1 + Frame(9, 4, 1, late_field) + data(1, false) + h3 +
                      Frame(9, 4, 3, whole_field) + data(3, true));
  EXPECT_EQ(whole, 1u);
  // A call named late whose stream ends here is whole, not late.
  last = 0;
  in = Headers(1) + data(1, true);
  out = MarkWholeCalls(in, in.size(), 0, mark, &last, {{1, late_value}}, &whole);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(*out, h1 + Frame(9, 4, 1, whole_field) + data(1, true));
  EXPECT_EQ(whole, 1u);
}

// Takes `l` past the preface and the HEADERS of streams 1 and 3, and watches them (tokens 11, 33).
void WatchOneAndThree(H2Ledger* l) {
  H2Ledger::Verdict v;
  const std::string in = kPreface + Headers(1) + Headers(3);
  ASSERT_EQ(l->Pass(in.data(), in.size(), nullptr, &v), in.size());
  ASSERT_TRUE(l->Watch(1, 11));
  ASSERT_TRUE(l->Watch(3, 33));
}

// The ledger reports a watched stream's end once the frame that ends it passed whole, in any
// pieces; a reset one is forgotten; at most kMaxWatched are watched.
TEST(H2LedgerTest, AWatchedStreamIsReportedOnceItsMessagePassedWhole) {
  H2Ledger l(64, 1024);
  H2Ledger::Verdict v;
  ASSERT_NO_FATAL_FAILURE(WatchOneAndThree(&l));
  std::string in;
  const std::string end1 = Frame(0, 1, 1, std::string(100, 'm'));
  // The frame header with END_STREAM and part of its payload: not yet.
  ASSERT_EQ(l.Pass(end1.data(), 50, nullptr, &v), 50u);
  EXPECT_TRUE(l.TakeEnded().empty());
  ASSERT_EQ(l.Pass(end1.data() + 50, end1.size() - 50, nullptr, &v), end1.size() - 50);
  EXPECT_EQ(l.TakeEnded(), std::vector<uint64_t>{11});
  // Reset: forgotten, never reported; nor is a stream not watched.
  in = Reset(3) + Headers(5) + Frame(0, 1, 5, "x") + Frame(0, 1, 3, "x");
  ASSERT_EQ(l.Pass(in.data(), in.size(), nullptr, &v), in.size());
  EXPECT_TRUE(l.TakeEnded().empty());
  // Trailers whose block is not whole in their first frame: forgotten, not reported (sixteenth
  // hostile probe, I1); trailers in one frame end the stream.
  ASSERT_TRUE(l.Watch(9, 99));
  ASSERT_TRUE(l.Watch(11, 111));
  in = Headers(9) + Frame(1, 1, 9, "t") + Headers(11) + Frame(1, 5, 11, "t");
  ASSERT_EQ(l.Pass(in.data(), in.size(), nullptr, &v), in.size());
  EXPECT_EQ(l.TakeEnded(), std::vector<uint64_t>{111});
  // An empty DATA frame with END_STREAM ends its stream at once.
  ASSERT_TRUE(l.Watch(7, 77));
  in = Headers(7) + Frame(0, 1, 7);
  ASSERT_EQ(l.Pass(in.data(), in.size(), nullptr, &v), in.size());
  EXPECT_EQ(l.TakeEnded(), std::vector<uint64_t>{77});
  for (uint32_t s = 0; s < H2Ledger::kMaxWatched; ++s) EXPECT_TRUE(l.Watch(101 + 2 * s, s + 1));
  EXPECT_FALSE(l.Watch(999, 1));
  EXPECT_EQ(v, H2Ledger::Verdict::kGoOn);
}

// A watched stream whose DATA passes kWholeWaitOctets without its end is reported large, once,
// and no longer watched: the rest of such a message waits for the server's flow-control window,
// which it opens only when it reads the call.
TEST(H2LedgerTest, AWatchedStreamThatSendsSixteenKiBWithoutItsEndIsReportedLarge) {
  H2Ledger l(64, 1024);
  H2Ledger::Verdict v;
  ASSERT_NO_FATAL_FAILURE(WatchOneAndThree(&l));
  std::string in;
  // One octet short of the bound on stream 1, and the bound passed by a single frame on 3.
  in = Frame(0, 0, 1, std::string(kWholeWaitOctets / 2, 'm')) +
       Frame(0, 0, 1, std::string(kWholeWaitOctets / 2 - 1, 'm')) +
       Frame(0, 0, 3, std::string(kWholeWaitOctets, 'n'));
  ASSERT_EQ(l.Pass(in.data(), in.size(), nullptr, &v), in.size());
  EXPECT_EQ(l.TakeLarge(), std::vector<uint64_t>{33});
  EXPECT_TRUE(l.TakeLarge().empty());
  in = Frame(0, 0, 1, "m") + Frame(0, 1, 3, "n");  // 3 is no longer watched: not reported
  ASSERT_EQ(l.Pass(in.data(), in.size(), nullptr, &v), in.size());
  EXPECT_EQ(l.TakeLarge(), std::vector<uint64_t>{11});
  EXPECT_TRUE(l.TakeEnded().empty());
  in = Frame(0, 1, 1, "m");
  ASSERT_EQ(l.Pass(in.data(), in.size(), nullptr, &v), in.size());
  EXPECT_TRUE(l.TakeEnded().empty()) << "reported large, then no longer watched";
  EXPECT_EQ(v, H2Ledger::Verdict::kGoOn);
}

// Seventeenth hostile probe, N4: a watched stream that the server ends (its trailers, or its
// RST_STREAM) is no longer watched; before, only the client's frames freed a watch, and 64 calls
// the server had ended took every one, so the connection's next late call went on unmarked.
TEST(H2LedgerTest, AStreamTheServerEndsIsNoLongerWatched) {
  H2Ledger l(64, 1024);
  H2Ledger::Verdict v;
  std::string in = kPreface;
  std::string out = Frame(4, 0, 0);  // the server's SETTINGS
  for (uint32_t i = 0; i < H2Ledger::kMaxWatched; ++i) {
    const uint32_t stream = 1 + 2 * i;
    in += Headers(stream);
    out += i % 2 == 0 ? Frame(1, 5, stream, "t") : Frame(3, 0, stream, std::string(4, '\0'));
  }
  ASSERT_EQ(l.Pass(in.data(), in.size(), nullptr, &v), in.size());
  for (uint32_t i = 0; i < H2Ledger::kMaxWatched; ++i) ASSERT_TRUE(l.Watch(1 + 2 * i, i + 1));
  EXPECT_FALSE(l.Watch(999, 999)) << "every watch taken";
  l.FromServer(out.data(), out.size());
  EXPECT_TRUE(l.Watch(999, 999)) << "the server ended every watched stream";
  // Their late END_STREAM frames, if the client still sends them, report nothing.
  in = Frame(0, 1, 1, "m") + Frame(0, 1, 3, "m");
  ASSERT_EQ(l.Pass(in.data(), in.size(), nullptr, &v), in.size());
  EXPECT_TRUE(l.TakeEnded().empty());
  EXPECT_EQ(v, H2Ledger::Verdict::kGoOn);
}

TEST(PeerFromGuardUriTest, TheClientsAddressComesBack) {
  EXPECT_EQ(PeerFromGuardUri("unix-abstract:aobj-h2/7/ipv4:127.0.0.1:5555"), "ipv4:127.0.0.1:5555");
  EXPECT_EQ(PeerFromGuardUri("unix-abstract:aobj-h2%2F12%2Fipv6:%5B::1%5D:80"), "ipv6:[::1]:80");
  EXPECT_EQ(PeerFromGuardUri("ipv4:10.0.0.1:9"), "ipv4:10.0.0.1:9");
  EXPECT_EQ(PeerFromGuardUri("unix-abstract:other"), "unix-abstract:other");
  EXPECT_EQ(PeerFromGuardUri("unix-abstract:aobj-h2/noslash"), "unix-abstract:aobj-h2/noslash");
}

}  // namespace
}  // namespace aobj
