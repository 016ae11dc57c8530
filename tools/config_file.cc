#include "config_file.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace aobj::tools {
namespace {

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

absl::Status ParseConfig(const std::string& text, const std::string& source,
                         const ConfigKeys& keys, ParsedArgs* out) {
  std::vector<std::string> seen;
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    const std::string where = absl::StrCat(source, ":", line_no, ": ");
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(where, "expected 'key = value'"));
    }
    const std::string key(absl::StripAsciiWhitespace(line.substr(0, eq)));
    const std::string value(absl::StripAsciiWhitespace(line.substr(eq + 1)));
    if (key.empty()) return absl::InvalidArgumentError(absl::StrCat(where, "empty key"));
    const bool is_bool = Contains(keys.bool_keys, key);
    if (!is_bool && !Contains(keys.value_keys, key)) {
      return absl::InvalidArgumentError(absl::StrCat(where, "unknown key '", key, "'"));
    }
    if (Contains(seen, key) && !Contains(keys.repeatable_keys, key)) {
      return absl::InvalidArgumentError(absl::StrCat(where, "key '", key, "' given twice"));
    }
    seen.push_back(key);
    if (is_bool) {
      if (value == "true") {
        out->flags[key] = {"true"};
      } else if (value != "false") {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "'", key, "' must be true or false, not '", value, "'"));
      }
      continue;
    }
    if (value.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, "'", key, "' has no value"));
    }
    out->flags[key].push_back(value);
  }
  return absl::OkStatus();
}

absl::Status LoadConfigFile(const std::string& path, const ConfigKeys& keys, ParsedArgs* out) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read config file ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseConfig(ss.str(), path, keys, out);
}

void MergeConfig(const ParsedArgs& config, ParsedArgs* args) {
  for (const auto& [key, values] : config.flags) {
    if (!args->Has(key)) args->flags[key] = values;
  }
}

}  // namespace aobj::tools
