// `fk kernels list | show | new | eval`: the kernel benchmark.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "harness/judge/eval_pipeline.h"
#include "harness/judge/op_source.h"
#include "harness/judge/report.h"
#include "harness/sandbox/runner_args.h"
#include "harness/store/result_store.h"
#include "cli/command.h"
#include "cli/variant_option.h"
#include "core/status_line.h"
#include "fk/op_registry.h"
#include "fk/runtime.h"

namespace fk::cli {
namespace {

namespace fs = std::filesystem;
using namespace fk::bench;

struct KernelsOptions {
  std::string tasks_dir, level, category, arch, task, candidate, dir, json_out, backend = "auto", output;
  std::string request, result, db, report_dir;
  bool no_db = false;
  int rounds = 3;
  int timed_calls = 50;
  double timeout = 600;
  bool cpu_stub = false, expect = false, no_fail_exit = false;
  std::vector<std::string> variants;  // --variant: the baselines' kernel variants (each worker runs them too)
};
KernelsOptions g;

std::vector<Task> tasks_selected() {
  auto tasks = load_tasks(g.tasks_dir.empty() ? default_tasks_dir() : fs::path(g.tasks_dir));
  TaskFilter f{g.level, g.category, g.arch};
  std::erase_if(tasks, [&](const Task& t) { return !f.matches(t); });
  return tasks;
}

const Task& find_task(const std::vector<Task>& tasks, const std::string& id) {
  for (const auto& t : tasks)
    if (t.id == id) return t;
  std::string known;
  for (const auto& t : tasks) known += (known.empty() ? "" : ", ") + t.id;
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, "unknown task '", id, "' (known: ", known, ")");
}

void cmd_list() {
  std::printf("%-30s %-4s %-12s %-9s %s\n", "task", "lvl", "category", "workloads", "architectures");
  for (const auto& t : tasks_selected()) {
    std::string archs;
    for (const auto& a : t.architectures) archs += (archs.empty() ? "" : ",") + a;
    std::printf("%-30s %-4s %-12s %-9zu %s\n", t.id.c_str(), t.level.c_str(), t.category.c_str(), t.workloads.size(),
                archs.c_str());
  }
}

void cmd_show() {
  const auto tasks = tasks_selected();
  const Task& t = find_task(tasks, g.task);
  const OpDef& d = t.op_def();
  std::printf("task      %s (%s, %s)\nop        %s: %s\nheader    #include \"%s\"\n", t.id.c_str(), t.level.c_str(),
              t.category.c_str(), d.name.c_str(), d.summary.c_str(), op_header(d).c_str());
  std::printf("arguments");
  for (const auto& a : d.tensor_args) std::printf(" %s(%s)", a.name.c_str(), std::string(role_name(a.role)).c_str());
  std::printf("\n\n%s\n\n", op_declaration(d).c_str());
  for (const auto& f : op_reference_files(d))
    std::printf("CPU reference: %s\n", fs::relative(f, source_root()).string().c_str());
  std::printf("\nworkloads (timed):\n");
  for (const auto& w : t.workloads) std::printf("  x%-8g %-60s %s\n", w.calls, w.shape.dump().c_str(), w.label.c_str());
  if (!t.check_workloads.empty()) std::printf("check-only workloads: %zu (never timed)\n", t.check_workloads.size());
  if (!t.forbid.empty()) {
    std::printf("forbidden:");
    for (const auto& f : t.forbid) std::printf(" %s", f.c_str());
    std::printf("\n");
  }
  std::printf("baseline time: `fk kernels eval --task %s --candidate baseline` times it on this device\n", t.id.c_str());
}

void cmd_new() {
  const auto tasks = tasks_selected();
  const Task& t = find_task(tasks, g.task);
  const OpDef& d = t.op_def();
  const std::string args = op_args_struct(d);
  FK_CHECK(!args.empty(), "cannot find the argument struct of op ", d.name, " in include/", op_header(d));
  const std::string out = g.output.empty() ? t.id + (g.cpu_stub ? ".cpp" : ".cu") : g.output;
  FK_CHECK(!fs::exists(out), out, " exists already; not overwriting it");
  std::ofstream f(out);
  std::string decl = op_declaration(d);
  std::string commented;
  for (size_t s = 0, e; s < decl.size(); s = e + 1) {
    e = decl.find('\n', s);
    if (e == std::string::npos) e = decl.size();
    commented += "// " + decl.substr(s, e - s) + "\n";
  }
  f << "// Candidate for task " << t.id << " (op " << d.name << ", " << t.level << ").\n"
    << "// Contract: " << d.summary << "\n"
    << "// The caller allocates every tensor; write all of `out`, touch inputs never, and\n"
    << "// run everything on `stream` before returning (no other stream, no host thread).\n//\n"
    << commented << "#include \"" << op_header(d) << "\"\n\n"
    << "namespace {\n\nfk_status run(const void* raw, void* stream) {\n"
    << "  const auto& a = *static_cast<const fk::ops::" << args << "*>(raw);\n"
    << "  (void)a;\n  (void)stream;\n"
    << "  return FK_ERR_UNSUPPORTED;  // replace with the implementation\n}\n\n}  // namespace\n\n"
    << "FK_EXPORT_CANDIDATE(" << d.name << ", run)\n";
  std::printf("wrote %s\n", out.c_str());
}

DeviceType backend_of(const std::string& b) {
  if (b == "cpu") return DeviceType::cpu;
  if (b == "cuda") return DeviceType::cuda;
  FK_CHECK(b == "auto", "--backend must be cpu, cuda or auto, got '", b, "'");
  return rt::cuda_available() ? DeviceType::cuda : DeviceType::cpu;
}

void print_run(const CandidateRun& r) {
  std::printf("%-14s %-26s speedup %6s  %s\n", verdict_name(r.result.verdict).c_str(), r.task.c_str(),
              format_speedup(r.result.speedup).c_str(), r.candidate.string().c_str());
  std::printf("    backend %s, device %s, sandbox %s\n", r.result.backend.c_str(), r.result.device.c_str(),
              r.result.sandbox.empty() ? "-" : r.result.sandbox.c_str());
  for (const auto& w : r.result.workloads) {
    if (!w.timed) continue;
    const std::string speedup = speedup_measured(w.speedup) ? "x" + format_speedup(w.speedup) : "n/a";
    // Calls that waited for a processor (a busy machine; their wait is not in their time).
    const int waited = w.baseline.descheduled + w.candidate.descheduled;
    const std::string busy =
        waited > 0 ? concat("  (", waited, " of ", w.baseline.samples + w.candidate.samples, " calls descheduled)") : "";
    std::printf("    %-56s base %9s us  cand %9s us  %-7s [%s]%s\n", w.shape.dump().c_str(),
                format_time_us(w.baseline).c_str(), format_time_us(w.candidate).c_str(), speedup.c_str(),
                w.correct ? "ok" : "FAIL", busy.c_str());
  }
  if (r.result.verdict != Verdict::PASSED) {
    std::string msg = r.result.message;
    if (msg.size() > 3000) msg = msg.substr(0, 3000) + "...";
    std::printf("    %s\n", msg.c_str());
  }
}

// The cpu backend compiles candidates with the host compiler: CUDA source would fail there
// with nothing but an empty CUDA error, so it is refused before anything is compiled.
void refuse_cuda_source_on_cpu(const Task& task, const fs::path& cand) {
  std::vector<fs::path> files{cand};
  if (fs::is_directory(cand)) files.assign(fs::directory_iterator(cand), fs::directory_iterator());
  for (const auto& f : files)
    if (f.extension() == ".cu" || f.extension() == ".cuh")
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, "the candidate ", cand.string(), " is CUDA source (",
              f == cand ? f.extension().string() : f.filename().string(),
              "); the cpu backend takes C++ candidates: write one with `fk kernels new ", task.id,
              " --cpu`, or evaluate this one with --backend cuda on a machine with a GPU");
}

