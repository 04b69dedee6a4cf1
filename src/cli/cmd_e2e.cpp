// `fk e2e eval | report | run`: candidates judged inside the engine. `eval` is
// harness/e2e/e2e_eval.h's evaluation (compile, baseline and candidate runs in worker
// processes, comparison, store) with its report printed and written; `report` rolls the
// stored runs up per model and category; `run` is the worker (an engine run for Generate
// models, a batch pass for text encoders, the denoising loop for FLUX.1, forwards for the
// detectors, DLRM and the image classifiers).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/store/result_store.h"
#include "cli/command.h"
#include "harness/e2e/e2e_batch_run.h"
#include "harness/e2e/e2e_denoise_run.h"
#include "harness/e2e/e2e_classify_run.h"
#include "harness/e2e/e2e_detect_run.h"
#include "harness/e2e/e2e_recommend_run.h"
#include "harness/e2e/e2e_patterns.h"
#include "cli/engine_options.h"
#include "harness/e2e/e2e_eval.h"
#include "harness/e2e/e2e_html.h"
#include "harness/e2e/e2e_rollup.h"
#include "harness/e2e/e2e_run.h"
#include "harness/e2e/e2e_store.h"
#include "harness/e2e/model_identity.h"
#include "fk/op_registry.h"
#include "fk/runtime.h"
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

// FLUX.1 (Denoise), the detectors, DLRM and the image classifiers: their own runs
// (e2e_denoise_run.h, e2e_detect_run.h, e2e_recommend_run.h, e2e_classify_run.h).
template <class Options>
Options image_run_options(const RunCli& o) {
  const engine::EngineConfig ec = o.engine.to_config();  // validates, selects --variant
  Options r;
  r.model = o.engine.model;
  r.dummy_weights = o.engine.dummy_weights;
  r.backend = ec.backend;
  r.dtype = ec.dtype;
  r.seed = o.engine.seed;
  r.workload = o.workload;
  for (const std::string& s : o.installs) {
    const auto eq = s.find('=');
    FK_CHECK(eq != std::string::npos, "--install takes OP=LIBRARY, got '", s, "'");
    r.installs.push_back({s.substr(0, eq), s.substr(eq + 1)});
  }
  r.teacher_out = o.teacher_out;
  r.teacher_in = o.teacher_in;
  return r;
}

void run_worker(const RunCli& o) {
  const e2e::E2eKind kind = e2e::e2e_kind(o.engine.model);
  if (kind == e2e::E2eKind::denoise) {
    const json r = e2e::run_denoise_workload(image_run_options<e2e::DenoiseRunOptions>(o));
    write_text(o.result, r.dump() + "\n", "run result");
    return;
  }
  if (kind == e2e::E2eKind::detect) {
    const json r = e2e::run_detect_workload(image_run_options<e2e::DetectRunOptions>(o));
    write_text(o.result, r.dump() + "\n", "run result");
    return;
  }
  if (kind == e2e::E2eKind::classify) {
    const json r = e2e::run_classify_workload(image_run_options<e2e::ClassifyRunOptions>(o));
    write_text(o.result, r.dump() + "\n", "run result");
    return;
  }
  if (kind == e2e::E2eKind::recommend) {
    const json r = e2e::run_recommend_workload(image_run_options<e2e::RecommendRunOptions>(o));
    write_text(o.result, r.dump() + "\n", "run result");
    return;
  }
  if (kind == e2e::E2eKind::text_encoder) {
    const engine::EngineConfig ec = o.engine.to_config();  // validates, selects --variant
    e2e::BatchRunOptions b;
    b.model = o.engine.model;
    b.backend = ec.backend;
    b.dtype = ec.dtype;
    b.workload = o.workload;
    for (const std::string& s : o.installs) {
      const auto eq = s.find('=');
      FK_CHECK(eq != std::string::npos, "--install takes OP=LIBRARY, got '", s, "'");
      b.installs.push_back({s.substr(0, eq), s.substr(eq + 1)});
    }
    b.teacher_out = o.teacher_out;
    b.teacher_in = o.teacher_in;
    write_text(o.result, e2e::run_batch_workload(b).dump() + "\n", "run result");
    return;
  }
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

// An output's folder is checked before the runs, not found missing after minutes of them.
void check_output_folder(const std::string& path, const char* option) {
  if (path.empty()) return;
  const fs::path parent = fs::absolute(path).parent_path();
  FK_CHECK(fs::is_directory(parent), option, " ", path, ": there is no folder ", parent.string());
}

fs::path db_path(const std::string& db) { return db.empty() ? bench::ResultStore::default_path() : fs::path(db); }

int run_eval(const EvalCli& o) {
  const engine::EngineConfig engine_config = o.engine.to_config();  // bad engine options fail here
  if (engine_config.backend == DeviceType::cuda && !rt::cuda_available()) {
    std::fprintf(stderr, "fk: --device cuda: no CUDA device available\n");
    return 77;  // the conventional "skipped" code (ctest SKIP_RETURN_CODE)
  }
  check_output_folder(o.json_out, "--json");
  check_output_folder(o.html_out, "--html");
  e2e::E2eEvalOptions eo;
  eo.model = o.engine.model;
  eo.backend = engine_config.backend == DeviceType::cuda ? "cuda" : "cpu";
  eo.engine_args = o.engine.to_args();
  eo.workload = o.workload;
  eo.candidates = o.candidates;
  eo.timeout_s = o.timeout_s;
  eo.repeats = o.repeats;
  eo.tasks_dir = o.tasks_dir;
  if (!o.no_db) eo.db = db_path(o.db);
  eo.batch = o.batch;
  eo.command = invoked_command();
  const json report = e2e::evaluate_in_engine(eo);
  const std::string verdict = report["verdict"];
  std::printf("%s\n", report.dump(2).c_str());
  if (!o.json_out.empty()) write_text(o.json_out, report.dump(2) + "\n", "report JSON");
  if (!o.html_out.empty()) write_text(o.html_out, e2e::e2e_report_html(report), "report HTML");
  if (report.contains("stored"))
    std::printf("e2e: stored as run %lld of batch %s (fk e2e report)\n",
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
  eval->add_option("--workload", ev.workload,
                   "Generate models: latency-1, latency-32, mixed, long, tiny, or a JSON file; text encoders "
                   "(Batch): tiny, mixed, or BxL sequences of tokens (e.g. 32x512); FLUX.1 (Denoise): tiny, Npx or "
                   "BxNpx (e.g. 1024px); detectors: tiny or BxS images (e.g. 1x640)")
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
