#include "server/h2_guard.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
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
#include <optional>
#include <random>
#include <vector>

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
constexpr int kMinOpenStreams = 64;               // the floor of the open-stream bound after cuts
constexpr uint64_t kMinIdleAllowance = 64 << 10;  // and of H2Ledger's idle allowance
// How long a connection whose gRPC end closed may take to pass on what gRPC wrote last (and how
// long Stop() waits for all of them).
constexpr absl::Duration kDrainTime = absl::Seconds(1);
// How long a connection whose client has gone may wait for gRPC to close its transport (and so
// keep counting against AOBJ-SEC-026's bounds) before the guard closes its end anyway.
constexpr absl::Duration kDyingTime = absl::Seconds(10);
// How often a relay thread looks again at connections whose next call waits for room.
constexpr int kHeldRetryMs = 5;
// What a connection whose next call waits may hold back beyond kBufferCap, while all of them
// hold less than kHeldTotal: the frames of the calls after the one that waits (each may carry a
// stream's flow-control window of its message: 64 KiB at first, more once gRPC's bandwidth probe
// has grown it) come before those of the calls under way, which must still get through for
// anything to end. A connection that holds back more waits for its calls under way to end by
// the server's read bound (AOBJ-SEC-018).
constexpr size_t kHeldCap = 4 << 20;
constexpr size_t kHeldTotal = 64 << 20;
// The handshake thread looks at up to kHandshakeScan ready connections at a time and works on the
// kHandshakesPerRound of them whose addresses have the fewest handshakes under way (the others
// stay ready and are looked at again): a flood of ClientHellos from some addresses delays the
// handshakes of another by a round, not by the flood's backlog.
constexpr int kHandshakeScan = 4096;
constexpr int kHandshakesPerRound = 16;
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
    const ssize_t n = send(fd, out->data() + *off, out->size() - *off, MSG_NOSIGNAL);
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

namespace {

// The guard's name of a connection ("unix-abstract:aobj-h2/ID/PEER", percent-encoded or not):
// its ID and PEER; false for other strings.
bool ParseGuardUri(absl::string_view peer, uint64_t* id, std::string* client) {
  absl::string_view rest = peer;
  if (!absl::ConsumePrefix(&rest, "unix-abstract:")) return false;
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
  if (!absl::ConsumePrefix(&name, kNamePrefix)) return false;
  const size_t slash = name.find('/');
  if (slash == absl::string_view::npos || !absl::SimpleAtoi(name.substr(0, slash), id)) {
    return false;
  }
  *client = std::string(name.substr(slash + 1));
  return true;
}

}  // namespace

std::string PeerFromGuardUri(absl::string_view peer) {
  uint64_t id;
  std::string client;
  return ParseGuardUri(peer, &id, &client) ? client : std::string(peer);
}

bool H2Admission::Open(const std::string& address, int open, int admitted) {
  if (open >= policy_.per_connection) return false;
  absl::MutexLock l(&mu_);
  Address& a = addresses_[address];
  const bool first = admitted == 0 && a.dying < policy_.first_call_dying_per_address;
  if (!first && (a.calls >= policy_.per_address || total_ >= policy_.total)) {
    if (a.calls == 0 && a.dying == 0) addresses_.erase(address);
    return false;
  }
  ++a.calls;
  ++total_;
  return true;
}

void H2Admission::Forget(absl::flat_hash_map<std::string, Address>::iterator it) {
  if (it->second.calls <= 0 && it->second.dying <= 0) addresses_.erase(it);
}

void H2Admission::Release(const std::string& address, int calls) {
  if (calls <= 0) return;
  absl::MutexLock l(&mu_);
  total_ -= calls;
  auto it = addresses_.find(address);
  if (it == addresses_.end()) return;
  it->second.calls -= calls;
  Forget(it);
}

void H2Admission::Dying(const std::string& address, int delta) {
  absl::MutexLock l(&mu_);
  auto it = addresses_.try_emplace(address).first;
  it->second.dying += delta;
  Forget(it);
}

int H2Admission::total() const {
  absl::MutexLock l(&mu_);
  return total_;
}

int H2Admission::of(const std::string& address) const {
  absl::MutexLock l(&mu_);
  auto it = addresses_.find(address);
  return it == addresses_.end() ? 0 : it->second.calls;
}

int H2Admission::dying(const std::string& address) const {
  absl::MutexLock l(&mu_);
  auto it = addresses_.find(address);
  return it == addresses_.end() ? 0 : it->second.dying;
}

// AOBJ_PEER_INPUT: the client's HTTP/2 frame headers (fuzz/h2_ledger_fuzzer.cc).
size_t H2Ledger::Scanner::Feed(const char* data, size_t n, const Callback& on_frame,
                               bool* stopped) {
  size_t i = 0;
  while (i < n) {
    if (preface_left > 0) {
      const size_t take = std::min(preface_left, n - i);
      if (std::memcmp(data + i, kPreface.data() + (kPreface.size() - preface_left), take) != 0) {
        *stopped = true;
        return i;
      }
      preface_left -= take;
      i += take;
    } else if (payload_left > 0) {
      const size_t take = std::min<size_t>(payload_left, n - i);
      payload_left -= static_cast<uint32_t>(take);
      i += take;
    } else {
      if (n - i < 9) break;  // the rest of the header comes later
      const auto* h = reinterpret_cast<const uint8_t*>(data + i);
      const uint32_t len = (uint32_t{h[0]} << 16) | (uint32_t{h[1]} << 8) | h[2];
      const uint32_t stream =
          ((uint32_t{h[5]} << 24) | (uint32_t{h[6]} << 16) | (uint32_t{h[7]} << 8) | h[8]) &
          0x7fffffffu;
      frame_at = i;
      const Step step = on_frame(h[3], h[4], stream, len);
      if (step == Step::kHold) break;
      if (step == Step::kStop) {
        *stopped = true;
        return i;
      }
      payload_left = len;
      i += 9;
    }
  }
  return i;
}

H2Ledger::H2Ledger(int budget, int max_open, int max_open_unacked, uint64_t idle_allowance)
    : budget_(budget),
      max_open_(max_open),
      max_open_unacked_(max_open_unacked > 0 ? max_open_unacked : max_open),
      idle_allowance_(idle_allowance) {
  client_.preface_left = kPreface.size();
}

constexpr uint8_t kData = 0, kHeaders = 1, kRstStream = 3, kSettings = 4, kPing = 6,
                  kContinuation = 9;
constexpr uint8_t kEndStream = 0x1, kAck = 0x1, kEndHeaders = 0x4;

