// AOBJ_PEER_INPUT: ranges from the wire and from users (fuzz/range_fuzzer.cc).
#include "wire/range.h"

#include <algorithm>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "aobj/status.h"

namespace aobj {
namespace {

absl::Status Malformed(absl::string_view why) {
  return MakeError(ErrorCode::kInvalidArgument, absl::StrCat("malformed byte range: ", why));
}

// RFC 9110 OWS: spaces and horizontal tabs.
absl::string_view TrimBlanks(absl::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// 1*DIGIT into a uint64_t; false on an empty string, a non-digit or overflow.
bool ParseDecimal(absl::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

}  // namespace

absl::StatusOr<RangeSpec> ParseHttpRange(absl::string_view text) {
  if (text.size() > kMaxRangeTextBytes) {
    return Malformed(absl::StrCat("longer than ", kMaxRangeTextBytes, " characters"));
  }
  text = TrimBlanks(text);
  constexpr absl::string_view kUnit = "bytes=";
  if (text.size() < kUnit.size() || !absl::EqualsIgnoreCase(text.substr(0, kUnit.size()), kUnit)) {
    return Malformed("expected \"bytes=\"");
  }
  absl::string_view spec = text.substr(kUnit.size());
  if (spec.find(',') != absl::string_view::npos) {
    return Malformed("several ranges in one request are not supported");
  }
  const size_t dash = spec.find('-');
  if (dash == absl::string_view::npos) return Malformed("expected '-'");
  const absl::string_view left = spec.substr(0, dash);
  const absl::string_view right = spec.substr(dash + 1);
  RangeSpec range;
  if (left.empty()) {
    range.kind = RangeSpec::Kind::kSuffix;
    if (!ParseDecimal(right, &range.suffix_length)) {
      return Malformed("the suffix length must be decimal digits below 2^64");
    }
    return range;
  }
  if (!ParseDecimal(left, &range.first)) {
    return Malformed("the first position must be decimal digits below 2^64");
  }
  if (right.empty()) {
    range.kind = RangeSpec::Kind::kFrom;
    return range;
  }
  range.kind = RangeSpec::Kind::kFirstLast;
  if (!ParseDecimal(right, &range.last)) {
    return Malformed("the last position must be decimal digits below 2^64");
  }
  if (range.first > range.last) {
    return Malformed(
        absl::StrCat("first position ", range.first, " is after last position ", range.last));
  }
  return range;
}

std::string FormatHttpRange(const RangeSpec& range) {
  switch (range.kind) {
    case RangeSpec::Kind::kFirstLast:
      return absl::StrCat("bytes=", range.first, "-", range.last);
    case RangeSpec::Kind::kFrom:
      return absl::StrCat("bytes=", range.first, "-");
    case RangeSpec::Kind::kSuffix:
      return absl::StrCat("bytes=-", range.suffix_length);
  }
  return "bytes=?";
}

absl::StatusOr<RangeSpec> RangeFromProto(const aobj::v1::ByteRange& in) {
  // AOBJ-DAT-100: exactly one well-formed range; fields the kind does not use must be zero.
  RangeSpec range;
  switch (in.kind()) {
    case aobj::v1::ByteRange::KIND_FIRST_LAST:
      range.kind = RangeSpec::Kind::kFirstLast;
      if (in.suffix_length() != 0) return Malformed("suffix_length set in a FIRST_LAST range");
      if (in.first() > in.last()) {
        return Malformed(absl::StrCat("first ", in.first(), " is after last ", in.last()));
      }
      range.first = in.first();
      range.last = in.last();
      return range;
    case aobj::v1::ByteRange::KIND_FROM:
      range.kind = RangeSpec::Kind::kFrom;
      if (in.last() != 0 || in.suffix_length() != 0) {
        return Malformed("last or suffix_length set in a FROM range");
      }
      range.first = in.first();
      return range;
    case aobj::v1::ByteRange::KIND_SUFFIX:
      range.kind = RangeSpec::Kind::kSuffix;
      if (in.first() != 0 || in.last() != 0) {
        return Malformed("first or last set in a SUFFIX range");
      }
      range.suffix_length = in.suffix_length();
      return range;
    default:
      return Malformed(
          absl::StrCat("range kind ", static_cast<int>(in.kind()), " is unspecified or unknown"));
  }
}

void RangeToProto(const RangeSpec& range, aobj::v1::ByteRange* out) {
  out->Clear();
  switch (range.kind) {
    case RangeSpec::Kind::kFirstLast:
      out->set_kind(aobj::v1::ByteRange::KIND_FIRST_LAST);
      out->set_first(range.first);
      out->set_last(range.last);
      break;
    case RangeSpec::Kind::kFrom:
      out->set_kind(aobj::v1::ByteRange::KIND_FROM);
      out->set_first(range.first);
      break;
    case RangeSpec::Kind::kSuffix:
      out->set_kind(aobj::v1::ByteRange::KIND_SUFFIX);
      out->set_suffix_length(range.suffix_length);
      break;
  }
}

absl::StatusOr<ResolvedRange> ResolveRange(const RangeSpec& range, uint64_t size) {
  auto unsatisfiable = [&]() {
    return MakeError(ErrorCode::kInvalidRange, absl::StrCat("range ", FormatHttpRange(range),
                                                            " is not satisfiable for an "
                                                            "object of ",
                                                            size, " bytes"));
  };
  // AOBJ-DAT-102: no range selects anything of an empty object.
  if (size == 0) return unsatisfiable();
  ResolvedRange out;
  switch (range.kind) {
    case RangeSpec::Kind::kFirstLast:
    case RangeSpec::Kind::kFrom: {
      if (range.first >= size) return unsatisfiable();
      // AOBJ-DAT-101: a last position past the end means "to the end". size >= 1, so
      // size - 1 cannot wrap, and last - first + 1 <= size.
      const uint64_t last = range.kind == RangeSpec::Kind::kFrom
                                ? size - 1
                                : std::min<uint64_t>(range.last, size - 1);
      out.first = range.first;
      out.length = last - range.first + 1;
      return out;
    }
    case RangeSpec::Kind::kSuffix:
      if (range.suffix_length == 0) return unsatisfiable();
      out.length = std::min<uint64_t>(range.suffix_length, size);
      out.first = size - out.length;
      return out;
  }
  return unsatisfiable();
}

}  // namespace aobj
