// The CUDA side of `fk env --measure` (internal): the kernels, the cuBLASLt GEMM timing
// and a back-to-back event timer. CUDA builds only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fk::bench::detail {

// Milliseconds of each of `runs` launches, events around each, launched back to back
// (one synchronisation at the end, so the device never idles between runs).
std::vector<double> time_back_to_back_ms(cudaStream_t stream, int runs, const std::function<void()>& launch);

// --- kernels (ceilings_kernels.cu) ------------------------------------------------------
struct CopyConfig {
  int threads = 256;
  int unroll = 4;  // 16-byte loads in flight per thread
};
// Copies `bytes` (a multiple of 16, 16-byte aligned pointers) with one wave of blocks.
void launch_copy_kernel(const void* src, void* dst, size_t bytes, CopyConfig config, int sm_count, cudaStream_t s);
std::vector<CopyConfig> copy_kernel_configs();

struct FmaShape {
  int blocks = 0, threads = 0;
  double flops = 0;  // per launch: 2 per FMA
};
FmaShape fma_shape(int sm_count, int iterations);
void launch_fma_kernel(const FmaShape& shape, float* out, int iterations, cudaStream_t s);

// --- cuBLASLt GEMM (ceilings_gemm_cuda.cpp) ---------------------------------------------
enum class GemmKind { bf16, fp8_e4m3 };
struct GemmMeasurement {
  double flops_per_s = 0;
  std::string method;
  std::string detail;
};
// Dense M = N = K = n GEMM through cuBLASLt on Philox-random inputs ("TN": A transposed,
// as fp8 requires), fp32 accumulate; bf16 output. Tries the heuristic's top `candidates`
// algorithms and reports the best, timed `runs` times (median). For fp8 both the
// promoted-accumulation and the fast-accumulation modes are tried.
GemmMeasurement measure_gemm(GemmKind kind, int n, int runs, int candidates, uint64_t seed, int device,
                             cudaStream_t stream);

}  // namespace fk::bench::detail
