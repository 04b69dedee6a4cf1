// The DiT ops' CUDA baselines on what the generic GPU oracle test does not cover: FLUX.1's
// production (bench) shapes against the oracle on a sample of rows, with time and bandwidth
// printed; row-strided and misaligned views (the scalar paths), modulation vectors taken as
// column slices of one [B, 6H] matrix, several samples per call, against the CPU
// implementation with the padding untouched.
#include <gtest/gtest.h>

#include "fk/ops/dit.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::AdaLnModulateArgs;
using ops::FlowMatchEulerStepArgs;
using ops::GatedResidualAddArgs;
using ops::SiluArgs;

const OpDef& def(const char* name) { return OpRegistry::global().def(name); }

// Bench workloads are batch 1: the per-sample vectors are used whole.
void check_bench(const char* name, int vectors) {
  for (const Json& w : def(name).bench_workloads) {
    SCOPED_TRACE(w.dump());
    const int64_t T = ops::wl_int(w, "tokens"), H = ops::wl_int(w, "hidden");
    const DType dt = ops::wl_dtype(w);
    const uint64_t seed = test::seed_for(std::string(name) + "_gpu" + w.dump());
    OpCase c;
    c.workload = w;
    c.args.assign(def(name).args_size, std::byte{0});
    c.tensors = {test::device_uniform({T, H}, dt, seed, 1, -2.f, 2.f), test::device_uniform({T, H}, dt, seed, 2, -1.f, 3.f)};
    std::vector<bool> rows = {true, true};
    for (int v = 0; v < vectors; ++v) {
      c.tensors.push_back(test::device_uniform({1, H}, dt, seed, 3 + v, -1.f, 1.f));
      rows.push_back(false);
    }
    if (std::string(name) == AdaLnModulateArgs::kName) c.as<AdaLnModulateArgs>().eps = 1e-6f;
    if (std::string(name) == FlowMatchEulerStepArgs::kName) c.as<FlowMatchEulerStepArgs>().dt = -0.04f;
    c.bind(def(name).tensor_args);
    test::check_sampled_rows(def(name), c, rows, test::sample_rows(T));
    test::report_time(def(name), c);
  }
}

TEST(DitGpu, BenchShapesAgainstOracleOnSampledRows) {
  FK_REQUIRE_GPU();
  check_bench(SiluArgs::kName, 0);
  check_bench(AdaLnModulateArgs::kName, 2);
  check_bench(GatedResidualAddArgs::kName, 1);
  check_bench(FlowMatchEulerStepArgs::kName, 0);
}

struct Geometry {
  int64_t B, L, H, pad, offset;
};
const Geometry kGeometries[] = {
    {1, 5, 3072, 8, 0},   // padded rows, 16-byte aligned: vector paths
    {2, 3, 3072, 1, 0},   // row stride not a multiple of the vector: scalar path
    {3, 2, 1000, 0, 1},   // misaligned base pointers: scalar path
    {2, 2, 70000, 8, 0},  // long rows over many blocks
    {4, 1, 40, 3, 5},     // short rows, both
};

