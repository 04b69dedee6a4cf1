#include "harness/judge/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace fk::bench {

std::string format_fixed(double v, int precision) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.*f", precision, v);
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
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string html_page_begin(const std::string& title) {
  return "<!doctype html><html><head><meta charset='utf-8'><title>" + html_escape(title) +
         "</title><style>"
         "body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;margin:1em 0}"
         "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}"
         ".PASSED{color:#2ca02c}.INCORRECT,.RUNTIME_ERROR,.TIMEOUT,.COMPILE_ERROR{color:#d62728}"
         ".REWARD_HACK{color:#9467bd;font-weight:bold}pre{white-space:pre-wrap;font-size:12px;background:#f6f6f6}"
         "</style></head><body><h1>" +
         html_escape(title) + "</h1>";
}

std::string html_page_end() { return "</body></html>\n"; }

std::string speedup_bars_svg(const std::vector<std::pair<std::string, double>>& label_speedup) {
  std::vector<std::pair<std::string, double>> bars;
  for (const auto& b : label_speedup)
    if (b.second > 0) bars.push_back(b);
  if (bars.empty()) return "";
  const int bar = 22, W = 620, L = 260, H = static_cast<int>(bars.size()) * bar + 20;
  const double lo = std::log2(0.25), hi = std::log2(4.0);
  auto x = [&](double sp) { return L + (W - L - 60) * (std::clamp(std::log2(sp), lo, hi) - lo) / (hi - lo); };
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "' font-size='11'>";
  for (size_t i = 0; i < bars.size(); ++i) {
    const double sp = bars[i].second;
    const double yy = 5 + static_cast<double>(i) * bar;
    const double x0 = x(1.0), x1 = x(sp);
    s << "<text x='" << L - 6 << "' y='" << yy + 14 << "' text-anchor='end'>" << html_escape(bars[i].first)
      << "</text>";
    s << "<rect x='" << std::min(x0, x1) << "' y='" << yy + 3 << "' width='" << std::max(1.0, std::fabs(x1 - x0))
      << "' height='" << bar - 6 << "' fill='" << (sp >= 1 ? "#2ca02c" : "#d62728") << "'/>";
    s << "<text x='" << std::max(x0, x1) + 4 << "' y='" << yy + 14 << "'>" << format_fixed(sp, 2) << "x</text>";
  }
  s << "<line x1='" << x(1.0) << "' y1='0' x2='" << x(1.0) << "' y2='" << H << "' stroke='#333'/>";
  s << "</svg>";
  return s.str();
}

}  // namespace fk::bench
