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

namespace aobj {

struct Credential {
  std::string access_key_id;
  std::string secret;
};

// Parses credentials text; INVALID_ARGUMENT naming the line on a malformed one.
absl::StatusOr<std::map<std::string, std::string>> ParseCredentials(const std::string& text);

// Reads and parses a credentials file. With `require_private`, a file readable by group or
// others is refused.
absl::StatusOr<std::map<std::string, std::string>> LoadCredentialsFile(const std::string& path,
                                                                       bool require_private);

// The client's credential: AOBJ_ACCESS_KEY_ID/AOBJ_SECRET_ACCESS_KEY, else the first entry of
// the file at AOBJ_CREDENTIALS_FILE (or `fallback_file` when that is unset and non-empty).
absl::StatusOr<Credential> ClientCredentialFromEnvironment(const std::string& fallback_file);

}  // namespace aobj

#endif  // AOBJ_SESSION_CREDENTIALS_H_
