// Helpers shared by the case files of the conformance suite.
#ifndef AOBJ_CONFORMANCE_CASES_UTIL_H_
#define AOBJ_CONFORMANCE_CASES_UTIL_H_

#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "conformance/src/peer.h"
#include "conformance/src/suite.h"
#include "google/protobuf/unknown_field_set.h"
#include "wire/checksum.h"
#include "wire/crypto.h"
#include "wire/protocol.h"

namespace aobj::conformance {

inline void Add(Registry& r, std::string id, std::string title, std::string profile,
                std::vector<std::string> requirements, bool hostile,
                std::function<void(CaseContext&)> run) {
  CaseDef c;
  c.id = std::move(id);
  c.title = std::move(title);
  c.profile = std::move(profile);
  c.requirements = std::move(requirements);
  c.hostile = hostile;
  c.run = std::move(run);
  r.Add(std::move(c));
}

// A session of the first principal and a fresh bucket of its own (removed when the case ends).
struct BucketFixture {
  std::unique_ptr<Peer> p;
  std::string bucket;
};

inline BucketFixture OpenBucket(CaseContext& ctx) {
  BucketFixture f;
  f.p = ctx.Open();
  f.bucket = ctx.NewBucket(*f.p);
  return f;
}

// Deterministic content of `n` octets that differs with `seed`.
inline std::string Content(size_t n, uint32_t seed = 1) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 12345;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

inline std::string Crc32cOf(const std::string& s) {
  Checksummer c(ChecksumAlgorithm::kCrc32c);
  c.Update(s.data(), s.size());
  return c.Finish();
}

inline std::string Crc64Of(const std::string& s) {
  Checksummer c(ChecksumAlgorithm::kCrc64Nvme);
  c.Update(s.data(), s.size());
  return c.Finish();
}

// The quoted lower-case hex MD5 of `s` (AOBJ-OBJ-005).
std::string Md5Etag(const std::string& s);
std::string Md5Raw(const std::string& s);

inline std::string Quote(const std::string& s) { return absl::StrCat("\"", s, "\""); }

// Parses a reply body into M, failing the case when it does not parse.
template <class M>
M Parse(CaseContext& ctx, const RawReply& r, const std::string& what) {
  M m;
  ctx.Require(m.ParseFromString(r.body), what + ": the reply parses", "a parsable message",
              absl::StrCat(r.body.size(), " unparsable octets"));
  return m;
}

inline ErrorCode CodeOf(const RawReply& r) {
  return static_cast<ErrorCode>(static_cast<uint32_t>(r.error.code()));
}

// What a bucket that does not exist answers: NO_SUCH_BUCKET, or ACCESS_DENIED from a target that
// restricts buckets (AOBJ-SEC-008: refused whether or not the bucket exists).
inline ErrorCode MissingBucketCode(const CaseContext& ctx) {
  return ctx.target().owner_policy ? ErrorCode::kAccessDenied : ErrorCode::kNoSuchBucket;
}

// What a request other than CreateBucket that names an invalid bucket answers: the name is
// checked (INVALID_BUCKET_NAME), unless the target checks access to the bucket first
// (AOBJ-SEC-008, before any other processing).
inline ErrorCode InvalidBucketCode(const CaseContext& ctx) {
  return ctx.target().owner_policy ? ErrorCode::kAccessDenied : ErrorCode::kInvalidBucketName;
}

// Renews `owner`'s session every third of its lease from a second connection while long
// requests run (AOBJ-SES-019: a client renews during long data requests, and a request renews
// the lease only when it arrives; the lease in CI is 2 s, and a batch of 1000 objects on a
// filesystem store under the sanitizers takes longer).
class Renewer {
 public:
  Renewer(CaseContext& ctx, const Peer& owner);
  ~Renewer();
  Renewer(const Renewer&) = delete;
  Renewer& operator=(const Renewer&) = delete;

 private:
  Peer peer_;
  absl::Notification stop_;
  std::thread thread_;
};

// Capability IDs (spec 4.2).
inline constexpr uint32_t kCapInline = 1;
inline constexpr uint32_t kCapCrc32c = 2;
inline constexpr uint32_t kCapCrc64 = 3;
inline constexpr uint32_t kCapMultiDescriptor = 4;
inline constexpr uint32_t kCapOpaqueEtag = 5;
inline constexpr uint32_t kCapCancel = 6;
inline constexpr uint32_t kCapOpaquePartEtag = 10;

inline void RequireCapability(CaseContext& ctx, const Peer& p, uint32_t cap, const char* name) {
  if (!p.Negotiated(cap)) {
    ctx.Unsupported(absl::StrCat("the target did not negotiate capability ", cap, " (", name, ")"));
  }
}

// AOBJ-EXT-017: `m`, an OpenSession request or response, carries a capability_params entry of 1
// to 16 octets for the grease capability ID `grease`, and a field numbered in the grease range
// of AOBJ-EXT-016.
template <typename M>
void RequireGreaseParamsAndField(CaseContext& ctx, const M& m, uint32_t grease) {
  bool params = false;
  for (const pb::CapabilityParams& e : m.capability_params()) {
    params = params || (e.capability() == grease && !e.params().empty() && e.params().size() <= 16);
  }
  ctx.Require(params, "a capability_params entry of 1 to 16 octets for the grease ID", "an entry",
              m.ShortDebugString());
  bool field = false;
  const google::protobuf::UnknownFieldSet& unknown = m.GetReflection()->GetUnknownFields(m);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const int n = unknown.field(i).number();
    field = field ||
            (n >= static_cast<int>(kGreaseFieldFirst) && n <= static_cast<int>(kGreaseFieldLast));
  }
  ctx.Require(field, "a field numbered 1000 to 1999 (AOBJ-EXT-016)", "one",
              absl::StrCat(unknown.field_count(), " unknown fields, none in range"));
}

}  // namespace aobj::conformance

#endif  // AOBJ_CONFORMANCE_CASES_UTIL_H_
