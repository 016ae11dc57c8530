// Cases for spec section 8 (data movement: paths, RMA, inline, empty bodies, checksums,
// completion, failures) and 9.9 (byte ranges).
#include <atomic>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/time/clock.h"
#include "conformance/src/cases_util.h"

namespace aobj::conformance {

Renewer::Renewer(CaseContext& ctx, const Peer& owner)
    : peer_(ctx, "P1.renew", ctx.target().access_key_id, ctx.target().secret) {
  peer_.set_session_hex(owner.session_hex());
  const auto period = absl::Milliseconds(std::max<uint64_t>(owner.session().lease_ms() / 3, 100));
  thread_ = std::thread([this, period] {
    while (!stop_.WaitForNotificationWithTimeout(period)) {
      peer_.Send(Method::kRenewSession, pb::RenewSessionRequest());
    }
  });
}

Renewer::~Renewer() {
  stop_.Notify();
  thread_.join();
  peer_.set_session_hex("");
}

namespace {

pb::GetObjectRequest RmaGet(Peer& p, const std::string& bucket, const std::string& key,
                            const RegisteredMemory& m, uint64_t len) {
  pb::GetObjectRequest g = p.GetRequest(bucket, key, m, len);
  g.set_accept_inline(false);
  return g;
}

std::string PathName(pb::TransferPath p) { return pb::TransferPath_Name(p); }

// Checks a GET reply against `expect` (the octets it should have moved).
void CheckGetReply(CaseContext& ctx, const pb::GetObjectResponse& g, const std::string& expect,
                   const std::string& what) {
  ctx.Require(g.bytes_transferred() == expect.size(), what + ": bytes_transferred",
              absl::StrCat(expect.size()), absl::StrCat(g.bytes_transferred()));
  ctx.Require(g.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C, what + ": checksum_algorithm",
              "CRC32C", pb::ChecksumAlgorithm_Name(g.checksum_algorithm()));
  ctx.Require(g.checksum() == Crc32cOf(expect), what + ": checksum over the octets moved",
              Hex(Crc32cOf(expect)), Hex(g.checksum()));
}

// dat/8.8/2 and dat/8.8/4: a data request cancelled while it runs, named in the `aobj-cancel`
// metadata entry (AOBJ-DAT-156) or in the RenewSession's signed body (AOBJ-DAT-160).
void CancellationCase(CaseContext& ctx, bool in_body) {
  BucketFixture f = OpenBucket(ctx);
  if (in_body) {
    // A session of the same principal that offers CANCEL (the bucket stays the fixture's).
    auto p = ctx.NewPeer();
    pb::OpenSessionRequest o = p->DefaultOpen();
    o.add_capabilities(kCapCancel);
    ctx.RequireOk(p->Open(o), "OpenSession offering CANCEL");
    if (!p->Negotiated(kCapCancel)) ctx.Unsupported("CANCEL not negotiated");
    f.p = std::move(p);
  }
  const size_t n = 512u << 20;
  if (f.p->session().limits().max_transfer_bytes() < n) ctx.Unsupported("max_transfer_bytes below 512 MiB");
  Renewer renewer(ctx, *f.p);
  auto m = f.p->Allocate(n);
  std::memset(m->data(), 0x21, n);
  ctx.RequireOk(f.p->Send(Method::kPutObject, f.p->PutRequest(f.bucket, "big", *m, n)),
                "PUT of 512 MiB");
  // The request runs on a second peer of the same session; the first sends the cancel.
  // Returns how long the request ran on after the server acknowledged the cancel.
  auto run = [&](Method method, const std::string& body_text, const std::string& shown,
                 RawReply* out) -> absl::Duration {
    Peer q(ctx, "P1.data", ctx.target().access_key_id, ctx.target().secret);
    q.set_session_hex(f.p->session_hex());
    Tamper t;
    t.nonce_hex = HexEncode(RandomBytes(16));
    absl::Time replied;
    std::thread worker([&] {
      *out = q.Send(method, body_text, t, shown);
      replied = absl::Now();
    });
    absl::SleepFor(absl::Milliseconds(15));
    Tamper c;
    pb::RenewSessionRequest renew;
    if (in_body) {
      renew.add_cancel(t.nonce_hex);  // AOBJ-DAT-160: inside the signed body
    } else {
      c.extra_metadata = {{kMetaCancel, t.nonce_hex}};
    }
    RawReply cancel = f.p->Send(Method::kRenewSession, renew, c);
    const absl::Time acked = absl::Now();
    worker.join();
    q.set_session_hex("");
    ctx.RequireOk(cancel, "RenewSession carrying aobj-cancel");
    return replied - acked;
  };
  bool provoked = false;
  for (int attempt = 0; attempt < 3 && !provoked; ++attempt) {
    std::memset(m->data(), 0, n);
    RawReply g;
    pb::GetObjectRequest get = f.p->GetRequest(f.bucket, "big", *m, n);
    get.set_accept_inline(false);
    const absl::Duration ran_on =
        run(Method::kGetObject, get.SerializeAsString(), "GET of 512 MiB (to be cancelled)", &g);
    if (g.grpc_status.ok()) {
      // Finished before the cancel arrived, or the cancel was ignored: the server stops
      // within one step (a few ms); a transfer that goes on long after the
      // acknowledgment did not stop.
      ctx.Require(ran_on < absl::Milliseconds(100),
                  "a GET that succeeds despite the cancel ended within 100 ms of its "
                  "acknowledgment (it was over before the cancel arrived)",
                  "< 100 ms", absl::FormatDuration(ran_on));
      continue;
    }
    provoked = true;
    ctx.RequireCode(g, ErrorCode::kCancelled, "the cancelled GET");
    // The reply promises the server is done with the window (AOBJ-DAT-155).
    std::memset(m->data(), 0x5c, n);
    absl::SleepFor(absl::Milliseconds(500));
    bool untouched = true;
    for (size_t i = 0; i < n && untouched; i += 4096) untouched = m->data()[i] == 0x5c;
    ctx.Require(untouched, "500 ms after the CANCELLED reply the window is as the client left it",
                "unchanged", "written after the reply");
  }
  if (!provoked) ctx.Unsupported("every GET of 512 MiB finished before the cancel arrived");
  // A cancelled PUT commits nothing.
  std::memset(m->data(), 0x22, n);
  for (int attempt = 0; attempt < 3; ++attempt) {
    RawReply p;
    run(Method::kPutObject, f.p->PutRequest(f.bucket, "cancelled-put", *m, n).SerializeAsString(),
        "PUT of 512 MiB (to be cancelled)", &p);
    if (p.grpc_status.ok()) {
      ctx.RequireOk(f.p->Delete(f.bucket, "cancelled-put"), "DELETE (the PUT beat the cancel)");
      continue;
    }
    ctx.RequireCode(p, ErrorCode::kCancelled, "the cancelled PUT");
    ctx.RequireCode(f.p->Head(f.bucket, "cancelled-put"), ErrorCode::kNoSuchKey,
                    "the cancelled PUT committed nothing");
    break;
  }
  if (in_body) {
    pb::RenewSessionRequest bad;
    bad.add_cancel("not-a-nonce");
    ctx.RequireCode(f.p->Send(Method::kRenewSession, bad), ErrorCode::kInvalidArgument,
                    "a cancel entry that is not 32 hex digits");
    pb::RenewSessionRequest many;
    for (int i = 0; i < 17; ++i) many.add_cancel(HexEncode(RandomBytes(16)));
    ctx.RequireCode(f.p->Send(Method::kRenewSession, many), ErrorCode::kInvalidArgument,
                    "17 cancel entries (at most 16)");
    pb::RenewSessionRequest upper;
    upper.add_cancel(absl::AsciiStrToUpper(HexEncode(RandomBytes(16))));
    ctx.RequireOk(
        f.p->Send(Method::kRenewSession, upper),
        "a cancel entry of 32 upper-case hex digits is well formed (it names no request)");
    pb::RenewSessionRequest sixteen;
    for (int i = 0; i < 16; ++i) sixteen.add_cancel(HexEncode(RandomBytes(16)));
    ctx.RequireOk(f.p->Send(Method::kRenewSession, sixteen),
                  "16 cancel entries naming no request in progress are ignored");
    // The entries are signed: one altered after signing fails authentication.
    Tamper altered;
    pb::RenewSessionRequest one;
    one.add_cancel(HexEncode(RandomBytes(16)));
    altered.raw_body = one.SerializeAsString();
    altered.body_suffix = std::string("\x0a\x20", 2) + HexEncode(RandomBytes(16));
    ctx.RequireCode(f.p->Send(Method::kRenewSession, one, altered),
                    ErrorCode::kSignatureDoesNotMatch,
                    "a cancel entry appended to the body after signing");
  } else {
    Tamper bad;
    bad.extra_metadata = {{kMetaCancel, "not-a-nonce"}};
    ctx.RequireCode(f.p->Send(Method::kRenewSession, pb::RenewSessionRequest(), bad),
                    ErrorCode::kInvalidArgument, "aobj-cancel that is not 32 hex digits");
    Tamper none;
    none.extra_metadata = {{kMetaCancel, HexEncode(RandomBytes(16))}};
    ctx.RequireOk(f.p->Send(Method::kRenewSession, pb::RenewSessionRequest(), none),
                  "aobj-cancel naming no request in progress is ignored");
  }
  ctx.RequireStillServes();
}

// A PutObject of 0 octets with the CRC32C of nothing and no descriptor (section 8.5).
pb::PutObjectRequest EmptyPut(const std::string& bucket, const std::string& key) {
  pb::PutObjectRequest put;
  put.set_bucket(bucket);
  put.set_key(key);
  put.set_size(0);
  put.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
  put.set_checksum(Crc32cOf(""));
  return put;
}

}  // namespace

void RegisterDataCases(Registry& r) {
  Add(r, "dat/8.2/1", "GET by RMA: every octet in place at the reply, which describes it", "core",
      {"AOBJ-DAT-001", "AOBJ-DAT-003", "AOBJ-DAT-030", "AOBJ-DAT-012", "AOBJ-OBJ-009",
       "AOBJ-TRN-001"},
      false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        // 80 MiB + 3: above the reference server's 64 MiB RMA piece, an odd length.
        const size_t n = (80u << 20) + 3;
        if (f.p->session().limits().max_transfer_bytes() < n) ctx.Unsupported("max_transfer_bytes below 80 MiB");
        auto m = f.p->Allocate(n);
        const std::string body = Content(n, 11);
        std::memcpy(m->data(), body.data(), n);
        ctx.RequireOk(f.p->Send(Method::kPutObject, f.p->PutRequest(f.bucket, "big", *m, n)),
                      "PUT of 80 MiB + 3");
        std::memset(m->data(), 0, n);
        RawReply g = f.p->Send(Method::kGetObject, RmaGet(*f.p, f.bucket, "big", *m, n));
        ctx.RequireOk(g, "GET of 80 MiB + 3");
        auto resp = Parse<pb::GetObjectResponse>(ctx, g, "GET");
        ctx.Require(resp.path() == pb::TRANSFER_PATH_RMA, "path", "TRANSFER_PATH_RMA", PathName(resp.path()));
        CheckGetReply(ctx, resp, body, "GET");
        ctx.Require(std::memcmp(m->data(), body.data(), n) == 0, "the window holds the object at the reply",
                    "equal", "differs");
        ctx.Require(resp.metadata().size() == n && resp.metadata().etag() == Md5Etag(body),
                    "metadata describes the version moved", absl::StrCat(n, " ", Md5Etag(body)),
                    absl::StrCat(resp.metadata().size(), " ", resp.metadata().etag()));
      });
  Add(r, "dat/8.3/1", "PUT by RMA: the reply carries what the server received", "core",
      {"AOBJ-DAT-002", "AOBJ-DAT-003", "AOBJ-DAT-030"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const std::string body = Content(3 << 20, 12);
        RawReply p = f.p->Put(f.bucket, "o", body);
        ctx.RequireOk(p, "PUT of 3 MiB");
        auto resp = Parse<pb::PutObjectResponse>(ctx, p, "PUT");
        ctx.Require(resp.bytes_transferred() == body.size(), "bytes_transferred",
                    absl::StrCat(body.size()), absl::StrCat(resp.bytes_transferred()));
        ctx.Require(resp.path() == pb::TRANSFER_PATH_RMA, "path", "TRANSFER_PATH_RMA", PathName(resp.path()));
        ctx.Require(resp.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C &&
                        resp.checksum() == Crc32cOf(body),
                    "checksum of the octets received", Hex(Crc32cOf(body)), Hex(resp.checksum()));
        std::string back;
        ctx.RequireOk(f.p->Get(f.bucket, "o", &back, nullptr, 4 << 20), "GET");
        ctx.Require(back == body, "the object is the PUT's body", "equal", "differs");
      });
  Add(r, "dat/8.3/4",
      "the checksum is checked whatever path the body took: an empty PUT and an inline PUT with a "
      "wrong checksum are BAD_DIGEST, nothing committed",
      "core", {"AOBJ-DAT-005"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "k", "the old object"), "PUT of the old object");
        pb::PutObjectRequest empty = EmptyPut(f.bucket, "k");
        empty.set_checksum(Crc32cOf("x"));  // not the CRC32C of nothing
        ctx.RequireCode(f.p->Send(Method::kPutObject, empty), ErrorCode::kBadDigest,
                        "PUT of 0 octets whose checksum is not that of nothing");
        std::string back;
        ctx.RequireOk(f.p->Get(f.bucket, "k", &back), "GET");
        ctx.Require(back == "the old object", "the key still holds the old object",
                    "the old object", absl::StrCat(back.size(), " octets"));
        if (!f.p->Negotiated(kCapInline)) {
          ctx.Note("INLINE not negotiated: the inline half is not run");
          return;
        }
        const std::string body = "an inline body";
        pb::PutObjectRequest in;
        in.set_bucket(f.bucket);
        in.set_key("k");
        in.set_size(body.size());
        in.set_inline_data(body);
        in.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        std::string sum = Crc32cOf(body);
        sum[0] = static_cast<char>(sum[0] ^ 0x80);
        in.set_checksum(sum);
        ctx.RequireCode(f.p->Send(Method::kPutObject, in), ErrorCode::kBadDigest,
                        "inline PUT with one checksum bit flipped");
        ctx.RequireOk(f.p->Get(f.bucket, "k", &back), "GET");
        ctx.Require(back == "the old object", "the key still holds the old object",
                    "the old object", absl::StrCat(back.size(), " octets"));
        in.set_key("fresh");
        ctx.RequireCode(f.p->Send(Method::kPutObject, in), ErrorCode::kBadDigest,
                        "the same inline PUT to a new key");
        ctx.RequireCode(f.p->Head(f.bucket, "fresh"), ErrorCode::kNoSuchKey, "nothing committed");
        ctx.RequireStillServes();
      });
  Add(r, "dat/8.3/2", "a PUT whose checksum differs: BAD_DIGEST, nothing committed", "checksums",
      {"AOBJ-DAT-005", "AOBJ-OBJ-014"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const std::string old_body = Content(50000, 1);
        ctx.RequireOk(f.p->Put(f.bucket, "k", old_body), "PUT of the old object");
        auto m = f.p->Allocate(60000);
        std::memcpy(m->data(), Content(60000, 2).data(), 60000);
        pb::PutObjectRequest put = f.p->PutRequest(f.bucket, "k", *m, 60000);
        std::string sum = put.checksum();
        sum[3] = static_cast<char>(sum[3] ^ 1);
        put.set_checksum(sum);
        ctx.RequireCode(f.p->Send(Method::kPutObject, put), ErrorCode::kBadDigest,
                        "PUT with one checksum bit flipped");
        std::string back;
        ctx.RequireOk(f.p->Get(f.bucket, "k", &back), "GET");
        ctx.Require(back == old_body, "the key still holds the old object", "old object",
                    absl::StrCat(back.size(), " octets, not the old object"));
        pb::PutObjectRequest fresh = f.p->PutRequest(f.bucket, "new", *m, 60000);
        fresh.set_checksum(sum);
        ctx.RequireCode(f.p->Send(Method::kPutObject, fresh), ErrorCode::kBadDigest, "a new key");
        ctx.RequireCode(f.p->Head(f.bucket, "new"), ErrorCode::kNoSuchKey, "nothing committed");
        ctx.RequireStillServes();
      });
  Add(r, "dat/8.4/1", "inline PUT and GET when INLINE is negotiated", "inline",
      {"AOBJ-DAT-007", "AOBJ-DAT-014", "AOBJ-DAT-015", "AOBJ-DAT-030"}, false,
      [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        RequireCapability(ctx, *f.p, kCapInline, "INLINE");
        const uint64_t t = f.p->session().limits().inline_threshold();
        if (t == 0) ctx.Unsupported("inline_threshold is 0");
        const std::string body = Content(std::min<uint64_t>(t, 3000), 21);
        pb::PutObjectRequest put;
        put.set_bucket(f.bucket);
        put.set_key("in");
        put.set_size(body.size());
        put.set_inline_data(body);
        put.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        put.set_checksum(Crc32cOf(body));
        RawReply p = f.p->Send(Method::kPutObject, put);
        ctx.RequireOk(p, "inline PUT");
        auto pr = Parse<pb::PutObjectResponse>(ctx, p, "PUT");
        ctx.Require(pr.path() == pb::TRANSFER_PATH_INLINE, "PUT path", "TRANSFER_PATH_INLINE", PathName(pr.path()));
        auto m = f.p->Allocate(8192);
        std::memset(m->data(), 0x44, 8192);
        pb::GetObjectRequest g = f.p->GetRequest(f.bucket, "in", *m, 8192);
        g.set_accept_inline(true);
        RawReply gr = f.p->Send(Method::kGetObject, g);
        ctx.RequireOk(gr, "GET with accept_inline and a window");
        auto resp = Parse<pb::GetObjectResponse>(ctx, gr, "GET");
        ctx.Require(resp.path() == pb::TRANSFER_PATH_INLINE, "GET path (the window notwithstanding)",
                    "TRANSFER_PATH_INLINE", PathName(resp.path()));
        ctx.Require(resp.inline_data() == body, "inline_data holds exactly the object", "equal",
                    absl::StrCat(resp.inline_data().size(), " octets"));
        CheckGetReply(ctx, resp, body, "GET");
        ctx.Require(m->data()[0] == 0x44 && m->data()[4095] == 0x44, "the window was not written",
                    "unchanged", "written");
      });
  Add(r, "dat/8.4/2", "inline bodies only when allowed: accept_inline, INLINE, threshold", "inline",
      {"AOBJ-DAT-008", "AOBJ-DAT-014", "AOBJ-EXT-007"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const uint64_t t = f.p->session().limits().inline_threshold();
        const std::string small = Content(1000, 22);
        ctx.RequireOk(f.p->Put(f.bucket, "small", small), "PUT of 1000 octets by RMA");
        auto m = f.p->Allocate(1 << 20);
        RawReply g = f.p->Send(Method::kGetObject, RmaGet(*f.p, f.bucket, "small", *m, 1 << 20));
        ctx.RequireOk(g, "GET without accept_inline");
        auto resp = Parse<pb::GetObjectResponse>(ctx, g, "GET");
        ctx.Require(resp.path() == pb::TRANSFER_PATH_RMA && resp.inline_data().empty(),
                    "without accept_inline the body moves by RMA", "TRANSFER_PATH_RMA",
                    PathName(resp.path()));
        // One octet above the threshold moves by RMA; the threshold itself is inline, the whole
        // body (AOBJ-DAT-008: bodies up to it; AOBJ-DAT-014: then inline).
        for (const uint64_t size : {t + 1, t}) {
          const bool inline_expected = size <= t;
          const std::string key = inline_expected ? "at" : "big";
          const std::string body = Content(size, inline_expected ? 25 : 23);
          ctx.RequireOk(f.p->Put(f.bucket, key, body), absl::StrCat("PUT of ", size, " octets"));
          pb::GetObjectRequest gi = f.p->GetRequest(f.bucket, key, *m, 1 << 20);
          gi.set_accept_inline(true);
          RawReply gb = f.p->Send(Method::kGetObject, gi);
          ctx.RequireOk(
              gb, absl::StrCat("GET of ", size, " octets with accept_inline (threshold ", t, ")"));
          resp = Parse<pb::GetObjectResponse>(ctx, gb, "GET");
          if (inline_expected) {
            ctx.Require(
                resp.path() == pb::TRANSFER_PATH_INLINE && resp.inline_data() == body,
                "at the threshold: inline, the whole body", "TRANSFER_PATH_INLINE",
                absl::StrCat(PathName(resp.path()), ", ", resp.inline_data().size(), " octets"));
          } else {
            ctx.Require(resp.path() == pb::TRANSFER_PATH_RMA, "above the threshold: RMA",
                        "TRANSFER_PATH_RMA", PathName(resp.path()));
          }
        }
        // A session without INLINE gets no inline body even when it asks.
        auto q = ctx.NewPeer();
        pb::OpenSessionRequest o = q->DefaultOpen();
        o.clear_capabilities();
        o.add_capabilities(kCapCrc32c);
        ctx.RequireOk(q->Open(o), "OpenSession without INLINE");
        auto qm = q->Allocate(4096);
        pb::GetObjectRequest gq = q->GetRequest(f.bucket, "small", *qm, 4096);
        gq.set_accept_inline(true);
        RawReply gr = q->Send(Method::kGetObject, gq);
        ctx.RequireOk(gr, "GET with accept_inline in a session without INLINE");
        resp = Parse<pb::GetObjectResponse>(ctx, gr, "GET");
        ctx.Require(resp.path() == pb::TRANSFER_PATH_RMA, "without INLINE negotiated: RMA",
                    "TRANSFER_PATH_RMA", PathName(resp.path()));
      });
  Add(r, "dat/8.4/3", "malformed inline PUTs: INVALID_ARGUMENT; above the threshold: "
                      "ENTITY_TOO_LARGE", "inline", {"AOBJ-DAT-007"}, true,
      [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        RequireCapability(ctx, *f.p, kCapInline, "INLINE");
        const uint64_t t = f.p->session().limits().inline_threshold();
        auto m = f.p->Allocate(t + 2);
        auto make = [&](const std::string& body, uint64_t size) {
          pb::PutObjectRequest put;
          put.set_bucket(f.bucket);
          put.set_key("bad-inline");
          put.set_size(size);
          put.set_inline_data(body);
          put.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
          put.set_checksum(Crc32cOf(body));
          return put;
        };
        ctx.RequireCode(f.p->Send(Method::kPutObject, make(Content(100), 101)),
                        ErrorCode::kInvalidArgument, "inline_data of 100 octets, size 101");
        pb::PutObjectRequest both = make(Content(100), 100);
        *both.add_source() = Peer::Descriptor(*m, 0, 100);
        ctx.RequireCode(f.p->Send(Method::kPutObject, both), ErrorCode::kInvalidArgument,
                        "inline_data and a descriptor");
        pb::PutObjectRequest at = make(Content(t, 24), t);
        at.set_key("at-threshold");
        ctx.RequireOk(f.p->Send(Method::kPutObject, at),
                      "inline_data of exactly inline_threshold octets");
        ctx.RequireCode(f.p->Send(Method::kPutObject, make(Content(t + 1), t + 1)),
                        ErrorCode::kEntityTooLarge, "inline_data of inline_threshold + 1 octets");
        auto q = ctx.NewPeer();
        pb::OpenSessionRequest o = q->DefaultOpen();
        o.clear_capabilities();
        o.add_capabilities(kCapCrc32c);
        ctx.RequireOk(q->Open(o), "OpenSession without INLINE");
        ctx.RequireCode(q->Send(Method::kPutObject, make(Content(100), 100)),
                        ErrorCode::kInvalidArgument, "inline PUT in a session without INLINE");
        ctx.RequireCode(f.p->Head(f.bucket, "bad-inline"), ErrorCode::kNoSuchKey, "nothing committed");
        ctx.RequireStillServes();
      });
  Add(r, "dat/8.5/1", "empty bodies move nothing: path NONE, 0 octets, no descriptor needed",
      "core", {"AOBJ-DAT-011", "AOBJ-DAT-030"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const pb::PutObjectRequest put = EmptyPut(f.bucket, "empty");
        RawReply p = f.p->Send(Method::kPutObject, put);
        ctx.RequireOk(p, "PUT of 0 octets without a descriptor");
        auto pr = Parse<pb::PutObjectResponse>(ctx, p, "PUT");
        ctx.Require(pr.path() == pb::TRANSFER_PATH_NONE && pr.bytes_transferred() == 0,
                    "PUT reply", "TRANSFER_PATH_NONE, 0", absl::StrCat(PathName(pr.path()), ", ", pr.bytes_transferred()));
        pb::GetObjectRequest g;
        g.set_bucket(f.bucket);
        g.set_key("empty");
        g.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        RawReply gr = f.p->Send(Method::kGetObject, g);
        ctx.RequireOk(gr, "GET of the empty object without a descriptor");
        auto resp = Parse<pb::GetObjectResponse>(ctx, gr, "GET");
        ctx.Require(resp.path() == pb::TRANSFER_PATH_NONE && resp.bytes_transferred() == 0 &&
                        resp.checksum() == Crc32cOf(""),
                    "GET reply", "TRANSFER_PATH_NONE, 0, CRC32C of nothing",
                    absl::StrCat(PathName(resp.path()), ", ", resp.bytes_transferred(), ", ", Hex(resp.checksum())));
        auto m = f.p->Allocate(4096);
        std::memset(m->data(), 0x66, 4096);
        RawReply gw = f.p->Send(Method::kGetObject, RmaGet(*f.p, f.bucket, "empty", *m, 4096));
        ctx.RequireOk(gw, "GET of the empty object with a window");
        ctx.Require(m->data()[0] == 0x66, "the window was not touched", "unchanged", "written");
      });
  Add(r, "dat/8.4/5",
      "inline_data one octet longer or shorter than size: INVALID_ARGUMENT, nothing committed",
      "inline", {"AOBJ-DAT-007"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        RequireCapability(ctx, *f.p, kCapInline, "INLINE");
        const uint64_t t = f.p->session().limits().inline_threshold();
        if (t < 2) ctx.Unsupported(absl::StrCat("inline_threshold is ", t));
        const uint64_t size = std::min<uint64_t>(t - 1, 1000);
        for (uint64_t length : {size + 1, size - 1}) {
          const std::string body = Content(length, 7);
          pb::PutObjectRequest put;
          put.set_bucket(f.bucket);
          put.set_key("mismatched");
          put.set_size(size);
          put.set_inline_data(body);
          put.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
          put.set_checksum(Crc32cOf(body.substr(0, std::min<uint64_t>(length, size))));
          ctx.RequireCode(f.p->Send(Method::kPutObject, put), ErrorCode::kInvalidArgument,
                          absl::StrCat("inline_data of ", length, " octets, size ", size));
          ctx.RequireCode(f.p->Head(f.bucket, "mismatched"), ErrorCode::kNoSuchKey,
                          "nothing committed");
        }
        ctx.RequireStillServes();
      });
  Add(r, "dat/8.5/5",
      "descriptors a request does not use are not checked: an empty PUT and GET, and an inline "
      "GET, each with a malformed window, succeed",
      "core", {"AOBJ-MEM-030", "AOBJ-DAT-011", "AOBJ-DAT-014"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        auto bad = [](google::protobuf::RepeatedPtrField<pb::MemoryDescriptor>* ds) {
          pb::MemoryDescriptor* d = ds->Add();
          d->set_address(0);
          d->set_length(0);  // AOBJ-MEM-001 would refuse it
          d->set_rkey("not a remote key");
          d->set_memory_type(pb::MEMORY_TYPE_UNSPECIFIED);
        };
        pb::PutObjectRequest put = EmptyPut(f.bucket, "empty-bad-window");
        bad(put.mutable_source());
        ctx.RequireOk(f.p->Send(Method::kPutObject, put),
                      "PUT of 0 octets with a zero-length window of no memory type");
        pb::GetObjectRequest g;
        g.set_bucket(f.bucket);
        g.set_key("empty-bad-window");
        g.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        bad(g.mutable_destination());
        ctx.RequireOk(f.p->Send(Method::kGetObject, g),
                      "GET of the empty object with the same window");
        if (!f.p->Negotiated(kCapInline) || f.p->session().limits().inline_threshold() < 100) {
          ctx.Note("INLINE not negotiated: the inline half was not run");
          ctx.RequireStillServes();
          return;
        }
        const std::string body = Content(100, 27);
        ctx.RequireOk(f.p->Put(f.bucket, "small", body), "PUT of 100 octets");
        pb::GetObjectRequest gi;
        gi.set_bucket(f.bucket);
        gi.set_key("small");
        gi.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        gi.set_accept_inline(true);
        bad(gi.mutable_destination());
        RawReply ir = f.p->Send(Method::kGetObject, gi);
        ctx.RequireOk(ir, "GET of 100 octets with accept_inline and the malformed window");
        if (ir.grpc_status.ok()) {
          auto resp = Parse<pb::GetObjectResponse>(ctx, ir, "GET");
          ctx.Require(resp.path() == pb::TRANSFER_PATH_INLINE && resp.inline_data() == body,
                      "the body came inline", "TRANSFER_PATH_INLINE, 100 octets",
                      absl::StrCat(PathName(resp.path()), ", ", resp.inline_data().size()));
        }
        ctx.RequireStillServes();
      });
  Add(r, "dat/8.5/2",
      "an empty object read with accept_inline, with and without a window, and a ranged read: "
      "path NONE and 0 octets every time",
      "core", {"AOBJ-DAT-011", "AOBJ-DAT-030"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "empty", ""), "PUT of 0 octets");
        auto m = f.p->Allocate(4096);
        std::memset(m->data(), 0x66, 4096);
        for (int with_window = 0; with_window < 2; ++with_window) {
          pb::GetObjectRequest g =
              with_window ? f.p->GetRequest(f.bucket, "empty", *m, 4096) : pb::GetObjectRequest();
          g.set_bucket(f.bucket);
          g.set_key("empty");
          g.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
          g.set_accept_inline(true);
          const std::string what = absl::StrCat("GET with accept_inline, ",
                                                with_window ? "with" : "without", " a window");
          RawReply gr = f.p->Send(Method::kGetObject, g);
          ctx.RequireOk(gr, what);
          const auto resp = Parse<pb::GetObjectResponse>(ctx, gr, what);
          ctx.Require(resp.path() == pb::TRANSFER_PATH_NONE && resp.bytes_transferred() == 0 &&
                          resp.inline_data().empty(),
                      what + ": the reply", "TRANSFER_PATH_NONE, 0 octets, no inline_data",
                      absl::StrCat(PathName(resp.path()), ", ", resp.bytes_transferred(), ", ",
                                   resp.inline_data().size(), " inline octets"));
        }
        ctx.Require(m->data()[0] == 0x66, "the window was not touched", "unchanged", "written");
      });
  Add(r, "dat/8.6/1", "PUT checksum missing, of the wrong length, or of an unknown algorithm: "
                      "INVALID_ARGUMENT",
      "checksums", {"AOBJ-DAT-020", "AOBJ-DAT-023"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        auto m = f.p->Allocate(4096);
        std::memset(m->data(), 9, 4096);
        pb::PutObjectRequest put = f.p->PutRequest(f.bucket, "k", *m, 4096);
        put.clear_checksum_algorithm();
        put.clear_checksum();
        ctx.RequireCode(f.p->Send(Method::kPutObject, put), ErrorCode::kInvalidArgument,
                        "PUT without a checksum");
        put = f.p->PutRequest(f.bucket, "k", *m, 4096);
        put.set_checksum(put.checksum() + "x");
        ctx.RequireCode(f.p->Send(Method::kPutObject, put), ErrorCode::kInvalidArgument,
                        "a CRC32C of 5 octets");
        put = f.p->PutRequest(f.bucket, "k", *m, 4096);
        put.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(99));
        ctx.RequireCode(f.p->Send(Method::kPutObject, put), ErrorCode::kInvalidArgument,
                        "checksum_algorithm 99");
        // CRC-64/NVME in a session that negotiated only CRC32C.
        auto q = ctx.NewPeer();
        pb::OpenSessionRequest o = q->DefaultOpen();
        o.clear_capabilities();
        o.add_capabilities(kCapCrc32c);
        ctx.RequireOk(q->Open(o), "OpenSession with only CRC32C");
        auto qm = q->Allocate(4096);
        std::memset(qm->data(), 9, 4096);
        pb::PutObjectRequest p64 = q->PutRequest(f.bucket, "k", *qm, 4096);
        p64.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC64NVME);
        p64.set_checksum(Crc64Of(std::string(4096, '\x09')));
        ctx.RequireCode(q->Send(Method::kPutObject, p64), ErrorCode::kInvalidArgument,
                        "CRC64NVME not negotiated");
        ctx.RequireCode(f.p->Head(f.bucket, "k"), ErrorCode::kNoSuchKey, "nothing committed");
        ctx.RequireStillServes();
      });
  Add(r, "dat/8.6/2", "CRC-64/NVME end to end, big-endian", "checksums",
      {"AOBJ-DAT-021", "AOBJ-DAT-003"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        RequireCapability(ctx, *f.p, kCapCrc64, "CRC64NVME");
        const std::string body = Content(123457, 31);
        auto m = f.p->Allocate(body.size());
        std::memcpy(m->data(), body.data(), body.size());
        pb::PutObjectRequest put = f.p->PutRequest(f.bucket, "c64", *m, body.size());
        put.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC64NVME);
        put.set_checksum(Crc64Of(body));
        ctx.Require(Crc64Of("123456789") == std::string("\xae\x8b\x14\x86\x0a\x79\x98\x88", 8),
                    "the suite's CRC-64/NVME check value (Table 2)", "ae8b14860a799888",
                    Hex(Crc64Of("123456789")));
        RawReply p = f.p->Send(Method::kPutObject, put);
        ctx.RequireOk(p, "PUT with CRC64NVME");
        auto pr = Parse<pb::PutObjectResponse>(ctx, p, "PUT");
        ctx.Require(pr.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC64NVME && pr.checksum() == Crc64Of(body),
                    "PUT reply checksum", Hex(Crc64Of(body)), Hex(pr.checksum()));
        pb::GetObjectRequest g = RmaGet(*f.p, f.bucket, "c64", *m, body.size());
        g.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC64NVME);
        RawReply gr = f.p->Send(Method::kGetObject, g);
        ctx.RequireOk(gr, "GET with CRC64NVME");
        auto resp = Parse<pb::GetObjectResponse>(ctx, gr, "GET");
        ctx.Require(resp.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC64NVME &&
                        resp.checksum() == Crc64Of(body),
                    "GET reply checksum", Hex(Crc64Of(body)), Hex(resp.checksum()));
        ctx.Require(Crc32cOf("123456789") == std::string("\xe3\x06\x92\x83", 4),
                    "the suite's CRC32C check value (Table 2)", "e3069283", Hex(Crc32cOf("123456789")));
      });
  Add(r, "dat/8.8/1", "bodies above max_transfer_bytes: ENTITY_TOO_LARGE", "limits",
      {"AOBJ-DAT-006"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "8k", Content(8192)), "PUT of 8 KiB");
        auto q = ctx.NewPeer();
        pb::OpenSessionRequest o = q->DefaultOpen();
        o.mutable_requested_limits()->set_max_transfer_bytes(4096);
        ctx.RequireOk(q->Open(o), "OpenSession asking for max_transfer_bytes 4096");
        if (q->session().limits().max_transfer_bytes() != 4096) {
          ctx.Require(false, "the smaller requested limit is effective (AOBJ-SES-006)", "4096",
                      absl::StrCat(q->session().limits().max_transfer_bytes()));
        }
        auto m = q->Allocate(8192);
        std::memset(m->data(), 1, 8192);
        ctx.RequireCode(q->Send(Method::kPutObject, q->PutRequest(f.bucket, "big", *m, 8192)),
                        ErrorCode::kEntityTooLarge, "PUT of 8192 with max_transfer_bytes 4096");
        pb::GetObjectRequest g = q->GetRequest(f.bucket, "8k", *m, 8192);
        g.set_accept_inline(false);
        ctx.RequireCode(q->Send(Method::kGetObject, g), ErrorCode::kEntityTooLarge,
                        "GET of an 8192-octet object with max_transfer_bytes 4096");
        pb::GetObjectRequest gr = g;
        gr.mutable_range()->set_kind(pb::ByteRange::KIND_FIRST_LAST);
        gr.mutable_range()->set_first(0);
        gr.mutable_range()->set_last(4095);
        ctx.RequireOk(q->Send(Method::kGetObject, gr), "a ranged GET of 4096 of them (AOBJ-DAT-104)");
        ctx.RequireStillServes();
      });

  Add(r, "dat/8.8/2", "a cancelled GET or PUT: CANCELLED, replied only after its RMA, nothing "
                      "committed, no access afterwards",
      "core", {"AOBJ-DAT-155", "AOBJ-DAT-156", "AOBJ-DAT-016", "AOBJ-MEM-010"}, true,
      [](CaseContext& ctx) { CancellationCase(ctx, false); });
  Add(r, "dat/8.8/4", "CANCEL: requests named in the RenewSession's signed body are stopped as "
                      "by aobj-cancel; malformed, oversized and altered entries refused",
      "core", {"AOBJ-DAT-161", "AOBJ-DAT-160", "AOBJ-DAT-155", "AOBJ-DAT-016"}, true,
      [](CaseContext& ctx) { CancellationCase(ctx, true); });
  Add(r, "dat/8.8/3", "after a GET's deadline passes the server stops writing", "core",
      {"AOBJ-DAT-016"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        // Long enough that a server which does not stop is still writing well after its deadline
        // (the reference moves about 8 GB/s over shared memory here).
        const uint64_t max = f.p->session().limits().max_transfer_bytes();
        if (max < (256u << 20)) ctx.Unsupported("max_transfer_bytes below 256 MiB");
        const size_t n = max >= (512u << 20) ? (512u << 20) : (256u << 20);
        Renewer renewer(ctx, *f.p);
        auto m = f.p->Allocate(n);
        std::memset(m->data(), 0x31, n);
        ctx.RequireOk(f.p->Send(Method::kPutObject, f.p->PutRequest(f.bucket, "big", *m, n)),
                      absl::StrCat("PUT of ", n >> 20, " MiB"));
        // The window starts zeroed, so the suite sees how far the GET's writes have come.
        std::memset(m->data(), 0, n);
        volatile const uint8_t* window = m->data();
        auto high_water = [&]() -> size_t {  // one past the last octet written so far
          for (size_t i = n; i >= 4096; i -= 4096) {
            if (window[i - 1] == 0x31) return i;
          }
          return window[0] == 0x31 ? 4096 : 0;
        };
        // The server's deadline is at most 20 ms after its first write (it received the call
        // before that; gRPC deadlines are relative, so a server that received the call late has a
        // later deadline than the suite's, which is why the suite times from the first write).
        std::atomic<bool> sent{false};
        absl::Time first_write = absl::InfiniteFuture();
        std::thread watcher([&] {
          const absl::Time give_up = absl::Now() + absl::Seconds(3);
          while (absl::Now() < give_up) {
            if (window[0] == 0x31 || window[4095] == 0x31) {
              first_write = absl::Now();
              return;
            }
            if (sent.load() && absl::Now() > give_up - absl::Seconds(1)) return;
            absl::SleepFor(absl::Microseconds(100));
          }
        });
        TargetOptions shortened = ctx.target();
        shortened.call_timeout = absl::Milliseconds(20);
        CaseContext sub(shortened, "dl", 0);
        Peer q(sub, "P1.deadline", ctx.target().access_key_id, ctx.target().secret);
        q.set_session_hex(f.p->session_hex());
        pb::GetObjectRequest get = q.GetRequest(f.bucket, "big", *m, n);
        get.set_accept_inline(false);
        RawReply g = q.Send(Method::kGetObject, get);
        sent = true;
        q.set_session_hex("");
        watcher.join();
        for (auto& e : sub.transcript()) ctx.Record(e);
        if (g.grpc_status.ok()) {
          ctx.Unsupported(absl::StrCat("the GET of ", n >> 20, " MiB finished within 20 ms"));
        }
        ctx.Require(g.grpc_status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED,
                    "the call ended at its deadline", "gRPC DEADLINE_EXCEEDED", Outcome(g));
        if (first_write == absl::InfiniteFuture()) {
          ctx.Unsupported(
              "the target wrote nothing of the GET (it may have seen the deadline "
              "before its first step): nothing to watch");
        }
        // Past the server's deadline: from here a server that stops (AOBJ-DAT-016) finishes at
        // most the step it had issued. The client may not touch the window until it knows the
        // server let go (AOBJ-MEM-014); the suite watches it instead.
        absl::SleepFor(first_write + absl::Milliseconds(21) - absl::Now());
        const size_t reached = high_water();
        const size_t slack = 64u << 20;  // steps in flight (the reference's are 16 MiB)
        const size_t tail = (reached + slack + 4095) / 4096 * 4096;
        if (tail >= n) {
          ctx.Unsupported(absl::StrCat("the GET had written ", reached >> 20, " of ", n >> 20,
                                       " MiB 21 ms after its first write: too fast to watch a "
                                       "stop"));
        }
        std::memset(m->data() + tail, 0x5d, n - tail);
        absl::SleepFor(absl::Milliseconds(1000));
        bool untouched = true;
        for (size_t i = tail; i < n && untouched; i += 4096) untouched = window[i] == 0x5d;
        ctx.Require(untouched,
                    absl::StrCat("octets ", tail >> 20, " MiB to ", n >> 20,
                                 " MiB of the window are never written after the deadline (",
                                 reached >> 20, " MiB written when it passed)"),
                    "unchanged", "written after the deadline");
        ctx.RequireStillServes();
      });

  // ---- 9.9: byte ranges ------------------------------------------------------------------------
  Add(r, "rng/9.9/1", "FIRST_LAST, FROM and SUFFIX select the right octets, described by "
                      "content_range",
      "ranges",
      {"AOBJ-DAT-101", "AOBJ-DAT-103", "AOBJ-DAT-104", "AOBJ-DAT-106", "AOBJ-DAT-107"}, false,
      [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const std::string body = Content(100000, 41);
        ctx.RequireOk(f.p->Put(f.bucket, "r", body), "PUT of 100000 octets");
        struct Case {
          int kind;
          uint64_t first, last, suffix;
          uint64_t from, to;  // expected octets [from, to]
          const char* what;
        };
        const Case cases[] = {
            {pb::ByteRange::KIND_FIRST_LAST, 10, 20009, 0, 10, 20009, "bytes=10-20009"},
            {pb::ByteRange::KIND_FIRST_LAST, 99990, 200000, 0, 99990, 99999, "bytes=99990-200000 (clipped)"},
            {pb::ByteRange::KIND_FROM, 50000, 0, 0, 50000, 99999, "bytes=50000-"},
            {pb::ByteRange::KIND_SUFFIX, 0, 0, 777, 100000 - 777, 99999, "bytes=-777"},
            {pb::ByteRange::KIND_SUFFIX, 0, 0, 500000, 0, 99999, "bytes=-500000 (whole object)"},
        };
        auto m = f.p->Allocate(100000);
        for (const Case& c : cases) {
          std::memset(m->data(), 0xcc, 100000);
          pb::GetObjectRequest g = RmaGet(*f.p, f.bucket, "r", *m, 100000);
          g.mutable_range()->set_kind(static_cast<pb::ByteRange::Kind>(c.kind));
          if (c.kind != pb::ByteRange::KIND_SUFFIX) g.mutable_range()->set_first(c.first);
          if (c.kind == pb::ByteRange::KIND_FIRST_LAST) g.mutable_range()->set_last(c.last);
          if (c.kind == pb::ByteRange::KIND_SUFFIX) g.mutable_range()->set_suffix_length(c.suffix);
          RawReply gr = f.p->Send(Method::kGetObject, g);
          ctx.RequireOk(gr, std::string("GET ") + c.what);
          auto resp = Parse<pb::GetObjectResponse>(ctx, gr, c.what);
          const std::string want = body.substr(c.from, c.to - c.from + 1);
          CheckGetReply(ctx, resp, want, c.what);
          ctx.Require(resp.has_content_range() && resp.content_range().first() == c.from &&
                          resp.content_range().last() == c.to &&
                          resp.content_range().complete_length() == 100000,
                      std::string(c.what) + ": content_range",
                      absl::StrCat(c.from, "-", c.to, "/100000"), resp.content_range().ShortDebugString());
          ctx.Require(std::memcmp(m->data(), want.data(), want.size()) == 0,
                      std::string(c.what) + ": the octets at the start of the window", "equal", "differ");
          ctx.Require(want.size() == 100000 || static_cast<uint8_t>(m->data()[want.size()]) == 0xcc,
                      std::string(c.what) + ": nothing written after them", "unchanged", "written");
        }
        std::string whole;
        pb::GetObjectResponse plain;
        ctx.RequireOk(f.p->Get(f.bucket, "r", &whole, &plain), "GET without a range");
        ctx.Require(!plain.has_content_range(), "no content_range without a range", "absent",
                    plain.content_range().ShortDebugString());
      });
  Add(r, "rng/9.9/2", "malformed ranges: INVALID_ARGUMENT", "ranges", {"AOBJ-DAT-100"}, true,
      [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "r", Content(1000)), "PUT");
        auto m = f.p->Allocate(1000);
        auto get = [&](pb::ByteRange range, const std::string& what) {
          pb::GetObjectRequest g = RmaGet(*f.p, f.bucket, "r", *m, 1000);
          *g.mutable_range() = range;
          ctx.RequireCode(f.p->Send(Method::kGetObject, g), ErrorCode::kInvalidArgument, what);
        };
        pb::ByteRange b;
        b.set_first(1);
        get(b, "kind UNSPECIFIED");
        b.set_kind(pb::ByteRange::KIND_FIRST_LAST);
        b.set_first(10);
        b.set_last(5);
        get(b, "FIRST_LAST 10-5");
        b = {};
        b.set_kind(pb::ByteRange::KIND_FROM);
        b.set_first(1);
        b.set_last(5);
        get(b, "FROM with last set");
        b = {};
        b.set_kind(pb::ByteRange::KIND_SUFFIX);
        b.set_suffix_length(5);
        b.set_first(2);
        get(b, "SUFFIX with first set");
        b = {};
        b.set_kind(static_cast<pb::ByteRange::Kind>(9));
        get(b, "kind 9");
        ctx.RequireStillServes();
      });
  Add(r, "rng/9.9/3", "ranges that select nothing: INVALID_RANGE", "ranges", {"AOBJ-DAT-102"}, true,
      [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "r", Content(1000)), "PUT of 1000");
        ctx.RequireOk(f.p->Put(f.bucket, "empty", ""), "PUT of an empty object");
        auto m = f.p->Allocate(1000);
        auto get = [&](const std::string& key, pb::ByteRange range, const std::string& what) {
          pb::GetObjectRequest g = RmaGet(*f.p, f.bucket, key, *m, 1000);
          *g.mutable_range() = range;
          RawReply rr = f.p->Send(Method::kGetObject, g);
          ctx.RequireCode(rr, ErrorCode::kInvalidRange, what);
          ctx.Require(rr.error.s3_code() == "InvalidRange", what + ": S3 name", "InvalidRange",
                      rr.error.s3_code());
        };
        pb::ByteRange b;
        b.set_kind(pb::ByteRange::KIND_FIRST_LAST);
        b.set_first(1000);
        b.set_last(2000);
        get("r", b, "bytes=1000-2000 of 1000 octets");
        b = {};
        b.set_kind(pb::ByteRange::KIND_FROM);
        b.set_first(5000);
        get("r", b, "bytes=5000- of 1000 octets");
        b = {};
        b.set_kind(pb::ByteRange::KIND_SUFFIX);
        b.set_suffix_length(0);
        get("r", b, "bytes=-0");
        b = {};
        b.set_kind(pb::ByteRange::KIND_FIRST_LAST);
        b.set_first(0);
        b.set_last(0);
        get("empty", b, "bytes=0-0 of an empty object");
        b = {};
        b.set_kind(pb::ByteRange::KIND_FROM);
        b.set_first(0);
        get("empty", b, "bytes=0- of an empty object");
        for (uint64_t suffix : {uint64_t{1}, ~uint64_t{0}}) {
          b = {};
          b.set_kind(pb::ByteRange::KIND_SUFFIX);
          b.set_suffix_length(suffix);
          get("empty", b, absl::StrCat("bytes=-", suffix, " of an empty object"));
        }
        ctx.RequireStillServes();
      });
  // Section 13.7: a client that stops progressing its worker in the middle of a transfer whose
  // RMA needs its progress (ordinary memory, reached by emulation without an RDMA NIC).
  Add(r, "dat/13.7/1",
      "a stalled client: TRANSFER_FAILED within the announced bound, then "
      "DATA_CHANNEL_UNAVAILABLE for the session's data requests",
      "core", {"AOBJ-OPS-008", "AOBJ-DAT-157", "AOBJ-DAT-158", "AOBJ-DAT-159"}, true,
      [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        auto stalled = ctx.NewPeer();
        stalled->UseStalledWorker();
        ctx.RequireOk(stalled->Open(), "OpenSession naming a worker nobody progresses");
        const uint32_t bound_ms = stalled->session().limits().data_wait_ms();
        ctx.Require(bound_ms > 0, "the server announces its RMA bound (Limits.data_wait_ms)",
                    "non-zero", "0");
        constexpr size_t kSize = 8 << 20;
        auto heap = stalled->RegisterHeap(kSize, 0x5a);
        // The lease is renewed around the PUT, which waits out the RMA bound: with a lease not
        // much longer than the bound (CI runs 2 s and 1.5 s) the session must not expire before
        // the requests that follow it, on a slow (sanitized) build neither.
        ctx.RequireOk(stalled->Send(Method::kRenewSession, pb::RenewSessionRequest()),
                      "RenewSession before the PUT");
        const absl::Time start = absl::Now();
        RawReply put = stalled->Send(Method::kPutObject,
                                     stalled->PutRequest(f.bucket, "stalled", *heap, kSize));
        const absl::Duration took = absl::Now() - start;
        // AOBJ-DAT-158: a session whose data channel failed stays OPEN and may be renewed.
        ctx.RequireOk(stalled->Send(Method::kRenewSession, pb::RenewSessionRequest()),
                      "RenewSession of the session whose data channel failed");
        if (put.status.ok()) {
          // Only a server that read the memory without this side's progress (hardware RMA:
          // nothing could stall, and the bound was never needed) may answer OK, and then it
          // stored the whole object; anything less is a failed read answered as a success.
          RawReply head = f.p->Head(f.bucket, "stalled");
          const auto h = head.status.ok() ? Parse<pb::HeadObjectResponse>(ctx, head, "HEAD")
                                          : pb::HeadObjectResponse();
          ctx.Require(head.status.ok() && h.metadata().size() == kSize,
                      "an OK reply means the object was read and stored", "8 MiB stored",
                      head.status.ok() ? absl::StrCat(h.metadata().size(), " octets stored")
                                       : "nothing stored");
          ctx.Unsupported("the server's RMA did not need the client's progress (HARDWARE)");
        }
        ctx.RequireCode(put, ErrorCode::kTransferFailed, "PUT from memory nobody serves");
        // The bound, plus the octets at 50 MB/s, plus room for a busy machine.
        const absl::Duration limit = absl::Milliseconds(bound_ms) +
                                     absl::Seconds(static_cast<double>(kSize) / 50e6) +
                                     absl::Seconds(5);
        ctx.Require(took <= limit, "the reply came within the announced bound",
                    absl::StrCat("<= ", absl::FormatDuration(limit)), absl::FormatDuration(took));
        ctx.RequireCode(f.p->Head(f.bucket, "stalled"), ErrorCode::kNoSuchKey,
                        "HEAD of the key the failed PUT named (nothing committed)");
        RawReply again = stalled->Send(Method::kPutObject,
                                       stalled->PutRequest(f.bucket, "stalled", *heap, kSize));
        ctx.RequireCode(again, ErrorCode::kDataChannelUnavailable,
                        "the next PUT of the session whose data channel failed");
        ctx.Require(again.error.message().find("data channel") != std::string::npos,
                    "the message says the data channel failed", "mentions the data channel",
                    again.error.message());
        ctx.RequireOk(f.p->Put(f.bucket, "small", "small"),
                      "PUT of a small object by another session");
        auto win = stalled->RegisterHeap(4096, 0);
        pb::GetObjectRequest g = stalled->GetRequest(f.bucket, "small", *win, 4096);
        g.set_accept_inline(false);
        ctx.RequireCode(stalled->Send(Method::kGetObject, g), ErrorCode::kDataChannelUnavailable,
                        "a GET by RMA in the failed session");
        // AOBJ-DAT-158: the session otherwise stays OPEN.
        ctx.RequireOk(stalled->Send(Method::kRenewSession, pb::RenewSessionRequest()),
                      "RenewSession again, after the refused requests");
        ctx.RequireOk(stalled->Head(f.bucket, "small"),
                      "HeadObject in the session whose data channel failed");
        ctx.RequireStillServes();
      });
  // Gaps found by reading the cases against the spec (issue 17): the second paths of shared rules.
  Add(r, "dat/8.6/3",
      "GET checksums: UNSPECIFIED answers CRC32C; either algorithm of an object stored with the "
      "other; ranged and inline CRC64NVME; unknown or unnegotiated algorithms INVALID_ARGUMENT",
      "checksums", {"AOBJ-DAT-020", "AOBJ-DAT-023", "AOBJ-DAT-003", "AOBJ-DAT-106", "AOBJ-OBJ-012"},
      true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        RequireCapability(ctx, *f.p, kCapCrc64, "CRC64NVME");
        const std::string body = Content(50000, 17);
        auto m = f.p->Allocate(body.size());
        std::memcpy(m->data(), body.data(), body.size());
        ctx.RequireOk(
            f.p->Send(Method::kPutObject, f.p->PutRequest(f.bucket, "c32", *m, body.size())),
            "PUT with CRC32C");
        pb::PutObjectRequest p64 = f.p->PutRequest(f.bucket, "c64", *m, body.size());
        p64.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC64NVME);
        p64.set_checksum(Crc64Of(body));
        ctx.RequireOk(f.p->Send(Method::kPutObject, p64), "PUT with CRC64NVME");
        for (const char* key : {"c32", "c64"}) {
          pb::HeadObjectResponse h;
          ctx.RequireOk(f.p->Head(f.bucket, key, &h), absl::StrCat("HEAD ", key));
          const auto& md = h.metadata();
          const std::string want = md.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC64NVME
                                       ? Crc64Of(body)
                                       : Crc32cOf(body);
          ctx.Require(md.checksum() == want &&
                          md.checksum_algorithm() != pb::CHECKSUM_ALGORITHM_UNSPECIFIED,
                      absl::StrCat("HEAD ", key,
                                   ": the checksum of the full object in the "
                                   "algorithm it names"),
                      Hex(want),
                      absl::StrCat(pb::ChecksumAlgorithm_Name(md.checksum_algorithm()), " ",
                                   Hex(md.checksum())));
        }
        auto out = f.p->Allocate(body.size());
        auto get = [&](const std::string& key, pb::ChecksumAlgorithm alg,
                       const pb::ByteRange* range, bool inline_ok, const std::string& what) {
          pb::GetObjectRequest g = RmaGet(*f.p, f.bucket, key, *out, body.size());
          g.set_checksum_algorithm(alg);
          g.set_accept_inline(inline_ok);
          if (range != nullptr) *g.mutable_range() = *range;
          RawReply gr = f.p->Send(Method::kGetObject, g);
          ctx.RequireOk(gr, what);
          return Parse<pb::GetObjectResponse>(ctx, gr, what);
        };
        for (const char* key : {"c32", "c64"}) {
          auto g = get(key, pb::CHECKSUM_ALGORITHM_UNSPECIFIED, nullptr, false,
                       absl::StrCat("GET ", key, " with the algorithm UNSPECIFIED"));
          ctx.Require(g.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C &&
                          g.checksum() == Crc32cOf(body),
                      absl::StrCat("GET ", key, " UNSPECIFIED: answered in CRC32C"),
                      "CRC32C " + Hex(Crc32cOf(body)),
                      absl::StrCat(pb::ChecksumAlgorithm_Name(g.checksum_algorithm()), " ",
                                   Hex(g.checksum())));
          for (auto alg : {pb::CHECKSUM_ALGORITHM_CRC32C, pb::CHECKSUM_ALGORITHM_CRC64NVME}) {
            const std::string what =
                absl::StrCat("GET ", key, " asking ", pb::ChecksumAlgorithm_Name(alg));
            auto r = get(key, alg, nullptr, false, what);
            const std::string want =
                alg == pb::CHECKSUM_ALGORITHM_CRC32C ? Crc32cOf(body) : Crc64Of(body);
            ctx.Require(r.checksum_algorithm() == alg && r.checksum() == want,
                        what + ": answered in the requested algorithm", Hex(want),
                        absl::StrCat(pb::ChecksumAlgorithm_Name(r.checksum_algorithm()), " ",
                                     Hex(r.checksum())));
          }
        }
        pb::ByteRange range;
        range.set_kind(pb::ByteRange::KIND_FIRST_LAST);
        range.set_first(1000);
        range.set_last(30999);
        auto rr = get("c64", pb::CHECKSUM_ALGORITHM_CRC64NVME, &range, false,
                      "a ranged GET (1000-30999) in CRC64NVME");
        ctx.Require(rr.checksum() == Crc64Of(body.substr(1000, 30000)),
                    "the ranged GET's CRC64NVME is over the octets it moved",
                    Hex(Crc64Of(body.substr(1000, 30000))), Hex(rr.checksum()));
        if (f.p->Negotiated(kCapInline) && f.p->session().limits().inline_threshold() >= 100) {
          ctx.RequireOk(f.p->Put(f.bucket, "tiny", body.substr(0, 100)), "PUT of 100 octets");
          auto ir = get("tiny", pb::CHECKSUM_ALGORITHM_CRC64NVME, nullptr, true,
                        "an inline GET in CRC64NVME");
          ctx.Require(ir.path() == pb::TRANSFER_PATH_INLINE &&
                          ir.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC64NVME &&
                          ir.checksum() == Crc64Of(body.substr(0, 100)),
                      "the inline GET's checksum is CRC64NVME over its body",
                      "INLINE " + Hex(Crc64Of(body.substr(0, 100))),
                      absl::StrCat(PathName(ir.path()), " ", Hex(ir.checksum())));
        }
        pb::GetObjectRequest bad = RmaGet(*f.p, f.bucket, "c32", *out, body.size());
        bad.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(99));
        ctx.RequireCode(f.p->Send(Method::kGetObject, bad), ErrorCode::kInvalidArgument,
                        "GET with checksum_algorithm 99");
        auto q = ctx.NewPeer();
        pb::OpenSessionRequest o = q->DefaultOpen();
        o.clear_capabilities();
        o.add_capabilities(kCapCrc32c);
        ctx.RequireOk(q->Open(o), "OpenSession with only CRC32C");
        auto qm = q->Allocate(body.size());
        std::memset(qm->data(), 0x3c, body.size());
        pb::GetObjectRequest g64 = RmaGet(*q, f.bucket, "c64", *qm, body.size());
        g64.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC64NVME);
        ctx.RequireCode(q->Send(Method::kGetObject, g64), ErrorCode::kInvalidArgument,
                        "GET asking CRC64NVME in a session that negotiated only CRC32C");
        ctx.Require(static_cast<uint8_t>(qm->data()[0]) == 0x3c, "nothing written", "unchanged",
                    "written");
        ctx.RequireStillServes();
      });
  Add(r, "dat/8.8/5",
      "max_transfer_bytes at its edge: 4096 octets accepted, 4097 ENTITY_TOO_LARGE, for PUT, "
      "whole GET and ranged GET",
      "limits", {"AOBJ-DAT-006", "AOBJ-DAT-104", "AOBJ-SES-006"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const std::string at = Content(4096, 3), over = Content(4097, 4);
        ctx.RequireOk(f.p->Put(f.bucket, "at", at), "PUT of 4096 octets");
        ctx.RequireOk(f.p->Put(f.bucket, "over", over), "PUT of 4097 octets");
        auto q = ctx.NewPeer();
        pb::OpenSessionRequest o = q->DefaultOpen();
        o.mutable_requested_limits()->set_max_transfer_bytes(4096);
        ctx.RequireOk(q->Open(o), "OpenSession asking for max_transfer_bytes 4096");
        ctx.Require(q->session().limits().max_transfer_bytes() == 4096,
                    "the smaller requested limit is effective (AOBJ-SES-006)", "4096",
                    absl::StrCat(q->session().limits().max_transfer_bytes()));
        auto m = q->Allocate(8192);
        std::memcpy(m->data(), over.data(), over.size());
        ctx.RequireOk(q->Send(Method::kPutObject, q->PutRequest(f.bucket, "q-at", *m, 4096)),
                      "PUT of 4096 octets with max_transfer_bytes 4096");
        ctx.RequireCode(q->Send(Method::kPutObject, q->PutRequest(f.bucket, "q-over", *m, 4097)),
                        ErrorCode::kEntityTooLarge,
                        "PUT of 4097 octets with max_transfer_bytes 4096");
        ctx.RequireCode(q->Head(f.bucket, "q-over"), ErrorCode::kNoSuchKey, "nothing committed");
        pb::GetObjectRequest g = RmaGet(*q, f.bucket, "at", *m, 8192);
        RawReply ga = q->Send(Method::kGetObject, g);
        ctx.RequireOk(ga, "GET of a 4096-octet object with max_transfer_bytes 4096");
        ctx.Require(std::memcmp(m->data(), at.data(), at.size()) == 0, "its octets", "equal",
                    "differ");
        g = RmaGet(*q, f.bucket, "over", *m, 8192);
        ctx.RequireCode(q->Send(Method::kGetObject, g), ErrorCode::kEntityTooLarge,
                        "GET of a 4097-octet object with max_transfer_bytes 4096");
        g.mutable_range()->set_kind(pb::ByteRange::KIND_FROM);
        g.mutable_range()->set_first(0);
        ctx.RequireCode(q->Send(Method::kGetObject, g), ErrorCode::kEntityTooLarge,
                        "a range selecting all 4097 octets (bytes=0-)");
        g.mutable_range()->set_first(1);
        ctx.RequireOk(q->Send(Method::kGetObject, g), "a range selecting 4096 of them (bytes=1-)");
        ctx.RequireStillServes();
      });
  Add(r, "dat/8.4/6",
      "the session's lowered limits are the ones enforced: an inline threshold and max_descriptors "
      "below the server's, at the edge and one past it, on PUT and GET",
      "limits", {"AOBJ-SES-016", "AOBJ-SES-006", "AOBJ-DAT-007", "AOBJ-DAT-008", "AOBJ-MEM-005"},
      true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        auto q = ctx.NewPeer();
        pb::OpenSessionRequest o = q->DefaultOpen();
        const uint64_t server_t = f.p->session().limits().inline_threshold();
        const uint32_t server_d = f.p->session().limits().max_descriptors();
        if (!f.p->Negotiated(kCapInline) || server_t < 4 || !f.p->Negotiated(kCapMultiDescriptor) ||
            server_d < 3) {
          ctx.Unsupported(absl::StrCat("needs INLINE with a threshold of at least 4 (", server_t,
                                       ") and MULTI_DESCRIPTOR with at least 3 descriptors (",
                                       server_d, ")"));
        }
        const uint64_t t = server_t / 2;
        o.mutable_requested_limits()->set_inline_threshold(t);
        o.mutable_requested_limits()->set_max_descriptors(2);
        ctx.RequireOk(q->Open(o), absl::StrCat("OpenSession asking inline_threshold ", t,
                                               " and max_descriptors 2"));
        ctx.Require(q->session().limits().inline_threshold() == t &&
                        q->session().limits().max_descriptors() == 2,
                    "the lowered limits are effective", absl::StrCat(t, ", 2"),
                    q->session().limits().ShortDebugString());
        auto inline_put = [&](const std::string& key, uint64_t n) {
          const std::string body = Content(n, 5);
          pb::PutObjectRequest put;
          put.set_bucket(f.bucket);
          put.set_key(key);
          put.set_size(n);
          put.set_inline_data(body);
          put.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
          put.set_checksum(Crc32cOf(body));
          return q->Send(Method::kPutObject, put);
        };
        ctx.RequireOk(inline_put("at", t),
                      absl::StrCat("inline PUT of ", t, " octets (the session's threshold)"));
        ctx.RequireCode(
            inline_put("over", t + 1), ErrorCode::kEntityTooLarge,
            absl::StrCat("inline PUT of ", t + 1, " octets (one past the session's threshold)"));
        ctx.RequireOk(f.p->Put(f.bucket, "over", Content(t + 1, 6)), "PUT of t + 1 octets by RMA");
        auto m = q->Allocate(3 * 4096);
        pb::GetObjectRequest g;
        g.set_bucket(f.bucket);
        g.set_key("over");
        g.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        g.set_accept_inline(true);
        *g.add_destination() = Peer::Descriptor(*m, 0, t + 1);
        RawReply gr = q->Send(Method::kGetObject, g);
        ctx.RequireOk(gr, "GET of t + 1 octets with accept_inline");
        auto resp = Parse<pb::GetObjectResponse>(ctx, gr, "GET");
        ctx.Require(resp.path() != pb::TRANSFER_PATH_INLINE,
                    "above the session's threshold the body is not inline (AOBJ-DAT-008)", "RMA",
                    PathName(resp.path()));
        const std::string body = Content(3 * 4096, 8);
        std::memcpy(m->data(), body.data(), body.size());
        auto put_windows = [&](int n) {
          pb::PutObjectRequest put = q->PutRequest(f.bucket, "windows", *m, 3 * 4096);
          put.clear_source();
          for (int i = 0; i < n; ++i) {
            const uint64_t len = 3 * 4096 / n;
            *put.add_source() = Peer::Descriptor(*m, i * len, len);
          }
          return q->Send(Method::kPutObject, put);
        };
        ctx.RequireOk(put_windows(2), "PUT from 2 windows (the session's max_descriptors)");
        ctx.RequireCode(put_windows(3), ErrorCode::kInvalidDescriptor,
                        "PUT from 3 windows (one past the session's max_descriptors)");
        pb::GetObjectRequest g3;
        g3.set_bucket(f.bucket);
        g3.set_key("windows");
        g3.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        for (int i = 0; i < 3; ++i) *g3.add_destination() = Peer::Descriptor(*m, i * 4096, 4096);
        ctx.RequireCode(q->Send(Method::kGetObject, g3), ErrorCode::kInvalidDescriptor,
                        "GET into 3 windows (one past the session's max_descriptors)");
        g3.clear_destination();
        for (int i = 0; i < 2; ++i) *g3.add_destination() = Peer::Descriptor(*m, i * 6144, 6144);
        ctx.RequireOk(q->Send(Method::kGetObject, g3), "GET into 2 windows");
        ctx.RequireStillServes();
      });
  Add(r, "dat/8.4/7",
      "an inline GET whatever the descriptors: with a window shorter than the object, or none, "
      "the body comes inline and the window is untouched",
      "inline", {"AOBJ-DAT-014", "AOBJ-DAT-008"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        RequireCapability(ctx, *f.p, kCapInline, "INLINE");
        const uint64_t t = f.p->session().limits().inline_threshold();
        if (t < 16) ctx.Unsupported(absl::StrCat("inline_threshold is ", t));
        const uint64_t n = std::min<uint64_t>(t, 3000);
        const std::string body = Content(n, 12);
        ctx.RequireOk(f.p->Put(f.bucket, "small", body), absl::StrCat("PUT of ", n, " octets"));
        auto m = f.p->Allocate(4096);
        std::memset(m->data(), 0x77, 4096);
        for (int with_window = 1; with_window >= 0; --with_window) {
          pb::GetObjectRequest g;
          g.set_bucket(f.bucket);
          g.set_key("small");
          g.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
          g.set_accept_inline(true);
          if (with_window) *g.add_destination() = Peer::Descriptor(*m, 0, 1);
          const std::string what = with_window ? "GET with accept_inline and a 1-octet window"
                                               : "GET with accept_inline and no window";
          RawReply gr = f.p->Send(Method::kGetObject, g);
          ctx.RequireOk(gr, what);
          auto resp = Parse<pb::GetObjectResponse>(ctx, gr, what);
          ctx.Require(
              resp.path() == pb::TRANSFER_PATH_INLINE && resp.inline_data() == body,
              what + ": the body inline", absl::StrCat("INLINE, ", n, " octets"),
              absl::StrCat(PathName(resp.path()), ", ", resp.inline_data().size(), " octets"));
          CheckGetReply(ctx, resp, body, what);
        }
        ctx.Require(static_cast<uint8_t>(m->data()[0]) == 0x77, "the window was not touched",
                    "unchanged", "written");
      });
  Add(r, "dat/8.4/8",
      "an inline GET whatever descriptors it carries: two without MULTI_DESCRIPTOR, a garbage "
      "rkey, a window of unknown memory type: the body comes inline, nothing is written",
      "inline", {"AOBJ-DAT-014", "AOBJ-DAT-008"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        auto q = ctx.NewPeer();
        pb::OpenSessionRequest o = q->DefaultOpen();
        o.clear_capabilities();
        o.add_capabilities(kCapCrc32c);
        o.add_capabilities(kCapInline);
        ctx.RequireOk(q->Open(o), "OpenSession with INLINE and without MULTI_DESCRIPTOR");
        RequireCapability(ctx, *q, kCapInline, "INLINE");
        const uint64_t t = q->session().limits().inline_threshold();
        if (t < 16) ctx.Unsupported(absl::StrCat("inline_threshold is ", t));
        const std::string body = Content(std::min<uint64_t>(t, 2000), 19);
        ctx.RequireOk(f.p->Put(f.bucket, "small", body), "PUT of a small object");
        auto m = q->Allocate(8192);
        std::memset(m->data(), 0x2d, 8192);
        struct Try {
          const char* what;
          std::function<void(pb::GetObjectRequest*)> edit;
        };
        const Try tries[] = {
            {"two windows without MULTI_DESCRIPTOR",
             [&](pb::GetObjectRequest* g) {
               *g->add_destination() = Peer::Descriptor(*m, 0, 4096);
               *g->add_destination() = Peer::Descriptor(*m, 4096, 4096);
             }},
            {"a window whose rkey is garbage",
             [&](pb::GetObjectRequest* g) {
               *g->add_destination() = Peer::Descriptor(*m, 0, 4096);
               g->mutable_destination(0)->set_rkey(Content(m->packed_rkey().size(), 3));
             }},
            {"a window of memory type 77",
             [&](pb::GetObjectRequest* g) {
               *g->add_destination() = Peer::Descriptor(*m, 0, 4096);
               g->mutable_destination(0)->set_memory_type(static_cast<pb::MemoryType>(77));
             }},
        };
        for (const Try& t : tries) {
          pb::GetObjectRequest g;
          g.set_bucket(f.bucket);
          g.set_key("small");
          g.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
          g.set_accept_inline(true);
          t.edit(&g);
          const std::string what = std::string("an inline-eligible GET with ") + t.what;
          RawReply gr = q->Send(Method::kGetObject, g);
          ctx.RequireOk(gr, what);
          auto resp = Parse<pb::GetObjectResponse>(ctx, gr, what);
          ctx.Require(resp.path() == pb::TRANSFER_PATH_INLINE && resp.inline_data() == body,
                      what + ": the body inline", "INLINE", PathName(resp.path()));
        }
        bool untouched = true;
        for (size_t i = 0; i < 8192; ++i) untouched = untouched && m->data()[i] == 0x2d;
        ctx.Require(untouched, "no window was written", "all 0x2d", "written");
      });
  Add(r, "dat/8.5/4",
      "a PutObject or UploadPart of size 0 that carries inline_data: INVALID_ARGUMENT, nothing "
      "written",
      "core", {"AOBJ-DAT-007"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const std::string body = "not empty";
        pb::PutObjectRequest put = EmptyPut(f.bucket, "zero-with-inline");
        put.set_inline_data(body);
        ctx.RequireCode(f.p->Send(Method::kPutObject, put), ErrorCode::kInvalidArgument,
                        "PutObject of size 0 with 9 octets of inline_data");
        ctx.RequireCode(f.p->Head(f.bucket, "zero-with-inline"), ErrorCode::kNoSuchKey,
                        "nothing written");
        pb::CreateMultipartUploadRequest cm;
        cm.set_bucket(f.bucket);
        cm.set_key("zero-part");
        RawReply cr = f.p->Send(Method::kCreateMultipartUpload, cm);
        ctx.RequireOk(cr, "CreateMultipartUpload");
        const auto created = Parse<pb::CreateMultipartUploadResponse>(ctx, cr, "Create");
        pb::UploadPartRequest part;
        part.set_bucket(f.bucket);
        part.set_key("zero-part");
        part.set_upload_id(created.upload_id());
        part.set_part_number(1);
        part.set_size(0);
        part.set_inline_data(body);
        part.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        part.set_checksum(Crc32cOf(""));
        ctx.RequireCode(f.p->Send(Method::kUploadPart, part), ErrorCode::kInvalidArgument,
                        "UploadPart of size 0 with 9 octets of inline_data");
        pb::AbortMultipartUploadRequest ab;
        ab.set_bucket(f.bucket);
        ab.set_key("zero-part");
        ab.set_upload_id(created.upload_id());
        f.p->Send(Method::kAbortMultipartUpload, ab);
        ctx.RequireStillServes();
      });
  Add(r, "dat/8.5/3",
      "an empty PUT that carries a window moves nothing from it; a GET with neither a window nor "
      "accept_inline: DESCRIPTOR_TOO_SMALL",
      "core", {"AOBJ-DAT-011", "AOBJ-MEM-007"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        auto m = f.p->Allocate(4096);
        std::memset(m->data(), 0x5e, 4096);
        pb::PutObjectRequest put = f.p->PutRequest(f.bucket, "empty", *m, 0);
        *put.add_source() = Peer::Descriptor(*m, 0, 4096);
        RawReply pr = f.p->Send(Method::kPutObject, put);
        ctx.RequireOk(pr, "PUT of size 0 carrying a 4096-octet window");
        auto resp = Parse<pb::PutObjectResponse>(ctx, pr, "PUT");
        ctx.Require(resp.path() == pb::TRANSFER_PATH_NONE && resp.bytes_transferred() == 0 &&
                        resp.metadata().size() == 0,
                    "path NONE, 0 octets, an empty object", "NONE, 0, size 0",
                    absl::StrCat(PathName(resp.path()), ", ", resp.bytes_transferred(), ", size ",
                                 resp.metadata().size()));
        ctx.RequireOk(f.p->Put(f.bucket, "full", Content(100, 2)), "PUT of 100 octets");
        pb::GetObjectRequest g;
        g.set_bucket(f.bucket);
        g.set_key("full");
        g.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        ctx.RequireCode(f.p->Send(Method::kGetObject, g), ErrorCode::kDescriptorTooSmall,
                        "GET of 100 octets with no window and no accept_inline");
        ctx.RequireStillServes();
      });
}

}  // namespace aobj::conformance
