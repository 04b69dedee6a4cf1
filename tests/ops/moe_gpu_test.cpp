// MoE ops on the GPU: the CUDA grouping equals the stable reference exactly (both order an
// expert's slots by slot index), routing and fused experts on production shapes against
// the f64 oracle (token counts cut so that the oracle stays quick), every GEMM tile
// configuration, the GEMV decode and grouped prefill paths, determinism, replay inside a
// CUDA graph, and clear errors for shapes the baseline does not run.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "harness/check/op_check.h"
#include "runtime/device.h"
#include "fk/op_registry.h"
#include "fk/ops/moe.h"
#include "fk/runtime.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

const OpDef& def(const char* name) { return OpRegistry::global().def(name); }

void expect_passes(const char* op, const Json& w, const std::string& tag) {
  const auto r = bench::check_op(def(op), w, test::seed_for(tag + w.dump()), DeviceType::cuda);
  EXPECT_TRUE(r.passed) << op << " " << w.dump() << ": " << r.message;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  const Tensor ha = a.to(Device::cpu()), hb = b.to(Device::cpu());
  return ha.nbytes() == hb.nbytes() && std::memcmp(ha.data(), hb.data(), ha.nbytes()) == 0;
}

TEST(MoeGpu, GroupingEqualsTheStableReferenceExactly) {
  FK_REQUIRE_GPU();
  const Json shapes[] = {
      {{"tokens", 1}, {"topk", 8}, {"experts", 128}, {"block_size", 16}},
      {{"tokens", 64}, {"topk", 8}, {"experts", 128}, {"block_size", 16}},
      {{"tokens", 256}, {"topk", 8}, {"experts", 128}, {"block_size", 32}},   // 2048 slots: one CTA
      {{"tokens", 257}, {"topk", 8}, {"experts", 128}, {"block_size", 32}},   // 2056: chunked
      {{"tokens", 8192}, {"topk", 8}, {"experts", 128}, {"block_size", 128}},
      {{"tokens", 4000}, {"topk", 8}, {"experts", 256}, {"block_size", 64}, {"routing", "skewed"}},
      {{"tokens", 3000}, {"topk", 2}, {"experts", 4000}, {"block_size", 16}},
      {{"tokens", 5000}, {"topk", 1}, {"experts", 8}, {"block_size", 128}, {"routing", "same"}},
      {{"tokens", 999}, {"topk", 3}, {"experts", 16}, {"block_size", 1}, {"routing", "dropped"}},
  };
  for (const Json& w : shapes) {
    const OpCase host = def("moe_align_block_size").make_case(w, test::seed_for("MoeGpuAlign" + w.dump()));
    OpCase want = host;
    for (size_t i = 0; i < 3; ++i) want.tensors[i] = host.tensors[i].clone();
    want.bind(def("moe_align_block_size").tensor_args);
    call_op(want.as<MoeAlignBlockSizeArgs>(), DeviceType::cpu, nullptr);
    OpCase dev = bench::case_to_device(def("moe_align_block_size"), host, Device::cuda(0));
    bench::poison_outputs(def("moe_align_block_size"), dev);
    call_op(dev.as<MoeAlignBlockSizeArgs>(), DeviceType::cuda, nullptr);
    rt::device_synchronize();
    for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(same_bytes(dev.tensors[i], want.tensors[i])) << w.dump() << " output " << i;
  }
}

TEST(MoeGpu, RoutingOnProductionShapes) {
  FK_REQUIRE_GPU();
  expect_passes("moe_topk_softmax", {{"tokens", 333}, {"experts", 128}, {"topk", 8}}, "route");
  expect_passes("moe_topk_softmax", {{"tokens", 100}, {"experts", 64}, {"topk", 8}, {"renormalize", false}}, "route");
  expect_passes("moe_topk_softmax", {{"tokens", 50}, {"experts", 512}, {"topk", 8}, {"ties", true}}, "route");
  expect_passes("moe_topk_sigmoid", {{"tokens", 77}, {"experts", 16}, {"topk", 1}}, "route");
  expect_passes("moe_grouped_topk",
                {{"tokens", 200}, {"experts", 256}, {"topk", 8}, {"groups", 8}, {"topk_group", 4}, {"scale", 2.5}},
                "route");
  expect_passes("moe_grouped_topk",
                {{"tokens", 64}, {"experts", 160}, {"topk", 6}, {"groups", 32}, {"topk_group", 3},
                 {"scoring", "softmax"}, {"bias", false}},
                "route");
}

