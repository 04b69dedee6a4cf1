// `fk agent` as a user runs it, against a local replay endpoint: the API key from the
// environment, the output folder, a best/ folder that `fk kernels eval --dir` accepts,
// the end-to-end check of the best candidate (`fk e2e eval` on the golden tiny model),
// and a rerun that resumes without calling the model again.
#include <gtest/gtest.h>

#include "fk/status.h"
#include <unistd.h>

#include <fstream>

#include "agent/replay_endpoint.h"
#include "harness/sandbox/subprocess.h"

namespace fk::agent {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::ReplayEndpoint;
using test::Scripted;

const fs::path kSource = FK_SOURCE_DIR;

fs::path scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / concat("fk-agent-cli-test-", getpid(), "-", name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

bench::ProcessResult fk(std::vector<std::string> args, const fs::path& cache) {
  args.insert(args.begin(), FK_CLI_PATH);
  bench::ProcessOptions po;
  po.timeout_s = 240;
  po.extra_env = {"FK_CACHE_DIR=" + cache.string(), "FK_AGENT_API_KEY=sk-cli-test"};
  return bench::run_process(args, po);
}

std::vector<std::string> agent_args(const ReplayEndpoint& ep, const fs::path& out) {
  return {"agent", "--task", "rms_norm", "--tasks-dir", (kSource / "tests/data/tasks_cpu").string(), "--backend", "cpu",
          "--endpoint", ep.url(), "--model", "replay", "--strategy", "best-of-n", "--samples", "2", "--out",
          out.string(), "--timed-calls", "5", "--no-db", "--backoff", "0.01", "--e2e-model",
          (kSource / "tests/data/models/llama").string(), "--e2e-workload", "tiny",
          "--e2e-args=--device cpu --num-pages 128 --max-num-batched-tokens 128"};
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

TEST(AgentCli, RunsWritesABestFolderTheHarnessAcceptsAndResumes) {
  const fs::path dir = scratch("run"), out = dir / "out";
  std::ifstream src(kSource / "tests/adversarial/cpu/honest_fast.cpp");
  const std::string fast(std::istreambuf_iterator<char>(src), {});
  {
    ReplayEndpoint ep({Scripted::code(fast), Scripted::answer("No code, sorry.")});
    const bench::ProcessResult r = fk(agent_args(ep, out), dir / "cache");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("PASSED"), std::string::npos) << r.output;
    const auto got = ep.received();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].authorization, "Bearer sk-cli-test");
  }
  const json s = read_json(out / "summary.json");
  const json& t = s["tasks"][0];
  ASSERT_FALSE(t["best"].is_null()) << s.dump(1);
  EXPECT_EQ(t["e2e"]["verdict"], "PASSED") << t["e2e"].dump(1);
  EXPECT_TRUE(fs::exists(out / "e2e/rms_norm.json"));
  EXPECT_NE(s["command"].get<std::string>().find("fk agent"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "trajectory.jsonl"));

  // The best folder is what the harness takes.
  const bench::ProcessResult ev =
      fk({"kernels", "eval", "--backend", "cpu", "--tasks-dir", (kSource / "tests/data/tasks_cpu").string(), "--dir",
          (out / "best").string(), "--timed-calls", "5", "--no-db"},
         dir / "cache");
  EXPECT_EQ(ev.exit_code, 0) << ev.output;
  EXPECT_NE(ev.output.find("PASSED         rms_norm"), std::string::npos) << ev.output;

  // A rerun finds every call, evaluation and end-to-end check in the log.
  ReplayEndpoint down(std::vector<Scripted>{});
  const bench::ProcessResult again = fk(agent_args(down, out), dir / "cache");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(down.received().size(), 0u);
  const json s2 = read_json(out / "summary.json");
  EXPECT_EQ(s2["tasks"][0]["best"]["step"], t["best"]["step"]);
  EXPECT_EQ(s2["tasks"][0]["e2e"]["verdict"], "PASSED");
  EXPECT_EQ(again.output.find("end-to-end check of"), std::string::npos) << "the e2e check ran again";
  if (!HasFailure()) fs::remove_all(dir);
}

TEST(AgentCli, RejectsBadOptions) {
  const fs::path dir = scratch("bad");
  ReplayEndpoint ep(std::vector<Scripted>{});
  auto args = agent_args(ep, dir / "out");
  auto with = [&](const std::string& opt, const std::string& value) {
    auto a = args;
    for (size_t i = 0; i + 1 < a.size(); ++i)
      if (a[i] == opt) a[i + 1] = value;
    return fk(a, dir / "cache");
  };
  const bench::ProcessResult bad_strategy = with("--strategy", "genetic");
  EXPECT_NE(bad_strategy.exit_code, 0);
  EXPECT_NE(bad_strategy.output.find("--strategy"), std::string::npos) << bad_strategy.output;
  const bench::ProcessResult bad_task = with("--task", "no_such_task");
  EXPECT_NE(bad_task.exit_code, 0);
  EXPECT_NE(bad_task.output.find("no_such_task"), std::string::npos) << bad_task.output;
  auto both = args;
  both.insert(both.end(), {"--tasks", "all"});
  const bench::ProcessResult two = fk(both, dir / "cache");
  EXPECT_NE(two.exit_code, 0);
  EXPECT_NE(two.output.find("exactly one of --task and --tasks"), std::string::npos) << two.output;
  EXPECT_EQ(ep.received().size(), 0u);
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace fk::agent
