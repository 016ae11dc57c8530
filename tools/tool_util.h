// Small helpers shared by the command-line tools: argument parsing and human-readable output.
//
// Why the tools parse their own flags rather than with Abseil's flags library (already a
// dependency), which issue 23 asked about: Abseil's flags are process-wide globals defined per
// source file, and these tools need what it does not give: a repeated flag keeps every value in
// order (--metadata a=b --metadata c=d; --exclude and --include, whose order decides), where
// Abseil keeps the last value or splits on commas that metadata values and patterns may hold;
// `aobj cp --help` prints one command's flags in the words of the one usage text that also makes
// the manual page and the completion scripts, where Abseil's help lists flags by the file that
// defines them; and the server's configuration file takes the same names as its flags
// (config_file.h) through the same table. ParseArgs is about 40 lines with its tests
// (tests/tools/tool_util_test.cc); a library would not make it shorter, only less fitting.
#ifndef AOBJ_TOOLS_TOOL_UTIL_H_
#define AOBJ_TOOLS_TOOL_UTIL_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace aobj::tools {

// Parses "--name value", "--name=value" and bare "--flag" (value "true"; only for names listed
// in `bool_flags`). Positional arguments are returned in order. Unknown flags are errors.
struct ParsedArgs {
  std::map<std::string, std::vector<std::string>> flags;
  std::vector<std::string> positional;
  // Every flag as (name, value) in the order given, for flags whose order matters (the
  // --exclude and --include filters of the CLI).
  std::vector<std::pair<std::string, std::string>> sequence;
  bool Has(const std::string& name) const { return flags.count(name) > 0; }
  std::string Get(const std::string& name, const std::string& fallback = "") const;
  absl::Status GetInt(const std::string& name, int64_t fallback, int64_t* out) const;
};
absl::Status ParseArgs(int argc, char** argv, int first, const std::vector<std::string>& flags,
                       const std::vector<std::string>& bool_flags, ParsedArgs* out);

// "64.0 MiB", "1.5 GiB".
std::string HumanBytes(uint64_t bytes);
// "2.31 GB/s" (10^9 bytes per second).
std::string HumanRate(uint64_t bytes, double seconds);

// `text` (a key, bucket or metadata from a server, which a hostile peer chooses) safe to print on
// a terminal: C0 control characters and DEL, C1 controls and the bidirectional controls (the
// octets of their UTF-8), and octets that are not well-formed UTF-8 as \xNN; everything else as
// it is (UTF-8 included).
std::string Printable(absl::string_view text);

// "NO_SUCH_KEY (NoSuchKey): message".
std::string DescribeError(const absl::Status& status);

}  // namespace aobj::tools

#endif  // AOBJ_TOOLS_TOOL_UTIL_H_
