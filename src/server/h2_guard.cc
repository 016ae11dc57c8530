#include "server/h2_guard.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "aobj/status.h"

namespace aobj {
namespace {

// Octets buffered each way before reading stops (then TCP's and the pair's buffers hold the
// rest): at most about kBufferCap + kReadChunk a direction per connection, given back when drained.
constexpr size_t kBufferCap = 64 << 10;
constexpr size_t kReadChunk = 64 << 10;
constexpr int kMinOpenStreams = 64;  // the floor of the open-stream bound after cuts
constexpr absl::string_view kPreface("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
constexpr absl::string_view kNamePrefix = "aobj-h2/";

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown error";
  char text[256];
  ERR_error_string_n(e, text, sizeof(text));
  return text;
}

// ALPN: gRPC speaks HTTP/2 only ("h2"); a client that offers ALPN without it is refused.
int SelectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void*) {
  static const unsigned char kH2[] = {2, 'h', '2'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kH2, sizeof(kH2), in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

// Writes out[*off..] to fd until done or it would block; false on an error.
bool Flush(int fd, std::string* out, size_t* off) {
  while (*off < out->size()) {
    const ssize_t n = write(fd, out->data() + *off, out->size() - *off);
    if (n > 0) {
      *off += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
  return true;
}

// Drops what was written once it is all written or the front is large; an idle connection keeps
// no buffer.
void Compact(std::string* buf, size_t* off) {
  if (*off == buf->size()) {
    std::string().swap(*buf);
    *off = 0;
  } else if (*off >= kBufferCap) {
    buf->erase(0, *off);
    *off = 0;
  }
}

}  // namespace

std::string PeerFromGuardUri(absl::string_view peer) {
  absl::string_view rest = peer;
  if (!absl::ConsumePrefix(&rest, "unix-abstract:")) return std::string(peer);
  std::string decoded;  // gRPC may percent-encode the name
  auto hex = [](char ch) {
    return ch >= '0' && ch <= '9'   ? ch - '0'
           : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
           : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                    : -1;
  };
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && hex(rest[i + 1]) >= 0 && hex(rest[i + 2]) >= 0) {
      decoded += static_cast<char>(hex(rest[i + 1]) * 16 + hex(rest[i + 2]));
      i += 2;
    } else {
      decoded += rest[i];
    }
  }
  absl::string_view name = decoded;
  if (!absl::ConsumePrefix(&name, kNamePrefix)) return std::string(peer);
  const size_t slash = name.find('/');
  if (slash == absl::string_view::npos) return std::string(peer);
  return std::string(name.substr(slash + 1));
}

// AOBJ_PEER_INPUT: the client's HTTP/2 frame headers (fuzz/h2_ledger_fuzzer.cc).
bool H2Ledger::Scanner::Feed(const char* data, size_t n, const Callback& on_frame) {
  size_t i = 0;
  while (i < n) {
    if (preface_left > 0) {
      const size_t take = std::min(preface_left, n - i);
      if (std::memcmp(data + i, kPreface.data() + (kPreface.size() - preface_left), take) != 0) {
        return false;
      }
      preface_left -= take;
      i += take;
    } else if (payload_left > 0) {
      const size_t take = std::min<size_t>(payload_left, n - i);
      payload_left -= static_cast<uint32_t>(take);
      i += take;
    } else {
      const size_t take = std::min(sizeof(header) - have, n - i);
      std::memcpy(header + have, data + i, take);
      have += take;
      i += take;
      if (have < sizeof(header)) break;
      have = 0;
      const uint8_t* h = header;
      payload_left = (uint32_t{h[0]} << 16) | (uint32_t{h[1]} << 8) | h[2];
      const uint32_t stream =
          ((uint32_t{h[5]} << 24) | (uint32_t{h[6]} << 16) | (uint32_t{h[7]} << 8) | h[8]) &
          0x7fffffffu;
      if (!on_frame(h[3], h[4], stream, payload_left)) return false;
    }
  }
  return true;
}

H2Ledger::H2Ledger(int budget, int max_open) : budget_(budget), max_open_(max_open) {
  client_.preface_left = kPreface.size();
}

// HTTP/2 frame types and flags (RFC 9113, section 6).
constexpr uint8_t kData = 0, kHeaders = 1, kRstStream = 3, kSettings = 4, kPing = 6,
                  kContinuation = 9;
constexpr uint8_t kEndStream = 0x1, kAck = 0x1, kEndHeaders = 0x4;

H2Ledger::Verdict H2Ledger::FromClient(const char* data, size_t n) {
  if (verdict_ != Verdict::kGoOn) return verdict_;
  const bool ok =
      client_.Feed(data, n, [this](uint8_t type, uint8_t flags, uint32_t stream, uint32_t len) {
        // A header block (HEADERS and its CONTINUATIONs) is bounded as it arrives: gRPC 1.51
        // keeps an endless run of CONTINUATION frames in memory.
        if (type == kHeaders || (type == kContinuation && in_header_block_)) {
          header_block_ = (type == kHeaders ? 0 : header_block_) + len;
          in_header_block_ = (flags & kEndHeaders) == 0;
          if (header_block_ > kMaxHeaderBlock) {
            verdict_ = Verdict::kHeadersTooLarge;
            return false;
          }
        }
        // PING and SETTINGS make the server answer: a client that does not wait for the answers
        // has gRPC queue them without bound.
        if ((type == kPing || type == kSettings) && (flags & kAck) == 0 &&
            ++unanswered_ > kMaxUnanswered) {
          verdict_ = Verdict::kControlFlood;
          return false;
        }
        if (type == kHeaders && (stream & 1) != 0 && stream > last_opened_) {
          last_opened_ = stream;
          open_.insert(stream);
          if (open_.size() > static_cast<size_t>(max_open_)) {
            verdict_ = Verdict::kTooManyOpen;
            return false;
          }
        } else if (type == kRstStream && open_.erase(stream) > 0) {
          ++resets_;
          if (resets_ >= static_cast<uint64_t>(budget_) && resets_ > 4 * finished_) {
            verdict_ = Verdict::kTooManyResets;
            return false;
          }
        }
        return true;
      });
  if (!ok && verdict_ == Verdict::kGoOn) verdict_ = Verdict::kNotHttp2;
  return verdict_;
}

void H2Ledger::FromServer(const char* data, size_t n) {
  if (verdict_ != Verdict::kGoOn) return;  // the connection is being closed
  server_.Feed(data, n, [this](uint8_t type, uint8_t flags, uint32_t stream, uint32_t) {
    if ((type == kPing || type == kSettings) && (flags & kAck) != 0) {
      if (unanswered_ > 0) --unanswered_;
      return true;
    }
    if (stream == 0) return true;
    if (type == kRstStream) {
      open_.erase(stream);
    } else if ((type == kHeaders || type == kData) && (flags & kEndStream) != 0 &&
               open_.erase(stream) > 0) {
      ++finished_;
    }
    return true;
  });
}

struct H2Guard::Conn {
  int client = -1;  // the accepted TCP connection
  int inner = -1;   // our end of the pair; gRPC holds the other
  SSL* ssl = nullptr;
  bool handshaken = false;
  bool want_write = false;  // the client socket must become writable to go on
  bool closed = false;
  absl::Time started;
  std::string peer;      // gRPC's form of the client's address
  std::string address;   // the per-address key
  std::string up, down;  // client -> gRPC, gRPC -> client; written from *_off on
  size_t up_off = 0, down_off = 0;
  std::unique_ptr<H2Ledger> ledger;              // made on the relay thread (the address's budget)
  uint32_t client_events = 0, inner_events = 0;  // as registered with epoll
};

absl::StatusOr<std::unique_ptr<H2Guard>> H2Guard::Create(
    const TlsOptions& tls, H2GuardPolicy policy, std::function<void(const std::string&)> log) {
  SSL_CTX* ctx = nullptr;
  if (tls.enabled) {
    ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == nullptr) return MakeError(ErrorCode::kInternal, "cannot create a TLS context");
    auto fail = [&](const std::string& what) {
      const std::string why = OpenSslError();
      SSL_CTX_free(ctx);
      return MakeError(ErrorCode::kInvalidArgument, absl::StrCat(what, ": ", why));
    };
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);  // idle connections hold no record buffers
    if (SSL_CTX_use_certificate_chain_file(ctx, tls.cert_file.c_str()) != 1) {
      return fail(absl::StrCat("cannot use the TLS certificate chain in ", tls.cert_file));
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      return fail(absl::StrCat("cannot use the TLS private key in ", tls.key_file));
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      return fail(absl::StrCat("the private key in ", tls.key_file,
                               " does not match the certificate in ", tls.cert_file));
    }
    if (!tls.ca_file.empty()) {  // AOBJ-CTL-012: mutual TLS
      if (SSL_CTX_load_verify_locations(ctx, tls.ca_file.c_str(), nullptr) != 1) {
        return fail(absl::StrCat("cannot use the client CA in ", tls.ca_file));
      }
      if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.ca_file.c_str())) {
        SSL_CTX_set_client_CA_list(ctx, names);
      }
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
    SSL_CTX_set_alpn_select_cb(ctx, SelectAlpn, nullptr);
  }
  std::unique_ptr<H2Guard> guard(new H2Guard(ctx, policy, std::move(log)));
  if (guard->epoll_ < 0 || guard->wake_ < 0) {
    return MakeError(ErrorCode::kInternal,
                     absl::StrCat("cannot start the HTTP/2 guard: ", std::strerror(errno)));
  }
  guard->thread_ = std::thread([g = guard.get()] { g->Loop(); });
  return guard;
}

