#include "session/credentials.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "aobj/status.h"
#include "wire/signing.h"

namespace aobj {

absl::StatusOr<std::map<std::string, std::string>> ParseCredentials(const std::string& text) {
  std::map<std::string, std::string> out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> f = absl::StrSplit(line, absl::ByAnyChar(" \t"),
                                                      absl::SkipEmpty());
    if (f.size() != 2 || f[0].size() > kMaxAccessKeyIdBytes) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("credentials line ", line_no,
                                    ": expected `ACCESS_KEY_ID SECRET`"));
    }
    out[std::string(f[0])] = std::string(f[1]);
  }
  if (out.empty()) return MakeError(ErrorCode::kInvalidArgument, "no credentials found");
  return out;
}

absl::StatusOr<std::map<std::string, std::string>> LoadCredentialsFile(const std::string& path,
                                                                       bool require_private) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("cannot read credentials file ", path));
  }
  if (require_private && (st.st_mode & 077) != 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("credentials file ", path,
                                  " is readable by group or others; chmod 600 it"));
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = ParseCredentials(ss.str());
  if (!parsed.ok()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat(path, ": ", parsed.status().message()));
  }
  return parsed;
}

absl::StatusOr<Credential> ClientCredentialFromEnvironment(const std::string& fallback_file) {
  const char* id = std::getenv("AOBJ_ACCESS_KEY_ID");
  const char* secret = std::getenv("AOBJ_SECRET_ACCESS_KEY");
  if (id != nullptr && secret != nullptr && *id != '\0') return Credential{id, secret};
  const char* file = std::getenv("AOBJ_CREDENTIALS_FILE");
  std::string path = file != nullptr ? file : fallback_file;
  if (path.empty()) {
    return MakeError(ErrorCode::kMissingAuthentication,
                     "no credentials: set AOBJ_ACCESS_KEY_ID and AOBJ_SECRET_ACCESS_KEY, or "
                     "AOBJ_CREDENTIALS_FILE");
  }
  auto creds = LoadCredentialsFile(path, /*require_private=*/false);
  if (!creds.ok()) return creds.status();
  return Credential{creds->begin()->first, creds->begin()->second};
}

}  // namespace aobj
