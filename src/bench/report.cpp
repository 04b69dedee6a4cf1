#include "bench/report.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace fk::bench {

namespace {

std::string fmt(double v, int prec = 3) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.*f", prec, v);
  return b;
}

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string first_line(const std::string& s, size_t max = 160) {
  std::string l = s.substr(0, s.find('\n'));
  return l.size() > max ? l.substr(0, max) + "..." : l;
}

// fast_p as a step curve over p in [0, 3].
std::string fast_p_svg(const Json& summary) {
  const int W = 520, H = 260, L = 50, B = 30, T = 15, R = 15;
  auto x = [&](double p) { return L + (W - L - R) * p / 3.0; };
  auto y = [&](double f) { return T + (H - T - B) * (1.0 - f); };
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "' font-size='11'>";
  s << "<line x1='" << L << "' y1='" << y(0) << "' x2='" << W - R << "' y2='" << y(0) << "' stroke='#333'/>";
  s << "<line x1='" << L << "' y1='" << T << "' x2='" << L << "' y2='" << y(0) << "' stroke='#333'/>";
  for (double f : {0.0, 0.25, 0.5, 0.75, 1.0})
    s << "<text x='" << L - 6 << "' y='" << y(f) + 4 << "' text-anchor='end'>" << fmt(f, 2) << "</text>";
  std::string pts;
  for (const auto& e : summary["fast_p"]) {
    const double p = e["p"], f = e["fast_p"];
    s << "<text x='" << x(p) << "' y='" << H - 10 << "' text-anchor='middle'>" << fmt(p, 1) << "</text>";
    s << "<circle cx='" << x(p) << "' cy='" << y(f) << "' r='3' fill='#1f77b4'/>";
    pts += fmt(x(p), 1) + "," + fmt(y(f), 1) + " ";
  }
  s << "<polyline fill='none' stroke='#1f77b4' stroke-width='2' points='" << pts << "'/>";
  s << "<text x='" << (W + L) / 2 << "' y='" << H << "' text-anchor='middle'>p (speedup threshold)</text>";
  s << "</svg>";
  return s.str();
}

// One bar per timed workload: speedup on a log scale around 1.
std::string speedup_svg(const EvalResult& r) {
  std::vector<const WorkloadResult*> ws;
  for (const auto& w : r.workloads)
    if (w.timed && w.speedup > 0) ws.push_back(&w);
  if (ws.empty()) return "";
  const int bar = 22, W = 620, L = 260, H = static_cast<int>(ws.size()) * bar + 20;
  const double lo = std::log2(0.25), hi = std::log2(4.0);
  auto x = [&](double sp) { return L + (W - L - 60) * (std::clamp(std::log2(sp), lo, hi) - lo) / (hi - lo); };
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "' font-size='11'>";
  for (size_t i = 0; i < ws.size(); ++i) {
    const double sp = ws[i]->speedup;
    const double yy = 5 + static_cast<double>(i) * bar;
    const double x0 = x(1.0), x1 = x(sp);
    s << "<text x='" << L - 6 << "' y='" << yy + 14 << "' text-anchor='end'>"
      << html_escape(ws[i]->label.empty() ? ws[i]->shape.dump() : ws[i]->label) << "</text>";
    s << "<rect x='" << std::min(x0, x1) << "' y='" << yy + 3 << "' width='" << std::max(1.0, std::fabs(x1 - x0))
      << "' height='" << bar - 6 << "' fill='" << (sp >= 1 ? "#2ca02c" : "#d62728") << "'/>";
    s << "<text x='" << std::max(x0, x1) + 4 << "' y='" << yy + 14 << "'>" << fmt(sp, 2) << "x</text>";
  }
  s << "<line x1='" << x(1.0) << "' y1='0' x2='" << x(1.0) << "' y2='" << H << "' stroke='#333'/>";
  s << "</svg>";
  return s.str();
}

}  // namespace

std::string markdown_report(const std::vector<CandidateRun>& runs, const Json& summary) {
  std::ostringstream s;
  s << "# fastkernels evaluation\n\n";
  s << "| task | verdict | speedup | candidate | note |\n|---|---|---|---|---|\n";
  for (const auto& r : runs)
    s << "| " << r.task << " | " << verdict_name(r.result.verdict) << " | " << fmt(r.result.speedup) << " | `"
      << r.candidate.filename().string() << "` | " << first_line(r.result.message) << " |\n";
  s << "\n## fast_p\n\n| p |";
  for (const auto& e : summary["fast_p"]) s << " " << fmt(e["p"].get<double>(), 1) << " |";
  s << "\n|---|";
  for (size_t i = 0; i < summary["fast_p"].size(); ++i) s << "---|";
  s << "\n| fast_p |";
  for (const auto& e : summary["fast_p"]) s << " " << fmt(e["fast_p"].get<double>(), 2) << " |";
  s << "\n\n## Geometric-mean speedup\n\n| group | tasks | correct | geomean |\n|---|---|---|---|\n";
  for (const auto& [k, a] : summary["aggregates"].items())
    s << "| " << k << " | " << a["tasks"] << " | " << a["correct"] << " | " << fmt(a["geomean_speedup"].get<double>())
      << " |\n";
  s << "\n## Workloads\n\n| task | workload | baseline µs | candidate µs | speedup | SOL |\n|---|---|---|---|---|---|\n";
  for (const auto& r : runs)
    for (const auto& w : r.result.workloads)
      if (w.timed)
        s << "| " << r.task << " | `" << w.shape.dump() << "` | " << fmt(w.baseline.median_us, 2) << " | "
          << fmt(w.candidate.median_us, 2) << " | " << fmt(w.speedup) << " | "
          << (w.sol_candidate > 0 ? fmt(100 * w.sol_candidate, 1) + "%" : "-") << " |\n";
  return s.str();
}

std::string html_report(const std::vector<CandidateRun>& runs, const Json& summary) {
  std::ostringstream s;
  s << "<!doctype html><html><head><meta charset='utf-8'><title>fastkernels evaluation</title><style>"
       "body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;margin:1em 0}"
       "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}"
       ".PASSED{color:#2ca02c}.INCORRECT,.RUNTIME_ERROR,.TIMEOUT,.COMPILE_ERROR{color:#d62728}"
       ".REWARD_HACK{color:#9467bd;font-weight:bold}pre{white-space:pre-wrap;font-size:12px;background:#f6f6f6}"
       "</style></head><body><h1>fastkernels evaluation</h1>";
  s << "<h2>fast_p</h2>" << fast_p_svg(summary);
  s << "<h2>Geometric-mean speedup</h2><table><tr><th>group</th><th>tasks</th><th>correct</th><th>geomean</th></tr>";
  for (const auto& [k, a] : summary["aggregates"].items())
    s << "<tr><td>" << html_escape(k) << "</td><td>" << a["tasks"] << "</td><td>" << a["correct"] << "</td><td>"
      << fmt(a["geomean_speedup"].get<double>()) << "</td></tr>";
  s << "</table><h2>Tasks</h2>";
  for (const auto& r : runs) {
    const std::string v = verdict_name(r.result.verdict);
    s << "<h3>" << html_escape(r.task) << " — <span class='" << v << "'>" << v << "</span>, speedup "
      << fmt(r.result.speedup) << "</h3><p><code>" << html_escape(r.candidate.string()) << "</code></p>";
    s << speedup_svg(r.result);
    if (!r.result.message.empty()) s << "<pre>" << html_escape(r.result.message.substr(0, 4000)) << "</pre>";
  }
  s << "</body></html>\n";
  return s.str();
}

}  // namespace fk::bench
