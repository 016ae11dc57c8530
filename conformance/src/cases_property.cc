// Property-style cases (issue 17), as h2spec and s3-tests have them: object sizes and byte
// ranges drawn at random around the thresholds a session announces, random windows, random
// listing shapes, uploads and user metadata, each checked against a model the case computes.
//
// Every case draws from its own fixed seed (splitmix64, the same sequence on every platform), and
// every failure names it and the trial, so a failure reproduces. AOBJ_CONF_SEED (a number) is
// XORed into every seed to explore others; the reports name the seed each case used.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "conformance/src/cases_util.h"

namespace aobj::conformance {
namespace {

// splitmix64: small, fast and fully specified, so a seed means the same draws everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }  // [0, n)
  uint64_t Between(uint64_t lo, uint64_t hi) {                    // [lo, hi]
    return hi <= lo ? lo : lo + Below(hi - lo + 1);
  }
  bool OneIn(uint64_t n) { return Below(n) == 0; }
  uint32_t Seed32() { return static_cast<uint32_t>(Next()); }
  template <class T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }
  template <class T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[Below(i)]);
  }

 private:
  uint64_t s_;
};

// The checks of one property case. A failure names the seed and the trial; passing checks are
// counted rather than recorded one by one (a case makes thousands), and Done() records one check
// that stands for them all, so the reports stay readable.
class Prop {
 public:
  Prop(CaseContext& ctx, uint64_t fixed_seed) : ctx_(ctx), rng_(0) {
    uint64_t seed = fixed_seed;
    tag_ = absl::StrCat("seed 0x", absl::Hex(fixed_seed));
    if (const char* env = std::getenv("AOBJ_CONF_SEED"); env != nullptr && *env != '\0') {
      seed ^= std::strtoull(env, nullptr, 0);
      absl::StrAppend(&tag_, " ^ AOBJ_CONF_SEED ", env);
    }
    rng_ = Rng(seed);
    ctx.Note(absl::StrCat("drawn from ", tag_));
  }

  Rng& rng() { return rng_; }
  // Names the current trial in failures.
  void Trial(std::string t) { trial_ = std::move(t); }
  void Require(bool ok, const std::string& what, std::string expected, std::string actual) {
    ++held_;
    if (!ok) {
      ctx_.Require(false, absl::StrCat("[", tag_, trial_.empty() ? "" : ", ", trial_, "] ", what),
                   std::move(expected), std::move(actual));
    }
  }
  void RequireOk(const RawReply& r, const std::string& what) {
    Require(r.grpc_status.ok(), what, "OK", r.grpc_status.ok() ? "" : Outcome(r));
  }
  void RequireCode(const RawReply& r, ErrorCode code, const std::string& what) {
    const bool ok = !r.grpc_status.ok() && r.error_trailers > 0 && CodeOf(r) == code;
    Require(ok, what, CodeName(code), ok ? "" : Outcome(r));
  }
  template <class M>
  M Parse(const RawReply& r, const std::string& what) {
    M m;
    Require(m.ParseFromString(r.body), what + ": the reply parses", "a parsable message",
            absl::StrCat(r.body.size(), " unparsable octets"));
    return m;
  }
  void Done(const std::string& what) {
    trial_.clear();
    ctx_.Require(true, absl::StrCat(what, " (", tag_, ": ", held_, " checks held)"), "held", "");
  }

 private:
  CaseContext& ctx_;
  std::string tag_, trial_;
  int held_ = 0;
  Rng rng_;
};

// Keys compared as strings of unsigned octets (AOBJ-OBJ-100, AOBJ-OBJ-015).
struct OctetLess {
  bool operator()(const std::string& a, const std::string& b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
      return static_cast<uint8_t>(x) < static_cast<uint8_t>(y);
    });
  }
};
bool Before(const std::string& a, const std::string& b) { return OctetLess()(a, b); }

std::string Esc(const std::string& s) { return absl::StrCat("'", absl::CHexEscape(s), "'"); }

// The atoms random keys are made of: '/' and '-' (the usual delimiters), letters of both cases,
// one UTF-8 sequence of every length, and a composed and a decomposed e-acute (AOBJ-OBJ-015: no
// normalization, no case folding).
const std::vector<std::string>& KeyAtoms() {
  static const auto* atoms = new std::vector<std::string>{"a",
                                                          "b",
                                                          "B",
                                                          "0",
                                                          "/",
                                                          "-",
                                                          ".",
                                                          "~",
                                                          " ",
                                                          "a/",
                                                          "\xc3\xa9",
                                                          "e\xcc\x81",
                                                          "\xe4\xb8\xad",
                                                          "\xf0\x9f\x98\x80"};
  return *atoms;
}

std::vector<std::string> RandomAtoms(Rng& rng, size_t max_atoms) {
  std::vector<std::string> out(rng.Between(1, max_atoms));
  for (auto& a : out) a = rng.Pick(KeyAtoms());
  return out;
}
std::string Join(const std::vector<std::string>& atoms, size_t n) {
  std::string s;
  for (size_t i = 0; i < n && i < atoms.size(); ++i) s += atoms[i];
  return s;
}

// `n` random octets. (The size is drawn before the seed: a draw in each of two arguments of one
// call would depend on the compiler's order of evaluation.)
std::string Body(Rng& rng, uint64_t n) { return Content(n, rng.Seed32()); }

std::string PathName(pb::TransferPath p) { return pb::TransferPath_Name(p); }

pb::PutObjectRequest InlinePut(const std::string& bucket, const std::string& key,
                               const std::string& body) {
  pb::PutObjectRequest put;
  put.set_bucket(bucket);
  put.set_key(key);
  put.set_size(body.size());
  put.set_inline_data(body);
  put.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
  put.set_checksum(Crc32cOf(body));
  return put;
}

// Whether `checksum` in `algorithm` is that of `body` (ObjectMetadata may use either algorithm).
bool ChecksumOf(pb::ChecksumAlgorithm algorithm, const std::string& checksum,
                const std::string& body) {
  if (algorithm == pb::CHECKSUM_ALGORITHM_CRC32C) return checksum == Crc32cOf(body);
  if (algorithm == pb::CHECKSUM_ALGORITHM_CRC64NVME) return checksum == Crc64Of(body);
  return false;
}

bool AllOctets(const RegisteredMemory& m, uint64_t from, uint64_t to, uint8_t v) {
  for (uint64_t i = from; i < to; ++i) {
    if (m.data()[i] != v) return false;
  }
  return true;
}

// ---- ranges -------------------------------------------------------------------------------------

struct DrawnRange {
  pb::ByteRange range;
  bool satisfiable = false;
  uint64_t from = 0, to = 0;  // the octets AOBJ-DAT-101 selects, when satisfiable
  std::string text;
};

// A range over an object of `size` octets, at the edges more often than uniform: the first and
// last octets, one past the end, the whole object, UINT64_MAX. One in `unsat_one_in` selects
// nothing (every range of an empty object does).
DrawnRange DrawRange(Rng& rng, uint64_t size, uint64_t unsat_one_in) {
  constexpr uint64_t kMax = ~uint64_t{0};
  DrawnRange d;
  const uint64_t kind = rng.Below(3);
  d.satisfiable = size > 0 && (unsat_one_in == 0 || !rng.OneIn(unsat_one_in));
  auto sat_first = [&] { return rng.Pick(std::vector<uint64_t>{0, size - 1, rng.Below(size)}); };
  if (kind == 0) {
    d.range.set_kind(pb::ByteRange::KIND_FIRST_LAST);
    uint64_t first, last;
    if (d.satisfiable) {
      first = sat_first();
      last = rng.Pick(
          std::vector<uint64_t>{first, size - 1, size, rng.Between(first, size + 99), kMax});
      d.from = first;
      d.to = std::min(last, size - 1);
    } else {
      first = size + rng.Pick(std::vector<uint64_t>{0, 1, rng.Below(5000)});
      last = first + rng.Pick(std::vector<uint64_t>{0, rng.Below(100), kMax - first});
    }
    d.range.set_first(first);
    d.range.set_last(last);
    d.text = absl::StrCat("bytes=", first, "-", last);
  } else if (kind == 1) {
    d.range.set_kind(pb::ByteRange::KIND_FROM);
    const uint64_t first =
        d.satisfiable ? sat_first() : size + rng.Pick(std::vector<uint64_t>{0, 1, rng.Below(5000)});
    d.range.set_first(first);
    d.from = first;
    d.to = size - 1;
    d.text = absl::StrCat("bytes=", first, "-");
  } else {
    d.range.set_kind(pb::ByteRange::KIND_SUFFIX);
    uint64_t n = 0;
    if (d.satisfiable) {
      n = rng.Pick(std::vector<uint64_t>{1, size, size + 1, rng.Between(1, size), kMax});
      d.from = size - std::min(n, size);
      d.to = size - 1;
    } else if (size == 0) {
      n = rng.Pick(std::vector<uint64_t>{0, 1, rng.Below(100)});
    }
    d.range.set_suffix_length(n);
    d.text = absl::StrCat("bytes=-", n);
  }
  absl::StrAppend(&d.text, " of ", size, " octets");
  return d;
}

// ---- windows ------------------------------------------------------------------------------------

// `k` windows of `total` octets together (each at least one), placed in one registration in a
// random order with random gaps between them.
struct Layout {
  std::vector<std::pair<uint64_t, uint64_t>> windows;  // offset, length; in request order
  uint64_t span = 0;
  std::string text;
};

Layout DrawLayout(Rng& rng, uint64_t total, uint64_t k) {
  k = std::max<uint64_t>(1, std::min(k, total));
  std::set<uint64_t> cuts;
  while (cuts.size() < k - 1) cuts.insert(rng.Between(1, total - 1));
  std::vector<uint64_t> lengths;
  uint64_t at = 0;
  for (uint64_t c : cuts) {
    lengths.push_back(c - at);
    at = c;
  }
  lengths.push_back(total - at);
  std::vector<size_t> order(k);
  for (size_t i = 0; i < k; ++i) order[i] = i;
  rng.Shuffle(order);
  Layout l;
  l.windows.resize(k);
  uint64_t offset = rng.Below(64);
  for (size_t i : order) {
    l.windows[i] = {offset, lengths[i]};
    offset += lengths[i] + rng.Below(64);
  }
  l.span = offset + 1;
  for (const auto& [o, n] : l.windows)
    absl::StrAppend(&l.text, l.text.empty() ? "" : " ", o, "+", n);
  return l;
}