H2Ledger::Step H2Ledger::OnClientFrame(uint8_t type, uint8_t flags, uint32_t stream, uint32_t len,
                                       const std::function<bool()>& may_open) {
  // A frame header after it: the frame that ends a watched stream passed whole.
  if (ending_ != 0) ended_.push_back(std::exchange(ending_, 0));
  const bool opens = type == kHeaders && (stream & 1) != 0 && stream > last_opened_;
  // Asked first, before anything of the frame is counted: a held frame is offered again.
  if (opens && may_open && !may_open()) return Step::kHold;
  octets_ += 9 + uint64_t{len};
  if (type == kData || type == kHeaders || type == kContinuation) payload_ += len;
  if (octets_ / 8 > payload_ + idle_allowance_) {
    verdict_ = Verdict::kFrameFlood;
    return Step::kStop;
  }
  if (type == kHeaders || (type == kContinuation && in_header_block_)) {
    header_block_ = (type == kHeaders ? 0 : header_block_) + len;
    header_frames_ = (type == kHeaders ? 0 : header_frames_) + 1;
    in_header_block_ = (flags & kEndHeaders) == 0;
    if (header_block_ > kMaxHeaderBlock || header_frames_ > kMaxHeaderFrames) {
      verdict_ = Verdict::kHeadersTooLarge;
      return Step::kStop;
    }
  }
  if (type == kSettings && (flags & kAck) != 0) settings_acked_ = true;
  if ((type == kPing || type == kSettings) && (flags & kAck) == 0 &&
      ++unanswered_ > kMaxUnanswered) {
    verdict_ = Verdict::kControlFlood;
    return Step::kStop;
  }
  if (opens) {
    last_opened_ = stream;
    open_.insert(stream);
    if (open_.size() > static_cast<size_t>(settings_acked_ ? max_open_ : max_open_unacked_)) {
      verdict_ = Verdict::kTooManyOpen;
      return Step::kStop;
    }
  } else if (type == kRstStream && open_.erase(stream) > 0) {
    ++resets_;
    if (resets_ >= static_cast<uint64_t>(budget_) && resets_ > 4 * finished_) {
      verdict_ = Verdict::kTooManyResets;
      return Step::kStop;
    }
  }
  if (!watched_.empty() && (type == kData || type == kHeaders || type == kRstStream)) {
    auto w = watched_.find(stream);
    if (w != watched_.end() && (type == kRstStream || (flags & kEndStream) != 0)) {
      // Reported once the frame's payload passed too (Pass): END_STREAM on a frame whose
      // payload never comes is no message. Nor is a trailers block that is not whole in its
      // first frame (sixteenth hostile probe, I1: HEADERS with END_STREAM and no END_HEADERS,
      // never continued, was reported; gRPC never saw the stream end): the stream is forgotten.
      if (type == kData || (type == kHeaders && (flags & kEndHeaders) != 0)) {
        ending_ = w->second.token;
      }
      watched_.erase(w);
    } else if (w != watched_.end() && type == kData &&
               (w->second.data += len) >= kWholeWaitOctets) {
      // A large message: its rest needs the server's flow-control window, so it comes only once
      // the server reads it (sixteenth probe's fix: a 1 MiB message marked late was never read).
      large_.push_back(w->second.token);
      watched_.erase(w);
    }
  }
  return Step::kGo;
}

bool H2Ledger::Watch(uint32_t stream, uint64_t token) {
  if (watched_.size() >= kMaxWatched) return false;
  watched_[stream] = Watched{token};
  return true;
}

size_t H2Ledger::Pass(const char* data, size_t n, const std::function<bool()>& may_open,
                      Verdict* verdict) {
  if (verdict_ != Verdict::kGoOn) {
    *verdict = verdict_;
    return 0;
  }
  bool stopped = false;
  const size_t passed = client_.Feed(
      data, n,
      [&](uint8_t type, uint8_t flags, uint32_t stream, uint32_t len) {
        return OnClientFrame(type, flags, stream, len, may_open);
      },
      &stopped);
  if (stopped && verdict_ == Verdict::kGoOn) verdict_ = Verdict::kNotHttp2;
  // A watched stream has ended once the last octet of the frame that ends it passed.
  if (ending_ != 0 && client_.payload_left == 0) ended_.push_back(std::exchange(ending_, 0));
  *verdict = verdict_;
  return verdict_ == Verdict::kGoOn ? passed : 0;
}

namespace {

struct FrameAt {
  size_t at = 0;  // its header's offset
  uint32_t len = 0;
  uint8_t type = 0, flags = 0;
  uint32_t stream = 0;
  size_t end() const { return at + 9 + len; }
};

// The frame whose header starts at `at` of `held`, when its header and payload are all there.
std::optional<FrameAt> WholeFrameAt(absl::string_view held, size_t at) {
  if (held.size() < at || held.size() - at < 9) return std::nullopt;
  const auto* h = reinterpret_cast<const uint8_t*>(held.data() + at);
  FrameAt f;
  f.at = at;
  f.len = (uint32_t{h[0]} << 16) | (uint32_t{h[1]} << 8) | h[2];
  f.type = h[3];
  f.flags = h[4];
  f.stream = ((uint32_t{h[5]} << 24) | (uint32_t{h[6]} << 16) | (uint32_t{h[7]} << 8) | h[8]) &
             0x7fffffffu;
  if (held.size() - at - 9 < f.len) return std::nullopt;
  return f;
}

}  // namespace

// AOBJ_PEER_INPUT: the client's HTTP/2 frames (fuzz/h2_ledger_fuzzer.cc).
MessageState MessageStateAt(absl::string_view held, size_t at) {
  constexpr int kLookAhead = 64;  // frames after a header block searched for its END_STREAM
  const std::optional<FrameAt> f = WholeFrameAt(held, at);
  if (!f.has_value()) return MessageState::kComing;
  if ((f->flags & kEndStream) != 0) return MessageState::kWhole;
  std::optional<FrameAt> last = f;  // the block's last frame
  while ((last->flags & kEndHeaders) == 0) {
    last = WholeFrameAt(held, last->end());
    if (!last.has_value()) return MessageState::kComing;
    if (last->type != kContinuation || last->stream != f->stream) return MessageState::kNever;
  }
  uint64_t data = 0;
  std::optional<FrameAt> next = WholeFrameAt(held, last->end());
  for (int i = 0; next.has_value(); ++i) {
    if (i == kLookAhead) return MessageState::kNever;
    if (next->stream == f->stream) {
      if (next->type == kRstStream || next->type == kHeaders) return MessageState::kNever;
      if (next->type == kData) {
        if ((next->flags & kEndStream) != 0) return MessageState::kWhole;
        data += next->len;
        if (data >= kWholeWaitOctets) return MessageState::kNever;
      }
    }
    next = WholeFrameAt(held, next->end());
  }
  return MessageState::kComing;
}

