// AOBJ_FUZZ_COVERS: src/server/handler_util.h
// AOBJ_FUZZ_COVERS: src/wire/listing.cc
// AOBJ_FUZZ_COVERS: src/wire/range.cc
// AOBJ_FUZZ_COVERS: src/server/handler_batch.cc
// Random operation sequences against ONE server RequestHandler (the msquic "API fuzzing" layer):
// the real handler, session table, authenticator, MemoryStore and multipart manager; only the
// data channel (FakeChannel: deterministic, with injected faults) and the clock (a plain
// absl::Time passed to Handle and to the expiry sweep) are fakes. The input is a script
// (stateful_script.h): sessions opened, closed, renewed, used by the wrong principal, expired
// and swept; PUT (RMA and inline), GET (whole and ranged), GetObjects, HEAD, DELETE, DeleteObjects,
// LIST, COPY, multipart create/part/complete/abort/list; transfers that fail part-way, lose their
// endpoint, deliver a corrupted byte, or run a nested request (close, expiry, overwrite, delete,
// abort) in the middle, as a concurrent request or a cancellation would.
//
// A model beside the server (key -> the body and ETag of the last PUT/COPY/Complete that
// succeeded; uploads -> their parts; sessions -> endpoint and lease) is checked after every step;
// any violation aborts:
//  * no object is both committed and torn: every object the store holds equals, byte for byte,
//    the body of one complete write the harness issued and saw succeed, and a failed write leaves
//    the old value (or absence); GET, HEAD and LIST agree with the model; a write never succeeds
//    after a failed or corrupted transfer or with a wrong checksum;
//  * no transfer outside a granted window: every RMA operation lies inside a descriptor of the
//    request being handled, on that request's session's endpoint, in its direction (GET writes,
//    PUT/UploadPart read); nothing else (HEAD, COPY, Complete, nested requests) touches the data
//    channel, and a GET leaves the client bytes past the body untouched;
//  * the data channel's failure model (spec 13.7): once a request failed its session's endpoint,
//    every later data request of the session that reaches the channel fails
//    DATA_CHANNEL_UNAVAILABLE and only bodies that need no RMA succeed (Table 4, AOBJ-DAT-158); no
//    RMA operation reaches the channel outside the request being handled, so a reply is a fence
//    (AOBJ-DAT-157);
//  * no leak: no transfer slot outlives its request; an endpoint is released once, only after
//    its session closed or expired and nothing is in flight (AOBJ-SES-010, AOBJ-SES-023); at the
//    end every endpoint and every unpacked rkey the fake handed out is released.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "aobj/status.h"
#include "aobj/store.h"
#include "aobj/v1/aobj.pb.h"
#include "control/rpc.h"
#include "fuzz_util.h"
#include "server/data_channel.h"
#include "server/fast_path.h"
#include "server/handler.h"
#include "session/authenticator.h"
#include "session/session_table.h"
#include "session/signer.h"
#include "stateful_fakes.h"
#include "stateful_script.h"
#include "store/multipart.h"
#include "wire/checksum.h"
#include "wire/crypto.h"
#include "wire/etag.h"
#include "wire/fast_frame.h"

namespace {

namespace pb = aobj::v1;
using aobj::ErrorCode;
using aobj::ErrorCodeOf;
using aobj::Method;
using aobj::RmaDirection;
using namespace aobj_fuzz;  // NOLINT: the script's vocabulary

constexpr char kBucket[] = "bkt";
const char* const kKeyNames[kKeys] = {"k0", "k1", "k2", "d/k3", "d/k4"};
constexpr uint64_t kMinPartSize = 16;
const absl::Duration kLease = absl::Seconds(30);
const absl::Duration kTombstone = absl::Seconds(60);
struct Principal {
  const char* id;
  const char* secret;
};
constexpr Principal kPrincipals[2] = {{"AKSTATE0", "stateful-secret-0"},
                                      {"AKSTATE1", "stateful-secret-1"}};
constexpr char kPoison = '\xEE';  // client memory of a GET before the server writes it

// AOBJ_STATEFUL_TRACE=1 prints every step and request (to read a crash input).
bool Trace() {
  static const bool trace = std::getenv("AOBJ_STATEFUL_TRACE") != nullptr;
  return trace;
}

std::string Body(uint32_t seed, uint64_t len) {
  std::string b(len, '\0');
  uint32_t x = seed * 2654435761u + 0x9E3779B9u;
  for (uint64_t i = 0; i < len; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b[i] = static_cast<char>(x);
  }
  return b;
}

std::string QuotedMd5(const std::string& data) {
  aobj::Md5 md5;
  md5.Update(data.data(), data.size());
  return "\"" + aobj::HexEncode(md5.Finish()) + "\"";
}

// AOBJ-OBJ-217, computed here independently of wire/etag.cc: over the 16 octets the digits of
// each part's ETag denote (its MD5, AOBJ-OBJ-207, or opaque ones, AOBJ-OBJ-254).
std::string MultipartEtag(const std::vector<std::string>& part_etags) {
  std::string digests;
  for (const std::string& e : part_etags) {
    std::string raw;
    AOBJ_FUZZ_CHECK(e.size() == 34 && aobj::HexDecode(e.substr(1, 32), &raw) && raw.size() == 16);
    digests += raw;
  }
  aobj::Md5 md5;
  md5.Update(digests.data(), digests.size());
  return "\"" + aobj::HexEncode(md5.Finish()) + "-" + std::to_string(part_etags.size()) + "\"";
}

std::string Checksum(aobj::ChecksumAlgorithm algo, const std::string& data) {
  aobj::Checksummer sum(algo);
  sum.Update(data.data(), data.size());
  return sum.Finish();
}

// ---- The model ----------------------------------------------------------------------------------

struct Obj {
  std::string body;
  std::string etag;
};

struct SessionModel {
  std::string id_hex;
  int principal = 0;
  uint64_t endpoint = 0;
  // The last correctly signed request naming it: its lease ends at the latest then + lease.
  absl::Time last_signed;
  // The last request of it that succeeded: its lease lasts at least until then + lease.
  absl::Time last_ok;
  bool closed = false;       // CloseSession succeeded
  bool release_due = false;  // its endpoint must be released by now
  bool in_flight = false;    // a data request of it is being handled (nested steps)
  bool opaque_etag = false;  // OPAQUE_ETAG negotiated (AOBJ-OBJ-016)
  bool opaque_part_etag = false;  // OPAQUE_PART_ETAG negotiated (AOBJ-OBJ-254)
};

struct UploadModel {
  std::string id;
  std::string key;
  bool live = true;
  std::map<uint32_t, Obj> parts;
};

// Client memory for one request's descriptors.
struct Windows {
  std::vector<std::unique_ptr<std::string>> memory;
  Grant grant;
};

class Harness {
 public:
  explicit Harness(const Setup& setup)
      : base_store_(aobj::NewMemoryStore()),
        plain_store_(base_store_.get()),
        store_(setup.hide_fast_paths ? static_cast<aobj::ObjectStore*>(&plain_store_)
                                     : base_store_.get()),
        auth_({{kPrincipals[0].id, kPrincipals[0].secret},
               {kPrincipals[1].id, kPrincipals[1].secret}},
              absl::Seconds(300), 1 << 16),
        sessions_(kLease, kTombstone),
        signers_{aobj::RequestSigner(kPrincipals[0].id, kPrincipals[0].secret),
                 aobj::RequestSigner(kPrincipals[1].id, kPrincipals[1].secret)} {
    AOBJ_FUZZ_CHECK(base_store_->CreateBucket(kBucket).ok());
    aobj::MultipartLimits mpl;
    mpl.min_part_size = kMinPartSize;
    mpl.copy_chunk_bytes = 1000;
    auto mp = aobj::MultipartManager::Open(store_, "", mpl);
    AOBJ_FUZZ_CHECK(mp.ok());
    multipart_ = std::move(*mp);
    aobj::HandlerConfig config;
    config.capabilities = {
        aobj::kCapInline,          aobj::kCapCrc32c,     aobj::kCapCrc64Nvme,
        aobj::kCapMultiDescriptor, aobj::kCapOpaqueEtag, aobj::kCapFastPath,
        aobj::kCapBatchGet,        aobj::kCapBatchPut,   aobj::kCapOpaquePartEtag};
    config.staging_bytes = 512u << setup.staging;
    config.max_rma_piece = setup.rma_piece == 0 ? (64u << 20) : (256u << setup.rma_piece);
    handler_ = std::make_unique<aobj::RequestHandler>(config, store_, &channel_, &auth_, &sessions_,
                                                      multipart_.get());
    // The fast path on the same handler, its requests run inline at the harness's clock.
    // (Queued, and run by CallFast once OnFrame returned, as a request thread would; every
    // other fast request that waits on nothing runs inside OnFrame instead, as on the thread
    // that delivered it, under CallControl::must_not_wait.)
    fast_.Attach(
        handler_.get(), &auth_,
        [this](absl::string_view, uint64_t, std::function<void()> task) {
          fast_tasks_.push_back(std::move(task));
          return absl::OkStatus();
        },
        &sessions_, &channel_, [this] { return now_; },
        [this](absl::string_view, const std::function<void()>& task) {
          if (requests_ % 4 != 1) return false;
          task();
          return true;
        });
    slots_.fill(-1);
    upload_slots_.fill(-1);
  }

