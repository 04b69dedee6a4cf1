// fk capture on the CPU backend: every op call of an engine run becomes a task workload
// that the task loader accepts and the op's make_case can instantiate, with call counts
// that add up to what the engine ran.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness/judge/task.h"
#include "harness/capture/capture.h"
#include "fk/op_registry.h"
#include "support/test_seed.h"

namespace fk::e2e {
namespace {

namespace fs = std::filesystem;

TEST(Capture, EveryCallBecomesATaskWorkloadThatInstantiates) {
  for (const char* family : {"llama", "gemma2", "qwen3"}) {
    engine::EngineConfig c;
    c.model = std::string(FK_SOURCE_DIR) + "/tests/data/models/" + family;
    c.backend = DeviceType::cpu;
    c.num_pages = 128;
    c.max_num_batched_tokens = 64;  // chunked prefill: mixed prefill/decode steps
    const WorkloadSpec w = workload_spec("tiny");
    const CaptureResult r = capture_workload(c, w);
    ASSERT_FALSE(r.ops.empty()) << family;
    int64_t linear_calls = 0, norm_linear_calls = 0, embedding_calls = 0;
    for (const CapturedOp& op : r.ops) {
      for (const auto& [key, wc] : op.workloads)
        EXPECT_FALSE(wc.first.contains("untranslated")) << family << ": " << op.op << " was not translated";
      if (op.op == "linear") linear_calls = op.calls;
      if (op.op == "rms_norm_linear") norm_linear_calls = op.calls;
      if (op.op == "embedding") embedding_calls = op.calls;
    }
    // Each step: 4 projections per layer and the head; 2 embedding lookups (tokens and the
    // gather of the rows that need logits). Without sandwich norms, the qkv and gate_up
    // projections take their norm with them (rms_norm_linear).
    const int64_t steps = embedding_calls / 2;
    EXPECT_EQ(linear_calls + norm_linear_calls, steps * (4 * 2 + 1)) << family;
    // A layer op's parts are nested in it: each call's time is counted once in the total
    // (the calls the engine made), and a layer's time holds its parts'.
    double top_level = 0, layer = 0, layer_parts = 0;
    for (const CapturedOp& op : r.ops) {
      top_level += op.top_level_seconds;
      if (op.op == "decoder_layer") layer = op.total_seconds;
      else
        layer_parts += op.total_seconds - op.top_level_seconds;  // its calls inside the layer
    }
    EXPECT_NEAR(top_level, r.total_seconds, 1e-9 + 1e-6 * r.total_seconds) << family;
    if (layer > 0) EXPECT_GE(layer, layer_parts) << family;
    EXPECT_EQ(norm_linear_calls, std::string(family) == "gemma2" ? 0 : steps * 2 * 2) << family;

    const fs::path dir = fs::temp_directory_path() / ("fk-capture-" + std::string(family));
    fs::remove_all(dir);
    const auto files = write_task_files(r, family, w.name, dir);
    EXPECT_FALSE(files.empty());
    const auto tasks = bench::load_tasks(dir);
    EXPECT_EQ(tasks.size(), files.size());
    for (const bench::Task& t : tasks) {
      const OpDef& def = OpRegistry::global().def(t.op);
      // The op's level, the model's category (a dense model: no routed experts).
      EXPECT_EQ(t.level, def.level) << t.op;
      EXPECT_EQ(t.category, "dense-llm") << t.op;
      for (const bench::TaskWorkload& tw : t.workloads) {
        EXPECT_GT(tw.calls, 0);
        EXPECT_NO_THROW(def.make_case(tw.shape, test::seed_for("Capture") + 1)) << t.op << " " << tw.shape.dump();
      }
    }
    fs::remove_all(dir);
  }
}

// MoE models (built-in tiny configs, random weights): routing and experts are captured too,
// and Qwen2-MoE's shared expert.
TEST(Capture, MoeCallsBecomeTaskWorkloadsThatInstantiate) {
  struct MoeModel {
    const char* name;
    int64_t moe_layers;        // of the 2
    int64_t linears_per_step;  // qkv and output per layer, a router per MoE layer, the shared
                               // expert's gate_up, down and gate, a dense MLP's gate_up and down, the head
                               // (linear or, with the norm before them, rms_norm_linear)
  };
  for (const MoeModel& m : {MoeModel{"tiny-qwen3-moe", 2, 3 * 2 + 1}, MoeModel{"tiny-olmoe", 2, 3 * 2 + 1},
                            MoeModel{"tiny-qwen2-moe", 1, 2 * 2 + 1 + 3 + 2 + 1}}) {
    const char* model = m.name;
    engine::EngineConfig c;
    c.model = model;
    c.backend = DeviceType::cpu;
    c.num_pages = 128;
    c.max_num_batched_tokens = 64;
    const WorkloadSpec w = workload_spec("tiny");
    const CaptureResult r = capture_workload(c, w);
    int64_t experts_calls = 0, linear_calls = 0, norm_linear_calls = 0, embedding_calls = 0, gated_add_calls = 0;
    for (const CapturedOp& op : r.ops) {
      for (const auto& [key, wc] : op.workloads)
        EXPECT_FALSE(wc.first.contains("untranslated")) << model << ": " << op.op << " was not translated";
      if (op.op == "fused_moe") experts_calls = op.calls;
      if (op.op == "linear") linear_calls = op.calls;
      if (op.op == "rms_norm_linear") norm_linear_calls = op.calls;
      if (op.op == "embedding") embedding_calls = op.calls;
      if (op.op == "sigmoid_gated_add") gated_add_calls = op.calls;
    }
    // Each step: one experts call per MoE layer (and one gated add where there is a shared
    // expert), the linears counted above.
    const int64_t steps = embedding_calls / 2;
    EXPECT_EQ(experts_calls, steps * m.moe_layers) << model;
    EXPECT_EQ(gated_add_calls, std::string(model) == "tiny-qwen2-moe" ? steps * m.moe_layers : 0) << model;
    EXPECT_EQ(linear_calls + norm_linear_calls, steps * m.linears_per_step) << model;
    EXPECT_EQ(norm_linear_calls, steps * 2 * 2) << model;  // both norms of both layers
    const fs::path dir = fs::temp_directory_path() / ("fk-capture-" + std::string(model));
    fs::remove_all(dir);
    write_task_files(r, model, w.name, dir);
    const auto tasks = bench::load_tasks(dir);
    const auto level_of = [&](const std::string& op) {
      for (const bench::Task& t : tasks)
        if (t.op == op) return t.level;
      return std::string("(no task)");
    };
    EXPECT_EQ(level_of("fused_moe"), "L2") << model;
    EXPECT_EQ(level_of("embedding"), "L1") << model;
    for (const bench::Task& t : tasks) EXPECT_EQ(t.category, "moe-llm") << model << " " << t.op;
    for (const bench::Task& t : tasks)
      for (const bench::TaskWorkload& tw : t.workloads)
        EXPECT_NO_THROW(OpRegistry::global().def(t.op).make_case(tw.shape, 3)) << t.op << " " << tw.shape.dump();
    fs::remove_all(dir);
  }
}

// gpt-oss, Mixtral and Qwen3-MoE: every layer is one layer-op call (an L3 task), its parts
// nested in it. OLMoE (q/k norms across heads) and Qwen2-MoE (a shared expert) keep the ops
// of each layer.
TEST(Capture, MoeModelLayersAreOneLayerOpEach) {
  struct LayerOpModel {
    const char* model;
    const char* layer_op;  // "": none
  };
  for (const LayerOpModel& m : {LayerOpModel{"tiny-gpt-oss", "gpt_oss_layer"}, LayerOpModel{"tiny-qwen3-moe", "moe_layer"},
                                LayerOpModel{"tiny-mixtral", "moe_layer"}, LayerOpModel{"tiny-olmoe", ""},
                                LayerOpModel{"tiny-qwen2-moe", ""}}) {
    SCOPED_TRACE(m.model);
    engine::EngineConfig c;
    c.model = m.model;
    c.backend = DeviceType::cpu;
    c.num_pages = 128;
    c.max_num_batched_tokens = 64;
    const WorkloadSpec w = workload_spec("tiny");
    const CaptureResult r = capture_workload(c, w);
    int64_t layer_calls = 0, layer_top_level = 0, embedding_calls = 0, any_layer_op = 0;
    for (const CapturedOp& op : r.ops) {
      if (op.op == m.layer_op) layer_calls = op.calls, layer_top_level = op.top_level_seconds > 0;
      if (op.op == "embedding") embedding_calls = op.calls;
      if (op.op == "moe_layer" || op.op == "gpt_oss_layer" || op.op == "decoder_layer") any_layer_op += op.calls;
    }
    if (*m.layer_op == 0) {
      EXPECT_EQ(any_layer_op, 0);
      continue;
    }
    // Mixed steps (a chunked prefill beside decodes) run the layers' ops one by one; every
    // other step calls the layer op once per layer.
    const int64_t steps = embedding_calls / 2;
    EXPECT_GT(layer_calls, 0);
    EXPECT_LE(layer_calls, steps * 2);
    EXPECT_EQ(layer_calls % 2, 0);
    EXPECT_TRUE(layer_top_level);
    const fs::path dir = fs::temp_directory_path() / (std::string("fk-capture-layer-op-") + m.model);
    fs::remove_all(dir);
    write_task_files(r, m.model, w.name, dir);
    bool found = false;
    for (const bench::Task& t : bench::load_tasks(dir)) {
      if (t.op != m.layer_op) continue;
      found = true;
      EXPECT_EQ(t.level, "L3");
      EXPECT_EQ(t.category, "moe-llm");
      for (const bench::TaskWorkload& tw : t.workloads)
        EXPECT_NO_THROW(OpRegistry::global().def(t.op).make_case(tw.shape, 3)) << tw.shape.dump();
    }
    EXPECT_TRUE(found) << "no " << m.layer_op << " task";
    fs::remove_all(dir);
  }
}

}  // namespace
}  // namespace fk::e2e
