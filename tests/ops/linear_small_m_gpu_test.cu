// The tensor-core kernel for decode GEMMs of up to 16 rows (small_m_gemm.h) on the GPU,
// against the f64 oracle: through the linear op at 5..16 rows (where linear dispatches to
// it), called directly over its whole range 1..16 with strided input, weight and output
// rows (columns past N untouched), every K-split the planner picks, and bit-identical
// repeated runs and CUDA-graph replays.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "harness/check/op_check.h"
#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/linear.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "ops/common/case_builder.h"
#include "ops/linear/linear_tolerance.h"
#include "ops/linear/small_m_gemm.h"
#include "ops/linear/small_m_plan.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

const OpDef& linear_def() { return OpRegistry::global().def("linear"); }

int sm_count() {
  int n = 0;
  return cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess ? n : 0;
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const Tensor h = t.to(Device::cpu());
  std::vector<uint8_t> b(h.nbytes());
  std::memcpy(b.data(), h.data(), b.size());
  return b;
}

// Every M of the op's small-M range with every K class (tail only, tail + chunk, long),
// N odd or below one n-tile, bias and dtype varied: each (N, K) pair is met by two M.
TEST(LinearSmallMGpu, LinearOpMatchesOracle) {
  FK_REQUIRE_GPU();
  const int64_t Ms[] = {5, 6, 7, 8, 9, 12, 15, 16};
  const int64_t Ns[] = {1, 7, 33, 1000};
  const int64_t Ks[] = {8, 24, 40, 4096, 14336};
  for (size_t mi = 0; mi < std::size(Ms); ++mi)
    for (size_t ki = 0; ki < std::size(Ks); ++ki) {
      const Json w = {{"m", Ms[mi]},
                      {"n", Ns[(mi + ki) % std::size(Ns)]},
                      {"k", Ks[ki]},
                      {"bias", (mi + ki) % 2 == 1},
                      {"dtype", (mi / 2 + ki) % 2 == 0 ? "bf16" : "f16"}};
      const auto r = bench::check_op(linear_def(), w, test::seed_for("LinearSmallMOp" + w.dump()), DeviceType::cuda);
      EXPECT_TRUE(r.passed) << w.dump() << ": " << r.message;
    }
}

// One direct call of the kernel on row-strided operands: input is a column slice (from
// column 8) of an [M, ld_input + 8] buffer, weight rows have stride ld_weight, out rows
// stride ld_out with the columns past N holding a sentinel that must survive.
struct Direct {
  int64_t M, N, K, ld_input, ld_weight, ld_out;
  DType dtype = DType::bf16;
  bool bias = false;
  std::string describe() const {
    return concat("M=", M, " N=", N, " K=", K, " ld_input=", ld_input, " ld_weight=", ld_weight, " ld_out=", ld_out,
                  " ", dtype_name(dtype), bias ? " +bias" : "");
  }
};

constexpr double kSentinel = 123.0;  // exact in bf16 and f16
constexpr int64_t kInputCol = 8;     // 16 bytes: the slice stays 16-byte aligned

// A [rows, cols] view of `t` ([rows, >= col + cols]) from column `col`.
TensorView columns(const Tensor& t, int64_t col, int64_t cols) {
  TensorView v = t.view();
  v.data = v.element_ptr(col);
  v.shape[1] = cols;
  return v;
}

struct DirectRun {
  Tensor out;     // [M, ld_out] as the kernel left it, on the host
  Tensor oracle;  // [M, N] f64
  Tolerance tol;
};

// Inputs from `seed`; one kernel call on `stream`, its output downloaded.
DirectRun run_direct(const Direct& p, uint64_t seed, cudaStream_t stream = nullptr) {
  Tensor in_wide = random_tensor({p.M, p.ld_input + kInputCol}, p.dtype, seed, 1);
  Tensor weight_wide = random_tensor({p.N, p.ld_weight}, p.dtype, seed, 2);
  Tensor bias = p.bias ? random_tensor({p.N}, p.dtype, seed, 3) : Tensor();
  const TensorView in_h = columns(in_wide, kInputCol, p.K), weight_h = columns(weight_wide, 0, p.K);
  Tensor out_h = Tensor::empty({p.M, p.ld_out}, p.dtype);
  for (int64_t i = 0; i < p.M * p.ld_out; ++i) store_element(out_h.view().element_ptr(i), p.dtype, kSentinel);

  DirectRun r;
  r.oracle = Tensor::empty({p.M, p.N}, DType::f64);
  const TensorView bias_h = p.bias ? bias.view() : TensorView{};
  call_op(LinearArgs{r.oracle, in_h, weight_h, bias_h, {}, {}}, DeviceType::cpu, nullptr);
  r.tol = linear_tolerance(LinearArgs{{}, in_h, weight_h, {}, {}, {}}, p.dtype);

  const Tensor in_d = in_wide.to(Device::cuda(0)), weight_d = weight_wide.to(Device::cuda(0));
  const Tensor bias_d = p.bias ? bias.to(Device::cuda(0)) : Tensor();
  Tensor out_d = out_h.to(Device::cuda(0));
  SkinnyGemm g;
  g.out = out_d.data();
  g.input = in_d.view().element_ptr(kInputCol);
  g.weight = weight_d.data();
  g.bias = p.bias ? bias_d.data() : nullptr;
  g.M = p.M;
  g.N = p.N;
  g.K = p.K;
  g.ld_out = p.ld_out;
  g.ld_input = p.ld_input + kInputCol;
  g.ld_weight = p.ld_weight;
  g.dtype = p.dtype;
  EXPECT_TRUE(small_m_gemm_applies(g)) << p.describe();
  small_m_gemm(g, stream);
  rt::stream_synchronize(stream);
  r.out = out_d.to(Device::cpu());
  return r;
}

