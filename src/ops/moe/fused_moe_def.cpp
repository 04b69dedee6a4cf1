// fused_moe: definition (workloads, inputs, cost, output check) and CPU reference, which
// is the routing reference followed by the experts' reference.
#include "ops/common/case_builder.h"
#include "ops/moe/fused_experts_cost.h"
#include "ops/moe/fused_experts_reference.h"
#include "ops/moe/fused_moe_composed.h"
#include "ops/moe/fused_moe_check.h"
#include "ops/moe/fused_moe_validate.h"
#include "ops/moe/moe_case.h"
#include "ops/moe/moe_routing.h"

namespace fk::ops {
namespace {

using A = FusedMoeArgs;

RoutingSpec softmax_spec(const A& a) {
  RoutingSpec s;
  s.renormalize = a.renormalize != 0;
  return s;
}

fk_status fused_moe_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_fused_moe(a, DeviceType::cpu);
    route_all(a.topk_weights, a.topk_ids, a.gating_output, TensorView{}, softmax_spec(a));
    fused_experts_reference(fused_moe_experts_part(a));
  });
}

// Workload fields: those of experts_workload (moe_case.h); renormalize (default true);
// gating_dtype (the router logits: f32 | f16 | bf16, default the activation dtype);
// logit_range (logits uniform in [-r, r], default 4); ties (logits drawn from the integers
// -2..2, so that many scores tie exactly).
OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const ExpertsWorkload s = experts_workload(w, A::kName);
  const DType gating_dtype = wl_dtype(w, "gating_dtype", s.dtype);
  FK_CHECK(gating_dtype == DType::f32 || gating_dtype == DType::f16 || gating_dtype == DType::bf16,
           "fused_moe workload gating_dtype must be f32, f16 or bf16, got ", w.dump());
  OpCase c = begin_case<A>(w, 10);
  c.tensors[0] = Tensor::empty({s.T, s.H}, s.dtype);
  make_expert_inputs(c, {1, 2, 3, 4, 5}, s, seed);
  const auto range = static_cast<float>(wl_float(w, "logit_range", 4.0));
  c.tensors[6] = wl_bool(w, "ties", false) ? random_int_tensor({s.T, s.E}, gating_dtype, seed, 6, -2, 3)
                                           : random_tensor({s.T, s.E}, gating_dtype, seed, 6, -range, range);
  c.tensors[7] = Tensor::empty({s.T, s.k}, DType::f32);
  c.tensors[8] = Tensor::empty({s.T, s.k}, DType::i32);
  c.tensors[9] = Tensor::empty({fused_experts_workspace_bytes(s.T, s.k, s.E, s.H, s.I)}, DType::u8);
  c.as<A>().renormalize = wl_bool(w, "renormalize", true) ? 1 : 0;
  c.bind(layout);
  return c;
}

// fused_experts' cost on the reference routing of the case's logits, plus reading the
// logits and scoring them.
OpCost fused_moe_cost(const OpCase& c) {
  const A& a = c.as<A>();
  Tensor weights = Tensor::empty({a.topk_ids.shape[0], a.topk_ids.shape[1]}, DType::f32);
  Tensor ids = Tensor::empty({a.topk_ids.shape[0], a.topk_ids.shape[1]}, DType::i32);
  route_all(weights, ids, a.gating_output, TensorView{}, softmax_spec(a));
  FusedExpertsArgs experts = fused_moe_experts_part(a);
  experts.topk_weights = weights;
  experts.topk_ids = ids;
  OpCost cost = fused_experts_cost(experts);
  cost.bytes += static_cast<double>(a.gating_output.nbytes());
  cost.flops += 5.0 * static_cast<double>(a.gating_output.numel());
  return cost;
}

