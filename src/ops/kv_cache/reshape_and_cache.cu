// reshape_and_cache CUDA baseline.
//
// Pure data movement: one block per token; its threads walk the token's Hk*D elements of
// key and value in 16-byte chunks (8 elements), each chunk a single vector load and store
// (8 bytes stored for an fp8 cache). Consecutive threads take consecutive chunks of a head,
// so loads and stores coalesce; the slot is read once per thread from the same address.
//   fast path: D % 8 == 0, strides multiples of 8 elements, aligned pointers
//   general path: one element per thread-iteration (any D, strides, alignment)
// Slots outside the cache are dropped (there is no cheap way to report them; the CPU
// reference raises an error for them).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <type_traits>

#include "fk/cuda/check.h"
#include "fk/cuda/pdl.cuh"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "core/cuda/pdl_scope.h"
#include "ops/common/pdl_variant.h"
#include "ops/kv_cache/kv_cache_validate.h"

namespace fk::ops {
namespace {

using cuda::to_float;

constexpr int kChunk = 8;  // elements per vector chunk: 16 bytes of bf16/f16

struct Geometry {
  int64_t key_token_stride, key_head_stride, value_token_stride, value_head_stride;
  int64_t k_page_stride, v_page_stride;
  int64_t num_slots;
  int heads, head_dim, page_size;
};

__device__ __forceinline__ __nv_fp8_storage_t to_fp8(float x) {
  return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
}

// Copies 8 elements; for an fp8 cache, divides by the scale and rounds (satfinite).
template <class T, class C>
__device__ __forceinline__ void copy_chunk(C* dst, const T* src, float scale) {
  const uint4 raw = *reinterpret_cast<const uint4*>(src);
  if constexpr (std::is_same_v<C, T>) {
    *reinterpret_cast<uint4*>(dst) = raw;
  } else {
    const T* v = reinterpret_cast<const T*>(&raw);
    uint2 packed;
    auto* bytes = reinterpret_cast<__nv_fp8_storage_t*>(&packed);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) bytes[i] = to_fp8(to_float(v[i]) / scale);
    *reinterpret_cast<uint2*>(dst) = packed;
  }
}

template <class T, class C>
__device__ __forceinline__ void copy_element(C* dst, const T* src, float scale) {
  if constexpr (std::is_same_v<C, T>) *dst = *src;
  else *dst = to_fp8(to_float(*src) / scale);
}

// Where token t goes: the first element of its [Hk, D] block in each cache, or nothing.
__device__ __forceinline__ bool token_slot(const int64_t* slots, int64_t t, const Geometry& g, int64_t& page,
                                           int64_t& offset) {
  const int64_t slot = slots[t];
  if (slot < 0 || slot >= g.num_slots) return false;  // padding, or invalid: never write outside the cache
  page = slot / g.page_size;
  offset = slot - page * g.page_size;
  return true;
}

template <class T, class C, bool kVector>
__global__ void reshape_and_cache_kernel(const T* __restrict__ key, const T* __restrict__ value, C* __restrict__ k_cache,
                                         C* __restrict__ v_cache, const int64_t* __restrict__ slots,
                                         const float* __restrict__ k_scale, const float* __restrict__ v_scale,
                                         Geometry g) {
  cuda::pdl_wait();  // launched with PDL: key and value come from the kernel before
  cuda::pdl_trigger();
  const int64_t t = blockIdx.x;
  int64_t page, offset;
  if (!token_slot(slots, t, g, page, offset)) return;
  const int64_t token_elems = static_cast<int64_t>(g.heads) * g.head_dim;
  C* k_dst = k_cache + page * g.k_page_stride + offset * token_elems;
  C* v_dst = v_cache + page * g.v_page_stride + offset * token_elems;
  const T* k_src = key + t * g.key_token_stride;
  const T* v_src = value + t * g.value_token_stride;
  const float ks = k_scale ? *k_scale : 1.f, vs = v_scale ? *v_scale : 1.f;
  const int per_head = kVector ? g.head_dim / kChunk : g.head_dim;
  const int items = g.heads * per_head;
  for (int i = threadIdx.x; i < items; i += blockDim.x) {
    const int h = i / per_head;
    const int d = (i - h * per_head) * (kVector ? kChunk : 1);
    const int64_t dst = static_cast<int64_t>(h) * g.head_dim + d;
    if constexpr (kVector) {
      copy_chunk(k_dst + dst, k_src + h * g.key_head_stride + d, ks);
      copy_chunk(v_dst + dst, v_src + h * g.value_head_stride + d, vs);
    } else {
      copy_element(k_dst + dst, k_src + h * g.key_head_stride + d, ks);
      copy_element(v_dst + dst, v_src + h * g.value_head_stride + d, vs);
    }
  }
}

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

template <class T, class C>
void launch(const ReshapeAndCacheArgs& a, cudaStream_t stream) {
  const int64_t T_ = a.key.shape[0];
  if (T_ == 0) return;
  Geometry g;
  g.key_token_stride = a.key.strides[0];
  g.key_head_stride = a.key.strides[1];
  g.value_token_stride = a.value.strides[0];
  g.value_head_stride = a.value.strides[1];
  g.k_page_stride = a.k_cache.strides[0];
  g.v_page_stride = a.v_cache.strides[0];
  g.page_size = static_cast<int>(a.k_cache.shape[1]);
  g.num_slots = a.k_cache.shape[0] * a.k_cache.shape[1];
  g.heads = static_cast<int>(a.key.shape[1]);
  g.head_dim = static_cast<int>(a.key.shape[2]);
  const bool fp8 = std::is_same_v<C, __nv_fp8_storage_t>;
  const bool vector_ok = g.head_dim % kChunk == 0 && g.key_token_stride % kChunk == 0 &&
                         g.key_head_stride % kChunk == 0 && g.value_token_stride % kChunk == 0 &&
                         g.value_head_stride % kChunk == 0 && g.k_page_stride % kChunk == 0 &&
                         g.v_page_stride % kChunk == 0 && aligned(a.key.data, 16) && aligned(a.value.data, 16) &&
                         aligned(a.k_cache.data, kChunk * sizeof(C)) && aligned(a.v_cache.data, kChunk * sizeof(C));
  const auto* ks = fp8 ? a.k_scale.ptr<const float>() : nullptr;
  const auto* vs = fp8 ? a.v_scale.ptr<const float>() : nullptr;
  const int items = g.heads * (vector_ok ? g.head_dim / kChunk : g.head_dim);
  const int threads = std::clamp((items + 31) / 32 * 32, 32, 256);
  FK_CHECK(T_ <= 0x7fffffff, ReshapeAndCacheArgs::kName, ": too many tokens for one launch: ", T_);
  const dim3 grid(static_cast<unsigned>(T_));
  auto* key = a.key.ptr<const T>();
  auto* value = a.value.ptr<const T>();
  auto* kc = a.k_cache.ptr<C>();
  auto* vc = a.v_cache.ptr<C>();
  auto* slots = a.slot_mapping.ptr<const int64_t>();
  if (vector_ok)
    cuda::launch_pdl(reshape_and_cache_kernel<T, C, true>, grid, dim3(threads), 0, stream, key, value, kc, vc, slots, ks,
                     vs, g);
  else
    cuda::launch_pdl(reshape_and_cache_kernel<T, C, false>, grid, dim3(threads), 0, stream, key, value, kc, vc, slots,
                     ks, vs, g);
}

template <class T>
void launch_for_cache(const ReshapeAndCacheArgs& a, cudaStream_t stream) {
  if (a.k_cache.dtype == DType::f8e4m3fn) launch<T, __nv_fp8_storage_t>(a, stream);
  else launch<T, T>(a, stream);
}

fk_status reshape_and_cache_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const ReshapeAndCacheArgs*>(args);
    validate_reshape_and_cache(a);
    expect_reshape_and_cache_device(a, DeviceType::cuda);
    FK_CHECK(a.k_cache.dtype != DType::f64, ReshapeAndCacheArgs::kName, ": f64 caches are for the CPU oracle only");
    const cuda::PdlOffScope pdl(pdl_off_for(ReshapeAndCacheArgs::kName));
    const auto s = static_cast<cudaStream_t>(stream);
    switch (a.key.dtype) {
      case DType::bf16: return launch_for_cache<__nv_bfloat16>(a, s);
      case DType::f16: return launch_for_cache<__half>(a, s);
      default: FK_FAIL(FK_ERR_UNSUPPORTED, ReshapeAndCacheArgs::kName, ": key dtype ", dtype_name(a.key.dtype));
    }
  });
}

FK_REGISTER_IMPL("reshape_and_cache", cuda, reshape_and_cache_cuda);

}  // namespace
}  // namespace fk::ops
