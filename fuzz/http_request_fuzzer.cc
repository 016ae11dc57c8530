// The metrics endpoint's HTTP request parser: never crashes, never accepts more than its bounds,
// and what it accepts is a GET of a clean origin-form path; the verdict on a complete request
// does not depend on bytes after the end of its headers.
// AOBJ_FUZZ_COVERS: src/server/metrics_http.cc
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "server/metrics_http.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  const aobj::HttpParse p = aobj::ParseHttpRequest(s);
  const size_t end = s.find("\r\n\r\n");
  if (p.kind == aobj::HttpParse::kIncomplete) {
    AOBJ_FUZZ_CHECK(end == std::string::npos && s.size() < aobj::kMaxHeaderBytes);
  }
  if (p.kind == aobj::HttpParse::kOk || p.kind == aobj::HttpParse::kMethodNotAllowed) {
    AOBJ_FUZZ_CHECK(end != std::string::npos && end + 4 <= aobj::kMaxHeaderBytes);
    AOBJ_FUZZ_CHECK(s.find("\r\n") <= aobj::kMaxRequestLine);
    const aobj::HttpParse again = aobj::ParseHttpRequest(s.substr(0, end + 4) + "trailing");
    AOBJ_FUZZ_CHECK(again.kind == p.kind && again.path == p.path);
  }
  if (p.kind == aobj::HttpParse::kOk) {
    AOBJ_FUZZ_CHECK(s.compare(0, 4, "GET ") == 0);
    AOBJ_FUZZ_CHECK(!p.path.empty() && p.path[0] == '/');
    for (char c : p.path) AOBJ_FUZZ_CHECK(c > 0x20 && c < 0x7f && c != '?');
  }
  return 0;
}
