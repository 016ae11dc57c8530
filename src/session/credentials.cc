#include "session/credentials.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <optional>
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
  if (shared->has_value()) {
    auto it = (**shared).find(out.name);
    if (it != (**shared).end()) {
      profile_seen = true;
      const auto& kv = it->second;
      auto id = kv.find("aobj_access_key_id");
      auto secret = kv.find("aobj_secret_access_key");
      if ((id == kv.end()) != (secret == kv.end())) {
        return MakeError(ErrorCode::kInvalidArgument,
                         absl::StrCat(env.shared_credentials_file, ": profile [", out.name,
                                      "] needs both aobj_access_key_id and "
                                      "aobj_secret_access_key"));
      }
      if (id != kv.end()) from_profile = Credential{id->second, secret->second};
    }
  }
  if (!env.profile.empty() && !profile_seen) {
    return MakeError(ErrorCode::kInvalidArgument,
                     absl::StrCat("AOBJ_PROFILE names profile '", env.profile,
                                  "', which is in neither ", env.shared_credentials_file,
                                  " nor ", env.config_file));
  }

  if (!env.access_key_id.empty() && !env.secret.empty()) {
    out.credential = Credential{env.access_key_id, env.secret};
  } else if (!env.credentials_file.empty()) {
    auto creds = LoadCredentialsFile(env.credentials_file, /*require_private=*/false);
    if (!creds.ok()) return creds.status();
    out.credential = Credential{creds->begin()->first, creds->begin()->second};
  } else if (!from_profile.access_key_id.empty()) {
    out.credential = from_profile;
  } else {
    return MakeError(ErrorCode::kMissingAuthentication,
                     absl::StrCat("no credentials: set AOBJ_ACCESS_KEY_ID and "
                                  "AOBJ_SECRET_ACCESS_KEY, AOBJ_CREDENTIALS_FILE, or profile [",
                                  out.name, "] in ", env.shared_credentials_file));
  }
  return out;
}

}  // namespace aobj
