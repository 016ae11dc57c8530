// JSON string literals for the reports the tools write (conformance, aobj-bench): the text
// quoted, with '"', '\' and every control character escaped, and bytes that are not UTF-8 (a
// hostile server's message, a key) replaced by U+FFFD, so that a report is always valid JSON.
//
// Why the reports are not printed by protobuf's JSON printer (google.protobuf.Struct, as the
// CLI's --json and the server's /sessions are): a Struct sorts its keys, where a report keeps the
// order a reader follows (the run, its summary, then each case), and protobuf refuses to print a
// string that is not UTF-8, which a server under test may send; nlohmann-json (Debian) throws on
// such strings by default too. What the writers need from a library is this one function.
#ifndef AOBJ_WIRE_JSON_H_
#define AOBJ_WIRE_JSON_H_

#include <string>

#include "absl/strings/string_view.h"

namespace aobj {

// "\"text\"", escaped as above.
std::string JsonQuote(absl::string_view text);

}  // namespace aobj

#endif  // AOBJ_WIRE_JSON_H_
