#include "store_rados/rados_format.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "wire/crypto.h"
#include "wire/le_codec.h"

namespace aobj::rados_format {
namespace {

// Bounds on what a damaged record can make a decoder allocate or a writer record.
constexpr size_t kMaxString = 64 * 1024;
constexpr size_t kMaxMetadataPairs = 1024;

absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }

absl::Status Corrupt(absl::string_view what) {
  return MakeError(ErrorCode::kStorageError, absl::StrCat("corrupt RADOS record: ", what));
}

void PutString(LeWriter& w, std::string_view s) { w.String32(s); }

bool GetString(LeReader& r, std::string* out) {
  std::string_view b;
  if (!r.String32(kMaxString, &b)) return false;
  out->assign(b);
  return true;
}

bool GetUuid(LeReader& r, Uuid* out) {
  std::string_view b;
  if (!r.Bytes(out->size(), &b)) return false;
  for (size_t i = 0; i < out->size(); ++i) (*out)[i] = static_cast<uint8_t>(b[i]);
  return true;
}

void PutUuid(LeWriter& w, const Uuid& u) {
  w.Bytes(std::string_view(reinterpret_cast<const char*>(u.data()), u.size()));
}

void PutSegment(LeWriter& w, const Segment& s) {
  PutUuid(w, s.uuid);
  w.U64(s.size);
  w.U32(s.stripe_bytes);
}

bool StripeSizeOk(uint64_t size, uint32_t stripe_bytes) {
  return size == 0 || (stripe_bytes >= kMinStripeBytes && stripe_bytes <= kMaxStripeBytes);
}

bool GetSegment(LeReader& r, Segment* s) {
  return GetUuid(r, &s->uuid) && r.U64(&s->size) && r.U32(&s->stripe_bytes) &&
         StripeSizeOk(s->size, s->stripe_bytes);
}

void PutMetadata(LeWriter& w, const std::map<std::string, std::string>& m) {
  w.U32(static_cast<uint32_t>(m.size()));
  for (const auto& [name, value] : m) {
    PutString(w, name);
    PutString(w, value);
  }
}

bool GetMetadata(LeReader& r, std::map<std::string, std::string>* m) {
  uint32_t pairs;
  if (!r.U32(&pairs) || pairs > kMaxMetadataPairs) return false;
  for (uint32_t i = 0; i < pairs; ++i) {
    std::string name, value;
    if (!GetString(r, &name) || !GetString(r, &value)) return false;
    // Names strictly ascending, as every encoder writes them: one encoding per record.
    if (!m->empty() && !(m->rbegin()->first < name)) return false;
    m->emplace(std::move(name), std::move(value));
  }
  return true;
}

bool GetFormat(LeReader& r) {
  uint8_t f;
  return r.U8(&f) && f == kRecordFormat;
}

}  // namespace

std::string IndexObject(const Uuid& incarnation) {
  return absl::StrCat("aobj.index.", HexEncode(incarnation));
}

std::string DataObject(const Uuid& uuid, uint64_t stripe) {
  return absl::StrCat("aobj.data.", HexEncode(uuid), ".", stripe);
}

std::string GcObject(const Uuid& uuid) { return absl::StrCat("aobj.gc.", uuid[0] % kGcShards); }

uint64_t StripeCount(uint64_t size, uint32_t stripe_bytes) {
  return stripe_bytes == 0 ? 0 : size / stripe_bytes + (size % stripe_bytes != 0 ? 1 : 0);
}

