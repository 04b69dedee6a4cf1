// Dense GEMM throughput through cuBLASLt, for the bf16 and fp8 ceilings.
//
// Layout ("TN", column-major as cuBLAS sees it): A is stored K x M and used transposed,
// B is K x N, D is M x N. fp8 on Hopper requires exactly this layout; bf16 runs at full
// rate in it too, so both ceilings use one code path.

#include <algorithm>
#include <cstdio>
#include <memory>

#include "core/cuda/cublas_api.h"
#include "harness/device/ceilings_cuda.h"
#include "harness/time/stats.h"
#include "fk/cuda/check.h"
#include "fk/cuda/cublas_check.h"
#include "fk/random.h"
#include "fk/tensor.h"

namespace fk::bench::detail {

namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // what cuBLAS recommends on Hopper

struct LtHandle {
  cublasLtHandle_t h = nullptr;
  LtHandle() { FK_CUBLAS_CHECK(cuda::cublas_api().cublasLtCreate(&h)); }
  ~LtHandle() { cuda::cublas_api().cublasLtDestroy(h); }
};
struct MatmulDesc {
  cublasLtMatmulDesc_t d = nullptr;
  MatmulDesc() { FK_CUBLAS_CHECK(cuda::cublas_api().cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F)); }
  ~MatmulDesc() { cuda::cublas_api().cublasLtMatmulDescDestroy(d); }
  template <class T>
  void set(cublasLtMatmulDescAttributes_t attr, const T& v) {
    FK_CUBLAS_CHECK(cuda::cublas_api().cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(T)));
  }
};
struct Layout {
  cublasLtMatrixLayout_t l = nullptr;
  Layout(cudaDataType_t t, uint64_t rows, uint64_t cols, int64_t ld) {
    FK_CUBLAS_CHECK(cuda::cublas_api().cublasLtMatrixLayoutCreate(&l, t, rows, cols, ld));
  }
  ~Layout() { cuda::cublas_api().cublasLtMatrixLayoutDestroy(l); }
};
struct Preference {
  cublasLtMatmulPreference_t p = nullptr;
  Preference() {
    FK_CUBLAS_CHECK(cuda::cublas_api().cublasLtMatmulPreferenceCreate(&p));
    const uint64_t ws = kWorkspaceBytes;
    FK_CUBLAS_CHECK(cuda::cublas_api().cublasLtMatmulPreferenceSetAttribute(
        p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  }
  ~Preference() { cuda::cublas_api().cublasLtMatmulPreferenceDestroy(p); }
};

struct Candidate {
  int rank = 0;  // position in the heuristic's list
  double tflops = 0;
};

// One operand set, one accumulation mode: the best of the heuristic's algorithms.
struct ModeResult {
  double flops_per_s = 0;
  int best_rank = -1;
  std::vector<Candidate> tried;
};

ModeResult time_mode(LtHandle& lt, GemmKind kind, bool fast_accum, int n, int runs, int candidates,
                     const Tensor& a, const Tensor& b, const Tensor& d, const Tensor& scale, const Tensor& workspace,
                     cudaStream_t stream) {
  const bool fp8 = kind == GemmKind::fp8_e4m3;
  const cudaDataType_t ab = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  const cudaDataType_t cd = CUDA_R_16BF;
  MatmulDesc desc;
  desc.set(CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  desc.set(CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  if (fp8) {
    // Per-tensor scales (device pointers, fp32): 1.0 here, but set, as real fp8 GEMMs do.
    const void* s = scale.data();
    desc.set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, s);
    desc.set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, s);
    desc.set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, static_cast<int8_t>(fast_accum ? 1 : 0));
  }
  Layout la(ab, n, n, n), lb(ab, n, n, n), lc(cd, n, n, n), ld(cd, n, n, n);
  Preference pref;
  std::vector<cublasLtMatmulHeuristicResult_t> heur(static_cast<size_t>(std::max(candidates, 1)));
  int returned = 0;
  FK_CUBLAS_CHECK(cuda::cublas_api().cublasLtMatmulAlgoGetHeuristic(
      lt.h, desc.d, la.l, lb.l, lc.l, ld.l, pref.p, static_cast<int>(heur.size()), heur.data(), &returned));
  FK_CHECK(returned > 0, "cuBLASLt offers no algorithm for this GEMM");
  const float alpha = 1.f, beta = 0.f;
  auto launch = [&](const cublasLtMatmulAlgo_t* algo) {
    FK_CUBLAS_CHECK(cuda::cublas_api().cublasLtMatmul(lt.h, desc.d, &alpha, a.data(), la.l, b.data(), lb.l, &beta,
                                                      d.data(), lc.l, d.data(), ld.l, algo, workspace.data(),
                                                      kWorkspaceBytes, stream));
  };
  const double flops = 2.0 * n * static_cast<double>(n) * n;
  ModeResult r;
  const int screen_runs = std::max(3, runs / 4);
  for (int i = 0; i < returned; ++i) {
    if (heur[i].state != CUBLAS_STATUS_SUCCESS || heur[i].workspaceSize > kWorkspaceBytes) continue;
    const cublasLtMatmulAlgo_t* algo = &heur[i].algo;
    try {
      time_back_to_back_ms(stream, 2, [&] { launch(algo); });  // warm-up (clocks, caches)
      const double ms = median(time_back_to_back_ms(stream, screen_runs, [&] { launch(algo); }));
      r.tried.push_back({i, flops / (ms * 1e-3) / 1e12});
      if (r.best_rank < 0 || r.tried.back().tflops > r.tried[static_cast<size_t>(r.best_rank)].tflops)
        r.best_rank = static_cast<int>(r.tried.size()) - 1;
    } catch (const Error& e) {
      if (e.code() != FK_ERR_UNSUPPORTED) throw;  // an algorithm that refuses is skipped
    }
  }
  FK_CHECK(r.best_rank >= 0, "no cuBLASLt algorithm of the ", returned, " offered ran");
  const cublasLtMatmulAlgo_t* best = &heur[static_cast<size_t>(r.tried[static_cast<size_t>(r.best_rank)].rank)].algo;
  const double ms = median(time_back_to_back_ms(stream, runs, [&] { launch(best); }));
  r.flops_per_s = flops / (ms * 1e-3);
  r.best_rank = r.tried[static_cast<size_t>(r.best_rank)].rank;
  return r;
}

std::string describe_tried(const ModeResult& r) {
  std::string s;
  for (const auto& c : r.tried) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s#%d %.0f", s.empty() ? "" : ", ", c.rank, c.tflops);
    s += buf;
  }
  return s + " TFLOP/s";
}

}  // namespace

