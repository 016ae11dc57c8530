// Cases for spec section 9.15 (multipart upload) and section 10 (flow control).
#include <atomic>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "conformance/src/cases_util.h"
#include "wire/etag.h"

namespace aobj::conformance {
namespace {

struct Upload {
  std::unique_ptr<Peer> p;
  std::string bucket, key, id;
};

Upload Create(CaseContext& ctx, const std::string& key = "mpu-object",
              const std::string& content_type = "", bool fresh_bucket = true,
              Upload* reuse = nullptr) {
  Upload u;
  if (reuse != nullptr) {
    u.bucket = reuse->bucket;
    u.p = ctx.Open();
  } else {
    u.p = ctx.Open();
    u.bucket = ctx.NewBucket(*u.p);
  }
  u.key = key;
  pb::CreateMultipartUploadRequest c;
  c.set_bucket(u.bucket);
  c.set_key(key);
  c.set_content_type(content_type);
  (*c.mutable_user_metadata())["origin"] = "conformance";
  RawReply rr = u.p->Send(Method::kCreateMultipartUpload, c);
  ctx.RequireOk(rr, "CreateMultipartUpload");
  auto resp = Parse<pb::CreateMultipartUploadResponse>(ctx, rr, "CreateMultipartUpload");
  u.id = resp.upload_id();
  return u;
}

// An upload of `key` in a new bucket, from a session that offered `capability` on top of the
// defaults (the case is UNSUPPORTED when the server does not negotiate it).
Upload CreateWithCapability(CaseContext& ctx, uint32_t capability, const std::string& name,
                            const std::string& key) {
  Upload u;
  u.p = ctx.NewPeer();
  pb::OpenSessionRequest o = u.p->DefaultOpen();
  o.add_capabilities(capability);
  ctx.RequireOk(u.p->Open(o), "OpenSession offering " + name);
  RequireCapability(ctx, *u.p, capability, name.c_str());
  u.bucket = ctx.NewBucket(*u.p);
  u.key = key;
  pb::CreateMultipartUploadRequest c;
  c.set_bucket(u.bucket);
  c.set_key(u.key);
  RawReply cr = u.p->Send(Method::kCreateMultipartUpload, c);
  ctx.RequireOk(cr, "CreateMultipartUpload");
  u.id = Parse<pb::CreateMultipartUploadResponse>(ctx, cr, "Create").upload_id();
  return u;
}

pb::UploadPartRequest PartRequest(const Upload& u, uint32_t number, const RegisteredMemory& m,
                                  const std::string& body) {
  std::memcpy(m.data(), body.data(), body.size());
  pb::UploadPartRequest req;
  req.set_bucket(u.bucket);
  req.set_key(u.key);
  req.set_upload_id(u.id);
  req.set_part_number(number);
  req.set_size(body.size());
  req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
  req.set_checksum(Crc32cOf(body));
  if (!body.empty()) *req.add_source() = Peer::Descriptor(m, 0, body.size());
  return req;
}

RawReply Part(Upload& u, uint32_t number, const std::string& body) {
  auto m = u.p->Allocate(std::max<size_t>(body.size(), 1));
  return u.p->Send(Method::kUploadPart, PartRequest(u, number, *m, body));
}

pb::CompleteMultipartUploadRequest CompleteRequest(const Upload& u) {
  pb::CompleteMultipartUploadRequest c;
  c.set_bucket(u.bucket);
  c.set_key(u.key);
  c.set_upload_id(u.id);
  return c;
}

void AddPart(pb::CompleteMultipartUploadRequest& c, uint32_t n, const std::string& etag) {
  auto* p = c.add_parts();
  p->set_part_number(n);
  p->set_etag(etag);
}

RawReply Abort(Upload& u, const std::string& id) {
  pb::AbortMultipartUploadRequest a;
  a.set_bucket(u.bucket);
  a.set_key(u.key);
  a.set_upload_id(id);
  return u.p->Send(Method::kAbortMultipartUpload, a);
}

RawReply ListParts(Upload& u, uint32_t marker, uint32_t max) {
  pb::ListPartsRequest l;
  l.set_bucket(u.bucket);
  l.set_key(u.key);
  l.set_upload_id(u.id);
  l.set_part_number_marker(marker);
  l.set_max_parts(max);
  return u.p->Send(Method::kListParts, l);
}

constexpr size_t kBigPart = 5u << 20;  // S3's minimum part size: allowed by every server

// Requires `got` (the metadata a reply carried) to describe the object exactly as `head` (a HEAD
// of it right after) does, field by field (AOBJ-OBJ-012, AOBJ-OBJ-122).
void RequireSameMetadata(CaseContext& ctx, const pb::ObjectMetadata& got,
                         const pb::ObjectMetadata& head, const std::string& what) {
  auto fields = [](const pb::ObjectMetadata& m) {
    std::map<std::string, std::string> meta(m.user_metadata().begin(), m.user_metadata().end());
    std::string out = absl::StrCat("size ", m.size(), ", etag ", m.etag(), ", last_modified_ms ",
                                   m.last_modified_ms(), ", content_type '", m.content_type(),
                                   "', ", pb::ChecksumAlgorithm_Name(m.checksum_algorithm()), " ",
                                   HexEncode(m.checksum()), ", metadata {");
    for (const auto& [k, v] : meta) absl::StrAppend(&out, k, "=", v, ";");
    return out + "}";
  };
  ctx.Require(fields(got) == fields(head),
              what + ": the metadata describes the object as HEAD does", fields(head), fields(got));
}

pb::ObjectMetadata HeadMetadata(CaseContext& ctx, Peer& p, const std::string& bucket,
                                const std::string& key) {
  pb::HeadObjectResponse h;
  ctx.RequireOk(p.Head(bucket, key, &h), "HEAD " + key);
  return h.metadata();
}

// The credits (field 15, AOBJ-FLO-008) of a successful reply of each kind of data request the
// suite can always send, in a session that asked for a max_in_flight of `limit`: PutObject and
// GetObject by RMA, GetObject inline when INLINE was negotiated, UploadPart. Each entry names the
// request.
std::vector<std::pair<std::string, uint32_t>> DataReplyGrants(CaseContext& ctx, uint32_t limit) {
  Upload u = Create(ctx, "granted");
  u.p = ctx.NewPeer();  // the same principal, in a session with the limit asked for
  pb::OpenSessionRequest o = u.p->DefaultOpen();
  o.mutable_requested_limits()->set_max_in_flight(limit);
  ctx.RequireOk(u.p->Open(o), absl::StrCat("OpenSession with max_in_flight ", limit));
  std::vector<std::pair<std::string, uint32_t>> grants;
  const std::string body = Content(70000, 31);
  RawReply put = u.p->Put(u.bucket, "granted-object", body);
  ctx.RequireOk(put, "PutObject by RMA");
  grants.emplace_back("PutObject", Parse<pb::PutObjectResponse>(ctx, put, "PutObject").credits());
  std::string back;
  pb::GetObjectResponse g;
  ctx.RequireOk(u.p->Get(u.bucket, "granted-object", &back, &g), "GetObject by RMA");
  grants.emplace_back("GetObject", g.credits());
  if (u.p->Negotiated(kCapInline)) {
    ctx.RequireOk(u.p->Put(u.bucket, "small", "tiny"), "PutObject of 4 octets");
    auto m = u.p->Allocate(4);
    pb::GetObjectRequest inl = u.p->GetRequest(u.bucket, "small", *m, 4);
    inl.set_accept_inline(true);
    RawReply ir = u.p->Send(Method::kGetObject, inl);
    ctx.RequireOk(ir, "GetObject accepting an inline body");
    grants.emplace_back("GetObject (inline accepted)",
                        Parse<pb::GetObjectResponse>(ctx, ir, "GetObject").credits());
  }
  RawReply part = Part(u, 1, body);
  ctx.RequireOk(part, "UploadPart by RMA");
  grants.emplace_back("UploadPart",
                      Parse<pb::UploadPartResponse>(ctx, part, "UploadPart").credits());
  return grants;
}

// Holds two data requests of `stalled`'s session in flight: `send(q, i)` runs for i = 0 and 1,
// each on its own thread with a Peer `q` naming that session, and waits on the worker nobody
// progresses until the target's RMA bound (AOBJ-OPS-008). Once both are admitted, `probe` runs
// and the time it took is returned. The case is UNSUPPORTED when the bound is under 1 s, or when
// both held requests succeeded (the target's RMA did not need the client's progress); a held
// request refused TOO_MANY_TRANSFERS fails it. `what` names the held requests in messages.
absl::Duration WhileTwoAreHeld(CaseContext& ctx, Peer& stalled, const char* what,
                               const std::function<RawReply(Peer&, int)>& send,
                               const std::function<void()>& probe) {
  const uint32_t bound_ms = stalled.session().limits().data_wait_ms();
  if (bound_ms != 0 && bound_ms < 1000) {
    ctx.Unsupported(absl::StrCat("the target's RMA bound is ", bound_ms, " ms; holding two ", what,
                                 "s needs 1 s"));
  }
  std::vector<RawReply> held(2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      Peer q(ctx, absl::StrCat("H.", i), ctx.target().access_key_id, ctx.target().secret);
      q.set_session_hex(stalled.session_hex());
      held[i] = send(q, i);
      q.set_session_hex("");  // the session is the stalled peer's: q must not close it
    });
  }
  // Both are admitted and waiting on the stalled worker well before the bound passes.
  absl::SleepFor(absl::Milliseconds(bound_ms == 0 ? 500 : std::min<uint32_t>(500, bound_ms / 3)));
  const absl::Time start = absl::Now();
  probe();
  const absl::Duration took = absl::Now() - start;
  for (auto& t : threads) t.join();
  if (held[0].status.ok() && held[1].status.ok()) {
    ctx.Unsupported(
        absl::StrCat("the target's RMA did not need the client's progress "
                     "(HARDWARE): no ",
                     what, " could be held in flight"));
  }
  for (int i = 0; i < 2; ++i) {
    ctx.Require(CodeOf(held[i]) != ErrorCode::kTooManyTransfers,
                absl::StrCat("held ", what, " ", i + 1, " of 2 was admitted"),
                "admitted (it then fails with the stalled channel)", Outcome(held[i]));
  }
  ctx.Require(took < absl::Milliseconds(bound_ms == 0 ? 5000 : bound_ms),
              "refused at once, not after the held ones ended", "before the RMA bound passes",
              absl::FormatDuration(took));
  return took;
}

}  // namespace