std::string EncodeKey(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '\0') {
      out.append("\x01\x02", 2);
    } else if (c == '\x01') {
      out.append("\x01\x03", 2);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

absl::StatusOr<std::string> DecodeKey(std::string_view encoded) {
  std::string out;
  out.reserve(encoded.size());
  for (size_t i = 0; i < encoded.size(); ++i) {
    const char c = encoded[i];
    if (c == '\0') return Corrupt("an index key holds a NUL octet");
    if (c != '\x01') {
      out.push_back(c);
      continue;
    }
    if (i + 1 == encoded.size()) return Corrupt("an index key ends inside an escape");
    const char e = encoded[++i];
    if (e == '\x02') {
      out.push_back('\0');
    } else if (e == '\x03') {
      out.push_back('\x01');
    } else {
      return Corrupt("an index key holds an unknown escape");
    }
  }
  return out;
}

std::string AfterUploadEntries() {
  // Longer than any upload entry (marks, an encoded key of at most 2 x kMaxKeyBytes, an ID).
  return std::string(kMark) + std::string(kMaxKeyBytes * 2 + 64, '\xff');
}

std::string UploadEntry(std::string_view encoded_key, std::string_view upload_id) {
  return absl::StrCat(kMark, AV(encoded_key), kMark, AV(upload_id));
}

std::string UploadEntryPrefix(std::string_view encoded_key_prefix) {
  return absl::StrCat(kMark, AV(encoded_key_prefix));
}

std::string UploadObject(std::string_view upload_id) {
  return absl::StrCat("aobj.upload.", AV(upload_id));
}

std::string PartEntry(uint32_t part_number) {
  std::string digits = absl::StrCat(part_number);
  return absl::StrCat(kPartPrefix, std::string(digits.size() < 5 ? 5 - digits.size() : 0, '0'),
                      digits);
}

std::string EncodeBucket(const BucketRecord& record) {
  std::string out;
  LeWriter w(&out);
  w.U8(kRecordFormat);
  w.U64(static_cast<uint64_t>(record.creation_time_ms));
  PutUuid(w, record.incarnation);
  PutString(w, record.owner);
  return out;
}

absl::StatusOr<BucketRecord> DecodeBucket(std::string_view octets) {
  LeReader r(octets);
  BucketRecord record;
  uint64_t t;
  if (!GetFormat(r) || !r.U64(&t) || !GetUuid(r, &record.incarnation) ||
      !GetString(r, &record.owner) || r.remaining() != 0) {
    return Corrupt("bucket record");
  }
  record.creation_time_ms = static_cast<int64_t>(t);
  return record;
}

std::string EncodeHead(const HeadRecord& record) {
  std::string out;
  LeWriter w(&out);
  const ObjectInfo& info = record.info;
  w.U8(kRecordFormat);
  w.U32(static_cast<uint32_t>(record.segments.size()));
  for (const Segment& s : record.segments) PutSegment(w, s);
  w.U64(info.size);
  w.U64(static_cast<uint64_t>(info.last_modified_ms));
  w.U32(info.crc32c);
  PutString(w, info.etag);
  PutString(w, info.content_type);
  PutMetadata(w, info.user_metadata);
  return out;
}

absl::StatusOr<HeadRecord> DecodeHead(std::string_view octets) {
  LeReader r(octets);
  HeadRecord record;
  ObjectInfo& info = record.info;
  uint64_t t;
  uint32_t segments;
  if (!GetFormat(r) || !r.U32(&segments) || segments > kMaxSegments) {
    return Corrupt("object head");
  }
  uint64_t sum = 0;
  for (uint32_t i = 0; i < segments; ++i) {
    Segment s;
    if (!GetSegment(r, &s)) return Corrupt("object head segment");
    if (s.size > UINT64_MAX - sum) return Corrupt("object head segment sizes");
    sum += s.size;
    record.segments.push_back(s);
  }
  if (!r.U64(&info.size) || !r.U64(&t) || !r.U32(&info.crc32c) || !GetString(r, &info.etag) ||
      !GetString(r, &info.content_type) || !GetMetadata(r, &info.user_metadata)) {
    return Corrupt("object head");
  }
  info.last_modified_ms = static_cast<int64_t>(t);
  if (r.remaining() != 0) return Corrupt("object head has trailing octets");
  if (sum != info.size) return Corrupt("object head segments do not add up to its size");
  return record;
}

namespace {
std::string TimeHex(int64_t time_ms) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  const uint64_t t = static_cast<uint64_t>(std::max<int64_t>(time_ms, 0));
  for (int i = 0; i < 16; ++i) out[15 - i] = kHex[(t >> (4 * i)) & 0xf];
  return out;
}
}  // namespace

std::string GcEntryName(int64_t time_ms, const Uuid& uuid, GcKind kind) {
  return absl::StrCat(TimeHex(time_ms), ".", HexEncode(uuid),
                      kind == GcKind::kWriting ? ".w" : ".r");
}

std::string GcUploadEntryName(int64_t time_ms, std::string_view upload_id) {
  return absl::StrCat(TimeHex(time_ms), ".", AV(upload_id), ".u");
}

int64_t GcEntryTime(std::string_view name) {
  if (name.size() < 17 || name[16] != '.') return -1;
  uint64_t t = 0;
  for (int i = 0; i < 16; ++i) {
    const char c = name[i];
    const int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0) return -1;
    t = t << 4 | static_cast<uint64_t>(v);
  }
  return t > static_cast<uint64_t>(INT64_MAX) ? -1 : static_cast<int64_t>(t);
}

std::string GcUploadObject(std::string_view upload_id) {
  // Upload IDs end in random octets: their last hex digit spreads them over the shards.
  const char c = upload_id.empty() ? '0' : upload_id.back();
  const int v = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : 0;
  return absl::StrCat("aobj.gc.", v % kGcShards);
}

