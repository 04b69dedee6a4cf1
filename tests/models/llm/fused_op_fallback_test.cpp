// The decoder calls its fused ops (rms_norm_linear, fused_moe, rope_and_cache) unless a candidate is
// installed for one of the ops they stand for; then it calls those ops one by one, so the
// candidate runs wherever the engine would have used it. Either way the CPU backend gives
// the same tokens (the fused ops' CPU references compose the parts' references).
#include <gtest/gtest.h>

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
  static std::vector<int64_t> greedy_tokens() {
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

  // A candidate for fused_experts: the MoE layers call routing and fused_experts.
  install(1);
  install(2);
  EXPECT_EQ(greedy_tokens(), fused);
  EXPECT_EQ(counted[1].calls, 0) << "fused_moe ran although fused_experts has a candidate";
  EXPECT_GT(counted[2].calls, 0) << "fused_experts";

  // A candidate for linear: no norm is fused into a GEMM.
  install(0);
  install(3);
  EXPECT_EQ(greedy_tokens(), fused);
  EXPECT_EQ(counted[0].calls, 0) << "rms_norm_linear ran although linear has a candidate";
  EXPECT_GT(counted[3].calls, 0) << "linear";

  // A candidate for reshape_and_cache: the rope and the cache write as two ops.
  install(4);
  install(5);
  EXPECT_EQ(greedy_tokens(), fused);
  EXPECT_EQ(counted[4].calls, 0) << "rope_and_cache ran although reshape_and_cache has a candidate";
  EXPECT_GT(counted[5].calls, 0) << "reshape_and_cache";
}

}  // namespace
}  // namespace fk::engine