// Whether the octets outside the first `used` octets of the windows (in ordered fill) still hold
// `fill`, and the first `used` hold `body`.
bool OrderedFillHolds(const RegisteredMemory& m, const Layout& l, const std::string& body,
                      uint8_t fill, std::string* why) {
  std::vector<bool> covered(l.span, false);
  uint64_t at = 0;
  for (const auto& [o, n] : l.windows) {
    const uint64_t take = std::min<uint64_t>(n, body.size() - at);
    if (take > 0 && std::memcmp(m.data() + o, body.data() + at, take) != 0) {
      *why = absl::StrCat("octets ", at, "..", at + take - 1, " of the body are not at offset ", o);
      return false;
    }
    for (uint64_t i = o; i < o + take; ++i) covered[i] = true;
    at += take;
  }
  for (uint64_t i = 0; i < l.span; ++i) {
    if (!covered[i] && m.data()[i] != fill) {
      *why = absl::StrCat("offset ", i, " outside the body's octets was written");
      return false;
    }
  }
  return true;
}

// ---- listings -----------------------------------------------------------------------------------

struct Entry {
  std::string name;
  bool common_prefix = false;
  bool operator==(const Entry& o) const {
    return name == o.name && common_prefix == o.common_prefix;
  }
};

std::string Show(const std::vector<Entry>& v, size_t from, size_t n) {
  std::string s;
  for (size_t i = from; i < v.size() && i < from + n; ++i) {
    absl::StrAppend(&s, s.empty() ? "" : " ", v[i].common_prefix ? "[" : "", Esc(v[i].name),
                    v[i].common_prefix ? "]" : "");
  }
  return s.empty() ? "(none)" : s;
}

// The entry a key is listed as: itself, or its common prefix (AOBJ-OBJ-101).
Entry EntryOf(const std::string& key, const std::string& prefix, const std::string& delimiter) {
  if (!delimiter.empty()) {
    const size_t at = key.find(delimiter, prefix.size());
    if (at != std::string::npos) return {key.substr(0, at + delimiter.size()), true};
  }
  return {key, false};
}

// What a whole listing holds (AOBJ-OBJ-100, AOBJ-OBJ-101): keys with the prefix, after
// start_after, each as itself or its common prefix, every entry once, in octet order.
std::vector<Entry> ModelListing(const std::set<std::string, OctetLess>& keys,
                                const std::string& prefix, const std::string& delimiter,
                                const std::string& start_after) {
  std::vector<Entry> out;
  for (const std::string& k : keys) {
    if (!absl::StartsWith(k, prefix) || !Before(start_after, k)) continue;
    Entry e = EntryOf(k, prefix, delimiter);
    if (!out.empty() && out.back() == e) continue;
    out.push_back(std::move(e));
  }
  return out;
}

// A page's entries in octet order, from the reply's two lists; `sorted` says whether each list
// was ascending on its own.
std::vector<Entry> PageEntries(const pb::ListObjectsV2Response& l, bool* sorted) {
  std::vector<Entry> v;
  *sorted = true;
  for (int i = 0; i < l.objects_size(); ++i) {
    if (i > 0 && !Before(l.objects(i - 1).key(), l.objects(i).key())) *sorted = false;
    v.push_back({l.objects(i).key(), false});
  }
  for (int i = 0; i < l.common_prefixes_size(); ++i) {
    if (i > 0 && !Before(l.common_prefixes(i - 1), l.common_prefixes(i))) *sorted = false;
    v.push_back({l.common_prefixes(i), true});
  }
  std::sort(v.begin(), v.end(),
            [](const Entry& a, const Entry& b) { return Before(a.name, b.name); });
  return v;
}

// A random listing shape over `atoms_of` (each key's atoms).
struct Shape {
  std::string prefix, delimiter, start_after;
  uint32_t max_keys = 0;
  std::string Text() const {
    return absl::StrCat("prefix ", Esc(prefix), ", delimiter ", Esc(delimiter), ", start_after ",
                        Esc(start_after), ", max_keys ", max_keys);
  }
};

Shape DrawShape(Rng& rng, const std::vector<std::vector<std::string>>& atoms_of) {
  Shape s;
  const auto& some = rng.Pick(atoms_of);
  switch (rng.Below(10)) {
    case 0:
    case 1:
    case 2:
    case 3:
      break;
    case 4:
    case 5:
    case 6:
    case 7:
      s.prefix = Join(some, rng.Between(1, some.size()));
      break;
    default:
      s.prefix = Join(RandomAtoms(rng, 2), 2);
  }
  if (!rng.OneIn(4)) {
    s.delimiter = rng.OneIn(3) ? Join(RandomAtoms(rng, 2), 2)
                               : rng.Pick(std::vector<std::string>{"/", "-", "\xc3\xa9", "a/"});
  }
  const auto& other = rng.Pick(atoms_of);
  switch (rng.Below(10)) {
    case 5:
    case 6:
      s.start_after = Join(other, other.size());
      break;
    case 7:
      s.start_after = Join(other, rng.Between(1, other.size()));
      break;
    case 8:
    case 9:
      s.start_after = Join(RandomAtoms(rng, 3), 3);
      break;
    default:
      break;
  }
  switch (rng.Below(10)) {
    case 7:
      s.max_keys = 0;
      break;  // 1000 (AOBJ-OBJ-104)
    case 8:
      s.max_keys = static_cast<uint32_t>(rng.Between(8, 60));
      break;
    case 9:
      s.max_keys = 1000;
      break;
    default:
      s.max_keys = static_cast<uint32_t>(rng.Between(1, 7));
  }
  return s;
}

pb::ListObjectsV2Request ListRequest(const std::string& bucket, const Shape& s) {
  pb::ListObjectsV2Request req;
  req.set_bucket(bucket);
  req.set_prefix(s.prefix);
  req.set_delimiter(s.delimiter);
  req.set_start_after(s.start_after);
  req.set_max_keys(s.max_keys);
  return req;
}

// ---- multipart ----------------------------------------------------------------------------------

std::string CreateUpload(Prop& prop, Peer& p, const std::string& bucket, const std::string& key,
                         const std::string& content_type = "",
                         const std::map<std::string, std::string>& meta = {}) {
  pb::CreateMultipartUploadRequest c;
  c.set_bucket(bucket);
  c.set_key(key);
  c.set_content_type(content_type);
  for (const auto& [k, v] : meta) (*c.mutable_user_metadata())[k] = v;
  RawReply rr = p.Send(Method::kCreateMultipartUpload, c);
  prop.RequireOk(rr, absl::StrCat("CreateMultipartUpload of ", Esc(key)));
  return prop.Parse<pb::CreateMultipartUploadResponse>(rr, "CreateMultipartUpload").upload_id();
}

// Uploads `body` as part `number`, inline when `inline_body`, and checks the reply
// (AOBJ-DAT-151, AOBJ-OBJ-207); returns the part's ETag.
std::string UploadPart(Prop& prop, Peer& p, const std::string& bucket, const std::string& key,
                       const std::string& id, uint32_t number, const std::string& body,
                       bool inline_body) {
  pb::UploadPartRequest req;
  req.set_bucket(bucket);
  req.set_key(key);
  req.set_upload_id(id);
  req.set_part_number(number);
  req.set_size(body.size());
  req.set_checksum_algorithm(pb::CHECKSUM_ALGORITHM_CRC32C);
  req.set_checksum(Crc32cOf(body));
  auto m = p.Allocate(std::max<size_t>(body.size(), 1));
  if (inline_body) {
    req.set_inline_data(body);
  } else if (!body.empty()) {
    std::memcpy(m->data(), body.data(), body.size());
    *req.add_source() = Peer::Descriptor(*m, 0, body.size());
  }
  const std::string what = absl::StrCat("UploadPart ", number, " of ", body.size(), " octets",
                                        inline_body ? " inline" : "");
  RawReply rr = p.Send(Method::kUploadPart, req);
  prop.RequireOk(rr, what);
  auto resp = prop.Parse<pb::UploadPartResponse>(rr, what);
  const pb::TransferPath path = body.empty()  ? pb::TRANSFER_PATH_NONE
                                : inline_body ? pb::TRANSFER_PATH_INLINE
                                              : pb::TRANSFER_PATH_RMA;
  prop.Require(resp.bytes_transferred() == body.size() && resp.path() == path &&
                   resp.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C &&
                   resp.checksum() == Crc32cOf(body) && resp.etag() == Md5Etag(body),
               what +
                   ": bytes_transferred, path, checksum and the part's MD5 ETag "
                   "(AOBJ-DAT-151, AOBJ-OBJ-207)",
               absl::StrCat(body.size(), " ", PathName(path), " ", Md5Etag(body)),
               resp.ShortDebugString());
  return resp.etag();
}

// ---- user metadata ------------------------------------------------------------------------------

const std::string kTokenSpecials = "!#$%&'*+-.^_`|~";

std::string RandomName(Rng& rng) {
  static const std::string kChars =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" + kTokenSpecials;
  std::string s(rng.Between(1, 16), 'x');
  for (char& c : s) c = kChars[rng.Below(kChars.size())];
  return s;
}

std::string RandomValue(Rng& rng, size_t max_atoms) {
  static const std::vector<std::string> kAtoms = {"a",
                                                  "Z",
                                                  "0",
                                                  " ",
                                                  "\t",
                                                  "=",
                                                  ",",
                                                  ";",
                                                  "\"",
                                                  "\\",
                                                  "/",
                                                  "~",
                                                  "\xc3\xa9",
                                                  "\xe4\xb8\xad",
                                                  "\xf0\x9f\x98\x80",
                                                  "x-amz-meta-"};
  std::string s;
  for (size_t n = rng.Below(max_atoms + 1); n > 0; --n) s += rng.Pick(kAtoms);
  return s;
}

size_t MetaOctets(const std::map<std::string, std::string>& m) {
  size_t n = 0;
  for (const auto& [k, v] : m) n += k.size() + v.size();
  return n;
}

