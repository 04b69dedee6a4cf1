// conv2d CUDA baseline: NHWC activations, OHWI weights, f32 accumulation, bias and SiLU/ReLU in
// the epilogue (then the residual), one rounding to the output dtype. The kernels, by layer:
//
// - depthwise (conv2d_depthwise.cuh): 16-byte channel vectors per thread, or one element per
//   thread for channel counts and slices not in whole vectors.
// - f16/bf16 dense and grouped convolutions with 8k channels per group: the pipelined
//   tensor-core implicit GEMM of conv2d_mma_pipelined.cuh (16-byte cp.async gathers, 3 stages).
// - f16/bf16 dense convolutions over few channels (a stem on RGB): the direct kernel of
//   conv2d_direct.cuh.
// - other f16/bf16 grouped convolutions: the tensor-core implicit GEMM of conv2d_mma.cuh
//   (element-wise gathers, no pipelining).
// - f32, and f16/bf16 under the variant `simt`: the fp32-pipe implicit GEMM below, per group,
//   out[M = N*P*Q pixels, Kg] = im2col(input)[M, R*S*Cg] x weight[Kg, R*S*Cg]^T. A 256-thread
//   block computes a 64-pixel x 64-channel tile, staging 16-deep slices of both operands in
//   shared memory as fp32; each thread owns 4 pixels x 4 channels. The im2col gather is done on
//   the fly: the 16 threads that share a pixel read 16 consecutive reduction indices, i.e.
//   consecutive channels of one tap (coalesced for Cg >= 16); taps outside the image read zero.
//   The block's pixel coordinates are decoded once, the reduction index once per slice. Kept as
//   the f32 path and as the A/B reference of the tensor-core kernels.
// The variant `scalar_loads` runs the element-wise kernels (conv2d_mma.cuh, the scalar
// depthwise) in place of the 16-byte-vector ones: the A/B reference of the vector paths. None
// uses wgmma or TMA: a candidate's room.
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/common/variant_flag.h"
#include "ops/conv/conv2d_depthwise.cuh"
#include "ops/conv/conv2d_direct.cuh"
#include "ops/conv/conv2d_mma.cuh"
#include "ops/conv/conv2d_mma_pipelined.cuh"
#include "ops/conv/conv2d_params.cuh"
#include "ops/conv/conv_validate.h"
#include "ops/conv/nhwc.cuh"

