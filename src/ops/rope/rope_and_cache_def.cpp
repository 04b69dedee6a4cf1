// rope_and_cache: definition (workloads, inputs, cost) and CPU reference, which is the
// references of the two ops it fuses in order: rope_reference (with or without the
// per-head norm), then the KV-cache write of reshape_and_cache.
#include <algorithm>

#include "fk/ops/rope.h"
#include "ops/rope/rope_and_cache_composed.h"
#include "ops/rope/rope_call_workload.h"
#include "ops/kv_cache/kv_cache_reference.h"
#include "ops/rope/rope_reference.h"
#include "ops/rope/rope_workload.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = RopeAndCacheArgs::kName;

fk_status rope_and_cache_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const RopeAndCacheArgs*>(args);
    RopeReferenceCall call;
    call.op = kOp;
    call.shape = validate_rope_and_cache(a, RopeImpl::reference);
    // Bad slots are reported before the rotation writes anything (rope_reference checks
    // the positions before it writes).
    check_cache_slots(kOp, a.slot_mapping, a.k_cache.shape[0], a.k_cache.shape[1]);
    call.positions = a.positions;
    call.query = a.query;
    call.key = a.key;
    call.cos_sin_cache = a.cos_sin_cache;
    call.style = a.style;
    if (arg_present(a.q_weight)) {
      call.q_weight = &a.q_weight;
      call.k_weight = &a.k_weight;
      call.eps = a.eps;
    }
    rope_reference(call);
    const auto copy = [](double x) { return x; };
    write_cache_reference(a.key, a.value, a.k_cache, a.v_cache, a.slot_mapping, copy, copy);
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const RopeAndCacheArgs*>(args);
  Json w = rope_call_workload(a.positions, a.query, a.key, a.cos_sin_cache, a.head_size, a.style);
  w["norm"] = arg_present(a.q_weight);
  w["page_size"] = a.k_cache.shape[1];
  w["num_pages"] = a.k_cache.shape[0];
  return w;
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "rope";
  d.level = "L2";
  d.summary = "rope (optionally with per-head q/k RMSNorm) then the paged KV-cache write of k and v, fused";
  d.args_size = sizeof(RopeAndCacheArgs);
  // q, k and v are slices of a packed qkv (any token stride); the caches may have padded pages.
  d.tensor_args = {{"positions", ArgRole::in, offsetof(RopeAndCacheArgs, positions)},
                   {"query", ArgRole::inout, offsetof(RopeAndCacheArgs, query), RowStride::any},
                   {"key", ArgRole::inout, offsetof(RopeAndCacheArgs, key), RowStride::any},
                   {"value", ArgRole::in, offsetof(RopeAndCacheArgs, value), RowStride::any},
                   {"q_weight", ArgRole::in, offsetof(RopeAndCacheArgs, q_weight)},
                   {"k_weight", ArgRole::in, offsetof(RopeAndCacheArgs, k_weight)},
                   {"cos_sin_cache", ArgRole::in, offsetof(RopeAndCacheArgs, cos_sin_cache)},
                   {"k_cache", ArgRole::inout, offsetof(RopeAndCacheArgs, k_cache), RowStride::any},
                   {"v_cache", ArgRole::inout, offsetof(RopeAndCacheArgs, v_cache), RowStride::any},
                   {"slot_mapping", ArgRole::in, offsetof(RopeAndCacheArgs, slot_mapping)}};
  // Workload fields: those of the rope ops (rope_workload.h; key and value are always
  // [T, Hk, D]), and norm [false] (q/k weights), page_size [16], num_pages [enough for
  // the tokens, at least 2], padding [0] (tokens with slot -1).
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const RopeWorkload r = parse_rope_workload(w);
    const bool norm = wl_bool(w, "norm", false);
    const int64_t T = r.tokens, Hk = r.kv_heads, D = r.head_size;
    const int64_t S = wl_int(w, "page_size", 16);
    const int64_t P = wl_int(w, "num_pages", std::max<int64_t>(2, (T + S - 1) / S + 1));
    const int64_t padding = wl_int(w, "padding", 0);
    FK_CHECK(Hk >= 1 && S >= 1 && P >= 1 && padding >= 0 && padding <= T && T <= P * S,
             "rope_and_cache workload needs kv_heads >= 1, positive page_size / num_pages, 0 <= padding <= tokens "
             "and tokens <= num_pages * page_size, got ", w.dump());
    OpCase c = begin_case<RopeAndCacheArgs>(w, 10);
    c.tensors[0] = rope_positions(r, seed, 1);
    c.tensors[1] = rope_heads_tensor(r, r.q_heads, seed, 2);
    c.tensors[2] = random_tensor({T, Hk, D}, r.dtype, seed, 3, -2.f, 2.f);
    c.tensors[3] = random_tensor({T, Hk, D}, r.dtype, seed, 4, -2.f, 2.f);
    c.tensors[4] = norm ? random_tensor({D}, r.dtype, seed, 5, 0.5f, 1.5f) : Tensor::empty({0}, r.dtype);
    c.tensors[5] = norm ? random_tensor({D}, r.dtype, seed, 6, 0.5f, 1.5f) : Tensor::empty({0}, r.dtype);
    c.tensors[6] = rope_random_cache(r, seed, 7);
    c.tensors[7] = random_tensor({P, S, Hk, D}, r.dtype, seed, 8, -1.f, 1.f);  // old contents must survive
    c.tensors[8] = random_tensor({P, S, Hk, D}, r.dtype, seed, 9, -1.f, 1.f);
    c.tensors[9] = make_slot_mapping(T, P * S, padding, seed);
    auto& a = c.as<RopeAndCacheArgs>();
    a.head_size = static_cast<int32_t>(D);
    a.style = r.style;
    a.eps = static_cast<float>(wl_float(w, "eps", 1e-6));
    c.bind(layout);
    return c;
  };
  // Minimal traffic: q and k read and written once, v read once, k and v written once to
  // the cache per token with a slot, weights, positions, slots, one cos/sin row per
  // distinct position.
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<RopeAndCacheArgs>();
    const double T = static_cast<double>(a.positions.shape[0]);
    const double rot = static_cast<double>(a.cos_sin_cache.shape[1]);
    const double es = a.query.element_size();
    const double q = static_cast<double>(a.query.numel()), kv = static_cast<double>(a.key.numel());
    double written = 0;
    for (int64_t t = 0; t < a.slot_mapping.shape[0]; ++t) written += get_index(a.slot_mapping, t) >= 0;
    const double head_elems = static_cast<double>(a.key.shape[1] * a.key.shape[2]);
    const double rows = std::min(T, static_cast<double>(a.cos_sin_cache.shape[0]));
    const double bytes = (2.0 * (q + kv) + kv + 2.0 * written * head_elems) * es +
                         2.0 * static_cast<double>(a.q_weight.nbytes()) + T * a.positions.element_size() +
                         static_cast<double>(a.slot_mapping.nbytes()) + rows * rot * a.cos_sin_cache.element_size();
    const double D = a.head_size;
    return OpCost{bytes, (q + kv) * 4.0 + (q + kv) / D * rot * 3.0, DType::f32};
  };
  using J = Json;
  auto qwen3 = [](int64_t tokens) {  // Qwen3-30B-A3B: 32 query / 4 KV heads of 128, q/k norms
    return J{{"tokens", tokens}, {"q_heads", 32}, {"kv_heads", 4}, {"head_size", 128}, {"norm", true},
             {"max_pos", 32768}};
  };
  auto llama = [](int64_t tokens) {  // Llama-3.1-8B: 32 / 8 heads of 128, no norms
    return J{{"tokens", tokens}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"max_pos", 32768}};
  };
  d.test_workloads = {
      qwen3(1),
      llama(1),
      J{{"tokens", 17}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"positions", "arange"}, {"padding", 3}},
      J{{"tokens", 9}, {"q_heads", 8}, {"kv_heads", 2}, {"head_size", 128}, {"norm", true}, {"layout", "3d"},
        {"pos_dtype", "i32"}, {"page_size", 1}, {"num_pages", 12}},
      J{{"tokens", 6}, {"q_heads", 4}, {"kv_heads", 2}, {"head_size", 64}, {"style", "gptj"}, {"dtype", "f16"}},
      J{{"tokens", 5}, {"q_heads", 4}, {"kv_heads", 2}, {"head_size", 64}, {"style", "gptj"}, {"norm", true},
        {"max_pos", 32768}},
      J{{"tokens", 3}, {"q_heads", 2}, {"kv_heads", 1}, {"head_size", 256}, {"dtype", "f16"}, {"norm", true}},
      // Partial rotary: the tail dims go to the cache as they are (normalised with the norm).
      J{{"tokens", 7}, {"q_heads", 4}, {"kv_heads", 1}, {"head_size", 128}, {"rot_dim", 64}},
      J{{"tokens", 7}, {"q_heads", 4}, {"kv_heads", 2}, {"head_size", 128}, {"rot_dim", 64}, {"norm", true}},
      J{{"tokens", 4}, {"q_heads", 2}, {"kv_heads", 2}, {"head_size", 128}, {"rot_dim", 32}, {"style", "gptj"},
        {"dtype", "f16"}},
      // Shapes the vector kernel does not take: the scalar kernel.
      J{{"tokens", 5}, {"q_heads", 3}, {"kv_heads", 1}, {"head_size", 96}, {"rot_dim", 24}, {"norm", true}},
      J{{"tokens", 3}, {"q_heads", 2}, {"kv_heads", 1}, {"head_size", 20}, {"dtype", "f16"}, {"padding", 1}},
      J{{"tokens", 4}, {"q_heads", 4}, {"kv_heads", 4}, {"head_size", 64}, {"cache_dtype", "bf16"}, {"page_size", 8}},
      J{{"tokens", 6}, {"q_heads", 4}, {"kv_heads", 2}, {"head_size", 64}, {"padding", 6}},
      J{{"tokens", 0}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}},
  };
  d.bench_workloads = {qwen3(1), llama(1), qwen3(4), llama(64), llama(16384)};
  d.bench_workloads.back()["positions"] = "arange";
  d.workload_from_call = workload_from_call;
  // Its parts: with a candidate for any of them (or the variant "unfused"), the registry
  // runs rope_and_cache_composed instead (OpRegistry::call).
  d.covers = {"rotary_embedding", "qk_norm_rope", "reshape_and_cache"};
  d.composed[static_cast<int>(DeviceType::cpu)] = rope_and_cache_composed<DeviceType::cpu>;
  d.composed[static_cast<int>(DeviceType::cuda)] = rope_and_cache_composed<DeviceType::cuda>;
  d.architectures = {"llama",  "mistral", "qwen2",     "qwen3",     "gemma", "gemma2",
                     "gemma3", "mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("rope_and_cache", cpu, rope_and_cache_cpu);

}  // namespace
}  // namespace fk::ops
