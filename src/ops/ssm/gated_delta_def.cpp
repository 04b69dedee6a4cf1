// chunk_gated_delta_rule and fused_recurrent_gated_delta_rule: definitions (workloads,
// inputs, cost, tolerance) and the CPU backend of both, the double-precision token loop
// (gated_delta_reference.h), which is also the oracle.
#include "fk/ops/gated_delta.h"
#include "ops/ssm/gated_delta_case.h"
#include "ops/ssm/gated_delta_reference.h"

namespace fk::ops {
namespace {

template <class Args>
fk_status gated_delta_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const Args*>(args);
    const GatedDeltaDims d = validate_gated_delta_rule(Args::kName, a, DeviceType::cpu);
    gated_delta_rule_reference(a, d);
  });
}

// Qwen3-Next's gated-DeltaNet layers: 16 query/key heads, 32 value heads, heads of 128.
Json qwen3_next(Json w) {
  w["hk"] = 16, w["hv"] = 32, w["dk"] = 128, w["dv"] = 128;
  return w;
}

template <class Args>
OpDef make_common(const char* summary) {
  OpDef d;
  d.name = Args::kName;
  d.family = "ssm";
  d.level = "L1";
  d.summary = summary;
  d.args_size = sizeof(Args);
  d.tensor_args = gated_delta_tensor_args();
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    return make_gated_delta_case(Args::kName, layout, w, seed);
  };
  d.tolerance = gated_delta_tolerance;
  d.test_workloads = gated_delta_test_workloads();
  d.workload_from_call = gated_delta_workload_from_call;
  d.architectures = {"qwen3_next"};
  return d;
}

OpDef make_chunk_def() {
  OpDef d = make_common<ChunkGatedDeltaRuleArgs>(
      "gated delta rule over packed variable-length sequences, chunked (prefill): S = S*exp(g); "
      "S += k (beta (v - S^T k))^T; o = S^T (scale q); state slots read and written");
  d.cost = gated_delta_chunk_cost;
  // Prefill at production shapes: one 32k prompt, 8 x 4k, 64 x 512.
  d.bench_workloads = {qwen3_next({{"seq_lens", {32768}}}), qwen3_next({{"batch", 8}, {"seq_len", 4096}}),
                       qwen3_next({{"batch", 64}, {"seq_len", 512}})};
  return d;
}

OpDef make_recurrent_def() {
  OpDef d = make_common<FusedRecurrentGatedDeltaRuleArgs>(
      "gated delta rule over packed variable-length sequences, token by token (decode): S = S*exp(g); "
      "S += k (beta (v - S^T k))^T; o = S^T (scale q); state slots read and written once");
  d.cost = gated_delta_recurrent_cost;
  // Decode steps of batch 1 to 256, one token per sequence.
  for (int64_t b : {1, 2, 4, 8, 16, 32, 64, 128, 256}) d.bench_workloads.push_back(qwen3_next({{"batch", b}, {"seq_len", 1}}));
  return d;
}

FK_REGISTER_OP(make_chunk_def);
FK_REGISTER_OP(make_recurrent_def);
FK_REGISTER_IMPL("chunk_gated_delta_rule", cpu, gated_delta_cpu<ChunkGatedDeltaRuleArgs>);
FK_REGISTER_IMPL("fused_recurrent_gated_delta_rule", cpu, gated_delta_cpu<FusedRecurrentGatedDeltaRuleArgs>);

}  // namespace
}  // namespace fk::ops
