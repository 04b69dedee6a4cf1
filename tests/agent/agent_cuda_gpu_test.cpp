// `fk agent` on a GPU: a CUDA candidate from a replay endpoint is compiled with the
// engine's toolchain, judged by the CUDA harness, and the next turn's prompt carries what
// the issue asks the model to see on a real device: the device and its measured ceilings
// in the contract, the verdict with timings and speed of light, and the Nsight Compute
// summary of the candidate's kernel when ncu works on the machine.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "agent/replay_endpoint.h"
#include "harness/sandbox/subprocess.h"
#include "fk/status.h"
#include "support/test_seed.h"

namespace fk::agent {
namespace {

namespace fs = std::filesystem;
using test::ReplayEndpoint;
using test::Scripted;

const fs::path kSource = FK_SOURCE_DIR;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The honest adversarial candidate with its shared header pasted in: one self-contained
// file, as a model would answer.
std::string honest_cuda_candidate() {
  std::string src = read_file(kSource / "tests/adversarial/cuda/honest_simple.cu");
  const std::string include = "#include \"common.cuh\"";
  const size_t at = src.find(include);
  EXPECT_NE(at, std::string::npos);
  std::string header = read_file(kSource / "tests/adversarial/cuda/common.cuh");
  const size_t once = header.find("#pragma once");
  if (once != std::string::npos) header.erase(once, std::string("#pragma once").size());
  src.replace(at, include.size(), header);
  return src;
}

bench::ProcessResult fk(std::vector<std::string> args, const fs::path& dir) {
  args.insert(args.begin(), FK_CLI_PATH);
  bench::ProcessOptions po;
  po.timeout_s = 600;
  po.extra_env = {"FK_CACHE_DIR=" + (dir / "cache").string(), "FK_HOME=" + (dir / "home").string(),
                  "FK_AGENT_API_KEY=sk-gpu-test"};
  return bench::run_process(args, po);
}

TEST(AgentCudaGpu, RefinesACudaCandidateWithDeviceCeilingsAndProfilerFeedback) {
  FK_REQUIRE_GPU();
  const fs::path dir = fs::temp_directory_path() / concat("fk-agent-gpu-test-", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  // The contract quotes the device's measured ceilings: measure them into this FK_HOME.
  const bench::ProcessResult env = fk({"env", "--measure"}, dir);
  ASSERT_EQ(env.exit_code, 0) << env.output;

  const std::string source = honest_cuda_candidate();
  ReplayEndpoint ep({Scripted::code(source, "cuda"), Scripted::code(source, "cuda")});
  const bench::ProcessResult r =
      fk({"agent", "--task", "rms_norm", "--tasks-dir", (kSource / "tests/data/tasks_gpu").string(), "--backend",
          "cuda", "--endpoint", ep.url(), "--model", "replay", "--strategy", "refine", "--turns", "2", "--out",
          (dir / "out").string(), "--timed-calls", "10", "--no-db", "--backoff", "0.01"},
         dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("PASSED"), std::string::npos) << r.output;

  const auto got = ep.received();
  ASSERT_EQ(got.size(), 2u) << r.output;
  std::string first;
  for (const auto& m : got[0].body["messages"]) first += m.value("content", "") + "\n";
  EXPECT_NE(first.find("Measured ceilings (speed of light"), std::string::npos) << first;
  EXPECT_NE(first.find("GB/s"), std::string::npos) << first;
  EXPECT_NE(first.find("sm_90a"), std::string::npos) << first;
  EXPECT_NE(first.find("nvcc"), std::string::npos) << first;

  const std::string feedback = ReplayEndpoint::last_user(got[1].body);
  EXPECT_NE(feedback.find("PASSED"), std::string::npos) << feedback;
  EXPECT_NE(feedback.find("speed of light"), std::string::npos) << feedback;
  const size_t prof = feedback.find("Profiler:");
  ASSERT_NE(prof, std::string::npos) << feedback;
  const std::string profile = feedback.substr(prof, 800);
  std::printf("profiler feedback: %s\n", profile.c_str());
  // ncu may be missing or lack counter permissions; then the summary must say so. Where it
  // works, the candidate's kernel and its DRAM throughput appear.
  if (profile.find("unavailable") == std::string::npos) {
    EXPECT_NE(profile.find("rms_norm_rows"), std::string::npos) << profile;
    EXPECT_NE(profile.find("Nsight Compute"), std::string::npos) << profile;
    EXPECT_NE(profile.find("(DRAM "), std::string::npos) << profile;
  }
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace fk::agent