  void Run(const Step& s) {
    switch (s.op) {
      case kOpOpen:
        return Open(s);
      case kOpClose:
        return Close(s);
      case kOpRenew:
        return Renew(s.session);
      case kOpPut:
        return Put(s, /*nested=*/false);
      case kOpGet:
        return Get(s);
      case kOpHead:
        return Head(s);
      case kOpDelete:
        return Delete(s.session, s.key);
      case kOpDeleteMany:
        return DeleteMany(s);
      case kOpGetMany:
        return GetMany(s);
      case kOpPutMany:
        return PutMany(s);
      case kOpList:
        return List(s);
      case kOpCopy:
        return Copy(s);
      case kOpMpCreate:
        return MpCreate(s);
      case kOpMpPart:
        return MpPart(s);
      case kOpMpComplete:
        return MpComplete(s);
      case kOpMpAbort:
        return MpAbort(s.session, s.upload);
      case kOpMpListParts:
        return MpListParts(s);
      case kOpAdvance:
        now_ += absl::Milliseconds(s.millis);
        return;
      case kOpExpire:
        now_ += kLease + absl::Milliseconds(1 + s.millis);
        return Sweep(-1);
      case kOpSweep:
        return Sweep(-1);
      case kOpLoseEndpoint:
        if (slots_[s.session] >= 0) channel_.Lose(all_sessions_[slots_[s.session]].endpoint);
        return;
      case kOpForeign:
        return Foreign(s);
      default:
        return;
    }
  }

  // The invariants that hold between any two steps.
  void CheckInvariants() {
    AOBJ_FUZZ_CHECK(sessions_.transfers_in_flight() == 0);  // no TransferSlot leaked
    // Every request counted once, every failure as an error (the metrics endpoint's numbers).
    // Fast requests the path dropped before the handler saw them (AOBJ-DAT-168) count as the
    // errors the harness recorded for them, and never in the handler.
    const aobj::FastPathStats fast = fast_.stats();
    AOBJ_FUZZ_CHECK(fast.malformed == 0);  // the harness frames only what it means
    AOBJ_FUZZ_CHECK(handler_->counters().requests.load() == requests_ - fast.unroutable);
    AOBJ_FUZZ_CHECK(handler_->counters().errors.load() == errors_ - fast.unroutable);
    // Objects: exactly the model, byte for byte (AOBJ-OBJ-010: never torn, never half-visible).
    for (const char* key : kKeyNames) {
      auto it = objects_.find(key);
      auto reader = base_store_->OpenRead(kBucket, key);
      if (it == objects_.end()) {
        AOBJ_FUZZ_CHECK(!reader.ok() && ErrorCodeOf(reader.status()) == ErrorCode::kNoSuchKey);
        continue;
      }
      AOBJ_FUZZ_CHECK(reader.ok());
      const aobj::ObjectInfo& info = (*reader)->info();
      const std::string& want = it->second.body;
      AOBJ_FUZZ_CHECK(info.size == want.size());
      AOBJ_FUZZ_CHECK(info.etag == it->second.etag);
      AOBJ_FUZZ_CHECK(info.crc32c == aobj::Crc32c(0, want.data(), want.size()));
      std::string got(want.size(), '\0');
      auto n = (*reader)->ReadAt(0, {reinterpret_cast<uint8_t*>(got.data()), got.size()});
      AOBJ_FUZZ_CHECK(n.ok() && *n == want.size() && got == want);
    }
    auto listed = base_store_->ListObjects(kBucket, "", "", 100);
    AOBJ_FUZZ_CHECK(listed.ok() && listed->size() == objects_.size());
    for (const aobj::ObjectSummary& o : *listed) AOBJ_FUZZ_CHECK(objects_.count(o.key) == 1);
    // Uploads: exactly the live ones of the model (a part or a Complete never lands elsewhere).
    auto uploads = multipart_->ListUploads(kBucket, "", "", "", 1000);
    AOBJ_FUZZ_CHECK(uploads.ok());
    std::set<std::string> live;
    for (const UploadModel& u : all_uploads_) {
      if (u.live) live.insert(u.id);
    }
    AOBJ_FUZZ_CHECK(uploads->uploads.size() == live.size());
    for (const aobj::UploadInfo& u : uploads->uploads) AOBJ_FUZZ_CHECK(live.count(u.upload_id));
    // Endpoints: each open one belongs to a session whose endpoint is not yet due for release;
    // a session whose lease surely runs still holds its endpoint.
    for (const SessionModel& m : all_sessions_) {
      if (m.release_due) AOBJ_FUZZ_CHECK(!channel_.IsOpen(m.endpoint));
      if (!m.closed && now_ < m.last_ok + kLease) AOBJ_FUZZ_CHECK(channel_.IsOpen(m.endpoint));
    }
    for (uint64_t ep : channel_.open_endpoints()) {
      bool owned = false;
      for (const SessionModel& m : all_sessions_) owned |= m.endpoint == ep;
      AOBJ_FUZZ_CHECK(owned);  // no endpoint without a session (AOBJ-SES-023)
    }
  }

  // Closes every session, then lets every lease and tombstone run out: nothing may remain.
  void Finish() {
    for (int i = 0; i < static_cast<int>(all_sessions_.size()); ++i) {
      if (!all_sessions_[i].closed) CloseIndex(i);
    }
    now_ += kLease + kTombstone + absl::Seconds(1);
    Sweep(-1);
    CheckInvariants();
    AOBJ_FUZZ_CHECK(channel_.endpoint_count() == 0);
    AOBJ_FUZZ_CHECK(channel_.rkeys_outstanding() == 0);
    AOBJ_FUZZ_CHECK(sessions_.open_sessions() == 0);
    AOBJ_FUZZ_CHECK(sessions_.List().empty());
  }

 private:
  // One request, signed by `principal` (default: the session's own) at the current time.
  absl::StatusOr<std::string> Call(Method method, int slot, const google::protobuf::Message& req,
                                   int principal = -1) {
    const std::string body = req.SerializeAsString();
    SessionModel* m = slot >= 0 && slots_[slot] >= 0 ? &all_sessions_[slots_[slot]] : nullptr;
    const std::string session_hex =
        method == Method::kOpenSession ? "" : (m ? m->id_hex : std::string(32, '0'));
    if (principal < 0) principal = m ? m->principal : 0;
    const bool own = m != nullptr && principal == m->principal;
    // A session that is closed, or whose lease surely ended, serves nothing (AOBJ-SES-009/010).
    const bool dead = m != nullptr && (m->closed || now_ >= m->last_signed + kLease);
    const absl::Time at = now_;  // a nested step may move the clock during the call
    aobj::RequestAuth auth =
        signers_[principal].Sign(aobj::MethodPath(method), session_hex, body, now_);
    // Every other request the path carries goes as a fast request (spec 8.9): the same checks
    // must give the same results, and the invariants below hold whichever path a request took.
    // Only on a bound, working endpoint: elsewhere a request would run and its reply be dropped,
    // an outcome the client cannot know (AOBJ-DAT-169) and the model could not follow.
    const bool fast = m != nullptr && aobj::FastPathCarries(method) && requests_ % 2 == 1 &&
                      channel_.IsBound(m->endpoint) && !channel_.IsLost(m->endpoint);
    auto result = fast ? CallFast(method, auth, body, *m, own)
                       : handler_->Handle(method, auth, body, now_, nullptr);
    ++requests_;
    errors_ += !result.ok();
    if (Trace()) {
      std::fprintf(stderr, "  %s%s -> %s\n", channel_.grant == nullptr ? "" : "(data) ",
                   aobj::MethodName(method),
                   result.ok() ? "OK" : result.status().ToString().c_str());
    }
    if (method != Method::kOpenSession) {
      if (m == nullptr || !own || dead) AOBJ_FUZZ_CHECK(!result.ok());
      if (m != nullptr && own) {
        m->last_signed = at;
        if (result.ok()) m->last_ok = at;
      }
    }
    return result;
  }

  SessionModel* SessionOf(int slot) {
    return slots_[slot] >= 0 ? &all_sessions_[slots_[slot]] : nullptr;
  }

