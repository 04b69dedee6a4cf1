// Each strategy's loop against a local replay endpoint, with real CPU candidates that the
// harness compiles, runs in worker processes and judges: prompts carry the contract and
// the feedback, the right candidate wins, malformed answers, code-less answers and
// endpoint errors are recorded and survived, budgets stop the run cleanly, and a rerun
// resumes from the trajectory log without repeating finished work.
//
// The harness evaluates each candidate in a worker process started from the running
// executable (`<exe> kernels worker ...`), so this test's main() also serves as that worker.
#include <gtest/gtest.h>

#include "fk/status.h"
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <regex>

#include "agent/agent_run.h"
#include "agent/replay_endpoint.h"
#include "harness/store/result_store.h"
#include "harness/sandbox/runner_args.h"
#include "harness/sandbox/worker.h"

namespace fk::agent {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::ReplayEndpoint;
using test::Scripted;

// --- CPU candidates for rms_norm ------------------------------------------------------

// Correct; `repeat` times the work (slower), `scale` != 1 makes it wrong.
std::string rms_candidate(const std::string& marker, int repeat, const char* scale = "1.0f") {
  return "// " + marker + R"(
#include <cmath>
#include <cstring>

#include "fk/dtype_convert.h"
#include "fk/ops/norm.h"

namespace {

float load(const fk::TensorView& v, const void* p) {
  if (v.dtype == fk::DType::f32) return *static_cast<const float*>(p);
  uint16_t b;
  std::memcpy(&b, p, 2);
  return v.dtype == fk::DType::bf16 ? fk::bf16_to_float(b) : fk::f16_to_float(b);
}
void store(const fk::TensorView& v, void* p, float x) {
  if (v.dtype == fk::DType::f32) {
    *static_cast<float*>(p) = x;
    return;
  }
  const uint16_t b = v.dtype == fk::DType::bf16 ? fk::float_to_bf16(x) : fk::float_to_f16(x);
  std::memcpy(p, &b, 2);
}

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  const int64_t T = a.input.shape[0], H = a.input.shape[1], es = a.input.element_size();
  for (int rep = 0; rep < )" + std::to_string(repeat) + R"(; ++rep)
    for (int64_t t = 0; t < T; ++t) {
      const char* x = static_cast<const char*>(a.input.data) + t * a.input.strides[0] * es;
      char* y = static_cast<char*>(a.out.data) + t * a.out.strides[0] * es;
      double ss = 0;
      for (int64_t h = 0; h < H; ++h) {
        const double f = load(a.input, x + h * es);
        ss += f * f;
      }
      const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(H) + a.eps)) * )" + scale + R"(;
      for (int64_t h = 0; h < H; ++h)
        store(a.out, y + h * es,
              load(a.input, x + h * es) * inv * load(a.weight, static_cast<const char*>(a.weight.data) + h * es));
    }
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
)";
}

const std::string kFast = rms_candidate("fast", 1);
const std::string kSlow = rms_candidate("slow", 32);
const std::string kIncorrect = rms_candidate("incorrect", 1, "1.05f");
const std::string kCompileError = R"(// broken
#include "fk/ops/norm.h"
fk_status run(const void* raw, void*) { return this_is_not_declared(raw); }
FK_EXPORT_CANDIDATE(rms_norm, run)
)";

// --- helpers --------------------------------------------------------------------------

const bench::Task& cpu_task() {
  static const bench::Task t = bench::load_task_file(fs::path(FK_SOURCE_DIR) / "tests/data/tasks_cpu/rms_norm.json");
  return t;
}

fs::path scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / concat("fk-agent-test-", getpid()) / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

AgentOptions options(const ReplayEndpoint& ep, const std::string& strategy, const fs::path& out) {
  AgentOptions o;
  o.tasks = {cpu_task()};
  o.strategy = strategy;
  o.endpoint.url = ep.url();
  o.endpoint.model = "replay";
  o.endpoint.api_key = "sk-secret-test-key";
  o.endpoint.timeout_s = 20;
  o.endpoint.max_attempts = 2;
  o.endpoint.backoff_initial_s = 0.01;
  o.endpoint.backoff_max_s = 0.02;
  o.out_dir = out;
  o.pipeline.backend = DeviceType::cpu;
  o.pipeline.worker_timeout_s = 60;
  o.pipeline.eval.min_timed_calls = 5;
  o.pipeline.eval.max_timed_calls = 5;
  o.pipeline.eval.min_timed_ms = 0;
  // A compile cache shared by every run of these tests (content-addressed, so always valid):
  // each distinct candidate compiles once.
  o.pipeline.compile.cache_dir = fs::temp_directory_path() / "fk-agent-test-candidate-cache";
  o.compile_jobs = 2;
  o.eval_jobs = 2;
  return o;
}