TEST(MoeGpu, FusedExpertsProductionShapesMatchOracle) {
  FK_REQUIRE_GPU();
  const Json qwen3 = {{"topk", 8}, {"experts", 128}, {"hidden", 2048}, {"inter", 768}};
  for (int64_t tokens : {1, 4}) {
    Json w = qwen3;
    w["tokens"] = tokens;
    expect_passes("fused_experts", w, "qwen3");
    w["weight_dtype"] = "f8e4m3fn";
    expect_passes("fused_experts", w, "qwen3");
  }
  // Mixtral's layer sizes (two of its eight experts, to keep the oracle quick) and OLMoE's.
  expect_passes("fused_experts", {{"tokens", 3}, {"topk", 2}, {"experts", 2}, {"hidden", 4096}, {"inter", 14336}},
                "mixtral");
  expect_passes("fused_experts", {{"tokens", 3}, {"topk", 8}, {"experts", 64}, {"hidden", 2048}, {"inter", 1024}},
                "olmoe");
}

// Enough slots per expert for each GEMM tile configuration (16, 32, 64 and 128 rows).
TEST(MoeGpu, FusedExpertsEveryTileConfiguration) {
  FK_REQUIRE_GPU();
  for (int64_t tokens : {20, 150, 300, 800}) {
    for (const char* wdt : {"bf16", "f8e4m3fn"}) {
      const Json w = {{"tokens", tokens}, {"topk", 2},         {"experts", 16},
                      {"hidden", 256},    {"inter", 128},      {"weight_dtype", wdt}};
      expect_passes("fused_experts", w, "tiles");
    }
  }
  expect_passes("fused_experts",
                {{"tokens", 700}, {"topk", 1}, {"experts", 4}, {"hidden", 136}, {"inter", 200}, {"routing", "same"},
                 {"dtype", "f16"}},
                "tiles");
}

// Prefill-sized groups (more than 48 slots an expert) take the grouped TMA + wgmma path:
// tiles cut by the ends of N and K, experts without slots, dropped slots, skew, f16.
TEST(MoeGpu, FusedExpertsGroupedPrefillMatchesOracle) {
  FK_REQUIRE_GPU();
  expect_passes("fused_experts", {{"tokens", 600}, {"topk", 8}, {"experts", 64}, {"hidden", 512}, {"inter", 256}},
                "grouped");
  expect_passes("fused_experts",
                {{"tokens", 900}, {"topk", 4}, {"experts", 40}, {"hidden", 328}, {"inter", 200}, {"routing", "dropped"}},
                "grouped");
  expect_passes("fused_experts",
                {{"tokens", 700}, {"topk", 8}, {"experts", 96}, {"hidden", 264}, {"inter", 136}, {"routing", "skewed"},
                 {"dtype", "f16"}},
                "grouped");
  expect_passes("fused_experts", {{"tokens", 160}, {"topk", 8}, {"experts", 8}, {"hidden", 2048}, {"inter", 768}},
                "grouped");  // Qwen3-30B-A3B's expert sizes
}

// I a multiple of 128 takes the fused gate_up kernel (rows gathered in its loads, silu in
// its epilogue; moe_gate_up.h): H not a multiple of its 64-column k step, sentinel rows
// of dropped slots, f16, and skewed routing whose largest expert spans more than 16
// blocks (its tiles cut into bands).
TEST(MoeGpu, FusedExpertsFusedGateUpMatchesOracle) {
  FK_REQUIRE_GPU();
  expect_passes("fused_experts",
                {{"tokens", 900}, {"topk", 4}, {"experts", 40}, {"hidden", 328}, {"inter", 128}, {"routing", "dropped"},
                 {"dtype", "f16"}},
                "fused gate_up");
  expect_passes("fused_experts",
                {{"tokens", 3000}, {"topk", 2}, {"experts", 4}, {"hidden", 264}, {"inter", 256}, {"routing", "skewed"}},
                "fused gate_up");
  expect_passes("fused_experts", {{"tokens", 700}, {"topk", 8}, {"experts", 64}, {"hidden", 1024}, {"inter", 384}},
                "fused gate_up");
}