  // One request by the fast path: framed, handed to the server as the data channel would, and
  // its reply (if any) taken back. A request the server cannot answer (its session released, or
  // another key's claim: AOBJ-DAT-168) gets no reply; the harness then sees NO_SUCH_SESSION, as
  // a client that gave up would know no more.
  absl::StatusOr<std::string> CallFast(Method method, const aobj::RequestAuth& auth,
                                       const std::string& body, const SessionModel& m, bool own) {
    aobj::FastRequest r;
    r.method = aobj::MethodName(method);
    r.auth = auth;
    r.body = body;
    auto frame = aobj::EncodeFastRequest(r);
    AOBJ_FUZZ_CHECK(frame.ok());
    const size_t before = channel_.fast_replies.size();
    fast_.OnFrame(*frame, "");
    while (!fast_tasks_.empty()) {
      std::function<void()> task = std::move(fast_tasks_.front());
      fast_tasks_.pop_front();
      task();
    }
    // A nested step may have sent fast requests of its own meanwhile; ours is the one with our
    // nonce, on our session's endpoint.
    for (size_t i = before; i < channel_.fast_replies.size(); ++i) {
      auto reply = aobj::ParseFastReply(channel_.fast_replies[i].second);
      AOBJ_FUZZ_CHECK(reply.ok());  // what the server sends always parses
      if (reply->nonce_hex != auth.nonce_hex) continue;
      AOBJ_FUZZ_CHECK(own && channel_.fast_replies[i].first == m.endpoint);
      channel_.fast_replies.erase(channel_.fast_replies.begin() + static_cast<long>(i));
      if (!reply->error) return reply->body;
      pb::Error e;
      AOBJ_FUZZ_CHECK(e.ParseFromString(reply->body) && e.code() != 0);
      return aobj::MakeError(static_cast<aobj::ErrorCode>(static_cast<uint32_t>(e.code())),
                             e.message());
    }
    // No reply: only for another key's claim, or an endpoint lost or released meanwhile (by a
    // step nested in the request).
    AOBJ_FUZZ_CHECK(!own || !channel_.IsOpen(m.endpoint) || channel_.IsLost(m.endpoint));
    return aobj::MakeError(aobj::ErrorCode::kNoSuchSession, "no fast reply");
  }

  void Open(const Step& s) {
    pb::OpenSessionRequest req;
    req.mutable_versions()->set_min(1);
    req.mutable_versions()->set_max(1);
    req.add_capabilities(aobj::kCapCrc32c);
    if (s.caps & 1) req.add_capabilities(aobj::kCapInline);
    if (s.caps & 2) req.add_capabilities(aobj::kCapMultiDescriptor);
    if (s.caps & 4) req.add_capabilities(aobj::kCapCrc64Nvme);
    if (s.caps & 8) req.add_capabilities(aobj::kCapOpaqueEtag);
    if (s.caps & 32) req.add_capabilities(aobj::kCapOpaquePartEtag);
    if (!(s.caps & 16)) {  // bit 4: both left out
      req.add_capabilities(aobj::kCapBatchGet);
      req.add_capabilities(aobj::kCapBatchPut);
    }
    req.add_capabilities(aobj::kCapFastPath);  // every other request goes by it (Call)
    req.set_worker_address("fake-worker-" + std::to_string(all_sessions_.size()));
    if (s.inline_threshold == 1) req.mutable_requested_limits()->set_inline_threshold(64);
    if (s.inline_threshold == 2) req.mutable_requested_limits()->set_inline_threshold(4096);
    if (s.max_in_flight > 0) req.mutable_requested_limits()->set_max_in_flight(s.max_in_flight);
    req.set_require_hardware_protection(s.require_hardware != 0);
    channel_.open_fault = s.channel == 1 || s.channel == 2 ? s.channel : 0;
    channel_.hardware = s.channel == 3;
    const size_t before = channel_.endpoint_count();
    const uint64_t last = channel_.last_connected;
    auto result = Call(Method::kOpenSession, -1, req, static_cast<int>(s.access_key));
    channel_.open_fault = 0;
    if (!result.ok()) {
      // AOBJ-SES-023: a refused OpenSession releases the endpoint it created.
      AOBJ_FUZZ_CHECK(channel_.endpoint_count() == before);
      return;
    }
    AOBJ_FUZZ_CHECK(s.channel != 1 && s.channel != 2);
    AOBJ_FUZZ_CHECK(!s.require_hardware || s.channel == 3);  // AOBJ-SES-014
    AOBJ_FUZZ_CHECK(channel_.endpoint_count() == before + 1);
    AOBJ_FUZZ_CHECK(channel_.last_connected != last && channel_.IsOpen(channel_.last_connected));
    pb::OpenSessionResponse resp;
    AOBJ_FUZZ_CHECK(resp.ParseFromString(*result));
    AOBJ_FUZZ_CHECK(resp.session_id().size() == 16);
    SessionModel m;
    m.id_hex = aobj::HexEncode(resp.session_id());
    m.principal = static_cast<int>(s.access_key);
    m.endpoint = channel_.last_connected;
    m.last_signed = m.last_ok = now_;
    for (uint32_t c : resp.capabilities()) {
      m.opaque_etag |= c == aobj::kCapOpaqueEtag;
      m.opaque_part_etag |= c == aobj::kCapOpaquePartEtag;
    }
    AOBJ_FUZZ_CHECK(m.opaque_etag == ((s.caps & 8) != 0));        // AOBJ-SES-005
    AOBJ_FUZZ_CHECK(m.opaque_part_etag == ((s.caps & 32) != 0));  // AOBJ-SES-005
    for (const SessionModel& o : all_sessions_) AOBJ_FUZZ_CHECK(o.id_hex != m.id_hex);
    // AOBJ-SES-025: one challenge sent, and nothing moves by RMA before the proof.
    AOBJ_FUZZ_CHECK(resp.endpoint_challenges() == 1);
    AOBJ_FUZZ_CHECK(!channel_.IsBound(m.endpoint));
    all_sessions_.push_back(m);
    slots_[s.session] = static_cast<int>(all_sessions_.size()) - 1;
    if (s.confirm != 1) Confirm(s.session, resp.session_id(), s.confirm);
  }

  // Whether session `m`'s data channel is in Table 4's FAILED state: an earlier request of it
  // failed its (confirmed) endpoint.
  bool ChannelFailed(const SessionModel* m) const {
    return m != nullptr && channel_.IsBound(m->endpoint) && channel_.IsLost(m->endpoint);
  }
  // Table 4, AOBJ-DAT-158: a data request of a session whose channel failed before it began,
  // once it reaches the channel, fails DATA_CHANNEL_UNAVAILABLE, never TRANSFER_FAILED or OK.
  static void CheckFailedChannel(bool channel_failed, bool reached_channel,
                                 const absl::StatusOr<std::string>& result) {
    if (!channel_failed || !reached_channel) return;
    AOBJ_FUZZ_CHECK(!result.ok() &&
                    ErrorCodeOf(result.status()) == ErrorCode::kDataChannelUnavailable);
  }

  // ConfirmEndpoint (AOBJ-SES-026): `kind` 0 the right proof, 2 a wrong one, 3 a short one.
  void Confirm(int slot, const std::string& session_id, uint32_t kind) {
    SessionModel& m = all_sessions_[slots_[slot]];
    std::string proof = signers_[m.principal].EndpointProof(
        session_id, FakeChannel::ChallengeOf(m.endpoint));
    if (kind == 2) proof[5] ^= 1;
    if (kind == 3) proof.resize(31);
    pb::ConfirmEndpointRequest req;
    req.set_proof(proof);
    auto result = Call(Method::kConfirmEndpoint, slot, req);
    AOBJ_FUZZ_CHECK(result.ok() == (kind == 0));
    if (!result.ok()) {
      AOBJ_FUZZ_CHECK(ErrorCodeOf(result.status()) ==
                      (kind == 2 ? ErrorCode::kAccessDenied : ErrorCode::kInvalidArgument));
    }
    AOBJ_FUZZ_CHECK(channel_.IsBound(m.endpoint) == (kind == 0));
  }

  void Close(const Step& s) {
    if (slots_[s.session] < 0) {
      (void)Call(Method::kCloseSession, s.session, pb::CloseSessionRequest());
      return;
    }
    CloseIndex(slots_[s.session]);
  }

  void CloseIndex(int index) {
    SessionModel& m = all_sessions_[index];
    int slot = -1;
    for (uint32_t i = 0; i < kSessions; ++i) {
      if (slots_[i] == index) slot = static_cast<int>(i);
    }
    absl::StatusOr<std::string> result;
    if (slot >= 0) {
      result = Call(Method::kCloseSession, slot, pb::CloseSessionRequest());
    } else {  // no longer in a slot: sign it directly
      const std::string body = pb::CloseSessionRequest().SerializeAsString();
      const bool dead = m.closed || now_ >= m.last_signed + kLease;
      result = handler_->Handle(
          Method::kCloseSession,
          signers_[m.principal].Sign(aobj::MethodPath(Method::kCloseSession), m.id_hex, body, now_),
          body, now_, nullptr);
      ++requests_;
      errors_ += !result.ok();
      if (dead) AOBJ_FUZZ_CHECK(!result.ok());
      m.last_signed = now_;
    }
    if (!result.ok()) return;
    m.closed = true;
    if (m.in_flight) {
      // AOBJ-SES-010: a data request is in flight; the endpoint stays until a later sweep.
      AOBJ_FUZZ_CHECK(channel_.IsOpen(m.endpoint));
    } else {
      AOBJ_FUZZ_CHECK(!channel_.IsOpen(m.endpoint));  // released now
      m.release_due = true;
    }
  }

