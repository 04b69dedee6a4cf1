// `fk e2e eval | run`: candidates judged inside the engine. `eval` compiles every candidate
// of a folder (<op>.cu / <op>.cpp / <op>/), runs the workload twice in separate worker
// processes — the baseline, then every candidate installed — and compares them (e2e/).
// `run` is that worker.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/compile.h"
#include "bench/subprocess.h"
#include "cli/command.h"
#include "cli/engine_options.h"
#include "e2e/e2e_compare.h"
#include "e2e/e2e_run.h"
#include "fk/op_registry.h"
#include "fk/status.h"

namespace fk::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

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
  const json result = e2e::run_workload(r);
  std::ofstream f(o.result);
  FK_CHECK(f.good(), "cannot write ", o.result);
  f << result.dump() << "\n";
}

struct EvalCli {
  EngineOptions engine;
  std::string workload = "tiny";
  std::string candidates;
  double timeout_s = 1800;
  std::string json_out, expect;
};

json read_json(const fs::path& p) {
  std::ifstream f(p);
  return json::parse(f);
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
  json report = {{"command", invoked_command()}, {"model", o.engine.model}, {"workload", o.workload}};
  report["workload_spec"] = e2e::to_json(e2e::workload_spec(o.workload));
  std::vector<std::string> installs;
  json compiled = json::array();
  std::string verdict, reason;
  for (const auto& [op, src] : find_candidates(o.candidates)) {
    const bench::CompileResult c = bench::compile_candidate(src);
    compiled.push_back({{"op", op}, {"source", src.string()}, {"ok", c.ok}, {"cached", c.cached}});
    if (!c.ok) {
      verdict = "COMPILE_ERROR";
      reason = concat(src.string(), ":\n", c.log);
      break;
    }
    installs.push_back(op + "=" + c.library.string());
  }
  report["candidates"] = compiled;
  if (verdict.empty()) {
    const fs::path tmp = fs::temp_directory_path() / concat("fk-e2e-", ::getpid());
    fs::create_directories(tmp);
    auto worker = [&](const std::string& name, bool candidate) {
      std::vector<std::string> argv = {bench::self_executable(), "e2e", "run", "--workload", o.workload,
                                       "--result", (tmp / (name + ".json")).string()};
      for (const std::string& a : o.engine.to_args()) argv.push_back(a);
      if (candidate) {
        argv.push_back("--teacher-in");
        argv.push_back((tmp / "teacher.safetensors").string());
        for (const std::string& i : installs) {
          argv.push_back("--install");
          argv.push_back(i);
        }
      } else {
        argv.push_back("--teacher-out");
        argv.push_back((tmp / "teacher.safetensors").string());
      }
      bench::ProcessOptions po;
      po.timeout_s = o.timeout_s;
      std::printf("e2e: %s run...\n", name.c_str());
      return bench::run_process(argv, po);
    };
    const bench::ProcessResult base = worker("baseline", false);
    FK_CHECK(base.exited() && base.exit_code == 0, "e2e: the baseline run failed (", base.describe(), "):\n",
             base.output);
    const bench::ProcessResult cand = worker("candidate", true);
    if (cand.timed_out) {
      verdict = "TIMEOUT";
      reason = cand.describe();
    } else if (!cand.exited() || cand.exit_code != 0) {
      verdict = "RUNTIME_ERROR";
      reason = concat(cand.describe(), ": ", cand.output.substr(cand.output.size() > 2000 ? cand.output.size() - 2000 : 0));
    } else {
      const json cmp = e2e::compare_runs(read_json(tmp / "baseline.json"), read_json(tmp / "candidate.json"));
      report["comparison"] = cmp;
      verdict = cmp["verdict"];
      reason = cmp.value("reason", "");
    }
    fs::remove_all(tmp);
  }
  report["verdict"] = verdict;
  if (!reason.empty()) report["reason"] = reason;
  std::printf("%s\n", report.dump(2).c_str());
  if (!o.json_out.empty()) std::ofstream(o.json_out) << report.dump(2) << "\n";
  if (!o.expect.empty()) {
    if (verdict != o.expect) {
      std::fprintf(stderr, "e2e: verdict %s, expected %s\n", verdict.c_str(), o.expect.c_str());
      return 1;
    }
    std::printf("e2e: verdict %s as expected\n", verdict.c_str());
  }
  return 0;
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
  eval->add_option("--json", ev.json_out, "Also write the report here");
  eval->add_option("--expect", ev.expect, "Exit 1 unless the verdict is this (tests)");
  eval->callback([] {
    const int rc = run_eval(ev);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });

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
