// varlen_attention's CUDA baseline on what the generic GPU oracle test (every test workload)
// does not cover: longer sequences over many 64-row tiles (bidirectional, causal and
// cross-length causal, GQA, each tile width) against the f64 oracle; q, k and v as slices
// of one fused qkv GEMM output (the encoder's layout) against the CPU implementation; the
// head dims and strides it refuses; the Hopper ragged path (head dims 72-128, the default)
// against the oracle, strided views included; and the production (bench) shapes timed on
// both paths, with TFLOP/s.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "fk/ops/varlen_attention.h"
#include "harness/check/op_check.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::VarlenAttentionArgs;

const OpDef& def() { return OpRegistry::global().def(VarlenAttentionArgs::kName); }

Json wl(std::vector<int64_t> lens, int64_t heads, int64_t kv_heads, int64_t dim, const char* dtype = "bf16") {
  return Json{{"seq_lens", std::move(lens)}, {"heads", heads}, {"kv_heads", kv_heads}, {"head_dim", dim},
              {"dtype", dtype}};
}

// Selects varlen_attention's `no_sm90_ragged` variant for the scope: head dim 128 on the
// mma kernel too.
struct MmaKernelOnly {
  MmaKernelOnly() { OpRegistry::global().select_variants(VarlenAttentionArgs::kName, {"no_sm90_ragged"}); }
  ~MmaKernelOnly() { OpRegistry::global().select_variants(VarlenAttentionArgs::kName, {}); }
};

// The mma kernel (head dim 128 through the variant, which every call then takes).
TEST(VarlenAttentionGpu, LongSequencesAgainstOracle) {
  FK_REQUIRE_GPU();
  MmaKernelOnly mma;
  std::vector<Json> cases = {wl({700, 1, 129}, 4, 4, 64, "f16"), wl({300, 64}, 8, 2, 128),
                             wl({200, 17}, 2, 1, 256), wl({250}, 4, 1, 72)};
  Json causal = wl({400, 3, 190}, 4, 2, 64);
  causal["causal"] = true;
  cases.push_back(causal);
  Json cross = wl({100, 300}, 2, 2, 128);
  cross["seq_lens_k"] = {350, 40};
  cross["causal"] = true;
  cases.push_back(cross);
  for (const Json& w : cases) {
    const uint64_t seed = test::seed_for("varlen_attention_gpu_long" + w.dump());
    const auto r = bench::check_op(def(), w, seed, DeviceType::cuda);
    EXPECT_TRUE(r.passed) << w.dump() << " seed " << seed << ": " << r.message;
  }
}

// q, k, v as [T, heads, D] views into one [T, (Hq + 2 Hk) D] matrix, as the encoder passes
// them, and the output as the first columns of a wider matrix, as FLUX's single block
// writes it beside its MLP: the CUDA path against the CPU implementation.
void expect_fused_slices_match_cpu(int64_t d) {
  const int64_t hq = 4, hk = 2, width = (hq + 2 * hk) * d, out_width = hq * d + 3 * d;
  const std::vector<int32_t> lens = {37, 130, 1};
  Tensor cu = Tensor::empty({4}, DType::i32);
  int64_t t = 0;
  cu.data_as<int32_t>()[0] = 0;
  for (size_t i = 0; i < lens.size(); ++i) cu.data_as<int32_t>()[i + 1] = static_cast<int32_t>(t += lens[i]);
  const uint64_t seed = test::seed_for("varlen_attention_gpu_fused" + std::to_string(d));
  Tensor qkv = ops::random_tensor({t, width}, DType::bf16, seed, 1, -2.f, 2.f);
  auto view_of = [&](const Tensor& buf, int64_t col, int64_t heads, int64_t row_stride) {
    TensorView v = buf.view();
    v.data = v.element_ptr(col);
    v.rank = 3;
    v.shape[0] = t, v.shape[1] = heads, v.shape[2] = d;
    v.strides[0] = row_stride, v.strides[1] = d, v.strides[2] = 1;
    return v;
  };
  auto run = [&](const Tensor& buf, const Tensor& offsets, const TensorView& out, DeviceType be) {
    const VarlenAttentionArgs a{out,     view_of(buf, 0, hq, width), view_of(buf, hq * d, hk, width),
                                view_of(buf, (hq + hk) * d, hk, width), offsets, offsets, 130, 130,
                                static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))), 0};
    test::expect_ok(be, a);
  };
  Tensor out_cpu = Tensor::empty({t, hq, d}, DType::f64);
  run(qkv, cu, out_cpu.view(), DeviceType::cpu);
  const Tensor qkv_dev = qkv.to(Device::cuda()), cu_dev = cu.to(Device::cuda());
  const Tensor out_dev = Tensor::zeros({t, out_width}, DType::bf16, Device::cuda());
  run(qkv_dev, cu_dev, view_of(out_dev, 0, hq, out_width), DeviceType::cuda);
  rt::device_synchronize();
  const Tensor got = out_dev.to(Device::cpu());
  const Tolerance tol = default_tolerance(DType::bf16);
  int64_t bad = 0;
  for (int64_t r = 0; r < t; ++r)
    for (int64_t c = 0; c < out_width; ++c) {
      const double g = load_element(static_cast<const char*>(got.data()) + 2 * (r * out_width + c), DType::bf16);
      const double e = c < hq * d ? static_cast<const double*>(out_cpu.data())[r * hq * d + c] : 0.0;  // beside: untouched
      if (std::fabs(g - e) > tol.atol + tol.rtol * std::fabs(e) && bad++ < 5)
        ADD_FAILURE() << "head dim " << d << ", row " << r << ", column " << c << ": " << g << ", expected " << e;
    }
  EXPECT_EQ(bad, 0) << "head dim " << d;
}

