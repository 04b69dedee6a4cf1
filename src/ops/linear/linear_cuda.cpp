// linear CUDA baseline: cuBLASLt, and for decode shapes weight-streaming kernels of our own:
// up to kSkinnyMaxRows input rows skinny_gemm.h (FMA on CUDA cores), up to kSmallMMaxRows
// small_m_gemm.h (tensor cores).
//
// Row-major out[M, N] = input[M, K] @ weight[N, K]^T is, read column-major, the product
// out^T[N, M] = weight^T[N, K] * input^T[K, M]: cuBLAS's A is the weight (stored K x N,
// used transposed), B is the input (K x M, not transposed), C = D = out (N x M). That is the
// "TN" layout, which fp8 kernels require, with no copies or transposes.
//
// Per call: descriptors are initialised in stack storage (no allocation); the algorithm
// comes from a cache keyed by everything the heuristic depends on, so the hot path makes
// no heuristic query; handle and workspace come from cublaslt_context.
// Should cuBLASLt have no algorithm with the bias epilogue for a problem (some releases
// reject it for operands with a single row or column), the plan runs the matmul without
// it and adds the bias in a second small kernel.
#include <cuda_runtime.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "fk/cuda/check.h"
#include "fk/cuda/cublas_check.h"
#include "fk/cuda/sm_count.h"
#include "fk/op_registry.h"
#include "core/cuda/cublas_api.h"
#include "core/cuda/pdl_scope.h"
#include "ops/common/pdl_variant.h"
#include "ops/linear/cublaslt_context.h"
#include "ops/linear/linear_algo_cache.h"
#include "ops/linear/linear_bias.h"
#include "ops/linear/linear_validate.h"
#include "ops/linear/linear_variants.h"
#include "ops/linear/decode_gemm_choice.h"
#include "ops/linear/skinny_gemm.h"
#include "ops/linear/small_m_gemm.h"
#include "ops/linear/tuning_record.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = LinearArgs::kName;

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
    case DType::f8e4m3fn: return CUDA_R_8F_E4M3;
    default: FK_FAIL(FK_ERR_UNSUPPORTED, kOp, ": no cuBLASLt type for ", dtype_name(t));
  }
}


struct Problem {
  cublasLtMatmulDescOpaque_t op;
  cublasLtMatrixLayoutOpaque_t a, b, c;  // A = weight, B = input, C = D = out
};

template <class T>
void set_attr(cublasLtMatmulDescOpaque_t& d, cublasLtMatmulDescAttributes_t attr, const T& value) {
  FK_CUBLAS_CHECK(cuda::cublas_api().cublasLtMatmulDescSetAttribute(&d, attr, &value, sizeof(value)));
}

// What the cache holds per problem.
struct LinearPlan {
  cublasLtMatmulAlgo_t algo;
  bool bias_in_epilogue = false;
};

