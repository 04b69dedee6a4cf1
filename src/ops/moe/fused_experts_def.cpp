// fused_experts: definition (workloads, inputs, cost, tolerance) and CPU reference.
#include <cmath>

#include "ops/common/case_builder.h"
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

// One expert weight tensor [E, rows, cols] with values of rms ~ 1.15 / sqrt(cols) (so
// that every projection keeps its input's size), and its block scales when fp8: fp8
// values spread over [-4, 4], scales around 1 / (2 sqrt(cols)).
void expert_weight(OpCase& c, size_t slot, size_t scale_slot, int64_t E, int64_t rows, int64_t cols, DType dt,
                   uint64_t seed, uint64_t stream) {
  const auto inv_sqrt = static_cast<float>(1.0 / std::sqrt(static_cast<double>(cols)));
  if (dt == DType::f8e4m3fn) {
    c.tensors[slot] = random_tensor({E, rows, cols}, dt, seed, stream, -4.f, 4.f);
    c.tensors[scale_slot] =
        random_tensor({E, (rows + 127) / 128, (cols + 127) / 128}, DType::f32, seed, stream + 1, 0.25f * inv_sqrt,
                      0.75f * inv_sqrt);
  } else {
    c.tensors[slot] = random_tensor({E, rows, cols}, dt, seed, stream, -2.f * inv_sqrt, 2.f * inv_sqrt);
    c.tensors[scale_slot] = Tensor::empty({0}, DType::f32);
  }
}

// Workload fields: tokens, topk, experts, hidden, inter (expert intermediate size);
// dtype (activations: bf16 | f16, default bf16); weight_dtype (the activation dtype, or
// f8e4m3fn: block-scaled fp8 weights); routing (moe_case.h, default uniform). Routing
// weights are uniform in [0, 1).
OpCase make_case(const std::vector<TensorArg>& layout, const Json& w, uint64_t seed) {
  const int64_t T = wl_int(w, "tokens"), k = wl_int(w, "topk"), E = wl_int(w, "experts"), H = wl_int(w, "hidden"),
                I = wl_int(w, "inter");
  FK_CHECK(T >= 0 && k >= 1 && k <= E && H >= 1 && I >= 1, "fused_experts workload needs tokens >= 0, "
           "1 <= topk <= experts, hidden >= 1 and inter >= 1, got ", w.dump());
  const DType dt = wl_dtype(w);
  FK_CHECK(dt == DType::bf16 || dt == DType::f16, "fused_experts workload dtype must be bf16 or f16, got ", w.dump());
  const DType wdt = wl_dtype(w, "weight_dtype", dt);
  FK_CHECK(wdt == dt || wdt == DType::f8e4m3fn, "fused_experts workload weight_dtype must be the dtype or f8e4m3fn, "
           "got ", w.dump());
  OpCase c = begin_case<A>(w, 9);
  c.tensors[0] = Tensor::empty({T, H}, dt);
  c.tensors[1] = random_tensor({T, H}, dt, seed, 1, -2.f, 2.f);
  expert_weight(c, 2, 4, E, 2 * I, H, wdt, seed, 2);
  expert_weight(c, 3, 5, E, H, I, wdt, seed, 4);
  c.tensors[6] = random_tensor({T, k}, DType::f32, seed, 6, 0.f, 1.f);
  c.tensors[7] = make_topk_ids(T, k, E, routing_pattern(w), seed, 7);
  c.tensors[8] = Tensor::empty({fused_experts_workspace_bytes(T, k, E, H, I)}, DType::u8);
  c.bind(layout);
  return c;
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
  // Minimal traffic: the weights of the experts the case's routing touches (each read
  // once), the activations in and out and the routing. Flops: the three projections of
  // every routed slot.
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const int64_t E = a.w13.shape[0], H = a.w13.shape[2], I = a.w13.shape[1] / 2;
    const double per_expert =
        static_cast<double>(a.w13.nbytes() + a.w2.nbytes() + a.w13_scale.nbytes() + a.w2_scale.nbytes()) /
        static_cast<double>(E);
    int64_t slots = 0;
    const int64_t n = a.topk_ids.numel();
    for (int64_t i = 0; i < n; ++i) {
      const int32_t e = static_cast<const int32_t*>(a.topk_ids.data)[i];
      slots += e >= 0 && e < E;
    }
    const double bytes = static_cast<double>(distinct_experts(a.topk_ids, E)) * per_expert +
                         static_cast<double>(a.hidden.nbytes() + a.out.nbytes() + a.topk_ids.nbytes() +
                                             a.topk_weights.nbytes());
    const double flops = 2.0 * static_cast<double>(slots) * 3.0 * static_cast<double>(H) * static_cast<double>(I);
    return OpCost{bytes, flops, a.hidden.dtype};
  };
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
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("fused_experts", cpu, fused_experts_cpu);

}  // namespace
}  // namespace fk::ops
