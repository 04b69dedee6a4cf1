#include "harness/e2e/e2e_output_compare.h"

#include <limits>

#include "fk/status.h"
#include "harness/e2e/e2e_patterns.h"

namespace fk::e2e {

using nlohmann::json;

json compare_output_runs(const json& base, const json& cand, const std::vector<std::string>& reported,
                         const std::vector<OutputBound>& bounds) {
  json out;
  const double be = base.at("elapsed_s").get<double>(), ce = cand.at("elapsed_s").get<double>();
  out["speedup"] = {{"throughput", be / ce}, {"latency", be / ce}, {"elapsed", be / ce}};
  out["baseline"] = {{"elapsed_s", be}};
  out["candidate"] = {{"elapsed_s", ce}};
  for (const std::string& k : reported) {
    out["baseline"][k] = base.value(k, json());
    out["candidate"][k] = cand.value(k, json());
  }
  const json g = cand.value("agreement", json::object());
  out["agreement"] = g;
  out["bounds"] = json::object();
  for (const OutputBound& b : bounds) out["bounds"][b.key] = b.bound;
  std::string reason;
  if (g.empty() || g.value("values", 0) == 0) {
    reason = "no outputs were compared";
  } else {
    for (const OutputBound& b : bounds) {
      const json v = g.value(b.key, json());
      const double x = v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();
      if (b.at_least ? x >= b.bound : within(x, b.bound)) continue;
      reason = concat(b.before, v.dump(), b.after, " (bound ", b.bound, ")");
      break;
    }
  }
  out["verdict"] = reason.empty() ? "PASSED" : "INCORRECT";
  if (!reason.empty()) out["reason"] = reason;
  return out;
}

}  // namespace fk::e2e
