// Plain value types of multipart upload (spec section 9.15, S3's CreateMultipartUpload,
// UploadPart, CompleteMultipartUpload, AbortMultipartUpload, ListParts, ListMultipartUploads),
// shared by the client API (client.h) and the server's upload manager.
#ifndef AOBJ_MULTIPART_H_
#define AOBJ_MULTIPART_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "aobj/types.h"

namespace aobj {

inline constexpr uint32_t kMaxPartNumber = 10000;    // AOBJ-OBJ-205: part numbers 1..10000
inline constexpr uint32_t kMaxListedParts = 1000;    // AOBJ-OBJ-221
inline constexpr uint32_t kMaxListedUploads = 1000;  // AOBJ-OBJ-224
inline constexpr uint64_t kDefaultMinPartSize = uint64_t{5} << 20;  // AOBJ-OBJ-213 (S3: 5 MiB)
inline constexpr uint64_t kDefaultMaxPartSize = uint64_t{5} << 30;  // AOBJ-OBJ-209 (S3: 5 GiB)

// One upload in progress.
struct UploadInfo {
  std::string bucket;
  std::string key;
  std::string upload_id;                             // opaque to clients (AOBJ-OBJ-202)
  std::string content_type;                          // of the object Complete will create
  std::map<std::string, std::string> user_metadata;  // likewise (S3 x-amz-meta-*)
  int64_t initiated_ms = 0;                          // Unix epoch milliseconds
  // Server side only (not on the wire): the access key id that began the upload (S3's
  // Initiator), whose per-principal limit it counts against (AOBJ-OBJ-233); may be empty.
  std::string initiator;
};

// One uploaded part.
struct PartInfo {
  uint32_t part_number = 0;
  uint64_t size = 0;
  std::string etag;  // quoted lower-case hex MD5 of the part (AOBJ-OBJ-207)
  int64_t last_modified_ms = 0;
  uint32_t crc32c = 0;  // of the part
};

// One entry of CompleteMultipartUpload's part list.
struct CompletedPart {
  uint32_t part_number = 0;
  std::string etag;  // as UploadPart returned it; surrounding quotes optional
};

// A page of ListParts.
struct PartsPage {
  UploadInfo upload;            // bucket, key, upload_id, content_type, initiated_ms
  std::vector<PartInfo> parts;  // ascending part numbers
  bool truncated = false;
  uint32_t next_part_number_marker = 0;  // pass as the marker for the next page
};

// A page of ListMultipartUploads.
struct UploadsPage {
  std::vector<UploadInfo> uploads;  // by key, then by initiation (content_type not filled)
  bool truncated = false;
  std::string next_key_marker;  // pass both as the markers for the next page
  std::string next_upload_id_marker;
};

struct ListUploadsOptions {
  std::string prefix;
  std::string key_marker;        // uploads of keys above it, or of it after upload_id_marker
  std::string upload_id_marker;  // used only with key_marker
  uint32_t max_uploads = 0;      // 0: 1000 (the maximum)
};

// What UploadPart moved.
struct UploadPartResult {
  std::string etag;  // put this in the CompletedPart
  // The part's CRC32C, computed by this client over what it sent: combined over the parts (in
  // order, e.g. with crc32c_combine), it is the full-object checksum CompleteMultipartUpload
  // takes (spec AOBJ-OBJ-260).
  uint32_t crc32c = 0;
  uint64_t bytes_transferred = 0;
  TransferPath path = TransferPath::kUnspecified;
};

// Client::UploadMultipart's settings.
struct MultipartUploadOptions {
  // Parts in flight at once; 0 = the session's max_in_flight (at most 16).
  uint32_t parallelism = 0;
  // Called after each part is stored with the bytes stored so far, from any thread (one call at a
  // time).
  std::function<void(uint64_t bytes_done, uint64_t bytes_total)> progress;
};

}  // namespace aobj

#endif  // AOBJ_MULTIPART_H_