// A valid map of at most `budget` octets: names unique without regard to ASCII case.
std::map<std::string, std::string> RandomMeta(Rng& rng, size_t budget) {
  std::map<std::string, std::string> m;
  std::set<std::string> lower;
  for (size_t n = rng.Below(11); n > 0; --n) {
    std::string name = RandomName(rng), value = RandomValue(rng, 24);
    if (!lower.insert(absl::AsciiStrToLower(name)).second) continue;
    if (MetaOctets(m) + name.size() + value.size() > budget) break;
    m[name] = value;
  }
  return m;
}

std::map<std::string, std::string> Lowered(const std::map<std::string, std::string>& m) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : m) out[absl::AsciiStrToLower(k)] = v;
  return out;
}

std::string ShowMeta(const std::map<std::string, std::string>& m) {
  std::string s;
  for (const auto& [k, v] : m) absl::StrAppend(&s, s.empty() ? "" : ", ", Esc(k), ": ", Esc(v));
  return absl::StrCat("{", s, "}");
}

std::map<std::string, std::string> MetaOf(const pb::ObjectMetadata& m) {
  return {m.user_metadata().begin(), m.user_metadata().end()};
}

// dat/8.4/4
void SizesAroundThresholds(CaseContext& ctx) {
  Prop prop(ctx, 0x5eed0804);
  Rng& rng = prop.rng();
  BucketFixture f = OpenBucket(ctx);
  RequireCapability(ctx, *f.p, kCapInline, "INLINE");
  const uint64_t server_t = f.p->session().limits().inline_threshold();
  if (server_t == 0) ctx.Unsupported("inline_threshold is 0");
  auto q = ctx.NewPeer();
  pb::OpenSessionRequest o = q->DefaultOpen();
  const uint64_t asked = rng.Between(1, std::max<uint64_t>(server_t - 1, 1));
  o.mutable_requested_limits()->set_inline_threshold(asked);
  prop.RequireOk(q->Open(o), absl::StrCat("OpenSession asking for inline_threshold ", asked));
  prop.Require(q->session().limits().inline_threshold() == std::min(asked, server_t),
               "the smaller requested inline_threshold is effective (AOBJ-SES-006)",
               absl::StrCat(std::min(asked, server_t)),
               absl::StrCat(q->session().limits().inline_threshold()));
  RequireCapability(ctx, *q, kCapInline, "INLINE");
  int objects = 0;
  for (Peer* p : {f.p.get(), q.get()}) {
    const uint64_t t = p->session().limits().inline_threshold();
    std::vector<uint64_t> sizes = {0, 1, 2, t - 1, t, t + 1, 4095, 4096, 4097};
    for (int i = 0; i < 4; ++i) sizes.push_back(rng.Between(1, t + 1));
    for (int i = 0; i < 3; ++i) sizes.push_back(rng.Between(t + 2, 4 * t + 4096));
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    rng.Shuffle(sizes);
    for (const uint64_t n : sizes) {
      if (n > p->session().limits().max_transfer_bytes()) continue;
      ++objects;
      const std::string key = absl::StrCat("t", t, "-n", n);
      const std::string body = Content(n, rng.Seed32());
      const bool fits = n <= t;
      const bool put_inline = n > 0 && fits && rng.OneIn(2);
      prop.Trial(absl::StrCat("inline_threshold ", t, ", ", n, " octets"));
      RawReply pr = put_inline ? p->Send(Method::kPutObject, InlinePut(f.bucket, key, body))
                               : p->Put(f.bucket, key, body);
      prop.RequireOk(pr, put_inline ? "PUT inline" : "PUT by RMA");
      auto put = prop.Parse<pb::PutObjectResponse>(pr, "PUT");
      const pb::TransferPath put_path = n == 0       ? pb::TRANSFER_PATH_NONE
                                        : put_inline ? pb::TRANSFER_PATH_INLINE
                                                     : pb::TRANSFER_PATH_RMA;
      prop.Require(put.path() == put_path && put.bytes_transferred() == n &&
                       put.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C &&
                       put.checksum() == Crc32cOf(body),
                   "PUT reply: path, bytes_transferred, checksum (AOBJ-DAT-030, AOBJ-DAT-003)",
                   absl::StrCat(PathName(put_path), " ", n, " ", Hex(Crc32cOf(body))),
                   absl::StrCat(PathName(put.path()), " ", put.bytes_transferred(), " ",
                                Hex(put.checksum())));
      const bool accept_first = rng.OneIn(2);
      for (const bool accept : {accept_first, !accept_first}) {
        const uint64_t window = std::max<uint64_t>(n + rng.Below(64), 1);
        auto m = p->Allocate(window);
        std::memset(m->data(), 0xa5, window);
        pb::GetObjectRequest g = p->GetRequest(f.bucket, key, *m, window);
        g.set_accept_inline(accept);
        const std::string what =
            absl::StrCat("GET ", accept ? "with" : "without", " accept_inline, window ", window);
        RawReply gr = p->Send(Method::kGetObject, g);
        prop.RequireOk(gr, what);
        auto resp = prop.Parse<pb::GetObjectResponse>(gr, what);
        const pb::TransferPath want = n == 0           ? pb::TRANSFER_PATH_NONE
                                      : accept && fits ? pb::TRANSFER_PATH_INLINE
                                                       : pb::TRANSFER_PATH_RMA;
        prop.Require(resp.path() == want,
                     what + ": the path AOBJ-DAT-008, AOBJ-DAT-011 and AOBJ-DAT-014 predict",
                     PathName(want), PathName(resp.path()));
        prop.Require(resp.bytes_transferred() == n &&
                         resp.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C &&
                         resp.checksum() == Crc32cOf(body),
                     what + ": bytes_transferred and checksum (AOBJ-DAT-003)",
                     absl::StrCat(n, " ", Hex(Crc32cOf(body))),
                     absl::StrCat(resp.bytes_transferred(), " ", Hex(resp.checksum())));
        if (want == pb::TRANSFER_PATH_RMA) {
          prop.Require(std::memcmp(m->data(), body.data(), n) == 0 && resp.inline_data().empty(),
                       what + ": the window holds the object", "equal", "differs");
          prop.Require(AllOctets(*m, n, window, 0xa5),
                       what + ": the window after the body keeps its contents (AOBJ-MEM-016)",
                       "unchanged", "written");
        } else {
          prop.Require(resp.inline_data() == body,
                       what + ": inline_data holds exactly the object (AOBJ-DAT-015)",
                       absl::StrCat(n, " octets"),
                       absl::StrCat(resp.inline_data().size(), " octets, differ"));
          prop.Require(AllOctets(*m, 0, window, 0xa5),
                       what + ": the window was not touched (AOBJ-DAT-011, AOBJ-DAT-014)",
                       "unchanged", "written");
        }
        prop.Require(resp.metadata().size() == n && resp.metadata().etag() == Md5Etag(body),
                     what + ": metadata size and MD5 ETag (AOBJ-OBJ-005)",
                     absl::StrCat(n, " ", Md5Etag(body)),
                     absl::StrCat(resp.metadata().size(), " ", resp.metadata().etag()));
      }
      pb::HeadObjectResponse h;
      prop.RequireOk(p->Head(f.bucket, key, &h), "HEAD");
      prop.Require(h.metadata().size() == n && h.metadata().etag() == Md5Etag(body) &&
                       ChecksumOf(h.metadata().checksum_algorithm(), h.metadata().checksum(), body),
                   "HEAD: size, MD5 ETag, full-object checksum (AOBJ-OBJ-005, AOBJ-OBJ-012)",
                   absl::StrCat(n, " ", Md5Etag(body)), h.metadata().ShortDebugString());
    }
  }
  prop.Done(absl::StrCat(objects, " objects of sizes around inline thresholds ", server_t, " and ",
                         q->session().limits().inline_threshold(),
                         " round-tripped on the predicted paths"));
}

