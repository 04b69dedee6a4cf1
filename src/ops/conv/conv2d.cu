// conv2d CUDA baseline: NHWC activations, OHWI weights, f32 accumulation, bias and SiLU/ReLU in
// the epilogue (then the residual), one rounding to the output dtype. Three kernels:
//
// - depthwise (one input and one output channel per group: SCDown, RepVGGDW, the head's
//   depthwise convs): one thread per output element, channels fastest, so each warp reads
//   32 consecutive channels of a pixel per tap (coalesced); the R*S weights of a channel are
//   read through the read-only cache. Memory-bound, as these layers are.
// - f16/bf16 dense and grouped convolutions: the tensor-core implicit GEMM of
//   conv2d_mma.cuh (WMMA fragments, 64x64 tiles, f32 accumulation).
// - f32, and f16/bf16 under the variant `simt`: an fp32-pipe implicit GEMM, per group,
//   out[M = N*P*Q pixels, Kg] = im2col(input)[M, R*S*Cg] x weight[Kg, R*S*Cg]^T. A 256-thread block computes a
//   64-pixel x 64-channel tile, staging 16-deep slices of both operands in shared memory as
//   fp32; each thread owns 4 pixels x 4 channels. The im2col gather is done on the fly: the
//   16 threads that share a pixel read 16 consecutive reduction indices, i.e. consecutive
//   channels of one tap (coalesced for Cg >= 16); taps outside the image read zero. The
//   block's pixel coordinates are decoded once, the reduction index once per slice.
//   Kept as the f32 path and as the A/B reference of the tensor-core kernel.
// Neither pipelines its loads (cp.async / TMA stages) nor uses wgmma: a candidate's room.
#include <cuda_runtime.h>

#include <type_traits>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/common/variant_flag.h"
#include "ops/conv/conv2d_mma.cuh"
#include "ops/conv/conv_validate.h"
#include "ops/conv/nhwc.cuh"

namespace fk::ops {
namespace {

using conv_cuda::Nhwc;

template <class T>
struct ConvParams {
  Nhwc<const T> in;
  Nhwc<T> out;
  const T* weight;  // [K, R, S, Cg]
  const T* bias;    // [K] or null
  Nhwc<const T> res;  // the residual added after the activation; res.p null: none
  int R, S, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  int Cg, Kg, P, Q;
  int64_t M;  // N * P * Q
  bool silu, relu;
};

__device__ __forceinline__ float epilogue(float acc, const float bias, bool silu, bool relu) {
  const float x = acc + bias;
  if (relu) return isnan(x) || x > 0.f ? x : 0.f;  // NaN propagates and -0 becomes +0, as the reference
  return silu ? x / (1.f + expf(-x)) : x;  // x << 0: expf overflows to inf, x / inf = -0, the limit
}

// ---- depthwise ------------------------------------------------------------------------------
constexpr int kDwThreads = 256;

template <class T>
__global__ void __launch_bounds__(kDwThreads) depthwise_kernel(const ConvParams<T> p) {
  const int C = p.out.c;
  const int64_t total = p.M * C;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(i % C);
    const int64_t m = i / C;
    const int q = static_cast<int>(m % p.Q);
    const int pp = static_cast<int>((m / p.Q) % p.P);
    const int64_t n = m / (static_cast<int64_t>(p.Q) * p.P);
    const T* w = p.weight + static_cast<int64_t>(c) * p.R * p.S;
    float acc = 0.f;
    for (int r = 0; r < p.R; ++r) {
      const int h = pp * p.stride_h - p.pad_h + r * p.dil_h;
      if (h < 0 || h >= p.in.h) continue;
      for (int s = 0; s < p.S; ++s) {
        const int x = q * p.stride_w - p.pad_w + s * p.dil_w;
        if (x < 0 || x >= p.in.w) continue;
        acc = fmaf(cuda::to_float(p.in.pixel(n, h, x)[c]), cuda::to_float(__ldg(w + r * p.S + s)), acc);
      }
    }
    const float b = p.bias != nullptr ? cuda::to_float(__ldg(p.bias + c)) : 0.f;
    float y = epilogue(acc, b, p.silu, p.relu);
    if (p.res.p != nullptr) y += cuda::to_float(p.res.pixel(n, pp, q)[c]);
    p.out.pixel(n, pp, q)[c] = cuda::from_float<T>(y);
  }
}

// ---- implicit GEMM ----------------------------------------------------------------------------
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

  // This thread loads reduction index k0 + kk of rows (tid / kBK) + 16 i, i < 4, of both
  // tiles. Decode its four pixels once.
  const int kk = tid % kBK;
  const int row = tid / kBK;  // 0..15
  int64_t img[4];
  int h0[4], w0[4];
  bool valid[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t m = m0 + row + 16 * i;
    valid[i] = m < p.M;
    const int64_t mm = valid[i] ? m : 0;
    const int q = static_cast<int>(mm % p.Q);
    const int pp = static_cast<int>((mm / p.Q) % p.P);
    img[i] = mm / (static_cast<int64_t>(p.Q) * p.P);
    h0[i] = pp * p.stride_h - p.pad_h;
    w0[i] = q * p.stride_w - p.pad_w;
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
    const int q = static_cast<int>(m % p.Q);
    const int pp = static_cast<int>((m / p.Q) % p.P);
    const int64_t n = m / (static_cast<int64_t>(p.Q) * p.P);
    T* o = p.out.pixel(n, pp, q) + k_base;
    const T* res = p.res.p != nullptr ? p.res.pixel(n, pp, q) + k_base : nullptr;
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const int kc = n0 + tx * 4 + l;
      if (kc >= p.Kg) continue;
      const float b = p.bias != nullptr ? cuda::to_float(__ldg(p.bias + k_base + kc)) : 0.f;
      float y = epilogue(acc[i][l], b, p.silu, p.relu);
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
  if (p.Cg == 1 && p.Kg == 1) {
    depthwise_kernel<T><<<conv_cuda::grid_for(p.M * K, kDwThreads), kDwThreads, 0, stream>>>(p);
  } else {
    static const VariantFlag simt(Conv2dArgs::kName, "simt");
    FK_CHECK(a.groups <= 65535, a.kName, ": the CUDA baseline runs at most 65535 groups, got ", a.groups);
    static_assert(kBM == conv_cuda::kMmaBM && kBN == conv_cuda::kMmaBN, "both kernels tile 64 x 64");
    const int64_t m_tiles = cuda::ceil_div(p.M, kBM);
    FK_CHECK(m_tiles < (int64_t{1} << 31), a.kName, ": ", p.M, " output pixels exceed the grid");
    const dim3 grid(static_cast<unsigned>(m_tiles), static_cast<unsigned>(cuda::ceil_div(p.Kg, kBN)),
                    static_cast<unsigned>(a.groups));
    if constexpr (!std::is_same_v<T, float>) {
      if (!simt.on()) {
        const conv_cuda::MmaConvShape shape{p.R,     p.S,     p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dil_h,
                                            p.dil_w, p.Cg,    p.Kg,       p.P,        p.Q,     p.M,     p.silu, p.relu};
        conv_cuda::conv2d_mma_kernel<T>
            <<<grid, conv_cuda::kMmaThreads, 0, stream>>>(p.in, p.out, p.weight, p.bias, p.res, shape);
        FK_CUDA_CHECK_LAUNCH();
        return;
      }
    }
    implicit_gemm_kernel<T><<<grid, kGemmThreads, 0, stream>>>(p);
  }
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