std::vector<json> records(const fs::path& out, const std::string& type = "") {
  std::vector<json> v;
  std::ifstream in(out / "trajectory.jsonl");
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && (type.empty() || j.value("type", "") == type)) v.push_back(j);
  }
  return v;
}

json record(const fs::path& out, const std::string& type, const std::string& step) {
  json found;
  for (const auto& r : records(out, type))
    if (r.value("step", "") == step) found = r;
  return found;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const json& task_of(const json& summary, size_t i = 0) { return summary["tasks"][i]; }

// --- tests ----------------------------------------------------------------------------

TEST(AgentSingle, OneSampleJudgedAndRecorded) {
  const fs::path out = scratch("single");
  ReplayEndpoint ep({Scripted::code(kFast)});
  AgentOptions o = options(ep, "single", out);
  o.results_db = out / "results.db";
  const json s = run_agent(o);

  const auto got = ep.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].authorization, "Bearer sk-secret-test-key");
  const std::string prompt = ReplayEndpoint::last_user(got[0].body);
  EXPECT_TRUE(has(prompt, "struct RmsNormArgs"));
  EXPECT_TRUE(has(prompt, "rms_norm_reference"));
  EXPECT_TRUE(std::regex_search(prompt, std::regex(R"(calls 10 .*baseline [0-9.]+ us)"))) << "baseline time in the prompt";
  EXPECT_TRUE(has(prompt, "-DFK_CANDIDATE=1"));
  EXPECT_TRUE(has(prompt, "FK_EXPORT_CANDIDATE(rms_norm, run)"));
  EXPECT_EQ(got[0].body["messages"][0]["role"], "system");

  const json& t = task_of(s);
  EXPECT_EQ(t["best"]["step"], "s0");
  EXPECT_EQ(t["outcomes"]["PASSED"], 1);
  EXPECT_EQ(s["stop_reason"], "completed");
  EXPECT_EQ(s["tokens"]["prompt"], 100);
  EXPECT_EQ(s["tokens"]["completion"], 50);
  EXPECT_EQ(read(out / "best/rms_norm.cpp"), kFast);
  EXPECT_EQ(read(out / "candidates/rms_norm/s0.cpp"), kFast);
  EXPECT_TRUE(fs::exists(out / "summary.json"));

  const json call = record(out, "model_call", "s0");
  EXPECT_EQ(call["messages"], got[0].body["messages"]);
  EXPECT_TRUE(has(call["response"], "```cpp"));
  EXPECT_EQ(call["code_path"], (out / "candidates/rms_norm/s0.cpp").string());
  EXPECT_EQ(call["endpoint"]["usage"]["prompt_tokens"], 100);
  const json ev = record(out, "evaluation", "s0");
  EXPECT_EQ(ev["verdict"], "PASSED");
  EXPECT_GT(ev["speedup"].get<double>(), 0);
  EXPECT_EQ(ev["reward"], ev["speedup"]);
  EXPECT_TRUE(has(ev["feedback"], "Task speedup"));
  EXPECT_TRUE(has(ev["feedback"], "Profiler: unavailable"));
  EXPECT_EQ(record(out, "evaluation", "baseline")["verdict"], "PASSED");
  // The evaluation is also in the results database, under the run's batch.
  bench::ResultStore db(out / "results.db");
  const auto stored = db.batch(s["results_batch"].get<std::string>());
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].verdict, "PASSED");
  EXPECT_EQ(stored[0].task, "rms_norm");
  // The key never reaches the records.
  EXPECT_FALSE(has(read(out / "trajectory.jsonl"), "sk-secret"));
  EXPECT_FALSE(has(read(out / "summary.json"), "sk-secret"));
}