  // A writer whose bucket was deleted and re-created meanwhile must not commit into either
  // (store.h: the bucket must exist; MemoryStore's bucket identity). Only while the model holds
  // no upload: what a bucket's deletion does to uploads in progress is not modelled.
  void RecreateBucket(uint32_t slot) {
    for (const UploadModel& u : all_uploads_) {
      if (u.live) return;
    }
    pb::DeleteBucketRequest del;
    del.set_bucket(kBucket);
    auto deleted = Call(Method::kDeleteBucket, slot, del);
    if (!deleted.ok()) {
      if (ErrorCodeOf(deleted.status()) == ErrorCode::kBucketNotEmpty) {
        AOBJ_FUZZ_CHECK(!objects_.empty());
      }
      return;
    }
    AOBJ_FUZZ_CHECK(objects_.empty());
    pb::CreateBucketRequest create;
    create.set_bucket(kBucket);
    // The same session a moment later (the clock did not move): it cannot fail.
    AOBJ_FUZZ_CHECK(Call(Method::kCreateBucket, slot, create).ok());
  }

  void Renew(uint32_t slot) { (void)Call(Method::kRenewSession, slot, pb::RenewSessionRequest()); }

  // The server's lease reaper (ServerImpl::Reap in server.cc) at the fake time.
  void Sweep(int in_flight_index) {
    for (uint64_t ep : sessions_.Reap(now_)) channel_.Disconnect(ep);
    for (int i = 0; i < static_cast<int>(all_sessions_.size()); ++i) {
      SessionModel& m = all_sessions_[i];
      if (i == in_flight_index) {
        AOBJ_FUZZ_CHECK(channel_.IsOpen(m.endpoint));  // in flight: held (AOBJ-SES-010)
        continue;
      }
      if (m.closed || now_ >= m.last_signed + kLease) m.release_due = true;  // AOBJ-SES-009
    }
  }

  // Descriptors of `len` body bytes as step `s` lays them out, the client memory behind them
  // filled from `fill` (PUT) or with kPoison (GET).
  void BuildWindows(const Step& s, uint64_t len, const std::string* fill, RmaDirection dir,
                    uint64_t endpoint, Windows* w,
                    google::protobuf::RepeatedPtrField<pb::MemoryDescriptor>* out) {
    w->grant.endpoint = endpoint;
    w->grant.direction = dir;
    uint64_t total = len;
    if (s.slack == 1) total += 1 + s.seed % 61;
    if (s.slack == 2 && total > 0) total -= 1;
    if (total == 0) return;
    const uint64_t n = std::min<uint64_t>(s.windows, total);
    constexpr uint64_t kGap = 0x40;
    const uint64_t span = total + (n - 1) * kGap;
    uint64_t address = 0;
    switch (s.address) {
      case 0:
        address = 0x10000;
        break;
      case 1:
        address = 0x7ff000000000ull + s.seed * 0x1000ull;
        break;
      case 2:
        address = 0 - span;
        break;  // the last window ends exactly at 2^64 (AOBJ-MEM-002)
      default:
        address = 0;
        break;
    }
    uint64_t body_offset = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t length = i + 1 < n ? total / n : total - (n - 1) * (total / n);
      auto memory = std::make_unique<std::string>(length, kPoison);
      if (fill != nullptr && body_offset < fill->size()) {
        const uint64_t k = std::min<uint64_t>(length, fill->size() - body_offset);
        memory->replace(0, k, fill->substr(body_offset, k));
      }
      body_offset += length;
      // Packed-rkey-like blobs: a few distinct ones, reused across requests (the rkey cache).
      std::string rkey(8, '\0');
      rkey[0] = 1;
      rkey += std::string(1, '\0') + "\x0c" + std::string(10, 'r') + static_cast<char>(i) +
              static_cast<char>(s.seed % 5);
      pb::MemoryDescriptor* d = out->Add();
      d->set_address(address);
      d->set_length(length);
      d->set_rkey(rkey);
      d->set_memory_type(pb::MEMORY_TYPE_HOST);
      w->grant.windows.push_back({address, length, rkey, memory.get()});
      w->memory.push_back(std::move(memory));
      address += length + kGap;
    }
  }

  aobj::ChecksumAlgorithm Algorithm(const Step& s) const {
    return s.algorithm == 2 ? aobj::ChecksumAlgorithm::kCrc64Nvme
                            : aobj::ChecksumAlgorithm::kCrc32c;
  }

  // The nested action of kFaultHookAt, run in the middle of the transfer of session `index`.
  std::function<void()> MakeHook(const Step& s, int index) {
    if (s.fault != kFaultHookAt) return nullptr;
    return [this, s, index] {
      const Grant* saved = channel_.grant;
      const Fault fault = channel_.fault;
      channel_.grant = nullptr;  // a nested request carries no descriptors of its own
      channel_.fault = kFaultNone;
      switch (s.hook) {
        case kHookClose:
          CloseIndex(index);
          break;
        case kHookExpire:
          now_ += kLease + absl::Milliseconds(1);
          Sweep(index);
          break;
        case kHookPutSameKey: {
          Step put = s;
          put.op = kOpPut;
          put.seed = s.seed + 1;
          put.len_class = 1;
          put.inline_path = 1;
          put.bad_checksum = 0;
          put.precondition = 0;
          put.fault = kFaultNone;
          Put(put, /*nested=*/true);
          break;
        }
        case kHookDeleteSameKey:
          Delete(s.session, s.key);
          break;
        case kHookAbortUpload:
          MpAbort(s.session, s.upload);
          break;
        case kHookRecreateBucket:
          RecreateBucket(s.session);
          break;
        default:
          Renew(s.session);
          break;
      }
      channel_.grant = saved;
      channel_.fault = fault;
    };
  }

  // The body fields of a PUT or UploadPart. Returns whether the checksum is the right one.
  template <class Req>
  bool FillBody(const Step& s, const std::string& body, Req* req, Windows* w, uint64_t endpoint) {
    req->set_size(body.size());
    const aobj::ChecksumAlgorithm algo = Algorithm(s);
    req->set_checksum_algorithm(s.algorithm == 0 ? pb::CHECKSUM_ALGORITHM_UNSPECIFIED
                                                 : static_cast<pb::ChecksumAlgorithm>(algo));
    std::string sum = Checksum(algo, body);
    const bool bad = s.bad_checksum == 1;
    if (bad) sum[0] ^= 1;
    req->set_checksum(sum);
    if (s.inline_path) {
      req->set_inline_data(body);
    } else {
      BuildWindows(s, body.size(), &body, RmaDirection::kRead, endpoint, w, req->mutable_source());
    }
    return !bad;
  }

