#include "harness/e2e/e2e_eval.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>

#include "fk/op_registry.h"
#include "fk/status.h"
#include "harness/e2e/e2e_patterns.h"
#include "harness/e2e/e2e_store.h"
#include "harness/e2e/model_identity.h"
#include "harness/e2e/repeat_runs.h"
#include "harness/judge/task.h"
#include "harness/sandbox/compile.h"
#include "harness/sandbox/subprocess.h"
#include "harness/store/result_store.h"

namespace fk::e2e {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json read_json(const fs::path& p) {
  std::ifstream f(p);
  return json::parse(f);
}

// The level of each op's task, recorded with the run (an op may have no task: no level).
// The task named after its op wins where several tasks share one op.
std::map<std::string, std::string> task_levels(const std::string& dir) {
  const fs::path d = dir.empty() ? bench::default_tasks_dir() : fs::path(dir);
  if (dir.empty() && !fs::is_directory(d)) return {};  // an installed fk without its source tree
  FK_CHECK(fs::is_directory(d), "--tasks-dir ", d.string(), " is not a folder");
  std::map<std::string, std::string> levels;
  for (const bench::Task& t : bench::load_tasks(d))
    if (t.id == t.op)
      levels[t.op] = t.level;
    else
      levels.emplace(t.op, t.level);
  return levels;
}

// The engine runs of both sides, in pairs of alternating order (repeat_runs.h), and their
// comparison; sets verdict/reason on the first failing candidate run.
void run_pairs(const E2eEvalOptions& o, const std::vector<std::string>& installs, json& report, std::string& verdict,
               std::string& reason) {
  const fs::path tmp = fs::temp_directory_path() / concat("fk-e2e-", ::getpid());
  fs::create_directories(tmp);
  struct RemoveTmp {
    fs::path p;
    ~RemoveTmp() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } remove_tmp{tmp};
  // teacher: "out" (the first baseline run writes the teacher-forced logits), "in" (the
  // first candidate run compares against them) or "" (a repeat: timing and tokens only).
  auto worker = [&](const std::string& name, bool candidate, const std::string& teacher) {
    std::vector<std::string> argv = {o.worker_executable.empty() ? bench::self_executable() : o.worker_executable,
                                     "e2e", "run", "--workload", o.workload,
                                     "--result", (tmp / (name + ".json")).string()};
    argv.insert(argv.end(), o.engine_args.begin(), o.engine_args.end());
    if (!teacher.empty()) {
      argv.push_back(teacher == "out" ? "--teacher-out" : "--teacher-in");
      argv.push_back((tmp / "teacher.safetensors").string());
    }
    if (candidate)
      for (const std::string& i : installs) {
        argv.push_back("--install");
        argv.push_back(i);
      }
    bench::ProcessOptions po;
    po.timeout_s = o.timeout_s;
    std::printf("e2e: %s run...\n", name.c_str());
    std::fflush(stdout);
    return bench::run_process(argv, po);
  };
  std::vector<json> base_runs, cand_runs;
  for (int pair = 0; pair < o.repeats && verdict.empty(); ++pair) {
    for (const bool candidate_side : {!baseline_first(pair), baseline_first(pair)}) {
      const size_t n = candidate_side ? cand_runs.size() : base_runs.size();
      const std::string name = concat(candidate_side ? "candidate" : "baseline", n);
      const std::string teacher = pair > 0 ? "" : candidate_side ? "in" : "out";
      const bench::ProcessResult r = worker(name, candidate_side, teacher);
      if (!candidate_side) {
        FK_CHECK(r.exited() && r.exit_code == 0, "e2e: the baseline run failed (", r.describe(), "):\n", r.output);
        base_runs.push_back(read_json(tmp / (name + ".json")));
      } else if (r.timed_out) {
        verdict = "TIMEOUT";
        reason = r.describe();
        return;
      } else if (!r.exited() || r.exit_code != 0) {
        verdict = "RUNTIME_ERROR";
        reason = concat(r.describe(), ": ", r.output.substr(r.output.size() > 2000 ? r.output.size() - 2000 : 0));
        return;
      } else {
        cand_runs.push_back(read_json(tmp / (name + ".json")));
      }
    }
  }
  // The backend the engine resolved ("auto" in the options), where the caller did not know it.
  if (report["backend"].get<std::string>().empty()) report["backend"] = base_runs.front().value("backend", "");
  const json base = fold_runs(base_runs), cand = fold_runs(cand_runs);
  json cmp = compare_pattern_runs(base, cand);
  cmp["runs_per_side"] = o.repeats;
  cmp["baseline"]["elapsed_s_runs"] = base["elapsed_s_runs"];
  cmp["candidate"]["elapsed_s_runs"] = cand["elapsed_s_runs"];
  cmp["baseline"]["reproducible"] = base["reproducible"];
  cmp["candidate"]["reproducible"] = cand["reproducible"];
  if (!base["reproducible"].get<bool>())
    cmp["warning"] = "the baseline's own runs produced different tokens: token agreement is not a reliable signal here";
  report["comparison"] = cmp;
  verdict = cmp["verdict"];
  reason = cmp.value("reason", "");
}

}  // namespace

