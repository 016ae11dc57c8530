// Cases for spec sections 9.2-9.8 (names, buckets, PUT/GET/HEAD/DELETE, metadata), 9.10
// (conditional requests), 9.14 (CopyObject) and 14.8 (authorization).
#include <atomic>
#include <map>
#include <thread>

#include <grpcpp/generic/generic_stub.h>

#include "absl/time/clock.h"
#include "aobj/v1/aobj.pb.h"
#include "control/tls.h"
#include "conformance/src/cases_util.h"
#include "wire/etag.h"

namespace aobj::conformance {
namespace {

// A PUT request of `content` by RMA with user metadata / content type / preconditions.
struct PutSpec {
  std::string content_type;
  std::map<std::string, std::string> meta;
  pb::Preconditions pre;
};

RawReply PutWith(Peer& p, const std::string& bucket, const std::string& key,
                 const std::string& content, const PutSpec& s) {
  auto m = p.Allocate(std::max<size_t>(content.size(), 1));
  if (!content.empty()) std::memcpy(m->data(), content.data(), content.size());
  pb::PutObjectRequest put = p.PutRequest(bucket, key, *m, content.size());
  put.set_content_type(s.content_type);
  for (const auto& [k, v] : s.meta) (*put.mutable_user_metadata())[k] = v;
  *put.mutable_preconditions() = s.pre;
  return p.Send(Method::kPutObject, put);
}

// The sec/14.8 cases need a target that restricts a bucket to its creator.
void RequireOwnerPolicy(CaseContext& ctx) {
  if (!ctx.target().owner_policy) {
    ctx.Unsupported(
        "the target's authorization policy is open (a bucket that does not exist answers "
        "NO_SUCH_BUCKET, not ACCESS_DENIED): no bucket is restricted to its creator");
  }
}

pb::CopyObjectRequest CopyRequest(const std::string& source_bucket, const std::string& source_key,
                                  const std::string& bucket, const std::string& key) {
  pb::CopyObjectRequest c;
  c.set_source_bucket(source_bucket);
  c.set_source_key(source_key);
  c.set_bucket(bucket);
  c.set_key(key);
  return c;
}

RawReply HeadWith(Peer& p, const std::string& bucket, const std::string& key,
                  const pb::Preconditions& pre) {
  pb::HeadObjectRequest h;
  h.set_bucket(bucket);
  h.set_key(key);
  *h.mutable_preconditions() = pre;
  return p.Send(Method::kHeadObject, h);
}

pb::HeadObjectResponse HeadOk(CaseContext& ctx, Peer& p, const std::string& bucket,
                              const std::string& key) {
  pb::HeadObjectResponse h;
  ctx.RequireOk(p.Head(bucket, key, &h), "HEAD " + key);
  return h;
}

std::string Read(CaseContext& ctx, Peer& p, const std::string& bucket, const std::string& key) {
  std::string out;
  ctx.RequireOk(p.Get(bucket, key, &out, nullptr, 4 << 20), "GET " + key);
  return out;
}

// What a PutObject call that sends only its headers (`md`), no message and no half-close,
// got back within `wait`.
struct HeadersOnly {
  std::string code = "(no aobj-error-bin trailer)";  // the trailer's error name
  absl::Duration took;
  std::string outcome;
};

HeadersOnly SendHeadersOnly(CaseContext& ctx,
                            const std::vector<std::pair<std::string, std::string>>& md,
                            absl::Duration wait) {
  HeadersOnly h;
  auto channel = MakeChannel(ctx.target().endpoint, ctx.target().tls, 8 << 20);
  ctx.Require(channel.ok(), "a control channel to the target", "a channel",
              channel.ok() ? "" : channel.status().ToString());
  grpc::GenericStub stub(*channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext call_ctx;
  call_ctx.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(wait));
  for (const auto& [k, v] : md) call_ctx.AddMetadata(k, v);
  const absl::Time start = absl::Now();
  auto call = stub.PrepareCall(&call_ctx, "/aobj.v1.ObjectService/PutObject", &cq);
  call->StartCall(reinterpret_cast<void*>(1));
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(2));
  void* tag = nullptr;
  bool ok = false;
  bool finished = false;
  while (!finished && cq.Next(&tag, &ok)) finished = tag == reinterpret_cast<void*>(2);
  h.took = absl::Now() - start;
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  const auto& trailers = call_ctx.GetServerTrailingMetadata();
  auto it = trailers.find("aobj-error-bin");
  aobj::v1::Error error;
  if (it != trailers.end() && error.ParseFromArray(it->second.data(), it->second.size())) {
    h.code = error.name();
  }
  h.outcome = absl::StrCat(h.code, " (gRPC ", static_cast<int>(status.error_code()), ") after ",
                           absl::FormatDuration(h.took));
  Exchange e;
  e.peer = "raw";
  e.method = md.empty() ? "PutObject (headers only, unsigned)"
                        : "PutObject (headers only, a known key's claim, no message)";
  e.outcome = h.outcome;
  ctx.Record(e);
  return h;
}

}  // namespace

