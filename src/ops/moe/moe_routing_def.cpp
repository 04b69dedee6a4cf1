// moe_topk_softmax, moe_topk_sigmoid and moe_grouped_topk: definitions (workloads, inputs,
// cost, output check) and CPU references.
#include "fk/element.h"
#include "ops/common/case_builder.h"
#include "ops/moe/moe_routing.h"
#include "ops/moe/moe_validate.h"

namespace fk::ops {
namespace {

template <class A>
RoutingSpec plain_spec(const A& a, MoeScoring scoring) {
  RoutingSpec s;
  s.scoring = scoring;
  s.renormalize = a.renormalize != 0;
  return s;
}

RoutingSpec grouped_spec(const MoeGroupedTopkArgs& a) {
  RoutingSpec s;
  s.scoring = a.scoring;
  s.n_group = a.n_group;
  s.topk_group = a.topk_group;
  s.renormalize = a.renormalize != 0;
  s.routed_scaling_factor = a.routed_scaling_factor;
  return s;
}

fk_status topk_softmax_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const MoeTopkSoftmaxArgs*>(args);
    validate_routing_common(a, DeviceType::cpu);
    route_all(a.topk_weights, a.topk_ids, a.gating_output, TensorView{}, plain_spec(a, MoeScoring::softmax));
  });
}

fk_status topk_sigmoid_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const MoeTopkSigmoidArgs*>(args);
    validate_routing_common(a, DeviceType::cpu);
    route_all(a.topk_weights, a.topk_ids, a.gating_output, TensorView{}, plain_spec(a, MoeScoring::sigmoid));
  });
}

fk_status grouped_topk_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const MoeGroupedTopkArgs*>(args);
    validate_grouped_topk(a, DeviceType::cpu);
    route_all(a.topk_weights, a.topk_ids, a.gating_output, a.e_score_correction_bias, grouped_spec(a));
  });
}

// Routing shapes common to the three ops: tokens, experts, topk; dtype of the logits
// (bf16 default); logit_range (uniform in [-r, r], default 4); ties (logits drawn from the
// integers -2..2, so that many scores tie exactly).
struct RoutingShape {
  int64_t T, E, k;
  DType dtype;
};

RoutingShape routing_shape(const Json& w, const char* op) {
  RoutingShape s{wl_int(w, "tokens"), wl_int(w, "experts"), wl_int(w, "topk"), wl_dtype(w)};
  FK_CHECK(s.T >= 0 && s.E >= 1 && s.k >= 1 && s.k <= s.E, op,
           " workload needs tokens >= 0 and 1 <= topk <= experts, got ", w.dump());
  FK_CHECK(s.dtype == DType::f32 || s.dtype == DType::f16 || s.dtype == DType::bf16, op,
           " workload dtype must be f32, f16 or bf16, got ", w.dump());
  return s;
}

Tensor routing_logits(const RoutingShape& s, const Json& w, uint64_t seed) {
  if (wl_bool(w, "ties", false)) return random_int_tensor({s.T, s.E}, s.dtype, seed, 1, -2, 3);
  const auto r = static_cast<float>(wl_float(w, "logit_range", 4.0));
  return random_tensor({s.T, s.E}, s.dtype, seed, 1, -r, r);
}

std::vector<TensorArg> routing_layout(size_t weights, size_t ids, size_t gating) {
  return {{"topk_weights", ArgRole::out, weights}, {"topk_ids", ArgRole::out, ids},
          {"gating_output", ArgRole::in, gating, RowStride::any}};
}

template <class A>
OpCost routing_cost(const OpCase& c) {
  const auto& a = c.as<A>();
  const double slots = static_cast<double>(a.topk_ids.numel());
  return OpCost{static_cast<double>(a.gating_output.nbytes()) + 8.0 * slots,
                5.0 * static_cast<double>(a.gating_output.numel()), DType::f32};
}

using J = Json;

// Production routing shapes: Qwen3-30B-A3B (128 experts, top-8, renormalised), Mixtral
// (8, top-2, renormalised), OLMoE (64, top-8, not renormalised); decode and prefill.
std::vector<Json> plain_bench_workloads() {
  std::vector<Json> out;
  for (int64_t t : {1, 64, 256, 8192}) out.push_back(J{{"tokens", t}, {"experts", 128}, {"topk", 8}});
  for (int64_t t : {64, 8192}) out.push_back(J{{"tokens", t}, {"experts", 8}, {"topk", 2}});
  for (int64_t t : {64, 8192}) out.push_back(J{{"tokens", t}, {"experts", 64}, {"topk", 8}, {"renormalize", false}});
  return out;
}