H2Guard::H2Guard(void* ssl_ctx, H2GuardPolicy policy, std::function<void(const std::string&)> log)
    : ssl_ctx_(ssl_ctx), policy_(policy), log_(std::move(log)) {
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_ >= 0 && wake_ >= 0) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;  // the wake-up
    epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
  }
}

H2Guard::~H2Guard() {
  Stop();
  {
    absl::MutexLock l(&mu_);
    for (auto& c : adopted_) {
      if (c->ssl != nullptr) SSL_free(c->ssl);
      close(c->client);
      close(c->inner);
    }
    adopted_.clear();
  }
  if (epoll_ >= 0) close(epoll_);
  if (wake_ >= 0) close(wake_);
  if (ssl_ctx_ != nullptr) SSL_CTX_free(static_cast<SSL_CTX*>(ssl_ctx_));
}

void H2Guard::Stop() {
  if (stop_.exchange(true)) return;
  const uint64_t one = 1;
  if (wake_ >= 0) (void)!write(wake_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
}

int H2Guard::Adopt(int client, const std::string& peer_uri, const std::string& address) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) != 0) {
    close(client);
    return -1;
  }
  // gRPC names the connection's peer by the address of the other end of its socket: ours,
  // bound to a name (Linux's abstract namespace, so no file) that carries the client's address.
  // Nobody can connect to it: it never listens.
  sockaddr_un name{};
  name.sun_family = AF_UNIX;
  std::string text = absl::StrCat(kNamePrefix, next_id_.fetch_add(1), "/", peer_uri);
  text.resize(std::min(text.size(), sizeof(name.sun_path) - 1));
  std::memcpy(name.sun_path + 1, text.data(), text.size());
  (void)bind(pair[0], reinterpret_cast<sockaddr*>(&name),
             static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + text.size()));
  auto c = std::make_unique<Conn>();
  c->client = client;
  c->inner = pair[0];
  c->peer = peer_uri;
  c->address = address;
  c->started = absl::Now();
  if (ssl_ctx_ != nullptr) {
    c->ssl = SSL_new(static_cast<SSL_CTX*>(ssl_ctx_));
    if (c->ssl == nullptr || SSL_set_fd(c->ssl, client) != 1) {
      if (c->ssl != nullptr) SSL_free(c->ssl);
      close(client);
      close(pair[0]);
      close(pair[1]);
      return -1;
    }
    SSL_set_accept_state(c->ssl);
  }
  {
    absl::MutexLock l(&mu_);
    adopted_.push_back(std::move(c));
  }
  const uint64_t one = 1;
  (void)!write(wake_, &one, sizeof(one));
  relayed_.fetch_add(1);
  return pair[1];
}

