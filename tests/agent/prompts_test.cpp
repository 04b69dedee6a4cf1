// What the model sees: the task contract (declaration, reference source, workloads with
// call counts and baseline times, device, compile command, headers, skeleton), the
// feedback on an evaluation, the strategies' prompts and the history trimming; plus task
// selection and the profiler's summary.
#include <gtest/gtest.h>

#include "fk/status.h"

#include "agent/feedback.h"
#include "agent/profiler.h"
#include "agent/prompts.h"
#include "agent/task_contract.h"
#include "agent/task_select.h"

namespace fk::agent {
namespace {

namespace fs = std::filesystem;
using bench::Task;

const Task& cpu_task() {
  static const Task t = bench::load_task_file(fs::path(FK_SOURCE_DIR) / "tests/data/tasks_cpu/rms_norm.json");
  return t;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(AgentTaskContract, HoldsEverythingTheModelNeeds) {
  bench::EvalResult baseline;
  bench::WorkloadResult w;
  w.shape = cpu_task().workloads[0].shape;
  w.baseline.median_us = 12.5;
  w.sol_baseline = 0.25;
  baseline.workloads.push_back(w);
  const std::string c = task_contract({&cpu_task(), DeviceType::cpu, &baseline, describe_device(DeviceType::cpu)});
  EXPECT_TRUE(has(c, "struct RmsNormArgs")) << "declaration";
  EXPECT_TRUE(has(c, "rsqrt(mean(input^2) + eps)")) << "semantics";
  EXPECT_TRUE(has(c, "struct TensorView")) << "ABI type";
  EXPECT_TRUE(has(c, "rms_norm_reference")) << "reference";
  EXPECT_TRUE(has(c, "src/ops/norm/norm_reference.h")) << "the reference's math header";
  EXPECT_TRUE(has(c, R"({"hidden":256,"tokens":4}  calls 10)")) << "workloads and call counts";
  EXPECT_TRUE(has(c, "baseline 12.50 us, 25.0% of speed of light")) << "baseline time and SoL";
  EXPECT_TRUE(has(c, "2 check-only shapes"));
  EXPECT_TRUE(has(c, "CPU backend"));
  EXPECT_TRUE(has(c, "-DFK_CANDIDATE=1")) << "compile command";
  EXPECT_TRUE(has(c, "-shared <candidate>.cpp"));
  EXPECT_TRUE(has(c, "fk/ops/norm.h")) << "headers";
  EXPECT_TRUE(has(c, "fk/dtype_convert.h"));
  EXPECT_FALSE(has(c, "fk/cuda/vec.cuh")) << "no CUDA headers for a CPU candidate";
  EXPECT_TRUE(has(c, "FK_EXPORT_CANDIDATE(rms_norm, run)")) << "skeleton";
  EXPECT_TRUE(has(c, "poisoned"));
  const std::string without = task_contract({&cpu_task(), DeviceType::cpu, nullptr, "a device"});
  EXPECT_TRUE(has(without, "not measured in advance"));
}

TEST(AgentTaskContract, ForCudaNamesTheCudaCompileAndHeaders) {
  const std::string h = available_headers(DeviceType::cuda);
  EXPECT_TRUE(has(h, "fk/cuda/vec.cuh"));
  EXPECT_TRUE(has(h, "CUTLASS"));
  EXPECT_TRUE(has(candidate_skeleton(cpu_task(), DeviceType::cuda), "cudaStream_t"));
  EXPECT_EQ(candidate_extension(DeviceType::cuda), ".cu");
  EXPECT_EQ(candidate_extension(DeviceType::cpu), ".cpp");
}

TEST(AgentFeedback, CompileErrorsVerbatim) {
  bench::CandidateRun run;
  run.result.verdict = bench::Verdict::COMPILE_ERROR;
  run.result.message = "k.cpp:3:10: error: 'this_is_not_declared' was not declared in this scope";
  const std::string f = evaluation_feedback(run, "");
  EXPECT_TRUE(has(f, "Verdict: COMPILE_ERROR"));
  EXPECT_TRUE(has(f, run.result.message));
  run.result.message = std::string(100, 'e') + "TAIL";
  EXPECT_FALSE(has(evaluation_feedback(run, "", 50), "TAIL"));
  EXPECT_TRUE(has(evaluation_feedback(run, "", 50), "more characters cut"));
}

TEST(AgentFeedback, FailuresAndTimings) {
  bench::CandidateRun run;
  run.compile.ok = true;
  run.result.verdict = bench::Verdict::INCORRECT;
  run.result.message = R"({"hidden":256,"tokens":4}: round 1 (seed 7): output 'out': 3 of 1024 elements outside)";
  bench::WorkloadResult bad;
  bad.shape = {{"tokens", 4}, {"hidden", 256}};
  bad.calls = 10;
  bad.message = "round 1 (seed 7): worst at index 17: got 1.5, expected 1.25";
  bench::WorkloadResult good;
  good.shape = {{"tokens", 32}, {"hidden", 1024}};
  good.correct = true;
  good.baseline.median_us = 10;
  good.candidate.median_us = 5;
  good.candidate.samples = 5;
  good.speedup = 2;
  good.sol_candidate = 0.5;
  good.sol_baseline = 0.25;
  run.result.workloads = {bad, good};
  const std::string f = evaluation_feedback(run, "unavailable: no profiler");
  EXPECT_TRUE(has(f, "Verdict: INCORRECT"));
  EXPECT_TRUE(has(f, "round 1 (seed 7): output 'out'"));
  EXPECT_TRUE(has(f, "worst at index 17: got 1.5, expected 1.25"));
  EXPECT_TRUE(has(f, "baseline 10.00 us, yours 5.00 us"));
  EXPECT_TRUE(has(f, "speedup 2.000x"));
  EXPECT_TRUE(has(f, "50.0% of speed of light (baseline 25.0%)"));
  EXPECT_TRUE(has(f, "Profiler: unavailable: no profiler"));
  ExtractedCode none;
  none.problem = "the answer contains no fenced code block";
  EXPECT_TRUE(has(no_code_feedback(none, "length"), "completion token limit"));
}

TEST(AgentPrompts, MutationAndCrossoverShowTheParents) {
  const auto m = mutation_messages("CONTRACT", DeviceType::cuda, {"g0-1", "PARENT CODE\n", "Verdict: INCORRECT"});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_TRUE(has(m[1].content, "CONTRACT"));
  EXPECT_TRUE(has(m[1].content, "```cuda\nPARENT CODE\n```"));
  EXPECT_TRUE(has(m[1].content, "Verdict: INCORRECT"));
  const auto x = crossover_messages("CONTRACT", DeviceType::cpu, {"a", "CODE A\n", "fa"}, {"b", "CODE B\n", "fb"});
  EXPECT_TRUE(has(x[1].content, "CODE A"));
  EXPECT_TRUE(has(x[1].content, "CODE B"));
  EXPECT_TRUE(has(x[1].content, "Combine"));
}

TEST(AgentPrompts, TrimHistoryKeepsTheContractAndTheLatestTurns) {
  std::vector<ChatMessage> h = {{"system", "S"}, {"user", "CONTRACT"}};
  for (int i = 0; i < 5; ++i) {
    h.push_back({"assistant", "answer " + std::to_string(i) + std::string(100, '.')});
    h.push_back({"user", "feedback " + std::to_string(i) + std::string(100, '.')});
  }
  EXPECT_EQ(trim_history(h, 0).size(), h.size());
  EXPECT_EQ(trim_history(h, 1 << 20).size(), h.size());
  const auto t = trim_history(h, 500);
  ASSERT_EQ(t.size(), 6u);  // head + the last two turns
  EXPECT_EQ(t[0].content, "S");
  EXPECT_TRUE(has(t[1].content, "CONTRACT"));
  EXPECT_TRUE(has(t[1].content, "3 earlier turns were left out"));
  EXPECT_TRUE(has(t[2].content, "answer 3"));
  EXPECT_EQ(t[2].role, "assistant");
  EXPECT_TRUE(has(t[5].content, "feedback 4"));
  const auto tiny = trim_history(h, 10);  // over budget: the last turn stays whole
  ASSERT_EQ(tiny.size(), 4u);
  EXPECT_TRUE(has(tiny[2].content, "answer 4"));
  EXPECT_TRUE(has(tiny[3].content, "feedback 4"));
}

TEST(AgentTaskSelect, IdsGlobsAndFields) {
  const auto all = bench::load_tasks(fs::path(FK_SOURCE_DIR) / "tasks");
  EXPECT_EQ(select_tasks(all, "rms_norm").size(), 1u);
  EXPECT_EQ(select_tasks(all, "all").size(), all.size());
  for (const auto& t : select_tasks(all, "*rms_norm*")) EXPECT_TRUE(has(t.id, "rms_norm"));
  EXPECT_GE(select_tasks(all, "*rms_norm*").size(), 3u);
  EXPECT_EQ(select_tasks(all, "rms_norm, silu_and_mul").size(), 2u);
  for (const auto& t : select_tasks(all, "level=L1")) EXPECT_EQ(t.level, "L1");
  EXPECT_THROW(select_tasks(all, "no_such_task"), fk::Error);
  EXPECT_THROW(select_tasks(all, "color=red"), fk::Error);
  EXPECT_THROW(select_tasks(all, " , "), fk::Error);
}

TEST(AgentProfiler, UnavailableOnTheCpuOrWithoutNcu) {
  bench::CandidateRun run;
  run.compile.ok = true;
  EXPECT_TRUE(has(profile_candidate(cpu_task(), run, DeviceType::cpu, {}), "unavailable"));
  ProfileOptions o;
  o.ncu = "no-such-ncu-binary";
  EXPECT_TRUE(has(profile_candidate(cpu_task(), run, DeviceType::cuda, o), "not on PATH"));
  o.enabled = false;
  EXPECT_TRUE(has(profile_candidate(cpu_task(), run, DeviceType::cuda, o), "off"));
  EXPECT_FALSE(find_executable("sh").empty());
  EXPECT_TRUE(find_executable("no-such-binary-anywhere").empty());
}

TEST(AgentProfiler, SummarizesTheCandidatesKernelsFromNcuCsv) {
  const std::string csv =
      "==PROF== Connected to process\n"
      R"csv("ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum","launch__registers_per_thread","sm__warps_active.avg.pct_of_peak_sustained_active","sm__throughput.avg.pct_of_peak_sustained_elapsed","gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed","dram__throughput.avg.pct_of_peak_sustained_elapsed")csv"
      "\n"
      R"csv("","","","","","","","","","","","usecond","register/thread","%","%","%","%")csv"
      "\n"
      R"csv("0","1","fk","h","_Z8baselinev","1","7","(256, 1, 1)","(4, 1, 1)","0","9.0","9.00","32","50","10","20","15")csv"
      "\n"
      R"csv("1","1","fk","h","_ZN12_GLOBAL__N_14rowsEPf","1","7","(128, 1, 1)","(1,024, 1, 1)","0","9.0","2.00","40","80","30","60","55")csv"
      "\n"
      R"csv("2","1","fk","h","_ZN12_GLOBAL__N_14rowsEPf","1","7","(128, 1, 1)","(1,024, 1, 1)","0","9.0","4.00","40","60","30","80","65")csv"
      "\n";
  const std::string s = summarize_ncu_csv(csv, {"_ZN12_GLOBAL__N_14rowsEPf"});
  EXPECT_TRUE(has(s, "1 kernel of the candidate")) << s;
  EXPECT_TRUE(has(s, "(anonymous namespace)::rows(float*)")) << s;
  EXPECT_TRUE(has(s, "2 launches, mean 3.00 us")) << s;
  EXPECT_TRUE(has(s, "40 registers/thread, achieved occupancy 70.0%")) << s;
  EXPECT_TRUE(has(s, "memory throughput 70.0% (DRAM 60.0%)")) << s;
  EXPECT_FALSE(has(s, "baseline")) << s;
  EXPECT_TRUE(has(summarize_ncu_csv(csv, {"_Z5otherv"}), "no kernel of the candidate"));
  EXPECT_TRUE(has(summarize_ncu_csv(csv, {}), "2 kernels"));
}

}  // namespace
}  // namespace fk::agent
