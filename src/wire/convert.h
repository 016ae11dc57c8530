// The one place where public types and the messages of proto/ are converted, for the fields both
// sides read (STYLE.md: "convert in one place"): object metadata, session limits and the entries
// of listings. The server
// writes what the client reads with the same function pair, so a field added to one side and
// not the other fails the round-trip test (tests/wire/convert_test.cc) rather than in the field.
//
// Pure; thread-safe.
#ifndef AOBJ_WIRE_CONVERT_H_
#define AOBJ_WIRE_CONVERT_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "aobj/multipart.h"
#include "aobj/store.h"
#include "aobj/types.h"
#include "aobj/v1/aobj.pb.h"
#include "wire/protocol.h"

namespace aobj {

// The 4 big-endian octets of a CRC32C value (AOBJ-DAT-021), and back (`be` holds 4 octets).
std::string BigEndian32(uint32_t v);
uint32_t FromBigEndian32(absl::string_view be);

// ObjectMetadata (spec 9.x, AOBJ-OBJ-009): size, ETag, time, content type, user metadata and the
// CRC32C recorded at commit (4 octets, big endian).
void ObjectInfoToProto(const ObjectInfo& info, aobj::v1::ObjectMetadata* out);
// What ObjectInfoToProto wrote. A checksum that is not a 4-octet CRC32C leaves crc32c 0.
ObjectInfo ObjectInfoFromProto(const aobj::v1::ObjectMetadata& m);

// The entries of listings: ListObjectsV2's objects (AOBJ-OBJ-101), ListParts' parts with their
// CRC32C (AOBJ-OBJ-222; a checksum that is not a 4-octet CRC32C reads as crc32c 0) and
// ListMultipartUploads' uploads (AOBJ-OBJ-224; the bucket, not on the wire, is the caller's).
void ObjectEntryToProto(const ObjectSummary& o, aobj::v1::ObjectEntry* out);
ObjectSummary ObjectEntryFromProto(const aobj::v1::ObjectEntry& e);
void PartEntryToProto(const PartInfo& p, aobj::v1::PartEntry* out);
PartInfo PartEntryFromProto(const aobj::v1::PartEntry& e);
void UploadEntryToProto(const UploadInfo& u, aobj::v1::UploadEntry* out);
UploadInfo UploadEntryFromProto(const aobj::v1::UploadEntry& e, const std::string& bucket);

// The five negotiated limits (AOBJ-SES-006), in a request (from the client's Limits) or a reply
// (from the server's effective SessionLimits). The fields only a server announces
// (data_wait_ms, skew_window_ms and the size and length bounds) are the caller's to set.
void LimitsToProto(const Limits& in, aobj::v1::Limits* out);
void LimitsToProto(const SessionLimits& in, aobj::v1::Limits* out);
// The five negotiated limits a client requested (the server's side).
SessionLimits RequestedLimitsFromProto(const aobj::v1::Limits& m);
// The limits a server announced (the client's side), the size and length bounds included.
Limits AnnouncedLimitsFromProto(const aobj::v1::Limits& m);

}  // namespace aobj

#endif  // AOBJ_WIRE_CONVERT_H_