int H2Guard::StrikesOf(const std::string& address) {
  auto it = strikes_.find(address);
  if (it == strikes_.end()) return 0;
  if (absl::Now() - it->second.last > policy_.strike_memory) {
    strikes_.erase(it);
    return 0;
  }
  return std::min(it->second.count, 30);
}

void H2Guard::Strike(const std::string& address) {
  const absl::Time now = absl::Now();
  if (strikes_.size() >= 65536) {  // many addresses: forget those whose memory has run out
    for (auto it = strikes_.begin(); it != strikes_.end();) {
      if (now - it->second.last > policy_.strike_memory) {
        strikes_.erase(it++);
      } else {
        ++it;
      }
    }
    if (strikes_.size() >= 65536) strikes_.clear();
  }
  Strikes& s = strikes_[address];
  ++s.count;
  s.last = now;
}

void H2Guard::Log(const std::string& line) {
  // At most one line a second: a flood of reconnecting attackers is cut thousands of times.
  const absl::Time now = absl::Now();
  if (now - last_log_ < absl::Seconds(1)) {
    ++unlogged_;
    return;
  }
  last_log_ = now;
  if (log_) {
    log_(unlogged_ == 0 ? line
                        : absl::StrCat(line, " unlogged_before=", unlogged_,
                                       " (connections cut since the last line)"));
  }
  unlogged_ = 0;
}

