// batch_decode_paged_attention: definition (workloads, case, cost). The CPU reference is
// in attention_reference.cpp, the CUDA plan/run in paged_attention_cuda.cu.
#include <cstddef>

#include "fk/ops/attention.h"
#include "ops/attention/attention_case.h"
#include "ops/attention/attention_call_workload.h"
#include "ops/common/case_builder.h"

namespace fk::ops::attn {
namespace {

using Args = BatchDecodePagedAttentionArgs;

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) { return attention_call_workload(*static_cast<const Args*>(args)); }

OpDef make_def() {
  OpDef d;
  d.name = Args::kName;
  d.family = "attention";
  d.level = "L1";
  d.summary = "one query token per sequence attends to a paged KV cache (GQA, sliding window, soft-cap); plan + run";
  d.args_size = sizeof(Args);
  // q may be row-strided (a slice of a packed qkv), with 16-byte aligned rows: the CUDA
  // kernels load it as 16-byte vectors (and through TMA).
  d.tensor_args = {
      {"out", ArgRole::out, offsetof(Args, out)},
      {"lse", ArgRole::out, offsetof(Args, lse)},
      {"q", ArgRole::in, offsetof(Args, q), RowStride::aligned16},
      {"k_cache", ArgRole::in, offsetof(Args, k_cache)},
      {"v_cache", ArgRole::in, offsetof(Args, v_cache)},
      {"kv_indptr", ArgRole::in, offsetof(Args, kv_indptr)},
      {"kv_indices", ArgRole::in, offsetof(Args, kv_indices)},
      {"kv_last_page_len", ArgRole::in, offsetof(Args, kv_last_page_len)},
      {"kv_indptr_host", ArgRole::in, offsetof(Args, kv_indptr_host), /*host_only=*/true},
      {"kv_last_page_len_host", ArgRole::in, offsetof(Args, kv_last_page_len_host), /*host_only=*/true},
      {"float_workspace", ArgRole::workspace, offsetof(Args, float_workspace)},
      {"int_workspace", ArgRole::workspace, offsetof(Args, int_workspace)},
      {"host_int_workspace", ArgRole::workspace, offsetof(Args, host_int_workspace), /*host_only=*/true},
      {"plan_info", ArgRole::workspace, offsetof(Args, plan_info), /*host_only=*/true},
  };
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const PagedWorkload pw = parse_paged_workload(w, /*decode=*/true);
    for (size_t b = 0; b < pw.kv_lens.size(); ++b)
      FK_CHECK(pw.kv_lens[b] >= 1, "workload ", w.dump(), ": decode needs kv_lens >= 1 (sequence ", b, ")");
    PagedCaseTensors t = make_paged_tensors(pw, seed);
    OpCase c = begin_case<Args>(w, layout.size());
    c.tensors = {t.out,       t.lse,           t.q,              t.k_cache,          t.v_cache,
                 t.kv_indptr, t.kv_indices,    t.kv_last_page_len, t.kv_indptr_host, t.kv_last_page_len_host,
                 t.float_workspace, t.int_workspace, t.host_int_workspace, t.plan_info};
    Args& a = c.as<Args>();
    a.sm_scale = static_cast<float>(pw.sm_scale);
    a.logits_soft_cap = static_cast<float>(pw.soft_cap);
    a.window_left = static_cast<int32_t>(pw.window_left);
    a.cuda_graph = pw.cuda_graph;
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) { return paged_attention_cost(parse_paged_workload(c.workload, true)); };
  d.tolerance = [](const OpCase&, const TensorArg& arg, DType dt) { return paged_attention_tolerance(arg, dt); };
  d.test_workloads = {
      {{"kv_lens", {1}}, {"num_qo_heads", 4}, {"num_kv_heads", 4}, {"head_dim", 64}},
      {{"kv_lens", {1, 17, 33, 100, 16}}},
      {{"kv_lens", {5, 70}}, {"page_size", 1}},
      {{"kv_lens", {40, 3}}, {"num_qo_heads", 8}, {"num_kv_heads", 1}, {"head_dim", 256}},  // MQA
      {{"kv_lens", {50, 7, 200}}, {"window_left", 16}},
      {{"kv_lens", {30, 90}}, {"logits_soft_cap", 1.0}, {"sm_scale", 0.3}},
      {{"kv_lens", {64, 65}}, {"window_left", 31}, {"logits_soft_cap", 5.0}, {"sm_scale", 1.0},
       {"num_qo_heads", 16}, {"num_kv_heads", 2}},
      {{"kv_lens", {20, 45}}, {"dtype", "f16"}},
      {{"kv_lens", {25, 9}}, {"num_qo_heads", 16}, {"num_kv_heads", 1}, {"head_dim", 64}},  // group 16
      // Group sizes outside the decode kernels' set (7, 5) take the prefill kernels.
      {{"kv_lens", {33, 129}}, {"num_qo_heads", 14}, {"num_kv_heads", 2}},
      {{"kv_lens", {40}}, {"num_qo_heads", 5}, {"num_kv_heads", 1}, {"head_dim", 64}, {"window_left", 10},
       {"logits_soft_cap", 2.0}, {"sm_scale", 0.5}},
      {{"kv_lens", Json::array()}},
      // Long enough that the KV is split into chunks and merged.
      {{"kv_lens", {1000, 1}}, {"num_qo_heads", 8}, {"num_kv_heads", 2}},
      {{"kv_lens", {3, 300, 47}}, {"cuda_graph", true}},
      // Graph grid classes that cap the split grid (long sequences split under the cap).
      {{"kv_lens", {3, 2000, 47}}, {"cuda_graph", 2}},
      {{"kv_lens", {5000, 300}}, {"cuda_graph", 3}},
      // NaN in every slot no query may read (see PagedWorkload::nan_past_end), through the
      // decode kernels and, at group size 7, the prefill kernels.
      {{"kv_lens", {37, 1000, 5}}, {"nan_past_end", true}},
      {{"kv_lens", {33, 129}}, {"num_qo_heads", 14}, {"num_kv_heads", 2}, {"nan_past_end", true}},
  };
  const Json ctx64(std::vector<int64_t>(64, 4096));
  const Json ctx256(std::vector<int64_t>(256, 2048));  // 2 GiB of KV: keeps the host-built case modest
  d.bench_workloads = {
      {{"kv_lens", ctx64}},
      {{"kv_lens", {4096}}},
      {{"kv_lens", ctx256}},
  };
  d.workload_from_call = workload_from_call;
  d.architectures = {"llama",  "mistral", "qwen2",     "qwen3",     "gemma", "gemma2",
                     "gemma3", "mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);

}  // namespace
}  // namespace fk::ops::attn
