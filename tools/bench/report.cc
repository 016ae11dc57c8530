#include "bench/report.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "wire/json.h"

namespace aobj::bench {

void Cell::Fill(LoadResult& r, double client_cpu_s, double server_cpu_s) {
  ops = r.ops;
  bytes = r.bytes;
  seconds = r.seconds();
  gbps = seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
  ops_per_s = seconds > 0 ? static_cast<double>(ops) / seconds : 0;
  latency_us = ComputePercentiles(r.latency_us);
  const double gb = static_cast<double>(bytes) / 1e9;
  if (gb > 0 && client_cpu_s >= 0) client_cpu_s_per_gb = client_cpu_s / gb;
  if (gb > 0 && server_cpu_s >= 0) server_cpu_s_per_gb = server_cpu_s / gb;
}

namespace {

bool IsAobj(const std::string& system) { return absl::StartsWith(system, "aobj"); }

const Cell* Find(const Report& r, const std::string& section, const std::string& system, Op op,
                 uint64_t size, int in_flight) {
  for (const Cell& c : r.cells) {
    if (c.section == section && c.system == system && c.op == op && c.size == size &&
        c.in_flight() == in_flight && c.error.empty() && c.ops > 0) {
      return &c;
    }
  }
  return nullptr;
}

std::string Num(double v, int prec = 2) {
  if (v < 0 || std::isnan(v)) return "-";
  return absl::StrFormat("%.*f", prec, v);
}

std::string JsonNum(double v) {
  if (std::isnan(v) || std::isinf(v) || v < 0) return "null";
  return absl::StrFormat("%.6g", v);
}

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

}  // namespace

std::vector<Ratio> ComputeRatios(const Report& report) {
  std::vector<Ratio> out;
  auto add = [&](const Cell& c, const Cell* v, const std::string& metric) {
    if (v == nullptr) return;
    double a = 0, b = 0;
    if (metric == "gbps") {
      a = c.gbps;
      b = v->gbps;
    } else if (metric == "ops_per_s") {
      a = c.ops_per_s;
      b = v->ops_per_s;
    } else {
      a = c.latency_us.p50;
      b = v->latency_us.p50;
    }
    if (b <= 0) return;
    out.push_back(
        Ratio{c.section, c.system, v->system, metric, c.op, c.size, c.in_flight(), a / b});
  };
  for (const Cell& c : report.cells) {
    if (!IsAobj(c.system) || !c.error.empty() || c.ops == 0) continue;
    if (c.section == "sweep") {
      const std::string ucx = c.transport == "default" ? "ucx" : "ucx-" + c.transport;
      // Raw UCX runs at the variant's total concurrency only when that equals its threads.
      add(c, Find(report, "sweep", ucx, c.op, c.size, c.in_flight()), "gbps");
      if (absl::StrContains(c.system, "-caller")) {
        add(c, Find(report, "sweep", ucx + "-caller", c.op, c.size, c.in_flight()), "gbps");
      }
      if (c.processes > 1) add(c, Find(report, "sweep", ucx, c.op, c.size, c.threads), "gbps");
      // Device memory against host memory (target: at least 0.7x).
      if (absl::StrContains(c.system, "-device")) {
        add(c,
            Find(report, "sweep", absl::StrReplaceAll(c.system, {{"-device", ""}}), c.op, c.size,
                 c.in_flight()),
            "gbps");
      }
      for (const char* peer : {"nginx", "moto"}) {
        add(c, Find(report, "sweep", peer, c.op, c.size, c.in_flight()), "gbps");
      }
      // N processes against one (target: aggregate at least that of one process).
      if (c.processes > 1) {
        for (const Cell& one : report.cells) {
          if (one.section == "sweep" && one.processes == 1 && IsAobj(one.system) &&
              one.op == c.op && one.size == c.size && one.transport == c.transport &&
              one.threads == c.threads && one.error.empty() && one.ops > 0 &&
              absl::StartsWith(c.system, one.system + "-")) {
            add(c, &one, "gbps");
          }
        }
      }
    } else if (c.section == "batch") {
      // Batched against single requests of the same store: objects per second.
      if (absl::EndsWith(c.system, "-batch256")) {
        const std::string single =
            absl::StrCat(c.system.substr(0, c.system.size() - strlen("-batch256")), "-single");
        add(c, Find(report, "batch", single, c.op, c.size, c.in_flight()), "ops_per_s");
      }
    } else {
      for (const char* peer : {"nginx", "nginx-wrk", "moto", "ucx"}) {
        const Cell* v = Find(report, "small", peer, c.op, c.size, c.in_flight());
        add(c, v, c.in_flight() == 1 ? "p50" : "ops_per_s");
      }
    }
  }
  return out;
}

std::string FormatTable(const Report& report) {
  std::string out;
  for (const char* section : {"sweep", "small", "batch"}) {
    bool any = false;
    for (const Cell& c : report.cells) any = any || c.section == section;
    if (!any) continue;
    absl::StrAppend(&out,
                    section == std::string("sweep") ? "\n== Throughput by object size ==\n"
                    : section == std::string("small")
                        ? "\n== Small requests (4 KiB) ==\n"
                        : "\n== Batched reads and writes (4 KiB objects; ops are objects) ==\n");
    absl::StrAppend(
        &out, absl::StrFormat("%-24s %-3s %6s %4s %7s %8s %10s %9s %9s %9s %9s %8s %8s\n", "system",
                              "op", "size", "infl", "ops", "GB/s", "ops/s", "p50 us", "p90 us",
                              "p99 us", "p99.9 us", "cli s/GB", "srv s/GB"));
    for (const Cell& c : report.cells) {
      if (c.section != section) continue;
      if (!c.error.empty()) {
        absl::StrAppend(&out,
                        absl::StrFormat("%-24s %-3s %6s %4d  FAILED: %s\n", c.system, OpName(c.op),
                                        SizeLabel(c.size), c.in_flight(), c.error));
        continue;
      }
      absl::StrAppend(
          &out,
          absl::StrFormat("%-24s %-3s %6s %4d %7d %8s %10s %9s %9s %9s %9s %8s %8s%s\n", c.system,
                          OpName(c.op), SizeLabel(c.size), c.in_flight(), c.ops, Num(c.gbps, 3),
                          Num(c.ops_per_s, 0), Num(c.latency_us.p50, 1), Num(c.latency_us.p90, 1),
                          Num(c.latency_us.p99, 1), Num(c.latency_us.p999, 1),
                          Num(c.client_cpu_s_per_gb, 3), Num(c.server_cpu_s_per_gb, 3),
                          c.note.empty() ? "" : "  (" + c.note + ")"));
    }
  }
  const std::vector<Ratio> ratios = ComputeRatios(report);
  if (!ratios.empty()) {
    absl::StrAppend(&out, "\n== Ratios (same run) ==\n");
    for (const Ratio& r : ratios) {
      absl::StrAppend(
          &out,
          absl::StrFormat("%-6s %-24s %-3s %6s infl %-3d %-10s vs %-18s %8.2fx%s\n", r.section,
                          r.system, OpName(r.op), SizeLabel(r.size), r.in_flight, r.metric,
                          r.versus, r.value, r.metric == "p50" ? "  (<1: aobj faster)" : ""));
    }
  }
  if (!report.idle.empty()) {
    absl::StrAppend(&out, "\n== Idle ==\n");
    for (const IdleFigures& i : report.idle) {
      absl::StrAppend(
          &out,
          absl::StrFormat("%-16s server %.3f CPU-s in %.1f s (%.2f%% of a core); client "
                          "process %.3f CPU-s\n",
                          i.system, i.server_cpu_s, i.seconds,
                          i.seconds > 0 ? 100 * i.server_cpu_s / i.seconds : 0, i.client_cpu_s));
    }
  }
  if (!report.memory.empty()) {
    absl::StrAppend(&out,
                    "\n== Server resident memory (MiB; anon = the server's own, shmem = "
                    "attached client segments) ==\n");
    auto mib = [](int64_t kib) { return Num(static_cast<double>(kib) / 1024, 1); };
    for (const MemoryFigures& m : report.memory) {
      absl::StrAppend(
          &out, absl::StrFormat("%-16s before %s (anon %s)  peak %s (anon %s, shmem %s)  after %s "
                                "(anon %s)\n",
                                m.system, mib(m.before_kib), mib(m.before_anon_kib),
                                mib(m.peak_kib), mib(m.peak_anon_kib), mib(m.peak_shmem_kib),
                                mib(m.after_kib), mib(m.after_anon_kib)));
    }
  }
  for (const std::string& n : report.notes) absl::StrAppend(&out, "note: ", n, "\n");
  return out;
}

std::string FormatJson(const Report& report) {
  std::string out =
      "{\n  \"tool\": \"aobj-bench\",\n  \"units\": {\"gbps\": \"1e9 bytes/s\", "
      "\"latency\": \"microseconds\", \"cpu\": \"CPU seconds per 1e9 bytes\"},\n";
  absl::StrAppend(&out, "  \"command\": ", JsonQuote(report.command), ",\n  \"machine\": {");
  for (size_t i = 0; i < report.machine.size(); ++i) {
    absl::StrAppend(&out, i ? ", " : "", JsonQuote(report.machine[i].first), ": ",
                    JsonQuote(report.machine[i].second));
  }
  absl::StrAppend(&out, "},\n  \"results\": [\n");
  for (size_t i = 0; i < report.cells.size(); ++i) {
    const Cell& c = report.cells[i];
    absl::StrAppend(
        &out, "    {\"section\": ", JsonQuote(c.section), ", \"system\": ", JsonQuote(c.system),
        ", \"transport\": ", JsonQuote(c.transport), ", \"op\": ", JsonQuote(OpName(c.op)),
        ", \"size\": ", c.size, ", \"threads\": ", c.threads, ", \"processes\": ", c.processes,
        ", \"in_flight\": ", c.in_flight(), ", \"ops\": ", c.ops, ", \"bytes\": ", c.bytes,
        ", \"seconds\": ", JsonNum(c.seconds), ", \"gbps\": ", JsonNum(c.gbps),
        ", \"ops_per_s\": ", JsonNum(c.ops_per_s),
        ", \"latency_us\": {\"p50\": ", JsonNum(c.latency_us.p50),
        ", \"p90\": ", JsonNum(c.latency_us.p90), ", \"p99\": ", JsonNum(c.latency_us.p99),
        ", \"p999\": ", JsonNum(c.latency_us.p999), ", \"mean\": ", JsonNum(c.latency_us.mean),
        ", \"max\": ", JsonNum(c.latency_us.max),
        "}, \"client_cpu_s_per_gb\": ", JsonNum(c.client_cpu_s_per_gb),
        ", \"server_cpu_s_per_gb\": ", JsonNum(c.server_cpu_s_per_gb),
        ", \"note\": ", JsonQuote(c.note), ", \"error\": ", JsonQuote(c.error), "}",
        i + 1 < report.cells.size() ? ",\n" : "\n");
  }
  absl::StrAppend(&out, "  ],\n  \"ratios\": [\n");
  const std::vector<Ratio> ratios = ComputeRatios(report);
  for (size_t i = 0; i < ratios.size(); ++i) {
    const Ratio& r = ratios[i];
    absl::StrAppend(&out, "    {\"section\": ", JsonQuote(r.section),
                    ", \"system\": ", JsonQuote(r.system), ", \"versus\": ", JsonQuote(r.versus),
                    ", \"metric\": ", JsonQuote(r.metric), ", \"op\": ", JsonQuote(OpName(r.op)),
                    ", \"size\": ", r.size, ", \"in_flight\": ", r.in_flight,
                    ", \"value\": ", JsonNum(r.value), "}", i + 1 < ratios.size() ? ",\n" : "\n");
  }
  absl::StrAppend(&out, "  ],\n  \"idle\": [\n");
  for (size_t i = 0; i < report.idle.size(); ++i) {
    const IdleFigures& d = report.idle[i];
    absl::StrAppend(
        &out, "    {\"system\": ", JsonQuote(d.system), ", \"seconds\": ", JsonNum(d.seconds),
        ", \"server_cpu_s\": ", JsonNum(d.server_cpu_s), ", \"server_cpu_percent\": ",
        JsonNum(d.seconds > 0 && d.server_cpu_s >= 0 ? 100 * d.server_cpu_s / d.seconds : -1),
        ", \"client_cpu_s\": ", JsonNum(d.client_cpu_s), "}",
        i + 1 < report.idle.size() ? ",\n" : "\n");
  }
  absl::StrAppend(&out, "  ],\n  \"memory\": [\n");
  for (size_t i = 0; i < report.memory.size(); ++i) {
    const MemoryFigures& m = report.memory[i];
    auto kib = [](int64_t v) { return v < 0 ? std::string("null") : absl::StrCat(v); };
    absl::StrAppend(&out, "    {\"system\": ", JsonQuote(m.system),
                    ", \"server_rss_before_kib\": ", kib(m.before_kib),
                    ", \"server_anon_before_kib\": ", kib(m.before_anon_kib),
                    ", \"server_rss_peak_kib\": ", kib(m.peak_kib),
                    ", \"server_anon_peak_kib\": ", kib(m.peak_anon_kib),
                    ", \"server_shmem_peak_kib\": ", kib(m.peak_shmem_kib),
                    ", \"server_rss_after_kib\": ", kib(m.after_kib),
                    ", \"server_anon_after_kib\": ", kib(m.after_anon_kib), "}",
                    i + 1 < report.memory.size() ? ",\n" : "\n");
  }
  absl::StrAppend(&out, "  ],\n  \"notes\": [");
  for (size_t i = 0; i < report.notes.size(); ++i) {
    absl::StrAppend(&out, i ? ", " : "", JsonQuote(report.notes[i]));
  }
  absl::StrAppend(&out, "]\n}\n");
  return out;
}

namespace {

// The command as a reader would type it: absolute paths (the program's, output files') without
// the machine's directories ("/home/me/aobj/build/aobj-bench --json /tmp/r.json" ->
// "aobj-bench --json r.json").
std::string CommandWithoutPath(const std::string& command) {
  std::vector<std::string> words = absl::StrSplit(command, ' ');
  for (std::string& w : words) {
    if (!w.empty() && w[0] == '/') w = w.substr(w.rfind('/') + 1);
  }
  return absl::StrJoin(words, " ");
}

// "2026-11-26T13:57:01Z, AMD EPYC 9R14 (2 cores, 24 GiB), UCX 1.13.1, UCX_NET_DEVICES=lo":
// when and where the figures were taken.
std::string SvgCaption(const Report& report) {
  std::map<std::string, std::string> m(report.machine.begin(), report.machine.end());
  std::string out = m["date"];
  if (!m["cpu"].empty()) absl::StrAppend(&out, out.empty() ? "" : ", ", m["cpu"]);
  if (!m["cores"].empty()) {
    absl::StrAppend(&out, " (", m["cores"], " cores",
                    m["memory"].empty() ? "" : absl::StrCat(", ", m["memory"]), ")");
  }
  if (!m["ucx"].empty()) absl::StrAppend(&out, ", UCX ", m["ucx"]);
  if (!m["UCX_NET_DEVICES"].empty()) {
    absl::StrAppend(&out, ", UCX_NET_DEVICES=", m["UCX_NET_DEVICES"]);
  }
  return out;
}

}  // namespace

std::string FormatSvg(const Report& report) {
  // Series: (system, op) of the sweep section, x = log2(size), y = log10(value).
  struct Series {
    std::string label;
    bool put = false;
    std::vector<std::pair<double, double>> gbps, p50;
  };
  std::vector<Series> series;
  std::set<uint64_t> sizes;
  for (const Cell& c : report.cells) {
    if (c.section != "sweep" || !c.error.empty() || c.ops == 0) continue;
    const std::string label = absl::StrCat(
        c.system, " ", OpName(c.op), c.in_flight() > 1 ? absl::StrCat(" x", c.in_flight()) : "");
    auto it = std::find_if(series.begin(), series.end(),
                           [&](const Series& s) { return s.label == label; });
    if (it == series.end()) {
      series.push_back(Series{label, c.op == Op::kPut, {}, {}});
      it = series.end() - 1;
    }
    const double x = std::log2(static_cast<double>(c.size));
    if (c.gbps > 0) it->gbps.emplace_back(x, c.gbps);
    if (c.latency_us.p50 > 0) it->p50.emplace_back(x, c.latency_us.p50);
    sizes.insert(c.size);
  }
  const int width = 980, panel_h = 340, left = 70, right = 300, top = 40, gap = 70;
  const int plot_w = width - left - right;
  const int height = top + 2 * panel_h + gap + 40;
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      width, height, width, height);
  if (sizes.empty()) return svg + "<text x=\"20\" y=\"30\">no results</text>\n</svg>\n";
  const double xmin = std::log2(static_cast<double>(*sizes.begin()));
  const double xmax = std::max(xmin + 1, std::log2(static_cast<double>(*sizes.rbegin())));
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  std::vector<std::string> systems;  // color by system (GET solid, PUT dashed)
  for (const Series& s : series) {
    const std::string sys = s.label.substr(0, s.label.find(' '));
    if (std::find(systems.begin(), systems.end(), sys) == systems.end()) systems.push_back(sys);
  }
  auto color = [&](const Series& s) {
    const std::string sys = s.label.substr(0, s.label.find(' '));
    const size_t i =
        static_cast<size_t>(std::find(systems.begin(), systems.end(), sys) - systems.begin());
    return kColors[i % 10];
  };
  auto panel = [&](int y0, const char* title, const char* unit, bool use_gbps) {
    double lo = 1e300, hi = -1e300;
    for (const Series& s : series) {
      for (const auto& [x, v] : use_gbps ? s.gbps : s.p50) {
        lo = std::min(lo, std::log10(v));
        hi = std::max(hi, std::log10(v));
      }
    }
    if (lo > hi) return;
    lo = std::floor(lo);
    hi = std::max(lo + 1, std::ceil(hi));
    auto px = [&](double x) { return left + (x - xmin) / (xmax - xmin) * plot_w; };
    auto py = [&](double v) { return y0 + panel_h - (std::log10(v) - lo) / (hi - lo) * panel_h; };
    absl::StrAppend(
        &svg, absl::StrFormat("<text x=\"%d\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">%s"
                              "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                              "fill=\"none\" stroke=\"#333\"/>\n",
                              left, y0 - 10, title, left, y0, plot_w, panel_h));
    for (double d = lo; d <= hi + 1e-9; d += 1) {
      const double y = py(std::pow(10.0, d));
      absl::StrAppend(
          &svg,
          absl::StrFormat("<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                          left, y, left + plot_w, y, left - 6, y + 4, std::pow(10.0, d)));
    }
    absl::StrAppend(&svg, absl::StrFormat("<text x=\"16\" y=\"%d\" transform=\"rotate(-90 16 %d)\" "
                                          "text-anchor=\"middle\">%s</text>\n",
                                          y0 + panel_h / 2, y0 + panel_h / 2, unit));
    for (uint64_t s : sizes) {
      const double x = px(std::log2(static_cast<double>(s)));
      absl::StrAppend(
          &svg,
          absl::StrFormat("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>"
                          "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                          x, y0, x, y0 + panel_h, x, y0 + panel_h + 16, SizeLabel(s)));
    }
    for (const Series& s : series) {
      const auto& pts = use_gbps ? s.gbps : s.p50;
      if (pts.empty()) continue;
      std::string path;
      for (const auto& [x, v] : pts) {
        absl::StrAppend(&path, path.empty() ? "M" : " L",
                        absl::StrFormat("%.1f,%.1f", px(x), py(v)));
      }
      absl::StrAppend(
          &svg,
          absl::StrFormat("<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
                          path, color(s), s.put ? " stroke-dasharray=\"6,4\"" : ""));
      for (const auto& [x, v] : pts) {
        absl::StrAppend(&svg,
                        absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
                                        px(x), py(v), color(s)));
      }
    }
  };
  panel(top, "Throughput (GB/s, log scale) vs object size", "GB/s", true);
  panel(top + panel_h + gap, "p50 latency (microseconds, log scale) vs object size", "p50 us",
        false);
  int ly = top + 10;
  for (const Series& s : series) {
    absl::StrAppend(
        &svg, absl::StrFormat("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                              "stroke-width=\"2\"%s/><text x=\"%d\" y=\"%d\">%s</text>\n",
                              left + plot_w + 20, ly, left + plot_w + 50, ly, color(s),
                              s.put ? " stroke-dasharray=\"6,4\"" : "", left + plot_w + 56, ly + 4,
                              XmlEscape(s.label)));
    ly += 18;
  }
  absl::StrAppend(&svg, absl::StrFormat("<text x=\"%d\" y=\"%d\" fill=\"#555\">%s</text>\n", left,
                                        height - 26, XmlEscape(SvgCaption(report))));
  absl::StrAppend(
      &svg, absl::StrFormat("<text x=\"%d\" y=\"%d\" fill=\"#555\">%s</text>\n", left, height - 10,
                            XmlEscape(CommandWithoutPath(report.command).substr(0, 140))));
  return svg + "</svg>\n";
}

}  // namespace aobj::bench
