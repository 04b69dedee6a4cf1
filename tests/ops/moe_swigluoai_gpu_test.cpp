// fused_experts_swigluoai's CUDA baseline beyond the generic GPU oracle test: gpt-oss-20b's
// expert shapes (32 experts, top-4, hidden and intermediate 2880) at decode and prefill
// batch sizes, a many-token case with skewed routing and slots routed nowhere, each
// checked against the oracle on a sample of tokens with its time printed.
#include <gtest/gtest.h>

#include "fk/ops/moe_swigluoai.h"
#include "ops/common/case_builder.h"
#include "ops/moe/moe_case.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::FusedExpertsSwigluOaiArgs;

const OpDef& def() { return OpRegistry::global().def(FusedExpertsSwigluOaiArgs::kName); }

struct Shape5 {
  int64_t T, k, E, H, I;
  const char* routing;
};

TEST(FusedExpertsSwigluOaiGpu, GptOssShapesAgainstOracleOnSampledTokens) {
  FK_REQUIRE_GPU();
  for (const Shape5 s : {Shape5{1, 4, 32, 2880, 2880, "uniform"}, Shape5{64, 4, 32, 2880, 2880, "uniform"},
                         Shape5{700, 4, 16, 256, 192, "skewed"}, Shape5{300, 2, 8, 200, 72, "dropped"}}) {
    const Json w = {{"tokens", s.T}, {"topk", s.k}, {"experts", s.E}, {"hidden", s.H}, {"inter", s.I},
                    {"routing", s.routing}};
    SCOPED_TRACE(w.dump());
    const uint64_t seed = test::seed_for("swigluoai_gpu" + w.dump());
    const float wscale = static_cast<float>(2.0 / std::sqrt(static_cast<double>(s.H)));
    OpCase c;
    c.workload = w;
    c.args.assign(def().args_size, std::byte{0});
    c.tensors = {Tensor::empty({s.T, s.H}, DType::bf16, Device::cuda()),
                 test::device_uniform({s.T, s.H}, DType::bf16, seed, 1ull << 40, -2.f, 2.f),
                 test::device_uniform({s.E, 2 * s.I, s.H}, DType::bf16, seed, 2ull << 40, -wscale, wscale),
                 test::device_uniform({s.E, 2 * s.I}, DType::bf16, seed, 3ull << 40, -0.5f, 0.5f),
                 test::device_uniform({s.E, s.H, s.I}, DType::bf16, seed, 4ull << 40, -wscale, wscale),
                 test::device_uniform({s.E, s.H}, DType::bf16, seed, 5ull << 40, -0.5f, 0.5f),
                 test::device_uniform({s.T, s.k}, DType::f32, seed, 6ull << 40, 0.f, 1.f),
                 ops::make_topk_ids(s.T, s.k, s.E, ops::routing_pattern(w), seed, 7).to(Device::cuda()),
                 Tensor::empty({ops::fused_experts_swigluoai_workspace_bytes(s.T, s.k, s.I)}, DType::u8, Device::cuda())};
    c.bind(def().tensor_args);
    auto& a = c.as<FusedExpertsSwigluOaiArgs>();
    a.alpha = ops::kSwigluOaiAlpha;
    a.limit = ops::kSwigluOaiLimit;
    test::check_sampled_rows(def(), c, {true, true, false, false, false, false, true, true, false},
                             test::sample_rows(s.T, 8));
    test::report_time(def(), c);
  }
}

}  // namespace
}  // namespace fk