std::optional<std::string> MarkWholeCalls(absl::string_view held, size_t n, size_t skip,
                                          absl::string_view mark, uint32_t* last_opened,
                                          const std::vector<LateCall>& late, size_t* whole_count) {
  n = std::min(n, held.size());
  if (whole_count != nullptr) *whole_count = 0;
  // The last frame of each header block to mark, and the header (name, value) it gets.
  struct End {
    FrameAt last;
    absl::string_view name, value;
  };
  std::vector<End> ends;
  for (size_t at = skip; at < n;) {
    const std::optional<FrameAt> f = WholeFrameAt(held, at);
    if (!f.has_value()) break;  // the rest is not whole yet: nothing after it is looked at
    at = f->end();
    if (f->type != kHeaders || (f->stream & 1) == 0 || f->stream <= *last_opened) continue;
    *last_opened = f->stream;
    // The block's last frame: this one, or the CONTINUATION with END_HEADERS that follows.
    std::optional<FrameAt> last = f;
    while (last.has_value() && (last->flags & kEndHeaders) == 0) {
      last = WholeFrameAt(held, last->end());
      if (last.has_value() && (last->type != kContinuation || last->stream != f->stream)) {
        last.reset();  // not a well-formed block: gRPC ends the connection; nothing to mark
      }
    }
    if (!last.has_value() || last->end() > n) continue;
    if (MessageStateAt(held, f->at) == MessageState::kWhole) {
      ends.push_back({*last, kGuardWholeHeader, mark});
      if (whole_count != nullptr) ++*whole_count;
      continue;
    }
    for (const LateCall& c : late) {
      if (c.stream == f->stream) {
        ends.push_back({*last, kGuardLateHeader, c.value});
        break;
      }
    }
  }
  if (ends.empty()) return std::nullopt;
  std::string out;
  out.reserve(n + ends.size() * (9 + 3 + sizeof(kGuardWholeHeader) + 2 * mark.size()));
  size_t from = 0;
  for (const End& e : ends) {
    const FrameAt& last = e.last;
    // Literal header field without indexing, new name (RFC 7541 6.2.2): the decoder's table is
    // left as it was. Both strings are shorter than 127 octets: one length octet each.
    std::string field;
    field.push_back('\0');
    field.push_back(static_cast<char>(e.name.size()));
    field.append(e.name.data(), e.name.size());
    field.push_back(static_cast<char>(std::min<size_t>(e.value.size(), 126)));
    field.append(e.value.data(), std::min<size_t>(e.value.size(), 126));
    out.append(held.data() + from, last.end() - from);
    // The block's last frame gives its END_HEADERS to the new frame.
    out[out.size() - last.len - 9 + 4] = static_cast<char>(last.flags & ~kEndHeaders);
    const uint32_t len = static_cast<uint32_t>(field.size());
    const char header[9] = {static_cast<char>(len >> 16),
                            static_cast<char>(len >> 8),
                            static_cast<char>(len),
                            static_cast<char>(kContinuation),
                            static_cast<char>(kEndHeaders),
                            static_cast<char>(last.stream >> 24),
                            static_cast<char>(last.stream >> 16),
                            static_cast<char>(last.stream >> 8),
                            static_cast<char>(last.stream)};
    out.append(header, 9);
    out.append(field);
    from = last.end();
  }
  out.append(held.data() + from, n - from);
  return out;
}

H2Ledger::Verdict H2Ledger::FromClient(const char* data, size_t n) {
  if (verdict_ != Verdict::kGoOn) return verdict_;
  Verdict v;
  if (client_rest_.empty()) {  // most often: no partial frame header is waiting
    const size_t passed = Pass(data, n, nullptr, &v);
    if (v == Verdict::kGoOn) client_rest_.assign(data + passed, n - passed);
    return v;
  }
  client_rest_.append(data, n);
  const size_t passed = Pass(client_rest_.data(), client_rest_.size(), nullptr, &v);
  client_rest_.erase(0, passed);
  return v;
}

void H2Ledger::FromServer(const char* data, size_t n) {
  if (verdict_ != Verdict::kGoOn) return;  // the connection is being closed
  const bool whole = server_rest_.empty();  // most often: no partial frame header is waiting
  if (!whole) server_rest_.append(data, n);
  bool stopped = false;
  const size_t read = server_.Feed(
      whole ? data : server_rest_.data(), whole ? n : server_rest_.size(),
      [this](uint8_t type, uint8_t flags, uint32_t stream, uint32_t) {
        if ((type == kPing || type == kSettings) && (flags & kAck) != 0) {
          if (unanswered_ > 0) --unanswered_;
          return Step::kGo;
        }
        if (stream == 0) return Step::kGo;
        const bool ends = type == kRstStream ||
                          ((type == kHeaders || type == kData) && (flags & kEndStream) != 0);
        if (type == kRstStream) {
          open_.erase(stream);
        } else if (ends && open_.erase(stream) > 0) {
          ++finished_;
        }
        // A call the server ended is no longer watched (seventeenth hostile probe, N4: erased on
        // the client's frames only, 64 calls the server ended unreset took every watch, and the
        // connection's further late calls went on unmarked).
        if (ends && !watched_.empty()) watched_.erase(stream);
        return Step::kGo;
      },
      &stopped);
  if (whole) {
    server_rest_.assign(data + read, n - read);
  } else {
    server_rest_.erase(0, read);
  }
}

struct H2Guard::Conn {
  int client = -1;  // the accepted TCP connection
  int inner = -1;   // our end of the pair; gRPC holds the other
  uint64_t token = 0;
  SSL* ssl = nullptr;
  bool handshaken = false;
  std::atomic<bool> awaits_handshake{false};  // TLS, handshake not done (Handshake())
  std::atomic<int64_t> handshake_done_ms{0};  // when it was done (Unix milliseconds)
  bool handed_off = false;  // given by the handshake thread to a relay thread
  bool counted = false;     // in its handshake thread's count of its address (Relay::under_way)
  bool want_write = false;  // the client socket must become writable to go on
  bool closed = false;
  bool draining = false;         // gRPC closed its end; what it wrote is still being passed on
  bool inner_watched = false;    // gRPC's end is registered with epoll
  std::atomic<bool> cut{false};  // Cut() asked for its end
  absl::Time drain_deadline;
  absl::Time started;
  std::string peer;      // gRPC's form of the client's address
  std::string address;   // the per-address key
  std::string up, down;  // client -> gRPC, gRPC -> client; written from *_off on
  size_t up_off = 0, down_off = 0;
  std::unique_ptr<H2Ledger> ledger;              // made by the first relay thread that holds it
  uint32_t client_events = 0, inner_events = 0;  // as registered with epoll
  // AOBJ-SEC-026: the client's octets read and not yet passed to gRPC (from a HEADERS that must
  // wait for room, or a frame header not yet whole; at most about kBufferCap, then the client is
  // not read), and whether the next call waits.
  std::string held;
  bool waits = false;
  std::atomic<bool> verified{false};  // carried a request whose signature verified
  int charged = 0;                    // its calls counted by the guard's H2Admission
  int admitted = 0;                   // all it was let open while unverified
  bool dying = false;                 // the client has gone; gRPC's transport has not yet
  absl::Time dying_deadline;
  size_t held_counted = 0;  // of `held`, in the guard's held_bytes_
  size_t kept = 0;          // of `held`, the frames already looked at behind the waiting call
  uint32_t last_marked = 0;  // the highest stream MarkWholeCalls looked at (AOBJ-SEC-029)
  // Since when calls of this connection wait for their messages (AOBJ-SEC-029); the window is
  // shared by all that arrive while one waits, and ends when none is held back.
  bool holding = false;
  absl::Time hold_since;
  bool awaits_message = false;  // the next call waits for its message, not for room
};