  void Put(const Step& s, bool nested) {
    const std::string key = kKeyNames[s.key];
    const std::string body = Body(s.seed, BodyLength(s));
    SessionModel* m = SessionOf(s.session);
    const int index = m ? slots_[s.session] : -1;
    const bool opaque_etag = m != nullptr && m->opaque_etag;
    pb::PutObjectRequest req;
    req.set_bucket(kBucket);
    req.set_key(key);
    Windows w;
    const bool good_checksum = FillBody(s, body, &req, &w, m ? m->endpoint : 0);
    const std::string expect_etag = s.precondition == 2 && objects_.count(key)
                                        ? objects_[key].etag
                                        : QuotedMd5("not the etag of anything");
    if (s.precondition == 1) req.mutable_preconditions()->set_if_none_match("*");
    if (s.precondition >= 2) req.mutable_preconditions()->set_if_match(expect_etag);

    absl::StatusOr<std::string> result;
    bool failed = false, corrupted = false;
    // Table 4's FAILED state: the session's data channel failed in an earlier request.
    const bool channel_failed = ChannelFailed(m);
    if (nested) {
      result = Call(Method::kPutObject, s.session, req);
    } else {
      channel_.BeginRequest(&w.grant, static_cast<Fault>(s.fault), s.fault_at,
                            m ? MakeHook(s, index) : nullptr);
      if (m) m->in_flight = true;
      result = Call(Method::kPutObject, s.session, req);
      if (m) m->in_flight = false;
      failed = channel_.failed;
      corrupted = channel_.corrupted;
      channel_.EndRequest();
    }
    CheckFailedChannel(channel_failed, failed, result);
    if (!result.ok()) return;  // the old value or absence remains (checked by CheckInvariants)
    // AOBJ-DAT-005, AOBJ-DAT-010: never a success from a failed, corrupted or mis-summed body.
    AOBJ_FUZZ_CHECK(!failed && !corrupted && good_checksum);
    // AOBJ-DAT-158: on a failed data channel only a body that needs no RMA is stored.
    if (channel_failed) AOBJ_FUZZ_CHECK(!req.inline_data().empty() || body.empty());
    // AOBJ-OBJ-134: the write conditions held at the commit (after any nested write).
    auto current = objects_.find(key);
    if (s.precondition == 1) AOBJ_FUZZ_CHECK(current == objects_.end());
    if (s.precondition >= 2) {
      AOBJ_FUZZ_CHECK(current != objects_.end() && current->second.etag == expect_etag);
    }
    pb::PutObjectResponse resp;
    AOBJ_FUZZ_CHECK(resp.ParseFromString(*result));
    AOBJ_FUZZ_CHECK(resp.bytes_transferred() == body.size());
    AOBJ_FUZZ_CHECK(resp.metadata().size() == body.size());
    if (opaque_etag) {
      // AOBJ-OBJ-016: opaque, and none of the ETags the key had before.
      AOBJ_FUZZ_CHECK(aobj::IsOpaqueEtag(resp.metadata().etag()));
      AOBJ_FUZZ_CHECK(etags_seen_[key].count(resp.metadata().etag()) == 0);
    } else {
      AOBJ_FUZZ_CHECK(resp.metadata().etag() == QuotedMd5(body));  // AOBJ-OBJ-005
    }
    AOBJ_FUZZ_CHECK(resp.checksum() == Checksum(Algorithm(s), body));
    objects_[key] = Obj{body, resp.metadata().etag()};
    etags_seen_[key].insert(resp.metadata().etag());
  }

