// fused_experts: definition (workloads, inputs, cost, tolerance) and CPU reference.
#include "ops/common/case_builder.h"
#include "ops/moe/fused_experts_cost.h"
#include "ops/moe/fused_experts_reference.h"
#include "ops/moe/moe_case.h"
#include "ops/moe/moe_validate.h"

namespace fk::ops {
namespace {

using A = FusedExpertsArgs;

fk_status fused_experts_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_fused_experts(a, DeviceType::cpu);
    fused_experts_reference(a);
  });
}

// Workload fields: those of experts_workload (moe_case.h); routing (moe_case.h, default
// uniform). Routing weights are uniform in [0, 1).
OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const ExpertsWorkload s = experts_workload(w, A::kName);
  OpCase c = begin_case<A>(w, 9);
  c.tensors[0] = Tensor::empty({s.T, s.H}, s.dtype);
  make_expert_inputs(c, {1, 2, 3, 4, 5}, s, seed);
  c.tensors[6] = random_tensor({s.T, s.k}, DType::f32, seed, 6, 0.f, 1.f);
  c.tensors[7] = make_topk_ids(s.T, s.k, s.E, routing_pattern(w), seed, 7);
  c.tensors[8] = Tensor::empty({fused_experts_workspace_bytes(s.T, s.k, s.E, s.H, s.I)}, DType::u8);
  c.bind(layout);
  return c;
}

// The workload of a captured call: the fields make_case reads (a case draws its routing
// anew, uniform).
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  Json w = {{"tokens", a.hidden.shape[0]}, {"topk", a.topk_ids.shape[1]}, {"experts", a.w13.shape[0]},
            {"hidden", a.hidden.shape[1]}, {"inter", a.w13.shape[1] / 2},
            {"dtype", std::string(dtype_name(a.hidden.dtype))}};
  if (a.w13.dtype == DType::f8e4m3fn) w["weight_dtype"] = std::string(dtype_name(a.w13.dtype));
  return w;
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "moe";
  d.level = "L2";
  d.summary = "out = sum_j topk_weights[:, j] * w2[e] @ (silu(w13[e, :I] @ x) * (w13[e, I:] @ x)), e = topk_ids[:, j]; "
              "bf16/f16 or block-scaled fp8 weights";
  d.args_size = sizeof(A);
  // hidden may be row-strided with 16-byte aligned rows (what the CUDA baseline loads as vectors).
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out)},
                   {"hidden", ArgRole::in, offsetof(A, hidden), RowStride::aligned16},
                   {"w13", ArgRole::in, offsetof(A, w13)},
                   {"w2", ArgRole::in, offsetof(A, w2)},
                   {"w13_scale", ArgRole::in, offsetof(A, w13_scale)},
                   {"w2_scale", ArgRole::in, offsetof(A, w2_scale)},
                   {"topk_weights", ArgRole::in, offsetof(A, topk_weights)},
                   {"topk_ids", ArgRole::in, offsetof(A, topk_ids)},
                   {"workspace", ArgRole::workspace, offsetof(A, workspace)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) { return fused_experts_cost(c.as<A>()); };
  d.tolerance = [](const OpCase& c, const TensorArg&, DType dt) { return fused_experts_tolerance(c.as<A>(), dt); };
  using J = Json;
  const J fp8 = "f8e4m3fn";
  d.test_workloads = {
      J{{"tokens", 1}, {"topk", 2}, {"experts", 4}, {"hidden", 64}, {"inter", 32}},
      J{{"tokens", 7}, {"topk", 2}, {"experts", 8}, {"hidden", 72}, {"inter", 40}},  // not tile multiples
      J{{"tokens", 33}, {"topk", 4}, {"experts", 6}, {"hidden", 128}, {"inter", 96}, {"routing", "skewed"}},
      J{{"tokens", 20}, {"topk", 1}, {"experts", 5}, {"hidden", 64}, {"inter", 64}, {"routing", "same"}},  // one expert
      J{{"tokens", 3}, {"topk", 4}, {"experts", 4}, {"hidden", 64}, {"inter", 48}},                      // k = E
      J{{"tokens", 9}, {"topk", 2}, {"experts", 16}, {"hidden", 64}, {"inter", 32}},  // experts without tokens
      J{{"tokens", 40}, {"topk", 2}, {"experts", 4}, {"hidden", 64}, {"inter", 32}, {"routing", "dropped"}},
      J{{"tokens", 12}, {"topk", 2}, {"experts", 4}, {"hidden", 80}, {"inter", 56}, {"dtype", "f16"}},
      J{{"tokens", 64}, {"topk", 2}, {"experts", 4}, {"hidden", 64}, {"inter", 72}},   // ~32 slots an expert
      J{{"tokens", 200}, {"topk", 2}, {"experts", 4}, {"hidden", 64}, {"inter", 64}},  // ~100 slots an expert
      J{{"tokens", 1100}, {"topk", 2}, {"experts", 8}, {"hidden", 32}, {"inter", 16}},  // > 2048 slots
      J{{"tokens", 0}, {"topk", 2}, {"experts", 4}, {"hidden", 64}, {"inter", 32}},
      J{{"tokens", 5}, {"topk", 2}, {"experts", 4}, {"hidden", 256}, {"inter", 160}, {"weight_dtype", fp8}},
      J{{"tokens", 6}, {"topk", 3}, {"experts", 5}, {"hidden", 144}, {"inter", 48}, {"weight_dtype", fp8},
        {"dtype", "f16"}},
      J{{"tokens", 70}, {"topk", 2}, {"experts", 3}, {"hidden", 128}, {"inter", 64}, {"weight_dtype", fp8}},
  };
  // Qwen3-30B-A3B (128 experts, top-8, hidden 2048, expert intermediate 768): decode
  // batches and an 8192-token prefill, bf16 and fp8; Mixtral-8x7B (8, top-2, 4096, 14336);
  // OLMoE-1B-7B (64, top-8, 2048, 1024).
  const J qwen3 = {{"topk", 8}, {"experts", 128}, {"hidden", 2048}, {"inter", 768}};
  const J mixtral = {{"topk", 2}, {"experts", 8}, {"hidden", 4096}, {"inter", 14336}};
  const J olmoe = {{"topk", 8}, {"experts", 64}, {"hidden", 2048}, {"inter", 1024}};
  auto with = [](J base, int64_t tokens, bool fp8_weights) {
    base["tokens"] = tokens;
    if (fp8_weights) base["weight_dtype"] = "f8e4m3fn";
    return base;
  };
  for (int64_t t : {1, 64, 256, 8192}) d.bench_workloads.push_back(with(qwen3, t, false));
  for (int64_t t : {64, 8192}) d.bench_workloads.push_back(with(qwen3, t, true));
  for (int64_t t : {1, 64, 4096}) d.bench_workloads.push_back(with(mixtral, t, false));
  for (int64_t t : {1, 64, 4096}) d.bench_workloads.push_back(with(olmoe, t, false));
  d.workload_from_call = workload_from_call;
  // No covers: its parts (alignment, grouped GEMMs, activation, the weighted sum) are not
  // all registry ops.
  d.architectures = {"mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};  // where fused_moe runs as its parts
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("fused_experts", cpu, fused_experts_cpu);

}  // namespace
}  // namespace fk::ops