// Up to 4 tokens take the GEMV path: K not a multiple of the 256-element warp step,
// dropped slots, f16, Mixtral's sizes (two of its experts).
TEST(MoeGpu, FusedExpertsDecodeGemvMatchesOracle) {
  FK_REQUIRE_GPU();
  expect_passes("fused_experts",
                {{"tokens", 3}, {"topk", 4}, {"experts", 8}, {"hidden", 264}, {"inter", 136}, {"routing", "dropped"}},
                "gemv");
  expect_passes("fused_experts",
                {{"tokens", 4}, {"topk", 2}, {"experts", 5}, {"hidden", 1000}, {"inter", 1032}, {"dtype", "f16"}},
                "gemv");
  expect_passes("fused_experts", {{"tokens", 2}, {"topk", 2}, {"experts", 2}, {"hidden", 4096}, {"inter", 14336}},
                "gemv");
  // The down kernel's work items (slot, K part) per CTA: Qwen3-30B-A3B's 8 slots (one per
  // warp); 10 slots (a warp takes two); 3 slots in 2 K parts of unequal length; 1 slot in
  // 8 parts, most of them empty.
  expect_passes("fused_experts", {{"tokens", 1}, {"topk", 8}, {"experts", 128}, {"hidden", 2048}, {"inter", 768}},
                "gemv");
  expect_passes("fused_experts", {{"tokens", 2}, {"topk", 10}, {"experts", 16}, {"hidden", 512}, {"inter", 264}},
                "gemv");
  expect_passes("fused_experts", {{"tokens", 1}, {"topk", 3}, {"experts", 6}, {"hidden", 256}, {"inter", 1032}},
                "gemv");
  expect_passes("fused_experts", {{"tokens", 4}, {"topk", 1}, {"experts", 4}, {"hidden", 768}, {"inter", 768}},
                "gemv");
}

class FusedExpertsGpu : public ::testing::TestWithParam<int64_t> {};

// 2 tokens (the GEMV path), 64 over 128 experts (the mma.sync kernel) and 512 over 32 (the
// grouped path).
TEST_P(FusedExpertsGpu, IsDeterministicAndReplaysInACudaGraph) {
  FK_REQUIRE_GPU();
  const OpDef& d = def("fused_experts");
  const int64_t tokens = GetParam(), experts = tokens == 512 ? 32 : 128;
  const OpCase host =
      d.make_case({{"tokens", tokens}, {"topk", 8}, {"experts", experts}, {"hidden", 2048}, {"inter", 768}}, 5);
  engine::EngineStream stream(true);
  OpCase dev = bench::case_to_device(d, host, Device::cuda(0));
  call_op(dev.as<FusedExpertsArgs>(), DeviceType::cuda, stream.get());
  rt::stream_synchronize(stream.get());
  const Tensor first = dev.tensors[0].clone();
  bench::poison_outputs(d, dev, stream.get());
  call_op(dev.as<FusedExpertsArgs>(), DeviceType::cuda, stream.get());
  rt::stream_synchronize(stream.get());
  EXPECT_TRUE(same_bytes(dev.tensors[0], first)) << "two calls on the same inputs differ";

  bench::poison_outputs(d, dev, stream.get());
  engine::CudaGraph graph;
  graph.capture(stream.get(), [&] { call_op(dev.as<FusedExpertsArgs>(), DeviceType::cuda, stream.get()); });
  graph.replay(stream.get());
  rt::stream_synchronize(stream.get());
  EXPECT_TRUE(same_bytes(dev.tensors[0], first)) << "the graph replay differs from the eager call";

  // New routing in the same buffers: the captured graph follows it (no routing-dependent
  // launch shapes were baked in).
  const OpCase other = d.make_case({{"tokens", tokens}, {"topk", 8}, {"experts", experts}, {"hidden", 2048},
                                    {"inter", 768}, {"routing", "skewed"}},
                                   6);
  dev.tensors[7].copy_from(other.tensors[7]);
  OpCase eager = bench::case_to_device(d, host, Device::cuda(0));
  eager.tensors[7].copy_from(other.tensors[7]);
  call_op(eager.as<FusedExpertsArgs>(), DeviceType::cuda, stream.get());
  graph.replay(stream.get());
  rt::stream_synchronize(stream.get());
  EXPECT_TRUE(same_bytes(dev.tensors[0], eager.tensors[0])) << "the replay with new routing differs from eager";
}

INSTANTIATE_TEST_SUITE_P(MoeGpu, FusedExpertsGpu, ::testing::Values(int64_t{2}, int64_t{64}, int64_t{512}));

