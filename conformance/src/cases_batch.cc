// Sections 9.16 and 9.17: GetObjects and PutObjects, batched reads into one scatter list and
// batched writes from one (capabilities BATCH_GET and BATCH_PUT). Each case opens a session that
// offers the capability; a target that does not negotiate it reports the cases UNSUPPORTED,
// except obj/9.16/3 and obj/9.17/3, which check that such a session is refused the request.
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "conformance/src/cases_util.h"

namespace aobj::conformance {
namespace {

constexpr uint32_t kCapBatchGet = 8;
constexpr uint32_t kCapBatchPut = 9;
constexpr uint32_t kCapFastPath = 7;
constexpr uint8_t kUntouched = 0x5a;

// A confirmed session that offered `batch` (BATCH_GET or BATCH_PUT; and MULTI_DESCRIPTOR), with
// `extra` offered too.
std::unique_ptr<Peer> OpenBatch(CaseContext& ctx, uint64_t max_transfer_bytes = 0,
                                uint32_t extra = 0, uint32_t batch = kCapBatchGet) {
  const char* name = batch == kCapBatchGet ? "BATCH_GET" : "BATCH_PUT";
  auto p = ctx.NewPeer();
  pb::OpenSessionRequest open = p->DefaultOpen();
  open.add_capabilities(batch);
  if (extra != 0) open.add_capabilities(extra);
  if (max_transfer_bytes != 0) {
    open.mutable_requested_limits()->set_max_transfer_bytes(max_transfer_bytes);
  }
  ctx.RequireOk(p->Open(open),
                absl::StrCat("OpenSession offering ", name, ", and ConfirmEndpoint"));
  RequireCapability(ctx, *p, batch, name);
  return p;
}

// A PutObjects item whose region holds `content`, with its CRC32C.
pb::PutObjectsItem* AddPut(pb::PutObjectsRequest* req, const std::string& key, uint64_t offset,
                           const std::string& content) {
  pb::PutObjectsItem* it = req->add_items();
  it->set_key(key);
  it->set_offset(offset);
  it->set_length(content.size());
  it->set_checksum(Crc32cOf(content));
  return it;
}

std::string CodeOfPut(const pb::PutObjectsResult& r) {
  return r.has_error() ? CodeName(static_cast<ErrorCode>(static_cast<uint32_t>(r.error().code())))
                       : "OK";
}

// AOBJ-OBJ-016's form: a quote, 32 lower-case hex digits, "-0", a quote.
bool IsOpaqueForm(const std::string& e) {
  if (e.size() != 36 || e.front() != '"' || e.substr(33) != "-0\"") return false;
  for (size_t i = 1; i < 33; ++i) {
    if (!((e[i] >= '0' && e[i] <= '9') || (e[i] >= 'a' && e[i] <= 'f'))) return false;
  }
  return true;
}

pb::GetObjectsItem* AddItem(pb::GetObjectsRequest* req, const std::string& key, uint64_t offset,
                            uint64_t length) {
  pb::GetObjectsItem* it = req->add_items();
  it->set_key(key);
  it->set_offset(offset);
  it->set_length(length);
  return it;
}

// Whether `n` octets of `m` from `at` still hold kUntouched.
bool Untouched(const RegisteredMemory& m, uint64_t at, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    if (m.data()[at + i] != kUntouched) return false;
  }
  return true;
}

std::string CodeOfResult(const pb::GetObjectsResult& r) {
  return r.has_error() ? CodeName(static_cast<ErrorCode>(static_cast<uint32_t>(r.error().code())))
                       : "OK";
}

// dat/13.7/1's stalled client for a batch: a confirmed session offering BATCH_PUT and BATCH_GET
// whose worker nobody progresses; the bound it was announced (Limits.data_wait_ms) in *bound_ms.
std::unique_ptr<Peer> OpenStalled(CaseContext& ctx, uint32_t* bound_ms) {
  auto p = ctx.NewPeer();
  p->UseStalledWorker();
  pb::OpenSessionRequest open = p->DefaultOpen();
  open.add_capabilities(kCapBatchPut);
  open.add_capabilities(kCapBatchGet);
  ctx.RequireOk(p->Open(open),
                "OpenSession offering BATCH_PUT and BATCH_GET, naming a worker nobody progresses");
  *bound_ms = p->session().limits().data_wait_ms();
  ctx.Require(*bound_ms > 0, "the server announces its RMA bound (Limits.data_wait_ms)", "non-zero",
              "0");
  return p;
}

// Sends a batch that moves `octets` from or to the stalled client's memory, between two
// renewals (it waits out the RMA bound, and CI runs a 2 s lease with a 1.5 s bound), and checks
// that the reply came within the bound, the octets at 50 MB/s and room for a busy machine.
template <class M>
RawReply SendStalled(CaseContext& ctx, Peer& p, Method method, const M& req, uint32_t bound_ms,
                     uint64_t octets) {
  ctx.RequireOk(p.Send(Method::kRenewSession, pb::RenewSessionRequest()),
                "RenewSession before the batch");
  const absl::Time start = absl::Now();
  RawReply reply = p.Send(method, req);
  const absl::Duration took = absl::Now() - start;
  ctx.RequireOk(p.Send(Method::kRenewSession, pb::RenewSessionRequest()),
                "RenewSession after the batch (AOBJ-DAT-158: the session stays OPEN)");
  const absl::Duration limit = absl::Milliseconds(bound_ms) +
                               absl::Seconds(static_cast<double>(octets) / 50e6) + absl::Seconds(5);
  ctx.Require(took <= limit, "the reply came within the announced bound",
              absl::StrCat("<= ", absl::FormatDuration(limit)), absl::FormatDuration(took));
  return reply;
}

}  // namespace