// The verdicts a test candidate declares in a `// expect: A|B` line near its top.
std::string expected_verdicts(const fs::path& cand) {
  fs::path file = cand;
  if (fs::is_directory(cand))
    for (const auto& e : fs::directory_iterator(cand))
      if (e.path().extension() == ".cu" || e.path().extension() == ".cpp") file = e.path();
  std::ifstream in(file);
  std::string line;
  for (int i = 0; i < 5 && std::getline(in, line); ++i)
    if (line.rfind("// expect: ", 0) == 0) return line.substr(11);
  return "";
}

void cmd_eval() {
  select_variants(g.variants);
  const std::string variants = OpRegistry::global().active_variants();
  if (!variants.empty()) std::fprintf(stderr, "[fk] variants %s\n", variants.c_str());
  const auto tasks = tasks_selected();
  std::vector<std::pair<Task, fs::path>> work;
  if (!g.dir.empty() && !g.task.empty()) {  // every candidate in the folder, for one task
    const Task& t = find_task(tasks, g.task);
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(g.dir))
      if (e.is_directory() || e.path().extension() == ".cu" || e.path().extension() == ".cpp") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) work.emplace_back(t, f);
  } else if (!g.dir.empty()) {
    work = match_candidates(tasks, g.dir);
  } else if (g.task.empty() && g.candidate == "baseline") {  // the noise floor of every selected task
    for (const auto& t : tasks) work.emplace_back(t, "baseline");
  } else {
    FK_CHECK(!g.task.empty() && !g.candidate.empty(), "give --task and --candidate, or --dir");
    work.emplace_back(find_task(tasks, g.task), g.candidate);
  }
  PipelineOptions opts;
  opts.backend = backend_of(g.backend);
  if (opts.backend == DeviceType::cpu)
    for (const auto& [task, cand] : work) refuse_cuda_source_on_cpu(task, cand);
  if (opts.backend == DeviceType::cuda && !rt::cuda_available()) {
    std::fprintf(stderr, "fk: --backend cuda: no CUDA device available\n");
    std::exit(77);  // the conventional "skipped" code (ctest SKIP_RETURN_CODE)
  }
  opts.rounds = g.rounds;
  opts.worker_timeout_s = g.timeout;
  opts.eval.min_timed_calls = g.timed_calls;
  opts.eval.max_timed_calls = std::max(g.timed_calls, opts.eval.max_timed_calls);
  if (g.timed_calls < 50) opts.eval.min_timed_ms = 0;  // a quick run: exactly that many calls
  // The worker's workload and phase on a progress line (a terminal's, or FK_PROGRESS=1);
  // every other line erases it first.
  StatusLine status;
  std::string current;  // "[i/n] task"
  opts.progress = [&](const std::string& s) {
    status.clear();
    std::fprintf(stderr, "[fk] %s\n", s.c_str());
  };
  opts.worker_progress = [&](const std::string& s) { status.show(concat("[fk] ", current, ": ", s)); };
  std::vector<TaskScore> scores;
  std::vector<CandidateRun> all;
  Json runs = Json::array();
  int mismatches = 0;
  std::unique_ptr<ResultStore> store;
  if (!g.no_db) store = std::make_unique<ResultStore>(g.db.empty() ? ResultStore::default_path() : fs::path(g.db));
  const std::string batch = ResultStore::new_batch_id();
  for (size_t i = 0; i < work.size(); ++i) {
    const auto& [task, cand] = work[i];
    opts.progress(concat("[", i + 1, "/", work.size(), "] ", task.id, " <- ", cand.string()));
    current = concat("[", i + 1, "/", work.size(), "] ", task.id);
    CandidateRun r = evaluate_candidate(task, cand, opts);
    status.clear();
    print_run(r);
    if (store) store->add(batch, r);
    all.push_back(r);
    if (g.expect) {
      const std::string want = expected_verdicts(cand);
      const bool ok = !want.empty() && ("|" + want + "|").find("|" + verdict_name(r.result.verdict) + "|") != std::string::npos;
      std::printf("    expect %-24s %s\n", want.empty() ? "(no '// expect:' line)" : want.c_str(), ok ? "MATCH" : "MISMATCH");
      mismatches += !ok;
    }
    scores.push_back(score_of(task, r.result));
    runs.push_back(run_to_json(r));
    std::fflush(stdout);  // each verdict as it comes, also into a pipe that may be cut short
  }
  const Json summary = scores_to_json(scores);
  std::printf("fast_p:");
  for (const auto& p : summary["fast_p"]) std::printf("  p=%.1f: %.2f", p["p"].get<double>(), p["fast_p"].get<double>());
  std::printf("\n");
  for (const auto& [k, a] : summary["aggregates"].items())
    std::printf("%-24s tasks %3d  correct %3d  geomean speedup %s\n", k.c_str(), a["tasks"].get<int>(),
                a["correct"].get<int>(), format_speedup(a["geomean_speedup"].get<double>()).c_str());
  if (!g.json_out.empty()) {
    std::ofstream(g.json_out) << Json{{"batch", batch}, {"variants", variants}, {"runs", runs}, {"summary", summary}}.dump(1);
    std::printf("wrote %s\n", g.json_out.c_str());
  }
  if (!g.report_dir.empty()) {
    fs::create_directories(g.report_dir);
    std::ofstream(fs::path(g.report_dir) / "summary.md") << markdown_report(all, summary);
    std::ofstream(fs::path(g.report_dir) / "report.html") << html_report(all, summary);
    std::printf("wrote %s/summary.md and report.html\n", g.report_dir.c_str());
  }
  if (store) std::printf("stored as batch %s (fk results list)\n", batch.c_str());
  if (g.expect) {
    std::printf("%d passed, %d failed\n", static_cast<int>(work.size()) - mismatches, mismatches);
    if (mismatches) throw CLI::RuntimeError(1);
    return;
  }
  // Scripts and CI learn from the exit status whether every candidate passed.
  const auto failed = std::count_if(all.begin(), all.end(), [](const CandidateRun& r) {
    return r.result.verdict != Verdict::PASSED;
  });
  if (failed > 0) {
    std::printf("%lld of %zu candidates did not pass\n", static_cast<long long>(failed), all.size());
    if (!g.no_fail_exit) throw CLI::RuntimeError(1);
  }
}

