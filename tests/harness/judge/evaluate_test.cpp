// The evaluation on the CPU, in process, with rms_norm candidates that each cheat or err in
// one way the checks must see: answers replayed from memory on the timed calls, inputs
// written during timed calls, nondeterminism hiding wrong outputs, and kernels wrong only
// on inputs a random draw never gives. The honest baseline passes all of it.
#include "harness/judge/evaluate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include "fk/element.h"
#include "fk/ops/norm.h"
#include "support/test_seed.h"

namespace fk::bench {
namespace {

using ops::RmsNormArgs;

int g_calls = 0;  // the candidate's calls in this test
std::map<const void*, std::vector<char>> g_by_pointer;
std::map<uint64_t, std::vector<char>> g_by_sample;

const RmsNormArgs& args(const void* raw) { return *static_cast<const RmsNormArgs*>(raw); }
fk_status honest(const void* raw, void* stream) {
  return OpRegistry::global().baseline("rms_norm", DeviceType::cpu)(raw, stream);
}
void remember(std::vector<char>& into, const RmsNormArgs& a) {
  into.assign(static_cast<char*>(a.out.data), static_cast<char*>(a.out.data) + a.out.nbytes());
}

// rms_norm with the row's 1/rms computed by `inv_rms(sum of squares, H, eps)`.
template <class InvRms>
fk_status rms_with(const void* raw, InvRms inv_rms) {
  const RmsNormArgs& a = args(raw);
  const int64_t T = a.input.shape[0], H = a.input.shape[1];
  for (int64_t t = 0; t < T; ++t) {
    double ss = 0;
    bool constant = true;
    for (int64_t h = 0; h < H; ++h) {
      ss += get(a.input, t, h) * get(a.input, t, h);
      constant = constant && get(a.input, t, h) == get(a.input, t, 0);
    }
    const double inv = inv_rms(ss, H, a.eps, constant);
    for (int64_t h = 0; h < H; ++h) set(a.out, get(a.input, t, h) * inv * get(a.weight, h), t, h);
  }
  return FK_OK;
}

fk_status no_epsilon(const void* raw, void*) {
  return rms_with(raw, [](double ss, int64_t H, float, bool) { return 1.0 / std::sqrt(ss / static_cast<double>(H)); });
}
fk_status zero_on_constant_rows(const void* raw, void*) {
  return rms_with(raw, [](double ss, int64_t H, float eps, bool constant) {
    return constant ? 0.0 : 1.0 / std::sqrt(ss / static_cast<double>(H) + eps);
  });
}
// The first workload's checked calls are 3 public rounds, the secret one and round 0's
// repeated call: five.
fk_status late_pointer_cache(const void* raw, void* stream) {
  const RmsNormArgs& a = args(raw);
  if (++g_calls > 5)
    if (auto it = g_by_pointer.find(a.input.data); it != g_by_pointer.end()) {
      std::memcpy(a.out.data, it->second.data(), it->second.size());
      return FK_OK;
    }
  honest(raw, stream);
  if (g_calls > 5) remember(g_by_pointer[a.input.data], a);
  return FK_OK;
}
fk_status timed_input_scribble(const void* raw, void* stream) {
  honest(raw, stream);
  if (++g_calls > 5) set(args(raw).input, 3.0, 0, 0);
  return FK_OK;
}
// Flips the last bit of an output element on every call (never the same bits twice), and
// is far off once the checked calls are behind it.
fk_status nondeterministic_then_wrong(const void* raw, void* stream) {
  const RmsNormArgs& a = args(raw);
  honest(raw, stream);
  static_cast<unsigned char*>(a.out.data)[2 * (g_calls % a.out.numel())] ^= 1;
  if (++g_calls > 5) set(a.out, get(a.out, 0, 0) + 1.0, 0, 0);
  return FK_OK;
}
// Wrong on its second call only: round 0's repeated call.
fk_status wrong_on_the_repeat(const void* raw, void* stream) {
  honest(raw, stream);
  if (++g_calls == 2) set(args(raw).out, get(args(raw).out, 0, 1) + 1.0, 0, 1);
  return FK_OK;
}
// Outputs keyed on the first 16 bytes of every input row and the shape.
fk_status sampled_content_cache(const void* raw, void* stream) {
  const RmsNormArgs& a = args(raw);
  uint64_t h = static_cast<uint64_t>(a.input.shape[0] * 131 + a.input.shape[1]) * 0x9E3779B97F4A7C15ull;
  for (int64_t t = 0; t < a.input.shape[0]; ++t) {
    const auto* p = static_cast<const unsigned char*>(a.input.data) + t * a.input.strides[0] * a.input.element_size();
    for (int b = 0; b < 16; ++b) h = (h ^ p[b]) * 1099511628211ull;
  }
  if (auto it = g_by_sample.find(h); it != g_by_sample.end()) {
    std::memcpy(a.out.data, it->second.data(), it->second.size());
    return FK_OK;
  }
  honest(raw, stream);
  remember(g_by_sample[h], a);
  return FK_OK;
}

EvalResult run(fk_op_fn candidate, const std::string& name, std::vector<Json> check_workloads = {},
               std::function<void(const std::string&)> on_progress = {}) {
  g_calls = 0;
  g_by_pointer.clear();
  g_by_sample.clear();
  Task task;
  task.id = "rms_norm";
  task.op = "rms_norm";
  task.level = "L1";
  task.category = "test";
  task.workloads = {{Json{{"tokens", 6}, {"hidden", 256}}, 1, "small"}};
  task.check_workloads = std::move(check_workloads);
  EvalConfig cfg;
  cfg.backend = DeviceType::cpu;
  cfg.seeds = {test::seed_for(name, 0), test::seed_for(name, 1), test::seed_for(name, 2)};
  cfg.secret_seed = test::seed_for(name, 3);
  cfg.warmup_calls = 2;
  cfg.min_timed_calls = 8;
  cfg.max_timed_calls = 12;
  cfg.min_timed_ms = 0;
  cfg.on_progress = std::move(on_progress);
  return evaluate(task, Implementation{candidate, nullptr}, cfg);
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Evaluate, TheBaselinePassesEveryRoundTheTimedCallsAndTheEdgeRounds) {
  const EvalResult r = run(honest, "honest");
  ASSERT_EQ(r.verdict, Verdict::PASSED) << r.message;
  ASSERT_EQ(r.workloads.size(), 1u);
  EXPECT_TRUE(r.workloads[0].correct);
  EXPECT_GE(r.workloads[0].candidate.samples, 8);
}

// Each workload tells its phases as they start, numbered among all of the task's workloads.
TEST(Evaluate, ProgressNamesEachWorkloadsPhasesInOrder) {
  std::vector<std::string> said;
  const EvalResult r = run(honest, "progress", {Json{{"tokens", 3}, {"hidden", 64}}},
                           [&](const std::string& p) { said.push_back(p); });
  ASSERT_EQ(r.verdict, Verdict::PASSED) << r.message;
  const std::vector<std::string> want = {
      "workload 1/2 (small): preparing inputs",      "workload 1/2 (small): checking",
      "workload 1/2 (small): timing",                "workload 1/2 (small): checking edge inputs",
      "workload 2/2 (check only): preparing inputs", "workload 2/2 (check only): checking",
      "workload 2/2 (check only): checking edge inputs"};
  EXPECT_EQ(said, want);
}

TEST(Evaluate, AnRmsNormWithoutEpsilonFailsAnEdgeRound) {
  const EvalResult r = run(no_epsilon, "no_epsilon");
  EXPECT_EQ(r.verdict, Verdict::INCORRECT) << r.message;
  EXPECT_TRUE(has(r.message, "edge round (")) << r.message;
}

TEST(Evaluate, AKernelWrongOnConstantRowsFailsTheConstantRowsRound) {
  const EvalResult r = run(zero_on_constant_rows, "constant_rows");
  EXPECT_EQ(r.verdict, Verdict::INCORRECT) << r.message;
  EXPECT_TRUE(has(r.message, "edge round (constant rows)")) << r.message;
}

TEST(Evaluate, APointerCacheThatStartsAfterTheChecksIsCaughtOnTheTimedCalls) {
  const EvalResult r = run(late_pointer_cache, "late_pointer_cache");
  EXPECT_EQ(r.verdict, Verdict::REWARD_HACK) << r.message;
  EXPECT_TRUE(has(r.message, "timed call")) << r.message;
  EXPECT_TRUE(has(r.message, "differ from the baseline's on the same fresh inputs")) << r.message;
}

TEST(Evaluate, WritingIntoAnInputDuringATimedCallIsARewardHack) {
  const EvalResult r = run(timed_input_scribble, "timed_input_scribble");
  EXPECT_EQ(r.verdict, Verdict::REWARD_HACK) << r.message;
  EXPECT_TRUE(has(r.message, "timed call")) << r.message;
  EXPECT_TRUE(has(r.message, "input 'input' was modified")) << r.message;
}

TEST(Evaluate, NondeterminismDoesNotSwitchTheTimedChecksOff) {
  const EvalResult r = run(nondeterministic_then_wrong, "nondeterministic_then_wrong");
  EXPECT_EQ(r.verdict, Verdict::REWARD_HACK) << r.message;
  EXPECT_TRUE(has(r.message, "timed call")) << r.message;
}

TEST(Evaluate, ARepeatedCallThatDiffersIsCheckedByTolerance) {
  const EvalResult r = run(wrong_on_the_repeat, "wrong_on_the_repeat");
  EXPECT_EQ(r.verdict, Verdict::INCORRECT) << r.message;
  EXPECT_TRUE(has(r.message, "repeated call")) << r.message;
}

TEST(Evaluate, ACacheKeyedOnASampleOfTheInputBytesAnswersTheChangedRoundStale) {
  // The changed element escapes the key with probability 8 / hidden per workload: wide
  // check-only rows make that 8 / 1024 * 8 / 2048.
  const EvalResult r = run(sampled_content_cache, "sampled_content_cache",
                           {Json{{"tokens", 6}, {"hidden", 1024}}, Json{{"tokens", 5}, {"hidden", 2048}}});
  EXPECT_EQ(r.verdict, Verdict::INCORRECT) << r.message;
  EXPECT_TRUE(has(r.message, "one element changed")) << r.message;
}

// Every op's CPU implementation judged as a candidate on its first test workload, timed:
// fresh timed inputs, the timed checks and the edge rounds must never fail (or break on)
// an implementation that is right, whatever the op's arguments.
TEST(Evaluate, EveryOpsOwnImplementationPassesAsACandidate) {
  int judged = 0;
  for (const OpDef* def : OpRegistry::global().defs()) {
    const fk_op_fn fn = OpRegistry::global().baseline(def->name, DeviceType::cpu);
    if (!fn || def->test_workloads.empty()) continue;
    SCOPED_TRACE(def->name);
    Task task;
    task.id = def->name;
    task.op = def->name;
    task.level = def->level;
    task.category = "test";
    task.workloads = {{def->test_workloads.front(), 1, "test"}};
    EvalConfig cfg;
    cfg.backend = DeviceType::cpu;
    cfg.seeds = {test::seed_for(def->name, 0), test::seed_for(def->name, 1), test::seed_for(def->name, 2)};
    cfg.secret_seed = test::seed_for(def->name, 3);
    cfg.warmup_calls = 1;
    cfg.min_timed_calls = 4;
    cfg.max_timed_calls = 4;
    cfg.min_timed_ms = 0;
    const EvalResult r =
        evaluate(task, Implementation{fn, OpRegistry::global().active_plan(def->name, DeviceType::cpu)}, cfg);
    EXPECT_EQ(r.verdict, Verdict::PASSED) << r.message;
    ++judged;
  }
  EXPECT_GT(judged, 20);
}

// An optional input left out (layer_norm without bias: an undefined tensor) is skipped when
// the rounds reuse their buffers, not copied as if it held an element.
TEST(Evaluate, AnOptionalInputLeftOutIsJudgedLikeAnyOther) {
  Task task;
  task.id = "layer_norm";
  task.op = "layer_norm";
  task.level = "L1";
  task.category = "test";
  task.workloads = {{Json{{"tokens", 5}, {"hidden", 1000}, {"bias", false}}, 1, "no bias"}};
  EvalConfig cfg;
  cfg.backend = DeviceType::cpu;
  cfg.seeds = {test::seed_for("NoBias", 0), test::seed_for("NoBias", 1), test::seed_for("NoBias", 2)};
  cfg.secret_seed = test::seed_for("NoBias", 3);
  cfg.warmup_calls = 1;
  cfg.min_timed_calls = 4;
  cfg.max_timed_calls = 4;
  cfg.min_timed_ms = 0;
  const EvalResult r = evaluate(task, Implementation{OpRegistry::global().baseline("layer_norm", DeviceType::cpu), nullptr}, cfg);
  EXPECT_EQ(r.verdict, Verdict::PASSED) << r.message;
}

}  // namespace
}  // namespace fk::bench