// Compares the first N columns with the oracle and checks the rest kept the sentinel.
void expect_matches(const Direct& p, const DirectRun& r) {
  Tensor got = Tensor::empty({p.M, p.N}, p.dtype);
  int64_t clobbered = 0;
  for (int64_t m = 0; m < p.M; ++m)
    for (int64_t c = 0; c < p.ld_out; ++c) {
      const double v = get(r.out.view(), m, c);
      if (c < p.N) set(got.view(), v, m, c);
      else if (v != kSentinel) ++clobbered;
    }
  EXPECT_EQ(clobbered, 0) << p.describe() << ": wrote past column N";
  const auto e = bench::compare_output("out", got, r.oracle, r.tol);
  EXPECT_EQ(e.num_bad, 0) << p.describe() << ": " << e.num_bad << " bad of " << e.numel << ", worst at "
                          << e.worst_index << ": " << e.worst_value << " vs " << e.worst_ref << " (max abs err "
                          << e.max_abs_err << ", atol " << e.tol.atol << ")";
}

// Every M from 1 to 16 (the rows g + 8 of the mma operand are used from M = 9), strided
// rows, an odd out stride, N not a multiple of the 16 rows per warp, K tails of 8/16/24.
TEST(LinearSmallMGpu, KernelMatchesOracleForEveryRowCount) {
  FK_REQUIRE_GPU();
  const int64_t Ns[] = {1, 7, 33, 1000, 4100};
  const int64_t Ks[] = {8, 24, 40, 520, 4096};
  for (int64_t M = 1; M <= kSmallMMaxRows; ++M)
    for (size_t i = 0; i < std::size(Ns); ++i) {
      const int64_t N = Ns[i], K = Ks[(i + static_cast<size_t>(M)) % std::size(Ks)];
      Direct p{M, N, K, K + 8 * (M % 3), K + 8 * (M % 2), N + 1 + (M % 4)};
      p.dtype = (M + static_cast<int64_t>(i)) % 2 == 0 ? DType::bf16 : DType::f16;
      p.bias = (M / 2 + static_cast<int64_t>(i)) % 2 == 1;
      expect_matches(p, run_direct(p, test::seed_for("LinearSmallMDirect" + p.describe())));
    }
}

// Shapes the planner gives each K-split on this device (the partial sums of 2..8 warps
// added through shared memory), with slices whose chunk counts are not multiples of the
// unroll, and K tails in the last slice.
TEST(LinearSmallMGpu, EveryKSplitMatchesOracle) {
  FK_REQUIRE_GPU();
  const int sms = sm_count();
  ASSERT_GT(sms, 0);
  std::vector<int> splits_seen;
  const int64_t shapes[][2] = {{40000, 264}, {20000, 520}, {9000, 1048}, {64, 14336}, {24, 440}, {1000, 4096 + 24}};
  for (const auto& nk : shapes)
    for (int64_t M : {8, 16}) {
      Direct p{M, nk[0], nk[1], nk[1], nk[1], nk[0]};
      p.bias = M == 16;
      p.dtype = M == 8 ? DType::bf16 : DType::f16;
      const int ks_log2 = small_m::plan_grid(p.N, p.K, sms).ks_log2;
      splits_seen.push_back(ks_log2);
      SCOPED_TRACE(concat(p.describe(), ", ", 1 << ks_log2, " K-slices"));
      expect_matches(p, run_direct(p, test::seed_for("LinearSmallMSplit" + p.describe())));
    }
  for (int ks_log2 = 0; ks_log2 <= small_m::kMaxSliceLog2; ++ks_log2)
    EXPECT_NE(std::find(splits_seen.begin(), splits_seen.end(), ks_log2), splits_seen.end())
        << "no shape took " << (1 << ks_log2) << " K-slices on " << sms << " SMs";
}

