// Cases for spec sections 3 (control channel), 4 (versions, capabilities, grease) and 5
// (sessions).
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "absl/time/clock.h"
#include "conformance/src/cases_util.h"
#include "google/protobuf/unknown_field_set.h"
#include "transport/address_check.h"

namespace aobj::conformance {

std::string Md5Raw(const std::string& s) {
  Md5 m;
  m.Update(s.data(), s.size());
  Md5Digest d = m.Finish();
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}
std::string Md5Etag(const std::string& s) { return Quote(HexEncode(Md5Raw(s))); }

namespace {

// True when this host has an RDMA device: without one, no lane can enforce remote keys in
// hardware.
bool HostHasRdmaDevice() {
  DIR* d = opendir("/sys/class/infiniband");
  if (d == nullptr) return false;
  bool any = false;
  while (dirent* e = readdir(d)) any = any || e->d_name[0] != '.';
  closedir(d);
  return any;
}

// An unknown field (number 999, length-delimited) appended to a serialized message.
std::string WithUnknownField(std::string body) {
  body += std::string("\xba\x3e\x05hello", 8);  // tag (999 << 3 | 2) as varint, length 5
  return body;
}

void OpenRefused(CaseContext& ctx, const pb::OpenSessionRequest& req, ErrorCode code,
                 const std::string& what) {
  auto p = ctx.NewPeer();
  RawReply r = p->Send(Method::kOpenSession, req);
  ctx.RequireCode(r, code, what);
}

}  // namespace

// A tcp listener on 127.0.0.1 that answers every connection in another protocol: whatever it
// receives, it sends 4 KiB of 'A' (a UCX tcp header of that content claims 0x41414141 octets) and
// holds the connection until stopped. The attack of AOBJ-SEC-021.
class ForeignListener {
 public:
  ForeignListener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        listen(fd_, 16) != 0 || getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      return;
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ForeignListener() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (int c : conns_) close(c);
    if (fd_ >= 0) close(fd_);
  }
  uint16_t port() const { return port_; }
  int accepted() const { return accepted_.load(); }

 private:
  void Serve() {
    const std::string foreign(4096, 'A');
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) != 1) continue;
      const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      accepted_.fetch_add(1);
      conns_.push_back(c);
      pollfd q{c, POLLIN, 0};
      if (poll(&q, 1, 200) == 1) {
        char sink[4096];
        (void)!recv(c, sink, sizeof(sink), MSG_DONTWAIT);
      }
      (void)!send(c, foreign.data(), foreign.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  }
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::vector<int> conns_;  // the serving thread's, closed after it ends
  std::thread thread_;
};

