// What the paged-attention layer ops' definitions share (decoder_layer, gpt_oss_layer): the
// batch of a workload, the positions and cache slots of its query tokens, the traffic of
// the layer beside its weights, and the batch of a captured call.
#pragma once
#include <cstdint>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "ops/attention/attention_case.h"

namespace fk::ops {

// A layer workload's batch (qo_lens, kv_lens and the attention case's fields: page_size,
// extra_pages, dtype, sm_scale, window_left, nan_past_end, cuda_graph) as a paged batch of
// the layer's heads; the model dtype bf16 or f16.
attn::PagedWorkload parse_layer_batch(const char* op, const Json& w, int64_t heads, int64_t kv_heads,
                                      int64_t head_dim);

// Each query token's position in its sequence (the last qo_len of its kv_len) and the cache
// slot its K/V go to; max_kv the longest sequence (the rope table's length).
struct LayerTokens {
  Tensor positions;  // [T] i64
  Tensor slots;      // [T] i64
  int64_t max_kv = 1;
};
LayerTokens layer_tokens(const attn::PagedWorkload& pw, const attn::PagedCaseTensors& at);

// The bytes a layer moves beside its weights: the K/V every query reads and this step's
// K/V written, positions, slots, metadata and cos/sin rows, the stream read and written.
template <class Args>
double paged_layer_bytes(const Args& a, const attn::PagedWorkload& pw) {
  const double T = static_cast<double>(a.hidden.shape[0]), H = static_cast<double>(a.hidden.shape[1]);
  const double es = static_cast<double>(dtype_size(a.input_norm.dtype));
  const double kv_write = T * 2.0 * static_cast<double>(a.num_kv_heads * a.head_dim) * es;
  const double q_and_out = 2.0 * T * static_cast<double>(a.num_heads * a.head_dim) * es + T * a.num_heads * 4.0;
  const double kv_read = attn::paged_attention_cost(pw).bytes - q_and_out;  // paged_attention_cost's KV term
  const double metadata = static_cast<double>(a.positions.nbytes() + a.slot_mapping.nbytes() + a.qo_indptr.nbytes() +
                                              a.kv_indptr.nbytes() + a.kv_indices.nbytes() +
                                              a.kv_last_page_len.nbytes()) +
                          T * static_cast<double>(a.cos_sin_cache.shape[1] * a.cos_sin_cache.element_size());
  const double stream = (a.first_layer ? 3.0 : 4.0) * T * H * es;
  return kv_read + kv_write + metadata + stream;
}

// A captured call's qo_lens, kv_lens and page_size, from the host mirrors of the metadata.
template <class Args>
void add_batch_of_call(const Args& a, Json& w) {
  const int64_t B = a.kv_indptr_host.shape[0] - 1, S = a.k_cache.shape[1];
  Json qo_lens = Json::array(), kv_lens = Json::array();
  for (int64_t b = 0; b < B; ++b) {
    qo_lens.push_back(get_index(a.qo_indptr_host, b + 1) - get_index(a.qo_indptr_host, b));
    const int64_t pages = get_index(a.kv_indptr_host, b + 1) - get_index(a.kv_indptr_host, b);
    kv_lens.push_back(pages == 0 ? 0 : (pages - 1) * S + get_index(a.kv_last_page_len_host, b));
  }
  w["qo_lens"] = qo_lens;
  w["kv_lens"] = kv_lens;
  w["page_size"] = S;
}

}  // namespace fk::ops
