// qk_norm_rope: definition (workloads, inputs, cost) and CPU reference.
#include <algorithm>

#include "fk/ops/rope.h"
#include "ops/rope/rope_call_workload.h"
#include "ops/rope/rope_reference.h"
#include "ops/rope/rope_workload.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = QkNormRopeArgs::kName;

fk_status qk_norm_rope_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const QkNormRopeArgs*>(args);
    RopeReferenceCall call;
    call.op = kOp;
    call.shape = validate_qk_norm_rope(a, RopeImpl::reference);
    call.positions = a.positions;
    call.query = a.query;
    call.key = a.key;
    call.cos_sin_cache = a.cos_sin_cache;
    call.style = a.style;
    call.q_weight = &a.q_weight;
    call.k_weight = &a.k_weight;
    call.eps = a.eps;
    rope_reference(call);
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const QkNormRopeArgs*>(args);
  return rope_call_workload(a.positions, a.query, a.key, a.cos_sin_cache, a.head_size, a.style);
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "rope";
  d.level = "L2";
  d.summary = "per-head RMSNorm of q and k then rope, fused, in place (Qwen3)";
  d.args_size = sizeof(QkNormRopeArgs);
  d.tensor_args = {{"positions", ArgRole::in, offsetof(QkNormRopeArgs, positions)},
                   {"query", ArgRole::inout, offsetof(QkNormRopeArgs, query), RowStride::any},
                   {"key", ArgRole::inout, offsetof(QkNormRopeArgs, key), RowStride::any},
                   {"q_weight", ArgRole::in, offsetof(QkNormRopeArgs, q_weight)},
                   {"k_weight", ArgRole::in, offsetof(QkNormRopeArgs, k_weight)},
                   {"cos_sin_cache", ArgRole::in, offsetof(QkNormRopeArgs, cos_sin_cache)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const RopeWorkload r = parse_rope_workload(w);
    OpCase c = begin_case<QkNormRopeArgs>(w, 6);
    c.tensors[0] = rope_positions(r, seed, 1);
    c.tensors[1] = rope_heads_tensor(r, r.q_heads, seed, 2);
    c.tensors[2] = rope_heads_tensor(r, r.kv_heads, seed, 3);
    c.tensors[3] = random_tensor({r.head_size}, r.dtype, seed, 4, 0.5f, 1.5f);
    c.tensors[4] = random_tensor({r.head_size}, r.dtype, seed, 5, 0.5f, 1.5f);
    c.tensors[5] = rope_random_cache(r, seed, 6);
    auto& a = c.as<QkNormRopeArgs>();
    a.head_size = static_cast<int32_t>(r.head_size);
    a.style = r.style;
    a.eps = static_cast<float>(wl_float(w, "eps", 1e-6));
    c.bind(layout);
    return c;
  };
  // Minimal traffic: q and k read and written once (whole heads: the norm touches the
  // tail too), weights, positions, one cache row per distinct position.
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<QkNormRopeArgs>();
    const double T = static_cast<double>(a.positions.shape[0]);
    const double D = a.head_size, rot = static_cast<double>(a.cos_sin_cache.shape[1]);
    const double elements = static_cast<double>(a.query.numel() + a.key.numel());
    const double rows = std::min(T, static_cast<double>(a.cos_sin_cache.shape[0]));
    const double bytes = 2.0 * elements * a.query.element_size() + 2.0 * D * a.q_weight.element_size() +
                         T * a.positions.element_size() + rows * rot * a.cos_sin_cache.element_size();
    return OpCost{bytes, elements * 4.0 + elements / D * rot * 3.0, DType::f32};
  };
  // Qwen3-8B: 32 query heads, 8 kv heads, head_size 128, neox, eps 1e-6.
  d.test_workloads = {
      {{"tokens", 1}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}},
      {{"tokens", 17}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"positions", "arange"}},
      {{"tokens", 5}, {"q_heads", 4}, {"kv_heads", 2}, {"head_size", 64}, {"max_pos", 32768}},  // positions up to 32k
      {{"tokens", 6}, {"q_heads", 4}, {"kv_heads", 2}, {"head_size", 64}, {"style", "gptj"}, {"dtype", "f16"}},
      {{"tokens", 3}, {"q_heads", 2}, {"kv_heads", 1}, {"head_size", 256}, {"dtype", "f32"}},
      {{"tokens", 7}, {"q_heads", 4}, {"kv_heads", 1}, {"head_size", 128}, {"rot_dim", 64}},  // partial: tail normed only
      {{"tokens", 4}, {"q_heads", 2}, {"kv_heads", 2}, {"head_size", 128}, {"rot_dim", 32}, {"style", "gptj"},
       {"dtype", "f32"}},
      {{"tokens", 5}, {"q_heads", 3}, {"kv_heads", 1}, {"head_size", 96}, {"rot_dim", 24}},  // scalar path
      {{"tokens", 3}, {"q_heads", 2}, {"kv_heads", 1}, {"head_size", 20}, {"dtype", "f16"}},
      {{"tokens", 8}, {"q_heads", 8}, {"kv_heads", 2}, {"head_size", 128}, {"layout", "3d"}, {"pos_dtype", "i32"},
       {"eps", 1e-5}},
      {{"tokens", 4}, {"q_heads", 4}, {"kv_heads", 4}, {"head_size", 64}, {"cache_dtype", "bf16"}},
      {{"tokens", 2}, {"q_heads", 4}, {"kv_heads", 0}, {"head_size", 64}},
      {{"tokens", 0}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}},
  };
  d.bench_workloads = {
      {{"tokens", 16384}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"max_pos", 32768}, {"positions", "arange"}},
      {{"tokens", 4096}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"max_pos", 32768}, {"positions", "arange"}},
      {{"tokens", 1}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"max_pos", 32768}},
      {{"tokens", 64}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"max_pos", 32768}},
      {{"tokens", 256}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"max_pos", 32768}},
  };
  d.workload_from_call = workload_from_call;
  // Models with per-head q/k norms, where rope_and_cache runs as its parts. No covers: the
  // per-head norm has no op of its own.
  d.architectures = {"qwen3", "qwen3_moe", "gemma3"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("qk_norm_rope", cpu, qk_norm_rope_cpu);

}  // namespace
}  // namespace fk::ops
