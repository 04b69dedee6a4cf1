// Argument checks of the rope ops, shared by their CPU and CUDA implementations, and the
// head layout of a q / k view that both of them address heads with.
#pragma once
#include "fk/ops/rope.h"
#include "ops/common/validate.h"
#include "ops/kv_cache/kv_cache_validate.h"

namespace fk::ops {

// Head h of token t starts at element t * token_stride + h * head_stride of the view.
struct RopeHeads {
  int64_t tokens = 0;
  int64_t heads = 0;
  int64_t token_stride = 0;
  int64_t head_stride = 0;
};

// Who validates: the CPU reference also serves as the oracle, which runs it with q and k
// in f64 while the cache and weights keep their dtype; the CUDA baseline takes the
// engine's dtypes only.
enum class RopeImpl { reference, cuda };

struct RopeShape {
  RopeHeads q, k;
  int64_t head_size = 0;
  int64_t rot_dim = 0;
  int64_t max_pos = 0;
};

inline RopeHeads rope_heads(const char* op, const char* arg, const TensorView& v, int64_t D) {
  FK_CHECK(v.rank == 2 || v.rank == 3, op, ": ", arg, " must be [T, H*D] or [T, H, D], got ", describe(v));
  expect_rows_contiguous(op, arg, v);
  RopeHeads h;
  h.tokens = v.shape[0];
  h.token_stride = v.strides[0];
  if (v.rank == 2) {
    FK_CHECK(v.shape[1] % D == 0, op, ": ", arg, " width ", v.shape[1], " is not a multiple of head_size ", D,
             ", got ", describe(v));
    h.heads = v.shape[1] / D;
    h.head_stride = D;
  } else {
    expect_dim(op, arg, v, 2, D);
    h.heads = v.shape[1];
    h.head_stride = v.strides[1];
  }
  // In place: no two (token, head, dim) may share an element, or the result depends on order.
  FK_CHECK(h.token_stride >= 0 && h.head_stride >= 0, op, ": ", arg, " must have non-negative strides, got token stride ",
           h.token_stride, " and head stride ", h.head_stride);
  FK_CHECK(h.heads <= 1 || h.head_stride >= D, op, ": ", arg, " heads overlap: head stride ", h.head_stride,
           " < head_size ", D);
  FK_CHECK(h.tokens <= 1 || h.heads == 0 || h.token_stride >= (h.heads - 1) * h.head_stride + D, op, ": ", arg,
           " tokens overlap (views must be token-major): token stride ", h.token_stride, " < ",
           (h.heads - 1) * h.head_stride + D);
  return h;
}

inline RopeShape validate_rope_common(const char* op, const TensorView& positions, const TensorView& query,
                                      const TensorView& key, const TensorView& cache, int32_t head_size,
                                      RopeStyle style, RopeImpl impl) {
  const DeviceType dev = impl == RopeImpl::cuda ? DeviceType::cuda : DeviceType::cpu;
  FK_CHECK(head_size > 0, op, ": head_size must be positive, got ", head_size);
  FK_CHECK(style == RopeStyle::neox || style == RopeStyle::gptj, op, ": style must be neox (0) or gptj (1), got ",
           static_cast<int>(style));
  expect_rank(op, "positions", positions, 1);
  expect_dtype_in(op, "positions", positions, {DType::i64, DType::i32});
  if (impl == RopeImpl::cuda) {
    expect_dtype_in(op, "query", query, {DType::f32, DType::f16, DType::bf16});
  } else {
    expect_dtype_in(op, "query", query, {DType::f32, DType::f16, DType::bf16, DType::f64});
  }
  expect_dtype(op, "key", key, query.dtype);

  RopeShape s;
  s.head_size = head_size;
  s.q = rope_heads(op, "query", query, head_size);
  s.k = rope_heads(op, "key", key, head_size);
  const int64_t T = positions.shape[0];
  FK_CHECK(s.q.tokens == T, op, ": query has ", s.q.tokens, " tokens, positions ", T, ": got ", describe(query));
  FK_CHECK(s.k.tokens == T, op, ": key has ", s.k.tokens, " tokens, positions ", T, ": got ", describe(key));
  FK_CHECK(s.q.heads >= 1, op, ": query needs at least one head, got ", describe(query));

  expect_rank(op, "cos_sin_cache", cache, 2);
  expect_contiguous(op, "cos_sin_cache", cache);
  if (impl == RopeImpl::cuda) {
    FK_CHECK(cache.dtype == DType::f32 || cache.dtype == query.dtype, op, ": cos_sin_cache must be f32 or ",
             dtype_name(query.dtype), " (the dtype of query), got ", describe(cache));
  } else {
    expect_dtype_in(op, "cos_sin_cache", cache, {DType::f32, DType::f16, DType::bf16, DType::f64});
  }
  s.max_pos = cache.shape[0];
  s.rot_dim = cache.shape[1];
  FK_CHECK(s.max_pos >= 1, op, ": cos_sin_cache needs at least one position, got ", describe(cache));
  FK_CHECK(s.rot_dim >= 2 && s.rot_dim % 2 == 0 && s.rot_dim <= head_size, op,
           ": cos_sin_cache width (rot_dim) must be even and in [2, head_size ", head_size, "], got ",
           describe(cache));

  expect_device(op, "positions", positions, dev);
  expect_device(op, "query", query, dev);
  expect_device(op, "key", key, dev);
  expect_device(op, "cos_sin_cache", cache, dev);
  return s;
}

inline RopeShape validate_rotary_embedding(const RotaryEmbeddingArgs& a, RopeImpl impl) {
  return validate_rope_common(RotaryEmbeddingArgs::kName, a.positions, a.query, a.key, a.cos_sin_cache,
                              a.head_size, a.style, impl);
}

// A per-head RMSNorm weight of qk_norm_rope / rope_and_cache: [D], contiguous.
inline void check_head_norm_weight(const char* op, const char* name, const TensorView& w, int32_t head_size,
                                   DType query_dtype, RopeImpl impl) {
  expect_rank(op, name, w, 1);
  expect_dim(op, name, w, 0, head_size);
  expect_contiguous(op, name, w);
  expect_device(op, name, w, impl == RopeImpl::cuda ? DeviceType::cuda : DeviceType::cpu);
  if (impl == RopeImpl::cuda) {
    expect_dtype(op, name, w, query_dtype);
  } else {
    expect_dtype_in(op, name, w, {DType::f32, DType::f16, DType::bf16, DType::f64});
  }
}

inline RopeShape validate_qk_norm_rope(const QkNormRopeArgs& a, RopeImpl impl) {
  constexpr const char* op = QkNormRopeArgs::kName;
  RopeShape s = validate_rope_common(op, a.positions, a.query, a.key, a.cos_sin_cache, a.head_size, a.style, impl);
  check_head_norm_weight(op, "q_weight", a.q_weight, a.head_size, a.query.dtype, impl);
  check_head_norm_weight(op, "k_weight", a.k_weight, a.head_size, a.query.dtype, impl);
  FK_CHECK(a.eps > 0, op, ": eps must be positive, got ", a.eps);
  return s;
}

// rope_and_cache: the rope part as qk_norm_rope (with weights) or rotary_embedding, then
// the cache part as reshape_and_cache for a 16-bit cache of the query's dtype.
// The oracle runs the reference with key and the caches in f64 and value in its dtype.
inline RopeShape validate_rope_and_cache(const RopeAndCacheArgs& a, RopeImpl impl) {
  constexpr const char* op = RopeAndCacheArgs::kName;
  RopeShape s = validate_rope_common(op, a.positions, a.query, a.key, a.cos_sin_cache, a.head_size, a.style, impl);
  // 16-bit as reshape_and_cache's caches (f64 in the oracle's run).
  if (impl == RopeImpl::cuda) expect_dtype_in(op, "query", a.query, {DType::f16, DType::bf16});
  else expect_dtype_in(op, "query", a.query, {DType::f16, DType::bf16, DType::f64});
  const bool norm = arg_present(a.q_weight);
  FK_CHECK(norm == arg_present(a.k_weight), op, ": give both q_weight and k_weight (qk norm) or neither");
  if (norm) {
    check_head_norm_weight(op, "q_weight", a.q_weight, a.head_size, a.query.dtype, impl);
    check_head_norm_weight(op, "k_weight", a.k_weight, a.head_size, a.query.dtype, impl);
    FK_CHECK(a.eps > 0, op, ": eps must be positive, got ", a.eps);
  }
  const DeviceType dev = impl == RopeImpl::cuda ? DeviceType::cuda : DeviceType::cpu;
  expect_rank(op, "key", a.key, 3);
  FK_CHECK(s.k.heads >= 1, op, ": key needs at least one head, got ", describe(a.key));
  expect_rank(op, "value", a.value, 3);
  expect_dim(op, "value", a.value, 0, a.key.shape[0]);
  expect_dim(op, "value", a.value, 1, a.key.shape[1]);
  expect_dim(op, "value", a.value, 2, a.key.shape[2]);
  expect_rows_contiguous(op, "value", a.value);
  expect_device(op, "value", a.value, dev);
  const std::initializer_list<DType> floats = {DType::f16, DType::bf16, DType::f64};
  if (impl == RopeImpl::cuda) expect_dtype(op, "value", a.value, a.query.dtype);
  else expect_dtype_in(op, "value", a.value, floats);

  validate_paged_caches(op, a.k_cache, a.v_cache, a.slot_mapping, s.q.tokens, s.k.heads, a.head_size);
  expect_device(op, "k_cache", a.k_cache, dev);
  expect_device(op, "v_cache", a.v_cache, dev);
  if (impl == RopeImpl::cuda) {
    FK_CHECK(a.k_cache.dtype == a.query.dtype, op, ": the caches must have the query's dtype (",
             dtype_name(a.query.dtype), "; an fp8 cache takes rotary_embedding and reshape_and_cache), got ",
             describe(a.k_cache));
  } else {
    expect_dtype_in(op, "k_cache", a.k_cache, floats);
    FK_CHECK(a.k_cache.dtype == a.query.dtype || a.k_cache.dtype == DType::f64 || a.query.dtype == DType::f64, op,
             ": the caches must have the query's dtype (", dtype_name(a.query.dtype), "), got ", describe(a.k_cache));
  }
  expect_device(op, "slot_mapping", a.slot_mapping, dev);
  return s;
}

inline void validate_rope_cos_sin_cache(const RopeCosSinCacheArgs& a, RopeImpl impl) {
  constexpr const char* op = RopeCosSinCacheArgs::kName;
  expect_rank(op, "cos_sin_cache", a.cos_sin_cache, 2);
  expect_contiguous(op, "cos_sin_cache", a.cos_sin_cache);
  if (impl == RopeImpl::cuda) {
    expect_dtype_in(op, "cos_sin_cache", a.cos_sin_cache, {DType::f32, DType::f16, DType::bf16});
  } else {
    expect_dtype_in(op, "cos_sin_cache", a.cos_sin_cache, {DType::f32, DType::f16, DType::bf16, DType::f64});
  }
  expect_device(op, "cos_sin_cache", a.cos_sin_cache, impl == RopeImpl::cuda ? DeviceType::cuda : DeviceType::cpu);
  const int64_t rot_dim = a.cos_sin_cache.shape[1];
  FK_CHECK(rot_dim >= 2 && rot_dim % 2 == 0, op, ": cos_sin_cache width (rot_dim) must be even and >= 2, got ",
           describe(a.cos_sin_cache));
  validate_rope_config(a.config, rot_dim);
}

}  // namespace fk::ops