// rng/9.9/4
void RandomRanges(CaseContext& ctx) {
  Prop prop(ctx, 0x5eed0909);
  Rng& rng = prop.rng();
  BucketFixture f = OpenBucket(ctx);
  const bool inline_ok = f.p->Negotiated(kCapInline);
  const uint64_t t = inline_ok ? f.p->session().limits().inline_threshold() : 0;
  std::vector<uint64_t> sizes = {
      0, 1, 2, rng.Between(3, 4096), t, t + 1, rng.Between(t + 2, 300000)};
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  const uint64_t largest = sizes.back();
  auto m = f.p->Allocate(largest + 64);
  int draws = 0;
  for (const uint64_t size : sizes) {
    const std::string key = absl::StrCat("r", size);
    const std::string body = Content(size, rng.Seed32());
    prop.Trial(absl::StrCat("object of ", size, " octets"));
    prop.RequireOk(f.p->Put(f.bucket, key, body), "PUT");
    for (int i = 0; i < (size == 0 ? 6 : 30); ++i, ++draws) {
      const DrawnRange d = DrawRange(rng, size, 7);
      const bool accept = inline_ok && rng.OneIn(2);
      const uint64_t len = d.satisfiable ? d.to - d.from + 1 : 0;
      const bool rma = !(accept && len <= t);
      // A window one octet (or more) short of the range, where the body moves by RMA.
      const bool short_window = d.satisfiable && rma && len >= 2 && rng.OneIn(8);
      const uint64_t window = short_window    ? rng.Between(1, len - 1)
                              : d.satisfiable ? len + rng.Below(32)
                                              : std::max<uint64_t>(size, 1) + rng.Below(32);
      prop.Trial(absl::StrCat("object of ", size, " octets, draw ", i, ": ", d.text,
                              accept ? ", accept_inline" : "", ", window ", window));
      std::memset(m->data(), 0xcc, window + 1);
      pb::GetObjectRequest g = f.p->GetRequest(f.bucket, key, *m, window);
      g.set_accept_inline(accept);
      *g.mutable_range() = d.range;
      RawReply gr = f.p->Send(Method::kGetObject, g);
      if (!d.satisfiable) {
        prop.RequireCode(gr, ErrorCode::kInvalidRange,
                         "a range that selects nothing (AOBJ-DAT-102)");
        continue;
      }
      if (short_window) {
        prop.RequireCode(gr, ErrorCode::kDescriptorTooSmall,
                         "a window shorter than the range (AOBJ-MEM-007 with the range's "
                         "length, AOBJ-DAT-104)");
        prop.Require(AllOctets(*m, 0, window, 0xcc), "no octet was written (AOBJ-MEM-007)",
                     "unchanged", "written");
        continue;
      }
      prop.RequireOk(gr, "GET");
      auto resp = prop.Parse<pb::GetObjectResponse>(gr, "GET");
      const std::string want = body.substr(d.from, len);
      const pb::TransferPath path = rma ? pb::TRANSFER_PATH_RMA : pb::TRANSFER_PATH_INLINE;
      prop.Require(
          resp.has_content_range() && resp.content_range().first() == d.from &&
              resp.content_range().last() == d.to && resp.content_range().complete_length() == size,
          "content_range: the octets AOBJ-DAT-101 selects (AOBJ-DAT-103)",
          absl::StrCat(d.from, "-", d.to, "/", size), resp.content_range().ShortDebugString());
      prop.Require(resp.path() == path, "the path, judged by the range's length (AOBJ-DAT-104)",
                   PathName(path), PathName(resp.path()));
      prop.Require(resp.bytes_transferred() == len &&
                       resp.checksum_algorithm() == pb::CHECKSUM_ALGORITHM_CRC32C &&
                       resp.checksum() == Crc32cOf(want),
                   "bytes_transferred and the checksum of the octets moved (AOBJ-DAT-106)",
                   absl::StrCat(len, " ", Hex(Crc32cOf(want))),
                   absl::StrCat(resp.bytes_transferred(), " ", Hex(resp.checksum())));
      if (rma) {
        prop.Require(std::memcmp(m->data(), want.data(), len) == 0,
                     "the selected octets from the window's start (AOBJ-DAT-107)", "equal",
                     "differ");
        prop.Require(AllOctets(*m, len, window + 1, 0xcc),
                     "nothing written after them (AOBJ-MEM-016)", "unchanged", "written");
      } else {
        prop.Require(resp.inline_data() == want, "inline_data holds the selected octets",
                     absl::StrCat(len, " octets"),
                     absl::StrCat(resp.inline_data().size(), " octets, differ"));
        prop.Require(AllOctets(*m, 0, window + 1, 0xcc), "the window was not touched", "unchanged",
                     "written");
      }
      prop.Require(resp.metadata().size() == size && resp.metadata().etag() == Md5Etag(body),
                   "metadata describes the whole object (AOBJ-OBJ-009)",
                   absl::StrCat(size, " ", Md5Etag(body)),
                   absl::StrCat(resp.metadata().size(), " ", resp.metadata().etag()));
    }
  }
  prop.Done(
      absl::StrCat(draws, " random ranges over ", sizes.size(), " objects matched the model"));
  ctx.RequireStillServes();
}

// mem/7.3/5
void RandomWindows(CaseContext& ctx) {
  Prop prop(ctx, 0x5eed0703);
  Rng& rng = prop.rng();
  BucketFixture f = OpenBucket(ctx);
  if (!f.p->Negotiated(kCapMultiDescriptor)) ctx.Unsupported("MULTI_DESCRIPTOR not negotiated");
  const uint64_t max_k = std::min<uint64_t>(f.p->session().limits().max_descriptors(), 12);
  if (max_k < 2) ctx.Unsupported("max_descriptors below 2");
  const int kTrials = 16;
  for (int i = 0; i < kTrials; ++i) {
    const uint64_t n = rng.Pick(std::vector<uint64_t>{1, rng.Between(2, 64), rng.Between(1, 300000),
                                                      rng.Between(100000, 1 << 20)});
    const std::string key = absl::StrCat("w", i);
    const std::string body = Content(n, rng.Seed32());
    prop.Trial(absl::StrCat("trial ", i, ", ", n, " octets"));
    if (n >= 2 && rng.OneIn(4)) {
      const uint64_t short_total = n - rng.Between(1, std::min<uint64_t>(n - 1, 50));
      const Layout l = DrawLayout(rng, short_total, rng.Between(1, max_k));
      auto src = f.p->Allocate(l.span);
      pb::PutObjectRequest put = f.p->PutRequest(f.bucket, key, *src, 1);
      put.set_size(n);
      put.set_checksum(Crc32cOf(body));
      put.clear_source();
      for (const auto& [o, len] : l.windows) *put.add_source() = Peer::Descriptor(*src, o, len);
      prop.RequireCode(f.p->Send(Method::kPutObject, put), ErrorCode::kDescriptorTooSmall,
                       absl::StrCat("PUT from windows ", l.text, " (", short_total,
                                    " octets in all, AOBJ-MEM-008)"));
      prop.RequireCode(f.p->Head(f.bucket, key), ErrorCode::kNoSuchKey,
                       "the refused PUT committed nothing (AOBJ-OBJ-014)");
    }
    const uint64_t put_total = n + (rng.OneIn(2) ? 0 : rng.Below(100));
    const Layout pl = DrawLayout(rng, put_total, rng.Between(1, max_k));
    auto src = f.p->Allocate(pl.span);
    std::memset(src->data(), 0x5a, pl.span);
    {
      uint64_t at = 0;
      for (const auto& [o, len] : pl.windows) {
        const uint64_t take = std::min<uint64_t>(len, n - at);
        std::memcpy(src->data() + o, body.data() + at, take);
        at += take;
      }
    }
    pb::PutObjectRequest put = f.p->PutRequest(f.bucket, key, *src, 1);
    put.set_size(n);
    put.set_checksum(Crc32cOf(body));
    put.clear_source();
    for (const auto& [o, len] : pl.windows) *put.add_source() = Peer::Descriptor(*src, o, len);
    const std::string put_what = absl::StrCat("PUT from windows ", pl.text);
    RawReply pr = f.p->Send(Method::kPutObject, put);
    prop.RequireOk(pr, put_what + " (AOBJ-MEM-008: read in ordered fill)");
    auto presp = prop.Parse<pb::PutObjectResponse>(pr, put_what);
    prop.Require(presp.bytes_transferred() == n && presp.checksum() == Crc32cOf(body),
                 put_what + ": bytes_transferred and checksum (AOBJ-DAT-003)",
                 absl::StrCat(n, " ", Hex(Crc32cOf(body))),
                 absl::StrCat(presp.bytes_transferred(), " ", Hex(presp.checksum())));
    // GET it back, whole or ranged, into other random windows.
    const bool ranged = rng.OneIn(2);
    DrawnRange d;
    if (ranged) d = DrawRange(rng, n, 0);
    const uint64_t from = ranged ? d.from : 0, len = ranged ? d.to - d.from + 1 : n;
    const std::string want = body.substr(from, len);
    const bool short_get = len >= 2 && rng.OneIn(5);
    const uint64_t total = short_get ? len - rng.Between(1, std::min<uint64_t>(len - 1, 50))
                                     : len + (rng.OneIn(2) ? 0 : rng.Below(100));
    const Layout gl = DrawLayout(rng, total, rng.Between(1, max_k));
    auto dst = f.p->Allocate(gl.span);
    std::memset(dst->data(), 0x3c, gl.span);
    pb::GetObjectRequest g = f.p->GetRequest(f.bucket, key, *dst, 1);
    g.set_accept_inline(false);
    g.clear_destination();
    for (const auto& [o, wl] : gl.windows) *g.add_destination() = Peer::Descriptor(*dst, o, wl);
    if (ranged) *g.mutable_range() = d.range;
    const std::string get_what =
        absl::StrCat("GET ", ranged ? d.text : "whole", " into windows ", gl.text);
    RawReply gr = f.p->Send(Method::kGetObject, g);
    if (short_get) {
      prop.RequireCode(gr, ErrorCode::kDescriptorTooSmall,
                       get_what + absl::StrCat(" (", total, " octets in all, AOBJ-MEM-007)"));
      prop.Require(AllOctets(*dst, 0, gl.span, 0x3c),
                   get_what + ": no octet written (AOBJ-MEM-007)", "unchanged", "written");
      continue;
    }
    prop.RequireOk(gr, get_what);
    auto gresp = prop.Parse<pb::GetObjectResponse>(gr, get_what);
    prop.Require(gresp.bytes_transferred() == len && gresp.checksum() == Crc32cOf(want),
                 get_what + ": bytes_transferred and checksum",
                 absl::StrCat(len, " ", Hex(Crc32cOf(want))),
                 absl::StrCat(gresp.bytes_transferred(), " ", Hex(gresp.checksum())));
    std::string why;
    prop.Require(OrderedFillHolds(*dst, gl, want, 0x3c, &why),
                 get_what +
                     ": the octets in ordered fill, every other octet kept "
                     "(AOBJ-MEM-016, AOBJ-DAT-107)",
                 "ordered fill", why);
  }
  prop.Done(absl::StrCat(kTrials, " PUT and GET pairs over random windows"));
  ctx.RequireStillServes();
}