std::vector<std::pair<std::string, fs::path>> find_candidates(const fs::path& dir) {
  FK_CHECK(fs::is_directory(dir), "--candidates ", dir.string(), " is not a folder");
  std::vector<std::pair<std::string, fs::path>> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const fs::path p = entry.path();
    const std::string ext = p.extension().string();
    if (!entry.is_directory() && ext != ".cu" && ext != ".cpp") continue;
    const std::string op = p.stem().string();
    FK_CHECK(OpRegistry::global().has(op), "candidate ", p.string(), ": no op named '", op,
             "' (name candidates <op>.cu, <op>.cpp or <op>/)");
    out.push_back({op, p});
  }
  std::sort(out.begin(), out.end());
  FK_CHECK(!out.empty(), "--candidates ", dir.string(), " holds no candidate");
  return out;
}

json evaluate_in_engine(const E2eEvalOptions& o) {
  FK_CHECK(o.repeats >= 1, "e2e: repeats must be at least 1, got ", o.repeats);
  // What can be wrong with the options fails here, before minutes of runs: the model, the
  // workload, the candidates, the tasks and the database.
  json report = {{"command", o.command},
                 {"model", model_id(o.model)},
                 {"category", model_category(o.model)},
                 {"workload", o.workload},
                 {"backend", o.backend},
                 // Both sides' runs take these kernel variants (the worker's --variant args).
                 {"variants", OpRegistry::global().active_variants()}};
  report["workload_spec"] = e2e_workload_json(o.model, o.workload);
  const auto found = find_candidates(o.candidates);
  const auto levels = task_levels(o.tasks_dir);
  std::unique_ptr<E2eStore> store;
  if (o.db) store = std::make_unique<E2eStore>(*o.db);

  // Every candidate is listed (with its task level); "ok" says how its compile went, and is
  // absent for those after a failed one (not compiled).
  json candidates = json::array();
  for (const auto& [op, src] : found) {
    candidates.push_back({{"op", op}, {"source", src.string()}});
    if (const auto l = levels.find(op); l != levels.end()) candidates.back()["level"] = l->second;
  }
  std::vector<std::string> installs;
  std::string verdict, reason;
  for (size_t i = 0; i < found.size(); ++i) {
    const auto& [op, src] = found[i];
    const bench::CompileResult c = bench::compile_candidate(src);
    candidates[i]["ok"] = c.ok;
    candidates[i]["cached"] = c.cached;
    if (!c.ok) {
      verdict = "COMPILE_ERROR";
      reason = concat(src.string(), ":\n", c.log);
      break;
    }
    installs.push_back(op + "=" + c.library.string());
  }
  report["candidates"] = candidates;
  if (verdict.empty()) run_pairs(o, installs, report, verdict, reason);
  report["verdict"] = verdict;
  if (!reason.empty()) report["reason"] = reason;
  if (store) {
    const std::string batch = o.batch.empty() ? bench::ResultStore::new_batch_id() : o.batch;
    const int64_t id = store->add(batch, record_of_report(report));
    report["stored"] = {{"db", store->path().string()}, {"batch", batch}, {"id", id}};
  }
  return report;
}

}  // namespace fk::e2e
