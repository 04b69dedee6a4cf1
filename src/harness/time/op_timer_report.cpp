// The table and JSON of `fk ops bench`.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "harness/time/op_timer.h"

namespace fk::bench {

std::string current_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\0') {
      out += raw[i];
    } else if (i + 1 < raw.size()) {
      out += ' ';
    }
  }
  return out;
}

std::string format_table(const OpBenchReport& report) {
  std::ostringstream os;
  os << "device " << report.device << ", " << report.date << "\n";
  if (!report.ceilings) os << kNoCeilingsHint << "\n";
  char line[640];
  std::snprintf(line, sizeof line, "%-26s %-44s %10s %10s %10s %5s %9s %8s %s\n", "op", "workload", "median us",
                "p10 us", "p90 us", "sets", "GB/s", "TFLOP/s", "SOL");
  os << line;
  for (const OpBenchResult& r : report.results) {
    std::string w = r.workload.dump();
    if (w.size() > 44) w = w.substr(0, 41) + "...";
    if (!r.error.empty()) {
      std::snprintf(line, sizeof line, "%-26s %-44s FAILED: %s\n", r.op.c_str(), w.c_str(), r.error.c_str());
      os << line;
      continue;
    }
    char sol[48] = "-";
    if (r.sol) std::snprintf(sol, sizeof sol, "%.1f%% (%s)", *r.sol * 100.0, r.sol_bound.c_str());
    std::snprintf(line, sizeof line, "%-26s %-44s %10.2f %10.2f %10.2f %5d %9.1f %8.2f %s\n", r.op.c_str(), w.c_str(),
                  r.us.median, r.us.p10, r.us.p90, r.num_sets, r.gbps, r.tflops, sol);
    os << line;
  }
  return os.str();
}

nlohmann::json to_json(const OpBenchReport& report) {
  nlohmann::json results = nlohmann::json::array();
  for (const OpBenchResult& r : report.results) {
    nlohmann::json j = {{"op", r.op}, {"workload", r.workload}, {"implementation", r.implementation}};
    if (!r.error.empty()) {
      j["error"] = r.error;
      results.push_back(j);
      continue;
    }
    j["cost"] = {{"bytes", r.cost.bytes}, {"flops", r.cost.flops}, {"math_dtype", dtype_name(r.cost.math_dtype)}};
    j["num_sets"] = r.num_sets;
    j["set_bytes"] = r.set_bytes;
    j["us"] = to_json(r.us);
    j["samples_us"] = r.samples_us;
    j["gbps"] = r.gbps;
    j["tflops"] = r.tflops;
    if (r.sol) {
      j["sol_fraction"] = *r.sol;
      j["sol_bound"] = r.sol_bound;
    }
    if (r.bandwidth_fraction) j["bandwidth_fraction"] = *r.bandwidth_fraction;
    if (r.compute_fraction) j["compute_fraction"] = *r.compute_fraction;
    results.push_back(j);
  }
  const TimerOptions& t = report.timer;
  nlohmann::json j = {{"device", report.device},
                      {"command_line", report.command_line},
                      {"date", report.date},
                      {"timer",
                       {{"warmup_calls", t.warmup_calls},
                        {"min_calls", t.min_calls},
                        {"max_calls", t.max_calls},
                        {"min_time_ms", t.min_time_ms},
                        {"max_time_ms", t.max_time_ms},
                        {"flush_l2", t.flush_l2}}},
                      {"results", results}};
  if (report.ceilings) j["ceilings"] = to_json(*report.ceilings);
  else j["ceilings"] = nullptr;
  return j;
}

}  // namespace fk::bench
