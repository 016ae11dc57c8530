// Golden images of the fast-path frames (spec section 8.9, src/wire/fast_frame.h), written field
// by field from the spec's layout: tests/wire/fast_frame_test.cc holds the encoder and parser to
// them, and the fuzz target fast_frame seeds from them (fuzz/make_seeds.cc writes
// corpus/fast_frame/golden-*).
#ifndef AOBJ_TESTS_GOLDEN_FAST_FRAMES_H_
#define AOBJ_TESTS_GOLDEN_FAST_FRAMES_H_

#include <string>

namespace aobj::golden {

// A request: HeadObject, timeout_ms 0x01020304, access key "AK", timestamp "17", nonce "n",
// session "s", signature "sig", body "xy".
inline const std::string kGoldenFastRequest(
    // version 1, kind 1 (request), two reserved octets
    "\x01\x01\x00\x00"
    // timeout_ms, u32 little-endian
    "\x04\x03\x02\x01"
    // method: length 10, "HeadObject"
    "\x0a"
    "HeadObject"
    // access key id, timestamp, nonce, session, signature: each a length octet and its octets
    "\x02"
    "AK"
    "\x02"
    "17"
    "\x01n"
    "\x01s"
    "\x03sig"
    // body: u32 little-endian length 2, "xy"
    "\x02\x00\x00\x00"
    "xy",
    39);

// A reply: nonce "ab", the error flag set, body "e".
inline const std::string kGoldenFastReply(
    // version 1, kind 2 (reply), flags 1 (error), one reserved octet
    "\x01\x02\x01\x00"
    // nonce: length 2, "ab"
    "\x02"
    "ab"
    // body: u32 little-endian length 1, "e"
    "\x01\x00\x00\x00"
    "e",
    12);

}  // namespace aobj::golden

#endif  // AOBJ_TESTS_GOLDEN_FAST_FRAMES_H_