// list/9.12/8
void RandomListingShapes(CaseContext& ctx) {
  Prop prop(ctx, 0x5eed0912);
  Rng& rng = prop.rng();
  BucketFixture f = OpenBucket(ctx);
  std::set<std::string, OctetLess> keys;
  std::vector<std::vector<std::string>> atoms_of;
  std::map<std::string, std::string> body_of;
  while (keys.size() < 48) {
    std::vector<std::string> a = RandomAtoms(rng, 5);
    // Some keys extend another: nested common prefixes.
    if (!atoms_of.empty() && rng.OneIn(4)) {
      std::vector<std::string> base = rng.Pick(atoms_of);
      base.push_back(rng.Pick(std::vector<std::string>{"/", "-"}));
      base.insert(base.end(), a.begin(), a.begin() + 1);
      a = base;
    }
    const std::string k = Join(a, a.size());
    if (!keys.insert(k).second) continue;
    atoms_of.push_back(a);
    body_of[k] = Body(rng, rng.Below(40));
    prop.RequireOk(f.p->Put(f.bucket, k, body_of[k]), "PUT " + Esc(k));
  }
  int pages = 0;
  const int kShapes = 40;
  for (int i = 0; i < kShapes; ++i) {
    const Shape s = DrawShape(rng, atoms_of);
    const std::vector<Entry> model = ModelListing(keys, s.prefix, s.delimiter, s.start_after);
    const uint32_t page_max = s.max_keys == 0 ? 1000 : s.max_keys;
    pb::ListObjectsV2Request req = ListRequest(f.bucket, s);
    size_t at = 0;
    for (int page = 1;; ++page) {
      ++pages;
      prop.Trial(absl::StrCat("shape ", i, " (", s.Text(), "), page ", page));
      prop.Require(page <= static_cast<int>(model.size()) + 1,
                   "the listing ends after the model's entries",
                   absl::StrCat("at most ", model.size() + 1, " pages"), "more");
      RawReply rr = f.p->Send(Method::kListObjectsV2, req);
      prop.RequireOk(rr, "ListObjectsV2");
      auto l = prop.Parse<pb::ListObjectsV2Response>(rr, "ListObjectsV2");
      bool sorted = true;
      const std::vector<Entry> got = PageEntries(l, &sorted);
      prop.Require(sorted, "objects and common prefixes each in octet order (AOBJ-OBJ-100)",
                   "ascending", Show(got, 0, got.size()));
      prop.Require(got.size() <= page_max, "at most max_keys entries (AOBJ-OBJ-102)",
                   absl::StrCat("<= ", page_max), absl::StrCat(got.size()));
      const bool match =
          at + got.size() <= model.size() &&
          std::equal(got.begin(), got.end(), model.begin() + static_cast<ptrdiff_t>(at));
      prop.Require(match, "the page holds the model's next entries (AOBJ-OBJ-100, AOBJ-OBJ-101)",
                   Show(model, at, std::max<size_t>(got.size(), 1)), Show(got, 0, got.size()));
      for (const auto& o : l.objects()) {
        const std::string& b = body_of[o.key()];
        prop.Require(o.size() == b.size() && o.etag() == Md5Etag(b),
                     "entry " + Esc(o.key()) + ": size and MD5 ETag (AOBJ-OBJ-005)",
                     absl::StrCat(b.size(), " ", Md5Etag(b)),
                     absl::StrCat(o.size(), " ", o.etag()));
      }
      at += got.size();
      const bool more = at < model.size();
      prop.Require(l.is_truncated() == more,
                   "is_truncated exactly when entries follow (AOBJ-OBJ-103)",
                   more ? "true" : "false", l.is_truncated() ? "true" : "false");
      if (!more) break;
      prop.Require(!l.next_continuation_token().empty(),
                   "a truncated page carries a token (AOBJ-OBJ-103)", "non-empty", "empty");
      req.set_continuation_token(l.next_continuation_token());
      // The token wins over start_after (AOBJ-OBJ-108).
      if (rng.OneIn(3)) req.set_start_after(Join(RandomAtoms(rng, 3), 3));
    }
  }
  prop.Done(absl::StrCat(kShapes, " random listing shapes over ", keys.size(), " keys, ", pages,
                         " pages, matched the model"));
}

// list/9.12/9
void ListingWhileKeysChange(CaseContext& ctx) {
  Prop prop(ctx, 0x5eed0913);
  Rng& rng = prop.rng();
  BucketFixture f = OpenBucket(ctx);
  std::set<std::string, OctetLess> stable, churn_ever, churn_live;
  auto fresh_key = [&] {
    for (;;) {
      const std::vector<std::string> a = RandomAtoms(rng, 5);
      const std::string k = Join(a, a.size());
      if (stable.count(k) == 0 && churn_ever.count(k) == 0) return k;
    }
  };
  while (stable.size() < 32) {
    const std::string k = fresh_key();
    stable.insert(k);
    prop.RequireOk(f.p->Put(f.bucket, k, Body(rng, rng.Below(32))), "PUT " + Esc(k));
  }
  auto add_churn = [&] {
    const std::string k = fresh_key();
    churn_ever.insert(k);
    churn_live.insert(k);
    prop.RequireOk(f.p->Put(f.bucket, k, Body(rng, rng.Below(32))), "PUT (churn) " + Esc(k));
  };
  for (int i = 0; i < 10; ++i) add_churn();
  const int kListings = 10;
  int pages = 0;
  for (int i = 0; i < kListings; ++i) {
    Shape s;
    if (rng.OneIn(3)) s.prefix = rng.Pick(std::vector<std::string>{"a", "b", "-", "/"});
    if (rng.OneIn(2)) s.delimiter = rng.Pick(std::vector<std::string>{"/", "-"});
    s.max_keys = static_cast<uint32_t>(rng.Between(1, 5));
    pb::ListObjectsV2Request req = ListRequest(f.bucket, s);
    std::vector<Entry> seen;
    const int cap = static_cast<int>(stable.size() + churn_ever.size()) + 40;
    for (int page = 1;; ++page) {
      ++pages;
      prop.Trial(absl::StrCat("listing ", i, " (", s.Text(), "), page ", page));
      prop.Require(page <= cap, "the listing ends", absl::StrCat("<= ", cap, " pages"), "more");
      RawReply rr = f.p->Send(Method::kListObjectsV2, req);
      prop.RequireOk(rr, "ListObjectsV2");
      auto l = prop.Parse<pb::ListObjectsV2Response>(rr, "ListObjectsV2");
      bool sorted = true;
      const std::vector<Entry> got = PageEntries(l, &sorted);
      prop.Require(got.size() <= s.max_keys, "at most max_keys entries (AOBJ-OBJ-102)",
                   absl::StrCat("<= ", s.max_keys), absl::StrCat(got.size()));
      for (const Entry& e : got) {
        prop.Require(seen.empty() || Before(seen.back().name, e.name),
                     "entries ascend across pages, none twice (AOBJ-OBJ-100, "
                     "AOBJ-OBJ-101)",
                     "after " + (seen.empty() ? "" : Esc(seen.back().name)), Esc(e.name));
        seen.push_back(e);
      }
      if (!l.is_truncated()) break;
      req.set_continuation_token(l.next_continuation_token());
      // Change the bucket between pages: new keys, deleted keys, rewritten listed keys.
      if (rng.OneIn(2)) add_churn();
      if (!churn_live.empty() && rng.OneIn(2)) {
        std::vector<std::string> live(churn_live.begin(), churn_live.end());
        const std::string k = rng.Pick(live);
        prop.RequireOk(f.p->Delete(f.bucket, k), "DELETE (churn) " + Esc(k));
        churn_live.erase(k);
      }
      if (rng.OneIn(2)) {
        std::vector<std::string> all(stable.begin(), stable.end());
        const std::string k = rng.Pick(all);
        prop.RequireOk(f.p->Put(f.bucket, k, Body(rng, rng.Below(32))),
                       "PUT over (stable) " + Esc(k));
      }
    }
    prop.Trial(absl::StrCat("listing ", i, " (", s.Text(), ")"));
    // Every stable key under the prefix appears once, as itself or its common prefix.
    std::set<std::string> names;
    for (const Entry& e : seen) names.insert(e.name);
    for (const std::string& k : stable) {
      if (!absl::StartsWith(k, s.prefix)) continue;
      const Entry e = EntryOf(k, s.prefix, s.delimiter);
      prop.Require(std::find(seen.begin(), seen.end(), e) != seen.end(),
                   "the key " + Esc(k) + ", present throughout, is listed (AOBJ-OBJ-109)",
                   Show({e}, 0, 1), absl::StrCat(seen.size(), " entries without it"));
    }
    for (const Entry& e : seen) {
      bool known = false;
      for (const auto* set : {&stable, &churn_ever}) {
        for (const std::string& k : *set) {
          if (absl::StartsWith(k, s.prefix) && EntryOf(k, s.prefix, s.delimiter) == e) {
            known = true;
          }
        }
      }
      prop.Require(known, "every entry stands for a key that existed", "a known key",
                   Show({e}, 0, 1));
    }
  }
  prop.Done(absl::StrCat(kListings, " listings over ", pages, " pages while ", churn_ever.size(),
                         " other keys came and went"));
}

