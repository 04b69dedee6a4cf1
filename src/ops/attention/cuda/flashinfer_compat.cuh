// Include first in every translation unit that includes FlashInfer headers.
//
// FlashInfer 0.7.2's fastdiv.cuh wraps cuda::fast_mod_div from CCCL >= 3.1, which the
// CUDA 13.0 toolkit (CCCL 3.0) lacks. We take its include guard and supply
// flashinfer::uint_fastdiv ourselves with the same interface: division of 32-bit
// unsigned integers by a run-time constant through a multiply-high (round-up magic
// number with a 33-bit multiplier, exact for every 32-bit dividend).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#ifdef FLASHINFER_FASTDIV_CUH_
#error "flashinfer_compat.cuh must be included before any FlashInfer header"
#endif
#define FLASHINFER_FASTDIV_CUH_

// Front-end diagnostics from CUTLASS / CuTe headers (deprecated copy_if overloads,
// implicit capture of `this`) that would make our build noisy; nothing of ours triggers them.
#pragma nv_diag_suppress 1444
#pragma nv_diag_suppress 2908

namespace flashinfer {

class uint_fastdiv {
 public:
  __host__ __device__ uint_fastdiv() : d_(0), magic_(0), shift_(0) {}
  // d = 0 is accepted (FlashInfer default-constructs and copies such values) and
  // divides as d = 1; nothing divides by it.
  __host__ uint_fastdiv(uint32_t d) : d_(d), magic_(0), shift_(0) {
    const uint64_t div = d ? d : 1;
    while ((uint64_t{1} << shift_) < div) ++shift_;  // shift = ceil(log2(div))
    // magic = ceil(2^(32 + shift) / div) - 2^32, which fits in 32 bits.
    magic_ = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift_) - div)) / div + 1);
  }

  __host__ __device__ __forceinline__ operator unsigned int() const { return d_; }

  __host__ __device__ __forceinline__ void divmod(uint32_t n, uint32_t& q, uint32_t& r) const {
#ifdef __CUDA_ARCH__
    const uint32_t hi = __umulhi(n, magic_);
#else
    const uint32_t hi = static_cast<uint32_t>((static_cast<uint64_t>(n) * magic_) >> 32);
#endif
    q = static_cast<uint32_t>((static_cast<uint64_t>(hi) + n) >> shift_);
    r = n - q * d_;
  }

 private:
  uint32_t d_;
  uint32_t magic_;
  uint32_t shift_;
};

__host__ __device__ __forceinline__ uint32_t operator/(const uint32_t n, const uint_fastdiv& divisor) {
  uint32_t q, r;
  divisor.divmod(n, q, r);
  return q;
}

__host__ __device__ __forceinline__ uint32_t operator%(const uint32_t n, const uint_fastdiv& divisor) {
  uint32_t q, r;
  divisor.divmod(n, q, r);
  return r;
}

}  // namespace flashinfer