// The workload of a captured call: the fields make_case reads (a case draws its router
// logits anew).
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  Json w = {{"tokens", a.hidden.shape[0]},
            {"topk", a.topk_ids.shape[1]},
            {"experts", a.w13.shape[0]},
            {"hidden", a.hidden.shape[1]},
            {"inter", a.w13.shape[1] / 2},
            {"dtype", std::string(dtype_name(a.hidden.dtype))},
            {"gating_dtype", std::string(dtype_name(a.gating_output.dtype))},
            {"renormalize", a.renormalize != 0}};
  if (a.w13.dtype == DType::f8e4m3fn) w["weight_dtype"] = std::string(dtype_name(a.w13.dtype));
  return w;
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "moe";
  d.level = "L2";
  d.summary = "topk_weights, topk_ids = softmax top-k of gating_output (optionally renormalised); then out = "
              "fused_experts(hidden, w13, w2, topk_weights, topk_ids); bf16/f16 or block-scaled fp8 weights";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out)},
                   {"hidden", ArgRole::in, offsetof(A, hidden), RowStride::aligned16},
                   {"w13", ArgRole::in, offsetof(A, w13)},
                   {"w2", ArgRole::in, offsetof(A, w2)},
                   {"w13_scale", ArgRole::in, offsetof(A, w13_scale)},
                   {"w2_scale", ArgRole::in, offsetof(A, w2_scale)},
                   {"gating_output", ArgRole::in, offsetof(A, gating_output), RowStride::any},
                   {"topk_weights", ArgRole::out, offsetof(A, topk_weights)},
                   {"topk_ids", ArgRole::out, offsetof(A, topk_ids)},
                   {"workspace", ArgRole::workspace, offsetof(A, workspace)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = fused_moe_cost;
  d.check_outputs = check_fused_moe_outputs;
  using J = Json;
  // Qwen3-like routing (128 experts, top-8) on small expert sizes keeps the CPU oracle
  // quick; the GPU tests run Qwen3-30B-A3B's own sizes.
  const J qwen_routing = {{"topk", 8}, {"experts", 128}, {"hidden", 256}, {"inter", 128}};
  auto with = [](J base, J extra) {
    base.update(extra);
    return base;
  };
  d.test_workloads = {
      // Decode: the CUDA baseline routes inside its GEMV kernels.
      with(qwen_routing, {{"tokens", 1}}),
      with(qwen_routing, {{"tokens", 2}, {"renormalize", false}}),
      with(qwen_routing, {{"tokens", 3}, {"hidden", 264}, {"inter", 136}}),  // K not a multiple of 256
      with(qwen_routing, {{"tokens", 4}, {"gating_dtype", "f32"}}),
      J{{"tokens", 3}, {"topk", 4}, {"experts", 60}, {"hidden", 128}, {"inter", 64}},  // E not a multiple of 32
      J{{"tokens", 2}, {"topk", 1}, {"experts", 16}, {"hidden", 64}, {"inter", 32}},   // k = 1
      J{{"tokens", 4}, {"topk", 4}, {"experts", 4}, {"hidden", 64}, {"inter", 48}},    // k = E
      J{{"tokens", 3}, {"topk", 8}, {"experts", 64}, {"hidden", 128}, {"inter", 96}, {"dtype", "f16"}},
      J{{"tokens", 2}, {"topk", 6}, {"experts", 200}, {"hidden", 64}, {"inter", 32}, {"renormalize", false}},
      J{{"tokens", 4}, {"topk", 3}, {"experts", 16}, {"hidden", 64}, {"inter", 32}, {"ties", true}},  // exact ties
      // The general path: more tokens, fp8 weights, none.
      J{{"tokens", 40}, {"topk", 4}, {"experts", 16}, {"hidden", 64}, {"inter", 32}},
      J{{"tokens", 3}, {"topk", 2}, {"experts", 8}, {"hidden", 256}, {"inter", 128}, {"weight_dtype", "f8e4m3fn"}},
      J{{"tokens", 0}, {"topk", 8}, {"experts", 128}, {"hidden", 64}, {"inter", 32}},
  };
  // Qwen3-30B-A3B (128 experts, top-8, hidden 2048, expert intermediate 768): decode
  // batches and a small prefill.
  const J qwen3 = {{"topk", 8}, {"experts", 128}, {"hidden", 2048}, {"inter", 768}};
  for (int64_t t : {1, 4, 64}) d.bench_workloads.push_back(with(qwen3, {{"tokens", t}}));
  d.workload_from_call = workload_from_call;
  // Its parts: with a candidate for either (or the variant "unfused"), the registry runs
  // fused_moe_composed instead (OpRegistry::call).
  d.covers = {"moe_topk_softmax", "fused_experts"};
  d.composed[static_cast<int>(DeviceType::cpu)] = fused_moe_composed<DeviceType::cpu>;
  d.composed[static_cast<int>(DeviceType::cuda)] = fused_moe_composed<DeviceType::cuda>;
  d.architectures = {"mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("fused_moe", cpu, fused_moe_cpu);

}  // namespace
}  // namespace fk::ops