TEST(AgentRefine, EachTurnCarriesThePreviousFeedback) {
  const fs::path out = scratch("refine");
  ReplayEndpoint ep({Scripted::code(kCompileError), Scripted::answer("Let me explain the algorithm in words instead."),
                     Scripted::code(kIncorrect), Scripted::code(kFast)});
  AgentOptions o = options(ep, "refine", out);
  o.strategy_options.turns = 4;
  o.measure_baseline = false;
  const json s = run_agent(o);
  const auto got = ep.received();
  ASSERT_EQ(got.size(), 4u);

  // Turn 2 sees turn 1's compiler error verbatim, after turn 1's own answer.
  const std::string compile_log = record(out, "evaluation", "t0")["message"];
  ASSERT_TRUE(has(compile_log, "this_is_not_declared"));
  EXPECT_TRUE(has(ReplayEndpoint::last_user(got[1].body), compile_log));
  ASSERT_EQ(got[1].body["messages"].size(), 4u);
  EXPECT_EQ(got[1].body["messages"][2]["role"], "assistant");
  EXPECT_TRUE(has(got[1].body["messages"][2]["content"], "this_is_not_declared"));
  // Turn 3: the code-less answer; turn 4: the failing round, shape, index and error.
  EXPECT_TRUE(has(ReplayEndpoint::last_user(got[2].body), "No candidate: the answer contains no fenced code block"));
  const std::string t3 = ReplayEndpoint::last_user(got[3].body);
  EXPECT_TRUE(has(t3, "Verdict: INCORRECT"));
  EXPECT_TRUE(has(t3, "round"));
  EXPECT_TRUE(has(t3, "worst at index"));
  EXPECT_TRUE(has(t3, "rel L2 err"));
  EXPECT_EQ(got[3].body["messages"].size(), 8u);

  const json& t = task_of(s);
  EXPECT_EQ(t["best"]["step"], "t3");
  EXPECT_EQ(t["outcomes"]["COMPILE_ERROR"], 1);
  EXPECT_EQ(t["outcomes"]["no_code"], 1);
  EXPECT_EQ(t["outcomes"]["INCORRECT"], 1);
  EXPECT_EQ(t["outcomes"]["PASSED"], 1);
  EXPECT_EQ(t["attempts"][2]["reward"], 0.0);  // incorrect: no reward
  EXPECT_EQ(read(out / "best/rms_norm.cpp"), kFast);
}

TEST(AgentBestOfN, SamplesInParallelAndKeepsTheFastest) {
  const fs::path out = scratch("best_of_n");
  const std::vector<Scripted> answers = {Scripted::code(kSlow), Scripted::code(kFast), Scripted::code(kIncorrect),
                                         Scripted::answer("No code today.")};
  ReplayEndpoint ep([&](const json&, int i) { return answers[static_cast<size_t>(i % 4)].after(0.3); });
  AgentOptions o = options(ep, "best-of-n", out);
  o.strategy_options.samples = 4;
  o.concurrency = 4;
  o.measure_baseline = false;
  const json s = run_agent(o);
  EXPECT_EQ(ep.received().size(), 4u);
  EXPECT_GE(ep.max_in_flight(), 2) << "requests were not concurrent";
  const json& t = task_of(s);
  EXPECT_EQ(t["outcomes"]["PASSED"], 2);
  EXPECT_EQ(t["outcomes"]["INCORRECT"], 1);
  EXPECT_EQ(t["outcomes"]["no_code"], 1);
  EXPECT_EQ(t["attempts"].size(), 4u);
  EXPECT_EQ(read(out / "best/rms_norm.cpp"), kFast);
  EXPECT_EQ(read(t["best"]["candidate"].get<std::string>()), kFast);
}