struct H2Guard::Relay {
  bool handshakes = false;  // the handshake thread: no relaying
  int epoll = -1;
  int wake = -1;  // eventfd
  absl::Mutex mu;
  std::vector<std::unique_ptr<Conn>> given ABSL_GUARDED_BY(mu);  // to be taken on the thread
  std::thread thread;
  // The thread's own:
  absl::flat_hash_map<Conn*, std::unique_ptr<Conn>> conns;
  std::vector<Conn*> closed;  // closed in this round
  std::vector<Conn*> handed;  // handed off in this round
  // The handshake thread's: handshakes under way per address (the order they are worked on).
  absl::flat_hash_map<std::string, int> under_way;
  absl::flat_hash_set<Conn*> waiting;  // whose next call waits for room (AOBJ-SEC-026)
  // Whose next call waits for the rest of its message (AOBJ-SEC-029), until when: looked at
  // again when the client sends more, or then (retrying these every kHeldRetryMs, as the ones
  // above, cost a filler of such calls the guard's core for nothing; fifteenth hostile probe).
  absl::flat_hash_map<Conn*, absl::Time> awaiting;
  void Uncount(Conn* c) {
    if (!c->counted) return;
    c->counted = false;
    auto it = under_way.find(c->address);
    if (it != under_way.end() && --it->second <= 0) under_way.erase(it);
  }
  uint64_t seen_cut_epoch = 0;
  std::unique_ptr<char[]> buffer{new char[kReadChunk]};  // one read at a time

  void Wake() {
    const uint64_t one = 1;
    if (wake >= 0) (void)!write(wake, &one, sizeof(one));
  }
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
    // A connection's read and write buffers (some 34 KB) are given back whenever they are empty,
    // as nginx does: an idle connection then holds little (eighth hostile probe: completed
    // handshakes held idle cost the server about 33 KB each).
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    // As gRPC 1.51's own TLS server: forward-secret AEAD suites only below TLS 1.3, a session
    // context (resumption with client certificates fails without one), partial chains in the
    // client CA file, and no passphrase prompt for a key file.
    SSL_CTX_set_cipher_list(ctx,
                            "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
                            "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384");
    // Key exchange on X25519 or P-256 only (gRPC 1.51's server offered P-256 alone): OpenSSL 3's
    // default list also has the finite-field groups up to ffdhe8192, and a ClientHello whose key
    // share names ffdhe8192 cost the server about 12 ms of a core (a key and a derivation, 6 ms
    // each here), some 45 RSA-2048 signatures: CPU for free to anyone who can connect.
    if (SSL_CTX_set1_groups_list(ctx, "X25519:P-256") != 1) {
      return fail("cannot restrict the TLS key exchange groups");
    }
    static const unsigned char kSessionContext[] = "aobj";
    SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof(kSessionContext) - 1);
    X509_STORE_set_flags(SSL_CTX_get_cert_store(ctx),
                         X509_V_FLAG_PARTIAL_CHAIN | X509_V_FLAG_TRUSTED_FIRST);
    SSL_CTX_set_default_passwd_cb(ctx, [](char*, int, int, void*) { return 0; });
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
  for (auto& r : guard->relays_) {
    if (r->epoll < 0 || r->wake < 0) {
      return MakeError(ErrorCode::kInternal,
                       absl::StrCat("cannot start the HTTP/2 guard: ", std::strerror(errno)));
    }
  }
  for (auto& r : guard->relays_) {
    r->thread = std::thread([g = guard.get(), raw = r.get()] { g->Loop(raw); });
  }
  return guard;
}

H2Guard::H2Guard(void* ssl_ctx, H2GuardPolicy policy, std::function<void(const std::string&)> log)
    : ssl_ctx_(ssl_ctx), policy_(policy), log_(std::move(log)), admission_(policy.unverified) {
  // Names start at a random number: another local process cannot take them in advance.
  std::random_device random;
  next_id_.store((uint64_t{random()} << 32) | random());
  int relays = policy_.relay_threads;
  if (relays <= 0)
    relays = std::clamp<int>(static_cast<int>(std::thread::hardware_concurrency()) / 8, 1, 4);
  if (ssl_ctx_ != nullptr) {  // the handshake thread
    relays_.push_back(std::make_unique<Relay>());
    relays_.back()->handshakes = true;
    first_relay_ = 1;
  }
  for (int i = 0; i < relays; ++i) relays_.push_back(std::make_unique<Relay>());
  for (auto& r : relays_) {
    r->epoll = epoll_create1(EPOLL_CLOEXEC);
    r->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (r->epoll >= 0 && r->wake >= 0) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.ptr = nullptr;  // the wake-up
      epoll_ctl(r->epoll, EPOLL_CTL_ADD, r->wake, &ev);
    }
  }
}

H2Guard::~H2Guard() {
  Stop();
  for (auto& r : relays_) {
    {
      absl::MutexLock l(&r->mu);
      for (auto& c : r->given) {  // handed to a thread that had stopped
        if (c->ssl != nullptr) SSL_free(c->ssl);
        close(c->client);
        close(c->inner);
      }
      r->given.clear();
    }
    if (r->epoll >= 0) close(r->epoll);
    if (r->wake >= 0) close(r->wake);
  }
  if (ssl_ctx_ != nullptr) SSL_CTX_free(static_cast<SSL_CTX*>(ssl_ctx_));
}

void H2Guard::Stop() {
  if (stop_.exchange(true)) return;
  for (auto& r : relays_) r->Wake();
  for (auto& r : relays_) {
    if (r->thread.joinable()) r->thread.join();
  }
}

H2Guard::Relay* H2Guard::NextRelay() {
  const size_t n = relays_.size() - first_relay_;
  return relays_[first_relay_ + next_relay_.fetch_add(1) % n].get();
}

void H2Guard::Give(Relay* r, std::unique_ptr<Conn> c) {
  {
    absl::MutexLock l(&r->mu);
    r->given.push_back(std::move(c));
  }
  r->Wake();
}

int H2Guard::Adopt(int client, const std::string& peer_uri, const std::string& address,
                   uint64_t* token) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) != 0) {
    close(client);
    return -1;
  }
  // gRPC names the connection's peer by the address of the other end of its socket: ours,
  // bound to a name (Linux's abstract namespace, so no file) that carries the client's address.
  // Nobody can connect to it: it never listens.
  // Another process of the network namespace may hold a name first: the next number is tried.
  bool named = false;
  uint64_t id = 0;
  for (int attempt = 0; attempt < 8 && !named; ++attempt) {
    sockaddr_un name{};
    name.sun_family = AF_UNIX;
    id = next_id_.fetch_add(1);
    std::string text = absl::StrCat(kNamePrefix, id, "/", peer_uri);
    text.resize(std::min(text.size(), sizeof(name.sun_path) - 1));
    std::memcpy(name.sun_path + 1, text.data(), text.size());
    named = bind(pair[0], reinterpret_cast<sockaddr*>(&name),
                 static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + text.size())) == 0;
  }
  if (!named) {  // gRPC would not know whom the connection is from
    close(client);
    close(pair[0]);
    close(pair[1]);
    return -1;
  }
  auto c = std::make_unique<Conn>();
  c->client = client;
  c->inner = pair[0];
  c->token = id;
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
    c->awaits_handshake.store(true);
  }
  {
    absl::MutexLock l(&registry_mu_);
    registry_.emplace(id, c.get());
  }
  if (token != nullptr) *token = id;
  Give(ssl_ctx_ != nullptr ? relays_[0].get() : NextRelay(), std::move(c));
  relayed_.fetch_add(1);
  return pair[1];
}