void H2Guard::Close(Conn* c) {
  if (c->closed) return;
  c->closed = true;
  epoll_ctl(epoll_, EPOLL_CTL_DEL, c->client, nullptr);
  epoll_ctl(epoll_, EPOLL_CTL_DEL, c->inner, nullptr);
  if (c->ssl != nullptr) {
    SSL_free(c->ssl);
    c->ssl = nullptr;
  }
  close(c->client);  // the listener sees it gone (a new file on the descriptor, or none)
  close(c->inner);   // gRPC reads the end and closes its transport
}

void H2Guard::Watch(Conn* c) {
  const size_t up_pending = c->up.size() - c->up_off;
  const size_t down_pending = c->down.size() - c->down_off;
  uint32_t client_events = 0;
  if (c->handshaken || c->ssl == nullptr ? up_pending < kBufferCap : !c->want_write) {
    client_events |= EPOLLIN;
  }
  if (c->want_write) client_events |= EPOLLOUT;
  uint32_t inner_events = 0;
  if (down_pending < kBufferCap) inner_events |= EPOLLIN;
  if (up_pending > 0) inner_events |= EPOLLOUT;
  auto update = [&](int fd, uint32_t want, uint32_t* have, uint64_t tag) {
    if (want == *have) return;
    epoll_event ev{};
    ev.events = want;
    ev.data.u64 = reinterpret_cast<uint64_t>(c) | tag;
    epoll_ctl(epoll_, EPOLL_CTL_MOD, fd, &ev);
    *have = want;
  };
  update(c->client, client_events, &c->client_events, 0);
  update(c->inner, inner_events, &c->inner_events, 1);
}