void RegisterBatchCases(Registry& r) {
  Add(r, "obj/9.16/1",
      "BATCH_GET: each item gets its object, range or own error; failed regions stay untouched",
      "core", {"AOBJ-OBJ-239", "AOBJ-OBJ-240", "AOBJ-OBJ-241", "AOBJ-OBJ-242", "AOBJ-OBJ-243"},
      false, [](CaseContext& ctx) {
        auto p = OpenBatch(ctx);
        Renewer renew(ctx, *p);  // 1000-item batches can outlast the lease (AOBJ-SES-019)
        const std::string bucket = ctx.NewBucket(*p);
        const std::string small = Content(100, 161);
        const std::string mid = Content(5000, 162);
        ctx.RequireOk(p->Put(bucket, "empty", ""), "PUT of an empty object");
        ctx.RequireOk(p->Put(bucket, "mid", mid), "PUT of 5000 octets");
        {
          // user metadata that a batch result must leave out (AOBJ-OBJ-242)
          auto mem = p->Allocate(small.size());
          std::memcpy(mem->data(), small.data(), small.size());
          pb::PutObjectRequest put = p->PutRequest(bucket, "small", *mem, small.size());
          (*put.mutable_user_metadata())["owner"] = "conformance";
          ctx.RequireOk(p->Send(Method::kPutObject, put), "PUT of 100 octets with user metadata");
        }
        const uint64_t slot = 8192;
        auto mem = p->Allocate(slot * 7);
        std::memset(mem->data(), kUntouched, mem->size());
        pb::GetObjectsRequest req;
        req.set_bucket(bucket);
        req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        *req.add_destination() = Peer::Descriptor(*mem, 0, mem->size());
        AddItem(&req, "small", 0, slot);                      // 0: whole, region larger
        AddItem(&req, "mid", slot, 5000);                     // 1: region exactly the size
        AddItem(&req, "empty", 2 * slot, slot);               // 2: empty object
        AddItem(&req, std::string(40, 'x'), 3 * slot, slot);  // 3: no such key
        AddItem(&req, "mid", 4 * slot, 4999);                 // 4: one octet short
        pb::GetObjectsItem* ranged = AddItem(&req, "mid", 5 * slot, slot);  // 5: a range
        ranged->mutable_range()->set_kind(pb::ByteRange::KIND_FIRST_LAST);
        ranged->mutable_range()->set_first(1000);
        ranged->mutable_range()->set_last(1999);
        pb::GetObjectsItem* past = AddItem(&req, "small", 6 * slot, slot);  // 6: unsatisfiable
        past->mutable_range()->set_kind(pb::ByteRange::KIND_FROM);
        past->mutable_range()->set_first(100);
        RawReply rr = p->Send(Method::kGetObjects, req);
        ctx.RequireOk(rr, "GetObjects of seven items");
        auto resp = Parse<pb::GetObjectsResponse>(ctx, rr, "GetObjectsResponse");
        ctx.Require(resp.results_size() == req.items_size(), "one result per item (AOBJ-OBJ-240)",
                    absl::StrCat(req.items_size()), absl::StrCat(resp.results_size()));
        const std::vector<std::string> want = {
            "OK", "OK", "OK", "NO_SUCH_KEY", "DESCRIPTOR_TOO_SMALL", "OK", "INVALID_RANGE"};
        for (int i = 0; i < req.items_size(); ++i) {
          ctx.Require(CodeOfResult(resp.results(i)) == want[i],
                      absl::StrCat("item ", i, "'s result, in the items' order (AOBJ-OBJ-240)"),
                      want[i], CodeOfResult(resp.results(i)));
        }
        // AOBJ-OBJ-241: octets, byte counts, checksums and metadata of the successes.
        const std::string expect[] = {small, mid, "", "", "", mid.substr(1000, 1000)};
        for (int i : {0, 1, 2, 5}) {
          const pb::GetObjectsResult& g = resp.results(i);
          const std::string& e = expect[i];
          ctx.Require(g.bytes_transferred() == e.size(),
                      absl::StrCat("item ", i, ": bytes_transferred"), absl::StrCat(e.size()),
                      absl::StrCat(g.bytes_transferred()));
          ctx.Require(g.checksum() == Crc32cOf(e),
                      absl::StrCat("item ", i, ": CRC32C of the octets moved"), Hex(Crc32cOf(e)),
                      Hex(g.checksum()));
          ctx.Require(std::memcmp(mem->data() + i * slot, e.data(), e.size()) == 0,
                      absl::StrCat("item ", i, ": the object's octets at its region's start"),
                      "the object's octets", "other octets");
          ctx.Require(Untouched(*mem, i * slot + e.size(), (i == 1 ? 5000 : slot) - e.size()),
                      absl::StrCat("item ", i, ": nothing written past its octets (AOBJ-OBJ-239)"),
                      "untouched", "written");
        }
        ctx.Require(resp.results(0).metadata().size() == small.size() &&
                        !resp.results(0).metadata().etag().empty(),
                    "item 0: metadata of the object (size, etag)", "100 and an ETag",
                    resp.results(0).metadata().ShortDebugString());
        ctx.Require(resp.results(0).metadata().user_metadata().empty(),
                    "item 0: no user_metadata in a batch result (AOBJ-OBJ-242)", "none",
                    absl::StrCat(resp.results(0).metadata().user_metadata_size(), " entries"));
        ctx.Require(resp.results(5).has_content_range() &&
                        resp.results(5).content_range().first() == 1000 &&
                        resp.results(5).content_range().last() == 1999 &&
                        resp.results(5).content_range().complete_length() == 5000,
                    "item 5: content_range 1000-1999/5000 (AOBJ-OBJ-241)", "1000-1999/5000",
                    resp.results(5).content_range().ShortDebugString());
        ctx.Require(!resp.results(0).has_content_range(),
                    "item 0: no content_range for a whole object", "none",
                    resp.results(0).content_range().ShortDebugString());
        for (int i : {3, 4, 6}) {
          const pb::GetObjectsResult& g = resp.results(i);
          ctx.Require(g.bytes_transferred() == 0 && g.checksum().empty() && !g.has_metadata(),
                      absl::StrCat("item ", i, ": an error and no other field (AOBJ-OBJ-240)"),
                      "error only", g.ShortDebugString());
          ctx.Require(g.error().message().size() <= 256,
                      absl::StrCat("item ", i, ": message of at most 256 octets (AOBJ-OBJ-242)"),
                      "<= 256", absl::StrCat(g.error().message().size()));
          ctx.Require(Untouched(*mem, i * slot, slot),
                      absl::StrCat("item ", i, ": its region untouched (AOBJ-OBJ-239)"),
                      "untouched", "written");
        }
      });

  Add(r, "obj/9.16/2",
      "BATCH_GET: a malformed batch fails whole, before any octet moves, at each threshold", "core",
      {"AOBJ-OBJ-237", "AOBJ-OBJ-238", "AOBJ-OBJ-240"}, true, [](CaseContext& ctx) {
        // max_transfer_bytes of 64 KiB, so that the regions' total can pass it.
        constexpr uint64_t kLimit = 65536;
        auto p = OpenBatch(ctx, kLimit);
        Renewer renew(ctx, *p);  // 1000-item batches can outlast the lease (AOBJ-SES-019)
        const std::string bucket = ctx.NewBucket(*p);
        const std::string content = Content(100, 163);
        ctx.RequireOk(p->Put(bucket, "o", content), "PUT of 100 octets");
        const uint64_t limit = p->session().limits().max_transfer_bytes();
        if (limit != kLimit) ctx.Unsupported("the target did not take max_transfer_bytes 65536");
        auto a = p->Allocate(kLimit);
        auto b = p->Allocate(kLimit);
        const bool multi = p->Negotiated(kCapMultiDescriptor);
        auto fresh = [&](int items) {
          std::memset(a->data(), kUntouched, a->size());
          std::memset(b->data(), kUntouched, b->size());
          pb::GetObjectsRequest req;
          req.set_bucket(bucket);
          *req.add_destination() = Peer::Descriptor(*a, 0, 4096);
          for (int i = 0; i < items; ++i) AddItem(&req, "o", 0, 0);
          return req;
        };
        auto nothing_written = [&](const std::string& what) {
          ctx.Require(Untouched(*a, 0, a->size()) && Untouched(*b, 0, b->size()),
                      what + ": nothing written (AOBJ-OBJ-238)", "untouched", "written");
        };
        // AOBJ-OBJ-237: 1 and 1000 items are fine; 0 and 1001 are not.
        ctx.RequireCode(p->Send(Method::kGetObjects, fresh(0)), ErrorCode::kInvalidArgument,
                        "no items");
        ctx.RequireCode(p->Send(Method::kGetObjects, fresh(1001)), ErrorCode::kInvalidArgument,
                        "1001 items");
        ctx.RequireOk(p->Send(Method::kGetObjects, fresh(1000)), "1000 empty regions");
        // AOBJ-OBJ-238: a region ending at the windows' end is fine; one octet past is not.
        pb::GetObjectsRequest edge = fresh(0);
        AddItem(&edge, "o", 4096 - 100, 100);
        ctx.RequireOk(p->Send(Method::kGetObjects, edge), "a region ending at the windows' end");
        pb::GetObjectsRequest past = fresh(0);
        AddItem(&past, "o", 4096 - 99, 100);
        ctx.RequireCode(p->Send(Method::kGetObjects, past), ErrorCode::kDescriptorTooSmall,
                        "a region one octet past the windows");
        nothing_written("a region past the windows");
        // Overlap by one octet, with a valid item first: the whole request fails.
        pb::GetObjectsRequest touching = fresh(0);
        AddItem(&touching, "o", 0, 100);
        AddItem(&touching, "o", 100, 100);
        ctx.RequireOk(p->Send(Method::kGetObjects, touching), "adjacent regions");
        pb::GetObjectsRequest overlap = fresh(0);
        AddItem(&overlap, "o", 0, 100);
        AddItem(&overlap, "o", 99, 100);
        ctx.RequireCode(p->Send(Method::kGetObjects, overlap), ErrorCode::kInvalidArgument,
                        "regions that overlap by one octet");
        nothing_written("overlapping regions");
        pb::GetObjectsRequest bad_key = fresh(0);
        AddItem(&bad_key, "o", 0, 100);
        AddItem(&bad_key, std::string(1025, 'k'), 200, 100);
        ctx.RequireCode(p->Send(Method::kGetObjects, bad_key), ErrorCode::kInvalidArgument,
                        "an item's key of 1025 octets");
        nothing_written("an invalid key");
        pb::GetObjectsRequest bad_range = fresh(0);
        AddItem(&bad_range, "o", 0, 100);
        pb::GetObjectsItem* br = AddItem(&bad_range, "o", 200, 100);
        br->mutable_range()->set_kind(pb::ByteRange::KIND_FIRST_LAST);
        br->mutable_range()->set_first(10);
        br->mutable_range()->set_last(9);
        ctx.RequireCode(p->Send(Method::kGetObjects, bad_range), ErrorCode::kInvalidArgument,
                        "an item's range with first > last");
        nothing_written("a malformed range");
        // The regions' total at the limit and one past it (two windows: MULTI_DESCRIPTOR).
        if (multi) {
          pb::GetObjectsRequest at = fresh(0);
          at.clear_destination();
          *at.add_destination() = Peer::Descriptor(*a, 0, kLimit);
          *at.add_destination() = Peer::Descriptor(*b, 0, kLimit);
          AddItem(&at, "o", 0, kLimit);
          ctx.RequireOk(p->Send(Method::kGetObjects, at), "regions totalling max_transfer_bytes");
          pb::GetObjectsRequest over = at;
          AddItem(&over, "o", kLimit, 1);
          std::memset(a->data(), kUntouched, a->size());
          ctx.RequireCode(p->Send(Method::kGetObjects, over), ErrorCode::kEntityTooLarge,
                          "regions totalling max_transfer_bytes + 1");
          nothing_written("regions over max_transfer_bytes");
        }
        // AOBJ-OBJ-240: a missing bucket fails the whole request.
        pb::GetObjectsRequest nb = fresh(0);
        nb.set_bucket(bucket + "-missing");
        AddItem(&nb, "o", 0, 100);
        ctx.RequireCode(p->Send(Method::kGetObjects, nb), MissingBucketCode(ctx),
                        "a bucket that does not exist");
        nothing_written("a missing bucket");
        ctx.RequireStillServes();
      });

  Add(r, "obj/9.16/3", "BATCH_GET: a session that did not negotiate it is refused GetObjects",
      "core", {"AOBJ-OBJ-236"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);  // DefaultOpen: BATCH_GET not offered
        ctx.Require(!f.p->Negotiated(kCapBatchGet),
                    "BATCH_GET not negotiated when the client did not offer it (AOBJ-SES-005)",
                    "absent", "negotiated");
        ctx.RequireOk(f.p->Put(f.bucket, "o", Content(10, 164)), "PUT");
        auto mem = f.p->Allocate(4096);
        std::memset(mem->data(), kUntouched, mem->size());
        pb::GetObjectsRequest req;
        req.set_bucket(f.bucket);
        *req.add_destination() = Peer::Descriptor(*mem, 0, 4096);
        AddItem(&req, "o", 0, 4096);
        ctx.RequireCode(f.p->Send(Method::kGetObjects, req), ErrorCode::kInvalidArgument,
                        "GetObjects without BATCH_GET");
        ctx.Require(Untouched(*mem, 0, 4096), "nothing written", "untouched", "written");
      });

  Add(r, "obj/9.16/4", "BATCH_GET on the fast path: 1000 items in one frame each way", "fast-path",
      {"AOBJ-DAT-167", "AOBJ-OBJ-242"}, false, [](CaseContext& ctx) {
        auto p = OpenBatch(ctx, 0, kCapFastPath);
        Renewer renew(ctx, *p);  // 1000-item batches can outlast the lease (AOBJ-SES-019)
        p->UseFastPath();
        const std::string bucket = ctx.NewBucket(*p);
        const std::string content = Content(64, 165);
        ctx.RequireOk(p->Put(bucket, "tile", content), "PUT of 64 octets");
        auto mem = p->Allocate(1000 * 64);
        pb::GetObjectsRequest req;
        req.set_bucket(bucket);
        *req.add_destination() = Peer::Descriptor(*mem, 0, mem->size());
        for (int i = 0; i < 1000; ++i) AddItem(&req, "tile", i * 64, 64);
        RawReply rr = p->Send(Method::kGetObjects, req);
        ctx.RequireOk(rr, "GetObjects of 1000 items on the fast path");
        auto resp = Parse<pb::GetObjectsResponse>(ctx, rr, "GetObjectsResponse");
        int ok = 0;
        for (const pb::GetObjectsResult& g : resp.results()) ok += g.has_error() ? 0 : 1;
        ctx.Require(ok == 1000, "1000 results without error", "1000", absl::StrCat(ok));
        bool same = true;
        for (int i = 0; i < 1000 && same; ++i) {
          same = std::memcmp(mem->data() + i * 64, content.data(), 64) == 0;
        }
        ctx.Require(same, "every region holds the object", "the object's octets", "other octets");
      });
  Add(r, "obj/9.17/1",
      "BATCH_PUT: each item stored as a PutObject of its own, or its own error and nothing stored",
      "core", {"AOBJ-OBJ-248", "AOBJ-OBJ-249", "AOBJ-OBJ-250", "AOBJ-OBJ-251", "AOBJ-DAT-005"},
      true, [](CaseContext& ctx) {
        auto p = OpenBatch(ctx, 0, 0, kCapBatchPut);
        Renewer renew(ctx, *p);  // 1000-item batches can outlast the lease (AOBJ-SES-019)
        const std::string bucket = ctx.NewBucket(*p);
        const std::string old_content = Content(300, 170);
        ctx.RequireOk(p->Put(bucket, "kept", old_content), "PUT of the object a bad item names");
        ctx.RequireOk(p->Put(bucket, "replaced", old_content), "PUT of an object to replace");
        const std::string small = Content(100, 171);
        const std::string mid = Content(5000, 172);
        // Regions: small at 0, mid at 100; "overlap" reads octets 50..149 (overlapping both).
        auto mem = p->Allocate(small.size() + mid.size());
        std::memcpy(mem->data(), small.data(), small.size());
        std::memcpy(mem->data() + small.size(), mid.data(), mid.size());
        const std::string overlap =
            std::string(reinterpret_cast<const char*>(mem->data()) + 50, 100);
        pb::PutObjectsRequest req;
        req.set_bucket(bucket);
        req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        *req.add_source() = Peer::Descriptor(*mem, 0, mem->size());
        AddPut(&req, "small", 0, small);                                        // 0
        AddPut(&req, "mid", small.size(), mid)->set_content_type("image/png");  // 1
        AddPut(&req, "empty", 0, "");                                           // 2
        pb::PutObjectsItem* bad = AddPut(&req, "kept", 0, small);               // 3: bad checksum
        std::string wrong = bad->checksum();
        wrong[0] = static_cast<char>(wrong[0] ^ 0x01);
        bad->set_checksum(wrong);
        AddPut(&req, "overlap", 50, overlap);                           // 4
        AddPut(&req, "replaced", small.size(), mid);                    // 5
        pb::PutObjectsItem* bad_new = AddPut(&req, "never", 0, small);  // 6: bad, new key
        bad_new->set_checksum(wrong);
        RawReply rr = p->Send(Method::kPutObjects, req);
        ctx.RequireOk(rr, "PutObjects of seven items");
        auto resp = Parse<pb::PutObjectsResponse>(ctx, rr, "PutObjectsResponse");
        ctx.Require(resp.results_size() == req.items_size(), "one result per item (AOBJ-OBJ-249)",
                    absl::StrCat(req.items_size()), absl::StrCat(resp.results_size()));
        const std::vector<std::string> want = {"OK", "OK", "OK",        "BAD_DIGEST",
                                               "OK", "OK", "BAD_DIGEST"};
        for (int i = 0; i < req.items_size(); ++i) {
          ctx.Require(CodeOfPut(resp.results(i)) == want[i],
                      absl::StrCat("item ", i, "'s result, in the items' order (AOBJ-OBJ-249)"),
                      want[i], CodeOfPut(resp.results(i)));
        }
        // AOBJ-OBJ-250 and AOBJ-OBJ-248: checksum, metadata and ETag of each stored item, and
        // the object readable afterwards with exactly its region's octets.
        const std::vector<std::pair<int, std::string>> stored = {
            {0, small}, {1, mid}, {2, ""}, {4, overlap}, {5, mid}};
        const std::vector<std::string> keys = {"small",   "mid",      "empty", "kept",
                                               "overlap", "replaced", "never"};
        for (const auto& [i, e] : stored) {
          const pb::PutObjectsResult& g = resp.results(i);
          ctx.Require(g.checksum() == Crc32cOf(e),
                      absl::StrCat("item ", i, ": CRC32C of the octets received (AOBJ-OBJ-250)"),
                      Hex(Crc32cOf(e)), Hex(g.checksum()));
          ctx.Require(g.metadata().size() == e.size() && g.metadata().etag() == Md5Etag(e),
                      absl::StrCat("item ", i, ": metadata size and MD5 ETag (AOBJ-OBJ-005)"),
                      absl::StrCat(e.size(), " ", Md5Etag(e)),
                      absl::StrCat(g.metadata().size(), " ", g.metadata().etag()));
          ctx.Require(g.metadata().user_metadata().empty(),
                      absl::StrCat("item ", i, ": no user_metadata (AOBJ-OBJ-250)"), "none",
                      absl::StrCat(g.metadata().user_metadata_size(), " entries"));
          std::string back;
          ctx.RequireOk(p->Get(bucket, keys[i], &back), absl::StrCat("GET of ", keys[i]));
          ctx.Require(back == e, absl::StrCat(keys[i], ": the item's octets, stored"),
                      absl::StrCat(e.size(), " octets of the region"),
                      absl::StrCat(back.size(), " octets, other content"));
        }
        pb::HeadObjectResponse head;
        ctx.RequireOk(p->Head(bucket, "mid", &head), "HEAD of mid");
        ctx.Require(head.metadata().content_type() == "image/png",
                    "mid: the item's content type (AOBJ-OBJ-248)", "image/png",
                    head.metadata().content_type());
        for (int i : {3, 6}) {
          const pb::PutObjectsResult& g = resp.results(i);
          ctx.Require(g.checksum().empty() && !g.has_metadata(),
                      absl::StrCat("item ", i, ": an error and no other field (AOBJ-OBJ-249)"),
                      "error only", g.ShortDebugString());
          ctx.Require(g.error().message().size() <= 256,
                      absl::StrCat("item ", i, ": message of at most 256 octets (AOBJ-OBJ-250)"),
                      "<= 256", absl::StrCat(g.error().message().size()));
        }
        std::string kept;
        ctx.RequireOk(p->Get(bucket, "kept", &kept), "GET of kept");
        ctx.Require(kept == old_content,
                    "a bad item leaves the key's object unchanged (AOBJ-OBJ-249, AOBJ-DAT-005)",
                    "the old object", absl::StrCat(kept.size(), " octets of other content"));
        ctx.RequireCode(p->Head(bucket, "never"), ErrorCode::kNoSuchKey,
                        "a bad item on a new key stores nothing");
      });

  Add(r, "obj/9.17/2",
      "BATCH_PUT: a malformed batch fails whole, before anything is stored, at each threshold",
      "core", {"AOBJ-OBJ-246", "AOBJ-OBJ-247", "AOBJ-OBJ-249"}, true, [](CaseContext& ctx) {
        constexpr uint64_t kLimit = 65536;
        auto p = OpenBatch(ctx, kLimit, 0, kCapBatchPut);
        Renewer renew(ctx, *p);  // 1000-item batches can outlast the lease (AOBJ-SES-019)
        const std::string bucket = ctx.NewBucket(*p);
        const uint64_t limit = p->session().limits().max_transfer_bytes();
        if (limit != kLimit) ctx.Unsupported("the target did not take max_transfer_bytes 65536");
        auto a = p->Allocate(kLimit);
        auto b = p->Allocate(kLimit);
        std::memset(a->data(), 7, a->size());
        std::memset(b->data(), 7, b->size());
        const bool multi = p->Negotiated(kCapMultiDescriptor);
        const std::string ten(10, '\7');
        int n = 0;  // each request's valid item has a key of its own
        std::string probe;
        auto fresh = [&](int items) {
          pb::PutObjectsRequest req;
          req.set_bucket(bucket);
          req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
          *req.add_source() = Peer::Descriptor(*a, 0, 4096);
          probe = absl::StrCat("probe-", n++);
          for (int i = 0; i < items; ++i) AddPut(&req, absl::StrCat(probe, "-", i), 0, ten);
          return req;
        };
        auto nothing_stored = [&](const std::string& what) {
          ctx.RequireCode(p->Head(bucket, probe + "-0"), ErrorCode::kNoSuchKey,
                          what + ": nothing stored (AOBJ-OBJ-247)");
        };
        auto refused = [&](const pb::PutObjectsRequest& req, ErrorCode code,
                           const std::string& what) {
          ctx.RequireCode(p->Send(Method::kPutObjects, req), code, what);
          nothing_stored(what);
        };
        // AOBJ-OBJ-246: 1 and 1000 items are fine; 0 and 1001 are not.
        refused(fresh(0), ErrorCode::kInvalidArgument, "no items");
        refused(fresh(1001), ErrorCode::kInvalidArgument, "1001 items");
        ctx.RequireOk(p->Send(Method::kPutObjects, fresh(1000)), "1000 items of 10 octets");
        // AOBJ-OBJ-247, each with a valid item first.
        pb::PutObjectsRequest edge = fresh(1);
        AddPut(&edge, "edge", 4096 - 10, ten);
        ctx.RequireOk(p->Send(Method::kPutObjects, edge), "a region ending at the windows' end");
        pb::PutObjectsRequest past = fresh(1);
        AddPut(&past, "past", 4096 - 9, ten);
        refused(past, ErrorCode::kDescriptorTooSmall, "a region one octet past the windows");
        pb::PutObjectsRequest dup = fresh(1);
        AddPut(&dup, probe + "-0", 100, ten);
        refused(dup, ErrorCode::kInvalidArgument, "two items of one key");
        pb::PutObjectsRequest bad_key = fresh(1);
        AddPut(&bad_key, std::string(1025, 'k'), 0, ten);
        refused(bad_key, ErrorCode::kInvalidArgument, "an item's key of 1025 octets");
        pb::PutObjectsRequest short_sum = fresh(1);
        AddPut(&short_sum, "short", 0, ten)->set_checksum("abc");
        refused(short_sum, ErrorCode::kInvalidArgument, "a checksum of 3 octets for CRC32C");
        pb::PutObjectsRequest type_ok = fresh(1);
        AddPut(&type_ok, "type", 0, ten)->set_content_type(std::string(256, 't'));
        ctx.RequireOk(p->Send(Method::kPutObjects, type_ok), "a content type of 256 octets");
        pb::PutObjectsRequest type_long = fresh(1);
        AddPut(&type_long, "type-long", 0, ten)->set_content_type(std::string(257, 't'));
        refused(type_long, ErrorCode::kInvalidArgument, "a content type of 257 octets");
        pb::PutObjectsRequest no_algo = fresh(1);
        no_algo.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_UNSPECIFIED);
        ctx.RequireCode(p->Send(Method::kPutObjects, no_algo), ErrorCode::kInvalidArgument,
                        "no checksum algorithm (AOBJ-DAT-020)");
        nothing_stored("no checksum algorithm");
        if (multi) {
          const std::string whole(kLimit, '\7');
          pb::PutObjectsRequest at = fresh(0);
          at.clear_source();
          *at.add_source() = Peer::Descriptor(*a, 0, kLimit);
          *at.add_source() = Peer::Descriptor(*b, 0, kLimit);
          probe = absl::StrCat("probe-", n++);
          AddPut(&at, probe + "-0", 0, whole);
          ctx.RequireOk(p->Send(Method::kPutObjects, at), "regions totalling max_transfer_bytes");
          pb::PutObjectsRequest over = at;
          probe = absl::StrCat("probe-", n++);
          over.mutable_items(0)->set_key(probe + "-0");
          AddPut(&over, "one-more", kLimit, std::string(1, '\7'));
          refused(over, ErrorCode::kEntityTooLarge, "regions totalling max_transfer_bytes + 1");
        }
        pb::PutObjectsRequest nb = fresh(1);
        nb.set_bucket(bucket + "-missing");
        ctx.RequireCode(p->Send(Method::kPutObjects, nb), MissingBucketCode(ctx),
                        "a bucket that does not exist");
        ctx.RequireStillServes();
      });

  Add(r, "obj/9.17/3", "BATCH_PUT: a session that did not negotiate it is refused PutObjects",
      "core", {"AOBJ-OBJ-245"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);  // DefaultOpen: BATCH_PUT not offered
        ctx.Require(!f.p->Negotiated(kCapBatchPut),
                    "BATCH_PUT not negotiated when the client did not offer it (AOBJ-SES-005)",
                    "absent", "negotiated");
        const std::string content = Content(10, 173);
        auto mem = f.p->Allocate(4096);
        std::memcpy(mem->data(), content.data(), content.size());
        pb::PutObjectsRequest req;
        req.set_bucket(f.bucket);
        req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        *req.add_source() = Peer::Descriptor(*mem, 0, 4096);
        AddPut(&req, "o", 0, content);
        ctx.RequireCode(f.p->Send(Method::kPutObjects, req), ErrorCode::kInvalidArgument,
                        "PutObjects without BATCH_PUT");
        ctx.RequireCode(f.p->Head(f.bucket, "o"), ErrorCode::kNoSuchKey, "nothing stored");
      });

  Add(r, "obj/9.17/4", "BATCH_PUT on the fast path: 1000 items in one frame each way, opaque ETags",
      "fast-path", {"AOBJ-DAT-167", "AOBJ-OBJ-250", "AOBJ-OBJ-016"}, false, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest open = p->DefaultOpen();
        for (uint32_t c : {kCapBatchPut, kCapFastPath, kCapOpaqueEtag}) open.add_capabilities(c);
        ctx.RequireOk(p->Open(open), "OpenSession offering BATCH_PUT, FAST_PATH and OPAQUE_ETAG");
        RequireCapability(ctx, *p, kCapBatchPut, "BATCH_PUT");
        RequireCapability(ctx, *p, kCapOpaqueEtag, "OPAQUE_ETAG");
        Renewer renew(ctx, *p);  // 1000-item batches can outlast the lease (AOBJ-SES-019)
        p->UseFastPath();
        const std::string bucket = ctx.NewBucket(*p);
        auto mem = p->Allocate(1000 * 64);
        pb::PutObjectsRequest req;
        req.set_bucket(bucket);
        req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        *req.add_source() = Peer::Descriptor(*mem, 0, mem->size());
        for (int i = 0; i < 1000; ++i) {
          const std::string c = Content(64, 200 + i);
          std::memcpy(mem->data() + i * 64, c.data(), 64);
          AddPut(&req, absl::StrCat("tile/", i), i * 64, c);
        }
        RawReply rr = p->Send(Method::kPutObjects, req);
        ctx.RequireOk(rr, "PutObjects of 1000 items on the fast path");
        auto resp = Parse<pb::PutObjectsResponse>(ctx, rr, "PutObjectsResponse");
        int ok = 0;
        int opaque = 0;
        for (const pb::PutObjectsResult& g : resp.results()) {
          ok += g.has_error() ? 0 : 1;
          opaque += IsOpaqueForm(g.metadata().etag()) ? 1 : 0;
        }
        ctx.Require(ok == 1000, "1000 results without error", "1000", absl::StrCat(ok));
        ctx.Require(opaque == 1000, "1000 opaque ETags in an OPAQUE_ETAG session (AOBJ-OBJ-016)",
                    "1000", absl::StrCat(opaque));
        std::string back;
        ctx.RequireOk(p->Get(bucket, "tile/999", &back), "GET of the last item");
        ctx.Require(back == Content(64, 1199), "the last item's octets", "64 octets",
                    absl::StrCat(back.size(), " octets, other content"));
      });

  // dat/13.7/1's stalled client, mid-batch: the batch is one data request, so its RMA is bounded
  // the same way, and its failure is the whole request's.
  Add(r, "obj/9.17/5",
      "a stalled client mid-PutObjects: TRANSFER_FAILED within the bound, no results, nothing "
      "stored, then DATA_CHANNEL_UNAVAILABLE for its GetObjects",
      "core", {"AOBJ-OBJ-251", "AOBJ-OBJ-248", "AOBJ-OPS-008", "AOBJ-DAT-158"}, true,
      [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        uint32_t bound_ms = 0;
        auto stalled = OpenStalled(ctx, &bound_ms);
        RequireCapability(ctx, *stalled, kCapBatchPut, "BATCH_PUT");
        constexpr size_t kItem = 1 << 20;
        constexpr int kItems = 4;
        auto heap = stalled->RegisterHeap(kItem * kItems, 0x5a);
        const std::string content(kItem, '\x5a');
        pb::PutObjectsRequest req;
        req.set_bucket(f.bucket);
        req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        *req.add_source() = Peer::Descriptor(*heap, 0, kItem * kItems);
        for (int i = 0; i < kItems; ++i)
          AddPut(&req, absl::StrCat("stalled-", i), i * kItem, content);
        RawReply put =
            SendStalled(ctx, *stalled, Method::kPutObjects, req, bound_ms, kItem * kItems);
        if (put.status.ok()) {
          // Only a server whose RMA read the memory without this side's progress (hardware RMA)
          // may answer OK, and then it stored every item: anything less is a failed read
          // answered as a success (AOBJ-OBJ-251).
          const auto resp = Parse<pb::PutObjectsResponse>(ctx, put, "PutObjects");
          int stored = 0;
          for (int i = 0; i < resp.results_size() && i < kItems; ++i) {
            if (!resp.results(i).has_error() &&
                f.p->Head(f.bucket, absl::StrCat("stalled-", i)).status.ok()) {
              ++stored;
            }
          }
          ctx.Require(resp.results_size() == kItems && stored == kItems,
                      "an OK reply means every item was read and stored (AOBJ-OBJ-251)",
                      absl::StrCat(kItems, " results, ", kItems, " objects"),
                      absl::StrCat(resp.results_size(), " results, ", stored, " objects"));
          ctx.Unsupported("the server's RMA did not need the client's progress (HARDWARE)");
        }
        ctx.RequireCode(put, ErrorCode::kTransferFailed,
                        "PutObjects from memory nobody serves (AOBJ-OBJ-251: the whole request)");
        // The first item's octets never arrived, and items are stored in order (AOBJ-OBJ-248).
        for (int i = 0; i < kItems; ++i) {
          ctx.RequireCode(f.p->Head(f.bucket, absl::StrCat("stalled-", i)), ErrorCode::kNoSuchKey,
                          absl::StrCat("HEAD of item ", i, " of the failed batch"));
        }
        ctx.RequireOk(f.p->Put(f.bucket, "small", "small"),
                      "PUT of a small object by another session");
        if (stalled->Negotiated(kCapBatchGet)) {
          auto win = stalled->RegisterHeap(4096, 0);
          pb::GetObjectsRequest g;
          g.set_bucket(f.bucket);
          g.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
          *g.add_destination() = Peer::Descriptor(*win, 0, 4096);
          AddItem(&g, "small", 0, 5);
          RawReply got = stalled->Send(Method::kGetObjects, g);
          ctx.RequireCode(got, ErrorCode::kDataChannelUnavailable,
                          "a GetObjects in the session whose data channel failed (AOBJ-DAT-158)");
          ctx.Require(got.error.message().find("data channel") != std::string::npos,
                      "the message says the data channel failed", "mentions the data channel",
                      got.error.message());
        }
        ctx.RequireCode(stalled->Send(Method::kPutObjects, req), ErrorCode::kDataChannelUnavailable,
                        "the same PutObjects again");
        ctx.RequireOk(stalled->Send(Method::kRenewSession, pb::RenewSessionRequest()),
                      "RenewSession again, after the refused requests");
        ctx.RequireStillServes();
      });

  Add(r, "obj/9.16/5",
      "a stalled client mid-GetObjects: TRANSFER_FAILED within the bound and no results, then "
      "DATA_CHANNEL_UNAVAILABLE for its next batch",
      "core", {"AOBJ-OBJ-243", "AOBJ-OPS-008", "AOBJ-DAT-158"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        constexpr size_t kItem = 1 << 20;
        constexpr int kItems = 4;
        std::vector<std::string> contents;
        for (int i = 0; i < kItems; ++i) {
          contents.push_back(Content(kItem, 500 + i));
          ctx.RequireOk(f.p->Put(f.bucket, absl::StrCat("big-", i), contents.back()),
                        absl::StrCat("PUT of object ", i, " by another session"));
        }
        uint32_t bound_ms = 0;
        auto stalled = OpenStalled(ctx, &bound_ms);
        RequireCapability(ctx, *stalled, kCapBatchGet, "BATCH_GET");
        auto heap = stalled->RegisterHeap(kItem * kItems, kUntouched);
        pb::GetObjectsRequest req;
        req.set_bucket(f.bucket);
        req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        *req.add_destination() = Peer::Descriptor(*heap, 0, kItem * kItems);
        for (int i = 0; i < kItems; ++i) AddItem(&req, absl::StrCat("big-", i), i * kItem, kItem);
        RawReply got =
            SendStalled(ctx, *stalled, Method::kGetObjects, req, bound_ms, kItem * kItems);
        if (got.status.ok()) {
          // Only a server whose RMA wrote without this side's progress (hardware RMA) may answer
          // OK, and then every item is in its region.
          const auto resp = Parse<pb::GetObjectsResponse>(ctx, got, "GetObjects");
          int whole = 0;
          for (int i = 0; i < resp.results_size() && i < kItems; ++i) {
            const bool moved =
                !resp.results(i).has_error() && resp.results(i).bytes_transferred() == kItem &&
                std::memcmp(heap->data() + i * kItem, contents[i].data(), kItem) == 0;
            whole += moved ? 1 : 0;
          }
          ctx.Require(resp.results_size() == kItems && whole == kItems,
                      "an OK reply means every item was written (AOBJ-OBJ-243)",
                      absl::StrCat(kItems, " items in their regions"),
                      absl::StrCat(resp.results_size(), " results, ", whole, " items in place"));
          ctx.Unsupported("the server's RMA did not need the client's progress (HARDWARE)");
        }
        ctx.RequireCode(got, ErrorCode::kTransferFailed,
                        "GetObjects into memory nobody serves (AOBJ-OBJ-243: the whole request)");
        RawReply again = stalled->Send(Method::kGetObjects, req);
        ctx.RequireCode(again, ErrorCode::kDataChannelUnavailable,
                        "the same GetObjects again (AOBJ-DAT-158)");
        ctx.Require(again.error.message().find("data channel") != std::string::npos,
                    "the message says the data channel failed", "mentions the data channel",
                    again.error.message());
        ctx.RequireOk(stalled->Head(f.bucket, "big-0"),
                      "HeadObject in the session whose data channel failed");
        ctx.RequireStillServes();
      });

  Add(r, "obj/9.17/6",
      "BATCH_PUT with CRC-64/NVME: each stored item's metadata carries a full-object checksum "
      "that matches its octets, and a CRC32C GET of it reports its octets' CRC32C",
      "core", {"AOBJ-OBJ-248", "AOBJ-OBJ-250", "AOBJ-OBJ-012", "AOBJ-DAT-004"}, false,
      [](CaseContext& ctx) {
        auto p = OpenBatch(ctx, 0, kCapCrc64, kCapBatchPut);
        RequireCapability(ctx, *p, kCapCrc64, "CRC64NVME");
        const std::string bucket = ctx.NewBucket(*p);
        const std::vector<std::string> contents = {Content(100, 180), Content(70000, 181),
                                                   Content(1, 182)};
        std::string all;
        for (const std::string& c : contents) all += c;
        auto mem = p->Allocate(all.size());
        std::memcpy(mem->data(), all.data(), all.size());
        pb::PutObjectsRequest req;
        req.set_bucket(bucket);
        req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC64NVME);
        *req.add_source() = Peer::Descriptor(*mem, 0, mem->size());
        uint64_t offset = 0;
        for (size_t i = 0; i < contents.size(); ++i) {
          AddPut(&req, absl::StrCat("crc64-", i), offset, contents[i])
              ->set_checksum(Crc64Of(contents[i]));
          offset += contents[i].size();
        }
        RawReply rr = p->Send(Method::kPutObjects, req);
        ctx.RequireOk(rr, "PutObjects of three items with CRC-64/NVME");
        auto resp = Parse<pb::PutObjectsResponse>(ctx, rr, "PutObjectsResponse");
        ctx.Require(resp.results_size() == req.items_size(), "one result per item", "3",
                    absl::StrCat(resp.results_size()));
        // The full-object checksum of ObjectMetadata, in whichever algorithm it names.
        auto matches = [](const pb::ObjectMetadata& m, const std::string& c) {
          return (m.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C &&
                  m.checksum() == Crc32cOf(c)) ||
                 (m.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC64NVME &&
                  m.checksum() == Crc64Of(c));
        };
        for (size_t i = 0; i < contents.size(); ++i) {
          const std::string& c = contents[i];
          const std::string key = absl::StrCat("crc64-", i);
          const pb::PutObjectsResult& g = resp.results(static_cast<int>(i));
          ctx.Require(!g.has_error() && g.checksum() == Crc64Of(c),
                      absl::StrCat(key,
                                   ": stored, with the CRC-64/NVME of its octets "
                                   "(AOBJ-OBJ-250)"),
                      Hex(Crc64Of(c)), g.has_error() ? CodeOfPut(g) : Hex(g.checksum()));
          ctx.Require(
              matches(g.metadata(), c),
              absl::StrCat(key,
                           ": the result's metadata checksum is its octets' "
                           "(AOBJ-OBJ-012)"),
              absl::StrCat("CRC32C ", Hex(Crc32cOf(c)), " or CRC-64/NVME ", Hex(Crc64Of(c))),
              g.metadata().ShortDebugString());
          pb::HeadObjectResponse head;
          ctx.RequireOk(p->Head(bucket, key, &head), absl::StrCat("HEAD of ", key));
          ctx.Require(
              matches(head.metadata(), c),
              absl::StrCat(key, ": HEAD's checksum is its octets' (AOBJ-OBJ-012)"),
              absl::StrCat("CRC32C ", Hex(Crc32cOf(c)), " or CRC-64/NVME ", Hex(Crc64Of(c))),
              head.metadata().ShortDebugString());
          std::string back;
          pb::GetObjectResponse get;
          ctx.RequireOk(p->Get(bucket, key, &back, &get), absl::StrCat("CRC32C GET of ", key));
          ctx.Require(back == c && get.checksum() == Crc32cOf(c),
                      absl::StrCat(key, ": its octets, with their CRC32C (AOBJ-DAT-004)"),
                      absl::StrCat(c.size(), " octets, CRC32C ", Hex(Crc32cOf(c))),
                      absl::StrCat(back.size(), " octets, CRC32C ", Hex(get.checksum())));
        }
      });
  Add(r, "obj/9.17/7",
      "the MULTI_DESCRIPTOR rule on a batch's windows: GetObjects and PutObjects carrying two "
      "windows in a session that did not negotiate it are INVALID_DESCRIPTOR, and nothing is "
      "written into the windows or stored",
      "core", {"AOBJ-MEM-015", "AOBJ-OBJ-238", "AOBJ-OBJ-247"}, true, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest open = p->DefaultOpen();
        open.clear_capabilities();
        for (uint32_t c : {kCapCrc32c, kCapBatchGet, kCapBatchPut}) open.add_capabilities(c);
        ctx.RequireOk(p->Open(open),
                      "OpenSession offering BATCH_GET and BATCH_PUT without MULTI_DESCRIPTOR");
        ctx.Require(!p->Negotiated(kCapMultiDescriptor),
                    "MULTI_DESCRIPTOR not negotiated when the client did not offer it "
                    "(AOBJ-SES-005)",
                    "absent", "negotiated");
        const bool get = p->Negotiated(kCapBatchGet), put = p->Negotiated(kCapBatchPut);
        if (!get && !put) ctx.Unsupported("the target negotiated neither BATCH_GET nor BATCH_PUT");
        const std::string bucket = ctx.NewBucket(*p);
        const std::string content = Content(3000, 190);
        auto mem = p->Allocate(2 * content.size());
        if (get) {
          ctx.RequireOk(p->Put(bucket, "stored", content), "PUT of the object to read");
          std::memset(mem->data(), kUntouched, mem->size());
          pb::GetObjectsRequest req;
          req.set_bucket(bucket);
          *req.add_destination() = Peer::Descriptor(*mem, 0, content.size());
          *req.add_destination() = Peer::Descriptor(*mem, content.size(), content.size());
          AddItem(&req, "stored", 0, content.size());
          AddItem(&req, "stored", content.size(), content.size());
          ctx.RequireCode(p->Send(Method::kGetObjects, req), ErrorCode::kInvalidDescriptor,
                          "GetObjects into two windows without MULTI_DESCRIPTOR");
          ctx.Require(Untouched(*mem, 0, mem->size()), "nothing written into either window",
                      "untouched", "written");
          // One window, the same items: the refusal was about the count alone.
          req.clear_destination();
          *req.add_destination() = Peer::Descriptor(*mem, 0, mem->size());
          ctx.RequireOk(p->Send(Method::kGetObjects, req),
                        "the same GetObjects into one window covering both");
        } else {
          ctx.Note("BATCH_GET not negotiated: only PutObjects checked");
        }
        if (put) {
          std::memcpy(mem->data(), content.data(), content.size());
          std::memcpy(mem->data() + content.size(), content.data(), content.size());
          pb::PutObjectsRequest req;
          req.set_bucket(bucket);
          req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
          *req.add_source() = Peer::Descriptor(*mem, 0, content.size());
          *req.add_source() = Peer::Descriptor(*mem, content.size(), content.size());
          AddPut(&req, "two-windows-a", 0, content);
          AddPut(&req, "two-windows-b", content.size(), content);
          ctx.RequireCode(p->Send(Method::kPutObjects, req), ErrorCode::kInvalidDescriptor,
                          "PutObjects from two windows without MULTI_DESCRIPTOR");
          for (const char* key : {"two-windows-a", "two-windows-b"}) {
            ctx.RequireCode(p->Head(bucket, key), ErrorCode::kNoSuchKey,
                            absl::StrCat("HEAD of ", key,
                                         ": the refused PutObjects stored "
                                         "nothing"));
          }
          req.clear_source();
          *req.add_source() = Peer::Descriptor(*mem, 0, mem->size());
          ctx.RequireOk(p->Send(Method::kPutObjects, req),
                        "the same PutObjects from one window covering both");
        } else {
          ctx.Note("BATCH_PUT not negotiated: only GetObjects checked");
        }
        ctx.RequireStillServes();
      });
}

}  // namespace aobj::conformance