H2Guard::HandshakeState H2Guard::Handshake(uint64_t token) {
  absl::MutexLock l(&registry_mu_);
  auto it = registry_.find(token);
  if (it == registry_.end()) return {};
  return {it->second->awaits_handshake.load(), it->second->handshake_done_ms.load()};
}

void H2Guard::MarkVerified(absl::string_view peer) {
  uint64_t id;
  std::string client;
  if (!ParseGuardUri(peer, &id, &client)) return;
  absl::MutexLock l(&registry_mu_);
  auto it = registry_.find(id);
  if (it != registry_.end()) it->second->verified.store(true, std::memory_order_relaxed);
}

void H2Guard::Cut(uint64_t token) {
  {
    absl::MutexLock l(&registry_mu_);
    auto it = registry_.find(token);
    if (it == registry_.end()) return;  // closed already
    it->second->cut.store(true);
  }
  // Whichever thread holds it (it may be moving from the handshake thread) finds it flagged.
  cut_epoch_.fetch_add(1);
  for (auto& r : relays_) r->Wake();
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
  absl::MutexLock l(&shared_mu_);
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
  uint64_t unlogged;
  {
    absl::MutexLock l(&shared_mu_);
    if (now - last_log_ < absl::Seconds(1)) {
      ++unlogged_;
      return;
    }
    last_log_ = now;
    unlogged = unlogged_;
    unlogged_ = 0;
  }
  if (log_) {
    log_(unlogged == 0 ? line
                       : absl::StrCat(line, " unlogged_before=", unlogged,
                                      " (connections cut since the last line)"));
  }
}

void H2Guard::Close(Relay* r, Conn* c) {
  if (c->closed) return;
  c->closed = true;
  c->awaits_handshake.store(false);
  r->Uncount(c);
  epoll_ctl(r->epoll, EPOLL_CTL_DEL, c->client, nullptr);
  if (c->inner_watched) epoll_ctl(r->epoll, EPOLL_CTL_DEL, c->inner, nullptr);
  if (c->ssl != nullptr) {
    SSL_free(c->ssl);
    c->ssl = nullptr;
  }
  close(c->client);  // the listener sees it gone (a new file on the descriptor, or none)
  // A relayed connection's calls keep counting against AOBJ-SEC-026's bounds until gRPC has
  // closed its transport, which it does only once it has worked off what it read of them: gRPC
  // reads the end of our half, and the guard waits for the end of its own. Before, a flood that
  // reconnected as soon as it was cut left thousands of transports (and their descriptors and
  // calls) behind in gRPC while the guard and the listener counted none of them (eleventh
  // hostile probe, N1).
  const bool linger = !r->handshakes && c->ledger != nullptr && c->inner_watched && !c->draining &&
                      !stop_.load() && shutdown(c->inner, SHUT_WR) == 0;
  if (linger) {
    epoll_event ev{};
    ev.events = c->inner_events = EPOLLIN;
    ev.data.u64 = reinterpret_cast<uint64_t>(c) | 1;
    if (epoll_ctl(r->epoll, EPOLL_CTL_ADD, c->inner, &ev) == 0) {
      c->dying = true;
      c->dying_deadline = absl::Now() + kDyingTime;
      std::string().swap(c->up);
      std::string().swap(c->down);
      std::string().swap(c->held);
      CountHeld(c);
      admission_.Dying(c->address, 1);
      absl::MutexLock l(&registry_mu_);  // Cut() and Handshake() find it gone
      registry_.erase(c->token);
      return;
    }
  }
  Bury(r, c);
}

void H2Guard::Bury(Relay* r, Conn* c) {
  std::string().swap(c->held);
  CountHeld(c);
  if (c->dying) {
    epoll_ctl(r->epoll, EPOLL_CTL_DEL, c->inner, nullptr);
    admission_.Dying(c->address, -1);
    c->dying = false;
  }
  admission_.Release(c->address, c->charged);
  c->charged = 0;
  close(c->inner);  // gRPC reads the end and closes its transport (or has closed it)
  r->closed.push_back(c);
}

void H2Guard::Settle(Conn* c) {
  const int keep = c->verified.load(std::memory_order_relaxed)
                       ? 0
                       : std::min<int>(c->charged, c->ledger->open());
  admission_.Release(c->address, c->charged - keep);
  c->charged = keep;
}

void H2Guard::HandOff(Relay* r, Conn* c) {
  c->handed_off = true;
  r->Uncount(c);
  epoll_ctl(r->epoll, EPOLL_CTL_DEL, c->client, nullptr);
  if (c->inner_watched) epoll_ctl(r->epoll, EPOLL_CTL_DEL, c->inner, nullptr);
  c->inner_watched = false;
  c->client_events = c->inner_events = 0;
  r->handed.push_back(c);  // moved once this round's events are done
}

void H2Guard::Watch(Relay* r, Conn* c) {
  const size_t up_pending = c->up.size() - c->up_off;
  const size_t down_pending = c->down.size() - c->down_off;
  const bool relaying = c->ssl == nullptr || c->handshaken;
  uint32_t client_events = 0;
  if (!relaying) {
    client_events = c->want_write ? EPOLLOUT : EPOLLIN;
  } else {
    if (!c->draining && up_pending < kBufferCap && MayHoldMore(c)) {
      client_events |= EPOLLIN;
    }
    if (c->want_write) client_events |= EPOLLOUT;
  }
  // gRPC's side is looked at only once the handshake is done (gRPC writes its SETTINGS at once:
  // watching it earlier woke the thread again and again during every handshake).
  uint32_t inner_events = 0;
  if (relaying && !c->draining) {
    if (down_pending < kBufferCap) inner_events |= EPOLLIN;
    if (up_pending > 0) inner_events |= EPOLLOUT;
  }
  auto update = [&](int fd, uint32_t want, uint32_t* have, uint64_t tag) {
    if (want == *have) return;
    epoll_event ev{};
    ev.events = want;
    ev.data.u64 = reinterpret_cast<uint64_t>(c) | tag;
    epoll_ctl(r->epoll, EPOLL_CTL_MOD, fd, &ev);
    *have = want;
  };
  update(c->client, client_events, &c->client_events, 0);
  if (c->inner_watched) update(c->inner, inner_events, &c->inner_events, 1);
}

void H2Guard::StartDraining(Relay* r, Conn* c) {
  if (c->draining) return;
  c->draining = true;
  c->drain_deadline = absl::Now() + kDrainTime;
  // A hang-up cannot be masked: gRPC's end is no longer watched at all.
  if (c->inner_watched) epoll_ctl(r->epoll, EPOLL_CTL_DEL, c->inner, nullptr);
  c->inner_watched = false;
}

bool H2Guard::MayHoldMore(const Conn* c) const {
  return c->held.size() < kBufferCap ||
         (c->held.size() < kHeldCap && held_bytes_.load(std::memory_order_relaxed) < kHeldTotal);
}

void H2Guard::CountHeld(Conn* c) {
  const size_t now = c->held.size();
  if (now >= c->held_counted) {
    held_bytes_.fetch_add(now - c->held_counted, std::memory_order_relaxed);
  } else {
    held_bytes_.fetch_sub(c->held_counted - now, std::memory_order_relaxed);
  }
  c->held_counted = now;
}