void setup(CLI::App& app) {
  auto* k = app.add_subcommand("kernels", "The kernel benchmark: tasks, candidate stubs, evaluation");
  k->require_subcommand(1);
  auto tasks_dir = [](CLI::App* c) {
    c->add_option("--tasks-dir", g.tasks_dir, "Task folder (default: the source tree's tasks/ or $FK_TASKS_DIR)");
  };
  auto filters = [&](CLI::App* c) {
    tasks_dir(c);
    c->add_option("--level", g.level, "Only tasks of this level (L1..L4)");
    c->add_option("--category", g.category, "Only tasks of this category");
    c->add_option("--arch", g.arch, "Only tasks used by this architecture");
  };
  auto* list = k->add_subcommand("list", "List tasks");
  filters(list);
  list->callback(cmd_list);
  auto* show = k->add_subcommand("show", "Show a task: contract, declaration, reference, workloads");
  show->add_option("task", g.task, "Task id")->required();
  tasks_dir(show);
  show->callback(cmd_show);
  auto* nw = k->add_subcommand("new", "Write a candidate stub that compiles, with the exact signature");
  nw->add_option("task", g.task, "Task id")->required();
  tasks_dir(nw);
  nw->add_option("-o,--output", g.output, "Output file (default: <task>.cu, or <task>.cpp with --cpu)");
  nw->add_flag("--cpu", g.cpu_stub, "A C++ candidate (.cpp) for the cpu backend instead of CUDA");
  nw->callback(cmd_new);
  auto* ev = k->add_subcommand("eval", "Compile and evaluate candidates: verdict, speedup, fast_p");
  filters(ev);
  ev->add_option("--task", g.task, "Task id (with --candidate)");
  ev->add_option("--candidate", g.candidate,
                 "Candidate .cu/.cpp file or folder, or 'baseline' (without --task: every task's baseline against itself)");
  ev->add_option("--dir", g.dir, "Folder of candidates named <task-id>.cu|.cpp or <task-id>/ (with --task: every candidate in it, for that task)");
  ev->add_option("--backend", g.backend, "cpu, cuda or auto");
  ev->add_option("--rounds", g.rounds, "Public correctness rounds (>= 3; one secret round is added)");
  ev->add_option("--timeout", g.timeout, "Wall-clock limit of one evaluation, seconds");
  ev->add_option("--timed-calls", g.timed_calls, "Timed calls per implementation and workload (min; default 50)");
  ev->add_flag("--expect", g.expect,
               "Compare each verdict with the candidate's '// expect: VERDICT' line; exit non-zero only on a mismatch");
  ev->add_flag("--no-fail-exit", g.no_fail_exit, "Exit 0 even when a candidate does not pass (default: exit 1)");
  ev->add_option("--json", g.json_out, "Write all results as JSON");
  ev->add_option("--report", g.report_dir, "Write summary.md and a self-contained report.html into this folder");
  ev->add_option("--db", g.db, "Results database (default $FK_RESULTS_DB or ~/.cache/fastkernels/results.db)");
  ev->add_flag("--no-db", g.no_db, "Do not store the results");
  add_variant_option(ev, g.variants);
  ev->callback(cmd_eval);
  auto* wk = k->add_subcommand("worker", "(internal) evaluate one request in this process");
  wk->group("");  // hidden from help
  wk->add_option("--request", g.request)->required();
  wk->add_option("--result", g.result)->required();
  wk->callback([] { std::exit(worker_main(g.request, g.result)); });
  static RunnerArgs runner;
  auto* rn = k->add_subcommand("runner", "(internal) serve one implementation's calls to a worker");
  rn->group("");
  rn->add_option("--channel", runner.channel)->required();
  rn->add_option("--arena", runner.arena)->required();
  rn->add_option("--op", runner.op)->required();
  rn->add_option("--dir", runner.dir)->required();
  rn->add_option("--variants", runner.variants);
  rn->add_option("--library", runner.library);
  rn->add_flag("--baseline", runner.baseline);
  rn->callback([] { runner_main(runner); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
