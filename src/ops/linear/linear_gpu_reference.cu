// linear: the GPU reference (OpRegistry::gpu_reference) for GEMMs too large for the CPU
// oracle. The semantics of linear_reference (linear_def.cpp) in double on the device:
//     out[m, n] = scale * sum_k input[m, k] * weight[n, k] + bias[n]
// scale = scale_a[0] * scale_b[0] for fp8 (1 otherwise), every product and sum in double,
// written to an f64 out. 8192^3 takes about a tenth of a second on an H100.
#include "fk/op_registry.h"
#include "fk/ops/linear.h"
#include "ops/common/reference_gemm.cuh"
#include "ops/linear/linear_validate.h"

namespace fk::ops {
namespace {

template <class T>
struct LinearProblem {
  int64_t cols, depth;  // N, K
  int64_t M;
  const T* x;
  int64_t x_row, x_col;  // element strides of input
  const T* w;
  int64_t w_row, w_col;
  double* out;
  int64_t out_row, out_col;
  const void* bias;  // null: none
  DType bias_dtype;
  const float* scale_a;  // null unless fp8
  const float* scale_b;

  __device__ int64_t rows(int64_t) const { return M; }
  __device__ double a(int64_t, int64_t m, int64_t k) const { return gpu_ref::to_double(x[m * x_row + k * x_col]); }
  __device__ double b(int64_t, int, int64_t n, int64_t k) const {
    return gpu_ref::to_double(w[n * w_row + k * w_col]);
  }
  __device__ void store(int64_t, int64_t m, int64_t n, const double (&acc)[1]) const {
    const double scale = scale_a ? static_cast<double>(*scale_a) * static_cast<double>(*scale_b) : 1.0;
    const double b = bias ? gpu_ref::load_double(bias, bias_dtype, n) : 0.0;
    out[m * out_row + n * out_col] = scale * acc[0] + b;
  }
};

fk_status linear_gpu_reference(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const LinearArgs*>(args);
    constexpr const char* op = LinearArgs::kName;
    validate_linear(a);
    expect_linear_device(a, DeviceType::cuda);
    expect_dtype(op, "out", a.out, DType::f64);  // the reference writes the oracle's f64
    const int64_t M = a.input.shape[0], K = a.input.shape[1], N = a.weight.shape[0];
    if (M == 0 || N == 0) return;
    const bool fp8 = a.input.dtype == DType::f8e4m3fn;
    gpu_ref::dispatch_float_type(a.input.dtype, op, "input", [&](auto tag) {
      using T = decltype(tag);
      LinearProblem<T> p{};
      p.cols = N;
      p.depth = K;
      p.M = M;
      p.x = static_cast<const T*>(a.input.data);
      p.x_row = a.input.strides[0];
      p.x_col = a.input.strides[1];
      p.w = static_cast<const T*>(a.weight.data);
      p.w_row = a.weight.strides[0];
      p.w_col = a.weight.strides[1];
      p.out = static_cast<double*>(a.out.data);
      p.out_row = a.out.strides[0];
      p.out_col = a.out.strides[1];
      p.bias = arg_present(a.bias) ? a.bias.data : nullptr;
      p.bias_dtype = a.bias.dtype;
      p.scale_a = fp8 ? static_cast<const float*>(a.scale_a.data) : nullptr;
      p.scale_b = fp8 ? static_cast<const float*>(a.scale_b.data) : nullptr;
      gpu_ref::launch_reference_gemm<1>(op, p, 1, M, static_cast<cudaStream_t>(stream));
    });
  });
}

FK_REGISTER_GPU_REFERENCE("linear", linear_gpu_reference);

}  // namespace
}  // namespace fk::ops