// mpu/9.15.5/2
void RandomListParts(CaseContext& ctx) {
  Prop prop(ctx, 0x5eed1555);
  Rng& rng = prop.rng();
  BucketFixture f = OpenBucket(ctx);
  const uint64_t t = f.p->Negotiated(kCapInline) ? f.p->session().limits().inline_threshold() : 0;
  const std::string key = "parts-\xc3\xa9";
  const std::string id = CreateUpload(prop, *f.p, f.bucket, key);
  std::set<uint32_t> numbers = {1, 10000};
  while (numbers.size() < 20) numbers.insert(static_cast<uint32_t>(rng.Between(2, 9999)));
  std::vector<uint32_t> order(numbers.begin(), numbers.end());
  rng.Shuffle(order);
  for (int i = 0; i < 4; ++i) order.push_back(rng.Pick(order));  // replaced (AOBJ-OBJ-208)
  std::map<uint32_t, std::string> model;
  for (const uint32_t n : order) {
    const std::string body = Body(rng, rng.Pick(std::vector<uint64_t>{0, 1, rng.Below(3000)}));
    prop.Trial(absl::StrCat("part ", n));
    UploadPart(prop, *f.p, f.bucket, key, id, n, body,
               !body.empty() && body.size() <= t && rng.OneIn(2));
    model[n] = body;
  }
  const int kQueries = 24;
  int pages = 0;
  for (int i = 0; i < kQueries; ++i) {
    const std::vector<uint32_t> listed(numbers.begin(), numbers.end());
    uint32_t marker = static_cast<uint32_t>(rng.Pick(std::vector<uint64_t>{
        0, 0, rng.Pick(listed), rng.Below(10001), 10000, rng.Between(1, 9999)}));
    const uint32_t max_parts = static_cast<uint32_t>(rng.Pick(std::vector<uint64_t>{
        rng.Between(1, 6), rng.Between(1, 6), rng.Between(1, 6), 0, 1000, rng.Between(7, 30)}));
    const uint32_t page_max = max_parts == 0 ? 1000 : max_parts;
    std::vector<uint32_t> want;
    for (const uint32_t n : listed) {
      if (n > marker) want.push_back(n);
    }
    size_t at = 0;
    for (int page = 1;; ++page) {
      ++pages;
      prop.Trial(absl::StrCat("query ", i, " (part_number_marker ", marker, ", max_parts ",
                              max_parts, "), page ", page));
      prop.Require(page <= static_cast<int>(want.size()) + 1, "the listing ends",
                   absl::StrCat("at most ", want.size() + 1, " pages"), "more");
      pb::ListPartsRequest lp;
      lp.set_bucket(f.bucket);
      lp.set_key(key);
      lp.set_upload_id(id);
      lp.set_part_number_marker(marker);
      lp.set_max_parts(max_parts);
      RawReply rr = f.p->Send(Method::kListParts, lp);
      prop.RequireOk(rr, "ListParts");
      auto l = prop.Parse<pb::ListPartsResponse>(rr, "ListParts");
      std::vector<uint32_t> got;
      for (const auto& p : l.parts()) got.push_back(p.part_number());
      const std::vector<uint32_t> next(
          want.begin() + static_cast<ptrdiff_t>(at),
          want.begin() + static_cast<ptrdiff_t>(std::min(want.size(), at + page_max)));
      prop.Require(
          got.size() <= page_max && got.size() <= want.size() - at &&
              std::equal(got.begin(), got.end(), want.begin() + static_cast<ptrdiff_t>(at)),
          "the page holds the next parts above the marker, ascending, at most "
          "max_parts (AOBJ-OBJ-221)",
          absl::StrJoin(next, " "), absl::StrJoin(got, " "));
      for (const auto& p : l.parts()) {
        const std::string& b = model[p.part_number()];
        prop.Require(p.size() == b.size() && p.etag() == Md5Etag(b) && p.last_modified_ms() > 0 &&
                         ChecksumOf(p.checksum_algorithm(), p.checksum(), b),
                     absl::StrCat("part ", p.part_number(),
                                  ": size, ETag, time, checksum of its latest body "
                                  "(AOBJ-OBJ-222, AOBJ-OBJ-208)"),
                     absl::StrCat(b.size(), " ", Md5Etag(b), " ", Hex(Crc32cOf(b))),
                     p.ShortDebugString());
      }
      at += got.size();
      const bool more = at < want.size();
      prop.Require(!more || l.is_truncated(), "is_truncated when more parts follow (AOBJ-OBJ-221)",
                   "true", "false");
      if (!l.is_truncated()) break;
      prop.Require(!got.empty() && l.next_part_number_marker() == got.back(),
                   "next_part_number_marker is the last part returned (AOBJ-OBJ-221)",
                   got.empty() ? "a part" : absl::StrCat(got.back()),
                   absl::StrCat(l.next_part_number_marker()));
      marker = l.next_part_number_marker();
    }
    prop.Require(at == want.size(), "the pages list every part above the marker once",
                 absl::StrCat(want.size(), " parts"), absl::StrCat(at));
  }
  prop.Done(absl::StrCat(kQueries, " ListParts queries over ", numbers.size(), " parts, ", pages,
                         " pages, matched the model"));
}

// mpu/9.15.5/3
void RandomListUploads(CaseContext& ctx) {
  Prop prop(ctx, 0x5eed1556);
  Rng& rng = prop.rng();
  BucketFixture f = OpenBucket(ctx);
  std::vector<std::vector<std::string>> pool_atoms;
  std::set<std::string, OctetLess> pool;
  while (pool.size() < 6) {
    std::vector<std::string> a = RandomAtoms(rng, 4);
    if (pool.insert(Join(a, a.size())).second) pool_atoms.push_back(a);
  }
  struct Up {
    std::string key, id;
    int order;
  };
  std::vector<Up> ups;
  const std::vector<std::string> pool_keys(pool.begin(), pool.end());
  for (int i = 0; i < 16; ++i) {
    const std::string k = rng.Pick(pool_keys);
    ups.push_back({k, CreateUpload(prop, *f.p, f.bucket, k), i});
    // Initiations of one key a little apart, so their order is never a tie.
    absl::SleepFor(absl::Milliseconds(2));
  }
  for (int i = 0; i < 3; ++i) {
    const size_t at = rng.Below(ups.size());
    pb::AbortMultipartUploadRequest a;
    a.set_bucket(f.bucket);
    a.set_key(ups[at].key);
    a.set_upload_id(ups[at].id);
    prop.RequireOk(f.p->Send(Method::kAbortMultipartUpload, a), "AbortMultipartUpload");
    ups.erase(ups.begin() + static_cast<ptrdiff_t>(at));
  }
  std::sort(ups.begin(), ups.end(), [](const Up& a, const Up& b) {
    return a.key != b.key ? Before(a.key, b.key) : a.order < b.order;
  });
  auto show = [](const std::vector<Up>& v, size_t from, size_t n) {
    std::string s;
    for (size_t i = from; i < v.size() && i < from + n; ++i) {
      absl::StrAppend(&s, s.empty() ? "" : " ", Esc(v[i].key), "#", v[i].order);
    }
    return s.empty() ? std::string("(none)") : s;
  };
  const int kQueries = 24;
  int pages = 0;
  for (int i = 0; i < kQueries; ++i) {
    std::string prefix;
    if (rng.OneIn(3)) {
      const auto& a = rng.Pick(pool_atoms);
      prefix = Join(a, rng.Between(1, a.size()));
    }
    const uint32_t max_uploads = static_cast<uint32_t>(
        rng.Pick(std::vector<uint64_t>{rng.Between(1, 4), rng.Between(1, 4), 0, 20}));
    std::string key_marker, id_marker;
    size_t start = 0;  // in `ups`, before the prefix applies
    switch (rng.Below(4)) {
      case 1: {  // key_marker alone: after every upload of keys up to it
        key_marker = rng.OneIn(2) ? rng.Pick(pool_keys) : Join(RandomAtoms(rng, 3), 3);
        while (start < ups.size() && !Before(key_marker, ups[start].key)) ++start;
        break;
      }
      case 2: {  // both: after the upload they name
        if (ups.empty()) break;
        start = rng.Below(ups.size());
        key_marker = ups[start].key;
        id_marker = ups[start].id;
        ++start;
        break;
      }
      case 3:  // upload_id_marker alone is ignored
        if (!ups.empty()) id_marker = rng.Pick(ups).id;
        break;
      default:
        break;
    }
    std::vector<Up> want;
    for (size_t j = start; j < ups.size(); ++j) {
      if (absl::StartsWith(ups[j].key, prefix)) want.push_back(ups[j]);
    }
    const uint32_t page_max = max_uploads == 0 ? 1000 : max_uploads;
    pb::ListMultipartUploadsRequest lu;
    lu.set_bucket(f.bucket);
    lu.set_prefix(prefix);
    lu.set_key_marker(key_marker);
    lu.set_upload_id_marker(id_marker);
    lu.set_max_uploads(max_uploads);
    size_t at = 0;
    for (int page = 1;; ++page) {
      ++pages;
      prop.Trial(absl::StrCat("query ", i, " (prefix ", Esc(prefix), ", key_marker ",
                              Esc(lu.key_marker()), ", upload_id_marker ",
                              Esc(lu.upload_id_marker()), ", max_uploads ", max_uploads, "), page ",
                              page));
      prop.Require(page <= static_cast<int>(want.size()) + 1, "the listing ends",
                   absl::StrCat("at most ", want.size() + 1, " pages"), "more");
      RawReply rr = f.p->Send(Method::kListMultipartUploads, lu);
      prop.RequireOk(rr, "ListMultipartUploads");
      auto l = prop.Parse<pb::ListMultipartUploadsResponse>(rr, "ListMultipartUploads");
      bool match =
          static_cast<size_t>(l.uploads_size()) <= page_max && at + l.uploads_size() <= want.size();
      std::vector<Up> got;
      for (int j = 0; j < l.uploads_size(); ++j) {
        const auto& e = l.uploads(j);
        int order = -1;
        for (const Up& u : ups) {
          if (u.id == e.upload_id()) order = u.order;
        }
        got.push_back({e.key(), e.upload_id(), order});
        if (match && (want[at + j].key != e.key() || want[at + j].id != e.upload_id())) {
          match = false;
        }
      }
      prop.Require(match,
                   "the page holds the model's next uploads, at most max_uploads "
                   "(AOBJ-OBJ-223, AOBJ-OBJ-224)",
                   show(want, at, std::max<size_t>(got.size(), 1)), show(got, 0, got.size()));
      at += got.size();
      const bool more = at < want.size();
      prop.Require(!more || l.is_truncated(),
                   "is_truncated when more uploads follow (AOBJ-OBJ-224)", "true", "false");
      if (!l.is_truncated()) break;
      prop.Require(!got.empty() && l.next_key_marker() == got.back().key &&
                       l.next_upload_id_marker() == got.back().id,
                   "the next markers name the last upload returned (AOBJ-OBJ-224)",
                   got.empty() ? "an upload" : show(got, got.size() - 1, 1),
                   absl::StrCat(Esc(l.next_key_marker()), " ", l.next_upload_id_marker()));
      lu.set_key_marker(l.next_key_marker());
      lu.set_upload_id_marker(l.next_upload_id_marker());
    }
    prop.Require(at == want.size(), "the pages list every upload after the markers once",
                 absl::StrCat(want.size(), " uploads"), absl::StrCat(at));
  }
  prop.Done(absl::StrCat(kQueries, " ListMultipartUploads queries over ", ups.size(),
                         " uploads of ", pool.size(), " keys, ", pages,
                         " pages, matched the model"));
}

