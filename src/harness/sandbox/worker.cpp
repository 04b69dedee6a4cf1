#include "harness/sandbox/worker.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "fk/runtime.h"
#include "harness/device/ceilings.h"
#include "harness/judge/case_staging.h"
#include "harness/judge/plan_guard.h"
#include "harness/sandbox/candidate.h"
#include "harness/sandbox/runner_args.h"
#include "harness/sandbox/seccomp_filter.h"
#include "harness/sandbox/subprocess.h"

namespace fk::bench {

namespace fs = std::filesystem;

Json request_to_json(const WorkerRequest& r) {
  const EvalConfig& c = r.config;
  Json task = task_to_json(r.task);
  task["source"] = r.task.source.string();
  return {{"task", task},
          {"library", r.library.string()},
          {"config",
           {{"backend", c.backend == DeviceType::cpu ? "cpu" : "cuda"},
            {"seeds", c.seeds},
            {"secret_seed", c.secret_seed},
            {"warmup_calls", c.warmup_calls},
            {"min_timed_calls", c.min_timed_calls},
            {"max_timed_calls", c.max_timed_calls},
            {"min_timed_ms", c.min_timed_ms},
            {"oracle_flop_budget", c.oracle_flop_budget},
            {"oracle_byte_budget", c.oracle_byte_budget},
            {"relative_error_factor", c.relative_error_factor},
            {"time", c.time}}}};
}

WorkerRequest request_from_json(const Json& j) {
  WorkerRequest r;
  Json task = j.at("task");
  const fs::path source = task.value("source", "");
  task.erase("source");
  r.task = parse_task(task, source);
  r.library = j.at("library").get<std::string>();
  const Json& c = j.at("config");
  r.config.backend = c.at("backend") == "cpu" ? DeviceType::cpu : DeviceType::cuda;
  r.config.seeds = c.at("seeds").get<std::vector<uint64_t>>();
  r.config.secret_seed = c.at("secret_seed").get<uint64_t>();
  r.config.warmup_calls = c.at("warmup_calls");
  r.config.min_timed_calls = c.at("min_timed_calls");
  r.config.max_timed_calls = c.at("max_timed_calls");
  r.config.min_timed_ms = c.at("min_timed_ms");
  r.config.oracle_flop_budget = c.at("oracle_flop_budget");
  r.config.oracle_byte_budget = c.at("oracle_byte_budget");
  r.config.relative_error_factor = c.at("relative_error_factor");
  r.config.time = c.at("time");
  return r;
}

namespace {

// Every op with variants back to its default, then the parent's selection.
void select_exactly(const std::string& spec) {
  OpRegistry& reg = OpRegistry::global();
  for (const OpVariantInfo& v : reg.variants()) reg.select_variants(v.op, {});
  reg.select_variants_from_string(spec);
}

}  // namespace

// The CUDA driver starts (context, device and pinned memory) before the candidate is
// loaded: a system call of its that the sandbox stops is then the harness's problem
// (HARNESS_ERROR), not blamed on the candidate. Failures are left for evaluate to report.
static void start_cuda_before_the_candidate() {
  try {
    if (!rt::cuda_available()) return;
    rt::device_synchronize(0);
    rt::device_free(rt::device_malloc(1 << 20, 0));
    rt::host_pinned_free(rt::host_pinned_malloc(1 << 20));
  } catch (const std::exception&) {
  }
}

static fs::path violation_file(const fs::path& result_file) { return result_file.parent_path() / "sandbox_violation"; }

// Each workload's failure, one JSON line as soon as it is decided: the parent still knows a
// cheat that was caught when the worker later crashes or hangs (a result file never comes).
static fs::path findings_file(const fs::path& result_file) { return result_file.parent_path() / "findings.jsonl"; }

static void stream_finding(const fs::path& file, Verdict v, const std::string& message) {
  std::ofstream out(file, std::ios::app);
  out << Json{{"verdict", verdict_name(v)}, {"message", message}}.dump() << "\n";
  out.flush();  // in the kernel's hands now: the process may die at the next call
}

// The worker's current workload and phase, rewritten as it changes; the parent polls it
// for its progress line. A display only: nothing is judged from it.
static fs::path progress_file(const fs::path& result_file) { return result_file.parent_path() / "progress"; }

static void write_progress(const fs::path& file, const std::string& text) {
  std::ofstream(file, std::ios::trunc) << text;
}

static std::string read_progress(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// The worst finding the worker streamed before it died or hung; PASSED when none.
static std::pair<Verdict, std::string> worst_streamed_finding(const fs::path& result_file) {
  std::pair<Verdict, std::string> worst{Verdict::PASSED, ""};
  std::ifstream in(findings_file(result_file));
  for (std::string line; std::getline(in, line);) {
    const Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.value("verdict", Json()).is_string() || !j.value("message", Json()).is_string())
      continue;  // a line cut short
    Verdict v;
    try {
      v = verdict_from_name(j["verdict"].get<std::string>());
    } catch (const Error&) {
      continue;
    }
    if (worse_verdict(worst.first, v) != worst.first) worst = {v, j["message"].get<std::string>()};
  }
  return worst;
}

// The CPU backend's evaluation: the judge (this process) runs no candidate code. The
// candidate's library and the baseline are each loaded by a runner of their own, which
// only ever sees the tensors of the call it makes.
static EvalResult judge_in_runners(WorkerRequest& req, const std::string& variants, const fs::path& dir) {
  EvalResult res;
  res.task = req.task.id;
  // No process of this user without privileges reads this one's memory (/proc/<pid>/mem):
  // a runner shares its PID namespace.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  auto spec = [&](const std::string& who, const fs::path& library) {
    RunnerSpec s;
    s.op = req.task.op;
    s.library = library;
    s.dir = dir / concat("runner-", who);
    s.variants = variants;
    s.visible = running_code_paths();
    s.timeout_s = 24 * 3600;  // the worker's own limit ends it first, and the runners with it
    return s;
  };
  try {
    Implementation baseline;
    baseline.remote = std::make_shared<RemoteImplementation>(spec("baseline", ""));
    baseline.plan_sees_data = true;  // the engine's own plan
    FK_CHECK(baseline.remote->runner->load_error().empty(), "the baseline did not load: ",
             baseline.remote->runner->load_error());
    Implementation impl;
    if (req.library.empty() || req.library == "baseline") {
      impl.remote = std::make_shared<RemoteImplementation>(spec("candidate", ""));
      impl.plan_sees_data = true;
    } else {
      const std::string banned = forbidden_import(imported_symbols(req.library), req.task.forbid);
      if (!banned.empty()) {
        res.verdict = Verdict::REWARD_HACK;
        res.message = concat("the candidate calls ", banned, ", which task ", req.task.id, " forbids");
        return res;
      }
      impl.remote = std::make_shared<RemoteImplementation>(spec("candidate", req.library));
      if (!impl.remote->runner->load_error().empty()) {
        res.verdict = Verdict::COMPILE_ERROR;  // links but cannot load: undefined symbols, ABI mismatch
        res.message = impl.remote->runner->load_error();
        return res;
      }
      impl.own_functions = defined_functions(req.library);
    }
    req.config.baseline = &baseline;
    res = evaluate(req.task, impl, req.config);
  } catch (const RunnerFailure& f) {
    res.verdict = f.verdict;
    res.message = f.message;
  }
  return res;
}

