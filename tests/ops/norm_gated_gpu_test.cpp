// rms_norm_gated's and l2_norm's CUDA baselines on what the generic GPU oracle test does
// not cover: the production (bench) shapes, checked against the oracle on a sample of rows
// with their time and bandwidth printed; row-strided and misaligned views (the scalar
// fallback) against the CPU implementation, padding untouched; extreme gate logits.
#include <gtest/gtest.h>

#include <iterator>
#include <limits>

#include "fk/ops/norm.h"
#include "harness/check/op_check.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::L2NormArgs;
using ops::NormGateActivation;
using ops::RmsNormGatedArgs;

TEST(NormGatedGpu, BenchShapesAgainstOracleOnSampledRows) {
  FK_REQUIRE_GPU();
  for (const char* op : {"rms_norm_gated", "l2_norm"}) {
    const OpDef& def = OpRegistry::global().def(op);
    for (const Json& w : def.bench_workloads) {
      SCOPED_TRACE(std::string(op) + " " + w.dump());
      const OpCase host = def.make_case(w, test::seed_for(std::string("norm_gated_gpu_") + op + w.dump()));
      OpCase c = bench::case_to_device(def, host, Device::cuda());
      std::vector<bool> row_tensor;
      for (const TensorArg& a : def.tensor_args) row_tensor.push_back(a.name != "weight");
      test::check_sampled_rows(def, c, row_tensor, test::sample_rows(c.tensors[1].size(0)));
      test::report_time(def, c);
    }
  }
}

struct Geometry {
  int64_t R, H, pad, offset;
};
const Geometry kGeometries[] = {
    {37, 128, 8, 0},   // padded rows, 16-byte aligned: vector path, 8 lanes a row
    {5, 4096, 8, 0},   // long rows: a warp per row, looped
    {9, 128, 1, 0},    // row stride off the vector: scalar path
    {9, 128, 0, 1},    // misaligned start: scalar path
    {4, 1000, 3, 5},   // both, ragged
    {1, 128, 3, 0},    // one row: its stride does not matter
    {3000, 16, 0, 0},  // many short rows: several rows a warp
};

void check_geometry(DType dt, const Geometry& g, NormGateActivation act) {
  const std::string label = std::string(dtype_name(dt)) + " R=" + std::to_string(g.R) + " H=" + std::to_string(g.H) +
                            " pad=" + std::to_string(g.pad) + " offset=" + std::to_string(g.offset) +
                            (act == NormGateActivation::silu ? " silu" : " sigmoid");
  const uint64_t seed = test::seed_for("norm_gated_gpu_strided" + label);
  std::vector<test::StridedBuffer> host = {
      test::make_strided(g.R, g.H, g.H + g.pad, g.offset, dt, seed, 1, -2.f, 2.f),      // out (rms_norm_gated)
      test::make_strided(g.R, g.H, g.H + g.pad + 8, g.offset, dt, seed, 2, -2.f, 2.f),  // input
      test::make_strided(g.R, g.H, g.H + 2 * g.pad, g.offset, dt, seed, 3, -6.f, 6.f),  // gate
      test::make_strided(g.R, g.H, g.H + g.pad, g.offset, dt, seed, 4, -2.f, 2.f)};     // out (l2_norm)
  const Tensor weight = ops::random_tensor({g.H}, dt, seed, 5, 0.5f, 1.5f), weight_d = weight.to(Device::cuda());
  std::vector<test::StridedBuffer> dev;
  for (const auto& b : host) dev.push_back(test::strided_to(b, Device::cuda()));
  test::expect_ok(DeviceType::cpu, RmsNormGatedArgs{host[0].view, host[1].view, host[2].view, weight, 1e-6f, act});
  test::expect_ok(DeviceType::cuda, RmsNormGatedArgs{dev[0].view, dev[1].view, dev[2].view, weight_d, 1e-6f, act});
  test::expect_ok(DeviceType::cpu, L2NormArgs{host[3].view, host[1].view, 1e-6f});
  test::expect_ok(DeviceType::cuda, L2NormArgs{dev[3].view, dev[1].view, 1e-6f});
  rt::device_synchronize();
  test::expect_strided_near(dev[0], host[0], default_tolerance(dt), label + " rms_norm_gated out");
  test::expect_strided_near(dev[3], host[3], default_tolerance(dt), label + " l2_norm out");
  test::expect_strided_near(dev[1], host[1], {0, 0}, label + " input");
  test::expect_strided_near(dev[2], host[2], {0, 0}, label + " gate");
}

TEST(NormGatedGpu, StridedAndMisalignedViewsMatchCpu) {
  FK_REQUIRE_GPU();
  for (DType dt : {DType::bf16, DType::f16, DType::f32})
    for (const Geometry& g : kGeometries)
      for (NormGateActivation act : {NormGateActivation::silu, NormGateActivation::sigmoid}) check_geometry(dt, g, act);
}

// Gate logits where exp overflows or underflows (the activation saturates), around zero,
// and NaN (its element becomes NaN, as torch makes it).
TEST(NormGatedGpu, ExtremeGates) {
  FK_REQUIRE_GPU();
  const float gates[] = {-1e30f, -100.f, -88.5f, -20.f, -1e-30f, 0.f, 1e-30f, 0.5f,
                         20.f,   88.5f,  100.f,  1e30f, -3.f,    3.f, std::numeric_limits<float>::quiet_NaN(), 1.f};
  const int64_t R = 4, H = 4;
  static_assert(std::size(gates) == R * H);
  for (DType dt : {DType::f32, DType::bf16})
    for (NormGateActivation act : {NormGateActivation::silu, NormGateActivation::sigmoid}) {
      Tensor in = Tensor::empty({R, H}, dt), gate = Tensor::empty({R, H}, dt), w = Tensor::empty({H}, dt);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t h = 0; h < H; ++h) set(in.view(), 0.5 * h - 1.0 + r, r, h), set(gate.view(), gates[r * H + h], r, h);
      for (int64_t h = 0; h < H; ++h) set(w.view(), 1.0 + 0.25 * h, h);
      Tensor out = Tensor::empty({R, H}, dt), out_d = Tensor::empty({R, H}, dt, Device::cuda());
      test::expect_ok(DeviceType::cpu, RmsNormGatedArgs{out, in, gate, w, 1e-6f, act});
      test::expect_ok(DeviceType::cuda, RmsNormGatedArgs{out_d, in.to(Device::cuda()), gate.to(Device::cuda()),
                                                         w.to(Device::cuda()), 1e-6f, act});
      rt::device_synchronize();
      test::expect_views_near(out_d.to(Device::cpu()).view(), out.view(), default_tolerance(dt),
                              std::string("extreme gates ") + std::string(dtype_name(dt)));
    }
}

}  // namespace
}  // namespace fk
