// Peer-supplied octets made safe for a log line or an error message: printable ASCII is kept,
// every other octet becomes \xNN. The result is ASCII, hence valid UTF-8 for a proto3 string
// field (an aobj.v1.Error message a peer must be able to parse). Pure; thread-safe.
#ifndef AOBJ_WIRE_PRINTABLE_H_
#define AOBJ_WIRE_PRINTABLE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace aobj {

std::string PrintableAscii(absl::string_view s);

}  // namespace aobj

#endif  // AOBJ_WIRE_PRINTABLE_H_
