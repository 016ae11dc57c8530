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

// ---- Client profiles: the conventions of S3 tools (docs/configuration.md) -------------------
//
// ~/.aobj/credentials (AOBJ_SHARED_CREDENTIALS_FILE overrides the path), INI:
//   [default]
//   aobj_access_key_id = AKEXAMPLE
//   aobj_secret_access_key = my-secret
//   [lab]
//   ...
// ~/.aobj/config (AOBJ_CONFIG_FILE overrides the path), INI; sections are `[default]` and
// `[profile NAME]` (as in the AWS CLI; a bare `[NAME]` is accepted too). Key: `endpoint`.
// The profile is AOBJ_PROFILE, else "default".
//
// INI rules, strict: `[section]` lines, `key = value` lines inside a section, blank lines and
// lines starting with '#' or ';' ignored; anything else, a key outside a section, a key given
// twice in one section, or a section given twice is INVALID_ARGUMENT naming the line.
using IniSections = std::map<std::string, std::map<std::string, std::string>>;
absl::StatusOr<IniSections> ParseIni(const std::string& text);

// Where a client's settings come from; Environment() reads the process environment.
struct ClientEnvironment {
  std::string access_key_id;            // AOBJ_ACCESS_KEY_ID
  std::string secret;                   // AOBJ_SECRET_ACCESS_KEY
  std::string credentials_file;         // AOBJ_CREDENTIALS_FILE (the "ID SECRET" format)
  std::string profile;                  // AOBJ_PROFILE (empty: "default", not required)
  std::string shared_credentials_file;  // AOBJ_SHARED_CREDENTIALS_FILE, else ~/.aobj/credentials
  std::string config_file;              // AOBJ_CONFIG_FILE, else ~/.aobj/config
  static ClientEnvironment FromProcess();
};

struct ClientProfile {
  std::string name;          // the profile used
  Credential credential;     // empty access_key_id: none found
  std::string endpoint;      // empty: not configured
};

// Resolves the client's credential and endpoint. The credential, first found wins:
// AOBJ_ACCESS_KEY_ID + AOBJ_SECRET_ACCESS_KEY, the file at AOBJ_CREDENTIALS_FILE, the profile
// in the shared credentials file. The endpoint: the profile in the config file. Missing files
// are not errors unless AOBJ_PROFILE names a profile that neither file holds; a malformed file,
// or a profile with only one of the two keys, is. MISSING_AUTHENTICATION when no credential is
// found anywhere.
absl::StatusOr<ClientProfile> ResolveClientProfile(const ClientEnvironment& env);

}  // namespace aobj

#endif  // AOBJ_SESSION_CREDENTIALS_H_
