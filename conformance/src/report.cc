// Reports of a conformance run: console, JUnit XML, JSON and a self-contained HTML matrix, and
// the coverage report (requirements that no case checks).
#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "conformance/src/suite.h"
#include "wire/json.h"

namespace aobj::conformance {
namespace {

std::string XmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') out += '?';
        else out += c;
    }
  }
  return out;
}

std::string Cls(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "pass";
    case Verdict::kFail: return "fail";
    case Verdict::kNonStrict: return "nonstrict";
    case Verdict::kUnsupported: return "unsupported";
    case Verdict::kInformational: return "info";
  }
  return "";
}

bool Counts(const RunSummary& s, Verdict v) {
  return v == Verdict::kFail || (s.strict && v == Verdict::kNonStrict);
}

}  // namespace

int CountVerdict(const RunSummary& s, Verdict v) {
  return static_cast<int>(std::count_if(s.results.begin(), s.results.end(),
                                        [v](const CaseResult& r) { return r.verdict == v; }));
}

bool RunFailed(const RunSummary& s) {
  for (const auto& r : s.results) {
    if (Counts(s, r.verdict)) return true;
  }
  return false;
}

std::string ConsoleSummary(const RunSummary& s) {
  std::string out;
  for (const auto& r : s.results) {
    if (r.verdict == Verdict::kPass) continue;
    absl::StrAppend(&out, "  ", absl::StrFormat("%-13s", std::string(VerdictName(r.verdict))), " ", r.def->id,
                    "  ", r.def->title, "\n");
    if (!r.reason.empty()) absl::StrAppend(&out, "                ", r.reason, "\n");
    if (!r.def->requirements.empty()) {
      absl::StrAppend(&out, "                requirements: ", absl::StrJoin(r.def->requirements, " "),
                      "\n");
    }
  }
  absl::StrAppend(&out, "\n", s.results.size(), " cases against ", s.target, " (", s.mode,
                  " mode", s.strict ? ", strict" : "", "): ", CountVerdict(s, Verdict::kPass),
                  " PASS, ", CountVerdict(s, Verdict::kFail), " FAIL, ",
                  CountVerdict(s, Verdict::kNonStrict), " NON-STRICT, ",
                  CountVerdict(s, Verdict::kUnsupported), " UNSUPPORTED, ",
                  CountVerdict(s, Verdict::kInformational), " INFORMATIONAL\n");
  if (!s.data_channel.empty()) absl::StrAppend(&out, "data channel: ", s.data_channel, "\n");
  if (!s.authorization.empty()) absl::StrAppend(&out, "authorization: ", s.authorization, "\n");
  if (!s.skipped.empty()) {
    absl::StrAppend(&out, "not run (--skip): ", absl::StrJoin(s.skipped, " "), "\n");
  }
  absl::StrAppend(&out, RunFailed(s) ? "RESULT: FAIL\n" : "RESULT: PASS\n");
  return out;
}