void H2Guard::Pump(Conn* c) {
  if (c->closed) return;
  SSL* const ssl = c->ssl;
  c->want_write = false;
  if (ssl != nullptr && !c->handshaken) {
    ERR_clear_error();
    const int rc = SSL_accept(ssl);
    if (rc != 1) {
      const int e = SSL_get_error(ssl, rc);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        c->want_write = e == SSL_ERROR_WANT_WRITE;
        Watch(c);
        return;
      }
      tls_failed_.fetch_add(1);
      ERR_clear_error();
      Close(c);
      return;
    }
    const unsigned char* alpn = nullptr;
    unsigned int alpn_len = 0;
    SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
    if (alpn_len != 2 || std::memcmp(alpn, "h2", 2) != 0) {  // gRPC needs ALPN "h2"
      tls_failed_.fetch_add(1);
      Close(c);
      return;
    }
    c->handshaken = true;
  }

  // Every frame header the client sends is looked at before gRPC gets it (AOBJ-SEC-023).
  auto scan_up = [&](const char* data, size_t n) {
    H2Ledger& l = *c->ledger;
    switch (l.FromClient(data, n)) {
      case H2Ledger::Verdict::kGoOn:
        return true;
      case H2Ledger::Verdict::kTooManyResets:
        cut_for_resets_.fetch_add(1);
        Strike(c->address);
        Log(absl::StrCat("event=connection_cut reason=reset_streams peer=", c->peer,
                         " (its client reset ", l.resets(),
                         " streams before the server ended them, more than four times the ",
                         l.finished(), " it let end)"));
        return false;
      case H2Ledger::Verdict::kTooManyOpen:
        cut_for_streams_.fetch_add(1);
        Strike(c->address);
        Log(absl::StrCat("event=connection_cut reason=open_streams peer=", c->peer,
                         " (its client kept more than ", policy_.max_open_streams,
                         " streams open)"));
        return false;
      case H2Ledger::Verdict::kHeadersTooLarge:
        Log(absl::StrCat("event=connection_cut reason=header_block peer=", c->peer,
                         " (a header block of more than ", H2Ledger::kMaxHeaderBlock, " octets)"));
        return false;
      case H2Ledger::Verdict::kControlFlood:
        Log(absl::StrCat("event=connection_cut reason=unanswered_pings peer=", c->peer,
                         " (more than ", H2Ledger::kMaxUnanswered,
                         " PING or SETTINGS frames sent without waiting for their answers)"));
        return false;
      case H2Ledger::Verdict::kNotHttp2:
        return false;  // gRPC would refuse it anyway
    }
    return false;
  };
  auto scan_down = [&](const char* data, size_t n) { c->ledger->FromServer(data, n); };

  char buf[kReadChunk];
  bool client_done = false;
  bool inner_done = false;
  // Rounds, so that plaintext OpenSSL holds (which epoll cannot see) is taken once the buffer
  // toward gRPC has room again.
  for (int round = 0; round < 8; ++round) {
    bool full = false;
    while (!client_done) {
      if (c->up.size() - c->up_off >= kBufferCap) {
        full = true;
        break;
      }
      ssize_t n;
      if (ssl != nullptr) {
        ERR_clear_error();
        const int rc = SSL_read(ssl, buf, sizeof(buf));
        if (rc <= 0) {
          const int e = SSL_get_error(ssl, rc);
          if (e == SSL_ERROR_WANT_WRITE) c->want_write = true;
          if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) client_done = true;
          ERR_clear_error();
          break;
        }
        n = rc;
      } else {
        n = read(c->client, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          client_done = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
          break;
        }
      }
      if (!scan_up(buf, static_cast<size_t>(n))) {  // cut: nothing of this read reaches gRPC
        Close(c);
        return;
      }
      c->up.append(buf, static_cast<size_t>(n));
    }
    if (!Flush(c->inner, &c->up, &c->up_off)) inner_done = true;
    Compact(&c->up, &c->up_off);
    if (!full || c->up.size() - c->up_off >= kBufferCap || client_done || inner_done) break;
  }
  while (!inner_done && c->down.size() - c->down_off < kBufferCap) {
    const ssize_t n = read(c->inner, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      inner_done = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
      break;
    }
    scan_down(buf, static_cast<size_t>(n));
    c->down.append(buf, static_cast<size_t>(n));
  }
  while (c->down_off < c->down.size()) {
    const size_t len = std::min<size_t>(c->down.size() - c->down_off, INT_MAX);
    if (ssl != nullptr) {
      ERR_clear_error();
      const int rc = SSL_write(ssl, c->down.data() + c->down_off, static_cast<int>(len));
      if (rc > 0) {
        c->down_off += static_cast<size_t>(rc);
        continue;
      }
      const int e = SSL_get_error(ssl, rc);
      ERR_clear_error();
      if (e == SSL_ERROR_WANT_WRITE) {
        c->want_write = true;
      } else if (e != SSL_ERROR_WANT_READ) {
        client_done = true;
      }
      break;
    }
    const ssize_t n = write(c->client, c->down.data() + c->down_off, len);
    if (n > 0) {
      c->down_off += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        c->want_write = true;
      } else {
        client_done = true;
      }
      break;
    }
  }
  Compact(&c->down, &c->down_off);
  // Either end gone: the other is closed too (an HTTP/2 connection has no use half-closed).
  if (client_done || inner_done) {
    Close(c);
    return;
  }
  Watch(c);
}