TEST(VarlenAttentionGpu, FusedQkvSlicesMatchTheCpuImplementation) {
  FK_REQUIRE_GPU();
  MmaKernelOnly mma;
  for (const int64_t d : {64, 72, 128}) expect_fused_slices_match_cpu(d);
}

TEST(VarlenAttentionGpu, RefusesHeadDimsAndStridesItCannotLoad) {
  FK_REQUIRE_GPU();
  Tensor cu = Tensor::empty({2}, DType::i32);
  cu.data_as<int32_t>()[0] = 0, cu.data_as<int32_t>()[1] = 4;
  const Tensor cu_dev = cu.to(Device::cuda());
  const Tensor q12 = Tensor::zeros({4, 1, 12}, DType::bf16, Device::cuda());
  Tensor out12 = Tensor::zeros({4, 1, 12}, DType::bf16, Device::cuda());
  EXPECT_EQ(test::call_baseline(DeviceType::cuda, VarlenAttentionArgs{out12, q12, q12, q12, cu_dev, cu_dev, 4, 4, 1.f, 0}),
            FK_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(last_error_message()).find("multiples of 8 up to 256"), std::string::npos) << last_error_message();
  const Tensor q320 = Tensor::zeros({4, 1, 320}, DType::bf16, Device::cuda());
  Tensor out320 = Tensor::zeros({4, 1, 320}, DType::bf16, Device::cuda());
  EXPECT_EQ(test::call_baseline(DeviceType::cuda, VarlenAttentionArgs{out320, q320, q320, q320, cu_dev, cu_dev, 4, 4, 1.f, 0}),
            FK_ERR_UNSUPPORTED);
  // Token stride 68 (not a multiple of 8): a view into a wider buffer.
  const Tensor wide = Tensor::zeros({4, 68}, DType::bf16, Device::cuda());
  TensorView q = wide.view();
  q.rank = 3, q.shape[1] = 1, q.shape[2] = 64, q.strides[0] = 68, q.strides[1] = 64, q.strides[2] = 1;
  Tensor out = Tensor::zeros({4, 1, 64}, DType::bf16, Device::cuda());
  EXPECT_EQ(test::call_baseline(DeviceType::cuda, VarlenAttentionArgs{out, q, q, q, cu_dev, cu_dev, 4, 4, 1.f, 0}),
            FK_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(last_error_message()).find("strides that are multiples of 8"), std::string::npos) << last_error_message();
}

// The Hopper ragged path (head dims 72-128) against the f64 oracle: every test workload (those
// it does not take fall back to the mma kernel: the same results), and long sequences of
// 128-wide heads: bidirectional, GQA, f16, causal, cross-length causal with fewer queries
// than keys, a batch where a sequence's queries see no key (the mma kernel's zeros); heads
// of 72, 96 and 120 (zero-padded to 128); q, k, v and the output as views into wider
// matrices.
TEST(VarlenAttentionGpu, Sm90RaggedPathAgainstOracle) {
  FK_REQUIRE_GPU();
  std::vector<Json> cases = def().test_workloads;
  for (Json w : {wl({700, 1, 129}, 4, 4, 128, "f16"), wl({300, 64}, 8, 2, 128), wl({4608}, 2, 2, 128),
                 wl({700, 1, 129}, 4, 4, 72), wl({300, 64}, 8, 2, 96, "f16"), wl({1000}, 2, 2, 120)})
    cases.push_back(w);
  Json causal = wl({400, 3, 190}, 4, 2, 128);
  causal["causal"] = true;
  cases.push_back(causal);
  Json cross = wl({100, 30}, 2, 2, 128);
  cross["seq_lens_k"] = {350, 40};
  cross["causal"] = true;
  cases.push_back(cross);
  Json unseen = wl({100, 30}, 2, 2, 128);
  unseen["seq_lens_k"] = {50, 40};
  unseen["causal"] = true;
  cases.push_back(unseen);
  for (const Json& w : cases) {
    const uint64_t seed = test::seed_for("varlen_attention_gpu_sm90" + w.dump());
    const auto r = bench::check_op(def(), w, seed, DeviceType::cuda);
    EXPECT_TRUE(r.passed) << w.dump() << " seed " << seed << ": " << r.message;
  }
  for (const int64_t d : {72, 128}) expect_fused_slices_match_cpu(d);  // strided q, k, v and output
}

// The production shapes: time per call and TFLOP/s of the cost model (informational), on the
// mma kernel and, for head dims 72-128, on the Hopper ragged path.
TEST(VarlenAttentionGpu, BenchShapesTimed) {
  FK_REQUIRE_GPU();
  std::vector<Json> shapes = def().bench_workloads;
  shapes.push_back(wl({4608}, 24, 24, 128));  // FLUX.1-dev's joint attention at 1024 x 1024
  for (const bool ragged : {false, true})
    for (const Json& w : shapes) {
      if (ragged && w.at("head_dim").get<int64_t>() < 72) continue;
      std::unique_ptr<MmaKernelOnly> variant;
      if (!ragged) variant = std::make_unique<MmaKernelOnly>();
      const OpCase host = def().make_case(w, test::seed_for("varlen_attention_bench"));
      const OpCase dev = bench::case_to_device(def(), host, Device::cuda());
      const double us = test::report_time(def(), dev, 10);
      const double flops = def().cost(dev).flops;
      if (us > 0)
        std::printf("[ perf ] varlen_attention %-11s %-70s %8.1f TFLOP/s\n", ragged ? "sm90_ragged" : "mma",
                    w.dump().c_str(), flops / us * 1e-6);
    }
}

}  // namespace
}  // namespace fk