// mpu/9.15.3/4
void RandomPartSizes(CaseContext& ctx) {
  Prop prop(ctx, 0x5eed1553);
  Rng& rng = prop.rng();
  BucketFixture f = OpenBucket(ctx);
  const uint64_t t = f.p->Negotiated(kCapInline) ? f.p->session().limits().inline_threshold() : 0;
  constexpr uint64_t kMinPart = 5u << 20;  // S3's minimum: allowed by every server
  const int kTrials = 3;
  uint64_t moved = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    prop.Trial(absl::StrCat("upload ", trial));
    const std::string key = absl::StrCat("mpu-", trial, "-\xe4\xb8\xad");
    const std::string content_type = rng.OneIn(2) ? "" : absl::StrCat("application/x-p", trial);
    const std::map<std::string, std::string> meta = {{"trial", absl::StrCat(trial)}};
    const std::string id = CreateUpload(prop, *f.p, f.bucket, key, content_type, meta);
    const uint64_t listed = rng.Between(1, 3);
    std::set<uint32_t> nums;
    while (nums.size() < listed + 1) nums.insert(static_cast<uint32_t>(rng.Between(1, 10000)));
    std::vector<uint32_t> all(nums.begin(), nums.end());
    const uint32_t left_out = rng.Pick(all);
    std::vector<uint32_t> kept;
    for (uint32_t n : all) {
      if (n != left_out) kept.push_back(n);
    }
    std::map<uint32_t, std::string> body;
    for (size_t i = 0; i < kept.size(); ++i) {
      const uint64_t size =
          i + 1 < kept.size()
              ? kMinPart + rng.Below(64 << 10)
              : rng.Pick(std::vector<uint64_t>{0, 1, t, t + 1, rng.Between(1, 3u << 20)});
      body[kept[i]] = Content(size, rng.Seed32());
    }
    body[left_out] = Body(rng, rng.Below(4096));
    std::vector<uint32_t> order = all;
    rng.Shuffle(order);
    const uint32_t replaced = rng.Pick(kept);
    order.insert(order.begin(), replaced);  // first a body that the second replaces
    std::map<uint32_t, std::string> etag;
    bool first_of_replaced = true;
    for (const uint32_t n : order) {
      std::string b = body[n];
      if (n == replaced && first_of_replaced) {
        first_of_replaced = false;
        b = Body(rng, std::max<size_t>(b.size(), 1) + rng.Below(100));
      }
      etag[n] = UploadPart(prop, *f.p, f.bucket, key, id, n, b,
                           !b.empty() && b.size() <= t && rng.OneIn(2));
      moved += b.size();
    }
    pb::CompleteMultipartUploadRequest c;
    c.set_bucket(f.bucket);
    c.set_key(key);
    c.set_upload_id(id);
    std::string md5s, whole, listing;
    for (const uint32_t n : kept) {
      std::string e = etag[n];
      if (rng.OneIn(2)) e = e.substr(1, e.size() - 2);  // without the quotes
      if (rng.OneIn(2)) e = absl::AsciiStrToUpper(e);   // hex digits in upper case
      auto* part = c.add_parts();
      part->set_part_number(n);
      part->set_etag(e);
      md5s += Md5Raw(body[n]);
      whole += body[n];
      absl::StrAppend(&listing, listing.empty() ? "" : ", ", n, ":", body[n].size(), " ", e);
    }
    const std::string want_etag = Quote(absl::StrCat(HexEncode(Md5Raw(md5s)), "-", kept.size()));
    prop.Trial(absl::StrCat("upload ", trial, " (parts ", listing, "; part ", left_out,
                            " uploaded, not listed; part ", replaced, " replaced)"));
    RawReply cr = f.p->Send(Method::kCompleteMultipartUpload, c);
    prop.RequireOk(cr, "CompleteMultipartUpload (AOBJ-OBJ-212, AOBJ-OBJ-213)");
    auto cm = prop.Parse<pb::CompleteMultipartUploadResponse>(cr, "Complete").metadata();
    pb::HeadObjectResponse h;
    prop.RequireOk(f.p->Head(f.bucket, key, &h), "HEAD");
    for (const pb::ObjectMetadata* md : {&cm, h.mutable_metadata()}) {
      const std::string which = md == &cm ? "Complete's metadata" : "HEAD";
      prop.Require(md->etag() == want_etag, which + ": the multipart ETag (AOBJ-OBJ-217)",
                   want_etag, md->etag());
      prop.Require(
          md->size() == whole.size() && ChecksumOf(md->checksum_algorithm(), md->checksum(), whole),
          which + ": size and the checksum of the whole content (AOBJ-DAT-152)",
          absl::StrCat(whole.size(), " ", Hex(Crc32cOf(whole))),
          absl::StrCat(md->size(), " ", Hex(md->checksum())));
      prop.Require(md->content_type() == content_type && MetaOf(*md) == meta,
                   which + ": the upload's content type and user metadata (AOBJ-OBJ-216)",
                   absl::StrCat(Esc(content_type), " ", ShowMeta(meta)),
                   absl::StrCat(Esc(md->content_type()), " ", ShowMeta(MetaOf(*md))));
    }
    const uint64_t window = std::max<uint64_t>(whole.size() + rng.Below(32), 1);
    auto m = f.p->Allocate(window);
    pb::GetObjectRequest g = f.p->GetRequest(f.bucket, key, *m, window);
    g.set_accept_inline(false);
    RawReply gr = f.p->Send(Method::kGetObject, g);
    prop.RequireOk(gr, "GET");
    auto gresp = prop.Parse<pb::GetObjectResponse>(gr, "GET");
    prop.Require(gresp.bytes_transferred() == whole.size() &&
                     std::memcmp(m->data(), whole.data(), whole.size()) == 0,
                 "the object is the listed parts in list order, the left-out part "
                 "discarded (AOBJ-OBJ-216)",
                 absl::StrCat(whole.size(), " octets"),
                 absl::StrCat(gresp.bytes_transferred(), " octets, differ"));
    pb::ListPartsRequest lp;
    lp.set_bucket(f.bucket);
    lp.set_key(key);
    lp.set_upload_id(id);
    prop.RequireCode(f.p->Send(Method::kListParts, lp), ErrorCode::kNoSuchUpload,
                     "ListParts after Complete (AOBJ-OBJ-219)");
  }
  prop.Done(absl::StrCat(kTrials, " uploads of random part sizes (", moved >> 20,
                         " MiB of parts) matched the model"));
}

// obj/9.8/3
void RandomUserMetadata(CaseContext& ctx) {
  Prop prop(ctx, 0x5eed0908);
  Rng& rng = prop.rng();
  BucketFixture f = OpenBucket(ctx);
  std::map<std::string, std::map<std::string, std::string>> stored;  // key: lower-cased
  auto put = [&](const std::string& key, const std::map<std::string, std::string>& meta) {
    auto m = f.p->Allocate(16);
    std::memcpy(m->data(), "metadata-object!", 16);
    pb::PutObjectRequest p = f.p->PutRequest(f.bucket, key, *m, 16);
    for (const auto& [k, v] : meta) (*p.mutable_user_metadata())[k] = v;
    return f.p->Send(Method::kPutObject, p);
  };
  auto check = [&](const std::string& key, const std::string& what) {
    pb::HeadObjectResponse h;
    prop.RequireOk(f.p->Head(f.bucket, key, &h), "HEAD " + key);
    prop.Require(MetaOf(h.metadata()) == stored[key],
                 what +
                     ": HEAD returns the metadata, names in lower case (AOBJ-OBJ-120, "
                     "AOBJ-OBJ-122)",
                 ShowMeta(stored[key]), ShowMeta(MetaOf(h.metadata())));
  };
  const std::vector<std::string> keys = {"m0", "m1", "m2"};
  int valid = 0, faulty = 0;
  for (int i = 0; i < 14; ++i, ++valid) {
    const std::string key = rng.Pick(keys);
    std::map<std::string, std::string> meta = RandomMeta(rng, 2048);
    if (i == 3) {  // exactly 2048 octets: a 3-octet name and a 2045-octet value
      meta = {{"Big", std::string(2045 - 6, 'v') + "\xe4\xb8\xad\xc3\xa9\t"}};
    }
    prop.Trial(absl::StrCat("valid map ", i, " on ", key, ": ", ShowMeta(meta)));
    if (i % 4 == 2) {
      // A copy with REPLACE, then one with COPY from it (AOBJ-OBJ-150, AOBJ-OBJ-153).
      const std::string src = rng.Pick(keys);
      if (stored.count(src) == 0) {
        prop.RequireOk(put(src, {}), "PUT of the copy source");
        stored[src] = {};
      }
      pb::CopyObjectRequest c;
      c.set_source_bucket(f.bucket);
      c.set_source_key(src);
      c.set_bucket(f.bucket);
      c.set_key(key);
      c.set_metadata_directive(pb::METADATA_DIRECTIVE_REPLACE);
      for (const auto& [k, v] : meta) (*c.mutable_user_metadata())[k] = v;
      prop.RequireOk(f.p->Send(Method::kCopyObject, c), "CopyObject REPLACE from " + src);
      stored[key] = Lowered(meta);
      check(key, "after CopyObject REPLACE");
      pb::CopyObjectRequest cc;
      cc.set_source_bucket(f.bucket);
      cc.set_source_key(key);
      cc.set_bucket(f.bucket);
      cc.set_key("copied");
      cc.set_metadata_directive(rng.OneIn(2) ? pb::METADATA_DIRECTIVE_COPY
                                             : pb::METADATA_DIRECTIVE_UNSPECIFIED);
      prop.RequireOk(f.p->Send(Method::kCopyObject, cc), "CopyObject COPY");
      stored["copied"] = stored[key];
      check("copied", "after CopyObject COPY");
    } else if (i % 4 == 3) {
      const std::string id = CreateUpload(prop, *f.p, f.bucket, key, "", meta);
      const std::string e = UploadPart(prop, *f.p, f.bucket, key, id, 1, "part", false);
      pb::CompleteMultipartUploadRequest c;
      c.set_bucket(f.bucket);
      c.set_key(key);
      c.set_upload_id(id);
      auto* part = c.add_parts();
      part->set_part_number(1);
      part->set_etag(e);
      prop.RequireOk(f.p->Send(Method::kCompleteMultipartUpload, c), "CompleteMultipartUpload");
      stored[key] = Lowered(meta);
      check(key, "after a multipart upload (AOBJ-OBJ-200, AOBJ-OBJ-216)");
    } else {
      prop.RequireOk(put(key, meta), "PUT");
      stored[key] = Lowered(meta);
      check(key, "after PUT");
      std::string out;
      pb::GetObjectResponse g;
      prop.RequireOk(f.p->Get(f.bucket, key, &out, &g), "GET");
      prop.Require(MetaOf(g.metadata()) == stored[key], "GET returns the same metadata",
                   ShowMeta(stored[key]), ShowMeta(MetaOf(g.metadata())));
    }
  }
  static const std::vector<std::string> kNotToken = {" ", "(", ")", ",",  "/",    ":",  ";",
                                                     "<", "=", ">", "?",  "@",    "[",  "\\",
                                                     "]", "{", "}", "\"", "\x7f", "\t", "\xc3\xa9"};
  static const std::vector<std::string> kControl = {
      "\x01", "\n", "\r", "\x1f", std::string(1, '\0'), "\x7f"};
  static const std::vector<std::string> kNotUtf8 = {"\xff",         "\xc3",     "\xe4\xb8",
                                                    "\xed\xa0\x80", "\xc0\xaf", "\x80"};
  for (int i = 0; i < 16; ++i, ++faulty) {
    const std::string key = rng.Pick(keys);
    std::map<std::string, std::string> meta = RandomMeta(rng, 1500);
    ErrorCode code = ErrorCode::kInvalidArgument;
    std::string fault;
    std::string name = RandomName(rng) + "x";
    std::string value = RandomValue(rng, 8);
    switch (rng.Below(6)) {
      case 0: {
        const size_t at = rng.Below(name.size() + 1);
        name.insert(at, rng.Pick(kNotToken));
        fault = "a name with a character outside the token characters";
        break;
      }
      case 1: {
        meta[name] = value;
        std::string twin = name;
        for (char& ch : twin) {
          if (absl::ascii_isalpha(static_cast<unsigned char>(ch)) && rng.OneIn(2)) {
            ch = absl::ascii_isupper(static_cast<unsigned char>(ch))
                     ? absl::ascii_tolower(static_cast<unsigned char>(ch))
                     : absl::ascii_toupper(static_cast<unsigned char>(ch));
          }
        }
        if (twin == name) twin.back() = 'X';
        name = twin;
        fault = "two names that differ only in ASCII case";
        break;
      }
      case 2: {
        const size_t at = rng.Below(value.size() + 1);
        value.insert(at, rng.Pick(kControl));
      }
        fault = "a value with a control character";
        break;
      case 3: {
        const size_t at = rng.Below(value.size() + 1);
        value.insert(at, rng.Pick(kNotUtf8));
      }
        fault = "a value that is not UTF-8";
        break;
      case 4:
        name.clear();
        fault = "an empty name";
        break;
      default:
        if (rng.OneIn(2)) name.insert(0, " ");  // size is checked first (AOBJ-OBJ-121)
        code = ErrorCode::kMetadataTooLarge;
        fault = "2049 octets or more";
    }
    meta[name] = value;
    if (code == ErrorCode::kMetadataTooLarge) {
      const size_t target = 2049 + rng.Below(900);
      meta[name] += std::string(target - std::min(target, MetaOctets(meta)), 'v');
    }
    const uint64_t how = rng.Below(3);
    const char* via = how == 0   ? "PutObject"
                      : how == 1 ? "CopyObject REPLACE"
                                 : "CreateMultipartUpload";
    prop.Trial(
        absl::StrCat("fault ", i, " on ", key, " by ", via, ": ", fault, ", ", ShowMeta(meta)));
    RawReply rr;
    if (how == 0) {
      rr = put(key, meta);
    } else if (how == 1) {
      pb::CopyObjectRequest c;
      c.set_source_bucket(f.bucket);
      c.set_source_key("copied");
      c.set_bucket(f.bucket);
      c.set_key(key);
      c.set_metadata_directive(pb::METADATA_DIRECTIVE_REPLACE);
      for (const auto& [k, v] : meta) (*c.mutable_user_metadata())[k] = v;
      rr = f.p->Send(Method::kCopyObject, c);
    } else {
      pb::CreateMultipartUploadRequest c;
      c.set_bucket(f.bucket);
      c.set_key(key);
      for (const auto& [k, v] : meta) (*c.mutable_user_metadata())[k] = v;
      rr = f.p->Send(Method::kCreateMultipartUpload, c);
    }
    prop.RequireCode(
        rr, code,
        absl::StrCat(via, " with ", fault, " (AOBJ-OBJ-120, AOBJ-OBJ-121, AOBJ-OBJ-123)"));
    if (stored.count(key) != 0) check(key, "the refused request changed nothing (AOBJ-OBJ-014)");
  }
  prop.Done(absl::StrCat(valid, " random valid maps stored and returned, ", faulty,
                         " random faulty ones refused"));
  ctx.RequireStillServes();
}

}  // namespace