// Through the op: the input a column slice of a wider device buffer, at 12 rows.
TEST(LinearSmallMGpu, OpOnStridedInputRowsMatchesOracle) {
  FK_REQUIRE_GPU();
  const int64_t M = 12, N = 1000, K = 4096, ld = K + 64, col = 32;
  const uint64_t seed = test::seed_for("LinearSmallMStrided");
  Tensor wide = random_tensor({M, ld}, DType::bf16, seed, 1);
  Tensor weight = random_tensor({N, K}, DType::bf16, seed, 2);
  Tensor bias = random_tensor({N}, DType::bf16, seed, 3);
  const TensorView in_h = columns(wide, col, K);
  Tensor oracle = Tensor::empty({M, N}, DType::f64);
  call_op(LinearArgs{oracle, in_h, weight, bias, {}, {}}, DeviceType::cpu, nullptr);

  Tensor wide_d = wide.to(Device::cuda(0)), weight_d = weight.to(Device::cuda(0)), bias_d = bias.to(Device::cuda(0));
  Tensor out_d = Tensor::empty({M, N}, DType::bf16, Device::cuda(0));
  call_op(LinearArgs{out_d, columns(wide_d, col, K), weight_d, bias_d, {}, {}}, DeviceType::cuda, nullptr);
  rt::device_synchronize();
  const Tolerance tol = linear_tolerance(LinearArgs{{}, in_h, weight, {}, {}, {}}, DType::bf16);
  const auto e = bench::compare_output("out", out_d, oracle, tol);
  EXPECT_EQ(e.num_bad, 0) << "worst at " << e.worst_index << ": " << e.worst_value << " vs " << e.worst_ref;
}

// Fixed summation order: two runs (on K-split and unsplit shapes) are bit-identical, and
// a call captured in a CUDA graph replays to the same bits.
TEST(LinearSmallMGpu, RunsAreBitIdenticalAndGraphReplayMatches) {
  FK_REQUIRE_GPU();
  const Json workloads[] = {{{"m", 8}, {"n", 4096}, {"k", 14336}},
                            {{"m", 16}, {"n", 40000}, {"k", 264}, {"bias", true}},
                            {{"m", 13}, {"n", 6144}, {"k", 4096}, {"dtype", "f16"}}};
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (const Json& w : workloads) {
    SCOPED_TRACE(w.dump());
    OpCase dev = bench::case_to_device(linear_def(), linear_def().make_case(w, test::seed_for("LinearSmallMBits")),
                                       Device::cuda(0));
    Tensor& out = dev.tensors[0];
    OpRegistry::global().call("linear", DeviceType::cuda, dev.args_ptr(), s);
    CUDA_OK(cudaStreamSynchronize(s));
    const std::vector<uint8_t> first = bytes_of(out);
    CUDA_OK(cudaMemsetAsync(out.data(), 0xff, out.nbytes(), s));
    OpRegistry::global().call("linear", DeviceType::cuda, dev.args_ptr(), s);
    CUDA_OK(cudaStreamSynchronize(s));
    EXPECT_EQ(bytes_of(out), first) << "second run differs";

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    std::string err;
    try {
      OpRegistry::global().call("linear", DeviceType::cuda, dev.args_ptr(), s);
    } catch (const std::exception& e) {
      err = e.what();
    }
    CUDA_OK(cudaStreamEndCapture(s, &graph));
    ASSERT_EQ(err, "") << "linear failed under stream capture";
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_OK(cudaMemsetAsync(out.data(), 0xff, out.nbytes(), s));
    CUDA_OK(cudaGraphLaunch(exec, s));
    CUDA_OK(cudaStreamSynchronize(s));
    EXPECT_EQ(bytes_of(out), first) << "graph replay differs from the eager run";
    CUDA_OK(cudaGraphExecDestroy(exec));
    CUDA_OK(cudaGraphDestroy(graph));
  }
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(LinearSmallMGpu, ProblemsOutsideTheKernelAreRefused) {
  FK_REQUIRE_GPU();
  alignas(16) static const uint16_t buf[64] = {};
  SkinnyGemm g;
  g.out = nullptr;
  g.input = buf;
  g.weight = buf;
  g.M = 8;
  g.N = 4;
  g.K = 16;
  g.ld_out = 4;
  g.ld_input = 16;
  g.ld_weight = 16;
  EXPECT_TRUE(small_m_gemm_applies(g));
  SkinnyGemm bad = g;
  bad.M = 17;
  EXPECT_FALSE(small_m_gemm_applies(bad));
  bad = g, bad.K = 12;
  EXPECT_FALSE(small_m_gemm_applies(bad));
  bad = g, bad.ld_input = 20;
  EXPECT_FALSE(small_m_gemm_applies(bad));
  bad = g, bad.input = buf + 1;
  EXPECT_FALSE(small_m_gemm_applies(bad));
  bad = g, bad.dtype = DType::f32;
  EXPECT_FALSE(small_m_gemm_applies(bad));
  EXPECT_THROW(small_m_gemm(bad, nullptr), Error);
}

}  // namespace
}  // namespace fk::ops
