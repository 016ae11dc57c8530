// AOBJ_PEER_INPUT: user metadata (fuzz/object_attrs_fuzzer.cc).
#include "wire/user_metadata.h"

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "wire/names.h"

namespace aobj {
namespace {

// RFC 9110 section 5.6.2 tchar.
bool IsTokenChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         (c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

template <class Map>
absl::StatusOr<UserMetadata> Normalize(const Map& in) {
  // AOBJ-OBJ-121: bound the work before looking at any character.
  size_t total = 0;
  for (const auto& [name, value] : in) {
    total += name.size() + value.size();
    if (total > kMaxUserMetadataBytes) {
      return MakeError(ErrorCode::kMetadataTooLarge,
                       absl::StrCat("user metadata exceeds ", kMaxUserMetadataBytes,
                                    " bytes of names and values"));
    }
  }
  UserMetadata out;
  for (const auto& [name, value] : in) {
    // AOBJ-OBJ-120
    if (name.empty()) return MakeError(ErrorCode::kInvalidArgument, "empty metadata name");
    for (char c : name) {
      if (!IsTokenChar(c)) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "a metadata name is letters, digits and !#$%&'*+-.^_`|~ only");
      }
    }
    // AOBJ-OBJ-123
    if (!IsValidUtf8(value)) {
      return MakeError(ErrorCode::kInvalidArgument, "a metadata value is not valid UTF-8");
    }
    for (char c : value) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7F) {
        return MakeError(ErrorCode::kInvalidArgument, "a metadata value holds a control character");
      }
    }
    std::string lower = absl::AsciiStrToLower(std::string(name));
    if (!out.emplace(std::move(lower), std::string(value)).second) {
      return MakeError(ErrorCode::kInvalidArgument, "two metadata names differ only in case");
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<UserMetadata> NormalizeUserMetadata(
    const google::protobuf::Map<std::string, std::string>& in) {
  return Normalize(in);
}

absl::StatusOr<UserMetadata> NormalizeUserMetadata(const UserMetadata& in) { return Normalize(in); }

void UserMetadataToProto(const UserMetadata& in,
                         google::protobuf::Map<std::string, std::string>* out) {
  out->clear();
  for (const auto& [name, value] : in) (*out)[name] = value;
}

}  // namespace aobj
