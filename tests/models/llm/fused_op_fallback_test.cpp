// The decoder calls its fused ops (rms_norm_linear, fused_moe, rope_and_cache); when a
// candidate is installed for one of the ops they cover, the registry runs the fused op as
// those ops one by one, so the candidate runs wherever the engine would have used it. Either
// way the CPU backend gives the same tokens (the fused ops' CPU references compose the
// parts' references). Which ops ran is seen through the registry's call observer, which
// reports a fused op run as its parts by its parts only.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "serving/generate/engine.h"
#include "fk/op_registry.h"

namespace fk::engine {
namespace {

// A candidate that counts its calls and runs the op's CPU baseline.
struct Counted {
  const char* op;
  fk_op_fn baseline = nullptr;
  int calls = 0;
};
Counted counted[] = {{"rms_norm_linear"}, {"fused_moe"},      {"fused_experts"},
                     {"linear"},          {"rope_and_cache"}, {"reshape_and_cache"}};

template <int I>
fk_status counting(const void* args, void* stream) {
  ++counted[I].calls;
  return counted[I].baseline(args, stream);
}
constexpr fk_op_fn kCounting[] = {counting<0>, counting<1>, counting<2>, counting<3>, counting<4>, counting<5>};

class FusedOpFallback : public testing::Test {
 protected:
  void SetUp() override {
    for (Counted& c : counted) c.baseline = OpRegistry::global().baseline(c.op, DeviceType::cpu);
  }
  void TearDown() override {
    for (const Counted& c : counted) OpRegistry::global().reset(c.op, DeviceType::cpu);
  }
  static void install(int i) {
    counted[i].calls = 0;
    OpRegistry::global().install(counted[i].op, DeviceType::cpu, kCounting[i], "counting test candidate");
  }
  // The ops of the run's calls, with how often each was called.
  static std::map<std::string, int>& ran() {
    static std::map<std::string, int> m;
    return m;
  }
  static std::vector<int64_t> greedy_tokens() {
    ran().clear();
    OpRegistry::global().set_call_observer(
        [](const OpDef& def, DeviceType, const void*, double) { ++ran()[def.name]; });
    struct ClearObserver {
      ~ClearObserver() { OpRegistry::global().set_call_observer(nullptr); }
    } clear;
    EngineConfig c;
    c.model = "tiny-qwen3-moe";
    c.backend = DeviceType::cpu;
    c.num_pages = 32;
    c.max_num_batched_tokens = 64;
    c.max_model_len = 128;
    Engine e(c);
    SamplingParams sp;
    sp.temperature = 0;
    sp.max_tokens = 6;
    return e.generate({{5, 9, 2, 7, 11, 3}}, sp)[0].output_tokens;
  }
};

TEST_F(FusedOpFallback, CandidatesForThePartsRunInsteadOfTheFusedOps) {
  // A candidate for a fused op itself is used as such.
  install(0);
  install(1);
  install(4);
  const std::vector<int64_t> fused = greedy_tokens();
  EXPECT_GT(counted[0].calls, 0) << "rms_norm_linear";
  EXPECT_GT(counted[1].calls, 0) << "fused_moe";
  EXPECT_GT(counted[4].calls, 0) << "rope_and_cache";
  EXPECT_EQ(ran()["fused_experts"], 0) << "fused_moe's candidate ran as its parts";
  for (int i : {0, 1, 4}) OpRegistry::global().reset(counted[i].op, DeviceType::cpu);

  // A candidate for fused_experts: the MoE layers call routing and fused_experts.
  install(2);
  EXPECT_EQ(greedy_tokens(), fused);
  EXPECT_EQ(ran()["fused_moe"], 0) << "fused_moe ran although fused_experts has a candidate";
  EXPECT_GT(ran()["moe_topk_softmax"], 0) << "moe_topk_softmax";
  EXPECT_GT(counted[2].calls, 0) << "fused_experts";
  EXPECT_EQ(counted[2].calls, ran()["fused_experts"]);
  OpRegistry::global().reset(counted[2].op, DeviceType::cpu);

  // A candidate for linear: no norm is fused into a GEMM.
  install(3);
  EXPECT_EQ(greedy_tokens(), fused);
  EXPECT_EQ(ran()["rms_norm_linear"], 0) << "rms_norm_linear ran although linear has a candidate";
  EXPECT_GT(ran()["rms_norm"] + ran()["fused_add_rms_norm"], 0) << "the norms as ops of their own";
  EXPECT_GT(counted[3].calls, 0) << "linear";
  OpRegistry::global().reset(counted[3].op, DeviceType::cpu);

  // A candidate for reshape_and_cache: the rope and the cache write as two ops.
  install(5);
  EXPECT_EQ(greedy_tokens(), fused);
  EXPECT_EQ(ran()["rope_and_cache"], 0) << "rope_and_cache ran although reshape_and_cache has a candidate";
  EXPECT_GT(ran()["qk_norm_rope"], 0) << "qk_norm_rope (Qwen3-MoE's per-head q/k norms)";
  EXPECT_GT(counted[5].calls, 0) << "reshape_and_cache";
  OpRegistry::global().reset(counted[5].op, DeviceType::cpu);

  // A candidate for the fused op and one for its part: the fused op's own runs.
  install(1);
  install(2);
  EXPECT_EQ(greedy_tokens(), fused);
  EXPECT_GT(counted[1].calls, 0) << "fused_moe's candidate";
  EXPECT_EQ(counted[2].calls, 0) << "fused_experts ran although fused_moe has a candidate";
}

// The variant "unfused" of a fused op runs it as its parts, with the same tokens.
TEST_F(FusedOpFallback, UnfusedVariantsRunTheParts) {
  const std::vector<int64_t> fused = greedy_tokens();
  EXPECT_GT(ran()["rms_norm_linear"], 0);
  EXPECT_GT(ran()["rope_and_cache"], 0);
  EXPECT_GT(ran()["fused_moe"], 0);
  OpRegistry& reg = OpRegistry::global();
  for (const char* op : {"rms_norm_linear", "rope_and_cache", "fused_moe"}) reg.select_variants(op, {"unfused"});
  struct Unselect {
    ~Unselect() {
      for (const char* op : {"rms_norm_linear", "rope_and_cache", "fused_moe"})
        OpRegistry::global().select_variants(op, {});
    }
  } unselect;
  EXPECT_EQ(greedy_tokens(), fused);
  for (const char* op : {"rms_norm_linear", "rope_and_cache", "fused_moe"}) EXPECT_EQ(ran()[op], 0) << op;
  EXPECT_GT(ran()["fused_add_rms_norm"], 0);
  EXPECT_GT(ran()["reshape_and_cache"], 0);
  EXPECT_GT(ran()["fused_experts"], 0);
}

}  // namespace
}  // namespace fk::engine
