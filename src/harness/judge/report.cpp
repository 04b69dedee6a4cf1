#include "harness/judge/report.h"

#include <cmath>
#include <sstream>

#include "harness/judge/html.h"

namespace fk::bench {

namespace {

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
    s << "<text x='" << L - 6 << "' y='" << y(f) + 4 << "' text-anchor='end'>" << format_fixed(f, 2) << "</text>";
  std::string pts;
  for (const auto& e : summary["fast_p"]) {
    const double p = e["p"], f = e["fast_p"];
    s << "<text x='" << x(p) << "' y='" << H - 10 << "' text-anchor='middle'>" << format_fixed(p, 1) << "</text>";
    s << "<circle cx='" << x(p) << "' cy='" << y(f) << "' r='3' fill='#1f77b4'/>";
    pts += format_fixed(x(p), 1) + "," + format_fixed(y(f), 1) + " ";
  }
  s << "<polyline fill='none' stroke='#1f77b4' stroke-width='2' points='" << pts << "'/>";
  s << "<text x='" << (W + L) / 2 << "' y='" << H << "' text-anchor='middle'>p (speedup threshold)</text>";
  s << "</svg>";
  return s.str();
}

// One bar per timed workload.
std::string speedup_svg(const EvalResult& r) {
  std::vector<std::pair<std::string, double>> bars;
  for (const auto& w : r.workloads)
    if (w.timed) bars.emplace_back(w.label.empty() ? w.shape.dump() : w.label, w.speedup);
  return speedup_bars_svg(bars);
}

}  // namespace

bool speedup_measured(double speedup) { return std::isfinite(speedup) && speedup > 0; }

std::string format_speedup(double speedup, int precision) {
  return speedup_measured(speedup) ? format_fixed(speedup, precision) : "n/a";
}

std::string format_time_us(const TimingStats& t, int precision) {
  return t.samples > 0 && std::isfinite(t.median_us) ? format_fixed(t.median_us, precision) : "-";
}

std::string markdown_report(const std::vector<CandidateRun>& runs, const Json& summary) {
  std::ostringstream s;
  s << "# fastkernels evaluation\n\n";
  s << "| task | verdict | speedup | backend | device | sandbox | candidate | note |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : runs)
    s << "| " << r.task << " | " << verdict_name(r.result.verdict) << " | " << format_speedup(r.result.speedup) << " | "
      << r.result.backend << " | " << r.result.device << " | " << r.result.sandbox << " | `"
      << r.candidate.filename().string() << "` | " << first_line(r.result.message) << " |\n";
  s << "\n## fast_p\n\n| p |";
  for (const auto& e : summary["fast_p"]) s << " " << format_fixed(e["p"].get<double>(), 1) << " |";
  s << "\n|---|";
  for (size_t i = 0; i < summary["fast_p"].size(); ++i) s << "---|";
  s << "\n| fast_p |";
  for (const auto& e : summary["fast_p"]) s << " " << format_fixed(e["fast_p"].get<double>(), 2) << " |";
  s << "\n\n## Geometric-mean speedup\n\n| group | tasks | correct | geomean |\n|---|---|---|---|\n";
  for (const auto& [k, a] : summary["aggregates"].items())
    s << "| " << k << " | " << a["tasks"] << " | " << a["correct"] << " | "
      << format_speedup(a["geomean_speedup"].get<double>()) << " |\n";
  s << "\n## Workloads\n\n| task | workload | baseline µs | candidate µs | speedup | SOL |\n|---|---|---|---|---|---|\n";
  for (const auto& r : runs)
    for (const auto& w : r.result.workloads)
      if (w.timed)
        s << "| " << r.task << " | `" << w.shape.dump() << "` | " << format_time_us(w.baseline) << " | "
          << format_time_us(w.candidate) << " | " << format_speedup(w.speedup) << " | "
          << (w.sol_candidate > 0 ? format_fixed(100 * w.sol_candidate, 1) + "%" : "-") << " |\n";
  return s.str();
}

std::string html_report(const std::vector<CandidateRun>& runs, const Json& summary) {
  std::ostringstream s;
  s << html_page_begin("fastkernels evaluation");
  s << "<h2>fast_p</h2>" << fast_p_svg(summary);
  s << "<h2>Geometric-mean speedup</h2><table><tr><th>group</th><th>tasks</th><th>correct</th><th>geomean</th></tr>";
  for (const auto& [k, a] : summary["aggregates"].items())
    s << "<tr><td>" << html_escape(k) << "</td><td>" << a["tasks"] << "</td><td>" << a["correct"] << "</td><td>"
      << format_speedup(a["geomean_speedup"].get<double>()) << "</td></tr>";
  s << "</table><h2>Tasks</h2>";
  for (const auto& r : runs) {
    const std::string v = verdict_name(r.result.verdict);
    s << "<h3>" << html_escape(r.task) << " — <span class='" << v << "'>" << v << "</span>, speedup "
      << format_speedup(r.result.speedup) << "</h3><p><code>" << html_escape(r.candidate.string()) << "</code> on "
      << html_escape(r.result.backend) << " (" << html_escape(r.result.device) << "), sandbox "
      << html_escape(r.result.sandbox.empty() ? "unknown" : r.result.sandbox) << "</p>";
    s << speedup_svg(r.result);
    if (!r.result.message.empty()) s << "<pre>" << html_escape(r.result.message.substr(0, 4000)) << "</pre>";
  }
  s << html_page_end();
  return s.str();
}

}  // namespace fk::bench
