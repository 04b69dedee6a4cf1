// fused_experts_swigluoai (fk/ops/moe_swigluoai.h): definition (workloads, inputs, cost)
// and the CPU reference in double. Workload fields: those of fused_experts (moe_case.h:
// tokens, topk, experts, hidden, inter, dtype, routing; no fp8), plus alpha (1.702) and
// limit (7.0). Biases are uniform in [-0.5, 0.5); a small limit clamps most gates and ups.
#include <cmath>

#include "fk/element.h"
#include "ops/common/case_builder.h"
#include "ops/moe/moe_case.h"
#include "ops/moe/swigluoai_experts_reference.h"

namespace fk::ops {

void swigluoai_experts_reference(const FusedExpertsSwigluOaiArgs& a, const SwigluOaiShape& s) {
  std::vector<double> act(static_cast<size_t>(s.I)), sum(static_cast<size_t>(s.H));
  for (int64_t t = 0; t < s.T; ++t) {
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t j = 0; j < s.k; ++j) {
      const int64_t e = get_index(a.topk_ids, t, j);
      if (e < 0 || e >= s.E) continue;  // routed nowhere
      const double weight = get(a.topk_weights, t, j);
      for (int64_t i = 0; i < s.I; ++i) {
        double g = get(a.w13_bias, e, i), u = get(a.w13_bias, e, s.I + i);
        for (int64_t h = 0; h < s.H; ++h) {
          const double x = get(a.hidden, t, h);
          g += get(a.w13, e, i, h) * x;
          u += get(a.w13, e, s.I + i, h) * x;
        }
        g = std::min(g, static_cast<double>(a.limit));
        u = std::clamp(u, -static_cast<double>(a.limit), static_cast<double>(a.limit));
        act[static_cast<size_t>(i)] = (u + 1.0) * g / (1.0 + std::exp(-static_cast<double>(a.alpha) * g));
      }
      for (int64_t h = 0; h < s.H; ++h) {
        double y = get(a.w2_bias, e, h);
        for (int64_t i = 0; i < s.I; ++i) y += get(a.w2, e, h, i) * act[static_cast<size_t>(i)];
        sum[static_cast<size_t>(h)] += weight * y;
      }
    }
    for (int64_t h = 0; h < s.H; ++h) set(a.out, sum[static_cast<size_t>(h)], t, h);
  }
}

namespace {

using A = FusedExpertsSwigluOaiArgs;

fk_status swigluoai_experts_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    swigluoai_experts_reference(a, validate_fused_experts_swigluoai(a, DeviceType::cpu));
  });
}

OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const ExpertsWorkload s = experts_workload(w, A::kName);
  FK_CHECK(s.weight_dtype == s.dtype, A::kName, " workload: weight_dtype must be the activation dtype (",
           dtype_name(s.dtype), "), got ", w.dump());
  OpCase c = begin_case<A>(w, 9);
  c.tensors[0] = Tensor::empty({s.T, s.H}, s.dtype);
  // hidden, w13 and w2 as fused_experts draws them (its scale slots are the bias slots here,
  // which it leaves empty for 16-bit weights and which are drawn next).
  make_expert_inputs(c, {1, 2, 4, 3, 5}, s, seed);
  c.tensors[3] = random_tensor({s.E, 2 * s.I}, s.dtype, seed, 13, -0.5f, 0.5f);
  c.tensors[5] = random_tensor({s.E, s.H}, s.dtype, seed, 15, -0.5f, 0.5f);
  c.tensors[6] = random_tensor({s.T, s.k}, DType::f32, seed, 6, 0.f, 1.f);
  c.tensors[7] = make_topk_ids(s.T, s.k, s.E, routing_pattern(w), seed, 7);
  c.tensors[8] = Tensor::empty({fused_experts_swigluoai_workspace_bytes(s.T, s.k, s.I)}, DType::u8);
  c.bind(layout);
  auto& a = c.as<A>();
  a.alpha = static_cast<float>(wl_float(w, "alpha", kSwigluOaiAlpha));
  a.limit = static_cast<float>(wl_float(w, "limit", kSwigluOaiLimit));
  return c;
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  return Json{{"tokens", a.hidden.shape[0]}, {"topk", a.topk_ids.shape[1]}, {"experts", a.w13.shape[0]},
              {"hidden", a.hidden.shape[1]},  {"inter", a.w13.shape[1] / 2}, {"dtype", std::string(dtype_name(a.hidden.dtype))},
              {"alpha", a.alpha},             {"limit", a.limit}};
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "moe";
  d.level = "L2";
  d.summary = "out = sum_j topk_weights[:, j] * (w2[e] @ ((clamp(u) + 1) * g * sigmoid(alpha g)) + b2[e]), "
              "g, u = w13[e] @ x + b13[e], g = min(g, limit) (gpt-oss's biased experts, clamped SwiGLU)";
  d.args_size = sizeof(A);
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out)},
                   {"hidden", ArgRole::in, offsetof(A, hidden), RowStride::any},
                   {"w13", ArgRole::in, offsetof(A, w13)},
                   {"w13_bias", ArgRole::in, offsetof(A, w13_bias)},
                   {"w2", ArgRole::in, offsetof(A, w2)},
                   {"w2_bias", ArgRole::in, offsetof(A, w2_bias)},
                   {"topk_weights", ArgRole::in, offsetof(A, topk_weights)},
                   {"topk_ids", ArgRole::in, offsetof(A, topk_ids)},
                   {"workspace", ArgRole::workspace, offsetof(A, workspace)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) { return make_case(layout, w, seed); };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double T = static_cast<double>(a.hidden.shape[0]), H = static_cast<double>(a.hidden.shape[1]),
                 I = static_cast<double>(a.w13.shape[1] / 2), k = static_cast<double>(a.topk_ids.shape[1]),
                 E = static_cast<double>(a.w13.shape[0]), es = static_cast<double>(a.hidden.element_size());
    // Each expert's weights read once at most (min(E, T k) experts hit), activations in and out.
    const double experts_hit = std::min(E, T * k);
    const double bytes = experts_hit * (3.0 * H * I + 2.0 * I + H) * es + 2.0 * T * H * es + T * k * 8.0;
    return OpCost{bytes, T * k * (6.0 * H * I + 10.0 * I), a.hidden.dtype};
  };
  using J = Json;
  d.test_workloads = {
      J{{"tokens", 1}, {"topk", 2}, {"experts", 4}, {"hidden", 64}, {"inter", 32}},
      J{{"tokens", 7}, {"topk", 4}, {"experts", 8}, {"hidden", 72}, {"inter", 40}},
      J{{"tokens", 13}, {"topk", 2}, {"experts", 6}, {"hidden", 40}, {"inter", 24}, {"routing", "skewed"}},
      J{{"tokens", 9}, {"topk", 2}, {"experts", 4}, {"hidden", 64}, {"inter", 32}, {"routing", "dropped"}},
      J{{"tokens", 5}, {"topk", 2}, {"experts", 4}, {"hidden", 48}, {"inter", 16}, {"limit", 0.75}},  // clamped
      J{{"tokens", 6}, {"topk", 3}, {"experts", 5}, {"hidden", 80}, {"inter", 56}, {"dtype", "f16"}},
      J{{"tokens", 3}, {"topk", 1}, {"experts", 3}, {"hidden", 33}, {"inter", 5}, {"alpha", 1.0}},
      J{{"tokens", 0}, {"topk", 4}, {"experts", 4}, {"hidden", 64}, {"inter", 32}},
  };
  // gpt-oss-120b (128 experts, top-4, hidden 2880, expert intermediate 2880) and gpt-oss-20b
  // (32 experts): decode batches and prefill chunks.
  for (int64_t t : {1, 64, 256, 2048})
    d.bench_workloads.push_back({{"tokens", t}, {"topk", 4}, {"experts", 128}, {"hidden", 2880}, {"inter", 2880}});
  for (int64_t t : {1, 64})
    d.bench_workloads.push_back({{"tokens", t}, {"topk", 4}, {"experts", 32}, {"hidden", 2880}, {"inter", 2880}});
  d.workload_from_call = workload_from_call;
  d.architectures = {"gpt_oss"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("fused_experts_swigluoai", cpu, swigluoai_experts_cpu);

}  // namespace
}  // namespace fk::ops
