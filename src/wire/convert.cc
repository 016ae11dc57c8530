#include "wire/convert.h"

#include "wire/user_metadata.h"

namespace aobj {

std::string BigEndian32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>(v >> (24 - 8 * i));
  return s;
}

uint32_t FromBigEndian32(absl::string_view be) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4 && i < be.size(); ++i) {
    v = (v << 8) | static_cast<uint8_t>(be[i]);
  }
  return v;
}

namespace {

// A recorded CRC32C on the wire (ObjectMetadata, PartEntry): the algorithm CRC32C and the value's
// 4 big-endian octets (AOBJ-DAT-021).
template <class Message>
void SetRecordedCrc32c(uint32_t crc, Message* out) {
  out->set_checksum_algorithm(aobj::v1::CHECKSUM_ALGORITHM_CRC32C);
  out->set_checksum(BigEndian32(crc));
}

// And back: 0 unless the message carries a 4-octet CRC32C.
template <class Message>
uint32_t RecordedCrc32c(const Message& m) {
  if (m.checksum_algorithm() != aobj::v1::CHECKSUM_ALGORITHM_CRC32C || m.checksum().size() != 4) {
    return 0;
  }
  return FromBigEndian32(m.checksum());
}

}  // namespace

void ObjectInfoToProto(const ObjectInfo& info, aobj::v1::ObjectMetadata* out) {
  out->set_size(info.size);
  out->set_etag(info.etag);
  out->set_last_modified_ms(info.last_modified_ms);
  out->set_content_type(info.content_type);
  SetRecordedCrc32c(info.crc32c, out);
  UserMetadataToProto(info.user_metadata, out->mutable_user_metadata());  // AOBJ-OBJ-122
}

ObjectInfo ObjectInfoFromProto(const aobj::v1::ObjectMetadata& m) {
  ObjectInfo info;
  info.size = m.size();
  info.etag = m.etag();
  info.last_modified_ms = m.last_modified_ms();
  info.content_type = m.content_type();
  info.user_metadata.insert(m.user_metadata().begin(), m.user_metadata().end());
  info.crc32c = RecordedCrc32c(m);
  return info;
}

void ObjectEntryToProto(const ObjectSummary& o, aobj::v1::ObjectEntry* out) {
  out->set_key(o.key);
  out->set_size(o.size);
  out->set_etag(o.etag);
  out->set_last_modified_ms(o.last_modified_ms);
}

ObjectSummary ObjectEntryFromProto(const aobj::v1::ObjectEntry& e) {
  return ObjectSummary{e.key(), e.size(), e.etag(), e.last_modified_ms()};
}

void PartEntryToProto(const PartInfo& p, aobj::v1::PartEntry* out) {
  out->set_part_number(p.part_number);
  out->set_size(p.size);
  out->set_etag(p.etag);
  out->set_last_modified_ms(p.last_modified_ms);
  SetRecordedCrc32c(p.crc32c, out);  // AOBJ-OBJ-222
}

PartInfo PartEntryFromProto(const aobj::v1::PartEntry& e) {
  PartInfo p;
  p.part_number = e.part_number();
  p.size = e.size();
  p.etag = e.etag();
  p.last_modified_ms = e.last_modified_ms();
  p.crc32c = RecordedCrc32c(e);
  return p;
}

void UploadEntryToProto(const UploadInfo& u, aobj::v1::UploadEntry* out) {
  out->set_key(u.key);
  out->set_upload_id(u.upload_id);
  out->set_initiated_ms(u.initiated_ms);
}

UploadInfo UploadEntryFromProto(const aobj::v1::UploadEntry& e, const std::string& bucket) {
  UploadInfo u;
  u.bucket = bucket;
  u.key = e.key();
  u.upload_id = e.upload_id();
  u.initiated_ms = e.initiated_ms();
  return u;
}

namespace {

template <class L>
void WriteNegotiated(const L& in, aobj::v1::Limits* out) {
  out->set_max_transfer_bytes(in.max_transfer_bytes);
  out->set_max_in_flight(in.max_in_flight);
  out->set_inline_threshold(in.inline_threshold);
  out->set_max_descriptors(in.max_descriptors);
  out->set_max_rkey_bytes(in.max_rkey_bytes);
}

template <class L>
L ReadNegotiated(const aobj::v1::Limits& m) {
  L out;
  out.max_transfer_bytes = m.max_transfer_bytes();
  out.max_in_flight = m.max_in_flight();
  out.inline_threshold = m.inline_threshold();
  out.max_descriptors = m.max_descriptors();
  out.max_rkey_bytes = m.max_rkey_bytes();
  return out;
}

}  // namespace

void LimitsToProto(const Limits& in, aobj::v1::Limits* out) { WriteNegotiated(in, out); }
void LimitsToProto(const SessionLimits& in, aobj::v1::Limits* out) { WriteNegotiated(in, out); }

SessionLimits RequestedLimitsFromProto(const aobj::v1::Limits& m) {
  return ReadNegotiated<SessionLimits>(m);
}

Limits AnnouncedLimitsFromProto(const aobj::v1::Limits& m) {
  Limits out = ReadNegotiated<Limits>(m);
  out.min_part_size = m.min_part_size();  // AOBJ-OBJ-235
  out.max_key_bytes = m.max_key_bytes();  // AOBJ-OBJ-255
  out.max_list_page = m.max_list_page();
  out.max_part_size = m.max_part_size();  // AOBJ-OBJ-256
  out.max_object_size = m.max_object_size();
  out.durable_commits = m.durable_commits();  // AOBJ-OBJ-263
  return out;
}

}  // namespace aobj