void check_geometry(DType dt, const Geometry& g) {
  const std::string label = std::string(dtype_name(dt)) + " B=" + std::to_string(g.B) + " L=" + std::to_string(g.L) +
                            " H=" + std::to_string(g.H) + " pad=" + std::to_string(g.pad) +
                            " offset=" + std::to_string(g.offset);
  const uint64_t seed = test::seed_for("dit_gpu_strided" + label);
  const int64_t T = g.B * g.L;
  // out, input, and one [B, 3H (+pad)] matrix whose column slices are shift | scale | gate.
  std::vector<test::StridedBuffer> host = {
      test::make_strided(T, g.H, g.H + g.pad, g.offset, dt, seed, 1, -2.f, 2.f),
      test::make_strided(T, g.H, g.H + g.pad + 8, g.offset, dt, seed, 2, -1.f, 3.f),
      test::make_strided(g.B, 3 * g.H, 3 * g.H + g.pad, g.offset, dt, seed, 3, -1.f, 1.f)};
  std::vector<test::StridedBuffer> dev;
  for (const auto& b : host) dev.push_back(test::strided_to(b, Device::cuda()));
  auto slice = [&](const test::StridedBuffer& b, int k) {
    TensorView v = b.view;
    v.data = v.element_ptr(k * g.H);
    v.shape[1] = g.H;
    return v;
  };
  // adaln_modulate writes out from input; then gated_residual_add adds the gated input to
  // it. Each op is checked on its own: out is reset to the CPU's before the add, since a
  // one-ulp difference of the modulated value (up to ~4) is far larger than the tolerance of
  // a sum that cancels down to a small one.
  for (auto* set : {&host, &dev}) {
    const DeviceType be = set == &host ? DeviceType::cpu : DeviceType::cuda;
    auto& b = *set;
    test::expect_ok(be, AdaLnModulateArgs{b[0].view, b[1].view, slice(b[2], 0), slice(b[2], 1), 1e-6f});
  }
  rt::device_synchronize();
  test::expect_strided_near(dev[0], host[0], default_tolerance(dt), label + " modulate");
  dev[0] = test::strided_to(host[0], Device::cuda());
  for (auto* set : {&host, &dev}) {
    const DeviceType be = set == &host ? DeviceType::cpu : DeviceType::cuda;
    auto& b = *set;
    test::expect_ok(be, GatedResidualAddArgs{b[0].view, b[1].view, slice(b[2], 2)});
  }
  rt::device_synchronize();
  test::expect_strided_near(dev[0], host[0], default_tolerance(dt), label + " gated residual add");
  test::expect_strided_near(dev[1], host[1], {0, 0}, label + " input");
  test::expect_strided_near(dev[2], host[2], {0, 0}, label + " modulation");
  // silu from input into a padded out.
  test::StridedBuffer h_out = test::make_strided(T, g.H, g.H + g.pad, g.offset, dt, seed, 4, 0.f, 1.f);
  test::StridedBuffer d_out = test::strided_to(h_out, Device::cuda());
  test::expect_ok(DeviceType::cpu, SiluArgs{h_out.view, host[1].view});
  test::expect_ok(DeviceType::cuda, SiluArgs{d_out.view, dev[1].view});
  rt::device_synchronize();
  test::expect_strided_near(d_out, h_out, default_tolerance(dt), label + " silu");
  // An Euler step of the padded out by the (padded) input.
  test::expect_ok(DeviceType::cpu, FlowMatchEulerStepArgs{h_out.view, host[1].view, -0.0357f});
  test::expect_ok(DeviceType::cuda, FlowMatchEulerStepArgs{d_out.view, dev[1].view, -0.0357f});
  rt::device_synchronize();
  test::expect_strided_near(d_out, h_out, default_tolerance(dt), label + " euler step");
}

TEST(DitGpu, StridedMisalignedAndBatchedViewsMatchCpu) {
  FK_REQUIRE_GPU();
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (const Geometry& g : kGeometries) check_geometry(dt, g);
}

// flux_single_block and flux_double_block at FLUX.1-dev's shapes (too large for the CPU
// oracle; the generic GPU oracle test covers the test workloads): the composed baselines
// run, hidden stays finite, and their time is printed.
TEST(DitGpu, FluxBlocksBenchShapesRun) {
  FK_REQUIRE_GPU();
  for (const char* name : {ops::FluxSingleBlockArgs::kName, ops::FluxDoubleBlockArgs::kName}) {
    const OpDef& d = def(name);
    for (const Json& w : d.bench_workloads) {
      SCOPED_TRACE(w.dump());
      OpCase c = d.make_case(w, test::seed_for(std::string(name) + "_gpu" + w.dump()));
      for (Tensor& t : c.tensors)
        if (t.defined()) t = t.to(Device::cuda());
      c.bind(d.tensor_args);
      const fk_op_fn fn = OpRegistry::global().baseline(name, DeviceType::cuda);
      ASSERT_NE(fn, nullptr);
      ASSERT_EQ(fn(c.args_ptr(), nullptr), FK_OK) << last_error_message();
      rt::device_synchronize();
      EXPECT_EQ(test::count_nonfinite(c.tensors[0]), 0);
      test::report_time(d, c, 5);
    }
  }
}

}  // namespace
}  // namespace fk