TEST(AgentEvolve, MutatesParentsThenCrossesOverTheBest) {
  const fs::path out = scratch("evolve");
  const std::string mutant = rms_candidate("mutant", 12), child = rms_candidate("crossover", 1);
  std::atomic<int> first{0};
  ReplayEndpoint ep([&](const json& body, int) {
    const std::string u = ReplayEndpoint::last_user(body);
    if (has(u, "Combine the best ideas")) return Scripted::code(child);
    if (has(u, "Improve this candidate")) return Scripted::code(mutant);
    return Scripted::code(first++ == 0 ? kSlow : kIncorrect);
  });
  AgentOptions o = options(ep, "evolve", out);
  o.strategy_options.population = 2;
  o.strategy_options.generations = 2;
  o.strategy_options.crossover_rate = 1.0;
  o.strategy_options.seed = 7;
  o.measure_baseline = false;
  const json s = run_agent(o);
  EXPECT_EQ(ep.received().size(), 6u);

  for (const char* step : {"g1-0", "g1-1"}) {  // only one passing parent: mutations
    const json call = record(out, "model_call", step);
    EXPECT_EQ(call["kind"], "mutation") << step;
    ASSERT_EQ(call["parents"].size(), 1u);
    const std::string parent = call["parents"][0];
    const std::string prompt = call["messages"][1]["content"];
    EXPECT_TRUE(has(prompt, read(out / "candidates/rms_norm" / (parent + ".cpp")))) << "parent code in the prompt";
    EXPECT_TRUE(has(prompt, record(out, "evaluation", parent)["feedback"].get<std::string>())) << "its feedback";
  }
  for (const char* step : {"g2-0", "g2-1"}) {  // two passing: crossover of the best
    const json call = record(out, "model_call", step);
    EXPECT_EQ(call["kind"], "crossover") << step;
    ASSERT_EQ(call["parents"].size(), 2u);
    const std::string prompt = call["messages"][1]["content"];
    for (const auto& p : call["parents"])
      EXPECT_TRUE(has(prompt, read(out / "candidates/rms_norm" / (p.get<std::string>() + ".cpp"))));
  }
  const json& t = task_of(s);
  EXPECT_EQ(t["best"]["step"].get<std::string>().rfind("g2-", 0), 0u);
  EXPECT_EQ(read(out / "best/rms_norm.cpp"), child);
  EXPECT_EQ(record(out, "run", "seed")["seed"], 7);
  for (const auto& a : t["attempts"])
    if (a.value("verdict", "") == "INCORRECT") EXPECT_EQ(a["reward"], 0.0);
}

TEST(AgentEndpoint, ErrorsAndMalformedAnswersAreRecordedAndTheLoopGoesOn) {
  const fs::path out = scratch("endpoint_errors");
  ReplayEndpoint ep({Scripted::error(500, "overloaded"), Scripted::error(502, "bad gateway"), Scripted::malformed(),
                     Scripted::code(kFast), Scripted::error(400, "prompt too long")});
  AgentOptions o = options(ep, "refine", out);
  o.strategy_options.turns = 3;
  o.measure_baseline = false;
  const json s = run_agent(o);
  const auto got = ep.received();
  ASSERT_EQ(got.size(), 5u);
  const json& t = task_of(s);
  EXPECT_EQ(t["attempts"][0]["outcome"], "endpoint_error");
  EXPECT_TRUE(has(t["attempts"][0]["message"], "HTTP 502"));
  const json failed = record(out, "model_call", "t0");
  EXPECT_FALSE(failed["ok"].get<bool>());
  EXPECT_EQ(failed["endpoint"]["attempt_errors"].size(), 2u);
  // A failed call adds nothing to the conversation: t1 asks the same again.
  EXPECT_EQ(got[2].body["messages"], got[0].body["messages"]);
  EXPECT_EQ(record(out, "model_call", "t1")["endpoint"]["attempts"], 2);
  EXPECT_EQ(t["attempts"][1]["verdict"], "PASSED");
  EXPECT_EQ(t["attempts"][2]["outcome"], "endpoint_error");  // 400: not retried
  EXPECT_TRUE(has(t["attempts"][2]["message"], "prompt too long"));
  EXPECT_EQ(t["best"]["step"], "t1");
  EXPECT_EQ(s["stop_reason"], "completed");
}

TEST(AgentEndpoint, ARefusalStopsTheRun) {
  const fs::path out = scratch("refusal");
  ReplayEndpoint ep({Scripted::error(401, "invalid api key")});
  AgentOptions o = options(ep, "single", out);
  bench::Task second = cpu_task();
  second.id = "rms_norm_again";
  o.tasks.push_back(second);
  o.measure_baseline = false;
  const json s = run_agent(o);
  EXPECT_EQ(ep.received().size(), 1u);
  EXPECT_TRUE(has(task_of(s, 0)["stop_reason"], "endpoint refused: HTTP 401"));
  EXPECT_TRUE(has(task_of(s, 1)["stop_reason"], "not started: endpoint refused"));
  EXPECT_TRUE(task_of(s, 0)["best"].is_null());
  EXPECT_FALSE(fs::exists(out / "best/rms_norm.cpp"));
}

