// Section 9.16: GetObjects, batched reads into one scatter list (capability BATCH_GET). Each case
// opens a session that offers BATCH_GET; a target that does not negotiate it reports the cases
// UNSUPPORTED, except obj/9.16/3, which checks that such a session is refused GetObjects.
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "conformance/src/cases_util.h"

namespace aobj::conformance {
namespace {

constexpr uint32_t kCapBatchGet = 8;
constexpr uint32_t kCapFastPath = 7;
constexpr uint8_t kUntouched = 0x5a;

// A confirmed session that offered BATCH_GET (and MULTI_DESCRIPTOR), with `extra` offered too.
std::unique_ptr<Peer> OpenBatch(CaseContext& ctx, uint64_t max_transfer_bytes = 0,
                                uint32_t extra = 0) {
  auto p = ctx.NewPeer();
  pb::OpenSessionRequest open = p->DefaultOpen();
  open.add_capabilities(kCapBatchGet);
  if (extra != 0) open.add_capabilities(extra);
  if (max_transfer_bytes != 0) {
    open.mutable_requested_limits()->set_max_transfer_bytes(max_transfer_bytes);
  }
  ctx.RequireOk(p->Open(open), "OpenSession offering BATCH_GET, and ConfirmEndpoint");
  RequireCapability(ctx, *p, kCapBatchGet, "BATCH_GET");
  return p;
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

}  // namespace

void RegisterBatchCases(Registry& r) {
  Add(r, "obj/9.16/1",
      "BATCH_GET: each item gets its object, range or own error; failed regions stay untouched",
      "core", {"AOBJ-OBJ-239", "AOBJ-OBJ-240", "AOBJ-OBJ-241", "AOBJ-OBJ-242", "AOBJ-OBJ-243"},
      false, [](CaseContext& ctx) {
        auto p = OpenBatch(ctx);
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
}

}  // namespace aobj::conformance