std::vector<Json> plain_test_workloads() {
  return {
      J{{"tokens", 1}, {"experts", 8}, {"topk", 2}},
      J{{"tokens", 7}, {"experts", 8}, {"topk", 2}, {"renormalize", false}},
      J{{"tokens", 33}, {"experts", 64}, {"topk", 8}},
      J{{"tokens", 5}, {"experts", 128}, {"topk", 8}, {"dtype", "f32"}},
      J{{"tokens", 16}, {"experts", 60}, {"topk", 4}, {"dtype", "f16"}},  // not a multiple of the warp
      J{{"tokens", 4}, {"experts", 6}, {"topk", 6}},                       // k = E
      J{{"tokens", 9}, {"experts", 16}, {"topk", 3}, {"ties", true}},      // exact ties
      J{{"tokens", 3}, {"experts", 256}, {"topk", 8}, {"renormalize", false}},
      J{{"tokens", 2}, {"experts", 1000}, {"topk", 5}, {"logit_range", 1.0}},
      J{{"tokens", 5}, {"experts", 1}, {"topk", 1}},
      J{{"tokens", 0}, {"experts", 8}, {"topk", 2}},
  };
}

// moe_topk_softmax and moe_topk_sigmoid: the same shape of call.
template <class A>
OpDef plain_def(const char* summary, MoeScoring scoring) {
  OpDef d;
  d.name = A::kName;
  d.family = "moe";
  d.level = "L1";
  d.summary = summary;
  d.args_size = sizeof(A);
  d.tensor_args = routing_layout(offsetof(A, topk_weights), offsetof(A, topk_ids), offsetof(A, gating_output));
  // Workload fields: tokens, experts, topk; renormalize (default true); dtype, logit_range, ties.
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const RoutingShape s = routing_shape(w, A::kName);
    OpCase c = begin_case<A>(w, 3);
    c.tensors[0] = Tensor::empty({s.T, s.k}, DType::f32);
    c.tensors[1] = Tensor::empty({s.T, s.k}, DType::i32);
    c.tensors[2] = routing_logits(s, w, seed);
    c.as<A>().renormalize = wl_bool(w, "renormalize", true) ? 1 : 0;
    c.bind(layout);
    return c;
  };
  d.cost = routing_cost<A>;
  d.check_outputs = [scoring](const OpCase& host, const OpCase&, const OpCase& actual) {
    const auto& a = host.as<A>();
    const auto& got = actual.as<A>();
    return check_routing(a.gating_output, TensorView{}, plain_spec(a, scoring), got.topk_weights, got.topk_ids);
  };
  d.test_workloads = plain_test_workloads();
  d.bench_workloads = plain_bench_workloads();
  return d;
}

// The workload of a captured moe_topk_softmax call: the fields make_case reads.
Json topk_softmax_workload_from_call(const void* args) {
  const auto& a = *static_cast<const MoeTopkSoftmaxArgs*>(args);
  return Json{{"tokens", a.gating_output.shape[0]},
              {"experts", a.gating_output.shape[1]},
              {"topk", a.topk_ids.shape[1]},
              {"renormalize", a.renormalize != 0},
              {"dtype", std::string(dtype_name(a.gating_output.dtype))}};
}