void init_problem(Problem& p, const LinearArgs& a, const LinearGemmKey& key, bool bias_epilogue) {
  FK_CUBLAS_CHECK(cuda::matmul_desc_init(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set_attr(p.op, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<int32_t>(CUBLAS_OP_T));
  set_attr(p.op, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<int32_t>(CUBLAS_OP_N));
  if (bias_epilogue) {
    set_attr(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<uint32_t>(CUBLASLT_EPILOGUE_BIAS));
    set_attr(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(a.bias.data));
    set_attr(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(cuda_type(a.bias.dtype)));
  }
  if (a.input.dtype == DType::f8e4m3fn) {
    // cuBLAS's A is our weight and B our input, so their scales swap places.
    set_attr(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(a.scale_b.data));
    set_attr(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(a.scale_a.data));
  }
  const cudaDataType_t in_t = cuda_type(a.input.dtype), out_t = cuda_type(a.out.dtype);
  const auto M = static_cast<uint64_t>(key.m), N = static_cast<uint64_t>(key.n), K = static_cast<uint64_t>(key.k);
  FK_CUBLAS_CHECK(cuda::matrix_layout_init(&p.a, in_t, K, N, key.ld_weight));
  FK_CUBLAS_CHECK(cuda::matrix_layout_init(&p.b, in_t, K, M, key.ld_input));
  FK_CUBLAS_CHECK(cuda::matrix_layout_init(&p.c, out_t, N, M, key.ld_out));
}

std::string describe_problem(const LinearGemmKey& k, const LinearArgs& a) {
  return concat("M=", k.m, " N=", k.n, " K=", k.k, " ", dtype_name(a.input.dtype), "->", dtype_name(a.out.dtype),
                k.bias ? " +bias" : "", " (row strides input ", k.ld_input, ", weight ", k.ld_weight, ", out ",
                k.ld_out, "; alignments ", k.align_input, "/", k.align_weight, "/", k.align_out, " bytes)");
}

// Up to `count` of the heuristic's algorithms for the problem, best-ranked first (none when
// it has none).
std::vector<cublasLtMatmulAlgo_t> query_algos(cublasLtHandle_t handle, Problem& p, const LinearGemmKey& key,
                                              int count) {
  cublasLtMatmulPreferenceOpaque_t pref;
  FK_CUBLAS_CHECK(cuda::matmul_preference_init(&pref));
  auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attr, auto value) {
    FK_CUBLAS_CHECK(cuda::cublas_api().cublasLtMatmulPreferenceSetAttribute(&pref, attr, &value, sizeof(value)));
  };
  set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(cublaslt::kWorkspaceBytes));
  // The default preference assumes 256-byte aligned buffers; say what these pointers give.
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, static_cast<uint32_t>(key.align_weight));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, static_cast<uint32_t>(key.align_input));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, static_cast<uint32_t>(key.align_out));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, static_cast<uint32_t>(key.align_out));
  // Split-K only with fp32 partial sums: the in-place and output-type reductions add the
  // partials in the output type (bf16 here), which the op's fp32 accumulation excludes. An
  // oracle case of M = 17, K = 33 once came out -0.0703 against -0.0576, an error of that
  // size; costs 2.7 us at M = 200, N = 1024, K = 4096 and nothing measurable on the
  // engine's shapes (bench/results/h100/linear_splitk_fp32.json).
  set_pref(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE));

  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(count));
  int found = 0;
  const cublasStatus_t s =
      cuda::cublas_api().cublasLtMatmulAlgoGetHeuristic(handle, &p.op, &p.a, &p.b, &p.c, &p.c, &pref, count,
                                                        results.data(), &found);
  if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE) return {};
  if (s != CUBLAS_STATUS_SUCCESS) cuda::throw_cublas_error(s, "cublasLtMatmulAlgoGetHeuristic");
  std::vector<cublasLtMatmulAlgo_t> algos;
  for (int i = 0; i < found; ++i)
    if (results[static_cast<size_t>(i)].state == CUBLAS_STATUS_SUCCESS) algos.push_back(results[static_cast<size_t>(i)].algo);
  return algos;
}

// Decode-sized problems (M up to this) time the heuristic's top candidates once and keep
// the fastest: its first choice for these skinny shapes can leave most SMs idle (at
// M = 256, N = 4096 its 128x128 tiles make 64 blocks for 132 SMs). Larger problems take
// the first choice. The engine's decode batches are at most its graph sizes, so this
// tunes a bounded set of shapes; the variant no_autotune turns it off. Choices are recorded
// on disk (tuning_record.h), so every process on the GPU uses the same algorithms.
constexpr int64_t kAutotuneMaxM = 256;
constexpr int kAutotuneCandidates = 8;

bool stream_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  FK_CUDA_CHECK(cudaStreamIsCapturing(stream, &st));
  return st != cudaStreamCaptureStatusNone;
}

struct RunContext {
  cublasLtHandle_t handle;
  void* workspace;
  cudaStream_t stream;
};

cublasStatus_t matmul(const RunContext& ctx, Problem& p, const LinearArgs& a, const cublasLtMatmulAlgo_t& algo) {
  const float alpha = 1.f, beta = 0.f;
  return cuda::cublas_api().cublasLtMatmul(ctx.handle, &p.op, &alpha, a.weight.data, &p.a, a.input.data, &p.b, &beta,
                                           a.out.data, &p.c, a.out.data, &p.c, &algo, ctx.workspace,
                                           cublaslt::kWorkspaceBytes, ctx.stream);
}

