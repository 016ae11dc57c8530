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

namespace {

// The length of the well-formed UTF-8 sequence at the start of `s` (1 to 4) and its code point,
// or 0 when it is not one (a stray or truncated octet, an overlong form, a surrogate).
size_t Utf8Sequence(absl::string_view s, uint32_t* cp) {
  const auto at = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = at(0);
  size_t n;
  uint32_t min;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2, min = 0x80, *cp = b0 & 0x1f;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3, min = 0x800, *cp = b0 & 0x0f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4, min = 0x10000, *cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((at(i) & 0xc0) != 0x80) return 0;
    *cp = (*cp << 6) | (at(i) & 0x3f);
  }
  if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff)) return 0;
  return n;
}

// Code points a terminal acts on or that reorder what it shows: C1 controls (U+009B is an 8-bit
// CSI to xterm), and the bidirectional marks, embeddings, overrides and isolates.
bool Hostile(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x61c || cp == 0x200e || cp == 0x200f ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string Printable(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto u = static_cast<unsigned char>(text[i]);
    if (u >= 0x20 && u < 0x7f) {
      out.push_back(text[i++]);
      continue;
    }
    uint32_t cp = 0;
    const size_t n = u >= 0x80 ? Utf8Sequence(text.substr(i), &cp) : 0;
    if (n > 0 && !Hostile(cp)) {
      out.append(text.data() + i, n);  // UTF-8 as it is
    } else {
      for (size_t k = 0; k < std::max<size_t>(n, 1); ++k) {
        absl::StrAppendFormat(&out, "\\x%02x", static_cast<unsigned char>(text[i + k]));
      }
    }
    i += std::max<size_t>(n, 1);
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
  // The message is the server's text, which may echo a hostile name (or be hostile itself).
  return absl::StrCat(std::string(info.name), " (", std::string(info.s3_code),
                      "): ", Printable(status.message()));
}

}  // namespace aobj::tools
