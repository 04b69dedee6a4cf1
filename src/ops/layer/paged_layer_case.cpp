#include "ops/layer/paged_layer_case.h"

#include <algorithm>

namespace fk::ops {

attn::PagedWorkload parse_layer_batch(const char* op, const Json& w, int64_t heads, int64_t kv_heads,
                                      int64_t head_dim) {
  FK_CHECK(w.contains("qo_lens") && w.contains("kv_lens"), op, " workload needs qo_lens and kv_lens, got ", w.dump());
  Json a{{"qo_lens", w.at("qo_lens")}, {"kv_lens", w.at("kv_lens")}, {"num_qo_heads", heads},
         {"num_kv_heads", kv_heads},   {"head_dim", head_dim}};
  for (const char* key : {"page_size", "extra_pages", "dtype", "sm_scale", "window_left", "nan_past_end", "cuda_graph"})
    if (w.contains(key)) a[key] = w[key];
  attn::PagedWorkload pw = attn::parse_paged_workload(a, /*decode=*/false);
  FK_CHECK(pw.dtype == DType::bf16 || pw.dtype == DType::f16, op, " workload dtype must be bf16 or f16, got ",
           w.dump());
  return pw;
}

LayerTokens layer_tokens(const attn::PagedWorkload& pw, const attn::PagedCaseTensors& at) {
  const int64_t T = pw.num_q_tokens();
  LayerTokens x{Tensor::empty({T}, DType::i64), Tensor::empty({T}, DType::i64), 1};
  const int32_t* qo = at.qo_indptr.data_as<int32_t>();
  const int32_t* kv = at.kv_indptr.data_as<int32_t>();
  const int32_t* pages = at.kv_indices.data_as<int32_t>();
  for (int64_t b = 0; b < pw.batch(); ++b) {
    x.max_kv = std::max(x.max_kv, pw.kv_lens[b]);
    for (int64_t i = 0; i < pw.qo_lens[b]; ++i) {
      const int64_t t = qo[b] + i, p = pw.kv_lens[b] - pw.qo_lens[b] + i;
      x.positions.data_as<int64_t>()[t] = p;
      x.slots.data_as<int64_t>()[t] =
          static_cast<int64_t>(pages[kv[b] + p / pw.page_size]) * pw.page_size + p % pw.page_size;
    }
  }
  return x;
}

std::vector<Tensor> layer_paged_tensors(const LayerTokens& tokens, const Tensor& cos_sin_cache,
                                        const attn::PagedCaseTensors& at) {
  return {tokens.positions,   cos_sin_cache,  at.k_cache,          at.v_cache,           tokens.slots,
          at.qo_indptr,       at.kv_indptr,   at.kv_indices,       at.kv_last_page_len,  at.qo_indptr_host,
          at.kv_indptr_host,  at.kv_last_page_len_host};
}

std::vector<Tensor> layer_stream_workspaces(int64_t T, int64_t H, int64_t qkv_rows, int64_t q_size, DType dt) {
  return {Tensor::empty({T, H}, dt), Tensor::empty({T, H}, dt), Tensor::empty({T, qkv_rows}, dt),
          Tensor::empty({T, q_size}, dt)};
}

std::vector<Tensor> layer_attention_workspaces(const attn::PagedCaseTensors& at) {
  return {at.float_workspace, at.int_workspace, at.host_int_workspace, at.plan_info};
}

}  // namespace fk::ops
