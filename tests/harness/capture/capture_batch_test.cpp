// fk capture for the Batch pattern's text encoders on the CPU backend: one embed_batch pass
// of tiny-bge-m3 becomes task workloads under the encoders category that the task loader
// accepts and each op's make_case instantiates, with per-layer call counts; the batch
// workload names parse or fail by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "fk/op_registry.h"
#include "fk/status.h"
#include "harness/capture/capture_batch.h"
#include "harness/judge/task.h"
#include "support/test_seed.h"

namespace fk::e2e {
namespace {

namespace fs = std::filesystem;

TEST(CaptureBatch, WorkloadNamesGiveTheirSequenceLengths) {
  EXPECT_EQ(batch_workload("tiny").lengths, std::vector<int64_t>(4, 16));
  EXPECT_EQ(batch_workload("3x512").lengths, std::vector<int64_t>(3, 512));
  const BatchWorkload mixed = batch_workload("mixed");
  ASSERT_EQ(mixed.lengths.size(), 32u);
  for (int64_t n : mixed.lengths) {
    EXPECT_GE(n, 16);
    EXPECT_LE(n, 512);
  }
  EXPECT_EQ(batch_workload("mixed").lengths, mixed.lengths);  // a fixed seed
  for (const char* bad : {"", "x", "32x", "x512", "0x16", "4x1", "4x-2", "4x16x2", "latency-1", "4X16"})
    EXPECT_THROW(batch_workload(bad), Error) << bad;
}

TEST(CaptureBatch, TinyBgeM3CallsBecomeEncoderTasksThatInstantiate) {
  const models::ModelSource src = models::resolve_model("tiny-bge-m3");
  BatchCaptureOptions o;
  o.seed = test::seed_for("CaptureBatch");
  const BatchWorkload w = batch_workload("3x20");
  const CaptureResult r = capture_text_encoder(src, w, o);
  EXPECT_EQ(r.category, "encoders");
  std::map<std::string, int64_t> calls;
  for (const CapturedOp& op : r.ops) {
    calls[op.op] = op.calls;
    for (const auto& [key, wc] : op.workloads)
      EXPECT_FALSE(wc.first.contains("untranslated")) << op.op << " was not translated";
  }
  // tiny-bge-m3 has 2 layers: one encoder_layer call each, its attention nested in it.
  EXPECT_EQ(calls["encoder_layer"], 2);
  EXPECT_EQ(calls["varlen_attention"], 2);
  EXPECT_GT(calls["linear"], 0);
  EXPECT_GT(calls["embedding"], 0);
  double top_level = 0;
  for (const CapturedOp& op : r.ops) top_level += op.top_level_seconds;
  EXPECT_NEAR(top_level, r.total_seconds, 1e-9 + 1e-6 * r.total_seconds);

  const fs::path dir = fs::temp_directory_path() / concat("fk-capture-batch-", ::getpid());
  fs::remove_all(dir);
  const auto files = write_task_files(r, "tiny-bge-m3", w.name, dir);
  const auto tasks = bench::load_tasks(dir);
  EXPECT_EQ(tasks.size(), files.size());
  bool attention_seen = false;
  for (const bench::Task& t : tasks) {
    const OpDef& def = OpRegistry::global().def(t.op);
    EXPECT_EQ(t.category, "encoders") << t.op;
    EXPECT_EQ(t.level, def.level) << t.op;
    for (const bench::TaskWorkload& tw : t.workloads) {
      EXPECT_NO_THROW(def.make_case(tw.shape, test::seed_for("CaptureBatch") + 1)) << t.op << " " << tw.shape.dump();
      if (t.op == "varlen_attention") {
        attention_seen = true;
        // The packed batch's sequences, as the runner packed them.
        EXPECT_EQ(tw.shape.at("seq_lens"), nlohmann::json({20, 20, 20})) << tw.shape.dump();
      }
    }
  }
  EXPECT_TRUE(attention_seen);
  fs::remove_all(dir);
}

TEST(CaptureBatch, RefusesAModelThatIsNoTextEncoder) {
  const models::ModelSource llm = models::resolve_model("tiny-llama");
  try {
    capture_text_encoder(llm, batch_workload("tiny"), {});
    FAIL() << "a decoder LLM was captured as a text encoder";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a text encoder"), std::string::npos) << e.what();
  }
}

TEST(CaptureBatch, RefusesASequenceLongerThanThePositions) {
  const models::ModelSource src = models::resolve_model("tiny-bge-m3");
  EXPECT_THROW(capture_text_encoder(src, batch_workload("1x100000"), {}), Error);
}

}  // namespace
}  // namespace fk::e2e
