#include "agent/session.h"

#include <chrono>
#include <fstream>
#include <random>
#include <thread>

#include "agent/code_extract.h"
#include "agent/feedback.h"
#include "agent/task_contract.h"
#include "harness/sandbox/compile.h"
#include "harness/device/device_info.h"

namespace fk::agent {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

void Limiter::acquire() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return free_ > 0; });
  --free_;
}

void Limiter::release() {
  {
    std::lock_guard lock(mu_);
    ++free_;
  }
  cv_.notify_one();
}

namespace {

std::string clip(const std::string& s, size_t n) { return s.size() > n ? s.substr(0, n) + "\n... (cut)" : s; }

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A run's JSON with the verbatim logs bounded (a compiler can print megabytes).
json bounded_run_json(const bench::CandidateRun& run) {
  json j = bench::run_to_json(run);
  j["message"] = clip(j.value("message", ""), 50000);
  j["compile"]["log"] = clip(j["compile"].value("log", ""), 50000);
  return j;
}

}  // namespace

TaskSession::TaskSession(RunContext& ctx, const bench::Task& task, std::string strategy, std::string contract)
    : ctx_(ctx), task_(task), strategy_(std::move(strategy)), contract_(std::move(contract)) {}

void TaskSession::say(const std::string& s) const {
  if (ctx_.progress) ctx_.progress(concat(task_.id, " ", strategy_, " ", s));
}

uint64_t TaskSession::seed(uint64_t wanted) {
  if (auto rec = ctx_.log->find("run", task_.id, strategy_, "seed")) return rec->value("seed", wanted);
  ctx_.log->append({{"type", "run"}, {"task", task_.id}, {"strategy", strategy_}, {"step", "seed"}, {"seed", wanted}});
  return wanted;
}

Attempt TaskSession::run(const AttemptRequest& req) {
  Attempt a;
  a.step = req.step;
  a.kind = req.kind;
  a.parents = req.parents;
  const Clock::time_point t0 = Clock::now();
  const std::string prompt_hash = bench::hash_hex(to_json(req.messages).dump());

  // The model call: replayed when a previous run made it with this very prompt.
  std::optional<json> call = ctx_.log->find("model_call", task_.id, strategy_, req.step);
  if (call && (!call->value("ok", false) || call->value("prompt_hash", "") != prompt_hash)) call.reset();
  ChatResponse resp;
  if (call) {
    resp.ok = true;
    resp.text = call->value("response", "");
    resp.finish_reason = call->value("finish_reason", "");
    resp.prompt_tokens = (*call)["endpoint"]["usage"].value("prompt_tokens", int64_t{0});
    resp.completion_tokens = (*call)["endpoint"]["usage"].value("completion_tokens", int64_t{0});
    ctx_.budget->add_tokens(resp.total_tokens());
  } else {
    {
      Limiter::Hold hold(*ctx_.requests);
      a.stop_reason = ctx_.budget->exhausted();  // checked after waiting for a slot: others may have spent it
      if (!a.stop_reason.empty()) {
        a.outcome = Outcome::not_run;
        a.message = "not run: " + a.stop_reason;
        return a;
      }
      say(concat(req.step, ": asking the model (", total_chars(req.messages), " characters of prompt)"));
      resp = ctx_.client->complete(req.messages);
    }
    ctx_.budget->add_tokens(resp.total_tokens());
  }
  a.response = resp.text;
  a.prompt_tokens = resp.prompt_tokens;
  a.completion_tokens = resp.completion_tokens;
  a.finish_reason = resp.finish_reason;

  const ExtractedCode x = resp.ok ? extract_code(resp.text) : ExtractedCode{};
  if (resp.ok && x.found) {
    a.candidate = ctx_.out_dir / "candidates" / task_.id / (req.step + candidate_extension(ctx_.backend));
    fs::create_directories(a.candidate.parent_path());
    std::ofstream(a.candidate, std::ios::binary) << x.code;
    a.code = x.code;
  }
  if (!call) {
    json rec = {{"type", "model_call"},
                {"task", task_.id},
                {"strategy", strategy_},
                {"step", req.step},
                {"kind", req.kind},
                {"parents", req.parents},
                {"time", bench::utc_timestamp()},
                {"ok", resp.ok},
                {"prompt_hash", prompt_hash},
                {"messages", to_json(req.messages)},
                {"response", resp.text},
                {"finish_reason", resp.finish_reason},
                {"endpoint", to_json(resp)},
                {"extraction", {{"found", x.found}, {"language", x.language}, {"blocks", x.blocks}}},
                {"code_path", x.found ? json(a.candidate.string()) : json(nullptr)},
                {"duration_s", since(t0)}};
    if (!resp.reasoning.empty()) rec["reasoning"] = resp.reasoning;
    if (!x.found && resp.ok) rec["extraction"]["problem"] = x.problem;
    ctx_.log->append(rec);
  }

  if (!resp.ok) {
    a.outcome = Outcome::endpoint_error;
    a.message = resp.error;
    a.fatal = resp.fatal;
    if (resp.fatal) a.stop_reason = "endpoint refused: " + resp.error;
    a.feedback = "The model call failed: " + resp.error + "\n";
    say(concat(req.step, ": endpoint error: ", resp.error));
    return a;
  }
  if (!x.found) {
    a.outcome = Outcome::no_code;
    a.message = x.problem;
    a.feedback = no_code_feedback(x, resp.finish_reason);
    say(concat(req.step, ": no code (", x.problem, ")"));
    return a;
  }
  evaluate(a, bench::hash_hex(x.code));
  return a;
}

