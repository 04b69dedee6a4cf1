// Self-contained HTML for end-to-end results, in the kernel reports' style (harness/judge/html.h):
// one `fk e2e eval` report, and a roll-up over stored runs (e2e_rollup.h).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace fk::e2e {

std::string e2e_report_html(const nlohmann::json& report);  // what `fk e2e eval` prints
std::string e2e_rollup_html(const nlohmann::json& rollup);  // rollup(), optionally with "selection"

}  // namespace fk::e2e