void RegisterObjectCases(Registry& r) {
  // ---- 9.2 names ---------------------------------------------------------------------------
  Add(r, "obj/9.2/1", "invalid bucket names: INVALID_BUCKET_NAME", "core", {"AOBJ-OBJ-001"}, true,
      [](CaseContext& ctx) {
        auto p = ctx.Open();
        for (const char* name : {"ab", "Upper-case", "-leading-dash", "trailing-dash-",
                                 "under_score", "192.168.1.1", "has space",
                                 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}) {
          ctx.RequireCode(p->CreateBucket(name), ErrorCode::kInvalidBucketName,
                          absl::StrCat("CreateBucket \"", name, "\""));
        }
        ctx.RequireCode(p->Head("Bad_Name", "k"), InvalidBucketCode(ctx),
                        "HEAD in bucket \"Bad_Name\"");
        ctx.RequireStillServes();
      });
  Add(r, "obj/9.2/4",
      "bucket names at their edges are valid: 3 and 63 characters, dots and dashes inside, "
      "digits at either end, a dotted name that is not an IPv4 address",
      "core", {"AOBJ-OBJ-001"}, false, [](CaseContext& ctx) {
        auto p = ctx.Open();
        const std::string id = ctx.Unique("e");  // lower-case letters, digits and '-'
        const std::string tail = id.substr(id.size() > 8 ? id.size() - 8 : 0);
        std::vector<std::string> names = {
            "a" + tail.substr(0, 1) + "9",
            std::string(63 - tail.size() - 1, 'a') + "-" + tail,
            "0" + tail + ".b-c.9",
            "1.2.3." + tail + "x",
        };
        for (const std::string& name : names) {
          if (name.size() < 3 || name.size() > 63) continue;
          RawReply c = p->CreateBucket(name);
          if (CodeOf(c) == ErrorCode::kBucketAlreadyExists) continue;  // another run's
          ctx.RequireOk(c,
                        absl::StrCat("CreateBucket \"", name, "\" (", name.size(), " characters)"));
          pb::DeleteBucketRequest d;
          d.set_bucket(name);
          ctx.RequireOk(p->Send(Method::kDeleteBucket, d), absl::StrCat("DeleteBucket ", name));
        }
      });
  Add(r, "obj/9.2/8",
      "bucket names with an upper-case letter after the first character: INVALID_BUCKET_NAME, "
      "nothing created",
      "core", {"AOBJ-OBJ-001"}, true, [](CaseContext& ctx) {
        auto p = ctx.Open();
        const std::string id = ctx.Unique("u");
        const std::string tail = id.substr(id.size() > 8 ? id.size() - 8 : 0);
        for (const std::string& name :
             {"aB" + tail, "a" + tail + "-Z", "ab" + tail + ".cD", "a" + tail + "X9"}) {
          ctx.RequireCode(p->CreateBucket(name), ErrorCode::kInvalidBucketName,
                          absl::StrCat("CreateBucket \"", name, "\""));
          pb::HeadBucketRequest h;
          h.set_bucket(name);
          RawReply hr = p->Send(Method::kHeadBucket, h);
          ctx.Require(!hr.status.ok(), absl::StrCat("HeadBucket \"", name, "\" finds nothing"),
                      "an error", Outcome(hr));
        }
        ctx.RequireStillServes();
      });
  Add(r, "obj/9.2/2", "keys: 1025 octets KEY_TOO_LONG; empty or invalid UTF-8 INVALID_ARGUMENT",
      "core", {"AOBJ-OBJ-002"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireCode(f.p->Put(f.bucket, std::string(1025, 'k'), "x"), ErrorCode::kKeyTooLong,
                        "PUT with a key of 1025 octets");
        ctx.RequireCode(f.p->Put(f.bucket, "", "x"), ErrorCode::kInvalidArgument, "PUT with an empty key");
        ctx.RequireCode(f.p->Put(f.bucket, std::string("bad\xff\xfe", 5), "x"),
                        ErrorCode::kInvalidArgument, "PUT with a key that is not UTF-8");
        ctx.RequireCode(f.p->Head(f.bucket, std::string("\xc3", 1)), ErrorCode::kInvalidArgument,
                        "HEAD with a truncated UTF-8 sequence");
        // Sequences that decode but that UTF-8 (RFC 3629) forbids: a UTF-16 surrogate (CESU-8),
        // an overlong '/', a code point above U+10FFFF.
        for (const auto& [key, what] : std::vector<std::pair<std::string, std::string>>{
                 {"a\xed\xa0\x80", "an encoded surrogate U+D800"},
                 {"a\xed\xbf\xbf", "an encoded surrogate U+DFFF"},
                 {"a\xc0\xaf", "an overlong encoding of '/'"},
                 {"a\xe0\x80\xaf", "a three-octet overlong '/'"},
                 {"a\xf4\x90\x80\x80", "U+110000, above the last code point"}}) {
          ctx.RequireCode(f.p->Put(f.bucket, key, "x"), ErrorCode::kInvalidArgument,
                          "PUT with a key holding " + what);
          ctx.RequireCode(f.p->Head(f.bucket, key), ErrorCode::kInvalidArgument,
                          "HEAD with a key holding " + what);
        }
        ctx.RequireOk(f.p->Put(f.bucket, "a\xf4\x8f\xbf\xbf\xed\x9f\xbf", "x"),
                      "PUT with a key holding U+10FFFF and U+D7FF (valid)");
        RawReply ok = f.p->Put(f.bucket, std::string(1024, 'k'), "x");
        if (CodeOf(ok) == ErrorCode::kKeyTooLong) {
          ctx.Note("the target limits keys below 1024 octets (AOBJ-OBJ-159)");
        } else {
          ctx.RequireOk(ok, "PUT with a key of 1024 octets");
        }
        ctx.RequireStillServes();
      });
  Add(r, "obj/9.2/9",
      "the announced max_key_bytes and max_list_page, to the octet and the entry: at the bound "
      "taken, one past it KEY_TOO_LONG and INVALID_ARGUMENT",
      "limits", {"AOBJ-OBJ-255", "AOBJ-OBJ-159", "AOBJ-OBJ-002", "AOBJ-OBJ-104"}, true,
      [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const pb::Limits& l = f.p->session().limits();
        if (l.max_key_bytes() == 0 && l.max_list_page() == 0) {
          ctx.Unsupported(
              "the target announces neither Limits.max_key_bytes nor Limits.max_list_page (a "
              "SHOULD, AOBJ-OBJ-255)");
        }
        if (const uint32_t n = l.max_key_bytes(); n != 0) {
          ctx.Require(n <= 1024, "max_key_bytes within AOBJ-OBJ-002's 1024", "<= 1024",
                      absl::StrCat(n));
          const std::string at(n, 'k'), past(n + 1, 'k');
          ctx.RequireOk(f.p->Put(f.bucket, at, "x"),
                        absl::StrCat("PUT with a key of max_key_bytes (", n, ") octets"));
          ctx.RequireCode(f.p->Put(f.bucket, past, "x"), ErrorCode::kKeyTooLong,
                          absl::StrCat("PUT with a key of max_key_bytes + 1 (", n + 1, ") octets"));
          ctx.RequireCode(f.p->Head(f.bucket, past), ErrorCode::kKeyTooLong,
                          absl::StrCat("HEAD with a key of ", n + 1, " octets"));
          ctx.RequireOk(f.p->Delete(f.bucket, at), "DELETE the key of max_key_bytes octets");
        }
        if (const uint32_t page = l.max_list_page(); page != 0) {
          ctx.Require(page <= 1000, "max_list_page within AOBJ-OBJ-104's 1000", "<= 1000",
                      absl::StrCat(page));
          pb::ListObjectsV2Request req;
          req.set_bucket(f.bucket);
          req.set_max_keys(page);
          ctx.RequireOk(f.p->Send(Method::kListObjectsV2, req),
                        absl::StrCat("ListObjectsV2 with max_keys = max_list_page (", page, ")"));
          req.set_max_keys(page + 1);
          ctx.RequireCode(
              f.p->Send(Method::kListObjectsV2, req), ErrorCode::kInvalidArgument,
              absl::StrCat("ListObjectsV2 with max_keys = max_list_page + 1 (", page + 1, ")"));
        }
        ctx.RequireStillServes();
      });
  Add(r, "obj/9.2/3", "keys compare as octets: no case folding, no normalization", "core",
      {"AOBJ-OBJ-015"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const std::string nfc = "caf\xc3\xa9", nfd = "cafe\xcc\x81";
        ctx.RequireOk(f.p->Put(f.bucket, nfc, "nfc"), "PUT NFC key");
        ctx.RequireOk(f.p->Put(f.bucket, nfd, "nfd"), "PUT NFD key");
        ctx.RequireOk(f.p->Put(f.bucket, "Key", "upper"), "PUT Key");
        ctx.RequireOk(f.p->Put(f.bucket, "key", "lower"), "PUT key");
        ctx.Require(Read(ctx, *f.p, f.bucket, nfc) == "nfc" && Read(ctx, *f.p, f.bucket, nfd) == "nfd",
                    "NFC and NFD keys are distinct objects", "nfc, nfd", "mixed");
        ctx.Require(Read(ctx, *f.p, f.bucket, "Key") == "upper" && Read(ctx, *f.p, f.bucket, "key") == "lower",
                    "Key and key are distinct objects", "upper, lower", "mixed");
      });

  // ---- 9.3 buckets ---------------------------------------------------------------------------
  Add(r, "obj/9.3/1", "bucket lifecycle: HeadBucket, exists twice, not empty", "core",
      {"AOBJ-OBJ-006", "AOBJ-OBJ-264"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        pb::HeadBucketRequest head;
        head.set_bucket(f.bucket);
        RawReply exists = f.p->Send(Method::kHeadBucket, head);
        ctx.RequireOk(exists, "HeadBucket of the bucket just created");
        ctx.Require(exists.body.empty(), "HeadBucket's response is empty", "0 octets",
                    absl::StrCat(exists.body.size(), " octets"));
        ctx.RequireCode(f.p->CreateBucket(f.bucket), ErrorCode::kBucketAlreadyExists, "CreateBucket again");
        ctx.RequireOk(f.p->Put(f.bucket, "k", "x"), "PUT");
        pb::DeleteBucketRequest d;
        d.set_bucket(f.bucket);
        ctx.RequireCode(f.p->Send(Method::kDeleteBucket, d), ErrorCode::kBucketNotEmpty,
                        "DeleteBucket of a bucket with an object");
        ctx.RequireOk(f.p->Delete(f.bucket, "k"), "DELETE the object");
        ctx.RequireOk(f.p->Send(Method::kDeleteBucket, d), "DeleteBucket when empty");
        pb::HeadBucketRequest hb;
        hb.set_bucket(f.bucket);
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, hb), MissingBucketCode(ctx),
                        "HeadBucket after DeleteBucket");
        ctx.RequireOk(f.p->CreateBucket(f.bucket), "CreateBucket again after deletion");
      });
  Add(r, "obj/9.3/2", "a missing bucket: NO_SUCH_BUCKET; a missing key: NO_SUCH_KEY", "core",
      {"AOBJ-OBJ-003", "AOBJ-OBJ-013"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const std::string none = ctx.Unique("no-such");
        pb::HeadBucketRequest hb;
        hb.set_bucket(none);
        ctx.RequireCode(f.p->Send(Method::kHeadBucket, hb), MissingBucketCode(ctx), "HeadBucket");
        ctx.RequireCode(f.p->Put(none, "k", Content(100000)), MissingBucketCode(ctx), "PUT");
        std::string out;
        ctx.RequireCode(f.p->Get(none, "k", &out), MissingBucketCode(ctx), "GET");
        ctx.RequireCode(f.p->Head(none, "k"), MissingBucketCode(ctx), "HEAD");
        ctx.RequireCode(f.p->Delete(none, "k"), MissingBucketCode(ctx), "DELETE");
        pb::ListObjectsV2Request l;
        l.set_bucket(none);
        ctx.RequireCode(f.p->Send(Method::kListObjectsV2, l), MissingBucketCode(ctx), "ListObjectsV2");
        pb::DeleteBucketRequest d;
        d.set_bucket(none);
        ctx.RequireCode(f.p->Send(Method::kDeleteBucket, d), MissingBucketCode(ctx), "DeleteBucket");
        ctx.RequireCode(f.p->Get(f.bucket, "nothing", &out), ErrorCode::kNoSuchKey, "GET missing key");
        ctx.RequireCode(f.p->Head(f.bucket, "nothing"), ErrorCode::kNoSuchKey, "HEAD missing key");
        ctx.RequireStillServes();
      });

  // ---- 9.4-9.6 objects ---------------------------------------------------------------------------
  Add(r, "obj/9.4/1", "ETag is the quoted MD5; metadata is complete and exact", "core",
      {"AOBJ-OBJ-005", "AOBJ-OBJ-012", "AOBJ-OBJ-007"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const std::string body = Content(77777, 51);
        PutSpec s;
        s.content_type = "application/x-conformance; charset=binary";
        const int64_t before = absl::ToUnixMillis(absl::Now());
        RawReply p = PutWith(*f.p, f.bucket, "m", body, s);
        const int64_t after = absl::ToUnixMillis(absl::Now());
        ctx.RequireOk(p, "PUT with a content type");
        auto pr = Parse<pb::PutObjectResponse>(ctx, p, "PUT");
        ctx.Require(pr.metadata().etag() == Md5Etag(body), "ETag in the PUT reply", Md5Etag(body),
                    pr.metadata().etag());
        pb::HeadObjectResponse h = HeadOk(ctx, *f.p, f.bucket, "m");
        const auto& md = h.metadata();
        ctx.Require(md.size() == body.size(), "size", absl::StrCat(body.size()), absl::StrCat(md.size()));
        ctx.Require(md.etag() == Md5Etag(body), "ETag", Md5Etag(body), md.etag());
        ctx.Require(md.content_type() == s.content_type, "content_type unchanged", s.content_type,
                    md.content_type());
        ctx.Require(md.last_modified_ms() >= before - 2000 && md.last_modified_ms() <= after + 2000,
                    "last_modified_ms is the commit time (within 2 s of the suite's clock)",
                    absl::StrCat(before, "..", after), absl::StrCat(md.last_modified_ms()));
        ctx.Require(md.checksum_algorithm() != pb::CHECKSUM_ALGORITHM_UNSPECIFIED &&
                        (md.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C
                             ? md.checksum() == Crc32cOf(body)
                             : md.checksum() == Crc64Of(body)),
                    "checksum of the full object", Hex(Crc32cOf(body)), Hex(md.checksum()));
      });
  Add(r, "obj/9.4/2", "a PUT replaces the previous object as a whole; readers never see a mix",
      "core", {"AOBJ-OBJ-010"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const std::string a = Content(2 << 20, 61), b = Content(1 << 20, 62);
        ctx.RequireOk(f.p->Put(f.bucket, "k", a), "PUT of A (2 MiB)");
        // A writer alternates A and B while a reader GETs: each read is A or B, whole.
        std::atomic<bool> stop{false};
        std::atomic<int> writes{0};
        auto w = ctx.Open();
        std::thread writer([&] {
          for (int i = 0; i < 40 && !stop; ++i) {
            w->Put(f.bucket, "k", i % 2 ? a : b);
            ++writes;
          }
        });
        int mixed = 0, reads = 0;
        for (int i = 0; i < 40; ++i) {
          std::string got;
          RawReply g = f.p->Get(f.bucket, "k", &got, nullptr, 2 << 20);
          if (!g.grpc_status.ok()) continue;
          ++reads;
          if (got != a && got != b) ++mixed;
        }
        stop = true;
        writer.join();
        ctx.Require(reads > 0 && mixed == 0, "every GET returned A or B whole",
                    "0 mixed", absl::StrCat(mixed, " mixed of ", reads, " reads, ", writes.load(), " writes"));
        ctx.Require(Read(ctx, *f.p, f.bucket, "k").size() <= a.size(), "the key holds one object", "A or B", "other");
      });
  Add(r, "obj/9.4/3",
      "OPAQUE_ETAG: a PUT's ETag is opaque, new on every write, kept by the object and usable in "
      "conditions; without it the MD5 as before", "opaque-etag", {"AOBJ-OBJ-016", "AOBJ-OBJ-005"},
      false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        auto q = ctx.NewPeer();
        pb::OpenSessionRequest o = q->DefaultOpen();
        o.add_capabilities(kCapOpaqueEtag);
        ctx.RequireOk(q->Open(o), "OpenSession offering OPAQUE_ETAG");
        RequireCapability(ctx, *q, kCapOpaqueEtag, "OPAQUE_ETAG");
        // A body of several server chunks and a small one.
        for (const size_t n : {size_t{3} << 20, size_t{100}}) {
          const std::string body = Content(n, 71);
          const std::string key = absl::StrCat("opaque-", n);
          RawReply p1 = PutWith(*q, f.bucket, key, body, PutSpec{});
          ctx.RequireOk(p1, absl::StrCat("PUT of ", n, " octets with OPAQUE_ETAG"));
          const std::string e1 = Parse<pb::PutObjectResponse>(ctx, p1, "PUT").metadata().etag();
          ctx.Require(IsOpaqueEtag(e1), "the ETag is a quoted 32-digit lower-case hex value and -0",
                      "\"<32 hex>-0\"", e1);
          // The same content again: still a new ETag (it identifies the write, not the bytes).
          RawReply p2 = PutWith(*q, f.bucket, key, body, PutSpec{});
          ctx.RequireOk(p2, "the same PUT again");
          const std::string e2 = Parse<pb::PutObjectResponse>(ctx, p2, "PUT").metadata().etag();
          ctx.Require(IsOpaqueEtag(e2) && e2 != e1, "a second write of the key gets another ETag",
                      absl::StrCat("not ", e1), e2);
          // The object keeps it: a session without OPAQUE_ETAG sees the same ETag and the bytes.
          const std::string seen = HeadOk(ctx, *f.p, f.bucket, key).metadata().etag();
          ctx.Require(seen == e2,
                      "HEAD from a session without OPAQUE_ETAG reports the object's ETag", e2, seen);
          ctx.Require(Read(ctx, *f.p, f.bucket, key) == body, "GET returns the content", "equal",
                      "different");
          // Conditions compare it like any strong ETag (AOBJ-OBJ-130).
          pb::Preconditions stale, current;
          stale.set_if_match(e1);
          current.set_if_match(e2);
          ctx.RequireCode(HeadWith(*f.p, f.bucket, key, stale), ErrorCode::kPreconditionFailed,
                          "HEAD If-Match the overwritten ETag");
          ctx.RequireOk(HeadWith(*f.p, f.bucket, key, current), "HEAD If-Match the current ETag");
        }
        // The session without OPAQUE_ETAG still gets MD5 ETags (AOBJ-OBJ-005).
        const std::string body = Content(5000, 72);
        RawReply pm = PutWith(*f.p, f.bucket, "md5", body, PutSpec{});
        ctx.RequireOk(pm, "PUT without OPAQUE_ETAG");
        ctx.Require(Parse<pb::PutObjectResponse>(ctx, pm, "PUT").metadata().etag() == Md5Etag(body),
                    "without OPAQUE_ETAG the ETag is the MD5", Md5Etag(body),
                    Parse<pb::PutObjectResponse>(ctx, pm, "PUT").metadata().etag());
      });
  Add(r, "obj/9.6/1", "DELETE of a missing key succeeds", "core", {"AOBJ-OBJ-004"}, false,
      [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Delete(f.bucket, "never-existed"), "DELETE of a key never written");
        ctx.RequireOk(f.p->Put(f.bucket, "k", "x"), "PUT");
        ctx.RequireOk(f.p->Delete(f.bucket, "k"), "DELETE");
        ctx.RequireOk(f.p->Delete(f.bucket, "k"), "DELETE again");
        ctx.RequireCode(f.p->Head(f.bucket, "k"), ErrorCode::kNoSuchKey, "HEAD after DELETE");
      });

  // ---- 9.8 user metadata ------------------------------------------------------------------------
  Add(r, "obj/9.8/1", "user metadata: names stored lower-case, returned everywhere, replaced whole",
      "core", {"AOBJ-OBJ-120", "AOBJ-OBJ-122"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        PutSpec s;
        s.meta = {{"Color", "blue"}, {"x-trace", "t\tab"}, {"n", "caf\xc3\xa9"}};
        ctx.RequireOk(PutWith(*f.p, f.bucket, "m", "body", s), "PUT with user metadata");
        pb::HeadObjectResponse h = HeadOk(ctx, *f.p, f.bucket, "m");
        std::map<std::string, std::string> got(h.metadata().user_metadata().begin(),
                                               h.metadata().user_metadata().end());
        std::map<std::string, std::string> want = {{"color", "blue"}, {"x-trace", "t\tab"}, {"n", "caf\xc3\xa9"}};
        ctx.Require(got == want, "HEAD returns the metadata with lower-case names",
                    "color, x-trace, n", h.metadata().ShortDebugString());
        pb::GetObjectResponse g;
        std::string out;
        ctx.RequireOk(f.p->Get(f.bucket, "m", &out, &g), "GET");
        ctx.Require(std::map<std::string, std::string>(g.metadata().user_metadata().begin(),
                                                       g.metadata().user_metadata().end()) == want,
                    "GET returns the same metadata", "color, x-trace, n", g.metadata().ShortDebugString());
        PutSpec s2;
        s2.meta = {{"other", "1"}};
        ctx.RequireOk(PutWith(*f.p, f.bucket, "m", "body2", s2), "PUT with other metadata");
        h = HeadOk(ctx, *f.p, f.bucket, "m");
        ctx.Require(h.metadata().user_metadata().size() == 1 &&
                        h.metadata().user_metadata().count("other") == 1,
                    "the new PUT replaced the metadata as a whole", "{other}",
                    h.metadata().ShortDebugString());
      });
  Add(r, "obj/9.8/2", "bad user metadata: INVALID_ARGUMENT or METADATA_TOO_LARGE, nothing stored",
      "core", {"AOBJ-OBJ-120", "AOBJ-OBJ-121", "AOBJ-OBJ-123"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        struct Bad {
          std::map<std::string, std::string> meta;
          ErrorCode code;
          const char* what;
        };
        const Bad bad[] = {
            {{{"", "v"}}, ErrorCode::kInvalidArgument, "an empty name"},
            {{{"bad name", "v"}}, ErrorCode::kInvalidArgument, "a name with a space"},
            {{{"b\xc3\xa9", "v"}}, ErrorCode::kInvalidArgument, "a name with a non-ASCII octet"},
            {{{"Dup", "1"}, {"dup", "2"}},
             ErrorCode::kInvalidArgument,
             "names that differ only in case"},
            {{{"v", "a\x01z"}}, ErrorCode::kInvalidArgument, "a value with a control character"},
            {{{"v", "a\x7fz"}}, ErrorCode::kInvalidArgument, "a value with DEL (U+007F)"},
            {{{"v", "a\nz"}}, ErrorCode::kInvalidArgument, "a value with a line feed"},
            {{{"v", std::string("\xff\xfe", 2)}},
             ErrorCode::kInvalidArgument,
             "a value that is not UTF-8"},
            {{{"big", std::string(2046, 'v')}}, ErrorCode::kMetadataTooLarge, "2049 octets in all"},
            {{{"", std::string(3000, 'v')}},
             ErrorCode::kMetadataTooLarge,
             "3000 octets with an empty name (size is checked first)"},
        };
        for (const Bad& b : bad) {
          PutSpec s;
          s.meta = b.meta;
          ctx.RequireCode(PutWith(*f.p, f.bucket, "m", "x", s), b.code, std::string("PUT with ") + b.what);
        }
        PutSpec ok;
        ok.meta = {{"big", std::string(2045, 'v')}};
        ctx.RequireOk(PutWith(*f.p, f.bucket, "m", "x", ok), "PUT with 2048 octets of metadata");
        // Tab and the C1 controls (obs-text in HTTP) are allowed (AOBJ-OBJ-123).
        PutSpec allowed;
        allowed.meta = {{"v", "tab\there, U+0085 \xc2\x85 and U+009F \xc2\x9f"}};
        ctx.RequireOk(PutWith(*f.p, f.bucket, "c1", "x", allowed),
                      "PUT with a tab and C1 controls in a value");
        const auto md = HeadOk(ctx, *f.p, f.bucket, "c1").metadata();
        ctx.Require(md.user_metadata().count("v") == 1 &&
                        md.user_metadata().at("v") == allowed.meta.at("v"),
                    "the value is returned as stored", allowed.meta.at("v"), md.ShortDebugString());
        ctx.RequireStillServes();
      });

  // ---- 9.10 conditional requests -------------------------------------------------------------
  Add(r, "cond/9.10/1", "GET/HEAD preconditions in RFC 9110 order", "conditional",
      {"AOBJ-OBJ-130", "AOBJ-OBJ-132", "AOBJ-ERR-100"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "c", "conditional body"), "PUT");
        const std::string etag = HeadOk(ctx, *f.p, f.bucket, "c").metadata().etag();
        const int64_t lm = HeadOk(ctx, *f.p, f.bucket, "c").metadata().last_modified_ms();
        struct Try {
          pb::Preconditions pre;
          ErrorCode code;  // kOk: success
          const char* what;
        };
        auto pre = [](const char* im, const char* inm, int64_t ims, int64_t ius) {
          pb::Preconditions p;
          if (im) p.set_if_match(im);
          if (inm) p.set_if_none_match(inm);
          if (ims) p.set_if_modified_since_ms(ims);
          if (ius) p.set_if_unmodified_since_ms(ius);
          return p;
        };
        const std::string wrong = "\"00000000000000000000000000000000\"";
        const Try tries[] = {
            {pre(etag.c_str(), nullptr, 0, 0), ErrorCode::kOk, "If-Match the ETag"},
            {pre("*", nullptr, 0, 0), ErrorCode::kOk, "If-Match *"},
            {pre(wrong.c_str(), nullptr, 0, 0), ErrorCode::kPreconditionFailed, "If-Match another ETag"},
            {pre(nullptr, etag.c_str(), 0, 0), ErrorCode::kNotModified, "If-None-Match the ETag"},
            {pre(nullptr, "*", 0, 0), ErrorCode::kNotModified, "If-None-Match *"},
            {pre(nullptr, wrong.c_str(), 0, 0), ErrorCode::kOk, "If-None-Match another ETag"},
            {pre(nullptr, nullptr, lm + 3600000, 0), ErrorCode::kNotModified, "If-Modified-Since an hour later"},
            {pre(nullptr, nullptr, lm - 3600000, 0), ErrorCode::kOk, "If-Modified-Since an hour earlier"},
            {pre(nullptr, nullptr, 0, lm - 3600000), ErrorCode::kPreconditionFailed, "If-Unmodified-Since an hour earlier"},
            {pre(etag.c_str(), nullptr, 0, lm - 3600000), ErrorCode::kOk,
             "If-Match true wins over If-Unmodified-Since false (RFC 9110 13.2.2)"},
            {pre(nullptr, wrong.c_str(), lm + 3600000, 0), ErrorCode::kOk,
             "If-None-Match true: If-Modified-Since is ignored"},
            {pre(wrong.c_str(), etag.c_str(), 0, 0), ErrorCode::kPreconditionFailed,
             "If-Match false comes before If-None-Match"},
        };
        for (const Try& t : tries) {
          RawReply h = HeadWith(*f.p, f.bucket, "c", t.pre);
          if (t.code == ErrorCode::kOk) ctx.RequireOk(h, std::string("HEAD, ") + t.what);
          else ctx.RequireCode(h, t.code, std::string("HEAD, ") + t.what);
          auto m = f.p->Allocate(4096);
          pb::GetObjectRequest g = f.p->GetRequest(f.bucket, "c", *m, 4096);
          *g.mutable_preconditions() = t.pre;
          RawReply gr = f.p->Send(Method::kGetObject, g);
          if (t.code == ErrorCode::kOk) ctx.RequireOk(gr, std::string("GET, ") + t.what);
          else ctx.RequireCode(gr, t.code, std::string("GET, ") + t.what);
        }
      });
  Add(r, "cond/9.10/2", "malformed entity tags: INVALID_ARGUMENT", "conditional",
      {"AOBJ-OBJ-131"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "c", "x"), "PUT");
        for (const char* bad : {"\"a,b\"", "a b", "\"unterminated", "\"in\"ner\"", "\x01"}) {
          pb::Preconditions p;
          p.set_if_match(bad);
          ctx.RequireCode(HeadWith(*f.p, f.bucket, "c", p), ErrorCode::kInvalidArgument,
                          absl::StrCat("If-Match ", bad));
        }
        ctx.RequireStillServes();
      });
  Add(r, "cond/9.10/3", "a missing key is NO_SUCH_KEY whatever the preconditions; before the range",
      "conditional", {"AOBJ-OBJ-138", "AOBJ-OBJ-137"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        pb::Preconditions p;
        p.set_if_none_match("*");
        ctx.RequireCode(HeadWith(*f.p, f.bucket, "none", p), ErrorCode::kNoSuchKey,
                        "HEAD of a missing key with If-None-Match *");
        p.Clear();
        p.set_if_match("*");
        ctx.RequireCode(HeadWith(*f.p, f.bucket, "none", p), ErrorCode::kNoSuchKey,
                        "HEAD of a missing key with If-Match *");
        ctx.RequireOk(f.p->Put(f.bucket, "r", Content(100)), "PUT of 100 octets");
        auto m = f.p->Allocate(100);
        pb::GetObjectRequest g = f.p->GetRequest(f.bucket, "r", *m, 100);
        g.mutable_range()->set_kind(pb::ByteRange::KIND_FROM);
        g.mutable_range()->set_first(500);
        g.mutable_preconditions()->set_if_match("\"00000000000000000000000000000000\"");
        ctx.RequireCode(f.p->Send(Method::kGetObject, g), ErrorCode::kPreconditionFailed,
                        "failed If-Match with an unsatisfiable range");
      });
  Add(r, "cond/9.10/4", "write preconditions: only If-Match and If-None-Match *; atomic; no change "
                        "on failure",
      "conditional",
      {"AOBJ-OBJ-133", "AOBJ-OBJ-134", "AOBJ-OBJ-135", "AOBJ-OBJ-136", "AOBJ-ERR-100"}, true,
      [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        PutSpec bad;
        bad.pre.set_if_modified_since_ms(1);
        ctx.RequireCode(PutWith(*f.p, f.bucket, "w", "x", bad), ErrorCode::kInvalidArgument,
                        "PUT with If-Modified-Since");
        bad.pre.Clear();
        bad.pre.set_if_none_match("\"abc\"");
        ctx.RequireCode(PutWith(*f.p, f.bucket, "w", "x", bad), ErrorCode::kInvalidArgument,
                        "PUT with If-None-Match of an ETag");
        PutSpec create;
        create.pre.set_if_none_match("*");
        ctx.RequireOk(PutWith(*f.p, f.bucket, "w", "first", create), "create-only PUT of a new key");
        ctx.RequireCode(PutWith(*f.p, f.bucket, "w", "second", create), ErrorCode::kPreconditionFailed,
                        "create-only PUT of an existing key (not NOT_MODIFIED)");
        PutSpec match;
        match.pre.set_if_match("\"00000000000000000000000000000000\"");
        ctx.RequireCode(PutWith(*f.p, f.bucket, "w", "third", match), ErrorCode::kPreconditionFailed,
                        "PUT If-Match another ETag");
        ctx.Require(Read(ctx, *f.p, f.bucket, "w") == "first", "the key is unchanged", "first", "changed");
        match.pre.set_if_match(Md5Etag("first"));
        ctx.RequireOk(PutWith(*f.p, f.bucket, "w", "fourth", match), "PUT If-Match the ETag");
        ctx.Require(Read(ctx, *f.p, f.bucket, "w") == "fourth", "the key was replaced", "fourth", "other");
        ctx.RequireStillServes();
      });
  Add(r, "cond/9.10/7",
      "preconditions at their boundaries: dates equal to last_modified_ms, and weak tags "
      "(refused in if_match, allowed in if_none_match)",
      "conditional", {"AOBJ-OBJ-130", "AOBJ-OBJ-131"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "c", "boundary body"), "PUT");
        const auto md = HeadOk(ctx, *f.p, f.bucket, "c").metadata();
        const int64_t lm = md.last_modified_ms();
        pb::Preconditions p;
        p.set_if_modified_since_ms(lm);
        ctx.RequireCode(HeadWith(*f.p, f.bucket, "c", p), ErrorCode::kNotModified,
                        "HEAD If-Modified-Since exactly last_modified_ms (not modified since)");
        p.Clear();
        p.set_if_modified_since_ms(lm - 1);
        ctx.RequireOk(HeadWith(*f.p, f.bucket, "c", p), "HEAD If-Modified-Since 1 ms earlier");
        p.Clear();
        p.set_if_unmodified_since_ms(lm);
        ctx.RequireOk(HeadWith(*f.p, f.bucket, "c", p),
                      "HEAD If-Unmodified-Since exactly last_modified_ms");
        p.Clear();
        p.set_if_unmodified_since_ms(lm - 1);
        ctx.RequireCode(HeadWith(*f.p, f.bucket, "c", p), ErrorCode::kPreconditionFailed,
                        "HEAD If-Unmodified-Since 1 ms earlier");
        p.Clear();
        p.set_if_match("W/" + md.etag());
        ctx.RequireCode(HeadWith(*f.p, f.bucket, "c", p), ErrorCode::kInvalidArgument,
                        "HEAD If-Match with a weak tag");
        p.Clear();
        p.set_if_none_match("W/" + md.etag());
        ctx.RequireCode(HeadWith(*f.p, f.bucket, "c", p), ErrorCode::kNotModified,
                        "HEAD If-None-Match with the weak form of the ETag (weak comparison "
                        "matches)");
        ctx.RequireStillServes();
      });
  Add(r, "cond/9.10/6",
      "If-Match on a key that holds no object: NO_SUCH_KEY, not PRECONDITION_FAILED, and nothing "
      "is written, on PutObject and on CopyObject's destination",
      "conditional", {"AOBJ-OBJ-134"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        PutSpec match;
        match.pre.set_if_match(Md5Etag("anything"));
        ctx.RequireCode(PutWith(*f.p, f.bucket, "absent", "anything", match),
                        ErrorCode::kNoSuchKey, "PUT If-Match of a key that holds no object");
        ctx.RequireCode(f.p->Head(f.bucket, "absent"), ErrorCode::kNoSuchKey, "nothing written");
        ctx.RequireOk(f.p->Put(f.bucket, "source", "copied"), "PUT of a copy source");
        pb::CopyObjectRequest c = CopyRequest(f.bucket, "source", f.bucket, "absent");
        c.mutable_preconditions()->set_if_match(Md5Etag("copied"));
        ctx.RequireCode(f.p->Send(Method::kCopyObject, c), ErrorCode::kNoSuchKey,
                        "CopyObject If-Match on a destination that holds no object");
        ctx.RequireCode(f.p->Head(f.bucket, "absent"), ErrorCode::kNoSuchKey, "nothing written");
        ctx.RequireStillServes();
      });
  Add(r, "cond/9.10/11",
      "If-Match \"*\" on a key that holds an object matches: the PutObject and the CopyObject "
      "succeed and replace it",
      "conditional", {"AOBJ-OBJ-134", "AOBJ-OBJ-131"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "k", "first"), "PUT of the object");
        PutSpec star;
        star.pre.set_if_match("*");
        ctx.RequireOk(PutWith(*f.p, f.bucket, "k", "second", star),
                      "PUT If-Match \"*\" of a key that holds an object");
        std::string got;
        ctx.RequireOk(f.p->Get(f.bucket, "k", &got), "GET after it");
        ctx.Require(got == "second", "the PUT replaced the object", "second", got);
        ctx.RequireOk(f.p->Put(f.bucket, "source", "third"), "PUT of a copy source");
        pb::CopyObjectRequest c = CopyRequest(f.bucket, "source", f.bucket, "k");
        c.mutable_preconditions()->set_if_match("*");
        ctx.RequireOk(f.p->Send(Method::kCopyObject, c),
                      "CopyObject If-Match \"*\" onto a key that holds an object");
        ctx.RequireOk(f.p->Get(f.bucket, "k", &got), "GET after the copy");
        ctx.Require(got == "third", "the copy replaced the object", "third", got);
      });
  Add(r, "cond/9.10/12",
      "entity tags on writes compare as on reads: If-Match the ETag without its quotes lets a "
      "PutObject and a CopyObject (destination and source) go ahead; the ETag in upper case does "
      "not match, and changes nothing",
      "conditional", {"AOBJ-OBJ-134", "AOBJ-OBJ-131", "AOBJ-OBJ-152"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "k", "first"), "PUT of the object");
        auto bare = [](const std::string& etag) { return etag.substr(1, etag.size() - 2); };
        const std::string first = bare(Md5Etag("first"));
        std::string upper = first;
        for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        PutSpec match;
        if (upper != first) {
          match.pre.set_if_match(upper);
          ctx.RequireCode(PutWith(*f.p, f.bucket, "k", "never", match),
                          ErrorCode::kPreconditionFailed,
                          "PUT If-Match the ETag in upper case, without quotes (opaque octets "
                          "differ)");
          ctx.Require(Read(ctx, *f.p, f.bucket, "k") == "first", "the key is unchanged", "first",
                      "changed");
        }
        match.pre.set_if_match(first);
        ctx.RequireOk(PutWith(*f.p, f.bucket, "k", "second", match),
                      "PUT If-Match the current ETag without quotes");
        ctx.Require(Read(ctx, *f.p, f.bucket, "k") == "second", "the PUT replaced the object",
                    "second", "other");
        ctx.RequireOk(f.p->Put(f.bucket, "source", "third"), "PUT of a copy source");
        pb::CopyObjectRequest c = CopyRequest(f.bucket, "source", f.bucket, "k");
        c.mutable_preconditions()->set_if_match(bare(Md5Etag("second")));
        c.mutable_source_preconditions()->set_if_match(bare(Md5Etag("third")));
        ctx.RequireOk(f.p->Send(Method::kCopyObject, c),
                      "CopyObject If-Match the destination's ETag and the source's, both without "
                      "quotes");
        ctx.Require(Read(ctx, *f.p, f.bucket, "k") == "third", "the copy replaced the object",
                    "third", "other");
        ctx.RequireStillServes();
      });
  Add(r, "cond/9.10/5", "eight concurrent create-only PUTs of one key: exactly one wins",
      "conditional", {"AOBJ-OBJ-134"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        constexpr int kWriters = 8;
        std::vector<std::unique_ptr<Peer>> peers;
        for (int i = 0; i < kWriters; ++i) peers.push_back(ctx.Open());
        std::vector<RawReply> replies(kWriters);
        std::vector<std::thread> threads;
        for (int i = 0; i < kWriters; ++i) {
          threads.emplace_back([&, i] {
            PutSpec s;
            s.pre.set_if_none_match("*");
            replies[i] = PutWith(*peers[i], f.bucket, "race", Content(200000, 100 + i), s);
          });
        }
        for (auto& t : threads) t.join();
        int ok = 0, failed = 0, winner = -1;
        for (int i = 0; i < kWriters; ++i) {
          if (replies[i].grpc_status.ok()) ++ok, winner = i;
          else if (CodeOf(replies[i]) == ErrorCode::kPreconditionFailed) ++failed;
        }
        ctx.Require(ok == 1 && failed == kWriters - 1, "one success, seven PRECONDITION_FAILED",
                    "1 + 7", absl::StrCat(ok, " + ", failed));
        ctx.Require(Read(ctx, *f.p, f.bucket, "race") == Content(200000, 100 + winner),
                    "the key holds the winner's body", "winner's body", "other");
      });

  // ---- 9.14 CopyObject -------------------------------------------------------------------------
  Add(r, "copy/9.14/1", "CopyObject: content, ETag, new time, metadata copied or replaced", "copy",
      {"AOBJ-OBJ-150", "AOBJ-OBJ-153", "AOBJ-OBJ-158", "AOBJ-OBJ-122"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const std::string body = Content(300000, 71);
        PutSpec s;
        s.content_type = "text/x-source";
        s.meta = {{"k1", "v1"}};
        ctx.RequireOk(PutWith(*f.p, f.bucket, "src", body, s), "PUT of the source");
        const auto src = HeadOk(ctx, *f.p, f.bucket, "src").metadata();
        absl::SleepFor(absl::Milliseconds(20));
        pb::CopyObjectRequest c = CopyRequest(f.bucket, "src", f.bucket, "dst");
        ctx.RequireOk(f.p->Send(Method::kCopyObject, c), "CopyObject (COPY)");
        const auto dst = HeadOk(ctx, *f.p, f.bucket, "dst").metadata();
        ctx.Require(dst.etag() == Md5Etag(body) && dst.size() == body.size(), "ETag and size",
                    Md5Etag(body), dst.etag());
        ctx.Require(dst.content_type() == "text/x-source" && dst.user_metadata().count("k1") == 1,
                    "content type and metadata copied", "text/x-source, k1", dst.ShortDebugString());
        ctx.Require(dst.last_modified_ms() >= src.last_modified_ms(), "a new last_modified_ms",
                    absl::StrCat(">= ", src.last_modified_ms()), absl::StrCat(dst.last_modified_ms()));
        ctx.Require(Read(ctx, *f.p, f.bucket, "dst") == body, "the content", "equal", "differs");
        c.set_key("dst2");
        c.set_metadata_directive(pb::METADATA_DIRECTIVE_REPLACE);
        c.set_content_type("text/plain");
        (*c.mutable_user_metadata())["k2"] = "v2";
        ctx.RequireOk(f.p->Send(Method::kCopyObject, c), "CopyObject (REPLACE)");
        const auto d2 = HeadOk(ctx, *f.p, f.bucket, "dst2").metadata();
        ctx.Require(d2.content_type() == "text/plain" && d2.user_metadata().size() == 1 &&
                        d2.user_metadata().count("k2") == 1,
                    "REPLACE sets the new type and metadata as a whole", "text/plain, {k2}",
                    d2.ShortDebugString());
      });
  Add(r, "copy/9.14/2", "bad CopyObject requests: same key, unknown directive, fields without "
                        "REPLACE",
      "copy", {"AOBJ-OBJ-151", "AOBJ-OBJ-154", "AOBJ-OBJ-003"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "src", "source"), "PUT");
        pb::CopyObjectRequest c = CopyRequest(f.bucket, "src", f.bucket, "src");
        RawReply same = f.p->Send(Method::kCopyObject, c);
        ctx.RequireCode(same, ErrorCode::kInvalidRequest, "copy onto itself without REPLACE");
        c.set_metadata_directive(pb::METADATA_DIRECTIVE_REPLACE);
        ctx.RequireOk(f.p->Send(Method::kCopyObject, c), "copy onto itself with REPLACE");
        c.set_key("dst");
        c.set_metadata_directive(static_cast<pb::MetadataDirective>(7));
        ctx.RequireCode(f.p->Send(Method::kCopyObject, c), ErrorCode::kInvalidArgument, "directive 7");
        c.set_metadata_directive(pb::METADATA_DIRECTIVE_COPY);
        c.set_content_type("text/plain");
        ctx.RequireCode(f.p->Send(Method::kCopyObject, c), ErrorCode::kInvalidArgument,
                        "content_type with COPY");
        c.clear_content_type();
        c.set_source_key("missing");
        ctx.RequireCode(f.p->Send(Method::kCopyObject, c), ErrorCode::kNoSuchKey, "a missing source");
        ctx.RequireCode(f.p->Head(f.bucket, "dst"), ErrorCode::kNoSuchKey, "nothing created");
        ctx.RequireStillServes();
      });
  Add(r, "copy/9.14/7",
      "only the same bucket AND key is a copy onto itself: the same key in another bucket, or "
      "another key in the same bucket, copies without REPLACE",
      "copy", {"AOBJ-OBJ-151", "AOBJ-OBJ-150"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const std::string other = ctx.NewBucket(*f.p);
        ctx.RequireOk(f.p->Put(f.bucket, "k", "the source"), "PUT of the source");
        ctx.RequireOk(f.p->Send(Method::kCopyObject, CopyRequest(f.bucket, "k", other, "k")),
                      "copy to the same key in another bucket, without REPLACE");
        std::string got;
        ctx.RequireOk(f.p->Get(other, "k", &got), "GET of the copy");
        ctx.Require(got == "the source", "the copy holds the source's octets", "the source", got);
        ctx.RequireOk(f.p->Put(other, "k2", "second"), "PUT of a second source");
        ctx.RequireOk(f.p->Send(Method::kCopyObject, CopyRequest(other, "k2", f.bucket, "k2")),
                      "copy of another key to the same key name in the first bucket");
        ctx.RequireOk(f.p->Send(Method::kCopyObject, CopyRequest(f.bucket, "k", f.bucket, "k3")),
                      "copy to another key of the same bucket, without REPLACE");
        ctx.RequireOk(f.p->Get(f.bucket, "k3", &got), "GET of that copy");
        ctx.Require(got == "the source", "it holds the source's octets", "the source", got);
      });
  Add(r, "copy/9.14/3", "copy preconditions: source failures are PRECONDITION_FAILED; destination "
                        "as for PUT",
      "copy", {"AOBJ-OBJ-152", "AOBJ-OBJ-153"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "src", "source"), "PUT source");
        ctx.RequireOk(f.p->Put(f.bucket, "dst", "old"), "PUT destination");
        pb::CopyObjectRequest c = CopyRequest(f.bucket, "src", f.bucket, "dst");
        c.mutable_source_preconditions()->set_if_none_match(Md5Etag("source"));
        ctx.RequireCode(f.p->Send(Method::kCopyObject, c), ErrorCode::kPreconditionFailed,
                        "x-amz-copy-source-if-none-match the source ETag (not NOT_MODIFIED)");
        c.clear_source_preconditions();
        c.mutable_source_preconditions()->set_if_match("\"00000000000000000000000000000000\"");
        ctx.RequireCode(f.p->Send(Method::kCopyObject, c), ErrorCode::kPreconditionFailed,
                        "x-amz-copy-source-if-match another ETag");
        c.clear_source_preconditions();
        c.mutable_preconditions()->set_if_none_match("*");
        ctx.RequireCode(f.p->Send(Method::kCopyObject, c), ErrorCode::kPreconditionFailed,
                        "destination If-None-Match * on an existing key");
        ctx.Require(Read(ctx, *f.p, f.bucket, "dst") == "old", "the destination is unchanged", "old", "changed");
        c.mutable_preconditions()->Clear();
        c.mutable_preconditions()->set_if_modified_since_ms(1);
        ctx.RequireCode(f.p->Send(Method::kCopyObject, c), ErrorCode::kInvalidArgument,
                        "destination If-Modified-Since");
        ctx.RequireStillServes();
      });

  Add(r, "copy/9.14/4",
      "copy onto itself: INVALID_REQUEST with directive COPY as with none, allowed with REPLACE; "
      "a refused one changes nothing",
      "copy", {"AOBJ-OBJ-151"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        PutSpec s;
        s.content_type = "text/x-self";
        s.meta = {{"m", "1"}};
        ctx.RequireOk(PutWith(*f.p, f.bucket, "self", "itself", s), "PUT");
        const auto before = HeadOk(ctx, *f.p, f.bucket, "self").metadata();
        pb::CopyObjectRequest c = CopyRequest(f.bucket, "self", f.bucket, "self");
        for (pb::MetadataDirective d :
             {pb::METADATA_DIRECTIVE_UNSPECIFIED, pb::METADATA_DIRECTIVE_COPY}) {
          c.set_metadata_directive(d);
          ctx.RequireCode(
              f.p->Send(Method::kCopyObject, c), ErrorCode::kInvalidRequest,
              absl::StrCat("copy onto itself, directive ", pb::MetadataDirective_Name(d)));
        }
        const auto after = HeadOk(ctx, *f.p, f.bucket, "self").metadata();
        ctx.Require(
            after.last_modified_ms() == before.last_modified_ms() && after.etag() == before.etag(),
            "the refused copies changed nothing", before.ShortDebugString(),
            after.ShortDebugString());
        c.set_metadata_directive(pb::METADATA_DIRECTIVE_REPLACE);
        c.set_content_type("text/x-replaced");
        ctx.RequireOk(f.p->Send(Method::kCopyObject, c), "copy onto itself with REPLACE");
        const auto replaced = HeadOk(ctx, *f.p, f.bucket, "self").metadata();
        ctx.Require(replaced.content_type() == "text/x-replaced" &&
                        replaced.user_metadata().empty() && replaced.etag() == Md5Etag("itself"),
                    "REPLACE onto itself: new type, no metadata, the same content's ETag",
                    "text/x-replaced, {}, " + Md5Etag("itself"), replaced.ShortDebugString());
        ctx.Require(Read(ctx, *f.p, f.bucket, "self") == "itself", "the content", "itself",
                    "changed");
      });

  // ---- 14.6 bounds before authentication ----------------------------------------------------------
  Add(r, "sec/14.6/1",
      "a call without authentication is answered from its headers, before any message is sent",
      "core", {"AOBJ-SEC-017"}, true, [](CaseContext& ctx) {
        const HeadersOnly h = SendHeadersOnly(ctx, {}, absl::Seconds(5));
        ctx.Require(h.code == "MISSING_AUTHENTICATION",
                    "answered from the headers, without the message", "MISSING_AUTHENTICATION",
                    h.outcome);
        ctx.RequireStillServes();
      });
  Add(r, "sec/14.6/2",
      "a call that claims a known key and never sends its message is ended within 30 s",
      "core", {"AOBJ-SEC-018"}, true, [](CaseContext& ctx) {
        const std::vector<std::pair<std::string, std::string>> md = {
            {"aobj-access-key-id", ctx.target().access_key_id},
            {"aobj-timestamp", absl::StrCat(absl::ToUnixMillis(absl::Now()))},
            {"aobj-nonce", std::string(32, 'e')},
            {"aobj-session-id", std::string(32, 'e')},
            {"aobj-signature", std::string(64, 'e')}};
        const HeadersOnly h = SendHeadersOnly(ctx, md, absl::Seconds(40));
        ctx.Require(h.took <= absl::Seconds(31), "the call is ended within 30 s of its headers",
                    "<= 30 s", h.outcome);
        ctx.Require(h.code == "DEADLINE_EXCEEDED", "ended with DEADLINE_EXCEEDED",
                    "DEADLINE_EXCEEDED", h.outcome);
        ctx.RequireStillServes();
      });

  Add(r, "sec/14.6/3",
      "a connection whose client resets its streams as fast as it opens them is closed", "core",
      {"AOBJ-SEC-019"}, true, [](CaseContext& ctx) {
        // HTTP/2 Rapid Reset (CVE-2023-44487): each call claims a known key (so that the server
        // waits for its message) and is reset as soon as its HEADERS are out. A server that
        // never closes the connection keeps making calls for a client that pays a few octets.
        auto channel = MakeChannel(ctx.target().endpoint, ctx.target().tls, 8 << 20);
        ctx.Require(channel.ok(), "a control channel to the target", "a channel",
                    channel.ok() ? "" : channel.status().ToString());
        grpc::GenericStub stub(*channel);
        grpc::CompletionQueue cq;
        std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
        std::vector<std::unique_ptr<grpc::GenericClientAsyncReaderWriter>> calls;
        constexpr int kMaxResets = 4000;
        int resets = 0;
        bool closed = false;
        const absl::Time until = absl::Now() + absl::Seconds(20);
        while (resets < kMaxResets && absl::Now() < until && !closed) {
          auto call_ctx = std::make_unique<grpc::ClientContext>();
          call_ctx->AddMetadata("aobj-access-key-id", ctx.target().access_key_id);
          call_ctx->AddMetadata("aobj-timestamp", absl::StrCat(absl::ToUnixMillis(absl::Now())));
          call_ctx->AddMetadata("aobj-nonce", std::string(32, 'r'));
          call_ctx->AddMetadata("aobj-session-id", std::string(32, 'r'));
          call_ctx->AddMetadata("aobj-signature", std::string(64, 'r'));
          auto call = stub.PrepareCall(call_ctx.get(), "/aobj.v1.ObjectService/PutObject", &cq);
          call->StartCall(reinterpret_cast<void*>(1));
          void* tag = nullptr;
          bool ok = false;
          bool started = false;
          while (
              !started &&
              cq.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + std::chrono::seconds(5)) ==
                  grpc::CompletionQueue::GOT_EVENT) {
            started = tag == reinterpret_cast<void*>(1);
          }
          // The first connection is gone once a start fails or the channel left READY.
          if (resets > 0 &&
              (!started || !ok || (*channel)->GetState(false) != GRPC_CHANNEL_READY)) {
            closed = true;
            break;
          }
          call_ctx->TryCancel();  // RST_STREAM as soon as the HEADERS are out
          ++resets;
          contexts.push_back(std::move(call_ctx));
          calls.push_back(std::move(call));
        }
        Exchange e;
        e.peer = "raw";
        e.method = "PutObject x" + std::to_string(resets) + " (a known key's claim, reset at once)";
        e.outcome = closed ? "connection closed by the server" : "connection still open";
        ctx.Record(e);
        cq.Shutdown();
        void* tag = nullptr;
        bool ok = false;
        while (cq.Next(&tag, &ok)) {
        }
        ctx.Require(closed, "the connection is closed within 4000 reset streams", "closed",
                    absl::StrCat("still open after ", resets, " resets"));
        ctx.Note(absl::StrCat("closed after ", resets, " reset streams"));
        ctx.RequireStillServes();
      });

  // ---- 14.8 authorization ------------------------------------------------------------------------
  Add(r, "sec/14.8/1", "owner policy: another principal cannot read, write or list a bucket",
      "access", {"AOBJ-SEC-008", "AOBJ-SEC-009", "AOBJ-SEC-010", "AOBJ-OBJ-008"}, true,
      [](CaseContext& ctx) {
        RequireOwnerPolicy(ctx);
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "secret", "owner's data"), "the owner PUTs");
        auto q = ctx.Open(/*second=*/true);
        std::string out;
        ctx.RequireCode(q->Get(f.bucket, "secret", &out), ErrorCode::kAccessDenied, "GET by another principal");
        ctx.RequireCode(q->Head(f.bucket, "secret"), ErrorCode::kAccessDenied, "HEAD by another principal");
        ctx.RequireCode(q->Put(f.bucket, "planted", "x"), ErrorCode::kAccessDenied, "PUT by another principal");
        ctx.RequireCode(q->Delete(f.bucket, "secret"), ErrorCode::kAccessDenied, "DELETE by another principal");
        pb::ListObjectsV2Request l;
        l.set_bucket(f.bucket);
        ctx.RequireCode(q->Send(Method::kListObjectsV2, l), ErrorCode::kAccessDenied, "list by another principal");
        pb::CopyObjectRequest c;
        c.set_source_bucket(f.bucket);
        c.set_source_key("secret");
        const std::string theirs = ctx.NewBucket(*q);
        c.set_bucket(theirs);
        c.set_key("stolen");
        ctx.RequireCode(q->Send(Method::kCopyObject, c), ErrorCode::kAccessDenied,
                        "copy out of the bucket by another principal");
        RawReply lb = q->Send(Method::kListBuckets, pb::ListBucketsRequest());
        ctx.RequireOk(lb, "ListBuckets by another principal");
        auto lbr = Parse<pb::ListBucketsResponse>(ctx, lb, "ListBuckets");
        bool listed = false;
        for (const auto& b : lbr.buckets()) listed = listed || b.name() == f.bucket;
        ctx.Require(!listed, "ListBuckets does not show the owner's bucket", "absent", "listed");
        ctx.Require(Read(ctx, *f.p, f.bucket, "secret") == "owner's data", "the owner's object is intact",
                    "unchanged", "changed");
        ctx.RequireCode(f.p->Head(f.bucket, "planted"), ErrorCode::kNoSuchKey, "nothing planted");
        ctx.RequireCode(q->Head(ctx.Unique("no-such-bucket"), "k"), ErrorCode::kAccessDenied,
                        "a bucket that does not exist is refused like any other");
        ctx.RequireStillServes();
      });
  Add(r, "sec/14.8/2",
      "owner policy: CreateBucket of an existing bucket, by its owner or another principal, "
      "fails and changes no ownership",
      "access", {"AOBJ-SEC-009", "AOBJ-OBJ-006"}, true, [](CaseContext& ctx) {
        RequireOwnerPolicy(ctx);
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "mine", "owner's data"), "the owner PUTs");
        auto q = ctx.Open(/*second=*/true);
        for (int round = 0; round < 2; ++round) {
          ctx.RequireCode(f.p->CreateBucket(f.bucket), ErrorCode::kBucketAlreadyExists,
                          "CreateBucket of the bucket again by its owner");
          RawReply other = q->CreateBucket(f.bucket);
          ctx.Require(CodeOf(other) == ErrorCode::kBucketAlreadyExists ||
                          CodeOf(other) == ErrorCode::kAccessDenied,
                      "CreateBucket of the bucket by another principal fails",
                      "BUCKET_ALREADY_EXISTS or ACCESS_DENIED", Outcome(other));
        }
        ctx.RequireOk(f.p->Put(f.bucket, "after", "still mine"),
                      "the owner still writes to its bucket");
        ctx.Require(Read(ctx, *f.p, f.bucket, "mine") == "owner's data",
                    "the owner still reads its bucket", "owner's data", "other");
        std::string out;
        ctx.RequireCode(q->Get(f.bucket, "mine", &out), ErrorCode::kAccessDenied,
                        "the other principal still cannot read it");
        ctx.RequireCode(q->Put(f.bucket, "planted", "x"), ErrorCode::kAccessDenied,
                        "nor write to it");
        ctx.RequireStillServes();
      });
  // Gaps found by reading the cases against the spec (issue 17): the second paths of shared rules.
  Add(r, "cond/9.10/8",
      "entity-tag syntax on every field and method: 256 octets well formed, 257 and the malformed "
      "forms INVALID_ARGUMENT in If-None-Match, on GET, PUT, CopyObject and its source",
      "conditional", {"AOBJ-OBJ-131", "AOBJ-OBJ-153", "AOBJ-OBJ-152"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "c", "tagged"), "PUT");
        const std::string at = Quote(std::string(254, 'e')), over = Quote(std::string(255, 'e'));
        pb::Preconditions p;
        p.set_if_match(at);
        ctx.RequireCode(HeadWith(*f.p, f.bucket, "c", p), ErrorCode::kPreconditionFailed,
                        "HEAD If-Match a well-formed tag of 256 octets (no match)");
        p.set_if_match(over);
        ctx.RequireCode(HeadWith(*f.p, f.bucket, "c", p), ErrorCode::kInvalidArgument,
                        "HEAD If-Match a tag of 257 octets");
        p.Clear();
        p.set_if_none_match(at);
        ctx.RequireOk(HeadWith(*f.p, f.bucket, "c", p), "HEAD If-None-Match a tag of 256 octets");
        p.set_if_none_match(over);
        ctx.RequireCode(HeadWith(*f.p, f.bucket, "c", p), ErrorCode::kInvalidArgument,
                        "HEAD If-None-Match a tag of 257 octets");
        const std::vector<std::string> bad = {"\"a,b\"",     "a b",  "\"unterminated",
                                              "\"in\"ner\"", "\x01", "\"\""};
        auto m = f.p->Allocate(4096);
        for (const std::string& tag : bad) {
          p.Clear();
          p.set_if_none_match(tag);
          ctx.RequireCode(HeadWith(*f.p, f.bucket, "c", p), ErrorCode::kInvalidArgument,
                          absl::StrCat("HEAD If-None-Match ", tag));
          pb::GetObjectRequest g = f.p->GetRequest(f.bucket, "c", *m, 4096);
          g.mutable_preconditions()->set_if_match(tag);
          ctx.RequireCode(f.p->Send(Method::kGetObject, g), ErrorCode::kInvalidArgument,
                          absl::StrCat("GET If-Match ", tag));
          PutSpec put;
          put.pre.set_if_match(tag);
          ctx.RequireCode(PutWith(*f.p, f.bucket, "c", "overwritten", put),
                          ErrorCode::kInvalidArgument, absl::StrCat("PUT If-Match ", tag));
          pb::CopyObjectRequest c = CopyRequest(f.bucket, "c", f.bucket, "copy");
          c.mutable_source_preconditions()->set_if_match(tag);
          ctx.RequireCode(f.p->Send(Method::kCopyObject, c), ErrorCode::kInvalidArgument,
                          absl::StrCat("CopyObject source If-Match ", tag));
          c.clear_source_preconditions();
          c.mutable_preconditions()->set_if_match(tag);
          ctx.RequireCode(f.p->Send(Method::kCopyObject, c), ErrorCode::kInvalidArgument,
                          absl::StrCat("CopyObject destination If-Match ", tag));
        }
        ctx.Require(Read(ctx, *f.p, f.bucket, "c") == "tagged", "the object is unchanged", "tagged",
                    "changed");
        ctx.RequireCode(f.p->Head(f.bucket, "copy"), ErrorCode::kNoSuchKey, "nothing copied");
        ctx.RequireStillServes();
      });
  Add(r, "cond/9.10/9",
      "the refused write preconditions on every write: If-Unmodified-Since, and If-Match with "
      "If-None-Match, on PUT and CopyObject's destination: INVALID_ARGUMENT, nothing written",
      "conditional", {"AOBJ-OBJ-133", "AOBJ-OBJ-153"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "src", "source"), "PUT of a copy source");
        ctx.RequireOk(f.p->Put(f.bucket, "w", "kept"), "PUT of the key written to");
        std::vector<std::pair<std::string, pb::Preconditions>> refused;
        pb::Preconditions x;
        x.set_if_unmodified_since_ms(absl::ToUnixMillis(absl::Now()) + 3600000);
        refused.emplace_back("If-Unmodified-Since", x);
        x.Clear();
        x.set_if_match(Md5Etag("kept"));
        x.set_if_none_match("*");
        refused.emplace_back("If-Match and If-None-Match *", x);
        x.Clear();
        x.set_if_modified_since_ms(1);
        x.set_if_match(Md5Etag("kept"));
        refused.emplace_back("If-Match and If-Modified-Since", x);
        for (const auto& [what, pre] : refused) {
          PutSpec s;
          s.pre = pre;
          ctx.RequireCode(PutWith(*f.p, f.bucket, "w", "changed", s), ErrorCode::kInvalidArgument,
                          "PUT with " + what);
          pb::CopyObjectRequest c = CopyRequest(f.bucket, "src", f.bucket, "w");
          *c.mutable_preconditions() = pre;
          ctx.RequireCode(f.p->Send(Method::kCopyObject, c), ErrorCode::kInvalidArgument,
                          "CopyObject with destination " + what);
        }
        ctx.Require(Read(ctx, *f.p, f.bucket, "w") == "kept", "the key is unchanged", "kept",
                    "changed");
        ctx.RequireStillServes();
      });
  Add(r, "copy/9.14/6",
      "copy source preconditions, every kind: failing dates are PRECONDITION_FAILED (never "
      "NOT_MODIFIED), passing ones copy, a missing source is NO_SUCH_KEY whatever they say",
      "copy", {"AOBJ-OBJ-152", "AOBJ-OBJ-138"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "src", "source"), "PUT source");
        const auto md = HeadOk(ctx, *f.p, f.bucket, "src").metadata();
        const int64_t lm = md.last_modified_ms();
        struct Try {
          const char* what;
          std::function<void(pb::Preconditions*)> set;
          bool passes;
        };
        const std::string wrong = "\"00000000000000000000000000000000\"";
        const Try tries[] = {
            {"If-Modified-Since an hour later",
             [&](auto* p) { p->set_if_modified_since_ms(lm + 3600000); }, false},
            {"If-Modified-Since exactly last_modified_ms",
             [&](auto* p) { p->set_if_modified_since_ms(lm); }, false},
            {"If-Unmodified-Since an hour earlier",
             [&](auto* p) { p->set_if_unmodified_since_ms(lm - 3600000); }, false},
            {"If-None-Match *", [&](auto* p) { p->set_if_none_match("*"); }, false},
            {"If-Match the ETag", [&](auto* p) { p->set_if_match(md.etag()); }, true},
            {"If-Match *", [&](auto* p) { p->set_if_match("*"); }, true},
            {"If-None-Match another ETag", [&](auto* p) { p->set_if_none_match(wrong); }, true},
            {"If-Modified-Since an hour earlier",
             [&](auto* p) { p->set_if_modified_since_ms(lm - 3600000); }, true},
            {"If-Unmodified-Since exactly last_modified_ms",
             [&](auto* p) { p->set_if_unmodified_since_ms(lm); }, true},
        };
        int n = 0;
        for (const Try& t : tries) {
          const std::string key = absl::StrCat("dst", n++);
          pb::CopyObjectRequest c = CopyRequest(f.bucket, "src", f.bucket, key);
          t.set(c.mutable_source_preconditions());
          RawReply rr = f.p->Send(Method::kCopyObject, c);
          if (t.passes) {
            ctx.RequireOk(rr, std::string("CopyObject, source ") + t.what);
            ctx.Require(Read(ctx, *f.p, f.bucket, key) == "source", "the copy was made", "source",
                        "other");
          } else {
            ctx.RequireCode(rr, ErrorCode::kPreconditionFailed,
                            std::string("CopyObject, source ") + t.what);
            ctx.RequireCode(f.p->Head(f.bucket, key), ErrorCode::kNoSuchKey, "nothing copied");
          }
          c.set_source_key("no-such-source");
          ctx.RequireCode(f.p->Send(Method::kCopyObject, c), ErrorCode::kNoSuchKey,
                          std::string("CopyObject of a missing source, source ") + t.what);
        }
        ctx.RequireStillServes();
      });
  Add(r, "cond/9.10/10",
      "entity tags compared as the spec says: without quotes, bare tags match; If-Match strong "
      "and case-exact; a missing key on GET is NO_SUCH_KEY whatever the conditions; NOT_MODIFIED "
      "before an unsatisfiable range",
      "conditional", {"AOBJ-OBJ-130", "AOBJ-OBJ-131", "AOBJ-OBJ-137", "AOBJ-OBJ-138"}, false,
      [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "c", "compare me"), "PUT");
        const std::string etag = HeadOk(ctx, *f.p, f.bucket, "c").metadata().etag();
        const std::string bare = etag.substr(1, etag.size() - 2);
        std::string upper = bare;
        for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        pb::Preconditions p;
        p.set_if_match(bare);
        ctx.RequireOk(HeadWith(*f.p, f.bucket, "c", p), "If-Match the ETag without quotes");
        p.Clear();
        p.set_if_none_match(bare);
        ctx.RequireCode(HeadWith(*f.p, f.bucket, "c", p), ErrorCode::kNotModified,
                        "If-None-Match the ETag without quotes");
        if (upper != bare) {
          p.Clear();
          p.set_if_match(Quote(upper));
          ctx.RequireCode(HeadWith(*f.p, f.bucket, "c", p), ErrorCode::kPreconditionFailed,
                          "If-Match the ETag in upper case (opaque octets differ)");
        }
        auto m = f.p->Allocate(4096);
        for (const char* field :
             {"if_match", "if_none_match", "if_modified_since_ms", "if_unmodified_since_ms"}) {
          pb::GetObjectRequest g = f.p->GetRequest(f.bucket, "missing", *m, 4096);
          auto* pre = g.mutable_preconditions();
          const std::string f_name = field;
          if (f_name == "if_match") pre->set_if_match("*");
          if (f_name == "if_none_match") pre->set_if_none_match("*");
          if (f_name == "if_modified_since_ms") pre->set_if_modified_since_ms(1);
          if (f_name == "if_unmodified_since_ms") pre->set_if_unmodified_since_ms(1);
          ctx.RequireCode(f.p->Send(Method::kGetObject, g), ErrorCode::kNoSuchKey,
                          absl::StrCat("GET of a missing key with ", field));
        }
        pb::GetObjectRequest g = f.p->GetRequest(f.bucket, "c", *m, 4096);
        g.mutable_range()->set_kind(pb::ByteRange::KIND_FROM);
        g.mutable_range()->set_first(500);
        g.mutable_preconditions()->set_if_none_match(etag);
        ctx.RequireCode(f.p->Send(Method::kGetObject, g), ErrorCode::kNotModified,
                        "If-None-Match the ETag with a range past the end: NOT_MODIFIED first");
        g.mutable_preconditions()->Clear();
        g.mutable_preconditions()->set_if_modified_since_ms(absl::ToUnixMillis(absl::Now()) +
                                                            3600000);
        ctx.RequireCode(f.p->Send(Method::kGetObject, g), ErrorCode::kNotModified,
                        "If-Modified-Since an hour later with a range past the end");
      });
  Add(r, "obj/9.2/5",
      "limits count octets, not characters: keys, metadata and prefixes of multi-octet UTF-8 at "
      "the edge and one past it",
      "core", {"AOBJ-OBJ-002", "AOBJ-OBJ-121", "AOBJ-OBJ-105"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        std::string han;  // U+4E2D, three octets
        for (int i = 0; i < 341; ++i) han += "\xe4\xb8\xad";
        ctx.RequireOk(f.p->Put(f.bucket, han + "a", "x"),
                      "PUT of a key of 341 three-octet characters and 'a' (1024 octets)");
        ctx.RequireCode(f.p->Put(f.bucket, han + "ab", "x"), ErrorCode::kKeyTooLong,
                        "PUT of a key of 1025 octets (343 characters)");
        ctx.RequireCode(f.p->Put(f.bucket, han + "\xe4\xb8\xad", "x"), ErrorCode::kKeyTooLong,
                        "PUT of a key of 342 three-octet characters (1026 octets)");
        std::string e_acute;  // U+00E9, two octets
        for (int i = 0; i < 1023; ++i) e_acute += "\xc3\xa9";
        PutSpec at;
        at.meta = {{"m", e_acute + "z"}};  // 1 + 2046 + 1 = 2048 octets
        ctx.RequireOk(PutWith(*f.p, f.bucket, "meta-at", "x", at),
                      "PUT with metadata of 2048 octets (1025 characters)");
        PutSpec over;
        over.meta = {{"m", e_acute + "zz"}};  // 2049 octets
        ctx.RequireCode(PutWith(*f.p, f.bucket, "meta-over", "x", over),
                        ErrorCode::kMetadataTooLarge,
                        "PUT with metadata of 2049 octets (1026 characters)");
        ctx.RequireCode(f.p->Head(f.bucket, "meta-over"), ErrorCode::kNoSuchKey, "nothing stored");
        pb::ListObjectsV2Request l;
        l.set_bucket(f.bucket);
        l.set_prefix(han + "a");
        ctx.RequireOk(f.p->Send(Method::kListObjectsV2, l),
                      "a prefix of 1024 octets (342 characters)");
        l.set_prefix(han + "\xe4\xb8\xad");
        ctx.RequireCode(f.p->Send(Method::kListObjectsV2, l), ErrorCode::kInvalidArgument,
                        "a prefix of 1026 octets (342 characters)");
        ctx.RequireStillServes();
      });
  Add(r, "obj/9.2/6", "a key of 1025 octets on every request that names a key: KEY_TOO_LONG",
      "multipart", {"AOBJ-OBJ-002"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const std::string key(1025, 'k');
        ctx.RequireOk(f.p->Put(f.bucket, "src", "source"), "PUT of a copy source");
        std::string out;
        ctx.RequireCode(f.p->Get(f.bucket, key, &out), ErrorCode::kKeyTooLong, "GetObject");
        ctx.RequireCode(f.p->Head(f.bucket, key), ErrorCode::kKeyTooLong, "HeadObject");
        ctx.RequireCode(f.p->Delete(f.bucket, key), ErrorCode::kKeyTooLong, "DeleteObject");
        pb::CopyObjectRequest c = CopyRequest(f.bucket, key, f.bucket, "dst");
        ctx.RequireCode(f.p->Send(Method::kCopyObject, c), ErrorCode::kKeyTooLong,
                        "CopyObject source");
        c = CopyRequest(f.bucket, "src", f.bucket, key);
        ctx.RequireCode(f.p->Send(Method::kCopyObject, c), ErrorCode::kKeyTooLong,
                        "CopyObject destination");
        const std::string upload = "0123456789abcdef0123456789abcdef";
        pb::UploadPartRequest up;
        up.set_bucket(f.bucket);
        up.set_key(key);
        up.set_upload_id(upload);
        up.set_part_number(1);
        up.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        up.set_checksum(Crc32cOf(""));
        ctx.RequireCode(f.p->Send(Method::kUploadPart, up), ErrorCode::kKeyTooLong, "UploadPart");
        pb::CompleteMultipartUploadRequest cm;
        cm.set_bucket(f.bucket);
        cm.set_key(key);
        cm.set_upload_id(upload);
        auto* part = cm.add_parts();
        part->set_part_number(1);
        part->set_etag(Md5Etag(""));
        ctx.RequireCode(f.p->Send(Method::kCompleteMultipartUpload, cm), ErrorCode::kKeyTooLong,
                        "CompleteMultipartUpload");
        pb::AbortMultipartUploadRequest ab;
        ab.set_bucket(f.bucket);
        ab.set_key(key);
        ab.set_upload_id(upload);
        ctx.RequireCode(f.p->Send(Method::kAbortMultipartUpload, ab), ErrorCode::kKeyTooLong,
                        "AbortMultipartUpload");
        pb::ListPartsRequest lp;
        lp.set_bucket(f.bucket);
        lp.set_key(key);
        lp.set_upload_id(upload);
        ctx.RequireCode(f.p->Send(Method::kListParts, lp), ErrorCode::kKeyTooLong, "ListParts");
        ctx.RequireStillServes();
      });
  Add(r, "obj/9.2/7",
      "an invalid bucket name on every request that names a bucket: INVALID_BUCKET_NAME (or "
      "ACCESS_DENIED from a target that checks access first), never NO_SUCH_BUCKET",
      "core", {"AOBJ-OBJ-001", "AOBJ-OBJ-003", "AOBJ-SEC-008"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "src", "source"), "PUT of a copy source");
        const ErrorCode want = InvalidBucketCode(ctx);
        const std::string upload = "0123456789abcdef0123456789abcdef";
        for (const std::string bad : {"Bad_Name", "ab", "192.168.1.1"}) {
          const std::string q = absl::StrCat(" of bucket \"", bad, "\"");
          pb::HeadBucketRequest hb;
          hb.set_bucket(bad);
          ctx.RequireCode(f.p->Send(Method::kHeadBucket, hb), want, "HeadBucket" + q);
          pb::DeleteBucketRequest db;
          db.set_bucket(bad);
          ctx.RequireCode(f.p->Send(Method::kDeleteBucket, db), want, "DeleteBucket" + q);
          ctx.RequireCode(f.p->Put(bad, "k", "x"), want, "PutObject" + q);
          std::string out;
          ctx.RequireCode(f.p->Get(bad, "k", &out), want, "GetObject" + q);
          ctx.RequireCode(f.p->Delete(bad, "k"), want, "DeleteObject" + q);
          pb::ListObjectsV2Request l;
          l.set_bucket(bad);
          ctx.RequireCode(f.p->Send(Method::kListObjectsV2, l), want, "ListObjectsV2" + q);
          pb::DeleteObjectsRequest d;
          d.set_bucket(bad);
          d.add_keys("k");
          ctx.RequireCode(f.p->Send(Method::kDeleteObjects, d), want, "DeleteObjects" + q);
          ctx.RequireCode(f.p->Send(Method::kCopyObject, CopyRequest(bad, "src", f.bucket, "dst")),
                          want, "CopyObject from" + q);
          ctx.RequireCode(f.p->Send(Method::kCopyObject, CopyRequest(f.bucket, "src", bad, "dst")),
                          want, "CopyObject into" + q);
          pb::CreateMultipartUploadRequest cu;
          cu.set_bucket(bad);
          cu.set_key("k");
          ctx.RequireCode(f.p->Send(Method::kCreateMultipartUpload, cu), want,
                          "CreateMultipartUpload" + q);
          pb::ListMultipartUploadsRequest lu;
          lu.set_bucket(bad);
          ctx.RequireCode(f.p->Send(Method::kListMultipartUploads, lu), want,
                          "ListMultipartUploads" + q);
          pb::ListPartsRequest lp;
          lp.set_bucket(bad);
          lp.set_key("k");
          lp.set_upload_id(upload);
          ctx.RequireCode(f.p->Send(Method::kListParts, lp), want, "ListParts" + q);
          pb::AbortMultipartUploadRequest ab;
          ab.set_bucket(bad);
          ab.set_key("k");
          ab.set_upload_id(upload);
          ctx.RequireCode(f.p->Send(Method::kAbortMultipartUpload, ab), want,
                          "AbortMultipartUpload" + q);
        }
        ctx.RequireCode(f.p->Head(f.bucket, "dst"), ErrorCode::kNoSuchKey, "nothing copied");
        ctx.RequireStillServes();
      });
  Add(r, "sec/14.8/3",
      "owner policy on every other request: DeleteObjects, HeadBucket, DeleteBucket, each "
      "multipart request, and a copy into the owner's bucket: ACCESS_DENIED, nothing changed",
      "access", {"AOBJ-SEC-008", "AOBJ-SEC-009"}, true, [](CaseContext& ctx) {
        RequireOwnerPolicy(ctx);
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "k", "owner's data"), "the owner PUTs");
        pb::CreateMultipartUploadRequest cu;
        cu.set_bucket(f.bucket);
        cu.set_key("upload");
        RawReply cur = f.p->Send(Method::kCreateMultipartUpload, cu);
        ctx.RequireOk(cur, "the owner starts an upload");
        const std::string id =
            Parse<pb::CreateMultipartUploadResponse>(ctx, cur, "Create").upload_id();
        auto q = ctx.Open(/*second=*/true);
        const ErrorCode denied = ErrorCode::kAccessDenied;
        pb::DeleteObjectsRequest d;
        d.set_bucket(f.bucket);
        d.add_keys("k");
        ctx.RequireCode(q->Send(Method::kDeleteObjects, d), denied,
                        "DeleteObjects (the whole request)");
        pb::HeadBucketRequest hb;
        hb.set_bucket(f.bucket);
        ctx.RequireCode(q->Send(Method::kHeadBucket, hb), denied, "HeadBucket");
        pb::DeleteBucketRequest db;
        db.set_bucket(f.bucket);
        ctx.RequireCode(q->Send(Method::kDeleteBucket, db), denied, "DeleteBucket");
        ctx.RequireCode(q->Send(Method::kCreateMultipartUpload, cu), denied,
                        "CreateMultipartUpload");
        pb::UploadPartRequest up;
        up.set_bucket(f.bucket);
        up.set_key("upload");
        up.set_upload_id(id);
        up.set_part_number(1);
        up.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        up.set_checksum(Crc32cOf(""));
        ctx.RequireCode(q->Send(Method::kUploadPart, up), denied,
                        "UploadPart to the owner's upload");
        pb::ListPartsRequest lp;
        lp.set_bucket(f.bucket);
        lp.set_key("upload");
        lp.set_upload_id(id);
        ctx.RequireCode(q->Send(Method::kListParts, lp), denied, "ListParts");
        pb::ListMultipartUploadsRequest lu;
        lu.set_bucket(f.bucket);
        ctx.RequireCode(q->Send(Method::kListMultipartUploads, lu), denied, "ListMultipartUploads");
        pb::CompleteMultipartUploadRequest cm;
        cm.set_bucket(f.bucket);
        cm.set_key("upload");
        cm.set_upload_id(id);
        auto* part = cm.add_parts();
        part->set_part_number(1);
        part->set_etag(Md5Etag(""));
        ctx.RequireCode(q->Send(Method::kCompleteMultipartUpload, cm), denied,
                        "CompleteMultipartUpload");
        pb::AbortMultipartUploadRequest ab;
        ab.set_bucket(f.bucket);
        ab.set_key("upload");
        ab.set_upload_id(id);
        ctx.RequireCode(q->Send(Method::kAbortMultipartUpload, ab), denied, "AbortMultipartUpload");
        const std::string theirs = ctx.NewBucket(*q);
        ctx.RequireOk(q->Put(theirs, "planted", "intruder's data"),
                      "the other principal PUTs in its own bucket");
        pb::CopyObjectRequest c = CopyRequest(theirs, "planted", f.bucket, "k");
        ctx.RequireCode(q->Send(Method::kCopyObject, c), denied,
                        "a copy from the intruder's bucket into the owner's");
        ctx.Require(Read(ctx, *f.p, f.bucket, "k") == "owner's data",
                    "the owner's object is intact", "owner's data", "changed");
        pb::ListPartsRequest own = lp;
        ctx.RequireOk(f.p->Send(Method::kListParts, own), "the owner's upload is intact");
        ctx.RequireOk(f.p->Send(Method::kHeadBucket, hb), "the owner's bucket exists");
        ctx.RequireStillServes();
      });
}

}  // namespace aobj::conformance
