// Golden images of RadosStore's records (src/store_rados/rados_format.h), written field by field
// from the format's description, not by its encoder: tests/store/rados_format_test.cc checks that
// each decodes to the record it names and that the record encodes to exactly these octets, and
// the fuzz target rados_record seeds from them (fuzz/make_seeds.cc writes corpus/rados_record/
// golden-*, each after its selector octet). A change to the format changes these first.
#ifndef AOBJ_TESTS_GOLDEN_RADOS_RECORDS_H_
#define AOBJ_TESTS_GOLDEN_RADOS_RECORDS_H_

#include <string>

namespace aobj::golden {

// BucketRecord{1764000000000, incarnation 00..0f, owner "AKOWNER"}: 36 octets.
inline const std::string kGoldenBucket(
    // format 1
    "\x01"
    // creation_time_ms 1764000000000
    "\x00\xe8\x97\xb6\x9a\x01\x00\x00"
    // incarnation 00 01 .. 0f
    "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
    // owner: length 7, "AKOWNER"
    "\x07\x00\x00\x00\x41\x4b\x4f\x57\x4e\x45\x52",
    36);

// HeadRecord: two segments, 102345 octets, user metadata a=1, b=two: 161 octets.
inline const std::string kGoldenHead(
    // format 1
    "\x01"
    // 2 segments
    "\x02\x00\x00\x00"
    // segment 0 uuid 10 11 .. 1f
    "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
    // segment 0 size 100000
    "\xa0\x86\x01\x00\x00\x00\x00\x00"
    // segment 0 stripe_bytes 4 MiB
    "\x00\x00\x40\x00"
    // segment 1 uuid 20 21 .. 2f
    "\x20\x21\x22\x23\x24\x25\x26\x27\x28\x29\x2a\x2b\x2c\x2d\x2e\x2f"
    // segment 1 size 2345
    "\x29\x09\x00\x00\x00\x00\x00\x00"
    // segment 1 stripe_bytes 64 KiB
    "\x00\x00\x01\x00"
    // size 102345
    "\xc9\x8f\x01\x00\x00\x00\x00\x00"
    // last_modified_ms 1764000000123
    "\x7b\xe8\x97\xb6\x9a\x01\x00\x00"
    // crc32c DEADBEEF
    "\xef\xbe\xad\xde"
    // etag: length 36, the multipart ETag
    "\x24\x00\x00\x00\x22\x30\x31\x32\x33\x34\x35\x36\x37\x38\x39\x61\x62\x63\x64\x65\x66\x30\x31"
    "\x32\x33\x34\x35\x36\x37\x38\x39\x61\x62\x63\x64\x65\x66\x2d\x32\x22"
    // content_type: length 10
    "\x0a\x00\x00\x00\x74\x65\x78\x74\x2f\x70\x6c\x61\x69\x6e"
    // 2 metadata pairs, names ascending
    "\x02\x00\x00\x00"
    // "a" = "1"
    "\x01\x00\x00\x00\x61\x01\x00\x00\x00\x31"
    // "b" = "two"
    "\x01\x00\x00\x00\x62\x03\x00\x00\x00\x74\x77\x6f",
    161);

// GcIntent{kReplaced, 1764000000456, uuid 30..3f, incarnation 00..0f, 70000 in 64 KiB stripes, key
// "photos/cat.jpg"}: 80 octets.
inline const std::string kGoldenGcIntent(
    // format 1
    "\x01"
    // kind 2: kReplaced
    "\x02"
    // time_ms 1764000000456
    "\xc8\xe9\x97\xb6\x9a\x01\x00\x00"
    // uuid 30 31 .. 3f
    "\x30\x31\x32\x33\x34\x35\x36\x37\x38\x39\x3a\x3b\x3c\x3d\x3e\x3f"
    // incarnation 00 01 .. 0f
    "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
    // size 70000
    "\x70\x11\x01\x00\x00\x00\x00\x00"
    // stripe_bytes 64 KiB
    "\x00\x00\x01\x00"
    // encoded_key: length 14
    "\x0e\x00\x00\x00\x70\x68\x6f\x74\x6f\x73\x2f\x63\x61\x74\x2e\x6a\x70\x67"
    // upload_id: empty
    "\x00\x00\x00\x00"
    // part_number 0
    "\x00\x00\x00\x00",
    80);

// UploadRecord of upload 0123..cdef, key "big/object", origin=golden: 122 octets.
inline const std::string kGoldenUpload(
    // format 1
    "\x01"
    // upload_id: length 32
    "\x20\x00\x00\x00\x30\x31\x32\x33\x34\x35\x36\x37\x38\x39\x61\x62\x63\x64\x65\x66\x30\x31\x32"
    "\x33\x34\x35\x36\x37\x38\x39\x61\x62\x63\x64\x65\x66"
    // key: length 10
    "\x0a\x00\x00\x00\x62\x69\x67\x2f\x6f\x62\x6a\x65\x63\x74"
    // initiated_ms 1764000000789
    "\x15\xeb\x97\xb6\x9a\x01\x00\x00"
    // initiator: length 7
    "\x07\x00\x00\x00\x41\x4b\x4f\x57\x4e\x45\x52"
    // content_type: length 24
    "\x18\x00\x00\x00\x61\x70\x70\x6c\x69\x63\x61\x74\x69\x6f\x6e\x2f\x6f\x63\x74\x65\x74\x2d\x73"
    "\x74\x72\x65\x61\x6d"
    // 1 metadata pair
    "\x01\x00\x00\x00"
    // "origin" = "golden"
    "\x06\x00\x00\x00\x6f\x72\x69\x67\x69\x6e\x06\x00\x00\x00\x67\x6f\x6c\x64\x65\x6e",
    122);

// PartRecord of part 3: 5 MiB in 4 MiB stripes under uuid 40..4f: 83 octets.
inline const std::string kGoldenPart(
    // format 1
    "\x01"
    // part_number 3
    "\x03\x00\x00\x00"
    // segment uuid 40 41 .. 4f
    "\x40\x41\x42\x43\x44\x45\x46\x47\x48\x49\x4a\x4b\x4c\x4d\x4e\x4f"
    // segment size 5 MiB
    "\x00\x00\x50\x00\x00\x00\x00\x00"
    // segment stripe_bytes 4 MiB
    "\x00\x00\x40\x00"
    // etag: length 34, the part's MD5
    "\x22\x00\x00\x00\x22\x30\x30\x31\x31\x32\x32\x33\x33\x34\x34\x35\x35\x36\x36\x37\x37\x38\x38"
    "\x39\x39\x61\x61\x62\x62\x63\x63\x64\x64\x65\x65\x66\x66\x22"
    // crc32c 01020304
    "\x04\x03\x02\x01"
    // last_modified_ms 1764000001000
    "\xe8\xeb\x97\xb6\x9a\x01\x00\x00",
    83);

// UploadStateRecord{kClosing, since 1764000002000, nonce 01..08}: 22 octets.
inline const std::string kGoldenUploadState(
    // format 1
    "\x01"
    // state 2: kClosing
    "\x02"
    // since_ms 1764000002000
    "\xd0\xef\x97\xb6\x9a\x01\x00\x00"
    // nonce: length 8, 01 .. 08
    "\x08\x00\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08",
    22);

// EncodeKey of "a\0b\x01c": 0x00 -> 01 02, 0x01 -> 01 03: 7 octets.
inline const std::string kGoldenKey(
    // a, 01 02 (NUL), b, 01 03 (0x01), c
    "\x61\x01\x02\x62\x01\x03\x63", 7);

// Which record each image is, as the fuzz target selects it (its first octet, rados_record).
struct GoldenRadosRecord {
  const char* name;
  char selector;
  const std::string* image;
};
inline const GoldenRadosRecord kGoldenRadosRecords[] = {
    {"bucket", 1, &kGoldenBucket}, {"head", 0, &kGoldenHead}, {"gc", 2, &kGoldenGcIntent},
    {"upload", 3, &kGoldenUpload}, {"part", 4, &kGoldenPart}, {"state", 5, &kGoldenUploadState},
    {"key", 6, &kGoldenKey},
};

}  // namespace aobj::golden

#endif  // AOBJ_TESTS_GOLDEN_RADOS_RECORDS_H_
