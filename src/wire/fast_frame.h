// The frames of the fast request path (spec section 8.9, capability FAST_PATH): a signed request
// and its reply carried as UCP active messages on the session's data endpoint instead of a gRPC
// call. The request holds exactly what a gRPC call carries (method, the five authentication
// fields of section 6.2, the serialized request message) plus a timeout; the reply holds the
// nonce it answers and either the response message or an aobj.v1.Error.
//
// Request (active-message ID 66, client to server), all integers little-endian:
//   u8 version (1) | u8 kind (1) | u16 flags (0) | u32 timeout_ms (0: none)
//   | u8 n + method name | u8 n + access key id | u8 n + timestamp | u8 n + nonce (hex)
//   | u8 n + session id (hex) | u8 n + signature (hex) | u32 n + request message
// Reply (active-message ID 67, server to client):
//   u8 version (1) | u8 kind (2) | u16 flags (bit 0: the message is an aobj.v1.Error)
//   | u8 n + nonce (hex) | u32 n + message
// A frame ends exactly where its last field ends. The parsers check every length against the
// octets present and against kMaxFastFrame; they never look at what the fields mean (the
// authenticator and the request handler do, as for gRPC).
//
// Pure: no I/O, no threads.
#ifndef AOBJ_WIRE_FAST_FRAME_H_
#define AOBJ_WIRE_FAST_FRAME_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "wire/signing.h"

namespace aobj {

inline constexpr uint16_t kFastRequestAmId = 66;  // Section 12.9
inline constexpr uint16_t kFastReplyAmId = 67;
inline constexpr uint8_t kFastFrameVersion = 1;
inline constexpr uint8_t kFastKindRequest = 1;
inline constexpr uint8_t kFastKindReply = 2;
inline constexpr uint16_t kFastFlagError = 1;
// AOBJ-DAT-171: the largest frame either side sends or accepts: the largest inline body
// (kMaxInlineThreshold, 1 MiB) and 64 KiB for everything else. A request message that does not
// fit goes by gRPC.
inline constexpr size_t kMaxFastFrame = (size_t{1} << 20) + (size_t{64} << 10);

struct FastRequest {
  uint32_t timeout_ms = 0;
  std::string method;  // "GetObject"
  RequestAuth auth;
  std::string body;  // the serialized request message, exactly as signed
};

struct FastReply {
  std::string nonce_hex;
  bool error = false;  // `body` is an aobj.v1.Error
  std::string body;
};

// The frame of `r`; INVALID_ARGUMENT when a field is longer than its length prefix allows or the
// frame would exceed kMaxFastFrame.
absl::StatusOr<std::string> EncodeFastRequest(const FastRequest& r);
absl::StatusOr<std::string> EncodeFastReply(const FastReply& r);

// Parses peer input; INVALID_ARGUMENT (with what is wrong) for anything but a whole, well-formed
// frame of the right version and kind, no larger than kMaxFastFrame.
absl::StatusOr<FastRequest> ParseFastRequest(absl::string_view frame);
absl::StatusOr<FastReply> ParseFastReply(absl::string_view frame);

}  // namespace aobj

#endif  // AOBJ_WIRE_FAST_FRAME_H_