namespace fk::ops {
namespace {

using conv_cuda::ConvParams;
using conv_cuda::Nhwc;
using conv_cuda::PixelIndex;

// ---- implicit GEMM
// ----------------------------------------------------------------------------
constexpr int kBM = 64, kBN = 64, kBK = 16, kGemmThreads = 256;
constexpr int kPad = 4;  // shared-memory row padding (floats)

template <class T>
__global__ void __launch_bounds__(kGemmThreads) implicit_gemm_kernel(const ConvParams<T> p) {
  __shared__ float As[kBK][kBM + kPad];
  __shared__ float Bs[kBK][kBN + kPad];
  const int tid = threadIdx.x;
  const int g = blockIdx.z;
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kBM;
  const int n0 = blockIdx.y * kBN;
  const int kred = p.R * p.S * p.Cg;
  const int c_base = g * p.Cg;
  const int k_base = g * p.Kg;

  // This thread loads reduction index k0 + kk of rows (tid / kBK) + 16 i, i < 4, of both tiles.
  // Decode its four pixels once.
  const int kk = tid % kBK;
  const int row = tid / kBK;  // 0..15
  int64_t img[4];
  int h0[4], w0[4];
  bool valid[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t m = m0 + row + 16 * i;
    valid[i] = m < p.M;
    const PixelIndex px = conv_cuda::pixel_index(valid[i] ? m : 0, p.P, p.Q);
    img[i] = px.n;
    h0[i] = px.p * p.stride_h - p.pad_h;
    w0[i] = px.q * p.stride_w - p.pad_w;
  }

  const int tx = tid % 16, ty = tid / 16;  // compute: pixels ty*4.., channels tx*4..
  float acc[4][4] = {};

  for (int k0 = 0; k0 < kred; k0 += kBK) {
    const int k = k0 + kk;
    const bool k_ok = k < kred;
    const int c = k_ok ? k % p.Cg : 0;
    const int rs = k_ok ? k / p.Cg : 0;
    const int r = rs / p.S, s = rs % p.S;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float v = 0.f;
      const int h = h0[i] + r * p.dil_h, x = w0[i] + s * p.dil_w;
      if (k_ok && valid[i] && h >= 0 && h < p.in.h && x >= 0 && x < p.in.w)
        v = cuda::to_float(p.in.pixel(img[i], h, x)[c_base + c]);
      As[kk][row + 16 * i] = v;
      const int n = n0 + row + 16 * i;
      float wv = 0.f;
      if (k_ok && n < p.Kg) wv = cuda::to_float(__ldg(p.weight + static_cast<int64_t>(k_base + n) * kred + k));
      Bs[kk][row + 16 * i] = wv;
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kBK; ++j) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[j][ty * 4 + i], b[i] = Bs[j][tx * 4 + i];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int l = 0; l < 4; ++l) acc[i][l] = fmaf(a[i], b[l], acc[i][l]);
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t m = m0 + ty * 4 + i;
    if (m >= p.M) continue;
    const PixelIndex px = conv_cuda::pixel_index(m, p.P, p.Q);
    T* o = p.out.pixel(px.n, px.p, px.q) + k_base;
    const T* res = p.res.p != nullptr ? p.res.pixel(px.n, px.p, px.q) + k_base : nullptr;
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const int kc = n0 + tx * 4 + l;
      if (kc >= p.Kg) continue;
      const float b = p.bias != nullptr ? cuda::to_float(__ldg(p.bias + k_base + kc)) : 0.f;
      float y = conv_cuda::conv_epilogue(acc[i][l], b, p.silu, p.relu);
      if (res != nullptr) y += cuda::to_float(res[kc]);
      o[kc] = cuda::from_float<T>(y);
    }
  }
}

