// conv2d: the GPU reference (OpRegistry::gpu_reference) for workloads too large for the CPU
// oracle (YOLOv10n's layers at batch 32). The semantics of conv2d_reference (conv2d_def.cpp)
// in double on the device: one thread per output element sums every in-image tap in
// double, adds the bias, applies SiLU, adds the residual and writes the f64 out. Plain
// code, written apart from the baseline's kernels.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fk/op_registry.h"
#include "ops/common/gpu_reference.cuh"
#include "ops/conv/conv_validate.h"

namespace fk::ops {
namespace {

template <class T>
struct RefConv {
  const T* in;
  int64_t in_s[4];
  const T* w;  // contiguous [K, R, S, Cg]
  const void* bias;
  DType bias_dtype;
  double* out;
  int64_t out_s[4];
  const T* res;  // null: no residual
  int64_t res_s[4];
  int64_t N, H, W, P, Q, K, R, S, Cg, Kg;
  int sh, sw, ph, pw, dh, dw;
  bool silu, relu;
};

template <class T>
__global__ void conv2d_reference_kernel(const RefConv<T> p) {
  const int64_t total = p.N * p.P * p.Q * p.K;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t k = i % p.K, q = (i / p.K) % p.Q, pp = (i / (p.K * p.Q)) % p.P, n = i / (p.K * p.Q * p.P);
    const int64_t c0 = (k / p.Kg) * p.Cg;
    double acc = p.bias != nullptr ? gpu_ref::load_double(p.bias, p.bias_dtype, k) : 0.0;
    for (int64_t r = 0; r < p.R; ++r) {
      const int64_t h = pp * p.sh - p.ph + r * p.dh;
      if (h < 0 || h >= p.H) continue;
      for (int64_t s = 0; s < p.S; ++s) {
        const int64_t x = q * p.sw - p.pw + s * p.dw;
        if (x < 0 || x >= p.W) continue;
        const T* px = p.in + n * p.in_s[0] + h * p.in_s[1] + x * p.in_s[2] + c0;
        const T* wk = p.w + ((k * p.R + r) * p.S + s) * p.Cg;
        for (int64_t c = 0; c < p.Cg; ++c) acc += gpu_ref::to_double(px[c]) * gpu_ref::to_double(wk[c]);
      }
    }
    if (p.silu) acc = acc / (1.0 + exp(-acc));
    if (p.relu) acc = isnan(acc) || acc > 0.0 ? acc : 0.0;
    if (p.res != nullptr) acc += gpu_ref::to_double(p.res[n * p.res_s[0] + pp * p.res_s[1] + q * p.res_s[2] + k]);
    p.out[n * p.out_s[0] + pp * p.out_s[1] + q * p.out_s[2] + k * p.out_s[3]] = acc;
  }
}

template <class T>
void run(const Conv2dArgs& a, cudaStream_t stream) {
  RefConv<T> p{};
  p.in = static_cast<const T*>(a.input.data);
  p.w = static_cast<const T*>(a.weight.data);
  p.bias = arg_present(a.bias) ? a.bias.data : nullptr;
  p.bias_dtype = a.bias.dtype;
  p.out = static_cast<double*>(a.out.data);
  for (int d = 0; d < 4; ++d) p.in_s[d] = a.input.strides[d], p.out_s[d] = a.out.strides[d];
  p.res = arg_present(a.residual) ? static_cast<const T*>(a.residual.data) : nullptr;
  for (int d = 0; d < 4; ++d) p.res_s[d] = p.res != nullptr ? a.residual.strides[d] : 0;
  p.N = a.input.shape[0], p.H = a.input.shape[1], p.W = a.input.shape[2];
  p.P = a.out.shape[1], p.Q = a.out.shape[2], p.K = a.out.shape[3];
  p.R = a.weight.shape[1], p.S = a.weight.shape[2], p.Cg = a.weight.shape[3], p.Kg = p.K / a.groups;
  p.sh = a.stride_h, p.sw = a.stride_w, p.ph = a.pad_h, p.pw = a.pad_w, p.dh = a.dilation_h, p.dw = a.dilation_w;
  p.silu = a.activation == ConvActivation::silu;
  p.relu = a.activation == ConvActivation::relu;
  const int64_t total = a.out.numel();
  if (total == 0) return;
  const int threads = 256;
  const int64_t blocks = (total + threads - 1) / threads;
  conv2d_reference_kernel<T><<<static_cast<unsigned>(blocks < 65536 * 16 ? blocks : 65536 * 16), threads, 0, stream>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

fk_status conv2d_gpu_reference(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const Conv2dArgs*>(args);
    constexpr const char* op = Conv2dArgs::kName;
    // The reference writes the oracle's f64 out: the shapes are checked as for the op with
    // out in the model dtype, then out's dtype itself.
    expect_dtype(op, "out", a.out, DType::f64);
    Conv2dArgs as_model = a;
    as_model.out.dtype = a.input.dtype;
    validate_conv2d(as_model, DeviceType::cuda);
    const auto s = static_cast<cudaStream_t>(stream);
    switch (a.input.dtype) {
      case DType::f32: return run<float>(a, s);
      case DType::f16: return run<__half>(a, s);
      case DType::bf16: return run<__nv_bfloat16>(a, s);
      default: FK_FAIL(FK_ERR_UNSUPPORTED, op, " GPU reference: dtype ", dtype_name(a.input.dtype), " is not supported");
    }
  });
}

FK_REGISTER_GPU_REFERENCE("conv2d", conv2d_gpu_reference);

}  // namespace
}  // namespace fk::ops