GemmMeasurement measure_gemm(GemmKind kind, int n, int runs, int candidates, uint64_t seed, int device,
                             cudaStream_t stream) {
  FK_CHECK(n > 0 && n % 16 == 0, "GEMM size ", n, " must be a positive multiple of 16");
  const bool fp8 = kind == GemmKind::fp8_e4m3;
  const Device dev = Device::cuda(device);
  const DType in_dtype = fp8 ? DType::f8e4m3fn : DType::bf16;
  const int64_t nn = n;
  Tensor a = Tensor::empty({nn, nn}, in_dtype, dev, stream);
  Tensor b = Tensor::empty({nn, nn}, in_dtype, dev, stream);
  Tensor d = Tensor::empty({nn, nn}, DType::bf16, dev, stream);
  Tensor scale = Tensor::empty({1}, DType::f32, dev, stream);
  Tensor workspace = Tensor::empty({static_cast<int64_t>(kWorkspaceBytes)}, DType::u8, dev, stream);
  // Random operands: tensor cores draw less power on zeros, which would flatter the rate.
  fill_uniform(a.view(), seed, 1, -1.f, 1.f, stream);
  fill_uniform(b.view(), seed, 2, -1.f, 1.f, stream);
  const float one = 1.f;
  FK_CUDA_CHECK(cudaMemcpyAsync(scale.data(), &one, sizeof one, cudaMemcpyHostToDevice, stream));
  FK_CUDA_CHECK(cudaStreamSynchronize(stream));

  LtHandle lt;
  GemmMeasurement m;
  char method[256];
  if (!fp8) {
    const ModeResult r = time_mode(lt, kind, false, n, runs, candidates, a, b, d, scale, workspace, stream);
    m.flops_per_s = r.flops_per_s;
    std::snprintf(method, sizeof method,
                  "cuBLASLt bf16 GEMM %d^3 (TN, fp32 accumulate, bf16 out), heuristic algorithm #%d of %zu tried, "
                  "median of %d",
                  n, r.best_rank, r.tried.size(), runs);
    m.method = method;
    m.detail = "algorithms tried: " + describe_tried(r);
  } else {
    const ModeResult exact = time_mode(lt, kind, false, n, runs, candidates, a, b, d, scale, workspace, stream);
    const ModeResult fast = time_mode(lt, kind, true, n, runs, candidates, a, b, d, scale, workspace, stream);
    const bool use_fast = fast.flops_per_s > exact.flops_per_s;
    const ModeResult& r = use_fast ? fast : exact;
    m.flops_per_s = r.flops_per_s;
    std::snprintf(method, sizeof method,
                  "cuBLASLt fp8 e4m3 GEMM %d^3 (TN, per-tensor scales, fp32 accumulate%s, bf16 out), heuristic "
                  "algorithm #%d, median of %d",
                  n, use_fast ? " fast mode" : " with promotion", r.best_rank, runs);
    m.method = method;
    char other[96];
    std::snprintf(other, sizeof other, "; %s accumulation: %.0f TFLOP/s", use_fast ? "promoted" : "fast",
                  (use_fast ? exact : fast).flops_per_s / 1e12);
    m.detail = "algorithms tried: " + describe_tried(r) + other;
  }
  FK_CUDA_CHECK(cudaStreamSynchronize(stream));
  return m;
}

}  // namespace fk::bench::detail
