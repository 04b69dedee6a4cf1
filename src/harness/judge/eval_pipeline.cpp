#include "harness/judge/eval_pipeline.h"

#include <random>

#include "harness/device/device_info.h"

namespace fk::bench {

namespace fs = std::filesystem;

namespace {

// What a result was measured on, for its summary and the store: the GPU's name on the cuda
// backend (device 0, the one evaluations run on), the host's CPU model on the cpu backend.
std::string device_name(DeviceType backend) {
  if (backend == DeviceType::cpu) return query_host().cpu_model;
  try {
    return query_gpu(0).name;
  } catch (const std::exception&) {
    return "unknown CUDA device";
  }
}

void describe_device(EvalResult& r, DeviceType backend) {
  if (r.backend.empty()) r.backend = backend == DeviceType::cpu ? "cpu" : "cuda";
  if (r.device.empty()) r.device = device_name(backend);
}

}  // namespace

uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

CandidateRun evaluate_candidate(const Task& task, const fs::path& candidate, const PipelineOptions& opts) {
  CandidateRun run;
  run.task = task.id;
  run.candidate = candidate;
  auto say = [&](const std::string& s) {
    if (opts.progress) opts.progress(s);
  };
  WorkerRequest req;
  req.task = task;
  req.config = opts.eval;
  req.config.backend = opts.backend;
  req.config.seeds.clear();
  for (int i = 0; i < std::max(3, opts.rounds); ++i) req.config.seeds.push_back(fresh_seed());
  req.config.secret_seed = fresh_seed();

  if (candidate == "baseline") {
    req.library = "baseline";
    run.compile.ok = true;
  } else {
    say(concat(task.id, ": compiling ", candidate.string()));
    run.compile = compile_candidate(candidate, opts.compile);
    if (!run.compile.ok) {
      run.result.task = task.id;
      run.result.verdict = run.compile.timed_out ? Verdict::TIMEOUT : Verdict::COMPILE_ERROR;
      run.result.message = run.compile.log;
      run.result.candidate_hash = run.compile.source_hash;
      describe_device(run.result, opts.backend);
      return run;
    }
    req.library = run.compile.library;
  }
  say(concat(task.id, ": evaluating (", req.config.seeds.size(), " rounds + secret, ", task.workloads.size(),
             " timed + ", task.check_workloads.size(), " check-only workloads)"));
  run.result = run_in_worker(req, opts.worker_timeout_s, opts.worker_progress);
  run.result.task = task.id;
  run.result.candidate_hash = run.compile.source_hash;
  run.result.toolchain = Toolchain::engine().describe();
  describe_device(run.result, opts.backend);
  return run;
}

std::vector<std::pair<Task, fs::path>> match_candidates(const std::vector<Task>& tasks, const fs::path& dir) {
  FK_CHECK(fs::is_directory(dir), "candidate folder ", dir.string(), " does not exist");
  std::vector<std::pair<Task, fs::path>> out;
  std::vector<fs::directory_entry> entries(fs::directory_iterator(dir), {});
  std::sort(entries.begin(), entries.end());
  for (const auto& e : entries) {
    const fs::path p = e.path();
    const bool is_folder = e.is_directory();
    if (!is_folder && p.extension() != ".cu" && p.extension() != ".cpp") continue;
    const std::string name = is_folder ? p.filename().string() : p.stem().string();
    auto it = std::find_if(tasks.begin(), tasks.end(), [&](const Task& t) { return t.id == name; });
    FK_CHECK(it != tasks.end(), "candidate ", p.string(), " matches no task (name it <task-id>.cu)");
    out.emplace_back(*it, p);
  }
  return out;
}

Json run_to_json(const CandidateRun& run) {
  Json j = to_json(run.result);
  j["candidate"] = run.candidate.string();
  j["compile"] = {{"ok", run.compile.ok},
                  {"cached", run.compile.cached},
                  {"seconds", run.compile.seconds},
                  {"command", run.compile.command},
                  {"log", run.compile.log}};
  return j;
}

}  // namespace fk::bench
