// Credentials: access key ids and their secrets (spec "Credentials").
//
// File format (server and client): one principal per line, `ACCESS_KEY_ID SECRET`, separated by
// whitespace; blank lines and lines starting with '#' are ignored. The server refuses a file that
// others can read (mode & 077) unless told otherwise, since it holds secrets.
// Client environment: AOBJ_ACCESS_KEY_ID and AOBJ_SECRET_ACCESS_KEY.
#ifndef AOBJ_SESSION_CREDENTIALS_H_
#define AOBJ_SESSION_CREDENTIALS_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "aobj/credentials.h"  // Credential, ClientEnvironment, ClientProfile, ResolveClientProfile

namespace aobj {

// Parses credentials text; INVALID_ARGUMENT naming the line on a malformed one.
absl::StatusOr<std::map<std::string, std::string>> ParseCredentials(const std::string& text);

// Reads and parses a credentials file. With `require_private`, a file readable by group or
// others is refused.
absl::StatusOr<std::map<std::string, std::string>> LoadCredentialsFile(const std::string& path,
                                                                       bool require_private);

// The client's credential: AOBJ_ACCESS_KEY_ID/AOBJ_SECRET_ACCESS_KEY, else the first entry of
// the file at AOBJ_CREDENTIALS_FILE (or `fallback_file` when that is unset and non-empty).
absl::StatusOr<Credential> ClientCredentialFromEnvironment(const std::string& fallback_file);

// The INI files of client profiles (aobj/credentials.h states the rules): sections of keys.
using IniSections = std::map<std::string, std::map<std::string, std::string>>;
absl::StatusOr<IniSections> ParseIni(const std::string& text);

}  // namespace aobj

#endif  // AOBJ_SESSION_CREDENTIALS_H_
