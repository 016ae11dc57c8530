// Byte ranges of GetObject (spec section 9.9, AOBJ-DAT-100..106): the structured form that
// travels in aobj.v1.ByteRange, the S3/HTTP text form "bytes=..." that tools accept from users,
// and resolution of a range against an object's size.
//
// ParseHttpRange() reads text typed by users or copied from S3 tooling and is written for hostile
// input: bounded length, digits only, no 64-bit overflow. Pure functions; thread-safe.
#ifndef AOBJ_WIRE_RANGE_H_
#define AOBJ_WIRE_RANGE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "aobj/v1/aobj.pb.h"

namespace aobj {

// One byte range in one of the three forms of RFC 9110 section 14.1.2.
struct RangeSpec {
  enum class Kind {
    kFirstLast,  // bytes=first-last (both inclusive)
    kFrom,       // bytes=first-
    kSuffix,     // bytes=-suffix_length
  };
  Kind kind = Kind::kFrom;
  uint64_t first = 0;          // kFirstLast, kFrom
  uint64_t last = 0;           // kFirstLast
  uint64_t suffix_length = 0;  // kSuffix
};

// The longest text ParseHttpRange() looks at: "bytes=" and two 20-digit numbers, with room for
// leading zeros and surrounding blanks.
inline constexpr size_t kMaxRangeTextBytes = 128;

// Parses exactly one range: "bytes=first-last", "bytes=first-" or "bytes=-suffix". The unit is
// case-insensitive and blanks around the whole text are ignored (RFC 9110 OWS); numbers are
// decimal digits only. INVALID_ARGUMENT for anything else: another unit, several ranges (S3
// serves one range per request), a sign, a number past 2^64 - 1, first > last, or text longer
// than kMaxRangeTextBytes. "bytes=-0" parses (it is unsatisfiable, not malformed).
absl::StatusOr<RangeSpec> ParseHttpRange(absl::string_view text);

// The text form of `range`, e.g. "bytes=0-99".
std::string FormatHttpRange(const RangeSpec& range);

// The structured form of a request (AOBJ-DAT-100): INVALID_ARGUMENT for kind UNSPECIFIED or a
// kind this build does not know, first > last, or a field set that the kind does not use.
absl::StatusOr<RangeSpec> RangeFromProto(const aobj::v1::ByteRange& range);
void RangeToProto(const RangeSpec& range, aobj::v1::ByteRange* out);

// The octets a range selects from an object: [first, first + length), length >= 1.
struct ResolvedRange {
  uint64_t first = 0;
  uint64_t length = 0;
  uint64_t last() const { return first + length - 1; }
};

// Resolves `range` against an object of `size` octets (AOBJ-DAT-101, AOBJ-DAT-102): a last
// position past the end is clamped to the end, a suffix longer than the object selects all of
// it; INVALID_RANGE when nothing is selected (first at or past the end, suffix length 0, or any
// range of an empty object).
absl::StatusOr<ResolvedRange> ResolveRange(const RangeSpec& range, uint64_t size);

}  // namespace aobj

#endif  // AOBJ_WIRE_RANGE_H_