bool H2Guard::PassUp(Relay* r, Conn* c) {
  const bool passed = PassHeld(r, c);
  CountHeld(c);
  // AOBJ-SEC-029: the server reads at once the calls marked late whose messages came, and those
  // whose messages are large wait for a read slot.
  if (policy_.on_message_whole) {
    for (const uint64_t token : c->ledger->TakeEnded()) {
      calls_late_whole_.fetch_add(1, std::memory_order_relaxed);
      policy_.on_message_whole(token);
    }
  }
  for (const uint64_t token : c->ledger->TakeLarge()) {
    calls_late_large_.fetch_add(1, std::memory_order_relaxed);
    if (policy_.on_message_large) policy_.on_message_large(token);
  }
  return passed;
}

bool H2Guard::PassHeld(Relay* r, Conn* c) {
  // Every frame header the client sends is looked at before gRPC gets it (AOBJ-SEC-024), and
  // the calls of a connection with no verified request are let through as AOBJ-SEC-026's bounds
  // allow: the HEADERS of one more waits, with the frames of the calls that follow it.
  const bool waited = c->waits;
  c->waits = false;
  c->awaits_message = false;
  if (c->held.empty()) {
    c->holding = false;
    return true;
  }
  H2Ledger& l = *c->ledger;
  std::vector<LateCall> late;  // calls passed on past their window without their message
  auto may_open = [&] {
    bool passes_late = false;  // it goes on now without its message (below)
    // AOBJ-SEC-029: a call whose message is still coming waits for it a little, so that the
    // server learns it is whole (a small request split over two reads would otherwise be read in
    // the slots' order, behind a filler's calls, and be ended for room).
    if (!policy_.whole_mark.empty() &&
        MessageStateAt(c->held, l.frame_at()) == MessageState::kComing) {
      const absl::Time now = absl::Now();
      if (!c->holding) {
        c->holding = true;
        c->hold_since = now;
      }
      if (now - c->hold_since < policy_.whole_wait) {
        c->waits = true;
        c->awaits_message = true;
        return false;
      }
      // Past its window it goes on, marked late, and the server hears when its stream ends
      // (fifteenth hostile probe, G1-G3: a request split by 300 ms met AOBJ-SEC-018's read
      // order as if it would never come).
      passes_late = policy_.on_message_whole != nullptr;
    }
    if (!c->verified.load(std::memory_order_relaxed)) {
      if (!admission_.Open(c->address, static_cast<int>(l.open()), c->admitted)) {
        c->waits = true;
        if (!waited) calls_held_.fetch_add(1);
        return false;
      }
      ++c->charged;
      ++c->admitted;
    }
    if (passes_late) {
      const auto* h = reinterpret_cast<const uint8_t*>(c->held.data()) + l.frame_at();
      const uint32_t stream =
          ((uint32_t{h[5]} << 24) | (uint32_t{h[6]} << 16) | (uint32_t{h[7]} << 8) | h[8]) &
          0x7fffffffu;
      const uint64_t token = next_token_.fetch_add(1, std::memory_order_relaxed);
      if (l.Watch(stream, token)) {
        late.push_back({stream, absl::StrCat(policy_.whole_mark, ":", token)});
      }
    }
    return true;
  };
  H2Ledger::Verdict v;
  const size_t skip = l.in_frame();
  const size_t n = l.Pass(c->held.data(), c->held.size(), may_open, &v);
  // AOBJ-SEC-029: calls whose message is here whole are marked so for the server, and those
  // passed on past their window without it, late.
  std::optional<std::string> marked;
  if (v == H2Ledger::Verdict::kGoOn && n > 0 && !policy_.whole_mark.empty()) {
    size_t whole = 0;
    marked = MarkWholeCalls(c->held, n, skip, policy_.whole_mark, &c->last_marked, late, &whole);
    calls_whole_.fetch_add(whole, std::memory_order_relaxed);
    calls_late_.fetch_add(late.size(), std::memory_order_relaxed);
  }
  if (v == H2Ledger::Verdict::kGoOn) {
    if (marked.has_value()) {
      c->up.append(*marked);
      c->held.erase(0, n);
    } else if (c->up.empty()) {
      c->up.swap(c->held);  // all of it, most often
      c->up_off = 0;
      c->held.assign(c->up, n, std::string::npos);
      c->up.resize(n);
    } else {
      c->up.append(c->held, 0, n);
      c->held.erase(0, n);
    }
    if (c->waits) {
      if (c->awaits_message) {
        r->awaiting[c] = c->hold_since + policy_.whole_wait;
      } else {
        r->waiting.insert(c);
      }
      // Behind the call that waits, the frames of the connection itself and of the calls already
      // under way go on: HTTP/2 lets frames of different streams come in any order (only header
      // blocks keep theirs, for HPACK), and the calls under way must get their messages to end
      // at all. The others wait behind it.
      // Frames looked at before for the same waiting call stay where they are: the scan goes on
      // from the first not yet looked at (each retry would otherwise go over everything held
      // back, up to kHeldCap, every kHeldRetryMs; under AddressSanitizer that starved the
      // relay thread's other connections).
      const size_t from = n == 0 ? std::min(c->kept, c->held.size()) : 0;
      const auto* held = reinterpret_cast<const uint8_t*>(c->held.data());
      const uint32_t waiting = ((uint32_t{held[5]} << 24) | (uint32_t{held[6]} << 16) |
                                (uint32_t{held[7]} << 8) | held[8]) &
                               0x7fffffffu;
      std::string keep;
      size_t at = from;
      while (v == H2Ledger::Verdict::kGoOn && c->held.size() - at >= 9) {
        const uint8_t* h = held + at;
        const size_t len = 9 + ((size_t{h[0]} << 16) | (size_t{h[1]} << 8) | h[2]);
        if (c->held.size() - at < len) break;  // not whole yet
        const uint32_t stream =
            ((uint32_t{h[5]} << 24) | (uint32_t{h[6]} << 16) | (uint32_t{h[7]} << 8) | h[8]) &
            0x7fffffffu;
        const bool header_block = h[3] == 1 || h[3] == 5 || h[3] == 9;  // HEADERS, PUSH_PROMISE,
                                                                        // CONTINUATION
        if (at > 0 && !header_block && (stream == 0 || stream < waiting)) {
          if (l.Pass(c->held.data() + at, len, nullptr, &v) == len) {
            c->up.append(c->held, at, len);
          }
        } else {
          keep.append(c->held, at, len);
        }
        at += len;
      }
      if (v == H2Ledger::Verdict::kGoOn) {
        c->kept = from + keep.size();
        keep.append(c->held, at, std::string::npos);
        c->held.resize(from);
        c->held += keep;
        return true;
      }
    } else {
      c->kept = 0;
      c->holding = false;  // nothing waits: the next call gets a window of its own
      if (c->held.empty()) std::string().swap(c->held);
      return true;
    }
  }
  if (v == H2Ledger::Verdict::kNotHttp2) return false;  // gRPC would refuse it anyway
  Strike(c->address);
  switch (v) {
    case H2Ledger::Verdict::kTooManyResets:
      cut_for_resets_.fetch_add(1);
      Log(absl::StrCat("event=connection_cut reason=reset_streams peer=", c->peer,
                       " (its client reset ", l.resets(),
                       " streams before the server ended them, more than four times the ",
                       l.finished(), " it let end)"));
      break;
    case H2Ledger::Verdict::kTooManyOpen:
      cut_for_streams_.fetch_add(1);
      Log(absl::StrCat("event=connection_cut reason=open_streams peer=", c->peer,
                       " (its client kept more than ", l.open() - 1, " streams open)"));
      break;
    case H2Ledger::Verdict::kHeadersTooLarge:
      cut_for_streams_.fetch_add(1);
      Log(absl::StrCat("event=connection_cut reason=header_block peer=", c->peer,
                       " (a header block of more than ", H2Ledger::kMaxHeaderBlock, " octets or ",
                       H2Ledger::kMaxHeaderFrames, " frames)"));
      break;
    case H2Ledger::Verdict::kFrameFlood:
      cut_for_streams_.fetch_add(1);
      Log(absl::StrCat("event=connection_cut reason=frame_flood peer=", c->peer,
                       " (its client sent ", l.octets(), " octets of frames for ", l.payload(),
                       " octets of headers and data)"));
      break;
    default:
      cut_for_streams_.fetch_add(1);
      Log(absl::StrCat("event=connection_cut reason=unanswered_pings peer=", c->peer,
                       " (more than ", H2Ledger::kMaxUnanswered,
                       " PING or SETTINGS frames sent without waiting for their answers)"));
      break;
  }
  return false;
}

