// The layer op that covers every layer of a model, and its `as_parts` variant: with it
// selected, the engine runs the same layers as their single ops, and greedy decoding gives
// the same tokens (the layer ops' baselines compose those ops).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "fk/op_registry.h"
#include "serving/generate/engine.h"

namespace fk::engine {
namespace {

struct GreedyRun {
  std::vector<int64_t> tokens;
  std::map<std::string, int> calls;  // op name -> calls through the registry
  int calls_of(const std::string& op) const {
    auto it = calls.find(op);
    return it == calls.end() ? 0 : it->second;
  }
};

GreedyRun greedy(const char* model) {
  GreedyRun r;
  OpRegistry::global().set_call_observer(
      [&r](const OpDef& def, DeviceType, const void*, double) { ++r.calls[def.name]; });
  struct ClearObserver {
    ~ClearObserver() { OpRegistry::global().set_call_observer(nullptr); }
  } clear;
  EngineConfig c;
  c.model = model;
  c.backend = DeviceType::cpu;
  c.num_pages = 32;
  c.max_num_batched_tokens = 64;
  c.max_model_len = 128;
  Engine e(c);
  SamplingParams sp;
  sp.temperature = 0;
  sp.max_tokens = 5;
  r.tokens = e.generate({{5, 9, 2, 7, 11, 3}}, sp)[0].output_tokens;
  return r;
}

struct LayerOpModel {
  const char* model;
  const char* layer_op;
};

class LayerOpAsParts : public testing::TestWithParam<LayerOpModel> {
 protected:
  void TearDown() override { OpRegistry::global().select_variants(GetParam().layer_op, {}); }
};

TEST_P(LayerOpAsParts, RunsTheSingleOpsAndGivesTheSameTokens) {
  const LayerOpModel m = GetParam();
  const GreedyRun layer_op = greedy(m.model);
  EXPECT_GT(layer_op.calls_of(m.layer_op), 0) << m.model << " should run " << m.layer_op;

  OpRegistry::global().select_variants(m.layer_op, {"as_parts"});
  const GreedyRun parts = greedy(m.model);
  EXPECT_EQ(parts.calls_of(m.layer_op), 0) << m.layer_op << " ran with as_parts selected";
  // The observer sees the layer op's own calls of its parts too: every other op ran as often.
  std::map<std::string, int> without_layer_op = layer_op.calls;
  without_layer_op.erase(m.layer_op);
  EXPECT_EQ(parts.calls, without_layer_op);
  EXPECT_EQ(parts.tokens, layer_op.tokens);
}

INSTANTIATE_TEST_SUITE_P(Models, LayerOpAsParts,
                         testing::Values(LayerOpModel{"tiny-llama", "decoder_layer"},
                                         LayerOpModel{"tiny-mixtral", "moe_layer"},
                                         LayerOpModel{"tiny-gpt-oss", "gpt_oss_layer"}),
                         [](const testing::TestParamInfo<LayerOpModel>& i) { return std::string(i.param.layer_op); });

TEST(LayerOpAsParts, IsListedForEveryLayerOp) {
  for (const char* op : {"decoder_layer", "moe_layer", "gpt_oss_layer"}) {
    bool listed = false;
    for (const OpVariantInfo& v : OpRegistry::global().variants()) listed = listed || (v.op == op && v.name == "as_parts");
    EXPECT_TRUE(listed) << op;
  }
}

}  // namespace
}  // namespace fk::engine
