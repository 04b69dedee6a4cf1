// What the paged-attention layer ops' definitions share (decoder_layer, moe_layer,
// gpt_oss_layer): the batch of a workload, the positions and cache slots of its query
// tokens, the argument groups every such layer has (and their tensors in a case, in the
// same order), the traffic of the layer beside its weights, and the batch of a captured call.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

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

// The rope, cache and batch arguments (positions, cos_sin_cache, k_cache, v_cache,
// slot_mapping, the four indptr / index tensors and the three host mirrors), in that order.
template <class Args>
std::vector<TensorArg> layer_paged_args() {
  return {
      {"positions", ArgRole::in, offsetof(Args, positions)},
      {"cos_sin_cache", ArgRole::in, offsetof(Args, cos_sin_cache)},
      {"k_cache", ArgRole::inout, offsetof(Args, k_cache)},
      {"v_cache", ArgRole::inout, offsetof(Args, v_cache)},
      {"slot_mapping", ArgRole::in, offsetof(Args, slot_mapping)},
      {"qo_indptr", ArgRole::in, offsetof(Args, qo_indptr)},
      {"kv_indptr", ArgRole::in, offsetof(Args, kv_indptr)},
      {"kv_indices", ArgRole::in, offsetof(Args, kv_indices)},
      {"kv_last_page_len", ArgRole::in, offsetof(Args, kv_last_page_len)},
      {"qo_indptr_host", ArgRole::in, offsetof(Args, qo_indptr_host), /*host_only=*/true},
      {"kv_indptr_host", ArgRole::in, offsetof(Args, kv_indptr_host), /*host_only=*/true},
      {"kv_last_page_len_host", ArgRole::in, offsetof(Args, kv_last_page_len_host), /*host_only=*/true},
  };
}
// The stream's workspaces every layer has first: normed, residual_mid, qkv, attn_out.
template <class Args>
std::vector<TensorArg> layer_stream_workspace_args() {
  return {
      {"normed", ArgRole::workspace, offsetof(Args, normed)},
      {"residual_mid", ArgRole::workspace, offsetof(Args, residual_mid)},
      {"qkv", ArgRole::workspace, offsetof(Args, qkv)},
      {"attn_out", ArgRole::workspace, offsetof(Args, attn_out)},
  };
}
// The attention op's workspaces and plan, every layer's last arguments.
template <class Args>
std::vector<TensorArg> layer_attention_workspace_args() {
  return {
      {"float_workspace", ArgRole::workspace, offsetof(Args, float_workspace)},
      {"int_workspace", ArgRole::workspace, offsetof(Args, int_workspace)},
      {"host_int_workspace", ArgRole::workspace, offsetof(Args, host_int_workspace), /*host_only=*/true},
      {"plan_info", ArgRole::workspace, offsetof(Args, plan_info), /*host_only=*/true},
  };
}
// The groups' tensors in a case, in the same orders (the stream's workspaces for T tokens of
// hidden size H, qkv_rows and q_size columns, in the model dtype).
std::vector<Tensor> layer_paged_tensors(const LayerTokens& tokens, const Tensor& cos_sin_cache,
                                        const attn::PagedCaseTensors& at);
std::vector<Tensor> layer_stream_workspaces(int64_t T, int64_t H, int64_t qkv_rows, int64_t q_size, DType dt);
std::vector<Tensor> layer_attention_workspaces(const attn::PagedCaseTensors& at);

// Concatenates argument (or tensor) groups.
template <class T>
std::vector<T> joined(std::initializer_list<std::vector<T>> parts) {
  std::vector<T> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

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