void RegisterSessionCases(Registry& r) {
  // ---- 3: control channel ----------------------------------------------------------------
  Add(r, "ctl/3.1/1", "every method of aobj.v1.ObjectService is served", "core",
      {"AOBJ-CTL-001"}, false, [](CaseContext& ctx) {
        auto p = ctx.Open();
        for (int m = 0; m < static_cast<int>(Method::kCount); ++m) {
          // An empty request body: each method must answer with an AOBJ error or success,
          // never gRPC UNIMPLEMENTED.
          RawReply rr = p->Send(static_cast<Method>(m), std::string(), {}, "(empty message)");
          ctx.Require(rr.grpc_status.error_code() != grpc::StatusCode::UNIMPLEMENTED,
                      absl::StrCat(MethodName(static_cast<Method>(m)), " is implemented"),
                      "not UNIMPLEMENTED", Outcome(rr));
          if (static_cast<Method>(m) == Method::kCloseSession && rr.grpc_status.ok()) {
            p = ctx.Open();
          }
        }
      });
  Add(r, "ctl/3.2/1", "unknown fields in requests are ignored", "core",
      {"AOBJ-CTL-004"}, true, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        RawReply o = p->Send(Method::kOpenSession,
                             WithUnknownField(p->DefaultOpen().SerializeAsString()), {},
                             "OpenSession with unknown field 999");
        ctx.RequireOk(o, "OpenSession carrying an unknown field");
        auto q = ctx.Open();
        const std::string bucket = ctx.NewBucket(*q);
        pb::HeadBucketRequest hb;
        hb.set_bucket(bucket);
        RawReply h = q->Send(Method::kHeadBucket, WithUnknownField(hb.SerializeAsString()), {},
                             "HeadBucket with unknown field 999");
        ctx.RequireOk(h, "HeadBucket carrying an unknown field");
        auto mem = q->Allocate(4096);
        std::memset(mem->data(), 'u', 4096);
        RawReply put = q->Send(Method::kPutObject,
                               WithUnknownField(q->PutRequest(bucket, "u", *mem, 4096).SerializeAsString()),
                               {}, "PutObject with unknown field 999");
        ctx.RequireOk(put, "PutObject carrying an unknown field");
      });
  Add(r, "ctl/3.3/1", "failures carry one aobj-error-bin trailer from the registry; successes none",
      "core",
      {"AOBJ-CTL-002", "AOBJ-CTL-008", "AOBJ-ERR-001", "AOBJ-ERR-004", "AOBJ-ERR-005",
       "AOBJ-ERR-009", "AOBJ-ERR-120", "AOBJ-EXT-019"},
      true, [](CaseContext& ctx) {
        // Peer checks the trailer rules on every reply; this case provokes one failure of each
        // of several kinds (session, auth, object, descriptor, multipart).
        auto p = ctx.Open();
        const std::string bucket = ctx.NewBucket(*p);
        ctx.RequireCode(p->Head(bucket, "missing"), ErrorCode::kNoSuchKey, "HEAD of a missing key");
        ctx.RequireCode(p->CreateBucket(bucket), ErrorCode::kBucketAlreadyExists,
                        "CreateBucket twice");
        ctx.RequireCode(p->Head("no-such-bucket-" + ctx.Unique("b"), "k"),
                        MissingBucketCode(ctx), "HEAD in a missing bucket");
        pb::AbortMultipartUploadRequest a;
        a.set_bucket(bucket);
        a.set_key("k");
        a.set_upload_id("no-such-upload");
        RawReply nu = p->Send(Method::kAbortMultipartUpload, a);
        ctx.RequireCode(nu, ErrorCode::kNoSuchUpload, "abort of an upload that does not exist");
        ctx.Require(nu.error.s3_code() == "NoSuchUpload" && nu.error.name() == "NO_SUCH_UPLOAD" &&
                        !nu.error.retryable(),
                    "the trailer names the S3 error", "NO_SUCH_UPLOAD NoSuchUpload not retryable",
                    nu.error.ShortDebugString());
        Tamper t;
        t.flip_signature = true;
        ctx.RequireCode(p->Head(bucket, "x"), ErrorCode::kNoSuchKey, "another missing key");
        RawReply bad = p->Send(Method::kHeadBucket, pb::HeadBucketRequest(), t);
        ctx.RequireCode(bad, ErrorCode::kSignatureDoesNotMatch, "a bad signature");
        ctx.RequireStillServes();
      });
  Add(r, "ctl/3.4/1", "a request of 4 MiB + inline_threshold is accepted; an oversized one is "
                      "RESOURCE_EXHAUSTED",
      "limits", {"AOBJ-CTL-005"}, true, [](CaseContext& ctx) {
        auto p = ctx.Open();
        const std::string bucket = ctx.NewBucket(*p);
        const uint64_t threshold = p->session().limits().inline_threshold();
        pb::HeadBucketRequest hb;
        hb.set_bucket(bucket);
        // Padding in an unknown field (ignored under AOBJ-CTL-004) brings the message to the
        // size every server must accept.
        std::string body = hb.SerializeAsString();
        const uint64_t target = (4u << 20) + threshold - 16;
        std::string pad = "\xba\x3e";  // field 999, length-delimited
        uint64_t n = target - body.size() - 2 - 4;
        for (int i = 0; i < 3; ++i) pad += static_cast<char>(((n >> (7 * i)) & 0x7f) | 0x80);
        pad += static_cast<char>((n >> 21) & 0x7f);
        body += pad + std::string(n, 'p');
        RawReply ok = p->Send(Method::kHeadBucket, body, {},
                              absl::StrCat("HeadBucket padded to ", body.size(), " octets"));
        ctx.RequireOk(ok, "a request of 4 MiB + inline_threshold - 16 octets");
        std::string huge = hb.SerializeAsString();
        const uint64_t m = 48u << 20;
        std::string pad2 = "\xba\x3e";
        uint64_t v = m;
        while (v >= 0x80) {
          pad2 += static_cast<char>((v & 0x7f) | 0x80);
          v >>= 7;
        }
        pad2 += static_cast<char>(v);
        huge += pad2 + std::string(m, 'p');
        RawReply big = p->Send(Method::kHeadBucket, huge, {}, "HeadBucket padded to 48 MiB");
        ctx.Require(big.grpc_status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED,
                    "a 48 MiB request fails with gRPC RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED (8)",
                    Outcome(big));
        ctx.RequireStillServes();
      });

  // ---- 4 and 5.1-5.3: opening, versions, capabilities ---------------------------------------
  Add(r, "ses/5.1/1", "a successful OpenSession carries every field", "core",
      {"AOBJ-SES-015", "AOBJ-SES-016", "AOBJ-DAT-022", "AOBJ-TRN-001"}, false,
      [](CaseContext& ctx) {
        auto p = ctx.Open();
        const auto& s = p->session();
        ctx.Require(s.version() == 1, "version", "1", absl::StrCat(s.version()));
        ctx.Require(s.session_id().size() == 16, "session_id is 16 octets", "16",
                    absl::StrCat(s.session_id().size()));
        ctx.Require(s.lease_ms() > 0, "lease_ms", "> 0", absl::StrCat(s.lease_ms()));
        ctx.Require(s.has_limits() && s.limits().max_transfer_bytes() > 0 &&
                        s.limits().max_in_flight() > 0 && s.limits().max_descriptors() > 0 &&
                        s.limits().max_rkey_bytes() > 0,
                    "limits are present and non-zero", "all non-zero",
                    s.limits().ShortDebugString());
        ctx.Require(s.memory_protection() != pb::MEMORY_PROTECTION_UNSPECIFIED,
                    "memory_protection", "HARDWARE or EMULATED",
                    pb::MemoryProtection_Name(s.memory_protection()));
        ctx.Require(s.has_supported_versions() && s.supported_versions().min() >= 1 &&
                        s.supported_versions().min() <= 1 && s.supported_versions().max() >= 1,
                    "supported_versions contains 1", "min <= 1 <= max",
                    s.supported_versions().ShortDebugString());
        ctx.Require(p->Negotiated(kCapCrc32c), "the server implements CRC32C (capability 2)",
                    "2 in capabilities", s.ShortDebugString());
        // The session works: one call that needs it.
        ctx.NewBucket(*p);
      });
  Add(r, "ses/5.1/2", "a request naming no session is refused", "core",
      {"AOBJ-SES-001", "AOBJ-AUTH-001"}, true, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        pb::ListBucketsRequest lb;
        RawReply rr = p->Send(Method::kListBuckets, lb);  // no OpenSession, no session id
        ctx.RequireCode(rr, ErrorCode::kMissingAuthentication, "ListBuckets without a session id");
        auto q = ctx.Open();
        Tamper t;
        t.omit_session = true;
        ctx.RequireCode(q->Send(Method::kListBuckets, lb, t), ErrorCode::kMissingAuthentication,
                        "ListBuckets of an open session without its session id");
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.2/1", "versions absent, min 0, or min > max: INVALID_ARGUMENT", "core",
      {"AOBJ-SES-004"}, true, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest req = p->DefaultOpen();
        req.clear_versions();
        OpenRefused(ctx, req, ErrorCode::kInvalidArgument, "no versions");
        req = p->DefaultOpen();
        req.mutable_versions()->set_min(0);
        OpenRefused(ctx, req, ErrorCode::kInvalidArgument, "versions.min 0");
        req = p->DefaultOpen();
        req.mutable_versions()->set_min(3);
        req.mutable_versions()->set_max(2);
        OpenRefused(ctx, req, ErrorCode::kInvalidArgument, "min 3 > max 2");
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.2/2", "the highest common version is selected; a max above every version works",
      "core", {"AOBJ-SES-002", "AOBJ-EXT-021"}, false, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest req = p->DefaultOpen();
        req.mutable_versions()->set_max(0x7fffffff);
        RawReply rr = p->Open(req);
        ctx.RequireOk(rr, "OpenSession offering 1..2^31-1");
        const auto& s = p->session();
        const uint32_t expect = std::min<uint32_t>(0x7fffffff, s.supported_versions().max());
        ctx.Require(s.version() == expect, "the highest version in both ranges",
                    absl::StrCat(expect), absl::StrCat(s.version()));
      });
  Add(r, "ses/5.2/3", "disjoint version ranges: UNSUPPORTED_VERSION with supported_versions",
      "core", {"AOBJ-SES-003"}, true, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest req = p->DefaultOpen();
        req.mutable_versions()->set_min(1000000);
        req.mutable_versions()->set_max(2000000);
        RawReply rr = p->Send(Method::kOpenSession, req);
        ctx.RequireCode(rr, ErrorCode::kUnsupportedVersion, "OpenSession offering 1000000..2000000");
        ctx.Require(rr.error.has_supported_versions() && rr.error.supported_versions().min() >= 1 &&
                        rr.error.supported_versions().min() <= rr.error.supported_versions().max(),
                    "the error carries the server's supported range", "a range with min >= 1",
                    rr.error.ShortDebugString());
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.3/1",
      "capabilities: the intersection, grease and unknown IDs ignored, a duplicate answered once",
      "core", {"AOBJ-SES-005", "AOBJ-EXT-001", "AOBJ-SES-042"}, true, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest req = p->DefaultOpen();
        req.clear_capabilities();
        // CRC32C twice, two grease values, an unassigned ID and a private-use one.
        for (uint32_t c : {2u, 0x1A2A3A4Au, 2u, 0xFAFAFAFAu, 0x00ABCDEFu, 0xF0000001u}) {
          req.add_capabilities(c);
        }
        ctx.RequireOk(p->Open(req), "OpenSession offering CRC32C, grease and unknown IDs");
        // AOBJ-EXT-012: a server may add a grease ID of its own; it is ignored here too.
        std::set<uint32_t> got;
        int twos = 0;
        for (uint32_t c : p->session().capabilities()) {
          if (!IsGrease(c)) got.insert(c);
          twos += c == 2u ? 1 : 0;
        }
        ctx.Require(twos == 1, "CRC32C, offered twice, is answered once (AOBJ-SES-042)", "1",
                    absl::StrCat(twos));
        std::string list;
        for (uint32_t c : got) absl::StrAppend(&list, c, " ");
        ctx.Require(got == std::set<uint32_t>{2u}, "the answer is exactly {2}",
                    "2", list.empty() ? "(none)" : list);
        auto q = ctx.NewPeer();
        pb::OpenSessionRequest none = q->DefaultOpen();
        none.clear_capabilities();
        ctx.RequireOk(q->Open(none), "OpenSession offering no capability");
        bool none_offered = true;
        for (uint32_t c : q->session().capabilities()) none_offered = none_offered && IsGrease(c);
        ctx.Require(none_offered, "no capability that was not offered (grease aside)", "(none)",
                    q->session().ShortDebugString());
      });
  Add(r, "ses/5.3/2",
      "capability parameters (for a known, a grease and an unknown capability) and a grease "
      "field are ignored; the response's parameters name selected or grease capabilities only",
      "core", {"AOBJ-EXT-018", "AOBJ-CTL-004", "AOBJ-EXT-020"}, true, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest req = p->DefaultOpen();
        req.clear_capabilities();
        for (uint32_t c : {2u, 0x3A5A7A9Au, 0x00ABCDEFu}) {
          req.add_capabilities(c);
          pb::CapabilityParams* e = req.add_capability_params();
          e->set_capability(c);
          e->set_params(std::string(1024, static_cast<char>(c & 0xFF)));
        }
        req.GetReflection()->MutableUnknownFields(&req)->AddVarint(1500, 7);
        req.GetReflection()->MutableUnknownFields(&req)->AddLengthDelimited(1999, "grease");
        ctx.RequireOk(p->Open(req),
                      "OpenSession with parameters for CRC32C, a grease and an unknown capability "
                      "and grease fields 1500 and 1999");
        std::set<uint32_t> got;
        for (uint32_t c : p->session().capabilities()) {
          if (!IsGrease(c)) got.insert(c);
        }
        ctx.Require(got == std::set<uint32_t>{2u}, "the capabilities are exactly {2}", "2",
                    p->session().ShortDebugString());
        std::set<uint32_t> listed(p->session().capabilities().begin(),
                                  p->session().capabilities().end());
        for (const pb::CapabilityParams& e : p->session().capability_params()) {
          ctx.Require(listed.count(e.capability()) > 0,
                      absl::StrCat("a response entry for capability ", e.capability(),
                                   " names one the response lists (AOBJ-EXT-020)"),
                      "listed", "not listed");
        }
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.3/3",
      "capability_params beyond 64 entries, 1024 octets, or twice one capability: "
      "INVALID_ARGUMENT; at the bounds: served",
      "core", {"AOBJ-EXT-015"}, true, [](CaseContext& ctx) {
        auto with = [&](size_t entries, size_t octets, bool duplicate) {
          auto p = ctx.NewPeer();
          pb::OpenSessionRequest req = p->DefaultOpen();
          for (size_t i = 0; i < entries; ++i) {
            pb::CapabilityParams* e = req.add_capability_params();
            e->set_capability(duplicate && i == entries - 1 ? 1000u : 1000u + i);
            e->set_params(std::string(octets, 'p'));
          }
          return p->Open(req);
        };
        ctx.RequireOk(with(64, 1024, false), "64 entries of 1024 octets");
        ctx.RequireCode(with(65, 1, false), ErrorCode::kInvalidArgument, "65 entries");
        ctx.RequireCode(with(1, 1025, false), ErrorCode::kInvalidArgument,
                        "an entry of 1025 octets");
        ctx.RequireCode(with(2, 1, true), ErrorCode::kInvalidArgument,
                        "two entries for capability 1000");
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.3/4",
      "the OpenSession response greases: a grease capability with parameters, and a grease field",
      "core", {"AOBJ-EXT-017", "AOBJ-EXT-012"}, false, [](CaseContext& ctx) {
        auto p = ctx.Open();
        const pb::OpenSessionResponse& resp = p->session();
        uint32_t grease = 0;
        for (uint32_t c : resp.capabilities()) {
          if (IsGrease(c)) grease = c;
        }
        ctx.Require(grease != 0, "a grease capability ID listed (AOBJ-EXT-012)", "one",
                    resp.ShortDebugString());
        RequireGreaseParamsAndField(ctx, resp, grease);
      });
  Add(r, "ses/5.4/1", "effective limits: the smaller of requested and server values", "limits",
      {"AOBJ-SES-006"}, false, [](CaseContext& ctx) {
        auto base = ctx.Open();
        const pb::Limits server = base->session().limits();
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest req = p->DefaultOpen();
        pb::Limits* want = req.mutable_requested_limits();
        want->set_max_transfer_bytes(std::max<uint64_t>(server.max_transfer_bytes() / 2, 1));
        want->set_max_in_flight(1);
        want->set_inline_threshold(server.inline_threshold() > 1 ? server.inline_threshold() / 2 : 0);
        want->set_max_descriptors(server.max_descriptors() * 2 + 1);  // larger: server's value
        ctx.RequireOk(p->Open(req), "OpenSession with requested limits");
        const pb::Limits& got = p->session().limits();
        ctx.Require(got.max_transfer_bytes() == want->max_transfer_bytes(),
                    "max_transfer_bytes is the smaller request", absl::StrCat(want->max_transfer_bytes()),
                    absl::StrCat(got.max_transfer_bytes()));
        ctx.Require(got.max_in_flight() == 1, "max_in_flight is the smaller request", "1",
                    absl::StrCat(got.max_in_flight()));
        if (want->inline_threshold() > 0) {
          ctx.Require(got.inline_threshold() == want->inline_threshold(),
                      "inline_threshold is the smaller request",
                      absl::StrCat(want->inline_threshold()), absl::StrCat(got.inline_threshold()));
        }
        ctx.Require(got.max_descriptors() == server.max_descriptors(),
                    "max_descriptors: a larger request gets the server's value",
                    absl::StrCat(server.max_descriptors()), absl::StrCat(got.max_descriptors()));
        ctx.Require(got.max_rkey_bytes() == server.max_rkey_bytes(),
                    "max_rkey_bytes: a zero request gets the server's value",
                    absl::StrCat(server.max_rkey_bytes()), absl::StrCat(got.max_rkey_bytes()));
      });
  Add(r, "ses/5.4/3", "inline_threshold is never granted above 1 MiB, whatever was requested",
      "limits", {"AOBJ-SES-038", "AOBJ-SES-006"}, true, [](CaseContext& ctx) {
        auto base = ctx.Open();
        ctx.Require(base->session().limits().inline_threshold() <= (1u << 20),
                    "the default session's inline_threshold is at most 1 MiB", "<= 1048576",
                    absl::StrCat(base->session().limits().inline_threshold()));
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest o = p->DefaultOpen();
        o.mutable_requested_limits()->set_inline_threshold(uint64_t{1} << 40);
        ctx.RequireOk(p->Open(o), "OpenSession requesting an inline_threshold of 1 TiB");
        ctx.Require(p->session().limits().inline_threshold() <= (1u << 20),
                    "the granted inline_threshold is at most 1 MiB", "<= 1048576",
                    absl::StrCat(p->session().limits().inline_threshold()));
      });
  Add(r, "ses/5.4/2",
      "a limit requested one below the server's value gets it, at or above gets the server's, "
      "for every limit; announced values are not negotiable",
      "limits", {"AOBJ-SES-006"}, false, [](CaseContext& ctx) {
        auto base = ctx.Open();
        const pb::Limits server = base->session().limits();
        struct Field {
          const char* name;
          uint64_t (*get)(const pb::Limits&);
          void (*set)(pb::Limits*, uint64_t);
          uint64_t max;  // the field's wire range
        };
        const Field fields[] = {
            {"max_transfer_bytes", [](const pb::Limits& l) { return l.max_transfer_bytes(); },
             [](pb::Limits* l, uint64_t v) { l->set_max_transfer_bytes(v); }, UINT64_MAX},
            {"max_in_flight", [](const pb::Limits& l) -> uint64_t { return l.max_in_flight(); },
             [](pb::Limits* l, uint64_t v) { l->set_max_in_flight(static_cast<uint32_t>(v)); },
             UINT32_MAX},
            {"inline_threshold", [](const pb::Limits& l) { return l.inline_threshold(); },
             [](pb::Limits* l, uint64_t v) { l->set_inline_threshold(v); }, UINT64_MAX},
            {"max_descriptors", [](const pb::Limits& l) -> uint64_t { return l.max_descriptors(); },
             [](pb::Limits* l, uint64_t v) { l->set_max_descriptors(static_cast<uint32_t>(v)); },
             UINT32_MAX},
            {"max_rkey_bytes", [](const pb::Limits& l) -> uint64_t { return l.max_rkey_bytes(); },
             [](pb::Limits* l, uint64_t v) { l->set_max_rkey_bytes(static_cast<uint32_t>(v)); },
             UINT32_MAX},
        };
        for (const Field& f : fields) {
          const uint64_t theirs = f.get(server);
          // One below the server's value is the client's to lower to (ses/5.4/1 lowers some
          // limits far below; this is every limit at the edge).
          for (uint64_t want : {theirs > 1 ? theirs - 1 : 0, theirs, theirs + 1, f.max}) {
            if (want == 0 || (want == theirs + 1 && theirs == f.max)) continue;
            auto p = ctx.NewPeer();
            pb::OpenSessionRequest req = p->DefaultOpen();
            f.set(req.mutable_requested_limits(), want);
            ctx.RequireOk(p->Open(req), absl::StrCat("OpenSession requesting ", f.name, " ", want));
            const uint64_t got = f.get(p->session().limits());
            const uint64_t expect = std::min(want, theirs);
            ctx.Require(
                got == expect,
                absl::StrCat(f.name, " requested at ", want, " (the server's is ", theirs, ")"),
                absl::StrCat(expect), absl::StrCat(got));
            p->Close();
          }
        }
        // data_wait_ms and skew_window_ms are announced, never negotiated.
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest req = p->DefaultOpen();
        req.mutable_requested_limits()->set_data_wait_ms(1);
        req.mutable_requested_limits()->set_skew_window_ms(1);
        req.mutable_requested_limits()->set_min_part_size(1);
        req.mutable_requested_limits()->set_max_key_bytes(1);
        req.mutable_requested_limits()->set_max_list_page(1);
        req.mutable_requested_limits()->set_max_part_size(1);
        req.mutable_requested_limits()->set_max_object_size(1);
        ctx.RequireOk(p->Open(req), "OpenSession requesting 1 for every announced-only limit");
        const pb::Limits& got = p->session().limits();
        auto announced = [](const pb::Limits& l) {
          return absl::StrCat(l.data_wait_ms(), ", ", l.skew_window_ms(), ", ", l.min_part_size(),
                              ", ", l.max_key_bytes(), ", ", l.max_list_page(), ", ",
                              l.max_part_size(), ", ", l.max_object_size());
        };
        ctx.Require(announced(got) == announced(server), "announced values ignore the request",
                    announced(server), announced(got));
      });
  Add(r, "ses/5.5/1", "session IDs: 16 random octets, 32 lower-case hex in metadata, distinct",
      "core", {"AOBJ-SES-007"}, false, [](CaseContext& ctx) {
        std::set<std::string> ids;
        for (int i = 0; i < 16; ++i) {
          auto p = ctx.Open();
          const std::string& hex = p->session_hex();
          ctx.Require(hex.size() == 32 && hex.find_first_not_of("0123456789abcdef") == std::string::npos,
                      "the ID as metadata", "32 lower-case hex characters", hex);
          ids.insert(p->session().session_id());
          p->Close();
        }
        ctx.Require(ids.size() == 16, "16 sessions have 16 different IDs", "16",
                    absl::StrCat(ids.size()));
      });
  Add(r, "ses/5.6/1", "worker_address empty, or above 8192 octets: INVALID_ARGUMENT", "core",
      {"AOBJ-SES-011", "AOBJ-TRN-014"}, true, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest req = p->DefaultOpen();
        req.clear_worker_address();
        OpenRefused(ctx, req, ErrorCode::kInvalidArgument, "empty worker_address");
        req.set_worker_address(std::string(8193, 'w'));
        OpenRefused(ctx, req, ErrorCode::kInvalidArgument, "worker_address of 8193 octets");
        req.set_worker_address(Content(200, 7));
        RawReply g = p->Send(Method::kOpenSession, req);
        ctx.Require(CodeOf(g) == ErrorCode::kDataChannelUnavailable ||
                        CodeOf(g) == ErrorCode::kInvalidArgument,
                    "a garbage worker_address of 200 octets",
                    "DATA_CHANNEL_UNAVAILABLE or INVALID_ARGUMENT", Outcome(g));
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.6/2", "endpoint challenges reach the worker; ConfirmEndpoint checks the proof",
      "core", {"AOBJ-SES-025", "AOBJ-SES-026", "AOBJ-SES-029", "AOBJ-SES-031"}, true,
      [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        ctx.RequireOk(p->Open(p->DefaultOpen(), /*confirm=*/false), "OpenSession");
        const uint32_t n = p->session().endpoint_challenges();
        ctx.Require(n >= 1 && n <= 4, "endpoint_challenges announced in OpenSession", "1..4",
                    absl::StrCat(n));
        ctx.RequireCode(p->Confirm(std::string(31, 'p')), ErrorCode::kInvalidArgument,
                        "ConfirmEndpoint with a proof of 31 octets");
        ctx.RequireCode(p->Confirm(std::string(32, 'p')), ErrorCode::kAccessDenied,
                        "ConfirmEndpoint with a wrong proof");
        // Peer::Confirm fails the case itself when the challenges do not arrive.
        ctx.RequireOk(p->Confirm(), "ConfirmEndpoint with the proof over the challenges");
        ctx.RequireOk(p->Confirm(), "the same proof again");
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.6/3", "before ConfirmEndpoint no byte moves by RMA: ENDPOINT_UNCONFIRMED",
      "core", {"AOBJ-SES-027"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "obj", Content(100000, 3)), "PUT of the object");
        auto p = ctx.NewPeer();
        ctx.RequireOk(p->Open(p->DefaultOpen(), /*confirm=*/false), "OpenSession");
        auto mem = p->Allocate(100000);
        std::memset(mem->data(), 0x5a, 100000);
        ctx.RequireCode(p->Send(Method::kGetObject, p->GetRequest(f.bucket, "obj", *mem, 100000)),
                        ErrorCode::kEndpointUnconfirmed, "GET by RMA before ConfirmEndpoint");
        bool untouched = true;
        for (size_t i = 0; i < 100000; ++i) untouched = untouched && mem->data()[i] == 0x5a;
        ctx.Require(untouched, "the GET's window is untouched", "all 0x5a", "written");
        ctx.RequireCode(p->Send(Method::kPutObject, p->PutRequest(f.bucket, "new", *mem, 100000)),
                        ErrorCode::kEndpointUnconfirmed, "PUT by RMA before ConfirmEndpoint");
        ctx.RequireCode(f.p->Head(f.bucket, "new"), ErrorCode::kNoSuchKey,
                        "HEAD of the refused PUT's key");
        ctx.RequireOk(p->Confirm(), "ConfirmEndpoint");
        ctx.RequireOk(p->Send(Method::kGetObject, p->GetRequest(f.bucket, "obj", *mem, 100000)),
                      "the same GET after ConfirmEndpoint");
        ctx.Require(std::memcmp(mem->data(), Content(100000, 3).data(), 100000) == 0,
                    "the GET delivered the object", "the object's octets", "other octets");
      });
  Add(r, "ses/5.6/4", "a session naming another worker's address gets no RMA into it", "core",
      {"AOBJ-SES-027", "AOBJ-SES-028"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "obj", Content(65536, 4)), "PUT of the object");
        // The victim: a client with its own session, worker and registered memory.
        auto victim = ctx.Open();
        auto mem = victim->Allocate(65536);
        std::memset(mem->data(), 0x11, 65536);
        // The attacker names the victim's worker address in a session of its own (the same
        // principal, so that bucket authorization cannot answer first).
        auto attacker = ctx.NewPeer();
        pb::OpenSessionRequest open = attacker->DefaultOpen();
        open.set_worker_address(victim->worker_address());
        RawReply o = attacker->Open(open, /*confirm=*/false);
        if (!o.status.ok()) {
          ctx.Require(true, "OpenSession naming another client's worker was refused", "", "");
          ctx.RequireStillServes();
          return;
        }
        ctx.RequireCode(attacker->Confirm(std::string(32, 'g')), ErrorCode::kAccessDenied,
                        "ConfirmEndpoint with a guessed proof");
        ctx.RequireCode(attacker->Send(Method::kGetObject,
                                       attacker->GetRequest(f.bucket, "obj", *mem, 65536)),
                        ErrorCode::kEndpointUnconfirmed,
                        "GET into the victim's memory through the attacker's session");
        bool untouched = true;
        for (size_t i = 0; i < 65536; ++i) untouched = untouched && mem->data()[i] == 0x11;
        ctx.Require(untouched, "the victim's memory is untouched", "all 0x11", "written");
        ctx.RequireCode(attacker->Send(Method::kPutObject,
                                       attacker->PutRequest(f.bucket, "stolen", *mem, 65536)),
                        ErrorCode::kEndpointUnconfirmed,
                        "PUT from the victim's memory through the attacker's session");
        ctx.RequireCode(f.p->Head(f.bucket, "stolen"), ErrorCode::kNoSuchKey,
                        "HEAD of the key the attacker's PUT named");
        // The victim's own session still works.
        std::string got;
        ctx.RequireOk(victim->Get(f.bucket, "obj", &got), "the victim's own GET");
        ctx.RequireStillServes();
      });
  Add(r, "ses/14.3/1",
      "a client whose tcp listener answers in another protocol harms no other principal", "core",
      {"AOBJ-SEC-021", "AOBJ-SEC-022"}, true, [](CaseContext& ctx) {
        // The other principal's session, bucket and object, all made before the attack.
        auto victim = ctx.Open(/*second=*/true);
        const std::string bucket = ctx.NewBucket(*victim);
        ctx.RequireOk(victim->Put(bucket, "obj", Content(65536, 7)), "the other principal's PUT");
        const std::string host = ctx.target().endpoint.substr(0, ctx.target().endpoint.rfind(':'));
        if (host != "127.0.0.1" && host != "localhost" && host != "[::1]") {
          ctx.Unsupported("the target is not on this host (the attack names a 127.0.0.1 port)");
        }
        ForeignListener foreign;
        if (foreign.port() == 0) ctx.Unsupported("cannot listen on 127.0.0.1");
        auto attacker = ctx.NewPeer();
        std::string address = attacker->worker_address();
        bool only_tcp = false;
        auto rewritten = RewriteTcpPorts(&address, foreign.port(), &only_tcp);
        if (!rewritten.ok() || *rewritten == 0 || !only_tcp) {
          ctx.Unsupported("the suite's worker address is not tcp only (run with UCX_TLS=tcp)");
        }
        pb::OpenSessionRequest open = attacker->DefaultOpen();
        open.set_worker_address(address);
        // Refused or not, the target connects its tcp lane to the port the address names (to
        // send the endpoint challenges) and reads the foreign octets as UCX's.
        RawReply o = attacker->Open(open, /*confirm=*/false);
        ctx.Note(absl::StrCat(
            "OpenSession naming the foreign port: ", o.status.ok() ? "OK" : o.status.ToString(),
            "; the port saw ", foreign.accepted(), " connection(s)"));
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        std::string got;
        ctx.RequireOk(victim->Get(bucket, "obj", &got),
                      "the other principal's GET in its session opened before the attack");
        ctx.Require(got == Content(65536, 7), "the GET delivered the object", "the object's octets",
                    "other octets");
        // The attacker's principal is served again in a new session.
        auto again = ctx.Open();
        const std::string mine = ctx.NewBucket(*again);
        ctx.RequireOk(again->Put(mine, "obj", Content(65536, 8)), "PUT in a new session");
        ctx.RequireOk(again->Get(mine, "obj", &got), "GET in a new session");
        ctx.Require(got == Content(65536, 8), "the GET delivered the object", "the object's octets",
                    "other octets");
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.7/1", "memory_protection is EMULATED when no lane can enforce keys in hardware",
      "core", {"AOBJ-SES-013", "AOBJ-SEC-002", "AOBJ-TRN-015"}, false, [](CaseContext& ctx) {
        auto p = ctx.Open();
        if (HostHasRdmaDevice()) {
          ctx.Note("this host has an RDMA device; the case only checks hosts without one");
          ctx.Require(p->session().memory_protection() != pb::MEMORY_PROTECTION_UNSPECIFIED,
                      "memory_protection is set", "HARDWARE or EMULATED",
                      pb::MemoryProtection_Name(p->session().memory_protection()));
          return;
        }
        ctx.Require(p->session().memory_protection() == pb::MEMORY_PROTECTION_EMULATED,
                    "no RDMA device on the suite's host: the session cannot be HARDWARE",
                    "MEMORY_PROTECTION_EMULATED",
                    pb::MemoryProtection_Name(p->session().memory_protection()));
      });
  Add(r, "ses/5.7/2", "require_hardware_protection on an EMULATED channel: ACCESS_DENIED", "core",
      {"AOBJ-SES-014"}, true, [](CaseContext& ctx) {
        auto probe = ctx.Open();
        if (probe->session().memory_protection() != pb::MEMORY_PROTECTION_EMULATED) {
          ctx.Unsupported("the target's data channel is HARDWARE here");
        }
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest req = p->DefaultOpen();
        req.set_require_hardware_protection(true);
        OpenRefused(ctx, req, ErrorCode::kAccessDenied, "require_hardware_protection");
        ctx.RequireStillServes();
      });

  // ---- 5.8-5.9: lease, close, expiry ---------------------------------------------------------
  Add(r, "ses/5.8/1", "requests renew the lease; RenewSession works", "core",
      {"AOBJ-SES-008", "AOBJ-SES-018"}, false, [](CaseContext& ctx) {
        auto p = ctx.Open();
        const uint64_t lease = p->session().lease_ms();
        if (lease > 10000) {
          ctx.Unsupported(absl::StrCat("lease_ms is ", lease, "; the case needs at most 10000 "
                                       "(start the target with a short lease)"));
        }
        const std::string bucket = ctx.NewBucket(*p);
        // Three times 0.6 lease: alive only if every request renewed the lease.
        for (int i = 0; i < 3; ++i) {
          absl::SleepFor(absl::Milliseconds(lease * 6 / 10));
          pb::HeadBucketRequest hb;
          hb.set_bucket(bucket);
          ctx.RequireOk(p->Send(Method::kHeadBucket, hb),
                        absl::StrCat("HeadBucket ", (i + 1) * 6, "/10 lease after the last request"));
        }
        absl::SleepFor(absl::Milliseconds(lease * 6 / 10));
        RawReply rn = p->Send(Method::kRenewSession, pb::RenewSessionRequest());
        ctx.RequireOk(rn, "RenewSession 0.6 lease after the last request");
      });
  Add(r, "ses/5.8/2",
      "a request early in the lease renews it to a full lease_ms from that request, not from the "
      "last renewal",
      "core", {"AOBJ-SES-008"}, false, [](CaseContext& ctx) {
        auto p = ctx.Open();
        const uint64_t lease = p->session().lease_ms();
        if (lease > 10000) {
          ctx.Unsupported(absl::StrCat("lease_ms is ", lease,
                                       "; the case needs at most 10000 "
                                       "(start the target with a short lease)"));
        }
        const std::string bucket = ctx.NewBucket(*p);
        pb::HeadBucketRequest hb;
        hb.set_bucket(bucket);
        // A request at 0.3 lease moves the end to 1.3 lease; the next, at 1.2 lease, is inside it
        // only if that early request renewed the lease in full.
        const absl::Time opened = absl::Now();
        absl::SleepFor(absl::Milliseconds(lease * 3 / 10));
        const absl::Time renewed = absl::Now();
        ctx.RequireOk(p->Send(Method::kHeadBucket, hb), "HeadBucket at 0.3 lease");
        absl::SleepFor(renewed + absl::Milliseconds(lease * 9 / 10) - absl::Now());
        ctx.RequireOk(p->Send(Method::kHeadBucket, hb),
                      absl::StrCat("HeadBucket 0.9 lease after the early request (",
                                   absl::ToInt64Milliseconds(absl::Now() - opened),
                                   " ms after OpenSession, lease ", lease, " ms)"));
      });
  Add(r, "ses/5.8/3", "RenewSession answers with the session's lease_ms, as OpenSession did",
      "core", {"AOBJ-SES-017", "AOBJ-SES-008"}, false, [](CaseContext& ctx) {
        auto p = ctx.Open();
        const uint64_t lease = p->session().lease_ms();
        ctx.Require(lease > 0, "OpenSession grants a lease", "> 0", absl::StrCat(lease));
        for (int i = 0; i < 2; ++i) {
          RawReply rn = p->Send(Method::kRenewSession, pb::RenewSessionRequest());
          ctx.RequireOk(rn, absl::StrCat("RenewSession ", i + 1));
          const auto resp = Parse<pb::RenewSessionResponse>(ctx, rn, "RenewSession");
          ctx.Require(resp.lease_ms() == lease,
                      absl::StrCat("RenewSession ", i + 1, " reports the session's lease_ms"),
                      absl::StrCat(lease), absl::StrCat(resp.lease_ms()));
        }
      });
  Add(r, "ses/5.9/1", "after CloseSession the session is NO_SUCH_SESSION", "core",
      {"AOBJ-SES-010"}, true, [](CaseContext& ctx) {
        auto p = ctx.Open();
        Tamper closed;
        closed.session_hex = p->session_hex();
        ctx.RequireOk(p->Close(), "CloseSession");
        ctx.RequireCode(p->Send(Method::kListBuckets, pb::ListBucketsRequest(), closed),
                        ErrorCode::kNoSuchSession, "ListBuckets naming the closed session");
        ctx.RequireCode(p->Send(Method::kCloseSession, pb::CloseSessionRequest(), closed),
                        ErrorCode::kNoSuchSession, "CloseSession again");
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.9/2", "after the lease expires the session is SESSION_EXPIRED", "core",
      {"AOBJ-SES-009"}, true, [](CaseContext& ctx) {
        auto p = ctx.Open();
        const uint64_t lease = p->session().lease_ms();
        if (lease > 10000) {
          ctx.Unsupported(absl::StrCat("lease_ms is ", lease, "; the case needs at most 10000"));
        }
        // The server may expire later than the lease (AOBJ-SES-018): if the session still
        // lives after 1.5 leases (that request renewed it), wait 3 more without any request.
        absl::SleepFor(absl::Milliseconds(lease * 3 / 2));
        RawReply last = p->Send(Method::kListBuckets, pb::ListBucketsRequest());
        if (last.grpc_status.ok()) {
          ctx.Note("the session was still alive 1.5 leases after its last request");
          absl::SleepFor(absl::Milliseconds(lease * 3));
          last = p->Send(Method::kListBuckets, pb::ListBucketsRequest());
        }
        ctx.RequireCode(last, ErrorCode::kSessionExpired, "a request after the lease expired");
        ctx.RequireCode(p->Send(Method::kRenewSession, pb::RenewSessionRequest()),
                        ErrorCode::kSessionExpired, "RenewSession of the expired session");
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.6/5",
      "ConfirmEndpoint compares the whole proof, before and after confirmation: either half "
      "wrong is ACCESS_DENIED, 33 octets INVALID_ARGUMENT, and neither changes the endpoint",
      "core", {"AOBJ-SES-031", "AOBJ-SES-026", "AOBJ-SES-027"}, true, [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "obj", Content(20000, 6)), "PUT of the object");
        auto p = ctx.NewPeer();
        ctx.RequireOk(p->Open(p->DefaultOpen(), /*confirm=*/false), "OpenSession");
        const std::string proof = p->Proof();
        auto altered = [&](size_t at) {
          std::string x = proof;
          x[at] = static_cast<char>(x[at] ^ 0x01);
          return x;
        };
        auto mem = p->Allocate(20000);
        auto get = [&] {
          return p->Send(Method::kGetObject, p->GetRequest(f.bucket, "obj", *mem, 20000));
        };
        for (int confirmed = 0; confirmed < 2; ++confirmed) {
          const std::string when = confirmed ? " after confirmation" : " before confirmation";
          ctx.RequireCode(p->Confirm(altered(31)), ErrorCode::kAccessDenied,
                          "a proof whose last octet is wrong" + when);
          ctx.RequireCode(p->Confirm(altered(0)), ErrorCode::kAccessDenied,
                          "a proof whose first octet is wrong" + when);
          ctx.RequireCode(p->Confirm(proof + "x"), ErrorCode::kInvalidArgument,
                          "the right proof and one octet more (33 octets)" + when);
          if (!confirmed) {
            ctx.RequireCode(get(), ErrorCode::kEndpointUnconfirmed,
                            "a GET by RMA after the wrong proofs: still unconfirmed");
            ctx.RequireOk(p->Confirm(), "ConfirmEndpoint with the right proof");
          } else {
            ctx.RequireOk(get(), "a GET by RMA after the wrong proofs: still confirmed");
          }
        }
        ctx.RequireOk(p->Confirm(), "the right proof again");
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.9/4",
      "Table 1 on every call: after close, RenewSession, ConfirmEndpoint and a GET are "
      "NO_SUCH_SESSION; after expiry, CloseSession and ConfirmEndpoint are SESSION_EXPIRED, and "
      "another principal naming the expired session gets NO_SUCH_SESSION",
      "core", {"AOBJ-SES-017", "AOBJ-SES-009", "AOBJ-SES-010", "AOBJ-AUTH-010"}, true,
      [](CaseContext& ctx) {
        BucketFixture f = OpenBucket(ctx);
        ctx.RequireOk(f.p->Put(f.bucket, "obj", Content(1000, 2)), "PUT");
        auto p = ctx.Open();
        auto mem = p->Allocate(1000);
        const pb::GetObjectRequest g = p->GetRequest(f.bucket, "obj", *mem, 1000);
        const std::string proof = p->Proof();
        Tamper closed;
        closed.session_hex = p->session_hex();
        ctx.RequireOk(p->Close(), "CloseSession");
        ctx.RequireCode(p->Send(Method::kRenewSession, pb::RenewSessionRequest(), closed),
                        ErrorCode::kNoSuchSession, "RenewSession of the closed session");
        pb::ConfirmEndpointRequest c;
        c.set_proof(proof);
        ctx.RequireCode(p->Send(Method::kConfirmEndpoint, c, closed), ErrorCode::kNoSuchSession,
                        "ConfirmEndpoint of the closed session");
        ctx.RequireCode(p->Send(Method::kGetObject, g, closed), ErrorCode::kNoSuchSession,
                        "GetObject in the closed session");
        auto e = ctx.Open();
        const uint64_t lease = e->session().lease_ms();
        if (lease > 10000) {
          ctx.Unsupported(absl::StrCat("lease_ms is ", lease, "; the rest needs at most 10000"));
        }
        const std::string eproof = e->Proof();
        absl::SleepFor(absl::Milliseconds(lease * 3 / 2));
        RawReply probe = e->Send(Method::kHeadBucket, [&] {
          pb::HeadBucketRequest h;
          h.set_bucket(f.bucket);
          return h;
        }());
        if (probe.grpc_status.ok()) {
          ctx.Note("the session was still alive 1.5 leases after its last request");
          absl::SleepFor(absl::Milliseconds(lease * 3));
        }
        pb::ConfirmEndpointRequest ec;
        ec.set_proof(eproof);
        ctx.RequireCode(e->Send(Method::kConfirmEndpoint, ec), ErrorCode::kSessionExpired,
                        "ConfirmEndpoint of the expired session");
        if (!ctx.target().second_access_key_id.empty()) {
          auto stranger = ctx.NewPeer(/*second=*/true);
          Tamper other;
          other.session_hex = e->session_hex();
          ctx.RequireCode(stranger->Send(Method::kListBuckets, pb::ListBucketsRequest(), other),
                          ErrorCode::kNoSuchSession,
                          "another principal naming the expired session (not SESSION_EXPIRED)");
        }
        ctx.RequireCode(e->Send(Method::kCloseSession, pb::CloseSessionRequest()),
                        ErrorCode::kSessionExpired, "CloseSession of the expired session");
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.2/4",
      "32-bit fields at their top value: a maximum version of 2^32 - 1 selects a common version; "
      "part number, max_keys, max_buckets, max_parts and max_uploads of 2^32 - 1 get their codes",
      "core",
      {"AOBJ-EXT-021", "AOBJ-SES-002", "AOBJ-OBJ-205", "AOBJ-OBJ-104", "AOBJ-OBJ-112",
       "AOBJ-OBJ-224"},
      true, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest o = p->DefaultOpen();
        o.mutable_versions()->set_min(1);
        o.mutable_versions()->set_max(0xFFFFFFFFu);
        ctx.RequireOk(p->Open(o), "OpenSession offering versions 1 to 2^32 - 1");
        ctx.Require(p->session().version() == 1, "version 1 selected", "1",
                    absl::StrCat(p->session().version()));
        const std::string bucket = ctx.NewBucket(*p);
        constexpr uint32_t kTop = 0xFFFFFFFFu;
        pb::UploadPartRequest up;
        up.set_bucket(bucket);
        up.set_key("k");
        up.set_upload_id("0123456789abcdef0123456789abcdef");
        up.set_part_number(kTop);
        up.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
        up.set_checksum(Crc32cOf(""));
        RawReply ur = p->Send(Method::kUploadPart, up);
        ctx.Require(
            CodeOf(ur) == ErrorCode::kTooManyParts || CodeOf(ur) == ErrorCode::kNoSuchUpload,
            "UploadPart number 2^32 - 1: TOO_MANY_PARTS (or NO_SUCH_UPLOAD, the upload "
            "being checked first)",
            "TOO_MANY_PARTS", Outcome(ur));
        pb::ListObjectsV2Request l;
        l.set_bucket(bucket);
        l.set_max_keys(kTop);
        ctx.RequireCode(p->Send(Method::kListObjectsV2, l), ErrorCode::kInvalidArgument,
                        "ListObjectsV2 max_keys 2^32 - 1");
        pb::ListBucketsRequest lb;
        lb.set_max_buckets(kTop);
        ctx.RequireCode(p->Send(Method::kListBuckets, lb), ErrorCode::kInvalidArgument,
                        "ListBuckets max_buckets 2^32 - 1");
        pb::ListMultipartUploadsRequest lu;
        lu.set_bucket(bucket);
        lu.set_max_uploads(kTop);
        RawReply lur = p->Send(Method::kListMultipartUploads, lu);
        ctx.RequireOk(lur,
                      "ListMultipartUploads max_uploads 2^32 - 1 (taken as 1000, AOBJ-OBJ-224)");
        if (lur.grpc_status.ok()) {
          ctx.Require(Parse<pb::ListMultipartUploadsResponse>(ctx, lur, "ListMultipartUploads")
                              .uploads_size() <= 1000,
                      "max_uploads 2^32 - 1: never more than 1000", "<= 1000", "more");
        }
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.2/5",
      "offered_versions: the highest supported version of the list, grease never selected, the "
      "range ignored, more than 16 entries refused",
      "core", {"AOBJ-SES-035", "AOBJ-EXT-011", "AOBJ-SES-003"}, true, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest o = p->DefaultOpen();
        // A range that the list must override: alone, it would be UNSUPPORTED_VERSION.
        o.mutable_versions()->set_min(1000000);
        o.mutable_versions()->set_max(2000000);
        for (uint32_t v : {0x0A0A0A0Au, 1u, 0xFAFAFAFAu, 1000000u}) o.add_offered_versions(v);
        ctx.RequireOk(p->Open(o),
                      "OpenSession offering {0x0a0a0a0a, 1, 0xfafafafa, 1000000}, range "
                      "[1000000, 2000000]");
        const uint32_t top = p->session().supported_versions().max();
        ctx.Require(
            p->session().version() == 1 || (p->session().version() == 1000000 && top >= 1000000),
            "version 1 (the highest offered version the server supports) selected from "
            "the list",
            "1", absl::StrCat(p->session().version()));
        auto q = ctx.NewPeer();
        pb::OpenSessionRequest g = q->DefaultOpen();
        g.add_offered_versions(0x0A0A0A0Au);
        g.add_offered_versions(0x3A5A7A9Au);
        RawReply gr = q->Send(Method::kOpenSession, g);
        ctx.RequireCode(gr, ErrorCode::kUnsupportedVersion,
                        "OpenSession offering only grease versions (range [1, 1] beside)");
        ctx.Require(gr.error.has_supported_versions(),
                    "the error carries the server's supported range (AOBJ-SES-003)",
                    "supported_versions", gr.error.ShortDebugString());
        auto w = ctx.NewPeer();
        pb::OpenSessionRequest many = w->DefaultOpen();
        for (uint32_t i = 0; i < 16; ++i) many.add_offered_versions(0x0A0A0A0Au + (i << 4));
        many.add_offered_versions(1);
        ctx.RequireCode(w->Send(Method::kOpenSession, many), ErrorCode::kInvalidArgument,
                        "OpenSession with 17 offered_versions");
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.2/6",
      "a retry whose previous_offer lists a version the server supports: NEGOTIATION_FAILED; "
      "one listing only versions it lacks is served",
      "core", {"AOBJ-SES-036"}, true, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest o = p->DefaultOpen();
        o.add_offered_versions(1);
        for (uint32_t v : {1000000u, 1u}) o.add_previous_offer(v);
        RawReply r = p->Send(Method::kOpenSession, o);
        ctx.RequireCode(r, ErrorCode::kNegotiationFailed,
                        "OpenSession offering {1} after a refused offer of {1000000, 1}");
        auto q = ctx.NewPeer();
        pb::OpenSessionRequest fine = q->DefaultOpen();
        fine.add_offered_versions(1);
        for (uint32_t v : {1000000u, 0x0A0A0A0Au}) fine.add_previous_offer(v);
        ctx.RequireOk(q->Open(fine),
                      "OpenSession offering {1} after a refused offer of {1000000, 0x0a0a0a0a}");
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.6/6",
      "bindings: the first offered binding the server implements is selected and answered, "
      "grease and unknown IDs skipped; an empty offer is UCX",
      "core", {"AOBJ-SES-039", "AOBJ-EXT-014"}, true, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest o = p->DefaultOpen();
        auto* g = o.add_bindings();
        g->set_binding(0x2A4A6A8Au);
        g->set_endpoint_address(Content(24, 9));
        auto* unknown = o.add_bindings();
        unknown->set_binding(0xEFFFFFF0u);  // unassigned, outside private use
        unknown->set_endpoint_address(Content(40, 10));
        o.add_bindings()->set_binding(1);
        ctx.RequireOk(p->Open(o), "OpenSession offering bindings {grease, 0xeffffff0, 1}");
        ctx.Require(p->session().binding() == 1,
                    "the answer names UCX, the only offered binding the server can have",
                    "binding 1", absl::StrCat(p->session().binding()));
        auto q = ctx.NewPeer();
        pb::OpenSessionRequest e = q->DefaultOpen();
        e.clear_bindings();
        ctx.RequireOk(q->Open(e), "OpenSession with no bindings (UCX implied)");
        ctx.Require(q->session().binding() == 1, "the answer to an empty offer names UCX",
                    "binding 1", absl::StrCat(q->session().binding()));
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.6/7",
      "bindings refused: none implemented is NEGOTIATION_FAILED; 17 entries, an address above "
      "8192 octets, or one in the UCX entry is INVALID_ARGUMENT",
      "core", {"AOBJ-SES-040"}, true, [](CaseContext& ctx) {
        auto p = ctx.NewPeer();
        pb::OpenSessionRequest none = p->DefaultOpen();
        none.clear_bindings();
        none.add_bindings()->set_binding(0x0A0A0A0Au);
        auto* unknown = none.add_bindings();
        unknown->set_binding(0xEFFFFFF0u);
        unknown->set_endpoint_address(Content(40, 11));
        ctx.RequireCode(p->Send(Method::kOpenSession, none), ErrorCode::kNegotiationFailed,
                        "OpenSession offering bindings {grease, 0xeffffff0} only");
        pb::OpenSessionRequest many = p->DefaultOpen();
        many.clear_bindings();
        for (uint32_t i = 0; i < 16; ++i) many.add_bindings()->set_binding(0x0A0A0A0Au + (i << 4));
        many.add_bindings()->set_binding(1);
        ctx.RequireCode(p->Send(Method::kOpenSession, many), ErrorCode::kInvalidArgument,
                        "OpenSession with 17 bindings, UCX last");
        pb::OpenSessionRequest big = p->DefaultOpen();
        big.clear_bindings();
        auto* huge = big.add_bindings();
        huge->set_binding(0xEFFFFFF0u);
        huge->set_endpoint_address(std::string(8193, 'e'));
        big.add_bindings()->set_binding(1);
        ctx.RequireCode(p->Send(Method::kOpenSession, big), ErrorCode::kInvalidArgument,
                        "OpenSession offering an endpoint address of 8193 octets");
        pb::OpenSessionRequest ucx = p->DefaultOpen();
        ucx.clear_bindings();
        auto* with = ucx.add_bindings();
        with->set_binding(1);
        with->set_endpoint_address(Content(64, 12));
        ctx.RequireCode(p->Send(Method::kOpenSession, ucx), ErrorCode::kInvalidArgument,
                        "OpenSession whose UCX entry carries an endpoint address");
        ctx.RequireStillServes();
      });
  Add(r, "ses/5.11/1", "listed gateways: at most 64, each 1 to 255 octets of HOST:PORT", "core",
      {"AOBJ-SES-032"}, false, [](CaseContext& ctx) {
        auto p = ctx.Open();
        const auto& gateways = p->session().gateways();
        ctx.Require(gateways.size() <= 64, "at most 64 gateways listed", "<= 64",
                    absl::StrCat(gateways.size()));
        for (const std::string& g : gateways) {
          const size_t colon = g.rfind(':');
          const bool port_ok = colon != std::string::npos && colon + 1 < g.size() &&
                               g.size() - colon - 1 <= 5 &&
                               g.find_first_not_of("0123456789", colon + 1) == std::string::npos &&
                               std::stoul(g.substr(colon + 1)) <= 65535;
          ctx.Require(!g.empty() && g.size() <= 255 && colon > 0 && port_ok,
                      "a listed gateway is HOST:PORT of 1 to 255 octets", "HOST:PORT",
                      g.substr(0, 300));
        }
      });
  Add(r, "ses/5.9/3", "a session ID the server never issued: NO_SUCH_SESSION", "core",
      {"AOBJ-SES-010"}, true, [](CaseContext& ctx) {
        auto p = ctx.Open();
        Tamper t;
        t.session_hex = HexEncode(RandomBytes(16));
        ctx.RequireCode(p->Send(Method::kListBuckets, pb::ListBucketsRequest(), t),
                        ErrorCode::kNoSuchSession, "a random session id");
        ctx.RequireStillServes();
      });
}

}  // namespace aobj::conformance
