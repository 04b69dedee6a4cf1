// Small device helpers shared by the CUDA baselines: 16-byte vector loads of any element
// type converted to fp32, warp/block reductions, and the dtype -> CUDA type dispatch.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "fk/dtype.h"
#include "fk/status.h"

namespace fk::cuda {

template <class T>
__device__ __forceinline__ float to_float(T x);
template <>
__device__ __forceinline__ float to_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ float to_float<__half>(__half x) { return __half2float(x); }
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 x) {
  // Exact, and a plain integer shift the compiler schedules freely (unlike the intrinsic).
  return __uint_as_float(static_cast<uint32_t>(__bfloat16_as_ushort(x)) << 16);
}

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// N elements of T packed in 16 bytes.
template <class T>
struct alignas(16) Vec16 {
  static constexpr int N = 16 / sizeof(T);
  T v[N];
};

template <class T>
__device__ __forceinline__ Vec16<T> load16(const T* p) {
  Vec16<T> r;
  *reinterpret_cast<uint4*>(&r) = __ldg(reinterpret_cast<const uint4*>(p));
  return r;
}
template <class T>
__device__ __forceinline__ void store16(T* p, const Vec16<T>& r) {
  *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(&r);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block; every thread gets the result. `scratch` holds >= 32 floats.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int num_warps = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous block_sum
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < num_warps ? scratch[lane] : 0.f;
  return warp_sum(v);
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Unsigned integer of kBytes bytes: one global memory access of that width.
namespace detail {
template <int kBytes>
struct RawWord;
template <>
struct RawWord<16> { using type = uint4; };
template <>
struct RawWord<8> { using type = uint2; };
template <>
struct RawWord<4> { using type = unsigned int; };
template <>
struct RawWord<2> { using type = unsigned short; };
}  // namespace detail

// ---- PackedVec: kN elements of T held in 32-bit words ---------------------------------------
// What the row kernels keep in registers between loading and using data. A Vec16<bf16/f16>
// gets split into one 32-bit register per 16-bit element as soon as it is loaded; a
// PackedVec stays two elements per register until unpack() converts them at the point of
// use (bf16: a shift or mask per element; f16: HADD2.F32 on the half). kN * sizeof(T) is
// 2, 4, 8 or 16 bytes; a 2-byte PackedVec uses the low half of its word.
template <class T, int kN>
struct PackedVec {
  static constexpr int N = kN;
  static constexpr int kBytes = kN * static_cast<int>(sizeof(T));
  static constexpr int kWords = kBytes >= 4 ? kBytes / 4 : 1;
  uint32_t w[kWords];
};
template <class T>
using Packed16Of = PackedVec<T, 16 / sizeof(T)>;

namespace detail {
template <int kBytes, bool kReadOnly>
__device__ __forceinline__ void load_words(uint32_t* w, const void* p) {
  using W = typename RawWord<kBytes>::type;
  const W* q = static_cast<const W*>(p);
  const W raw = kReadOnly ? __ldg(q) : *q;
  if constexpr (kBytes == 2) w[0] = raw;
  else memcpy(w, &raw, kBytes);
}
}  // namespace detail

template <int kN, class T>
__device__ __forceinline__ PackedVec<T, kN> load_packed(const T* p) {  // coherent
  PackedVec<T, kN> r;
  detail::load_words<PackedVec<T, kN>::kBytes, false>(r.w, p);
  return r;
}
template <int kN, class T>
__device__ __forceinline__ PackedVec<T, kN> load_packed_ro(const T* p) {  // ld.global.nc
  PackedVec<T, kN> r;
  detail::load_words<PackedVec<T, kN>::kBytes, true>(r.w, p);
  return r;
}
template <int kN, class T>
__device__ __forceinline__ void store_packed(T* p, const PackedVec<T, kN>& v) {
  constexpr int kBytes = PackedVec<T, kN>::kBytes;
  using W = typename detail::RawWord<kBytes>::type;
  W raw;
  if constexpr (kBytes == 2) raw = static_cast<unsigned short>(v.w[0]);
  else memcpy(&raw, v.w, kBytes);
  *reinterpret_cast<W*>(p) = raw;
}

// Element k (a compile-time index after unrolling) as float.
template <class T, int kN>
__device__ __forceinline__ float unpack(const PackedVec<T, kN>& v, int k) {
  if constexpr (sizeof(T) == 4) {
    return __uint_as_float(v.w[k]);
  } else {
    const uint32_t word = v.w[k / 2];
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      return __uint_as_float(k % 2 == 0 ? word << 16 : word & 0xffff0000u);
    } else {
      return __half2float(__ushort_as_half(static_cast<unsigned short>(k % 2 == 0 ? word : word >> 16)));
    }
  }
}

// Rounds kN floats to T (round to nearest even) and packs them.
template <class T, int kN>
__device__ __forceinline__ PackedVec<T, kN> pack(const float (&f)[kN]) {
  PackedVec<T, kN> r;
  if constexpr (sizeof(T) == 4) {
#pragma unroll
    for (int k = 0; k < kN; ++k) r.w[k] = __float_as_uint(f[k]);
  } else if constexpr (kN == 1) {
    r.w[0] = std::is_same_v<T, __nv_bfloat16> ? __bfloat16_as_ushort(__float2bfloat16_rn(f[0]))
                                              : __half_as_ushort(__float2half_rn(f[0]));
  } else {
#pragma unroll
    for (int j = 0; j < kN / 2; ++j) {
      if constexpr (std::is_same_v<T, __nv_bfloat16>) {
        const __nv_bfloat162 h = __floats2bfloat162_rn(f[2 * j], f[2 * j + 1]);  // one cvt.rn.bf16x2.f32
        memcpy(&r.w[j], &h, 4);
      } else {
        const __half2 h = __floats2half2_rn(f[2 * j], f[2 * j + 1]);
        memcpy(&r.w[j], &h, 4);
      }
    }
  }
  return r;
}

// An empty asm that claims to change v: the compiler can no longer reuse values it derived
// from v earlier (e.g. the floats unpacked for a reduction), so it keeps v packed across a
// reduction and unpacks it again afterwards instead of holding the floats (2x the registers).
template <class T, int kN>
__device__ __forceinline__ void keep_packed(PackedVec<T, kN>& v) {
#pragma unroll
  for (int i = 0; i < PackedVec<T, kN>::kWords; ++i) asm volatile("" : "+r"(v.w[i]));
}

// True when every pointer is 16-byte aligned (null pointers, i.e. absent optional
// arguments, count as aligned).
template <class... P>
inline bool all_aligned16(const P*... p) {
  return ((p == nullptr || aligned16(p)) && ...);
}

// ---- dtype dispatch --------------------------------------------------------------------------
template <class T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) with T the CUDA type of a floating-point model dtype (float,
// __half, __nv_bfloat16); any other dtype is FK_ERR_UNSUPPORTED naming the op.
template <class F>
void dispatch_float_dtype(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::bf16: return f(TypeTag<__nv_bfloat16>{});
    case DType::f16: return f(TypeTag<__half>{});
    case DType::f32: return f(TypeTag<float>{});
    default: FK_FAIL(FK_ERR_UNSUPPORTED, op, ": dtype ", dtype_name(t), " is not supported on CUDA");
  }
}

inline constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline constexpr int round_up(int a, int m) { return (a + m - 1) / m * m; }

}  // namespace fk::cuda
