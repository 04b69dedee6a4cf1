// rotary_embedding: definition (workloads, inputs, cost) and CPU reference.
#include <algorithm>

#include "fk/ops/rope.h"
#include "ops/rope/rope_call_workload.h"
#include "ops/rope/rope_reference.h"
#include "ops/rope/rope_workload.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = RotaryEmbeddingArgs::kName;

fk_status rotary_embedding_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const RotaryEmbeddingArgs*>(args);
    RopeReferenceCall call;
    call.op = kOp;
    call.shape = validate_rotary_embedding(a, RopeImpl::reference);
    call.positions = a.positions;
    call.query = a.query;
    call.key = a.key;
    call.cos_sin_cache = a.cos_sin_cache;
    call.style = a.style;
    rope_reference(call);
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const RotaryEmbeddingArgs*>(args);
  return rope_call_workload(a.positions, a.query, a.key, a.cos_sin_cache, a.head_size, a.style);
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "rope";
  d.level = "L1";
  d.summary = "rotary position embedding of q and k in place (neox/gptj, partial rotary, strided rows)";
  d.args_size = sizeof(RotaryEmbeddingArgs);
  d.tensor_args = {{"positions", ArgRole::in, offsetof(RotaryEmbeddingArgs, positions)},
                   {"query", ArgRole::inout, offsetof(RotaryEmbeddingArgs, query), RowStride::any},
                   {"key", ArgRole::inout, offsetof(RotaryEmbeddingArgs, key), RowStride::any},
                   {"cos_sin_cache", ArgRole::in, offsetof(RotaryEmbeddingArgs, cos_sin_cache)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const RopeWorkload r = parse_rope_workload(w);
    OpCase c = begin_case<RotaryEmbeddingArgs>(w, 4);
    c.tensors[0] = rope_positions(r, seed, 1);
    c.tensors[1] = rope_heads_tensor(r, r.q_heads, seed, 2);
    c.tensors[2] = rope_heads_tensor(r, r.kv_heads, seed, 3);
    c.tensors[3] = rope_random_cache(r, seed, 4);
    auto& a = c.as<RotaryEmbeddingArgs>();
    a.head_size = static_cast<int32_t>(r.head_size);
    a.style = r.style;
    c.bind(layout);
    return c;
  };
  // Minimal traffic: the rotated dims of q and k read and written once, positions read,
  // one cache row per distinct position (at most min(T, max_pos) of them).
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<RotaryEmbeddingArgs>();
    const double T = static_cast<double>(a.positions.shape[0]);
    const double rot = static_cast<double>(a.cos_sin_cache.shape[1]);
    const double heads = static_cast<double>(a.query.numel() + a.key.numel()) / a.head_size / std::max(T, 1.0);
    const double rows = std::min(T, static_cast<double>(a.cos_sin_cache.shape[0]));
    const double rotated = T * heads * rot;
    return OpCost{2.0 * rotated * a.query.element_size() + T * a.positions.element_size() +
                      rows * rot * a.cos_sin_cache.element_size(),
                  3.0 * rotated, DType::f32};
  };
  // Llama-3.1-8B / Qwen3-8B / Mistral-7B all have 32 query heads, 8 kv heads, head_size 128.
  d.test_workloads = {
      {{"tokens", 1}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}},
      {{"tokens", 33}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"positions", "arange"}},
      {{"tokens", 5}, {"q_heads", 4}, {"kv_heads", 2}, {"head_size", 64}, {"max_pos", 32768}},  // positions up to 32k
      {{"tokens", 7}, {"q_heads", 4}, {"kv_heads", 2}, {"head_size", 64}, {"style", "gptj"}},
      {{"tokens", 3}, {"q_heads", 2}, {"kv_heads", 1}, {"head_size", 256}, {"dtype", "f32"}},
      {{"tokens", 4}, {"q_heads", 2}, {"kv_heads", 2}, {"head_size", 256}, {"dtype", "f16"}, {"style", "gptj"}},
      // partial rotary (factor 0.5 and 0.25)
      {{"tokens", 9}, {"q_heads", 4}, {"kv_heads", 1}, {"head_size", 128}, {"rot_dim", 64}, {"dtype", "f16"}},
      {{"tokens", 6}, {"q_heads", 3}, {"kv_heads", 1}, {"head_size", 128}, {"rot_dim", 32}, {"style", "gptj"}},
      {{"tokens", 5}, {"q_heads", 2}, {"kv_heads", 2}, {"head_size", 64}, {"rot_dim", 32}, {"dtype", "f32"}},
      // shapes off the vector widths (scalar paths): rot_dim/2 or head_size not a multiple of 8
      {{"tokens", 5}, {"q_heads", 3}, {"kv_heads", 1}, {"head_size", 96}, {"rot_dim", 24}, {"style", "gptj"}},
      {{"tokens", 4}, {"q_heads", 2}, {"kv_heads", 1}, {"head_size", 20}, {"dtype", "f16"}},
      {{"tokens", 3}, {"q_heads", 1}, {"kv_heads", 1}, {"head_size", 6}, {"rot_dim", 2}, {"dtype", "f32"}},
      // layouts, position and cache dtypes
      {{"tokens", 8}, {"q_heads", 8}, {"kv_heads", 2}, {"head_size", 128}, {"layout", "3d"}, {"pos_dtype", "i32"}},
      {{"tokens", 6}, {"q_heads", 4}, {"kv_heads", 4}, {"head_size", 64}, {"cache_dtype", "bf16"}},
      {{"tokens", 6}, {"q_heads", 4}, {"kv_heads", 1}, {"head_size", 64}, {"dtype", "f16"}, {"cache_dtype", "f16"},
       {"style", "gptj"}},
      {{"tokens", 2}, {"q_heads", 4}, {"kv_heads", 0}, {"head_size", 64}},  // no key
      {{"tokens", 0}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}},
  };
  d.bench_workloads = {
      {{"tokens", 16384}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"max_pos", 32768}, {"positions", "arange"}},
      {{"tokens", 4096}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"max_pos", 32768}, {"positions", "arange"}},
      {{"tokens", 1}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"max_pos", 32768}},
      {{"tokens", 16}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"max_pos", 32768}},
      {{"tokens", 64}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"max_pos", 32768}},
      {{"tokens", 256}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"max_pos", 32768}},
  };
  d.workload_from_call = workload_from_call;
  // Models without per-head q/k norms, where rope_and_cache runs as its parts.
  d.architectures = {"llama", "mistral", "qwen2", "gemma", "gemma2", "mixtral", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("rotary_embedding", cpu, rotary_embedding_cpu);

}  // namespace
}  // namespace fk::ops