  void Get(const Step& s) {
    const std::string key = kKeyNames[s.key];
    SessionModel* m = SessionOf(s.session);
    const int index = m ? slots_[s.session] : -1;
    // The version the GET must deliver: the one current when it starts (AOBJ-OBJ-010), whatever
    // a nested request does meanwhile.
    std::optional<Obj> before;
    if (objects_.count(key)) before = objects_[key];
    pb::GetObjectRequest req;
    req.set_bucket(kBucket);
    req.set_key(key);
    req.set_accept_inline(s.inline_path != 0);
    if (s.algorithm != 0) {
      req.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(Algorithm(s)));
    }
    const uint64_t size = before ? before->body.size() : 0;
    switch (s.range) {
      case 1:
        req.mutable_range()->set_kind(pb::ByteRange::KIND_FIRST_LAST);
        req.mutable_range()->set_first(s.first);
        req.mutable_range()->set_last(s.last);
        break;
      case 2:
        req.mutable_range()->set_kind(pb::ByteRange::KIND_FROM);
        req.mutable_range()->set_first(s.first);
        break;
      case 3:
        req.mutable_range()->set_kind(pb::ByteRange::KIND_SUFFIX);
        req.mutable_range()->set_suffix_length(s.last);
        break;
      default:
        break;
    }
    // Room for the whole object (the window layout's slack applies to it).
    Windows w;
    BuildWindows(s, size, nullptr, RmaDirection::kWrite, m ? m->endpoint : 0, &w,
                 req.mutable_destination());
    const bool channel_failed = ChannelFailed(m);
    channel_.BeginRequest(&w.grant, static_cast<Fault>(s.fault), s.fault_at,
                          m ? MakeHook(s, index) : nullptr);
    if (m) m->in_flight = true;
    auto result = Call(Method::kGetObject, s.session, req);
    if (m) m->in_flight = false;
    const bool failed = channel_.failed;
    channel_.EndRequest();
    CheckFailedChannel(channel_failed, failed, result);
    if (!result.ok()) {
      if (ErrorCodeOf(result.status()) == ErrorCode::kNoSuchKey) AOBJ_FUZZ_CHECK(!before);
      return;
    }
    AOBJ_FUZZ_CHECK(before.has_value() && !failed);
    pb::GetObjectResponse resp;
    AOBJ_FUZZ_CHECK(resp.ParseFromString(*result));
    // AOBJ-DAT-158: on a failed data channel only a body that needs no RMA is answered.
    if (channel_failed) AOBJ_FUZZ_CHECK(resp.path() != pb::TRANSFER_PATH_RMA);
    const uint64_t n = resp.bytes_transferred();
    uint64_t first = 0;
    if (s.range != 0) {
      // AOBJ-DAT-103: the octets moved, inside the object, as the range asked.
      const pb::ContentRange& cr = resp.content_range();
      AOBJ_FUZZ_CHECK(resp.has_content_range() && cr.complete_length() == size);
      AOBJ_FUZZ_CHECK(n > 0 && cr.first() <= cr.last() && cr.last() < size &&
                      cr.last() - cr.first() + 1 == n);
      if (s.range == 1) {
        AOBJ_FUZZ_CHECK(cr.first() == s.first && cr.last() == std::min<uint64_t>(s.last, size - 1));
      }
      if (s.range == 2) AOBJ_FUZZ_CHECK(cr.first() == s.first && cr.last() == size - 1);
      if (s.range == 3)
        AOBJ_FUZZ_CHECK(n == std::min<uint64_t>(s.last, size) && cr.last() == size - 1);
      first = cr.first();
    } else {
      AOBJ_FUZZ_CHECK(!resp.has_content_range() && n == size);
    }
    const std::string want = before->body.substr(first, n);
    std::string got;
    if (resp.path() == pb::TRANSFER_PATH_INLINE) {
      got = resp.inline_data();
    } else if (resp.path() == pb::TRANSFER_PATH_RMA) {
      AOBJ_FUZZ_CHECK(resp.inline_data().empty());
      for (const auto& memory : w.memory) got += *memory;
      // AOBJ-MEM-008: the windows are filled from their start; nothing past the body is written.
      AOBJ_FUZZ_CHECK(got.size() >= n);
      for (size_t i = n; i < got.size(); ++i) AOBJ_FUZZ_CHECK(got[i] == kPoison);
      got.resize(n);
    } else {
      AOBJ_FUZZ_CHECK(resp.path() == pb::TRANSFER_PATH_NONE && n == 0);
    }
    AOBJ_FUZZ_CHECK(got == want);
    AOBJ_FUZZ_CHECK(resp.metadata().etag() == before->etag);  // AOBJ-OBJ-009
    AOBJ_FUZZ_CHECK(resp.metadata().size() == size);
    const auto algo = static_cast<aobj::ChecksumAlgorithm>(resp.checksum_algorithm());
    AOBJ_FUZZ_CHECK(algo == Algorithm(s));
    AOBJ_FUZZ_CHECK(resp.checksum() == Checksum(algo, want));  // AOBJ-DAT-106
  }

  void Head(const Step& s) {
    const std::string key = kKeyNames[s.key];
    pb::HeadObjectRequest req;
    req.set_bucket(kBucket);
    req.set_key(key);
    auto result = Call(Method::kHeadObject, s.session, req);
    auto it = objects_.find(key);
    if (!result.ok()) {
      if (ErrorCodeOf(result.status()) == ErrorCode::kNoSuchKey) {
        AOBJ_FUZZ_CHECK(it == objects_.end());
      }
      return;
    }
    AOBJ_FUZZ_CHECK(it != objects_.end());
    pb::HeadObjectResponse resp;
    AOBJ_FUZZ_CHECK(resp.ParseFromString(*result));
    AOBJ_FUZZ_CHECK(resp.metadata().size() == it->second.body.size());
    AOBJ_FUZZ_CHECK(resp.metadata().etag() == it->second.etag);
  }

  void Delete(uint32_t slot, uint32_t key_index) {
    const std::string key = kKeyNames[key_index];
    pb::DeleteObjectRequest req;
    req.set_bucket(kBucket);
    req.set_key(key);
    if (Call(Method::kDeleteObject, slot, req).ok()) objects_.erase(key);
  }

  // GetObjects (spec 9.16) of the keys in parts_mask, each into its own region of one scatter
  // list. Each result is its key's version before the request or, when a nested request changed
  // the key meanwhile, after it; a failed item's region stays untouched (AOBJ-OBJ-239).
  void GetMany(const Step& s) {
    SessionModel* m = SessionOf(s.session);
    const int index = m ? slots_[s.session] : -1;
    pb::GetObjectsRequest req;
    req.set_bucket(kBucket);
    if (s.algorithm != 0) {
      req.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(Algorithm(s)));
    }
    std::vector<std::optional<Obj>> before;
    std::vector<uint64_t> offsets, rooms;
    uint64_t total = 0;
    for (uint32_t i = 0; i < kKeys; ++i) {
      if (!(s.parts_mask & (1u << i))) continue;
      std::optional<Obj> b;
      if (objects_.count(kKeyNames[i])) b = objects_[kKeyNames[i]];
      uint64_t room = b ? b->body.size() : 0;
      if (s.slack == 1) room += 1 + (s.first + i) % 13;
      if (s.slack == 2 && room > 0) room -= 1;
      pb::GetObjectsItem* it = req.add_items();
      it->set_key(kKeyNames[i]);
      it->set_offset(total);
      it->set_length(room);
      before.push_back(b);
      offsets.push_back(total);
      rooms.push_back(room);
      total += room;
    }
    if (s.range == 1 && req.items_size() > 0) {
      pb::ByteRange* r = req.mutable_items(req.items_size() - 1)->mutable_range();
      r->set_kind(pb::ByteRange::KIND_FIRST_LAST);
      r->set_first(s.first);
      r->set_last(s.last);
    }
    Step layout = s;
    layout.slack = 0;
    Windows w;
    BuildWindows(layout, total, nullptr, RmaDirection::kWrite, m ? m->endpoint : 0, &w,
                 req.mutable_destination());
    channel_.BeginRequest(&w.grant, static_cast<Fault>(s.fault), s.fault_at,
                          m ? MakeHook(s, index) : nullptr);
    if (m) m->in_flight = true;
    auto result = Call(Method::kGetObjects, s.session, req);
    if (m) m->in_flight = false;
    const bool failed = channel_.failed, corrupted = channel_.corrupted;
    channel_.EndRequest();
    if (!result.ok()) return;
    AOBJ_FUZZ_CHECK(req.items_size() > 0 && !failed);  // AOBJ-OBJ-237, AOBJ-OBJ-243
    pb::GetObjectsResponse resp;
    AOBJ_FUZZ_CHECK(resp.ParseFromString(*result));
    AOBJ_FUZZ_CHECK(resp.results_size() == req.items_size());  // AOBJ-OBJ-240
    const auto algo = static_cast<aobj::ChecksumAlgorithm>(resp.checksum_algorithm());
    AOBJ_FUZZ_CHECK(algo == Algorithm(s));
    std::string got;
    for (const auto& memory : w.memory) got += *memory;
    AOBJ_FUZZ_CHECK(got.size() == total);
    for (int i = 0; i < req.items_size(); ++i) {
      const pb::GetObjectsResult& r = resp.results(i);
      const std::string region = got.substr(offsets[i], rooms[i]);
      std::optional<Obj> after;
      if (objects_.count(req.items(i).key())) after = objects_[req.items(i).key()];
      if (r.has_error()) {
        AOBJ_FUZZ_CHECK(r.bytes_transferred() == 0 && r.checksum().empty() && !r.has_metadata());
        AOBJ_FUZZ_CHECK(r.error().message().size() <= 256);  // AOBJ-OBJ-242
        if (static_cast<ErrorCode>(r.error().code()) == ErrorCode::kNoSuchKey) {
          AOBJ_FUZZ_CHECK(!before[i] || !after);
        }
        // AOBJ-OBJ-239: nothing written into a failed item's region (from the harness's small
        // staging buffer the store's octets may move in several rounds; only the first is
        // exempt, and it is this item's own failure, which the store here never has).
        for (char c : region) AOBJ_FUZZ_CHECK(c == kPoison);
        continue;
      }
      // The version it moved: before the request, or one a nested request wrote meanwhile.
      const Obj* version = nullptr;
      for (const std::optional<Obj>* v : {&before[i], &after}) {
        if (*v && (*v)->etag == r.metadata().etag()) version = &**v;
      }
      AOBJ_FUZZ_CHECK(version != nullptr);  // AOBJ-OBJ-009
      AOBJ_FUZZ_CHECK(r.metadata().size() == version->body.size());
      AOBJ_FUZZ_CHECK(r.metadata().user_metadata().empty());  // AOBJ-OBJ-242
      uint64_t first = 0;
      const uint64_t n = r.bytes_transferred();
      if (req.items(i).has_range()) {
        const pb::ContentRange& cr = r.content_range();
        AOBJ_FUZZ_CHECK(r.has_content_range() && cr.complete_length() == version->body.size());
        AOBJ_FUZZ_CHECK(n > 0 && cr.first() == s.first && cr.last() - cr.first() + 1 == n);
        first = cr.first();
      } else {
        AOBJ_FUZZ_CHECK(!r.has_content_range() && n == version->body.size());
      }
      AOBJ_FUZZ_CHECK(n <= rooms[i]);
      const std::string want = version->body.substr(first, n);
      AOBJ_FUZZ_CHECK(r.checksum() == Checksum(algo, want));  // AOBJ-OBJ-241
      if (!corrupted) AOBJ_FUZZ_CHECK(region.substr(0, n) == want);
      for (size_t k = n; k < region.size(); ++k) AOBJ_FUZZ_CHECK(region[k] == kPoison);
    }
  }

  // PutObjects (spec 9.17) of the keys in parts_mask, each body from its own region of one
  // scatter list. Items are committed round by round, so after any outcome each key holds its
  // version from before the request, one a nested request wrote meanwhile, or the item's body
  // (AOBJ-OBJ-251, AOBJ-OBJ-253); a stored item's result names exactly that body.
  void PutMany(const Step& s) {
    SessionModel* m = SessionOf(s.session);
    const int index = m ? slots_[s.session] : -1;
    const bool opaque_etag = m != nullptr && m->opaque_etag;
    const aobj::ChecksumAlgorithm algo = Algorithm(s);
    pb::PutObjectsRequest req;
    req.set_bucket(kBucket);
    req.set_checksum_algorithm(s.algorithm == 0 ? pb::CHECKSUM_ALGORITHM_UNSPECIFIED
                                                : static_cast<pb::ChecksumAlgorithm>(algo));
    std::vector<std::string> bodies;
    std::vector<std::optional<Obj>> before;
    std::string all;
    for (uint32_t i = 0; i < kKeys; ++i) {
      if (!(s.parts_mask & (1u << i))) continue;
      Step sized = s;
      sized.len = s.len + 97 * i;
      const std::string body = Body(s.seed + i, BodyLength(sized));
      pb::PutObjectsItem* it = req.add_items();
      it->set_key(kKeyNames[i]);
      it->set_offset(all.size());
      it->set_length(body.size());
      std::string sum = Checksum(algo, body);
      if (s.bad_checksum == 1 && req.items_size() == 1) sum[0] ^= 1;
      it->set_checksum(sum);
      std::optional<Obj> b;
      if (objects_.count(kKeyNames[i])) b = objects_[kKeyNames[i]];
      before.push_back(b);
      bodies.push_back(body);
      all += body;
    }
    Windows w;
    BuildWindows(s, all.size(), &all, RmaDirection::kRead, m ? m->endpoint : 0, &w,
                 req.mutable_source());
    channel_.BeginRequest(&w.grant, static_cast<Fault>(s.fault), s.fault_at,
                          m ? MakeHook(s, index) : nullptr);
    if (m) m->in_flight = true;
    auto result = Call(Method::kPutObjects, s.session, req);
    if (m) m->in_flight = false;
    channel_.EndRequest();
    pb::PutObjectsResponse resp;
    if (result.ok()) {
      AOBJ_FUZZ_CHECK(req.items_size() > 0 && s.algorithm != 0);  // AOBJ-OBJ-246, -247
      AOBJ_FUZZ_CHECK(resp.ParseFromString(*result));
      AOBJ_FUZZ_CHECK(resp.results_size() == req.items_size());  // AOBJ-OBJ-249
    }
    for (int i = 0; i < req.items_size(); ++i) {
      const std::string& key = req.items(i).key();
      auto reader = base_store_->OpenRead(kBucket, key);
      std::string stored;
      bool holds_body = false;
      if (reader.ok()) {
        stored.resize((*reader)->info().size);
        auto got = (*reader)->ReadAt(0, {reinterpret_cast<uint8_t*>(stored.data()), stored.size()});
        holds_body = got.ok() && stored == bodies[i];
      }
      const bool changed_meanwhile = objects_.count(key) != (before[i] ? 1u : 0u) ||
                                     (before[i] && objects_[key].etag != before[i]->etag);
      if (result.ok()) {
        const pb::PutObjectsResult& r = resp.results(i);
        if (r.has_error()) {
          AOBJ_FUZZ_CHECK(r.checksum().empty() && !r.has_metadata());
          AOBJ_FUZZ_CHECK(r.error().message().size() <= 256);  // AOBJ-OBJ-250
          if (s.bad_checksum == 1 && i == 0) {
            AOBJ_FUZZ_CHECK(static_cast<ErrorCode>(r.error().code()) == ErrorCode::kBadDigest);
          }
          AOBJ_FUZZ_CHECK(!holds_body || bodies[i].empty() ||
                          (before[i] && before[i]->body == bodies[i]));  // nothing stored
          continue;
        }
        AOBJ_FUZZ_CHECK(!(s.bad_checksum == 1 && i == 0));           // AOBJ-OBJ-248, AOBJ-DAT-005
        AOBJ_FUZZ_CHECK(r.checksum() == Checksum(algo, bodies[i]));  // AOBJ-OBJ-250
        AOBJ_FUZZ_CHECK(r.metadata().size() == bodies[i].size());
        if (opaque_etag) {
          AOBJ_FUZZ_CHECK(aobj::IsOpaqueEtag(r.metadata().etag()));  // AOBJ-OBJ-016
        } else {
          AOBJ_FUZZ_CHECK(r.metadata().etag() == QuotedMd5(bodies[i]));  // AOBJ-OBJ-005
        }
        // Stored, unless a nested request wrote the key after this item's round.
        AOBJ_FUZZ_CHECK(holds_body || changed_meanwhile);
        if (holds_body) {
          objects_[key] = Obj{bodies[i], r.metadata().etag()};
          etags_seen_[key].insert(r.metadata().etag());
        }
        continue;
      }
      // A failed request: each item stored or not (AOBJ-OBJ-253); never a changed body.
      if (holds_body && !(before[i] && before[i]->body == bodies[i])) {
        AOBJ_FUZZ_CHECK(!(s.bad_checksum == 1 && i == 0) || bodies[i].empty());
        objects_[key] = Obj{bodies[i], (*reader)->info().etag};
        etags_seen_[key].insert((*reader)->info().etag);
      }
    }
  }

  void DeleteMany(const Step& s) {
    pb::DeleteObjectsRequest req;
    req.set_bucket(kBucket);
    std::set<std::string> asked;
    for (uint32_t i = 0; i < kKeys; ++i) {
      if (s.parts_mask & (1u << i)) {
        req.add_keys(kKeyNames[i]);
        asked.insert(kKeyNames[i]);
      }
    }
    auto result = Call(Method::kDeleteObjects, s.session, req);
    if (!result.ok()) return;
    AOBJ_FUZZ_CHECK(!asked.empty());  // AOBJ-OBJ-140
    pb::DeleteObjectsResponse resp;
    AOBJ_FUZZ_CHECK(resp.ParseFromString(*result));
    std::set<std::string> answered;
    for (const std::string& k : resp.deleted()) {
      AOBJ_FUZZ_CHECK(asked.count(k) && answered.insert(k).second);
      objects_.erase(k);
    }
    for (const auto& e : resp.errors())
      AOBJ_FUZZ_CHECK(asked.count(e.key()) && answered.insert(e.key()).second);
    AOBJ_FUZZ_CHECK(answered == asked);
  }

  void List(const Step& s) {
    static const char* const kPrefixes[] = {"", "d/", "k"};
    const std::string prefix = kPrefixes[s.prefix];
    const std::string delimiter = s.delimiter ? "/" : "";
    std::vector<std::string> keys;
    std::set<std::string> prefixes;
    std::string token;
    for (int page = 0; page < 16; ++page) {
      pb::ListObjectsV2Request req;
      req.set_bucket(kBucket);
      req.set_prefix(prefix);
      req.set_delimiter(delimiter);
      req.set_max_keys(s.page);
      req.set_continuation_token(token);
      auto result = Call(Method::kListObjectsV2, s.session, req);
      if (!result.ok()) return;
      pb::ListObjectsV2Response resp;
      AOBJ_FUZZ_CHECK(resp.ParseFromString(*result));
      for (const pb::ObjectEntry& e : resp.objects()) {
        AOBJ_FUZZ_CHECK(keys.empty() || keys.back() < e.key());  // ascending, no repeats
        keys.push_back(e.key());
        auto it = objects_.find(e.key());
        AOBJ_FUZZ_CHECK(it != objects_.end());
        AOBJ_FUZZ_CHECK(e.size() == it->second.body.size() && e.etag() == it->second.etag);
      }
      for (const std::string& p : resp.common_prefixes())
        AOBJ_FUZZ_CHECK(prefixes.insert(p).second);
      if (!resp.is_truncated()) {
        // The whole listing: exactly the model's keys under the prefix, rolled up at "/".
        std::vector<std::string> want_keys;
        std::set<std::string> want_prefixes;
        for (const auto& [k, o] : objects_) {
          if (k.compare(0, prefix.size(), prefix) != 0) continue;
          const size_t cut = delimiter.empty() ? std::string::npos : k.find('/', prefix.size());
          if (cut == std::string::npos) {
            want_keys.push_back(k);
          } else {
            want_prefixes.insert(k.substr(0, cut + 1));
          }
        }
        AOBJ_FUZZ_CHECK(keys == want_keys && prefixes == want_prefixes);
        return;
      }
      AOBJ_FUZZ_CHECK(!resp.next_continuation_token().empty());
      token = resp.next_continuation_token();
    }
  }

  void Copy(const Step& s) {
    const std::string from = kKeyNames[s.key], to = kKeyNames[s.key2];
    std::optional<Obj> source;
    if (objects_.count(from)) source = objects_[from];
    pb::CopyObjectRequest req;
    req.set_source_bucket(kBucket);
    req.set_source_key(from);
    req.set_bucket(kBucket);
    req.set_key(to);
    const std::string expect_etag = s.precondition == 2 && objects_.count(to)
                                        ? objects_[to].etag
                                        : QuotedMd5("not the etag of anything");
    if (s.precondition == 1) req.mutable_preconditions()->set_if_none_match("*");
    if (s.precondition >= 2) req.mutable_preconditions()->set_if_match(expect_etag);
    // AOBJ-OBJ-158: a copy never touches the data channel (the fake aborts without a grant).
    auto result = Call(Method::kCopyObject, s.session, req);
    if (!result.ok()) return;
    AOBJ_FUZZ_CHECK(source.has_value() && from != to);  // AOBJ-OBJ-151
    auto current = objects_.find(to);
    if (s.precondition == 1) AOBJ_FUZZ_CHECK(current == objects_.end());
    if (s.precondition >= 2) {
      AOBJ_FUZZ_CHECK(current != objects_.end() && current->second.etag == expect_etag);
    }
    pb::CopyObjectResponse resp;
    AOBJ_FUZZ_CHECK(resp.ParseFromString(*result));
    AOBJ_FUZZ_CHECK(resp.metadata().etag() == QuotedMd5(source->body));  // AOBJ-OBJ-150
    objects_[to] = Obj{source->body, resp.metadata().etag()};
  }

  UploadModel* UploadOf(uint32_t slot) {
    return upload_slots_[slot] >= 0 ? &all_uploads_[upload_slots_[slot]] : nullptr;
  }
  std::string UploadId(uint32_t slot) {
    UploadModel* u = UploadOf(slot);
    return u ? u->id : std::string(aobj::kUploadIdLength, 'a');  // well formed, never issued
  }
  std::string UploadKey(uint32_t slot) {
    UploadModel* u = UploadOf(slot);
    return u ? u->key : kKeyNames[0];
  }

  void MpCreate(const Step& s) {
    pb::CreateMultipartUploadRequest req;
    req.set_bucket(kBucket);
    req.set_key(kKeyNames[s.key]);
    auto result = Call(Method::kCreateMultipartUpload, s.session, req);
    if (!result.ok()) return;
    pb::CreateMultipartUploadResponse resp;
    AOBJ_FUZZ_CHECK(resp.ParseFromString(*result));
    AOBJ_FUZZ_CHECK(resp.key() == kKeyNames[s.key] && aobj::IsWellFormedUploadId(resp.upload_id()));
    for (const UploadModel& u : all_uploads_) AOBJ_FUZZ_CHECK(u.id != resp.upload_id());
    all_uploads_.push_back(UploadModel{resp.upload_id(), kKeyNames[s.key], true, {}});
    upload_slots_[s.upload] = static_cast<int>(all_uploads_.size()) - 1;
  }

  void MpPart(const Step& s) {
    const std::string body = Body(s.seed, BodyLength(s));
    SessionModel* m = SessionOf(s.session);
    const int index = m ? slots_[s.session] : -1;
    const int upload = upload_slots_[s.upload];
    pb::UploadPartRequest req;
    req.set_bucket(kBucket);
    req.set_key(UploadKey(s.upload));
    req.set_upload_id(UploadId(s.upload));
    req.set_part_number(s.part);
    Windows w;
    const bool good_checksum = FillBody(s, body, &req, &w, m ? m->endpoint : 0);
    channel_.BeginRequest(&w.grant, static_cast<Fault>(s.fault), s.fault_at,
                          m ? MakeHook(s, index) : nullptr);
    if (m) m->in_flight = true;
    auto result = Call(Method::kUploadPart, s.session, req);
    if (m) m->in_flight = false;
    const bool failed = channel_.failed, corrupted = channel_.corrupted;
    channel_.EndRequest();
    if (!result.ok()) return;
    AOBJ_FUZZ_CHECK(!failed && !corrupted && good_checksum);
    // A part lands only in a live upload (a nested Abort ends it: NO_SUCH_UPLOAD).
    AOBJ_FUZZ_CHECK(upload >= 0 && all_uploads_[upload].live);
    AOBJ_FUZZ_CHECK(s.part >= 1 && s.part <= aobj::kMaxPartNumber);
    pb::UploadPartResponse resp;
    AOBJ_FUZZ_CHECK(resp.ParseFromString(*result));
    if (m != nullptr &&
        m->opaque_part_etag) {  // AOBJ-OBJ-254: the MD5's form, new digits each write
      const std::string& e = resp.etag();
      AOBJ_FUZZ_CHECK(e.size() == 34 && e.front() == '"' && e.back() == '"');
      AOBJ_FUZZ_CHECK(aobj::BareMd5Etag(e) == e.substr(1, 32));
      AOBJ_FUZZ_CHECK(e != QuotedMd5(body));
      auto before = all_uploads_[upload].parts.find(s.part);
      if (before != all_uploads_[upload].parts.end()) AOBJ_FUZZ_CHECK(before->second.etag != e);
    } else {
      AOBJ_FUZZ_CHECK(resp.etag() == QuotedMd5(body));  // AOBJ-OBJ-207
    }
    AOBJ_FUZZ_CHECK(resp.bytes_transferred() == body.size());
    all_uploads_[upload].parts[s.part] = Obj{body, resp.etag()};
  }

  void MpComplete(const Step& s) {
    UploadModel* u = UploadOf(s.upload);
    const std::string key = s.list_twist == 3 ? std::string("k-other") : UploadKey(s.upload);
    pb::CompleteMultipartUploadRequest req;
    req.set_bucket(kBucket);
    req.set_key(key);
    req.set_upload_id(UploadId(s.upload));
    for (uint32_t n = 1; n <= kParts; ++n) {
      if (!(s.parts_mask & (1u << (n - 1)))) continue;
      pb::CompletedPart* p = req.add_parts();
      p->set_part_number(n);
      const bool known = u != nullptr && u->parts.count(n);
      p->set_etag(known ? u->parts[n].etag : QuotedMd5("no such part"));
    }
    if (s.list_twist == 1 && req.parts_size() >= 2) req.mutable_parts()->SwapElements(0, 1);
    if (s.list_twist == 2 && req.parts_size() >= 1) {
      req.mutable_parts(0)->set_etag(QuotedMd5("a wrong etag"));
    }
    const std::string target = UploadKey(s.upload);
    const std::string expect_etag = s.precondition == 2 && objects_.count(target)
                                        ? objects_[target].etag
                                        : QuotedMd5("not the etag of anything");
    if (s.precondition == 1) req.mutable_preconditions()->set_if_none_match("*");
    if (s.precondition >= 2) req.mutable_preconditions()->set_if_match(expect_etag);
    // Complete moves no client bytes: no grant.
    auto result = Call(Method::kCompleteMultipartUpload, s.session, req);
    if (!result.ok()) return;  // the upload stays as it was (CheckInvariants)
    AOBJ_FUZZ_CHECK(u != nullptr && u->live && key == u->key);
    // AOBJ-OBJ-210..213: a non-empty ascending list of uploaded parts with their ETags, every one
    // but the last at least the minimum part size.
    AOBJ_FUZZ_CHECK(req.parts_size() >= 1);
    std::vector<std::string> bodies, etags;
    for (int i = 0; i < req.parts_size(); ++i) {
      const pb::CompletedPart& p = req.parts(i);
      if (i > 0) AOBJ_FUZZ_CHECK(p.part_number() > req.parts(i - 1).part_number());
      auto it = u->parts.find(p.part_number());
      AOBJ_FUZZ_CHECK(it != u->parts.end() && it->second.etag == p.etag());
      if (i + 1 < req.parts_size()) AOBJ_FUZZ_CHECK(it->second.body.size() >= kMinPartSize);
      bodies.push_back(it->second.body);
      etags.push_back(it->second.etag);
    }
    auto current = objects_.find(key);
    if (s.precondition == 1) AOBJ_FUZZ_CHECK(current == objects_.end());
    if (s.precondition >= 2) {
      AOBJ_FUZZ_CHECK(current != objects_.end() && current->second.etag == expect_etag);
    }
    pb::CompleteMultipartUploadResponse resp;
    AOBJ_FUZZ_CHECK(resp.ParseFromString(*result));
    std::string all;
    for (const std::string& b : bodies) all += b;
    AOBJ_FUZZ_CHECK(resp.metadata().size() == all.size());
    AOBJ_FUZZ_CHECK(resp.metadata().etag() == MultipartEtag(etags));   // AOBJ-OBJ-217
    objects_[key] = Obj{all, resp.metadata().etag()};                  // AOBJ-OBJ-216
    u->live = false;
  }

  void MpAbort(uint32_t session, uint32_t slot) {
    UploadModel* u = UploadOf(slot);
    pb::AbortMultipartUploadRequest req;
    req.set_bucket(kBucket);
    req.set_key(UploadKey(slot));
    req.set_upload_id(UploadId(slot));
    auto result = Call(Method::kAbortMultipartUpload, session, req);
    if (!result.ok()) return;
    AOBJ_FUZZ_CHECK(u != nullptr && u->live);  // AOBJ-OBJ-220
    u->live = false;
  }

  void MpListParts(const Step& s) {
    UploadModel* u = UploadOf(s.upload);
    pb::ListPartsRequest req;
    req.set_bucket(kBucket);
    req.set_key(UploadKey(s.upload));
    req.set_upload_id(UploadId(s.upload));
    auto result = Call(Method::kListParts, s.session, req);
    if (!result.ok()) return;
    AOBJ_FUZZ_CHECK(u != nullptr && u->live);
    pb::ListPartsResponse resp;
    AOBJ_FUZZ_CHECK(resp.ParseFromString(*result));
    AOBJ_FUZZ_CHECK(!resp.is_truncated() && resp.parts_size() == static_cast<int>(u->parts.size()));
    auto it = u->parts.begin();
    for (const pb::PartEntry& p : resp.parts()) {
      AOBJ_FUZZ_CHECK(p.part_number() == it->first && p.size() == it->second.body.size() &&
                      p.etag() == it->second.etag);
      ++it;
    }
  }

  void Foreign(const Step& s) {
    SessionModel* m = SessionOf(s.session);
    pb::HeadObjectRequest req;
    req.set_bucket(kBucket);
    req.set_key(kKeyNames[s.key]);
    // AOBJ-AUTH-010: another principal's session is no session (Call checks the failure).
    (void)Call(Method::kHeadObject, s.session, req, m ? 1 - m->principal : 1);
  }

  std::unique_ptr<aobj::ObjectStore> base_store_;
  PlainStore plain_store_;
  aobj::ObjectStore* store_;  // what the handler sees: base_store_ or plain_store_
  std::unique_ptr<aobj::MultipartManager> multipart_;
  FakeChannel channel_;
  aobj::Authenticator auth_;
  aobj::SessionTable sessions_;
  std::array<aobj::RequestSigner, 2> signers_;
  std::unique_ptr<aobj::RequestHandler> handler_;  // borrows everything above
  aobj::FastPathServer fast_;                      // borrows everything above
  std::deque<std::function<void()>> fast_tasks_;   // its queued requests (CallFast runs them)
  absl::Time now_ = absl::FromUnixMillis(1795000000000);

  uint64_t requests_ = 0;  // Handle calls made
  uint64_t errors_ = 0;    // of which failed
  std::map<std::string, Obj> objects_;
  std::vector<SessionModel> all_sessions_;
  std::map<std::string, std::set<std::string>> etags_seen_;  // every ETag each key has had
  std::array<int, kSessions> slots_;  // index into all_sessions_, or -1
  std::vector<UploadModel> all_uploads_;
  std::array<int, kUploads> upload_slots_;  // index into all_uploads_, or -1
};

// Reads script fields from the fuzzer's input (stateful_script.h).
struct Reader {
  FuzzedDataProvider* in;
  void operator()(uint32_t& v, uint32_t lo, uint32_t hi) {
    v = in->ConsumeIntegralInRange<uint32_t>(lo, hi);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Reader reader{&in};
  Setup setup;
  VisitSetup(reader, setup);
  Harness harness(setup);
  for (int step = 0; step < 64 && in.remaining_bytes() > 0; ++step) {
    Step s;
    VisitStep(reader, s);
    if (Trace())
      std::fprintf(stderr, "step %d: op %u session %u key %u fault %u\n", step, s.op, s.session,
                   s.key, s.fault);
    harness.Run(s);
    harness.CheckInvariants();
  }
  harness.Finish();
  return 0;
}
