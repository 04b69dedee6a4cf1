// `fk e2e eval | report | run`: candidates judged inside the engine. `eval` compiles every
// candidate of a folder (<op>.cu / <op>.cpp / <op>/), runs the workload twice in separate
// worker processes — the baseline, then every candidate installed — compares them (e2e/)
// and stores the run in the results database. `report` rolls the stored runs up per model
// and category. `run` is the worker.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "harness/sandbox/compile.h"
#include "harness/store/result_store.h"
#include "harness/sandbox/subprocess.h"
#include "harness/judge/task.h"
#include "cli/command.h"
#include "cli/engine_options.h"
#include "harness/e2e/e2e_compare.h"
#include "harness/e2e/e2e_html.h"
#include "harness/e2e/e2e_rollup.h"
#include "harness/e2e/e2e_run.h"
#include "harness/e2e/e2e_store.h"
#include "harness/e2e/model_identity.h"
#include "harness/e2e/repeat_runs.h"
#include "fk/op_registry.h"
#include "fk/status.h"

namespace fk::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void write_text(const std::string& path, const std::string& text, const char* what) {
  std::ofstream f(path);
  FK_CHECK(f.good(), "cannot write the ", what, " to ", path);
  f << text;
  FK_CHECK(f.good(), "cannot write the ", what, " to ", path);
}

struct RunCli {
  EngineOptions engine;
  std::string workload = "tiny";
  std::vector<std::string> installs;  // op=library
  std::string teacher_out, teacher_in, result;
};

void run_worker(const RunCli& o) {
  e2e::RunOptions r;
  r.engine = o.engine.to_config();
  r.workload = e2e::workload_spec(o.workload);
  for (const std::string& s : o.installs) {
    const auto eq = s.find('=');
    FK_CHECK(eq != std::string::npos, "--install takes OP=LIBRARY, got '", s, "'");
    r.installs.push_back({s.substr(0, eq), s.substr(eq + 1)});
  }
  r.teacher_out = o.teacher_out;
  r.teacher_in = o.teacher_in;
  write_text(o.result, e2e::run_workload(r).dump() + "\n", "run result");
}

struct EvalCli {
  EngineOptions engine;
  std::string workload = "tiny";
  std::string candidates;
  double timeout_s = 1800;
  int repeats = 3;  // engine runs per side, in alternating pairs (the median drops one slow run)
  std::string json_out, html_out, expect, db, batch, tasks_dir;
  bool no_db = false;
};

json read_json(const fs::path& p) {
  std::ifstream f(p);
  return json::parse(f);
}

// An output's folder is checked before the runs, not found missing after minutes of them.
void check_output_folder(const std::string& path, const char* option) {
  if (path.empty()) return;
  const fs::path parent = fs::absolute(path).parent_path();
  FK_CHECK(fs::is_directory(parent), option, " ", path, ": there is no folder ", parent.string());
}

fs::path db_path(const std::string& db) { return db.empty() ? bench::ResultStore::default_path() : fs::path(db); }

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

// The candidates of a folder, by op name.
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

int run_eval(const EvalCli& o) {
  // What can be wrong with the command line fails here, before minutes of runs: the model,
  // the workload, the candidates, the tasks, the output folders and the database.
  const engine::EngineConfig engine_config = o.engine.to_config();
  json report = {{"command", invoked_command()},
                 {"model", e2e::model_id(o.engine.model)},
                 {"category", e2e::model_category(o.engine.model)},
                 {"workload", o.workload},
                 {"backend", engine_config.backend == DeviceType::cuda ? "cuda" : "cpu"},
                 // Both sides' runs take these kernel variants (EngineOptions::to_args).
                 {"variants", OpRegistry::global().active_variants()}};
  report["workload_spec"] = e2e::to_json(e2e::workload_spec(o.workload));
  const auto found = find_candidates(o.candidates);
  const auto levels = task_levels(o.tasks_dir);
  check_output_folder(o.json_out, "--json");
  check_output_folder(o.html_out, "--html");
  std::unique_ptr<e2e::E2eStore> store;
  if (!o.no_db) store = std::make_unique<e2e::E2eStore>(db_path(o.db));

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
  if (verdict.empty()) {
    const fs::path tmp = fs::temp_directory_path() / concat("fk-e2e-", ::getpid());
    fs::create_directories(tmp);
    // teacher: "out" (the first baseline run writes the teacher-forced logits), "in" (the
    // first candidate run compares against them) or "" (a repeat: timing and tokens only).
    auto worker = [&](const std::string& name, bool candidate, const std::string& teacher) {
      std::vector<std::string> argv = {bench::self_executable(), "e2e", "run", "--workload", o.workload,
                                       "--result", (tmp / (name + ".json")).string()};
      for (const std::string& a : o.engine.to_args()) argv.push_back(a);
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
      return bench::run_process(argv, po);
    };
    // Pairs alternate their order (baseline first, then candidate first, ...) so that run
    // order does not pass for a speedup (harness/e2e/repeat_runs.h).
    std::vector<json> base_runs, cand_runs;
    for (int pair = 0; pair < o.repeats && verdict.empty(); ++pair) {
      for (const bool candidate_side : {!e2e::baseline_first(pair), e2e::baseline_first(pair)}) {
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
          break;
        } else if (!r.exited() || r.exit_code != 0) {
          verdict = "RUNTIME_ERROR";
          reason = concat(r.describe(), ": ", r.output.substr(r.output.size() > 2000 ? r.output.size() - 2000 : 0));
          break;
        } else {
          cand_runs.push_back(read_json(tmp / (name + ".json")));
        }
      }
    }
    if (verdict.empty()) {
      const json base = e2e::fold_runs(base_runs), cand = e2e::fold_runs(cand_runs);
      json cmp = e2e::compare_runs(base, cand);
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
    fs::remove_all(tmp);
  }
  report["verdict"] = verdict;
  if (!reason.empty()) report["reason"] = reason;
  if (store) {
    const std::string batch = o.batch.empty() ? bench::ResultStore::new_batch_id() : o.batch;
    const int64_t id = store->add(batch, e2e::record_of_report(report));
    report["stored"] = {{"db", store->path().string()}, {"batch", batch}, {"id", id}};
  }
  std::printf("%s\n", report.dump(2).c_str());
  if (!o.json_out.empty()) write_text(o.json_out, report.dump(2) + "\n", "report JSON");
  if (!o.html_out.empty()) write_text(o.html_out, e2e::e2e_report_html(report), "report HTML");
  if (store) std::printf("e2e: stored as run %lld of batch %s (fk e2e report)\n",
                         static_cast<long long>(report["stored"]["id"].get<int64_t>()),
                         report["stored"]["batch"].get<std::string>().c_str());
  if (!o.expect.empty()) {
    if (verdict != o.expect) {
      std::fprintf(stderr, "e2e: verdict %s, expected %s\n", verdict.c_str(), o.expect.c_str());
      return 1;
    }
    std::printf("e2e: verdict %s as expected\n", verdict.c_str());
  }
  return 0;
}