OpDef softmax_def() {
  OpDef d = plain_def<MoeTopkSoftmaxArgs>(
      "topk_ids, topk_weights = the k largest of softmax(gating_output) per token (optionally renormalised)",
      MoeScoring::softmax);
  d.workload_from_call = topk_softmax_workload_from_call;
  d.architectures = {"mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};  // where fused_moe runs as its parts
  return d;
}

OpDef sigmoid_def() {
  return plain_def<MoeTopkSigmoidArgs>(
      "topk_ids, topk_weights = the k largest of sigmoid(gating_output) per token (optionally renormalised)",
      MoeScoring::sigmoid);
}

OpDef grouped_def() {
  using A = MoeGroupedTopkArgs;
  OpDef d;
  d.name = A::kName;
  d.family = "moe";
  d.level = "L1";
  d.summary = "DeepSeek grouped top-k: best topk_group of n_group expert groups, then top-k by score + bias";
  d.args_size = sizeof(A);
  d.tensor_args = routing_layout(offsetof(A, topk_weights), offsetof(A, topk_ids), offsetof(A, gating_output));
  d.tensor_args.push_back({"e_score_correction_bias", ArgRole::in, offsetof(A, e_score_correction_bias)});
  // Workload fields: tokens, experts, topk, groups, topk_group; scoring (softmax | sigmoid,
  // default sigmoid); bias (bool, default true); renormalize (default true); scale
  // (routed_scaling_factor, default 1); dtype, logit_range, ties.
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const RoutingShape s = routing_shape(w, A::kName);
    const std::string scoring = wl_string(w, "scoring", "sigmoid");
    FK_CHECK(scoring == "softmax" || scoring == "sigmoid", "moe_grouped_topk workload scoring must be softmax or "
             "sigmoid, got ", w.dump());
    OpCase c = begin_case<A>(w, 4);
    c.tensors[0] = Tensor::empty({s.T, s.k}, DType::f32);
    c.tensors[1] = Tensor::empty({s.T, s.k}, DType::i32);
    c.tensors[2] = routing_logits(s, w, seed);
    c.tensors[3] = wl_bool(w, "bias", true) ? random_tensor({s.E}, DType::f32, seed, 2, -0.5f, 0.5f)
                                             : Tensor::empty({0}, DType::f32);
    A& a = c.as<A>();
    a.n_group = static_cast<int32_t>(wl_int(w, "groups"));
    a.topk_group = static_cast<int32_t>(wl_int(w, "topk_group"));
    a.scoring = scoring == "softmax" ? MoeScoring::softmax : MoeScoring::sigmoid;
    a.renormalize = wl_bool(w, "renormalize", true) ? 1 : 0;
    a.routed_scaling_factor = static_cast<float>(wl_float(w, "scale", 1.0));
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    OpCost cost = routing_cost<A>(c);
    cost.bytes += static_cast<double>(c.as<A>().e_score_correction_bias.nbytes());
    return cost;
  };
  d.check_outputs = [](const OpCase& host, const OpCase&, const OpCase& actual) {
    const auto& a = host.as<A>();
    const auto& got = actual.as<A>();
    return check_routing(a.gating_output, a.e_score_correction_bias, grouped_spec(a), got.topk_weights, got.topk_ids);
  };
  const J ds3 = {{"experts", 256}, {"topk", 8}, {"groups", 8}, {"topk_group", 4}, {"scale", 2.5}};
  d.test_workloads = {
      J{{"tokens", 5}, {"experts", 16}, {"topk", 4}, {"groups", 4}, {"topk_group", 2}, {"scale", 2.5}},
      J{{"tokens", 7}, {"experts", 32}, {"topk", 6}, {"groups", 8}, {"topk_group", 3}, {"scoring", "softmax"},
        {"bias", false}, {"renormalize", false}},
      J{{"tokens", 3}, {"experts", 256}, {"topk", 8}, {"groups", 8}, {"topk_group", 4}, {"scale", 2.5}},
      J{{"tokens", 9}, {"experts", 12}, {"topk", 2}, {"groups", 3}, {"topk_group", 1}, {"ties", true}},
      J{{"tokens", 6}, {"experts", 24}, {"topk", 3}, {"groups", 6}, {"topk_group", 2}, {"bias", false},
        {"ties", true}},
      J{{"tokens", 1}, {"experts", 8}, {"topk", 2}, {"groups", 1}, {"topk_group", 1}, {"scoring", "softmax"}},
      J{{"tokens", 4}, {"experts", 8}, {"topk", 8}, {"groups", 4}, {"topk_group", 4}, {"dtype", "f32"}},  // k = E
      J{{"tokens", 0}, {"experts", 16}, {"topk", 4}, {"groups", 4}, {"topk_group", 2}},
  };
  for (int64_t t : {1, 64, 256, 8192}) {  // DeepSeek-V3
    J w = ds3;
    w["tokens"] = t;
    d.bench_workloads.push_back(w);
  }
  return d;
}

FK_REGISTER_OP(softmax_def);
FK_REGISTER_OP(sigmoid_def);
FK_REGISTER_OP(grouped_def);
FK_REGISTER_IMPL("moe_topk_softmax", cpu, topk_softmax_cpu);
FK_REGISTER_IMPL("moe_topk_sigmoid", cpu, topk_sigmoid_cpu);
FK_REGISTER_IMPL("moe_grouped_topk", cpu, grouped_topk_cpu);

}  // namespace
}  // namespace fk::ops