template <class T>
void launch(const Conv2dArgs& a, cudaStream_t stream) {
  const int64_t K = a.weight.shape[0];
  ConvParams<T> p{};
  p.in = conv_cuda::nhwc<const T>(a.input);
  p.out = conv_cuda::nhwc<T>(a.out);
  p.weight = a.weight.ptr<const T>();
  p.bias = arg_present(a.bias) ? a.bias.ptr<const T>() : nullptr;
  p.res = arg_present(a.residual) ? conv_cuda::nhwc<const T>(a.residual) : Nhwc<const T>{};
  p.R = static_cast<int>(a.weight.shape[1]);
  p.S = static_cast<int>(a.weight.shape[2]);
  p.stride_h = a.stride_h, p.stride_w = a.stride_w, p.pad_h = a.pad_h, p.pad_w = a.pad_w;
  p.dil_h = a.dilation_h, p.dil_w = a.dilation_w;
  p.Cg = static_cast<int>(a.weight.shape[3]);
  p.Kg = static_cast<int>(K / a.groups);
  p.P = static_cast<int>(a.out.shape[1]);
  p.Q = static_cast<int>(a.out.shape[2]);
  p.M = a.out.shape[0] * a.out.shape[1] * a.out.shape[2];
  p.silu = a.activation == ConvActivation::silu;
  p.relu = a.activation == ConvActivation::relu;
  if (p.M == 0) return;
  static const VariantFlag simt(Conv2dArgs::kName, "simt");
  static const VariantFlag scalar_loads(Conv2dArgs::kName, "scalar_loads");
  constexpr bool kHalf = !std::is_same_v<T, float>;
  constexpr int64_t kVec = cuda::Vec16<T>::N;
  const bool vectors = !scalar_loads.on();
  // Whether the output (and the residual) take 16-byte stores of 8-channel groups.
  const bool vec_out = p.Kg % 8 == 0 && conv_cuda::vec16_ok(a.out, 8) &&
                       (!arg_present(a.residual) || conv_cuda::vec16_ok(a.residual, 8));
  if (p.Cg == 1 && p.Kg == 1) {
    const int64_t C = a.out.shape[3];
    if (vectors && conv_cuda::vec16_ok(a.input, kVec) && conv_cuda::vec16_ok(a.out, kVec) &&
        (!arg_present(a.residual) || conv_cuda::vec16_ok(a.residual, kVec))) {
      conv_cuda::depthwise_vec_kernel<T>
          <<<conv_cuda::grid_for(p.M * (C / kVec), conv_cuda::kDwThreads), conv_cuda::kDwThreads, 0, stream>>>(p);
    } else {
      conv_cuda::depthwise_kernel<T>
          <<<conv_cuda::grid_for(p.M * C, conv_cuda::kDwThreads), conv_cuda::kDwThreads, 0, stream>>>(p);
    }
    FK_CUDA_CHECK_LAUNCH();
    return;
  }
  FK_CHECK(a.groups <= 65535, a.kName, ": the CUDA baseline runs at most 65535 groups, got ", a.groups);
  if constexpr (kHalf) {
    if (!simt.on() && vectors && conv_cuda::pipelined_conv_fits(p.Cg) && conv_cuda::vec16_ok(a.input, 8) &&
        cuda::aligned16(a.weight.data)) {
      const int64_t m_tiles = cuda::ceil_div(p.M, conv_cuda::kPipeBM);
      FK_CHECK(m_tiles < (int64_t{1} << 31), a.kName, ": ", p.M, " output pixels exceed the grid");
      const dim3 grid(static_cast<unsigned>(m_tiles), static_cast<unsigned>(cuda::ceil_div(p.Kg, conv_cuda::kPipeBN)),
                      static_cast<unsigned>(a.groups));
      conv_cuda::conv2d_mma_pipelined_kernel<T><<<grid, conv_cuda::kPipeThreads, 0, stream>>>(p, vec_out);
      FK_CUDA_CHECK_LAUNCH();
      return;
    }
    if (!simt.on() && vectors && conv_cuda::direct_conv_fits(a.groups, p.R, p.S, p.Cg, p.Kg)) {
      const size_t smem = static_cast<size_t>(p.Kg) * p.R * p.S * p.Cg * sizeof(float);
      const int64_t blocks =
          std::min<int64_t>(cuda::ceil_div(p.M, conv_cuda::kDirectThreads), conv_cuda::kDirectMaxBlocks);
      conv_cuda::conv2d_direct_kernel<T>
          <<<static_cast<unsigned>(blocks), conv_cuda::kDirectThreads, smem, stream>>>(p, vec_out);
      FK_CUDA_CHECK_LAUNCH();
      return;
    }
  }
  static_assert(kBM == conv_cuda::kMmaBM && kBN == conv_cuda::kMmaBN, "both kernels tile 64 x 64");
  const int64_t m_tiles = cuda::ceil_div(p.M, kBM);
  FK_CHECK(m_tiles < (int64_t{1} << 31), a.kName, ": ", p.M, " output pixels exceed the grid");
  const dim3 grid(static_cast<unsigned>(m_tiles), static_cast<unsigned>(cuda::ceil_div(p.Kg, kBN)),
                  static_cast<unsigned>(a.groups));
  if constexpr (kHalf) {
    if (!simt.on()) {
      const conv_cuda::MmaConvShape shape{p.R,  p.S,  p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dil_h, p.dil_w,
                                          p.Cg, p.Kg, p.P,        p.Q,        p.M,     p.silu,  p.relu};
      conv_cuda::conv2d_mma_kernel<T>
          <<<grid, conv_cuda::kMmaThreads, 0, stream>>>(p.in, p.out, p.weight, p.bias, p.res, shape);
      FK_CUDA_CHECK_LAUNCH();
      return;
    }
  }
  implicit_gemm_kernel<T><<<grid, kGemmThreads, 0, stream>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

fk_status conv2d_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const Conv2dArgs*>(args);
    validate_conv2d(a, DeviceType::cuda);
    cuda::dispatch_float_dtype(a.input.dtype, a.kName, [&](auto tag) {
      using T = typename decltype(tag)::type;
      launch<T>(a, static_cast<cudaStream_t>(stream));
    });
  });
}

FK_REGISTER_IMPL("conv2d", cuda, conv2d_cuda);

}  // namespace
}  // namespace fk::ops
