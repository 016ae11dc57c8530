// How a client finds its credential and its server, as S3 tools do (docs/configuration.md).
//
// The credential, first found wins: AOBJ_ACCESS_KEY_ID + AOBJ_SECRET_ACCESS_KEY; the file at
// AOBJ_CREDENTIALS_FILE (`ACCESS_KEY_ID SECRET` lines); the profile in the shared credentials
// file, ~/.aobj/credentials (AOBJ_SHARED_CREDENTIALS_FILE overrides the path), INI:
//   [default]
//   aobj_access_key_id = AKEXAMPLE
//   aobj_secret_access_key = my-secret
//   [lab]
//   aws_access_key_id = ...        # the AWS names are accepted too
//   aws_secret_access_key = ...
// The endpoint: the profile's `endpoint` in ~/.aobj/config (AOBJ_CONFIG_FILE overrides the path),
// whose sections are `[default]` and `[profile NAME]` (as in the AWS CLI; a bare `[NAME]` is
// accepted too). The profile is the one the caller names (the CLI's --profile), else
// AOBJ_PROFILE, else "default".
//
// INI rules, strict: `[section]` lines, `key = value` lines inside a section, blank lines and
// lines starting with '#' or ';' ignored; anything else, a key outside a section, a key given
// twice in one section, or a section given twice is INVALID_ARGUMENT naming the line.
//
// Files that hold secrets and that group or others may read are used, with a warning in
// ClientProfile::warnings (the server refuses its own such file; a client shows the warning).
//
// Threading: pure functions over their arguments and the files they read.
#ifndef AOBJ_CREDENTIALS_H_
#define AOBJ_CREDENTIALS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace aobj {

struct Credential {
  std::string access_key_id;
  std::string secret;
};

// Where a client's settings come from; FromProcess() reads the process environment and HOME.
struct ClientEnvironment {
  std::string access_key_id;                    // AOBJ_ACCESS_KEY_ID
  std::string secret;                           // AOBJ_SECRET_ACCESS_KEY
  std::string credentials_file;                 // AOBJ_CREDENTIALS_FILE (the "ID SECRET" format)
  std::string profile;                          // AOBJ_PROFILE (empty: "default", not required)
  std::string profile_source = "AOBJ_PROFILE";  // how `profile` was chosen, for messages
  std::string shared_credentials_file;  // AOBJ_SHARED_CREDENTIALS_FILE, else ~/.aobj/credentials
  std::string config_file;              // AOBJ_CONFIG_FILE, else ~/.aobj/config
  static ClientEnvironment FromProcess();
};

struct ClientProfile {
  std::string name;                   // the profile used
  Credential credential;              // where it came from: `credential_source`
  std::string credential_source;      // "environment", a file name, or "FILE [profile]"
  std::string endpoint;               // empty: not configured
  std::vector<std::string> warnings;  // e.g. a credentials file readable by others
};

// Resolves the client's credential and endpoint (above). Missing files are not errors unless a
// named profile (`env.profile`) is in neither file; a malformed file, or a profile with only
// one of the two keys, is. MISSING_AUTHENTICATION when no credential is found anywhere, with a
// message that says where the client looked.
absl::StatusOr<ClientProfile> ResolveClientProfile(const ClientEnvironment& env);

}  // namespace aobj

#endif  // AOBJ_CREDENTIALS_H_
