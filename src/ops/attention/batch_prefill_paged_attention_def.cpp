// batch_prefill_paged_attention: definition (workloads, case, cost). The CPU reference is
// in attention_reference.cpp, the CUDA plan/run in paged_attention_cuda.cu.
#include <cstddef>

#include "fk/ops/attention.h"
#include "ops/attention/attention_case.h"
#include "ops/attention/attention_call_workload.h"
#include "ops/common/case_builder.h"

namespace fk::ops::attn {
namespace {

using Args = BatchPrefillPagedAttentionArgs;

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const Args*>(args);
  Json w = attention_call_workload(a);
  w["qo_lens"] = lengths_of_indptr(a.qo_indptr_host);
  if (a.causal == 0) w["causal"] = false;
  return w;
}

OpDef make_def() {
  OpDef d;
  d.name = Args::kName;
  d.family = "attention";
  d.level = "L1";
  d.summary = "ragged queries attend to a paged KV cache (causal, GQA, sliding window, soft-cap); plan + run";
  d.args_size = sizeof(Args);
  // q may be row-strided (a slice of a packed qkv), with 16-byte aligned rows: the CUDA
  // kernels load it as 16-byte vectors (and through TMA).
  d.tensor_args = {
      {"out", ArgRole::out, offsetof(Args, out)},
      {"lse", ArgRole::out, offsetof(Args, lse)},
      {"q", ArgRole::in, offsetof(Args, q), RowStride::aligned16},
      {"k_cache", ArgRole::in, offsetof(Args, k_cache)},
      {"v_cache", ArgRole::in, offsetof(Args, v_cache)},
      {"qo_indptr", ArgRole::in, offsetof(Args, qo_indptr)},
      {"kv_indptr", ArgRole::in, offsetof(Args, kv_indptr)},
      {"kv_indices", ArgRole::in, offsetof(Args, kv_indices)},
      {"kv_last_page_len", ArgRole::in, offsetof(Args, kv_last_page_len)},
      {"qo_indptr_host", ArgRole::in, offsetof(Args, qo_indptr_host), /*host_only=*/true},
      {"kv_indptr_host", ArgRole::in, offsetof(Args, kv_indptr_host), /*host_only=*/true},
      {"kv_last_page_len_host", ArgRole::in, offsetof(Args, kv_last_page_len_host), /*host_only=*/true},
      {"float_workspace", ArgRole::workspace, offsetof(Args, float_workspace)},
      {"int_workspace", ArgRole::workspace, offsetof(Args, int_workspace)},
      {"host_int_workspace", ArgRole::workspace, offsetof(Args, host_int_workspace), /*host_only=*/true},
      {"plan_info", ArgRole::workspace, offsetof(Args, plan_info), /*host_only=*/true},
  };
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const PagedWorkload pw = parse_paged_workload(w, /*decode=*/false);
    PagedCaseTensors t = make_paged_tensors(pw, seed);
    OpCase c = begin_case<Args>(w, layout.size());
    c.tensors = {t.out,       t.lse,           t.q,              t.k_cache,
                 t.v_cache,   t.qo_indptr,     t.kv_indptr,      t.kv_indices,
                 t.kv_last_page_len, t.qo_indptr_host, t.kv_indptr_host, t.kv_last_page_len_host,
                 t.float_workspace, t.int_workspace, t.host_int_workspace, t.plan_info};
    Args& a = c.as<Args>();
    a.sm_scale = static_cast<float>(pw.sm_scale);
    a.logits_soft_cap = static_cast<float>(pw.soft_cap);
    a.window_left = static_cast<int32_t>(pw.window_left);
    a.causal = pw.causal ? 1 : 0;
    a.cuda_graph = pw.cuda_graph;
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) { return paged_attention_cost(parse_paged_workload(c.workload, false)); };
  d.tolerance = [](const OpCase&, const TensorArg& arg, DType dt) { return paged_attention_tolerance(arg, dt); };
  d.test_workloads = {
      // One KV position: the output is that position's value row.
      {{"qo_lens", {1}}, {"kv_lens", {1}}, {"num_qo_heads", 4}, {"num_kv_heads", 4}, {"head_dim", 64}},
      // Full prefill, chunked prefill, a one-token chunk, a sequence without queries, a
      // chunk ending exactly on a page boundary (32 = 2 pages).
      {{"qo_lens", {5, 17, 1, 0, 3, 16}}, {"kv_lens", {5, 40, 33, 9, 3, 32}}},
      // Page size 1, MQA, head dim 256.
      {{"qo_lens", {7, 20}}, {"kv_lens", {7, 29}}, {"page_size", 1}, {"num_qo_heads", 8}, {"num_kv_heads", 1},
       {"head_dim", 256}},
      {{"qo_lens", {33}}, {"kv_lens", {100}}, {"head_dim", 64}, {"num_qo_heads", 4}, {"num_kv_heads", 4},
       {"sm_scale", 0.5}},
      {{"qo_lens", {40, 6}}, {"kv_lens", {40, 70}}, {"window_left", 8}},
      {{"qo_lens", {24, 2}}, {"kv_lens", {30, 19}}, {"logits_soft_cap", 1.0}, {"sm_scale", 0.3}},
      {{"qo_lens", {16}}, {"kv_lens", {50}}, {"window_left", 5}, {"logits_soft_cap", 2.0}, {"sm_scale", 0.5},
       {"num_qo_heads", 8}, {"num_kv_heads", 2}},
      {{"qo_lens", {9, 4}}, {"kv_lens", {20, 4}}, {"causal", false}},
      {{"qo_lens", {12}}, {"kv_lens", {30}}, {"causal", false}, {"window_left", 3}, {"num_qo_heads", 4},
       {"num_kv_heads", 2}, {"head_dim", 64}},
      {{"qo_lens", {13, 8}}, {"kv_lens", {13, 31}}, {"dtype", "f16"}},
      {{"qo_lens", {11}}, {"kv_lens", {37}}, {"dtype", "f16"}, {"head_dim", 256}, {"num_qo_heads", 2},
       {"num_kv_heads", 1}, {"window_left", 20}, {"logits_soft_cap", 1.5}, {"sm_scale", 0.2}},
      // Empty batch, and a batch whose sequences bring no query tokens.
      {{"qo_lens", Json::array()}, {"kv_lens", Json::array()}},
      {{"qo_lens", {0, 0}}, {"kv_lens", {5, 0}}},
      {{"qo_lens", {3, 10}}, {"kv_lens", {20, 10}}, {"cuda_graph", true}},
      // Several query tiles and KV tiles of the CUDA kernels (128 x 96 at D = 128, 16-token pages).
      {{"qo_lens", {150}}, {"kv_lens", {300}}, {"num_qo_heads", 4}, {"num_kv_heads", 2}},
      {{"qo_lens", {140, 60}}, {"kv_lens", {140, 200}}, {"head_dim", 256}, {"num_qo_heads", 2},
       {"num_kv_heads", 1}, {"page_size", 1}, {"window_left", 70}},
      // The CUDA TMA path (pages of >= 64 tokens): two boxes a tile (64), two tiles a page
      // (256), one box a tile (128 at D = 64, 64 at D = 256), with NaN in every slot no query
      // may read (the last page's tail, unowned pages); pages of 8 and 48 take the gather path.
      {{"qo_lens", {37, 100}}, {"kv_lens", {45, 229}}, {"page_size", 8}, {"nan_past_end", true}},
      {{"qo_lens", {70}}, {"kv_lens", {201}}, {"page_size", 64}, {"num_qo_heads", 8}, {"num_kv_heads", 2},
       {"nan_past_end", true}},
      {{"qo_lens", {300, 5}}, {"kv_lens", {530, 260}}, {"page_size", 256}, {"num_qo_heads", 4},
       {"num_kv_heads", 1}, {"nan_past_end", true}},
      {{"qo_lens", {130}}, {"kv_lens", {250}}, {"page_size", 128}, {"head_dim", 64}, {"num_qo_heads", 4},
       {"num_kv_heads", 4}, {"nan_past_end", true}},
      {{"qo_lens", {90, 64}}, {"kv_lens", {150, 64}}, {"page_size", 64}, {"head_dim", 256}, {"num_qo_heads", 2},
       {"num_kv_heads", 1}, {"nan_past_end", true}},
      {{"qo_lens", {20, 9}}, {"kv_lens", {77, 9}}, {"causal", false}, {"page_size", 64}, {"num_qo_heads", 4},
       {"num_kv_heads", 2}, {"nan_past_end", true}},
      {{"qo_lens", {40}}, {"kv_lens", {161}}, {"window_left", 20}, {"logits_soft_cap", 3.0}, {"page_size", 128},
       {"num_qo_heads", 4}, {"num_kv_heads", 2}, {"dtype", "f16"}, {"nan_past_end", true}},
      {{"qo_lens", {3, 100}}, {"kv_lens", {70, 100}}, {"page_size", 64}, {"cuda_graph", true},
       {"nan_past_end", true}},  // the TMA path's tensor maps inside a captured launch
      {{"qo_lens", {50}}, {"kv_lens", {100}}, {"page_size", 48}, {"num_qo_heads", 4}, {"num_kv_heads", 2},
       {"nan_past_end", true}},
  };
  // Llama-3.1-8B / Qwen3-8B / Mistral-7B attention: 32 query heads, 8 KV heads, D = 128.
  const Json chunks8(std::vector<int64_t>(8, 2048));
  d.bench_workloads = {
      {{"qo_lens", {16384}}, {"kv_lens", {16384}}},
      {{"qo_lens", chunks8}, {"kv_lens", chunks8}},
      {{"qo_lens", {2048, 2048, 2048, 2048}}, {"kv_lens", {8192, 8192, 8192, 8192}}},  // chunked prefill
      {{"qo_lens", {16384}}, {"kv_lens", {16384}}, {"window_left", 4095}},            // Mistral-7B v0.1 window
      // The same with 128-token pages (the TMA mainloop; 16-token pages take the gather).
      {{"qo_lens", {16384}}, {"kv_lens", {16384}}, {"page_size", 128}},
      {{"qo_lens", chunks8}, {"kv_lens", chunks8}, {"page_size", 128}},
      {{"qo_lens", {2048, 2048, 2048, 2048}}, {"kv_lens", {8192, 8192, 8192, 8192}}, {"page_size", 128}},
  };
  d.workload_from_call = workload_from_call;
  d.architectures = {"llama",  "mistral", "qwen2",     "qwen3",     "gemma", "gemma2",
                     "gemma3", "mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);

}  // namespace
}  // namespace fk::ops::attn
