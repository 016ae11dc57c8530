// AOBJ_PEER_INPUT: decodes bucket names and keys from requests (fuzz target in fuzz/).
#include "wire/names.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/numbers.h"
#include "aobj/status.h"
#include "wire/protocol.h"

namespace aobj {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool LooksLikeIpv4(absl::string_view s) {
  std::vector<absl::string_view> parts = absl::StrSplit(s, '.');
  if (parts.size() != 4) return false;
  for (auto p : parts) {
    int v;
    if (p.empty() || p.size() > 3 || !absl::SimpleAtoi(p, &v) || v > 255) return false;
  }
  return true;
}

}  // namespace

absl::Status ValidateBucketName(absl::string_view name) {
  auto bad = [&](absl::string_view why) {
    return MakeError(ErrorCode::kInvalidBucketName,
                     absl::StrCat("bucket name is invalid: ", why));
  };
  // AOBJ-OBJ-001
  if (name.size() < 3 || name.size() > 63) return bad("it must be 3 to 63 characters");
  for (char c : name) {
    if (!IsLowerAlnum(c) && c != '.' && c != '-') {
      return bad("only lower-case letters, digits, '.' and '-' are allowed");
    }
  }
  if (!IsLowerAlnum(name.front()) || !IsLowerAlnum(name.back())) {
    return bad("it must start and end with a letter or digit");
  }
  if (absl::StrContains(name, "..")) return bad("it must not contain \"..\"");
  if (LooksLikeIpv4(name)) return bad("it must not be an IP address");
  return absl::OkStatus();
}

bool IsValidUtf8(absl::string_view s) {
  size_t i = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  while (i < s.size()) {
    unsigned char c = p[i];
    size_t n;
    uint32_t cp;
    if (c < 0x80) { ++i; continue; }
    else if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
    else return false;
    if (i + n >= s.size()) return false;  // the sequence runs past the end
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size() || (p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

absl::Status ValidateObjectKey(absl::string_view key) {
  // AOBJ-OBJ-002
  if (key.empty()) return MakeError(ErrorCode::kInvalidArgument, "object key is empty");
  if (key.size() > kMaxKeyBytes) {
    return MakeError(ErrorCode::kKeyTooLong,
                     absl::StrCat("object key is ", key.size(), " bytes; the limit is 1024"));
  }
  if (!IsValidUtf8(key)) {
    return MakeError(ErrorCode::kInvalidArgument, "object key is not valid UTF-8");
  }
  return absl::OkStatus();
}

}  // namespace aobj
