// Paged KV-cache writes. Shapes beside each field: T tokens (packed), Hk KV heads, D head
// size, P pages of S slots each.
//
// Cache layout ("NHD", as FlashInfer's paged KV cache and the attention ops of
// fastkernels): k_cache[page, slot_in_page, head, d]. Each page is a contiguous
// [S, Hk, D] block; the page stride is free, so k_cache and v_cache may be the two halves
// of one [P, 2, S, Hk, D] buffer.
#pragma once
#include "fk/op.h"

namespace fk::ops {

// For every token t with slot = slot_mapping[t] >= 0:
//   k_cache[slot / S, slot % S, :, :] = key[t, :, :]
//   v_cache[slot / S, slot % S, :, :] = value[t, :, :]
// Tokens with slot < 0 (padding) are skipped. Every other cache element stays as it was.
//
// fp8 cache: with cache dtype f8e4m3fn, k_scale and v_scale (1-element f32) are required
// and the cache stores key / k_scale (value / v_scale), rounded to nearest and saturated
// to +-448 (readers multiply by the scale), as vLLM's fp8 "e4m3" KV cache. Otherwise the
// cache has the key's dtype, the scales are absent (no data or no elements) and the copy
// is exact.
//
// Valid input: slots < P * S, and no two tokens with the same slot (which token would win
// is unspecified). The CPU reference reports either as an error. The CUDA baseline cannot
// report without a host sync, so it drops writes to out-of-range slots (memory outside the
// cache is never touched) and does not detect duplicates.
struct ReshapeAndCacheArgs {
  static constexpr const char* kName = "reshape_and_cache";
  TensorView key;           // [T, Hk, D] read; bf16/f16; last dim contiguous, token/head strides free
  TensorView value;         // [T, Hk, D] read; dtype of key; last dim contiguous, strides free
  TensorView k_cache;       // [P, S, Hk, D] inout; dtype of key or f8e4m3fn; pages contiguous
  TensorView v_cache;       // [P, S, Hk, D] inout; dtype and layout rules of k_cache
  TensorView slot_mapping;  // [T] read; i64; page * S + offset, or < 0 to skip the token
  TensorView k_scale;       // [1] read; f32; fp8 cache only
  TensorView v_scale;       // [1] read; f32; fp8 cache only
};

}  // namespace fk::ops
