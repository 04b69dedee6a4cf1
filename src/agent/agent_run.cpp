#include "agent/agent_run.h"

#include <fstream>
#include <map>
#include <mutex>

#include "agent/budget.h"
#include "agent/session.h"
#include "agent/task_contract.h"
#include "agent/trajectory.h"
#include "harness/sandbox/compile.h"
#include "harness/device/device_info.h"
#include "harness/store/result_store.h"
#include "harness/judge/score.h"

namespace fk::agent {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_atomically(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp";
  std::ofstream(tmp, std::ios::binary) << text;
  fs::rename(tmp, p);
}

// The baseline against itself, once per task (shared by every strategy, replayed on resume).
std::optional<bench::EvalResult> baseline_of(RunContext& ctx, const bench::Task& task) {
  std::optional<json> rec = ctx.log->find("evaluation", task.id, "", "baseline");
  if (!rec) {
    if (!ctx.budget->exhausted().empty()) return std::nullopt;
    if (ctx.progress) ctx.progress(concat(task.id, ": timing the baseline"));
    bench::CandidateRun run;
    {
      Limiter::Hold hold(*ctx.evaluations);
      run = ctx.evaluate(task, "baseline");
    }
    rec = json{{"type", "evaluation"},       {"task", task.id},
               {"strategy", ""},             {"step", "baseline"},
               {"time", bench::utc_timestamp()}, {"verdict", bench::verdict_name(run.result.verdict)},
               {"result", bench::to_json(run.result)}};
    ctx.log->append(*rec);
  }
  return bench::eval_result_from_json((*rec)["result"]);
}

// The best passing candidate as best/<task>.<ext>; any older best of the task is replaced.
fs::path write_best(const fs::path& out_dir, const bench::Task& task, const Attempt* best) {
  const fs::path dir = out_dir / "best";
  fs::create_directories(dir);
  for (const char* ext : {".cu", ".cpp"}) fs::remove(dir / (task.id + ext));
  if (!best) return {};
  const fs::path dst = dir / (task.id + best->candidate.extension().string());
  fs::copy_file(best->candidate, dst, fs::copy_options::overwrite_existing);
  return dst;
}

json task_summary(const bench::Task& task, const StrategyResult& r, const Attempt* best, const fs::path& best_path,
                  const std::optional<bench::EvalResult>& baseline) {
  json attempts = json::array();
  std::map<std::string, int> outcomes;
  int64_t prompt = 0, completion = 0;
  for (const auto& a : r.attempts) {
    attempts.push_back(to_json(a));
    ++outcomes[a.outcome == Outcome::evaluated ? a.verdict : outcome_name(a.outcome)];
    prompt += a.prompt_tokens;
    completion += a.completion_tokens;
  }
  json j = {{"task", task.id},
            {"op", task.op},
            {"stop_reason", r.stop_reason},
            {"attempts", attempts},
            {"outcomes", outcomes},
            {"tokens", {{"prompt", prompt}, {"completion", completion}}}};
  if (baseline) j["baseline_verdict"] = bench::verdict_name(baseline->verdict);
  if (best)
    j["best"] = {{"step", best->step}, {"speedup", best->speedup}, {"sol", best->sol}, {"candidate", best->candidate.string()},
                 {"path", best_path.string()}};
  else
    j["best"] = nullptr;
  return j;
}

bench::TaskScore score_of(const bench::Task& task, const StrategyResult& r) {
  bench::TaskScore s;
  s.task = task.id;
  s.level = task.level;
  s.category = task.category;
  s.verdict = bench::Verdict::COMPILE_ERROR;  // no candidate at all counts as one that does not build
  const Attempt* top = nullptr;
  for (const auto& a : r.attempts)
    if (a.has_code() && (!top || better(a, *top))) top = &a;
  if (top) {
    s.verdict = bench::verdict_from_name(top->verdict);
    s.speedup = top->passed() ? top->speedup : 0;
    s.sol = top->sol;
  }
  return s;
}

}  // namespace

