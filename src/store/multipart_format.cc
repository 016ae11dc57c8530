#include "store/multipart_format.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "wire/checksum.h"
#include "wire/crypto.h"
#include "wire/le_codec.h"

namespace aobj::multipart_format {
namespace {

constexpr char kManifestMagic[8] = {'A', 'O', 'B', 'J', 'M', 'P', 'U', '1'};
constexpr char kPartMagic[8] = {'A', 'O', 'B', 'J', 'P', 'R', 'T', '1'};
constexpr uint32_t kFormatVersion = 1;          // of part files
constexpr uint32_t kManifestVersion = 2;        // of manifests written now
constexpr uint32_t kOldestManifestVersion = 1;  // read too: no initiator
constexpr size_t kManifestFixedBytes = 36;
constexpr size_t kMaxManifestString = 16 * 1024;

// On the one little-endian codec (wire/le_codec.h). The decoders below check the record's
// length before they read at fixed offsets; a read past the end gives 0.
void PutU32(std::string* out, uint32_t v) { LeWriter(out).U32(v); }
void PutU64(std::string* out, uint64_t v) { LeWriter(out).U64(v); }
uint32_t GetU32(absl::string_view in, size_t at) {
  uint32_t v = 0;
  if (at <= in.size()) LeReader(std::string_view(in.data() + at, in.size() - at)).U32(&v);
  return v;
}
uint64_t GetU64(absl::string_view in, size_t at) {
  uint64_t v = 0;
  if (at <= in.size()) LeReader(std::string_view(in.data() + at, in.size() - at)).U64(&v);
  return v;
}

}  // namespace

std::string EncodeManifest(const UploadInfo& u) {
  std::string out(kManifestMagic, sizeof(kManifestMagic));
  PutU32(&out, kManifestVersion);
  PutU64(&out, static_cast<uint64_t>(u.initiated_ms));
  PutU32(&out, static_cast<uint32_t>(u.bucket.size()));
  PutU32(&out, static_cast<uint32_t>(u.key.size()));
  PutU32(&out, static_cast<uint32_t>(u.content_type.size()));
  PutU32(&out, static_cast<uint32_t>(u.upload_id.size()));
  out += u.bucket;
  out += u.key;
  out += u.content_type;
  out += u.upload_id;
  PutU32(&out, static_cast<uint32_t>(u.user_metadata.size()));
  for (const auto& [name, value] : u.user_metadata) {
    PutU32(&out, static_cast<uint32_t>(name.size()));
    out += name;
    PutU32(&out, static_cast<uint32_t>(value.size()));
    out += value;
  }
  PutU32(&out, static_cast<uint32_t>(u.initiator.size()));
  out += u.initiator;
  PutU32(&out, Crc32c(0, out.data(), out.size()));
  return out;
}

absl::StatusOr<UploadInfo> DecodeManifest(absl::string_view in, const std::string& path) {
  auto corrupt = [&](absl::string_view what) {
    return MakeError(ErrorCode::kStorageError,
                     absl::StrCat("corrupt upload manifest ", path, ": ", what));
  };
  if (in.size() < kManifestFixedBytes + 4) return corrupt("too short");
  if (in.substr(0, 8) != absl::string_view(kManifestMagic, 8)) return corrupt("bad magic");
  const uint32_t version = GetU32(in, 8);
  if (version < kOldestManifestVersion || version > kManifestVersion) {
    return corrupt("unsupported version");
  }
  if (GetU32(in, in.size() - 4) != Crc32c(0, in.data(), in.size() - 4)) {
    return corrupt("checksum mismatch");
  }
  UploadInfo u;
  u.initiated_ms = static_cast<int64_t>(GetU64(in, 12));
  const uint32_t lens[4] = {GetU32(in, 20), GetU32(in, 24), GetU32(in, 28), GetU32(in, 32)};
  std::string* fields[4] = {&u.bucket, &u.key, &u.content_type, &u.upload_id};
  size_t at = kManifestFixedBytes;
  const size_t end = in.size() - 4;
  for (int i = 0; i < 4; ++i) {
    // Each length is checked against what remains, so no sum can overflow.
    if (lens[i] > kMaxManifestString || lens[i] > end - at) return corrupt("fields overrun");
    fields[i]->assign(in.data() + at, lens[i]);
    at += lens[i];
  }
  // Reads one length-prefixed string; false when it overruns.
  auto read_string = [&](std::string* out) {
    LeReader r(std::string_view(in.data() + at, end - at));
    std::string_view s;
    if (!r.String32(kMaxManifestString, &s)) return false;
    out->assign(s);
    at += 4 + s.size();
    return true;
  };
  if (end - at < 4) return corrupt("metadata count missing");
  const uint32_t pairs = GetU32(in, at);
  at += 4;
  for (uint32_t i = 0; i < pairs; ++i) {
    std::string name, value;
    if (!read_string(&name) || !read_string(&value)) return corrupt("metadata overruns");
    u.user_metadata[std::move(name)] = std::move(value);
  }
  if (version >= 2 && !read_string(&u.initiator)) return corrupt("initiator overruns");
  if (at != end) return corrupt("trailing bytes");
  return u;
}

std::string EncodePartHeader(const PartInfo& info, absl::string_view md5) {
  std::string out(kPartMagic, sizeof(kPartMagic));
  PutU32(&out, kFormatVersion);
  PutU32(&out, info.part_number);
  PutU64(&out, info.size);
  PutU64(&out, static_cast<uint64_t>(info.last_modified_ms));
  PutU32(&out, info.crc32c);
  out.append(md5.data(), md5.size());
  out.resize(kPartHeaderBytes - 4, '\0');
  PutU32(&out, Crc32c(0, out.data(), out.size()));
  return out;
}

absl::StatusOr<PartInfo> DecodePartHeader(absl::string_view in) {
  if (in.size() != kPartHeaderBytes || in.substr(0, 8) != absl::string_view(kPartMagic, 8) ||
      GetU32(in, 8) != kFormatVersion ||
      GetU32(in, kPartHeaderBytes - 4) != Crc32c(0, in.data(), kPartHeaderBytes - 4)) {
    return MakeError(ErrorCode::kStorageError, "bad part header");
  }
  PartInfo info;
  info.part_number = GetU32(in, 12);
  info.size = GetU64(in, 16);
  info.last_modified_ms = static_cast<int64_t>(GetU64(in, 24));
  info.crc32c = GetU32(in, 32);
  info.etag = absl::StrCat("\"", HexEncode(in.substr(36, 16)), "\"");
  return info;
}

}  // namespace aobj::multipart_format
