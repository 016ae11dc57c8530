// Section 8.9: the fast request path (capability FAST_PATH). Each case opens a session that
// offers FAST_PATH; a target that does not negotiate it reports the cases UNSUPPORTED.
#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "conformance/src/cases_util.h"
#include "wire/crypto.h"
#include "wire/fast_frame.h"
#include "wire/le_codec.h"
#include "wire/signing.h"

namespace aobj::conformance {
namespace {

constexpr uint32_t kCapFastPath = 7;

// A confirmed session that offered FAST_PATH, on the fast path.
std::unique_ptr<Peer> OpenFast(CaseContext& ctx) {
  auto p = ctx.NewPeer();
  pb::OpenSessionRequest open = p->DefaultOpen();
  open.add_capabilities(kCapFastPath);
  ctx.RequireOk(p->Open(open), "OpenSession offering FAST_PATH, and ConfirmEndpoint");
  p->UseFastPath();
  return p;
}

// A signed fast request frame of `method` with `body` on `p`'s session.
std::string SignedFrame(Peer& p, const std::string& access_key, const std::string& secret,
                        Method method, const std::string& body, std::string* nonce,
                        uint32_t timeout_ms = 5000) {
  FastRequest r;
  r.timeout_ms = timeout_ms;
  r.method = MethodName(method);
  r.auth.access_key_id = access_key;
  r.auth.timestamp = std::to_string(absl::ToUnixMillis(absl::Now()));
  r.auth.nonce_hex = HexEncode(RandomBytes(kNonceBytes));
  r.auth.session_hex = p.session_hex();
  r.auth.signature_hex = SignRequest(DeriveSigningKey(secret), MethodPath(method), r.auth, body);
  r.body = body;
  *nonce = r.auth.nonce_hex;
  return *EncodeFastRequest(r);
}

}  // namespace

void RegisterFastPathCases(Registry& r) {
  Add(r, "dat/8.9/1", "FAST_PATH: PUT, GET, HEAD and DELETE on the fast path as on gRPC",
      "fast-path",
      {"AOBJ-DAT-163", "AOBJ-DAT-164", "AOBJ-DAT-172", "AOBJ-DAT-165", "AOBJ-DAT-166",
       "AOBJ-DAT-170"},
      false, [](CaseContext& ctx) {
        auto p = OpenFast(ctx);
        const std::string bucket = ctx.NewBucket(*p);
        const std::string address = p->session().fast_path_address();
        ctx.Require(!address.empty() && address.size() <= 8192,
                    "fast_path_address with FAST_PATH negotiated (AOBJ-DAT-163)", "1..8192 octets",
                    absl::StrCat(address.size(), " octets"));
        // A body by RMA (64 KiB) and one inline when INLINE is negotiated: both paths.
        const std::string big = Content(65536, 91);
        ctx.RequireOk(p->Put(bucket, "rma", big), "PUT by RMA on the fast path");
        std::string got;
        ctx.RequireOk(p->Get(bucket, "rma", &got), "GET by RMA on the fast path");
        ctx.Require(got == big, "the GET returns the PUT's octets", "the same octets",
                    absl::StrCat(got.size(), " other octets"));
        if (p->Negotiated(kCapInline) && p->session().limits().inline_threshold() >= 100) {
          pb::PutObjectRequest put;
          put.set_bucket(bucket);
          put.set_key("inline");
          const std::string small = Content(100, 92);
          put.set_size(small.size());
          put.set_inline_data(small);
          put.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
          put.set_checksum(Crc32cOf(small));
          ctx.RequireOk(p->Send(Method::kPutObject, put), "PUT of an inline body on the fast path");
          pb::GetObjectResponse resp;
          ctx.RequireOk(p->Get(bucket, "inline", &got, &resp), "GET of it on the fast path");
          ctx.Require(got == small, "the inline object's octets", "the same octets",
                      absl::StrCat(got.size(), " other octets"));
        }
        pb::HeadObjectResponse head;
        ctx.RequireOk(p->Head(bucket, "rma", &head), "HEAD on the fast path");
        ctx.Require(head.metadata().size() == big.size(), "HEAD's size", absl::StrCat(big.size()),
                    absl::StrCat(head.metadata().size()));
        ctx.RequireOk(p->Delete(bucket, "rma"), "DELETE on the fast path");
        ctx.RequireCode(p->Head(bucket, "rma"), ErrorCode::kNoSuchKey,
                        "HEAD of the deleted key on the fast path");
        // The same object seen by gRPC: one store behind both paths.
        p->set_fast(false);
        ctx.RequireCode(p->Head(bucket, "rma"), ErrorCode::kNoSuchKey, "HEAD of it by gRPC");
      });

  Add(r, "dat/8.9/2",
      "fast requests are verified as gRPC calls: a bad signature, a replay, a method the path "
      "does not carry",
      "fast-path", {"AOBJ-DAT-166", "AOBJ-DAT-167", "AOBJ-DAT-169"}, true, [](CaseContext& ctx) {
        auto p = OpenFast(ctx);
        const std::string bucket = ctx.NewBucket(*p);
        ctx.RequireOk(p->Put(bucket, "k", Content(1000, 5)), "PUT on the fast path");
        // The same tampering on both paths gets the same code.
        for (bool fast : {true, false}) {
          p->set_fast(fast);
          const char* path = fast ? " on the fast path" : " by gRPC";
          Tamper bad;
          bad.flip_signature = true;
          pb::HeadObjectRequest head;
          head.set_bucket(bucket);
          head.set_key("k");
          ctx.RequireCode(p->Send(Method::kHeadObject, head, bad),
                          ErrorCode::kSignatureDoesNotMatch,
                          absl::StrCat("HEAD with an altered signature", path));
          ctx.RequireOk(p->Send(Method::kHeadObject, head), absl::StrCat("HEAD", path));
          ctx.RequireCode(p->Resend(), ErrorCode::kRequestReplayed,
                          absl::StrCat("the same HEAD again, byte for byte", path));
        }
        // ListObjectsV2 is not carried (AOBJ-DAT-167): INVALID_ARGUMENT, sent by hand.
        pb::ListObjectsV2Request list;
        list.set_bucket(bucket);
        std::string nonce;
        const std::string frame =
            SignedFrame(*p, ctx.target().access_key_id, ctx.target().secret, Method::kListObjectsV2,
                        list.SerializeAsString(), &nonce);
        bool got = false;
        RawReply l = p->SendFastFrame(frame, nonce, ctx.target().call_timeout, &got);
        ctx.Require(got, "a reply to a fast ListObjectsV2", "a reply", "none");
        ctx.RequireCode(l, ErrorCode::kInvalidArgument, "ListObjectsV2 as a fast request");
        // A method name no method has, with octets that are not UTF-8: still INVALID_ARGUMENT, in
        // an error the client can parse (a proto3 string must be UTF-8).
        FastRequest unknown;
        unknown.timeout_ms = 5000;
        unknown.method = "No\xffSuch\x01Method";
        unknown.auth.access_key_id = ctx.target().access_key_id;
        unknown.auth.timestamp = std::to_string(absl::ToUnixMillis(absl::Now()));
        unknown.auth.nonce_hex = HexEncode(RandomBytes(kNonceBytes));
        unknown.auth.session_hex = p->session_hex();
        unknown.auth.signature_hex = std::string(64, '0');
        RawReply u = p->SendFastFrame(*EncodeFastRequest(unknown), unknown.auth.nonce_hex,
                                      ctx.target().call_timeout, &got);
        ctx.Require(got, "a reply to a fast request naming no method", "a reply", "none");
        ctx.RequireCode(u, ErrorCode::kInvalidArgument,
                        "a fast request naming a method that does not exist");
        ctx.Require(p->stray_fast_replies() == 0, "no reply for a request not waited for", "0",
                    absl::StrCat(p->stray_fast_replies()));
      });

  Add(r, "dat/8.9/3", "malformed fast frames get no reply and the server keeps serving",
      "fast-path", {"AOBJ-DAT-168", "AOBJ-DAT-171"}, true, [](CaseContext& ctx) {
        auto p = OpenFast(ctx);
        const std::string bucket = ctx.NewBucket(*p);
        pb::HeadBucketRequest hb;
        hb.set_bucket(bucket);
        std::string nonce;
        const std::string good = SignedFrame(*p, ctx.target().access_key_id, ctx.target().secret,
                                             Method::kHeadBucket, hb.SerializeAsString(), &nonce);
        struct Bad {
          std::string what;
          std::string frame;
        };
        std::vector<Bad> bad;
        bad.push_back({"the frame cut one octet short", good.substr(0, good.size() - 1)});
        bad.push_back({"one octet after the message", good + "x"});
        std::string v = good;
        v[0] = 2;
        bad.push_back({"version 2", v});
        std::string k = good;
        k[1] = 2;
        bad.push_back({"kind 2 (a reply) sent as a request", k});
        std::string f = good;
        f[2] = 1;
        bad.push_back({"an undefined flag bit", f});
        std::string huge = good;
        const size_t len_at = good.size() - hb.SerializeAsString().size() - 4;
        huge[len_at + 3] = '\x7f';  // the message length near 2^31
        bad.push_back({"a message length past the frame", huge});
        bad.push_back({"no octet at all", ""});
        bad.push_back(
            {"an oversized frame (1 MiB + 64 KiB + 1)", std::string(kMaxFastFrame + 1, '\x01')});
        for (const Bad& b : bad) {
          bool got = false;
          p->SendFastFrame(b.frame, nonce, absl::Milliseconds(300), &got);
          ctx.Require(!got,
                      absl::StrCat("no reply to a fast frame with ", b.what,
                                   " (AOBJ-DAT-168, AOBJ-DAT-171)"),
                      "no reply", "a reply");
          // By gRPC, so that the session outlives a short lease while the case waits.
          ctx.RequireOk(p->Send(Method::kRenewSession, pb::RenewSessionRequest()),
                        "RenewSession by gRPC");
        }
        bool got = false;
        RawReply ok = p->SendFastFrame(good, nonce, ctx.target().call_timeout, &got);
        ctx.Require(got, "a reply to the well-formed frame afterwards", "a reply", "none");
        ctx.RequireOk(ok, "HeadBucket as a fast request after the malformed ones");
        ctx.RequireStillServes();
      });

  Add(r, "dat/8.9/4",
      "no fast reply before ConfirmEndpoint, or for another access key's claim on the session",
      "fast-path", {"AOBJ-DAT-168"}, true, [](CaseContext& ctx) {
        auto owner = ctx.Open();
        const std::string bucket = ctx.NewBucket(*owner);
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest open = p->DefaultOpen();
        open.add_capabilities(kCapFastPath);
        ctx.RequireOk(p->Open(open, /*confirm=*/false), "OpenSession offering FAST_PATH");
        p->UseFastPath();
        pb::HeadBucketRequest hb;
        hb.set_bucket(bucket);
        std::string nonce;
        std::string frame = SignedFrame(*p, ctx.target().access_key_id, ctx.target().secret,
                                        Method::kHeadBucket, hb.SerializeAsString(), &nonce);
        bool got = false;
        p->SendFastFrame(frame, nonce, absl::Milliseconds(300), &got);
        ctx.Require(!got, "a fast request before ConfirmEndpoint is not answered (AOBJ-DAT-168)",
                    "no reply", "a reply on an unconfirmed endpoint");
        ctx.RequireOk(p->Confirm(), "ConfirmEndpoint");
        frame = SignedFrame(*p, ctx.target().access_key_id, ctx.target().secret,
                            Method::kHeadBucket, hb.SerializeAsString(), &nonce);
        RawReply after = p->SendFastFrame(frame, nonce, ctx.target().call_timeout, &got);
        ctx.Require(got, "a reply once the endpoint is confirmed", "a reply", "none");
        ctx.RequireOk(after, "HeadBucket as a fast request after ConfirmEndpoint");
        if (!ctx.target().second_access_key_id.empty()) {
          // The second principal names the first one's session: nothing goes back to it.
          frame = SignedFrame(*p, ctx.target().second_access_key_id, ctx.target().second_secret,
                              Method::kHeadBucket, hb.SerializeAsString(), &nonce);
          p->SendFastFrame(frame, nonce, absl::Milliseconds(300), &got);
          ctx.Require(!got,
                      "a fast request claiming another access key on this session is not "
                      "answered (AOBJ-DAT-168)",
                      "no reply", "a reply");
        }
        ctx.RequireStillServes();
      });

  Add(r, "dat/8.9/5",
      "a fast request of a session that did not negotiate FAST_PATH is answered INVALID_ARGUMENT",
      "fast-path", {"AOBJ-DAT-167", "AOBJ-DAT-166"}, true, [](CaseContext& ctx) {
        // The address comes from a session that negotiated FAST_PATH; the requests name one of
        // the same principal that did not offer it, and sign and reach its confirmed endpoint.
        auto fast = OpenFast(ctx);
        const std::string bucket = ctx.NewBucket(*fast);
        ctx.RequireOk(fast->Put(bucket, "k", Content(100, 9)), "PUT on the fast path");
        auto plain = ctx.Open();
        ctx.Require(!plain->Negotiated(kCapFastPath),
                    "a session that did not offer FAST_PATH did not negotiate it", "absent",
                    "negotiated");
        plain->UseFastPath(fast.get());
        pb::HeadObjectRequest head;
        head.set_bucket(bucket);
        head.set_key("k");
        auto mem = plain->Allocate(10);
        std::memset(mem->data(), 1, 10);
        ctx.RequireCode(plain->Send(Method::kHeadObject, head), ErrorCode::kInvalidArgument,
                        "HEAD as a fast request of a session without FAST_PATH (AOBJ-DAT-167)");
        ctx.RequireCode(
            plain->Send(Method::kPutObject, plain->PutRequest(bucket, "other", *mem, 10)),
            ErrorCode::kInvalidArgument, "PUT as a fast request of a session without FAST_PATH");
        plain->set_fast(false);
        ctx.RequireCode(plain->Head(bucket, "other"), ErrorCode::kNoSuchKey,
                        "the refused fast PUT stored nothing");
        ctx.RequireOk(plain->Send(Method::kHeadObject, head), "the same HEAD by gRPC");
        ctx.Require(plain->stray_fast_replies() == 0, "no reply for a request not waited for", "0",
                    absl::StrCat(plain->stray_fast_replies()));
        ctx.RequireStillServes();
      });

  Add(r, "dat/8.9/6",
      "a fast request's timeout is its call's deadline: a PUT by RMA that cannot finish within "
      "timeout_ms 1 is answered DEADLINE_EXCEEDED and stores nothing",
      "fast-path", {"AOBJ-DAT-166", "AOBJ-DAT-016", "AOBJ-DAT-155"}, true, [](CaseContext& ctx) {
        auto p = OpenFast(ctx);
        const std::string bucket = ctx.NewBucket(*p);
        // 64 MiB (or the session's largest body): longer than a millisecond on any transport.
        const uint64_t size = std::min<uint64_t>(
            uint64_t{64} << 20, std::max<uint64_t>(p->session().limits().max_transfer_bytes(), 1));
        auto mem = p->Allocate(size);
        std::memset(mem->data(), 0x5a, size);
        std::string nonce;
        const std::string frame =
            SignedFrame(*p, ctx.target().access_key_id, ctx.target().secret, Method::kPutObject,
                        p->PutRequest(bucket, "late", *mem, size).SerializeAsString(), &nonce,
                        /*timeout_ms=*/1);
        bool got = false;
        RawReply reply = p->SendFastFrame(frame, nonce, ctx.target().call_timeout, &got);
        ctx.Require(got, "a reply to the fast PUT (its deadline passing is an answer, not silence)",
                    "a reply", "none within the call timeout");
        ctx.RequireCode(reply, ErrorCode::kDeadlineExceeded,
                        absl::StrCat("a fast PUT of ", size,
                                     " octets by RMA with timeout_ms 1 "
                                     "(the timeout is the call's deadline, AOBJ-DAT-166)"));
        p->set_fast(false);
        ctx.RequireCode(p->Head(bucket, "late"), ErrorCode::kNoSuchKey,
                        "the PUT stopped at its deadline stored nothing (AOBJ-DAT-155)");
        ctx.RequireStillServes();
      });
}

}  // namespace aobj::conformance
