#include "store_rados/rados_format.h"

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

absl::Status Corrupt(absl::string_view what) {
  return MakeError(ErrorCode::kStorageError, absl::StrCat("corrupt RADOS record: ", what));
}

void PutString(LeWriter& w, std::string_view s) {
  w.U32(static_cast<uint32_t>(s.size()));
  w.Bytes(s);
}

bool GetString(LeReader& r, std::string* out) {
  uint32_t n;
  std::string_view b;
  if (!r.U32(&n) || n > kMaxString || !r.Bytes(n, &b)) return false;
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
      out.append("\x01\x01", 2);
    } else if (c == '\x01') {
      out.append("\x01\x02", 2);
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
    if (e == '\x01') {
      out.push_back('\0');
    } else if (e == '\x02') {
      out.push_back('\x01');
    } else {
      return Corrupt("an index key holds an unknown escape");
    }
  }
  return out;
}

std::string EncodeBucket(const BucketRecord& record) {
  std::string out;
  LeWriter w(&out);
  w.U8(kRecordFormat);
  w.U64(static_cast<uint64_t>(record.creation_time_ms));
  PutUuid(w, record.incarnation);
  return out;
}

absl::StatusOr<BucketRecord> DecodeBucket(std::string_view octets) {
  LeReader r(octets);
  BucketRecord record;
  uint64_t t;
  if (!GetFormat(r) || !r.U64(&t) || !GetUuid(r, &record.incarnation) || r.remaining() != 0) {
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
  PutUuid(w, record.uuid);
  w.U32(record.stripe_bytes);
  w.U64(info.size);
  w.U64(static_cast<uint64_t>(info.last_modified_ms));
  w.U32(info.crc32c);
  PutString(w, info.etag);
  PutString(w, info.content_type);
  w.U32(static_cast<uint32_t>(info.user_metadata.size()));
  for (const auto& [name, value] : info.user_metadata) {
    PutString(w, name);
    PutString(w, value);
  }
  return out;
}

absl::StatusOr<HeadRecord> DecodeHead(std::string_view octets) {
  LeReader r(octets);
  HeadRecord record;
  ObjectInfo& info = record.info;
  uint64_t t;
  uint32_t pairs;
  if (!GetFormat(r) || !GetUuid(r, &record.uuid) || !r.U32(&record.stripe_bytes) ||
      !r.U64(&info.size) || !r.U64(&t) || !r.U32(&info.crc32c) || !GetString(r, &info.etag) ||
      !GetString(r, &info.content_type) || !r.U32(&pairs) || pairs > kMaxMetadataPairs) {
    return Corrupt("object head");
  }
  info.last_modified_ms = static_cast<int64_t>(t);
  for (uint32_t i = 0; i < pairs; ++i) {
    std::string name, value;
    if (!GetString(r, &name) || !GetString(r, &value)) return Corrupt("object head metadata");
    info.user_metadata.emplace(std::move(name), std::move(value));
  }
  if (r.remaining() != 0) return Corrupt("object head has trailing octets");
  if (info.size > 0 &&
      (record.stripe_bytes < kMinStripeBytes || record.stripe_bytes > kMaxStripeBytes)) {
    return Corrupt("object head stripe size");
  }
  return record;
}

std::string GcEntryName(const Uuid& uuid, GcKind kind) {
  return absl::StrCat(HexEncode(uuid), kind == GcKind::kWriting ? ".w" : ".r");
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
  return out;
}

absl::StatusOr<GcIntent> DecodeGcIntent(std::string_view octets) {
  LeReader r(octets);
  GcIntent intent;
  uint8_t kind;
  uint64_t t;
  if (!GetFormat(r) || !r.U8(&kind) || !r.U64(&t) || !GetUuid(r, &intent.uuid) ||
      !GetUuid(r, &intent.incarnation) || !r.U64(&intent.size) || !r.U32(&intent.stripe_bytes) ||
      !GetString(r, &intent.encoded_key) || r.remaining() != 0) {
    return Corrupt("garbage-collection entry");
  }
  if (kind != static_cast<uint8_t>(GcKind::kWriting) &&
      kind != static_cast<uint8_t>(GcKind::kReplaced)) {
    return Corrupt("garbage-collection entry kind");
  }
  if (intent.size > 0 &&
      (intent.stripe_bytes < kMinStripeBytes || intent.stripe_bytes > kMaxStripeBytes)) {
    return Corrupt("garbage-collection entry stripe size");
  }
  intent.kind = static_cast<GcKind>(kind);
  intent.time_ms = static_cast<int64_t>(t);
  return intent;
}

}  // namespace aobj::rados_format
