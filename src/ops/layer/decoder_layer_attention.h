// The attention op a decoder layer calls and its arguments: decode for a batch of one query
// token per sequence, prefill otherwise. The plan and the run build them alike, so the run
// finds the plan it expects.
#pragma once
#include "fk/ops/attention.h"
#include "ops/layer/decoder_layer_validate.h"

namespace fk::ops {

// Calls f(args) with the BatchDecodePagedAttentionArgs or BatchPrefillPagedAttentionArgs of
// a layer (any layer op's arguments with the paged batch fields of DecoderLayerArgs),
// reading q from `v.q` and writing `v.attn_out` (and `v.lse` where present), over caches
// k_cache / v_cache (the layer's own, or the CPU reference's model-dtype copies of them).
template <class LayerArgs, class F>
void with_layer_attention(const LayerArgs& a, const DecoderLayerShape& s, const DecoderLayerViews& v,
                          const TensorView& k_cache, const TensorView& v_cache, F&& f) {
  auto common = [&](auto& x) {
    x.out = v.attn_out;
    x.lse = v.lse;
    x.q = v.q;
    x.k_cache = k_cache;
    x.v_cache = v_cache;
    x.kv_indptr = a.kv_indptr;
    x.kv_indices = a.kv_indices;
    x.kv_last_page_len = a.kv_last_page_len;
    x.kv_indptr_host = a.kv_indptr_host;
    x.kv_last_page_len_host = a.kv_last_page_len_host;
    x.float_workspace = a.float_workspace;
    x.int_workspace = a.int_workspace;
    x.host_int_workspace = a.host_int_workspace;
    x.plan_info = a.plan_info;
    x.sm_scale = a.sm_scale;
    x.logits_soft_cap = 0.f;
    x.window_left = a.window_left;
    x.cuda_graph = a.cuda_graph;
  };
  if (s.decode()) {
    BatchDecodePagedAttentionArgs d{};
    common(d);
    f(d);
    return;
  }
  BatchPrefillPagedAttentionArgs p{};
  common(p);
  p.qo_indptr = a.qo_indptr;
  p.qo_indptr_host = a.qo_indptr_host;
  p.causal = 1;
  f(p);
}

}  // namespace fk::ops
