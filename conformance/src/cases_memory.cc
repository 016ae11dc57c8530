// Cases for spec section 7 (memory descriptors): validation, ordered fill, access rules.
#include <sys/shm.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "conformance/src/cases_util.h"
#include "transport/rkey_check.h"

namespace aobj::conformance {
namespace {

// The key must not exist (a refused PUT commits nothing).
void RequireAbsent(CaseContext& ctx, Peer& p, const std::string& bucket, const std::string& key) {
  ctx.RequireCode(p.Head(bucket, key), ErrorCode::kNoSuchKey, "the refused PUT committed nothing");
}

bool AllBytes(const RegisteredMemory& m, size_t from, size_t to, uint8_t v) {
  for (size_t i = from; i < to; ++i) {
    if (m.data()[i] != v) return false;
  }
  return true;
}

// A GET request that does not accept inline bodies.
pb::GetObjectRequest Get(Peer& p, const std::string& bucket, const std::string& key,
                         const RegisteredMemory& m, uint64_t len) {
  pb::GetObjectRequest g = p.GetRequest(bucket, key, m, len);
  g.set_accept_inline(false);
  return g;
}

// The System V segment that holds `address` in this process (UCX's sysv allocator backs the
// suite's registered memory on shared-memory transports): its shmid, or -1.
int SegmentOf(const void* address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto a = reinterpret_cast<uintptr_t>(address);
  while (std::getline(maps, line)) {
    if (line.find("/SYSV") == std::string::npos) continue;
    std::istringstream in(line);
    std::string range, perms, offset, dev;
    unsigned long inode = 0;
    in >> range >> perms >> offset >> dev >> inode;
    const auto dash = range.find('-');
    const uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (a >= lo && a < hi) return static_cast<int>(inode);  // the inode of a SysV mapping is its shmid
  }
  return -1;
}

// Processes attached to segment `id` (shm_nattch), or -1.
long Attached(int id) {
  shmid_ds ds{};
  if (shmctl(id, IPC_STAT, &ds) != 0) return -1;
  return static_cast<long>(ds.shm_nattch);
}

}  // namespace

void RegisterMemoryCases(Registry& r) {
  Add(r, "mem/7.2/1", "a descriptor of length 0, or one that wraps around: INVALID_DESCRIPTOR",
      "core", {"AOBJ-MEM-001", "AOBJ-MEM-002"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        auto m = f.p->Allocate(4096);
        pb::PutObjectRequest put = f.p->PutRequest(f.bucket, "k", *m, 4096);
        put.mutable_source(0)->set_length(0);
        ctx.RequireCode(f.p->Send(Method::kPutObject, put), ErrorCode::kInvalidDescriptor,
                        "PUT with a zero-length window");
        RequireAbsent(ctx, *f.p, f.bucket, "k");
        ctx.RequireOk(f.p->Put(f.bucket, "k", Content(4096)), "PUT of 4 KiB");
        pb::GetObjectRequest g = Get(*f.p, f.bucket, "k", *m, 4096);
        g.mutable_destination(0)->set_address(UINT64_MAX - 100);
        ctx.RequireCode(f.p->Send(Method::kGetObject, g), ErrorCode::kInvalidDescriptor,
                        "GET into a window from 2^64-101 of 4096 octets");
        g = Get(*f.p, f.bucket, "k", *m, 4096);
        g.mutable_destination(0)->set_length(0);
        ctx.RequireCode(f.p->Send(Method::kGetObject, g), ErrorCode::kInvalidDescriptor,
                        "GET into a zero-length window");
        ctx.RequireStillServes();
      });
  Add(r, "mem/7.2/2", "an empty, oversized or garbage rkey: INVALID_RKEY", "core",
      {"AOBJ-MEM-003", "AOBJ-MEM-004", "AOBJ-TRN-014"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        auto m = f.p->Allocate(8192);
        std::memset(m->data(), 'r', 8192);
        const uint32_t max_rkey = f.p->session().limits().max_rkey_bytes();
        const std::string real = m->packed_rkey();
        std::vector<std::pair<std::string, std::string>> bad = {
            {"", "an empty rkey"},
            {std::string(max_rkey + 1, '\x01'), absl::StrCat("an rkey of max_rkey_bytes + 1 = ", max_rkey + 1, " octets")},
            {Content(real.size(), 9), "random octets of a real rkey's length"},
            {real.substr(0, real.size() / 2), "the first half of a real rkey"},
            {real.substr(0, 1), "one octet of a real rkey"},
        };
        std::string all_mds = real;
        for (int i = 0; i < 8; ++i) all_mds[i] = '\xff';
        bad.emplace_back(all_mds, "a real rkey whose md map names all 64 memory domains");
        for (const auto& [rkey, what] : bad) {
          pb::PutObjectRequest put = f.p->PutRequest(f.bucket, "k", *m, 8192);
          put.mutable_source(0)->set_rkey(rkey);
          RawReply rr = f.p->Send(Method::kPutObject, put);
          ctx.RequireCode(rr, ErrorCode::kInvalidRkey, "PUT with " + what);
        }
        RequireAbsent(ctx, *f.p, f.bucket, "k");
        ctx.RequireOk(f.p->Put(f.bucket, "g", Content(8192)), "PUT of 8 KiB");
        pb::GetObjectRequest g = Get(*f.p, f.bucket, "g", *m, 8192);
        g.mutable_destination(0)->set_rkey(Content(real.size(), 10));
        ctx.RequireCode(f.p->Send(Method::kGetObject, g), ErrorCode::kInvalidRkey,
                        "GET with random octets as rkey");
        ctx.Require(AllBytes(*m, 0, 8192, 'r'), "the window was not written", "unchanged", "written");
        ctx.RequireStillServes();
      });
  Add(r, "mem/7.2/6",
      "a window that ends exactly at 2^64 does not wrap (not INVALID_DESCRIPTOR); one octet "
      "further does",
      "core", {"AOBJ-MEM-002"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "k", Content(4096)), "PUT of 4 KiB");
        auto m = f.p->Allocate(4096);
        std::memset(m->data(), 0x42, 4096);
        pb::GetObjectRequest g = Get(*f.p, f.bucket, "k", *m, 4096);
        g.mutable_destination(0)->set_address(0 - uint64_t{4095});
        ctx.RequireCode(f.p->Send(Method::kGetObject, g), ErrorCode::kInvalidDescriptor,
                        "GET into the window [2^64-4095, 2^64+1)");
        // The window [2^64-4096, 2^64) is well formed but outside the registration: only a
        // server that can bound windows refuses it. Where the key states no segment on an
        // EMULATED session, none can (Section 14.1): the write would land in the suite itself.
        if (f.p->session().memory_protection() == pb::MEMORY_PROTECTION_EMULATED &&
            MemoryKindOf(*m) == KeyedMemory::kOrdinary) {
          ctx.Note(absl::StrCat("the window ending at 2^64 was not sent: the suite's memory is ",
                                MemoryKindName(KeyedMemory::kOrdinary)));
        } else {
          g.mutable_destination(0)->set_address(0 - uint64_t{4096});  // the last 4096 octets
          RawReply at = f.p->Send(Method::kGetObject, g);
          ctx.Require(!at.grpc_status.ok() && CodeOf(at) != ErrorCode::kInvalidDescriptor,
                      "GET into the window [2^64-4096, 2^64): refused, but not as wrapping "
                      "(it is outside the registration)",
                      "a failure other than INVALID_DESCRIPTOR", Outcome(at));
        }
        ctx.Require(m->data()[0] == 0x42, "the registered window was not touched", "unchanged",
                    "written");
        ctx.RequireStillServes();
      });
  Add(r, "mem/7.2/7",
      "an rkey of exactly max_rkey_bytes is accepted; with max_rkey_bytes one below its length, "
      "INVALID_RKEY",
      "core", {"AOBJ-MEM-003", "AOBJ-SES-006"}, true, [](CaseContext& ctx) {
        auto base = ctx.Open();
        const std::string bucket = ctx.NewBucket(*base);
        const size_t real = base->Allocate(4096)->packed_rkey().size();
        if (real < 2) ctx.Unsupported(absl::StrCat("a packed rkey of ", real, " octets"));
        for (const size_t max : {real, real - 1}) {
          auto p = ctx.NewPeer();
          pb::OpenSessionRequest o = p->DefaultOpen();
          o.mutable_requested_limits()->set_max_rkey_bytes(static_cast<uint32_t>(max));
          ctx.RequireOk(p->Open(o), absl::StrCat("OpenSession requesting max_rkey_bytes ", max));
          if (p->session().limits().max_rkey_bytes() != max) {
            ctx.Unsupported(absl::StrCat("the target granted max_rkey_bytes ",
                                         p->session().limits().max_rkey_bytes(), " for ", max));
          }
          auto m = p->Allocate(4096);
          std::memset(m->data(), 0x24, 4096);
          if (m->packed_rkey().size() != real) {
            ctx.Unsupported("packed rkeys of this client differ in length");
          }
          RawReply put = p->Send(Method::kPutObject, p->PutRequest(bucket, "r", *m, 4096));
          if (max == real) {
            ctx.RequireOk(
                put, absl::StrCat("PUT with an rkey of ", real, " octets, max_rkey_bytes ", max));
          } else {
            ctx.RequireCode(
                put, ErrorCode::kInvalidRkey,
                absl::StrCat("PUT with an rkey of ", real, " octets, max_rkey_bytes ", max));
          }
        }
        ctx.RequireStillServes();
      });
  Add(r, "mem/7.2/3", "more descriptors than allowed: INVALID_DESCRIPTOR", "core",
      {"AOBJ-MEM-005", "AOBJ-MEM-015"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        auto m = f.p->Allocate(1 << 20);
        const uint32_t max = f.p->session().limits().max_descriptors();
        if (max < 100000) {
          pb::PutObjectRequest put = f.p->PutRequest(f.bucket, "k", *m, max + 1);
          put.clear_source();
          for (uint32_t i = 0; i <= max; ++i) *put.add_source() = Peer::Descriptor(*m, i, 1);
          ctx.RequireCode(f.p->Send(Method::kPutObject, put), ErrorCode::kInvalidDescriptor,
                          absl::StrCat("PUT with max_descriptors + 1 = ", max + 1, " descriptors"));
          // The limit itself is allowed.
          pb::PutObjectRequest at = f.p->PutRequest(f.bucket, "k", *m, max);
          at.clear_source();
          for (uint32_t i = 0; i < max; ++i) *at.add_source() = Peer::Descriptor(*m, i, 1);
          if (f.p->Negotiated(kCapMultiDescriptor) || max == 1) {
            ctx.RequireOk(f.p->Send(Method::kPutObject, at),
                          absl::StrCat("PUT with exactly max_descriptors = ", max, " descriptors"));
          }
        }
        // A session without MULTI_DESCRIPTOR: two descriptors are one too many.
        auto q = ctx.NewPeer();
        pb::OpenSessionRequest o = q->DefaultOpen();
        o.clear_capabilities();
        o.add_capabilities(kCapCrc32c);
        ctx.RequireOk(q->Open(o), "OpenSession without MULTI_DESCRIPTOR");
        auto qm = q->Allocate(4096);
        pb::PutObjectRequest two = q->PutRequest(f.bucket, "k2", *qm, 4096);
        two.clear_source();
        *two.add_source() = Peer::Descriptor(*qm, 0, 2048);
        *two.add_source() = Peer::Descriptor(*qm, 2048, 2048);
        ctx.RequireCode(q->Send(Method::kPutObject, two), ErrorCode::kInvalidDescriptor,
                        "two descriptors without MULTI_DESCRIPTOR");
        RequireAbsent(ctx, *q, f.bucket, "k2");
        ctx.RequireStillServes();
      });
  Add(r, "mem/7.2/4", "memory types: CUDA unsupported, UNSPECIFIED invalid, unknown unsupported",
      "core", {"AOBJ-MEM-006", "AOBJ-MEM-019"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        auto m = f.p->Allocate(4096);
        std::memset(m->data(), 'c', 4096);
        struct Try {
          int type;
          ErrorCode code;
          const char* what;
        };
        for (const Try& t : {Try{pb::MEMORY_TYPE_UNSPECIFIED, ErrorCode::kInvalidDescriptor, "UNSPECIFIED"},
                             Try{77, ErrorCode::kUnsupportedMemoryType, "unknown type 77"}}) {
          pb::PutObjectRequest put = f.p->PutRequest(f.bucket, "k", *m, 4096);
          put.mutable_source(0)->set_memory_type(static_cast<pb::MemoryType>(t.type));
          ctx.RequireCode(f.p->Send(Method::kPutObject, put), t.code,
                          std::string("PUT with memory_type ") + t.what);
        }
        pb::PutObjectRequest cuda = f.p->PutRequest(f.bucket, "k", *m, 4096);
        cuda.mutable_source(0)->set_memory_type(pb::MEMORY_TYPE_CUDA);
        RawReply cr = f.p->Send(Method::kPutObject, cuda);
        if (ctx.target().cuda_memory) {
          if (cr.grpc_status.ok()) {
            ctx.Note("the target accepted a CUDA descriptor (declared: --cuda-memory)");
          } else {
            ctx.RequireCode(cr, ErrorCode::kUnsupportedMemoryType, "PUT with memory_type CUDA");
          }
        } else {
          // Only a server that supports CUDA memory may take one, and this one was not
          // declared to (--cuda-memory); the window is host memory labelled CUDA.
          ctx.RequireCode(cr, ErrorCode::kUnsupportedMemoryType,
                          "PUT with memory_type CUDA (the target was not declared to support "
                          "CUDA memory: --cuda-memory)");
        }
        ctx.RequireStillServes();
      });
  Add(r, "mem/7.2/8",
      "the descriptor rules on a GET's windows too: too many, several without MULTI_DESCRIPTOR, "
      "memory types, empty and oversized rkeys, a lowered max_rkey_bytes; and a PUT's window "
      "that wraps: each refused with its code and nothing written",
      "core",
      {"AOBJ-MEM-005", "AOBJ-MEM-015", "AOBJ-MEM-006", "AOBJ-MEM-019", "AOBJ-MEM-003",
       "AOBJ-MEM-002", "AOBJ-SES-016"},
      true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const std::string body = Content(4096, 21);
        ctx.RequireOk(f.p->Put(f.bucket, "k", body), "PUT of 4096 octets");
        auto m = f.p->Allocate(1 << 16);
        auto untouched = [&](const std::string& what) {
          ctx.Require(AllBytes(*m, 0, 1 << 16, 0x6b), what + ": nothing written", "all 0x6b",
                      "written");
        };
        std::memset(m->data(), 0x6b, 1 << 16);
        auto get = [&] {
          pb::GetObjectRequest g = f.p->GetRequest(f.bucket, "k", *m, 4096);
          g.set_accept_inline(false);
          return g;
        };
        const uint32_t max = f.p->session().limits().max_descriptors();
        if (max < 4096) {
          pb::GetObjectRequest g = get();
          g.clear_destination();
          // Windows that hold the object together, so that only their number is wrong.
          const uint64_t len = std::max<uint64_t>(16, (4096 + max) / max);
          for (uint32_t i = 0; i <= max; ++i) {
            *g.add_destination() = Peer::Descriptor(*m, i * len, len);
          }
          ctx.RequireCode(f.p->Send(Method::kGetObject, g), ErrorCode::kInvalidDescriptor,
                          absl::StrCat("GET into max_descriptors + 1 = ", max + 1, " windows"));
          untouched("too many windows");
        }
        struct Try {
          int type;
          ErrorCode code;
          const char* what;
        };
        for (const Try& t :
             {Try{pb::MEMORY_TYPE_UNSPECIFIED, ErrorCode::kInvalidDescriptor, "UNSPECIFIED"},
              Try{77, ErrorCode::kUnsupportedMemoryType, "unknown type 77"}}) {
          pb::GetObjectRequest g = get();
          g.mutable_destination(0)->set_memory_type(static_cast<pb::MemoryType>(t.type));
          ctx.RequireCode(f.p->Send(Method::kGetObject, g), t.code,
                          std::string("GET into memory_type ") + t.what);
          untouched(std::string("memory_type ") + t.what);
        }
        const uint32_t max_rkey = f.p->session().limits().max_rkey_bytes();
        for (const auto& [rkey, what] : std::vector<std::pair<std::string, std::string>>{
                 {"", "an empty rkey"},
                 {std::string(max_rkey + 1, '\x01'),
                  absl::StrCat("an rkey of max_rkey_bytes + 1 = ", max_rkey + 1, " octets")}}) {
          pb::GetObjectRequest g = get();
          g.mutable_destination(0)->set_rkey(rkey);
          ctx.RequireCode(f.p->Send(Method::kGetObject, g), ErrorCode::kInvalidRkey,
                          "GET with " + what);
          untouched(what);
        }
        pb::PutObjectRequest wrap = f.p->PutRequest(f.bucket, "wrapped", *m, 200);
        wrap.mutable_source(0)->set_address(~uint64_t{0} - 99);
        ctx.RequireCode(f.p->Send(Method::kPutObject, wrap), ErrorCode::kInvalidDescriptor,
                        "PUT from a 200-octet window at 2^64 - 100 (wraps)");
        RequireAbsent(ctx, *f.p, f.bucket, "wrapped");
        // A session without MULTI_DESCRIPTOR, and one whose max_rkey_bytes is below the rkey.
        auto q = ctx.NewPeer();
        pb::OpenSessionRequest o = q->DefaultOpen();
        o.clear_capabilities();
        o.add_capabilities(kCapCrc32c);
        ctx.RequireOk(q->Open(o), "OpenSession without MULTI_DESCRIPTOR");
        auto qm = q->Allocate(8192);
        std::memset(qm->data(), 0x6b, 8192);
        pb::GetObjectRequest two = q->GetRequest(f.bucket, "k", *qm, 4096);
        two.clear_destination();
        *two.add_destination() = Peer::Descriptor(*qm, 0, 2048);
        *two.add_destination() = Peer::Descriptor(*qm, 4096, 2048);
        ctx.RequireCode(q->Send(Method::kGetObject, two), ErrorCode::kInvalidDescriptor,
                        "GET into two windows without MULTI_DESCRIPTOR");
        ctx.Require(AllBytes(*qm, 0, 8192, 0x6b), "nothing written", "all 0x6b", "written");
        auto r = ctx.NewPeer();
        const size_t real = m->packed_rkey().size();
        if (real >= 2) {
          pb::OpenSessionRequest ro = r->DefaultOpen();
          ro.mutable_requested_limits()->set_max_rkey_bytes(static_cast<uint32_t>(real - 1));
          ctx.RequireOk(r->Open(ro),
                        absl::StrCat("OpenSession requesting max_rkey_bytes ", real - 1));
          auto rm = r->Allocate(4096);
          if (r->session().limits().max_rkey_bytes() == real - 1 &&
              rm->packed_rkey().size() == real) {
            std::memset(rm->data(), 0x6b, 4096);
            pb::GetObjectRequest g = r->GetRequest(f.bucket, "k", *rm, 4096);
            g.set_accept_inline(false);
            ctx.RequireCode(r->Send(Method::kGetObject, g), ErrorCode::kInvalidRkey,
                            absl::StrCat("GET with an rkey of ", real,
                                         " octets, the session's "
                                         "max_rkey_bytes ",
                                         real - 1));
            ctx.Require(AllBytes(*rm, 0, 4096, 0x6b), "nothing written", "all 0x6b", "written");
          }
        }
        ctx.RequireStillServes();
      });
  Add(r, "mem/7.2/5", "every descriptor is validated before the first RMA", "core",
      {"AOBJ-MEM-020"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        auto probe = ctx.Open();
        if (!probe->Negotiated(kCapMultiDescriptor)) ctx.Unsupported("MULTI_DESCRIPTOR not negotiated");
        ctx.RequireOk(f.p->Put(f.bucket, "obj", Content(8192, 3)), "PUT of 8 KiB");
        auto m = f.p->Allocate(8192);
        std::memset(m->data(), 0x5a, 8192);
        pb::GetObjectRequest g = Get(*f.p, f.bucket, "obj", *m, 4096);
        pb::MemoryDescriptor bad = Peer::Descriptor(*m, 4096, 4096);
        bad.set_rkey(Content(m->packed_rkey().size(), 4));
        *g.add_destination() = bad;
        ctx.RequireCode(f.p->Send(Method::kGetObject, g), ErrorCode::kInvalidRkey,
                        "GET into a good first window and a second with a garbage rkey");
        ctx.Require(AllBytes(*m, 0, 8192, 0x5a), "the good first window was not written",
                    "unchanged", "written before the second descriptor was checked");
        pb::PutObjectRequest put = f.p->PutRequest(f.bucket, "two", *m, 8192);
        put.mutable_source(0)->set_length(4096);
        pb::MemoryDescriptor zero = Peer::Descriptor(*m, 4096, 0);
        *put.add_source() = zero;
        ctx.RequireCode(f.p->Send(Method::kPutObject, put), ErrorCode::kInvalidDescriptor,
                        "PUT with a good first window and a zero-length second");
        RequireAbsent(ctx, *f.p, f.bucket, "two");
        ctx.RequireStillServes();
      });
  Add(r, "mem/7.3/1", "PUT: no body source, or windows smaller than size", "core",
      {"AOBJ-MEM-022", "AOBJ-MEM-008"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        auto m = f.p->Allocate(8192);
        pb::PutObjectRequest put = f.p->PutRequest(f.bucket, "k", *m, 8192);
        put.clear_source();
        ctx.RequireCode(f.p->Send(Method::kPutObject, put), ErrorCode::kInvalidDescriptor,
                        "PUT of 8192 octets with neither inline_data nor a descriptor");
        put = f.p->PutRequest(f.bucket, "k", *m, 8192);
        put.mutable_source(0)->set_length(8191);
        ctx.RequireCode(f.p->Send(Method::kPutObject, put), ErrorCode::kDescriptorTooSmall,
                        "PUT of 8192 octets from a window of 8191");
        RequireAbsent(ctx, *f.p, f.bucket, "k");
        ctx.RequireStillServes();
      });
  Add(r, "mem/7.3/2", "GET: a window smaller than the object is refused without a write", "core",
      {"AOBJ-MEM-007"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const uint64_t inline_max = f.p->session().limits().inline_threshold();
        const size_t n = std::max<uint64_t>(inline_max + 1, 100000);
        ctx.RequireOk(f.p->Put(f.bucket, "big", Content(n)), "PUT");
        auto m = f.p->Allocate(n);
        std::memset(m->data(), 0x33, n);
        ctx.RequireCode(f.p->Send(Method::kGetObject, Get(*f.p, f.bucket, "big", *m, n - 1)),
                        ErrorCode::kDescriptorTooSmall, "GET into a window one octet short");
        ctx.Require(AllBytes(*m, 0, n, 0x33), "no octet was written", "unchanged", "written");
        ctx.RequireStillServes();
      });
  Add(r, "mem/7.3/3", "GET: octets after the body keep their contents", "core",
      {"AOBJ-MEM-016", "AOBJ-DAT-013"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const std::string body = Content(70000, 5);
        ctx.RequireOk(f.p->Put(f.bucket, "o", body), "PUT of 70000 octets");
        auto m = f.p->Allocate(100000);
        std::memset(m->data(), 0xee, 100000);
        RawReply g = f.p->Send(Method::kGetObject, Get(*f.p, f.bucket, "o", *m, 100000));
        ctx.RequireOk(g, "GET into a window of 100000");
        auto resp = Parse<pb::GetObjectResponse>(ctx, g, "GET");
        ctx.Require(resp.bytes_transferred() == 70000, "bytes_transferred", "70000",
                    absl::StrCat(resp.bytes_transferred()));
        ctx.Require(std::memcmp(m->data(), body.data(), body.size()) == 0, "the body", "equal", "differs");
        ctx.Require(AllBytes(*m, 70000, 100000, 0xee), "the 30000 octets after the body",
                    "unchanged", "overwritten");
      });
  Add(r, "mem/7.3/4", "ordered fill across several windows, both directions", "core",
      {"AOBJ-MEM-008", "AOBJ-MEM-016"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        if (!f.p->Negotiated(kCapMultiDescriptor)) ctx.Unsupported("MULTI_DESCRIPTOR not negotiated");
        const std::string body = Content(60000, 6);
        auto src = f.p->Allocate(90000);
        // Windows [0,10000) [30000,60000) [70000,90000) hold the body in order.
        std::memcpy(src->data(), body.data(), 10000);
        std::memcpy(src->data() + 30000, body.data() + 10000, 30000);
        std::memcpy(src->data() + 70000, body.data() + 40000, 20000);
        pb::PutObjectRequest put = f.p->PutRequest(f.bucket, "sg", *src, 60000);
        put.set_checksum(Crc32cOf(body));
        put.clear_source();
        *put.add_source() = Peer::Descriptor(*src, 0, 10000);
        *put.add_source() = Peer::Descriptor(*src, 30000, 30000);
        *put.add_source() = Peer::Descriptor(*src, 70000, 20000);
        ctx.RequireOk(f.p->Send(Method::kPutObject, put), "scatter PUT of 3 windows");
        auto dst = f.p->Allocate(90000);
        std::memset(dst->data(), 0x11, 90000);
        pb::GetObjectRequest g = Get(*f.p, f.bucket, "sg", *dst, 0);
        g.clear_destination();
        *g.add_destination() = Peer::Descriptor(*dst, 5000, 25000);
        *g.add_destination() = Peer::Descriptor(*dst, 40000, 50000);
        ctx.RequireOk(f.p->Send(Method::kGetObject, g), "gather GET into 2 windows");
        ctx.Require(std::memcmp(dst->data() + 5000, body.data(), 25000) == 0 &&
                        std::memcmp(dst->data() + 40000, body.data() + 25000, 35000) == 0,
                    "the body in ordered fill", "equal", "differs");
        ctx.Require(AllBytes(*dst, 0, 5000, 0x11) && AllBytes(*dst, 30000, 40000, 0x11) &&
                        AllBytes(*dst, 75000, 90000, 0x11),
                    "octets outside the windows and after the body", "unchanged", "written");
      });
  Add(r, "mem/7.4/1", "a window outside the client's registered memory is never accessed", "core",
      {"AOBJ-MEM-009", "AOBJ-MEM-021"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const bool emulated = f.p->session().memory_protection() == pb::MEMORY_PROTECTION_EMULATED;
        auto small = f.p->Allocate(65536);
        // Every window below reaches past what the suite registered. Where nothing but the
        // server's own check stands between them and the suite's address space, and the key
        // states no segment to check against, no server can refuse them (AOBJ-MEM-029, Section
        // 14.1): the accesses would land in the suite's own memory, not measure the target.
        if (emulated && MemoryKindOf(*small) == KeyedMemory::kOrdinary) {
          ctx.Unsupported(absl::StrCat(
              "the session is EMULATED and the suite's memory on this data channel is ",
              MemoryKindName(KeyedMemory::kOrdinary), "; run over shared memory for this case"));
        }
        ctx.RequireOk(f.p->Put(f.bucket, "s", Content(65536)), "PUT of 64 KiB");
        // A PUT that claims 16 MiB of a 64 KiB registration.
        pb::PutObjectRequest put = f.p->PutRequest(f.bucket, "big", *small, 65536);
        put.set_size(16 << 20);
        put.mutable_source(0)->set_length(16 << 20);
        RawReply rp = f.p->Send(Method::kPutObject, put);
        const ErrorCode want = ErrorCode::kDescriptorOutOfBounds;
        if (emulated || CodeOf(rp) == want) {
          ctx.RequireCode(rp, want, "PUT reading 16 MiB from a 64 KiB registration");
        } else {
          ctx.Require(CodeOf(rp) == ErrorCode::kTransferFailed, "PUT reading past a registration "
                      "(HARDWARE: the NIC refuses)", "DESCRIPTOR_OUT_OF_BOUNDS or TRANSFER_FAILED", Outcome(rp));
        }
        RequireAbsent(ctx, *f.p, f.bucket, "big");
        auto big = f.p->Allocate(16 << 20);
        ctx.RequireOk(f.p->Send(Method::kPutObject, f.p->PutRequest(f.bucket, "big", *big, 16 << 20)),
                      "PUT of 16 MiB");
        RawReply rg = f.p->Send(Method::kGetObject, Get(*f.p, f.bucket, "big", *small, 16 << 20));
        if (emulated) ctx.RequireCode(rg, want, "GET writing 16 MiB into a 64 KiB registration");
        else ctx.Require(!rg.grpc_status.ok(), "GET writing past a registration fails", "an error", Outcome(rg));
        for (uint64_t address : {uint64_t{0x1000}, uint64_t{0x7ff000000000}}) {
          pb::GetObjectRequest g = Get(*f.p, f.bucket, "s", *small, 65536);
          g.mutable_destination(0)->set_address(address);
          RawReply ra = f.p->Send(Method::kGetObject, g);
          if (emulated) ctx.RequireCode(ra, want, absl::StrCat("GET into address 0x", absl::Hex(address)));
          else ctx.Require(!ra.grpc_status.ok(), "GET into a foreign address fails", "an error", Outcome(ra));
        }
        ctx.RequireStillServes();
      });
  Add(r, "mem/7.4/2", "the server does not touch a window after its reply", "core",
      {"AOBJ-MEM-010"}, false, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        const std::string body = Content(1 << 20, 8);
        ctx.RequireOk(f.p->Put(f.bucket, "o", body), "PUT of 1 MiB");
        auto m = f.p->Allocate(1 << 20);
        for (int round = 0; round < 3; ++round) {
          ctx.RequireOk(f.p->Send(Method::kGetObject, Get(*f.p, f.bucket, "o", *m, 1 << 20)), "GET");
          ctx.Require(std::memcmp(m->data(), body.data(), body.size()) == 0, "the body at the reply",
                      "complete", "incomplete");
          std::memset(m->data(), 0x77, 1 << 20);
          absl::SleepFor(absl::Milliseconds(200));
          ctx.Require(AllBytes(*m, 0, 1 << 20, 0x77), "200 ms after the reply the window is as the "
                      "client left it", "unchanged", "written after the reply");
        }
        // An error reply ends access too.
        std::memset(m->data(), 0x78, 1 << 20);
        ctx.RequireCode(f.p->Send(Method::kGetObject, Get(*f.p, f.bucket, "o", *m, (1 << 20) - 1)),
                        ErrorCode::kDescriptorTooSmall, "GET into a window one octet short");
        absl::SleepFor(absl::Milliseconds(200));
        ctx.Require(AllBytes(*m, 0, 1 << 20, 0x78), "after the error reply", "unchanged", "written");
      });
  Add(r, "mem/7.4/4", "kept remote keys are released when the session closes", "core",
      {"AOBJ-MEM-023", "AOBJ-SES-010"}, false, [](CaseContext& ctx) {
        // Observable on shared-memory transports: a server that maps the client's segment
        // attaches it; once the session is closed it must have let go (shm_nattch back to 1).
        BucketFixture f = OpenBucket(ctx);
        auto m = f.p->Allocate(1 << 20);
        const int id = SegmentOf(m->data());
        if (id < 0) {
          ctx.Unsupported(absl::StrCat("the suite's registered memory is ",
                                       MemoryKindName(MemoryKindOf(*m)),
                                       " on this data channel, not a System V segment"));
        }
        ctx.RequireOk(f.p->Put(f.bucket, "o", Content(1 << 20)), "PUT of 1 MiB");
        for (int i = 0; i < 3; ++i) {
          ctx.RequireOk(f.p->Send(Method::kGetObject, Get(*f.p, f.bucket, "o", *m, 1 << 20)), "GET");
        }
        const long during = Attached(id);
        if (during <= 1) {
          ctx.Unsupported("the target did not map the suite's segment (not a shared-memory lane)");
        }
        ctx.Note(absl::StrCat("segment ", id, " attached by ", during, " processes while the session lives"));
        ctx.RequireOk(f.p->Close(), "CloseSession");
        long after = during;
        for (int i = 0; i < 40 && after > 1; ++i) {
          absl::SleepFor(absl::Milliseconds(50));
          after = Attached(id);
        }
        ctx.Require(after == 1, "within 2 s of CloseSession the server detached the segment",
                    "shm_nattch 1", absl::StrCat("shm_nattch ", after));
      });
  Add(r, "mem/7.6/1",
      "posix memory reached by emulation: a window outside the segment its key states fails "
      "DESCRIPTOR_OUT_OF_BOUNDS, at the octet, before any RMA",
      "core", {"AOBJ-MEM-029", "AOBJ-MEM-009"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        // A peer of the same principal whose UCX allocates from posix shared memory.
        Peer p(ctx, "P1-posix", ctx.target().access_key_id, ctx.target().secret, "md:posix");
        ctx.RequireOk(p.Open(), "OpenSession (client memory in posix segments)");
        if (p.session().memory_protection() != pb::MEMORY_PROTECTION_EMULATED) {
          ctx.Unsupported("the session's memory protection is not EMULATED");
        }
        constexpr size_t kSize = 65536;
        auto allocated = p.TryAllocate(kSize);
        if (!allocated.ok()) {
          ctx.Unsupported(
              absl::StrCat("the suite's UCX cannot allocate posix shared memory on "
                           "this data channel: ",
                           allocated.status().message()));
        }
        auto seg = std::move(*allocated);
        const uint64_t base = reinterpret_cast<uint64_t>(seg->data());
        if (MemoryKindOf(*seg) != KeyedMemory::kStatedSegment) {
          ctx.Unsupported(
              absl::StrCat("the suite's UCX did not allocate from posix shared memory "
                           "here (it gave ",
                           MemoryKindName(MemoryKindOf(*seg)), ")"));
        }
        // The object comes from the fixture's session: this case's requests are all refused
        // before any RMA, so nothing here depends on the emulated path.
        const std::string body = Content(kSize, 29);
        ctx.RequireOk(f.p->Put(f.bucket, "s", body), "PUT of 64 KiB");
        // Never registered: the S2 finding's heap, described with the segment's key.
        std::vector<uint8_t> heap(kSize, 0x5a);
        auto outside = [&](uint64_t address, uint64_t length) {
          pb::MemoryDescriptor d = Peer::Descriptor(*seg, 0, length);
          d.set_address(address);
          return d;
        };
        const uint64_t at = reinterpret_cast<uint64_t>(heap.data());
        pb::GetObjectRequest g = p.GetRequest(f.bucket, "s", *seg, kSize);
        *g.mutable_destination(0) = outside(at, kSize);
        ctx.RequireCode(p.Send(Method::kGetObject, g), ErrorCode::kDescriptorOutOfBounds,
                        "GET into heap the key does not cover");
        ctx.Require(std::all_of(heap.begin(), heap.end(), [](uint8_t b) { return b == 0x5a; }),
                    "the heap after the refused GET", "unchanged", "written");
        pb::PutObjectRequest put = p.PutRequest(f.bucket, "h", *seg, kSize);
        *put.mutable_source(0) = outside(at, kSize);
        ctx.RequireCode(p.Send(Method::kPutObject, put), ErrorCode::kDescriptorOutOfBounds,
                        "PUT from heap the key does not cover");
        RequireAbsent(ctx, p, f.bucket, "h");
        // The threshold: one octet past the segment's end, and one before its start.
        g = p.GetRequest(f.bucket, "s", *seg, kSize);
        *g.mutable_destination(0) = outside(base + 1, kSize);
        ctx.RequireCode(p.Send(Method::kGetObject, g), ErrorCode::kDescriptorOutOfBounds,
                        "GET into a window that ends one octet past the segment");
        put = p.PutRequest(f.bucket, "h", *seg, kSize);
        *put.mutable_source(0) = outside(base - 1, kSize);
        ctx.RequireCode(p.Send(Method::kPutObject, put), ErrorCode::kDescriptorOutOfBounds,
                        "PUT from a window that starts one octet before the segment");
        RequireAbsent(ctx, p, f.bucket, "h");
        ctx.RequireStillServes();
      });
  Add(r, "mem/7.4/3", "sessions that register, transfer and close, one after another", "core",
      {"AOBJ-SES-010"}, false, [](CaseContext& ctx) {
        // Observable part: many sessions, each with its own registrations, open, use and close;
        // the target keeps serving (a server that kept keys of closed sessions would grow
        // without bound; the reference server's metrics show it, the wire does not).
        BucketFixture f = OpenBucket(ctx);
        for (int i = 0; i < 24; ++i) {
          auto p = ctx.Open();
          ctx.RequireOk(p->Put(f.bucket, absl::StrCat("k", i), Content(20000, i)), "PUT");
          std::string back;
          ctx.RequireOk(p->Get(f.bucket, absl::StrCat("k", i), &back), "GET");
          ctx.Require(back == Content(20000, i), "GET returns the PUT", "equal", "differs");
          ctx.RequireOk(p->Close(), "CloseSession");
        }
        ctx.RequireStillServes();
      });
}

}  // namespace aobj::conformance
