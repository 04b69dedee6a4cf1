// `fk agent`: LLM kernel generators driven against the benchmark (src/agent/).
#include <csignal>
#include <cstdio>
#include <sstream>

#include "agent/agent_run.h"
#include "agent/budget.h"
#include "agent/task_select.h"
#include "harness/store/result_store.h"
#include "cli/command.h"
#include "fk/runtime.h"

namespace fk::cli {
namespace {

namespace fs = std::filesystem;

struct AgentCli {
  std::string task, tasks_filter, tasks_dir, api_key_env, backend = "auto", out = "agent-out";
  std::string profile = "auto", ncu = "ncu", e2e_args, db;
  agent::AgentOptions run;
  int rounds = 3, timed_calls = 50;
  double eval_timeout = 600;
  bool no_baseline = false, no_db = false;
};

DeviceType backend_of(const std::string& b) {
  if (b == "cpu") return DeviceType::cpu;
  if (b == "cuda") return DeviceType::cuda;
  FK_CHECK(b == "auto", "--backend must be cpu, cuda or auto, got '", b, "'");
  return rt::cuda_available() ? DeviceType::cuda : DeviceType::cpu;
}

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

void on_signal(int) { agent::Budget::request_stop(); }

void run(AgentCli& c) {
  FK_CHECK(c.task.empty() != c.tasks_filter.empty(), "give exactly one of --task and --tasks");
  const auto all = bench::load_tasks(c.tasks_dir.empty() ? bench::default_tasks_dir() : fs::path(c.tasks_dir));
  agent::AgentOptions& o = c.run;
  o.tasks = agent::select_tasks(all, c.task.empty() ? c.tasks_filter : c.task);
  FK_CHECK(c.task.empty() || (o.tasks.size() == 1 && o.tasks[0].id == c.task), "--task: no task named '", c.task, "'");
  o.endpoint.api_key = agent::api_key_from_env(c.api_key_env);
  o.out_dir = c.out;
  o.pipeline.backend = backend_of(c.backend);
  FK_CHECK(o.pipeline.backend == DeviceType::cpu || rt::cuda_available(), "--backend cuda: no CUDA device available");
  o.pipeline.rounds = c.rounds;
  o.pipeline.worker_timeout_s = c.eval_timeout;
  o.pipeline.eval.min_timed_calls = c.timed_calls;
  o.pipeline.eval.max_timed_calls = std::max(c.timed_calls, o.pipeline.eval.max_timed_calls);
  if (c.timed_calls < 50) o.pipeline.eval.min_timed_ms = 0;  // a quick run: exactly that many calls
  o.measure_baseline = !c.no_baseline;
  FK_CHECK(c.profile == "auto" || c.profile == "off", "--profile must be auto or off, got '", c.profile, "'");
  o.profile.enabled = c.profile == "auto";
  o.profile.ncu = c.ncu;
  o.e2e.extra_args = split_words(c.e2e_args);
  if (!c.no_db) o.results_db = c.db.empty() ? bench::ResultStore::default_path() : fs::path(c.db);
  o.e2e.results_db = o.results_db;  // the end-to-end check is stored (or not) with the evaluations
  o.command = invoked_command();
  o.progress = [](const std::string& s) { std::fprintf(stderr, "[agent] %s\n", s.c_str()); };

  // Ctrl-C stops cleanly: no new model call starts, the summary is written; a second one kills.
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  const nlohmann::json s = agent::run_agent(o);
  for (const auto& t : s["tasks"]) {
    const auto& best = t["best"];
    std::printf("%-28s %-10s %s  (%zu attempts; %s)\n", t.value("task", "").c_str(),
                best.is_null() ? "no pass" : "PASSED",
                best.is_null() ? "" : concat("best ", best.value("step", ""), " speedup ", best.value("speedup", 0.0)).c_str(),
                t["attempts"].size(), t.value("stop_reason", "").c_str());
    if (t.contains("e2e"))
      std::printf("    end to end: %s %s\n", t["e2e"].value("verdict", "").c_str(), t["e2e"].value("reason", "").c_str());
  }
  std::printf("tokens: %lld (prompt %lld, completion %lld); stop: %s\nwrote %s/summary.json, trajectory.jsonl, best/\n",
              static_cast<long long>(s["tokens"].value("total", int64_t{0})),
              static_cast<long long>(s["tokens"].value("prompt", int64_t{0})),
              static_cast<long long>(s["tokens"].value("completion", int64_t{0})), s.value("stop_reason", "").c_str(),
              c.out.c_str());
  if (s.value("stop_reason", "") == "interrupted") throw CLI::RuntimeError(130);
}

void setup(CLI::App& app) {
  static AgentCli c;
  auto* a = app.add_subcommand(
      "agent", "Drive an LLM kernel generator (any OpenAI-compatible endpoint) against the benchmark");
  a->add_option("--task", c.task, "One task id");
  a->add_option("--tasks", c.tasks_filter, "Tasks: comma-separated ids, globs, all, level=L1, category=C, arch=A");
  a->add_option("--tasks-dir", c.tasks_dir, "Task folder (default: the source tree's tasks/ or $FK_TASKS_DIR)");
  a->add_option("--endpoint", c.run.endpoint.url, "Chat endpoint: base URL (http://host:port/v1) or .../chat/completions")
      ->required();
  a->add_option("--model", c.run.endpoint.model, "Model name sent to the endpoint")->required();
  a->add_option("--strategy", c.run.strategy, "single, best-of-n, refine or evolve")
      ->check(CLI::IsMember(agent::strategy_names()))
      ->capture_default_str();
  a->add_option("--api-key-env", c.api_key_env,
                "Environment variable holding the API key (default: FK_AGENT_API_KEY, else OPENAI_API_KEY)");
  auto& so = c.run.strategy_options;
  a->add_option("--samples", so.samples, "best-of-n: samples per task")->capture_default_str();
  a->add_option("--turns", so.turns, "refine: turns per task")->capture_default_str();
  a->add_option("--population", so.population, "evolve: population size")->capture_default_str();
  a->add_option("--generations", so.generations, "evolve: generations after the first")->capture_default_str();
  a->add_option("--crossover", so.crossover_rate, "evolve: share of children made by crossover")->capture_default_str();
  a->add_option("--tournament", so.tournament, "evolve: candidates per parent tournament")->capture_default_str();
  a->add_option("--seed", so.seed, "evolve: parent selection seed (kept per task on resume)")->capture_default_str();
  a->add_option("--history-chars", so.history_chars, "refine: prompt budget in characters (0: no limit)")
      ->capture_default_str();
  a->add_option("--max-tokens", c.run.max_tokens, "Budget: prompt + completion tokens over the run (0: none)")
      ->capture_default_str();
  a->add_option("--max-wall-time", c.run.max_wall_s, "Budget: seconds of this invocation (0: none)")
      ->capture_default_str();
  a->add_option("--max-completion-tokens", c.run.endpoint.max_completion_tokens,
                "max_tokens sent with each request (0: the server's default)")
      ->capture_default_str();
  a->add_option("--temperature", c.run.endpoint.temperature, "Sampling temperature (< 0: the server's default)")
      ->capture_default_str();
  a->add_option("--request-timeout", c.run.endpoint.timeout_s, "Seconds per request attempt")->capture_default_str();
  a->add_option("--retries", c.run.endpoint.max_attempts, "Attempts per request (429, 5xx, timeouts, bad bodies)")
      ->capture_default_str();
  a->add_option("--backoff", c.run.endpoint.backoff_initial_s, "First retry delay, seconds (doubles, with jitter)")
      ->capture_default_str();
  a->add_option("--backoff-max", c.run.endpoint.backoff_max_s, "Longest retry delay, seconds")->capture_default_str();
  a->add_option("--concurrency", c.run.concurrency, "Model requests in flight")->capture_default_str();
  a->add_option("--compile-jobs", c.run.compile_jobs, "Candidates compiled at once")->capture_default_str();
  a->add_option("--jobs", c.run.eval_jobs,
                "Candidates evaluated at once (evaluations share the GPU: 1 keeps timings clean)")
      ->capture_default_str();
  a->add_option("--out", c.out, "Output folder (rerun with the same folder to resume)")->capture_default_str();
  a->add_option("--backend", c.backend, "cpu, cuda or auto")->capture_default_str();
  a->add_option("--rounds", c.rounds, "Public correctness rounds per evaluation (>= 3)")->capture_default_str();
  a->add_option("--timed-calls", c.timed_calls, "Timed calls per implementation and workload")->capture_default_str();
  a->add_option("--timeout", c.eval_timeout, "Wall-clock limit of one evaluation, seconds")->capture_default_str();
  a->add_flag("--no-baseline", c.no_baseline, "Do not time the baseline before the first prompt");
  a->add_option("--profile", c.profile, "auto (Nsight Compute summary where ncu is installed and the backend is CUDA) or off")
      ->capture_default_str();
  a->add_option("--ncu", c.ncu, "The ncu executable")->capture_default_str();
  a->add_option("--e2e-model", c.run.e2e.model, "Re-check each task's best candidate end to end on this model");
  a->add_option("--e2e-workload", c.run.e2e.workload, "Workload of the end-to-end check")->capture_default_str();
  a->add_option("--e2e-args", c.e2e_args, "Engine options for the end-to-end check, e.g. --e2e-args=\"--device cpu\"");
  a->add_option("--db", c.db, "Results database (default $FK_RESULTS_DB or ~/.cache/fastkernels/results.db)");
  a->add_flag("--no-db", c.no_db, "Do not store the evaluations in the results database");
  a->callback([] { run(c); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
