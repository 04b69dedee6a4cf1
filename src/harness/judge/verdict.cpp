#include "harness/judge/verdict.h"

namespace fk::bench {

Verdict worse_verdict(Verdict a, Verdict b) {
  auto rank = [](Verdict v) {
    switch (v) {
      case Verdict::PASSED: return 0;
      case Verdict::INCORRECT: return 1;
      case Verdict::TIMEOUT: return 2;
      case Verdict::RUNTIME_ERROR: return 3;
      case Verdict::COMPILE_ERROR: return 4;
      case Verdict::REWARD_HACK: return 5;
      case Verdict::HARNESS_ERROR: return 6;  // no verdict on the candidate at all
    }
    return 0;
  };
  return rank(b) > rank(a) ? b : a;
}

namespace {
constexpr std::pair<Verdict, const char*> kNames[] = {
    {Verdict::PASSED, "PASSED"},       {Verdict::COMPILE_ERROR, "COMPILE_ERROR"},
    {Verdict::RUNTIME_ERROR, "RUNTIME_ERROR"}, {Verdict::TIMEOUT, "TIMEOUT"},
    {Verdict::INCORRECT, "INCORRECT"}, {Verdict::REWARD_HACK, "REWARD_HACK"},
    {Verdict::HARNESS_ERROR, "HARNESS_ERROR"},
};
}  // namespace

std::string verdict_name(Verdict v) {
  for (auto [k, n] : kNames)
    if (k == v) return n;
  return "?";
}

Verdict verdict_from_name(const std::string& s) {
  for (auto [k, n] : kNames)
    if (s == n) return k;
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, "unknown verdict '", s, "'");
}

Json to_json(const TimingStats& t) {
  return {{"samples", t.samples}, {"median_us", t.median_us}, {"p10_us", t.p10_us}, {"p90_us", t.p90_us},
          {"min_us", t.min_us}, {"descheduled", t.descheduled}};
}

namespace {
TimingStats timing_from_json(const Json& j) {
  TimingStats t;
  t.samples = j.value("samples", 0);
  t.median_us = j.value("median_us", 0.0);
  t.p10_us = j.value("p10_us", 0.0);
  t.p90_us = j.value("p90_us", 0.0);
  t.min_us = j.value("min_us", 0.0);
  t.descheduled = j.value("descheduled", 0);
  return t;
}
}  // namespace

Json to_json(const WorkloadResult& w) {
  return {{"shape", w.shape},
          {"calls", w.calls},
          {"label", w.label},
          {"timed", w.timed},
          {"correct", w.correct},
          {"message", w.message},
          {"reference", w.reference},
          {"candidate_rel_l2", w.candidate_rel_l2},
          {"baseline_rel_l2", w.baseline_rel_l2},
          {"max_abs_err", w.max_abs_err},
          {"deterministic", w.deterministic},
          {"baseline", to_json(w.baseline)},
          {"candidate", to_json(w.candidate)},
          {"speedup", w.speedup},
          {"sol_baseline", w.sol_baseline},
          {"sol_candidate", w.sol_candidate},
          {"foreign_kernels", w.foreign_kernels},
          {"seconds", {{"prepare", w.seconds_prepare}, {"check", w.seconds_check}, {"timing", w.seconds_timing}}}};
}

Json to_json(const EvalResult& r) {
  Json ws = Json::array();
  for (const auto& w : r.workloads) ws.push_back(to_json(w));
  return {{"task", r.task},           {"verdict", verdict_name(r.verdict)}, {"message", r.message},
          {"workloads", ws},          {"speedup", r.speedup},               {"sol_candidate", r.sol_candidate},
          {"seeds", r.seeds},         {"secret_seed", r.secret_seed},       {"backend", r.backend},
          {"device", r.device},       {"toolchain", r.toolchain},           {"candidate_hash", r.candidate_hash},
          {"sandbox", r.sandbox},     {"seconds", r.seconds}};
}

EvalResult eval_result_from_json(const Json& j) {
  EvalResult r;
  r.task = j.value("task", "");
  r.verdict = verdict_from_name(j.value("verdict", "RUNTIME_ERROR"));
  r.message = j.value("message", "");
  r.speedup = j.value("speedup", 0.0);
  r.sol_candidate = j.value("sol_candidate", 0.0);
  r.seeds = j.value("seeds", std::vector<uint64_t>{});
  r.secret_seed = j.value("secret_seed", uint64_t{0});
  r.backend = j.value("backend", "");
  r.device = j.value("device", "");
  r.toolchain = j.value("toolchain", "");
  r.candidate_hash = j.value("candidate_hash", "");
  r.sandbox = j.value("sandbox", "");
  r.seconds = j.value("seconds", 0.0);
  for (const auto& w : j.value("workloads", Json::array())) {
    WorkloadResult x;
    x.shape = w.value("shape", Json::object());
    x.calls = w.value("calls", 1.0);
    x.label = w.value("label", "");
    x.timed = w.value("timed", true);
    x.correct = w.value("correct", false);
    x.message = w.value("message", "");
    x.reference = w.value("reference", "");
    x.candidate_rel_l2 = w.value("candidate_rel_l2", 0.0);
    x.baseline_rel_l2 = w.value("baseline_rel_l2", 0.0);
    x.max_abs_err = w.value("max_abs_err", 0.0);
    x.deterministic = w.value("deterministic", true);
    x.baseline = timing_from_json(w.value("baseline", Json::object()));
    x.candidate = timing_from_json(w.value("candidate", Json::object()));
    x.speedup = w.value("speedup", 0.0);
    x.sol_baseline = w.value("sol_baseline", 0.0);
    x.sol_candidate = w.value("sol_candidate", 0.0);
    x.foreign_kernels = w.value("foreign_kernels", std::vector<std::string>{});
    const Json secs = w.value("seconds", Json::object());
    x.seconds_prepare = secs.value("prepare", 0.0);
    x.seconds_check = secs.value("check", 0.0);
    x.seconds_timing = secs.value("timing", 0.0);
    r.workloads.push_back(std::move(x));
  }
  return r;
}

}  // namespace fk::bench
