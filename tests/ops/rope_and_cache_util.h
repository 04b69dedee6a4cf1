// Helpers of the rope_and_cache tests: the engine's layout (q, k and v as views of one
// fused qkv buffer, the caches as the two halves of one paged KV buffer), the fused op's
// arguments over it, and the two ops it stands for (rope, then reshape_and_cache) over a
// copy of it, so that a test can compare the buffers after each.
#pragma once
#include <gtest/gtest.h>

#include <cstring>

#include "fk/op_registry.h"
#include "fk/ops/kv_cache.h"
#include "fk/ops/rope.h"
#include "ops/common/case_builder.h"
#include "ops/kv_cache/kv_cache_reference.h"

namespace fk::test {

struct RopeCacheLayout {
  int64_t T, Hq, Hk, D, rot, S, P;
  bool norm;
  ops::RopeStyle style = ops::RopeStyle::neox;
  DType dtype = DType::bf16;
  int64_t padding = 0;  // tokens without a slot
};

struct RopeCacheBuffers {
  Tensor qkv;        // [T, (Hq + 2 Hk) * D]
  Tensor kv;         // [P, 2, S, Hk, D]: k_cache and v_cache
  Tensor positions;  // [T] i64
  Tensor slots;      // [T] i64
  Tensor cos_sin;    // [4096, rot] f32
  Tensor q_weight, k_weight;  // [D], or empty without the norm

  RopeCacheBuffers to(Device d) const {
    auto copy = [&](const Tensor& t) { return t.numel() > 0 ? t.to(d) : Tensor::empty({0}, t.dtype(), d); };
    return {copy(qkv), copy(kv), copy(positions), copy(slots), copy(cos_sin), copy(q_weight), copy(k_weight)};
  }
};

inline RopeCacheBuffers make_rope_cache_buffers(const RopeCacheLayout& l, uint64_t seed) {
  constexpr int64_t kMaxPos = 4096;
  RopeCacheBuffers b;
  b.qkv = ops::random_tensor({l.T, (l.Hq + 2 * l.Hk) * l.D}, l.dtype, seed, 1, -2.f, 2.f);
  b.kv = ops::random_tensor({l.P, 2, l.S, l.Hk, l.D}, l.dtype, seed, 2, -1.f, 1.f);
  b.positions = ops::random_int_tensor({l.T}, DType::i64, seed, 3, 0, kMaxPos);
  b.slots = ops::make_slot_mapping(l.T, l.P * l.S, l.padding, seed);
  b.cos_sin = ops::random_tensor({kMaxPos, l.rot}, DType::f32, seed, 4, -1.f, 1.f);
  b.q_weight = l.norm ? ops::random_tensor({l.D}, l.dtype, seed, 5, 0.5f, 1.5f) : Tensor::empty({0}, l.dtype);
  b.k_weight = l.norm ? ops::random_tensor({l.D}, l.dtype, seed, 6, 0.5f, 1.5f) : Tensor::empty({0}, l.dtype);
  return b;
}

inline TensorView qkv_part(const RopeCacheLayout& l, const Tensor& qkv, int64_t first_head, int64_t heads) {
  TensorView v = make_view(qkv.view().element_ptr(first_head * l.D), {l.T, heads, l.D}, qkv.dtype(), qkv.device());
  v.strides[0] = (l.Hq + 2 * l.Hk) * l.D;
  return v;
}

inline TensorView cache_half(const RopeCacheLayout& l, const Tensor& kv, int64_t half) {
  TensorView v = make_view(kv.view().element_ptr(half * l.S * l.Hk * l.D), {l.P, l.S, l.Hk, l.D}, kv.dtype(),
                           kv.device());
  v.strides[0] = 2 * l.S * l.Hk * l.D;
  return v;
}

inline ops::RopeAndCacheArgs rope_and_cache_args(const RopeCacheLayout& l, const RopeCacheBuffers& b) {
  ops::RopeAndCacheArgs a{};
  a.positions = b.positions;
  a.query = qkv_part(l, b.qkv, 0, l.Hq);
  a.key = qkv_part(l, b.qkv, l.Hq, l.Hk);
  a.value = qkv_part(l, b.qkv, l.Hq + l.Hk, l.Hk);
  a.q_weight = b.q_weight;
  a.k_weight = b.k_weight;
  a.cos_sin_cache = b.cos_sin;
  a.k_cache = cache_half(l, b.kv, 0);
  a.v_cache = cache_half(l, b.kv, 1);
  a.slot_mapping = b.slots;
  a.head_size = static_cast<int32_t>(l.D);
  a.style = l.style;
  a.eps = 1e-6f;
  return a;
}

// rotary_embedding (qk_norm_rope with the norm), then reshape_and_cache: what the fused op
// stands for, on the same buffers.
inline void run_rope_then_cache(const RopeCacheLayout& l, const RopeCacheBuffers& b, DeviceType backend) {
  const ops::RopeAndCacheArgs a = rope_and_cache_args(l, b);
  if (l.norm) {
    call_op(ops::QkNormRopeArgs{a.positions, a.query, a.key, a.q_weight, a.k_weight, a.cos_sin_cache, a.head_size,
                                a.style, a.eps},
            backend, nullptr);
  } else {
    call_op(ops::RotaryEmbeddingArgs{a.positions, a.query, a.key, a.cos_sin_cache, a.head_size, a.style}, backend,
            nullptr);
  }
  call_op(ops::ReshapeAndCacheArgs{a.key, a.value, a.k_cache, a.v_cache, a.slot_mapping, TensorView{}, TensorView{}},
          backend, nullptr);
}

inline bool same_bytes(const Tensor& a, const Tensor& b) {
  const Tensor ha = a.to(Device::cpu()), hb = b.to(Device::cpu());
  return ha.nbytes() == hb.nbytes() && std::memcmp(ha.data(), hb.data(), ha.nbytes()) == 0;
}

}  // namespace fk::test
