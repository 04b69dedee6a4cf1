#include "harness/e2e/e2e_html.h"

#include <sstream>

#include "harness/judge/html.h"

namespace fk::e2e {

using nlohmann::json;
using bench::format_fixed;
using bench::html_escape;

namespace {

// A figure that may be missing (null) or unmeasured (<= 0 for speedups).
std::string number(const json& v, int precision = 3) {
  return v.is_number() ? format_fixed(v.get<double>(), precision) : "-";
}
std::string speedup(const json& v) { return v.is_number() && v.get<double>() > 0 ? format_fixed(v.get<double>()) : "-"; }
std::string scientific(const json& v) {
  if (!v.is_number()) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v.get<double>());
  return b;
}
std::string verdict_span(const std::string& v) {
  return "<span class='" + html_escape(v) + "'>" + html_escape(v) + "</span>";
}
std::string cell(const std::string& s) { return "<td>" + s + "</td>"; }
std::string header_row(std::initializer_list<const char*> names) {
  std::string s = "<tr>";
  for (const char* n : names) s += std::string("<th>") + n + "</th>";
  return s + "</tr>";
}

}  // namespace

std::string e2e_report_html(const json& report) {
  std::ostringstream s;
  const std::string verdict = report.value("verdict", "");
  s << bench::html_page_begin("fastkernels end-to-end evaluation");
  s << "<h2>" << verdict_span(verdict) << "</h2>";
  if (report.contains("reason")) s << "<pre>" << html_escape(report["reason"].get<std::string>().substr(0, 4000)) << "</pre>";
  s << "<table>" << header_row({"model", "category", "workload", "backend"}) << "<tr>"
    << cell(html_escape(report.value("model", ""))) << cell(html_escape(report.value("category", "")))
    << cell(html_escape(report.value("workload", ""))) << cell(html_escape(report.value("backend", ""))) << "</tr></table>";
  s << "<h2>Candidates</h2><table>" << header_row({"op", "task level", "source", "compiled"});
  for (const json& c : report.value("candidates", json::array()))
    s << "<tr>" << cell(html_escape(c.value("op", ""))) << cell(html_escape(c.value("level", "-")))
      << cell("<code>" + html_escape(c.value("source", "")) + "</code>")
      << cell(c.contains("ok") ? (c["ok"].get<bool>() ? "yes" : "failed") : "not reached") << "</tr>";
  s << "</table>";
  if (report.contains("comparison")) {
    const json& c = report["comparison"];
    const json& sp = c["speedup"];
    s << "<h2>Speedup</h2><table>" << header_row({"throughput", "latency", "elapsed"}) << "<tr>"
      << cell(speedup(sp["throughput"])) << cell(speedup(sp.value("latency", json()))) << cell(speedup(sp["elapsed"]))
      << "</tr></table>";
    s << bench::speedup_bars_svg({{"throughput", sp["throughput"].get<double>()},
                                  {"latency", sp.value("latency", 0.0)},
                                  {"elapsed", sp["elapsed"].get<double>()}});
    // Runs without tokens (text encoders, FLUX.1, detectors): their outputs' agreement.
    if (!c.contains("token_agreement")) {
      const json g = c.value("agreement", c.value("teacher_forced", json::object()));
      s << "<h2>Outputs against the baseline run</h2><table>" << header_row({"measure", "value", "bound"});
      for (const auto& [k, v] : g.items())
        s << "<tr>" << cell(html_escape(k)) << cell(v.is_number_integer() ? v.dump() : scientific(v))
          << cell(scientific(c.value("bounds", json::object()).value(k, json()))) << "</tr>";
      s << "</table>" << bench::html_page_end();
      return s.str();
    }
    const json& ta = c["token_agreement"];
    s << "<h2>Greedy tokens</h2><table>" << header_row({"requests", "exact match", "rate", "first divergence (min)"})
      << "<tr>" << cell(ta["requests"].dump()) << cell(ta["exact_match"].dump())
      << cell(number(ta["exact_match_rate"], 3)) << cell(ta["first_divergence_min"].dump()) << "</tr></table>";
    const json tf = c.value("teacher_forced", json::object());
    s << "<h2>Teacher-forced logits</h2><table>"
      << header_row({"positions", "max rel. error", "mean abs. error", "mean KL (nats)", "max KL (nats)"}) << "<tr>"
      << cell(tf.value("positions", json(0)).dump()) << cell(scientific(tf.value("max_rel_err", json())))
      << cell(scientific(tf.value("mean_abs_err", json()))) << cell(scientific(tf.value("mean_kl", json())))
      << cell(scientific(tf.value("max_kl", json()))) << "</tr></table>";
  }
  s << bench::html_page_end();
  return s.str();
}