std::string JunitXml(const RunSummary& s) {
  double total = 0;
  for (const auto& r : s.results) total += r.seconds;
  int failures = 0, skipped = 0;
  for (const auto& r : s.results) {
    if (Counts(s, r.verdict)) ++failures;
    if (r.verdict == Verdict::kUnsupported) ++skipped;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  absl::StrAppend(&out, "<testsuites name=\"aobj-conformance\" tests=\"", s.results.size(),
                  "\" failures=\"", failures, "\" time=\"", absl::StrFormat("%.3f", total), "\">\n");
  absl::StrAppend(&out, "  <testsuite name=\"", s.mode, "\" tests=\"", s.results.size(),
                  "\" failures=\"", failures, "\" skipped=\"", skipped, "\" timestamp=\"",
                  XmlEscape(s.started), "\">\n");
  absl::StrAppend(&out, "    <properties><property name=\"data_channel\" value=\"",
                  XmlEscape(s.data_channel), "\"/><property name=\"skipped\" value=\"",
                  XmlEscape(absl::StrJoin(s.skipped, " ")), "\"/></properties>\n");
  for (const auto& r : s.results) {
    absl::StrAppend(&out, "    <testcase classname=\"", XmlEscape(r.def->profile), "\" name=\"",
                    XmlEscape(r.def->id), " ", XmlEscape(r.def->title), "\" time=\"",
                    absl::StrFormat("%.3f", r.seconds), "\">\n");
    absl::StrAppend(&out, "      <properties><property name=\"verdict\" value=\"",
                    std::string(VerdictName(r.verdict)), "\"/><property name=\"requirements\" value=\"",
                    absl::StrJoin(r.def->requirements, " "), "\"/></properties>\n");
    if (Counts(s, r.verdict)) {
      absl::StrAppend(&out, "      <failure message=\"", XmlEscape(r.reason), "\"/>\n");
    } else if (r.verdict == Verdict::kUnsupported) {
      absl::StrAppend(&out, "      <skipped message=\"", XmlEscape(r.reason), "\"/>\n");
    }
    std::string log;
    for (const auto& e : r.transcript) {
      absl::StrAppend(&log, e.peer, " -> ", e.method, " ", e.request, "\n   <- ", e.outcome,
                      e.response.empty() ? "" : " " + e.response, "\n");
    }
    if (!log.empty()) absl::StrAppend(&out, "      <system-out>", XmlEscape(log), "</system-out>\n");
    absl::StrAppend(&out, "    </testcase>\n");
  }
  absl::StrAppend(&out, "  </testsuite>\n</testsuites>\n");
  return out;
}

std::string JsonReport(const RunSummary& s) {
  std::string out = "{\n";
  absl::StrAppend(
      &out, "  \"suite\": \"aobj-conformance\",\n  \"suite_version\": ", JsonQuote(s.suite_version),
      ",\n  \"target\": ", JsonQuote(s.target), ",\n  \"mode\": ", JsonQuote(s.mode),
      ",\n  \"strict\": ", s.strict ? "true" : "false", ",\n  \"started\": ", JsonQuote(s.started),
      ",\n  \"data_channel\": ", JsonQuote(s.data_channel),
      ",\n  \"authorization\": ", JsonQuote(s.authorization), ",\n  \"skipped\": [",
      absl::StrJoin(
          s.skipped, ", ",
          [](std::string* o, const std::string& id) { absl::StrAppend(o, JsonQuote(id)); }),
      "]", ",\n  \"summary\": {");
  const Verdict all[] = {Verdict::kPass, Verdict::kFail, Verdict::kNonStrict,
                         Verdict::kUnsupported, Verdict::kInformational};
  for (size_t i = 0; i < 5; ++i) {
    absl::StrAppend(&out, i ? ", " : "", JsonQuote(std::string(VerdictName(all[i]))), ": ",
                    CountVerdict(s, all[i]));
  }
  absl::StrAppend(&out, "},\n  \"result\": ", RunFailed(s) ? "\"FAIL\"" : "\"PASS\"",
                  ",\n  \"cases\": [\n");
  for (size_t i = 0; i < s.results.size(); ++i) {
    const auto& r = s.results[i];
    absl::StrAppend(&out, "    {\"id\": ", JsonQuote(r.def->id),
                    ", \"title\": ", JsonQuote(r.def->title),
                    ", \"profile\": ", JsonQuote(r.def->profile),
                    ", \"hostile\": ", r.def->hostile ? "true" : "false",
                    ", \"level\": ", JsonQuote(r.level), ",\n     \"requirements\": [");
    for (size_t j = 0; j < r.def->requirements.size(); ++j) {
      const Requirement* req = FindRequirement(r.def->requirements[j]);
      absl::StrAppend(&out, j ? ", " : "", "{\"id\": ", JsonQuote(r.def->requirements[j]),
                      ", \"level\": ", JsonQuote(req ? req->level : "?"), "}");
    }
    absl::StrAppend(&out, "],\n     \"verdict\": ", JsonQuote(std::string(VerdictName(r.verdict))),
                    ", \"reason\": ", JsonQuote(r.reason),
                    ", \"seconds\": ", absl::StrFormat("%.3f", r.seconds), ",\n     \"checks\": [");
    for (size_t j = 0; j < r.checks.size(); ++j) {
      const auto& c = r.checks[j];
      absl::StrAppend(&out, j ? ",\n       " : "\n       ", "{\"what\": ", JsonQuote(c.what),
                      ", \"expected\": ", JsonQuote(c.expected),
                      c.ok ? "" : absl::StrCat(", \"actual\": ", JsonQuote(c.actual)),
                      ", \"ok\": ", c.ok ? "true" : "false", "}");
    }
    absl::StrAppend(&out, "],\n     \"notes\": [");
    for (size_t j = 0; j < r.notes.size(); ++j) {
      absl::StrAppend(&out, j ? ", " : "", JsonQuote(r.notes[j]));
    }
    absl::StrAppend(&out, "],\n     \"transcript\": [");
    for (size_t j = 0; j < r.transcript.size(); ++j) {
      const auto& e = r.transcript[j];
      absl::StrAppend(
          &out, j ? ",\n       " : "\n       ", "{\"peer\": ", JsonQuote(e.peer),
          ", \"method\": ", JsonQuote(e.method), ", \"request\": ", JsonQuote(e.request),
          ", \"outcome\": ", JsonQuote(e.outcome), ", \"response\": ", JsonQuote(e.response), "}");
    }
    absl::StrAppend(&out, "]}", i + 1 < s.results.size() ? ",\n" : "\n");
  }
  absl::StrAppend(&out, "  ]\n}\n");
  return out;
}

std::string HtmlReport(const RunSummary& s) {
  std::string out = R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>aobj-conformance report</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top;font-size:13px}
th{background:#eee;text-align:left}.pass{background:#d9f2d9}.fail{background:#f7c6c6}.nonstrict{background:#fbe3b5}
.unsupported{background:#e4e4e4}.info{background:#d6e6fa}details pre{white-space:pre-wrap;font-size:12px;margin:4px 0}
.matrix td{text-align:center}code{font-size:12px}
</style></head><body>
)";
  absl::StrAppend(&out, "<h1>AOBJ/1 conformance: ", XmlEscape(s.target), "</h1>\n<p>",
                  XmlEscape(s.mode), " mode", s.strict ? ", strict" : "", ", started ",
                  XmlEscape(s.started), ", suite ", XmlEscape(s.suite_version), ". Result: <b>",
                  RunFailed(s) ? "FAIL" : "PASS", "</b></p>\n");
  if (!s.data_channel.empty()) {
    absl::StrAppend(&out, "<p>Data channel: ", XmlEscape(s.data_channel), "</p>\n");
  }
  if (!s.authorization.empty()) {
    absl::StrAppend(&out, "<p>Authorization: ", XmlEscape(s.authorization), "</p>\n");
  }
  if (!s.skipped.empty()) {
    absl::StrAppend(&out, "<p>Not run (--skip): ", XmlEscape(absl::StrJoin(s.skipped, " ")),
                    "</p>\n");
  }
  // The matrix: profile x verdict.
  std::map<std::string, std::map<Verdict, int>> matrix;
  for (const auto& r : s.results) matrix[r.def->profile][r.verdict]++;
  const Verdict all[] = {Verdict::kPass, Verdict::kFail, Verdict::kNonStrict,
                         Verdict::kUnsupported, Verdict::kInformational};
  absl::StrAppend(&out, "<h2>Matrix</h2><table class=\"matrix\"><tr><th>profile</th>");
  for (Verdict v : all) absl::StrAppend(&out, "<th>", std::string(VerdictName(v)), "</th>");
  absl::StrAppend(&out, "</tr>\n");
  for (const auto& [profile, counts] : matrix) {
    absl::StrAppend(&out, "<tr><th>", XmlEscape(profile), "</th>");
    for (Verdict v : all) {
      auto it = counts.find(v);
      const int n = it == counts.end() ? 0 : it->second;
      absl::StrAppend(&out, "<td class=\"", n ? Cls(v) : "", "\">", n, "</td>");
    }
    absl::StrAppend(&out, "</tr>\n");
  }
  absl::StrAppend(&out, "</table>\n<h2>Cases</h2><table><tr><th>ID</th><th>verdict</th>"
                        "<th>case</th><th>requirements</th><th>details</th></tr>\n");
  for (const auto& r : s.results) {
    absl::StrAppend(&out, "<tr><td><code>", XmlEscape(r.def->id), "</code></td><td class=\"",
                    Cls(r.verdict), "\">", std::string(VerdictName(r.verdict)), "</td><td>",
                    XmlEscape(r.def->title), r.def->hostile ? " <i>(hostile)</i>" : "",
                    "</td><td><code>", XmlEscape(absl::StrJoin(r.def->requirements, " ")),
                    "</code></td><td>");
    if (!r.reason.empty()) absl::StrAppend(&out, XmlEscape(r.reason), "<br>");
    std::string detail;
    for (const auto& c : r.checks) {
      absl::StrAppend(&detail, c.ok ? "ok   " : "FAIL ", c.what, "\n     expected ", c.expected,
                      c.ok ? "" : absl::StrCat("\n     actual   ", c.actual), "\n");
    }
    for (const auto& n : r.notes) absl::StrAppend(&detail, "note ", n, "\n");
    absl::StrAppend(&detail, "\n");
    for (const auto& e : r.transcript) {
      absl::StrAppend(&detail, e.peer, " -> ", e.method, " ", e.request, "\n   <- ", e.outcome,
                      e.response.empty() ? "" : " " + e.response, "\n");
    }
    absl::StrAppend(&out, "<details><summary>", r.checks.size(), " checks, ",
                    r.transcript.size(), " exchanges</summary><pre>", XmlEscape(detail),
                    "</pre></details></td></tr>\n");
  }
  absl::StrAppend(&out, "</table></body></html>\n");
  return out;
}

std::string CoverageReport(int* must_missing) {
  std::map<std::string, std::vector<std::string>> by_req;
  for (const auto& c : AllCases().cases()) {
    for (const auto& id : c.requirements) by_req[id].push_back(c.id);
  }
  std::map<std::string, std::string> unobservable;
  for (const auto& u : UnobservableRequirements()) unobservable[u.id] = u.reason;
  int missing_must = 0, covered = 0, hostile = 0, other_binding = 0;
  std::string out, missing, unobs, unknown;
  for (const auto& r : Requirements()) {
    auto it = by_req.find(r.id);
    if (it != by_req.end()) {
      ++covered;
      continue;
    }
    // Appendix D is binding 2 (verbs RC): this suite drives its targets over UCX (binding 1)
    // only, so those rules are listed apart, not reported as gaps.
    if (absl::StartsWith(r.section, "D.")) {
      ++other_binding;
      continue;
    }
    auto u = unobservable.find(r.id);
    if (u != unobservable.end()) {
      absl::StrAppend(&unobs, "  ", r.id, " (", r.level, ", ", r.section, "): ", u->second, "\n");
      continue;
    }
    if (IsMustLevel(r.level)) ++missing_must;
    absl::StrAppend(&missing, "  ", r.id, " (", r.level, ", section ", r.section, " ", r.title,
                    ")\n");
  }
  for (const auto& [id, cases] : by_req) {
    if (FindRequirement(id) == nullptr) {
      absl::StrAppend(&unknown, "  ", id, " (named by ", absl::StrJoin(cases, ", "), ")\n");
    }
  }
  // Every case a reason cites exists (a vendor is sent to it), and case IDs are unique.
  std::set<std::string> case_ids;
  std::string duplicated;
  for (const auto& c : AllCases().cases()) {
    if (!case_ids.insert(c.id).second) absl::StrAppend(&duplicated, "  ", c.id, "\n");
  }
  const std::regex cited(R"(\b[a-z]+/[0-9][0-9.]*/[0-9]+\b)");
  std::string dangling;
  for (const auto& u : UnobservableRequirements()) {
    const std::string reason = u.reason;
    for (std::sregex_iterator m(reason.begin(), reason.end(), cited), end; m != end; ++m) {
      if (case_ids.count(m->str()) == 0) {
        absl::StrAppend(&dangling, "  ", u.id, " cites case ", m->str(), "\n");
      }
    }
  }
  for (const auto& c : AllCases().cases()) hostile += c.hostile ? 1 : 0;
  absl::StrAppend(&out, "Requirements: ", Requirements().size(), "; checked by at least one case: ",
                  covered, "; not observable on the wire: ", UnobservableRequirements().size(),
                  "\nCases: ", AllCases().cases().size(), ", hostile: ", hostile, "\n");
  absl::StrAppend(&out, "\nNo case checks (", missing_must, " of them MUST level):\n",
                  missing.empty() ? "  (none)\n" : missing);
  absl::StrAppend(&out, "\nNot observable on the wire (checked elsewhere or not checkable):\n",
                  unobs);
  absl::StrAppend(&out, "\nBinding 2 (InfiniBand verbs, spec Appendix D): ", other_binding,
                  " requirements; this suite runs its targets over UCX (binding 1) only\n");
  if (!unknown.empty()) {
    absl::StrAppend(&out, "\nCases name requirements the spec does not have:\n", unknown);
    missing_must += 1000;
  }
  if (!duplicated.empty()) {
    absl::StrAppend(&out, "\nCase IDs used twice:\n", duplicated);
    missing_must += 1000;
  }
  if (!dangling.empty()) {
    absl::StrAppend(&out, "\nReasons cite cases the suite does not have:\n", dangling);
    missing_must += 1000;
  }
  if (must_missing != nullptr) *must_missing = missing_must;
  return out;
}

}  // namespace aobj::conformance