void RegisterMultipartCases(Registry& r) {
  Add(r, "mpu/9.15.1/1", "CreateMultipartUpload: names checked, ID format, invisible until "
                         "complete",
      "multipart", {"AOBJ-OBJ-200", "AOBJ-OBJ-203", "AOBJ-OBJ-204"}, true, [](CaseContext& ctx) {
        Upload u = Create(ctx, "pending", "text/plain");
        ctx.Require(!u.id.empty() && u.id.size() <= 128 &&
                        u.id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") ==
                            std::string::npos,
                    "upload ID: 1 to 128 of [A-Za-z0-9-_.]", "such an ID", u.id);
        ctx.RequireOk(Part(u, 1, Content(1000, 1)), "UploadPart 1");
        ctx.RequireCode(u.p->Head(u.bucket, "pending"), ErrorCode::kNoSuchKey, "HEAD before Complete");
        pb::ListObjectsV2Request l;
        l.set_bucket(u.bucket);
        RawReply lr = u.p->Send(Method::kListObjectsV2, l);
        ctx.RequireOk(lr, "ListObjectsV2");
        ctx.Require(Parse<pb::ListObjectsV2Response>(ctx, lr, "list").objects().empty(),
                    "the listing does not show the upload", "no objects", "objects listed");
        pb::CreateMultipartUploadRequest bad;
        bad.set_bucket(u.bucket);
        bad.set_key(std::string(1025, 'k'));
        ctx.RequireCode(u.p->Send(Method::kCreateMultipartUpload, bad), ErrorCode::kKeyTooLong,
                        "a key of 1025 octets");
        bad.set_key("");
        ctx.RequireCode(u.p->Send(Method::kCreateMultipartUpload, bad), ErrorCode::kInvalidArgument,
                        "an empty key");
        bad.set_key("k");
        bad.set_bucket(ctx.Unique("no-such-bucket"));
        ctx.RequireCode(u.p->Send(Method::kCreateMultipartUpload, bad), MissingBucketCode(ctx),
                        "a missing bucket");
        bad.set_bucket("Bad_Bucket");
        ctx.RequireCode(u.p->Send(Method::kCreateMultipartUpload, bad), InvalidBucketCode(ctx),
                        "an invalid bucket name");
        bad.set_bucket(u.bucket);
        (*bad.mutable_user_metadata())["big"] = std::string(3000, 'v');
        ctx.RequireCode(u.p->Send(Method::kCreateMultipartUpload, bad), ErrorCode::kMetadataTooLarge,
                        "3000 octets of metadata");
        ctx.RequireStillServes();
      });
  Add(r, "mpu/9.15.1/2", "upload IDs of other keys, forged or ended: NO_SUCH_UPLOAD", "multipart",
      {"AOBJ-OBJ-201", "AOBJ-OBJ-203", "AOBJ-OBJ-220"}, true, [](CaseContext& ctx) {
        Upload u = Create(ctx, "one");
        Upload other = Create(ctx, "two", "", true, &u);
        Upload wrong;
        wrong.p = ctx.Open();
        wrong.bucket = u.bucket;
        wrong.key = u.key;
        wrong.id = other.id;  // the upload of key "two" named with key "one"
        ctx.RequireCode(Part(wrong, 1, "x"), ErrorCode::kNoSuchUpload, "UploadPart with another key's upload ID");
        wrong.id = "forged-" + HexEncode(RandomBytes(8));
        ctx.RequireCode(Part(wrong, 1, "x"), ErrorCode::kNoSuchUpload, "a forged upload ID");
        wrong.id = std::string(300, 'a');
        ctx.RequireCode(Part(wrong, 1, "x"), ErrorCode::kNoSuchUpload, "an upload ID of 300 octets");
        wrong.id = std::string("\x01\x02", 2);
        ctx.RequireCode(Part(wrong, 1, "x"), ErrorCode::kNoSuchUpload, "an upload ID of control characters");
        ctx.RequireOk(Abort(u, u.id), "AbortMultipartUpload");
        ctx.RequireCode(Part(u, 1, "x"), ErrorCode::kNoSuchUpload, "UploadPart after Abort");
        ctx.RequireCode(Abort(u, u.id), ErrorCode::kNoSuchUpload, "Abort again");
        ctx.RequireCode(ListParts(u, 0, 0), ErrorCode::kNoSuchUpload, "ListParts after Abort");
        ctx.RequireOk(Part(other, 1, "still fine"), "the other upload is untouched");
        ctx.RequireStillServes();
      });
  Add(r, "mpu/9.15.1/3",
      "DeleteBucket with an upload in progress: BUCKET_NOT_EMPTY, the upload intact; after Abort "
      "the bucket deletes and a bucket of the same name starts with no uploads",
      "multipart", {"AOBJ-OBJ-232", "AOBJ-OBJ-006"}, false, [](CaseContext& ctx) {
        Upload u = Create(ctx, "kept");
        ctx.RequireOk(Part(u, 1, "part one"), "UploadPart");
        pb::DeleteBucketRequest d;
        d.set_bucket(u.bucket);
        ctx.RequireCode(u.p->Send(Method::kDeleteBucket, d), ErrorCode::kBucketNotEmpty,
                        "DeleteBucket of a bucket whose only content is an upload in progress");
        ctx.RequireOk(ListParts(u, 0, 0), "ListParts: the upload is intact");
        ctx.RequireOk(Abort(u, u.id), "AbortMultipartUpload");
        ctx.RequireOk(u.p->Send(Method::kDeleteBucket, d), "DeleteBucket after the Abort");
        ctx.RequireOk(u.p->CreateBucket(u.bucket), "CreateBucket of the same name");
        pb::ListMultipartUploadsRequest l;
        l.set_bucket(u.bucket);
        RawReply lr = u.p->Send(Method::kListMultipartUploads, l);
        ctx.RequireOk(lr, "ListMultipartUploads of the new bucket");
        ctx.Require(Parse<pb::ListMultipartUploadsResponse>(ctx, lr, "ListMultipartUploads")
                            .uploads_size() == 0,
                    "the new bucket has no uploads", "0", "the old upload is back");
        ctx.RequireCode(Part(u, 2, "x"), ErrorCode::kNoSuchUpload,
                        "UploadPart to the old upload ID in the new bucket");
      });
  Add(r, "mpu/9.15.2/1", "part numbers 0 and 10001: INVALID_ARGUMENT and TOO_MANY_PARTS",
      "multipart", {"AOBJ-OBJ-205"}, true, [](CaseContext& ctx) {
        Upload u = Create(ctx);
        ctx.RequireCode(Part(u, 0, "x"), ErrorCode::kInvalidArgument, "part number 0");
        ctx.RequireCode(Part(u, 10001, "x"), ErrorCode::kTooManyParts, "part number 10001");
        ctx.RequireOk(Part(u, 10000, "x"), "part number 10000");
        ctx.RequireStillServes();
      });
  Add(r, "mpu/9.15.2/2", "UploadPart: the body rules of PUT, the reply of PUT, the part's MD5 ETag",
      "multipart",
      {"AOBJ-OBJ-206", "AOBJ-DAT-150", "AOBJ-DAT-151", "AOBJ-OBJ-207", "AOBJ-OBJ-208"}, true,
      [](CaseContext& ctx) {
        Upload u = Create(ctx);
        const std::string body = Content(300000, 3);
        RawReply pr = Part(u, 1, body);
        ctx.RequireOk(pr, "UploadPart by RMA");
        auto resp = Parse<pb::UploadPartResponse>(ctx, pr, "UploadPart");
        ctx.Require(resp.bytes_transferred() == body.size() && resp.path() == pb::TRANSFER_PATH_RMA &&
                        resp.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C &&
                        resp.checksum() == Crc32cOf(body),
                    "bytes_transferred, path, checksum", absl::StrCat(body.size(), " RMA ", Hex(Crc32cOf(body))),
                    resp.ShortDebugString());
        ctx.Require(resp.etag() == Md5Etag(body), "ETag is the quoted MD5", Md5Etag(body), resp.etag());
        // A bad checksum: BAD_DIGEST and part 1 is unchanged.
        auto m = u.p->Allocate(1000);
        pb::UploadPartRequest bad = PartRequest(u, 1, *m, Content(1000, 4));
        std::string sum = bad.checksum();
        sum[0] = static_cast<char>(sum[0] ^ 0x80);
        bad.set_checksum(sum);
        ctx.RequireCode(u.p->Send(Method::kUploadPart, bad), ErrorCode::kBadDigest, "UploadPart with a bad checksum");
        pb::UploadPartRequest short_window = PartRequest(u, 2, *m, Content(1000, 4));
        short_window.mutable_source(0)->set_length(999);
        ctx.RequireCode(u.p->Send(Method::kUploadPart, short_window), ErrorCode::kDescriptorTooSmall,
                        "UploadPart from a window one octet short");
        pb::UploadPartRequest garbage = PartRequest(u, 2, *m, Content(1000, 4));
        garbage.mutable_source(0)->set_rkey(Content(m->packed_rkey().size(), 99));
        ctx.RequireCode(u.p->Send(Method::kUploadPart, garbage), ErrorCode::kInvalidRkey,
                        "UploadPart with a garbage rkey");
        RawReply lp = ListParts(u, 0, 0);
        ctx.RequireOk(lp, "ListParts");
        auto parts = Parse<pb::ListPartsResponse>(ctx, lp, "ListParts");
        ctx.Require(parts.parts_size() == 1 && parts.parts(0).etag() == Md5Etag(body),
                    "part 1 is unchanged by the failures; part 2 does not exist", "one part, the first body",
                    parts.ShortDebugString());
        const std::string body2 = Content(2000, 5);
        ctx.RequireOk(Part(u, 1, body2), "UploadPart 1 again");
        lp = ListParts(u, 0, 0);
        parts = Parse<pb::ListPartsResponse>(ctx, lp, "ListParts");
        ctx.Require(parts.parts_size() == 1 && parts.parts(0).etag() == Md5Etag(body2) &&
                        parts.parts(0).size() == body2.size(),
                    "the second upload of part 1 replaced it", Md5Etag(body2), parts.ShortDebugString());
        ctx.RequireStillServes();
      });
  Add(r, "mpu/9.15.3/1", "Complete: the concatenation, the multipart ETag, metadata of Create, "
                         "whole-object checksum; the upload ends",
      "multipart",
      {"AOBJ-OBJ-216", "AOBJ-OBJ-217", "AOBJ-DAT-152", "AOBJ-OBJ-219", "AOBJ-OBJ-218",
       "AOBJ-OBJ-212"},
      false, [](CaseContext& ctx) {
        Upload u = Create(ctx, "assembled", "application/x-assembled");
        const std::string p1 = Content(kBigPart, 6), p2 = Content(kBigPart, 7), p3 = Content(12345, 8);
        std::string e1, e2, e3;
        for (auto [n, body, etag] : {std::tuple<int, const std::string*, std::string*>{1, &p1, &e1},
                                     {2, &p2, &e2}, {3, &p3, &e3}}) {
          RawReply rr = Part(u, n, *body);
          ctx.RequireOk(rr, absl::StrCat("UploadPart ", n));
          *etag = Parse<pb::UploadPartResponse>(ctx, rr, "UploadPart").etag();
        }
        pb::CompleteMultipartUploadRequest c = CompleteRequest(u);
        AddPart(c, 1, e1);
        // ETags compare without quotes and regardless of hex case.
        std::string bare2 = e2.substr(1, e2.size() - 2);
        for (auto& ch : bare2) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        AddPart(c, 2, bare2);
        AddPart(c, 3, e3);
        RawReply cr = u.p->Send(Method::kCompleteMultipartUpload, c);
        ctx.RequireOk(cr, "CompleteMultipartUpload (part 2's ETag unquoted, upper-case)");
        auto md = Parse<pb::CompleteMultipartUploadResponse>(ctx, cr, "Complete").metadata();
        const std::string all = p1 + p2 + p3;
        const std::string want_etag =
            Quote(absl::StrCat(HexEncode(Md5Raw(Md5Raw(p1) + Md5Raw(p2) + Md5Raw(p3))), "-3"));
        ctx.Require(md.etag() == want_etag, "ETag: MD5 of the part MD5s, -3", want_etag, md.etag());
        ctx.Require(md.size() == all.size(), "size", absl::StrCat(all.size()), absl::StrCat(md.size()));
        ctx.Require(md.content_type() == "application/x-assembled" &&
                        md.user_metadata().count("origin") == 1,
                    "content type and metadata of Create", "application/x-assembled, origin",
                    md.ShortDebugString());
        ctx.Require(md.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C
                        ? md.checksum() == Crc32cOf(all)
                        : md.checksum() == Crc64Of(all),
                    "checksum over the whole object", Hex(Crc32cOf(all)), Hex(md.checksum()));
        std::string back;
        ctx.RequireOk(u.p->Get(u.bucket, "assembled", &back, nullptr, all.size()), "GET");
        ctx.Require(back == all, "content is the concatenation", "equal", "differs");
        ctx.RequireCode(ListParts(u, 0, 0), ErrorCode::kNoSuchUpload, "the upload no longer exists");
        ctx.RequireCode(u.p->Send(Method::kCompleteMultipartUpload, c), ErrorCode::kNoSuchUpload,
                        "Complete again");
      });
  Add(r, "mpu/9.15.3/2", "bad part lists: empty, too long, unordered, unknown part, wrong ETag, "
                         "small part",
      "multipart",
      {"AOBJ-OBJ-210", "AOBJ-OBJ-211", "AOBJ-OBJ-212", "AOBJ-OBJ-213", "AOBJ-OBJ-218",
       "AOBJ-ERR-120"},
      true, [](CaseContext& ctx) {
        Upload u = Create(ctx, "bad-lists");
        const std::string small = Content(100, 9), last = Content(50, 10);
        RawReply r1 = Part(u, 1, small);
        RawReply r2 = Part(u, 2, last);
        ctx.RequireOk(r1, "UploadPart 1 (100 octets)");
        ctx.RequireOk(r2, "UploadPart 2");
        const std::string e1 = Parse<pb::UploadPartResponse>(ctx, r1, "part 1").etag();
        const std::string e2 = Parse<pb::UploadPartResponse>(ctx, r2, "part 2").etag();
        pb::CompleteMultipartUploadRequest c = CompleteRequest(u);
        ctx.RequireCode(u.p->Send(Method::kCompleteMultipartUpload, c), ErrorCode::kInvalidArgument,
                        "an empty part list");
        for (uint32_t n = 1; n <= 10001; ++n) AddPart(c, n, e1);
        ctx.RequireCode(u.p->Send(Method::kCompleteMultipartUpload, c), ErrorCode::kTooManyParts,
                        "10001 parts");
        c = CompleteRequest(u);
        AddPart(c, 2, e2);
        AddPart(c, 1, e1);
        ctx.RequireCode(u.p->Send(Method::kCompleteMultipartUpload, c), ErrorCode::kInvalidPartOrder,
                        "parts 2, 1");
        c = CompleteRequest(u);
        AddPart(c, 1, e1);
        AddPart(c, 1, e1);
        ctx.RequireCode(u.p->Send(Method::kCompleteMultipartUpload, c), ErrorCode::kInvalidPartOrder,
                        "parts 1, 1");
        c = CompleteRequest(u);
        AddPart(c, 1, e1);
        AddPart(c, 3, e2);
        ctx.RequireCode(u.p->Send(Method::kCompleteMultipartUpload, c), ErrorCode::kInvalidPart,
                        "a part never uploaded");
        c = CompleteRequest(u);
        AddPart(c, 1, e1);
        AddPart(c, 2, Md5Etag("something else"));
        ctx.RequireCode(u.p->Send(Method::kCompleteMultipartUpload, c), ErrorCode::kInvalidPart,
                        "a wrong ETag");
        c = CompleteRequest(u);
        AddPart(c, 1, e1);
        AddPart(c, 2, e2);
        RawReply small_part = u.p->Send(Method::kCompleteMultipartUpload, c);
        if (small_part.grpc_status.ok()) {
          ctx.Note("the target's minimum part size is at most 100 octets; ENTITY_TOO_SMALL not provoked");
          return;
        }
        ctx.RequireCode(small_part, ErrorCode::kEntityTooSmall, "a 100-octet part that is not the last");
        ctx.Require(small_part.error.s3_code() == "EntityTooSmall", "S3 name", "EntityTooSmall",
                    small_part.error.s3_code());
        ctx.RequireCode(u.p->Head(u.bucket, "bad-lists"), ErrorCode::kNoSuchKey, "no object created");
        ctx.RequireOk(ListParts(u, 0, 0), "the upload still exists after the failures");
        ctx.RequireStillServes();
      });
  Add(r, "mpu/9.15.2/6",
      "the announced max_part_size: an UploadPart declaring one octet more is ENTITY_TOO_LARGE "
      "before anything moves; one declaring exactly that many is refused for its window, not "
      "its size",
      "limits", {"AOBJ-OBJ-256", "AOBJ-OBJ-209"}, true, [](CaseContext& ctx) {
        auto probe = ctx.Open();
        const pb::Limits limits = probe->session().limits();
        probe->Close();
        const uint64_t max = limits.max_part_size();
        if (max == 0) {
          ctx.Unsupported(
              "the target does not announce Limits.max_part_size (a SHOULD, AOBJ-OBJ-256), so its "
              "maximum part size is not known");
        }
        ctx.Require(limits.max_object_size() == 0 || limits.max_object_size() >= max,
                    "max_object_size, when announced, is not below max_part_size",
                    absl::StrCat(">= ", max), absl::StrCat(limits.max_object_size()));
        Upload u = Create(ctx, "max-part");
        auto m = u.p->Allocate(4096);
        const std::string body = Content(4096, 41);
        for (const uint64_t size : {max + 1, max}) {
          // The part declares `size` octets but names a window of 4 KiB: the size is judged
          // first (AOBJ-OBJ-209), and a size the server takes fails on the window instead.
          pb::UploadPartRequest req = PartRequest(u, 1, *m, body);
          req.set_size(size);
          RawReply rr = u.p->Send(Method::kUploadPart, req);
          const std::string what =
              absl::StrCat("UploadPart declaring ", size, " octets (max_part_size ", max, ")");
          if (size > max) {
            ctx.RequireCode(rr, ErrorCode::kEntityTooLarge, what);
          } else if (size <= limits.max_transfer_bytes()) {
            ctx.Require(
                !rr.status.ok() && CodeOf(rr) != ErrorCode::kEntityTooLarge,
                what + " over a 4 KiB window",
                "an error for the window (DESCRIPTOR_TOO_SMALL), not ENTITY_TOO_LARGE",
                rr.status.ok() ? std::string("OK") : std::string(GetErrorInfo(CodeOf(rr)).name));
          }
        }
        // Nothing was stored for part 1.
        RawReply lp = ListParts(u, 0, 0);
        ctx.RequireOk(lp, "ListParts");
        ctx.Require(Parse<pb::ListPartsResponse>(ctx, lp, "ListParts").parts_size() == 0,
                    "no part stored", "0 parts", "some");
        Abort(u, u.id);
        ctx.RequireStillServes();
      });
  Add(r, "mpu/9.15.3/7",
      "the announced min_part_size, to the octet: a part of exactly that size is taken, one octet "
      "fewer is ENTITY_TOO_SMALL",
      "multipart", {"AOBJ-OBJ-235", "AOBJ-OBJ-213"}, true, [](CaseContext& ctx) {
        auto probe = ctx.Open();
        const uint64_t min = probe->session().limits().min_part_size();
        probe->Close();
        if (min == 0) {
          ctx.Unsupported(
              "the target does not announce Limits.min_part_size (a SHOULD, "
              "AOBJ-OBJ-235), so its minimum part size is not known");
        }
        if (min > (uint64_t{64} << 20)) {
          ctx.Unsupported(absl::StrCat("the announced min_part_size, ", min,
                                       " octets, is above what this case moves (64 MiB)"));
        }
        for (const uint64_t size : {min, min - 1}) {
          if (size == 0) continue;
          Upload u = Create(ctx, absl::StrCat("edge-", size));
          RawReply r1 = Part(u, 1, Content(size, 31));
          RawReply r2 = Part(u, 2, Content(1, 32));
          ctx.RequireOk(r1, absl::StrCat("UploadPart 1 of ", size, " octets"));
          ctx.RequireOk(r2, "UploadPart 2 (the last, 1 octet)");
          pb::CompleteMultipartUploadRequest c = CompleteRequest(u);
          AddPart(c, 1, Parse<pb::UploadPartResponse>(ctx, r1, "part 1").etag());
          AddPart(c, 2, Parse<pb::UploadPartResponse>(ctx, r2, "part 2").etag());
          RawReply cr = u.p->Send(Method::kCompleteMultipartUpload, c);
          const std::string what = absl::StrCat("Complete with a first part of ", size,
                                                " octets (min_part_size ", min, ")");
          if (size == min) {
            ctx.RequireOk(cr, what);
          } else {
            ctx.RequireCode(cr, ErrorCode::kEntityTooSmall, what);
            Abort(u, u.id);
          }
        }
      });
  Add(r, "mpu/9.15.3/3", "Complete with a failing precondition leaves key and upload", "multipart",
      {"AOBJ-OBJ-231", "AOBJ-OBJ-218"}, true, [](CaseContext& ctx) {
        Upload u = Create(ctx, "guarded");
        ctx.RequireOk(u.p->Put(u.bucket, "guarded", "existing"), "PUT of the key");
        RawReply pr = Part(u, 1, "new content");
        ctx.RequireOk(pr, "UploadPart");
        pb::CompleteMultipartUploadRequest c = CompleteRequest(u);
        AddPart(c, 1, Parse<pb::UploadPartResponse>(ctx, pr, "part").etag());
        c.mutable_preconditions()->set_if_none_match("*");
        ctx.RequireCode(u.p->Send(Method::kCompleteMultipartUpload, c), ErrorCode::kPreconditionFailed,
                        "Complete with If-None-Match * on an existing key");
        std::string back;
        ctx.RequireOk(u.p->Get(u.bucket, "guarded", &back), "GET");
        ctx.Require(back == "existing", "the key is unchanged", "existing", back);
        ctx.RequireOk(ListParts(u, 0, 0), "the upload still exists");
        c.mutable_preconditions()->set_if_none_match("");
        c.mutable_preconditions()->set_if_match(Md5Etag("existing"));
        ctx.RequireOk(u.p->Send(Method::kCompleteMultipartUpload, c), "Complete with If-Match the ETag");
        ctx.RequireOk(u.p->Get(u.bucket, "guarded", &back), "GET");
        ctx.Require(back == "new content", "the key holds the upload", "new content", back);
      });
  Add(r, "mpu/9.15.5/1",
      "ListParts and ListMultipartUploads: order, paging, fields; upload_id_marker without "
      "key_marker ignored",
      "multipart", {"AOBJ-OBJ-221", "AOBJ-OBJ-222", "AOBJ-OBJ-223", "AOBJ-OBJ-224", "AOBJ-OBJ-257"},
      false, [](CaseContext& ctx) {
        Upload u = Create(ctx, "b-key");
        for (uint32_t n : {5u, 1u, 3u, 2u, 4u}) {
          ctx.RequireOk(Part(u, n, Content(100 * n, n)), absl::StrCat("UploadPart ", n));
        }
        std::vector<uint32_t> seen;
        uint32_t marker = 0;
        for (int page = 0; page < 5; ++page) {
          RawReply lp = ListParts(u, marker, 2);
          ctx.RequireOk(lp, "ListParts");
          auto l = Parse<pb::ListPartsResponse>(ctx, lp, "ListParts");
          ctx.Require(l.parts_size() <= 2, "at most max_parts", "<= 2", absl::StrCat(l.parts_size()));
          for (const auto& p : l.parts()) {
            seen.push_back(p.part_number());
            const std::string body = Content(100 * p.part_number(), p.part_number());
            ctx.Require(p.size() == body.size() && p.etag() == Md5Etag(body) && p.last_modified_ms() > 0 &&
                            p.checksum() == Crc32cOf(body),
                        absl::StrCat("part ", p.part_number(), ": size, ETag, time, checksum"),
                        absl::StrCat(body.size(), " ", Md5Etag(body)), p.ShortDebugString());
          }
          if (!l.is_truncated()) break;
          marker = l.next_part_number_marker();
        }
        ctx.Require(seen == std::vector<uint32_t>{1, 2, 3, 4, 5}, "parts 1-5 ascending over 3 pages",
                    "1 2 3 4 5", absl::StrJoin(seen, " "));
        Upload a1 = Create(ctx, "a-key", "", true, &u);
        Upload a2 = Create(ctx, "a-key", "", true, &u);
        Upload c1 = Create(ctx, "c-key", "", true, &u);
        pb::ListMultipartUploadsRequest lu;
        lu.set_bucket(u.bucket);
        lu.set_max_uploads(2);
        std::vector<std::string> order;
        for (int page = 0; page < 5; ++page) {
          RawReply rr = u.p->Send(Method::kListMultipartUploads, lu);
          ctx.RequireOk(rr, "ListMultipartUploads");
          auto l = Parse<pb::ListMultipartUploadsResponse>(ctx, rr, "ListMultipartUploads");
          ctx.Require(l.uploads_size() <= 2, "at most max_uploads", "<= 2", absl::StrCat(l.uploads_size()));
          for (const auto& e : l.uploads()) order.push_back(e.upload_id());
          if (!l.is_truncated()) break;
          lu.set_key_marker(l.next_key_marker());
          lu.set_upload_id_marker(l.next_upload_id_marker());
        }
        ctx.Require(order == std::vector<std::string>{a1.id, a2.id, u.id, c1.id},
                    "by key, then by initiation, each once", absl::StrJoin({a1.id, a2.id, u.id, c1.id}, " "),
                    absl::StrJoin(order, " "));
        lu.Clear();
        lu.set_bucket(u.bucket);
        lu.set_prefix("c-");
        RawReply rr = u.p->Send(Method::kListMultipartUploads, lu);
        ctx.RequireOk(rr, "ListMultipartUploads prefix c-");
        auto l = Parse<pb::ListMultipartUploadsResponse>(ctx, rr, "list");
        ctx.Require(l.uploads_size() == 1 && l.uploads(0).key() == "c-key", "prefix", "c-key", l.ShortDebugString());
        lu.Clear();
        lu.set_bucket(u.bucket);
        lu.set_upload_id_marker(a2.id);
        RawReply im = u.p->Send(Method::kListMultipartUploads, lu);
        ctx.RequireOk(im, "ListMultipartUploads with upload_id_marker and no key_marker");
        std::vector<std::string> all;
        const auto listed = Parse<pb::ListMultipartUploadsResponse>(ctx, im, "list");
        for (const auto& e : listed.uploads()) all.push_back(e.upload_id());
        ctx.Require(all == std::vector<std::string>{a1.id, a2.id, u.id, c1.id},
                    "upload_id_marker without key_marker is ignored: every upload listed "
                    "(AOBJ-OBJ-257)",
                    absl::StrJoin({a1.id, a2.id, u.id, c1.id}, " "), absl::StrJoin(all, " "));
      });
  Add(r, "mpu/9.15.6/1", "a Complete and an Abort of one upload at once: exactly one applies",
      "multipart", {"AOBJ-OBJ-225"}, true, [](CaseContext& ctx) {
        Upload u = Create(ctx, "raced");
        RawReply pr = Part(u, 1, Content(2 << 20, 12));
        ctx.RequireOk(pr, "UploadPart");
        pb::CompleteMultipartUploadRequest c = CompleteRequest(u);
        AddPart(c, 1, Parse<pb::UploadPartResponse>(ctx, pr, "part").etag());
        auto other = ctx.Open();
        RawReply done, aborted;
        std::thread t([&] { done = u.p->Send(Method::kCompleteMultipartUpload, c); });
        pb::AbortMultipartUploadRequest a;
        a.set_bucket(u.bucket);
        a.set_key(u.key);
        a.set_upload_id(u.id);
        aborted = other->Send(Method::kAbortMultipartUpload, a);
        t.join();
        const bool completed = done.grpc_status.ok(), was_aborted = aborted.grpc_status.ok();
        ctx.Require(completed != was_aborted, "exactly one of Complete and Abort succeeded", "one",
                    absl::StrCat("Complete: ", Outcome(done), "; Abort: ", Outcome(aborted)));
        ctx.Require(CodeOf(completed ? aborted : done) == ErrorCode::kNoSuchUpload,
                    "the other got NO_SUCH_UPLOAD", "NO_SUCH_UPLOAD", Outcome(completed ? aborted : done));
        RawReply h = u.p->Head(u.bucket, "raced");
        ctx.Require(completed ? h.grpc_status.ok() : CodeOf(h) == ErrorCode::kNoSuchKey,
                    "the key matches the winner", completed ? "the object" : "NO_SUCH_KEY", Outcome(h));
      });

  Add(r, "copy/9.14/5",
      "a copy of a multipart object gets the MD5 ETag of its content, not the source's "
      "multipart ETag",
      "multipart", {"AOBJ-OBJ-150", "AOBJ-OBJ-005"}, false, [](CaseContext& ctx) {
        Upload u = Create(ctx, "multi-src");
        const std::string p1 = Content(kBigPart, 31), p2 = Content(4321, 32);
        pb::CompleteMultipartUploadRequest c = CompleteRequest(u);
        uint32_t n = 1;
        for (const std::string* body : {&p1, &p2}) {
          RawReply rr = Part(u, n, *body);
          ctx.RequireOk(rr, absl::StrCat("UploadPart ", n));
          AddPart(c, n, Parse<pb::UploadPartResponse>(ctx, rr, "UploadPart").etag());
          ++n;
        }
        RawReply cr = u.p->Send(Method::kCompleteMultipartUpload, c);
        ctx.RequireOk(cr, "CompleteMultipartUpload");
        const std::string source_etag =
            Parse<pb::CompleteMultipartUploadResponse>(ctx, cr, "Complete").metadata().etag();
        pb::CopyObjectRequest copy;
        copy.set_source_bucket(u.bucket);
        copy.set_source_key(u.key);
        copy.set_bucket(u.bucket);
        copy.set_key("copied");
        ctx.RequireOk(u.p->Send(Method::kCopyObject, copy), "CopyObject of the multipart object");
        pb::HeadObjectRequest h;
        h.set_bucket(u.bucket);
        h.set_key("copied");
        RawReply hr = u.p->Send(Method::kHeadObject, h);
        ctx.RequireOk(hr, "HEAD of the copy");
        const std::string etag = Parse<pb::HeadObjectResponse>(ctx, hr, "HEAD").metadata().etag();
        ctx.Require(etag == Md5Etag(p1 + p2),
                    absl::StrCat("the copy's ETag (the source's is ", source_etag, ")"),
                    Md5Etag(p1 + p2), etag);
      });

  // ---- 10: flow control ------------------------------------------------------------------------
  Add(r, "flo/10/1", "data requests beyond max_in_flight: TOO_MANY_TRANSFERS, retryable; rejected "
                     "ones do not count",
      "limits", {"AOBJ-SES-012", "AOBJ-FLO-005"}, true, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest o = p->DefaultOpen();
        o.mutable_requested_limits()->set_max_in_flight(1);
        ctx.RequireOk(p->Open(o), "OpenSession with max_in_flight 1");
        const std::string bucket = ctx.NewBucket(*p);
        const size_t n = 32u << 20;
        ctx.RequireOk(p->Put(bucket, "big", Content(n, 13)), "PUT of 32 MiB");
        constexpr int kThreads = 6;
        std::vector<Memory> mem;
        for (int i = 0; i < kThreads; ++i) mem.push_back(p->Allocate(n));
        int rejected = 0, ok = 0, other = 0;
        std::string others;
        for (int round = 0; round < 4 && rejected == 0; ++round) {
          std::vector<RawReply> replies(kThreads);
          std::vector<std::thread> threads;
          std::atomic<int> go{0};
          for (int i = 0; i < kThreads; ++i) {
            // The same session from several threads: one Peer each, all naming p's session.
            threads.emplace_back([&, i] {
              Peer q(ctx, absl::StrCat("P1.", i), ctx.target().access_key_id, ctx.target().secret);
              q.set_session_hex(p->session_hex());
              pb::GetObjectRequest g = q.GetRequest(bucket, "big", *mem[i], n);
              ++go;
              while (go < kThreads) std::this_thread::yield();
              replies[i] = q.Send(Method::kGetObject, g);
              q.set_session_hex("");  // the session is p's: q must not close it
            });
          }
          for (auto& t : threads) t.join();
          for (const auto& rr : replies) {
            if (rr.grpc_status.ok()) ++ok;
            else if (CodeOf(rr) == ErrorCode::kTooManyTransfers) {
              ++rejected;
              ctx.Require(rr.error.retryable() && rr.error.s3_code() == "SlowDown",
                          "TOO_MANY_TRANSFERS is retryable SlowDown", "retryable SlowDown",
                          rr.error.ShortDebugString());
            } else {
              ++other;
              others += Outcome(rr) + "; ";
            }
          }
        }
        ctx.Require(other == 0, "every reply is success or TOO_MANY_TRANSFERS", "0 others", others);
        if (rejected == 0) ctx.Unsupported("could not get two GETs of 32 MiB in flight at once");
        ctx.Require(ok >= 1, "at least one GET succeeded", ">= 1", absl::StrCat(ok));
        // Rejected requests left no slot taken: a GET now succeeds at once.
        std::string back;
        ctx.RequireOk(p->Get(bucket, "big", &back, nullptr, n), "a GET after the burst");
      });
  Add(r, "dat/8.3/3",
      "every negotiated checksum algorithm is verified, on PutObject and on UploadPart: one bit "
      "flipped is BAD_DIGEST and nothing is committed",
      "checksums", {"AOBJ-DAT-005", "AOBJ-OBJ-014", "AOBJ-DAT-150"}, true,
      [](CaseContext& ctx) {
        Upload u = Create(ctx, "checked");
        struct Algo {
          uint32_t cap;
          pb::ChecksumAlgorithm wire;
          ChecksumAlgorithm local;
          const char* name;
        };
        int tried = 0;
        const std::string body = Content(70000, 41);
        auto m = u.p->Allocate(body.size());
        std::memcpy(m->data(), body.data(), body.size());
        for (const Algo& a : {Algo{kCapCrc32c, pb::CHECKSUM_ALGORITHM_CRC32C,
                                   ChecksumAlgorithm::kCrc32c, "CRC32C"},
                              Algo{kCapCrc64, pb::CHECKSUM_ALGORITHM_CRC64NVME,
                                   ChecksumAlgorithm::kCrc64Nvme, "CRC64NVME"}}) {
          if (!u.p->Negotiated(a.cap)) continue;
          ++tried;
          Checksummer sum(a.local);
          sum.Update(body.data(), body.size());
          const std::string good = sum.Finish();
          std::string bad = good;
          bad[bad.size() - 1] = static_cast<char>(bad[bad.size() - 1] ^ 1);
          pb::PutObjectRequest put = u.p->PutRequest(u.bucket, absl::StrCat("put-", a.name), *m,
                                                     body.size());
          put.set_checksum_algorithm(a.wire);
          put.set_checksum(bad);
          ctx.RequireCode(u.p->Send(Method::kPutObject, put), ErrorCode::kBadDigest,
                          absl::StrCat("PutObject with its ", a.name, " off by one bit"));
          ctx.RequireCode(u.p->Head(u.bucket, put.key()), ErrorCode::kNoSuchKey,
                          "nothing committed");
          put.set_checksum(good);
          ctx.RequireOk(u.p->Send(Method::kPutObject, put),
                        absl::StrCat("PutObject with the right ", a.name));
          pb::UploadPartRequest part = PartRequest(u, tried, *m, body);
          part.set_checksum_algorithm(a.wire);
          part.set_checksum(bad);
          ctx.RequireCode(u.p->Send(Method::kUploadPart, part), ErrorCode::kBadDigest,
                          absl::StrCat("UploadPart with its ", a.name, " off by one bit"));
          part.set_checksum(good);
          ctx.RequireOk(u.p->Send(Method::kUploadPart, part),
                        absl::StrCat("UploadPart with the right ", a.name));
        }
        if (tried == 0) ctx.Unsupported("the target negotiated no checksum algorithm");
        ctx.RequireStillServes();
      });
  Add(r, "flo/10/2",
      "exactly max_in_flight data requests are admitted: with 2 held in flight the third is "
      "TOO_MANY_TRANSFERS at once",
      "limits", {"AOBJ-SES-012", "AOBJ-FLO-006", "AOBJ-FLO-011"}, true, [](CaseContext& ctx) {
        // Requests are held in flight deterministically: their windows are ordinary memory of a
        // worker nobody progresses, so the target's RMA waits until its bound (AOBJ-OPS-008).
        BucketFixture f = OpenBucket(ctx);
        auto stalled = ctx.NewPeer();
        stalled->UseStalledWorker();
        pb::OpenSessionRequest o = stalled->DefaultOpen();
        o.mutable_requested_limits()->set_max_in_flight(2);
        ctx.RequireOk(stalled->Open(o),
                      "OpenSession with max_in_flight 2, naming a worker "
                      "nobody progresses");
        const uint32_t limit = stalled->session().limits().max_in_flight();
        ctx.Require(limit == 2, "the effective max_in_flight is the requested 2 (AOBJ-SES-006)",
                    "2", absl::StrCat(limit));
        constexpr size_t kSize = 1 << 20;
        auto heap = stalled->RegisterHeap(kSize, 0x5a);
        RawReply third;
        WhileTwoAreHeld(
            ctx, *stalled, "request",
            [&](Peer& q, int i) {
              return q.Send(Method::kPutObject,
                            stalled->PutRequest(f.bucket, absl::StrCat("held-", i), *heap, kSize));
            },
            [&] {
              third = stalled->Send(Method::kPutObject,
                                    stalled->PutRequest(f.bucket, "third", *heap, kSize));
            });
        ctx.RequireCode(third, ErrorCode::kTooManyTransfers,
                        "a third data request while two are in flight");
        ctx.Require(third.error.retry_after_ms() <= 60000,
                    "retry_after_ms, if set, is at most a minute (AOBJ-FLO-006)", "<= 60000",
                    absl::StrCat(third.error.retry_after_ms()));
        ctx.RequireStillServes();
      });
  Add(r, "flo/10.1/1", "a data reply grants at most the session's max_in_flight (3)", "limits",
      {"AOBJ-FLO-009"}, false, [](CaseContext& ctx) {
        int granted = 0;
        for (const auto& [what, credits] : DataReplyGrants(ctx, 3)) {
          ctx.Require(credits <= 3, what + ": credits at most max_in_flight", "<= 3",
                      absl::StrCat(credits));
          if (credits != 0) ++granted;
        }
        if (granted == 0) ctx.Note("no reply granted credits (AOBJ-FLO-008 is a SHOULD)");
      });
  Add(r, "flo/10.1/2", "every successful data reply grants credits", "limits", {"AOBJ-FLO-008"},
      false, [](CaseContext& ctx) {
        for (const auto& [what, credits] : DataReplyGrants(ctx, 3)) {
          ctx.Require(credits >= 1, what + ": credits granted (field 15)", ">= 1",
                      absl::StrCat(credits));
        }
      });
  Add(r, "flo/10/5",
      "CopyObject is not a data request: with max_in_flight (2) data requests held, a copy in "
      "the same session succeeds at once",
      "limits", {"AOBJ-OBJ-158", "AOBJ-SES-012"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "source", "copy me"), "PUT of a copy source");
        auto stalled = ctx.NewPeer();
        stalled->UseStalledWorker();
        pb::OpenSessionRequest o = stalled->DefaultOpen();
        o.mutable_requested_limits()->set_max_in_flight(2);
        ctx.RequireOk(stalled->Open(o), "OpenSession with max_in_flight 2, stalled worker");
        constexpr size_t kSize = 1 << 20;
        auto heap = stalled->RegisterHeap(kSize, 0x5b);
        RawReply copy;
        WhileTwoAreHeld(
            ctx, *stalled, "PUT",
            [&](Peer& q, int i) {
              return q.Send(Method::kPutObject,
                            stalled->PutRequest(f.bucket, absl::StrCat("held-", i), *heap, kSize));
            },
            [&] {
              pb::CopyObjectRequest c;
              c.set_source_bucket(f.bucket);
              c.set_source_key("source");
              c.set_bucket(f.bucket);
              c.set_key("copied");
              copy = stalled->Send(Method::kCopyObject, c);
            });
        ctx.RequireOk(copy, "CopyObject in the session while two data requests are in flight");
        std::string got;
        ctx.RequireOk(f.p->Get(f.bucket, "copied", &got), "GET of the copy");
        ctx.Require(got == "copy me", "the copy holds the source's octets", "copy me", got);
        ctx.RequireStillServes();
      });
  Add(r, "flo/10/3",
      "UploadPart takes an in-flight slot like PutObject and GetObject: with two parts held, a "
      "GET and a PUT are TOO_MANY_TRANSFERS",
      "limits", {"AOBJ-SES-012", "AOBJ-FLO-005"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "small", "small object"), "PUT of a small object");
        auto stalled = ctx.NewPeer();
        stalled->UseStalledWorker();
        pb::OpenSessionRequest o = stalled->DefaultOpen();
        o.mutable_requested_limits()->set_max_in_flight(2);
        o.mutable_requested_limits()->set_inline_threshold(1);  // the GET below must use RMA
        ctx.RequireOk(stalled->Open(o), "OpenSession with max_in_flight 2, stalled worker");
        pb::CreateMultipartUploadRequest cm;
        cm.set_bucket(f.bucket);
        cm.set_key("held-parts");
        RawReply cr = stalled->Send(Method::kCreateMultipartUpload, cm);
        ctx.RequireOk(cr, "CreateMultipartUpload");
        Upload u;
        u.bucket = f.bucket;
        u.key = "held-parts";
        u.id = Parse<pb::CreateMultipartUploadResponse>(ctx, cr, "Create").upload_id();
        constexpr size_t kSize = 1 << 20;
        auto heap = stalled->RegisterHeap(kSize, 0x3c);
        RawReply get, put;
        WhileTwoAreHeld(
            ctx, *stalled, "part",
            [&](Peer& q, int i) {
              pb::UploadPartRequest part;
              part.set_bucket(u.bucket);
              part.set_key(u.key);
              part.set_upload_id(u.id);
              part.set_part_number(i + 1);
              part.set_size(kSize);
              part.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
              part.set_checksum(Crc32cOf(std::string(kSize, '\x3c')));
              *part.add_source() = Peer::Descriptor(*heap, 0, kSize);
              return q.Send(Method::kUploadPart, part);
            },
            [&] {
              get = stalled->Send(Method::kGetObject,
                                  stalled->GetRequest(f.bucket, "small", *heap, kSize));
              put = stalled->Send(Method::kPutObject,
                                  stalled->PutRequest(f.bucket, "third", *heap, kSize));
            });
        ctx.RequireCode(get, ErrorCode::kTooManyTransfers, "a GET while two parts are in flight");
        ctx.RequireCode(put, ErrorCode::kTooManyTransfers, "a PUT while two parts are in flight");
        ctx.RequireStillServes();
      });
  // Gaps found by reading the cases against the spec (issue 17): the second paths of shared rules.
  Add(r, "obj/9.3/3",
      "every request that names a missing bucket, multipart, copy and DeleteObjects included: "
      "NO_SUCH_BUCKET before anything else",
      "multipart", {"AOBJ-OBJ-003", "AOBJ-OBJ-200", "AOBJ-OBJ-201", "AOBJ-OBJ-142"}, true,
      [](CaseContext& ctx) {
        Upload u = Create(ctx, "exists");
        ctx.RequireOk(u.p->Put(u.bucket, "src", "source"), "PUT of a copy source");
        const std::string none = ctx.Unique("no-such");
        const ErrorCode want = MissingBucketCode(ctx);
        Upload elsewhere;  // the live upload's ID and key, named in a bucket that does not exist
        elsewhere.p = ctx.Open();
        elsewhere.bucket = none;
        elsewhere.key = u.key;
        elsewhere.id = u.id;
        pb::CreateMultipartUploadRequest c;
        c.set_bucket(none);
        c.set_key("k");
        ctx.RequireCode(u.p->Send(Method::kCreateMultipartUpload, c), want,
                        "CreateMultipartUpload");
        ctx.RequireCode(Part(elsewhere, 1, "x"), want, "UploadPart");
        pb::CompleteMultipartUploadRequest cr = CompleteRequest(elsewhere);
        AddPart(cr, 1, Md5Etag("x"));
        ctx.RequireCode(u.p->Send(Method::kCompleteMultipartUpload, cr), want,
                        "CompleteMultipartUpload");
        ctx.RequireCode(ListParts(elsewhere, 0, 0), want, "ListParts");
        ctx.RequireCode(Abort(elsewhere, u.id), want, "AbortMultipartUpload");
        pb::ListMultipartUploadsRequest lu;
        lu.set_bucket(none);
        ctx.RequireCode(u.p->Send(Method::kListMultipartUploads, lu), want, "ListMultipartUploads");
        pb::DeleteObjectsRequest d;
        d.set_bucket(none);
        d.add_keys("a");
        d.add_keys("b");
        ctx.RequireCode(u.p->Send(Method::kDeleteObjects, d), want,
                        "DeleteObjects (the whole request fails, not each key)");
        pb::CopyObjectRequest cp;
        cp.set_source_bucket(none);
        cp.set_source_key("src");
        cp.set_bucket(u.bucket);
        cp.set_key("dst");
        ctx.RequireCode(u.p->Send(Method::kCopyObject, cp), want,
                        "CopyObject from a missing bucket");
        cp.set_source_bucket(u.bucket);
        cp.set_bucket(none);
        ctx.RequireCode(u.p->Send(Method::kCopyObject, cp), want,
                        "CopyObject into a missing bucket");
        ctx.RequireOk(ListParts(u, 0, 0), "the upload named elsewhere is intact");
        ctx.RequireStillServes();
      });
  Add(r, "mpu/9.15.1/4",
      "an upload is named by bucket, key and ID together: Abort, Complete and ListParts with "
      "another key, UploadPart in another bucket: NO_SUCH_UPLOAD, the upload intact",
      "multipart", {"AOBJ-OBJ-201"}, true, [](CaseContext& ctx) {
        Upload u = Create(ctx, "named");
        RawReply pr = Part(u, 1, "part one");
        ctx.RequireOk(pr, "UploadPart");
        const std::string etag = Parse<pb::UploadPartResponse>(ctx, pr, "UploadPart").etag();
        Upload other_key;
        other_key.p = ctx.Open();
        other_key.bucket = u.bucket;
        other_key.key = "named-too";
        other_key.id = u.id;
        ctx.RequireCode(ListParts(other_key, 0, 0), ErrorCode::kNoSuchUpload,
                        "ListParts naming the upload with another key");
        pb::CompleteMultipartUploadRequest c = CompleteRequest(other_key);
        AddPart(c, 1, etag);
        ctx.RequireCode(u.p->Send(Method::kCompleteMultipartUpload, c), ErrorCode::kNoSuchUpload,
                        "Complete naming the upload with another key");
        ctx.RequireCode(u.p->Head(u.bucket, "named-too"), ErrorCode::kNoSuchKey,
                        "no object under the other key");
        ctx.RequireCode(Abort(other_key, u.id), ErrorCode::kNoSuchUpload,
                        "Abort naming the upload with another key");
        Upload other_bucket;
        other_bucket.p = ctx.Open();
        other_bucket.bucket = ctx.NewBucket(*other_bucket.p);
        other_bucket.key = u.key;
        other_bucket.id = u.id;
        ctx.RequireCode(Part(other_bucket, 2, "elsewhere"), ErrorCode::kNoSuchUpload,
                        "UploadPart naming the upload in another bucket");
        ctx.RequireCode(ListParts(other_bucket, 0, 0), ErrorCode::kNoSuchUpload,
                        "ListParts naming the upload in another bucket");
        RawReply lr = ListParts(u, 0, 0);
        ctx.RequireOk(lr, "ListParts of the upload itself");
        auto parts = Parse<pb::ListPartsResponse>(ctx, lr, "ListParts");
        ctx.Require(parts.parts_size() == 1 && parts.parts(0).part_number() == 1,
                    "the upload holds exactly its part 1", "part 1", parts.ShortDebugString());
        c = CompleteRequest(u);
        AddPart(c, 1, etag);
        ctx.RequireOk(u.p->Send(Method::kCompleteMultipartUpload, c),
                      "Complete of the upload itself");
        std::string back;
        ctx.RequireOk(u.p->Get(u.bucket, u.key, &back), "GET");
        ctx.Require(back == "part one", "the object is the part", "part one", back);
      });
  Add(r, "mpu/9.15.3/5",
      "after a successful Complete the upload is gone: UploadPart and Abort NO_SUCH_UPLOAD, "
      "nothing stored, the object intact, no longer listed",
      "multipart", {"AOBJ-OBJ-219", "AOBJ-OBJ-220", "AOBJ-OBJ-225", "AOBJ-OBJ-223"}, true,
      [](CaseContext& ctx) {
        Upload u = Create(ctx, "done");
        Upload kept = Create(ctx, "still-open", "", true, &u);
        RawReply pr = Part(u, 1, "final content");
        ctx.RequireOk(pr, "UploadPart");
        pb::CompleteMultipartUploadRequest c = CompleteRequest(u);
        AddPart(c, 1, Parse<pb::UploadPartResponse>(ctx, pr, "UploadPart").etag());
        RawReply cr = u.p->Send(Method::kCompleteMultipartUpload, c);
        ctx.RequireOk(cr, "Complete");
        const std::string etag =
            Parse<pb::CompleteMultipartUploadResponse>(ctx, cr, "Complete").metadata().etag();
        ctx.RequireCode(Part(u, 2, "late part"), ErrorCode::kNoSuchUpload,
                        "UploadPart after Complete");
        ctx.RequireCode(Part(u, 1, "replacement"), ErrorCode::kNoSuchUpload,
                        "UploadPart of part 1 again after Complete");
        ctx.RequireCode(Abort(u, u.id), ErrorCode::kNoSuchUpload, "Abort after Complete");
        std::string back;
        ctx.RequireOk(u.p->Get(u.bucket, u.key, &back), "GET");
        ctx.Require(back == "final content", "the object is unchanged", "final content", back);
        pb::HeadObjectResponse h;
        RawReply hr = u.p->Head(u.bucket, u.key, &h);
        ctx.RequireOk(hr, "HEAD");
        ctx.Require(h.metadata().etag() == etag, "the ETag is the one Complete returned", etag,
                    h.metadata().etag());
        pb::ListMultipartUploadsRequest l;
        l.set_bucket(u.bucket);
        RawReply lr = u.p->Send(Method::kListMultipartUploads, l);
        ctx.RequireOk(lr, "ListMultipartUploads");
        auto uploads = Parse<pb::ListMultipartUploadsResponse>(ctx, lr, "ListMultipartUploads");
        bool listed = false, other = false;
        for (const auto& e : uploads.uploads()) {
          listed |= e.upload_id() == u.id;
          other |= e.upload_id() == kept.id;
        }
        ctx.Require(!listed, "the completed upload is not listed", "absent", "listed");
        ctx.Require(other, "the other upload is still listed", "listed", "absent");
      });
  Add(r, "mpu/9.15.3/8",
      "a full-object checksum: not CRC32C of 4 octets is INVALID_ARGUMENT, a wrong one BAD_DIGEST "
      "with the upload left in progress, the right one completes; ListParts gives CRC32C",
      "multipart", {"AOBJ-OBJ-258", "AOBJ-OBJ-259", "AOBJ-OBJ-261", "AOBJ-OBJ-218"}, true,
      [](CaseContext& ctx) {
        Upload u = Create(ctx, "full-checksum");
        const std::string body = Content(3000, 23);
        RawReply part = Part(u, 1, body);
        ctx.RequireOk(part, "UploadPart 1 (3000 octets)");
        if (!part.status.ok()) return;
        const std::string etag = Parse<pb::UploadPartResponse>(ctx, part, "part 1").etag();
        auto complete = [&](pb::ChecksumAlgorithm algorithm, const std::string& checksum) {
          pb::CompleteMultipartUploadRequest c = CompleteRequest(u);
          AddPart(c, 1, etag);
          c.set_checksum_algorithm(algorithm);
          c.set_checksum(checksum);
          return u.p->Send(Method::kCompleteMultipartUpload, c);
        };
        const std::string right = Crc32cOf(body);
        ctx.RequireCode(complete(pb::CHECKSUM_ALGORITHM_CRC64NVME, std::string(8, '\x11')),
                        ErrorCode::kInvalidArgument, "a full-object checksum under CRC64NVME");
        ctx.RequireCode(complete(pb::CHECKSUM_ALGORITHM_CRC32C, right.substr(0, 3)),
                        ErrorCode::kInvalidArgument, "a full-object CRC32C of 3 octets");
        ctx.RequireCode(complete(pb::CHECKSUM_ALGORITHM_UNSPECIFIED, right),
                        ErrorCode::kInvalidArgument, "a checksum without its algorithm");
        ctx.RequireCode(complete(pb::CHECKSUM_ALGORITHM_CRC32C, Crc32cOf(body + "x")),
                        ErrorCode::kBadDigest, "a full-object CRC32C of other content");
        RawReply lp = ListParts(u, 0, 0);
        ctx.RequireOk(lp, "ListParts after the BAD_DIGEST: the upload is still in progress");
        if (lp.status.ok()) {
          auto l = Parse<pb::ListPartsResponse>(ctx, lp, "ListParts");
          ctx.Require(l.parts_size() == 1 &&
                          l.parts(0).checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C &&
                          l.parts(0).checksum() == right,
                      "the part is still there, with its CRC32C", Hex(right),
                      l.ShortDebugString().substr(0, 300));
        }
        RawReply done = complete(pb::CHECKSUM_ALGORITHM_CRC32C, right);
        ctx.RequireOk(done, "Complete with the right full-object CRC32C");
        if (done.status.ok()) {
          auto md = Parse<pb::CompleteMultipartUploadResponse>(ctx, done, "Complete").metadata();
          ctx.Require(md.size() == body.size(), "the object holds the part", "3000 octets",
                      absl::StrCat(md.size()));
        }
        ctx.RequireStillServes();
      });
  Add(r, "mpu/9.15.3/6",
      "part lists at their edge: 10000 entries is not TOO_MANY_PARTS; a replaced part's old ETag "
      "is INVALID_PART; after the failures the parts still assemble exactly",
      "multipart", {"AOBJ-OBJ-210", "AOBJ-OBJ-211", "AOBJ-OBJ-212", "AOBJ-OBJ-208", "AOBJ-OBJ-218"},
      true, [](CaseContext& ctx) {
        Upload u = Create(ctx, "edges");
        const std::string first = Content(kBigPart, 31), old2 = "old part two", new2 = "part two";
        RawReply r1 = Part(u, 1, first);
        ctx.RequireOk(r1, "UploadPart 1 (5 MiB)");
        RawReply o2 = Part(u, 10000, old2);
        ctx.RequireOk(o2, "UploadPart 10000");
        RawReply n2 = Part(u, 10000, new2);
        ctx.RequireOk(n2, "UploadPart 10000 again (replaces it)");
        const std::string e1 = Parse<pb::UploadPartResponse>(ctx, r1, "part 1").etag();
        const std::string old_e2 = Parse<pb::UploadPartResponse>(ctx, o2, "part 10000").etag();
        const std::string e2 = Parse<pb::UploadPartResponse>(ctx, n2, "part 10000 again").etag();
        // Parts 2 to 9999 were never uploaded (no part but the last is small, so INVALID_PART is
        // the only answer).
        pb::CompleteMultipartUploadRequest c = CompleteRequest(u);
        for (uint32_t n = 1; n <= 10000; ++n) {
          AddPart(c, n, n == 1 ? e1 : n == 10000 ? e2 : Md5Etag("x"));
        }
        RawReply full = u.p->Send(Method::kCompleteMultipartUpload, c);
        ctx.RequireCode(full, ErrorCode::kInvalidPart,
                        "a list of exactly 10000 entries, 9998 of them never uploaded");
        c = CompleteRequest(u);
        AddPart(c, 1, e1);
        AddPart(c, 10000, old_e2);
        ctx.RequireCode(u.p->Send(Method::kCompleteMultipartUpload, c), ErrorCode::kInvalidPart,
                        "part 10000 listed with the ETag of the part it replaced");
        ctx.RequireCode(u.p->Head(u.bucket, u.key), ErrorCode::kNoSuchKey, "no object yet");
        c = CompleteRequest(u);
        AddPart(c, 1, e1);
        AddPart(c, 10000, e2);
        ctx.RequireOk(u.p->Send(Method::kCompleteMultipartUpload, c),
                      "Complete of parts 1 and 10000");
        std::string back;
        ctx.RequireOk(u.p->Get(u.bucket, u.key, &back, nullptr, 8 << 20), "GET");
        ctx.Require(back == first + new2, "the object is part 1 then the new part 10000",
                    absl::StrCat(first.size() + new2.size(), " octets"),
                    absl::StrCat(
                        back.size(), " octets",
                        back.size() == first.size() + old2.size() ? " (the old part 10000?)" : ""));
      });
  Add(r, "mpu/9.15.5/5",
      "an upload_id_marker whose upload was aborted since: the listing goes on after it, "
      "skipping nothing",
      "multipart", {"AOBJ-OBJ-262", "AOBJ-OBJ-224"}, true, [](CaseContext& ctx) {
        Upload x1 = Create(ctx, "m-key");
        Upload x2 = Create(ctx, "m-key", "", true, &x1);
        Upload x3 = Create(ctx, "m-key", "", true, &x1);
        Upload y = Create(ctx, "n-key", "", true, &x1);
        ctx.RequireOk(Abort(x2, x2.id), "AbortMultipartUpload of the second upload of m-key");
        pb::ListMultipartUploadsRequest lu;
        lu.set_bucket(x1.bucket);
        lu.set_key_marker("m-key");
        lu.set_upload_id_marker(x2.id);
        RawReply rr = x1.p->Send(Method::kListMultipartUploads, lu);
        ctx.RequireOk(rr, "ListMultipartUploads after the aborted upload");
        if (!rr.status.ok()) return;
        auto l = Parse<pb::ListMultipartUploadsResponse>(ctx, rr, "ListMultipartUploads");
        std::vector<std::string> ids;
        for (const auto& e : l.uploads()) ids.push_back(e.upload_id());
        auto has = [&](const std::string& id) {
          return std::find(ids.begin(), ids.end(), id) != ids.end();
        };
        ctx.Require(has(x3.id) && has(y.id) && !has(x2.id),
                    "the third upload of m-key and the upload of n-key, not the aborted one",
                    absl::StrJoin({x3.id, y.id}, " "), absl::StrJoin(ids, " "));
        if (has(x1.id)) {
          ctx.Note(
              "the first upload of m-key was listed again: the target could not place the "
              "vanished marker (allowed; it repeats rather than skips)");
        }
        ctx.RequireStillServes();
      });
  Add(r, "mpu/9.15.5/4",
      "ListParts never returns more than 1000 parts: max_parts 0 and 5000 give 1000, truncated, "
      "resumable from the marker",
      "multipart", {"AOBJ-OBJ-221"}, false, [](CaseContext& ctx) {
        Upload u = Create(ctx, "many-parts");
        for (uint32_t n = 1; n <= 1001; ++n) {
          RawReply pr = Part(u, n, "");
          if (!pr.grpc_status.ok()) {
            ctx.RequireOk(pr, absl::StrCat("UploadPart ", n, " (empty)"));
          }
        }
        for (uint32_t max : {0u, 5000u}) {
          RawReply lr = ListParts(u, 0, max);
          ctx.RequireOk(lr, absl::StrCat("ListParts with max_parts ", max));
          auto l = Parse<pb::ListPartsResponse>(ctx, lr, "ListParts");
          ctx.Require(
              l.parts_size() == 1000 && l.is_truncated() && l.next_part_number_marker() == 1000,
              absl::StrCat("max_parts ", max, ": 1000 parts, truncated, marker 1000"),
              "1000 true 1000",
              absl::StrCat(l.parts_size(), " ", l.is_truncated(), " ",
                           l.next_part_number_marker()));
        }
        RawReply rest = ListParts(u, 1000, 0);
        ctx.RequireOk(rest, "ListParts after marker 1000");
        auto l = Parse<pb::ListPartsResponse>(ctx, rest, "ListParts");
        ctx.Require(l.parts_size() == 1 && l.parts(0).part_number() == 1001 && !l.is_truncated(),
                    "the last page holds part 1001 alone, not truncated", "1001, false",
                    l.ShortDebugString());
        ctx.RequireOk(Abort(u, u.id), "Abort");
      });
  Add(r, "mpu/9.15.2/3",
      "UploadPart follows PutObject's body rules: inline size and threshold, inline with a "
      "descriptor, a checksum missing, of the wrong length, of an unknown or UNSPECIFIED "
      "algorithm, a size without a source; and so does PutObject for UNSPECIFIED: nothing stored",
      "multipart", {"AOBJ-OBJ-206", "AOBJ-DAT-007", "AOBJ-DAT-020", "AOBJ-DAT-023", "AOBJ-MEM-022"},
      true, [](CaseContext& ctx) {
        Upload u = Create(ctx, "rules");
        const std::string body = Content(3000, 14);
        auto m = u.p->Allocate(8192);
        auto base = [&] { return PartRequest(u, 1, *m, body); };
        std::vector<std::pair<std::string, pb::UploadPartRequest>> bad;
        pb::UploadPartRequest x = base();
        x.clear_checksum_algorithm();
        x.clear_checksum();
        bad.emplace_back("no checksum", x);
        x = base();
        x.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_UNSPECIFIED);
        bad.emplace_back("the algorithm UNSPECIFIED with a CRC32C checksum", x);
        x = base();
        x.set_checksum(x.checksum() + "x");
        bad.emplace_back("a CRC32C of 5 octets", x);
        x = base();
        x.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(99));
        bad.emplace_back("checksum_algorithm 99", x);
        const bool inl = u.p->Negotiated(kCapInline);
        const uint64_t t = u.p->session().limits().inline_threshold();
        if (inl && t >= 16) {
          const std::string small = body.substr(0, std::min<uint64_t>(t - 1, 1000));
          x = base();
          x.clear_source();
          x.set_size(small.size() + 1);
          x.set_inline_data(small);
          x.set_checksum(Crc32cOf(small));
          bad.emplace_back("inline_data one octet shorter than size", x);
          x.set_size(small.size());
          *x.add_source() = Peer::Descriptor(*m, 0, small.size());
          bad.emplace_back("inline_data and a descriptor", x);
        }
        for (const auto& [what, req] : bad) {
          ctx.RequireCode(u.p->Send(Method::kUploadPart, req), ErrorCode::kInvalidArgument,
                          "UploadPart with " + what);
        }
        if (inl && t + 1 <= 8192) {
          const std::string over = Content(t + 1, 15);
          x = base();
          x.clear_source();
          x.set_size(over.size());
          x.set_inline_data(over);
          x.set_checksum(Crc32cOf(over));
          ctx.RequireCode(u.p->Send(Method::kUploadPart, x), ErrorCode::kEntityTooLarge,
                          "UploadPart with inline_data of inline_threshold + 1 octets");
        }
        x = base();
        x.clear_source();
        ctx.RequireCode(u.p->Send(Method::kUploadPart, x), ErrorCode::kInvalidDescriptor,
                        "UploadPart of 3000 octets with no body source");
        RawReply lr = ListParts(u, 0, 0);
        ctx.RequireOk(lr, "ListParts");
        ctx.Require(Parse<pb::ListPartsResponse>(ctx, lr, "ListParts").parts_size() == 0,
                    "no part was stored", "0 parts", "a part");
        pb::PutObjectRequest put = u.p->PutRequest(u.bucket, "single", *m, 3000);
        put.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_UNSPECIFIED);
        ctx.RequireCode(u.p->Send(Method::kPutObject, put), ErrorCode::kInvalidArgument,
                        "PutObject with the algorithm UNSPECIFIED and a CRC32C checksum");
        ctx.RequireCode(u.p->Head(u.bucket, "single"), ErrorCode::kNoSuchKey, "nothing committed");
        ctx.RequireOk(Part(u, 1, body), "the same part, well formed");
        ctx.RequireStillServes();
      });
  Add(r, "mpu/9.15.2/4",
      "UploadPart follows PutObject's descriptor rule: a part from two windows in a session that "
      "did not negotiate MULTI_DESCRIPTOR is INVALID_DESCRIPTOR and stores nothing",
      "multipart", {"AOBJ-MEM-015", "AOBJ-OBJ-206"}, true, [](CaseContext& ctx) {
        Upload u = Create(ctx, "two-windows");
        auto q = ctx.NewPeer();
        pb::OpenSessionRequest o = q->DefaultOpen();
        o.clear_capabilities();
        o.add_capabilities(kCapCrc32c);
        ctx.RequireOk(q->Open(o),
                      "a second session of the same principal without MULTI_DESCRIPTOR");
        ctx.Require(!q->Negotiated(kCapMultiDescriptor),
                    "MULTI_DESCRIPTOR not negotiated when the client did not offer it "
                    "(AOBJ-SES-005)",
                    "absent", "negotiated");
        const std::string body = Content(4096, 16);
        auto m = q->Allocate(body.size());
        pb::UploadPartRequest two = PartRequest(u, 1, *m, body);
        two.clear_source();
        *two.add_source() = Peer::Descriptor(*m, 0, 2048);
        *two.add_source() = Peer::Descriptor(*m, 2048, 2048);
        ctx.RequireCode(q->Send(Method::kUploadPart, two), ErrorCode::kInvalidDescriptor,
                        "UploadPart from two windows without MULTI_DESCRIPTOR");
        RawReply lr = ListParts(u, 0, 0);
        ctx.RequireOk(lr, "ListParts");
        ctx.Require(Parse<pb::ListPartsResponse>(ctx, lr, "ListParts").parts_size() == 0,
                    "no part was stored", "0 parts", "a part");
        // One window over the same octets: the refusal was about the count alone.
        ctx.RequireOk(q->Send(Method::kUploadPart, PartRequest(u, 1, *m, body)),
                      "the same part from one window, in the same session");
        ctx.RequireOk(Abort(u, u.id), "Abort");
        ctx.RequireStillServes();
      });
  Add(r, "flo/10/4",
      "every way a data request can fail gives its slot back: with max_in_flight 1, each failure "
      "is followed by a request that is admitted",
      "limits", {"AOBJ-FLO-005", "AOBJ-SES-012"}, true, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest o = p->DefaultOpen();
        o.mutable_requested_limits()->set_max_in_flight(1);
        ctx.RequireOk(p->Open(o), "OpenSession with max_in_flight 1");
        ctx.Require(p->session().limits().max_in_flight() == 1, "max_in_flight 1 is effective", "1",
                    absl::StrCat(p->session().limits().max_in_flight()));
        const std::string bucket = ctx.NewBucket(*p);
        const std::string body = Content(10000, 8);
        ctx.RequireOk(p->Put(bucket, "k", body), "PUT of 10000 octets");
        const std::string etag = Md5Etag(body);
        auto m = p->Allocate(20000);
        auto get = [&](const std::string& key) {
          pb::GetObjectRequest g = p->GetRequest(bucket, key, *m, 20000);
          g.set_accept_inline(false);
          return g;
        };
        std::vector<std::pair<std::string, std::function<RawReply()>>> failures;
        failures.emplace_back("GET of a missing key",
                              [&] { return p->Send(Method::kGetObject, get("none")); });
        failures.emplace_back("GET If-Match another ETag", [&] {
          auto g = get("k");
          g.mutable_preconditions()->set_if_match(Md5Etag("other"));
          return p->Send(Method::kGetObject, g);
        });
        failures.emplace_back("GET If-None-Match the ETag", [&] {
          auto g = get("k");
          g.mutable_preconditions()->set_if_none_match(etag);
          return p->Send(Method::kGetObject, g);
        });
        failures.emplace_back("GET of an unsatisfiable range", [&] {
          auto g = get("k");
          g.mutable_range()->set_kind(pb::ByteRange::KIND_FROM);
          g.mutable_range()->set_first(20000);
          return p->Send(Method::kGetObject, g);
        });
        failures.emplace_back("GET into a window too small", [&] {
          pb::GetObjectRequest g = p->GetRequest(bucket, "k", *m, 100);
          g.set_accept_inline(false);
          return p->Send(Method::kGetObject, g);
        });
        failures.emplace_back("GET with a garbage rkey", [&] {
          auto g = get("k");
          g.mutable_destination(0)->set_rkey(Content(m->packed_rkey().size(), 4));
          return p->Send(Method::kGetObject, g);
        });
        failures.emplace_back("GET of a missing bucket", [&] {
          pb::GetObjectRequest g = get("k");
          g.set_bucket(ctx.Unique("no-such"));
          return p->Send(Method::kGetObject, g);
        });
        failures.emplace_back("PUT whose checksum differs", [&] {
          std::memcpy(m->data(), body.data(), body.size());
          pb::PutObjectRequest put = p->PutRequest(bucket, "bad", *m, body.size());
          put.set_checksum(Crc32cOf("something else"));
          return p->Send(Method::kPutObject, put);
        });
        failures.emplace_back("create-only PUT of an existing key", [&] {
          pb::PutObjectRequest put = p->PutRequest(bucket, "k", *m, 100);
          put.mutable_preconditions()->set_if_none_match("*");
          return p->Send(Method::kPutObject, put);
        });
        failures.emplace_back("PUT from a window shorter than its size", [&] {
          pb::PutObjectRequest put = p->PutRequest(bucket, "short", *m, 1000);
          put.set_size(2000);
          return p->Send(Method::kPutObject, put);
        });
        failures.emplace_back("UploadPart to an upload that does not exist", [&] {
          Upload u;
          u.bucket = bucket;
          u.key = "mpu";
          u.id = "0123456789abcdef0123456789abcdef";
          return p->Send(Method::kUploadPart, PartRequest(u, 1, *m, "part"));
        });
        int n = 0;
        for (const auto& [what, send] : failures) {
          for (int twice = 0; twice < 2; ++twice) {
            RawReply rr = send();
            ctx.Require(!rr.grpc_status.ok() && CodeOf(rr) != ErrorCode::kTooManyTransfers,
                        what + ": fails for its own reason",
                        "an error other than TOO_MANY_TRANSFERS", Outcome(rr));
          }
          pb::GetObjectRequest g = get("k");
          RawReply ok = p->Send(Method::kGetObject, g);
          ctx.RequireOk(ok,
                        absl::StrCat("a GET after two of: ", what, " (failure kind ", ++n, ")"));
        }
        ctx.RequireStillServes();
      });
  Add(r, "obj/9.4/4",
      "every reply that describes an object describes it as HEAD does: PUT, GET, CopyObject (COPY "
      "and REPLACE, across buckets) and CompleteMultipartUpload",
      "multipart", {"AOBJ-OBJ-012", "AOBJ-OBJ-122", "AOBJ-OBJ-007", "AOBJ-OBJ-150", "AOBJ-OBJ-216"},
      false, [](CaseContext& ctx) {
        Upload u = Create(ctx, "assembled", "application/x-parts");
        Peer& p = *u.p;
        const std::string other = ctx.NewBucket(p);
        // A PUT with a content type and metadata.
        const std::string body = Content(70000, 41);
        auto m = p.Allocate(body.size());
        std::memcpy(m->data(), body.data(), body.size());
        pb::PutObjectRequest put = p.PutRequest(u.bucket, "single", *m, body.size());
        put.set_content_type("text/x-single");
        (*put.mutable_user_metadata())["color"] = "blue";
        RawReply pr = p.Send(Method::kPutObject, put);
        ctx.RequireOk(pr, "PUT");
        const auto head = HeadMetadata(ctx, p, u.bucket, "single");
        RequireSameMetadata(ctx, Parse<pb::PutObjectResponse>(ctx, pr, "PUT").metadata(), head,
                            "the PUT reply");
        pb::GetObjectResponse g;
        std::string back;
        ctx.RequireOk(p.Get(u.bucket, "single", &back, &g), "GET");
        RequireSameMetadata(ctx, g.metadata(), head, "the GET reply");
        absl::SleepFor(absl::Milliseconds(20));
        // A copy into another bucket keeps type and metadata; its time is new.
        pb::CopyObjectRequest c;
        c.set_source_bucket(u.bucket);
        c.set_source_key("single");
        c.set_bucket(other);
        c.set_key("copied");
        RawReply cr = p.Send(Method::kCopyObject, c);
        ctx.RequireOk(cr, "CopyObject into another bucket (COPY)");
        const auto copied = HeadMetadata(ctx, p, other, "copied");
        RequireSameMetadata(ctx, Parse<pb::CopyObjectResponse>(ctx, cr, "CopyObject").metadata(),
                            copied, "the CopyObject reply");
        ctx.Require(copied.content_type() == "text/x-single" &&
                        copied.user_metadata().size() == 1 &&
                        copied.user_metadata().count("color") == 1 &&
                        copied.etag() == head.etag() && copied.size() == head.size(),
                    "the copy has the source's type, metadata, ETag and size",
                    "text/x-single {color} " + head.etag(), copied.ShortDebugString());
        ctx.Require(copied.last_modified_ms() > head.last_modified_ms(),
                    "the copy's last_modified_ms is the copy's, 20 ms after the PUT",
                    absl::StrCat("> ", head.last_modified_ms()),
                    absl::StrCat(copied.last_modified_ms()));
        std::string copied_back;
        ctx.RequireOk(p.Get(other, "copied", &copied_back), "GET of the copy");
        ctx.Require(copied_back == body, "the copy's content", "the source's octets", "differs");
        c.set_key("replaced");
        c.set_metadata_directive(pb::METADATA_DIRECTIVE_REPLACE);
        RawReply rr = p.Send(Method::kCopyObject, c);
        ctx.RequireOk(rr, "CopyObject REPLACE with no content type and no metadata");
        const auto replaced = HeadMetadata(ctx, p, other, "replaced");
        RequireSameMetadata(ctx, Parse<pb::CopyObjectResponse>(ctx, rr, "CopyObject").metadata(),
                            replaced, "the CopyObject REPLACE reply");
        ctx.Require(replaced.user_metadata().empty() && replaced.content_type() != "text/x-single",
                    "REPLACE takes the request's (empty) metadata and content type, not the "
                    "source's",
                    "no metadata, not text/x-single", replaced.ShortDebugString());
        // A multipart object: the type and metadata of its Create.
        RawReply part = Part(u, 1, "the only part");
        ctx.RequireOk(part, "UploadPart");
        pb::CompleteMultipartUploadRequest cm = CompleteRequest(u);
        AddPart(cm, 1, Parse<pb::UploadPartResponse>(ctx, part, "UploadPart").etag());
        RawReply done = p.Send(Method::kCompleteMultipartUpload, cm);
        ctx.RequireOk(done, "Complete");
        const auto assembled = HeadMetadata(ctx, p, u.bucket, u.key);
        RequireSameMetadata(
            ctx, Parse<pb::CompleteMultipartUploadResponse>(ctx, done, "Complete").metadata(),
            assembled, "the Complete reply");
        ctx.Require(assembled.content_type() == "application/x-parts" &&
                        assembled.user_metadata().size() == 1 &&
                        assembled.user_metadata().count("origin") == 1,
                    "the object has the content type and metadata of its Create",
                    "application/x-parts {origin}", assembled.ShortDebugString());
        ctx.Require(assembled.last_modified_ms() >= head.last_modified_ms(),
                    "the object's time is its completion's, not earlier than the PUT before it",
                    absl::StrCat(">= ", head.last_modified_ms()),
                    absl::StrCat(assembled.last_modified_ms()));
        pb::ListObjectsV2Request l;
        l.set_bucket(u.bucket);
        RawReply lr = p.Send(Method::kListObjectsV2, l);
        ctx.RequireOk(lr, "ListObjectsV2");
        const auto listing = Parse<pb::ListObjectsV2Response>(ctx, lr, "ListObjectsV2");
        for (const auto& e : listing.objects()) {
          const auto& want = e.key() == "single" ? head : assembled;
          ctx.Require(e.size() == want.size() && e.etag() == want.etag() &&
                          e.last_modified_ms() == want.last_modified_ms(),
                      "listing entry " + e.key() + " agrees with HEAD",
                      absl::StrCat(want.size(), " ", want.etag(), " ", want.last_modified_ms()),
                      e.ShortDebugString());
        }
      });
  Add(r, "obj/9.4/5",
      "OPAQUE_ETAG changes only PutObject's ETag: UploadPart, Complete and CopyObject keep theirs",
      "opaque-etag", {"AOBJ-OBJ-016", "AOBJ-OBJ-207", "AOBJ-OBJ-217", "AOBJ-OBJ-150"}, false,
      [](CaseContext& ctx) {
        Upload u = CreateWithCapability(ctx, kCapOpaqueEtag, "OPAQUE_ETAG", "multi");
        const std::string body = "a part in an opaque-ETag session";
        RawReply pr = Part(u, 1, body);
        ctx.RequireOk(pr, "UploadPart");
        const std::string pe = Parse<pb::UploadPartResponse>(ctx, pr, "UploadPart").etag();
        ctx.Require(pe == Md5Etag(body), "the part's ETag is its MD5", Md5Etag(body), pe);
        pb::CompleteMultipartUploadRequest cm = CompleteRequest(u);
        AddPart(cm, 1, pe);
        RawReply done = u.p->Send(Method::kCompleteMultipartUpload, cm);
        ctx.RequireOk(done, "Complete");
        const std::string me =
            Parse<pb::CompleteMultipartUploadResponse>(ctx, done, "Complete").metadata().etag();
        const std::string want = Quote(absl::StrCat(HexEncode(Md5Raw(Md5Raw(body))), "-1"));
        ctx.Require(me == want, "the multipart ETag: MD5 of the part MD5s, -1", want, me);
        ctx.RequireOk(u.p->Put(u.bucket, "single", body), "PUT");
        pb::CopyObjectRequest cp;
        cp.set_source_bucket(u.bucket);
        cp.set_source_key("single");
        cp.set_bucket(u.bucket);
        cp.set_key("copy");
        RawReply cpr = u.p->Send(Method::kCopyObject, cp);
        ctx.RequireOk(cpr, "CopyObject");
        const std::string ce =
            Parse<pb::CopyObjectResponse>(ctx, cpr, "CopyObject").metadata().etag();
        ctx.Require(ce == Md5Etag(body), "the copy's ETag is the MD5 of its content", Md5Etag(body),
                    ce);
        const std::string se = HeadMetadata(ctx, *u.p, u.bucket, "single").etag();
        ctx.Require(IsOpaqueEtag(se), "the PUT's own ETag is opaque", "\"<32 hex>-0\"", se);
      });
  Add(r, "mpu/9.15.2/5",
      "OPAQUE_PART_ETAG: a part's ETag is 32 random hex digits, new on every write, and the "
      "multipart ETag is computed from it; without it the part's MD5",
      "opaque-etag", {"AOBJ-OBJ-254", "AOBJ-OBJ-207", "AOBJ-OBJ-212", "AOBJ-OBJ-217"}, false,
      [](CaseContext& ctx) {
        Upload u =
            CreateWithCapability(ctx, kCapOpaquePartEtag, "OPAQUE_PART_ETAG", "opaque-parts");
        const std::string body = Content(70000, 21);
        auto part_etag = [&](const char* what) {
          RawReply pr = Part(u, 1, body);
          ctx.RequireOk(pr, what);
          const std::string e = Parse<pb::UploadPartResponse>(ctx, pr, what).etag();
          const bool form = e.size() == 34 && e.front() == '"' && e.back() == '"' &&
                            BareMd5Etag(e) == e.substr(1, 32) && absl::AsciiStrToLower(e) == e;
          ctx.Require(form, absl::StrCat(what, ": a quote, 32 lower-case hex digits, a quote"),
                      "\"<32 hex>\"", e);
          ctx.Require(e != Md5Etag(body), absl::StrCat(what, ": not the MD5 of the part"),
                      "not " + Md5Etag(body), e);
          return e;
        };
        const std::string first = part_etag("UploadPart 1");
        const std::string second = part_etag("UploadPart 1 again, the same octets");
        ctx.Require(second != first, "the same octets written again get other digits",
                    "not " + first, second);
        RawReply lp = ListParts(u, 0, 0);
        ctx.RequireOk(lp, "ListParts");
        auto parts = Parse<pb::ListPartsResponse>(ctx, lp, "ListParts");
        ctx.Require(parts.parts_size() == 1 && parts.parts(0).etag() == second,
                    "ListParts reports the part's current ETag", second, parts.ShortDebugString());
        // The part was replaced since `first` was issued: listing it fails (AOBJ-OBJ-212).
        pb::CompleteMultipartUploadRequest stale = CompleteRequest(u);
        AddPart(stale, 1, first);
        ctx.RequireCode(u.p->Send(Method::kCompleteMultipartUpload, stale), ErrorCode::kInvalidPart,
                        "Complete listing the part's earlier opaque ETag");
        pb::CompleteMultipartUploadRequest cm = CompleteRequest(u);
        AddPart(cm, 1, second);
        RawReply done = u.p->Send(Method::kCompleteMultipartUpload, cm);
        ctx.RequireOk(done, "Complete listing the part's ETag");
        const std::string me =
            Parse<pb::CompleteMultipartUploadResponse>(ctx, done, "Complete").metadata().etag();
        std::string raw;
        ctx.Require(HexDecode(second.substr(1, 32), &raw), "the part ETag's digits decode", second,
                    second);
        const std::string want = Quote(absl::StrCat(HexEncode(Md5Raw(raw)), "-1"));
        ctx.Require(me == want, "the multipart ETag: MD5 of the octets the part ETag denotes, -1",
                    want, me);
        std::string got;
        ctx.RequireOk(u.p->Get(u.bucket, u.key, &got), "GET the completed object");
        ctx.Require(got == body, "the object holds the part's octets", absl::StrCat(body.size()),
                    absl::StrCat(got.size()));
        // A session that did not negotiate it keeps MD5 part ETags (AOBJ-OBJ-207).
        Upload plain = Create(ctx, "md5-parts");
        RawReply pr = Part(plain, 1, body);
        ctx.RequireOk(pr, "UploadPart without OPAQUE_PART_ETAG");
        const std::string pe = Parse<pb::UploadPartResponse>(ctx, pr, "UploadPart").etag();
        ctx.Require(pe == Md5Etag(body), "without OPAQUE_PART_ETAG the part's ETag is its MD5",
                    Md5Etag(body), pe);
        ctx.RequireStillServes();
      });
}

}  // namespace aobj::conformance
