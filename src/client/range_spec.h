// The public ByteRange (aobj/client.h) as the wire layer's RangeSpec (wire/range.h), for the
// client library and the tools built on it.
#ifndef AOBJ_CLIENT_RANGE_SPEC_H_
#define AOBJ_CLIENT_RANGE_SPEC_H_

#include "aobj/client.h"
#include "wire/range.h"

namespace aobj {

inline RangeSpec ToSpec(const ByteRange& r) {
  RangeSpec spec;
  spec.kind = r.kind == ByteRange::Kind::kFirstLast ? RangeSpec::Kind::kFirstLast
              : r.kind == ByteRange::Kind::kFrom    ? RangeSpec::Kind::kFrom
                                                    : RangeSpec::Kind::kSuffix;
  spec.first = r.first;
  spec.last = r.last;
  spec.suffix_length = r.suffix_length;
  return spec;
}

}  // namespace aobj

#endif  // AOBJ_CLIENT_RANGE_SPEC_H_
