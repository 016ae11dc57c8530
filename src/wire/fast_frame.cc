#include "wire/fast_frame.h"

#include <string_view>

#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "wire/le_codec.h"

namespace aobj {
namespace {

absl::Status Malformed(absl::string_view what) {
  return MakeError(ErrorCode::kInvalidArgument, absl::StrCat("malformed fast-path frame: ", what));
}

bool Short(LeWriter& w, const std::string& s) {
  if (s.size() > 255) return false;
  w.U8(static_cast<uint8_t>(s.size()));
  w.Bytes(s);
  return true;
}

bool ReadShort(LeReader& r, std::string* out) {
  uint8_t n = 0;
  std::string_view v;
  if (!r.U8(&n) || !r.Bytes(n, &v)) return false;
  out->assign(v);
  return true;
}

// The u32-prefixed message that ends the frame.
bool ReadTail(LeReader& r, std::string* out) {
  uint32_t n = 0;
  std::string_view v;
  if (!r.U32(&n) || !r.Bytes(n, &v) || r.remaining() != 0) return false;
  out->assign(v);
  return true;
}

// Version, kind and flags; `flags_allowed` are the bits this version defines.
absl::Status ReadHead(LeReader& r, uint8_t kind, uint16_t flags_allowed, uint16_t* flags) {
  uint8_t version = 0, got_kind = 0;
  if (!r.U8(&version) || !r.U8(&got_kind) || !r.U16(flags)) return Malformed("too short");
  if (version != kFastFrameVersion) return Malformed(absl::StrCat("version ", version));
  if (got_kind != kind) return Malformed(absl::StrCat("kind ", got_kind));
  if ((*flags & ~flags_allowed) != 0) return Malformed(absl::StrCat("flags ", *flags));
  return absl::OkStatus();
}

// Appends the message that ends every frame (AOBJ-DAT-165, AOBJ-DAT-170) within the limit
// (AOBJ-DAT-171).
absl::StatusOr<std::string> EndFrame(std::string out, const std::string& message,
                                     const char* kind) {
  if (message.size() > kMaxFastFrame || out.size() + 4 + message.size() > kMaxFastFrame) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("a fast-path ", kind, " of ", out.size() + 4 + message.size(),
                                  " octets exceeds the frame limit of ", kMaxFastFrame));
  }
  LeWriter w(&out);
  w.U32(static_cast<uint32_t>(message.size()));
  w.Bytes(message);
  return out;
}

}  // namespace

absl::StatusOr<std::string> EncodeFastRequest(const FastRequest& r) {
  std::string out;
  LeWriter w(&out);
  w.U8(kFastFrameVersion);
  w.U8(kFastKindRequest);
  w.U16(0);
  w.U32(r.timeout_ms);
  for (const std::string* s : {&r.method, &r.auth.access_key_id, &r.auth.timestamp,
                               &r.auth.nonce_hex, &r.auth.session_hex, &r.auth.signature_hex}) {
    if (!Short(w, *s)) return Malformed("a field over 255 octets");
  }
  return EndFrame(std::move(out), r.body, "request");
}

absl::StatusOr<std::string> EncodeFastReply(const FastReply& r) {
  std::string out;
  LeWriter w(&out);
  w.U8(kFastFrameVersion);
  w.U8(kFastKindReply);
  w.U16(r.error ? kFastFlagError : 0);
  if (!Short(w, r.nonce_hex)) return Malformed("a nonce over 255 octets");
  return EndFrame(std::move(out), r.body, "reply");
}

absl::StatusOr<FastRequest> ParseFastRequest(absl::string_view frame) {
  if (frame.size() > kMaxFastFrame) return Malformed("larger than the frame limit");
  LeReader r(std::string_view(frame.data(), frame.size()));
  uint16_t flags = 0;
  if (absl::Status s = ReadHead(r, kFastKindRequest, 0, &flags); !s.ok()) return s;
  FastRequest out;
  if (!r.U32(&out.timeout_ms)) return Malformed("too short");
  for (std::string* s : {&out.method, &out.auth.access_key_id, &out.auth.timestamp,
                         &out.auth.nonce_hex, &out.auth.session_hex, &out.auth.signature_hex}) {
    if (!ReadShort(r, s)) return Malformed("a field runs past the end");
  }
  if (!ReadTail(r, &out.body)) return Malformed("the message does not end the frame");
  return out;
}

absl::StatusOr<FastReply> ParseFastReply(absl::string_view frame) {
  if (frame.size() > kMaxFastFrame) return Malformed("larger than the frame limit");
  LeReader r(std::string_view(frame.data(), frame.size()));
  uint16_t flags = 0;
  if (absl::Status s = ReadHead(r, kFastKindReply, kFastFlagError, &flags); !s.ok()) return s;
  FastReply out;
  out.error = (flags & kFastFlagError) != 0;
  if (!ReadShort(r, &out.nonce_hex)) return Malformed("the nonce runs past the end");
  if (!ReadTail(r, &out.body)) return Malformed("the message does not end the frame");
  return out;
}

}  // namespace aobj
