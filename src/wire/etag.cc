#include "wire/etag.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "aobj/status.h"
#include "wire/crypto.h"

namespace aobj {

std::string OpaqueEtag() {
  return absl::StrCat("\"", HexEncode(RandomBytes(16)), "-0\"");
}

std::string OpaquePartEtag() { return absl::StrCat("\"", HexEncode(RandomBytes(16)), "\""); }

bool IsOpaqueEtag(absl::string_view etag) {
  if (etag.size() != 36 || etag.front() != '"' || etag.back() != '"') return false;
  if (etag.substr(33, 2) != "-0") return false;
  for (char c : etag.substr(1, 32)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string BareMd5Etag(absl::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  if (etag.size() != 32) return "";
  std::string out = absl::AsciiStrToLower(etag);
  for (char c : out) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return "";
  }
  return out;
}

absl::StatusOr<std::string> MultipartEtag(const std::vector<std::string>& part_etags) {
  std::string digests;
  digests.reserve(16 * part_etags.size());
  for (const std::string& e : part_etags) {
    const std::string bare = BareMd5Etag(e);
    std::string raw;
    if (bare.empty() || !HexDecode(bare, &raw)) {
      return MakeError(
          ErrorCode::kInvalidArgument,
          absl::StrCat("ETag ", absl::string_view(e).substr(0, 80), " is not a hex MD5"));
    }
    digests += raw;
  }
  Md5 md5;
  md5.Update(digests.data(), digests.size());
  return absl::StrCat("\"", HexEncode(md5.Finish()), "-", part_etags.size(), "\"");
}

}  // namespace aobj