struct ReportCli {
  std::string db, model, batch, json_out, html_out;
};

// The roll-up over the stored runs: the latest per model × workload × candidate set, or
// every run of one batch; optionally of one model.
void run_report(const ReportCli& o) {
  const fs::path path = db_path(o.db);
  // Reading must not create: a mistyped path is an error, not an empty database.
  FK_CHECK(fs::is_regular_file(path), "no results database at ", path.string(),
           " (fk e2e eval stores its runs there; --db names another)");
  e2e::E2eStore store(path);
  const e2e::RunSelection sel = e2e::select_runs(store, o.model.empty() ? "" : e2e::model_id(o.model), o.batch);
  json r = e2e::rollup(sel.runs);
  r["selection"] = sel.description;
  r["db"] = path.string();
  std::printf("%s (%s)\n%s", sel.description.c_str(), path.c_str(), e2e::rollup_text(r).c_str());
  if (!o.json_out.empty()) write_text(o.json_out, r.dump(2) + "\n", "roll-up JSON");
  if (!o.html_out.empty()) write_text(o.html_out, e2e::e2e_rollup_html(r), "roll-up HTML");
}

void setup(CLI::App& app) {
  auto* e2e = app.add_subcommand("e2e", "Candidates judged inside the running engine");
  e2e->require_subcommand(1);

  static EvalCli ev;
  auto* eval = e2e->add_subcommand("eval", "Baseline run vs a run with every candidate of a folder installed");
  ev.engine.add_to(eval);
  eval->add_option("--candidates", ev.candidates, "Folder of <op>.cu / <op>.cpp / <op>/ candidates")->required();
  eval->add_option("--workload", ev.workload, "latency-1, latency-32, mixed, long, tiny, or a JSON file")
      ->capture_default_str();
  eval->add_option("--timeout", ev.timeout_s, "Seconds per engine run")->capture_default_str();
  eval->add_option("--repeats", ev.repeats,
                   "Engine runs per side, in pairs of alternating order (the timings are their medians)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  eval->add_option("--json", ev.json_out, "Also write the report here");
  eval->add_option("--html", ev.html_out, "Also write the report as a self-contained HTML page here");
  eval->add_option("--expect", ev.expect, "Exit 1 unless the verdict is this (tests)");
  eval->add_option("--db", ev.db, "Results database (default $FK_RESULTS_DB or ~/.cache/fastkernels/results.db)");
  eval->add_flag("--no-db", ev.no_db, "Do not store the run");
  eval->add_option("--batch", ev.batch, "Store the run under this batch id (default: a new one); fk e2e report --batch");
  eval->add_option("--tasks-dir", ev.tasks_dir,
                   "Task folder the candidates' levels are read from (default: the source tree's tasks/ or $FK_TASKS_DIR)");
  eval->callback([] {
    const int rc = run_eval(ev);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });

  static ReportCli rp;
  auto* report = e2e->add_subcommand("report", "Geometric-mean speedups of the stored runs per model and category");
  report->add_option("--db", rp.db, "Results database (default $FK_RESULTS_DB or ~/.cache/fastkernels/results.db)");
  report->add_option("--model", rp.model, "Only this model (a built-in name or checkpoint folder, as given to eval)");
  report->add_option("--batch", rp.batch, "Every run of this batch (default: the latest run of each model x workload x "
                                          "candidate set)");
  report->add_option("--json", rp.json_out, "Also write the roll-up as JSON here");
  report->add_option("--html", rp.html_out, "Also write the roll-up as a self-contained HTML page here");
  report->callback([] { run_report(rp); });

  static RunCli rn;
  auto* run = e2e->add_subcommand("run", "One engine run of a workload (the worker of e2e eval)");
  rn.engine.add_to(run);
  run->add_option("--workload", rn.workload)->capture_default_str();
  run->add_option("--install", rn.installs, "OP=LIBRARY: a compiled candidate to install (repeatable)");
  run->add_option("--teacher-out", rn.teacher_out, "Write teacher-forced sequences and logits here");
  run->add_option("--teacher-in", rn.teacher_in, "Compare against the teacher-forced logits here");
  run->add_option("--result", rn.result, "Result JSON")->required();
  run->callback([] { run_worker(rn); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
