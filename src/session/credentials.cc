#include "session/credentials.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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

absl::StatusOr<IniSections> ParseIni(const std::string& text) {
  IniSections out;
  std::string section;
  bool in_section = false;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']' || line.size() < 3) {
        return MakeError(ErrorCode::kInvalidArgument,
                         absl::StrCat("line ", line_no, ": expected `[section]`"));
      }
      section = std::string(absl::StripAsciiWhitespace(line.substr(1, line.size() - 2)));
      if (section.empty() || out.count(section) != 0) {
        return MakeError(ErrorCode::kInvalidArgument,
                         absl::StrCat("line ", line_no, ": empty or repeated section"));
      }
      out[section];
      in_section = true;
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos || !in_section) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("line ", line_no,
                                    in_section ? ": expected `key = value`"
                                               : ": `key = value` outside a [section]"));
    }
    std::string key(absl::StripAsciiWhitespace(line.substr(0, eq)));
    std::string value(absl::StripAsciiWhitespace(line.substr(eq + 1)));
    if (key.empty() || !out[section].emplace(key, value).second) {
      return MakeError(ErrorCode::kInvalidArgument,
                       absl::StrCat("line ", line_no, ": empty or repeated key"));
    }
  }
  return out;
}

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// Reads `path`; nullopt-like empty optional when the file does not exist.
absl::StatusOr<std::optional<IniSections>> LoadIni(const std::string& path) {
  if (path.empty()) return std::optional<IniSections>();
  std::ifstream in(path);
  if (!in) return std::optional<IniSections>();
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = ParseIni(ss.str());
  if (!parsed.ok()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat(path, ": ", parsed.status().message()));
  }
  return std::optional<IniSections>(std::move(*parsed));
}

}  // namespace

ClientEnvironment ClientEnvironment::FromProcess() {
  ClientEnvironment env;
  env.access_key_id = Env("AOBJ_ACCESS_KEY_ID");
  env.secret = Env("AOBJ_SECRET_ACCESS_KEY");
  env.credentials_file = Env("AOBJ_CREDENTIALS_FILE");
  env.profile = Env("AOBJ_PROFILE");
  const std::string home = Env("HOME");
  env.shared_credentials_file = Env("AOBJ_SHARED_CREDENTIALS_FILE");
  if (env.shared_credentials_file.empty() && !home.empty()) {
    env.shared_credentials_file = home + "/.aobj/credentials";
  }
  env.config_file = Env("AOBJ_CONFIG_FILE");
  if (env.config_file.empty() && !home.empty()) env.config_file = home + "/.aobj/config";
  return env;
}

namespace {

// A warning when the file at `path`, which holds secrets, may be read by group or others.
void WarnIfShared(const std::string& path, std::vector<std::string>* warnings) {
  struct stat st {};
  if (path.empty() || stat(path.c_str(), &st) != 0 || (st.st_mode & 077) == 0) return;
  warnings->push_back(absl::StrCat("credentials file ", path, " can be read by ",
                                   (st.st_mode & 070) != 0 ? "its group" : "others", " (mode ",
                                   absl::StrFormat("%04o", st.st_mode & 07777),
                                   "); anyone who can read it can act as you: chmod 600 ", path));
}

// The value of the first of `names` that `kv` holds, or nullptr.
const std::string* First(const std::map<std::string, std::string>& kv,
                         std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (auto it = kv.find(n); it != kv.end()) return &it->second;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<ClientProfile> ResolveClientProfile(const ClientEnvironment& env) {
  ClientProfile out;
  out.name = env.profile.empty() ? "default" : env.profile;
  bool profile_seen = false;

  auto config = LoadIni(env.config_file);
  if (!config.ok()) return config.status();
  if (config->has_value()) {
    const IniSections& c = **config;
    for (const std::string& name :
         {out.name == "default" ? std::string("default") : "profile " + out.name, out.name}) {
      auto it = c.find(name);
      if (it == c.end()) continue;
      profile_seen = true;
      if (auto e = it->second.find("endpoint"); e != it->second.end()) {
        out.endpoint = e->second;
      }
      break;
    }
  }

  auto shared = LoadIni(env.shared_credentials_file);
  if (!shared.ok()) return shared.status();
  Credential from_profile;
  std::string profile_keys;  // what the profile's section held, when it held no credential
  if (shared->has_value()) {
    auto it = (**shared).find(out.name);
    if (it != (**shared).end()) {
      profile_seen = true;
      const auto& kv = it->second;
      // The AWS CLI's names are accepted too, so that a boto3 user's file works as it is.
      const std::string* id = First(kv, {"aobj_access_key_id", "aws_access_key_id"});
      const std::string* secret = First(kv, {"aobj_secret_access_key", "aws_secret_access_key"});
      if ((id == nullptr) != (secret == nullptr)) {
        return MakeError(ErrorCode::kInvalidArgument,
                         absl::StrCat(env.shared_credentials_file, ": profile [", out.name,
                                      "] has ", id != nullptr ? "an access key ID" : "a secret",
                                      " but no ", id != nullptr ? "secret" : "access key ID",
                                      ": it needs aobj_access_key_id and aobj_secret_access_key "
                                      "(or aws_access_key_id and aws_secret_access_key)"));
      }
      if (id != nullptr) {
        from_profile = Credential{*id, *secret};
      } else {
        for (const auto& [k, v] : kv)
          absl::StrAppend(&profile_keys, profile_keys.empty() ? "" : ", ", k);
      }
    }
  }
  if (!env.profile.empty() && !profile_seen) {
    return MakeError(
        ErrorCode::kInvalidArgument,
        absl::StrCat(env.profile_source, " names profile '", env.profile, "', which is in neither ",
                     env.shared_credentials_file, " nor ", env.config_file));
  }

  if (!env.access_key_id.empty() && !env.secret.empty()) {
    out.credential = Credential{env.access_key_id, env.secret};
    out.credential_source = "environment (AOBJ_ACCESS_KEY_ID, AOBJ_SECRET_ACCESS_KEY)";
  } else if (!env.credentials_file.empty()) {
    auto creds = LoadCredentialsFile(env.credentials_file, /*require_private=*/false);
    if (!creds.ok()) return creds.status();
    out.credential = Credential{creds->begin()->first, creds->begin()->second};
    out.credential_source = env.credentials_file;
    WarnIfShared(env.credentials_file, &out.warnings);
  } else if (!from_profile.access_key_id.empty()) {
    out.credential = from_profile;
    out.credential_source = absl::StrCat(env.shared_credentials_file, " [", out.name, "]");
    WarnIfShared(env.shared_credentials_file, &out.warnings);
  } else {
    std::string why = absl::StrCat(
        "no credentials: set AOBJ_ACCESS_KEY_ID and "
        "AOBJ_SECRET_ACCESS_KEY, AOBJ_CREDENTIALS_FILE, or profile [",
        out.name, "] in ", env.shared_credentials_file);
    if (!profile_keys.empty()) {
      absl::StrAppend(&why, " (its profile [", out.name, "] holds only ", profile_keys,
                      "; it needs aobj_access_key_id and aobj_secret_access_key)");
    }
    return MakeError(ErrorCode::kMissingAuthentication, why);
  }
  return out;
}

}  // namespace aobj