TEST(AgentBudget, TokensRunOutCleanly) {
  const fs::path out = scratch("tokens");
  ReplayEndpoint ep([](const json&, int) { return Scripted::answer("Thinking about it.", 800, 200); });
  AgentOptions o = options(ep, "refine", out);
  o.strategy_options.turns = 5;
  o.max_tokens = 1500;
  o.measure_baseline = false;
  const json s = run_agent(o);
  EXPECT_EQ(ep.received().size(), 2u);
  const json& t = task_of(s);
  ASSERT_EQ(t["attempts"].size(), 3u);
  EXPECT_EQ(t["attempts"][2]["outcome"], "not_run");
  EXPECT_EQ(t["stop_reason"].get<std::string>().rfind("max_tokens", 0), 0u);
  EXPECT_EQ(s["stop_reason"].get<std::string>().rfind("max_tokens", 0), 0u);
  EXPECT_EQ(s["tokens"]["total"], 2000);
}

TEST(AgentBudget, WallTimeRunsOutCleanly) {
  const fs::path out = scratch("wall");
  ReplayEndpoint ep([](const json&, int) { return Scripted::answer("Still thinking.").after(0.4); });
  AgentOptions o = options(ep, "refine", out);
  o.strategy_options.turns = 4;
  o.max_wall_s = 0.3;
  o.measure_baseline = false;
  const json s = run_agent(o);
  EXPECT_EQ(ep.received().size(), 1u);
  EXPECT_EQ(task_of(s)["stop_reason"].get<std::string>().rfind("max_wall_time", 0), 0u);
}

TEST(AgentResume, ARerunRepeatsNoFinishedCallOrEvaluation) {
  const fs::path out = scratch("resume");
  {
    ReplayEndpoint ep({Scripted::code(kCompileError), Scripted::code(kFast)});
    AgentOptions o = options(ep, "refine", out);
    o.strategy_options.turns = 2;
    EXPECT_EQ(task_of(run_agent(o))["best"]["step"], "t1");
  }
  // Killed during t1's evaluation, mid-way through writing its record.
  const fs::path log = out / "trajectory.jsonl";
  std::string kept;
  for (const auto& r : records(out))
    if (!(r["type"] == "evaluation" && r["step"] == "t1")) kept += r.dump() + "\n";
  std::ofstream(log, std::ios::trunc) << kept << R"({"type": "evaluation", "task": "rms_norm", "strat)";
  {
    ReplayEndpoint ep(std::vector<Scripted>{});  // any call would fail
    AgentOptions o = options(ep, "refine", out);
    o.strategy_options.turns = 2;
    const json s = run_agent(o);
    EXPECT_EQ(ep.received().size(), 0u) << "a finished model call was repeated";
    EXPECT_EQ(s["skipped_log_lines"], 1);
    EXPECT_EQ(task_of(s)["best"]["step"], "t1");
    EXPECT_EQ(s["tokens"]["total"], 300);  // replayed calls count toward the budget
    EXPECT_EQ(record(out, "evaluation", "t1")["verdict"], "PASSED");
    EXPECT_EQ(records(out, "evaluation").size(), 3u) << "baseline, t0 and the re-run t1";
  }
  {  // One more turn: only that call is made, and it carries t1's feedback.
    ReplayEndpoint ep({Scripted::code(kFast)});
    AgentOptions o = options(ep, "refine", out);
    o.strategy_options.turns = 3;
    const json s = run_agent(o);
    const auto got = ep.received();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].body["messages"].size(), 6u);
    EXPECT_TRUE(has(ReplayEndpoint::last_user(got[0].body), record(out, "evaluation", "t1")["feedback"]));
    EXPECT_EQ(task_of(s)["attempts"].size(), 3u);
    EXPECT_EQ(records(out, "evaluation").size(), 4u);
  }
}

}  // namespace
}  // namespace fk::agent

int main(int argc, char** argv) {
  fk::bench::serve_as_runner_if_asked(argc, argv);  // the worker's runners are this executable too
  if (argc == 7 && std::strcmp(argv[1], "kernels") == 0 && std::strcmp(argv[2], "worker") == 0)
    return fk::bench::worker_main(argv[4], argv[6]);  // <exe> kernels worker --request R --result F
  testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::temp_directory_path() / fk::concat("fk-agent-test-", getpid()), ec);
  return rc;
}