void H2Guard::Loop() {
  absl::flat_hash_map<Conn*, std::unique_ptr<Conn>> conns;
  epoll_event events[64];
  absl::Time next_sweep = absl::Now() + absl::Seconds(1);
  while (!stop_.load()) {
    const int n = epoll_wait(epoll_, events, 64, 1000);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr) {  // new connections, or Stop()
        uint64_t count;
        (void)!read(wake_, &count, sizeof(count));
        std::vector<std::unique_ptr<Conn>> taken;
        {
          absl::MutexLock l(&mu_);
          taken.swap(adopted_);
        }
        for (auto& c : taken) {
          Conn* raw = c.get();
          // Each cut of the address in the last minute halves both bounds for its next
          // connections, down to floors that a client working normally stays under.
          const int strikes = StrikesOf(raw->address);
          raw->ledger = std::make_unique<H2Ledger>(
              std::max(policy_.min_resets_to_cut, policy_.resets_to_cut >> strikes),
              std::max(std::min(policy_.max_open_streams, kMinOpenStreams),
                       policy_.max_open_streams >> strikes));
          epoll_event ev{};
          ev.events = raw->client_events = EPOLLIN;
          ev.data.u64 = reinterpret_cast<uint64_t>(raw);
          const bool ok = epoll_ctl(epoll_, EPOLL_CTL_ADD, raw->client, &ev) == 0;
          ev.events = raw->inner_events = EPOLLIN;
          ev.data.u64 = reinterpret_cast<uint64_t>(raw) | 1;
          if (!ok || epoll_ctl(epoll_, EPOLL_CTL_ADD, raw->inner, &ev) != 0) {
            Close(raw);
            continue;
          }
          conns.emplace(raw, std::move(c));
          Pump(raw);
        }
        continue;
      }
      Conn* c = reinterpret_cast<Conn*>(events[i].data.u64 & ~uint64_t{1});
      Pump(c);
      // A hang-up or error cannot be masked and would be reported again and again while the
      // buffer toward the other side is full: what could be passed on was, the rest is moot.
      if ((events[i].events & (EPOLLHUP | EPOLLERR)) != 0) Close(c);
    }
    const absl::Time now = absl::Now();
    const bool sweep = now >= next_sweep;
    if (sweep) next_sweep = now + absl::Seconds(1);
    for (auto it = conns.begin(); it != conns.end();) {
      Conn* c = it->first;
      if (!c->closed && sweep && c->ssl != nullptr && !c->handshaken &&
          now - c->started > policy_.handshake_timeout) {
        tls_failed_.fetch_add(1);
        Close(c);
      }
      if (c->closed) {
        conns.erase(it++);
      } else {
        ++it;
      }
    }
  }
  for (auto& [raw, c] : conns) Close(raw);
}

}  // namespace aobj