// The index of the fastest of `algos` on this call's own operands (it writes `out`, which the call
// overwrites anyway): one warm-up and three timed runs each, on the call's stream.
size_t fastest(const RunContext& ctx, Problem& p, const LinearArgs& a, const std::vector<cublasLtMatmulAlgo_t>& algos) {
  cudaEvent_t start, stop;
  FK_CUDA_CHECK(cudaEventCreate(&start));
  FK_CUDA_CHECK(cudaEventCreate(&stop));
  float best_ms = 0;
  size_t best = 0;
  bool have = false;
  for (size_t i = 0; i < algos.size(); ++i) {
    if (matmul(ctx, p, a, algos[i]) != CUBLAS_STATUS_SUCCESS) continue;
    FK_CUDA_CHECK(cudaEventRecord(start, ctx.stream));
    bool ok = true;
    for (int r = 0; r < 3 && ok; ++r) ok = matmul(ctx, p, a, algos[i]) == CUBLAS_STATUS_SUCCESS;
    FK_CUDA_CHECK(cudaEventRecord(stop, ctx.stream));
    FK_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    FK_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (ok && (!have || ms < best_ms)) best_ms = ms, best = i, have = true;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;  // the heuristic's first choice should every candidate fail here
}

// What a tuning choice depends on besides the GPU model and the library (the file's name):
// the problem as cuBLASLt sees it, and which problem the candidates were listed for.
std::string tuning_key(const LinearGemmKey& k, bool bias_in_epilogue) {
  return concat("m=", k.m, " n=", k.n, " k=", k.k, " ld=", k.ld_input, ",", k.ld_weight, ",", k.ld_out,
                " dt=", static_cast<int>(k.in_dtype), ",", static_cast<int>(k.out_dtype), " bias=", k.bias ? 1 : 0,
                bias_in_epilogue ? "e" : "", " align=", k.align_input, ",", k.align_weight, ",", k.align_out, ",",
                k.align_bias);
}

// The tuning record of a device, opened on first use (null when no folder can hold it).
TuningRecord* tuning_record(int device) {
  static std::mutex mu;
  static std::unordered_map<int, std::unique_ptr<TuningRecord>> records;
  std::lock_guard lk(mu);
  auto& r = records[device];
  if (!r) {
    const auto dir = tuning_dir();
    if (!dir) return nullptr;
    cudaDeviceProp prop{};
    FK_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    const std::string stem = tuning_file_stem(concat("linear-", prop.name, "-sm", prop.multiProcessorCount,
                                                     "-cublaslt", cuda::cublas_api().cublasLtGetVersion()));
    r = std::make_unique<TuningRecord>(*dir / (stem + ".jsonl"));
  }
  return r.get();
}

// The recorded choice for this problem, or the fastest now (then recorded).
cublasLtMatmulAlgo_t tuned(const RunContext& ctx, Problem& p, const LinearArgs& a, const LinearGemmKey& key,
                           bool bias_in_epilogue, const std::vector<cublasLtMatmulAlgo_t>& algos) {
  TuningRecord* record = tuning_record(key.device);
  const std::string k = tuning_key(key, bias_in_epilogue);
  if (record)
    if (const auto known = record->find(k); known && static_cast<size_t>(*known) < algos.size())
      return algos[static_cast<size_t>(*known)];
  const size_t best = fastest(ctx, p, a, algos);
  if (record) record->save(k, static_cast<int>(best));
  return algos[best];
}

LinearPlan make_plan(const RunContext& ctx, const LinearArgs& a, const LinearGemmKey& key, bool autotune) {
  const bool tune = key.m <= kAutotuneMaxM && autotune && !stream_capturing(ctx.stream);
  const int count = tune ? kAutotuneCandidates : 1;
  LinearPlan plan;
  Problem p;
  std::vector<cublasLtMatmulAlgo_t> algos;
  if (key.bias) {
    init_problem(p, a, key, true);
    algos = query_algos(ctx.handle, p, key, count);
    plan.bias_in_epilogue = !algos.empty();
  }
  if (algos.empty()) {
    init_problem(p, a, key, false);
    algos = query_algos(ctx.handle, p, key, count);
  }
  if (algos.empty()) FK_FAIL(FK_ERR_UNSUPPORTED, kOp, ": cuBLASLt has no algorithm for ", describe_problem(key, a));
  plan.algo = algos.size() > 1 ? tuned(ctx, p, a, key, plan.bias_in_epilogue, algos) : algos[0];
  return plan;
}

// cuBLASLt's fp8 kernels need 16-byte aligned operands and dimensions (TN layout).
void check_fp8_support(const LinearArgs& a, const LinearGemmKey& k) {
  const bool ok = k.k % 16 == 0 && k.n % 16 == 0 && k.ld_input % 16 == 0 && k.ld_weight % 16 == 0 &&
                  k.ld_out % 8 == 0 && k.align_input >= 16 && k.align_weight >= 16 && k.align_out >= 16 &&
                  (!k.bias || k.align_bias >= 16);
  if (!ok)
    FK_FAIL(FK_ERR_UNSUPPORTED, kOp, ": the cuBLASLt fp8 path needs K and N multiples of 16, input/weight row "
            "strides multiples of 16, out row stride a multiple of 8 and 16-byte aligned pointers; got ",
            describe_problem(k, a));
}

// Plans with and without autotuning kept apart, so that selecting no_autotune in a process
// that has already planned a shape takes effect.
ConcurrentCache<LinearGemmKey, LinearPlan, LinearGemmKeyHash>& plan_cache(bool autotune) {
  static auto* tuned = new ConcurrentCache<LinearGemmKey, LinearPlan, LinearGemmKeyHash>();
  static auto* untuned = new ConcurrentCache<LinearGemmKey, LinearPlan, LinearGemmKeyHash>();
  return autotune ? *tuned : *untuned;
}

void run_linear(const LinearArgs& a, cudaStream_t stream) {
  const int device = a.out.device.index;
  for (const TensorView* v : {&a.input, &a.weight})
    FK_CHECK(v->device.index == device, kOp, ": all tensors must be on one device, out is on cuda:", device,
             ", got ", describe(*v));
  if (arg_present(a.bias))
    FK_CHECK(a.bias.device.index == device, kOp, ": bias must be on cuda:", device, ", got ", describe(a.bias));

  LinearGemmKey key;
  key.m = a.input.shape[0];
  key.n = a.weight.shape[0];
  key.k = a.input.shape[1];
  if (key.m == 0 || key.n == 0) return;
  key.ld_input = leading_dim(a.input);
  key.ld_weight = leading_dim(a.weight);
  key.ld_out = leading_dim(a.out);
  key.in_dtype = static_cast<uint8_t>(a.input.dtype);
  key.out_dtype = static_cast<uint8_t>(a.out.dtype);
  key.bias = arg_present(a.bias);
  key.device = static_cast<int8_t>(device);
  key.align_input = pointer_alignment(a.input.data);
  key.align_weight = pointer_alignment(a.weight.data);
  key.align_out = pointer_alignment(a.out.data);
  key.align_bias = key.bias ? pointer_alignment(a.bias.data) : 0;
  if (a.input.dtype == DType::f8e4m3fn) check_fp8_support(a, key);
  const LinearPaths paths = linear_paths();

  // Decode shapes: weight-streaming kernels of our own (skinny_gemm.h, small_m_gemm.h say why).
  if (a.out.dtype == a.input.dtype) {
    SkinnyGemm g;
    g.out = a.out.data;
    g.input = a.input.data;
    g.weight = a.weight.data;
    g.bias = key.bias ? a.bias.data : nullptr;
    g.M = key.m;
    g.N = key.n;
    g.K = key.k;
    g.ld_out = key.ld_out;
    g.ld_input = key.ld_input;
    g.ld_weight = key.ld_weight;
    g.dtype = a.input.dtype;
    // A narrow weight at 3-4 rows goes to small_m_gemm (decode_gemm_choice.h); with the
    // variant no_small_m it stays on skinny_gemm.
    const bool narrow_to_small_m = paths.small_m && g.M <= kSkinnyMaxRows &&
                                   small_m_for_narrow_weight(g.M, g.N, cuda::current_sm_count()) &&
                                   small_m_gemm_applies(g);
    const cuda::PdlOffScope pdl(pdl_off_for(kOp));
    if (paths.skinny && g.M <= paths.skinny_max_rows && !narrow_to_small_m && skinny_gemm_applies(g)) {
      cublaslt::DeviceGuard guard(device);
      skinny_gemm(g, stream);
      return;
    }
    // Measured on an H100 at M = 8 / 16 (bench/results/h100/linear_small_m.json): faster than
    // cuBLASLt by 8-11% for N <= 6144 (qkv, o, down), slower for the wide ones (gate_up N =
    // 28672: 95.7 against 93.5 us; LM head N = 128256: 393 against 364 us), which stay there.
    constexpr int64_t kSmallMMaxN = 16384;
    if ((g.M > kSkinnyMaxRows ? g.N < kSmallMMaxN : paths.skinny) && paths.small_m &&
        small_m_gemm_applies(g)) {
      cublaslt::DeviceGuard guard(device);
      small_m_gemm(g, stream);
      return;
    }
  }

  cublaslt::DeviceGuard guard(device);
  const RunContext ctx{cublaslt::handle(device), cublaslt::workspace(device, stream), stream};
  const LinearPlan plan =
      plan_cache(paths.autotune).get_or_make(key, [&] { return make_plan(ctx, a, key, paths.autotune); });
  Problem p;
  init_problem(p, a, key, plan.bias_in_epilogue);
  FK_CUBLAS_CHECK(matmul(ctx, p, a, plan.algo));
  if (key.bias && !plan.bias_in_epilogue)
    add_bias_rows(a.out.data, key.ld_out, a.bias.data, key.m, key.n, a.out.dtype, stream);
}

fk_status linear_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const LinearArgs*>(args);
    validate_linear(a);
    expect_linear_device(a, DeviceType::cuda);
    FK_CHECK(a.out.dtype != DType::f64, kOp, ": out must be bf16/f16 on cuda, got ", describe(a.out));
    run_linear(a, static_cast<cudaStream_t>(stream));
  });
}

FK_REGISTER_IMPL("linear", cuda, linear_cuda);

}  // namespace
}  // namespace fk::ops
