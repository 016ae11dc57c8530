// The on-disk format of one FileStore object file (src/store/file_store.cc): constants, encoder
// and decoder, shared by the writer and the reader so that both follow the one description here.
//
// An object file is a header followed by the content. Header, all integers little-endian,
// encoded and decoded field by field (never a struct cast):
//
//   offset  size  field
//        0     8  magic "AOBJOBJ1"
//        8     4  format version: 2 (kFormatVersion); version 1 files are still read
//       12     4  header_len: offset of the first content byte
//       16     8  content size
//       24     8  last_modified_ms (int64, two's complement)
//       32     4  CRC32C of the content (recorded, supplied by the caller)
//       36     4  key_len
//       40     4  content_type_len
//       44     4  etag_len
//       48     .  key, content_type, etag bytes
//                 version 2 only: user metadata, u32 pair count, then per pair u32 name_len,
//                 name, u32 value_len, value (names ascending; at most kMaxMetadataPairs)
//                 then zero padding
//  hl - 4      4  CRC32C of header bytes [0, header_len - 4)
//
// header_len is fixed at BeginPut (the etag, known only at Commit, gets kEtagCapacity bytes), so
// content goes straight to its final offset and the header is written last, at Commit. The file
// size must equal header_len + content size; anything else reads as a truncated/corrupt object.
// Version 1 (before user metadata) is version 2 without the metadata block.
//
// Decoding treats the file as untrusted: every length is checked against what is there before it
// is used, and the header carries its own CRC32C. Pure functions; thread-safe.
#ifndef AOBJ_STORE_OBJECT_FILE_H_
#define AOBJ_STORE_OBJECT_FILE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "aobj/store.h"

namespace aobj::object_file {

inline constexpr char kMagic[8] = {'A', 'O', 'B', 'J', 'O', 'B', 'J', '1'};
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr uint32_t kFormatVersionWithoutMetadata = 1;
inline constexpr size_t kFixedHeaderBytes = 48;  // through etag_len
inline constexpr size_t kHeaderCrcBytes = 4;
inline constexpr size_t kPreambleBytes =
    16;  // magic, version, header_len: enough to size the header
inline constexpr size_t kEtagCapacity = 256;
// Bounds what a (possibly corrupt) header can make us allocate, and what a writer may record.
inline constexpr size_t kMaxKeyBytes = 16 * 1024;
inline constexpr size_t kMaxContentTypeBytes = 16 * 1024;
// User metadata: the server allows 2 KiB of names and values (AOBJ-OBJ-121); the store allows
// more, and every pair costs 8 bytes of lengths.
inline constexpr size_t kMaxMetadataBytes = 4 * 1024;
inline constexpr size_t kMaxMetadataPairs = 1024;
inline constexpr size_t kMaxMetadataBlockBytes = 4 + kMaxMetadataPairs * 8 + kMaxMetadataBytes;
inline constexpr uint32_t kMaxHeaderBytes = 64 * 1024;
static_assert(kFixedHeaderBytes + kMaxKeyBytes + kMaxContentTypeBytes + kEtagCapacity +
                  kMaxMetadataBlockBytes + kHeaderCrcBytes <=
              kMaxHeaderBytes);

// A decoded header.
struct Header {
  uint32_t header_len = 0;
  std::string key;
  ObjectInfo info;  // size, etag, last_modified_ms, content_type, crc32c, user_metadata
};

// Octets of the version-2 metadata block for `metadata`.
size_t MetadataBlockBytes(const std::map<std::string, std::string>& metadata);

// header_len for a key, content type and metadata block of these sizes. Precondition: the sizes
// were checked against their limits.
uint32_t HeaderLength(size_t key_len, size_t content_type_len, size_t metadata_block_len);

// The header_len octets of a version-2 header. Precondition: the fields fit header_len (the
// writer sized it at BeginPut and checks the etag against kEtagCapacity).
std::string EncodeHeader(uint32_t header_len, std::string_view key, const ObjectInfo& info);

// Reads magic, version and header_len from the first octets of a file; returns header_len.
absl::StatusOr<uint32_t> DecodePreamble(std::string_view bytes, const std::string& path);

// `bytes` is exactly the header_len octets announced by the preamble.
absl::StatusOr<Header> DecodeHeader(std::string_view bytes, const std::string& path);

// STORAGE_ERROR for a damaged file, and the test for one (as opposed to failing I/O).
absl::Status Corrupt(const std::string& path, absl::string_view what);
bool IsCorrupt(const absl::Status& status);

}  // namespace aobj::object_file

#endif  // AOBJ_STORE_OBJECT_FILE_H_
