// Argument checks of the paged attention ops, shared by the CPU reference, the CUDA plan
// and the CUDA run. Only shapes, dtypes, devices and attributes: the metadata contents
// are checked by read_paged_batch (paged_batch.h), which plan and the CPU reference call.
#pragma once
#include <cmath>

#include "fk/ops/attention.h"
#include "ops/common/validate.h"

namespace fk::ops::attn {

// The tensors and attributes both ops share (decode passes qo_indptr* = nullptr).
struct CommonArgs {
  const char* op;
  const TensorView& out;
  const TensorView& lse;
  const TensorView& q;
  const TensorView& k_cache;
  const TensorView& v_cache;
  const TensorView* qo_indptr;
  const TensorView& kv_indptr;
  const TensorView& kv_indices;
  const TensorView& kv_last_page_len;
  const TensorView* qo_indptr_host;
  const TensorView& kv_indptr_host;
  const TensorView& kv_last_page_len_host;
  const TensorView& float_workspace;
  const TensorView& int_workspace;
  const TensorView& host_int_workspace;
  const TensorView& plan_info;
  float sm_scale;
  float logits_soft_cap;
  int32_t window_left;
};

inline CommonArgs common_args(const BatchPrefillPagedAttentionArgs& a) {
  return {a.kName,          a.out,       a.lse,         a.q,          a.k_cache,
          a.v_cache,        &a.qo_indptr, a.kv_indptr, a.kv_indices, a.kv_last_page_len,
          &a.qo_indptr_host, a.kv_indptr_host, a.kv_last_page_len_host, a.float_workspace,
          a.int_workspace,  a.host_int_workspace, a.plan_info, a.sm_scale, a.logits_soft_cap,
          a.window_left};
}

inline CommonArgs common_args(const BatchDecodePagedAttentionArgs& a) {
  return {a.kName,   a.out,       a.lse,         a.q,          a.k_cache,
          a.v_cache, nullptr,     a.kv_indptr,   a.kv_indices, a.kv_last_page_len,
          nullptr,   a.kv_indptr_host, a.kv_last_page_len_host, a.float_workspace,
          a.int_workspace, a.host_int_workspace, a.plan_info, a.sm_scale, a.logits_soft_cap,
          a.window_left};
}

inline bool has_lse(const TensorView& lse) { return lse.data != nullptr; }

inline void expect_index_vector(const char* op, const char* arg, const TensorView& v, int64_t size,
                                DeviceType device) {
  expect_rank(op, arg, v, 1);
  expect_dtype(op, arg, v, DType::i32);
  expect_dim(op, arg, v, 0, size);
  expect_contiguous(op, arg, v);
  expect_device(op, arg, v, device);
}

inline void expect_byte_buffer(const char* op, const char* arg, const TensorView& v, DeviceType device) {
  expect_rank(op, arg, v, 1);
  expect_dtype(op, arg, v, DType::u8);
  expect_contiguous(op, arg, v);
  expect_device(op, arg, v, device);
}

// `backend`: where q, the caches, out, lse, the device metadata and the device workspaces
// live. Host mirrors, host_int_workspace and plan_info are always on the CPU.
inline void validate_common(const CommonArgs& a, DeviceType backend) {
  const char* op = a.op;
  expect_rank(op, "q", a.q, 3);
  expect_dtype_in(op, "q", a.q, {DType::bf16, DType::f16});
  expect_rows_contiguous(op, "q", a.q);
  expect_device(op, "q", a.q, backend);
  const int64_t T = a.q.shape[0], Hq = a.q.shape[1], D = a.q.shape[2];
  FK_CHECK(Hq > 0 && D > 0, op, ": q must have heads and a head dim, got ", describe(a.q));

  expect_rank(op, "k_cache", a.k_cache, 4);
  expect_dtype(op, "k_cache", a.k_cache, a.q.dtype);
  expect_contiguous(op, "k_cache", a.k_cache);
  expect_device(op, "k_cache", a.k_cache, backend);
  expect_dim(op, "k_cache", a.k_cache, 3, D);
  const int64_t page_size = a.k_cache.shape[1], Hk = a.k_cache.shape[2];
  FK_CHECK(page_size > 0 && Hk > 0, op, ": k_cache [P, page_size, Hk, D] needs page_size > 0 and Hk > 0, got ",
           describe(a.k_cache));
  FK_CHECK(Hq % Hk == 0, op, ": query heads (", Hq, ") must be a multiple of KV heads (", Hk, ")");
  expect_same_shape(op, "v_cache", a.v_cache, "k_cache", a.k_cache);
  expect_dtype(op, "v_cache", a.v_cache, a.q.dtype);
  expect_contiguous(op, "v_cache", a.v_cache);
  expect_device(op, "v_cache", a.v_cache, backend);

  if (a.out.dtype != DType::f64) expect_dtype(op, "out", a.out, a.q.dtype);  // f64: the oracle
  expect_same_shape(op, "out", a.out, "q", a.q);
  expect_contiguous(op, "out", a.out);
  expect_device(op, "out", a.out, backend);
  if (has_lse(a.lse)) {
    expect_rank(op, "lse", a.lse, 2);
    expect_dim(op, "lse", a.lse, 0, T);
    expect_dim(op, "lse", a.lse, 1, Hq);
    if (a.lse.dtype != DType::f64) expect_dtype(op, "lse", a.lse, DType::f32);
    expect_contiguous(op, "lse", a.lse);
    expect_device(op, "lse", a.lse, backend);
  }

  expect_rank(op, "kv_indptr", a.kv_indptr, 1);
  const int64_t B = a.kv_indptr.shape[0] - 1;
  FK_CHECK(B >= 0, op, ": kv_indptr must have B+1 >= 1 entries, got ", describe(a.kv_indptr));
  if (a.qo_indptr) {
    expect_index_vector(op, "qo_indptr", *a.qo_indptr, B + 1, backend);
    expect_index_vector(op, "qo_indptr_host", *a.qo_indptr_host, B + 1, DeviceType::cpu);
  } else {
    FK_CHECK(T == B, op, ": q must have one token per sequence (", B, " sequences), got ", describe(a.q));
  }
  expect_index_vector(op, "kv_indptr", a.kv_indptr, B + 1, backend);
  expect_index_vector(op, "kv_last_page_len", a.kv_last_page_len, B, backend);
  expect_rank(op, "kv_indices", a.kv_indices, 1);
  expect_index_vector(op, "kv_indices", a.kv_indices, a.kv_indices.shape[0], backend);  // any length
  expect_index_vector(op, "kv_indptr_host", a.kv_indptr_host, B + 1, DeviceType::cpu);
  expect_index_vector(op, "kv_last_page_len_host", a.kv_last_page_len_host, B, DeviceType::cpu);

  expect_byte_buffer(op, "float_workspace", a.float_workspace, backend);
  expect_byte_buffer(op, "int_workspace", a.int_workspace, backend);
  expect_byte_buffer(op, "host_int_workspace", a.host_int_workspace, DeviceType::cpu);
  expect_rank(op, "plan_info", a.plan_info, 1);
  expect_dtype(op, "plan_info", a.plan_info, DType::i64);
  expect_dim(op, "plan_info", a.plan_info, 0, kAttentionPlanInfoLen);
  expect_contiguous(op, "plan_info", a.plan_info);
  expect_device(op, "plan_info", a.plan_info, DeviceType::cpu);
}

inline void validate_attributes(const char* op, float sm_scale, float cap, int32_t window_left) {
  FK_CHECK(std::isfinite(sm_scale) && sm_scale > 0, op, ": sm_scale must be positive and finite, got ", sm_scale);
  FK_CHECK(std::isfinite(cap) && cap >= 0, op, ": logits_soft_cap must be >= 0 (0 = none), got ", cap);
  FK_CHECK(window_left >= -1, op, ": window_left must be -1 (none) or >= 0, got ", window_left);
}

inline void validate_prefill(const BatchPrefillPagedAttentionArgs& a, DeviceType backend) {
  validate_common(common_args(a), backend);
  validate_attributes(a.kName, a.sm_scale, a.logits_soft_cap, a.window_left);
  FK_CHECK(a.causal == 0 || a.causal == 1, a.kName, ": causal must be 0 or 1, got ", a.causal);
  FK_CHECK(a.cuda_graph == 0 || a.cuda_graph == 1, a.kName, ": cuda_graph must be 0 or 1, got ", a.cuda_graph);
}

inline void validate_decode(const BatchDecodePagedAttentionArgs& a, DeviceType backend) {
  validate_common(common_args(a), backend);
  validate_attributes(a.kName, a.sm_scale, a.logits_soft_cap, a.window_left);
  FK_CHECK(a.cuda_graph >= 0 && a.cuda_graph <= kDecodeGraphGrids, a.kName,
           ": cuda_graph must be 0 (eager) or a graph grid class in [1, ", kDecodeGraphGrids, "], got ", a.cuda_graph);
}

}  // namespace fk::ops::attn
