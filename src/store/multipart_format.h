// The on-disk records of FileStore's multipart upload area (store/multipart_area.cc): the
// MANIFEST of an upload and the header of a part file, with their encoders and decoders, so that
// the writer, the reader and the golden test (tests/store/multipart_format_test.cc) follow the
// one description here. All integers little-endian, encoded field by field (wire/le_codec.h).
//
// MANIFEST:
//   offset  size  field
//        0     8  magic "AOBJMPU1"
//        8     4  format version (2; 1 is still read)
//       12     8  initiated_ms (int64, two's complement)
//       20     4  bucket_len
//       24     4  key_len
//       28     4  content_type_len
//       32     4  upload_id_len
//       36     .  bucket, key, content_type, upload_id bytes
//        .     4  metadata_count: user metadata pairs, then per pair
//                   4 name_len, name bytes, 4 value_len, value bytes
//        .     .  format 2 only: 4 initiator_len, initiator bytes (the access key id that began
//                 the upload, AOBJ-OBJ-233); a format-1 manifest has none (initiator "")
//      end-4   4  CRC32C of every preceding byte
//
// Part file: a 64-byte header, then the part's bytes.
//   offset  size  field
//        0     8  magic "AOBJPRT1"
//        8     4  format version (1)
//       12     4  part_number
//       16     8  size (uint64: parts and offsets are 64-bit everywhere, AOBJ-OBJ-230)
//       24     8  last_modified_ms (int64)
//       32     4  CRC32C of the part's bytes
//       36    16  MD5 of the part's bytes (the ETag, binary)
//       52     8  zero
//       60     4  CRC32C of header bytes [0, 60)
//   The file size must be 64 + size.
//
// Decoders treat the octets as untrusted (a damaged file) and fail with STORAGE_ERROR.
// Pure functions; thread-safe.
#ifndef AOBJ_STORE_MULTIPART_FORMAT_H_
#define AOBJ_STORE_MULTIPART_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "aobj/multipart.h"

namespace aobj::multipart_format {

inline constexpr size_t kPartHeaderBytes = 64;
inline constexpr size_t kMaxManifestBytes = 64 * 1024;

std::string EncodeManifest(const UploadInfo& u);
// `path` names the file in the error.
absl::StatusOr<UploadInfo> DecodeManifest(absl::string_view in, const std::string& path);

// `md5`: the part's 16-octet MD5.
std::string EncodePartHeader(const PartInfo& info, absl::string_view md5);
absl::StatusOr<PartInfo> DecodePartHeader(absl::string_view in);

}  // namespace aobj::multipart_format

#endif  // AOBJ_STORE_MULTIPART_FORMAT_H_