int worker_main(const fs::path& request_file, const fs::path& result_file) {
  EvalResult res;
  try {
    std::ifstream in(request_file);
    FK_CHECK(in.good(), "worker: cannot read request ", request_file.string());
    const Json sent = Json::parse(in);
    WorkerRequest req = request_from_json(sent);
    if (req.config.backend != DeviceType::cpu) {
      // Before any candidate code is loaded: a forbidden system call (seccomp_filter.h)
      // ends the worker with its name on record. Without a filter (no sandbox) it never
      // fires. (On the CPU the runners, which load the code, install their own: the
      // reporter's guard filter would outlive exec and stop them.)
      install_violation_reporter(violation_file(result_file).c_str());
      // A candidate's plan reading tensor data it is not given faults on a guard address:
      // recorded as a finding before the worker dies (plan_guard.h).
      report_plan_guard_faults(open(findings_file(result_file).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    }
    req.config.on_finding = [f = findings_file(result_file)](Verdict v, const std::string& m) { stream_finding(f, v, m); };
    req.config.on_progress = [f = progress_file(result_file)](const std::string& p) { write_progress(f, p); };
    res.task = req.task.id;
    select_exactly(sent.value("variants", ""));
    Implementation impl;
    std::unique_ptr<LoadedCandidate> cand;
    if (req.config.backend == DeviceType::cpu) {
      // Inputs, references and the verdict stay here; the candidate and the baseline each
      // run in a runner process of their own (runner_process.h).
      fs::remove(request_file);  // the seeds: read, and gone from the folder a runner could see
      res = judge_in_runners(req, sent.value("variants", ""), result_file.parent_path());
    } else if (req.library.empty() || req.library == "baseline") {
      impl.run = OpRegistry::global().baseline(req.task.op, req.config.backend);
      impl.plan = OpRegistry::global().active_plan(req.task.op, req.config.backend);
      impl.plan_sees_data = true;
      FK_CHECK(impl.run != nullptr, "op ", req.task.op, " has no baseline for this backend");
    } else {
      const std::string banned = forbidden_import(imported_symbols(req.library), req.task.forbid);
      if (!banned.empty()) {
        res.verdict = Verdict::REWARD_HACK;
        res.message = concat("the candidate calls ", banned, ", which task ", req.task.id, " forbids");
      } else {
        try {
          if (req.config.backend == DeviceType::cuda) start_cuda_before_the_candidate();
          mark_candidate_loaded();
          cand = LoadedCandidate::load(req.library, req.task.op);
        } catch (const Error& e) {
          res.verdict = Verdict::COMPILE_ERROR;  // links but cannot load: undefined symbols, ABI mismatch
          res.message = e.what();
        }
        if (cand) {
          impl.run = cand->run();
          impl.plan = cand->plan();
          impl.own_functions = defined_functions(req.library);
        }
      }
    }
    if (impl.run) res = evaluate(req.task, impl, req.config);
  } catch (const std::exception& e) {
    res.verdict = Verdict::RUNTIME_ERROR;
    res.message = e.what();
  }
  std::ofstream out(result_file);
  out << to_json(res).dump(1);
  out.close();
  // Skip static destructors and driver teardown: a candidate may have left the context broken.
  std::fflush(nullptr);
  _exit(out ? 0 : 3);
}

EvalResult run_in_worker(const WorkerRequest& req, double timeout_s,
                         const std::function<void(const std::string&)>& on_progress) {
  // One folder per evaluation: a process may run several at once (fk agent evaluates in parallel).
  static std::atomic<int> serial{0};
  const fs::path dir = fs::temp_directory_path() / concat("fk-worker-", getpid(), "-", serial++, "-", req.task.id);
  fs::create_directories(dir);
  const fs::path request = dir / "request.json", result = dir / "result.json";
  Json sent = request_to_json(req);
  // The worker runs the baseline (and whatever a candidate calls) on this process's kernel
  // variants, whatever its inherited FK_VARIANTS says.
  sent["variants"] = OpRegistry::global().active_variants();
  std::ofstream(request) << sent.dump(1);
  fs::remove(result);
  ProcessOptions po;
  po.timeout_s = timeout_s;
  SandboxOptions& so = po.sandbox.emplace();
  so.work_dir = dir;
  // On the CPU the worker loads no candidate: it starts the runners that do, each with the
  // filter of its own (judge_in_runners), so its own filter would only stop that.
  const bool runners = req.config.backend == DeviceType::cpu;
  so.seccomp = !runners;
  // What the worker runs that may lie in the temporary folder the sandbox replaces: the
  // candidate, its source and the code this process runs from (a test executable runs
  // itself as the worker).
  so.visible = running_code_paths();
  so.visible.insert(so.visible.begin(), {req.library, req.task.source});
  if (runners) so.visible.push_back(candidate_runner_program());  // fk-runner, beside this program
  // The device's measured ceilings (fractions of speed of light), read-only, wherever
  // FK_HOME puts them (a folder under the temporary one in tests).
  if (const char* home = std::getenv("FK_HOME"); home && *home) so.visible.push_back(ceilings_dir());
  // Every thread of the worker together; the wall-clock limit is the one that bites first.
  so.cpu_seconds = timeout_s * std::max(1u, std::thread::hardware_concurrency()) + 10;
  // The CUDA driver reserves address space far beyond any memory it uses: only the cpu
  // backend gets an address-space limit (the machine's memory).
  if (req.config.backend == DeviceType::cpu)
    so.memory_bytes = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  std::string last_progress;
  if (on_progress)
    po.on_tick = [&] {
      const std::string p = read_progress(progress_file(result));
      if (!p.empty() && p != last_progress) on_progress(last_progress = p);
    };
  const ProcessResult pr = run_process({self_executable(), "kernels", "worker", "--request", request.string(),
                                        "--result", result.string()},
                                       po);
  EvalResult res;
  res.task = req.task.id;
  res.seeds = req.config.seeds;
  res.secret_seed = req.config.secret_seed;
  res.backend = req.config.backend == DeviceType::cpu ? "cpu" : "cuda";
  res.seconds = pr.seconds;
  auto tail = [&] { return pr.output.size() > 4000 ? pr.output.substr(pr.output.size() - 4000) : pr.output; };
  if (!pr.sandbox_error.empty()) {
    res.verdict = Verdict::HARNESS_ERROR;
    res.message = concat("the worker's sandbox could not be set up: ", pr.sandbox_error);
  } else if (pr.timed_out) {
    res.verdict = Verdict::TIMEOUT;
    res.message = concat("the evaluation did not finish within ", timeout_s, " s");
  } else if (pr.term_signal == SIGSYS || (pr.exited() && pr.exit_code == kSandboxViolationExit)) {
    std::string call = "a system call it forbids (the worker was killed by SIGSYS)", who = "candidate";
    if (std::ifstream in(violation_file(result)); in) {
      std::getline(in, call);
      std::getline(in, who);
    }
    if (who == "harness") {
      res.verdict = Verdict::HARNESS_ERROR;
      res.message = concat("the sandbox stopped a system call of the worker itself, before any candidate code ran: ",
                           call, " (the sandbox does not fit this host; FK_SANDBOX=no-namespaces or off runs without "
                           "it, and results say so)");
    } else {
      res.verdict = Verdict::REWARD_HACK;
      res.message = concat("the sandbox stopped a forbidden system call: ", call,
                           " (a candidate may not start processes, read or steer other processes, open network "
                           "sockets or leave its sandbox)");
    }
  } else if (fs::exists(result) && fs::file_size(result) > 0 && pr.exited() && pr.exit_code == 0) {
    std::ifstream in(result);
    res = eval_result_from_json(Json::parse(in));
  } else {
    res.verdict = Verdict::RUNTIME_ERROR;
    res.message = concat("the worker process died (", pr.describe(), "): ", tail());
  }
  // A worker that never wrote its result (a crash, a hang) may have been caught cheating
  // before: that finding outranks what became of the process.
  if (res.verdict == Verdict::TIMEOUT || res.verdict == Verdict::RUNTIME_ERROR) {
    const auto [found, why] = worst_streamed_finding(result);
    if (worse_verdict(res.verdict, found) != res.verdict) {
      res.message = concat(why, " (then: ", res.message, ")");
      res.verdict = found;
    }
  }
  res.sandbox = pr.sandbox;  // the parent's word, whatever the result file says
  if (runners)
    res.sandbox = concat("candidate runner: ", nested_sandbox_support().describe(), "; worker (no candidate code): ",
                         pr.sandbox);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return res;
}

}  // namespace fk::bench
