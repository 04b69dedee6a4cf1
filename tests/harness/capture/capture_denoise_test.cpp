// fk capture for the Denoise pattern on the CPU backend: one step of tiny-flux's loop
// becomes task workloads under its category that the task loader accepts and each op's
// make_case instantiates, the L3 blocks with their parts nested in them; workload names
// parse or fail by name; a model of another pattern is refused by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "fk/op_registry.h"
#include "fk/status.h"
#include "harness/capture/capture_denoise.h"
#include "harness/judge/task.h"
#include "support/test_seed.h"

namespace fk::e2e {
namespace {

namespace fs = std::filesystem;

TEST(CaptureDenoise, WorkloadNamesGiveTheirImages) {
  const DenoiseWorkload tiny = denoise_workload("tiny");
  EXPECT_EQ(tiny.batch, 1);
  EXPECT_EQ(tiny.image_tokens(), 16);
  EXPECT_EQ(tiny.text_len, 8);
  const DenoiseWorkload hd = denoise_workload("1024px");
  EXPECT_EQ(hd.batch, 1);
  EXPECT_EQ(hd.height, 1024);
  EXPECT_EQ(hd.width, 1024);
  EXPECT_EQ(hd.image_tokens(), 4096);
  EXPECT_EQ(hd.text_len, 512);
  EXPECT_EQ(hd.steps, 28);
  EXPECT_EQ(denoise_workload("512px").image_tokens(), 1024);
  const DenoiseWorkload two = denoise_workload("2x256px");
  EXPECT_EQ(two.batch, 2);
  EXPECT_EQ(two.image_tokens(), 256);
  EXPECT_EQ(two.to_json().at("image_tokens"), 256);
  for (const char* bad : {"", "px", "1024", "1000px", "0px", "x512px", "2x0px", "-16px", "2x3x512px", "latency-1",
                          "1024PX", "32x512"})
    EXPECT_THROW(denoise_workload(bad), Error) << bad;
}

TEST(CaptureDenoise, TinyFluxStepBecomesTasksThatInstantiate) {
  const models::ModelSource src = models::resolve_model("tiny-flux");
  DenoiseCaptureOptions o;
  o.seed = test::seed_for("CaptureDenoise");
  const DenoiseWorkload w = denoise_workload("tiny");
  const CaptureResult r = capture_denoise(src, w, o);
  EXPECT_EQ(r.category, "vision-video-audio");
  std::map<std::string, int64_t> calls;
  std::map<std::string, double> top_level;
  for (const CapturedOp& op : r.ops) {
    calls[op.op] = op.calls;
    top_level[op.op] = op.top_level_seconds;
    for (const auto& [key, wc] : op.workloads)
      EXPECT_FALSE(wc.first.contains("untranslated")) << op.op << " was not translated";
  }
  // tiny-flux: 2 double and 2 single blocks, one step, one Euler update.
  EXPECT_EQ(calls["flux_double_block"], 2);
  EXPECT_EQ(calls["flux_single_block"], 2);
  EXPECT_EQ(calls["flow_match_euler_step"], 1);
  // One joint attention per block, nested in it: no attention time outside the blocks.
  EXPECT_EQ(calls["varlen_attention"], 4);
  EXPECT_EQ(top_level["varlen_attention"], 0.0);
  EXPECT_GT(calls["linear"], 0);
  double sum = 0;
  for (const CapturedOp& op : r.ops) sum += op.top_level_seconds;
  EXPECT_NEAR(sum, r.total_seconds, 1e-9 + 1e-6 * r.total_seconds);

  const fs::path dir = fs::temp_directory_path() / concat("fk-capture-denoise-", ::getpid());
  fs::remove_all(dir);
  const auto files = write_task_files(r, "tiny-flux", w.name, dir);
  const auto tasks = bench::load_tasks(dir);
  EXPECT_EQ(tasks.size(), files.size());
  bool block_seen = false;
  for (const bench::Task& t : tasks) {
    const OpDef& def = OpRegistry::global().def(t.op);
    EXPECT_EQ(t.category, "vision-video-audio") << t.op;
    EXPECT_EQ(t.level, def.level) << t.op;
    for (const bench::TaskWorkload& tw : t.workloads) {
      EXPECT_NO_THROW(def.make_case(tw.shape, test::seed_for("CaptureDenoise") + 1)) << t.op << " " << tw.shape.dump();
      if (t.op == "varlen_attention")
        // One joint sequence of 8 text + 16 image tokens.
        EXPECT_EQ(tw.shape.at("seq_lens"), nlohmann::json({24})) << tw.shape.dump();
      if (t.op == "flux_double_block") {
        block_seen = true;
        EXPECT_EQ(t.level, "L3");
        EXPECT_EQ(tw.calls, 2);
      }
    }
  }
  EXPECT_TRUE(block_seen);
  fs::remove_all(dir);
}

TEST(CaptureDenoise, RefusesAModelThatIsNoFluxTransformer) {
  for (const char* name : {"tiny-llama", "tiny-yolov10"}) {
    try {
      capture_denoise(models::resolve_model(name), denoise_workload("tiny"), {});
      FAIL() << name << " was captured as a FLUX transformer";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("not a FLUX.1-style transformer"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace fk::e2e