void TaskSession::evaluate(Attempt& a, const std::string& code_hash) {
  const Clock::time_point t0 = Clock::now();
  std::optional<json> rec = ctx_.log->find("evaluation", task_.id, strategy_, a.step);
  if (rec && rec->value("code_hash", "") != code_hash) rec.reset();
  if (!rec) {
    if (ctx_.budget->exhausted() == "interrupted") {
      a.outcome = Outcome::not_run;
      a.stop_reason = "interrupted";
      a.message = "not evaluated: interrupted";
      return;
    }
    if (ctx_.precompile) {
      Limiter::Hold hold(*ctx_.compiles);
      say(concat(a.step, ": compiling"));
      ctx_.precompile(a.candidate);
    }
    bench::CandidateRun run;
    std::string profile;
    bool passed;
    {
      Limiter::Hold hold(*ctx_.evaluations);  // the profiler shares the device like an evaluation
      say(concat(a.step, ": evaluating"));
      run = ctx_.evaluate(task_, a.candidate);
      passed = run.result.verdict == bench::Verdict::PASSED;
      if (passed && ctx_.profile) profile = ctx_.profile(task_, run);
    }
    if (ctx_.store) ctx_.store(run);
    rec = json{{"type", "evaluation"},
               {"task", task_.id},
               {"strategy", strategy_},
               {"step", a.step},
               {"time", bench::utc_timestamp()},
               {"candidate", a.candidate.string()},
               {"code_hash", code_hash},
               {"verdict", bench::verdict_name(run.result.verdict)},
               {"message", clip(run.result.message, 20000)},
               {"speedup", run.result.speedup},
               {"sol", run.result.sol_candidate},
               {"reward", passed ? run.result.speedup : 0.0},
               {"profile", profile},
               {"feedback", evaluation_feedback(run, profile)},
               {"result", bounded_run_json(run)},
               {"duration_s", since(t0)}};
    ctx_.log->append(*rec);
  }
  a.outcome = Outcome::evaluated;
  a.verdict = rec->value("verdict", "");
  a.message = rec->value("message", "");
  a.speedup = rec->value("speedup", 0.0);
  a.sol = rec->value("sol", 0.0);
  a.reward = rec->value("reward", 0.0);
  a.feedback = rec->value("feedback", "");
  say(concat(a.step, ": ", a.verdict, a.passed() ? concat(" speedup ", a.speedup) : ""));
}

std::vector<Attempt> TaskSession::run_parallel(const std::vector<AttemptRequest>& requests) {
  std::vector<Attempt> out(requests.size());
  std::vector<std::thread> threads;
  std::mutex error_mu;
  std::exception_ptr error;
  for (size_t i = 0; i < requests.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        out[i] = run(requests[i]);
      } catch (...) {
        std::lock_guard lock(error_mu);
        if (!error) error = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  return out;
}

}  // namespace fk::agent
