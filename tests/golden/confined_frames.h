// Golden images of the frames between aobj-server and its data-channel processes
// (src/transport/confined_ipc.h), written field by field from the framing's description:
// tests/transport/confined_ipc_test.cc holds FrameWriter, FrameReader, ParseReply and the frame
// length to them, and the fuzz target confined_reply seeds from the replies (fuzz/make_seeds.cc
// writes corpus/confined_reply/golden-*). Each is a frame's body; on the socket it follows a
// u32 little-endian length.
#ifndef AOBJ_TESTS_GOLDEN_CONFINED_FRAMES_H_
#define AOBJ_TESTS_GOLDEN_CONFINED_FRAMES_H_

#include <string>

namespace aobj::golden {

// a kExecute request (id 5): write 4096 octets of buffer 2 into one window of endpoint 3: 110
// octets.
inline const std::string kGoldenExecuteRequest(
    // op 9: kExecute
    "\x09\x00\x00\x00"
    // request id 5
    "\x05\x00\x00\x00\x00\x00\x00\x00"
    // endpoint 3
    "\x03\x00\x00\x00\x00\x00\x00\x00"
    // timeout 1.5 s in ns
    "\x00\x2f\x68\x59\x00\x00\x00\x00"
    // direction 0: write (GET)
    "\x00\x00\x00\x00"
    // max rkey bytes 1024
    "\x00\x04\x00\x00\x00\x00\x00\x00"
    // 1 window
    "\x01\x00\x00\x00"
    // window 0 address 0x10000
    "\x00\x00\x01\x00\x00\x00\x00\x00"
    // window 0 length 4096
    "\x00\x10\x00\x00\x00\x00\x00\x00"
    // window 0 rkey: length 2, "RK"
    "\x02\x00\x00\x00\x52\x4b"
    // 1 operation
    "\x01\x00\x00\x00"
    // op 0 window 0
    "\x00\x00\x00\x00\x00\x00\x00\x00"
    // op 0 remote 0x10000
    "\x00\x00\x01\x00\x00\x00\x00\x00"
    // op 0 buffer id 2
    "\x02\x00\x00\x00\x00\x00\x00\x00"
    // op 0 offset 0
    "\x00\x00\x00\x00\x00\x00\x00\x00"
    // op 0 length 4096
    "\x00\x10\x00\x00\x00\x00\x00\x00",
    110);

// a kReply of request 7: OK, no message, results u64 endpoint 9: 28 octets.
inline const std::string kGoldenOkReply(
    // op 100: kReply
    "\x64\x00\x00\x00"
    // request id 7
    "\x07\x00\x00\x00\x00\x00\x00\x00"
    // code 0: OK
    "\x00\x00\x00\x00"
    // message: empty
    "\x00\x00\x00\x00"
    // results: u64 9
    "\x09\x00\x00\x00\x00\x00\x00\x00",
    28);

// a kReply of request 8: code 30, message "busy", no results: 24 octets.
inline const std::string kGoldenErrorReply(
    // op 100: kReply
    "\x64\x00\x00\x00"
    // request id 8
    "\x08\x00\x00\x00\x00\x00\x00\x00"
    // code 30
    "\x1e\x00\x00\x00"
    // message: length 4, "busy"
    "\x04\x00\x00\x00\x62\x75\x73\x79",
    24);

}  // namespace aobj::golden

#endif  // AOBJ_TESTS_GOLDEN_CONFINED_FRAMES_H_