void RegisterPropertyCases(Registry& r) {
  // ---- 8.4: sizes around the thresholds ---------------------------------------------------------
  Add(r, "dat/8.4/4",
      "random sizes at and around the thresholds a session announces (0, 1, inline_threshold "
      "and one either side, 4 KiB and one either side), in the server's session and one that "
      "asks for a random smaller threshold: PUT inline and by RMA, GET with and without "
      "accept_inline, HEAD; paths, octets, sizes, ETags and checksums as the model says",
      "inline",
      {"AOBJ-DAT-007", "AOBJ-DAT-008", "AOBJ-DAT-014", "AOBJ-DAT-015", "AOBJ-DAT-011",
       "AOBJ-DAT-030", "AOBJ-DAT-003", "AOBJ-MEM-016", "AOBJ-OBJ-005", "AOBJ-OBJ-012",
       "AOBJ-SES-006"},
      false, SizesAroundThresholds);

  // ---- 9.9: random ranges -----------------------------------------------------------------------
  Add(r, "rng/9.9/4",
      "random byte ranges (bounded, open-ended, suffix; ending at the last octet, one past it, "
      "and far past; some selecting nothing) over objects of random sizes, with and without "
      "accept_inline, some into a window one octet short: octets, content_range, checksum and "
      "path as the model says",
      "ranges",
      {"AOBJ-DAT-101", "AOBJ-DAT-102", "AOBJ-DAT-103", "AOBJ-DAT-104", "AOBJ-DAT-106",
       "AOBJ-DAT-107", "AOBJ-MEM-007", "AOBJ-MEM-016", "AOBJ-OBJ-009"},
      true, RandomRanges);

  // ---- 7.3: random windows ----------------------------------------------------------------------
  Add(r, "mem/7.3/5",
      "random windows in random places: PUT and GET (whole and ranged) of random sizes over 1 to "
      "max_descriptors windows in ordered fill, every other octet kept; windows that add up "
      "short: DESCRIPTOR_TOO_SMALL, nothing committed or written",
      "core",
      {"AOBJ-MEM-008", "AOBJ-MEM-007", "AOBJ-MEM-016", "AOBJ-DAT-107", "AOBJ-DAT-003",
       "AOBJ-OBJ-014"},
      true, RandomWindows);

  // ---- 9.12: random listing shapes --------------------------------------------------------------
  Add(r, "list/9.12/8",
      "random listing shapes (prefix, delimiter, start_after, max_keys; keys with '/', '-', "
      "case pairs, composed and decomposed UTF-8) paged with continuation tokens: every page "
      "the next entries of a model computed in the case, is_truncated exactly when more follow",
      "list",
      {"AOBJ-OBJ-100", "AOBJ-OBJ-101", "AOBJ-OBJ-102", "AOBJ-OBJ-103", "AOBJ-OBJ-104",
       "AOBJ-OBJ-108", "AOBJ-OBJ-015", "AOBJ-OBJ-005"},
      false, RandomListingShapes);
  Add(r, "list/9.12/9",
      "listings paged while other keys are written and deleted and listed keys rewritten: every "
      "key that exists throughout appears exactly once, entries ascend across pages, nothing "
      "that never existed appears",
      "list", {"AOBJ-OBJ-109", "AOBJ-OBJ-100", "AOBJ-OBJ-101", "AOBJ-OBJ-102"}, false,
      ListingWhileKeysChange);

  // ---- 9.15.5: random ListParts and ListMultipartUploads ----------------------------------------
  Add(r, "mpu/9.15.5/2",
      "ListParts over random part numbers (1 and 10000 among them), random sizes, replaced "
      "parts, random markers and max_parts: every page the next parts of the model, with "
      "number, size, ETag, checksum",
      "multipart", {"AOBJ-OBJ-221", "AOBJ-OBJ-222", "AOBJ-OBJ-208", "AOBJ-OBJ-207", "AOBJ-DAT-151"},
      false, RandomListParts);
  Add(r, "mpu/9.15.5/3",
      "ListMultipartUploads over random uploads (several per key, some aborted), random prefix, "
      "markers and max_uploads: every page the next uploads of the model (by key in octet "
      "order, then by initiation), markers of the last upload returned",
      "multipart", {"AOBJ-OBJ-223", "AOBJ-OBJ-224", "AOBJ-OBJ-220"}, false, RandomListUploads);

  // ---- 9.15.3: random part sizes ----------------------------------------------------------------
  Add(r, "mpu/9.15.3/4",
      "uploads of random part numbers and sizes (every part but the last at least 5 MiB, the last "
      "of any size, zero included; some inline, one replaced, one left out of the list), listed "
      "with ETags quoted or not and in either case: content, size, full-object checksum, and the "
      "multipart ETag computed in the case",
      "multipart",
      {"AOBJ-OBJ-216", "AOBJ-OBJ-217", "AOBJ-OBJ-212", "AOBJ-OBJ-213", "AOBJ-OBJ-208",
       "AOBJ-OBJ-219", "AOBJ-DAT-152", "AOBJ-OBJ-012"},
      false, RandomPartSizes);

  // ---- 9.8: random user metadata ----------------------------------------------------------------
  Add(r, "obj/9.8/3",
      "random user metadata maps (token names of random case, UTF-8 values with tabs and spaces, "
      "up to exactly 2048 octets) through PutObject, CopyObject and multipart: names lower-cased, "
      "values as sent, replaced whole; random faults (a non-token name, names equal but for "
      "case, a control character, invalid UTF-8, an empty name, 2049 octets or more): "
      "INVALID_ARGUMENT or METADATA_TOO_LARGE, nothing changed",
      "core",
      {"AOBJ-OBJ-120", "AOBJ-OBJ-121", "AOBJ-OBJ-122", "AOBJ-OBJ-123", "AOBJ-OBJ-150",
       "AOBJ-OBJ-153", "AOBJ-OBJ-200", "AOBJ-OBJ-216", "AOBJ-OBJ-014"},
      true, RandomUserMetadata);
}

}  // namespace aobj::conformance
