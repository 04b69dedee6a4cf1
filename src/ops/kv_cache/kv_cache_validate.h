// Argument checks of the KV-cache ops, shared by their CPU reference and CUDA baseline.
#pragma once
#include "fk/ops/kv_cache.h"
#include "ops/common/validate.h"

namespace fk::ops {

// Each page [S, Hk, D] of a [P, S, Hk, D] cache is one contiguous block; pages do not overlap.
inline void expect_pages_contiguous(const char* op, const char* arg, const TensorView& v) {
  int64_t expected = 1;
  for (int i = 3; i >= 1; --i) {
    FK_CHECK(v.shape[i] == 1 || v.strides[i] == expected, op, ": ", arg,
             " must be contiguous within a page (strides [*, Hk*D, D, 1]), got strides [", v.strides[0], ", ",
             v.strides[1], ", ", v.strides[2], ", ", v.strides[3], "] for ", describe(v));
    expected *= v.shape[i];
  }
  FK_CHECK(v.shape[0] <= 1 || v.strides[0] >= expected, op, ": ", arg, " pages overlap: page stride ", v.strides[0],
           " < page size ", expected, " elements, ", describe(v));
}

// The paged caches [P, S, Hk, D] (each page contiguous, v_cache shaped and typed as
// k_cache) and the slot_mapping [T] i64 of a KV-cache write (reshape_and_cache,
// rope_and_cache).
inline void validate_paged_caches(const char* op, const TensorView& k_cache, const TensorView& v_cache,
                                  const TensorView& slot_mapping, int64_t T, int64_t Hk, int64_t D) {
  expect_rank(op, "k_cache", k_cache, 4);
  expect_dim(op, "k_cache", k_cache, 2, Hk);
  expect_dim(op, "k_cache", k_cache, 3, D);
  FK_CHECK(k_cache.shape[1] > 0, op, ": page size (k_cache dim 1) must be positive, got ", describe(k_cache));
  expect_pages_contiguous(op, "k_cache", k_cache);
  expect_same_shape(op, "v_cache", v_cache, "k_cache", k_cache);
  expect_dtype(op, "v_cache", v_cache, k_cache.dtype);
  expect_pages_contiguous(op, "v_cache", v_cache);
  expect_rank(op, "slot_mapping", slot_mapping, 1);
  expect_dim(op, "slot_mapping", slot_mapping, 0, T);
  expect_dtype(op, "slot_mapping", slot_mapping, DType::i64);
  expect_contiguous(op, "slot_mapping", slot_mapping);
}

// Caches may be f64 when the CPU reference runs as the oracle; the scales then say
// whether the cache is an fp8 one.
inline void validate_reshape_and_cache(const ReshapeAndCacheArgs& a) {
  constexpr const char* op = ReshapeAndCacheArgs::kName;
  expect_rank(op, "key", a.key, 3);
  expect_dtype_in(op, "key", a.key, {DType::bf16, DType::f16});
  expect_rows_contiguous(op, "key", a.key);
  expect_same_shape(op, "value", a.value, "key", a.key);
  expect_dtype(op, "value", a.value, a.key.dtype);
  expect_rows_contiguous(op, "value", a.value);
  const int64_t T = a.key.shape[0], Hk = a.key.shape[1], D = a.key.shape[2];
  FK_CHECK(Hk > 0 && D > 0, op, ": key needs at least one head and a positive head size, got ", describe(a.key));

  validate_paged_caches(op, a.k_cache, a.v_cache, a.slot_mapping, T, Hk, D);

  const bool has_k = arg_present(a.k_scale), has_v = arg_present(a.v_scale);
  FK_CHECK(has_k == has_v, op, ": give both k_scale and v_scale or neither");
  const DType cache = a.k_cache.dtype;
  if (cache == DType::f8e4m3fn) {
    FK_CHECK(has_k, op, ": an f8e4m3fn cache needs k_scale and v_scale (1-element f32 tensors)");
  } else if (cache != DType::f64) {
    FK_CHECK(cache == a.key.dtype, op, ": cache dtype must be the key's (", dtype_name(a.key.dtype),
             ") or f8e4m3fn, got k_cache ", describe(a.k_cache));
    FK_CHECK(!has_k, op, ": k_scale/v_scale are for an f8e4m3fn cache only, cache is ", describe(a.k_cache));
  }
  if (has_k) {
    expect_dtype(op, "k_scale", a.k_scale, DType::f32);
    expect_dtype(op, "v_scale", a.v_scale, DType::f32);
    FK_CHECK(a.k_scale.numel() == 1 && a.v_scale.numel() == 1, op,
             ": k_scale and v_scale must hold one element (per-tensor scales), got ", describe(a.k_scale), " and ",
             describe(a.v_scale));
  }
}

inline void expect_reshape_and_cache_device(const ReshapeAndCacheArgs& a, DeviceType backend) {
  constexpr const char* op = ReshapeAndCacheArgs::kName;
  expect_device(op, "key", a.key, backend);
  expect_device(op, "value", a.value, backend);
  expect_device(op, "k_cache", a.k_cache, backend);
  expect_device(op, "v_cache", a.v_cache, backend);
  expect_device(op, "slot_mapping", a.slot_mapping, backend);
  if (arg_present(a.k_scale)) expect_device(op, "k_scale", a.k_scale, backend);
  if (arg_present(a.v_scale)) expect_device(op, "v_scale", a.v_scale, backend);
}

}  // namespace fk::ops
