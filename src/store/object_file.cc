#include "store/object_file.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "wire/checksum.h"
#include "wire/le_codec.h"

namespace aobj::object_file {
namespace {

constexpr absl::string_view kCorruptPrefix = "corrupt object file ";

}  // namespace

size_t MetadataBlockBytes(const std::map<std::string, std::string>& metadata) {
  size_t n = 4;
  for (const auto& [name, value] : metadata) n += 8 + name.size() + value.size();
  return n;
}

uint32_t HeaderLength(size_t key_len, size_t content_type_len, size_t metadata_block_len) {
  return static_cast<uint32_t>(kFixedHeaderBytes + key_len + content_type_len + kEtagCapacity +
                               metadata_block_len + kHeaderCrcBytes);
}

std::string EncodeHeader(uint32_t header_len, std::string_view key, const ObjectInfo& info) {
  std::string out;
  out.reserve(header_len);
  LeWriter w(&out);
  w.Bytes(std::string_view(kMagic, sizeof(kMagic)));
  w.U32(kFormatVersion);
  w.U32(header_len);
  w.U64(info.size);
  w.U64(static_cast<uint64_t>(info.last_modified_ms));
  w.U32(info.crc32c);
  w.U32(static_cast<uint32_t>(key.size()));
  w.U32(static_cast<uint32_t>(info.content_type.size()));
  w.U32(static_cast<uint32_t>(info.etag.size()));
  w.Bytes(key);
  w.Bytes(info.content_type);
  w.Bytes(info.etag);
  w.U32(static_cast<uint32_t>(info.user_metadata.size()));
  for (const auto& [name, value] : info.user_metadata) {
    w.U32(static_cast<uint32_t>(name.size()));
    w.Bytes(name);
    w.U32(static_cast<uint32_t>(value.size()));
    w.Bytes(value);
  }
  out.resize(header_len - kHeaderCrcBytes, '\0');
  w.U32(Crc32c(0, out.data(), out.size()));
  return out;
}

absl::Status Corrupt(const std::string& path, absl::string_view what) {
  return MakeError(ErrorCode::kStorageError, absl::StrCat(kCorruptPrefix, path, ": ", what));
}

bool IsCorrupt(const absl::Status& status) {
  return ErrorCodeOf(status) == ErrorCode::kStorageError &&
         absl::StartsWith(status.message(), kCorruptPrefix);
}

absl::StatusOr<uint32_t> DecodePreamble(std::string_view bytes, const std::string& path) {
  LeReader r(bytes);
  std::string_view magic;
  uint32_t version = 0;
  uint32_t header_len = 0;
  if (!r.Bytes(sizeof(kMagic), &magic) || !r.U32(&version) || !r.U32(&header_len)) {
    return Corrupt(path, "shorter than the header");
  }
  if (magic != std::string_view(kMagic, sizeof(kMagic))) return Corrupt(path, "bad magic");
  if (version != kFormatVersion && version != kFormatVersionWithoutMetadata) {
    return Corrupt(path, absl::StrCat("unsupported format version ", version));
  }
  if (header_len < kFixedHeaderBytes + kHeaderCrcBytes || header_len > kMaxHeaderBytes) {
    return Corrupt(path, absl::StrCat("header length ", header_len, " out of range"));
  }
  return header_len;
}

absl::StatusOr<Header> DecodeHeader(std::string_view bytes, const std::string& path) {
  absl::StatusOr<uint32_t> header_len = DecodePreamble(bytes, path);
  if (!header_len.ok()) return header_len.status();
  if (bytes.size() != *header_len) return Corrupt(path, "shorter than the header");
  const size_t body = bytes.size() - kHeaderCrcBytes;
  LeReader crc_reader(bytes.substr(body));
  uint32_t stored_crc = 0;
  crc_reader.U32(&stored_crc);
  if (stored_crc != Crc32c(0, bytes.data(), body)) return Corrupt(path, "header checksum mismatch");

  LeReader r(bytes.substr(kPreambleBytes, body - kPreambleBytes));
  Header h;
  h.header_len = *header_len;
  uint64_t last_modified = 0;
  uint32_t key_len = 0, content_type_len = 0, etag_len = 0;
  if (!r.U64(&h.info.size) || !r.U64(&last_modified) || !r.U32(&h.info.crc32c) ||
      !r.U32(&key_len) || !r.U32(&content_type_len) || !r.U32(&etag_len)) {
    return Corrupt(path, "header fields truncated");
  }
  h.info.last_modified_ms = static_cast<int64_t>(last_modified);
  std::string_view key, content_type, etag;
  // Each Bytes() checks its length against what remains, so no sum can overflow.
  if (!r.Bytes(key_len, &key) || !r.Bytes(content_type_len, &content_type) ||
      !r.Bytes(etag_len, &etag)) {
    return Corrupt(path, "header strings overrun the header");
  }
  h.key = std::string(key);
  h.info.content_type = std::string(content_type);
  h.info.etag = std::string(etag);
  uint32_t version = 0;
  LeReader(bytes.substr(sizeof(kMagic))).U32(&version);
  if (version == kFormatVersionWithoutMetadata) return h;
  uint32_t pairs = 0;
  if (!r.U32(&pairs)) return Corrupt(path, "user metadata count truncated");
  if (pairs > kMaxMetadataPairs) {
    return Corrupt(path, absl::StrCat(pairs, " user metadata pairs"));
  }
  for (uint32_t i = 0; i < pairs; ++i) {
    uint32_t name_len = 0, value_len = 0;
    std::string_view name, value;
    if (!r.U32(&name_len) || !r.Bytes(name_len, &name) || !r.U32(&value_len) ||
        !r.Bytes(value_len, &value)) {
      return Corrupt(path, "user metadata overruns the header");
    }
    if (!h.info.user_metadata.emplace(name, value).second) {
      return Corrupt(path, "duplicate user metadata name");
    }
  }
  return h;
}

}  // namespace aobj::object_file
