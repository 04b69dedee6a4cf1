// The pieces every self-contained HTML report is built from (kernel evaluations and the
// end-to-end reports): one page style with verdict colours, escaping, number formatting,
// and a speedup bar chart, so all reports look and read alike.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace fk::bench {

std::string format_fixed(double v, int precision = 3);  // "%.*f"
std::string html_escape(const std::string& s);
// <!doctype ...><head> with the shared style, up to and including the <h1>title</h1>.
std::string html_page_begin(const std::string& title);
std::string html_page_end();
// One bar per (label, speedup) on a log scale from 0.25x to 4x around 1 (green faster, red
// slower); entries with a speedup <= 0 (not measured) are left out; "" when none is left.
std::string speedup_bars_svg(const std::vector<std::pair<std::string, double>>& label_speedup);

}  // namespace fk::bench
