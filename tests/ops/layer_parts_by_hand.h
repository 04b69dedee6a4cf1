// What the layer ops' tests share (decoder_layer, moe_layer, gpt_oss_layer): a deep copy of
// a case, a bitwise comparison, and the attention half of a layer written out as an engine
// calls its ops, for the tests that hold a layer's baseline to its parts called by hand.
#pragma once
#include <gtest/gtest.h>

#include <cstring>

#include "fk/op_registry.h"
#include "fk/ops/attention.h"
#include "fk/ops/linear.h"
#include "fk/ops/rope.h"

namespace fk::ops::layer_test {

inline OpCase clone_case(const OpDef& def, const OpCase& c) {
  OpCase copy = c;
  for (Tensor& t : copy.tensors)
    if (t.defined()) t = t.clone();
  copy.bind(def.tensor_args);
  return copy;
}

inline bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// [T, n, D] heads of a packed [T, columns] matrix from `column` on.
inline TensorView heads_of(const TensorView& m, int64_t column, int64_t n, int64_t D) {
  TensorView h = m;
  h.data = m.element_ptr(column);
  h.rank = 3;
  h.shape[1] = n;
  h.shape[2] = D;
  h.strides[1] = D;
  h.strides[2] = 1;
  return h;
}

// The input norm fused into the QKV projection (rms_norm_linear; its add on every layer but
// the first), rope with the q / k norms and the cache write (rope_and_cache), then the
// decode or prefill attention into attn_out (and lse where given), each a registry call on
// the CPU, as an engine makes them.
template <class Args>
void qkv_and_attention_by_hand(const Args& a, const TensorView& q_norm, const TensorView& k_norm,
                               const TensorView& lse) {
  const DeviceType cpu = DeviceType::cpu;
  const int64_t T = a.hidden.shape[0], Hq = a.num_heads, Hk = a.num_kv_heads, D = a.head_dim;
  const TensorView q = heads_of(a.qkv, 0, Hq, D), k = heads_of(a.qkv, Hq * D, Hk, D),
                   v = heads_of(a.qkv, (Hq + Hk) * D, Hk, D), out = heads_of(a.attn_out, 0, Hq, D);
  const TensorView none{};
  if (a.first_layer)
    call_op(RmsNormLinearArgs{a.qkv, a.normed, none, a.hidden, none, a.input_norm, a.qkv_weight, a.qkv_bias, a.eps},
            cpu, nullptr);
  else
    call_op(RmsNormLinearArgs{a.qkv, a.normed, a.residual_mid, a.hidden, a.residual, a.input_norm, a.qkv_weight,
                              a.qkv_bias, a.eps},
            cpu, nullptr);
  call_op(RopeAndCacheArgs{a.positions, q, k, v, q_norm, k_norm, a.cos_sin_cache, a.k_cache, a.v_cache,
                           a.slot_mapping, a.head_dim, a.rope_style, a.eps},
          cpu, nullptr);
  if (T == a.kv_indptr.shape[0] - 1)
    call_op(BatchDecodePagedAttentionArgs{out, lse, q, a.k_cache, a.v_cache, a.kv_indptr, a.kv_indices,
                                          a.kv_last_page_len, a.kv_indptr_host, a.kv_last_page_len_host,
                                          a.float_workspace, a.int_workspace, a.host_int_workspace, a.plan_info,
                                          a.sm_scale, 0.f, a.window_left, a.cuda_graph},
            cpu, nullptr);
  else
    call_op(BatchPrefillPagedAttentionArgs{out, lse, q, a.k_cache, a.v_cache, a.qo_indptr, a.kv_indptr, a.kv_indices,
                                           a.kv_last_page_len, a.qo_indptr_host, a.kv_indptr_host,
                                           a.kv_last_page_len_host, a.float_workspace, a.int_workspace,
                                           a.host_int_workspace, a.plan_info, a.sm_scale, 0.f, a.window_left, 1,
                                           a.cuda_graph},
            cpu, nullptr);
}

// On every test workload of the op, its CPU baseline leaves the bits `by_hand(args)` leaves
// in every tensor it updates.
template <class Args, class ByHand>
void expect_baseline_is_parts_by_hand(const OpDef& def, uint64_t seed, ByHand by_hand) {
  for (const Json& w : def.test_workloads) {
    const OpCase c = def.make_case(w, seed);
    OpCase hand = clone_case(def, c), baseline = clone_case(def, c);
    by_hand(hand.template as<Args>());
    ASSERT_EQ(OpRegistry::global().baseline(def.name, DeviceType::cpu)(baseline.args_ptr(), nullptr), FK_OK)
        << last_error_message();
    for (size_t i = 0; i < def.tensor_args.size(); ++i)
      if (def.tensor_args[i].role == ArgRole::inout)
        EXPECT_TRUE(same_bits(baseline.tensors[i], hand.tensors[i])) << w.dump() << ": " << def.tensor_args[i].name;
  }
}

}  // namespace fk::ops::layer_test