std::string e2e_rollup_html(const json& r) {
  std::ostringstream s;
  s << bench::html_page_begin("fastkernels end-to-end scores");
  if (r.contains("selection")) s << "<p>" << html_escape(r["selection"].get<std::string>()) << "</p>";
  s << "<p>" << html_escape(r.value("rule", "")) << "</p>";
  s << "<h2>Geometric-mean speedups</h2><table>"
    << header_row({"group", "runs", "passed", "failures", "throughput", "latency"});
  std::vector<std::pair<std::string, double>> tp_bars, lat_bars;
  auto group_row = [&](const std::string& key, const json& g) {
    std::string failures;
    for (const auto& [v, n] : g["failures"].items()) failures += (failures.empty() ? "" : ", ") + verdict_span(v) + " " + n.dump();
    s << "<tr>" << cell(html_escape(key)) << cell(g["runs"].dump()) << cell(g["passed"].dump())
      << cell(failures.empty() ? "-" : failures) << cell(speedup(g["geomean_throughput_speedup"]))
      << cell(speedup(g["geomean_latency_speedup"])) << "</tr>";
    tp_bars.emplace_back(key, g["geomean_throughput_speedup"].get<double>());
    lat_bars.emplace_back(key, g["geomean_latency_speedup"].get<double>());
  };
  group_row("overall", r["groups"]["overall"]);
  for (const auto& [key, g] : r["groups"].items())
    if (key != "overall") group_row(key, g);
  auto bars = [](const std::vector<std::pair<std::string, double>>& b) {
    const std::string svg = bench::speedup_bars_svg(b);
    return svg.empty() ? std::string("<p>No run passed: no speedup to show.</p>") : svg;
  };
  s << "</table><h2>Throughput speedup</h2>" << bars(tp_bars);
  s << "<h2>Latency speedup</h2>" << bars(lat_bars);
  s << "<h2>Runs</h2><table>"
    << header_row({"id", "created", "model", "category", "workload", "candidates", "verdict", "throughput", "latency",
                   "exact match", "first divergence", "max logit error", "mean KL"});
  for (const json& run : r["runs"]) {
    std::string cands;
    for (const json& c : run["candidates"])
      cands += (cands.empty() ? "" : ", ") + html_escape(c["op"].get<std::string>()) +
               (c["level"].get<std::string>().empty() ? "" : " (" + html_escape(c["level"].get<std::string>()) + ")");
    s << "<tr>" << cell(run["id"].dump()) << cell(html_escape(run["created"].get<std::string>()))
      << cell("<code>" + html_escape(run["model"].get<std::string>()) + "</code>")
      << cell(html_escape(run["category"].get<std::string>())) << cell(html_escape(run["workload"].get<std::string>()))
      << cell(cands) << cell(verdict_span(run["verdict"].get<std::string>())) << cell(speedup(run["throughput_speedup"]))
      << cell(speedup(run["latency_speedup"])) << cell(number(run["exact_match_rate"], 2))
      << cell(run["first_divergence"].is_null() ? "-" : run["first_divergence"].dump())
      << cell(scientific(run["max_logit_err"])) << cell(scientific(run["kl"])) << "</tr>";
  }
  s << "</table>" << bench::html_page_end();
  return s.str();
}

}  // namespace fk::e2e