std::string EncodeGcIntent(const GcIntent& intent) {
  std::string out;
  LeWriter w(&out);
  w.U8(kRecordFormat);
  w.U8(static_cast<uint8_t>(intent.kind));
  w.U64(static_cast<uint64_t>(intent.time_ms));
  PutUuid(w, intent.uuid);
  PutUuid(w, intent.incarnation);
  w.U64(intent.size);
  w.U32(intent.stripe_bytes);
  PutString(w, intent.encoded_key);
  PutString(w, intent.upload_id);
  w.U32(intent.part_number);
  return out;
}

absl::StatusOr<GcIntent> DecodeGcIntent(std::string_view octets) {
  LeReader r(octets);
  GcIntent intent;
  uint8_t kind;
  uint64_t t;
  if (!GetFormat(r) || !r.U8(&kind) || !r.U64(&t) || !GetUuid(r, &intent.uuid) ||
      !GetUuid(r, &intent.incarnation) || !r.U64(&intent.size) || !r.U32(&intent.stripe_bytes) ||
      !GetString(r, &intent.encoded_key) || !GetString(r, &intent.upload_id) ||
      !r.U32(&intent.part_number) || r.remaining() != 0) {
    return Corrupt("garbage-collection entry");
  }
  if (kind < static_cast<uint8_t>(GcKind::kWriting) ||
      kind > static_cast<uint8_t>(GcKind::kUpload)) {
    return Corrupt("garbage-collection entry kind");
  }
  if (!StripeSizeOk(intent.size, intent.stripe_bytes)) {
    return Corrupt("garbage-collection entry stripe size");
  }
  intent.kind = static_cast<GcKind>(kind);
  intent.time_ms = static_cast<int64_t>(t);
  return intent;
}

std::string EncodeUpload(const UploadRecord& record) {
  std::string out;
  LeWriter w(&out);
  w.U8(kRecordFormat);
  PutString(w, record.upload_id);
  PutString(w, record.key);
  w.U64(static_cast<uint64_t>(record.initiated_ms));
  PutString(w, record.initiator);
  PutString(w, record.content_type);
  PutMetadata(w, record.user_metadata);
  return out;
}

absl::StatusOr<UploadRecord> DecodeUpload(std::string_view octets) {
  LeReader r(octets);
  UploadRecord record;
  uint64_t t;
  if (!GetFormat(r) || !GetString(r, &record.upload_id) || !GetString(r, &record.key) ||
      !r.U64(&t) || !GetString(r, &record.initiator) || !GetString(r, &record.content_type) ||
      !GetMetadata(r, &record.user_metadata) || r.remaining() != 0) {
    return Corrupt("upload record");
  }
  record.initiated_ms = static_cast<int64_t>(t);
  return record;
}

std::string EncodePart(const PartRecord& record) {
  std::string out;
  LeWriter w(&out);
  w.U8(kRecordFormat);
  w.U32(record.part_number);
  PutSegment(w, record.segment);
  PutString(w, record.etag);
  w.U32(record.crc32c);
  w.U64(static_cast<uint64_t>(record.last_modified_ms));
  return out;
}

absl::StatusOr<PartRecord> DecodePart(std::string_view octets) {
  LeReader r(octets);
  PartRecord record;
  uint64_t t;
  if (!GetFormat(r) || !r.U32(&record.part_number) || !GetSegment(r, &record.segment) ||
      !GetString(r, &record.etag) || !r.U32(&record.crc32c) || !r.U64(&t) || r.remaining() != 0) {
    return Corrupt("part record");
  }
  record.last_modified_ms = static_cast<int64_t>(t);
  return record;
}

std::string EncodeUploadState(const UploadStateRecord& record) {
  std::string out;
  LeWriter w(&out);
  w.U8(kRecordFormat);
  w.U8(static_cast<uint8_t>(record.state));
  w.U64(static_cast<uint64_t>(record.since_ms));
  PutString(w, record.nonce);
  return out;
}

absl::StatusOr<UploadStateRecord> DecodeUploadState(std::string_view octets) {
  LeReader r(octets);
  UploadStateRecord record;
  uint8_t state;
  uint64_t t;
  if (!GetFormat(r) || !r.U8(&state) || !r.U64(&t) || !GetString(r, &record.nonce) ||
      r.remaining() != 0 || state < 1 || state > 2) {
    return Corrupt("upload state");
  }
  record.state = static_cast<UploadState>(state);
  record.since_ms = static_cast<int64_t>(t);
  return record;
}

}  // namespace aobj::rados_format