// fused_moe: decode (routing inside the GEMV kernels) on Qwen3-30B-A3B's sizes, and the
// general path (more tokens, fp8 weights), against the f64 oracle.
TEST(MoeGpu, FusedMoeMatchesOracle) {
  FK_REQUIRE_GPU();
  const Json qwen3 = {{"topk", 8}, {"experts", 128}, {"hidden", 2048}, {"inter", 768}};
  for (int64_t tokens : {1, 2, 3, 4}) {
    Json w = qwen3;
    w["tokens"] = tokens;
    w["renormalize"] = tokens % 2 == 1;
    expect_passes("fused_moe", w, "fused_moe");
  }
  Json fp8 = qwen3;
  fp8["tokens"] = 2;
  fp8["weight_dtype"] = "f8e4m3fn";
  expect_passes("fused_moe", fp8, "fused_moe");
  expect_passes("fused_moe", {{"tokens", 40}, {"topk", 8}, {"experts", 128}, {"hidden", 512}, {"inter", 256}},
                "fused_moe");
  // 200 experts (32 logits a lane), f32 logits, f16, exact ties.
  expect_passes("fused_moe",
                {{"tokens", 3}, {"topk", 6}, {"experts", 200}, {"hidden", 256}, {"inter", 128},
                 {"gating_dtype", "f32"}, {"dtype", "f16"}},
                "fused_moe");
  expect_passes("fused_moe", {{"tokens", 4}, {"topk", 3}, {"experts", 16}, {"hidden", 256}, {"inter", 128}, {"ties", true}},
                "fused_moe");
}

// fused_moe's outputs are bit-identical to moe_topk_softmax then fused_experts on the GPU,
// at decode sizes on the GEMV kernels and on the tiled ones (fused_experts' variant
// tiled_decode, switched in-process), and at more tokens.
TEST(MoeGpu, FusedMoeEqualsRoutingThenFusedExpertsBitForBit) {
  FK_REQUIRE_GPU();
  for (bool tiled : {false, true}) {
    SCOPED_TRACE(tiled ? "tiled decode" : "GEMV decode");
    OpRegistry::global().select_variants("fused_experts", tiled ? std::vector<std::string>{"tiled_decode"}
                                                                : std::vector<std::string>{});
    const OpDef& d = def("fused_moe");
    std::vector<Json> shapes;
    for (int64_t tokens : {1, 2, 3, 4})
      for (bool renormalize : {false, true})
        shapes.push_back({{"tokens", tokens}, {"topk", 8}, {"experts", 128}, {"hidden", 2048}, {"inter", 768},
                          {"renormalize", renormalize}});
    shapes.push_back({{"tokens", 2}, {"topk", 4}, {"experts", 60}, {"hidden", 256}, {"inter", 128}, {"ties", true}});
    shapes.push_back({{"tokens", 3}, {"topk", 5}, {"experts", 300}, {"hidden", 256}, {"inter", 128},
                      {"gating_dtype", "f32"}, {"dtype", "f16"}});
    shapes.push_back({{"tokens", 37}, {"topk", 8}, {"experts", 128}, {"hidden", 512}, {"inter", 256}});
    for (const Json& w : shapes) {
      const OpCase host = d.make_case(w, test::seed_for("FusedMoeBits" + w.dump()));
      OpCase dev = bench::case_to_device(d, host, Device::cuda(0));
      bench::poison_outputs(d, dev);
      const auto& a = dev.as<FusedMoeArgs>();
      call_op(a, DeviceType::cuda, nullptr);

      Tensor weights = Tensor::empty(dev.tensors[7].shape(), DType::f32, Device::cuda(0));
      Tensor ids = Tensor::empty(dev.tensors[8].shape(), DType::i32, Device::cuda(0));
      Tensor out = Tensor::empty(dev.tensors[0].shape(), dev.tensors[0].dtype(), Device::cuda(0));
      call_op(MoeTopkSoftmaxArgs{weights, ids, a.gating_output, a.renormalize}, DeviceType::cuda, nullptr);
      call_op(FusedExpertsArgs{out, a.hidden, a.w13, a.w2, a.w13_scale, a.w2_scale, weights, ids, a.workspace},
              DeviceType::cuda, nullptr);
      rt::device_synchronize();
      EXPECT_TRUE(same_bytes(dev.tensors[8], ids)) << w.dump() << ": topk_ids differ";
      EXPECT_TRUE(same_bytes(dev.tensors[7], weights)) << w.dump() << ": topk_weights differ";
      EXPECT_TRUE(same_bytes(dev.tensors[0], out)) << w.dump() << ": out differs";
    }
  }
  OpRegistry::global().select_variants("fused_experts", {});  // the default
}

TEST(MoeGpu, ShapesTheBaselineDoesNotRunAreClearErrors) {
  FK_REQUIRE_GPU();
  const OpDef& d = def("fused_experts");
  const OpCase host = d.make_case({{"tokens", 4}, {"topk", 2}, {"experts", 4}, {"hidden", 60}, {"inter", 32}}, 1);
  const OpCase dev = bench::case_to_device(d, host, Device::cuda(0));
  const fk_status s = OpRegistry::global().active("fused_experts", DeviceType::cuda)(dev.args_ptr(), nullptr);
  EXPECT_EQ(s, FK_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(last_error_message()).find("multiples of 8"), std::string::npos) << last_error_message();
}

}  // namespace
}  // namespace fk::ops