void H2Guard::Pump(Relay* r, Conn* c) {
  if (c->dying) {  // only gRPC's end is watched: read to its end, which comes once gRPC is done
    char* const buf = r->buffer.get();
    for (;;) {
      const ssize_t n = read(c->inner, buf, kReadChunk);
      if (n > 0) continue;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      Bury(r, c);
      return;
    }
  }
  if (c->closed || c->handed_off) return;
  SSL* const ssl = c->ssl;
  c->want_write = false;
  if (ssl != nullptr && !c->handshaken) {
    // A client that hung up before its handshake was done can never finish it (its Finished
    // would follow its FIN): it is closed without the key exchange and signature that
    // SSL_accept would spend on a ClientHello it left behind. A FIN also makes the socket
    // readable, so a hang-up while the server waits for the client is found here too.
    pollfd hangup{c->client, POLLRDHUP, 0};
    if (poll(&hangup, 1, 0) > 0 && (hangup.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
      tls_failed_.fetch_add(1);
      tls_abandoned_.fetch_add(1);
      Close(r, c);
      return;
    }
    ERR_clear_error();
    const int rc = SSL_accept(ssl);
    if (rc != 1) {
      const int e = SSL_get_error(ssl, rc);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        c->want_write = e == SSL_ERROR_WANT_WRITE;
        Watch(r, c);
        return;
      }
      tls_failed_.fetch_add(1);
      ERR_clear_error();
      Close(r, c);
      return;
    }
    const unsigned char* alpn = nullptr;
    unsigned int alpn_len = 0;
    SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
    if (alpn_len != 2 || std::memcmp(alpn, "h2", 2) != 0) {  // gRPC needs ALPN "h2"
      tls_failed_.fetch_add(1);
      Close(r, c);
      return;
    }
    c->handshaken = true;
    c->handshake_done_ms.store(absl::ToUnixMillis(absl::Now()));
    c->awaits_handshake.store(false);
  }
  if (r->handshakes) {  // relaying is another thread's
    HandOff(r, c);
    return;
  }

  char* const buf = r->buffer.get();
  // gRPC's side first: an answer already written counts as the end of its stream before a
  // cancel of the client that crossed it is looked at.
  while (!c->draining && c->down.size() - c->down_off < kBufferCap) {
    const ssize_t n = read(c->inner, buf, kReadChunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) StartDraining(r, c);
      break;
    }
    c->ledger->FromServer(buf, static_cast<size_t>(n));
    c->down.append(buf, static_cast<size_t>(n));
  }
  Settle(c);
  bool client_done = false;
  // What waited goes first (the calls that ended may have made room).
  if (!c->draining && !PassUp(r, c)) {
    Close(r, c);
    return;
  }
  // Rounds, so that plaintext OpenSSL holds (which epoll cannot see) is taken once the buffer
  // toward gRPC has room again.
  for (int round = 0; round < 8 && !c->draining; ++round) {
    bool full = false;
    // A connection whose next call waits is still read (up to the bound of what it may hold
    // back): what follows may carry the messages of its calls under way.
    while (!client_done && MayHoldMore(c)) {
      if (c->up.size() - c->up_off >= kBufferCap) {
        full = true;
        break;
      }
      ssize_t n;
      if (ssl != nullptr) {
        ERR_clear_error();
        const int rc = SSL_read(ssl, buf, static_cast<int>(kReadChunk));
        if (rc <= 0) {
          const int e = SSL_get_error(ssl, rc);
          if (e == SSL_ERROR_WANT_WRITE) c->want_write = true;
          if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) client_done = true;
          ERR_clear_error();
          break;
        }
        n = rc;
      } else {
        n = read(c->client, buf, kReadChunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          client_done = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
          break;
        }
      }
      c->held.append(buf, static_cast<size_t>(n));
      if (!PassUp(r, c)) {  // cut: nothing of this read reaches gRPC
        Close(r, c);
        return;
      }
    }
    Settle(c);  // the client's resets end calls too
    if (!Flush(c->inner, &c->up, &c->up_off)) StartDraining(r, c);  // gRPC's end is gone
    Compact(&c->up, &c->up_off);
    if (!full || c->up.size() - c->up_off >= kBufferCap || client_done) break;
  }
  if (client_done) {  // the client is gone: nothing left can reach it
    Close(r, c);
    return;
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
    const ssize_t n = send(c->client, c->down.data() + c->down_off, len, MSG_NOSIGNAL);
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
  if (client_done) {
    Close(r, c);
    return;
  }
  // gRPC closed its end (idle, GOAWAY, shutdown): once what it wrote has reached the client, the
  // connection ends cleanly (TLS close_notify, then FIN), so that its last answers are not lost
  // to a reset.
  if (c->draining && c->down.empty()) {
    if (ssl != nullptr) {
      ERR_clear_error();
      (void)SSL_shutdown(ssl);
      ERR_clear_error();
    }
    shutdown(c->client, SHUT_WR);
    Close(r, c);
    return;
  }
  Watch(r, c);
}

