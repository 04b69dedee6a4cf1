#include "agent/e2e_check.h"

#include <fstream>

#include "harness/sandbox/subprocess.h"
#include "fk/status.h"

namespace fk::agent {

namespace fs = std::filesystem;
using nlohmann::json;

json e2e_check(const E2eOptions& o, const bench::Task& task, const fs::path& candidate, const fs::path& out_dir) {
  // fk e2e eval names candidates by op, fk kernels eval by task id: a folder of its own.
  const fs::path dir = out_dir / "e2e" / task.id;
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(candidate, dir / (task.op + candidate.extension().string()));
  const fs::path report = out_dir / "e2e" / (task.id + ".json");
  fs::remove(report);
  std::vector<std::string> argv = {o.fk_executable.empty() ? bench::self_executable() : o.fk_executable,
                                   "e2e", "eval", "--model", o.model, "--workload", o.workload,
                                   "--candidates", dir.string(), "--json", report.string()};
  if (o.results_db.empty()) {
    argv.push_back("--no-db");
  } else {
    argv.push_back("--db");
    argv.push_back(o.results_db.string());
  }
  argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
  bench::ProcessOptions po;
  po.timeout_s = o.timeout_s;
  const bench::ProcessResult pr = bench::run_process(argv, po);
  json out = {{"model", o.model}, {"workload", o.workload}, {"seconds", pr.seconds}};
  const json rep = fs::exists(report) ? json::parse(std::ifstream(report), nullptr, false) : json();
  if (rep.is_object() && rep.contains("verdict")) {
    out["verdict"] = rep["verdict"];
    out["reason"] = rep.value("reason", "");
    out["report"] = report.string();
    if (rep.contains("comparison")) out["comparison"] = rep["comparison"];
  } else {
    const std::string& s = pr.output;
    out["verdict"] = pr.timed_out ? "TIMEOUT" : "ERROR";
    out["reason"] = concat("fk e2e eval ", pr.describe(), ": ", s.substr(s.size() > 2000 ? s.size() - 2000 : 0));
  }
  return out;
}

}  // namespace fk::agent
