// Cases for spec section 6 (credentials and request authentication) and AOBJ-ERR-002.
#include "conformance/src/cases_util.h"
#include "wire/signing.h"

namespace aobj::conformance {
namespace {

// A HeadBucket of a fresh bucket, the request most auth cases tamper with.
struct Fixture {
  std::unique_ptr<Peer> p;
  std::string bucket;
  pb::HeadBucketRequest head;
};

Fixture Setup(CaseContext& ctx) {
  Fixture f;
  f.p = ctx.Open();
  f.bucket = ctx.NewBucket(*f.p);
  f.head.set_bucket(f.bucket);
  return f;
}

// A request stamped `behind_ms` in the past (negative: ahead) but inside the skew window:
// served, or, when the
// stamp is earlier than the target's start, refused SLOW_DOWN with a retry hint (AOBJ-AUTH-017:
// a server that restarted remembers no nonce of before its start). Never REQUEST_TIME_TOO_SKEWED.
void RequireInsideTheWindow(CaseContext& ctx, const RawReply& r, int64_t behind_ms,
                            const std::string& what) {
  // The hint of such a refusal is at most how much earlier than the target's start the request
  // was stamped, hence at most its age; a second for the request's travel.
  if (CodeOf(r) == ErrorCode::kSlowDown && r.error.retry_after_ms() > 0 && behind_ms > 0 &&
      static_cast<int64_t>(r.error.retry_after_ms()) <= behind_ms + 1000) {
    ctx.Note(what + ": refused SLOW_DOWN as stamped before the target started (AOBJ-AUTH-017)");
    return;
  }
  ctx.RequireOk(r, what);
}

}  // namespace

void RegisterAuthCases(Registry& r) {
  Add(r, "auth/6.2/1", "a missing signature, timestamp or nonce: MISSING_AUTHENTICATION", "core",
      {"AOBJ-AUTH-001"}, true, [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        Tamper t;
        t.omit_signature = true;
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t), ErrorCode::kMissingAuthentication,
                        "no aobj-signature");
        t = {};
        t.omit_timestamp = true;
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t), ErrorCode::kMissingAuthentication,
                        "no aobj-timestamp");
        t = {};
        t.omit_nonce = true;
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t), ErrorCode::kMissingAuthentication,
                        "no aobj-nonce");
        auto q = ctx.NewPeer();
        t = {};
        t.omit_signature = true;
        ctx.RequireCode(q->Send(Method::kOpenSession, q->DefaultOpen(), t),
                        ErrorCode::kMissingAuthentication, "OpenSession without aobj-signature");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.2/2", "malformed timestamp, nonce or session id: MISSING_AUTHENTICATION", "core",
      {"AOBJ-AUTH-001"}, true, [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        Tamper t;
        t.timestamp = "yesterday";
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t), ErrorCode::kMissingAuthentication,
                        "timestamp \"yesterday\"");
        t = {};
        t.nonce_hex = "abcd";
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t), ErrorCode::kMissingAuthentication,
                        "a nonce of 2 octets");
        t = {};
        t.nonce_hex = std::string(32, 'Z');
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t), ErrorCode::kMissingAuthentication,
                        "a nonce that is not hex");
        t = {};
        t.session_hex = "0123";
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t), ErrorCode::kMissingAuthentication,
                        "a session id of 2 octets");
        t = {};
        t.session_hex = std::string(f.p->session_hex());
        for (auto& c : t.session_hex) c = static_cast<char>(std::toupper(c));
        if (t.session_hex != f.p->session_hex()) {
          ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t),
                          ErrorCode::kMissingAuthentication, "the session id in upper-case hex");
        }
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.2/5",
      "aobj-timestamp at its length limit: 19 digits (zero-padded) are accepted, 20 are "
      "MISSING_AUTHENTICATION",
      "core", {"AOBJ-AUTH-001", "AOBJ-AUTH-022"}, true, [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        const std::string now = std::to_string(absl::ToUnixMillis(absl::Now()));
        Tamper t;
        t.signed_timestamp = std::string(19 - now.size(), '0') + now;
        ctx.RequireOk(f.p->Send(Method::kHeadBucket, f.head, t),
                      "a signed timestamp of 19 digits, zero-padded (1*19DIGIT)");
        t.signed_timestamp = std::string(20 - now.size(), '0') + now;
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t),
                        ErrorCode::kMissingAuthentication,
                        "a signed timestamp of 20 digits, zero-padded");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.2/6",
      "aobj-timestamp is digits only: with a sign, a space or a decimal point, signed, it is "
      "MISSING_AUTHENTICATION",
      "core", {"AOBJ-AUTH-001"}, true, [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        const std::string now = std::to_string(absl::ToUnixMillis(absl::Now()));
        Tamper t;
        for (const std::string& bad :
             {"+" + now, "-" + now, " " + now, now + " ", now + ".0", "0x" + now}) {
          t.signed_timestamp = bad;
          ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t),
                          ErrorCode::kMissingAuthentication,
                          absl::StrCat("a signed timestamp \"", bad, "\""));
        }
        t.signed_timestamp = now;
        ctx.RequireOk(f.p->Send(Method::kHeadBucket, f.head, t), "the same time as digits");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.2/7",
      "every authentication entry at its format's edge: access key IDs of 0, 128 and 129 "
      "octets or with a space; nonce, session ID and signature one digit short or long, or in "
      "upper case; a timestamp above 2^63 - 1",
      "core", {"AOBJ-AUTH-001", "AOBJ-AUTH-005", "AOBJ-AUTH-009", "AOBJ-AUTH-022"}, true,
      [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        const ErrorCode kMissing = ErrorCode::kMissingAuthentication;
        auto send = [&](const Tamper& t) { return f.p->Send(Method::kHeadBucket, f.head, t); };
        Tamper t;
        t.access_key_id = std::string(128, 'K');
        ctx.RequireCode(send(t), ErrorCode::kInvalidAccessKeyId,
                        "an unknown access key ID of 128 octets (well formed)");
        for (const std::string& bad : {std::string(129, 'K'), std::string("AK WITH SPACE"),
                                       std::string(" ") + ctx.target().access_key_id}) {
          t.access_key_id = bad;
          ctx.RequireCode(send(t), kMissing,
                          absl::StrCat("an access key ID of ", bad.size(), " octets",
                                       bad.find(' ') != std::string::npos ? " with a space" : ""));
        }
        t = {};
        std::string session = f.p->session_hex();
        for (const std::string& bad : {session.substr(1), session + "0"}) {
          t.session_hex = bad;
          ctx.RequireCode(send(t), kMissing,
                          absl::StrCat("a session ID of ", bad.size(), " hex digits"));
        }
        t = {};
        const std::string nonce = HexEncode(RandomBytes(16));
        std::string upper = nonce;
        for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        for (const std::string& bad : {nonce.substr(1), nonce + "a", upper}) {
          if (bad == nonce) continue;  // no letters drawn: upper case is the same text
          t.nonce_hex = bad;
          ctx.RequireCode(send(t), kMissing,
                          absl::StrCat("a nonce of ", bad.size(), " hex digits",
                                       bad == upper ? " in upper case" : ""));
        }
        t = {};
        struct Edit {
          const char* what;
          std::function<std::string(const std::string&)> fn;
        };
        const Edit edits[] = {
            {"cut to 63 digits", [](const std::string& s) { return s.substr(0, 63); }},
            {"with a 65th digit", [](const std::string& s) { return s + "0"; }},
            {"in upper case",
             [](const std::string& s) {
               std::string u = s;
               for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
               return u == s ? "A" + s.substr(1) : u;
             }},
        };
        for (const Edit& e : edits) {
          t.edit_signature = e.fn;
          t.edit_signature_what = e.what;
          ctx.RequireCode(send(t), kMissing, std::string("the right signature ") + e.what);
        }
        t = {};
        t.signed_timestamp = "9223372036854775808";
        ctx.RequireCode(send(t), kMissing,
                        "a signed timestamp of 2^63 (19 digits, above 2^63 - 1)");
        t.signed_timestamp = "9223372036854775807";
        ctx.RequireCode(send(t), ErrorCode::kRequestTimeTooSkewed,
                        "a signed timestamp of 2^63 - 1 (well formed, far in the future)");
        ctx.RequireOk(send(Tamper{}), "the same request untampered");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.2/3", "OpenSession carrying aobj-session-id: MISSING_AUTHENTICATION", "core",
      {"AOBJ-AUTH-013"}, true, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        Tamper t;
        t.session_hex = "-";
        ctx.RequireCode(p->Send(Method::kOpenSession, p->DefaultOpen(), t),
                        ErrorCode::kMissingAuthentication, "OpenSession with a session id");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.2/4", "an authentication entry sent twice: MISSING_AUTHENTICATION", "core",
      {"AOBJ-AUTH-014"}, true, [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        Tamper t;
        t.duplicate_nonce_entry = true;
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t), ErrorCode::kMissingAuthentication,
                        "aobj-nonce twice");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.3/1", "requests signed as the spec says are accepted", "core",
      {"AOBJ-AUTH-002", "AOBJ-AUTH-003", "AOBJ-AUTH-016"}, false, [](CaseContext& ctx) {
        // The suite signs with its own implementation of 6.3/6.4; the known-answer vector of
        // Appendix A pins that implementation.
        RequestAuth a;
        a.access_key_id = "AKEXAMPLE";
        a.timestamp = "1700000000000";
        a.nonce_hex = "00112233445566778899aabbccddeeff";
        const std::string canon = CanonicalRequest("/aobj.v1.ObjectService/ListBuckets", a, "");
        ctx.Require(canon.rfind("AOBJ1-HMAC-SHA256\n/aobj.v1.ObjectService/ListBuckets\nAKEXAMPLE\n", 0) == 0,
                    "the suite's canonical string starts as 6.3 says",
                    "AOBJ1-HMAC-SHA256, method, access key", canon.substr(0, 80));
        Fixture f = Setup(ctx);
        ctx.RequireOk(f.p->Send(Method::kHeadBucket, f.head), "a HeadBucket signed per 6.3/6.4");
        ctx.RequireOk(f.p->Send(Method::kListBuckets, pb::ListBucketsRequest()),
                      "a ListBuckets with an empty body");
      });
  Add(r, "auth/6.3/2", "octets appended after signing: SIGNATURE_DOES_NOT_MATCH", "core",
      {"AOBJ-AUTH-006", "AOBJ-AUTH-002"}, true, [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        Tamper t;
        t.body_suffix = std::string("\x0a\x01x", 3);
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t),
                        ErrorCode::kSignatureDoesNotMatch, "a field appended after signing");
        t.body_suffix = std::string("\xba\x3e\x01z", 4);  // an unknown field
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t),
                        ErrorCode::kSignatureDoesNotMatch, "an unknown field appended after signing");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.5/1", "an unknown access key: INVALID_ACCESS_KEY_ID", "core",
      {"AOBJ-AUTH-005"}, true, [](CaseContext& ctx) {
        TargetOptions other = ctx.target();
        Peer p(ctx, "stranger", "AKNOBODY" + HexEncode(RandomBytes(4)), "not-a-secret");
        ctx.RequireCode(p.Open(), ErrorCode::kInvalidAccessKeyId, "OpenSession of an unknown key");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.5/2", "a wrong signature: SIGNATURE_DOES_NOT_MATCH, with nothing secret in the "
                       "message",
      "core", {"AOBJ-AUTH-006", "AOBJ-ERR-002"}, true, [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        Tamper t;
        t.flip_signature = true;
        RawReply rr = f.p->Send(Method::kHeadBucket, f.head, t);
        ctx.RequireCode(rr, ErrorCode::kSignatureDoesNotMatch, "one hex digit of the signature changed");
        // The message must not reveal the expected signature, the signing key or the secret.
        const std::string msg = rr.error.message() + rr.grpc_status.error_message();
        const std::string key_hex = HexEncode(DeriveSigningKey(ctx.target().secret));
        ctx.Require(msg.find(ctx.target().secret) == std::string::npos &&
                        msg.find(key_hex) == std::string::npos,
                    "the message holds neither the secret nor the signing key", "neither", msg);
        // Any 64-hex-digit run in the message would be a signature.
        int run = 0, longest = 0;
        for (char c : msg) {
          run = std::isxdigit(static_cast<unsigned char>(c)) ? run + 1 : 0;
          longest = std::max(longest, run);
        }
        ctx.Require(longest < 64, "the message holds no 64-digit hex value (a signature)",
                    "< 64 hex digits in a row", absl::StrCat(longest));
        auto q = ctx.NewPeer();
        ctx.RequireCode(q->Send(Method::kOpenSession, q->DefaultOpen(), t),
                        ErrorCode::kSignatureDoesNotMatch, "OpenSession with a wrong signature");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.5/3", "a timestamp outside the skew window: REQUEST_TIME_TOO_SKEWED", "core",
      {"AOBJ-AUTH-007"}, true, [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        for (int64_t off : {int64_t{3600} * 1000, int64_t{-3600} * 1000}) {
          Tamper t;
          t.clock_offset_ms = off;
          ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t), ErrorCode::kRequestTimeTooSkewed,
                          absl::StrCat("a timestamp ", off / 1000, " s off"));
        }
        Tamper t;
        t.clock_offset_ms = -3600 * 1000;
        auto q = ctx.NewPeer();
        ctx.RequireCode(q->Send(Method::kOpenSession, q->DefaultOpen(), t),
                        ErrorCode::kRequestTimeTooSkewed, "OpenSession an hour in the past");
        t.clock_offset_ms = 10 * 1000;
        ctx.RequireOk(f.p->Send(Method::kHeadBucket, f.head, t),
                      "a timestamp 10 s ahead (inside any reasonable window)");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.5/5",
      "the announced skew window's edge: 1 s inside is accepted, 0.5 s outside is "
      "REQUEST_TIME_TOO_SKEWED, both directions",
      "core", {"AOBJ-AUTH-019", "AOBJ-AUTH-007"}, true, [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        const int64_t window = f.p->session().limits().skew_window_ms();
        if (window == 0) {
          ctx.Unsupported(
              "the target does not announce its skew window (Limits.skew_window_ms, "
              "a SHOULD of AOBJ-AUTH-019)");
        }
        if (window < 2000) {
          // Too small to test from inside on a loopback's timing, but a stamp past it is past
          // it: a server that announces one window and applies another fails here.
          Tamper out;
          out.clock_offset_ms = -(window + 500);
          ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, out),
                          ErrorCode::kRequestTimeTooSkewed,
                          absl::StrCat("a timestamp ", window + 500,
                                       " ms behind (announced window ", window, " ms)"));
          ctx.Unsupported(absl::StrCat("the announced skew window is ", window,
                                       " ms; its inside edge is tested from 2 s up (the stamp ",
                                       window + 500, " ms behind was refused as it must be)"));
        }
        // The request travels for a few milliseconds: a stamp 1 s inside stays inside, and one
        // 500 ms outside stays outside, in either direction, on any working loopback.
        for (int64_t sign : {int64_t{-1}, int64_t{1}}) {
          const char* dir = sign < 0 ? "behind" : "ahead";
          Tamper in;
          in.clock_offset_ms = sign * (window - 1000);
          RequireInsideTheWindow(ctx, f.p->Send(Method::kHeadBucket, f.head, in),
                                 -in.clock_offset_ms,
                                 absl::StrCat("a timestamp ", window - 1000, " ms ", dir,
                                              " (window ", window, " ms)"));
          Tamper out;
          out.clock_offset_ms = sign * (window + 500);
          ctx.RequireCode(
              f.p->Send(Method::kHeadBucket, f.head, out), ErrorCode::kRequestTimeTooSkewed,
              absl::StrCat("a timestamp ", window + 500, " ms ", dir, " (window ", window, " ms)"));
        }
        // To the millisecond: a stamp one millisecond more than the window behind only grows
        // older on its way, so it is outside however fast the loopback; one 50 ms inside stays
        // inside unless the request takes 50 ms.
        Tamper edge;
        edge.clock_offset_ms = -(window + 1);
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, edge),
                        ErrorCode::kRequestTimeTooSkewed,
                        absl::StrCat("a timestamp ", window + 1, " ms behind (window ", window,
                                     " ms): outside by one millisecond"));
        edge.clock_offset_ms = -(window - 50);
        RequireInsideTheWindow(
            ctx, f.p->Send(Method::kHeadBucket, f.head, edge), -edge.clock_offset_ms,
            absl::StrCat("a timestamp ", window - 50, " ms behind (window ", window, " ms)"));
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.5/6",
      "every hex digit of the signature counts: one changed at the end, or in the middle, is "
      "SIGNATURE_DOES_NOT_MATCH",
      "core", {"AOBJ-AUTH-006"}, true, [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        for (size_t at : {size_t{63}, size_t{40}, size_t{32}}) {
          Tamper t;
          t.flip_signature_at = static_cast<int>(at);
          ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t),
                          ErrorCode::kSignatureDoesNotMatch,
                          absl::StrCat("the signature's hex digit ", at, " changed"));
        }
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.5/7",
      "REQUEST_TIME_TOO_SKEWED carries the server's clock, and only after the signature verified",
      "core", {"AOBJ-AUTH-023", "AOBJ-AUTH-009"}, true, [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        // The suite's own requests pass the time check, so the two clocks differ by less than the
        // skew window (announced, or the reference's 300 s).
        const int64_t announced = f.p->session().limits().skew_window_ms();
        const int64_t window = announced != 0 ? announced : int64_t{300} * 1000;
        for (int64_t off : {int64_t{3600} * 1000, int64_t{-3600} * 1000}) {
          Tamper t;
          t.clock_offset_ms = off;
          const int64_t before = absl::ToUnixMillis(absl::Now());
          RawReply r = f.p->Send(Method::kHeadBucket, f.head, t);
          const int64_t after = absl::ToUnixMillis(absl::Now());
          const std::string what = absl::StrCat("HeadBucket stamped ", off / 1000, " s off");
          ctx.RequireCode(r, ErrorCode::kRequestTimeTooSkewed, what);
          const int64_t server = static_cast<int64_t>(r.error.server_time_ms());
          ctx.Require(server != 0 && server >= before - window && server <= after + window,
                      what +
                          ": server_time_ms is the server's clock (within the skew window of "
                          "the suite's)",
                      absl::StrCat(before - window, " to ", after + window), absl::StrCat(server));
        }
        Tamper bad;
        bad.flip_signature = true;
        bad.clock_offset_ms = -3600 * 1000;
        RawReply b = f.p->Send(Method::kHeadBucket, f.head, bad);
        ctx.RequireCode(b, ErrorCode::kSignatureDoesNotMatch, "a bad signature and a skewed time");
        ctx.Require(b.error.server_time_ms() == 0,
                    "a request whose signature failed learns nothing of the server's clock",
                    "server_time_ms absent", absl::StrCat(b.error.server_time_ms()));
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.5/4", "checks in the order of 6.5: key, signature, time, nonce, session", "core",
      {"AOBJ-AUTH-009"}, true, [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        Tamper t;
        t.flip_signature = true;
        t.clock_offset_ms = -3600 * 1000;
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t), ErrorCode::kSignatureDoesNotMatch,
                        "bad signature and skewed time: the signature is checked first");
        Peer stranger(ctx, "stranger", "AKNOBODY" + HexEncode(RandomBytes(4)), "x");
        Tamper u;
        u.omit_nonce = true;
        ctx.RequireCode(stranger.Send(Method::kOpenSession, stranger.DefaultOpen(), u),
                        ErrorCode::kMissingAuthentication,
                        "unknown key and a missing nonce: the metadata is checked first");
        Tamper v;
        v.clock_offset_ms = -3600 * 1000;
        v.session_hex = HexEncode(RandomBytes(16));
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, v), ErrorCode::kRequestTimeTooSkewed,
                        "skewed time and an unknown session: the time is checked first");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.6/3",
      "a request replayed seconds later, past any lease or timer a server might confuse with "
      "the skew window, is still REQUEST_REPLAYED",
      "core", {"AOBJ-AUTH-008"}, true, [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        ctx.RequireOk(f.p->Send(Method::kHeadBucket, f.head), "HeadBucket");
        absl::SleepFor(absl::Milliseconds(2500));
        const int64_t window = f.p->session().limits().skew_window_ms();
        if (window != 0 && window < 5000) {
          ctx.Unsupported(absl::StrCat("the skew window is ", window, " ms"));
        }
        ctx.RequireCode(f.p->Resend(), ErrorCode::kRequestReplayed,
                        "the same HeadBucket, byte for byte, 2.5 s later");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.6/1", "a replayed request: REQUEST_REPLAYED, and it has no effect", "core",
      {"AOBJ-AUTH-008"}, true, [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "replayed", Content(5000, 1)), "PUT of A");
        RawReply first_put_replay;
        auto q = ctx.Open();
        ctx.RequireOk(q->Put(f.bucket, "replayed", Content(5000, 2)), "another session PUTs B");
        // f.p's last request was the PUT of A: replay it byte for byte.
        ctx.RequireCode(f.p->Resend(), ErrorCode::kRequestReplayed, "the replayed PUT of A");
        std::string back;
        ctx.RequireOk(q->Get(f.bucket, "replayed", &back), "GET");
        ctx.Require(back == Content(5000, 2), "the key still holds B", "B", back == Content(5000, 1) ? "A" : "other");
        auto o = ctx.NewPeer();
        ctx.RequireOk(o->Open(), "OpenSession");
        ctx.RequireCode(o->Resend(), ErrorCode::kRequestReplayed, "the replayed OpenSession");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.6/6",
      "a request that fails only its session check spends its nonce: sent again, it is "
      "REQUEST_REPLAYED",
      "core", {"AOBJ-AUTH-009", "AOBJ-AUTH-008"}, true, [](CaseContext& ctx) {
        auto p = ctx.Open();
        Tamper t;
        t.session_hex = HexEncode(RandomBytes(kSessionIdBytes));
        ctx.RequireCode(p->Send(Method::kListBuckets, pb::ListBucketsRequest(), t),
                        ErrorCode::kNoSuchSession,
                        "ListBuckets naming a session that never existed");
        ctx.RequireCode(p->Resend(), ErrorCode::kRequestReplayed,
                        "the same request again, octet for octet");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.6/2", "a nonce used again in a new, correctly signed request: REQUEST_REPLAYED",
      "core", {"AOBJ-AUTH-008"}, true, [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        Tamper t;
        t.nonce_hex = HexEncode(RandomBytes(16));
        ctx.RequireOk(f.p->Send(Method::kHeadBucket, f.head, t), "first use of the nonce");
        pb::ListBucketsRequest lb;
        ctx.RequireCode(f.p->Send(Method::kListBuckets, lb, t), ErrorCode::kRequestReplayed,
                        "the same nonce on another method, newly signed");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.6/4",
      "which nonces are recorded: not those of requests that failed their signature or time, "
      "those of requests that failed after authentication, across the key's sessions",
      "core", {"AOBJ-AUTH-008", "AOBJ-AUTH-009"}, true, [](CaseContext& ctx) {
        Fixture f = Setup(ctx);
        Tamper t;
        t.nonce_hex = HexEncode(RandomBytes(16));
        t.flip_signature = true;
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t),
                        ErrorCode::kSignatureDoesNotMatch, "a request with a wrong signature");
        t.flip_signature = false;
        t.clock_offset_ms = -3600 * 1000;
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, t), ErrorCode::kRequestTimeTooSkewed,
                        "the same nonce, signed, an hour old");
        t.clock_offset_ms = 0;
        ctx.RequireOk(f.p->Send(Method::kHeadBucket, f.head, t),
                      "the same nonce in a correct request: it was not recorded by the failures");
        Tamper u;
        u.nonce_hex = HexEncode(RandomBytes(16));
        pb::HeadObjectRequest missing;
        missing.set_bucket(f.bucket);
        missing.set_key("not-there");
        ctx.RequireCode(f.p->Send(Method::kHeadObject, missing, u), ErrorCode::kNoSuchKey,
                        "a HeadObject of a missing key (authenticated, then failed)");
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, f.head, u), ErrorCode::kRequestReplayed,
                        "its nonce again: recorded although the request failed");
        auto q = ctx.Open();
        Tamper v;
        v.nonce_hex = HexEncode(RandomBytes(16));
        ctx.RequireOk(f.p->Send(Method::kHeadBucket, f.head, v), "a fresh nonce in one session");
        ctx.RequireCode(q->Send(Method::kHeadBucket, f.head, v), ErrorCode::kRequestReplayed,
                        "the same nonce in another session of the same access key");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.6/5",
      "the replay cache is kept per access key: a nonce one principal used is served in a "
      "correctly signed request of another",
      "access", {"AOBJ-AUTH-008"}, true, [](CaseContext& ctx) {
        auto p = ctx.Open();
        auto q = ctx.Open(/*second=*/true);
        Tamper t;
        t.nonce_hex = HexEncode(RandomBytes(16));
        ctx.RequireOk(p->Send(Method::kListBuckets, pb::ListBucketsRequest(), t),
                      "the first principal's ListBuckets with nonce N");
        ctx.RequireOk(q->Send(Method::kListBuckets, pb::ListBucketsRequest(), t),
                      "the second principal's own ListBuckets with the same nonce N: the server "
                      "remembers (access key, nonce) pairs");
        ctx.RequireCode(q->Send(Method::kListBuckets, pb::ListBucketsRequest(), t),
                        ErrorCode::kRequestReplayed, "the second principal's nonce N again");
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.8/1",
      "a successful OpenSession is signed over the request's signature and the response's exact "
      "octets",
      "core", {"AOBJ-AUTH-020", "AOBJ-SES-035"}, true, [](CaseContext& ctx) {
        for (int i = 0; i < 2; ++i) {
          auto p = ctx.NewPeer();
          pb::OpenSessionRequest o = p->DefaultOpen();
          if (i == 1) {
            o.add_offered_versions(0x5A5A5A5Au);
            o.add_offered_versions(1);
          }
          const std::string what =
              i == 0 ? "OpenSession offering the range [1, 1]" : "OpenSession offering {grease, 1}";
          // Unconfirmed, so that the peer's last request is still this OpenSession.
          RawReply rr = p->Open(o, /*confirm=*/false);
          ctx.RequireOk(rr, what);
          ctx.Require(!rr.response_signature.empty(),
                      what + ": the reply carries aobj-response-signature", "64 hex digits",
                      "(absent)");
          absl::Status v = p->VerifyResponseSignature(rr);
          ctx.Require(v.ok(),
                      what +
                          ": HMAC-SHA256(signing key, \"AOBJ1-RESPONSE\\n\" || request "
                          "signature || \"\\n\" || hex SHA-256(response octets)) matches",
                      "a match", rr.response_signature);
        }
        ctx.RequireStillServes();
      });
  Add(r, "auth/6.7/1", "a session of another principal: NO_SUCH_SESSION", "access",
      {"AOBJ-AUTH-010"}, true, [](CaseContext& ctx) {
        auto p = ctx.Open();
        auto q = ctx.Open(/*second=*/true);
        Tamper t;
        t.session_hex = p->session_hex();
        ctx.RequireCode(q->Send(Method::kListBuckets, pb::ListBucketsRequest(), t),
                        ErrorCode::kNoSuchSession, "the second principal names the first's session");
        ctx.RequireOk(p->Send(Method::kListBuckets, pb::ListBucketsRequest()),
                      "the first principal's session still works");
        ctx.RequireStillServes();
      });
}

}  // namespace aobj::conformance