json run_agent(const AgentOptions& o) {
  FK_CHECK(!o.tasks.empty(), "no task selected");
  fs::create_directories(o.out_dir);
  Trajectory log(o.out_dir / "trajectory.jsonl");
  Budget budget(o.max_tokens, o.max_wall_s);
  const ChatClient client(o.endpoint);
  Limiter requests(o.concurrency), compiles(o.compile_jobs), evaluations(o.eval_jobs);
  const DeviceType backend = o.pipeline.backend;

  std::unique_ptr<bench::ResultStore> store;
  std::mutex store_mu;
  const std::string batch = bench::ResultStore::new_batch_id();
  if (!o.results_db.empty()) store = std::make_unique<bench::ResultStore>(o.results_db);

  RunContext ctx;
  ctx.client = &client;
  ctx.log = &log;
  ctx.budget = &budget;
  ctx.backend = backend;
  ctx.out_dir = o.out_dir;
  ctx.requests = &requests;
  ctx.compiles = &compiles;
  ctx.evaluations = &evaluations;
  ctx.progress = o.progress;
  bench::PipelineOptions pipeline = o.pipeline;
  pipeline.progress = nullptr;
  ctx.evaluate = [pipeline](const bench::Task& t, const fs::path& c) { return bench::evaluate_candidate(t, c, pipeline); };
  ctx.precompile = [compile = pipeline.compile](const fs::path& c) { bench::compile_candidate(c, compile); };
  if (o.profile.enabled)
    ctx.profile = [&](const bench::Task& t, const bench::CandidateRun& run) {
      return profile_candidate(t, run, backend, o.profile);
    };
  if (store)
    ctx.store = [&](const bench::CandidateRun& run) {
      std::lock_guard lock(store_mu);
      store->add(batch, run);
    };

  const std::string device = describe_device(backend);
  const std::string started = bench::utc_timestamp();
  json tasks = json::array();
  std::vector<bench::TaskScore> scores;
  std::string stop_reason = "completed";
  auto summary = [&] {
    int64_t prompt = 0, completion = 0;
    for (const auto& t : tasks) {
      prompt += t["tokens"].value("prompt", int64_t{0});
      completion += t["tokens"].value("completion", int64_t{0});
    }
    json s = {{"command", o.command},
              {"strategy", o.strategy},
              {"endpoint", o.endpoint.url},
              {"model", o.endpoint.model},
              {"backend", backend == DeviceType::cuda ? "cuda" : "cpu"},
              {"started", started},
              {"updated", bench::utc_timestamp()},
              {"elapsed_s", budget.elapsed_s()},
              {"budgets",
               {{"samples", o.strategy_options.samples},
                {"turns", o.strategy_options.turns},
                {"population", o.strategy_options.population},
                {"generations", o.strategy_options.generations},
                {"max_tokens", o.max_tokens},
                {"max_wall_time_s", o.max_wall_s}}},
              {"stop_reason", stop_reason},
              {"tokens", {{"prompt", prompt}, {"completion", completion}, {"total", prompt + completion}}},
              {"results_batch", store ? json(batch) : json(nullptr)},
              {"trajectory", (o.out_dir / "trajectory.jsonl").string()},
              {"resumed_records", log.loaded_records()},
              {"skipped_log_lines", log.skipped_lines()},
              {"tasks", tasks},
              {"scores", bench::scores_to_json(scores)}};
    write_atomically(o.out_dir / "summary.json", s.dump(2) + "\n");
    return s;
  };

  std::string refused;  // the endpoint refused (401/403/404): no later task can fare better
  for (const auto& task : o.tasks) {
    if (const std::string why = refused.empty() ? budget.exhausted() : refused; !why.empty()) {
      tasks.push_back({{"task", task.id}, {"op", task.op}, {"stop_reason", "not started: " + why},
                       {"attempts", json::array()}, {"best", nullptr}, {"tokens", {{"prompt", 0}, {"completion", 0}}}});
      if (stop_reason == "completed") stop_reason = why;
      continue;
    }
    const std::optional<bench::EvalResult> baseline =
        o.measure_baseline ? baseline_of(ctx, task) : std::optional<bench::EvalResult>();
    const std::string contract =
        task_contract({&task, backend, baseline ? &*baseline : nullptr, device});
    TaskSession session(ctx, task, o.strategy, contract);
    const StrategyResult r = run_strategy(session, o.strategy, o.strategy_options);
    const Attempt* best = best_attempt(r.attempts);
    const fs::path best_path = write_best(o.out_dir, task, best);
    json t = task_summary(task, r, best, best_path, baseline);
    if (best && !o.e2e.model.empty()) {
      const std::string hash = bench::hash_hex(read_text(best_path));
      std::optional<json> rec = log.find("e2e", task.id, o.strategy, "best");
      if (!rec || rec->value("code_hash", "") != hash) {
        if (o.progress) o.progress(concat(task.id, ": end-to-end check of ", best->step, " on ", o.e2e.model));
        rec = json{{"type", "e2e"},        {"task", task.id}, {"strategy", o.strategy},
                   {"step", "best"},       {"candidate_step", best->step}, {"code_hash", hash},
                   {"time", bench::utc_timestamp()}, {"result", e2e_check(o.e2e, task, best_path, o.out_dir)}};
        log.append(*rec);
      }
      t["e2e"] = (*rec)["result"];
    }
    tasks.push_back(t);
    scores.push_back(score_of(task, r));
    if (r.stop_reason != "completed" && stop_reason == "completed") stop_reason = r.stop_reason;
    for (const auto& a : r.attempts)
      if (a.fatal) refused = a.stop_reason;
    summary();
  }
  return summary();
}

}  // namespace fk::agent
