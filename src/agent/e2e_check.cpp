#include "agent/e2e_check.h"

#include <chrono>
#include <fstream>

#include "fk/status.h"
#include "harness/e2e/e2e_eval.h"

namespace fk::agent {

namespace fs = std::filesystem;
using nlohmann::json;

json e2e_check(const E2eOptions& o, const bench::Task& task, const fs::path& candidate, const fs::path& out_dir) {
  // The e2e evaluation names candidates by op, fk kernels eval by task id: a folder of its own.
  const fs::path dir = out_dir / "e2e" / task.id;
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(candidate, dir / (task.op + candidate.extension().string()));
  const fs::path report_path = out_dir / "e2e" / (task.id + ".json");
  fs::remove(report_path);

  e2e::E2eEvalOptions eo;
  eo.model = o.model;
  eo.engine_args = {"--model", o.model};
  eo.engine_args.insert(eo.engine_args.end(), o.extra_args.begin(), o.extra_args.end());
  eo.workload = o.workload;
  eo.candidates = dir;
  eo.timeout_s = o.timeout_s;
  if (!o.results_db.empty()) eo.db = o.results_db;
  eo.command = concat("fk agent: end-to-end check of ", task.id);
  eo.worker_executable = o.fk_executable;

  const auto start = std::chrono::steady_clock::now();
  json out = {{"model", o.model}, {"workload", o.workload}};
  try {
    const json rep = e2e::evaluate_in_engine(eo);
    std::ofstream(report_path) << rep.dump(2) << "\n";
    out["verdict"] = rep["verdict"];
    out["reason"] = rep.value("reason", "");
    out["report"] = report_path.string();
    if (rep.contains("comparison")) out["comparison"] = rep["comparison"];
  } catch (const std::exception& e) {
    // The evaluation itself failed (its baseline run, bad options): no verdict on the candidate.
    out["verdict"] = "ERROR";
    out["reason"] = concat("end-to-end evaluation: ", e.what());
  }
  out["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace fk::agent
