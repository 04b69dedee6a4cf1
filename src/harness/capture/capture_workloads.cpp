// From an op call's argument struct to the op's task workload fields: the inverse of each
// op's make_case (src/ops/*/..._def.cpp), for the ops a decoder calls (dense or MoE).
#include <cstring>

#include "harness/capture/capture.h"
#include "fk/dtype.h"
#include "fk/ops/activation.h"
#include "fk/ops/attention.h"
#include "fk/ops/embedding.h"
#include "fk/ops/kv_cache.h"
#include "fk/ops/linear.h"
#include "fk/ops/moe.h"
#include "fk/ops/norm.h"
#include "fk/ops/rope.h"
#include "fk/ops/sampling.h"
#include "ops/common/validate.h"

namespace fk::e2e {

using nlohmann::json;

namespace {

std::string dt(const TensorView& v) { return std::string(dtype_name(v.dtype)); }

// Per-sequence lengths from an indptr (host mirror) and, for KV, the last-page lengths.
std::vector<int64_t> lengths(const TensorView& indptr) {
  std::vector<int64_t> out;
  const auto* p = static_cast<const int32_t*>(indptr.data);
  for (int64_t b = 0; b + 1 < indptr.shape[0]; ++b) out.push_back(p[b + 1] - p[b]);
  return out;
}
std::vector<int64_t> kv_lengths(const TensorView& kv_indptr, const TensorView& last, int64_t page_size) {
  std::vector<int64_t> pages = lengths(kv_indptr), out;
  const auto* l = static_cast<const int32_t*>(last.data);
  for (size_t b = 0; b < pages.size(); ++b) out.push_back(pages[b] == 0 ? 0 : (pages[b] - 1) * page_size + l[b]);
  return out;
}

template <class A>
json attention_common(const A& a) {
  json w = {{"num_qo_heads", a.q.shape[1]}, {"num_kv_heads", a.k_cache.shape[2]}, {"head_dim", a.q.shape[2]},
            {"page_size", a.k_cache.shape[1]}, {"dtype", dt(a.q)}};
  if (a.logits_soft_cap > 0) w["logits_soft_cap"] = a.logits_soft_cap;
  if (a.window_left >= 0) w["window_left"] = a.window_left;
  w["kv_lens"] = kv_lengths(a.kv_indptr_host, a.kv_last_page_len_host, a.k_cache.shape[1]);
  return w;
}

}  // namespace

std::optional<json> workload_of_call(const std::string& op, const void* raw) {
  if (op == "rms_norm" || op == "gemma_rms_norm") {
    const auto& a = *static_cast<const ops::RmsNormArgs*>(raw);  // same layout as GemmaRmsNormArgs
    return json{{"tokens", a.input.shape[0]}, {"hidden", a.input.shape[1]}, {"dtype", dt(a.input)}};
  }
  if (op == "fused_add_rms_norm" || op == "gemma_fused_add_rms_norm") {
    const auto& a = *static_cast<const ops::FusedAddRmsNormArgs*>(raw);
    return json{{"tokens", a.input.shape[0]}, {"hidden", a.input.shape[1]}, {"dtype", dt(a.input)}};
  }
  if (op == "silu_and_mul") {
    const auto& a = *static_cast<const ops::SiluAndMulArgs*>(raw);
    return json{{"tokens", a.out.shape[0]}, {"d", a.out.shape[1]}, {"dtype", dt(a.out)}};
  }
  if (op == "gelu_and_mul") {
    const auto& a = *static_cast<const ops::GeluAndMulArgs*>(raw);
    return json{{"tokens", a.out.shape[0]}, {"d", a.out.shape[1]}, {"dtype", dt(a.out)},
                {"approximate", a.approximate == ops::GeluApprox::tanh ? "tanh" : "none"}};
  }
  if (op == "logit_softcap") {
    const auto& a = *static_cast<const ops::LogitSoftcapArgs*>(raw);
    return json{{"tokens", a.logits.shape[0]}, {"vocab", a.logits.shape[1]}, {"cap", a.cap}, {"dtype", dt(a.logits)}};
  }
  if (op == "linear") {
    const auto& a = *static_cast<const ops::LinearArgs*>(raw);
    json w = {{"m", a.input.shape[0]}, {"n", a.weight.shape[0]}, {"k", a.weight.shape[1]}, {"dtype", dt(a.input)}};
    if (ops::arg_present(a.bias)) w["bias"] = true;
    return w;
  }
  if (op == "rms_norm_linear") {
    const auto& a = *static_cast<const ops::RmsNormLinearArgs*>(raw);
    json w = {{"m", a.input.shape[0]}, {"n", a.weight.shape[0]}, {"k", a.weight.shape[1]}, {"dtype", dt(a.input)},
              {"residual", ops::arg_present(a.residual_in)}, {"eps", a.eps}};
    if (ops::arg_present(a.bias)) w["bias"] = true;
    return w;
  }
  if (op == "embedding") {
    const auto& a = *static_cast<const ops::EmbeddingArgs*>(raw);
    return json{{"tokens", a.ids.shape[0]}, {"hidden", a.table.shape[1]}, {"vocab", a.table.shape[0]},
                {"dtype", dt(a.table)}};
  }
  if (op == "rotary_embedding" || op == "qk_norm_rope") {
    // Both start with positions, query, key; the cache sits at a different place.
    const auto& a = *static_cast<const ops::RotaryEmbeddingArgs*>(raw);
    const TensorView& cache = op == "rotary_embedding"
                                  ? a.cos_sin_cache
                                  : static_cast<const ops::QkNormRopeArgs*>(raw)->cos_sin_cache;
    const int64_t D = op == "rotary_embedding" ? a.head_size : static_cast<const ops::QkNormRopeArgs*>(raw)->head_size;
    const auto heads = [&](const TensorView& v) { return v.rank == 3 ? v.shape[1] : v.shape[1] / D; };
    json w = {{"tokens", a.query.shape[0]}, {"q_heads", heads(a.query)}, {"kv_heads", heads(a.key)},
              {"head_size", D},           {"max_pos", cache.shape[0]},  {"dtype", dt(a.query)}};
    if (cache.shape[1] != D) w["rot_dim"] = cache.shape[1];
    return w;
  }
  if (op == "rope_and_cache") {
    const auto& a = *static_cast<const ops::RopeAndCacheArgs*>(raw);
    const int64_t D = a.head_size;
    json w = {{"tokens", a.query.shape[0]},
              {"q_heads", a.query.rank == 3 ? a.query.shape[1] : a.query.shape[1] / D},
              {"kv_heads", a.key.shape[1]},
              {"head_size", D},
              {"max_pos", a.cos_sin_cache.shape[0]},
              {"dtype", dt(a.query)},
              {"norm", ops::arg_present(a.q_weight)},
              {"page_size", a.k_cache.shape[1]},
              {"num_pages", a.k_cache.shape[0]}};
    if (a.cos_sin_cache.shape[1] != D) w["rot_dim"] = a.cos_sin_cache.shape[1];
    return w;
  }
  if (op == "reshape_and_cache") {
    const auto& a = *static_cast<const ops::ReshapeAndCacheArgs*>(raw);
    return json{{"tokens", a.key.shape[0]},      {"kv_heads", a.key.shape[1]},       {"head_dim", a.key.shape[2]},
                {"page_size", a.k_cache.shape[1]}, {"num_pages", a.k_cache.shape[0]}, {"dtype", dt(a.key)}};
  }
  if (op == "batch_prefill_paged_attention") {
    const auto& a = *static_cast<const ops::BatchPrefillPagedAttentionArgs*>(raw);
    json w = attention_common(a);
    w["qo_lens"] = lengths(a.qo_indptr_host);
    return w;
  }
  if (op == "batch_decode_paged_attention") return attention_common(*static_cast<const ops::BatchDecodePagedAttentionArgs*>(raw));
  if (op == "sample") {
    const auto& a = *static_cast<const ops::SampleArgs*>(raw);
    return json{{"batch", a.logits.shape[0]}, {"vocab", a.logits.shape[1]}, {"dtype", dt(a.logits)}};
  }
  if (op == "moe_topk_softmax") {
    const auto& a = *static_cast<const ops::MoeTopkSoftmaxArgs*>(raw);
    return json{{"tokens", a.gating_output.shape[0]}, {"experts", a.gating_output.shape[1]},
                {"topk", a.topk_ids.shape[1]}, {"renormalize", a.renormalize != 0}, {"dtype", dt(a.gating_output)}};
  }
  if (op == "fused_experts") {  // the routing of a case is drawn anew (uniform)
    const auto& a = *static_cast<const ops::FusedExpertsArgs*>(raw);
    json w = {{"tokens", a.hidden.shape[0]}, {"topk", a.topk_ids.shape[1]}, {"experts", a.w13.shape[0]},
              {"hidden", a.hidden.shape[1]}, {"inter", a.w13.shape[1] / 2}, {"dtype", dt(a.hidden)}};
    if (a.w13.dtype == DType::f8e4m3fn) w["weight_dtype"] = dt(a.w13);
    return w;
  }
  if (op == "fused_moe") {  // the router logits of a case are drawn anew
    const auto& a = *static_cast<const ops::FusedMoeArgs*>(raw);
    json w = {{"tokens", a.hidden.shape[0]}, {"topk", a.topk_ids.shape[1]}, {"experts", a.w13.shape[0]},
              {"hidden", a.hidden.shape[1]}, {"inter", a.w13.shape[1] / 2}, {"dtype", dt(a.hidden)},
              {"gating_dtype", dt(a.gating_output)}, {"renormalize", a.renormalize != 0}};
    if (a.w13.dtype == DType::f8e4m3fn) w["weight_dtype"] = dt(a.w13);
    return w;
  }
  if (op == "sigmoid_gated_add") {
    const auto& a = *static_cast<const ops::SigmoidGatedAddArgs*>(raw);
    return json{{"tokens", a.input.shape[0]}, {"hidden", a.input.shape[1]}, {"dtype", dt(a.input)}};
  }
  return std::nullopt;
}

}  // namespace fk::e2e
