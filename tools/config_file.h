// The server's configuration file (docs/configuration.md): `key = value` lines whose keys are
// the names of aobj-server's flags without the leading "--".
//
//   # comment (a whole line only)
//   listen = 127.0.0.1:7878
//   store = fs
//   create-bucket = photos      # NOT a comment: values run to the end of the line
//   plaintext = true
//
// Strict: an unknown key, a line without '=', an empty key, a key given twice (other than a
// repeatable one), or a boolean that is not true/false is an error naming the file and line.
// Flags given on the command line override the file (MergeConfig).
// Thread-compatible: plain functions over values.
#ifndef AOBJ_TOOLS_CONFIG_FILE_H_
#define AOBJ_TOOLS_CONFIG_FILE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tool_util.h"

namespace aobj::tools {

struct ConfigKeys {
  std::vector<std::string> value_keys;       // take a value (the flags of ParseArgs)
  std::vector<std::string> bool_keys;        // true or false
  std::vector<std::string> repeatable_keys;  // may appear more than once (value keys only)
};

// Parses the text of a configuration file named `source` (for messages) into `out->flags`,
// with the same shape ParseArgs produces: bool keys set to true are present with value "true",
// bool keys set to false are absent. INVALID_ARGUMENT "source:LINE: ..." on the first error.
absl::Status ParseConfig(const std::string& text, const std::string& source,
                         const ConfigKeys& keys, ParsedArgs* out);

// Reads and parses the file at `path`.
absl::Status LoadConfigFile(const std::string& path, const ConfigKeys& keys, ParsedArgs* out);

// Adds to `args` every key of `config` that the command line did not set (flags win).
void MergeConfig(const ParsedArgs& config, ParsedArgs* args);

}  // namespace aobj::tools

#endif  // AOBJ_TOOLS_CONFIG_FILE_H_
