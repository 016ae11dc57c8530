#include "tool_util.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "aobj/status.h"

namespace aobj::tools {

std::string ParsedArgs::Get(const std::string& name, const std::string& fallback) const {
  auto it = flags.find(name);
  return it == flags.end() || it->second.empty() ? fallback : it->second.back();
}

absl::Status ParsedArgs::GetInt(const std::string& name, int64_t fallback, int64_t* out) const {
  *out = fallback;
  if (!Has(name)) return absl::OkStatus();
  if (!absl::SimpleAtoi(Get(name), out)) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, " takes an integer, not '",
                                                   Get(name), "'"));
  }
  return absl::OkStatus();
}

absl::Status ParseArgs(int argc, char** argv, int first, const std::vector<std::string>& flags,
                       const std::vector<std::string>& bool_flags, ParsedArgs* out) {
  auto known = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() < 3 || a.rfind("--", 0) != 0) {
      out->positional.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (known(bool_flags, name)) {
      out->flags[name].push_back(has_value ? value : "true");
      out->sequence.emplace_back(name, out->flags[name].back());
    } else if (known(flags, name)) {
      if (!has_value) {
        if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
        value = argv[++i];
      }
      out->flags[name].push_back(value);
      out->sequence.emplace_back(name, value);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name, " (see --help)"));
    }
  }
  return absl::OkStatus();
}

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? absl::StrCat(bytes, " B") : absl::StrFormat("%.1f %s", v, units[u]);
}

std::string HumanRate(uint64_t bytes, double seconds) {
  if (seconds <= 0) return "-";
  return absl::StrFormat("%.2f GB/s", static_cast<double>(bytes) / seconds / 1e9);
}

std::string Printable(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      absl::StrAppendFormat(&out, "\\x%02x", u);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string DescribeError(const absl::Status& status) {
  const ErrorInfo info = GetErrorInfo(ErrorCodeOf(status));
  // No AOBJ reply at all (issue 23): say what happened to the connection instead of gRPC's own
  // words; the code (INTERNAL, AOBJ-ERR-006) stays first, for scripts.
  if (std::string why = ControlChannelFailure(status); !why.empty()) {
    return absl::StrCat(std::string(info.name), " (", std::string(info.s3_code),
                        "): no reply from the server: ", why,
                        why == "connection refused" ? " (is aobj-server still running?)" : "");
  }
  return absl::StrCat(std::string(info.name), " (", std::string(info.s3_code), "): ",
                      status.message());
}

}  // namespace aobj::tools