void H2Guard::Take(Relay* r, std::unique_ptr<Conn> owned) {
  Conn* const c = owned.get();
  r->conns.emplace(c, std::move(owned));
  if (!r->handshakes && c->ledger == nullptr) {
    // Each cut of the address in the last minute halves its next connections' budget of resets,
    // down to a floor; and their bound on open streams as long as they have not acknowledged
    // the server's SETTINGS (a gRPC client does at once; after that gRPC enforces its own
    // limit), down to 64.
    int strikes;
    {
      absl::MutexLock l(&shared_mu_);
      strikes = StrikesOf(c->address);
    }
    c->ledger = std::make_unique<H2Ledger>(
        std::max(policy_.min_resets_to_cut, policy_.resets_to_cut >> strikes),
        policy_.max_open_streams,
        std::max(std::min(policy_.max_open_streams, kMinOpenStreams),
                 policy_.max_open_streams >> strikes),
        // and the octets its frames may carry beyond eight times their payload, down to 64 KiB
        // (a gRPC client's frames carry about their own size).
        std::max<uint64_t>(kMinIdleAllowance, H2Ledger::kIdleAllowance >> strikes));
  }
  c->handed_off = false;
  if (r->handshakes) {
    ++r->under_way[c->address];
    c->counted = true;
  }
  const bool relaying = c->ssl == nullptr || c->handshaken;
  epoll_event ev{};
  ev.events = c->client_events = EPOLLIN;
  ev.data.u64 = reinterpret_cast<uint64_t>(c);
  const bool ok = epoll_ctl(r->epoll, EPOLL_CTL_ADD, c->client, &ev) == 0;
  ev.events = c->inner_events = relaying ? uint32_t{EPOLLIN} : 0;
  ev.data.u64 = reinterpret_cast<uint64_t>(c) | 1;
  c->inner_watched = ok && epoll_ctl(r->epoll, EPOLL_CTL_ADD, c->inner, &ev) == 0;
  if (!c->inner_watched || c->cut.load()) {
    Close(r, c);
    return;
  }
  // The handshake thread works on a connection once epoll reports it, in its address's turn
  // (Loop); a relay thread goes on at once with what the handshake thread left.
  if (!r->handshakes) Pump(r, c);
}

void H2Guard::Loop(Relay* r) {
  // Writes to a peer that has gone raise SIGPIPE in the writing thread; blocked here, they only
  // fail with EPIPE (an embedding process need not ignore SIGPIPE).
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
  std::vector<epoll_event> events(r->handshakes ? kHandshakeScan : 64);
  absl::Time next_sweep = absl::Now() + absl::Seconds(1);
  absl::Time stop_by = absl::InfiniteFuture();
  // Closed and handed-off connections leave at the end of each round (events of the round may
  // still name them).
  auto settle = [&] {
    for (Conn* c : r->closed) {
      {
        absl::MutexLock l(&registry_mu_);
        registry_.erase(c->token);
      }
      r->waiting.erase(c);
      r->awaiting.erase(c);
      r->conns.erase(c);
    }
    r->closed.clear();
    for (Conn* c : r->handed) {
      auto it = r->conns.find(c);
      std::unique_ptr<Conn> owned = std::move(it->second);
      r->conns.erase(it);
      Give(NextRelay(), std::move(owned));
    }
    r->handed.clear();
  };
  for (;;) {
    if (stop_.load() && stop_by == absl::InfiniteFuture()) {
      // Stopping: gRPC has closed its ends, and what it wrote last is passed on for a little
      // while. A handshake still under way has nothing to pass on.
      stop_by = r->handshakes ? absl::Now() : absl::Now() + kDrainTime;
    }
    if (stop_by != absl::InfiniteFuture() && (r->conns.empty() || absl::Now() >= stop_by)) break;
    int timeout_ms = !r->waiting.empty()                 ? kHeldRetryMs
                     : stop_by == absl::InfiniteFuture() ? 1000
                                                         : 50;
    if (!r->awaiting.empty()) {
      absl::Time first = absl::InfiniteFuture();
      for (const auto& [c, until] : r->awaiting) first = std::min(first, until);
      timeout_ms = std::clamp<int>(
          static_cast<int>(absl::ToInt64Milliseconds(first - absl::Now())) + 1, 1, timeout_ms);
    }
    int n = epoll_wait(r->epoll, events.data(), static_cast<int>(events.size()), timeout_ms);
    if (r->handshakes && n > kHandshakesPerRound) {
      // The wake-up first, then the addresses with the fewest handshakes under way, in the
      // order they became ready; the rest stay ready for the next round (level-triggered).
      auto weight = [&](const epoll_event& e) {
        if (e.data.ptr == nullptr) return -1;
        const Conn* c = reinterpret_cast<const Conn*>(e.data.u64 & ~uint64_t{1});
        auto it = r->under_way.find(c->address);
        return it == r->under_way.end() ? 0 : it->second;
      };
      std::vector<std::pair<int, int>> order;  // (weight, index)
      order.reserve(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) order.emplace_back(weight(events[static_cast<size_t>(i)]), i);
      std::partial_sort(order.begin(), order.begin() + kHandshakesPerRound, order.end());
      std::vector<epoll_event> first;
      for (int i = 0; i < kHandshakesPerRound; ++i) {
        first.push_back(events[static_cast<size_t>(order[static_cast<size_t>(i)].second)]);
      }
      std::copy(first.begin(), first.end(), events.begin());
      n = kHandshakesPerRound;
    }
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr) {  // new connections, a cut, or Stop()
        uint64_t count;
        (void)!read(r->wake, &count, sizeof(count));
        std::vector<std::unique_ptr<Conn>> taken;
        {
          absl::MutexLock l(&r->mu);
          taken.swap(r->given);
        }
        for (auto& c : taken) Take(r, std::move(c));
        const uint64_t epoch = cut_epoch_.load();
        if (epoch != r->seen_cut_epoch) {
          r->seen_cut_epoch = epoch;
          for (auto& [raw, c] : r->conns) {
            if (raw->cut.load() && !raw->handed_off) Close(r, raw);
          }
        }
        continue;
      }
      Conn* c = reinterpret_cast<Conn*>(events[i].data.u64 & ~uint64_t{1});
      Pump(r, c);
      // A hang-up or error of the client cannot be masked and would be reported again and again
      // while nothing more can be done: what could be passed on was.
      if ((events[i].data.u64 & 1) == 0 && (events[i].events & (EPOLLHUP | EPOLLERR)) != 0 &&
          !c->handed_off) {
        Close(r, c);
      }
    }
    if (!r->waiting.empty()) {  // calls that waited for room: another connection's may have ended
      std::vector<Conn*> again(r->waiting.begin(), r->waiting.end());
      r->waiting.clear();
      for (Conn* c : again) Pump(r, c);
    }
    if (!r->awaiting.empty()) {  // calls whose message did not come in their window: on they go
      const absl::Time now = absl::Now();
      std::vector<Conn*> due;
      for (const auto& [c, until] : r->awaiting) {
        if (now >= until) due.push_back(c);
      }
      for (Conn* c : due) {
        r->awaiting.erase(c);
        Pump(r, c);
      }
    }
    const absl::Time now = absl::Now();
    if (now >= next_sweep) {  // handshakes and drains that take too long
      next_sweep = now + absl::Seconds(1);
      for (auto& [raw, c] : r->conns) {
        if (raw->dying && now >= raw->dying_deadline) {
          Bury(r, raw);
          continue;
        }
        if (raw->closed || raw->handed_off) continue;
        if (raw->ssl != nullptr && !raw->handshaken &&
            now - raw->started > policy_.handshake_timeout) {
          tls_failed_.fetch_add(1);
          Close(r, raw);
        } else if (raw->draining && now >= raw->drain_deadline) {
          Close(r, raw);
        }
      }
    }
    settle();
  }
  // Handed-off connections too: the relay thread they were meant for may have stopped.
  for (auto& [raw, c] : r->conns) {
    if (raw->dying) {
      Bury(r, raw);
    } else {
      Close(r, raw);
    }
  }
  r->handed.clear();
  settle();
}

}  // namespace aobj
